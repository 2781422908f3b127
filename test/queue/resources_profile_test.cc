// The two innermost pieces of the planner, checked against plain reference computations:
// Resources::CopiesOf (which avoids divisions) and AvailabilityProfile::Copies (whose fast paths
// answer from per-node summaries instead of sweeping the node's blocks).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "queue/profile.h"
#include "queue/resources.h"

namespace onequeue::queue {
namespace {

// One random question to two profiles that must answer alike (the Reset and Remove tests below);
// the draws in this order, so each test's sequence is the one it always made.
struct ProfileQuery {
  Resources request;
  Time start = 0;
  Time end = 0;
  WorkloadKind kind = WorkloadKind::kPodGroup;
  int64_t cap = 1;
  bool ignore = false;
};

template <typename Pick>
ProfileQuery RandomQuery(Pick& pick, Time now) {
  ProfileQuery q;
  q.request[kCpu] = pick(0, 8) * 500;
  q.request[kMemory] = pick(0, 8);
  q.start = pick(0, 2) == 0 ? now : now + pick(0, 100);
  q.end = q.start + pick(1, 120);
  q.kind = pick(0, 1) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
  q.cap = pick(1, 8);
  q.ignore = pick(0, 1) == 0;
  return q;
}

int64_t CopiesFor(const AvailabilityProfile& p, NodeIndex n, const ProfileQuery& q) {
  return p.Copies(n, q.start, q.end, q.request, q.kind, q.cap, q.ignore);
}

int64_t ReferenceCopies(const Resources& free, const Resources& request, int64_t cap) {
  // As Covers(): a slot overcommitted below what is asked (even 0 of it) fits nothing.
  for (int i = 0; i < kMaxResourceKinds; ++i) {
    if (request[i] > free[i]) return 0;
  }
  int64_t copies = cap;
  for (int i = 0; i < kMaxResourceKinds; ++i) {
    if (request[i] <= 0) continue;
    copies = std::min(copies, free[i] < 0 ? 0 : free[i] / request[i]);
  }
  return std::max<int64_t>(0, copies);
}

TEST(Resources, CopiesOfMatchesDivisionEverywhere) {
  std::mt19937_64 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 200'000; ++trial) {
    Resources free, request;
    for (int i = 0; i < 4; ++i) {
      free[i] = pick(-5, 1) < 0 ? pick(-100, 100) : pick(0, 1'000'000);
      request[i] = pick(0, 3) == 0 ? 0 : pick(1, 200'000);
    }
    const int64_t cap = pick(0, 3) == 0 ? pick(0, 2) : pick(1, 100);
    ASSERT_EQ(free.CopiesOf(request, cap), ReferenceCopies(free, request, cap))
        << "trial " << trial << " cap " << cap;
  }
}

// Every free amount from one to three requests' worth, every cap up to 5, in one slot and with a
// roomier second slot: the quotients 1, 2 and 3 at and beside their bounds (CopiesOf answers 1
// without dividing when a second copy cannot fit; a free amount of exactly two requests holds 2).
TEST(Resources, CopiesOfAtTheBoundsOfEachQuotient) {
  for (int64_t r = 1; r <= 40; ++r) {
    for (int64_t amount = 0; amount <= 3 * r + 1; ++amount) {
      for (int64_t cap = 0; cap <= 5; ++cap) {
        for (bool second : {false, true}) {
          Resources free, request;
          free[kCpu] = amount;
          request[kCpu] = r;
          if (second) {
            free[kMemory] = 1000;
            request[kMemory] = 7;
          }
          ASSERT_EQ(free.CopiesOf(request, cap), ReferenceCopies(free, request, cap))
              << "request " << r << " free " << amount << " cap " << cap << " second slot " << second;
        }
      }
    }
  }
}

TEST(Resources, CopiesOfDoesNotOverflowOnHugeAmounts) {
  Resources free, request;
  free[kMemory] = std::numeric_limits<int64_t>::max();
  request[kMemory] = int64_t{1} << 40;
  EXPECT_EQ(free.CopiesOf(request, std::numeric_limits<int64_t>::max()),
            std::numeric_limits<int64_t>::max() / (int64_t{1} << 40));
  EXPECT_EQ(free.CopiesOf(request, 1'000'000), 1'000'000);
}

// Copies by brute force: the minimum of free capacity over every second of [start, end).
int64_t BruteCopies(const Resources& capacity,
                    const std::vector<AvailabilityProfile::Block>& blocks, Time start, Time end,
                    const Resources& request, WorkloadKind kind, int64_t cap, bool shared,
                    bool ignore_reservations) {
  int64_t copies = cap;
  for (Time t = start; t < end; ++t) {
    Resources used;
    for (const auto& b : blocks) {
      if (ignore_reservations && b.reservation) continue;
      if (b.start <= t && t < b.end) {
        if (!shared && b.kind != kind) return 0;
        used += b.used;
      }
    }
    copies = std::min(copies, (capacity - used).CopiesOf(request, cap));
  }
  return copies;
}

TEST(AvailabilityProfile, CopiesMatchesBruteForceOnRandomNodes) {
  std::mt19937_64 rng(11);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1000;
  for (int trial = 0; trial < 3'000; ++trial) {
    const bool shared = pick(0, 1) == 0;
    Resources capacity;
    capacity[kCpu] = 16'000;
    capacity[kMemory] = 64;
    capacity[kPods] = 10;
    AvailabilityProfile profile({capacity}, kNow, /*window=*/200, /*resolution=*/1, shared);
    std::vector<AvailabilityProfile::Block> blocks;
    Resources at_now;
    const int n = static_cast<int>(pick(0, 6));
    for (int i = 0; i < n; ++i) {
      AvailabilityProfile::Block b;
      b.reservation = pick(0, 2) == 0;
      b.start = b.reservation ? kNow + pick(0, 60) : kNow - pick(0, 50);
      b.end = pick(0, 9) == 0 ? kForever : std::max(b.start, kNow) + pick(1, 80);
      b.kind = pick(0, 3) == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
      b.used[kCpu] = pick(0, 4) * 1000;
      b.used[kMemory] = pick(0, 16);
      b.used[kPods] = pick(0, 2);
      // Keep every moment within capacity, as the planner does.
      Resources peak = b.used;
      for (const auto& o : blocks) peak += o.used;
      if (peak.AnyNegative() || !capacity.Covers(peak)) continue;
      blocks.push_back(b);
      profile.Add(0, b);
    }
    profile.SealBase();
    for (int q = 0; q < 20; ++q) {
      Resources request;
      request[kCpu] = pick(0, 8) * 500;
      request[kMemory] = pick(0, 8);
      request[kPods] = pick(0, 1);
      const Time start = pick(0, 2) == 0 ? kNow : kNow + pick(0, 100);
      const Time end = start + pick(1, 120);
      const WorkloadKind kind = pick(0, 1) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
      const int64_t cap = pick(1, 8);
      const bool ignore = pick(0, 1) == 0;
      ASSERT_EQ(profile.Copies(0, start, end, request, kind, cap, ignore),
                BruteCopies(capacity, blocks, start, end, request, kind, cap, shared, ignore))
          << "trial " << trial << " query " << q << " start " << start << " end " << end
          << " ignore_reservations " << ignore;
    }
  }
}

// CopiesSlow's slot loops stop after the last slot any capacity or block usage has (issue 26):
// requests, capacities and usages here name random slots of all 16, some only in the request (a
// device no node has: no room), some only in a usage (a node overcommitted in a slot it does
// not report: no room while that block runs; or negative in the capacity alone: no room ever),
// and every answer is the brute force's.
TEST(AvailabilityProfile, CopiesMatchesBruteForceWhicheverSlotsAreNamed) {
  std::mt19937_64 rng(26);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1000;
  for (int trial = 0; trial < 3'000; ++trial) {
    Resources capacity;
    capacity[kCpu] = 16'000;
    for (int extra = static_cast<int>(pick(0, 2)); extra > 0; --extra) capacity[static_cast<int>(pick(1, 15))] = pick(-1, 8);
    AvailabilityProfile profile({capacity}, kNow, /*window=*/200, /*resolution=*/1, /*shared_nodes=*/true);
    std::vector<AvailabilityProfile::Block> blocks;
    for (int i = static_cast<int>(pick(0, 5)); i > 0; --i) {
      AvailabilityProfile::Block b;
      b.start = kNow + pick(-50, 60);
      b.end = b.start + pick(1, 80);
      b.used[kCpu] = pick(0, 4) * 1000;
      if (pick(0, 2) == 0) b.used[static_cast<int>(pick(1, 15))] = pick(1, 3);
      blocks.push_back(b);
      profile.Add(0, b);
    }
    profile.SealBase();
    for (int q = 0; q < 20; ++q) {
      Resources request;
      request[kCpu] = pick(0, 8) * 500;
      if (pick(0, 1) == 0) request[static_cast<int>(pick(1, 15))] = pick(0, 2);
      const Time start = kNow + pick(0, 1) * pick(1, 100);  // now (the free_now path) or later
      const Time end = start + pick(1, 120);
      const int64_t cap = pick(1, 8);
      const int64_t brute = BruteCopies(capacity, blocks, start, end, request, WorkloadKind::kSlurmJob, cap, true, false);
      ASSERT_EQ(profile.Copies(0, start, end, request, WorkloadKind::kSlurmJob, cap), brute)
          << "trial " << trial << " query " << q << " start " << start << " end " << end;
      ASSERT_EQ(profile.Copies(0, start, end, request, WorkloadKind::kSlurmJob, cap, false, AvailabilityProfile::kNoTenant,
                               profile.SlotsFor(request)),
                brute)
          << "with SlotsFor: trial " << trial << " query " << q << " start " << start << " end " << end;
    }
  }
}

// Remove keeps the node's summaries by subtracting the block's usage and rescanning the rest, and
// the blocks are kept sorted by start whatever order they come in (CopiesSlow stops at the first
// block past its interval): a profile that had a block removed answers every query as one built
// without it, blocks added in random order, before and after SealBase.
// A random block around `now` for the random comparisons below: running (started up to 50 s
// ago) or a reservation (starting within 60 s), ending within 80 s or never, of either world,
// using cpu and memory. `pick(lo, hi)` draws uniformly in [lo, hi].
template <typename Pick>
AvailabilityProfile::Block RandomBlock(Pick& pick, Time now) {
  AvailabilityProfile::Block b;
  b.reservation = pick(0, 1) == 0;
  b.start = b.reservation ? now + pick(0, 60) : now - pick(0, 50);
  b.end = pick(0, 9) == 0 ? kForever : std::max(b.start, now) + pick(1, 80);
  b.kind = pick(0, 3) == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
  b.used[kCpu] = pick(0, 4) * 1000;
  b.used[kMemory] = pick(0, 16);
  return b;
}

// The planner reuses one profile across cycles (AvailabilityProfile::Reset): after any history
// (blocks of other usages and kinds, sealed, placeholders added and removed, other machines),
// a Reset profile answers every query as one constructed anew with the same arguments.
TEST(AvailabilityProfile, ResetAnswersAsAProfileConstructedAnew) {
  std::mt19937_64 rng(31);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto random_blocks = [&](Time now, int nodes) {
    std::vector<std::pair<NodeIndex, AvailabilityProfile::Block>> blocks;
    for (int i = static_cast<int>(pick(0, 12)); i > 0; --i) {
      AvailabilityProfile::Block b = RandomBlock(pick, now);
      if (pick(0, 5) == 0) b.used[kFirstExtended + 2] = pick(1, 2);  // widens the slots compared
      blocks.emplace_back(static_cast<NodeIndex>(pick(0, nodes - 1)), b);
    }
    return blocks;
  };
  auto random_machine = [&] {
    std::vector<Resources> capacity(static_cast<size_t>(pick(1, 4)));
    for (Resources& c : capacity) {
      c[kCpu] = pick(1, 4) * 4000;
      c[kMemory] = pick(16, 64);
      if (pick(0, 3) == 0) c[kFirstExtended] = pick(1, 4);
    }
    return capacity;
  };
  AvailabilityProfile reused(random_machine(), 500, 100, 1, false);
  for (int trial = 0; trial < 1'000; ++trial) {
    // Some history on the reused profile: blocks before and after SealBase, one taken back.
    const Time before = 500 + 7 * trial;
    for (const auto& [n, b] : random_blocks(before, static_cast<int>(reused.size()))) reused.Add(n, b);
    reused.SealBase();
    const auto late = random_blocks(before, static_cast<int>(reused.size()));
    for (const auto& [n, b] : late) reused.Add(n, b);
    if (!late.empty()) reused.Remove(late.front().first, late.front().second);
    reused.ForEachEndAfter(before, [](Time, NodeIndex) { return true; });
    // Then a cycle of its own, on this machine or another.
    const std::vector<Resources> capacity = pick(0, 2) == 0 ? random_machine() : [&] {
      std::vector<Resources> same;
      for (size_t n = 0; n < reused.size(); ++n) same.push_back(reused.Capacity(static_cast<NodeIndex>(n)));
      return same;
    }();
    std::vector<uint8_t> shared(capacity.size());
    for (uint8_t& s : shared) s = pick(0, 1);
    const Time now = before + pick(0, 40);
    const Duration window = pick(50, 200), resolution = pick(1, 7);
    reused.Reset(capacity, now, window, resolution, shared);
    AvailabilityProfile fresh(capacity, now, window, resolution, shared);
    const int nodes = static_cast<int>(capacity.size());
    const auto base = random_blocks(now, nodes), added = random_blocks(now, nodes);
    for (AvailabilityProfile* p : {&reused, &fresh}) {
      for (const auto& [n, b] : base) p->Add(n, b);
      p->SealBase();
      for (const auto& [n, b] : added) p->Add(n, b);
    }
    ASSERT_EQ(reused.size(), fresh.size());
    ASSERT_EQ(reused.horizon(), fresh.horizon());
    ASSERT_EQ(reused.version(), fresh.version());
    for (NodeIndex n = 0; n < nodes; ++n) {
      ASSERT_EQ(reused.Capacity(n), fresh.Capacity(n)) << "trial " << trial;
      ASSERT_EQ(reused.FreeNow(n), fresh.FreeNow(n)) << "trial " << trial;
      ASSERT_EQ(reused.FirstFutureStart(n), fresh.FirstFutureStart(n)) << "trial " << trial;
      ASSERT_EQ(reused.NodeVersion(n), fresh.NodeVersion(n)) << "trial " << trial;
      for (WorkloadKind kind : {WorkloadKind::kPodGroup, WorkloadKind::kSlurmJob}) {
        ASSERT_EQ(reused.OtherKindNow(n, kind), fresh.OtherKindNow(n, kind)) << "trial " << trial;
      }
      for (int q = 0; q < 10; ++q) {
        const ProfileQuery query = RandomQuery(pick, now);
        ASSERT_EQ(CopiesFor(reused, n, query), CopiesFor(fresh, n, query))
            << "trial " << trial << " node " << n << " query " << q;
        ASSERT_EQ(reused.AvailTimeFirst(n, query.start, query.end - query.start, query.request, query.kind),
                  fresh.AvailTimeFirst(n, query.start, query.end - query.start, query.request, query.kind))
            << "trial " << trial << " node " << n << " query " << q;
      }
    }
    std::vector<std::pair<Time, NodeIndex>> ends_reused, ends_fresh, first_reused, first_fresh;
    reused.ForEachEndAfter(now, [&](Time t, NodeIndex n) { ends_reused.emplace_back(t, n); return true; });
    fresh.ForEachEndAfter(now, [&](Time t, NodeIndex n) { ends_fresh.emplace_back(t, n); return true; });
    ASSERT_EQ(ends_reused, ends_fresh) << "trial " << trial;
    reused.ForEachFirstEndAfterNow([&](Time t, NodeIndex n) { first_reused.emplace_back(t, n); return true; });
    fresh.ForEachFirstEndAfterNow([&](Time t, NodeIndex n) { first_fresh.emplace_back(t, n); return true; });
    ASSERT_EQ(first_reused, first_fresh) << "trial " << trial;
  }
}

TEST(AvailabilityProfile, RemoveAnswersAsIfTheBlockHadNeverBeenAdded) {
  std::mt19937_64 rng(23);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1000;
  Resources capacity;
  capacity[kCpu] = 16'000;
  capacity[kMemory] = 64;
  for (int trial = 0; trial < 2'000; ++trial) {
    const bool shared = pick(0, 1) == 0;
    std::vector<AvailabilityProfile::Block> blocks;
    for (int i = static_cast<int>(pick(1, 7)); i > 0; --i) {
      const AvailabilityProfile::Block b = RandomBlock(pick, kNow);
      blocks.push_back(b);
    }
    const size_t removed = static_cast<size_t>(pick(0, static_cast<int64_t>(blocks.size()) - 1));
    // The removed block comes after SealBase, as the planner's placeholders do (Remove takes an
    // end out of the ends added since SealBase only).
    const size_t sealed_after = static_cast<size_t>(pick(0, static_cast<int64_t>(removed)));
    AvailabilityProfile with({capacity}, kNow, /*window=*/200, /*resolution=*/1, shared);
    AvailabilityProfile without({capacity}, kNow, /*window=*/200, /*resolution=*/1, shared);
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (i == sealed_after) {
        with.SealBase();
        without.SealBase();
      }
      with.Add(0, blocks[i]);
      if (i != removed) without.Add(0, blocks[i]);
    }
    if (sealed_after == blocks.size()) {
      with.SealBase();
      without.SealBase();
    }
    ASSERT_TRUE(with.Remove(0, blocks[removed]));
    ASSERT_EQ(with.FreeNow(0), without.FreeNow(0)) << "trial " << trial;
    ASSERT_EQ(with.FirstFutureStart(0), without.FirstFutureStart(0)) << "trial " << trial;
    for (WorkloadKind kind : {WorkloadKind::kPodGroup, WorkloadKind::kSlurmJob}) {
      ASSERT_EQ(with.OtherKindNow(0, kind), without.OtherKindNow(0, kind)) << "trial " << trial;
    }
    for (int q = 0; q < 20; ++q) {
      const ProfileQuery query = RandomQuery(pick, kNow);
      ASSERT_EQ(CopiesFor(with, 0, query), CopiesFor(without, 0, query)) << "trial " << trial << " query " << q;
    }
    std::vector<std::pair<Time, NodeIndex>> ends_with, ends_without;
    with.ForEachEndAfter(kNow, [&](Time t, NodeIndex n) { ends_with.emplace_back(t, n); return true; });
    without.ForEachEndAfter(kNow, [&](Time t, NodeIndex n) { ends_without.emplace_back(t, n); return true; });
    // (Ends of blocks added before SealBase may repeat; what matters is the moments listed.)
    ends_with.erase(std::unique(ends_with.begin(), ends_with.end()), ends_with.end());
    ends_without.erase(std::unique(ends_without.begin(), ends_without.end()), ends_without.end());
    ASSERT_EQ(ends_with, ends_without) << "trial " << trial;
  }
}

// The block ends, as ForEachEndAfter lists them (ends of the blocks added before SealBase,
// radix-sorted, merged with those added after), against a plain sort: every end after `after`
// up to the horizon, ascending by (end, node), and nothing else.
// (The order is what matters: the planner visits freed nodes in it, which picks the nodes.)
TEST(AvailabilityProfile, EndsComeInTimeThenNodeOrder) {
  std::mt19937_64 rng(12);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1'800'000'000;
  for (int trial = 0; trial < 200; ++trial) {
    const int nodes = static_cast<int>(pick(1, 3000));
    const Duration window = pick(1, 3) == 1 ? 100 : 86'400;
    Resources capacity;
    capacity[kCpu] = 1'000'000;
    AvailabilityProfile profile(std::vector<Resources>(nodes, capacity), kNow, window, 1, true);
    std::vector<std::pair<Time, NodeIndex>> expected;
    auto add = [&](bool before_seal) {
      AvailabilityProfile::Block b;
      b.start = before_seal ? kNow - pick(0, 100) : kNow + pick(0, 100);
      // Ends: past, now, soon, equal ends on several nodes, beyond the horizon, never.
      const int64_t kind = pick(0, 5);
      b.end = kind == 0 ? kNow - pick(0, 5) : kind == 1 ? kForever : kind == 2 ? kNow + 50
              : std::max(b.start, kNow) + pick(1, 2 * window);
      b.used[kCpu] = 1;
      const NodeIndex n = static_cast<NodeIndex>(pick(0, nodes - 1));
      profile.Add(n, b);
      if (b.end > kNow && b.end < kForever) expected.emplace_back(b.end, n);
    };
    const int base = static_cast<int>(pick(0, 5000));
    for (int i = 0; i < base; ++i) add(true);
    profile.SealBase();
    const int added = static_cast<int>(pick(0, 500));
    for (int i = 0; i < added; ++i) add(false);
    std::sort(expected.begin(), expected.end());
    const Time after = pick(0, 1) == 0 ? kNow : kNow + pick(0, window);
    std::vector<std::pair<Time, NodeIndex>> want;
    for (const auto& e : expected) {
      if (e.first > after && e.first <= profile.horizon()) want.push_back(e);
    }
    std::vector<std::pair<Time, NodeIndex>> got;
    profile.ForEachEndAfter(after, [&](Time end, NodeIndex n) {
      got.emplace_back(end, n);
      return true;
    });
    // The same (end, node) twice says nothing new (the added ends are a set): compare distinct.
    got.erase(std::unique(got.begin(), got.end()), got.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    ASSERT_EQ(got, want) << "trial " << trial;
  }
}

// ForEachFirstEndAfterNow lists each node's running (base) ends cut to the earliest after now:
// a caller that keeps each node once, at the first end it meets (ForEachNodeWithRoomAt's freed
// nodes), gets the same nodes in the same order as from every end (ForEachEndAfter(now)).
TEST(AvailabilityProfile, FirstEndsMeetEachNodeWhereEveryEndDoes) {
  std::mt19937_64 rng(31);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1'800'000'000;
  const auto first_seen = [](const AvailabilityProfile& profile, bool first_only) {
    std::vector<std::pair<Time, NodeIndex>> order;
    std::vector<char> seen(profile.size(), 0);
    const auto keep = [&](Time end, NodeIndex n) {
      if (!seen[n]) order.emplace_back(end, n);
      seen[n] = 1;
      return true;
    };
    if (first_only) {
      profile.ForEachFirstEndAfterNow(keep);
    } else {
      profile.ForEachEndAfter(profile.now(), keep);
    }
    return order;
  };
  for (int trial = 0; trial < 200; ++trial) {
    const int nodes = static_cast<int>(pick(1, 300));
    Resources capacity;
    capacity[kCpu] = 1'000'000;
    AvailabilityProfile profile(std::vector<Resources>(nodes, capacity), kNow, /*window=*/500, 1, true);
    auto add = [&](bool before_seal) {
      AvailabilityProfile::Block b;
      b.start = before_seal ? kNow - pick(0, 100) : kNow + pick(0, 100);
      // Ends: past, now, soon, beyond the horizon, never; several per node.
      const int64_t kind = pick(0, 4);
      b.end = kind == 0 ? kNow - pick(0, 5) : kind == 1 ? kForever : std::max(b.start, kNow) + pick(0, 700);
      b.used[kCpu] = 1;
      profile.Add(static_cast<NodeIndex>(pick(0, nodes - 1)), b);
    };
    for (int i = static_cast<int>(pick(0, 4 * nodes)); i > 0; --i) add(true);
    profile.SealBase();
    for (int i = static_cast<int>(pick(0, nodes)); i > 0; --i) add(false);
    const std::vector<std::pair<Time, NodeIndex>> want = first_seen(profile, false);
    ASSERT_EQ(first_seen(profile, true), want) << "trial " << trial;
  }
}

// ResourcesTable numbers distinct vectors by first appearance and finds each again, across the
// table's growth (it starts at 64 slots) and with vectors that differ in one slot only.
TEST(ResourcesTable, SameVectorSameNumberAcrossGrowth) {
  std::mt19937_64 rng(13);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  ResourcesTable table;
  std::vector<Resources> distinct;
  for (int i = 0; i < 5'000; ++i) {
    Resources r;
    if (distinct.empty() || pick(0, 2) == 0) {
      for (int slot = 0; slot < kMaxResourceKinds; ++slot) r[slot] = pick(0, 3) == 0 ? pick(-2, 1'000) : 0;
    } else {
      r = distinct[static_cast<size_t>(pick(0, static_cast<int64_t>(distinct.size()) - 1))];
      if (pick(0, 1) == 0) r[static_cast<int>(pick(0, kMaxResourceKinds - 1))] += 1;  // a neighbour
    }
    auto known = std::find(distinct.begin(), distinct.end(), r);
    const int32_t expected = known == distinct.end() ? static_cast<int32_t>(distinct.size())
                                                      : static_cast<int32_t>(known - distinct.begin());
    if (known == distinct.end()) distinct.push_back(r);
    ASSERT_EQ(table.Intern(r), expected) << "step " << i;
    ASSERT_EQ(table[expected], r);
  }
  for (size_t i = 0; i < distinct.size(); ++i) EXPECT_EQ(table.Intern(distinct[i]), static_cast<int32_t>(i));
}

}  // namespace
}  // namespace onequeue::queue

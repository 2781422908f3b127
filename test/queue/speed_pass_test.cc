// Issue 27, fifth pass: the shortcuts that only the replays' md5 covered, each against a plain
// reference. FreeIndex::Build (each node straight into its bucket, in an index kept across
// cycles), SealBase's sort of fewer than 512 ends (SortFewEnds), the reservation's node ranking
// (PreferLatestFreed: nth_element, then a sort of the nodes taken only) and the replay's lookup of
// a waiting status's job at its queue position (Plan::order).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "queue/planner.h"
#include "queue/planner_free_index.h"
#include "queue/profile.h"
#include "queue/replay.h"
#include "queue/testing_builders.h"

namespace onequeue::queue {
namespace {

using internal::FreeIndex;

// A random profile (one-world nodes: a Slurm job on a node makes it unusable for pods now).
AvailabilityProfile RandomProfile(std::mt19937_64& rng, Time now) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const int nodes = static_cast<int>(pick(1, 40));
  std::vector<Resources> capacity(nodes);
  for (Resources& c : capacity) c[kCpu] = pick(0, 9) * 1000 + (pick(0, 1) ? 500 : 0);
  AvailabilityProfile p(capacity, now, 1000, 1, /*shared_nodes=*/pick(0, 1) == 0);
  for (int i = static_cast<int>(pick(0, 2 * nodes)); i > 0; --i) {
    const NodeIndex n = static_cast<NodeIndex>(pick(0, nodes - 1));
    AvailabilityProfile::Block b;
    b.start = now - pick(0, 10);
    b.end = now + pick(1, 100);
    b.used[kCpu] = pick(1, 4) * 500;
    b.kind = pick(0, 1) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
    p.Add(n, b);
  }
  p.SealBase();
  return p;
}

// What ForEachWithAtLeast must visit: the nodes with at least `amount` free now (in whole
// `unit`s, the last bucket holding everything above 4,096 units) where the other world does not
// run now, smallest bucket first, in node order within a bucket (a fresh index's order).
std::vector<NodeIndex> ReferenceVisits(const AvailabilityProfile& p, WorkloadKind kind, int64_t amount,
                                       int64_t unit) {
  std::vector<std::pair<int64_t, NodeIndex>> nodes;
  int64_t max_units = 0;
  for (size_t n = 0; n < p.size(); ++n) max_units = std::max(max_units, p.Capacity(n)[kCpu] / unit);
  const int64_t last = std::min<int64_t>(max_units, 4096);
  const int64_t from = std::min(std::max<int64_t>(0, amount) / unit, last);
  for (NodeIndex n = 0; n < static_cast<NodeIndex>(p.size()); ++n) {
    const int64_t free = p.FreeNow(n)[kCpu];
    if (free <= 0 || p.OtherKindNow(n, kind)) continue;
    const int64_t bucket = std::min(free / unit, last);
    if (bucket >= from) nodes.emplace_back(bucket, n);
  }
  std::sort(nodes.begin(), nodes.end());
  std::vector<NodeIndex> out;
  for (const auto& [bucket, n] : nodes) out.push_back(n);
  return out;
}

std::vector<NodeIndex> Visits(FreeIndex& index, WorkloadKind kind, int64_t amount) {
  std::vector<NodeIndex> out;
  index.ForEachWithAtLeast(kind, amount, [&](NodeIndex n) {
    out.push_back(n);
    return true;
  });
  return out;
}

// One index built again over 300 unrelated profiles (other node counts and capacities, nodes
// moved by Update in between): each time it lists every node once, in its bucket, as the
// reference does, and counts them alike.
TEST(FreeIndex, BuiltAgainItListsEachNodeInItsBucketOnce) {
  std::mt19937_64 rng(2711);
  FreeIndex kept;
  for (int trial = 0; trial < 300; ++trial) {
    AvailabilityProfile p = RandomProfile(rng, 5000);
    kept.Build(p, kCpu, 1000);
    for (WorkloadKind kind : {WorkloadKind::kPodGroup, WorkloadKind::kSlurmJob}) {
      for (int64_t amount : {0, 1, 500, 1000, 1500, 2000, 4000, 9000, 10000}) {
        const std::vector<NodeIndex> want = ReferenceVisits(p, kind, amount, 1000);
        ASSERT_EQ(Visits(kept, kind, amount), want) << "trial " << trial << " amount " << amount;
        ASSERT_EQ(kept.CountWithAtLeast(kind, amount), static_cast<int64_t>(want.size()))
            << "trial " << trial << " amount " << amount;
      }
    }
    // Fill some nodes and move them (the cycle pass's Commit), leaving stale entries behind for
    // the next Build to forget.
    for (NodeIndex n = 0; n < static_cast<NodeIndex>(p.size()); n += 2) {
      AvailabilityProfile::Block b;
      b.start = p.now();
      b.end = p.now() + 10;
      b.used[kCpu] = 1000;
      p.Add(n, b);
      kept.Update(n, p);
    }
  }
}

// A node whose free capacity grows during the cycle (a promise's placeholder taken back) and
// shrinks again may come back to a bucket where an entry of its from before is still listed: it
// must be visited once, not twice (a twice-visited node counted its copies twice in a placement
// search). Random claims and take-backs on a few nodes, each followed by every walk against the
// reference, as multisets (an updated bucket lists its nodes in the order they came).
TEST(FreeIndex, ANodeThatGrowsAndShrinksAgainIsVisitedOnce) {
  std::mt19937_64 rng(3202);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    const int nodes = static_cast<int>(pick(1, 6));
    std::vector<Resources> capacity(nodes);
    for (Resources& c : capacity) c[kCpu] = pick(1, 9) * 1000;
    AvailabilityProfile p(capacity, 5000, 1000, 1, /*shared_nodes=*/true);
    p.SealBase();
    FreeIndex index;
    index.Build(p, kCpu, 1000);
    std::vector<std::pair<NodeIndex, AvailabilityProfile::Block>> added;
    for (int step = 0; step < 40; ++step) {
      if (!added.empty() && pick(0, 2) == 0) {
        const size_t i = static_cast<size_t>(pick(0, static_cast<int64_t>(added.size()) - 1));
        ASSERT_TRUE(p.Remove(added[i].first, added[i].second));
        index.Update(added[i].first, p);
        added.erase(added.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        const NodeIndex n = static_cast<NodeIndex>(pick(0, nodes - 1));
        AvailabilityProfile::Block b;
        b.start = p.now();
        b.end = p.now() + pick(1, 100);
        b.used[kCpu] = pick(1, 3) * 500;
        b.kind = WorkloadKind::kPodGroup;
        p.Add(n, b);
        index.Update(n, p);
        added.emplace_back(n, b);
      }
      for (int64_t amount : {0, 1000, 2000, 5000}) {
        std::vector<NodeIndex> want = ReferenceVisits(p, WorkloadKind::kPodGroup, amount, 1000);
        std::vector<NodeIndex> got = Visits(index, WorkloadKind::kPodGroup, amount);
        std::sort(want.begin(), want.end());
        std::sort(got.begin(), got.end());
        ASSERT_EQ(got, want) << "trial " << trial << " step " << step << " amount " << amount;
        ASSERT_EQ(index.CountWithAtLeast(WorkloadKind::kPodGroup, amount), static_cast<int64_t>(want.size()));
      }
    }
  }
}

// The ends of the running blocks (added before SealBase), a few hundred of them as a replay
// cycle has, sorted as packed keys below 512 and by radix passes from 512 on (and as pairs when
// an end lies 2^32 s or more past now), in a profile Reset and filled again each trial: every
// end after now up to the horizon, by (end, node).
TEST(AvailabilityProfile, FewAndManyRunningEndsSortAlike) {
  std::mt19937_64 rng(5120);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1'800'000'000;
  Resources capacity;
  capacity[kCpu] = 1'000'000;
  AvailabilityProfile profile(std::vector<Resources>(1, capacity), kNow, 1, 1, true);
  for (int trial = 0; trial < 400; ++trial) {
    const int nodes = static_cast<int>(pick(1, 700));
    const Time now = kNow + pick(-1000, 1000);
    const bool far = trial % 7 == 0;  // one end 2^32 s past now: not packable
    const Duration window = far ? (Duration{1} << 33) : pick(1, 3) == 1 ? 100 : 86'400;
    profile.Reset(std::vector<Resources>(nodes, capacity), now, window, 1, std::vector<uint8_t>(nodes, 1));
    std::vector<std::pair<Time, NodeIndex>> want;
    const int ends = static_cast<int>(trial % 2 == 0 ? pick(0, 511) : pick(400, 700));
    for (int i = 0; i < ends; ++i) {
      AvailabilityProfile::Block b;
      b.start = now - pick(0, 100);
      b.end = far && i == 0 ? now + (Time{1} << 32) + pick(0, 9) : pick(0, 4) == 0 ? now + 50 : now + pick(1, 2 * 86'400);
      b.used[kCpu] = 1;
      const NodeIndex n = static_cast<NodeIndex>(pick(0, nodes - 1));
      profile.Add(n, b);
      if (b.end <= profile.horizon()) want.emplace_back(b.end, n);
    }
    profile.SealBase();
    std::sort(want.begin(), want.end());
    std::vector<std::pair<Time, NodeIndex>> got;
    profile.ForEachEndAfter(now, [&](Time end, NodeIndex n) {
      got.emplace_back(end, n);
      return true;
    });
    ASSERT_EQ(got, want) << "trial " << trial << " ends " << ends;
  }
}

// A reservation's nodes: with every 4-cpu node busy, the search's start on a coarse grid frees
// them all at once, and the workload takes the `members` nodes whose last block ended latest
// (ties: the lower node number; with node scores, a higher score first), as a full sort of every
// feasible node picks them, with and without scores.
TEST(PreferLatestFreed, AReservationTakesTheNodesFreedLatestAmongManyFeasible) {
  std::mt19937_64 rng(4242);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    QueueConfig config;
    config.resolution = 1000;
    config.window = 100'000;
    auto snapshot = std::make_shared<Snapshot>();
    const int nodes = static_cast<int>(pick(2, 40));
    std::vector<std::pair<Time, NodeIndex>> ends;  // (end, node): every node busy until `end`
    for (int n = 0; n < nodes; ++n) {
      snapshot->nodes.push_back(testing::MakeNode("n" + std::to_string(n), 4000));
      const Time end = pick(1, 999);  // all free at the first grid time after now (1000)
      RunningWorkload r = testing::MakeRunning("r" + std::to_string(n), n, testing::Cpu(4000), 0, end);
      r.kind = WorkloadKind::kSlurmJob;
      snapshot->running.push_back(r);
      ends.emplace_back(end, n);
    }
    const int32_t members = static_cast<int32_t>(pick(1, nodes));
    testing::PendingBuilder wide("wide", 4000, members);
    wide.Kind(WorkloadKind::kSlurmJob).Limit(500);
    // Every other trial with node scores (a higher one first; the tuple ranking's path).
    std::vector<int32_t> score(nodes, 0);
    if (trial % 2 == 1) {
      for (int32_t& v : score) v = static_cast<int32_t>(pick(0, 2));
      wide.w.node_preference = std::make_shared<const std::vector<int32_t>>(score);
    }
    snapshot->pending = {wide};
    QueuePlanner planner(config, nullptr);
    const Plan plan = planner.PlanCycle(snapshot, 0);
    ASSERT_EQ(plan.reservations.size(), 1u) << "trial " << trial;
    EXPECT_EQ(plan.reservations[0].start, 1000) << "trial " << trial;
    std::sort(ends.begin(), ends.end(), [&](const auto& a, const auto& b) {
      if (score[a.second] != score[b.second]) return score[a.second] > score[b.second];
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    MemberNodes want;
    for (int32_t m = 0; m < members; ++m) want.push_back(ends[m].second);
    MemberNodes got = plan.reservations[0].member_nodes;
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, want) << "trial " << trial << ": " << nodes << " nodes, " << members << " members";
  }
}

// The replay names each waiting status's job by its queue position (Plan::order) when the ids
// agree: under conservative backfill with kept reservations every job that waits gets a first
// estimate, its own (it starts no later), and a job that started when submitted gets none.
TEST(ReplayLookup, EachWaitingJobGetsItsOwnFirstEstimate) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    SwfTrace trace;
    trace.header.max_procs = 16;
    Time submit = 0;
    for (int i = 1; i <= 150; ++i) {
      submit += rng() % 3 == 0 ? 0 : rng() % 300;
      SwfJob j;
      j.job_number = i;
      j.submit_time = submit;
      j.requested_procs = rng() % 2 ? 1 + rng() % 16 : 1 + rng() % 3;
      j.requested_time = 60 * (1 + rng() % 30);
      j.run_time = j.requested_time * static_cast<int64_t>(1 + rng() % 100) / 100;
      trace.jobs.push_back(j);
    }
    ReplayOptions options;
    options.policy = ReplayPolicy::kConservative;
    options.keep_reservations = true;
    auto r = ReplayTrace(trace, options);
    ASSERT_TRUE(r.ok()) << r.status();
    int waited = 0;
    for (const JobOutcome& j : r->jobs) {
      if (j.start == j.submit) {
        EXPECT_FALSE(j.first_estimate.has_value()) << "seed " << seed << " job " << j.job_number;
        continue;
      }
      ++waited;
      ASSERT_TRUE(j.first_estimate.has_value()) << "seed " << seed << " job " << j.job_number;
      EXPECT_LE(j.start, *j.first_estimate) << "seed " << seed << " job " << j.job_number;
      EXPECT_GE(*j.first_estimate, j.submit) << "seed " << seed << " job " << j.job_number;
    }
    EXPECT_GT(waited, 50) << "seed " << seed << ": the trace must make jobs wait";
  }
}

}  // namespace
}  // namespace onequeue::queue

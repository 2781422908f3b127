// Issue 26: internal::NoRoomMemo, the earliest-placement search's memo of the nodes without room
// at its start, used as CyclePass::EarliestPlacement uses it (Begin, then KnownNoRoom before a
// Copies query and NoRoom after a 0). Each test makes one input of a remembered "no" change and
// checks that the memo no longer answers it: the node's blocks (Remove, Add), the time, the
// duration, the request.
#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "queue/plan.h"
#include "queue/planner.h"
#include "queue/planner_memos.h"
#include "queue/profile.h"
#include "queue/resources.h"

namespace onequeue::queue {
namespace {

using internal::NoRoomMemo;

constexpr Time kNow = 1000;
constexpr Time kStart = 1600;  // a search's start, on the 60 s grid

Resources Cores(int64_t cpu) {
  Resources r;
  r[kCpu] = cpu;
  return r;
}

// Two 4-core nodes; node 0 is taken over [1500, 2000) by a reservation.
AvailabilityProfile TwoNodes() {
  AvailabilityProfile p({Cores(4), Cores(4)}, kNow, /*window=*/86400, /*resolution=*/60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{1500, 2000, Cores(4), WorkloadKind::kSlurmJob, true});
  return p;
}

// What EarliestPlacement does for one node: the memo's answer, else the profile's (remembered
// when it is 0).
int64_t CopiesAt(const AvailabilityProfile& p, NoRoomMemo& memo, NodeIndex n, Time t, Duration d,
                 const Resources& request) {
  if (memo.KnownNoRoom(n, t, d, p.NodeVersion(n))) return 0;
  NoRoomSpan blocked;
  const int64_t c = p.Copies(n, t, t + d, request, WorkloadKind::kSlurmJob, 1, false, -1, -1, &blocked);
  if (c <= 0) memo.NoRoomAt(n, blocked, p.NodeVersion(n));
  return c;
}

// Node 0's no at [1600, 1900) names the reservation's span, [1500, 2000) (it alone leaves no
// room): every interval that meets the span is known, whatever its start or length; one that
// misses it is not.
TEST(NoRoomMemo, ANoAnswersTheIntervalsThatMeetItsSpan) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  EXPECT_EQ(CopiesAt(p, memo, 1, kStart, 300, Cores(1)), 1);
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart, 600, p.NodeVersion(0)));
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart, 1, p.NodeVersion(0)));
  EXPECT_TRUE(memo.KnownNoRoom(0, 1440, 61, p.NodeVersion(0)));
  EXPECT_FALSE(memo.KnownNoRoom(0, 1440, 60, p.NodeVersion(0)));  // [1440, 1500) misses it
  EXPECT_TRUE(memo.KnownNoRoom(0, 1960, 300, p.NodeVersion(0)));
  EXPECT_FALSE(memo.KnownNoRoom(0, 2000, 300, p.NodeVersion(0)));  // after it
  EXPECT_FALSE(memo.KnownNoRoom(1, kStart, 300, p.NodeVersion(1)));  // it had room: nothing kept
}

// A block that starts inside the interval names its span: [1000, 2200) meets [2000, 3000), so
// [1900, 2100) and [2900, 3500) are known, and [1600, 2000) is not (and has room).
TEST(NoRoomMemo, ABlockAheadNamesItsSpan) {
  AvailabilityProfile p({Cores(4)}, kNow, 86400, 60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{2000, 3000, Cores(4), WorkloadKind::kSlurmJob, true});
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, 1000, 1200, Cores(1)), 0);
  EXPECT_TRUE(memo.KnownNoRoom(0, 1900, 200, p.NodeVersion(0)));
  EXPECT_TRUE(memo.KnownNoRoom(0, 2900, 600, p.NodeVersion(0)));
  EXPECT_FALSE(memo.KnownNoRoom(0, 1600, 400, p.NodeVersion(0)));
  EXPECT_EQ(CopiesAt(p, memo, 0, 1600, 400, Cores(1)), 1);
}

// A node that was given a block of negative usage names no span: nothing is kept there.
TEST(NoRoomMemo, NothingIsKeptOnANodeWithANegativeBlock) {
  AvailabilityProfile p({Cores(4)}, kNow, 86400, 60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{1500, 2000, Cores(4), WorkloadKind::kSlurmJob, true});
  p.Add(0, AvailabilityProfile::Block{5000, 6000, Cores(-1), WorkloadKind::kSlurmJob, true});
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
}

// The stale entry that matters: a promise's placeholder taken back (Remove) frees the node, and
// the next search from the same start must see it (CyclePass::RemovePlaceholder).
TEST(NoRoomMemo, ARemoveOnTheNodeForgetsItsNo) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  ASSERT_TRUE(p.Remove(0, AvailabilityProfile::Block{1500, 2000, Cores(4), WorkloadKind::kSlurmJob, true}));
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 1);
}

TEST(NoRoomMemo, AnAddOnTheNodeForgetsItsNo) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  const uint32_t before = p.NodeVersion(0);
  p.Add(0, AvailabilityProfile::Block{3000, 4000, Cores(1), WorkloadKind::kSlurmJob, true});
  EXPECT_NE(p.NodeVersion(0), before);
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
}

// A no holds whatever the search's start: another search of the request asks it again.
TEST(NoRoomMemo, ANoHoldsWhateverTheSearchStart) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  memo.Begin(Cores(4), WorkloadKind::kSlurmJob, -1, p.size());
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart - 60, 300, p.NodeVersion(0)));
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart + 420, 300, Cores(1)), 1);  // [2020, 2320): after the block
}

// Brute force: a walk of random questions (times on the grid, durations, two requests) between
// random Adds and Removes of blocks (some of the other world, some of negative usage) answers
// each question as the profile does without the memo.
TEST(NoRoomMemo, AnswersAsTheProfileDoesOverRandomWalks) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    uint64_t state = seed * 0x9E3779B97F4A7C15ull;
    auto next = [&state](int64_t bound) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      return static_cast<int64_t>(state % static_cast<uint64_t>(bound));
    };
    AvailabilityProfile p({Cores(4), Cores(4), Cores(4)}, kNow, 86400, 60, false);
    p.SealBase();
    std::vector<std::pair<NodeIndex, AvailabilityProfile::Block>> added;
    NoRoomMemo memo;
    const Resources requests[] = {Cores(1), Cores(3)};
    for (int step = 0; step < 400; ++step) {
      const int64_t what = next(10);
      if (what == 0) {
        const NodeIndex n = static_cast<NodeIndex>(next(3));
        const Time start = kNow + 60 * next(20);
        // Mostly Slurm blocks; now and then a pod's (another world on these exclusive nodes) or,
        // on node 2 only, one of negative usage.
        const int64_t shape = next(12);
        const AvailabilityProfile::Block b{start, start + 60 * (1 + next(10)),
                                           Cores(shape == 0 && n == 2 ? -1 : 1 + next(4)),
                                           shape == 1 ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob,
                                           next(2) == 0};
        p.Add(n, b);
        added.emplace_back(n, b);
      } else if (what == 1 && !added.empty()) {
        const size_t i = static_cast<size_t>(next(static_cast<int64_t>(added.size())));
        ASSERT_TRUE(p.Remove(added[i].first, added[i].second));
        added.erase(added.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        const Resources& r = requests[next(2)];
        memo.Begin(r, WorkloadKind::kSlurmJob, -1, p.size());
        for (int q = 0; q < 6; ++q) {
          const NodeIndex n = static_cast<NodeIndex>(next(3));
          const Time t = kNow + 60 * next(24);
          const Duration d = 60 * (1 + next(8));
          const int64_t expected = p.Copies(n, t, t + d, r, WorkloadKind::kSlurmJob, 1);
          ASSERT_EQ(CopiesAt(p, memo, n, t, d, r), expected)
              << "seed " << seed << " step " << step << " node " << n << " t " << t << " d " << d;
        }
      }
    }
  }
}

// A no for d is no no for a shorter d' when the block that left no room starts inside
// [t + d', t + d): a search with a short limit, one with a long limit, then a short one again, all
// from the same start (the replay of the 3,000-job heavy_steady trace decided differently when
// the long search's nos answered the short one).
TEST(NoRoomMemo, ANoForALongDurationIsNotANoForAShortOne) {
  AvailabilityProfile p({Cores(4), Cores(4)}, kNow, 86400, 60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{2000, 3000, Cores(4), WorkloadKind::kSlurmJob, true});
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 1, kStart, 300, Cores(1)), 1);
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 600, Cores(1)), 0);  // [1600, 2200) meets the block
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 1);  // [1600, 1900) does not
}

// Another request, kind or tenant has a set of its own: a no for 4 cores is no no for 1.
TEST(NoRoomMemo, EachRequestHasItsOwnSet) {
  AvailabilityProfile p({Cores(4)}, kNow, 86400, 60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{1500, 2000, Cores(2), WorkloadKind::kSlurmJob, true});
  NoRoomMemo memo;
  memo.Begin(Cores(4), WorkloadKind::kSlurmJob, -1, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(4)), 0);
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 1);
  memo.Begin(Cores(4), WorkloadKind::kPodGroup, -1, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
  memo.Begin(Cores(4), WorkloadKind::kSlurmJob, 3, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
  memo.Begin(Cores(4), WorkloadKind::kSlurmJob, -1, p.size());
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart, 300, p.NodeVersion(0)));
}

// The same through the planner: a promise's placeholder is the one thing a cycle takes back
// (CyclePass::RemovePlaceholder), so the one place where a remembered no goes stale.
//   3 nodes of 4 cpus: "a" (0, busy until 150), "b" (1), "c" (2, busy until 1000). "h" was
//   promised "a" over [200, 300). "x1" and "x2" (same request and time limit, not before 200)
//   come before and after "h" in the queue. "x1" searches from 200 while the placeholder is on
//   "a" (no room there, remembered) and reserves "b"; at its turn "h" takes its placeholder back
//   and starts now on "b" (it ends at 100); "x2" searches from 200 again and must find "a" free
//   then, not wait for "b" at 300.
TEST(NoRoomMemo, APlaceholderTakenBackFreesItsNodeForTheNextSearchFromTheSameStart) {
  QueueConfig config;
  config.weights = PriorityWeights{.age = 0, .fair_share = 0, .job_size = 0, .partition = 0, .qos = 10000};
  config.qos = {QosPolicy{.name = "first", .priority = 300}, QosPolicy{.name = "second", .priority = 200},
                QosPolicy{.name = "third", .priority = 100}};
  config.resolution = 10;
  config.window = 100'000;
  auto node = [](const std::string& name) {
    Node n;
    n.name = name;
    n.allocatable[kCpu] = 4000;
    n.allocatable[kPods] = 110;
    return n;
  };
  auto job = [](const std::string& id, const std::string& qos, Time not_before) {
    PendingWorkload w;
    w.id = id;
    w.kind = WorkloadKind::kSlurmJob;
    w.per_member[kCpu] = 4000;
    w.time_limit = 100;
    w.qos = qos;
    w.account = "acct";
    w.not_before = not_before;
    return w;
  };
  auto busy = [](const std::string& id, NodeIndex n, Time end) {
    RunningWorkload r;
    r.id = id;
    r.kind = WorkloadKind::kSlurmJob;
    Resources all;
    all[kCpu] = 4000;
    r.allocations = {Allocation{n, all}};
    r.expected_end = end;
    return r;
  };
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->nodes = {node("a"), node("b"), node("c")};
  snapshot->running = {busy("busy-a", 0, 150), busy("busy-c", 2, 1000)};
  snapshot->pending = {job("x1", "first", 200), job("h", "second", 0), job("x2", "third", 200)};
  PromisedReservation promise;
  promise.workload = "h";
  promise.member_nodes = {0};
  promise.start = 200;
  promise.end = 300;
  promise.per_member[kCpu] = 4000;
  QueuePlanner planner(config, nullptr);
  const Plan plan = planner.PlanCycle(snapshot, 0, {promise});
  ASSERT_EQ(plan.OrderIds(), (std::vector<std::string>{"x1", "h", "x2"}));
  const StartDecision* h = nullptr;
  for (const StartDecision& s : plan.starts) h = s.workload == "h" ? &s : h;
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->member_nodes, MemberNodes{1});
  const ReserveDecision* x1 = nullptr;
  const ReserveDecision* x2 = nullptr;
  for (const ReserveDecision& r : plan.reservations) {
    if (r.workload == "x1") x1 = &r;
    if (r.workload == "x2") x2 = &r;
  }
  ASSERT_NE(x1, nullptr);
  EXPECT_EQ(x1->start, 200);
  EXPECT_EQ(x1->member_nodes, MemberNodes{1});
  ASSERT_NE(x2, nullptr);
  EXPECT_EQ(x2->start, 200);
  EXPECT_EQ(x2->member_nodes, MemberNodes{0});
}

// The start-now memo (CyclePass::CopiesNowWithBlockAhead, s_.no_room_now) goes stale the same
// way: a placeholder ahead on a node leaves no room now for a workload whose run would reach it,
// and the placeholder taken back frees the node for the next start of the same request.
//   3 nodes of 4 cpus: "a" (0), "b" (1), "c" (2, busy until 120). "h" (4 cpus for 1,000 s) was
//   promised "a" over [50, 150), "k" (2 cpus) over [150, 250). "x1" and "x2" (2 cpus for 200 s,
//   on "a" or "c" only) come before and after "h". "x1" cannot start now ("a" is full from 50:
//   remembered; "c" is busy) and reserves "c" at 120; "h" ("k"'s placeholder keeps it off "a")
//   takes its placeholder back and starts on "b"; "x2" must then start now on "a", beside "k"'s
//   placeholder (still a block ahead: the memo is asked).
TEST(NoRoomMemo, APlaceholderTakenBackFreesItsNodeForTheNextStartNow) {
  QueueConfig config;
  config.weights = PriorityWeights{.age = 0, .fair_share = 0, .job_size = 0, .partition = 0, .qos = 10000};
  config.qos = {QosPolicy{.name = "first", .priority = 400}, QosPolicy{.name = "second", .priority = 300},
                QosPolicy{.name = "third", .priority = 200}, QosPolicy{.name = "fourth", .priority = 100}};
  config.resolution = 10;
  config.window = 100'000;
  auto node = [](const std::string& name) {
    Node n;
    n.name = name;
    n.allocatable[kCpu] = 4000;
    n.allocatable[kPods] = 110;
    return n;
  };
  auto job = [](const std::string& id, const std::string& qos, int64_t cpu, Duration limit, bool a_or_c) {
    PendingWorkload w;
    w.id = id;
    w.kind = WorkloadKind::kSlurmJob;
    w.per_member[kCpu] = cpu;
    w.time_limit = limit;
    w.qos = qos;
    w.account = "acct";
    if (a_or_c) w.eligibility.allowed_nodes = std::vector<std::string>{"a", "c"};
    return w;
  };
  auto promised = [](const std::string& id, Time start, int64_t cpu) {
    PromisedReservation p;
    p.workload = id;
    p.member_nodes = {0};
    p.start = start;
    p.end = start + 100;
    p.per_member[kCpu] = cpu;
    return p;
  };
  RunningWorkload busy;
  busy.id = "busy-c";
  busy.kind = WorkloadKind::kSlurmJob;
  busy.allocations = {Allocation{2, Resources{}}};
  busy.allocations[0].used[kCpu] = 4000;
  busy.expected_end = 120;
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->nodes = {node("a"), node("b"), node("c")};
  snapshot->running = {busy};
  snapshot->pending = {job("x1", "first", 2000, 200, true), job("h", "second", 4000, 1000, false),
                       job("x2", "third", 2000, 200, true), job("k", "fourth", 2000, 100, false)};
  QueuePlanner planner(config, nullptr);
  const Plan plan = planner.PlanCycle(snapshot, 0, {promised("h", 50, 4000), promised("k", 150, 2000)});
  ASSERT_EQ(plan.OrderIds(), (std::vector<std::string>{"x1", "h", "x2", "k"}));
  std::vector<std::pair<std::string, MemberNodes>> starts;
  for (const StartDecision& s : plan.starts) starts.emplace_back(s.workload, s.member_nodes);
  ASSERT_GE(starts.size(), 2u);
  EXPECT_EQ(starts[0], (std::pair<std::string, MemberNodes>{"h", {1}}));
  EXPECT_EQ(starts[1], (std::pair<std::string, MemberNodes>{"x2", {0}}));
  const ReserveDecision* x1 = nullptr;
  for (const ReserveDecision& r : plan.reservations) x1 = r.workload == "x1" ? &r : x1;
  ASSERT_NE(x1, nullptr);
  EXPECT_EQ(x1->start, 120);
  EXPECT_EQ(x1->member_nodes, MemberNodes{2});
}

}  // namespace
}  // namespace onequeue::queue

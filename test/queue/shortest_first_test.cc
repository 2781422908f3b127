// Issue 15 part 3: the default policy's pieces in the planner and the replay.
//   * Shortest-job-backfilled-first (QueueConfig::backfill_shortest_first): among the backfill
//     candidates after the last reservation, the shortest time limit tries first.
//   * `oq simulate --config` (ReplayOptions::config): SWF users become accounts and fair-share
//     orders jobs that wait together; reservations are kept as the daemon keeps them.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "queue/plan.h"
#include "queue/planner.h"
#include "queue/replay.h"
#include "queue/swf.h"

namespace onequeue::queue {
namespace {

Node OneCpuNode(int i) {
  Node n;
  n.name = "p" + std::to_string(i);
  n.allocatable[kCpu] = 1000;
  n.owner.kind = OwnerKind::kSlurm;
  return n;
}

PendingWorkload SlurmJob(const std::string& id, int32_t members, Duration limit, Time submit) {
  PendingWorkload w;
  w.id = id;
  w.kind = WorkloadKind::kSlurmJob;
  w.members = members;
  w.members_present = members;
  w.per_member[kCpu] = 1000;
  w.time_limit = limit;
  w.submit_time = submit;
  return w;
}

// 4 one-cpu nodes; "running" holds nodes 0-1 until 1000. The queue (submit order): "head" needs
// all 4 (reserved at 1000), then "long" (2 nodes, 900 s) and "short" (2 nodes, 100 s): each fits
// the two free nodes before 1000, but not both. Queue order starts "long"; SJBF starts "short".
Plan PlanTheCandidates(bool shortest_first) {
  QueueConfig c;
  c.weights = PriorityWeights{0, 0, 0, 0, 0};
  c.reservation_depth = 1;
  c.resolution = 1;
  c.backfill_shortest_first = shortest_first;
  QueuePlanner planner(c, nullptr);
  auto snap = std::make_shared<Snapshot>();
  for (int i = 0; i < 4; ++i) snap->nodes.push_back(OneCpuNode(i));
  RunningWorkload r;
  r.id = "running";
  r.kind = WorkloadKind::kSlurmJob;
  r.expected_end = 1000;
  for (NodeIndex n : {0, 1}) {
    Allocation a;
    a.node = n;
    a.used[kCpu] = 1000;
    r.allocations.push_back(a);
  }
  snap->running = {r};
  snap->pending = {SlurmJob("head", 4, 500, 0), SlurmJob("long", 2, 900, 1), SlurmJob("short", 2, 100, 2)};
  return planner.PlanCycle(snap, 0);
}

TEST(ShortestFirst, QueueOrderBackfillsTheFirstCandidate) {
  const Plan plan = PlanTheCandidates(false);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].workload, "long");
}

TEST(ShortestFirst, SjbfBackfillsTheShortestCandidateAndKeepsPositionsAndTheReservation) {
  const Plan plan = PlanTheCandidates(true);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].workload, "short");
  ASSERT_EQ(plan.reservations.size(), 1u);
  EXPECT_EQ(plan.reservations[0].workload, "head");
  EXPECT_EQ(plan.reservations[0].start, 1000);
  std::map<std::string, int32_t> position;
  for (const WaitingStatus& w : plan.waiting) position[std::string(w.workload)] = w.queue_position;
  EXPECT_EQ(position["head"], 1);
  EXPECT_EQ(position["long"], 2);  // its place in the queue, though it was planned last
}

// PlanTheCandidates' cluster at `now` (the running job ends at now + 1000, "head" reserved then),
// with these candidates after "head".
Plan PlanSjbf(Time now, Duration starvation_bound, const std::vector<PendingWorkload>& candidates) {
  QueueConfig c;
  c.weights = PriorityWeights{0, 0, 0, 0, 0};
  c.reservation_depth = 1;
  c.resolution = 1;
  c.backfill_shortest_first = true;
  c.starvation_bound = starvation_bound;
  QueuePlanner planner(c, nullptr);
  auto snap = std::make_shared<Snapshot>();
  for (int i = 0; i < 4; ++i) snap->nodes.push_back(OneCpuNode(i));
  RunningWorkload r;
  r.id = "running";
  r.kind = WorkloadKind::kSlurmJob;
  r.expected_end = now + 1000;
  for (NodeIndex n : {0, 1}) {
    Allocation a;
    a.node = n;
    a.used[kCpu] = 1000;
    r.allocations.push_back(a);
  }
  snap->running = {r};
  snap->pending = {SlurmJob("head", 4, 500, -1)};
  for (const PendingWorkload& w : candidates) snap->pending.push_back(w);
  return planner.PlanCycle(snap, now);
}

// Candidates of one time limit try in queue order (submit order here).
TEST(ShortestFirst, EqualLimitsTryInQueueOrder) {
  const Plan plan = PlanSjbf(0, 0, {SlurmJob("first", 2, 100, 1), SlurmJob("second", 2, 100, 2)});
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].workload, "first");
}

// Starving candidates try before the others, oldest first whatever their limits: "long"
// (pending 10,000 s, past the bound) starts, not the shorter starving "starving-short" submitted
// after it nor the shortest, "short", which does not starve.
TEST(ShortestFirst, StarvingCandidatesTryFirstOldestFirst) {
  const Plan plan = PlanSjbf(10000, 5000,
                             {SlurmJob("long", 2, 900, 0), SlurmJob("starving-short", 2, 200, 1),
                              SlurmJob("short", 2, 100, 9995)});
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].workload, "long");
}

// 4 processors. User 1's job 1 fills the machine 0-1000. At 2000 user 1 (job 2) and user 2
// (job 3) submit together, each asking all 4 processors for 100 s. In submit order job 2 goes
// first; with fair-share (user 1 has used 4,000 processor-seconds, user 2 nothing) job 3 does.
constexpr const char* kFairShareTrace =
    "; MaxProcs: 4\n"
    "1    0 -1 1000 4 -1 -1 4 1000 -1 1 1 1 -1 1 -1 -1 -1\n"
    "2 2000 -1  100 4 -1 -1 4  100 -1 1 1 1 -1 1 -1 -1 -1\n"
    "3 2000 -1  100 4 -1 -1 4  100 -1 1 2 2 -1 2 -1 -1 -1\n";

std::map<int64_t, Time> Starts(const ReplayResult& r) {
  std::map<int64_t, Time> starts;
  for (const JobOutcome& j : r.jobs) starts[j.job_number] = j.start;
  return starts;
}

TEST(ReplayWithConfig, SwfUsersAreAccountsAndFairShareOrdersJobsThatWaitTogether) {
  auto trace = ParseSwfStrict(kFairShareTrace, 10);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ReplayOptions easy;
  easy.policy = ReplayPolicy::kEasy;
  auto by_submit = ReplayTrace(*trace, easy);
  ASSERT_TRUE(by_submit.ok()) << by_submit.status();
  EXPECT_EQ(Starts(*by_submit), (std::map<int64_t, Time>{{1, 0}, {2, 2000}, {3, 2100}}));

  ReplayOptions daemon;
  QueueConfig c;  // the planner's defaults, fair-share only
  c.weights = PriorityWeights{.age = 0, .fair_share = 10000, .job_size = 0, .partition = 0, .qos = 0};
  c.resolution = 1;
  daemon.config = c;
  auto fair = ReplayTrace(*trace, daemon);
  ASSERT_TRUE(fair.ok()) << fair.status();
  EXPECT_EQ(Starts(*fair), (std::map<int64_t, Time>{{1, 0}, {2, 2100}, {3, 2000}}));
}

TEST(ReplayWithConfig, AccountsListedByGroupChargeTheGroup) {
  // Listing group-1 (and not user-1) charges user 1's jobs to its group: then job 2 still pays
  // for job 1 and job 3 (user 2, group 2, listed too) goes first.
  auto trace = ParseSwfStrict(kFairShareTrace, 10);
  ASSERT_TRUE(trace.ok());
  ReplayOptions daemon;
  QueueConfig c;
  c.weights = PriorityWeights{.age = 0, .fair_share = 10000, .job_size = 0, .partition = 0, .qos = 0};
  c.resolution = 1;
  c.accounts = {Account{"group-1", "", 1}, Account{"group-2", "", 1}, Account{"user-2", "group-2", 1}};
  daemon.config = c;
  auto fair = ReplayTrace(*trace, daemon);
  ASSERT_TRUE(fair.ok()) << fair.status();
  EXPECT_EQ(Starts(*fair), (std::map<int64_t, Time>{{1, 0}, {2, 2100}, {3, 2000}}));
}

TEST(ReplayWithConfig, KeepReservationsStillKeepsEveryFirstReservation) {
  // --keep-reservations now runs on the planner's promises (the mechanism the daemon uses).
  auto trace = ParseSwfStrict(kFairShareTrace, 10);
  ASSERT_TRUE(trace.ok());
  ReplayOptions kept;
  kept.policy = ReplayPolicy::kConservative;
  kept.keep_reservations = true;
  auto r = ReplayTrace(*trace, kept);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const JobOutcome& j : r->jobs) {
    if (j.first_estimate.has_value()) EXPECT_LE(j.start, *j.first_estimate) << "job " << j.job_number;
  }
}

}  // namespace
}  // namespace onequeue::queue

// Scenario tests of the one queue across both worlds, cycle after cycle: pods and Slurm jobs in ->
// binds, lends, reclaims, requeues and holds out (the in-memory cluster of fake_world.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/node_split.h"
#include "absl/strings/match.h"
#include "fake_world.h"
#include "scheduler/scheduling_loop.h"
#include "two_shared_nodes_scene.h"

namespace onequeue::scheduler {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr queue::Time kT0 = 1763722800;  // 2025-11-21T11:00:00Z

Config SlurmConfig(const std::string& mechanism = "drain") { return SlurmLoopConfig(mechanism); }

using Cluster = SlurmLoopCluster;

TEST(SlurmLoopTest, AnIdlePoolIsFencedThenLentAfterLendAfterToTheJobOnequeueChose) {
  Cluster c(1);
  c.slurm.Submit(7);
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  CycleStats s = c.Cycle(loop, kT0);
  // Kubernetes' node is fenced on the Slurm side; the job waits, held, with onequeue's reason.
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes");
  EXPECT_EQ(c.slurm.Job(7).priority, 0);
  EXPECT_THAT(c.slurm.Job(7).admin_comment, HasSubstr("onequeue:"));
  EXPECT_EQ(s.slurm_pending, 1);
  c.Cycle(loop, kT0 + 1);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
  // lendAfterSeconds later the node goes to the job, and only to it.
  s = c.Cycle(loop, kT0 + 61);
  EXPECT_EQ(s.slurm_started, 1);
  EXPECT_EQ(s.lent, 1);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "slurm/7");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "");
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).nodes, std::vector<std::string>{"n1"});
  EXPECT_TRUE(c.slurm.Job(7).required_nodes.empty());  // issue 29: ReqNodeList stays the user's
  EXPECT_THAT(c.k8s.node_events, Contains("n1 Lent"));
  // Running, not started twice.
  c.Cycle(loop, kT0 + 62);
  EXPECT_EQ(std::count(c.slurm.calls.begin(), c.slurm.calls.end(), "start 7"), 1);
}

// Issue 29: Slurm's PriorityTier feeds the partition factor. A job of the higher-tier partition
// gets the one node before an older job of a lower tier, and the plan's breakdown (what `oq
// priority` prints in its PARTITION column) carries the factor, normalised by the largest tier
// among the shared partitions (the reclaim partition's tier 10 does not count).
TEST(SlurmLoopTest, AHigherPriorityTierWinsOverAnOlderJobOfALowerTier) {
  Cluster c(1);
  c.slurm.Node("n1").partitions = {"low", "high", "reclaim"};
  for (auto [name, tier] : {std::pair{"low", 1}, {"high", 4}, {"reclaim", 10}}) {
    slurm::SlurmPartition p;
    p.name = name;
    p.priority_tier = tier;
    c.slurm.partitions[name] = p;
  }
  slurm::SlurmJob& old = c.slurm.Submit(7, 8);
  old.partition = "low";
  old.submit_time = absl::FromUnixSeconds(kT0 - 1800);  // half an hour older
  c.slurm.Submit(8, 8).partition = "high";
  Config cfg = SlurmConfig();
  cfg.slurm.shared_partitions = {"low", "high"};
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  StatusBoard board;
  loop.PublishTo(&board);
  c.Cycle(loop, kT0);
  std::map<std::string, queue::PriorityBreakdown> factors;
  const auto status = board.Latest();
  ASSERT_NE(status, nullptr);
  for (size_t i = 0; i < status->plan->snapshot->pending.size(); ++i)
    factors[status->plan->snapshot->pending[i].id] = status->plan->priorities[i];
  ASSERT_EQ(factors.size(), 2u);
  EXPECT_DOUBLE_EQ(factors["slurm/8"].partition, 1.0);
  EXPECT_DOUBLE_EQ(factors["slurm/7"].partition, 0.25);
  EXPECT_GT(factors["slurm/7"].age, factors["slurm/8"].age);
  EXPECT_GT(factors["slurm/8"].total, factors["slurm/7"].total);
  c.Cycle(loop, kT0 + 61);  // lendAfterSeconds later the node goes to the higher tier's job
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
}

// Issue 29 (slurm_partitions.h): a job whose time limit is over its partition's MaxTime is never
// started by onequeue, though it is older and Slurm would take it at that priority; a younger
// job within the limit gets the node, and the refused job's AdminComment says why.
TEST(SlurmLoopTest, AJobOverItsPartitionsMaxTimeIsNeverStartedAndAJobWithinItGetsTheNode) {
  Cluster c(1);
  slurm::SlurmPartition pool;
  pool.name = "pool";
  pool.state = "UP";
  pool.priority_tier = 1;
  pool.max_time = absl::Minutes(10);
  c.slurm.partitions["pool"] = pool;
  slurm::SlurmJob& over = c.slurm.Submit(7, 8);
  over.time_limit = absl::Minutes(60);
  over.submit_time = absl::FromUnixSeconds(kT0 - 1800);
  c.slurm.Submit(8, 8).time_limit = absl::Minutes(5);
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.Cycle(loop, kT0 + 61);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.Job(7).priority, 0);
  EXPECT_THAT(c.slurm.Job(7).admin_comment, HasSubstr("over its MaxTime 10 min (PartitionTimeLimit)"));
  // The node idle again: still not started.
  c.slurm.Job(8).state = slurm::JobState::kCompleted;
  for (int t = 62; t < 200; t += 30) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
  EXPECT_EQ(std::count(c.slurm.calls.begin(), c.slurm.calls.end(), "start 7"), 0);
}

// Issue 29: `-p down,pool` is checked partition by partition: the DOWN partition refuses it, the
// UP one takes it; a job only of the DOWN partition is never started, though it is the oldest.
TEST(SlurmLoopTest, AMultiPartitionJobStartsThroughAnyOfItsPartitionsThatAllowsIt) {
  Cluster c(1);
  c.slurm.Node("n1").partitions = {"down", "pool", "reclaim"};
  for (auto [name, state] : {std::pair{"down", "DOWN"}, {"pool", "UP"}, {"reclaim", "UP"}}) {
    slurm::SlurmPartition p;
    p.name = name;
    p.state = state;
    p.priority_tier = std::string(name) == "reclaim" ? 10 : 1;
    c.slurm.partitions[name] = p;
  }
  slurm::SlurmJob& only_down = c.slurm.Submit(9, 8);
  only_down.partition = "down";
  only_down.submit_time = absl::FromUnixSeconds(kT0 - 3600);
  slurm::SlurmJob& either = c.slurm.Submit(7, 8);
  either.partition = "down,pool";
  Config cfg = SlurmConfig();
  cfg.slurm.shared_partitions = {"down", "pool"};
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.Cycle(loop, kT0 + 61);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(9).state, slurm::JobState::kPending);
  EXPECT_THAT(c.slurm.Job(9).admin_comment, HasSubstr("partition down: state DOWN"));
}

// Issue 29: a pod has no partition; it counts as in the lowest tier of the shared partitions. With
// one shared partition (tier 5) the factor is equal across the worlds and the QOS decides: the
// normal pod before the batch job (before, the job alone got the factor 1.0 and won the node).
TEST(SlurmLoopTest, OneSharedPartitionsTierOrdersNothingAcrossTheWorlds) {
  Cluster c(1);
  slurm::SlurmPartition pool;
  pool.name = "pool";
  pool.priority_tier = 5;
  c.slurm.partitions["pool"] = pool;
  c.slurm.Submit(7, 8);
  c.k8s.AddPod("web", "4", "normal");
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  StatusBoard board;
  loop.PublishTo(&board);
  c.Cycle(loop, kT0);
  const auto status = board.Latest();
  ASSERT_NE(status, nullptr);
  std::map<std::string, queue::PriorityBreakdown> factors;
  for (size_t i = 0; i < status->plan->snapshot->pending.size(); ++i)
    factors[status->plan->snapshot->pending[i].id] = status->plan->priorities[i];
  ASSERT_EQ(factors.count("slurm/7"), 1u);
  ASSERT_EQ(factors.count("ns/web"), 1u);
  EXPECT_DOUBLE_EQ(factors["slurm/7"].partition, 1.0);
  EXPECT_DOUBLE_EQ(factors["ns/web"].partition, 1.0);
  EXPECT_GT(factors["ns/web"].total, factors["slurm/7"].total);
  for (int t = 1; t < 4; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "n1");
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
}

// Issue 29: a started job is not pinned to the node the plan lent for it, so Slurm may start it on
// any node lent to it. While a start is not yet seen, no idle lent node is returned: here Slurm
// starts job 8 on the other idle lent node, which (before this rule) had just been fenced for
// Kubernetes past returnAfterSeconds. Once the start is seen, the unused node is returned.
TEST(SlurmLoopTest, NoIdleLentNodeIsReturnedWhileAStartIsUnconfirmedSlurmMayPlaceTheJobThere) {
  Cluster c(2);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  cfg.slurm.return_after_seconds = 20;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.Submit(6, 8);
  c.slurm.Submit(7, 8);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.Job(6).state, slurm::JobState::kRunning);
  ASSERT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  c.slurm.Job(6).state = slurm::JobState::kCompleted;
  c.slurm.Job(7).state = slurm::JobState::kCompleted;
  c.Cycle(loop, kT0 + 1);  // both lent nodes idle from here
  c.slurm.start_lag = true;
  c.slurm.Submit(8, 8);
  c.Cycle(loop, kT0 + 25);  // past returnAfterSeconds for both; job 8 released, not yet running
  ASSERT_THAT(c.slurm.calls, Contains("start 8"));
  EXPECT_TRUE(absl::StartsWith(c.k8s.OwnerOf("n1"), "slurm")) << c.k8s.OwnerOf("n1");
  EXPECT_TRUE(absl::StartsWith(c.k8s.OwnerOf("n2"), "slurm")) << c.k8s.OwnerOf("n2");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "");
  EXPECT_EQ(c.slurm.FenceOwner("n2"), "");
  // Slurm picks a node: the one the plan did not lend for it.
  const std::string planned = c.k8s.OwnerOf("n1") == "slurm/8" ? "n1" : "n2";
  const std::string other = planned == "n1" ? "n2" : "n1";
  c.slurm.Run(8, other);
  c.Cycle(loop, kT0 + 26);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.requeues[8], 0);
  EXPECT_TRUE(absl::StartsWith(c.k8s.OwnerOf(other), "slurm")) << c.k8s.OwnerOf(other);
  EXPECT_EQ(c.slurm.FenceOwner(other), "");
  // The node it did not use is idle: returned returnAfterSeconds after the start was seen.
  c.Cycle(loop, kT0 + 50);
  EXPECT_EQ(c.k8s.OwnerOf(planned), "kubernetes");
  EXPECT_TRUE(absl::StartsWith(c.k8s.OwnerOf(other), "slurm")) << c.k8s.OwnerOf(other);
}

// Issue 29: an array task onequeue split off and started holds the node lent for it while the
// poller's view still lists it in the array's record (a view made before the split, as the live
// poll is right after a start). Before, the next cycle saw both nodes free and started tasks 2
// and 3 beside tasks 0 and 1, so four released tasks competed for two nodes and Slurm, not the
// queue, chose the order (seen live on 24.11).
TEST(SlurmLoopTest, ArrayTasksStartedButNotYetSeenSplitHoldTheirNodes) {
  Cluster c(2);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.SubmitArray(100, "0-9");
  c.slurm.start_lag = true;  // released, not yet running
  c.Cycle(loop, kT0);
  EXPECT_EQ(c.Calls("split 100_0"), 1);
  EXPECT_EQ(c.Calls("split 100_1"), 1);
  ASSERT_EQ(c.Calls("split 100_2"), 0);
  // The poller lags: its view shows the array's record as it was before both splits, and not the
  // tasks' own records (101, 102).
  auto lagging = std::make_shared<slurm::SlurmView>(*c.slurm.View());
  slurm::SlurmView::Jobs jobs = *lagging->jobs;
  ASSERT_EQ(jobs.erase(101) + jobs.erase(102), 2u);
  jobs[100].array_tasks = "0-9";
  lagging->jobs = std::make_shared<const slurm::SlurmView::Jobs>(std::move(jobs));
  c.slurm.frozen_view = lagging;
  c.Cycle(loop, kT0 + 1);
  EXPECT_EQ(c.Calls("split 100_2"), 0) << "a task was started on a node lent to a task not yet running";
  EXPECT_EQ(c.Calls("split 100_3"), 0);
  // Seen running and then done, the next two tasks, in order.
  c.slurm.frozen_view = nullptr;
  for (uint32_t id : {101u, 102u}) c.slurm.Run(id, id == 101 ? "n1" : "n2");
  c.Cycle(loop, kT0 + 2);
  for (uint32_t id : {101u, 102u}) c.slurm.Job(id).state = slurm::JobState::kCompleted;
  c.Cycle(loop, kT0 + 3);
  EXPECT_EQ(c.Calls("split 100_2"), 1);
  EXPECT_EQ(c.Calls("split 100_3"), 1);
  EXPECT_EQ(c.Calls("split 100_4"), 0);
}

// Issue 29: Slurm gives an array's last pending task the array's own record (its job id is the
// array's). A write by that id reaches every record of the array, and on 22.05 it fails for the
// tasks that ran ("53_0-8: Job has already finished"): the last task was never started and stayed
// held (the live 22.05 array test failed 1 run in 2-5). Such a record is held and started by its
// task id.
TEST(SlurmLoopTest, TheArraysLastTaskLeftInTheArraysRecordIsStartedByItsTaskId) {
  Cluster c(1);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.SubmitArray(100, "0-2");
  queue::Time t = kT0;
  // Tasks 0 and 1, one after the other on the one node; then task 2 is the array's record itself.
  for (uint32_t task = 0; task < 2; ++task) {
    for (int i = 0; i < 3 && c.Calls("split " + slurm::ArrayTaskId(100, task)) == 0; ++i) c.Cycle(loop, ++t);
    ASSERT_EQ(c.Calls("split " + slurm::ArrayTaskId(100, task)), 1) << "task " << task << " never started";
    c.Cycle(loop, ++t);
    c.slurm.Job(101 + task).state = slurm::JobState::kCompleted;
  }
  for (int i = 0; i < 5 && c.slurm.ran_on[100].empty(); ++i) c.Cycle(loop, ++t);
  EXPECT_FALSE(c.slurm.ran_on[100].empty()) << "the array's last task never ran";
  EXPECT_EQ(c.Calls("start 100"), 0) << "started by the array's id, which reaches the tasks that ran";
  EXPECT_EQ(c.Calls("start 100_2"), 1);
}

// The same record waiting while another task of its array runs: held by its task id, not by the
// array's (which fails for the task that ran, and would hold every task onequeue released).
TEST(SlurmLoopTest, TheArraysLastTaskWaitingInTheArraysRecordIsHeldByItsTaskId) {
  Cluster c(1);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.k8s.SetNodeOwner("n1", "slurm/102");
  for (uint32_t task : {0u, 1u}) {
    slurm::SlurmJob& done = c.slurm.Submit(101 + task, 8);
    done.array_job_id = 100;
    done.array_task_id = task;
  }
  c.slurm.Job(101).state = slurm::JobState::kCompleted;
  c.slurm.Run(102, "n1");
  slurm::SlurmJob& last = c.slurm.Submit(100, 8);
  last.array_job_id = 100;
  last.array_task_id = 2;
  c.Cycle(loop, kT0);
  EXPECT_EQ(c.Calls("hold 100"), 0) << absl::StrJoin(c.slurm.calls, ", ");
  EXPECT_EQ(c.Calls("hold 100_2"), 1) << absl::StrJoin(c.slurm.calls, ", ");
  EXPECT_EQ(c.slurm.Job(100).priority, 0u);
}

// The array's last task runs in the array's own record (its job id is the array's). Taken back
// for an interactive pod, it is requeued by its task id: by the array's id Slurm requeues the
// tasks that ran too, and they run again (seen live on 22.05: `scontrol requeue 1` set the
// COMPLETED 1_0 and 1_1 PENDING; `scontrol requeue 4_2` requeued only that task).
TEST(SlurmLoopTest, AnArraysLastTaskIsRequeuedByItsTaskIdAndTheTasksThatRanStayDone) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "slurm/100");
  for (uint32_t task : {0u, 1u}) {
    slurm::SlurmJob& done = c.slurm.Submit(101 + task);
    done.array_job_id = 100;
    done.array_task_id = task;
    done.state = slurm::JobState::kCompleted;
  }
  slurm::SlurmJob& last = c.slurm.Submit(100);
  last.array_job_id = 100;
  last.array_task_id = 2;
  c.slurm.Run(100, "n1");
  c.k8s.AddPod("jupyter", "2", "interactive");
  Config cfg = SlurmConfig("drain");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  EXPECT_EQ(c.Calls("requeue 100_2"), 1) << absl::StrJoin(c.slurm.calls, ", ");
  EXPECT_EQ(c.Calls("requeue 100"), 0);
  EXPECT_EQ(c.slurm.Job(100).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.Job(101).state, slurm::JobState::kCompleted);
  EXPECT_EQ(c.slurm.Job(102).state, slurm::JobState::kCompleted);
}

class ReclaimTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReclaimTest, AnInteractivePodTakesALentNodeTheJobIsRequeuedOnceAndNeverComesBack) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "slurm/7");
  c.slurm.placeholder = GetParam() == "placeholder";
  c.slurm.Submit(7);
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("jupyter", "2", "interactive");
  Config cfg = SlurmConfig(GetParam());
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  // 1. Reserved on both sides before anything else; 2. the job requeued, once.
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "reserved/ns/jupyter");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "reserved/ns/jupyter");
  EXPECT_EQ(c.slurm.requeues[7], 1);
  // 3. The pod is bound once Slurm's side is clear; the node is Kubernetes'.
  for (int t = 1; t <= 5; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes");
  EXPECT_THAT(c.k8s.node_events, Contains("n1 Reclaimed"));
  // The requeued job waits, held, while the pod runs: never back onto n1.
  for (int t = 6; t <= 200; t += 10) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.ran_on[7], std::vector<std::string>{"n1"});
  EXPECT_EQ(c.slurm.Job(7).priority, 0);
  EXPECT_TRUE(loop.reservations().empty());
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, ReclaimTest, ::testing::Values("drain", "placeholder"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// Only the reservation keeps a requeued job off its node: a pod gang (2 x 4 CPU, interactive)
// takes n1 from Slurm job 7, which is requeued; then a gang member is deleted (its controller
// makes it again later), so the queue cannot place the gang and makes no decision of its own for
// n1. The reserved(P) mark (and the fence tagged with it) is all that stops job 7 from starting
// on n1 again. With the mark switched off (Config::test_without_reservations) it does restart
// there: the control that shows the test can fail. Returns every node list job 7 ran on.
std::vector<std::string> RequeuedJobWhileTheGangIsIncomplete(const std::string& mechanism,
                                                             bool without_reservations) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "slurm/7");
  c.slurm.placeholder = mechanism == "placeholder";
  c.slurm.Submit(7);
  c.slurm.Run(7, "n1");
  for (const char* member : {"train-0", "train-1"}) {
    c.k8s.AddPod(member, "4", "interactive");
    c.k8s.Find(std::string("ns/") + member)->metadata.annotations[kGroupAnnotation] = "train";
    c.k8s.Find(std::string("ns/") + member)->metadata.annotations[kGroupSizeAnnotation] = "2";
  }
  Config cfg = SlurmConfig(mechanism);
  cfg.test_without_reservations = without_reservations;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), without_reservations ? "slurm/7" : "reserved/ns/group/train");
  c.k8s.DeletePod("ns/train-1");
  // Within the grace a reservation its incomplete preemptor cannot use is kept (a controller
  // makes the member again); past it the node is released (reservation_lifecycle_test).
  for (int t = 1; t <= 51; t += 10) c.Cycle(loop, kT0 + t);
  return c.slurm.ran_on[7];
}

TEST(SlurmLoopTest, OnlyTheReservationKeepsARequeuedJobOffTheNodeWhileTheGangPreemptorIsIncomplete) {
  for (const std::string mechanism : {"drain", "placeholder"}) {
    SCOPED_TRACE(mechanism);
    EXPECT_THAT(RequeuedJobWhileTheGangIsIncomplete(mechanism, /*without_reservations=*/false),
                ::testing::ElementsAre("n1"))
        << "the requeued job started again on the node reserved for the gang";
  }
  // Control: without the mark, the requeued job is started on n1 again. Drain only: with
  // placeholders the fence tagged reserved/<P> is what requeues the job (Slurm's partition
  // preemption), so without it the job is never requeued and there is nothing to compare.
  EXPECT_THAT(RequeuedJobWhileTheGangIsIncomplete("drain", /*without_reservations=*/true),
              ::testing::ElementsAre("n1", "n1"));
}

struct Crash {
  std::string at;
};

TEST(SlurmLoopTest, SuccessorsFinishAReclaimThatCrashedAfterTheReservationAndAfterTheRequeue) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "slurm/7");
  c.slurm.Submit(7);
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("jupyter", "2", "interactive");
  Config cfg = SlurmConfig("drain");
  auto crash_at = [](const char* armed) {
    return [armed = std::string(armed)](const char* name) {
      if (armed == name) throw Crash{name};
    };
  };
  {
    SchedulingLoop first(cfg, &c.k8s, &c.k8s, &c.slurm, crash_at("reclaim-after-reserve"));
    EXPECT_THROW(c.Cycle(first, kT0), Crash);
  }
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "reserved/ns/jupyter");
  EXPECT_EQ(c.slurm.requeues[7], 0);
  {
    SchedulingLoop second(cfg, &c.k8s, &c.k8s, &c.slurm, crash_at("reclaim-after-requeue"));
    EXPECT_THROW(c.Cycle(second, kT0 + 1), Crash);
  }
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "");
  SchedulingLoop third(cfg, &c.k8s, &c.k8s, &c.slurm);
  for (int t = 2; t <= 6; ++t) c.Cycle(third, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes");
}

TEST(SlurmLoopTest, TheHigherPriorityGetsTheFreeNodeWhicheverWorldItIsFrom) {
  for (const bool job_first : {true, false}) {
    SCOPED_TRACE(job_first ? "job above pod" : "pod above job");
    Cluster c(1);
    c.slurm.Submit(7);
    c.k8s.AddPod("web", "4", job_first ? "batch" : "normal");
    Config cfg = SlurmConfig();
    cfg.slurm.lend_after_seconds = 0;
    cfg.slurm.default_qos = job_first ? "normal" : "batch";
    SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
    for (int t = 0; t < 3; ++t) c.Cycle(loop, kT0 + t);
    if (job_first) {
      EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
      EXPECT_EQ(c.k8s.NodeOf("ns/web"), "");
      ASSERT_FALSE(c.k8s.reports["ns/web"].empty());
      EXPECT_THAT(c.k8s.reports["ns/web"].back().message, HasSubstr("Slurm job 7"));
    } else {
      EXPECT_EQ(c.k8s.NodeOf("ns/web"), "n1");
      EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
      EXPECT_EQ(c.slurm.Job(7).priority, 0);
    }
  }
}

TEST(SlurmLoopTest, ANodeIsLentAgainLendAfterSecondsAfterItsLastPodAndReturnedWhenIdle) {
  Cluster c(1);
  c.k8s.AddPod("web", "4", "normal", "n1");
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 30;
  cfg.slurm.return_after_seconds = 20;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.slurm.Submit(7);
  c.Cycle(loop, kT0 + 10);
  c.k8s.DeletePod("ns/web");
  c.Cycle(loop, kT0 + 20);
  c.Cycle(loop, kT0 + 39);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending) << "lent before lendAfterSeconds";
  c.Cycle(loop, kT0 + 41);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  // The job ends; with no Slurm work left the node comes back after returnAfterSeconds.
  c.slurm.Job(7).state = slurm::JobState::kCompleted;
  c.Cycle(loop, kT0 + 50);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "slurm/7");
  c.Cycle(loop, kT0 + 71);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes");
  EXPECT_THAT(c.k8s.node_events, Contains("n1 Returned"));
}

}  // namespace
}  // namespace onequeue::scheduler

namespace onequeue::scheduler {
namespace {

// Fair-share from real usage: what finished pods and Slurm jobs used is charged to their accounts
// (namespace, Slurm account), so the account that used less comes first among equals.
TEST(SlurmLoopTest, FinishedPodsAndJobsAreChargedToTheirAccountsAndOrderTheQueue) {
  for (const bool pods_used_more : {true, false}) {
    SCOPED_TRACE(pods_used_more ? "namespace ns used more" : "Slurm account physics used more");
    Cluster c(1);
    Config cfg = SlurmConfig();
    cfg.queue.weights = {{"age", 0}, {"fairShare", 10000}, {"size", 0}, {"partition", 0}, {"qos", 0}};
    cfg.slurm.lend_after_seconds = 0;
    SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
    // Yesterday's work: a pod of namespace "ns" and a Slurm job of account "physics".
    c.k8s.AddPod("old", "8", "normal", "n1", "2025-11-21T08:00:00Z");  // three hours before kT0
    c.Cycle(loop, kT0);
    c.k8s.DeletePod("ns/old");
    slurm::SlurmJob& done = c.slurm.Submit(1, 8);
    done.state = slurm::JobState::kCompleted;
    done.start_time = absl::FromUnixSeconds(kT0 - (pods_used_more ? 600 : 3 * 3600 * 4));
    done.end_time = absl::FromUnixSeconds(kT0);
    c.Cycle(loop, kT0 + 1);
    // Now one pod and one job want the whole node, alike but for their accounts.
    c.k8s.AddPod("new", "8", "batch");
    c.slurm.Submit(2, 8);
    for (int t = 2; t < 5; ++t) c.Cycle(loop, kT0 + t);
    if (pods_used_more) {
      EXPECT_EQ(c.slurm.Job(2).state, slurm::JobState::kRunning) << c.slurm.Job(2).admin_comment;
      EXPECT_EQ(c.k8s.NodeOf("ns/new"), "") << (c.k8s.bind_messages.empty() ? "" : c.k8s.bind_messages.back());
    } else {
      EXPECT_EQ(c.k8s.NodeOf("ns/new"), "n1");
      EXPECT_EQ(c.slurm.Job(2).state, slurm::JobState::kPending);
    }
  }
}

}  // namespace
}  // namespace onequeue::scheduler

namespace onequeue::scheduler {
namespace {

// The other direction: a Slurm job whose QOS may preempt takes a node from a preemptible pod
// through the same protocol: reserve, evict the pod once, then lend the node and start the job.
TEST(SlurmLoopTest, ASlurmJobOfHigherPriorityPreemptsAPodThroughTheSameProtocol) {
  Cluster c(1);
  c.k8s.recreate_evicted = true;  // the pod's ReplicaSet makes a replacement at once
  c.k8s.AddPod("batch", "8", "batch", "n1", "2025-11-21T10:00:00Z");
  c.slurm.Submit(7, 8);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  cfg.slurm.qos_map = {{"", "interactive"}};  // the job's (empty) Slurm QOS maps to interactive
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "reserved/slurm/7");
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/batch"));
  for (int t = 1; t <= 5; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "slurm/7");
  EXPECT_EQ(c.k8s.NodeOf("ns/batch-r"), "") << "the replacement never wins the node back";
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
}

}  // namespace
}  // namespace onequeue::scheduler

namespace onequeue::scheduler {
namespace {

// Found end to end: a job onequeue had just started was requeued for a pod before any cycle saw
// it running; its start assumption outlived the requeue, so the job still "held" the node and
// the pod waited until the assumption lapsed.
TEST(SlurmLoopTest, AJobRequeuedBeforeItsStartWasSeenNoLongerHoldsTheNode) {
  Cluster c(1);
  c.slurm.Submit(7);
  c.slurm.start_lag = true;
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_THAT(c.slurm.calls, Contains("start 7"));
  // Slurm starts it, but the poll still shows it pending when an interactive pod arrives.
  c.slurm.frozen_view = c.slurm.View();
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("jupyter", "2", "interactive");
  c.Cycle(loop, kT0 + 1);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  c.slurm.frozen_view = nullptr;
  for (int t = 2; t <= 6; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.slurm.requeues[7], 1);
}

// An administrator's hold (oq hold: priority 0, a comment without onequeue's tag) is left alone;
// once it is released, the job still waits for a node and onequeue holds it again with its own
// reason (it used to remember its earlier hold as "asked, the poll lags" and never wrote it again,
// so Slurm could start the job by itself: found by slurm_e2e_test).
TEST(SlurmLoopTest, AJobReleasedFromAnAdminHoldIsHeldByOnequeueAgainWhileItWaits) {
  Cluster c(1);
  c.k8s.AddPod("web", "8", "interactive");  // the only node is busy with a pod
  c.slurm.Submit(7);
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  for (int t = 0; t < 3; ++t) c.Cycle(loop, kT0 + t);
  ASSERT_EQ(c.slurm.Job(7).priority, 0);
  ASSERT_THAT(c.slurm.Job(7).admin_comment, HasSubstr("onequeue:"));
  const auto holds = [&] { return std::count(c.slurm.calls.begin(), c.slurm.calls.end(), "hold 7"); };
  const auto before = holds();
  // The administrator's hold replaces onequeue's; the loop does not touch it.
  c.slurm.Job(7).admin_comment = "held by an administrator (oq hold): maintenance";
  for (int t = 3; t < 6; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(holds(), before);
  EXPECT_EQ(c.slurm.Job(7).admin_comment, "held by an administrator (oq hold): maintenance");
  // Released (oq release): the job is onequeue's to hold again.
  c.slurm.Job(7).priority = 1000;
  c.slurm.Job(7).state_reason = "None";
  c.Cycle(loop, kT0 + 6);
  EXPECT_EQ(holds(), before + 1);
  EXPECT_EQ(c.slurm.Job(7).priority, 0);
  EXPECT_THAT(c.slurm.Job(7).admin_comment, HasSubstr("onequeue:"));
}

// Issue 29: a job pending on a dependency is Slurm's to release. onequeue neither holds it (it held
// every such job as startable work: Slurm's reason Dependency was overwritten by onequeue's hold)
// nor starts it while the parent runs, though a node is free and lendable for it; once Slurm
// lifts the dependency (the parent ended) it is an ordinary job that onequeue starts. Job 9 was
// held by onequeue before its dependency showed (its reason is then JobHeldAdmin, only the
// dependency field says it): it is not started either.
TEST(SlurmLoopTest, AJobWaitingOnADependencyIsNeitherHeldNorStartedByOnequeue) {
  Cluster c(2);
  c.slurm.Submit(7);
  c.slurm.Run(7, "n1");  // the parent, 30 minutes at most
  slurm::SlurmJob& child = c.slurm.Submit(8);
  child.dependency = "afterok:7(unfulfilled)";
  child.state_reason = "Dependency";
  slurm::SlurmJob& held = c.slurm.Submit(9);
  held.dependency = "afterany:7(unfulfilled)";
  held.priority = 0;
  held.admin_comment = "onequeue: Priority: waiting behind higher-priority workloads";
  held.state_reason = "JobHeldAdmin";
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  for (int t = 0; t <= 120; t += 10) c.Cycle(loop, kT0 + t);  // n2 is lendable after 60 s
  EXPECT_EQ(c.Calls("hold 8"), 0);
  EXPECT_EQ(c.Calls("start 8"), 0);
  EXPECT_EQ(c.Calls("start 9"), 0);
  EXPECT_EQ(c.slurm.Job(8).priority, 1);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.Job(9).state, slurm::JobState::kPending);
  // The parent ends; Slurm lifts the dependencies: ordinary jobs now, started by onequeue.
  c.slurm.Job(7).state = slurm::JobState::kCompleted;
  for (uint32_t id : {8u, 9u}) {
    c.slurm.Job(id).dependency = "";
    if (id == 8) c.slurm.Job(id).state_reason = "None";
  }
  for (int t = 130; t <= 150; t += 10) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.Calls("start 8"), 1);
  EXPECT_EQ(c.Calls("start 9"), 1);
}

// Issue 24 M5: a pod's workload id never reads as a Slurm job's. A pod named "123" in namespace
// "slurm" had the id "slurm/123", the id of Slurm job 123: the plan's decision to start the pod
// force-started the real job (pinned to the node, released with the top priority) instead.
TEST(SlurmLoopTest, APodNamedLikeASlurmJobIsBoundAndTheJobIsNotStarted) {
  Cluster c(1);
  c.slurm.Submit(123, 64);  // fits no node: only the id collision could start it
  c.k8s.AddPod("123", "2", "normal");
  c.k8s.Find("ns/123")->metadata.namespace_ = "slurm";
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  for (int t = 0; t < 3; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_THAT(c.slurm.calls, ::testing::Not(Contains("start 123")));
  EXPECT_EQ(c.k8s.NodeOf("slurm/123"), "n1");
  EXPECT_NE(c.k8s.OwnerOf("n1"), "slurm/123");
}

// Issue 24 M5, the running side: a bound pod "slurm/7" chosen as a victim is evicted; Slurm job 7
// (running outside the pool) is not requeued in its place.
TEST(SlurmLoopTest, ARunningPodNamedLikeASlurmJobIsEvictedNotTheJob) {
  Cluster c(1);
  c.slurm.Submit(7);
  c.slurm.Run(7, "elsewhere");  // a Slurm node outside the pool
  c.k8s.AddPod("7", "8", "batch", "n1");
  c.k8s.Find("ns/7")->metadata.namespace_ = "slurm";
  c.k8s.SetNodeOwner("n1", "kubernetes");
  c.k8s.AddPod("jupyter", "8", "interactive");
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  for (int t = 0; t < 3; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.requeues[7], 0);
  EXPECT_THAT(c.k8s.evictions, Contains("slurm/7"));
}

// Issue 25 step 3: on a node of a shared partition a pod is mirrored in Slurm by a placeholder of
// its size pinned to the node, and bound only once Slurm runs it; the Slurm job beside keeps
// running; the placeholder is cancelled when the pod ends. The node is never fenced whole.
TEST(SharedNodeLoopTest, APodIsBoundBesideASlurmJobOnlyAfterItsPlaceholderRunsAndItEndsWithIt) {
  Cluster c(1);
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  c.slurm.Submit(7, 4);
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("web", "2", "batch", "");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  const uint32_t ph = c.slurm.pod_placeholders[0];
  const slurm::SlurmJob& p = c.slurm.Job(ph);
  EXPECT_EQ(p.state, slurm::JobState::kPending);
  EXPECT_EQ(p.required_nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(p.partition, "pool");
  EXPECT_EQ(p.cpus, 2u);
  EXPECT_THAT(p.comment, HasSubstr("pod ns/web"));
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "");  // not bound before its placeholder runs
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "");
  // Slurm has not started it yet: still not bound, nothing submitted twice.
  c.Cycle(loop, kT0 + 5);
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "");
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 1u);
  c.slurm.Run(ph, "n1");
  c.Cycle(loop, kT0 + 10);
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "n1");
  c.Cycle(loop, kT0 + 15);
  ASSERT_NE(loop.mirrors().Find(c.k8s.UidOf("ns/web")), nullptr);
  EXPECT_EQ(loop.mirrors().Find(c.k8s.UidOf("ns/web"))->state, MirrorState::kBound);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.AllocatedCpus("n1"), 6u);
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "");
  EXPECT_EQ(c.Calls("requeue 7"), 0);
  // The pod ends: its placeholder is cancelled.
  c.k8s.DeletePod("ns/web");
  c.Cycle(loop, kT0 + 20);
  EXPECT_EQ(c.slurm.Job(ph).state, slurm::JobState::kCancelled);
  EXPECT_TRUE(loop.mirrors().records().empty());
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
}

// A successor rebuilds the records from the two listings: the bound pod whose placeholder an
// admin cancelled gets a new one.
TEST(SharedNodeLoopTest, ASuccessorGivesABoundPodWhosePlaceholderWasLostANewOne) {
  Cluster c(1);
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  c.k8s.AddPod("web", "2", "batch", "");
  {
    SchedulingLoop first(cfg, &c.k8s, &c.k8s, &c.slurm);
    c.Cycle(first, kT0);
    ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
    c.slurm.Run(c.slurm.pod_placeholders[0], "n1");
    c.Cycle(first, kT0 + 5);
    ASSERT_EQ(c.k8s.NodeOf("ns/web"), "n1");
  }
  ASSERT_TRUE(c.slurm.Cancel(c.slurm.pod_placeholders[0]).ok());  // an admin's scancel
  SchedulingLoop successor(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(successor, kT0 + 10);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 2u);
  EXPECT_EQ(c.slurm.Job(c.slurm.pod_placeholders[1]).required_nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(successor.mirrors().Find(c.k8s.UidOf("ns/web"))->state, MirrorState::kRemirrorPending);
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "n1");  // the pod keeps running
}

// Issue 25 step 4, sub-node preemption: on a shared 8-CPU node a 4-CPU Slurm job (batch) and a
// 4-CPU interactive pod run; an interactive pod needing 4 CPUs claims the room first (its
// placeholder pending, pinned, naming its victim), then only the job is requeued: no fence, no
// drain, the other pod and its placeholder untouched. When Slurm gives the room to the claim the
// pod is bound; the requeued job waits, held by onequeue (the room is the pod's).
struct SubNodeScene {
  Cluster c{1};
  Config cfg = SlurmConfig("placeholder");
  uint32_t half_placeholder = 0;
  SubNodeScene() {
    cfg.slurm.partition_sharing = {{"pool", "shared"}};
    c.slurm.shared.insert("n1");
    c.slurm.Submit(7, 4);
    c.slurm.Run(7, "n1");
    c.k8s.AddPod("half", "4", "interactive", "n1");  // bound already: adopted, mirrored
  }
  void MirrorTheBoundPod(SchedulingLoop& loop) {
    c.Cycle(loop, kT0);
    ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
    half_placeholder = c.slurm.pod_placeholders[0];
    c.slurm.Run(half_placeholder, "n1");
    c.Cycle(loop, kT0 + 1);
    c.k8s.AddPod("jupyter", "4", "interactive");
  }
};

TEST(SharedNodeLoopTest, AnInteractivePodRequeuesOnlyTheSlurmJobAndIsBoundOnceItsClaimRuns) {
  SubNodeScene s;
  Cluster& c = s.c;
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPod(loop));
  c.Cycle(loop, kT0 + 2);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 2u);
  const uint32_t claim = c.slurm.pod_placeholders[1];
  EXPECT_THAT(c.slurm.Job(claim).comment, HasSubstr("pod ns/jupyter"));
  EXPECT_THAT(c.slurm.Job(claim).comment, HasSubstr("preempting slurm/7"));
  EXPECT_EQ(c.slurm.Job(claim).required_nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(c.slurm.Job(claim).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(loop.mirrors().Find(c.k8s.UidOf("ns/jupyter"))->state, MirrorState::kWaitingForVictims);
  // Nothing whole-node: no fence, no reservation mark; the other pod and its placeholder untouched.
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "");
  EXPECT_THAT(c.slurm.calls, ::testing::Not(Contains(::testing::StartsWith("fence"))));
  EXPECT_FALSE(absl::StartsWith(c.k8s.OwnerOf("n1"), "reserved/"));
  EXPECT_TRUE(c.k8s.evictions.empty());
  EXPECT_EQ(c.k8s.NodeOf("ns/half"), "n1");
  EXPECT_EQ(c.slurm.Job(s.half_placeholder).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "");  // not before its claim runs
  // The requeued job is not started back into the room: onequeue holds it.
  c.Cycle(loop, kT0 + 3);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
  EXPECT_EQ(c.Calls("start 7"), 0);
  EXPECT_EQ(c.slurm.requeues[7], 1);  // asked once
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 2u);
  // slurmctld gives the freed room to the pending claim: the pod is bound there.
  ASSERT_TRUE(c.slurm.Fits(claim, "n1"));
  c.slurm.Run(claim, "n1");
  c.Cycle(loop, kT0 + 4);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  c.Cycle(loop, kT0 + 5);
  EXPECT_EQ(loop.mirrors().Find(c.k8s.UidOf("ns/jupyter"))->state, MirrorState::kBound);
  EXPECT_EQ(c.slurm.AllocatedCpus("n1"), 8u);  // the two pods' placeholders
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.Job(7).priority, 0);  // held while it cannot run there
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.NodeOf("ns/half"), "n1");
}

// Issue 25 step 4, the pod side: a pod holding a claim (its placeholder pending behind its victims)
// counts on its node but is never another preemptor's victim. A normal pod (preemptible, may
// preempt batch) claims the room of a batch Slurm job beside an interactive pod; while its claim
// waits for Slurm, an urgent pod arrives needing the same 4 CPUs: it waits, no placeholder names
// the claiming pod, nothing is evicted; the claim runs and its pod is bound.
TEST(SharedNodeLoopTest, APodHoldingAClaimIsNeverAnotherPreemptorsVictim) {
  SubNodeScene s;
  Cluster& c = s.c;
  s.cfg.queue.qos = {{"urgent", 5000, false, true, 0},
                     {"interactive", 1000, false, true, 0},
                     {"normal", 100, true, true, 0},
                     {"batch", 10, true, false, 0}};
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  c.slurm.Run(c.slurm.pod_placeholders[0], "n1");
  c.Cycle(loop, kT0 + 1);
  c.k8s.AddPod("mid", "4", "normal");
  c.Cycle(loop, kT0 + 2);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 2u);
  const uint32_t claim = c.slurm.pod_placeholders[1];
  EXPECT_THAT(c.slurm.Job(claim).comment, HasSubstr("pod ns/mid"));
  EXPECT_THAT(c.slurm.Job(claim).comment, HasSubstr("preempting slurm/7"));
  ASSERT_NE(loop.mirrors().Find(c.k8s.UidOf("ns/mid")), nullptr);
  EXPECT_EQ(loop.mirrors().Find(c.k8s.UidOf("ns/mid"))->state, MirrorState::kWaitingForVictims);
  c.k8s.AddPod("urgent", "4", "urgent");
  for (int t = 3; t <= 5; ++t) c.Cycle(loop, kT0 + t);
  for (uint32_t p : c.slurm.pod_placeholders)
    EXPECT_THAT(c.slurm.Job(p).comment, ::testing::Not(HasSubstr("preempting ns/mid"))) << "placeholder " << p;
  EXPECT_TRUE(c.k8s.evictions.empty());
  EXPECT_EQ(c.k8s.NodeOf("ns/urgent"), "");
  ASSERT_NE(loop.mirrors().Find(c.k8s.UidOf("ns/mid")), nullptr);
  EXPECT_EQ(loop.mirrors().Find(c.k8s.UidOf("ns/mid"))->state, MirrorState::kWaitingForVictims);
  c.slurm.Run(claim, "n1");
  c.Cycle(loop, kT0 + 6);
  EXPECT_EQ(c.k8s.NodeOf("ns/mid"), "n1");
  EXPECT_EQ(c.k8s.NodeOf("ns/half"), "n1");
}

// G8 (issue 25): while a pod's claim stands on n1 (its placeholder pending behind the requeued
// job), a pod the plan fits beside it by onequeue's count gets no placeholder there: Slurm's books
// do not hold the claim's room and might start the newer placeholder first. It gets one once the
// claim has run.
TEST(SharedNodeLoopTest, NoPlaceholderIsSubmittedBesideAStandingClaimUntilTheClaimRuns) {
  SubNodeScene s;
  Cluster& c = s.c;
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  c.slurm.Run(c.slurm.pod_placeholders[0], "n1");
  c.Cycle(loop, kT0 + 1);
  c.k8s.AddPod("jupyter", "3", "interactive");  // needs job 7's room; leaves 1 CPU beside it
  c.Cycle(loop, kT0 + 2);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 2u);
  const uint32_t claim = c.slurm.pod_placeholders[1];
  ASSERT_THAT(c.slurm.Job(claim).comment, HasSubstr("preempting slurm/7"));
  c.k8s.AddPod("small", "1", "interactive");
  for (int t = 3; t <= 4; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 2u) << "a placeholder was submitted beside the pending claim";
  c.slurm.Run(claim, "n1");
  for (int t = 5; t <= 6; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 3u) << "the pod waits on after the claim ran";
}

// A crash between the claim and the requeue: the successor reads the claim back from Slurm (the
// pending placeholder names its victims), requeues the job once, and binds the pod when the claim
// runs. A second successor after the requeue asks nothing again.
TEST(SharedNodeLoopTest, ASuccessorFinishesASubNodePreemptionThatCrashedAfterTheClaim) {
  SubNodeScene s;
  Cluster& c = s.c;
  {
    SchedulingLoop first(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPod(first));
  }
  auto crash_at = [](const char* armed) {
    return [armed = std::string(armed)](const char* name) {
      if (armed == name) throw Crash{name};
    };
  };
  {
    SchedulingLoop crashing(s.cfg, &c.k8s, &c.k8s, &c.slurm, crash_at("claim-after-submit"));
    EXPECT_THROW(c.Cycle(crashing, kT0 + 2), Crash);
  }
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 2u);
  const uint32_t claim = c.slurm.pod_placeholders[1];
  EXPECT_EQ(c.slurm.requeues[7], 0);
  {
    SchedulingLoop successor(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    c.Cycle(successor, kT0 + 3);
    EXPECT_EQ(c.slurm.requeues[7], 1);
    EXPECT_EQ(c.slurm.pod_placeholders.size(), 2u);  // the claim is kept, not made again
    EXPECT_EQ(successor.mirrors().Find(c.k8s.UidOf("ns/jupyter"))->state, MirrorState::kWaitingForVictims);
  }
  SchedulingLoop third(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(third, kT0 + 4);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.Calls("requeue 7"), 1);
  c.slurm.Run(claim, "n1");
  c.Cycle(third, kT0 + 5);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.slurm.Job(s.half_placeholder).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.k8s.NodeOf("ns/half"), "n1");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "");
}

// A victim Slurm will not requeue, with slurm.cancelUnrequeueable false: the claim is undone (its
// placeholder cancelled), the job runs on, and the pod does not claim again at once.
TEST(SharedNodeLoopTest, ARefusedVictimUndoesTheClaimAndTheJobRunsOn) {
  SubNodeScene s;
  Cluster& c = s.c;
  s.cfg.slurm.cancel_unrequeueable = false;
  c.slurm.not_requeueable.insert(7);
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPod(loop));
  c.Cycle(loop, kT0 + 2);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 2u);
  EXPECT_EQ(c.slurm.Job(c.slurm.pod_placeholders[1]).state, slurm::JobState::kCancelled);
  EXPECT_EQ(loop.mirrors().Find(c.k8s.UidOf("ns/jupyter")), nullptr);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  c.Cycle(loop, kT0 + 3);
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 2u);  // blocked for a while: no new claim
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "");
  ASSERT_FALSE(c.k8s.reports["ns/jupyter"].empty());
  EXPECT_THAT(c.k8s.reports["ns/jupyter"].back().message, HasSubstr("preemption on shared node n1 undone"));
  EXPECT_THAT(c.k8s.reports["ns/jupyter"].back().message, HasSubstr("will not requeue"));
}

// The victim may be a pod: it is evicted (its placeholder cancelled once it is gone, which frees
// the room in Slurm's books), the claim runs, the preemptor is bound; the Slurm job beside and the
// other pod are untouched.
TEST(SharedNodeLoopTest, APodVictimIsEvictedAndItsPlaceholderCancelledBeforeTheClaimRuns) {
  Cluster c(1);
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  c.slurm.shared.insert("n1");
  c.slurm.Submit(7, 2);
  c.slurm.Run(7, "n1");
  c.slurm.Job(7).qos = "interactive";  // not preemptible: the pod must go
  c.k8s.AddPod("low", "4", "batch", "n1");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  const uint32_t low_placeholder = c.slurm.pod_placeholders[0];
  c.slurm.Run(low_placeholder, "n1");
  c.Cycle(loop, kT0 + 1);
  c.k8s.AddPod("jupyter", "4", "interactive");
  c.Cycle(loop, kT0 + 2);
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 2u);
  const uint32_t claim = c.slurm.pod_placeholders[1];
  EXPECT_THAT(c.slurm.Job(claim).comment, HasSubstr("preempting ns/low"));
  EXPECT_EQ(c.Calls("requeue 7"), 0);
  c.Cycle(loop, kT0 + 3);  // the victim is gone: its placeholder is cancelled
  EXPECT_EQ(c.slurm.Job(low_placeholder).state, slurm::JobState::kCancelled);
  ASSERT_TRUE(c.slurm.Fits(claim, "n1"));
  c.slurm.Run(claim, "n1");
  c.Cycle(loop, kT0 + 4);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "");
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
}

// Issue 25 step 4 with a Slurm job as the preemptor: on a shared 8-CPU node a 4-CPU interactive
// Slurm job (not preemptible) and a 4-CPU batch pod run; a 4-CPU interactive job claims the pod's
// room: it is held with the claim in its AdminComment (node and victims) and counts there in the
// plan, only the pod is evicted, and once it is gone (its placeholder cancelled) the job is started
// the way onequeue starts every job; Slurm starts it there. The pod's replacement waits.
struct JobPreemptorScene {
  Cluster c{1};
  Config cfg = SlurmConfig("placeholder");
  uint32_t low_placeholder = 0;
  JobPreemptorScene() {
    cfg.slurm.partition_sharing = {{"pool", "shared"}};
    cfg.slurm.qos_map = {{"", "interactive"}};  // the jobs' (empty) Slurm QOS
    c.slurm.shared.insert("n1");
    c.slurm.Submit(7, 4);
    c.slurm.Run(7, "n1");
    c.k8s.AddPod("low", "4", "batch", "n1");  // bound already: adopted, mirrored
  }
  void MirrorTheBoundPodThenSubmit(SchedulingLoop& loop, uint32_t cpus = 4) {
    c.Cycle(loop, kT0);
    ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
    low_placeholder = c.slurm.pod_placeholders[0];
    c.slurm.Run(low_placeholder, "n1");
    c.Cycle(loop, kT0 + 1);
    c.slurm.Submit(8, cpus);
  }
};

TEST(SharedNodeLoopTest, ASlurmJobEvictsOnlyThePodAndIsStartedThereOnceItIsGone) {
  JobPreemptorScene s;
  Cluster& c = s.c;
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenSubmit(loop));
  c.Cycle(loop, kT0 + 2);
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
  EXPECT_EQ(c.Calls("requeue 7"), 0);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.Job(8).priority, 0);  // held: Slurm does not start it before the room is free
  EXPECT_EQ(c.slurm.Job(8).admin_comment, "onequeue: Preempting on shared node n1: ns/low");
  ASSERT_NE(loop.job_claims().Find("slurm/8"), nullptr);
  EXPECT_EQ(loop.job_claims().Find("slurm/8")->state, JobClaimState::kWaitingForVictims);
  EXPECT_EQ(c.Calls("start 8"), 0);
  // Nothing whole-node: no fence, no reservation mark.
  EXPECT_THAT(c.slurm.calls, ::testing::Not(Contains(::testing::StartsWith("fence"))));
  EXPECT_FALSE(absl::StartsWith(c.k8s.OwnerOf("n1"), "reserved/"));
  // The pod is gone: its placeholder is cancelled and the job started there; the replacement waits.
  c.Cycle(loop, kT0 + 3);
  EXPECT_EQ(c.slurm.Job(s.low_placeholder).state, slurm::JobState::kCancelled);
  EXPECT_EQ(c.Calls("start 8"), 1);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(8).nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(loop.job_claims().Find("slurm/8"), nullptr);
  for (int t = 4; t <= 6; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/low-r"), "");
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 1u);  // none for the replacement: no room
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.AllocatedCpus("n1"), 8u);
  EXPECT_EQ(c.Calls("start 8"), 1);
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
}

// An array task as the preemptor (issue 29's tasks share the array's pending record): the claim is
// the hold of the array's record, the task counts on the node while the pod leaves, and once it is
// gone the task is split off and started there; the array's other task waits, no second claim.
TEST(SharedNodeLoopTest, AnArrayTaskClaimsByItsArraysRecordAndIsSplitOffAndStartedOnceThePodIsGone) {
  JobPreemptorScene s;
  Cluster& c = s.c;
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  s.low_placeholder = c.slurm.pod_placeholders[0];
  c.slurm.Run(s.low_placeholder, "n1");
  c.Cycle(loop, kT0 + 1);
  c.slurm.SubmitArray(8, "0-1", 4);
  c.Cycle(loop, kT0 + 2);
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
  EXPECT_EQ(c.Calls("requeue 7"), 0);
  EXPECT_EQ(c.slurm.Job(8).priority, 0);
  EXPECT_EQ(c.slurm.Job(8).admin_comment, "onequeue: Preempting on shared node n1: ns/low");
  ASSERT_NE(loop.job_claims().Find("slurm/8_0"), nullptr);
  EXPECT_EQ(loop.job_claims().Find("slurm/8_0")->state, JobClaimState::kWaitingForVictims);
  EXPECT_EQ(loop.job_claims().records().size(), 1u);
  EXPECT_EQ(c.Calls("split 8_0"), 0);
  c.Cycle(loop, kT0 + 3);
  EXPECT_EQ(c.slurm.Job(s.low_placeholder).state, slurm::JobState::kCancelled);
  EXPECT_EQ(c.Calls("split 8_0"), 1);
  EXPECT_EQ(loop.job_claims().Find("slurm/8_0"), nullptr);
  for (int t = 4; t <= 6; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.AllocatedCpus("n1"), 8u);
  EXPECT_EQ(c.Calls("split 8_0"), 1);
  EXPECT_EQ(c.Calls("split 8_1"), 0);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
}

// A crash after an array task's claim (the hold of the array's record) and before the eviction:
// the successor reads the claim back as the array's lowest pending task's, evicts the pod once,
// then splits that task off and starts it there.
TEST(SharedNodeLoopTest, ASuccessorReadsAnArrayTasksClaimBackFromTheArraysRecord) {
  JobPreemptorScene s;
  Cluster& c = s.c;
  {
    SchedulingLoop first(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    c.Cycle(first, kT0);
    ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
    s.low_placeholder = c.slurm.pod_placeholders[0];
    c.slurm.Run(s.low_placeholder, "n1");
    c.Cycle(first, kT0 + 1);
    c.slurm.SubmitArray(8, "0-1", 4);
  }
  {
    SchedulingLoop crashing(s.cfg, &c.k8s, &c.k8s, &c.slurm, [](const char* name) {
      if (std::string(name) == "job-claim-after-hold") throw Crash{name};
    });
    EXPECT_THROW(c.Cycle(crashing, kT0 + 2), Crash);
  }
  EXPECT_TRUE(c.k8s.evictions.empty());
  EXPECT_EQ(c.slurm.Job(8).admin_comment, "onequeue: Preempting on shared node n1: ns/low");
  SchedulingLoop successor(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(successor, kT0 + 3);
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
  ASSERT_NE(successor.job_claims().Find("slurm/8_0"), nullptr);
  EXPECT_EQ(successor.job_claims().Find("slurm/8"), nullptr);
  for (int t = 4; t <= 6; ++t) c.Cycle(successor, kT0 + t);
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
  EXPECT_EQ(c.Calls("split 8_0"), 1);
  EXPECT_EQ(c.Calls("split 8_1"), 0);
  EXPECT_EQ(c.slurm.AllocatedCpus("n1"), 8u);
  EXPECT_EQ(c.Calls("requeue 7"), 0);
}

// A crash after the claim's hold and before the eviction: the successor reads the claim back from
// the job's AdminComment, evicts the pod once and starts the job; a third process asks nothing
// again.
TEST(SharedNodeLoopTest, ASuccessorFinishesAJobsSubNodePreemptionThatCrashedAfterTheHold) {
  JobPreemptorScene s;
  Cluster& c = s.c;
  {
    SchedulingLoop first(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenSubmit(first));
  }
  {
    SchedulingLoop crashing(s.cfg, &c.k8s, &c.k8s, &c.slurm, [](const char* name) {
      if (std::string(name) == "job-claim-after-hold") throw Crash{name};
    });
    EXPECT_THROW(c.Cycle(crashing, kT0 + 2), Crash);
  }
  EXPECT_TRUE(c.k8s.evictions.empty());
  EXPECT_EQ(c.slurm.Job(8).admin_comment, "onequeue: Preempting on shared node n1: ns/low");
  {
    SchedulingLoop successor(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    c.Cycle(successor, kT0 + 3);
    EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
    ASSERT_NE(successor.job_claims().Find("slurm/8"), nullptr);
    EXPECT_EQ(successor.job_claims().Find("slurm/8")->state, JobClaimState::kWaitingForVictims);
  }
  SchedulingLoop third(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(third, kT0 + 4);
  c.Cycle(third, kT0 + 5);
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(8).nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.Calls("requeue 7"), 0);
}

// Pods first: a job needing the whole node has two victims, the pod and the batch job beside; the
// pod's PodDisruptionBudget refuses, so the job is never requeued and the claim is undone (its hold
// rewritten: no claim left for a successor to read); the job waits, held, and does not claim again
// at once.
TEST(SharedNodeLoopTest, APodVictimsBudgetRefusalUndoesTheJobsClaimBeforeAnyJobIsRequeued) {
  JobPreemptorScene s;
  Cluster& c = s.c;
  c.slurm.Job(7).qos = "batch";  // preemptible now
  c.k8s.pdb_blocks.insert("ns/low");
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenSubmit(loop, 8));
  c.Cycle(loop, kT0 + 2);
  EXPECT_EQ(c.Calls("hold 8"), 2);  // the claim, then its undo
  EXPECT_TRUE(c.k8s.evictions.empty());
  EXPECT_EQ(c.Calls("requeue 7"), 0);
  EXPECT_EQ(loop.job_claims().Find("slurm/8"), nullptr);
  EXPECT_THAT(c.slurm.Job(8).admin_comment, HasSubstr("preemption on shared node n1 undone"));
  EXPECT_THAT(c.slurm.Job(8).admin_comment, HasSubstr("PodDisruptionBudget"));
  EXPECT_EQ(ParseJobClaim(c.slurm.Job(8).admin_comment), std::nullopt);
  EXPECT_EQ(c.slurm.Job(8).priority, 0);
  c.Cycle(loop, kT0 + 3);
  EXPECT_EQ(c.Calls("hold 8"), 2);  // blocked for a while: no new claim, the reason stays
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.k8s.NodeOf("ns/low"), "n1");
  EXPECT_EQ(c.Calls("start 8"), 0);
}

// Issue 25 step 4: a Slurm job holding a claim (held while its victims leave) counts on its node
// as running, but is never chosen as another preemptor's victim: its claim is committed. Here a
// normal job (preemptible, may preempt batch) claims the room of a batch pod beside an interactive
// job; while it waits for the pod to go, an urgent pod arrives that needs the same 4 CPUs. The
// only preemptible work on the node is the claimed job: the urgent pod waits, no placeholder
// names the job as a victim, and the job is started where it claimed (without the rule the pod
// claimed with "preempting slurm/8").
TEST(SharedNodeLoopTest, AJobHoldingAClaimIsNeverAnotherPreemptorsVictim) {
  Cluster c(1);
  Config cfg = SlurmConfig("placeholder");
  cfg.queue.qos = {{"urgent", 5000, false, true, 0},
                   {"interactive", 1000, false, true, 0},
                   {"normal", 100, true, true, 0},
                   {"batch", 10, true, false, 0}};
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  cfg.slurm.qos_map = {{"int", "interactive"}, {"", "normal"}};
  c.slurm.shared.insert("n1");
  c.slurm.Submit(7, 4);
  c.slurm.Job(7).qos = "int";  // interactive: never a victim
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("low", "4", "batch", "n1");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  c.slurm.Run(c.slurm.pod_placeholders[0], "n1");
  c.Cycle(loop, kT0 + 1);
  c.slurm.Submit(8, 4);  // normal
  c.Cycle(loop, kT0 + 2);
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
  ASSERT_NE(loop.job_claims().Find("slurm/8"), nullptr);
  EXPECT_EQ(loop.job_claims().Find("slurm/8")->state, JobClaimState::kWaitingForVictims);
  c.k8s.AddPod("urgent", "4", "urgent");
  c.Cycle(loop, kT0 + 3);
  for (uint32_t p : c.slurm.pod_placeholders)
    EXPECT_THAT(c.slurm.Job(p).comment, ::testing::Not(HasSubstr("slurm/8"))) << "placeholder " << p;
  EXPECT_EQ(c.Calls("requeue 8"), 0);
  EXPECT_EQ(c.k8s.NodeOf("ns/urgent"), "");
  EXPECT_EQ(c.Calls("start 8"), 1);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(8).nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
}

// Issue 25 tenancy in the loop: on a node of a shared-same-tenant partition where a physics Slurm
// job runs, a physics pod (namespace phys) is mirrored under the physics account and bound beside
// it; a pod of another namespace (a tenant of its own) waits although it fits there too.
TEST(SharedNodeLoopTest, ASameTenantNodeTakesOnlyPodsOfTheTenantOfItsSlurmJob) {
  Cluster c(1);
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.partition_sharing = {{"pool", "shared-same-tenant"}};
  cfg.sharing.tenants = {{"physics", {"phys"}, {"physics"}}};
  c.slurm.shared.insert("n1");
  c.slurm.Submit(7, 2);  // account physics
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("web", "2", "batch");  // namespace ns
  c.k8s.AddPod("sim", "2", "normal");
  c.k8s.Find("ns/sim")->metadata.namespace_ = "phys";
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  const uint32_t p = c.slurm.pod_placeholders[0];
  EXPECT_THAT(c.slurm.Job(p).comment, HasSubstr("pod phys/sim"));
  EXPECT_EQ(c.slurm.placeholder_accounts[p], "physics");
  c.slurm.Run(p, "n1");
  c.Cycle(loop, kT0 + 1);
  EXPECT_EQ(c.k8s.NodeOf("phys/sim"), "n1");
  for (int t = 2; t <= 4; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "");
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 1u);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
}

// Issue 25: a bound pod's placeholder is cancelled by an admin and Slurm starts a job into the
// space at once, so the new placeholder cannot start: after 60 s the pod is reported once (the
// MirrorLost event, CycleStats::mirrors_lost for onequeue_shared_mirror_lost_total{node}) and keeps
// running (sharing.onLostMirror: remake); once the job ends the new placeholder runs, and a later
// loss is reported again.
TEST(SharedNodeLoopTest, ALostPlaceholderThatCannotBeMadeAgainIsReportedOnceAndThePodKeepsRunning) {
  Cluster c(1);
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  c.k8s.AddPod("web", "2", "batch", "");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 1u);
  c.slurm.Run(c.slurm.pod_placeholders[0], "n1");
  c.Cycle(loop, kT0 + 5);
  ASSERT_EQ(c.k8s.NodeOf("ns/web"), "n1");
  ASSERT_TRUE(c.slurm.Cancel(c.slurm.pod_placeholders[0]).ok());  // an admin's scancel
  c.slurm.Submit(8, 8);
  c.slurm.Job(8).partition = "pool";
  c.slurm.Run(8, "n1");  // Slurm's own scheduler, into the space the pod holds
  std::vector<std::string> lost;
  for (queue::Time t = kT0 + 10; t <= kT0 + 100; t += 5) {
    CycleStats stats = c.Cycle(loop, t);
    lost.insert(lost.end(), stats.mirrors_lost.begin(), stats.mirrors_lost.end());
    if (t < kT0 + 70) EXPECT_TRUE(c.k8s.pod_events.empty()) << "before the 60 s timeout, t+" << t - kT0;
  }
  EXPECT_EQ(lost, std::vector<std::string>{"n1"});
  ASSERT_EQ(c.k8s.pod_events.size(), 1u);
  EXPECT_THAT(c.k8s.pod_events[0], HasSubstr("MirrorLost ns/web: the Slurm placeholder"));
  EXPECT_THAT(c.k8s.pod_events[0], HasSubstr("shared node n1"));
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "n1");  // remake: the pod runs on
  EXPECT_TRUE(c.k8s.evictions.empty());
  // The job ends; Slurm starts the pending new placeholder: mirrored again.
  c.slurm.Job(8).state = slurm::JobState::kCompleted;
  const uint32_t remade = c.slurm.pod_placeholders.back();
  ASSERT_EQ(c.slurm.Job(remade).state, slurm::JobState::kPending);
  c.slurm.Run(remade, "n1");
  c.Cycle(loop, kT0 + 105);
  EXPECT_EQ(loop.mirrors().Find(c.k8s.UidOf("ns/web"))->state, MirrorState::kBound);
  EXPECT_FALSE(loop.mirrors().Find(c.k8s.UidOf("ns/web"))->lost_reported);
}

// sharing.onLostMirror: evict: the same loss evicts the pod (its controller makes it again), once.
TEST(SharedNodeLoopTest, ALostPlaceholderThatCannotBeMadeAgainEvictsThePodWhenTheConfigSaysEvict) {
  Cluster c(1);
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  cfg.sharing.on_lost_mirror = "evict";
  c.k8s.AddPod("web", "2", "batch", "");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.slurm.Run(c.slurm.pod_placeholders[0], "n1");
  c.Cycle(loop, kT0 + 5);
  ASSERT_EQ(c.k8s.NodeOf("ns/web"), "n1");
  c.slurm.Forget(c.slurm.pod_placeholders[0]);  // a slurmctld restart lost it
  c.slurm.Submit(8, 8);
  c.slurm.Run(8, "n1");
  for (queue::Time t = kT0 + 10; t <= kT0 + 100; t += 5) c.Cycle(loop, t);
  EXPECT_EQ(c.k8s.evictions, std::vector<std::string>{"ns/web"});
  ASSERT_EQ(c.k8s.pod_events.size(), 1u);
  EXPECT_THAT(c.k8s.pod_events[0], HasSubstr("evicted (sharing.onLostMirror: evict)"));
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "<gone>");
}

// Issue 25, docs/sharing.md section 5: the daemon writes how a shared node is split now to its
// onequeue.io/split annotation (what `kubectl describe node` shows), with the GPU indices Slurm
// gave its job, and again only when the split changes; `oq nodes` shows the same text
// (ListNodes' NodeInfo.split, from the same DescribeSplit).
TEST(SharedNodeLoopTest, TheSplitOfASharedNodeIsWrittenToItsAnnotationWithSlurmsGpuIndices) {
  SlurmLoopCluster c(0);
  c.k8s.AddNode("n1", "8", {{"nvidia.com/gpu", "4"}});
  c.slurm.AddNode("n1");
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  slurm::SlurmJob& job = c.slurm.Submit(7, 4);
  job.memory_per_node_mb = 8192;
  job.gres_per_node = {{"gpu", 2}};
  c.slurm.Run(7, "n1");
  c.slurm.Job(7).allocation.nodes[0].gres_indices = {{"gpu", {0, 1}}};
  c.k8s.AddSizedPod("web", {{"cpu", "2"}, {"memory", "4Gi"}, {"nvidia.com/gpu", "1"}}, "batch");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.slurm.Run(c.slurm.pod_placeholders.at(0), "n1");
  c.Cycle(loop, kT0 + 5);
  ASSERT_EQ(c.k8s.NodeOf("ns/web"), "n1");
  c.Cycle(loop, kT0 + 10);
  EXPECT_EQ(c.k8s.node_annotations["n1"][kSplitAnnotation],
            "pods cpu=2 memory=4Gi nvidia.com/gpu=1 (ns/web); "
            "slurm cpu=4 memory=8Gi nvidia.com/gpu=2 [gpu 0,1] (slurm/7); "
            "free cpu=2 memory=20Gi nvidia.com/gpu=1");
  c.k8s.DeletePod("ns/web");
  c.Cycle(loop, kT0 + 15);
  c.Cycle(loop, kT0 + 20);
  EXPECT_EQ(c.k8s.node_annotations["n1"][kSplitAnnotation],
            "pods cpu=0 memory=0 nvidia.com/gpu=0; slurm cpu=4 memory=8Gi nvidia.com/gpu=2 [gpu 0,1] (slurm/7); "
            "free cpu=4 memory=24Gi nvidia.com/gpu=2");
}

// Issue 25: `oq nodes`' table (ListNodes' OWNER and LENDING, from NodeOwnerColumn and
// NodeLendingColumn) shows a shared node as shared, never lent whole, while a pod and a Slurm job
// run there; an exclusive node of another shared partition still shows its owner and lending.
TEST(SharedNodeLoopTest, OqNodesShowsASharedNodeAsSharedAndNeverLentWhole) {
  Cluster c(2);
  c.slurm.Node("n2").partitions = {"whole"};
  Config cfg = SlurmConfig("placeholder");
  cfg.slurm.shared_partitions = {"pool", "whole"};
  cfg.slurm.partition_sharing = {{"pool", "shared"}};
  c.slurm.Submit(7, 4);
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("web", "2", "batch", "");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  StatusBoard board;
  loop.PublishTo(&board);
  c.Cycle(loop, kT0);
  ASSERT_FALSE(c.slurm.pod_placeholders.empty());
  c.slurm.Run(c.slurm.pod_placeholders.at(0), "n1");
  c.Cycle(loop, kT0 + 5);
  c.Cycle(loop, kT0 + 10);
  ASSERT_EQ(c.k8s.NodeOf("ns/web"), "n1");
  const auto st = board.Latest();
  ASSERT_NE(st, nullptr);
  std::map<std::string, std::pair<std::string, std::string>> columns;
  for (const queue::Node& node : st->plan->snapshot->nodes) {
    auto j = st->slurm.nodes.find(node.name);
    columns[node.name] = {NodeOwnerColumn(node),
                          NodeLendingColumn(*st, node, j == st->slurm.nodes.end() ? nullptr : &j->second)};
  }
  EXPECT_EQ(columns["n1"].first, "shared");
  EXPECT_EQ(columns["n1"].second, "shared with Slurm: never lent whole");
  EXPECT_EQ(columns["n2"].first, "kubernetes");
  EXPECT_THAT(columns["n2"].second, HasSubstr("Kubernetes'"));
}

// Issue 25 step 4, a gang as the preemptor on shared nodes: a Slurm job of two nodes (4 CPUs on
// each) needs room on n1 and n2 (two_shared_nodes_scene.h). The job claims on both nodes with one
// hold (job_claim.h).
struct GangPreemptorScene : TwoSharedNodesScene {
  void MirrorTheBoundPodThenSubmit(SchedulingLoop& loop) {
    ASSERT_NO_FATAL_FAILURE(MirrorTheBoundPod(loop, kT0));
    slurm::SlurmJob& gang = c.slurm.Submit(8, 8);
    gang.node_count = 2;
  }
  // The claim as written: one hold naming both nodes and the victim on each.
  void ExpectTheClaimOnBothNodes(const SchedulingLoop& loop) {
    ASSERT_NE(loop.job_claims().Find("slurm/8"), nullptr);
    EXPECT_EQ(loop.job_claims().Find("slurm/8")->nodes, (std::vector<std::string>{"n1", "n2"}));
    std::optional<ParsedJobClaim> claim = ParseJobClaim(c.slurm.Job(8).admin_comment);
    ASSERT_TRUE(claim.has_value()) << c.slurm.Job(8).admin_comment;
    EXPECT_EQ(claim->nodes, (std::vector<std::string>{"n1", "n2"}));
    EXPECT_THAT(claim->victims, ::testing::UnorderedElementsAre("ns/low", "slurm/9"));
    EXPECT_EQ(c.slurm.Job(8).priority, 0);
  }
};

// The gang starts only once its victims on EVERY node are gone: the pod on n1 leaves at once, the
// job on n2 still runs (its requeue not through yet), and the gang waits, held, its room on both
// nodes kept; once the job has left too it is started on n1 and n2. The interactive jobs beside
// run on untouched, the pod's replacement and the requeued job wait (held).
TEST(SharedNodeLoopTest, AGangJobClaimsOnEveryNodeAndStartsOnlyOnceItsVictimsOnEveryNodeAreGone) {
  GangPreemptorScene s;
  Cluster& c = s.c;
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenSubmit(loop));
  c.Cycle(loop, kT0 + 2);
  ASSERT_NO_FATAL_FAILURE(s.ExpectTheClaimOnBothNodes(loop));
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
  EXPECT_EQ(c.Calls("requeue 9"), 1);
  EXPECT_EQ(c.slurm.Job(9).priority, 0);  // held at once (G3)
  // The requeue has not taken effect yet: job 9 still runs on n2.
  c.slurm.Run(9, "n2");
  for (int t = 3; t <= 5; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.Job(s.low_placeholder).state, slurm::JobState::kCancelled);
  EXPECT_EQ(c.Calls("start 8"), 0) << "started while its victim on n2 still runs";
  EXPECT_EQ(loop.job_claims().Find("slurm/8")->state, JobClaimState::kWaitingForVictims);
  EXPECT_EQ(c.Calls("requeue 9"), 1);  // each victim asked once
  EXPECT_EQ(c.k8s.NodeOf("ns/low-r"), "");  // the room on n1 stays claimed
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 1u);
  // Job 9 leaves: the gang is started on both nodes.
  ASSERT_TRUE(c.slurm.Requeue(9).ok());
  c.Cycle(loop, kT0 + 6);
  EXPECT_EQ(c.Calls("start 8"), 1);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(8).nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(loop.job_claims().Find("slurm/8"), nullptr);
  for (int t = 7; t <= 9; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.Job(6).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.Calls("requeue 6") + c.Calls("requeue 7"), 0);
  EXPECT_EQ(c.slurm.Job(9).state, slurm::JobState::kPending);
  EXPECT_EQ(c.k8s.NodeOf("ns/low-r"), "");
  EXPECT_EQ(c.slurm.AllocatedCpus("n1"), 8u);
  EXPECT_EQ(c.slurm.AllocatedCpus("n2"), 8u);
  EXPECT_EQ(c.Calls("start 8"), 1);
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
  EXPECT_THAT(c.slurm.calls, ::testing::Not(Contains(::testing::StartsWith("fence"))));
}

// A victim that does not leave: the job on n2 keeps running past the timeout (300 s after the
// victims were asked), and the whole claim is undone at once, through the one rewritten hold: no
// claim left on either node for the plan or a successor, the gang not started.
TEST(SharedNodeLoopTest, AGangJobsClaimIsUndoneOnEveryNodeWhenOneVictimDoesNotLeave) {
  GangPreemptorScene s;
  Cluster& c = s.c;
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenSubmit(loop));
  c.Cycle(loop, kT0 + 2);
  ASSERT_NO_FATAL_FAILURE(s.ExpectTheClaimOnBothNodes(loop));
  c.slurm.Run(9, "n2");  // the requeue never takes effect
  for (int t = 3; t < 302; t += 30) c.Cycle(loop, kT0 + t);
  ASSERT_NE(loop.job_claims().Find("slurm/8"), nullptr);
  EXPECT_TRUE(loop.job_claims().Holding().count(8));
  c.Cycle(loop, kT0 + 302);
  EXPECT_EQ(loop.job_claims().Find("slurm/8"), nullptr);
  EXPECT_FALSE(loop.job_claims().Holding().count(8));
  EXPECT_THAT(c.slurm.Job(8).admin_comment,
              HasSubstr("preemption on shared nodes n1,n2 undone: the victims have not left in 300 s"));
  EXPECT_EQ(ParseJobClaim(c.slurm.Job(8).admin_comment), std::nullopt);
  EXPECT_EQ(c.slurm.Job(8).priority, 0);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kPending);
  EXPECT_EQ(c.Calls("start 8"), 0);
  EXPECT_EQ(c.slurm.Job(6).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
}

// A crash after the gang's hold and before any victim is asked: the successor reads the claim on
// both nodes back from the AdminComment, asks each victim once, and starts the job on both nodes
// once they are gone; a third process asks nothing again.
TEST(SharedNodeLoopTest, ASuccessorReadsAGangJobsClaimOnEveryNodeBackAndFinishesIt) {
  GangPreemptorScene s;
  Cluster& c = s.c;
  {
    SchedulingLoop first(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenSubmit(first));
  }
  {
    SchedulingLoop crashing(s.cfg, &c.k8s, &c.k8s, &c.slurm, [](const char* name) {
      if (std::string(name) == "job-claim-after-hold") throw Crash{name};
    });
    EXPECT_THROW(c.Cycle(crashing, kT0 + 2), Crash);
  }
  EXPECT_TRUE(c.k8s.evictions.empty());
  EXPECT_EQ(c.Calls("requeue 9"), 0);
  {
    SchedulingLoop successor(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    c.Cycle(successor, kT0 + 3);
    ASSERT_NO_FATAL_FAILURE(s.ExpectTheClaimOnBothNodes(successor));
    EXPECT_EQ(successor.job_claims().Find("slurm/8")->state, JobClaimState::kWaitingForVictims);
    EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
    EXPECT_EQ(c.Calls("requeue 9"), 1);
  }
  SchedulingLoop third(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  for (int t = 4; t <= 6; ++t) c.Cycle(third, kT0 + t);
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
  EXPECT_EQ(c.Calls("requeue 9"), 1);
  EXPECT_EQ(c.Calls("start 8"), 1);
  EXPECT_EQ(c.slurm.Job(8).nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(c.slurm.Job(6).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
}

}  // namespace
}  // namespace onequeue::scheduler

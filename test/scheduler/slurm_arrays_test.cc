// Issue 29: Slurm job arrays in the one queue (scheduler/slurm_arrays.h): each pending task of an
// array's record is a workload of its own, in task order, within the %N throttle; onequeue starts
// a task by splitting it off its array (its own job id) and then as any job.
#include "scheduler/slurm_arrays.h"

#include <gtest/gtest.h>

#include "../slurm_bridge/fake_slurm_api.h"
#include "nlohmann/json.hpp"
#include "queue/planner.h"
#include "scheduler/slurm_cluster.h"
#include "scheduler/slurm_world.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using slurm::JobState;
using slurm::SlurmJob;
using slurm::SlurmView;

constexpr queue::Time kNow = 1763722800;

TEST(ArrayTasksTest, SlurmsTaskStringsAreReadWithStepsListsAndTheThrottle) {
  auto ids = [](const std::string& s) { return slurm::ParseArrayTasks(s).value().ids; };
  EXPECT_EQ(ids("0-9"), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ids("1,3,5-7"), (std::vector<uint32_t>{1, 3, 5, 6, 7}));
  EXPECT_EQ(ids("0-15:4"), (std::vector<uint32_t>{0, 4, 8, 12}));
  EXPECT_EQ(ids("4"), std::vector<uint32_t>{4});
  absl::StatusOr<slurm::ArrayTasks> t = slurm::ParseArrayTasks("3-9%2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->ids, (std::vector<uint32_t>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(t->max_running, 2u);
  for (const char* bad : {"", "a-b", "9-3", "1-5:0", "1-3%x", "0-99"}) {
    EXPECT_FALSE(slurm::ParseArrayTasks(bad, 50).ok()) << bad;
  }
  EXPECT_EQ(slurm::ArrayTaskId(100, 3), "100_3");
  EXPECT_EQ(ArrayTaskWorkloadId(100, 3), "slurm/100_3");
  EXPECT_EQ(ArrayTaskOf("slurm/100_3"), (ArrayTask{100, 3}));
  EXPECT_FALSE(ArrayTaskOf("slurm/100").has_value());
  EXPECT_FALSE(ArrayTaskOf("ns/pod_1").has_value());
  EXPECT_EQ(SlurmJobOf("slurm/100_3"), 100u);  // the record that holds the task while it pends
}

k8s::Node PoolNode(const std::string& name) {
  json j = {{"metadata", {{"name", name}, {"labels", {{"onequeue.io/pool", "a"}}}}},
            {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  return *k8s::Node::FromJson(j);
}

SlurmJob Array(uint32_t id, const std::string& tasks) {
  SlurmJob j;
  j.job_id = id;
  j.array_job_id = id;
  j.array_tasks = tasks;
  j.state = JobState::kPending;
  j.partition = "pool";
  j.account = "physics";
  j.qos = "normal";
  j.priority = 100;
  j.node_count = 1;
  j.cpus = 8;
  j.time_limit = absl::Minutes(10);
  j.submit_time = absl::FromUnixSeconds(kNow - 600);
  return j;
}

struct World {
  SlurmView::Jobs jobs;
  SlurmView::Nodes nodes;
  SlurmWorldOptions options;
  queue::QueueConfig queue_config;
  World() {
    options.shared_partitions = {"pool"};
    options.known_qos = {"normal"};
    options.preemptible_qos = {"normal"};
    queue_config.qos = {{"normal", 100}};
    for (const char* n : {"n1", "n2"}) {
      slurm::SlurmNode sn;
      sn.name = n;
      sn.state = slurm::NodeState::kIdle;
      sn.cpus = 8;
      sn.partitions = {"pool"};
      nodes[n] = sn;
    }
  }
  std::pair<BuiltSnapshot, SlurmRecords> Build() {
    auto view = std::make_shared<SlurmView>();
    view->jobs = std::make_shared<const SlurmView::Jobs>(jobs);
    view->nodes = std::make_shared<const SlurmView::Nodes>(nodes);
    view->refreshed_at = absl::FromUnixSeconds(kNow);
    BuiltSnapshot built = BuildSnapshot({PoolNode("n1"), PoolNode("n2")}, {}, SnapshotOptions{}, kNow);
    SlurmRecords records = AddSlurmWorld(view, options, queue_config, &built, kNow);
    return {std::move(built), std::move(records)};
  }
};

std::vector<std::string> PendingIds(const BuiltSnapshot& built) {
  std::vector<std::string> ids;
  for (const auto& p : built.snapshot->pending) ids.push_back(p.id);
  return ids;
}

TEST(SlurmArraysTest, EachPendingTaskIsAWorkloadAndTheyAreStartedInTaskOrder) {
  World w;
  w.jobs[100] = Array(100, "0-9");
  auto [built, records] = w.Build();
  ASSERT_EQ(built.snapshot->pending.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    const queue::PendingWorkload& p = built.snapshot->pending[i];
    EXPECT_EQ(p.id, ArrayTaskWorkloadId(100, i));
    EXPECT_EQ(p.submit_time, kNow - 600 + static_cast<queue::Time>(i));
    EXPECT_EQ(p.per_member[queue::kCpu], 8000);
    EXPECT_EQ(records.pending.at(p.id), &records.view->jobs->at(100));
  }
  queue::QueuePlanner planner(w.queue_config, nullptr);
  queue::Plan plan = planner.PlanCycle(built.snapshot, kNow);
  std::vector<std::string> started;
  for (const auto& s : plan.starts) started.push_back(s.workload);
  // Two nodes, one task each: tasks 0 and 1 now, the rest after them, in order.
  EXPECT_EQ(started, (std::vector<std::string>{"slurm/100_0", "slurm/100_1"}));
  const std::vector<std::string> order = plan.OrderIds();
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], ArrayTaskWorkloadId(100, i));
}

TEST(SlurmArraysTest, TheThrottleCountsRunningTasksAndTasksOnequeueStarted) {
  World w;
  w.jobs[200] = Array(200, "3-9%3");
  SlurmJob running = Array(200, "");
  running.job_id = 201;
  running.array_task_id = 1;
  running.state = JobState::kRunning;
  running.nodes = {"n1"};
  w.jobs[201] = running;
  w.options.started_tasks = {{{200, 2}, {"n2"}}};  // split off and started: the view may still list it
  auto [built, records] = w.Build();
  // %3 with task 1 running and task 2 started: one more, the first pending one.
  EXPECT_EQ(PendingIds(built), std::vector<std::string>{"slurm/200_3"});
  w.options.started_tasks.clear();
  w.jobs[200].array_tasks = "2-9%3";
  auto [built2, records2] = w.Build();
  EXPECT_EQ(PendingIds(built2), (std::vector<std::string>{"slurm/200_2", "slurm/200_3"}));
  w.jobs[200].array_tasks = "2-9";  // no throttle: every pending task
  auto [built3, records3] = w.Build();
  EXPECT_EQ(built3.snapshot->pending.size(), 8u);
  w.jobs[200].array_tasks = "nonsense";  // unreadable: the record is one workload, as before
  auto [built4, records4] = w.Build();
  EXPECT_EQ(PendingIds(built4), std::vector<std::string>{"slurm/200"});
}

// Issue 29: an array's pending tasks ask the same, so the lowest one not started yet takes the
// slot the plan chose for any of them: the plan may have put a lower task later (it lost its
// reservation to a change of the world while later tasks kept theirs: seen live on 24.11, tasks
// 6 and 7 backfilled ahead of 4 and 5).
TEST(ArrayTasksTest, TheLowestTaskNotStartedTakesTheSlotThePlanChoseForAnyTaskOfItsArray) {
  const std::vector<ArrayTask> pending = {{100, 7}, {100, 6}, {100, 5}, {100, 4}, {200, 0}};
  EXPECT_EQ(LowestTaskToStart({100, 6}, pending, {}), (ArrayTask{100, 4}));
  EXPECT_EQ(LowestTaskToStart({100, 7}, pending, {{{100, 4}, {"n1"}}}), (ArrayTask{100, 5}));
  EXPECT_EQ(LowestTaskToStart({200, 0}, pending, {}), (ArrayTask{200, 0}));  // another array's tasks do not count
  EXPECT_EQ(LowestTaskToStart({100, 4}, pending, {}), (ArrayTask{100, 4}));
}

// The view lists a started task in the array's record (made before the split): it is not planned
// again and holds the node lent for it, as running there.
TEST(SlurmArraysTest, AStartedTaskTheViewStillListsHoldsItsNode) {
  World w;
  w.jobs[100] = Array(100, "0-3");
  w.options.started_tasks = {{{100, 0}, {"n1"}}};
  auto [built, records] = w.Build();
  EXPECT_EQ(PendingIds(built), (std::vector<std::string>{"slurm/100_1", "slurm/100_2", "slurm/100_3"}));
  ASSERT_EQ(built.snapshot->running.size(), 1u);
  EXPECT_EQ(built.snapshot->running[0].id, "slurm/100_0");
  ASSERT_EQ(built.snapshot->running[0].allocations.size(), 1u);
  EXPECT_EQ(built.snapshot->nodes[built.snapshot->running[0].allocations[0].node].name, "n1");
}

// Issue 29: a heterogeneous job's components are left to Slurm. Before, each component was a job
// of its own and the plan started one on the idle node: a release Slurm cannot use until the
// other component can start too (the lent node idles). Now both wait, held, saying why, and the
// ordinary job beside them takes the node.
TEST(SlurmJobShapesTest, AHeterogeneousJobsComponentsAreLeftToSlurm) {
  World w;
  for (uint32_t offset : {0u, 1u}) {
    SlurmJob c = Array(500 + offset, "");
    c.array_job_id = 0;
    c.het_job_id = 500;
    c.het_job_offset = offset;
    c.cpus = offset == 0 ? 8 : 2;
    w.jobs[c.job_id] = c;
  }
  SlurmJob plain = Array(600, "");
  plain.array_job_id = 0;
  plain.submit_time = absl::FromUnixSeconds(kNow - 60);  // younger than the hetjob
  w.jobs[600] = plain;
  w.nodes.erase("n2");
  auto [built, records] = w.Build();
  queue::QueuePlanner planner(w.queue_config, nullptr);
  queue::Plan plan = planner.PlanCycle(built.snapshot, kNow);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].workload, "slurm/600");
  for (const char* id : {"slurm/500", "slurm/501"}) {
    auto it = std::find_if(plan.waiting.begin(), plan.waiting.end(), [&](const auto& s) { return s.workload == id; });
    ASSERT_NE(it, plan.waiting.end()) << id;
    EXPECT_EQ(it->reason, queue::WaitReason::kHeld) << id;
    EXPECT_NE(std::string(it->Message()).find("heterogeneous job 500"), std::string::npos) << it->Message();
  }
}

TEST(SlurmArraysTest, SplittingATaskGivesItItsOwnRecordAndLeavesTheRestInTheArray) {
  slurm::testing::FakeSlurmApi api;
  api.jobs[300] = Array(300, "0-4%2");
  slurm::NodeOwnership* no_ownership = nullptr;
  SlurmBridgeActions actions(&api, no_ownership);
  absl::StatusOr<uint32_t> own = actions.SplitArrayTask(300, 2, "onequeue: starting 300_2");
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_NE(*own, 300u);
  EXPECT_EQ(api.jobs.at(*own).array_task_id, 2u);
  EXPECT_EQ(api.jobs.at(*own).admin_comment, "onequeue: starting 300_2");
  EXPECT_EQ(api.jobs.at(300).array_tasks, "0,1,3,4%2");
  EXPECT_TRUE(api.jobs.at(300).admin_comment.empty());
}

}  // namespace
}  // namespace onequeue::scheduler

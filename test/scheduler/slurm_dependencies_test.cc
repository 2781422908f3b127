// Issue 29: Slurm job dependencies in the one queue (scheduler/slurm_dependencies.h): the parser
// of Slurm's `dependency` field, and what the world makes of a job that waits for one (planned
// from its running parent's expected end, or left to Slurm with the reason; never held by
// onequeue).
#include "scheduler/slurm_dependencies.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "queue/planner.h"
#include "scheduler/slurm_world.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using slurm::JobState;
using slurm::SlurmJob;
using slurm::SlurmView;
using Type = SlurmDependency::Type;
using State = SlurmDependency::State;

constexpr queue::Time kNow = 1763722800;

SlurmDependencies Parse(const std::string& s) {
  absl::StatusOr<SlurmDependencies> d = ParseSlurmDependencies(s);
  EXPECT_TRUE(d.ok()) << s << ": " << d.status();
  return d.ok() ? *d : SlurmDependencies{};
}

TEST(SlurmDependenciesParseTest, EveryFormAsTheUserWritesItAndAsSlurmReportsIt) {
  EXPECT_TRUE(Parse("").empty());
  EXPECT_TRUE(Parse("(null)").empty());
  EXPECT_FALSE(Parse("").Unfulfilled());

  SlurmDependencies d = Parse("afterok:12:13,afterany:14,afternotok:15,after:16+5");
  ASSERT_EQ(d.items.size(), 5u);
  EXPECT_FALSE(d.any);
  EXPECT_EQ(d.items[0].type, Type::kAfterOk);
  EXPECT_EQ(d.items[0].job_id, 12u);
  EXPECT_EQ(d.items[1].type, Type::kAfterOk);
  EXPECT_EQ(d.items[1].job_id, 13u);
  EXPECT_EQ(d.items[2].type, Type::kAfterAny);
  EXPECT_EQ(d.items[3].type, Type::kAfterNotOk);
  EXPECT_EQ(d.items[4].type, Type::kAfter);
  EXPECT_EQ(d.items[4].job_id, 16u);
  EXPECT_EQ(d.items[4].minutes, 5);
  EXPECT_TRUE(d.Unfulfilled());

  // Slurm's report: one job per part, each with its state.
  d = Parse("afterok:12(unfulfilled),afterany:14(fulfilled)");
  ASSERT_EQ(d.items.size(), 2u);
  EXPECT_EQ(d.items[0].state, State::kUnfulfilled);
  EXPECT_EQ(d.items[1].state, State::kFulfilled);
  EXPECT_TRUE(d.Unfulfilled());
  EXPECT_FALSE(Parse("afterok:12(fulfilled)").Unfulfilled());
  EXPECT_EQ(Parse("afternotok:12(failed)").items[0].state, State::kFailed);

  d = Parse("afterok:12?afterok:13(unfulfilled)");
  EXPECT_TRUE(d.any);
  ASSERT_EQ(d.items.size(), 2u);

  d = Parse("afterok:12_3,afterany:20_*");
  EXPECT_EQ(d.items[0].array_task, 3u);
  EXPECT_TRUE(d.items[1].all_tasks);

  d = Parse("singleton");
  EXPECT_TRUE(d.singleton);
  EXPECT_TRUE(d.Unfulfilled());
  EXPECT_TRUE(Parse("afterok:12,singleton").singleton);
}

TEST(SlurmDependenciesParseTest, BadInputIsRefusedWithAMessageNamingThePart) {
  const std::pair<const char*, const char*> bad[] = {
      {"afterok", "\"afterok\" names no job"},
      {"afterok:", "\"\" is no job id"},
      {"afterok:x", "\"x\" is no job id"},
      {"afterok:0", "\"0\" is no job id"},
      {"afterok:-3", "\"-3\" is no job id"},
      {"afterok:12+5", "\"+minutes\" is for after only, not afterok"},
      {"after:12+x", "\"x\" is no number of minutes"},
      {"afterok:12_x", "\"x\" is no array task id"},
      {"afterok:12(maybe)", "unknown state \"maybe\""},
      {"afterok:12,", "an empty part"},
      {"afterok:12,afterok:13?afterok:14", "mixed"},
      {"before:12", "unknown dependency type \"before\""},
      {"aftercorr:12", "aftercorr is not planned by onequeue"},
      {"afterburstbuffer:12", "afterburstbuffer is not planned by onequeue"},
  };
  for (const auto& [text, why] : bad) {
    absl::StatusOr<SlurmDependencies> d = ParseSlurmDependencies(text);
    ASSERT_FALSE(d.ok()) << text;
    EXPECT_NE(d.status().message().find(why), std::string::npos) << text << ": " << d.status().message();
    EXPECT_NE(d.status().message().find(absl::StrCat("dependency \"", text, "\"")), std::string::npos)
        << d.status().message();
  }
}

// ---- The world: AddSlurmWorld over a view with a parent and its child.

k8s::Node PoolNode(const std::string& name) {
  json j = {{"metadata", {{"name", name}, {"labels", {{"onequeue.io/pool", "a"}}}}},
            {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  return *k8s::Node::FromJson(j);
}

SlurmJob Job(uint32_t id, JobState state) {
  SlurmJob j;
  j.job_id = id;
  j.state = state;
  j.partition = "pool";
  j.account = "physics";
  j.qos = "normal";
  j.priority = 100;
  j.node_count = 1;
  j.cpus = 8;
  j.time_limit = absl::Minutes(30);
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
      slurm::SlurmNode s;
      s.name = n;
      s.state = slurm::NodeState::kIdle;
      s.cpus = 8;
      s.partitions = {"pool"};
      nodes[n] = s;
    }
    // The parent runs on n1 since ten minutes, for 30 minutes at most: it ends by kNow + 1200.
    jobs[1] = Job(1, JobState::kRunning);
    jobs[1].nodes = {"n1"};
    jobs[1].start_time = absl::FromUnixSeconds(kNow - 600);
  }
  SlurmJob& Child(uint32_t id, const std::string& dependency, const std::string& reason = "Dependency") {
    jobs[id] = Job(id, JobState::kPending);
    jobs[id].dependency = dependency;
    jobs[id].state_reason = reason;
    return jobs[id];
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
  const queue::PendingWorkload* Pending(const BuiltSnapshot& built, const std::string& id) {
    for (const queue::PendingWorkload& p : built.snapshot->pending)
      if (p.id == id) return &p;
    return nullptr;
  }
};

const queue::WaitingStatus* Waiting(const queue::Plan& plan, const std::string& id) {
  for (const queue::WaitingStatus& w : plan.waiting)
    if (w.workload == id) return &w;
  return nullptr;
}

TEST(SlurmDependenciesTest, AChildOfARunningParentIsReservedAtItsExpectedEndNotStartedNow) {
  World w;
  w.Child(2, "afterok:1(unfulfilled)");
  auto [built, records] = w.Build();
  const queue::PendingWorkload* child = w.Pending(built, "slurm/2");
  ASSERT_NE(child, nullptr);
  EXPECT_FALSE(child->held);
  EXPECT_EQ(child->not_before, kNow + 1200);
  queue::QueuePlanner planner(w.queue_config, nullptr);
  queue::Plan plan = planner.PlanCycle(built.snapshot, kNow);
  EXPECT_TRUE(plan.starts.empty()) << "n2 is free, but the dependency is not met";
  ASSERT_EQ(plan.reservations.size(), 1u);
  EXPECT_EQ(plan.reservations[0].start, kNow + 1200);
  const queue::WaitingStatus* s = Waiting(plan, "slurm/2");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->reason, queue::WaitReason::kDependency);
  EXPECT_EQ(s->Message(),
            "waits for its dependency afterok:1(unfulfilled): planned from its parent's expected end "
            "(start + time limit)");
}

TEST(SlurmDependenciesTest, AllOfIsTheLatestParentAnyOfTheEarliestAndAfterItsStartPlusMinutes) {
  World w;
  w.jobs[3] = Job(3, JobState::kRunning);  // ends by kNow + 1800
  w.jobs[3].nodes = {"n2"};
  w.jobs[3].start_time = absl::FromUnixSeconds(kNow);
  w.Child(4, "afterok:1(unfulfilled),afterany:3(unfulfilled)");
  w.Child(5, "afterok:1(unfulfilled)?afterany:3(unfulfilled)");
  w.Child(6, "after:3+10(unfulfilled)");
  w.Child(7, "afterok:1(fulfilled),afterany:3(unfulfilled)");
  auto [built, records] = w.Build();
  EXPECT_EQ(w.Pending(built, "slurm/4")->not_before, kNow + 1800);
  EXPECT_EQ(w.Pending(built, "slurm/5")->not_before, kNow + 1200);
  EXPECT_EQ(w.Pending(built, "slurm/6")->not_before, kNow + 600);
  EXPECT_EQ(w.Pending(built, "slurm/7")->not_before, kNow + 1800);
}

TEST(SlurmDependenciesTest, AParentPastItsExpectedEndStillKeepsTheChildFromStartingNow) {
  World w;
  w.jobs[1].start_time = absl::FromUnixSeconds(kNow - 3600);  // its limit passed; Slurm has not ended it yet
  w.Child(2, "afterok:1(unfulfilled)");
  auto [built, records] = w.Build();
  EXPECT_EQ(w.Pending(built, "slurm/2")->not_before, kNow + 1);
  queue::QueuePlanner planner(w.queue_config, nullptr);
  EXPECT_TRUE(planner.PlanCycle(built.snapshot, kNow).starts.empty());
}

TEST(SlurmDependenciesTest, WhatCannotBePlannedIsLeftToSlurmWithTheReason) {
  World w;
  w.jobs[8] = Job(8, JobState::kPending);  // a pending parent: its start is not known
  w.jobs[9] = Job(9, JobState::kRunning);
  w.jobs[9].nodes = {"n2"};
  w.jobs[9].start_time = absl::FromUnixSeconds(kNow - 60);
  w.jobs[9].time_limit.reset();  // no time limit: no expected end
  const std::pair<const char*, const char*> cases[] = {
      {"afterok:8(unfulfilled)", "depends on job 8, which has not started: not planned"},
      {"afterok:9(unfulfilled)", "depends on job 9, which has no time limit: not planned"},
      {"afterok:77(unfulfilled)", "depends on job 77, which Slurm no longer lists: not planned"},
      {"afterok:1_2(unfulfilled)", "depends on array job 1, which onequeue does not plan: not planned"},
      {"singleton", "waits for its singleton dependency, which onequeue does not plan"},
      {"afterok:1(failed)", "its dependency afterok:1 failed: not planned"},
      {"aftercorr:1(unfulfilled)", "job 106: dependency \"aftercorr:1(unfulfilled)\": aftercorr is not planned"},
      {"afterok:x", "job 107: dependency \"afterok:x\": \"x\" is no job id"},
      {"", "waits for its dependency (Slurm's reason Dependency): not planned"},
  };
  uint32_t id = 100;
  for (const auto& [dependency, why] : cases) w.Child(id++, dependency);
  w.Child(id, "", "DependencyNeverSatisfied");
  auto [built, records] = w.Build();
  id = 100;
  for (const auto& [dependency, why] : cases) {
    const queue::PendingWorkload* p = w.Pending(built, SlurmWorkloadId(id++));
    ASSERT_NE(p, nullptr) << dependency;
    EXPECT_TRUE(p->held) << dependency;
    EXPECT_EQ(p->not_before, 0) << dependency;
    EXPECT_NE(p->admission_message.find("left to Slurm: job "), std::string::npos) << p->admission_message;
    EXPECT_NE(p->admission_message.find(why), std::string::npos) << dependency << ": " << p->admission_message;
  }
  EXPECT_TRUE(w.Pending(built, SlurmWorkloadId(id))->held);
  queue::QueuePlanner planner(w.queue_config, nullptr);
  EXPECT_TRUE(planner.PlanCycle(built.snapshot, kNow).starts.empty());
}

TEST(SlurmDependenciesTest, AMetDependencyIsAnOrdinaryJobAndAUsersHoldStaysTheUsers) {
  World w;
  w.Child(2, "afterok:1(fulfilled)", "Priority");
  w.Child(3, "afterok:1(unfulfilled)", "JobHeldUser").priority = 0;  // the user's hold wins
  auto [built, records] = w.Build();
  EXPECT_FALSE(w.Pending(built, "slurm/2")->held);
  EXPECT_EQ(w.Pending(built, "slurm/2")->not_before, 0);
  EXPECT_TRUE(w.Pending(built, "slurm/3")->held);
  EXPECT_EQ(w.Pending(built, "slurm/3")->not_before, 0);
}

TEST(SlurmDependenciesTest, TheListingsDependencyFieldIsReadAsSlurmReportsIt) {
  SlurmJob j = Job(2, JobState::kPending);
  j.dependency = "afterok:1(unfulfilled)";
  j.state_reason = "JobHeldAdmin";  // onequeue's own hold hides Slurm's reason Dependency
  EXPECT_TRUE(WaitsForDependency(j));
  j.dependency = "afterok:1(fulfilled)";
  EXPECT_FALSE(WaitsForDependency(j));
  j.dependency = "";
  j.state_reason = "Dependency";
  EXPECT_TRUE(WaitsForDependency(j));
  j.state = JobState::kRunning;
  EXPECT_FALSE(WaitsForDependency(j));
}

}  // namespace
}  // namespace onequeue::scheduler

// Issue 29: Slurm advance reservations in the one queue (scheduler/slurm_reservations.h): the
// reservation's pool nodes are unavailable over its window, not lendable and not schedulable while
// it is active, and a job that asks for a reservation is left to Slurm with the reason.
#include "scheduler/slurm_reservations.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "queue/planner.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using slurm::JobState;
using slurm::SlurmJob;
using slurm::SlurmNode;
using slurm::SlurmReservation;
using slurm::SlurmView;

constexpr queue::Time kNow = 1763722800;

k8s::Node PoolNode(const std::string& name) {
  json j = {{"metadata", {{"name", name}, {"labels", {{"onequeue.io/pool", "a"}}}}},
            {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  return *k8s::Node::FromJson(j);
}

SlurmNode Node(const std::string& name) {
  SlurmNode n;
  n.name = name;
  n.state = slurm::NodeState::kIdle;
  n.cpus = 8;
  n.partitions = {"pool", "reclaim"};
  return n;
}

SlurmJob Pending(uint32_t id) {
  SlurmJob j;
  j.job_id = id;
  j.state = JobState::kPending;
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

SlurmReservation Reservation(const std::string& name, std::vector<std::string> nodes, queue::Time start,
                             std::optional<queue::Time> end, std::set<std::string> flags = {}) {
  SlurmReservation r;
  r.name = name;
  r.nodes = std::move(nodes);
  r.start = absl::FromUnixSeconds(start);
  r.end = end ? absl::FromUnixSeconds(*end) : absl::InfiniteFuture();
  r.flags = std::move(flags);
  return r;
}

struct World {
  SlurmView::Jobs jobs;
  SlurmView::Nodes nodes;
  SlurmView::Reservations reservations;
  SlurmWorldOptions options;
  queue::QueueConfig queue_config;
  World() {
    options.shared_partitions = {"pool"};
    options.known_qos = {"normal"};
    options.preemptible_qos = {"normal"};
    queue_config.qos = {{"normal", 100}};
    for (const char* n : {"n1", "n2", "n3"}) nodes[n] = Node(n);
  }
  std::pair<BuiltSnapshot, SlurmRecords> Build() {
    auto view = std::make_shared<SlurmView>();
    view->jobs = std::make_shared<const SlurmView::Jobs>(jobs);
    view->nodes = std::make_shared<const SlurmView::Nodes>(nodes);
    view->reservations = std::make_shared<const SlurmView::Reservations>(reservations);
    view->refreshed_at = absl::FromUnixSeconds(kNow);
    BuiltSnapshot built = BuildSnapshot({PoolNode("n1"), PoolNode("n2"), PoolNode("n3")}, {}, SnapshotOptions{}, kNow);
    SlurmRecords records = AddSlurmWorld(view, options, queue_config, &built, kNow);
    return {std::move(built), std::move(records)};
  }
};

bool Lendable(const queue::Node& n) { return n.labels.count(kLendableLabel) > 0; }

TEST(SlurmReservationsTest, AnActiveReservationsNodesAreUnavailableUnschedulableAndNotLendable) {
  World w;
  w.reservations["maint"] = Reservation("maint", {"n1", "outside"}, kNow - 60, std::nullopt, {"MAINT"});
  w.reservations["later"] = Reservation("later", {"n2"}, kNow + 3600, kNow + 5400);
  w.reservations["over"] = Reservation("over", {"n3"}, kNow - 7200, kNow - 60);
  auto [built, records] = w.Build();
  const auto& nodes = built.snapshot->nodes;
  ASSERT_EQ(nodes.size(), 3u);
  ASSERT_EQ(nodes[0].unavailable.size(), 1u);
  EXPECT_EQ(nodes[0].unavailable[0].start, kNow - 60);
  EXPECT_EQ(nodes[0].unavailable[0].end, queue::kForever);
  EXPECT_NE(nodes[0].unavailable[0].reason.find("Slurm reservation maint (MAINT)"), std::string::npos);
  EXPECT_FALSE(nodes[0].schedulable);
  EXPECT_FALSE(Lendable(nodes[0]));
  // A future reservation: a window ahead; the node stays usable now for what ends before it.
  ASSERT_EQ(nodes[1].unavailable.size(), 1u);
  EXPECT_EQ(nodes[1].unavailable[0].start, kNow + 3600);
  EXPECT_EQ(nodes[1].unavailable[0].end, kNow + 5400);
  EXPECT_TRUE(nodes[1].schedulable);
  EXPECT_TRUE(Lendable(nodes[1]));
  // A reservation that ended changes nothing.
  EXPECT_TRUE(nodes[2].unavailable.empty());
  EXPECT_TRUE(Lendable(nodes[2]));
}

TEST(SlurmReservationsTest, NoJobIsLentANodeInAMaintenanceReservationNorPlannedAcrossAFutureOne) {
  World w;
  w.reservations["maint"] = Reservation("maint", {"n1"}, kNow - 60, std::nullopt, {"MAINT"});
  w.reservations["later"] = Reservation("later", {"n2"}, kNow + 600, kNow + 1200);
  for (uint32_t id : {1, 2, 3}) w.jobs[id] = Pending(id);  // 30 minutes each, one whole node
  auto [built, records] = w.Build();
  queue::QueuePlanner planner(w.queue_config, nullptr);
  queue::Plan plan = planner.PlanCycle(built.snapshot, kNow);
  // Only n3 is free of reservations for 30 minutes: one job starts, there.
  ASSERT_EQ(plan.starts.size(), 1u) << plan.starts.size();
  EXPECT_EQ(plan.starts[0].member_nodes, std::vector<queue::NodeIndex>{2});
}

TEST(SlurmReservationsTest, AJobThatAsksForAReservationIsLeftToSlurmWithTheReason) {
  World w;
  w.reservations["maint"] = Reservation("maint", {"n1"}, kNow - 60, std::nullopt, {"MAINT"});
  w.jobs[5] = Pending(5);
  w.jobs[5].reservation = "maint";
  w.jobs[6] = Pending(6);
  w.jobs[6].reservation = "gone";
  auto [built, records] = w.Build();
  ASSERT_EQ(built.snapshot->pending.size(), 2u);
  for (const queue::PendingWorkload& p : built.snapshot->pending) {
    EXPECT_TRUE(p.held) << p.id;  // onequeue neither holds nor starts it
    EXPECT_EQ(p.admission_error, queue::AdmissionError::kNone);
    EXPECT_NE(p.admission_message.find("left to Slurm"), std::string::npos) << p.admission_message;
  }
  EXPECT_NE(built.snapshot->pending[0].admission_message.find("Slurm reservation maint (MAINT) from"),
            std::string::npos)
      << built.snapshot->pending[0].admission_message;
  EXPECT_NE(built.snapshot->pending[0].admission_message.find("on n1"), std::string::npos);
  queue::QueuePlanner planner(w.queue_config, nullptr);
  queue::Plan plan = planner.PlanCycle(built.snapshot, kNow);
  EXPECT_TRUE(plan.starts.empty());
  ASSERT_EQ(plan.waiting.size(), 2u);
  EXPECT_EQ(plan.waiting[0].reason, queue::WaitReason::kHeld);
  EXPECT_NE(std::string(plan.waiting[0].Message()).find("left to Slurm"), std::string::npos);
}

}  // namespace
}  // namespace onequeue::scheduler

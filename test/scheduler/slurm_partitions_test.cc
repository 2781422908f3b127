// Issue 29: Slurm's partition limits and states per pending job and partition
// (scheduler/slurm_partitions.h), alone and in the Slurm world's records.
#include "scheduler/slurm_partitions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"
#include "scheduler/slurm_world.h"
#include "slurm_bridge/adapter.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using slurm::JobState;
using slurm::SlurmJob;
using slurm::SlurmPartition;
using slurm::SlurmView;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr queue::Time kNow = 1763722800;

SlurmPartition Partition(const std::string& name, std::vector<std::string> nodes) {
  SlurmPartition p;
  p.name = name;
  p.nodes = std::move(nodes);
  p.state = "UP";
  p.priority_tier = 1;
  return p;
}

SlurmJob Pending(uint32_t id, const std::string& partition, uint32_t nodes = 1, int minutes = 30) {
  SlurmJob j;
  j.job_id = id;
  j.state = JobState::kPending;
  j.partition = partition;
  j.account = "physics";
  j.qos = "normal";
  j.priority = 100;
  j.node_count = nodes;
  j.cpus = 4 * nodes;
  j.memory_per_node_mb = 1000;
  j.time_limit = absl::Minutes(minutes);
  j.submit_time = absl::FromUnixSeconds(kNow - 600);
  return j;
}

TEST(SlurmPartitionsTest, AJobOverItsPartitionsMaxTimeIsNotStartedThere) {
  SlurmPartition p = Partition("pool", {"n1"});
  p.max_time = absl::Minutes(2);
  const PartitionCheck over = CheckPartition(p, 1, absl::Minutes(5));
  EXPECT_EQ(over.verdict, PartitionVerdict::kOverMaxTime);
  EXPECT_THAT(over.why, HasSubstr("time limit 5 min over its MaxTime 2 min (PartitionTimeLimit)"));
  EXPECT_EQ(CheckPartition(p, 1, absl::Minutes(2)).verdict, PartitionVerdict::kAllowed);  // at MaxTime: fits
  // No readable limit (the partition's default, or UNLIMITED): Slurm checks when it is released.
  EXPECT_EQ(CheckPartition(p, 1, std::nullopt).verdict, PartitionVerdict::kAllowed);
}

TEST(SlurmPartitionsTest, MaxNodesAndMinNodesBoundTheJobsNodeCount) {
  SlurmPartition p = Partition("pool", {"n1", "n2", "n3", "n4"});
  p.max_nodes = 2;
  p.min_nodes = 2;
  EXPECT_EQ(CheckPartition(p, 3, absl::Minutes(1)).verdict, PartitionVerdict::kOverMaxNodes);
  EXPECT_EQ(CheckPartition(p, 1, absl::Minutes(1)).verdict, PartitionVerdict::kUnderMinNodes);
  EXPECT_EQ(CheckPartition(p, 2, absl::Minutes(1)).verdict, PartitionVerdict::kAllowed);
  EXPECT_THAT(CheckPartition(p, 3, absl::Minutes(1)).why, HasSubstr("3 nodes over its MaxNodes 2 (PartitionNodeLimit)"));
}

TEST(SlurmPartitionsTest, DownAndInactiveStartNothingButDrainStillRunsQueuedJobsAsSlurm) {
  SlurmPartition p = Partition("pool", {"n1"});
  for (const auto& [state, verdict] : std::vector<std::pair<std::string, PartitionVerdict>>{
           {"UP", PartitionVerdict::kAllowed},
           {"DRAIN", PartitionVerdict::kAllowed},  // slurm.conf(5): no new submissions, queued jobs run
           {"DOWN", PartitionVerdict::kDown},
           {"INACTIVE", PartitionVerdict::kInactive}}) {
    p.state = state;
    EXPECT_EQ(CheckPartition(p, 1, absl::Minutes(1)).verdict, verdict) << state;
  }
}

TEST(SlurmPartitionsTest, EachPartitionOfAMultiPartitionSubmitIsCheckedAgainstItsOwnLimits) {
  SlurmView::Partitions parts;
  parts["short"] = Partition("short", {"n1"});
  parts["short"].max_time = absl::Minutes(10);
  parts["long"] = Partition("long", {"n2"});
  parts["other"] = Partition("other", {"n3"});  // not shared: not checked, not counted
  const SlurmJob job = Pending(7, "short,other,long", 1, 60);
  const JobPartitions checks = CheckJobPartitions(job, 1, &parts, {"short", "long"});
  ASSERT_EQ(checks.checks.size(), 2u);
  EXPECT_EQ(checks.checks[0].verdict, PartitionVerdict::kOverMaxTime);
  EXPECT_THAT(checks.Allowed(), ElementsAre("long"));
  // Every partition refusing: the reason names each.
  parts["long"].state = "DOWN";
  const JobPartitions none = CheckJobPartitions(job, 1, &parts, {"short", "long"});
  EXPECT_TRUE(none.Allowed().empty());
  EXPECT_THAT(none.Reason(7), HasSubstr("partition short: time limit 60 min over its MaxTime 10 min"));
  EXPECT_THAT(none.Reason(7), HasSubstr("partition long: state DOWN"));
  // Not polled yet: Slurm decides, onequeue does not refuse.
  EXPECT_THAT(CheckJobPartitions(job, 1, nullptr, {"short", "long"}).Allowed(), ElementsAre("short", "long"));
}

TEST(SlurmPartitionsTest, PreemptModeOffIsReadFromV0045AndMeansNeverPreempted) {
  std::ifstream in(std::string(SLURM_FIXTURES_DIR) + "/v0.0.45/partitions-limits.json");
  std::stringstream text;
  text << in.rdbuf();
  auto listing = slurm::MakeAdapter(slurm::ApiVersion::kV0045)->ParsePartitions(json::parse(text.str()));
  ASSERT_TRUE(listing.ok()) << listing.status();
  SlurmView::Partitions parts;
  for (const SlurmPartition& p : listing->items) parts[p.name] = p;
  EXPECT_TRUE(NeverPreemptedIn("batch", &parts));   // PreemptMode=OFF (DISABLED)
  EXPECT_FALSE(NeverPreemptedIn("gpu", &parts));    // CANCEL: preempted, by cancelling
  EXPECT_FALSE(NeverPreemptedIn("batch", nullptr));
  // The same fixture's limits, through the adapter: batch DRAIN (queued jobs run), MaxTime 60,
  // 2 nodes exactly; gpu INACTIVE.
  SlurmJob job = Pending(9, "batch,gpu", 2, 60);
  EXPECT_THAT(CheckJobPartitions(job, 2, &parts, {"batch", "gpu"}).Allowed(), ElementsAre("batch"));
  job.time_limit = absl::Minutes(61);
  EXPECT_TRUE(CheckJobPartitions(job, 2, &parts, {"batch", "gpu"}).Allowed().empty());
  EXPECT_TRUE(CheckJobPartitions(job, 3, &parts, {"batch", "gpu"}).Allowed().empty());
}

// The records: the world builder applies the verdicts.
struct World {
  SlurmView::Jobs jobs;
  SlurmView::Nodes nodes;
  SlurmView::Partitions partitions;
  std::vector<k8s::Node> k8s_nodes;
  SlurmWorldOptions options;
  queue::QueueConfig queue_config;

  World() {
    options.shared_partitions = {"short", "long"};
    options.known_qos = {"normal"};
    options.preemptible_qos = {"normal"};
    queue_config.qos = {{"normal", 100}};
    for (int i = 1; i <= 3; ++i) {
      const std::string name = "n" + std::to_string(i);
      json j = {{"metadata", {{"name", name}, {"labels", {{"onequeue.io/pool", "a"}}}}},
                {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
                            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
      k8s_nodes.push_back(*k8s::Node::FromJson(j));
      slurm::SlurmNode n;
      n.name = name;
      n.state = slurm::NodeState::kIdle;
      n.cpus = 8;
      nodes[name] = n;
    }
    nodes["n1"].partitions = {"short"};
    nodes["n2"].partitions = {"long"};
    nodes["n3"].partitions = {"other"};
    partitions["short"] = Partition("short", {"n1"});
    partitions["long"] = Partition("long", {"n2"});
    partitions["other"] = Partition("other", {"n3"});
  }
  std::pair<BuiltSnapshot, SlurmRecords> Build() {
    auto view = std::make_shared<SlurmView>();
    view->jobs = std::make_shared<const SlurmView::Jobs>(jobs);
    view->nodes = std::make_shared<const SlurmView::Nodes>(nodes);
    view->partitions = std::make_shared<const SlurmView::Partitions>(partitions);
    view->refreshed_at = absl::FromUnixSeconds(kNow);
    BuiltSnapshot built = BuildSnapshot(k8s_nodes, {}, SnapshotOptions{}, kNow);
    SlurmRecords records = AddSlurmWorld(view, options, queue_config, &built, kNow);
    return {std::move(built), std::move(records)};
  }
};

TEST(SlurmPartitionsWorldTest, AMultiPartitionJobMayUseTheNodesOfEverySharedPartitionThatAllowsIt) {
  World w;
  w.jobs[7] = Pending(7, "short,long,other");
  auto [built, records] = w.Build();
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  const queue::PendingWorkload& p = built.snapshot->pending[0];
  EXPECT_FALSE(p.held);
  EXPECT_EQ(p.eligibility.node_selector.count("slurm.onequeue.io/partition.short"), 0u);
  ASSERT_TRUE(p.eligibility.allowed_nodes.has_value());
  EXPECT_THAT(*p.eligibility.allowed_nodes, UnorderedElementsAre("n1", "n2"));  // not n3: "other" is not shared
}

TEST(SlurmPartitionsWorldTest, APartitionWhoseLimitRefusesTheJobGivesItNoneOfItsNodes) {
  World w;
  w.partitions["short"].max_time = absl::Minutes(10);
  w.jobs[7] = Pending(7, "short,long", 1, 60);
  auto [built, records] = w.Build();
  const queue::PendingWorkload& p = built.snapshot->pending[0];
  EXPECT_FALSE(p.held);
  EXPECT_EQ(p.partition, "long");  // the tier of the partition it may run in
  EXPECT_EQ(p.eligibility.node_selector.at("slurm.onequeue.io/partition.long"), "true");
}

TEST(SlurmPartitionsWorldTest, AJobEveryPartitionRefusesIsRefusedWithTheReason) {
  World w;
  w.partitions["short"].max_time = absl::Minutes(10);
  w.jobs[7] = Pending(7, "short", 1, 60);
  auto [built, records] = w.Build();
  const queue::PendingWorkload& p = built.snapshot->pending[0];
  EXPECT_FALSE(p.held);  // not Slurm's hold: onequeue holds it, with the reason
  EXPECT_EQ(p.admission_error, queue::AdmissionError::kInvalidAnnotation);
  EXPECT_THAT(p.admission_message, HasSubstr("partition short: time limit 60 min over its MaxTime 10 min"));
}

TEST(SlurmPartitionsWorldTest, RunningJobsOfAPartitionWithPreemptModeOffAreNoVictims) {
  World w;
  SlurmJob a = Pending(1, "short");
  a.state = JobState::kRunning;
  a.nodes = {"n1"};
  SlurmJob b = Pending(2, "long");
  b.state = JobState::kRunning;
  b.nodes = {"n2"};
  w.jobs[1] = a;
  w.jobs[2] = b;
  w.partitions["short"].preempt_mode = {"OFF"};
  auto [built, records] = w.Build();
  std::map<std::string, bool> preemptible;
  for (const auto& r : built.snapshot->running) preemptible[r.id] = r.preemptible;
  EXPECT_FALSE(preemptible.at("slurm/1"));
  EXPECT_TRUE(preemptible.at("slurm/2"));
}

}  // namespace
}  // namespace onequeue::scheduler

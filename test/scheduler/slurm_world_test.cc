// The Slurm world's records in the one queue: a poller's view + the pool in -> workloads, running
// jobs and joined nodes out.
#include "scheduler/slurm_world.h"

#include <gtest/gtest.h>

#include "../slurm_bridge/fake_slurm_api.h"
#include "nlohmann/json.hpp"
#include "scheduler/slurm_cluster.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using slurm::JobState;
using slurm::NodeState;
using slurm::SlurmJob;
using slurm::SlurmNode;
using slurm::SlurmView;

constexpr queue::Time kNow = 1763722800;

k8s::Node PoolNode(const std::string& name, const std::string& slurm_label = "") {
  json labels = {{"onequeue.io/pool", "a"}};
  if (!slurm_label.empty()) labels["onequeue.io/slurm-node"] = slurm_label;
  json j = {{"metadata", {{"name", name}, {"labels", labels}}},
            {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "4"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  return *k8s::Node::FromJson(j);
}

SlurmNode Node(const std::string& name, std::vector<std::string> partitions = {"pool", "reclaim"}) {
  SlurmNode n;
  n.name = name;
  n.state = NodeState::kIdle;
  n.cpus = 8;
  n.partitions = std::move(partitions);
  return n;
}

SlurmJob Job(uint32_t id, JobState state, const std::string& partition = "pool") {
  SlurmJob j;
  j.job_id = id;
  j.state = state;
  j.partition = partition;
  j.account = "physics";
  j.qos = "normal";
  j.priority = 100;
  j.node_count = 1;
  j.cpus = 4;
  j.memory_per_node_mb = 1000;
  j.gres_per_node = {{"gpu", 2}};
  j.time_limit = absl::Minutes(30);
  j.submit_time = absl::FromUnixSeconds(kNow - 600);
  return j;
}

struct Fixture {
  SlurmView::Jobs jobs;
  SlurmView::Nodes nodes;
  std::vector<k8s::Node> k8s_nodes;
  SlurmWorldOptions options;
  queue::QueueConfig queue_config;

  Fixture() {
    options.shared_partitions = {"pool"};
    options.known_qos = {"interactive", "normal", "batch"};
    options.preemptible_qos = {"normal", "batch"};
    queue_config.qos = {{"interactive", 1000, false, {"normal", "batch"}, 0}, {"normal", 100}, {"batch", 10}};
  }
  std::pair<BuiltSnapshot, SlurmRecords> Build() {
    auto view = std::make_shared<SlurmView>();
    view->jobs = std::make_shared<const SlurmView::Jobs>(jobs);
    view->nodes = std::make_shared<const SlurmView::Nodes>(nodes);
    view->refreshed_at = absl::FromUnixSeconds(kNow);
    SnapshotOptions so;
    BuiltSnapshot built = BuildSnapshot(k8s_nodes, {}, so, kNow);
    SlurmRecords records = AddSlurmWorld(view, options, queue_config, &built, kNow);
    return {std::move(built), std::move(records)};
  }
};

TEST(SlurmWorldTest, PendingJobsOfSharedPartitionsAreWorkloadsWithTheirRequestPerNode) {
  Fixture f;
  f.k8s_nodes = {PoolNode("n1")};
  f.nodes["n1"] = Node("n1");
  f.jobs[7] = Job(7, JobState::kPending);
  f.jobs[8] = Job(8, JobState::kPending, "private");  // not shared: Slurm's alone
  auto [built, records] = f.Build();
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  const queue::PendingWorkload& w = built.snapshot->pending[0];
  EXPECT_EQ(w.id, "slurm/7");
  EXPECT_EQ(w.kind, queue::WorkloadKind::kSlurmJob);
  EXPECT_EQ(w.per_member[queue::kCpu], 4000);
  EXPECT_EQ(w.per_member[queue::kMemory], 1000LL * 1024 * 1024);
  const int gpu = built.snapshot->resource_names.IndexOf("nvidia.com/gpu");
  ASSERT_GE(gpu, 0);
  EXPECT_EQ(w.per_member[gpu], 2);
  EXPECT_EQ(w.time_limit, 1800);
  EXPECT_EQ(w.account, "physics");
  EXPECT_EQ(w.qos, "normal");
  EXPECT_EQ(w.submit_time, kNow - 600);
  EXPECT_EQ(w.eligibility.node_selector.at("slurm.onequeue.io/partition.pool"), "true");
  EXPECT_EQ(w.eligibility.node_selector.at("slurm.onequeue.io/lendable"), "true");
  ASSERT_EQ(w.eligibility.tolerations.size(), 1u);  // Kubernetes taints are for pods
  EXPECT_EQ(w.eligibility.tolerations[0].op, queue::Toleration::Operator::kExists);
  EXPECT_TRUE(records.pending.count("slurm/7"));
  EXPECT_EQ(records.nodes.at("n1").slurm_name, "n1");
  EXPECT_EQ(built.snapshot->nodes[0].labels.at("slurm.onequeue.io/lendable"), "true");
}

// A Slurm job mapped to a QOS onequeue's table lacks is held, saying so (the config refuses a
// defaultQos or a qosMap target outside the table: ConfigTest.SlurmQosNamesMustBeInTheQosTable);
// with no table at all, no QOS is unknown, as in the planner, and no job is held for its QOS.
TEST(SlurmWorldTest, AJobMappedToAQosTheTableLacksIsHeldAndWithNoTableNoneIs) {
  Fixture f;
  f.k8s_nodes = {PoolNode("n1")};
  f.nodes["n1"] = Node("n1");
  f.jobs[7] = Job(7, JobState::kPending);
  f.jobs[7].qos = "gold";  // not in the table: it gets the default QOS
  f.options.default_qos = "silver";
  {
    auto [built, records] = f.Build();
    ASSERT_EQ(built.snapshot->pending.size(), 1u);
    const queue::PendingWorkload& w = built.snapshot->pending[0];
    EXPECT_EQ(w.qos, "silver");
    EXPECT_EQ(w.admission_error, queue::AdmissionError::kQosNotAllowed);
    EXPECT_EQ(w.admission_message, "Slurm QOS \"gold\" maps to \"silver\", which is not in onequeue's QOS table");
  }
  f.options.known_qos.clear();
  f.options.preemptible_qos.clear();
  f.queue_config.qos.clear();
  auto [built, records] = f.Build();
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  EXPECT_EQ(built.snapshot->pending[0].admission_error, queue::AdmissionError::kNone);
}

TEST(SlurmWorldTest, NodesJoinByLabelAndOnlyJoinedUsableNodesAreLendable) {
  Fixture f;
  f.options.node_label = "onequeue.io/slurm-node";
  f.k8s_nodes = {PoolNode("gpu-a", "n1"), PoolNode("gpu-b", "n2"), PoolNode("gpu-c", "n3"), PoolNode("gpu-d")};
  f.nodes["n1"] = Node("n1");
  f.nodes["n2"] = Node("n2");
  f.nodes["n2"].state_flags = {"DRAIN"};
  f.nodes["n2"].reason = "bad DIMM";  // an admin's drain: hands off
  f.nodes["n3"] = Node("n3");
  f.options.not_lendable = {"gpu-c"};  // a pod left it a moment ago
  auto [built, records] = f.Build();
  ASSERT_EQ(records.nodes.size(), 3u);
  EXPECT_EQ(records.nodes.at("gpu-a").slurm_name, "n1");
  EXPECT_EQ(records.k8s_of_slurm.at("n2"), "gpu-b");
  EXPECT_EQ(records.nodes.at("gpu-b").holder.holder, slurm::NodeHolder::kAdmin);
  auto lendable = [&](int i) { return built.snapshot->nodes[i].labels.count("slurm.onequeue.io/lendable") > 0; };
  EXPECT_TRUE(lendable(0));
  EXPECT_FALSE(lendable(1));
  EXPECT_FALSE(lendable(2));
  EXPECT_FALSE(lendable(3));  // no Slurm node: never Slurm's
}

TEST(SlurmWorldTest, RunningJobsOnPoolNodesHoldThemAndOnlySharedOnesArePreemptible) {
  Fixture f;
  f.k8s_nodes = {PoolNode("n1"), PoolNode("n2")};
  f.nodes["n1"] = Node("n1");
  f.nodes["n2"] = Node("n2", {"private", "pool"});
  SlurmJob shared = Job(1, JobState::kRunning);
  shared.nodes = {"n1"};
  shared.start_time = absl::FromUnixSeconds(kNow - 60);
  SlurmJob other = Job(2, JobState::kRunning, "private");
  other.nodes = {"n2"};
  other.start_time = absl::FromUnixSeconds(kNow - 60);
  SlurmJob elsewhere = Job(3, JobState::kRunning);
  elsewhere.nodes = {"n9"};  // outside the pool
  f.jobs = {{1, shared}, {2, other}, {3, elsewhere}};
  auto [built, records] = f.Build();
  ASSERT_EQ(built.snapshot->running.size(), 2u);
  const auto& r1 = built.snapshot->running[0];
  EXPECT_EQ(r1.id, "slurm/1");
  EXPECT_EQ(r1.kind, queue::WorkloadKind::kSlurmJob);
  EXPECT_TRUE(r1.preemptible);
  EXPECT_EQ(r1.expected_end, kNow - 60 + 1800);
  EXPECT_GT(r1.priority, 0);
  ASSERT_EQ(r1.allocations.size(), 1u);
  EXPECT_EQ(r1.allocations[0].node, 0);
  EXPECT_FALSE(built.snapshot->running[1].preemptible);  // partition "private" is Slurm's alone
  EXPECT_EQ(records.nodes.at("n1").running_jobs, std::vector<uint32_t>{1});
}

TEST(SlurmWorldTest, HoldsOfUsersAndDependenciesAreKeptButOnequeuesOwnHoldIsNot) {
  Fixture f;
  f.k8s_nodes = {PoolNode("n1")};
  f.nodes["n1"] = Node("n1");
  SlurmJob user_held = Job(1, JobState::kPending);
  user_held.priority = 0;
  user_held.state_reason = "JobHeldUser";
  SlurmJob ours = Job(2, JobState::kPending);
  ours.priority = 0;
  ours.state_reason = "JobHeldAdmin";
  ours.admin_comment = "onequeue: Priority: waiting";  // issue 29: the mark is the AdminComment
  ours.comment = "my own notes";
  // Issue 29: the comment is the user's to write: a tag there proves nothing (an admin's hold).
  SlurmJob forged = Job(5, JobState::kPending);
  forged.priority = 0;
  forged.state_reason = "JobHeldAdmin";
  forged.comment = "onequeue: Priority: waiting";
  SlurmJob dependent = Job(3, JobState::kPending);
  dependent.state_reason = "Dependency";
  SlurmJob requeued = Job(4, JobState::kPending);
  requeued.state_reason = "BeginTime";
  requeued.restart_count = 1;
  f.jobs = {{1, user_held}, {2, ours}, {3, dependent}, {4, requeued}, {5, forged}};
  auto [built, records] = f.Build();
  std::map<std::string, bool> held;
  for (const auto& w : built.snapshot->pending) held[w.id] = w.held;
  EXPECT_TRUE(held.at("slurm/1"));
  EXPECT_FALSE(held.at("slurm/2"));
  EXPECT_TRUE(held.at("slurm/3"));
  EXPECT_FALSE(held.at("slurm/4"));
  EXPECT_TRUE(held.at("slurm/5"));
}

// Issue 29: --constraint, --nodelist and --exclude become the pool nodes the job may use; what a
// per-node set cannot say is refused with the reason (the job waits, never started by onequeue).
TEST(SlurmWorldTest, ConstraintNodeListAndExcludeAreTheNodesAJobMayUse) {
  Fixture f;
  f.k8s_nodes = {PoolNode("k1", "n1"), PoolNode("k2", "n2"), PoolNode("k3", "n3")};
  f.nodes["n1"] = Node("n1");
  f.nodes["n1"].features = {"fast", "rack1"};
  f.nodes["n2"] = Node("n2");
  f.nodes["n2"].features = {"fast", "rack2"};
  f.nodes["n3"] = Node("n3");
  f.nodes["n3"].features = {"rack2"};
  f.options.node_label = "onequeue.io/slurm-node";
  auto job = [&](uint32_t id, auto set) {
    SlurmJob j = Job(id, JobState::kPending);
    set(j);
    f.jobs[id] = j;
  };
  job(10, [](SlurmJob& j) { j.features = "rack2&fast"; });
  job(11, [](SlurmJob& j) { j.features = "rack1|rack2"; j.excluded_nodes = {"n2"}; });
  job(12, [](SlurmJob& j) { j.required_nodes = {"n3"}; });
  job(13, [](SlurmJob& j) { j.excluded_nodes = {"n1", "n2"}; });
  job(14, [](SlurmJob& j) { j.features = "[rack1|rack2]"; j.node_count = 2; });
  job(15, [](SlurmJob& j) { j.required_nodes = {"n1"}; j.node_count = 2; });
  job(16, [](SlurmJob& j) { j.features = "fast||ib"; });
  job(17, [](SlurmJob& j) { j.features = "gpu"; });
  job(18, [](SlurmJob& j) {});
  auto [built, records] = f.Build();
  std::map<std::string, const queue::PendingWorkload*> w;
  for (const auto& p : built.snapshot->pending) w[p.id] = &p;
  auto allowed = [&](const char* id) {
    const auto& a = w.at(id)->eligibility.allowed_nodes;
    return a ? *a : std::vector<std::string>{"<any>"};
  };
  EXPECT_EQ(allowed("slurm/10"), std::vector<std::string>{"k2"});
  EXPECT_EQ(allowed("slurm/11"), (std::vector<std::string>{"k1", "k3"}));
  EXPECT_EQ(allowed("slurm/12"), std::vector<std::string>{"k3"});
  EXPECT_EQ(allowed("slurm/13"), std::vector<std::string>{"k3"});
  EXPECT_EQ(allowed("slurm/17"), std::vector<std::string>{});  // no pool node has it: waits
  EXPECT_EQ(allowed("slurm/18"), std::vector<std::string>{"<any>"});
  for (const char* id : {"slurm/10", "slurm/11", "slurm/12", "slurm/13", "slurm/17", "slurm/18"})
    EXPECT_EQ(w.at(id)->admission_error, queue::AdmissionError::kNone) << id;
  for (const char* id : {"slurm/14", "slurm/15", "slurm/16"}) {
    EXPECT_EQ(w.at(id)->admission_error, queue::AdmissionError::kInvalidAnnotation) << id;
    EXPECT_NE(w.at(id)->admission_message.find(std::string("Slurm job ") + (id + 6)), std::string::npos)
        << w.at(id)->admission_message;
  }
  EXPECT_NE(w.at("slurm/14")->admission_message.find("brackets"), std::string::npos);
  EXPECT_NE(w.at("slurm/15")->admission_message.find("--nodelist"), std::string::npos);
  EXPECT_NE(w.at("slurm/16")->admission_message.find("position"), std::string::npos);
}

// Issue 29: onequeue's hold and start go to the AdminComment; the user's comment and ReqNodeList
// are never written (the plan honours the node list; Slurm enforces it).
TEST(SlurmBridgeActionsTest, HoldAndStartNeverWriteTheUsersCommentOrNodeList) {
  slurm::testing::FakeSlurmApi api;
  SlurmJob mine = Job(7, JobState::kPending);
  mine.comment = "run 42 of the sweep";
  SlurmJob listed = Job(8, JobState::kPending);
  listed.required_nodes = {"n1", "n2"};
  api.jobs = {{7, mine}, {8, listed}};
  auto ownership = slurm::MakeDrainOwnership(api, {"slurm", ""});
  SlurmBridgeActions actions(&api, ownership.get());
  ASSERT_TRUE(actions.Hold(7, "onequeue: Priority: waiting").ok());
  EXPECT_EQ(api.jobs[7].comment, "run 42 of the sweep");
  EXPECT_EQ(api.jobs[7].admin_comment, "onequeue: Priority: waiting");
  EXPECT_TRUE(HeldByOnequeue(api.jobs[7]));
  ASSERT_TRUE(actions.StartOn(7, {"n3"}, "onequeue: started by onequeue on n3").ok());
  EXPECT_EQ(api.jobs[7].comment, "run 42 of the sweep");
  EXPECT_TRUE(api.jobs[7].required_nodes.empty()) << "the user asked for no node list";
  EXPECT_EQ(api.jobs[7].admin_comment, "onequeue: started by onequeue on n3");
  ASSERT_TRUE(actions.StartOn(8, {"n1", "n2"}, "onequeue: started").ok());
  EXPECT_EQ(api.jobs[8].required_nodes, (std::vector<std::string>{"n1", "n2"}));
  for (const auto& [id, u] : api.job_updates) {
    EXPECT_FALSE(u.comment.has_value()) << id;
    EXPECT_FALSE(u.required_nodes.has_value()) << id;
  }
}

TEST(SlurmWorldTest, AJobOnequeueStartedCountsAsRunningUntilSlurmShowsIt) {
  Fixture f;
  f.k8s_nodes = {PoolNode("n1")};
  f.nodes["n1"] = Node("n1");
  f.jobs[5] = Job(5, JobState::kPending);
  f.options.assumed_starts[5] = {"n1"};
  auto [built, records] = f.Build();
  EXPECT_TRUE(built.snapshot->pending.empty());
  ASSERT_EQ(built.snapshot->running.size(), 1u);
  EXPECT_EQ(built.snapshot->running[0].id, "slurm/5");
}

TEST(SlurmWorldTest, PlaceholdersAreTheFenceNotWorkloads) {
  Fixture f;
  f.options.mechanism = "placeholder";
  f.k8s_nodes = {PoolNode("n1")};
  f.nodes["n1"] = Node("n1");
  SlurmJob ph = Job(9, JobState::kRunning, "reclaim");
  ph.name = "onequeue-placeholder-n1";
  ph.comment = "onequeue:kubernetes";
  ph.user = "slurm";  // slurm.user, which submits the placeholders
  ph.nodes = {"n1"};
  f.jobs[9] = ph;
  auto [built, records] = f.Build();
  EXPECT_TRUE(built.snapshot->running.empty());
  EXPECT_EQ(records.nodes.at("n1").holder.holder, slurm::NodeHolder::kOnequeue);
  EXPECT_EQ(records.nodes.at("n1").holder.owner, "kubernetes");
}

// Issue 24 M2: a user's job dressed as a placeholder (right name, partition and tag, another user)
// is a job like any other, not onequeue's fence; a tagged drain another user set is an admin's.
TEST(SlurmWorldTest, APlaceholderOrDrainAnotherUserWroteIsNotOnequeues) {
  Fixture f;
  f.options.mechanism = "placeholder";
  f.k8s_nodes = {PoolNode("n1"), PoolNode("n2")};
  f.nodes["n1"] = Node("n1");
  f.nodes["n2"] = Node("n2");
  f.nodes["n2"].state_flags = {"DRAIN"};
  f.nodes["n2"].reason = "onequeue:kubernetes";
  f.nodes["n2"].reason_set_by_user = "mallory";
  SlurmJob forged = Job(9, JobState::kRunning, "reclaim");
  forged.name = "onequeue-placeholder-n1";
  forged.comment = "onequeue:kubernetes";
  forged.user = "mallory";
  forged.nodes = {"n1"};
  f.jobs[9] = forged;
  auto [built, records] = f.Build();
  EXPECT_EQ(records.nodes.at("n1").holder.holder, slurm::NodeHolder::kSlurm);
  ASSERT_EQ(built.snapshot->running.size(), 1u);  // counted as the load it is
  EXPECT_EQ(built.snapshot->running[0].id, "slurm/9");
  EXPECT_EQ(records.nodes.at("n2").holder.holder, slurm::NodeHolder::kAdmin);
  EXPECT_FALSE(records.nodes.at("n2").slurm_usable);
}

// Issue 25: nodes of a partition set `sharing: shared` are queue-shared, and there a running job
// holds what Slurm allocated it on that node (CPUs, memory, GPUs), not its request; a job whose
// allocation Slurm's answer did not give holds the whole node. Exclusive nodes are unchanged.
slurm::JobAllocation AllocationOn(const std::string& node, uint32_t cpus, int64_t mem_mb, int64_t gpus) {
  slurm::JobAllocation a;
  slurm::NodeAllocation n;
  n.node = node;
  n.cpus = cpus;
  n.memory_mb = mem_mb;
  if (gpus > 0) n.gres = {{"gpu", gpus}};
  a.nodes.push_back(n);
  return a;
}

TEST(SlurmWorldSharingTest, OnASharedNodeARunningJobHoldsExactlyWhatSlurmAllocatedThere) {
  Fixture f;
  f.options.sharing_partitions = {"pool"};
  f.k8s_nodes = {PoolNode("n1"), PoolNode("n2")};
  f.nodes["n1"] = Node("n1");
  f.nodes["n2"] = Node("n2");
  f.jobs[1] = Job(1, JobState::kRunning);  // asks 4 CPUs, 1000 MB, 2 GPUs per node
  f.jobs[1].nodes = {"n1"};
  f.jobs[1].allocation = AllocationOn("n1", 2, 300, 1);
  f.jobs[2] = Job(2, JobState::kRunning);
  f.jobs[2].nodes = {"n2"};
  f.jobs[2].allocation.error = "job 2: cannot read its allocation per node (no job_resources)";
  auto [built, records] = f.Build();
  const queue::Snapshot& snap = *built.snapshot;
  EXPECT_EQ(snap.nodes[0].sharing, queue::NodeSharing::kShared);
  EXPECT_EQ(snap.nodes[1].sharing, queue::NodeSharing::kShared);
  ASSERT_EQ(snap.running.size(), 2u);
  const int gpu = snap.resource_names.IndexOf("nvidia.com/gpu");
  ASSERT_GE(gpu, 0);
  const queue::Resources& exact = snap.running[0].allocations.at(0).used;
  EXPECT_EQ(exact[queue::kCpu], 2000);
  EXPECT_EQ(exact[queue::kMemory], 300LL * 1024 * 1024);
  EXPECT_EQ(exact[gpu], 1);
  // Unreadable: the whole node, so nothing is planned beside a job of unknown size.
  const queue::Resources& whole = snap.running[1].allocations.at(0).used;
  EXPECT_EQ(whole[queue::kCpu], snap.nodes[1].allocatable[queue::kCpu]);
  EXPECT_EQ(whole[queue::kMemory], snap.nodes[1].allocatable[queue::kMemory]);
  EXPECT_EQ(whole[gpu], 4);
}

TEST(SlurmWorldSharingTest, ExclusiveIsTheDefaultAndTheStricterPartitionWins) {
  for (const bool opted_in : {false, true}) {
    SCOPED_TRACE(opted_in ? "pool shared, other exclusive" : "no sharing set");
    Fixture f;
    f.options.shared_partitions = {"pool", "other"};
    if (opted_in) f.options.sharing_partitions = {"pool"};
    f.k8s_nodes = {PoolNode("n1"), PoolNode("n2"), PoolNode("n3")};
    f.nodes["n1"] = Node("n1", {"pool", "reclaim"});
    f.nodes["n2"] = Node("n2", {"pool", "other"});  // in an exclusive shared partition too
    f.nodes["n3"] = Node("n3", {"private"});        // in no partition onequeue shares
    f.jobs[1] = Job(1, JobState::kRunning);
    f.jobs[1].nodes = {"n2"};
    f.jobs[1].allocation = AllocationOn("n2", 2, 300, 1);
    auto [built, records] = f.Build();
    const queue::Snapshot& snap = *built.snapshot;
    EXPECT_EQ(snap.nodes[0].sharing, opted_in ? queue::NodeSharing::kShared : queue::NodeSharing::kExclusive);
    EXPECT_EQ(snap.nodes[1].sharing, queue::NodeSharing::kExclusive);
    EXPECT_EQ(snap.nodes[2].sharing, queue::NodeSharing::kExclusive);
    // On an exclusive node a running job holds its request per node, as before issue 25.
    ASSERT_EQ(snap.running.size(), 1u);
    EXPECT_EQ(snap.running[0].allocations.at(0).used[queue::kCpu], 4000);
    EXPECT_EQ(snap.running[0].allocations.at(0).used[queue::kMemory], 1000LL * 1024 * 1024);
  }
}

// Issue 25 step 4: a shared node is never lent whole, so the hysteresis and the headroom
// (not_lendable) do not keep Slurm's jobs off it while pods run there; an exclusive node beside
// keeps them.
TEST(SlurmWorldSharingTest, ASharedNodeStaysLendableWhilePodsUseIt) {
  Fixture f;
  f.options.shared_partitions = {"pool", "other"};
  f.options.sharing_partitions = {"pool"};
  f.k8s_nodes = {PoolNode("n1"), PoolNode("n2")};
  f.nodes["n1"] = Node("n1", {"pool"});
  f.nodes["n2"] = Node("n2", {"other"});
  f.options.not_lendable = {"n1", "n2"};  // pods used both a moment ago
  auto [built, records] = f.Build();
  ASSERT_EQ(built.snapshot->nodes[0].sharing, queue::NodeSharing::kShared);
  EXPECT_EQ(built.snapshot->nodes[0].labels.count(kLendableLabel), 1u);
  EXPECT_EQ(built.snapshot->nodes[1].labels.count(kLendableLabel), 0u);
}

// Issue 25 step 4: a job holding a sub-node preemption claim counts on its node as running (as a
// start not yet seen does) but is never preemptible; since G3's fix (seed 5086) neither is a start
// not yet seen on a shared node (a requeue would miss it and Slurm would start it into the room).
TEST(SlurmWorldSharingTest, AJobHoldingAClaimCountsOnItsNodeButIsNoVictim) {
  Fixture f;
  f.options.sharing_partitions = {"pool"};
  f.k8s_nodes = {PoolNode("n1")};
  f.nodes["n1"] = Node("n1");
  f.jobs[1] = Job(1, JobState::kPending);
  f.jobs[2] = Job(2, JobState::kPending);
  f.options.assumed_starts = {{1, {"n1"}}, {2, {"n1"}}};
  f.options.claimed_jobs = {1};
  auto [built, records] = f.Build();
  const queue::Snapshot& snap = *built.snapshot;
  EXPECT_TRUE(snap.pending.empty());
  ASSERT_EQ(snap.running.size(), 2u);
  for (const queue::RunningWorkload& r : snap.running) {
    ASSERT_EQ(r.allocations.size(), 1u);
    EXPECT_EQ(r.allocations[0].used[queue::kCpu], 4000) << r.id;
    EXPECT_FALSE(r.preemptible) << r.id;
  }
}

// Issue 25 tenancy: a node of a shared-same-tenant partition is shared and same-tenant (the
// stricter wins beside a plain shared partition); a plain shared node is not; every Slurm workload
// carries the tenant of its account, an unlisted account being a tenant of its own.
TEST(SlurmWorldSharingTest, ASameTenantPartitionMarksItsNodesAndGivesJobsTheirTenant) {
  Fixture f;
  f.options.shared_partitions = {"pool", "other"};
  f.options.sharing_partitions = {"pool", "other"};
  f.options.same_tenant_partitions = {"pool"};
  f.options.tenants.tenants = {{"physics", {"phys"}, {"physics"}}};
  f.k8s_nodes = {PoolNode("n1"), PoolNode("n2")};
  f.nodes["n1"] = Node("n1", {"pool", "other"});
  f.nodes["n2"] = Node("n2", {"other"});
  f.jobs[1] = Job(1, JobState::kRunning);  // account physics
  f.jobs[1].nodes = {"n1"};
  f.jobs[2] = Job(2, JobState::kPending);
  f.jobs[2].account = "chem";
  auto [built, records] = f.Build();
  const queue::Snapshot& snap = *built.snapshot;
  EXPECT_EQ(snap.nodes[0].sharing, queue::NodeSharing::kShared);
  EXPECT_TRUE(snap.nodes[0].same_tenant);
  EXPECT_EQ(snap.nodes[1].sharing, queue::NodeSharing::kShared);
  EXPECT_FALSE(snap.nodes[1].same_tenant);
  ASSERT_EQ(snap.running.size(), 1u);
  EXPECT_EQ(snap.running[0].tenant, "physics");
  ASSERT_EQ(snap.pending.size(), 1u);
  EXPECT_EQ(snap.pending[0].tenant, "account/chem");
}

TEST(SlurmWorldSharingTest, OptionsComeFromTheConfig) {
  Config c;
  c.slurm.shared_partitions = {"a", "b", "c"};
  c.slurm.partition_sharing = {{"a", "shared"}, {"b", "exclusive"}};
  EXPECT_EQ(SlurmWorldOptionsOf(c).sharing_partitions, std::set<std::string>{"a"});
}

TEST(SlurmWorldTest, WorkloadIds) {
  EXPECT_EQ(SlurmJobOf("slurm/42"), 42u);
  EXPECT_EQ(SlurmJobOf("ns/pod"), std::nullopt);
  EXPECT_EQ(SlurmJobOf("slurm/x"), std::nullopt);
  EXPECT_EQ(SlurmWorkloadId(42), "slurm/42");
}

}  // namespace
}  // namespace onequeue::scheduler

// Kubernetes objects in -> the queue's snapshot out: pool membership, resources, owners, gangs
// and every annotation a user can get wrong.
#include "scheduler/snapshot_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "nlohmann/json.hpp"
#include "queue/planner.h"
#include "queue/preemption.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;

k8s::Node MakeNode(const std::string& name, json labels = {{"onequeue.io/pool", "a"}},
                   json annotations = json::object(), bool ready = true) {
  json j = {{"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
            {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "2"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
  return *k8s::Node::FromJson(j);
}

k8s::Pod MakePod(const std::string& name, json annotations = json::object(), std::string node = "",
                 std::string cpu = "1", std::string scheduler = "onequeue") {
  json j = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"annotations", annotations},
                          {"creationTimestamp", "2026-11-21T10:00:00Z"}}},
            {"spec", {{"schedulerName", scheduler},
                      {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", "1Gi"}}}}}}})}}},
            {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) j["spec"]["nodeName"] = node;
  return *k8s::Pod::FromJson(j);
}

SnapshotOptions Options() {
  SnapshotOptions o;
  o.known_qos = {"interactive", "batch"};
  return o;
}

TEST(SnapshotBuilderTest, PoolNodesWithResourcesOwnersAndReadiness) {
  auto built = BuildSnapshot({MakeNode("n1"), MakeNode("other", {{"role", "x"}}),
                              MakeNode("n2", {{"onequeue.io/pool", "a"}}, {{"onequeue.io/owner", "reserved/ns/p"}}),
                              MakeNode("n3", {{"onequeue.io/pool", "a"}}, json::object(), false)},
                             {}, Options(), 0);
  const auto& s = *built.snapshot;
  ASSERT_EQ(s.nodes.size(), 3u);
  EXPECT_EQ(s.nodes[0].name, "n1");
  EXPECT_EQ(s.nodes[0].allocatable[queue::kCpu], 4000);
  EXPECT_EQ(s.nodes[0].allocatable[queue::kMemory], 32LL << 30);
  const int gpu = s.resource_names.IndexOf("nvidia.com/gpu");
  ASSERT_GE(gpu, queue::kFirstExtended);
  EXPECT_EQ(s.nodes[0].allocatable[gpu], 2);
  EXPECT_EQ(s.nodes[0].owner.kind, queue::OwnerKind::kKubernetes);
  EXPECT_EQ(s.nodes[1].owner.kind, queue::OwnerKind::kReserved);
  EXPECT_EQ(s.nodes[1].owner.reserved_for, "ns/p");
  EXPECT_FALSE(s.nodes[2].schedulable);
}

// A DaemonSet pod runs on every node: it takes capacity but is no tenant's workload, so it never
// makes a node Kubernetes' (a node running only node-exporter is still free to lend).
TEST(SnapshotBuilderTest, DaemonSetPodsReduceCapacityButAreNoWorkload) {
  k8s::Pod daemon = MakePod("exporter-x", json::object(), "n1", "500m", "default-scheduler");
  daemon.metadata.owner_references.push_back({"apps/v1", "DaemonSet", "exporter", "uid-1", true});
  const BuiltSnapshot b = BuildSnapshot({MakeNode("n1")}, {daemon}, Options(), 0);
  EXPECT_TRUE(b.snapshot->running.empty());
  EXPECT_EQ(b.snapshot->nodes[0].allocatable[queue::kCpu], 3500);
  EXPECT_EQ(b.snapshot->nodes[0].allocatable[queue::kPods], 109);
}

// A pod that waited long before it was bound runs its time limit from the binding, not from its
// creation (found by the one-queue benchmark: such pods looked overdue).
TEST(SnapshotBuilderTest, ARunningPodsTimeLimitCountsFromItsBinding) {
  k8s::Pod p = MakePod("late", {{"onequeue.io/time-limit", "1h"}}, "n1");
  p.conditions.push_back({"PodScheduled", "True", "", "", "2026-11-23T10:00:00Z"});  // a day after creation
  const BuiltSnapshot b = BuildSnapshot({MakeNode("n1")}, {p}, Options(), 0);
  ASSERT_EQ(b.snapshot->running.size(), 1u);
  EXPECT_EQ(b.snapshot->running[0].start_time, ParseTimestamp("2026-11-23T10:00:00Z"));
  EXPECT_EQ(b.snapshot->running[0].expected_end, ParseTimestamp("2026-11-23T11:00:00Z"));
}

// The records a cycle reads are the same whether parsed now or when the informer delivered them.
TEST(SnapshotBuilderTest, RecordsParsedOnceGiveTheSameSnapshot) {
  std::vector<k8s::Node> nodes = {MakeNode("n1"), MakeNode("n2")};
  std::vector<k8s::Pod> pods = {MakePod("a", {{"onequeue.io/qos", "batch"}}), MakePod("b", json::object(), "n1"),
                                MakePod("g0", {{"onequeue.io/group", "g"}, {"onequeue.io/group-size", "2"}})};
  const BuiltSnapshot direct = BuildSnapshot(nodes, pods, Options(), 0);
  const KubeState state = ToKubeState(nodes, pods);
  const BuiltSnapshot from_records = BuildSnapshot(state, Options(), 0);
  ASSERT_EQ(direct.snapshot->pending.size(), from_records.snapshot->pending.size());
  for (size_t i = 0; i < direct.snapshot->pending.size(); ++i) {
    EXPECT_EQ(direct.snapshot->pending[i].id, from_records.snapshot->pending[i].id);
    EXPECT_EQ(direct.snapshot->pending[i].per_member, from_records.snapshot->pending[i].per_member);
    EXPECT_EQ(direct.snapshot->pending[i].members, from_records.snapshot->pending[i].members);
  }
  ASSERT_EQ(direct.snapshot->running.size(), from_records.snapshot->running.size());
  EXPECT_EQ(direct.snapshot->running[0].id, from_records.snapshot->running[0].id);
}

TEST(SnapshotBuilderTest, PoolLabelWithValueSelectsOnlyThatPool) {
  SnapshotOptions o = Options();
  o.pool_label = "onequeue.io/pool=b";
  auto built = BuildSnapshot({MakeNode("n1"), MakeNode("n2", {{"onequeue.io/pool", "b"}})}, {}, o, 0);
  ASSERT_EQ(built.snapshot->nodes.size(), 1u);
  EXPECT_EQ(built.snapshot->nodes[0].name, "n2");
}

TEST(SnapshotBuilderTest, RunningAndPendingPodsAndOtherSchedulers) {
  SnapshotOptions o = Options();
  o.assumed_bindings["ns/assumed"] = "n1";
  auto built = BuildSnapshot({MakeNode("n1")},
                             {MakePod("runs", {}, "n1", "2"), MakePod("waits"), MakePod("assumed"),
                              MakePod("default-sched", {}, "", "1", "default-scheduler"),
                              MakePod("elsewhere", {}, "not-in-pool")},
                             o, 0);
  const auto& s = *built.snapshot;
  ASSERT_EQ(s.running.size(), 2u);
  EXPECT_EQ(s.running[1].id, "ns/runs");
  EXPECT_EQ(s.running[1].allocations[0].used[queue::kCpu], 2000);
  EXPECT_EQ(s.running[0].id, "ns/assumed");
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].id, "ns/waits");
  EXPECT_EQ(s.pending[0].per_member[queue::kCpu], 1000);
  EXPECT_EQ(s.pending[0].per_member[queue::kPods], 1);
  EXPECT_EQ(s.pending[0].account, "ns");
  EXPECT_FALSE(s.pending[0].time_limit.has_value());
  EXPECT_EQ(s.pending[0].submit_time, 1795255200);  // 2026-11-21T10:00:00Z
}

// Issue 28: a running pod without a QOS annotation (and no namespace default) carries its
// PriorityClass value (0 without one) for kube-scheduler's preemption rule; one with a QOS does not.
TEST(SnapshotBuilderTest, ARunningPodWithoutQosCarriesItsPriorityClassForPreemption) {
  k8s::Pod classed = MakePod("classed", {}, "n1", "1");
  classed.priority = 7;
  auto built = BuildSnapshot({MakeNode("n1")},
                             {classed, MakePod("plain", {}, "n1", "1"),
                              MakePod("qos", {{"onequeue.io/qos", "batch"}}, "n1", "1")},
                             Options(), 0);
  std::map<std::string, std::optional<int32_t>> class_of;
  for (const queue::RunningWorkload& r : built.snapshot->running) class_of[r.id] = r.class_priority;
  EXPECT_EQ(class_of["ns/classed"], std::optional<int32_t>(7));
  EXPECT_EQ(class_of["ns/plain"], std::optional<int32_t>(0));
  EXPECT_EQ(class_of["ns/qos"], std::nullopt);
}

// Issue 25 step 4: a pod holding a sub-node preemption claim (assumed on its node while its
// victims leave) counts there as running but is never a victim; the other assumed pod is.
TEST(SnapshotBuilderTest, APodHoldingAClaimCountsOnItsNodeButIsNoVictim) {
  SnapshotOptions o = Options();
  o.assumed_bindings["ns/claiming"] = "n1";
  o.assumed_bindings["ns/assumed"] = "n1";
  o.claims.insert("ns/claiming");
  auto built = BuildSnapshot({MakeNode("n1")}, {MakePod("claiming"), MakePod("assumed")}, o, 0);
  const auto& s = *built.snapshot;
  ASSERT_EQ(s.running.size(), 2u);
  EXPECT_TRUE(s.pending.empty());
  for (const queue::RunningWorkload& r : s.running) EXPECT_EQ(r.preemptible, r.id != "ns/claiming") << r.id;
}

// Issue 25 G7: a gang's pod holding a claim (its placeholder under way) is one of the gang's
// running pods, but not one a preemptor of the gang asks to leave; its bound member is.
TEST(SnapshotBuilderTest, AGangsPodHoldingAClaimIsNoVictimPodOfTheGang) {
  json g = {{"onequeue.io/group", "train"}, {"onequeue.io/group-size", "2"}};
  SnapshotOptions o = Options();
  o.assumed_bindings["ns/w-1"] = "n1";
  o.claims.insert("ns/w-1");
  auto built = BuildSnapshot({MakeNode("n1")}, {MakePod("w-0", g, "n1", "1"), MakePod("w-1", g)}, o, 0);
  ASSERT_EQ(built.running_pods.size(), 1u);
  const WorkloadPods& gang = built.running_pods.begin()->second;
  EXPECT_EQ(gang.pod_keys.size(), 2u);
  EXPECT_EQ(gang.VictimPodKeys(), std::vector<std::string>{"ns/w-0"});
}

// Issue 25 tenancy: with SnapshotOptions::tenancy every pod workload, running or pending, carries
// the tenant of its namespace (an unlisted namespace a tenant of its own); without it none.
TEST(SnapshotBuilderTest, PodsCarryTheTenantOfTheirNamespace) {
  SharingConfig sharing;
  sharing.tenants = {{"physics", {"ns"}, {"physics"}}};
  SnapshotOptions o = Options();
  o.tenancy = &sharing;
  k8s::Pod other = MakePod("other");
  other.metadata.namespace_ = "chem";
  auto built = BuildSnapshot({MakeNode("n1")}, {MakePod("runs", {}, "n1", "2"), MakePod("waits"), other}, o, 0);
  const auto& s = *built.snapshot;
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_EQ(s.running[0].tenant, "physics");
  ASSERT_EQ(s.pending.size(), 2u);
  for (const queue::PendingWorkload& w : s.pending)
    EXPECT_EQ(w.tenant, w.id == "ns/waits" ? "physics" : "namespace/chem") << w.id;
  auto plain = BuildSnapshot({MakeNode("n1")}, {MakePod("waits")}, Options(), 0);
  EXPECT_EQ(plain.snapshot->pending.at(0).tenant, "");
}

TEST(SnapshotBuilderTest, GangMembersFormOneWorkload) {
  json g = {{"onequeue.io/group", "train"}, {"onequeue.io/group-size", "3"}, {"onequeue.io/time-limit", "2h"}};
  auto built = BuildSnapshot({MakeNode("n1")}, {MakePod("w-1", g), MakePod("w-0", g)}, Options(), 0);
  const auto& s = *built.snapshot;
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].id, "ns/group/train");
  EXPECT_EQ(s.pending[0].members, 3);
  EXPECT_EQ(s.pending[0].members_present, 2);
  EXPECT_EQ(s.pending[0].time_limit, 7200);
  EXPECT_THAT(built.pending_pods["ns/group/train"].pod_keys, ::testing::ElementsAre("ns/w-0", "ns/w-1"));
}

TEST(SnapshotBuilderTest, BadAnnotationsBecomeAdmissionErrorsNotCrashes) {
  auto built = BuildSnapshot({MakeNode("n1")},
                             {MakePod("a", {{"onequeue.io/time-limit", "soon"}}),
                              MakePod("b", {{"onequeue.io/qos", "platinum"}}),
                              MakePod("c", {{"onequeue.io/group", "g"}, {"onequeue.io/group-size", "-4"}}),
                              MakePod("d", {{"onequeue.io/qos", "interactive"}, {"onequeue.io/time-limit", "90"}})},
                             Options(), 0);
  std::map<std::string, const queue::PendingWorkload*> p;
  for (const auto& w : built.snapshot->pending) p[w.id] = &w;
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p["ns/a"]->admission_error, queue::AdmissionError::kInvalidAnnotation);
  EXPECT_THAT(p["ns/a"]->admission_message, ::testing::HasSubstr("\"soon\" is not a positive duration"));
  EXPECT_EQ(p["ns/b"]->admission_error, queue::AdmissionError::kQosNotAllowed);
  EXPECT_EQ(p["ns/group/g"]->admission_error, queue::AdmissionError::kInvalidAnnotation);
  EXPECT_EQ(p["ns/d"]->admission_error, queue::AdmissionError::kNone);
  EXPECT_EQ(p["ns/d"]->time_limit, 90);
}

// A Slinky-style worker keeps off nodes where an interactive app runs (required podAntiAffinity,
// hostname topology): its placement rules allow only the others. A namespaceSelector with labels
// is refused with a reason, never silently ignored (more: inter_pod_placement_test.cc).
TEST(SnapshotBuilderTest, RequiredPodAntiAffinityKeepsThePodOffNodesWithMatchingPods) {
  auto labelled = [](k8s::Pod p, json labels, std::string ns = "ns") {
    p.metadata.labels = labels.get<k8s::StringMap>();
    p.metadata.namespace_ = ns;
    return p;
  };
  json anti = {{"podAntiAffinity",
                {{"requiredDuringSchedulingIgnoredDuringExecution",
                  json::array({{{"labelSelector", {{"matchExpressions", json::array({{{"key", "app"},
                                                                                     {"operator", "In"},
                                                                                     {"values", {"jupyter"}}}})}}},
                                {"topologyKey", "kubernetes.io/hostname"}}})}}}};
  json wj = {{"metadata", {{"name", "worker"}, {"namespace", "ns"}, {"creationTimestamp", "2026-11-21T10:00:00Z"}}},
             {"spec", {{"schedulerName", "onequeue"}, {"affinity", anti}, {"containers", json::array({{{"name", "c"}}})}}}};
  k8s::Pod worker = *k8s::Pod::FromJson(wj);
  auto host = [](const char* name) { return MakeNode(name, {{"onequeue.io/pool", "a"}, {"kubernetes.io/hostname", name}}); };
  auto built = BuildSnapshot({host("n1"), host("n2"), host("n3")},
                             {worker, labelled(MakePod("app", {}, "n1"), {{"app", "jupyter"}}),
                              labelled(MakePod("other", {}, "n2"), {{"app", "web"}}),
                              labelled(MakePod("elsewhere", {}, "n3"), {{"app", "jupyter"}}, "other-ns")},
                             Options(), 0);
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  const auto& w = built.snapshot->pending[0];
  EXPECT_EQ(w.admission_error, queue::AdmissionError::kNone);
  ASSERT_NE(w.placement, nullptr);
  const queue::Snapshot& s = *built.snapshot;
  EXPECT_THAT(queue::NodesAllowedByRules(s.nodes, s.topologies, s.pod_counts, *w.placement),
              ::testing::ElementsAre(0, 1, 1));

  wj["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["namespaceSelector"] =
      {{"matchLabels", {{"team", "a"}}}};
  built = BuildSnapshot({MakeNode("n1")}, {*k8s::Pod::FromJson(wj)}, Options(), 0);
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  EXPECT_EQ(built.snapshot->pending[0].admission_error, queue::AdmissionError::kInvalidAnnotation);
  EXPECT_THAT(built.snapshot->pending[0].admission_message, ::testing::HasSubstr("namespaceSelector"));
}

TEST(SnapshotBuilderTest, TimeLimitParsing) {
  EXPECT_EQ(*ParseTimeLimit("1h30m"), 5400);
  EXPECT_EQ(*ParseTimeLimit("45"), 45);
  EXPECT_FALSE(ParseTimeLimit("0").ok());
  EXPECT_FALSE(ParseTimeLimit("-5m").ok());
  EXPECT_FALSE(ParseTimeLimit("").ok());
}

// Issue 13 defect 9: a limit that overflows queue::Time arithmetic (2^63 s, or anything past a
// century, in any form) is InvalidAnnotation with its reason, never a start time past int64.
TEST(SnapshotBuilderTest, TimeLimitsThatWouldOverflowAreInvalidAnnotations) {
  for (const char* text : {"9223372036854775808", "9223372036854775807", "inf", "2562047788015215h",
                           "3153600001"}) {
    SCOPED_TRACE(text);
    auto tl = ParseTimeLimit(text);
    ASSERT_FALSE(tl.ok()) << *tl;
    EXPECT_THAT(std::string(tl.status().message()), ::testing::HasSubstr("longer than 100 years"));
  }
  EXPECT_FALSE(ParseTimeLimit("99999999999999999999999h").ok());
  EXPECT_FALSE(ParseTimeLimit("9223372036854775808s").ok());
  EXPECT_EQ(*ParseTimeLimit("3153600000"), kMaxTimeLimitSeconds);
  EXPECT_EQ(*ParseTimeLimit("876000h"), kMaxTimeLimitSeconds);

  auto built = BuildSnapshot({MakeNode("n1")}, {MakePod("huge", {{"onequeue.io/time-limit", "9223372036854775808"}})},
                             Options(), 1'800'000'000);
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  EXPECT_EQ(built.snapshot->pending[0].admission_error, queue::AdmissionError::kInvalidAnnotation);
  EXPECT_THAT(built.snapshot->pending[0].admission_message,
              ::testing::HasSubstr("onequeue.io/time-limit: time limit \"9223372036854775808\" is longer than 100 years"));

  // A running pod with such an annotation (bound by another scheduler) has no expected end, not
  // one past int64; a huge activeDeadlineSeconds (Kubernetes takes any positive int64) is capped.
  k8s::Pod running = MakePod("old", {{"onequeue.io/time-limit", "9223372036854775807"}}, "n1");
  k8s::Pod deadline = MakePod("deadline", json::object(), "n1");
  deadline.active_deadline_seconds = std::numeric_limits<int64_t>::max();
  const BuiltSnapshot b = BuildSnapshot({MakeNode("n1", {{"onequeue.io/pool", "a"}})}, {running, deadline}, Options(),
                                        1'800'000'000);
  ASSERT_EQ(b.snapshot->running.size(), 2u);
  for (const auto& r : b.snapshot->running) {
    SCOPED_TRACE(r.id);
    if (r.expected_end) EXPECT_GT(*r.expected_end, r.start_time);
  }
}

// --- PodDisruptionBudgets (issue 13 defect 7) --------------------------------------------------

k8s::PodDisruptionBudget MakeBudget(const std::string& name, json selector, int allowed, int64_t generation = 1,
                                    int64_t observed = 1) {
  json j = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"generation", generation}}},
            {"spec", {{"minAvailable", 1}}},
            {"status", {{"disruptionsAllowed", allowed}, {"observedGeneration", observed}}}};
  if (!selector.is_null()) j["spec"]["selector"] = selector;
  return *k8s::PodDisruptionBudget::FromJson(j);
}

k8s::Pod Labelled(k8s::Pod pod, k8s::StringMap labels) {
  pod.metadata.labels = std::move(labels);
  return pod;
}

// Two full nodes, each running one batch pod; an interactive pod needs a whole node. Without a
// budget the cheapest victim is "guarded" (it started later: less run time lost).
struct BudgetScenario {
  queue::QueueConfig config;
  std::vector<k8s::Node> nodes = {MakeNode("n1"), MakeNode("n2")};
  std::vector<k8s::Pod> pods;

  BudgetScenario() {
    config.qos = {{"interactive", 100, false, {"batch"}, 0}, {"batch", 10, true, {}, 0}};
    k8s::Pod guarded = Labelled(MakePod("guarded", {{"onequeue.io/qos", "batch"}}, "n1", "4"), {{"app", "db"}});
    guarded.metadata.creation_timestamp = "2026-11-21T11:00:00Z";
    pods = {guarded, MakePod("plain", {{"onequeue.io/qos", "batch"}}, "n2", "4"),
            MakePod("urgent", {{"onequeue.io/qos", "interactive"}}, "", "4")};
  }

  BuiltSnapshot Build(const std::vector<k8s::PodDisruptionBudget>& budgets) const {
    SnapshotOptions o = Options();
    o.queue_config = &config;
    return BuildSnapshot(nodes, pods, o, ParseTimestamp("2026-11-21T12:00:00Z"), budgets);
  }

  // The victims of the one preemption planned, or {} when none is.
  std::vector<std::string> Victims(const std::vector<k8s::PodDisruptionBudget>& budgets) const {
    const BuiltSnapshot built = Build(budgets);
    queue::CheapestVictimsPlanner preemption;
    queue::QueuePlanner planner(config, &preemption);
    const queue::Plan plan = planner.PlanCycle(built.snapshot, ParseTimestamp("2026-11-21T12:00:00Z"));
    if (plan.preemptions.empty()) return {};
    EXPECT_EQ(plan.preemptions.size(), 1u);
    return plan.preemptions[0].victims;
  }
};

TEST(SnapshotBuilderTest, BudgetsGroupRunningPodsAndSayHowManyMayGo) {
  BudgetScenario s;
  const BuiltSnapshot b = s.Build({MakeBudget("db-pdb", {{"matchLabels", {{"app", "db"}}}}, 0),
                                   MakeBudget("none", nullptr, 5),                  // no selector: no pod
                                   MakeBudget("other", {{"matchLabels", {{"app", "web"}}}}, 2)});
  ASSERT_EQ(b.snapshot->running.size(), 2u);
  EXPECT_EQ(b.snapshot->running[0].id, "ns/guarded");
  EXPECT_EQ(b.snapshot->running[0].disruption_budget_group, "ns/db-pdb");
  EXPECT_EQ(b.snapshot->running[1].disruption_budget_group, "");
  EXPECT_EQ(b.snapshot->disruptions_allowed.at("ns/db-pdb"), 0);
  EXPECT_EQ(b.snapshot->disruptions_allowed.at("ns/other"), 2);

  // matchExpressions, and an empty selector (every pod of the namespace).
  const BuiltSnapshot e = s.Build(
      {MakeBudget("expr", {{"matchExpressions", json::array({{{"key", "app"}, {"operator", "In"}, {"values", {"db"}}}})}}, 1)});
  EXPECT_EQ(e.snapshot->running[0].disruption_budget_group, "ns/expr");
  EXPECT_EQ(e.snapshot->running[1].disruption_budget_group, "");
  const BuiltSnapshot all = s.Build({MakeBudget("all", json::object(), 1)});
  EXPECT_EQ(all.snapshot->running[0].disruption_budget_group, "ns/all");
  EXPECT_EQ(all.snapshot->running[1].disruption_budget_group, "ns/all");

  // A status older than the spec allows nothing (the Eviction API refuses until it catches up).
  const BuiltSnapshot stale = s.Build({MakeBudget("db-pdb", {{"matchLabels", {{"app", "db"}}}}, 3, 2, 1)});
  EXPECT_EQ(stale.snapshot->disruptions_allowed.at("ns/db-pdb"), 0);
}

TEST(SnapshotBuilderTest, PreemptionChoosesTheVictimTheBudgetsAllow) {
  BudgetScenario s;
  EXPECT_THAT(s.Victims({}), ::testing::ElementsAre("ns/guarded"));  // the cheaper one, unguarded
  // Its budget allows no disruption: the other pod goes instead (never guarded first, then a
  // refusal half-way).
  const json db = {{"matchLabels", {{"app", "db"}}}};
  EXPECT_THAT(s.Victims({MakeBudget("db-pdb", db, 0)}), ::testing::ElementsAre("ns/plain"));
  EXPECT_THAT(s.Victims({MakeBudget("db-pdb", db, 1)}), ::testing::ElementsAre("ns/guarded"));
  // Both guarded by budgets that allow nothing: no preemption at all.
  EXPECT_THAT(s.Victims({MakeBudget("all", json::object(), 0)}), ::testing::IsEmpty());
  // A pod under two budgets cannot be evicted (the Eviction API refuses it), whatever they allow.
  EXPECT_THAT(s.Victims({MakeBudget("db-pdb", db, 1), MakeBudget("all-db", db, 1)}), ::testing::ElementsAre("ns/plain"));
}

TEST(SnapshotBuilderTest, AGangUnderTwoBudgetsIsNoVictimAndOneUnderOneCountsEveryPod) {
  BudgetScenario s;
  s.nodes.push_back(MakeNode("n3"));
  const json gang = {{"onequeue.io/qos", "batch"}, {"onequeue.io/group", "g"}, {"onequeue.io/group-size", "2"}};
  // The gang holds n1 and n2, one member each; "solo" holds n3.
  k8s::Pod a = Labelled(MakePod("g-0", gang, "n1", "4"), {{"app", "a"}});
  k8s::Pod b = Labelled(MakePod("g-1", gang, "n2", "4"), {{"app", "b"}});
  a.metadata.creation_timestamp = b.metadata.creation_timestamp = "2026-11-21T11:30:00Z";
  k8s::Pod solo = MakePod("solo", {{"onequeue.io/qos", "batch"}}, "n3", "4");
  solo.metadata.creation_timestamp = "2026-11-20T00:00:00Z";
  s.pods = {a, b, solo, MakePod("urgent", {{"onequeue.io/qos", "interactive"}}, "", "4")};
  const BuiltSnapshot two = s.Build({MakeBudget("pa", {{"matchLabels", {{"app", "a"}}}}, 5),
                                     MakeBudget("pb", {{"matchLabels", {{"app", "b"}}}}, 5)});
  const queue::RunningWorkload* g = nullptr;
  for (const auto& r : two.snapshot->running) {
    if (r.id == "ns/group/g") g = &r;
  }
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->disruption_budget_group.empty());
  EXPECT_FALSE(two.snapshot->disruptions_allowed.contains(g->disruption_budget_group));
  // One budget over one member only: the gang's two pods count against it.
  const BuiltSnapshot one = s.Build({MakeBudget("pa", {{"matchLabels", {{"app", "a"}}}}, 1)});
  for (const auto& r : one.snapshot->running) {
    if (r.id == "ns/group/g") {
      EXPECT_EQ(r.disruption_budget_group, "ns/pa");
    }
  }
}

}  // namespace
}  // namespace onequeue::scheduler

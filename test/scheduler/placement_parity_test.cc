// Placement parity with kube-scheduler's filter plugins (issue 28): Kubernetes objects in, the
// queue's eligibility and plan out. Each case names the kube-scheduler plugin it follows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "queue/eligibility.h"
#include "queue/planner.h"
#include "queue/preemption.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr queue::Time kNow = 1795262400;  // 2026-11-21T12:00:00Z

json NodeJson(const std::string& name, json labels = json::object(), json extra_allocatable = json::object()) {
  labels["onequeue.io/pool"] = "a";
  json allocatable = {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}};
  allocatable.update(extra_allocatable);
  return {{"metadata", {{"name", name}, {"labels", labels}}},
          {"status", {{"allocatable", allocatable},
                      {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}
k8s::Node MakeNode(const std::string& name, json labels = json::object(), json extra_allocatable = json::object()) {
  return *k8s::Node::FromJson(NodeJson(name, std::move(labels), std::move(extra_allocatable)));
}

json PodJson(const std::string& name, json requests = {{"cpu", "1"}}) {
  return {{"metadata", {{"name", name}, {"namespace", "ns"}, {"creationTimestamp", "2026-11-21T10:00:00Z"}}},
          {"spec", {{"schedulerName", "onequeue"},
                    {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", requests}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}
k8s::Pod FromJson(const json& j) {
  auto p = k8s::Pod::FromJson(j);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

queue::Plan PlanOf(const BuiltSnapshot& built, const queue::QueueConfig& config = {}) {
  queue::CheapestVictimsPlanner preemption;
  queue::QueuePlanner planner(config, &preemption);
  return planner.PlanCycle(built.snapshot, kNow);
}

std::vector<std::string> StartedIds(const queue::Plan& plan) {
  std::vector<std::string> ids;
  for (const auto& s : plan.starts) ids.push_back(s.workload);
  std::sort(ids.begin(), ids.end());
  return ids;
}

const queue::WaitingStatus* WaitingOf(const queue::Plan& plan, const std::string& id) {
  for (const auto& w : plan.waiting) {
    if (w.workload == id) return &w;
  }
  return nullptr;
}

// Names of the nodes the workload's eligibility allows (selector, affinity, taints).
std::vector<std::string> EligibleNames(const BuiltSnapshot& built, const std::string& id) {
  const queue::EligibilityChecker checker(*built.snapshot, {});
  std::vector<std::string> names;
  for (const auto& w : built.snapshot->pending) {
    if (w.id != id) continue;
    EXPECT_EQ(w.admission_error, queue::AdmissionError::kNone) << w.admission_message;
    for (queue::NodeIndex n : checker.EligibleNodes(w, 0)) names.push_back(built.snapshot->nodes[n].name);
  }
  return names;
}

// NodeResourcesFit: ephemeral-storage and hugepages are requests like cpu; one asking more than
// any node has waits with the resource named.
TEST(PlacementParityTest, EphemeralStorageAndHugepagesAreFitLikeCpu) {
  const json disk = {{"ephemeral-storage", "100Gi"}, {"hugepages-2Mi", "1Gi"}};
  json small = {{"cpu", "1"}, {"ephemeral-storage", "10Gi"}, {"hugepages-2Mi", "512Mi"}};
  json huge = {{"cpu", "1"}, {"ephemeral-storage", "200Gi"}};
  const BuiltSnapshot built = BuildSnapshot({MakeNode("n1", {}, disk)},
                                            {FromJson(PodJson("small", small)), FromJson(PodJson("huge", huge))},
                                            SnapshotOptions(), kNow);
  const auto& s = *built.snapshot;
  const int es = s.resource_names.IndexOf("ephemeral-storage");
  const int hp = s.resource_names.IndexOf("hugepages-2Mi");
  ASSERT_GE(es, queue::kFirstExtended);
  ASSERT_GE(hp, queue::kFirstExtended);
  EXPECT_EQ(s.nodes[0].allocatable[es], 100LL << 30);
  EXPECT_EQ(s.nodes[0].allocatable[hp], 1LL << 30);
  const queue::Plan plan = PlanOf(built);
  EXPECT_THAT(StartedIds(plan), ElementsAre("ns/small"));
  const queue::WaitingStatus* w = WaitingOf(plan, "ns/huge");
  ASSERT_NE(w, nullptr);
  EXPECT_THAT(std::string(w->Message()), HasSubstr("ephemeral-storage"));
}

// NodeResourcesFit for every name: the eighth extended resource is planned like the first.
TEST(PlacementParityTest, EveryExtendedResourceIsPlannedNotOnlyTheFirstFive) {
  json extended;
  for (int i = 0; i < 8; ++i) extended["example.com/r" + std::to_string(i)] = "1";
  const BuiltSnapshot built =
      BuildSnapshot({MakeNode("n1", {}, extended)},
                    {FromJson(PodJson("fits", {{"cpu", "1"}, {"example.com/r7", "1"}})),
                     FromJson(PodJson("too-many", {{"cpu", "1"}, {"example.com/r7", "2"}}))},
                    SnapshotOptions(), kNow);
  EXPECT_GE(built.snapshot->resource_names.IndexOf("example.com/r7"), queue::kFirstExtended);
  const queue::Plan plan = PlanOf(built);
  EXPECT_THAT(StartedIds(plan), ElementsAre("ns/fits"));
  const queue::WaitingStatus* w = WaitingOf(plan, "ns/too-many");
  ASSERT_NE(w, nullptr);
  EXPECT_THAT(std::string(w->Message()), HasSubstr("example.com/r7"));
}

// Past the slots the queue has, a pod asking for one more resource name is refused with the name,
// never planned as if it had not asked.
TEST(PlacementParityTest, AResourceNameBeyondTheSlotsIsRefusedWithItsName) {
  json extended;
  for (int i = 0; i < queue::kMaxResourceKinds; ++i) extended["example.com/r" + std::to_string(i)] = "1";
  std::string last;  // the name the node list gives last (allocatable is a sorted map)
  for (const auto& [name, value] : extended.items()) last = std::max(last, name);
  const BuiltSnapshot built = BuildSnapshot({MakeNode("n1", {}, extended)},
                                            {FromJson(PodJson("p", {{"cpu", "1"}, {last, "1"}}))},
                                            SnapshotOptions(), kNow);
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  EXPECT_EQ(built.snapshot->pending[0].admission_error, queue::AdmissionError::kInvalidAnnotation);
  EXPECT_THAT(built.snapshot->pending[0].admission_message, HasSubstr(last));
}

// NodeUnschedulable: a cordoned node gets nothing new.
TEST(PlacementParityTest, CordonedNodesGetNothingNew) {
  json cordoned = NodeJson("n1");
  cordoned["spec"]["unschedulable"] = true;
  const BuiltSnapshot built = BuildSnapshot({*k8s::Node::FromJson(cordoned), MakeNode("n2")},
                                            {FromJson(PodJson("p"))}, SnapshotOptions(), kNow);
  EXPECT_THAT(EligibleNames(built, "ns/p"), ElementsAre("n2"));
}

json RequiredTerms(json terms) {
  return {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution", {{"nodeSelectorTerms", terms}}}}}};
}
json Expr(const std::string& key, const std::string& op, json values = json::array()) {
  json e = {{"key", key}, {"operator", op}};
  if (!values.empty()) e["values"] = values;
  return e;
}

// NodeAffinity: Gt and Lt compare integers, matchFields names the node, terms are ORed, and
// every operator is checked.
TEST(PlacementParityTest, NodeAffinityOperatorsFieldsAndOredTerms) {
  const std::vector<k8s::Node> nodes = {MakeNode("n1", {{"cores", "4"}}), MakeNode("n2", {{"cores", "16"}}),
                                        MakeNode("n3", {{"cores", "many"}}), MakeNode("n4")};
  auto eligible = [&](json terms) {
    json p = PodJson("p");
    p["spec"]["affinity"] = RequiredTerms(std::move(terms));
    return EligibleNames(BuildSnapshot(nodes, {FromJson(p)}, SnapshotOptions(), kNow), "ns/p");
  };
  auto term = [](json exprs, json fields = json::array()) {
    json t = {{"matchExpressions", exprs}};
    if (!fields.empty()) t["matchFields"] = fields;
    return t;
  };
  EXPECT_THAT(eligible({term({Expr("cores", "Gt", {"8"})})}), ElementsAre("n2"));
  // The planner honours it too (its eligibility classes tell the rules apart).
  json big = PodJson("big");
  big["spec"]["affinity"] = RequiredTerms({term({Expr("cores", "Gt", {"8"})})});
  json named = PodJson("named");
  named["spec"]["affinity"] = RequiredTerms({term(json::array(), {Expr("metadata.name", "In", {"n4"})})});
  const BuiltSnapshot built = BuildSnapshot(nodes, {FromJson(big), FromJson(named)}, SnapshotOptions(), kNow);
  const queue::Plan plan = PlanOf(built);
  ASSERT_EQ(plan.starts.size(), 2u);
  for (const auto& s : plan.starts) {
    ASSERT_EQ(s.member_nodes.size(), 1u);
    EXPECT_EQ(built.snapshot->nodes[s.member_nodes[0]].name, s.workload == "ns/big" ? "n2" : "n4") << s.workload;
  }
  EXPECT_THAT(eligible({term({Expr("cores", "Lt", {"8"})})}), ElementsAre("n1"));
  EXPECT_THAT(eligible({term({Expr("cores", "In", {"4", "many"})})}), ElementsAre("n1", "n3"));
  EXPECT_THAT(eligible({term({Expr("cores", "NotIn", {"4"})})}), ElementsAre("n2", "n3", "n4"));
  EXPECT_THAT(eligible({term({Expr("cores", "Exists")})}), ElementsAre("n1", "n2", "n3"));
  EXPECT_THAT(eligible({term({Expr("cores", "DoesNotExist")})}), ElementsAre("n4"));
  EXPECT_THAT(eligible({term(json::array(), {Expr("metadata.name", "In", {"n3"})})}), ElementsAre("n3"));
  EXPECT_THAT(eligible({term({Expr("cores", "Exists")}, {Expr("metadata.name", "NotIn", {"n1"})})}),
              ElementsAre("n2", "n3"));
  // Several terms: any one of them.
  EXPECT_THAT(eligible({term({Expr("cores", "Gt", {"8"})}), term(json::array(), {Expr("metadata.name", "In", {"n4"})})}),
              ElementsAre("n2", "n4"));
}

json WithHostPort(json pod, int port, const std::string& protocol = "TCP") {
  pod["spec"]["containers"][0]["ports"] = json::array({{{"containerPort", port}, {"hostPort", port}, {"protocol", protocol}}});
  return pod;
}

// NodePorts: two pods asking one hostPort/protocol never share a node, within one cycle and
// against a pod already bound (whoever bound it).
// Issue 28, NodeAffinity score: preferred terms break the tie between equal nodes (the sum of
// the weights of the terms a node matches); without them the pod takes the first node.
TEST(PlacementParityTest, PreferredNodeAffinityBreaksTiesBetweenEqualNodes) {
  const std::vector<k8s::Node> nodes = {MakeNode("n1", {{"disk", "hdd"}}), MakeNode("n2", {{"disk", "ssd"}}),
                                        MakeNode("n3", {{"disk", "ssd"}, {"zone", "b"}})};
  json p = PodJson("p");
  p["spec"]["affinity"] = {{"nodeAffinity", {{"preferredDuringSchedulingIgnoredDuringExecution",
      json::array({{{"weight", 10}, {"preference", {{"matchExpressions", json::array({Expr("disk", "In", {"ssd"})})}}}},
                   {{"weight", 5}, {"preference", {{"matchExpressions", json::array({Expr("zone", "In", {"b"})})}}}}})}}}};
  const BuiltSnapshot built = BuildSnapshot(nodes, {FromJson(p)}, SnapshotOptions(), kNow);
  ASSERT_NE(built.snapshot->pending.front().node_preference, nullptr);
  queue::Plan plan = PlanOf(built);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(built.snapshot->nodes[plan.starts[0].member_nodes[0]].name, "n3");
  const BuiltSnapshot plain = BuildSnapshot(nodes, {FromJson(PodJson("p"))}, SnapshotOptions(), kNow);
  EXPECT_EQ(plain.snapshot->pending.front().node_preference, nullptr);
}

// Issue 28, TaintToleration score: a PreferNoSchedule taint never excludes a node, but a node
// without one is preferred; a pod that tolerates it finds the nodes equal.
TEST(PlacementParityTest, PreferNoScheduleTaintsMakeANodeTheLastChoice) {
  json tainted = NodeJson("n1");
  tainted["spec"]["taints"] = json::array({{{"key", "spot"}, {"value", "yes"}, {"effect", "PreferNoSchedule"}}});
  const std::vector<k8s::Node> nodes = {*k8s::Node::FromJson(tainted), MakeNode("n2")};
  const BuiltSnapshot built = BuildSnapshot(nodes, {FromJson(PodJson("p"))}, SnapshotOptions(), kNow);
  queue::Plan plan = PlanOf(built);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(built.snapshot->nodes[plan.starts[0].member_nodes[0]].name, "n2");
  json tolerant = PodJson("p");
  tolerant["spec"]["tolerations"] = json::array({{{"key", "spot"}, {"operator", "Exists"}}});
  const BuiltSnapshot tolerated = BuildSnapshot(nodes, {FromJson(tolerant)}, SnapshotOptions(), kNow);
  EXPECT_EQ(tolerated.snapshot->pending.front().node_preference, nullptr);
}

TEST(PlacementParityTest, PodsAskingOneHostPortNeverShareANode) {
  const BuiltSnapshot one_node =
      BuildSnapshot({MakeNode("n1")}, {FromJson(WithHostPort(PodJson("a"), 8080)), FromJson(WithHostPort(PodJson("b"), 8080))},
                    SnapshotOptions(), kNow);
  EXPECT_EQ(PlanOf(one_node).starts.size(), 1u);

  const BuiltSnapshot two_nodes =
      BuildSnapshot({MakeNode("n1"), MakeNode("n2")},
                    {FromJson(WithHostPort(PodJson("a"), 8080)), FromJson(WithHostPort(PodJson("b"), 8080))},
                    SnapshotOptions(), kNow);
  const queue::Plan both = PlanOf(two_nodes);
  ASSERT_EQ(both.starts.size(), 2u);
  EXPECT_NE(both.starts[0].member_nodes, both.starts[1].member_nodes);

  json bound = WithHostPort(PodJson("bound"), 80);
  bound["spec"]["nodeName"] = "n1";
  bound["spec"]["schedulerName"] = "default-scheduler";
  bound["status"]["phase"] = "Running";
  const BuiltSnapshot against_bound =
      BuildSnapshot({MakeNode("n1")},
                    {FromJson(bound), FromJson(WithHostPort(PodJson("same"), 80)),
                     FromJson(WithHostPort(PodJson("udp"), 80, "UDP")), FromJson(WithHostPort(PodJson("other"), 81))},
                    SnapshotOptions(), kNow);
  EXPECT_THAT(StartedIds(PlanOf(against_bound)), ElementsAre("ns/other", "ns/udp"));
}

// VolumeRestrictions for in-tree disks (kube-scheduler's isVolumeConflict): one gcePersistentDisk
// or iscsi volume is shared on a node only by read-only users; an awsElasticBlockStore volume
// never; an rbd image when the monitors overlap, the same pool and image. Within a cycle and
// against pods already bound; on another node the same disk is fine (the rule is per node).
json WithDisk(json pod, const std::string& kind, const json& source) {
  pod["spec"]["volumes"].push_back({{"name", "disk"}, {kind, source}});
  return pod;
}
json BoundTo(json pod, const std::string& node) {
  pod["spec"]["nodeName"] = node;
  pod["spec"]["schedulerName"] = "default-scheduler";
  pod["status"]["phase"] = "Running";
  return pod;
}

TEST(PlacementParityTest, InTreeDisksAreSharedOnANodeOnlyAsUpstreamAllows) {
  const json rw = {{"pdName", "data"}};
  const json ro = {{"pdName", "data"}, {"readOnly", true}};
  auto started = [](std::vector<k8s::Pod> pods, int nodes = 1) {
    std::vector<k8s::Node> ns;
    for (int i = 1; i <= nodes; ++i) ns.push_back(MakeNode(absl::StrCat("n", i)));
    return StartedIds(PlanOf(BuildSnapshot(ns, pods, SnapshotOptions(), kNow)));
  };
  // Two writers of one disk: one per node.
  EXPECT_EQ(started({FromJson(WithDisk(PodJson("a"), "gcePersistentDisk", rw)),
                     FromJson(WithDisk(PodJson("b"), "gcePersistentDisk", rw))}).size(), 1u);
  EXPECT_EQ(started({FromJson(WithDisk(PodJson("a"), "gcePersistentDisk", rw)),
                     FromJson(WithDisk(PodJson("b"), "gcePersistentDisk", rw))}, 2).size(), 2u);
  // Readers share; a reader and a writer do not.
  EXPECT_THAT(started({FromJson(WithDisk(PodJson("a"), "gcePersistentDisk", ro)),
                       FromJson(WithDisk(PodJson("b"), "gcePersistentDisk", ro))}),
              ElementsAre("ns/a", "ns/b"));
  EXPECT_THAT(started({FromJson(BoundTo(WithDisk(PodJson("w"), "gcePersistentDisk", rw), "n1")),
                       FromJson(WithDisk(PodJson("r"), "gcePersistentDisk", ro)),
                       FromJson(WithDisk(PodJson("other"), "gcePersistentDisk", json{{"pdName", "logs"}}))}),
              ElementsAre("ns/other"));
  // EBS: readOnly does not matter.
  const json ebs_ro = {{"volumeID", "vol-1"}, {"readOnly", true}};
  EXPECT_EQ(started({FromJson(WithDisk(PodJson("a"), "awsElasticBlockStore", ebs_ro)),
                     FromJson(WithDisk(PodJson("b"), "awsElasticBlockStore", ebs_ro))}).size(), 1u);
  // iSCSI by iqn.
  EXPECT_EQ(started({FromJson(WithDisk(PodJson("a"), "iscsi", json{{"iqn", "iqn.x:1"}, {"lun", 0}})),
                     FromJson(WithDisk(PodJson("b"), "iscsi", json{{"iqn", "iqn.x:1"}, {"lun", 1}}))}).size(), 1u);
  // RBD: overlapping monitors, same pool and image conflict; disjoint monitors do not.
  const json rbd_ab = {{"monitors", {"m1", "m2"}}, {"image", "img"}};
  const json rbd_bc = {{"monitors", {"m2", "m3"}}, {"image", "img"}};
  const json rbd_d = {{"monitors", {"m4"}}, {"image", "img"}};
  EXPECT_EQ(started({FromJson(WithDisk(PodJson("a"), "rbd", rbd_ab)), FromJson(WithDisk(PodJson("b"), "rbd", rbd_bc))}).size(), 1u);
  EXPECT_EQ(started({FromJson(WithDisk(PodJson("a"), "rbd", rbd_ab)), FromJson(WithDisk(PodJson("b"), "rbd", rbd_d))}).size(), 2u);
  // A pod mounting its own disk twice does not conflict with itself.
  json twice = WithDisk(WithDisk(PodJson("twice"), "gcePersistentDisk", rw), "gcePersistentDisk", ro);
  twice["spec"]["volumes"][1]["name"] = "again";
  EXPECT_THAT(started({FromJson(twice)}), ElementsAre("ns/twice"));
}

// SchedulingGates: a gated pod is not planned (the API server already reports it
// PodScheduled=False/SchedulingGated); once its gates are removed it is.
TEST(PlacementParityTest, AGatedPodIsPlannedOnlyOnceItsGatesAreRemoved) {
  json gated = PodJson("gated");
  gated["spec"]["schedulingGates"] = json::array({{{"name", "example.com/quota"}}});
  const BuiltSnapshot with_gate = BuildSnapshot({MakeNode("n1")}, {FromJson(gated)}, SnapshotOptions(), kNow);
  EXPECT_TRUE(with_gate.snapshot->pending.empty());
  EXPECT_TRUE(PlanOf(with_gate).starts.empty());

  gated["spec"]["schedulingGates"] = json::array();
  const BuiltSnapshot released = BuildSnapshot({MakeNode("n1")}, {FromJson(gated)}, SnapshotOptions(), kNow);
  EXPECT_THAT(StartedIds(PlanOf(released)), ElementsAre("ns/gated"));
}

// preemptionPolicy: Never: such a pod waits for room; it never evicts anyone, whatever its QOS.
TEST(PlacementParityTest, PreemptionPolicyNeverNeverPreempts) {
  queue::QueueConfig config;
  config.qos = {{"interactive", 100, false, {"batch"}, 0}, {"batch", 10, true, {}, 0}};
  SnapshotOptions options;
  options.known_qos = {"interactive", "batch"};
  options.queue_config = &config;
  json running = PodJson("running", {{"cpu", "4"}});
  running["metadata"]["annotations"] = {{"onequeue.io/qos", "batch"}};
  running["spec"]["nodeName"] = "n1";
  running["status"]["phase"] = "Running";
  json urgent = PodJson("urgent", {{"cpu", "4"}});
  urgent["metadata"]["annotations"] = {{"onequeue.io/qos", "interactive"}};

  const queue::Plan preempts = PlanOf(BuildSnapshot({MakeNode("n1")}, {FromJson(running), FromJson(urgent)}, options, kNow), config);
  ASSERT_EQ(preempts.preemptions.size(), 1u);  // the control: this pod may preempt

  urgent["spec"]["preemptionPolicy"] = "Never";
  const queue::Plan waits = PlanOf(BuildSnapshot({MakeNode("n1")}, {FromJson(running), FromJson(urgent)}, options, kNow), config);
  EXPECT_TRUE(waits.preemptions.empty());
  EXPECT_TRUE(waits.starts.empty());
  EXPECT_NE(WaitingOf(waits, "ns/urgent"), nullptr);
}

// DynamicResources: a pod with spec.resourceClaims is refused (never planned, the reason names
// the claims) until onequeue allocates claims; before, it was bound with nothing allocated.
TEST(PlacementParityTest, APodWithResourceClaimsIsRefusedWithTheClaimsNamed) {
  json claim = PodJson("dra");
  claim["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "one-gpu"}}});
  const BuiltSnapshot built = BuildSnapshot({MakeNode("n1")}, {FromJson(claim), FromJson(PodJson("plain"))},
                                            SnapshotOptions(), kNow);
  const queue::Plan plan = PlanOf(built);
  EXPECT_THAT(StartedIds(plan), ElementsAre("ns/plain"));
  const queue::WaitingStatus* waiting = WaitingOf(plan, "ns/dra");
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->reason, queue::WaitReason::kInvalidAnnotation);
  EXPECT_THAT(std::string(waiting->Message()), HasSubstr("spec.resourceClaims (gpu)"));
  EXPECT_THAT(std::string(waiting->Message()), HasSubstr("DynamicResources"));
}

// Issue 28, inter-pod preferences (pod_preferences.h): nodes in two zones, each with its hostname.
constexpr const char* kZone = "topology.kubernetes.io/zone";
constexpr const char* kHost = "kubernetes.io/hostname";
k8s::Node ZoneNode(const std::string& name, const std::string& zone) {
  return MakeNode(name, {{kZone, zone}, {kHost, name}});
}
json Labelled(json pod, const std::string& app) {
  pod["metadata"]["labels"] = {{"app", app}};
  return pod;
}
json AppSelector(const std::string& app) { return {{"matchLabels", {{"app", app}}}}; }
json WithPreferred(json pod, const char* kind, int weight, const std::string& app, const std::string& key) {
  pod["spec"]["affinity"][kind]["preferredDuringSchedulingIgnoredDuringExecution"].push_back(
      {{"weight", weight}, {"podAffinityTerm", {{"labelSelector", AppSelector(app)}, {"topologyKey", key}}}});
  return pod;
}
std::string PlacedOn(const BuiltSnapshot& built) {
  const queue::Plan plan = PlanOf(built);
  if (plan.starts.size() != 1 || plan.starts[0].member_nodes.size() != 1) return "";
  return built.snapshot->nodes[plan.starts[0].member_nodes[0]].name;
}

// PodTopologySpread score: a ScheduleAnyway constraint sends the pod to the zone with fewer
// matching pods among nodes the queue otherwise finds equal (a2 and b1 both run one pod; best fit
// alone takes a2, the first). Without a constraint: no preference.
TEST(PlacementParityTest, ScheduleAnywaySpreadPicksTheEmptierZone) {
  const std::vector<k8s::Node> nodes = {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b")};
  const k8s::Pod web = FromJson(BoundTo(Labelled(PodJson("web-0"), "web"), "a2"));
  const k8s::Pod other = FromJson(BoundTo(Labelled(PodJson("other"), "other"), "b1"));
  json p = Labelled(PodJson("web-1"), "web");
  p["spec"]["topologySpreadConstraints"] = json::array(
      {{{"maxSkew", 1}, {"topologyKey", kZone}, {"whenUnsatisfiable", "ScheduleAnyway"}, {"labelSelector", AppSelector("web")}}});
  const BuiltSnapshot built = BuildSnapshot(nodes, {web, other, FromJson(p)}, SnapshotOptions(), kNow);
  ASSERT_NE(built.snapshot->pending.front().node_preference, nullptr);
  EXPECT_EQ(PlacedOn(built), "b1");
  const BuiltSnapshot plain = BuildSnapshot(nodes, {web, other, FromJson(Labelled(PodJson("web-1"), "web"))}, SnapshotOptions(), kNow);
  EXPECT_EQ(plain.snapshot->pending.front().node_preference, nullptr);
}

// InterPodAffinity score: a preferred podAffinity term takes the pod next to the pod it matches
// (its hostname), though best fit alone would take the first of the two equally loaded nodes.
TEST(PlacementParityTest, PreferredPodAffinityPicksTheNodeNextToTheMatchingPod) {
  const std::vector<k8s::Node> nodes = {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b")};
  const k8s::Pod other = FromJson(BoundTo(Labelled(PodJson("other"), "other"), "a1"));
  const k8s::Pod cache = FromJson(BoundTo(Labelled(PodJson("cache"), "cache"), "b1"));
  const json p = WithPreferred(PodJson("app"), "podAffinity", 50, "cache", kHost);
  EXPECT_EQ(PlacedOn(BuildSnapshot(nodes, {other, cache, FromJson(p)}, SnapshotOptions(), kNow)), "b1");
}

// InterPodAffinity score: a preferred podAntiAffinity term keeps the pod away from the matching
// pod's node; symmetrically, a bound pod's preferred podAntiAffinity keeps a pod it matches away
// (the newcomer has no term of its own).
TEST(PlacementParityTest, PreferredPodAntiAffinityAvoidsTheMatchingPod) {
  const std::vector<k8s::Node> nodes = {ZoneNode("a1", "a"), ZoneNode("a2", "a")};
  const k8s::Pod noisy = FromJson(BoundTo(Labelled(PodJson("noisy"), "noisy"), "a1"));
  const k8s::Pod other = FromJson(BoundTo(Labelled(PodJson("other"), "other"), "a2"));
  const json p = WithPreferred(PodJson("quiet"), "podAntiAffinity", 100, "noisy", kHost);
  EXPECT_EQ(PlacedOn(BuildSnapshot(nodes, {noisy, other, FromJson(p)}, SnapshotOptions(), kNow)), "a2");

  const k8s::Pod shy = FromJson(BoundTo(WithPreferred(Labelled(PodJson("shy"), "shy"), "podAntiAffinity", 10, "web", kHost), "a1"));
  const BuiltSnapshot symmetric = BuildSnapshot(nodes, {shy, other, FromJson(Labelled(PodJson("web"), "web"))}, SnapshotOptions(), kNow);
  ASSERT_NE(symmetric.snapshot->pending.front().node_preference, nullptr);
  EXPECT_EQ(PlacedOn(symmetric), "a2");
}

// Preferences only order the nodes the required rules allow: required podAntiAffinity keeps the
// pod off the cache's node although its preferred podAffinity (zone) scores that zone highest;
// it then takes the other node of that zone. A preference the allowed nodes cannot meet never
// keeps it waiting.
TEST(PlacementParityTest, RequiredConstraintsStillWinOverPreferences) {
  const std::vector<k8s::Node> nodes = {ZoneNode("a1", "a"), ZoneNode("a2", "a"), ZoneNode("b1", "b")};
  const k8s::Pod cache = FromJson(BoundTo(Labelled(PodJson("cache"), "cache"), "a1"));
  const k8s::Pod other = FromJson(BoundTo(Labelled(PodJson("other"), "other"), "b1"));
  json p = WithPreferred(PodJson("app"), "podAffinity", 100, "cache", kZone);
  p["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
      json::array({{{"labelSelector", AppSelector("cache")}, {"topologyKey", kHost}}});
  EXPECT_EQ(PlacedOn(BuildSnapshot(nodes, {cache, other, FromJson(p)}, SnapshotOptions(), kNow)), "a2");

  json pinned = WithPreferred(PodJson("pinned"), "podAffinity", 100, "cache", kHost);
  pinned["spec"]["nodeSelector"] = {{kZone, "b"}};
  EXPECT_EQ(PlacedOn(BuildSnapshot(nodes, {cache, other, FromJson(pinned)}, SnapshotOptions(), kNow)), "b1");
}

}  // namespace
}  // namespace onequeue::scheduler

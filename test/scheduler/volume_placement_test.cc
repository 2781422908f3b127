// Volumes (issue 28): kube-scheduler's VolumeBinding, VolumeZone and VolumeRestrictions filters
// as onequeue computes them into the snapshot (volume_placement.h). Each case names the rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "nlohmann/json.hpp"
#include "queue/eligibility.h"
#include "queue/planner.h"
#include "queue/preemption.h"
#include "scheduler/snapshot_builder.h"
#include "scheduler/volume_placement.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr queue::Time kNow = 1795262400;  // 2026-11-21T12:00:00Z

k8s::Node Node(const std::string& name, json labels = json::object()) {
  labels["onequeue.io/pool"] = "a";
  labels["kubernetes.io/hostname"] = name;
  return *k8s::Node::FromJson(
      {{"metadata", {{"name", name}, {"labels", labels}}},
       {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}},
                   {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
}

// A pod of namespace "ns" whose volumes use `claims` (persistentVolumeClaim volumes).
json PodJson(const std::string& name, const std::vector<std::string>& claims, const std::string& node = "",
             const std::string& created = "2026-11-21T10:00:00Z") {
  json volumes = json::array();
  for (const std::string& c : claims) volumes.push_back({{"name", "v-" + c}, {"persistentVolumeClaim", {{"claimName", c}}}});
  json j = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name}, {"creationTimestamp", created}}},
            {"spec", {{"schedulerName", "onequeue"},
                      {"volumes", volumes},
                      {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}},
            {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) j["spec"]["nodeName"] = node;
  return j;
}
k8s::Pod Pod(const std::string& name, const std::vector<std::string>& claims, const std::string& node = "",
             const std::string& created = "2026-11-21T10:00:00Z") {
  auto p = k8s::Pod::FromJson(PodJson(name, claims, node, created));
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

json ClaimJson(const std::string& name, std::optional<std::string> storage_class, const std::string& volume = "",
               json access_modes = json::array({"ReadWriteOnce"})) {
  json j = {{"metadata", {{"name", name}, {"namespace", "ns"}}},
            {"spec", {{"accessModes", access_modes}}},
            {"status", {{"phase", volume.empty() ? "Pending" : "Bound"}}}};
  if (storage_class) j["spec"]["storageClassName"] = *storage_class;
  if (!volume.empty()) j["spec"]["volumeName"] = volume;
  return j;
}

// A PersistentVolume whose node affinity (when `hostname` is set) names one node.
json VolumeJson(const std::string& name, const std::string& hostname = "", json labels = json::object(),
                const std::string& storage_class = "", const std::string& phase = "Bound") {
  json j = {{"metadata", {{"name", name}, {"labels", labels}}},
            {"spec", {{"storageClassName", storage_class}, {"accessModes", json::array({"ReadWriteOnce"})}}},
            {"status", {{"phase", phase}}}};
  if (!hostname.empty()) {
    j["spec"]["nodeAffinity"] = {
        {"required",
         {{"nodeSelectorTerms",
           json::array({{{"matchExpressions",
                          json::array({{{"key", "kubernetes.io/hostname"}, {"operator", "In"}, {"values", {hostname}}}})}}})}}}};
  }
  return j;
}

json ClassJson(const std::string& name, const std::string& mode, const std::string& provisioner = "csi.example.com",
               json allowed_topologies = json()) {
  json j = {{"metadata", {{"name", name}}}, {"provisioner", provisioner}, {"volumeBindingMode", mode}};
  if (!allowed_topologies.is_null()) j["allowedTopologies"] = allowed_topologies;
  return j;
}

// The world: nodes, pods, and the volume objects as JSON.
struct VolumeWorld {
  std::vector<k8s::Node> nodes = {Node("n1", {{"topology.kubernetes.io/zone", "z1"}}),
                                  Node("n2", {{"topology.kubernetes.io/zone", "z2"}})};
  std::vector<k8s::Pod> pods;
  std::vector<json> claims, volumes, classes, csi_nodes, csi_drivers, csi_capacities;

  BuiltSnapshot Build() const {
    KubeState state = ToKubeState(nodes, pods);
    for (const json& c : claims) state.claims.push_back(std::make_shared<const k8s::PersistentVolumeClaim>(*k8s::PersistentVolumeClaim::FromJson(c)));
    for (const json& v : volumes) state.volumes.push_back(std::make_shared<const k8s::PersistentVolume>(*k8s::PersistentVolume::FromJson(v)));
    for (const json& c : classes) state.classes.push_back(std::make_shared<const k8s::StorageClass>(*k8s::StorageClass::FromJson(c)));
    for (const json& n : csi_nodes) state.csi_nodes.push_back(std::make_shared<const k8s::CsiNode>(*k8s::CsiNode::FromJson(n)));
    for (const json& d : csi_drivers) state.csi_drivers.push_back(std::make_shared<const k8s::CsiDriver>(*k8s::CsiDriver::FromJson(d)));
    for (const json& c : csi_capacities) {
      state.csi_capacities.push_back(std::make_shared<const k8s::CsiStorageCapacity>(*k8s::CsiStorageCapacity::FromJson(c)));
    }
    SnapshotOptions options;
    return BuildSnapshot(state, options, kNow);
  }
};

const queue::PendingWorkload* Pending(const BuiltSnapshot& built, const std::string& id) {
  for (const auto& w : built.snapshot->pending) {
    if (w.id == id) return &w;
  }
  return nullptr;
}

// The nodes the workload may use, or {"refused: <message>"}.
std::vector<std::string> NodesFor(const BuiltSnapshot& built, const std::string& id) {
  const queue::PendingWorkload* w = Pending(built, id);
  if (w == nullptr) return {"<not pending>"};
  if (w->admission_error != queue::AdmissionError::kNone) return {"refused: " + w->admission_message};
  const queue::EligibilityChecker checker(*built.snapshot, {});
  std::vector<std::string> names;
  for (queue::NodeIndex n : checker.EligibleNodes(*w, 0)) names.push_back(built.snapshot->nodes[n].name);
  return names;
}

std::vector<std::string> StartedOn(const BuiltSnapshot& built, const std::string& id) {
  queue::CheapestVictimsPlanner preemption;
  queue::QueuePlanner planner({}, &preemption);
  const queue::Plan plan = planner.PlanCycle(built.snapshot, kNow);
  for (const auto& s : plan.starts) {
    if (s.workload != id) continue;
    std::vector<std::string> nodes;
    for (queue::NodeIndex n : s.member_nodes) nodes.push_back(built.snapshot->nodes[n].name);
    return nodes;
  }
  return {};
}

TEST(VolumeBindingTest, AMissingClaimKeepsThePodPendingWithTheClaimNamed) {
  VolumeWorld w;
  w.pods = {Pod("p", {"data"})};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"),
              ElementsAre(HasSubstr("VolumeBinding: persistentvolumeclaim \"data\" not found")));
  EXPECT_THAT(StartedOn(built, "ns/p"), IsEmpty());
}

TEST(VolumeBindingTest, AClaimBeingDeletedKeepsThePodPending) {
  VolumeWorld w;
  w.pods = {Pod("p", {"data"})};
  json claim = ClaimJson("data", "fast", "pv1");
  claim["metadata"]["deletionTimestamp"] = "2026-11-21T11:00:00Z";
  w.claims = {claim};
  w.volumes = {VolumeJson("pv1")};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre(HasSubstr("persistentvolumeclaim \"data\" is being deleted")));
}

TEST(VolumeBindingTest, AnUnboundClaimOfAnImmediateClassOrOfNoClassIsRefusedWithItsName) {
  VolumeWorld w;
  w.pods = {Pod("p", {"now"}), Pod("q", {"none"}), Pod("r", {"lost"})};
  w.claims = {ClaimJson("now", "fast"), ClaimJson("none", std::nullopt), ClaimJson("lost", "gone")};
  w.classes = {ClassJson("fast", "Immediate")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre(HasSubstr("pod has unbound immediate PersistentVolumeClaims (\"now\")")));
  EXPECT_THAT(NodesFor(built, "ns/q"), ElementsAre(HasSubstr("unbound immediate PersistentVolumeClaims (\"none\"")));
  EXPECT_THAT(NodesFor(built, "ns/r"), ElementsAre(HasSubstr("storageclass.storage.k8s.io \"gone\" not found")));
}

TEST(VolumeBindingTest, ABoundClaimsVolumeNodeAffinityRestrictsTheNodes) {
  VolumeWorld w;
  w.pods = {Pod("p", {"data"})};
  w.claims = {ClaimJson("data", "local", "pv-n2")};
  w.volumes = {VolumeJson("pv-n2", "n2")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n2"));
  EXPECT_THAT(StartedOn(built, "ns/p"), ElementsAre("n2"));
  EXPECT_FALSE(built.claims_to_select.contains("ns/p"));  // bound already: nothing to annotate
}

TEST(VolumeBindingTest, AClaimBoundToAMissingVolumeOrToAVolumeOfNoPoolNodeIsRefused) {
  VolumeWorld w;
  w.pods = {Pod("p", {"data"}), Pod("q", {"elsewhere"})};
  w.claims = {ClaimJson("data", "local", "pv-gone"), ClaimJson("elsewhere", "local", "pv-n9")};
  w.volumes = {VolumeJson("pv-n9", "n9")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre(HasSubstr("persistentvolume \"pv-gone\", which does not exist")));
  EXPECT_THAT(NodesFor(built, "ns/q"), ElementsAre(HasSubstr("no node matches the node affinity and zone of persistentvolume \"pv-n9\"")));
}

TEST(VolumeBindingTest, AnUnboundWaitForFirstConsumerClaimIsSelectedForThePodsNode) {
  VolumeWorld w;
  w.pods = {Pod("p", {"scratch"}), Pod("q", {"zonal"})};
  w.claims = {ClaimJson("scratch", "wffc"), ClaimJson("zonal", "wffc-z2")};
  w.classes = {ClassJson("wffc", "WaitForFirstConsumer"),
               ClassJson("wffc-z2", "WaitForFirstConsumer", "csi.example.com",
                         json::array({{{"matchLabelExpressions",
                                        json::array({{{"key", "topology.kubernetes.io/zone"}, {"values", {"z2"}}}})}}}))};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n1", "n2"));
  EXPECT_THAT(built.claims_to_select.at("ns/p"), ElementsAre("ns/scratch"));
  // allowedTopologies: provisioned only where the class allows.
  EXPECT_THAT(NodesFor(built, "ns/q"), ElementsAre("n2"));
  EXPECT_THAT(built.claims_to_select.at("ns/q"), ElementsAre("ns/zonal"));
}

TEST(VolumeBindingTest, PodsSharingAWaitForFirstConsumerClaimFollowTheNodeTheFirstOneSelected) {
  VolumeWorld w;
  w.pods = {Pod("first", {"shared"}, "", "2026-11-21T09:00:00Z"), Pod("second", {"shared"})};
  w.claims = {ClaimJson("shared", "wffc")};
  w.classes = {ClassJson("wffc", "WaitForFirstConsumer")};
  BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/first"), ElementsAre("n1", "n2"));
  EXPECT_THAT(NodesFor(built, "ns/second"), ElementsAre(HasSubstr("waits for pending pod ns/first to choose its node first")));
  // The first is bound to n2 and its claim names n2, the volume not made yet: the second follows.
  w.pods[0] = Pod("first", {"shared"}, "n2", "2026-11-21T09:00:00Z");
  w.claims[0]["metadata"]["annotations"][kSelectedNodeAnnotation] = "n2";
  built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/second"), ElementsAre("n2"));
  EXPECT_FALSE(built.claims_to_select.contains("ns/second"));
}

// A local volume: class local-storage, Available, on `hostname`, of `size`.
json LocalVolume(const std::string& name, const std::string& hostname, const std::string& size,
                 const std::string& storage_class = "local-storage") {
  json j = VolumeJson(name, hostname, json::object(), storage_class, "Available");
  j["spec"]["capacity"] = {{"storage", size}};
  j["metadata"]["resourceVersion"] = "rv-" + name;
  return j;
}
json SizedClaim(const std::string& name, const std::string& storage_class, const std::string& size) {
  json j = ClaimJson(name, storage_class);
  j["spec"]["resources"] = {{"requests", {{"storage", size}}}};
  j["metadata"]["uid"] = "uid-" + name;
  return j;
}

TEST(VolumeBindingTest, AWaitForFirstConsumerClaimGoesToTheNodesOfAMatchingPreMadeVolume) {
  VolumeWorld w;
  w.pods = {Pod("p", {"local"})};
  w.claims = {SizedClaim("local", "local-storage", "10Gi")};
  w.classes = {ClassJson("local-storage", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")};
  // n1's volume is too small; n2 has one that fits and a bigger one.
  w.volumes = {LocalVolume("pv-n1-small", "n1", "5Gi"), LocalVolume("pv-n2-big", "n2", "100Gi"),
               LocalVolume("pv-n2-fit", "n2", "20Gi")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n2"));
  ASSERT_EQ(built.volumes_to_bind.at("ns/p").size(), 1u);
  const VolumeToBind& bind = built.volumes_to_bind.at("ns/p")[0];
  EXPECT_EQ(bind.claim_key, "ns/local");
  EXPECT_EQ(bind.claim_uid, "uid-local");
  EXPECT_FALSE(bind.provisions);
  // Smallest fitting first, each with the resourceVersion its write is guarded by.
  EXPECT_THAT(bind.candidates.at("n2"), ElementsAre(PreMadeVolume{"pv-n2-fit", "rv-pv-n2-fit"},
                                                    PreMadeVolume{"pv-n2-big", "rv-pv-n2-big"}));
  EXPECT_FALSE(bind.candidates.contains("n1"));
  EXPECT_TRUE(built.claims_to_select.empty());
}

TEST(VolumeBindingTest, APreMadeVolumeMatchesOnlyWithTheClaimsAccessModesVolumeModeAndSelector) {
  VolumeWorld w;
  w.pods = {Pod("p", {"local"})};
  json claim = SizedClaim("local", "local-storage", "1Gi");
  claim["spec"]["accessModes"] = json::array({"ReadWriteMany"});
  w.claims = {claim};
  w.classes = {ClassJson("local-storage", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")};
  w.volumes = {LocalVolume("pv-n1", "n1", "5Gi"), LocalVolume("pv-n2", "n2", "5Gi")};
  w.volumes[1]["spec"]["accessModes"] = json::array({"ReadWriteOnce", "ReadWriteMany"});
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n2"));
  w.claims[0]["spec"]["volumeMode"] = "Block";
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre(HasSubstr("no PersistentVolume")));
  w.volumes[1]["spec"]["volumeMode"] = "Block";
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n2"));
  w.claims[0]["spec"]["selector"] = {{"matchLabels", {{"disk", "ssd"}}}};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre(HasSubstr("no PersistentVolume")));
  w.volumes[1]["metadata"]["labels"]["disk"] = "ssd";
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n2"));
}

TEST(VolumeBindingTest, ANoProvisionerClaimNoPreMadeVolumeMatchesWaitsWithTheClaimNamed) {
  VolumeWorld w;
  w.pods = {Pod("p", {"local"})};
  w.claims = {SizedClaim("local", "local-storage", "50Gi")};
  w.classes = {ClassJson("local-storage", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")};
  w.volumes = {LocalVolume("pv-n1", "n1", "10Gi"), VolumeJson("pv-taken", "n2", json::object(), "local-storage", "Bound")};
  w.volumes[1]["spec"]["capacity"] = {{"storage", "100Gi"}};
  w.volumes[1]["spec"]["claimRef"] = {{"namespace", "other"}, {"name", "c"}};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"),
              ElementsAre(HasSubstr("no PersistentVolume of storage class \"local-storage\" matches claim \"local\" "
                                    "(node(s) didn't find available persistent volumes to bind)")));
  EXPECT_TRUE(built.volumes_to_bind.empty());
}

TEST(VolumeBindingTest, AProvisioningClassUsesAMatchingPreMadeVolumeOrProvisionsElsewhere) {
  VolumeWorld w;
  w.pods = {Pod("q", {"mixed"})};
  w.claims = {SizedClaim("mixed", "wffc", "1Gi")};
  w.classes = {ClassJson("wffc", "WaitForFirstConsumer")};
  w.volumes = {LocalVolume("pv-free", "n1", "5Gi", "wffc")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/q"), ElementsAre("n1", "n2"));  // n2: provisioned there
  const VolumeToBind& bind = built.volumes_to_bind.at("ns/q")[0];
  EXPECT_TRUE(bind.provisions);
  EXPECT_THAT(bind.candidates.at("n1"), ElementsAre(PreMadeVolume{"pv-free", "rv-pv-free"}));
  EXPECT_TRUE(built.claims_to_select.empty());
}

TEST(VolumeBindingTest, OneCyclePlansNoMoreClaimsOnANodeThanItHasPreMadeVolumes) {
  VolumeWorld w;
  w.pods = {Pod("a", {"a-data"}, "", "2026-11-21T09:00:00Z"), Pod("b", {"b-data"}, "", "2026-11-21T09:30:00Z"),
            Pod("c", {"c-data"})};
  w.claims = {SizedClaim("a-data", "local-storage", "1Gi"), SizedClaim("b-data", "local-storage", "1Gi"),
              SizedClaim("c-data", "local-storage", "1Gi")};
  w.classes = {ClassJson("local-storage", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")};
  // n1 holds one local volume, n2 one: each node takes one claim; the third pod waits.
  w.volumes = {LocalVolume("pv-n1", "n1", "5Gi"), LocalVolume("pv-n2", "n2", "5Gi")};
  const BuiltSnapshot built = w.Build();
  const std::vector<std::string> a = StartedOn(built, "ns/a");
  const std::vector<std::string> b = StartedOn(built, "ns/b");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NE(a, b);
  EXPECT_THAT(StartedOn(built, "ns/c"), IsEmpty());
}

TEST(VolumeBindingTest, AVolumePreBoundToTheClaimKeepsItsPodOnTheVolumesNodes) {
  VolumeWorld w;
  w.pods = {Pod("p", {"local"})};
  w.claims = {SizedClaim("local", "local-storage", "1Gi")};
  w.classes = {ClassJson("local-storage", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")};
  w.volumes = {LocalVolume("pv-n1", "n1", "5Gi"), LocalVolume("pv-n2", "n2", "5Gi")};
  w.volumes[1]["spec"]["claimRef"] = {{"namespace", "ns"}, {"name", "local"}, {"uid", "uid-local"}};
  BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n2"));
  EXPECT_TRUE(built.volumes_to_bind.empty());  // written already
  // A claimRef to an earlier claim of that name (another uid) is not this claim's.
  w.volumes[1]["spec"]["claimRef"]["uid"] = "uid-old";
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1"));
}

TEST(VolumeBindingTest, AGenericEphemeralVolumeUsesTheClaimNamedAfterThePodAndVolume) {
  json j = PodJson("p", {});
  j["spec"]["volumes"] = json::array({{{"name", "scratch"}, {"ephemeral", {{"volumeClaimTemplate", json::object()}}}}});
  VolumeWorld w;
  w.pods = {*k8s::Pod::FromJson(j)};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre(HasSubstr("persistentvolumeclaim \"p-scratch\" not found")));
  w.claims = {ClaimJson("p-scratch", "wffc")};
  w.classes = {ClassJson("wffc", "WaitForFirstConsumer")};
  EXPECT_THAT(w.Build().claims_to_select.at("ns/p"), ElementsAre("ns/p-scratch"));
}

TEST(VolumeZoneTest, ABoundVolumesZoneLabelsKeepThePodInItsZone) {
  VolumeWorld w;
  w.nodes.push_back(Node("n3"));  // no zone label: VolumeZone lets it pass
  w.nodes.push_back(Node("n4", {{"failure-domain.beta.kubernetes.io/zone", "z1"}}));  // the beta key counts too
  w.pods = {Pod("p", {"data"}), Pod("q", {"multi"})};
  w.claims = {ClaimJson("data", "zonal", "pv-z1"), ClaimJson("multi", "zonal", "pv-z12")};
  w.volumes = {VolumeJson("pv-z1", "", {{"topology.kubernetes.io/zone", "z1"}}),
               VolumeJson("pv-z12", "", {{"topology.kubernetes.io/zone", "z1__z2"}})};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n1", "n3", "n4"));
  EXPECT_THAT(NodesFor(built, "ns/q"), ElementsAre("n1", "n2", "n3", "n4"));
}

TEST(VolumeRestrictionsTest, AReadWriteOncePodClaimInUseKeepsTheOtherPodPending) {
  VolumeWorld w;
  w.pods = {Pod("running", {"solo"}, "n1"), Pod("p", {"solo"})};
  w.claims = {ClaimJson("solo", "local", "pv-any", json::array({"ReadWriteOncePod"}))};
  w.volumes = {VolumeJson("pv-any")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre(HasSubstr("VolumeRestrictions: pod ns/running uses PersistentVolumeClaim \"solo\" with the ReadWriteOncePod access mode")));
}

TEST(VolumeRestrictionsTest, OfPendingPodsSharingAReadWriteOncePodClaimOnlyTheOldestIsPlanned) {
  VolumeWorld w;
  w.pods = {Pod("young", {"solo"}, "", "2026-11-21T11:00:00Z"), Pod("old", {"solo"}, "", "2026-11-21T10:00:00Z")};
  w.claims = {ClaimJson("solo", "local", "pv-any", json::array({"ReadWriteOncePod"}))};
  w.volumes = {VolumeJson("pv-any")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/old"), ElementsAre("n1", "n2"));
  EXPECT_THAT(NodesFor(built, "ns/young"), ElementsAre(HasSubstr("goes to pending pod ns/old first")));
  // ReadWriteOnce (not ...Pod) claims are shared by pods freely, as kube-scheduler lets them.
  w.claims = {ClaimJson("solo", "local", "pv-any")};
  EXPECT_THAT(NodesFor(w.Build(), "ns/young"), ElementsAre("n1", "n2"));
}

// NodeVolumeLimits: a CSINode naming each driver's attach limit (none: the driver has no limit).
json CsiNodeJson(const std::string& node, const std::map<std::string, std::optional<int>>& limits) {
  json drivers = json::array();
  for (const auto& [driver, count] : limits) {
    json d = {{"name", driver}, {"nodeID", node}};
    if (count) d["allocatable"] = {{"count", *count}};
    drivers.push_back(d);
  }
  return {{"metadata", {{"name", node}}}, {"spec", {{"drivers", drivers}}}};
}
// A CSI PersistentVolume of `driver` (any node), and a claim "<name>" bound to it ("pv-<name>").
json CsiVolumeJson(const std::string& name, const std::string& driver = "ebs.csi.aws.com") {
  json j = VolumeJson("pv-" + name);
  j["spec"]["csi"] = {{"driver", driver}, {"volumeHandle", "vol-" + name}};
  return j;
}
void AddCsiClaim(VolumeWorld& w, const std::string& name, const std::string& driver = "ebs.csi.aws.com") {
  w.claims.push_back(ClaimJson(name, "ebs", "pv-" + name));
  w.volumes.push_back(CsiVolumeJson(name, driver));
}

TEST(NodeVolumeLimitsTest, ANodeAtItsDriversLimitIsRefusedAndThePodGoesToAnother) {
  VolumeWorld w;
  for (const char* c : {"a", "b"}) AddCsiClaim(w, c);
  w.csi_nodes = {CsiNodeJson("n1", {{"ebs.csi.aws.com", 1}}), CsiNodeJson("n2", {{"ebs.csi.aws.com", 1}})};
  w.pods = {Pod("running", {"a"}, "n1"), Pod("p", {"b"})};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n2"));
  EXPECT_THAT(StartedOn(built, "ns/p"), ElementsAre("n2"));
  // Another driver's volumes do not count against this one's limit.
  VolumeWorld other = w;
  other.volumes[0] = CsiVolumeJson("a", "pd.csi.storage.gke.io");
  EXPECT_THAT(NodesFor(other.Build(), "ns/p"), ElementsAre("n1", "n2"));
}

TEST(NodeVolumeLimitsTest, AVolumeAlreadyAttachedOnTheNodeCountsOnce) {
  VolumeWorld w;
  for (const char* c : {"shared", "own", "extra"}) AddCsiClaim(w, c);
  w.csi_nodes = {CsiNodeJson("n1", {{"ebs.csi.aws.com", 2}}), CsiNodeJson("n2", {{"ebs.csi.aws.com", 0}})};
  // n1 holds 2 volumes (one used by two pods): full, but a pod using only those adds nothing.
  w.pods = {Pod("r1", {"shared", "own"}, "n1"), Pod("r2", {"shared"}, "n1"), Pod("p", {"shared", "own"}),
            Pod("q", {"shared", "extra"})};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n1"));  // n2 has room for none
  EXPECT_THAT(NodesFor(built, "ns/q"),
              ElementsAre(HasSubstr("NodeVolumeLimits: node(s) exceed max volume count (node n1: CSI driver "
                                    "ebs.csi.aws.com has 2 of its 2 volumes attached, the pod adds 1)")));
  // One volume more of room on n1: "shared" is attached there, so q adds only "extra".
  w.csi_nodes[0] = CsiNodeJson("n1", {{"ebs.csi.aws.com", 3}});
  EXPECT_THAT(NodesFor(w.Build(), "ns/q"), ElementsAre("n1"));
}

TEST(NodeVolumeLimitsTest, WithoutACsiNodeOrAnAllocatableCountThereIsNoLimit) {
  VolumeWorld w;
  for (const char* c : {"a", "b"}) AddCsiClaim(w, c);
  w.pods = {Pod("running", {"a"}, "n1"), Pod("p", {"b"})};
  w.csi_nodes = {CsiNodeJson("n2", {{"ebs.csi.aws.com", 0}})};  // n1 has none
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1"));
  w.csi_nodes = {CsiNodeJson("n1", {{"ebs.csi.aws.com", std::nullopt}}), CsiNodeJson("n2", {{"ebs.csi.aws.com", 0}})};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1"));
}

TEST(NodeVolumeLimitsTest, AnUnboundClaimCountsAsAVolumeOfItsClassesProvisioner) {
  VolumeWorld w;
  AddCsiClaim(w, "a");
  w.claims.push_back(ClaimJson("scratch", "wffc"));
  w.classes = {ClassJson("wffc", "WaitForFirstConsumer", "ebs.csi.aws.com")};
  w.csi_nodes = {CsiNodeJson("n1", {{"ebs.csi.aws.com", 1}})};
  w.pods = {Pod("running", {"a"}, "n1"), Pod("p", {"scratch"})};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n2"));
}

TEST(NodeVolumeLimitsTest, PodsPlacedEarlierInTheSameCycleCountAgainstTheLimit) {
  VolumeWorld w;
  for (const char* c : {"a", "b"}) AddCsiClaim(w, c);
  w.csi_nodes = {CsiNodeJson("n1", {{"ebs.csi.aws.com", 1}}), CsiNodeJson("n2", {{"ebs.csi.aws.com", 1}})};
  w.pods = {Pod("p", {"a"}), Pod("q", {"b"})};
  const BuiltSnapshot built = w.Build();
  // Both nodes have room for one new volume: each pod may go to either, but not both to one.
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n1", "n2"));
  std::vector<std::string> nodes = StartedOn(built, "ns/p");
  const std::vector<std::string> q = StartedOn(built, "ns/q");
  nodes.insert(nodes.end(), q.begin(), q.end());
  std::sort(nodes.begin(), nodes.end());
  EXPECT_THAT(nodes, ElementsAre("n1", "n2"));
}

// Storage capacity (kube-scheduler's hasEnoughCapacity): class "lvm" provisioned by a CSI driver
// that reports capacity per node.
constexpr const char* kLvmDriver = "lvm.csi.example.com";
json CsiDriverJson(const std::string& name, std::optional<bool> storage_capacity) {
  json j = {{"metadata", {{"name", name}}}, {"spec", json::object()}};
  if (storage_capacity) j["spec"]["storageCapacity"] = *storage_capacity;
  return j;
}
// A CSIStorageCapacity of `storage_class` for the node named `hostname` ("" : no nodeTopology).
json CapacityJson(const std::string& name, const std::string& hostname, std::optional<std::string> capacity,
                  std::optional<std::string> maximum = std::nullopt, const std::string& storage_class = "lvm") {
  json j = {{"apiVersion", "storage.k8s.io/v1"}, {"kind", "CSIStorageCapacity"},
            {"metadata", {{"name", name}, {"namespace", "kube-system"}}}, {"storageClassName", storage_class}};
  if (!hostname.empty()) j["nodeTopology"] = {{"matchLabels", {{"kubernetes.io/hostname", hostname}}}};
  if (capacity) j["capacity"] = *capacity;
  if (maximum) j["maximumVolumeSize"] = *maximum;
  return j;
}
VolumeWorld LvmWorld(const std::string& request) {
  VolumeWorld w;
  w.pods = {Pod("p", {"data"})};
  w.claims = {SizedClaim("data", "lvm", request)};
  w.classes = {ClassJson("lvm", "WaitForFirstConsumer", kLvmDriver)};
  w.csi_drivers = {CsiDriverJson(kLvmDriver, true)};
  return w;
}

TEST(VolumeBindingCapacityTest, AProvisionedClaimGoesOnlyToNodesWhoseStorageCapacityHoldsItsRequest) {
  VolumeWorld w = LvmWorld("10Gi");
  w.csi_capacities = {CapacityJson("cap-n1", "n1", "5Gi"), CapacityJson("cap-n2", "n2", "20Gi")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n2"));
  EXPECT_THAT(built.claims_to_select.at("ns/p"), ElementsAre("ns/data"));
  EXPECT_THAT(StartedOn(built, "ns/p"), ElementsAre("n2"));
  // Exactly the request fits; a capacity of another class does not count.
  w.csi_capacities = {CapacityJson("cap-n1", "n1", "10Gi"), CapacityJson("cap-n2", "n2", "1Ti", std::nullopt, "other")};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1"));
}

TEST(VolumeBindingCapacityTest, MaximumVolumeSizeWinsOverCapacity) {
  VolumeWorld w = LvmWorld("10Gi");
  // n1 has 100Gi in all but no volume larger than 5Gi; n2's largest volume is 10Gi.
  w.csi_capacities = {CapacityJson("cap-n1", "n1", "100Gi", "5Gi"), CapacityJson("cap-n2", "n2", "8Gi", "10Gi")};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n2"));
}

TEST(VolumeBindingCapacityTest, ADriverWithoutStorageCapacityOrAClaimWithoutARequestIsNotChecked) {
  VolumeWorld w = LvmWorld("10Gi");  // and no CSIStorageCapacity at all
  w.csi_drivers = {CsiDriverJson(kLvmDriver, false)};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1", "n2"));
  w.csi_drivers = {CsiDriverJson(kLvmDriver, std::nullopt)};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1", "n2"));
  w.csi_drivers = {CsiDriverJson(kLvmDriver, true)};
  w.claims = {ClaimJson("data", "lvm")};  // no storage request: nothing to check
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1", "n2"));
}

TEST(VolumeBindingCapacityTest, AProvisionerWithoutACsiDriverObjectIsNotChecked) {
  VolumeWorld w = LvmWorld("10Gi");
  w.csi_drivers = {CsiDriverJson("another.csi.example.com", true)};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1", "n2"));
}

TEST(VolumeBindingCapacityTest, NoStorageCapacityForAnyNodeKeepsThePodPendingWithTheClaimAndClassNamed) {
  VolumeWorld w = LvmWorld("10Gi");
  // Room enough, but selecting no node: no nodeTopology, or another node's label.
  w.csi_capacities = {CapacityJson("cap-none", "", "1Ti"), CapacityJson("cap-n3", "n3", "1Ti")};
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"),
              ElementsAre(HasSubstr("VolumeBinding: no node this pod can use has enough CSIStorageCapacity of storage "
                                    "class \"lvm\" for claim \"data\" (node(s) did not have enough free storage)")));
  EXPECT_TRUE(built.claims_to_select.empty());
  EXPECT_THAT(StartedOn(built, "ns/p"), IsEmpty());
}

TEST(VolumeBindingCapacityTest, ANodeWithAMatchingPreMadeVolumeNeedsNoCapacity) {
  VolumeWorld w = LvmWorld("10Gi");
  w.volumes = {LocalVolume("pv-n1", "n1", "20Gi", "lvm")};  // no CSIStorageCapacity anywhere
  const BuiltSnapshot built = w.Build();
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n1"));  // n2 would be provisioned on: no room
  EXPECT_TRUE(built.volumes_to_bind.at("ns/p")[0].provisions);
  w.csi_capacities = {CapacityJson("cap-n2", "n2", "10Gi")};
  EXPECT_THAT(NodesFor(w.Build(), "ns/p"), ElementsAre("n1", "n2"));
}

TEST(VolumeBindingTest, PodsWithoutClaimsAreUntouched) {
  VolumeWorld w;
  w.pods = {Pod("p", {})};
  const BuiltSnapshot built = w.Build();
  EXPECT_FALSE(Pending(built, "ns/p")->eligibility.allowed_nodes.has_value());
  EXPECT_THAT(NodesFor(built, "ns/p"), ElementsAre("n1", "n2"));
}

}  // namespace
}  // namespace onequeue::scheduler

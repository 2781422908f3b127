// Volumes in the scheduling loop (issue 28): the in-memory world with claims, volumes and storage
// classes; what the loop writes, in order (VolumeBinding's PreBind annotation before the binding).
#include "scheduler/scheduling_loop.h"
#include "scheduler/volume_placement.h"

#include "fake_world.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace onequeue::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class VolumeWorld : public World {
 public:
  std::map<std::string, json> claims;  // by name, namespace "ns"
  std::vector<json> volumes, classes, csi_nodes, csi_drivers, csi_capacities;
  std::vector<std::string> writes;  // "select <claim> <node>" and "bind <pod>-><node>", in order
  bool refuse_select = false;

  // Each node labelled kubernetes.io/hostname=<name>, as the kubelet does (CSIStorageCapacity's nodeTopology).
  std::vector<k8s::Node> Nodes() const override {
    std::vector<k8s::Node> nodes = World::Nodes();
    for (k8s::Node& n : nodes) n.metadata.labels["kubernetes.io/hostname"] = n.metadata.name;
    return nodes;
  }
  std::shared_ptr<const KubeState> State() const override {
    auto state = std::make_shared<KubeState>(ToKubeState(Nodes(), Pods()));
    for (const auto& [name, c] : claims) {
      state->claims.push_back(std::make_shared<const k8s::PersistentVolumeClaim>(*k8s::PersistentVolumeClaim::FromJson(c)));
    }
    for (const json& v : volumes) state->volumes.push_back(std::make_shared<const k8s::PersistentVolume>(*k8s::PersistentVolume::FromJson(v)));
    for (const json& c : classes) state->classes.push_back(std::make_shared<const k8s::StorageClass>(*k8s::StorageClass::FromJson(c)));
    for (const json& n : csi_nodes) state->csi_nodes.push_back(std::make_shared<const k8s::CsiNode>(*k8s::CsiNode::FromJson(n)));
    for (const json& d : csi_drivers) state->csi_drivers.push_back(std::make_shared<const k8s::CsiDriver>(*k8s::CsiDriver::FromJson(d)));
    for (const json& c : csi_capacities) {
      state->csi_capacities.push_back(std::make_shared<const k8s::CsiStorageCapacity>(*k8s::CsiStorageCapacity::FromJson(c)));
    }
    return state;
  }
  absl::Status SelectVolumeNode(const std::string& claim_key, const std::string& node) override {
    if (refuse_select) return absl::UnavailableError("the API server is away");
    const std::string name = claim_key.substr(claim_key.find('/') + 1);
    claims.at(name)["metadata"]["annotations"][kSelectedNodeAnnotation] = node;
    writes.push_back("select " + claim_key + " " + node);
    return absl::OkStatus();
  }
  // The apiserver's optimistic concurrency: a write at another resourceVersion is a conflict.
  bool conflict_next = false;  // another writer changes the volume just before ours
  absl::Status BindVolume(const std::string& volume, const std::string& resource_version, const std::string& claim_key,
                          const std::string& claim_uid) override {
    for (json& v : volumes) {
      if (v["metadata"]["name"] != volume) continue;
      if (conflict_next) {
        conflict_next = false;
        v["metadata"]["resourceVersion"] = v["metadata"]["resourceVersion"].get<std::string>() + "+";
      }
      if (v["metadata"]["resourceVersion"] != resource_version) {
        writes.push_back("conflict " + volume + " " + claim_key);
        return absl::AbortedError("Operation cannot be fulfilled: the object has been modified");
      }
      const std::string ns = claim_key.substr(0, claim_key.find('/'));
      const std::string name = claim_key.substr(claim_key.find('/') + 1);
      v["spec"]["claimRef"] = {{"kind", "PersistentVolumeClaim"}, {"apiVersion", "v1"}, {"namespace", ns},
                               {"name", name}, {"uid", claim_uid}};
      v["metadata"]["annotations"][kBoundByControllerAnnotation] = "yes";
      v["metadata"]["resourceVersion"] = resource_version + "+";
      writes.push_back("claim " + volume + " " + claim_key);
      return absl::OkStatus();
    }
    return absl::NotFoundError(volume);
  }
  absl::Status Bind(const std::string& key, const std::string& node, const std::string& message) override {
    writes.push_back("bind " + key + "->" + node);
    return World::Bind(key, node, message);
  }
  void AddPodWithClaims(const std::string& name, std::vector<std::string> claim_names) {
    AddPod(name, "1", "scavenger");
    Find("ns/" + name)->volume_claims = std::move(claim_names);
  }
  void AddClaim(const std::string& name, const std::string& storage_class, const std::string& volume = "") {
    json j = {{"metadata", {{"name", name}, {"namespace", "ns"}}},
              {"spec", {{"storageClassName", storage_class}, {"accessModes", json::array({"ReadWriteOnce"})}}}};
    if (!volume.empty()) j["spec"]["volumeName"] = volume;
    claims[name] = j;
  }
  void AddLocalClaim(const std::string& name, const std::string& size) {
    AddClaim(name, "local-storage");
    claims[name]["spec"]["resources"] = {{"requests", {{"storage", size}}}};
    claims[name]["metadata"]["uid"] = "uid-" + name;
  }
  // An Available local volume on `node` (local-static-provisioner's kind).
  void AddLocalVolume(const std::string& name, const std::string& node, const std::string& size) {
    volumes.push_back(
        {{"metadata", {{"name", name}, {"resourceVersion", "1"}}},
         {"spec", {{"storageClassName", "local-storage"}, {"accessModes", json::array({"ReadWriteOnce"})},
                   {"capacity", {{"storage", size}}},
                   {"nodeAffinity", {{"required", {{"nodeSelectorTerms", json::array({{{"matchFields",
                       json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {node}}}})}}})}}}}}}},
         {"status", {{"phase", "Available"}}}});
  }
  // An Available volume of class local-storage any node may use (no node affinity).
  void AddSharedVolume(const std::string& name, const std::string& size) {
    AddLocalVolume(name, "", size);
    volumes.back()["spec"].erase("nodeAffinity");
  }
  void AddLocalClass() {
    classes = {{{"metadata", {{"name", "local-storage"}}}, {"provisioner", "kubernetes.io/no-provisioner"},
                {"volumeBindingMode", "WaitForFirstConsumer"}}};
  }
  json& Volume(const std::string& name) {
    for (json& v : volumes) {
      if (v["metadata"]["name"] == name) return v;
    }
    throw std::out_of_range(name);
  }
};

TEST(VolumeLoopTest, AWaitForFirstConsumerClaimIsAnnotatedWithThePodsNodeBeforeThePodIsBound) {
  VolumeWorld w;
  w.AddNode("n1");
  w.classes = {{{"metadata", {{"name", "wffc"}}}, {"provisioner", "csi.example.com"},
                {"volumeBindingMode", "WaitForFirstConsumer"}}};
  w.AddClaim("home", "wffc");
  w.AddPodWithClaims("jupyter", {"home"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  // The annotation cannot be written: the pod is not bound (it would run without its volume).
  w.refuse_select = true;
  loop.RunCycle(kNow);
  EXPECT_THAT(w.writes, IsEmpty());
  EXPECT_EQ(w.NodeOf("ns/jupyter"), "");
  w.refuse_select = false;
  loop.RunCycle(kNow + 1);
  EXPECT_THAT(w.writes, ElementsAre("select ns/home n1", "bind ns/jupyter->n1"));
  EXPECT_EQ(w.claims.at("home")["metadata"]["annotations"][kSelectedNodeAnnotation], "n1");
}

TEST(VolumeLoopTest, APodWithAMissingClaimWaitsWithTheClaimNamedUntilItExists) {
  VolumeWorld w;
  w.AddNode("n1");
  w.AddNode("n2");
  w.AddPodWithClaims("p", {"data"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  EXPECT_THAT(w.binds, IsEmpty());
  ASSERT_FALSE(w.reports["ns/p"].empty());
  EXPECT_THAT(w.reports["ns/p"].back().message, HasSubstr("persistentvolumeclaim \"data\" not found"));
  // The claim appears, bound to a volume on n2: the pod goes there, not to the first node.
  w.AddClaim("data", "local", "pv-n2");
  w.volumes = {{{"metadata", {{"name", "pv-n2"}}},
                {"spec", {{"nodeAffinity", {{"required", {{"nodeSelectorTerms", json::array({{{"matchFields",
                    json::array({{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"n2"}}}})}}})}}}}}}},
                {"status", {{"phase", "Bound"}}}}};
  loop.RunCycle(kNow + 1);
  EXPECT_THAT(w.binds, ElementsAre("ns/p->n2"));
  EXPECT_THAT(w.writes, ElementsAre("bind ns/p->n2"));  // bound claim: nothing to annotate
}

// NodeVolumeLimits: one CSI volume per node. Two pods placed in one cycle go to different nodes
// (the first one's volume counts for the second), and a third, once both are bound, waits with
// kube-scheduler's reason.
TEST(VolumeLoopTest, PodsPlacedInOneCycleCountAgainstANodesCsiVolumeLimitAndTheNextWaitsWithTheReason) {
  VolumeWorld w;
  for (const char* n : {"n1", "n2"}) {
    w.AddNode(n);
    w.csi_nodes.push_back({{"metadata", {{"name", n}}},
                           {"spec", {{"drivers", json::array({{{"name", "ebs.csi.aws.com"}, {"allocatable", {{"count", 1}}}}})}}}});
  }
  for (const char* c : {"a", "b", "c"}) {
    w.AddClaim(c, "ebs", std::string("pv-") + c);
    w.volumes.push_back({{"metadata", {{"name", std::string("pv-") + c}}},
                         {"spec", {{"csi", {{"driver", "ebs.csi.aws.com"}, {"volumeHandle", std::string("vol-") + c}}}}},
                         {"status", {{"phase", "Bound"}}}});
  }
  w.AddPodWithClaims("p", {"a"});
  w.AddPodWithClaims("q", {"b"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  ASSERT_EQ(w.binds.size(), 2u);
  EXPECT_NE(w.NodeOf("ns/p"), w.NodeOf("ns/q"));
  w.AddPodWithClaims("r", {"c"});
  loop.RunCycle(kNow + 1);
  EXPECT_EQ(w.NodeOf("ns/r"), "");
  ASSERT_FALSE(w.reports["ns/r"].empty());
  EXPECT_THAT(w.reports["ns/r"].back().message, HasSubstr("node(s) exceed max volume count"));
}

// VolumeBinding's storage capacity: the driver reports room for 50Gi on n2 only. A 20Gi claim is
// provisioned there (annotated with n2, then the pod bound); a 100Gi one waits with the reason.
TEST(VolumeLoopTest, AClaimIsProvisionedOnlyWhereItsCsiDriverReportsEnoughCapacityAndABiggerOneWaits) {
  VolumeWorld w;
  w.AddNode("n1");
  w.AddNode("n2");
  w.classes = {{{"metadata", {{"name", "lvm"}}}, {"provisioner", "lvm.csi.example.com"},
                {"volumeBindingMode", "WaitForFirstConsumer"}}};
  w.csi_drivers = {{{"metadata", {{"name", "lvm.csi.example.com"}}}, {"spec", {{"storageCapacity", true}}}}};
  w.csi_capacities = {{{"metadata", {{"name", "cap-n2"}, {"namespace", "kube-system"}}},
                       {"storageClassName", "lvm"},
                       {"nodeTopology", {{"matchLabels", {{"kubernetes.io/hostname", "n2"}}}}},
                       {"capacity", "50Gi"}}};
  w.AddClaim("small", "lvm");
  w.claims["small"]["spec"]["resources"] = {{"requests", {{"storage", "20Gi"}}}};
  w.AddClaim("big", "lvm");
  w.claims["big"]["spec"]["resources"] = {{"requests", {{"storage", "100Gi"}}}};
  w.AddPodWithClaims("p", {"small"});
  w.AddPodWithClaims("q", {"big"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  EXPECT_THAT(w.writes, ElementsAre("select ns/small n2", "bind ns/p->n2"));
  EXPECT_EQ(w.NodeOf("ns/q"), "");
  ASSERT_FALSE(w.reports["ns/q"].empty());
  EXPECT_THAT(w.reports["ns/q"].back().message, HasSubstr("claim \"big\" (node(s) did not have enough free storage)"));
}

TEST(VolumeLoopTest, AClaimWithALocalVolumeOnOneNodeGoesThereAndTheVolumeIsClaimedBeforeThePodIsBound) {
  VolumeWorld w;
  w.AddNode("n1");
  w.AddNode("n2");
  w.AddLocalClass();
  w.AddLocalVolume("pv-n2", "n2", "10Gi");
  w.AddLocalClaim("data", "5Gi");
  w.AddPodWithClaims("p", {"data"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  EXPECT_THAT(w.writes, ElementsAre("claim pv-n2 ns/data", "bind ns/p->n2"));
  const json& ref = w.Volume("pv-n2")["spec"]["claimRef"];
  EXPECT_EQ(ref["namespace"], "ns");
  EXPECT_EQ(ref["name"], "data");
  EXPECT_EQ(ref["uid"], "uid-data");
  EXPECT_EQ(w.Volume("pv-n2")["metadata"]["annotations"][kBoundByControllerAnnotation], "yes");
}

TEST(VolumeLoopTest, TheSmallestFittingVolumeOnTheNodeIsBound) {
  VolumeWorld w;
  w.AddNode("n1");
  w.AddLocalClass();
  w.AddLocalVolume("pv-100g", "n1", "100Gi");
  w.AddLocalVolume("pv-20g", "n1", "20Gi");
  w.AddLocalVolume("pv-5g", "n1", "5Gi");  // too small
  w.AddLocalClaim("data", "10Gi");
  w.AddPodWithClaims("p", {"data"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  EXPECT_THAT(w.writes, ElementsAre("claim pv-20g ns/data", "bind ns/p->n1"));
}

TEST(VolumeLoopTest, TwoClaimsAndOneVolumeOnePodRunsTheOtherWaitsWithTheReason) {
  VolumeWorld w;
  w.AddNode("n1");
  w.AddLocalClass();
  w.AddLocalVolume("pv-only", "n1", "10Gi");
  w.AddLocalClaim("a-data", "1Gi");
  w.AddLocalClaim("b-data", "1Gi");
  w.AddPodWithClaims("a", {"a-data"});
  w.AddPodWithClaims("b", {"b-data"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  // The queue plans one claim on n1's one volume; the other pod waits.
  ASSERT_EQ(w.writes.size(), 2u);
  const std::string winner = w.writes[0] == "claim pv-only ns/a-data" ? "a" : "b";
  const std::string loser = winner == "a" ? "b" : "a";
  EXPECT_THAT(w.writes, ElementsAre("claim pv-only ns/" + winner + "-data", "bind ns/" + winner + "->n1"));
  EXPECT_EQ(w.NodeOf("ns/" + loser), "");
  loop.RunCycle(kNow + 1);  // the volume is claimed now: the reason names the claim
  EXPECT_EQ(w.NodeOf("ns/" + loser), "");
  ASSERT_FALSE(w.reports["ns/" + loser].empty());
  EXPECT_THAT(w.reports["ns/" + loser].back().message,
              HasSubstr("no PersistentVolume of storage class \"local-storage\" matches claim \"" + loser + "-data\""));
}

TEST(VolumeLoopTest, AVolumeChosenForOneClaimIsNotWrittenForAnotherInTheSameCycle) {
  VolumeWorld w;
  w.AddNode("n1");
  w.AddNode("n2");
  w.AddLocalClass();
  // One volume both nodes may use: the queue counts it on each, so both pods are planned.
  w.AddSharedVolume("pv-any", "10Gi");
  w.AddLocalClaim("a-data", "1Gi");
  w.AddLocalClaim("b-data", "1Gi");
  w.AddPodWithClaims("a", {"a-data"});
  w.AddPodWithClaims("b", {"b-data"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  // One claim gets it; for the other no write is even tried (no conflict), and its pod is not bound.
  ASSERT_EQ(w.writes.size(), 2u) << testing::PrintToString(w.writes);
  const std::string winner = w.writes[0] == "claim pv-any ns/a-data" ? "a" : "b";
  const std::string loser = winner == "a" ? "b" : "a";
  EXPECT_THAT(w.writes[1], HasSubstr("bind ns/" + winner + "->"));
  EXPECT_EQ(w.NodeOf("ns/" + loser), "");
}

TEST(VolumeLoopTest, AVolumeWriteThatConflictsLeavesThePodUnboundAndIsRetried) {
  VolumeWorld w;
  w.AddNode("n1");
  w.AddLocalClass();
  w.AddLocalVolume("pv-n1", "n1", "10Gi");
  w.AddLocalClaim("data", "1Gi");
  w.AddPodWithClaims("p", {"data"});
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  w.conflict_next = true;  // the volume changed after this cycle read it
  loop.RunCycle(kNow);
  EXPECT_THAT(w.writes, ElementsAre("conflict pv-n1 ns/data"));
  EXPECT_EQ(w.NodeOf("ns/p"), "");
  loop.RunCycle(kNow + 1);  // read again: the write goes through at the new version
  EXPECT_THAT(w.writes, ElementsAre("conflict pv-n1 ns/data", "claim pv-n1 ns/data", "bind ns/p->n1"));
}

}  // namespace
}  // namespace onequeue::scheduler

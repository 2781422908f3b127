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
  std::vector<json> volumes, classes, csi_nodes;
  std::vector<std::string> writes;  // "select <claim> <node>" and "bind <pod>-><node>", in order
  bool refuse_select = false;

  std::shared_ptr<const KubeState> State() const override {
    auto state = std::make_shared<KubeState>(ToKubeState(Nodes(), Pods()));
    for (const auto& [name, c] : claims) {
      state->claims.push_back(std::make_shared<const k8s::PersistentVolumeClaim>(*k8s::PersistentVolumeClaim::FromJson(c)));
    }
    for (const json& v : volumes) state->volumes.push_back(std::make_shared<const k8s::PersistentVolume>(*k8s::PersistentVolume::FromJson(v)));
    for (const json& c : classes) state->classes.push_back(std::make_shared<const k8s::StorageClass>(*k8s::StorageClass::FromJson(c)));
    for (const json& n : csi_nodes) state->csi_nodes.push_back(std::make_shared<const k8s::CsiNode>(*k8s::CsiNode::FromJson(n)));
    return state;
  }
  absl::Status SelectVolumeNode(const std::string& claim_key, const std::string& node) override {
    if (refuse_select) return absl::UnavailableError("the API server is away");
    const std::string name = claim_key.substr(claim_key.find('/') + 1);
    claims.at(name)["metadata"]["annotations"][kSelectedNodeAnnotation] = node;
    writes.push_back("select " + claim_key + " " + node);
    return absl::OkStatus();
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

}  // namespace
}  // namespace onequeue::scheduler

// Issue 25 DRA, docs/sharing.md section 5, the snapshot (scheduler/dra_pods.h): on a gpus: dra
// node a pod's claims are its GPUs, a pod asking GPUs by extended resource is kept off it, and a
// pod with claims elsewhere keeps today's refusal.
#include "scheduler/dra_pods.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onequeue::scheduler {
namespace {

using ::testing::HasSubstr;

const SlurmConfig::DraGpus kGpus{{"gpu.example.com"}, "index"};

std::shared_ptr<const NodeRecord> Node(const std::string& name, int64_t gpus = 0) {
  auto n = std::make_shared<NodeRecord>();
  n->name = name;
  n->allocatable["cpu"] = k8s::Quantity::FromInt(8);
  if (gpus > 0) n->allocatable["nvidia.com/gpu"] = k8s::Quantity::FromInt(gpus);
  return n;
}

std::shared_ptr<const PodRecord> Pod(const std::string& name, std::vector<std::string> claims, int64_t gpus = 0) {
  k8s::Pod p;
  p.metadata.namespace_ = "ml";
  p.metadata.name = name;
  p.metadata.uid = "uid-" + name;
  for (const std::string& c : claims) {
    p.resource_claims.push_back(c);
    p.resource_claim_objects.push_back(c);
  }
  auto r = std::make_shared<PodRecord>(PodRecord::From(p));
  r->requests["cpu"] = k8s::Quantity::FromInt(1);
  if (gpus > 0) r->requests["nvidia.com/gpu"] = k8s::Quantity::FromInt(gpus);
  return r;
}

// n1 (a gpus: dra node: 4 indexed devices, no extended resource), n2 (device plugin: 2 GPUs);
// the claim ml/two asks 2 GPUs of the class.
struct Scene {
  KubeState state;
  DraNodes dra;
  Scene() {
    state.nodes = {Node("n1"), Node("n2", 2)};
    auto s = std::make_shared<k8s::ResourceSlice>();
    s->metadata.name = "n1-gpus";
    s->driver = "gpu.example.com";
    s->pool_name = "n1";
    s->pool_generation = 1;
    s->pool_slice_count = 1;
    s->node_name = "n1";
    for (int64_t i = 0; i < 4; ++i) {
      k8s::Device d;
      d.name = "gpu-" + std::to_string(i);
      d.attributes["index"] = {k8s::DeviceAttribute::Kind::kInt, i, "", false};
      s->devices.push_back(d);
    }
    state.resource_slices = {s};
    auto c = std::make_shared<k8s::ResourceClaim>();
    c->metadata.namespace_ = "ml";
    c->metadata.name = "two";
    c->requests = {{"g", "gpu.example.com", "ExactCount", 2, false, false}};
    state.resource_claims = {c};
    dra.of_node = {{"n1", kGpus}};
  }
  const PodRecord& PodOf(const KubeState& s, const std::string& name) {
    for (const auto& p : s.pods)
      if (p->name == name) return *p;
    throw std::runtime_error(name);
  }
  int64_t Gpus(const PodRecord& p) {
    auto it = p.requests.find("nvidia.com/gpu");
    return it == p.requests.end() ? 0 : it->second.Value();
  }
};

TEST(DraPodsTest, APodsClaimsAreItsGpusOnlyOnTheDraNodesWhoseGpusAreItsIndexedDevices) {
  Scene s;
  s.state.pods = {Pod("train", {"two"})};
  auto out = WithDraGpus(std::make_shared<const KubeState>(s.state), s.dra);
  const PodRecord& train = s.PodOf(*out, "train");
  EXPECT_EQ(train.unsupported_placement, "");
  EXPECT_EQ(s.Gpus(train), 2);
  EXPECT_EQ(train.eligibility.allowed_nodes, (std::vector<std::string>{"n1"}));
  EXPECT_EQ(out->nodes[0]->allocatable.at("nvidia.com/gpu").Value(), 4);  // n1: its indexed devices
  EXPECT_EQ(out->nodes[1]->allocatable.at("nvidia.com/gpu").Value(), 2);  // n2 as it is
}

TEST(DraPodsTest, APendingPodAskingGpusByExtendedResourceIsKeptOffDraNodesAndWaitsWithTheReasonWhenNoneIsLeft) {
  Scene s;
  s.state.pods = {Pod("web", {}, 1)};
  auto out = WithDraGpus(std::make_shared<const KubeState>(s.state), s.dra);
  EXPECT_EQ(s.PodOf(*out, "web").eligibility.allowed_nodes, (std::vector<std::string>{"n2"}));
  EXPECT_EQ(s.PodOf(*out, "web").unsupported_placement, "");
  s.state.nodes = {Node("n1"), Node("n2")};  // n2 without GPUs
  out = WithDraGpus(std::make_shared<const KubeState>(s.state), s.dra);
  EXPECT_THAT(s.PodOf(*out, "web").unsupported_placement,
              HasSubstr("asks nvidia.com/gpu by extended resource, and the GPUs of shared nodes with gpus: dra (n1) "
                        "are given only through ResourceClaims"));
}

TEST(DraPodsTest, APodWithClaimsWithoutDraNodesKeepsTheRefusalAndAClaimNotMadeYetIsAReason) {
  Scene s;
  s.state.pods = {Pod("train", {"two"})};
  const std::string refusal = s.state.pods[0]->unsupported_placement;
  EXPECT_THAT(refusal, HasSubstr("DynamicResources claim allocation is not supported yet"));
  auto state = std::make_shared<const KubeState>(s.state);
  EXPECT_EQ(WithDraGpus(state, DraNodes{}), state);  // no gpus: dra node: the state as it is
  s.state.pods = {Pod("train", {"missing"})};
  auto out = WithDraGpus(std::make_shared<const KubeState>(s.state), s.dra);
  EXPECT_THAT(s.PodOf(*out, "train").unsupported_placement, HasSubstr("ResourceClaim ml/missing not made yet"));
}

TEST(DraPodsTest, AClaimAllocatedBySomeoneElseIsTheReasonAndOneReservedForThePodCountsAsItsOwn) {
  Scene s;
  s.state.pods = {Pod("train", {"two"})};
  auto claim = std::make_shared<k8s::ResourceClaim>(*s.state.resource_claims[0]);
  claim->allocated = true;
  claim->allocation_node = "n1";
  claim->reserved_for = {{"", "pods", "other", "uid-other"}};
  s.state.resource_claims = {claim};
  auto out = WithDraGpus(std::make_shared<const KubeState>(s.state), s.dra);
  EXPECT_THAT(s.PodOf(*out, "train").unsupported_placement, HasSubstr("ResourceClaim ml/two is already allocated"));
  claim->reserved_for = {{"", "pods", "train", "uid-train"}};  // onequeue's own write for it
  out = WithDraGpus(std::make_shared<const KubeState>(s.state), s.dra);
  EXPECT_EQ(s.PodOf(*out, "train").unsupported_placement, "");
  EXPECT_EQ(s.Gpus(s.PodOf(*out, "train")), 2);
}

}  // namespace
}  // namespace onequeue::scheduler

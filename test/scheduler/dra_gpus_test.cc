// Issue 25, docs/sharing.md section 5: a pod's claims counted in Slurm's GPUs and allocated to the
// devices whose index is the one Slurm gave the pod's placeholder (scheduler/dra_gpus.h).
#include "scheduler/dra_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onequeue::scheduler {
namespace {

using k8s::DeviceAllocationResult;
using ::testing::HasSubstr;

const SlurmConfig::DraGpus kGpus{{"gpu.example.com"}, "index"};

k8s::ResourceClaim Claim(const std::string& name, std::vector<k8s::DeviceRequest> requests) {
  k8s::ResourceClaim c;
  c.metadata.namespace_ = "ml";
  c.metadata.name = name;
  c.requests = std::move(requests);
  return c;
}
k8s::DeviceRequest Gpus(const std::string& name, int64_t count) {
  return {name, "gpu.example.com", "ExactCount", count, false, false};
}

// A driver's slice of `node`: devices gpu-<i> with int attribute index=i for each i of `indices`.
k8s::ResourceSlice Slice(const std::string& node, const std::vector<int64_t>& indices, int64_t generation = 1,
                         int64_t slice_count = 1, const std::string& key = "index") {
  k8s::ResourceSlice s;
  s.metadata.name = node + "-gpus";
  s.driver = "gpu.example.com";
  s.pool_name = node;
  s.pool_generation = generation;
  s.pool_slice_count = slice_count;
  s.node_name = node;
  for (int64_t i : indices) {
    k8s::Device d;
    d.name = "gpu-" + std::to_string(i);
    d.attributes[key] = {k8s::DeviceAttribute::Kind::kInt, i, "", false};
    s.devices.push_back(d);
  }
  return s;
}

TEST(DraGpusTest, ThePodsGpuCountIsTheSumOfItsClaimsGpuRequests) {
  auto n = DraGpuCount({Claim("a", {Gpus("g", 2)}), Claim("b", {Gpus("x", 1), Gpus("y", 1)})}, kGpus);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 4);
  EXPECT_EQ(*DraGpuCount({}, kGpus), 0);
}

TEST(DraGpusTest, ARequestThatCannotCountInSlurmsGpusIsAReason) {
  auto Why = [](k8s::DeviceRequest r) {
    auto n = DraGpuCount({Claim("a", {r})}, kGpus);
    EXPECT_EQ(n.status().code(), absl::StatusCode::kFailedPrecondition);
    return std::string(n.status().message());
  };
  k8s::DeviceRequest all = Gpus("g", 1);
  all.allocation_mode = "All";
  EXPECT_THAT(Why(all), HasSubstr("ResourceClaim ml/a request g asks allocationMode All"));
  k8s::DeviceRequest other = Gpus("g", 1);
  other.device_class_name = "fpga";
  EXPECT_THAT(Why(other), HasSubstr("DeviceClass \"fpga\", not one of the partition's GPU classes (gpu.example.com)"));
  k8s::DeviceRequest listed{"g", "", "ExactCount", 1, false, true};
  EXPECT_THAT(Why(listed), HasSubstr("a prioritized list (firstAvailable)"));
  k8s::DeviceRequest cel = Gpus("g", 1);
  cel.has_selectors = true;
  EXPECT_THAT(Why(cel), HasSubstr("CEL selectors"));
  k8s::ResourceClaim taken = Claim("t", {Gpus("g", 1)});
  taken.allocated = true;
  taken.allocation_node = "node-b";
  EXPECT_THAT(DraGpuCount({taken}, kGpus).status().message(), HasSubstr("ResourceClaim ml/t is already allocated (on node-b)"));
}

// The scene of the e2e: 4 GPUs, Slurm's job holds 0-1, the placeholder got 2-3: the pod's claim
// gets exactly gpu-2 and gpu-3, whose index attributes are 2 and 3 (not the slice's order).
TEST(DraGpusTest, TheClaimGetsExactlyTheDevicesWhoseIndexIsThePlaceholders) {
  k8s::ResourceSlice s = Slice("node-a", {3, 1, 2, 0});
  auto a = AllocateByIndex({Claim("two", {Gpus("gpus", 2)})}, {Slice("node-b", {2, 3}), s}, "node-a", {2, 3}, kGpus, {});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->at("ml/two"), (std::vector<DeviceAllocationResult>{{"gpus", "gpu.example.com", "node-a", "gpu-2"},
                                                                  {"gpus", "gpu.example.com", "node-a", "gpu-3"}}));
  // Two claims take the indices in order; a qualified attribute name is the same attribute.
  k8s::ResourceSlice q = Slice("node-a", {0, 1, 2, 3}, 1, 1, "gpu.example.com/index");
  auto b = AllocateByIndex({Claim("one", {Gpus("g", 1)}), Claim("other", {Gpus("h", 1)})}, {q}, "node-a", {1, 3}, kGpus, {});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->at("ml/one"), (std::vector<DeviceAllocationResult>{{"g", "gpu.example.com", "node-a", "gpu-1"}}));
  EXPECT_EQ(b->at("ml/other"), (std::vector<DeviceAllocationResult>{{"h", "gpu.example.com", "node-a", "gpu-3"}}));
}

TEST(DraGpusTest, ASliceWithoutEnoughMatchingDevicesIsAReasonNotACrash) {
  const auto claims = std::vector<k8s::ResourceClaim>{Claim("two", {Gpus("gpus", 2)})};
  auto missing = AllocateByIndex(claims, {Slice("node-a", {0, 1, 2})}, "node-a", {2, 3}, kGpus, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.status().message(), HasSubstr("no device of node node-a's ResourceSlices has index=3"));
  auto none = AllocateByIndex(claims, {}, "node-a", {2, 3}, kGpus, {});
  EXPECT_THAT(none.status().message(), HasSubstr("has index=2"));
  auto fewer = AllocateByIndex(claims, {Slice("node-a", {0, 1, 2, 3})}, "node-a", {2}, kGpus, {});
  EXPECT_THAT(fewer.status().message(), HasSubstr("the pod's claims ask 2 GPUs and its placeholder holds 1 (indices 2)"));
  k8s::ResourceSlice twice = Slice("node-a", {2, 3});
  twice.devices.push_back(twice.devices[0]);
  twice.devices.back().name = "gpu-2-again";
  EXPECT_THAT(AllocateByIndex(claims, {twice}, "node-a", {2, 3}, kGpus, {}).status().message(),
              HasSubstr("2 devices of node node-a have index=2"));
  EXPECT_THAT(AllocateByIndex(claims, {Slice("node-a", {2, 3})}, "node-a", {2, 3}, kGpus,
                              {{"gpu.example.com", "node-a", "gpu-3"}}).status().message(),
              HasSubstr("device gpu-3 (index=3) of node node-a is already allocated"));
}

// kube-scheduler's rule: a pool counts only at its newest generation, and only once all of its
// slices are seen.
TEST(DraGpusTest, StaleOrIncompletePoolsAreNotUsed) {
  const auto claims = std::vector<k8s::ResourceClaim>{Claim("one", {Gpus("g", 1)})};
  k8s::ResourceSlice old = Slice("node-a", {0}, 1);
  k8s::ResourceSlice now = Slice("node-a", {1}, 2);
  EXPECT_THAT(AllocateByIndex(claims, {old, now}, "node-a", {0}, kGpus, {}).status().message(), HasSubstr("index=0"));
  EXPECT_TRUE(AllocateByIndex(claims, {old, now}, "node-a", {1}, kGpus, {}).ok());
  k8s::ResourceSlice half = Slice("node-a", {0}, 1, 2);
  EXPECT_THAT(AllocateByIndex(claims, {half}, "node-a", {0}, kGpus, {}).status().message(), HasSubstr("index=0"));
}

TEST(DraGpusTest, AllocatedDevicesAreEveryClaimsButTheOneNamed) {
  k8s::ResourceClaim a = Claim("a", {});
  a.allocated = true;
  a.results = {{"g", "d", "p", "gpu-0"}};
  k8s::ResourceClaim b = Claim("b", {});
  b.allocated = true;
  b.results = {{"g", "d", "p", "gpu-1"}};
  EXPECT_EQ(AllocatedDevices({a, b, Claim("c", {})}, "ml/b"), (std::set<DeviceId>{{"d", "p", "gpu-0"}}));
}

// The claim's allocation is the durable record of the claim step: after a crash between the write
// and the bind, the successor binds when it is the placeholder's; otherwise it undoes its own write
// and never touches another's.
TEST(DraGpusTest, ASuccessorFinishesOrUndoesAHalfDoneClaimFromTheClaimAlone) {
  const std::vector<DeviceAllocationResult> expected = {{"gpus", "gpu.example.com", "node-a", "gpu-2"},
                                                        {"gpus", "gpu.example.com", "node-a", "gpu-3"}};
  k8s::ResourceClaim fresh = Claim("two", {Gpus("gpus", 2)});
  EXPECT_EQ(NextClaimStep(fresh, "p-1", "node-a", expected), ClaimStep::kWrite);
  k8s::ResourceClaim written = fresh;
  written.allocated = true;
  written.allocation_node = "node-a";
  written.results = expected;
  written.reserved_for = {{"", "pods", "nb", "p-1"}};
  EXPECT_EQ(NextClaimStep(written, "p-1", "node-a", expected), ClaimStep::kBind);
  // The placeholder no longer runs (or got other indices): the write is undone.
  EXPECT_EQ(NextClaimStep(written, "p-1", "node-a", std::nullopt), ClaimStep::kClear);
  std::vector<DeviceAllocationResult> other = expected;
  other[1].device = "gpu-1";
  EXPECT_EQ(NextClaimStep(written, "p-1", "node-a", other), ClaimStep::kClear);
  EXPECT_EQ(NextClaimStep(written, "p-1", "node-b", expected), ClaimStep::kClear);
  // Another pod's (or another scheduler's) allocation is never cleared: the pod waits.
  EXPECT_EQ(NextClaimStep(written, "p-2", "node-a", expected), ClaimStep::kWait);
  k8s::ResourceClaim bare = written;
  bare.reserved_for.clear();
  EXPECT_EQ(NextClaimStep(bare, "p-1", "node-a", expected), ClaimStep::kWait);
}

}  // namespace
}  // namespace onequeue::scheduler

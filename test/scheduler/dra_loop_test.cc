// Issue 25 DRA, docs/sharing.md section 5, the whole loop in memory: on a shared node of a
// `gpus: dra` partition a pod's ResourceClaims are its GPUs; its placeholder asks Slurm for that
// many, and once it runs the claims are allocated to exactly the devices of the placeholder's GPU
// indices (the claim step, dra_claim_step.cc), THEN the pod is bound.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_world.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr queue::Time kT0 = kSlurmLoopT0;
constexpr char kDriver[] = "gpu.example.com";

// n1: 8 CPUs, Slurm's 4 GPUs published by a DRA driver as devices gpu-0..gpu-3 of index 0..3 (no
// extended resource); Slurm job 7 runs there on GPU indices 0,1; the pod ns/train (2 CPUs) claims
// 2 GPUs by the ResourceClaim ns/train-gpus.
struct DraScene {
  SlurmLoopCluster c{0};
  Config cfg = SlurmLoopConfig("placeholder");
  DraScene() {
    c.k8s.AddNode("n1", "8");
    c.slurm.AddNode("n1");
    cfg.slurm.partition_sharing = {{"pool", "shared"}};
    cfg.slurm.partition_dra_gpus = {{"pool", SlurmConfig::DraGpus{{kDriver}, "index"}}};
    slurm::SlurmJob& job = c.slurm.Submit(7, 4);
    job.gres_per_node = {{"gpu", 2}};
    c.slurm.Run(7, "n1");
    c.slurm.Job(7).allocation.nodes[0].gres_indices = {{"gpu", {0, 1}}};
    k8s::ResourceSlice s;
    s.metadata.name = "n1-gpus";
    s.driver = kDriver;
    s.pool_name = "n1";
    s.pool_generation = 1;
    s.pool_slice_count = 1;
    s.node_name = "n1";
    for (int64_t i = 0; i < 4; ++i) {
      k8s::Device d;
      d.name = "gpu-" + std::to_string(i);
      d.attributes["index"] = {k8s::DeviceAttribute::Kind::kInt, i, "", false};
      s.devices.push_back(d);
    }
    c.k8s.resource_slices.push_back(s);
    k8s::ResourceClaim claim;
    claim.metadata.namespace_ = "ns";
    claim.metadata.name = "train-gpus";
    claim.requests = {{"g", kDriver, "ExactCount", 2, false, false}};
    c.k8s.resource_claims["ns/train-gpus"] = claim;
    c.k8s.AddClaimPod("train", "2", {"train-gpus"});
  }
  const k8s::ResourceClaim& Claim() { return c.k8s.resource_claims.at("ns/train-gpus"); }
  // Cycles until the pod's placeholder is submitted (the first cycle joins the nodes with Slurm).
  uint32_t PlanThePod(SchedulingLoop& loop) {
    c.Cycle(loop, kT0);
    c.Cycle(loop, kT0 + 5);
    EXPECT_EQ(c.slurm.pod_placeholders.size(), 1u);
    return c.slurm.pod_placeholders.empty() ? 0 : c.slurm.pod_placeholders[0];
  }
  // Slurm starts the placeholder on GPU indices 2,3 (0,1 are job 7's).
  void RunThePlaceholder(uint32_t id) {
    c.slurm.Run(id, "n1");
    c.slurm.Job(id).allocation.nodes[0].gres_indices = {{"gpu", {2, 3}}};
  }
  std::vector<k8s::DeviceAllocationResult> Indices23() {
    return {{"g", kDriver, "n1", "gpu-2"}, {"g", kDriver, "n1", "gpu-3"}};
  }
};

// The scene: the placeholder asks gres gpu:2; once it runs on indices 2,3 the claim is written
// with the devices of index 2 and 3, pinned to n1 and reserved for the pod, and only then is the
// pod bound (a write refused first: no bind that cycle). Job 7's indices 0,1 are never the pod's.
TEST(DraLoopTest, ThePodsClaimNamesThePlaceholdersGpuIndicesAndIsWrittenBeforeTheBind) {
  DraScene s;
  SchedulingLoop loop(s.cfg, &s.c.k8s, &s.c.k8s, &s.c.slurm);
  const uint32_t ph = s.PlanThePod(loop);
  ASSERT_NE(ph, 0u);
  EXPECT_EQ(s.c.slurm.Job(ph).gres_per_node, (slurm::GresMap{{"gpu", 2}}));
  EXPECT_EQ(s.c.k8s.NodeOf("ns/train"), "");
  EXPECT_TRUE(s.c.k8s.dra_log.empty());  // nothing written before the placeholder runs
  s.RunThePlaceholder(ph);
  s.c.k8s.claim_conflicts = 1;  // the first write is refused (409): no bind without the claim
  s.c.Cycle(loop, kT0 + 10);
  EXPECT_TRUE(s.c.k8s.dra_log.empty());
  EXPECT_EQ(s.c.k8s.NodeOf("ns/train"), "");
  s.c.Cycle(loop, kT0 + 15);
  EXPECT_THAT(s.c.k8s.dra_log, ElementsAre("allocate ns/train-gpus", "bind ns/train"));
  EXPECT_TRUE(s.Claim().allocated);
  EXPECT_EQ(s.Claim().results, s.Indices23());
  EXPECT_EQ(s.Claim().allocation_node, "n1");
  ASSERT_EQ(s.Claim().reserved_for.size(), 1u);
  EXPECT_EQ(s.Claim().reserved_for[0].uid, s.c.k8s.UidOf("ns/train"));
  EXPECT_EQ(s.c.k8s.NodeOf("ns/train"), "n1");
  s.c.Cycle(loop, kT0 + 20);  // the bind seen: mirrored, bound
  EXPECT_EQ(loop.mirrors().Find(s.c.k8s.UidOf("ns/train"))->state, MirrorState::kBound);
  EXPECT_EQ(s.c.k8s.dra_log.size(), 2u);  // nothing written again
}

// A crash between the claim write and the bind (the bind in flight, never answered): the successor
// reads the placeholder back (running, the pod unbound), finds the claim written as the
// placeholder's indices ask (NextClaimStep: bind) and binds, writing nothing again.
TEST(DraLoopTest, ASuccessorBindsAPodWhoseClaimWasWrittenBeforeTheCrash) {
  DraScene s;
  s.c.k8s.async_binds = true;
  {
    SchedulingLoop loop(s.cfg, &s.c.k8s, &s.c.k8s, &s.c.slurm);
    s.RunThePlaceholder(s.PlanThePod(loop));
    s.c.Cycle(loop, kT0 + 10);
    ASSERT_THAT(s.c.k8s.dra_log, ElementsAre("allocate ns/train-gpus"));
    ASSERT_EQ(s.c.k8s.in_flight.size(), 1u);
  }
  s.c.k8s.in_flight.clear();  // the process died with it
  s.c.k8s.async_binds = false;
  SchedulingLoop successor(s.cfg, &s.c.k8s, &s.c.k8s, &s.c.slurm);
  s.c.Cycle(successor, kT0 + 15);
  s.c.Cycle(successor, kT0 + 20);
  EXPECT_THAT(s.c.k8s.dra_log, ElementsAre("allocate ns/train-gpus", "bind ns/train"));
  EXPECT_EQ(s.c.k8s.NodeOf("ns/train"), "n1");
  EXPECT_EQ(s.Claim().results, s.Indices23());
  EXPECT_EQ(s.c.Calls("cancel " + std::to_string(s.c.slurm.pod_placeholders[0])), 0);
}

// Someone else (another scheduler, an administrator) allocates the claim while the placeholder
// is pending: the claim is never touched, the placeholder is cancelled at once (the one undo
// path), the pod is not bound and waits with the reason.
TEST(DraLoopTest, AClaimAllocatedBySomeoneElseIsNeverTouchedAndThePodWaitsWithTheReason) {
  DraScene s;
  SchedulingLoop loop(s.cfg, &s.c.k8s, &s.c.k8s, &s.c.slurm);
  const uint32_t ph = s.PlanThePod(loop);
  k8s::ResourceClaim& claim = s.c.k8s.resource_claims.at("ns/train-gpus");
  claim.allocated = true;
  claim.results = {{"g", kDriver, "n1", "gpu-0"}, {"g", kDriver, "n1", "gpu-1"}};
  claim.allocation_node = "n1";
  claim.reserved_for = {{"", "pods", "other", "uid-other"}};
  const k8s::ResourceClaim before = claim;
  s.c.Cycle(loop, kT0 + 10);  // the placeholder still pending: NextClaimStep says wait
  EXPECT_EQ(s.c.slurm.Job(ph).state, slurm::JobState::kCancelled);
  s.c.Cycle(loop, kT0 + 15);
  EXPECT_TRUE(s.c.k8s.dra_log.empty());
  EXPECT_EQ(s.Claim().results, before.results);
  EXPECT_EQ(s.Claim().reserved_for, before.reserved_for);
  EXPECT_EQ(s.c.k8s.NodeOf("ns/train"), "");
  EXPECT_EQ(s.c.slurm.Job(ph).state, slurm::JobState::kCancelled);
  ASSERT_FALSE(s.c.k8s.reports["ns/train"].empty());
  EXPECT_THAT(s.c.k8s.reports["ns/train"].back().message, HasSubstr("ResourceClaim ns/train-gpus is already allocated"));
}

}  // namespace
}  // namespace onequeue::scheduler

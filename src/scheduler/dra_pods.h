#pragma once
// Issue 25 DRA, docs/sharing.md section 5, the snapshot: on a shared node of a `gpus: dra`
// partition a pod gets GPUs only through ResourceClaims, and onequeue plans it as it plans a pod
// asking `nvidia.com/gpu: N` (N = DraGpuCount of its claims), so its placeholder asks Slurm for
// gres gpu:N and the claim step (dra_claim_step.h) then gives it the devices of exactly the
// indices Slurm gave the placeholder.
//
//   - a pod with claims may go only to such nodes (its eligibility's allowed nodes); elsewhere, or
//     when no partition says gpus: dra, it keeps the refusal PodRecord::From gives it;
//   - a pending pod asking GPUs by extended resource may not go there (the node's GPUs are
//     Slurm's indices handed out by claim); with no other node it waits with that reason;
//   - such a node's GPU capacity is the count of its indexed devices (a DRA node publishes no
//     extended resource).
//
// Pure: the state is rewritten (changed records copied), nothing is read or written elsewhere.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/config.h"
#include "scheduler/slurm_world.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {

struct DraNodes {
  // Shared pool nodes (Kubernetes names) in a gpus: dra partition -> that partition's settings.
  std::map<std::string, SlurmConfig::DraGpus> of_node;
  // The extended resource Slurm's `gpu` GRES is planned as (slurm.gresResources).
  std::string gpu_resource = "nvidia.com/gpu";
};

// The shared nodes of `records` (the last join with Slurm) in a partition with gpus: dra.
DraNodes DraNodesOf(const SlurmConfig& slurm, const SlurmRecords& records);

// The pod's claims as read now (pod.resource_claims order). Refused with the reason when one is not
// made yet or not seen. `counted_as_unallocated`: a claim reserved for this pod is returned without
// its allocation (what onequeue wrote for it counts as not written: its count, its expected
// allocation, are the same before and after the write).
absl::StatusOr<std::vector<k8s::ResourceClaim>> PodClaimObjects(const PodRecord& pod, const KubeState& state,
                                                                bool counted_as_unallocated);

// `state` as the planner sees it under `nodes` (the rules above). The same object when no node is a
// gpus: dra node.
std::shared_ptr<const KubeState> WithDraGpus(const std::shared_ptr<const KubeState>& state, const DraNodes& nodes);

}  // namespace onequeue::scheduler

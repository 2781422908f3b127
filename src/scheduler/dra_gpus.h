#pragma once
// Issue 25, docs/sharing.md section 5: GPUs on a shared node isolated by index. On a partition
// with `gpus: dra` a pod gets GPUs only through ResourceClaims of the partition's GPU
// DeviceClasses; onequeue, the pod's scheduler, allocates them to exactly the devices whose index
// attribute equals the GPU indices Slurm gave the pod's placeholder (gres_detail IDX), so Slurm's
// books and the pod's devices agree by index and the other indices stay Slurm's.
//
// Pure: the claims and slices are arguments; what cannot be done is an error whose message is the
// pod's waiting reason (kFailedPrecondition), never a crash.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "k8s_client/dra.h"
#include "scheduler/config.h"

namespace onequeue::scheduler {

// The pod's GPU count on a dra partition: the sum of its claims' requests of the configured
// classes (ExactCount). A request in mode All, a prioritized list (firstAvailable), CEL selectors,
// a class that is not one of the partition's GPU classes, or a claim already allocated elsewhere
// is refused with the reason: onequeue would not know how many of Slurm's GPUs it takes, or which.
absl::StatusOr<int64_t> DraGpuCount(const std::vector<k8s::ResourceClaim>& claims, const SlurmConfig::DraGpus& gpus);

// A device already allocated to some claim (driver, pool, device).
using DeviceId = std::tuple<std::string, std::string, std::string>;
// Every device some claim's allocation names, except those of `except_claim` (namespace/name).
std::set<DeviceId> AllocatedDevices(const std::vector<k8s::ResourceClaim>& claims, const std::string& except_claim = "");

// The allocation of each of the pod's claims (by namespace/name, in the order given) on `node`:
// the claims' GPU requests take `indices` in order (Slurm's indices of the placeholder, ascending),
// each index the one device of the node's ResourceSlices whose int attribute `index_attribute`
// (or "<driver>/<index_attribute>") equals it. Slices of a pool count only at the pool's newest
// generation and when all of its resourceSliceCount slices are seen (as kube-scheduler does).
// Refused with the reason when the counts differ, an index has no device or more than one, or a
// device is already allocated (`in_use`).
absl::StatusOr<std::map<std::string, std::vector<k8s::DeviceAllocationResult>>> AllocateByIndex(
    const std::vector<k8s::ResourceClaim>& claims, const std::vector<k8s::ResourceSlice>& slices,
    const std::string& node, const std::vector<int64_t>& indices, const SlurmConfig::DraGpus& gpus,
    const std::set<DeviceId>& in_use);

// The node's GPUs as onequeue plans them: the indices that name exactly one device of its
// ResourceSlices (complete pools at their newest generation), as AllocateByIndex finds them.
int64_t IndexedGpuCount(const std::vector<k8s::ResourceSlice>& slices, const std::string& node,
                        const std::string& index_attribute);

// What to do with one of the pod's claims, by the claim as read now: the claim's allocation is the
// durable record of the claim step (written in one status PUT with the pod in reservedFor), so a
// successor after a crash, or this process after a failed call, decides from it alone.
// `expected`: the allocation AllocateByIndex gives for the placeholder's indices on `node`, or
// nullopt when the placeholder no longer runs there (or its indices are unknown).
enum class ClaimStep {
  kWrite,  // not allocated: write the expected allocation (and the pod in reservedFor)
  kBind,   // allocated as expected, reserved for the pod: the write landed; bind the pod
  kClear,  // reserved for the pod but not as expected (or the placeholder is gone): undo it
  kWait,   // allocated and not reserved for the pod: not onequeue's write; the pod waits (reason)
};
ClaimStep NextClaimStep(const k8s::ResourceClaim& claim, const std::string& pod_uid, const std::string& node,
                        const std::optional<std::vector<k8s::DeviceAllocationResult>>& expected);

}  // namespace onequeue::scheduler

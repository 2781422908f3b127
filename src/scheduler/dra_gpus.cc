#include "scheduler/dra_gpus.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onequeue::scheduler {
namespace {

bool IsGpuClass(const SlurmConfig::DraGpus& gpus, const std::string& cls) {
  return std::find(gpus.device_classes.begin(), gpus.device_classes.end(), cls) != gpus.device_classes.end();
}

// Why the request cannot be counted in Slurm's GPUs; "" when it can.
std::string RefusedRequest(const k8s::DeviceRequest& r, const SlurmConfig::DraGpus& gpus) {
  if (r.first_available) return "a prioritized list (firstAvailable)";
  if (!IsGpuClass(gpus, r.device_class_name))
    return absl::StrCat("DeviceClass \"", r.device_class_name, "\", not one of the partition's GPU classes (",
                        absl::StrJoin(gpus.device_classes, ", "), ")");
  if (r.allocation_mode != "ExactCount")
    return absl::StrCat("allocationMode ", r.allocation_mode, " (only ExactCount has a count Slurm can hold)");
  if (r.has_selectors) return "CEL selectors (onequeue does not evaluate them)";
  if (r.count < 1) return absl::StrCat("count ", r.count);
  return "";
}

// The node's devices by index: (slice, device) of each, from complete pools at their newest
// generation only.
struct IndexedDevice {
  const k8s::ResourceSlice* slice;
  const k8s::Device* device;
};

bool HasIndex(const k8s::ResourceSlice& s, const k8s::Device& d, const std::string& attribute, int64_t* index) {
  for (const std::string& key : {attribute, absl::StrCat(s.driver, "/", attribute)}) {
    auto it = d.attributes.find(key);
    if (it != d.attributes.end() && it->second.kind == k8s::DeviceAttribute::Kind::kInt) {
      *index = it->second.int_value;
      return true;
    }
  }
  return false;
}

std::map<int64_t, std::vector<IndexedDevice>> DevicesByIndex(const std::vector<k8s::ResourceSlice>& slices,
                                                             const std::string& node, const std::string& attribute) {
  // Per (driver, pool): the newest generation and how many of its slices are seen.
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>> pools;
  for (const k8s::ResourceSlice& s : slices) {
    if (s.node_name != node) continue;
    auto [it, added] = pools.try_emplace({s.driver, s.pool_name}, s.pool_generation, 0);
    if (s.pool_generation > it->second.first) it->second = {s.pool_generation, 0};
    if (s.pool_generation == it->second.first) ++it->second.second;
  }
  std::map<int64_t, std::vector<IndexedDevice>> out;
  for (const k8s::ResourceSlice& s : slices) {
    if (s.node_name != node) continue;
    const auto& [generation, seen] = pools.at({s.driver, s.pool_name});
    if (s.pool_generation != generation || seen < s.pool_slice_count) continue;  // stale or incomplete pool
    for (const k8s::Device& d : s.devices) {
      int64_t index = 0;
      if (HasIndex(s, d, attribute, &index)) out[index].push_back({&s, &d});
    }
  }
  return out;
}

absl::Status Refuse(const std::string& why) { return absl::FailedPreconditionError(why); }

}  // namespace

absl::StatusOr<int64_t> DraGpuCount(const std::vector<k8s::ResourceClaim>& claims, const SlurmConfig::DraGpus& gpus) {
  int64_t total = 0;
  for (const k8s::ResourceClaim& c : claims) {
    if (c.allocated)
      return Refuse(absl::StrCat("ResourceClaim ", c.metadata.Key(), " is already allocated (on ",
                                 c.allocation_node.empty() ? "no one node" : c.allocation_node,
                                 "): its devices are not Slurm's indices of this pod"));
    for (const k8s::DeviceRequest& r : c.requests) {
      if (std::string why = RefusedRequest(r, gpus); !why.empty())
        return Refuse(absl::StrCat("ResourceClaim ", c.metadata.Key(), " request ", r.name, " asks ", why,
                                   ": on a shared node with gpus: dra a pod's devices must be Slurm's GPU indices"));
      total += r.count;
    }
  }
  return total;
}

std::set<DeviceId> AllocatedDevices(const std::vector<k8s::ResourceClaim>& claims, const std::string& except_claim) {
  std::set<DeviceId> out;
  for (const k8s::ResourceClaim& c : claims) {
    if (!c.allocated || c.metadata.Key() == except_claim) continue;
    for (const k8s::DeviceAllocationResult& r : c.results) out.insert({r.driver, r.pool, r.device});
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::vector<k8s::DeviceAllocationResult>>> AllocateByIndex(
    const std::vector<k8s::ResourceClaim>& claims, const std::vector<k8s::ResourceSlice>& slices,
    const std::string& node, const std::vector<int64_t>& indices, const SlurmConfig::DraGpus& gpus,
    const std::set<DeviceId>& in_use) {
  absl::StatusOr<int64_t> count = DraGpuCount(claims, gpus);
  if (!count.ok()) return count.status();
  if (*count != static_cast<int64_t>(indices.size()))
    return Refuse(absl::StrCat("the pod's claims ask ", *count, " GPUs and its placeholder holds ", indices.size(),
                               " (indices ", absl::StrJoin(indices, ","), ")"));
  const auto by_index = DevicesByIndex(slices, node, gpus.index_attribute);
  std::map<std::string, std::vector<k8s::DeviceAllocationResult>> out;
  size_t next = 0;
  for (const k8s::ResourceClaim& c : claims) {
    std::vector<k8s::DeviceAllocationResult>& results = out[c.metadata.Key()];
    for (const k8s::DeviceRequest& r : c.requests) {
      for (int64_t n = 0; n < r.count; ++n, ++next) {
        const int64_t index = indices[next];
        auto it = by_index.find(index);
        if (it == by_index.end())
          return Refuse(absl::StrCat("no device of node ", node, "'s ResourceSlices has ", gpus.index_attribute, "=",
                                     index, " (Slurm's GPU index of the pod's placeholder)"));
        if (it->second.size() > 1)
          return Refuse(absl::StrCat(it->second.size(), " devices of node ", node, " have ", gpus.index_attribute, "=",
                                     index, ": which one is Slurm's GPU is ambiguous"));
        const k8s::ResourceSlice& s = *it->second[0].slice;
        const k8s::Device& d = *it->second[0].device;
        if (in_use.count({s.driver, s.pool_name, d.name}))
          return Refuse(absl::StrCat("device ", d.name, " (", gpus.index_attribute, "=", index, ") of node ", node,
                                     " is already allocated to another ResourceClaim"));
        results.push_back({r.name, s.driver, s.pool_name, d.name});
      }
    }
  }
  return out;
}

int64_t IndexedGpuCount(const std::vector<k8s::ResourceSlice>& slices, const std::string& node,
                        const std::string& index_attribute) {
  int64_t n = 0;
  for (const auto& [index, devices] : DevicesByIndex(slices, node, index_attribute)) n += devices.size() == 1 ? 1 : 0;
  return n;
}

ClaimStep NextClaimStep(const k8s::ResourceClaim& claim, const std::string& pod_uid, const std::string& node,
                        const std::optional<std::vector<k8s::DeviceAllocationResult>>& expected) {
  const bool ours = std::any_of(claim.reserved_for.begin(), claim.reserved_for.end(),
                                [&](const k8s::ClaimConsumer& c) { return c.resource == "pods" && c.uid == pod_uid; });
  // Written in one PUT, so an allocation without the pod in reservedFor is someone else's.
  if (!claim.allocated) return ours ? ClaimStep::kClear : ClaimStep::kWrite;
  if (!ours) return ClaimStep::kWait;
  if (expected && claim.allocation_node == node && claim.results == *expected) return ClaimStep::kBind;
  return ClaimStep::kClear;
}

}  // namespace onequeue::scheduler

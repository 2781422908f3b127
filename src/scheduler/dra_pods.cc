#include "scheduler/dra_pods.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/dra_gpus.h"

namespace onequeue::scheduler {
namespace {

bool ReservedFor(const k8s::ResourceClaim& c, const std::string& uid) {
  return std::any_of(c.reserved_for.begin(), c.reserved_for.end(),
                     [&](const k8s::ClaimConsumer& r) { return r.resource == "pods" && r.uid == uid; });
}

std::vector<k8s::ResourceSlice> SlicesOf(const KubeState& state, const std::string& node) {
  std::vector<k8s::ResourceSlice> out;
  for (const auto& s : state.resource_slices)
    if (s->node_name == node) out.push_back(*s);
  return out;
}

// A dra node's GPU capacity: its indexed devices (a DRA driver publishes no extended resource).
std::shared_ptr<const NodeRecord> WithIndexedGpus(const std::shared_ptr<const NodeRecord>& n, const KubeState& state,
                                                  const SlurmConfig::DraGpus& gpus, const std::string& resource) {
  const int64_t count = IndexedGpuCount(SlicesOf(state, n->name), n->name, gpus.index_attribute);
  auto out = std::make_shared<NodeRecord>(*n);
  out->allocatable[resource] = k8s::Quantity::FromInt(count);
  return out;
}

// A pod with claims: planned as asking their GPU count, on the dra nodes whose settings count
// them (the count of the first such settings; a node of other settings counting otherwise is not
// one of them). Bound: counted with its node's settings. Refused: the reason, else unchanged.
std::shared_ptr<const PodRecord> ClaimingPod(const std::shared_ptr<const PodRecord>& pod, const KubeState& state,
                                             const DraNodes& nodes) {
  absl::StatusOr<std::vector<k8s::ResourceClaim>> claims = PodClaimObjects(*pod, state, true);
  auto out = std::make_shared<PodRecord>(*pod);
  if (!claims.ok()) {
    out->unsupported_placement = std::string(claims.status().message());
    return out;
  }
  if (!pod->node_name.empty()) {
    auto on = nodes.of_node.find(pod->node_name);
    if (on == nodes.of_node.end()) return pod;  // bound elsewhere: not ours to count
    absl::StatusOr<int64_t> count = DraGpuCount(*claims, on->second);
    if (!count.ok()) return pod;
    out->requests[nodes.gpu_resource] = k8s::Quantity::FromInt(*count);
    out->unsupported_placement.clear();
    return out;
  }
  std::optional<int64_t> planned;
  std::string refused;
  std::vector<std::string> allowed;
  for (const auto& [node, gpus] : nodes.of_node) {
    absl::StatusOr<int64_t> count = DraGpuCount(*claims, gpus);
    if (!count.ok()) {
      if (refused.empty()) refused = std::string(count.status().message());
      continue;
    }
    if (!planned) planned = *count;
    if (*count == *planned) allowed.push_back(node);
  }
  if (!planned) {
    out->unsupported_placement = refused;
    return out;
  }
  out->requests[nodes.gpu_resource] = k8s::Quantity::FromInt(*planned);
  out->eligibility.allowed_nodes = std::move(allowed);
  out->unsupported_placement.clear();
  return out;
}

// A pending pod asking GPUs by extended resource: every node but the dra nodes; none left with
// such GPUs, it waits with the reason.
std::shared_ptr<const PodRecord> ExtendedGpuPod(const std::shared_ptr<const PodRecord>& pod, const KubeState& state,
                                                const DraNodes& nodes) {
  auto out = std::make_shared<PodRecord>(*pod);
  std::vector<std::string> allowed;
  bool gpus_left = false;
  for (const auto& n : state.nodes) {
    if (nodes.of_node.count(n->name)) continue;
    if (pod->eligibility.allowed_nodes && !std::count(pod->eligibility.allowed_nodes->begin(),
                                                      pod->eligibility.allowed_nodes->end(), n->name))
      continue;
    allowed.push_back(n->name);
    auto g = n->allocatable.find(nodes.gpu_resource);
    gpus_left = gpus_left || (g != n->allocatable.end() && g->second.Value() > 0);
  }
  if (!gpus_left && out->unsupported_placement.empty()) {
    std::vector<std::string> dra;
    for (const auto& [node, gpus] : nodes.of_node) dra.push_back(node);
    out->unsupported_placement = absl::StrCat(
        "asks ", nodes.gpu_resource, " by extended resource, and the GPUs of shared nodes with gpus: dra (",
        absl::StrJoin(dra, ", "), ") are given only through ResourceClaims of their GPU DeviceClasses");
  }
  out->eligibility.allowed_nodes = std::move(allowed);
  return out;
}

bool AsksExtendedGpus(const PodRecord& pod, const std::string& resource) {
  auto r = pod.requests.find(resource);
  return r != pod.requests.end() && r->second.Value() > 0;
}

}  // namespace

DraNodes DraNodesOf(const SlurmConfig& slurm, const SlurmRecords& records) {
  DraNodes out;
  if (auto g = slurm.gres_resources.find("gpu"); g != slurm.gres_resources.end()) out.gpu_resource = g->second;
  for (const auto& [name, joined] : records.nodes) {
    if (!joined.shared) continue;
    for (const std::string& p : joined.partitions) {
      auto dra = slurm.partition_dra_gpus.find(p);
      if (dra == slurm.partition_dra_gpus.end()) continue;
      out.of_node.emplace(name, dra->second);
      break;
    }
  }
  return out;
}

absl::StatusOr<std::vector<k8s::ResourceClaim>> PodClaimObjects(const PodRecord& pod, const KubeState& state,
                                                                bool counted_as_unallocated) {
  std::vector<k8s::ResourceClaim> out;
  for (size_t i = 0; i < pod.resource_claims.size(); ++i) {
    const std::string& key = pod.resource_claims[i];
    auto it = std::find_if(state.resource_claims.begin(), state.resource_claims.end(),
                           [&](const auto& c) { return !key.empty() && c->metadata.Key() == key; });
    if (it == state.resource_claims.end())
      return absl::FailedPreconditionError(absl::StrCat(
          "ResourceClaim ", key.empty() ? "of a template" : key, " not made yet (entry ", i + 1, " of spec.resourceClaims)"));
    out.push_back(**it);
    if (counted_as_unallocated && ReservedFor(out.back(), pod.uid)) {
      out.back().allocated = false;
      out.back().results.clear();
      out.back().allocation_node.clear();
    }
  }
  return out;
}

std::shared_ptr<const KubeState> WithDraGpus(const std::shared_ptr<const KubeState>& state, const DraNodes& nodes) {
  if (nodes.of_node.empty()) return state;
  auto out = std::make_shared<KubeState>(*state);
  for (auto& n : out->nodes) {
    if (auto on = nodes.of_node.find(n->name); on != nodes.of_node.end())
      n = WithIndexedGpus(n, *state, on->second, nodes.gpu_resource);
  }
  for (auto& p : out->pods) {
    if (p->terminal) continue;
    if (!p->resource_claims.empty()) p = ClaimingPod(p, *state, nodes);
    else if (p->node_name.empty() && AsksExtendedGpus(*p, nodes.gpu_resource)) p = ExtendedGpuPod(p, *out, nodes);
  }
  return out;
}

}  // namespace onequeue::scheduler

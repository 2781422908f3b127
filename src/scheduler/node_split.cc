#include "scheduler/node_split.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onequeue::scheduler {
namespace {

std::string Amount(int kind, int64_t v) {
  if (kind == queue::kCpu) return v % 1000 == 0 ? absl::StrCat(v / 1000) : absl::StrCat(v / 1000.0);
  if (kind == queue::kMemory) {
    if (v == 0) return "0";
    constexpr int64_t kMi = 1024 * 1024, kGi = 1024 * kMi;
    if (v % kGi == 0) return absl::StrCat(v / kGi, "Gi");
    return absl::StrCat((v + kMi - 1) / kMi, "Mi");
  }
  return absl::StrCat(v);
}

}  // namespace

std::vector<NodeSplit> SharedNodeSplits(const queue::Snapshot& snapshot, const SlurmRecords& slurm) {
  std::vector<NodeSplit> out;
  std::map<queue::NodeIndex, size_t> index;
  for (size_t i = 0; i < snapshot.nodes.size(); ++i) {
    if (snapshot.nodes[i].sharing != queue::NodeSharing::kShared) continue;
    index[static_cast<queue::NodeIndex>(i)] = out.size();
    out.push_back({snapshot.nodes[i].name});
  }
  for (const queue::RunningWorkload& r : snapshot.running) {
    for (const queue::Allocation& a : r.allocations) {
      auto it = index.find(a.node);
      if (it == index.end()) continue;
      NodeSplit& split = out[it->second];
      const bool is_slurm = r.kind == queue::WorkloadKind::kSlurmJob;
      (is_slurm ? split.slurm : split.pods) += a.used;
      std::vector<std::string>& ids = is_slurm ? split.slurm_jobs : split.pod_workloads;
      if (std::find(ids.begin(), ids.end(), r.id) == ids.end()) ids.push_back(r.id);
      if (!is_slurm) continue;
      auto job = slurm.running.find(r.id);
      auto joined = slurm.nodes.find(split.node);
      if (job == slurm.running.end() || job->second == nullptr || joined == slurm.nodes.end()) continue;
      const slurm::NodeAllocation* on = job->second->allocation.On(joined->second.slurm_name);
      if (on == nullptr) continue;
      for (const auto& [gres, indices] : on->gres_indices) {
        std::vector<int>& all = split.slurm_gres_indices[gres];
        all.insert(all.end(), indices.begin(), indices.end());
        std::sort(all.begin(), all.end());
      }
    }
  }
  for (auto& [node, i] : index) {
    NodeSplit& split = out[i];
    const queue::Resources& have = snapshot.nodes[node].allocatable;
    for (int k = 0; k < queue::kMaxResourceKinds; ++k) {
      split.free[k] = std::max<int64_t>(0, have[k] - split.pods[k] - split.slurm[k]);
    }
  }
  return out;
}

std::string DescribeSplit(const NodeSplit& split, const queue::ResourceNames& names) {
  auto side = [&](const char* label, const queue::Resources& r) {
    std::string s = label;
    for (size_t k = 0; k < names.names.size() && k < static_cast<size_t>(queue::kMaxResourceKinds); ++k) {
      if (names.names[k] == "pods") continue;
      absl::StrAppend(&s, " ", names.names[k], "=", Amount(static_cast<int>(k), r[static_cast<int>(k)]));
    }
    return s;
  };
  std::string pods = side("pods", split.pods);
  if (!split.pod_workloads.empty()) absl::StrAppend(&pods, " (", absl::StrJoin(split.pod_workloads, ","), ")");
  std::string slurm = side("slurm", split.slurm);
  for (const auto& [gres, indices] : split.slurm_gres_indices) {
    if (!indices.empty()) absl::StrAppend(&slurm, " [", gres, " ", absl::StrJoin(indices, ","), "]");
  }
  if (!split.slurm_jobs.empty()) absl::StrAppend(&slurm, " (", absl::StrJoin(split.slurm_jobs, ","), ")");
  return absl::StrCat(pods, "; ", slurm, "; ", side("free", split.free));
}

std::string NodeOwnerColumn(const queue::Node& node) {
  if (node.sharing == queue::NodeSharing::kShared) return kSharedOwner;
  switch (node.owner.kind) {
    case queue::OwnerKind::kKubernetes: return "kubernetes";
    case queue::OwnerKind::kSlurm: return "slurm";
    case queue::OwnerKind::kFree: return "free";
    case queue::OwnerKind::kReserved: return "reserved";
  }
  return "free";
}

std::string NodeLendingColumn(const CycleStatus& st, const queue::Node& node, const JoinedNode* joined) {
  const std::string owner = st.node_owner.count(node.name) ? st.node_owner.at(node.name) : "";
  if (absl::StartsWith(owner, "reserved/")) {
    return absl::StrCat("reserved for ", owner.substr(9), ": being reclaimed");
  }
  if (joined == nullptr) return "not a Slurm node";
  switch (joined->holder.holder) {
    case slurm::NodeHolder::kAdmin: return "drained by a Slurm admin: left alone";
    case slurm::NodeHolder::kDown: return "Slurm node down";
    default: break;
  }
  if (node.sharing == queue::NodeSharing::kShared) {
    return node.same_tenant ? "shared with Slurm within one tenant: never lent whole"
                            : "shared with Slurm: never lent whole";
  }
  if (node.owner.kind == queue::OwnerKind::kSlurm) {
    if (!joined->running_jobs.empty()) {
      return absl::StrCat("lent to Slurm: job ", absl::StrJoin(joined->running_jobs, ","), " runs here");
    }
    auto idle = st.lent_idle_since.find(node.name);
    if (idle != st.lent_idle_since.end()) {
      return absl::StrCat("lent to Slurm, idle for ", st.now - idle->second, "s (returns after ",
                          st.return_after_seconds, "s)");
    }
    return "lent to Slurm";
  }
  const bool fenced = joined->holder.holder == slurm::NodeHolder::kOnequeue;
  auto lendable = node.labels.find(kLendableLabel);
  if (lendable != node.labels.end() && lendable->second == "true") {
    return fenced ? "Kubernetes', idle: lendable to Slurm" : "lendable to Slurm";
  }
  return fenced ? "Kubernetes' (fenced off in Slurm)" : "Kubernetes'";
}

}  // namespace onequeue::scheduler

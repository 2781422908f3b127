#pragma once
// Issue 25, docs/sharing.md section 5: how a shared node is split between the two worlds right
// now, for `oq nodes` and the node annotation onequeue.io/split. Pure: computed from a cycle's
// snapshot and Slurm records.
#include <map>
#include <string>
#include <vector>

#include "queue/model.h"
#include "scheduler/cycle_status.h"
#include "scheduler/slurm_world.h"

namespace onequeue::scheduler {

inline constexpr char kSplitAnnotation[] = "onequeue.io/split";

struct NodeSplit {
  std::string node;  // Kubernetes name
  queue::Resources pods;   // what the pods running there request (a pod being mirrored counts)
  queue::Resources slurm;  // what Slurm allocated there to its own jobs (pod placeholders are the pods)
  queue::Resources free;   // allocatable minus both (never below 0)
  std::vector<std::string> pod_workloads, slurm_jobs;
  // The GPU (GRES) indices Slurm gave its jobs there, by GRES name, where Slurm says them.
  std::map<std::string, std::vector<int>> slurm_gres_indices;
};

// Every shared node of the snapshot (queue::NodeSharing::kShared), in snapshot order.
std::vector<NodeSplit> SharedNodeSplits(const queue::Snapshot& snapshot, const SlurmRecords& slurm);
// One line: "pods cpu=2 memory=8Gi nvidia.com/gpu=1 (ns/a); slurm cpu=4 memory=8Gi nvidia.com/gpu=2
// [gpu 0,1] (slurm/7); free cpu=2 memory=16Gi nvidia.com/gpu=1". CPUs in cores (millicores
// shown as 1.5), memory in Mi/Gi; resources no side uses and the node lacks are left out.
std::string DescribeSplit(const NodeSplit& split, const queue::ResourceNames& names);

// `oq nodes`' OWNER and LENDING columns (ListNodes). A shared node's OWNER is "shared" and its
// LENDING says it is shared, never lent whole: it carries no owner mark, fence or reservation
// (its split is NodeSplit's line); every other node shows its owner and lending as before.
inline constexpr char kSharedOwner[] = "shared";
std::string NodeOwnerColumn(const queue::Node& node);
// joined: the node's Slurm side, null when it is no Slurm node.
std::string NodeLendingColumn(const CycleStatus& st, const queue::Node& node, const JoinedNode* joined);

}  // namespace onequeue::scheduler

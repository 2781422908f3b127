#pragma once
// Which nodes a pending workload may use at all, ignoring capacity and time: node selector,
// required affinity, taints/tolerations, the Slurm partition's node set, schedulability and the
// node owner (a node reserved(W) only for W or a workload of higher priority than W).
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "queue/model.h"

namespace onequeue::queue {

// node_selector, required_affinity and node_affinity_terms all hold (kube-scheduler's NodeAffinity
// filter: nodeSelector AND at least one required nodeSelectorTerm).
bool MatchesSelectorAndAffinity(const Node& node, const Eligibility& eligibility);
// One term: every matchExpressions (labels; In, NotIn, Exists, DoesNotExist, Gt, Lt) and
// matchFields (metadata.name) requirement holds; an empty term matches nothing.
bool MatchesNodeSelectorTerm(const Node& node, const NodeSelectorTerm& term);
// At least one term matches; no terms: true.
bool MatchesNodeAffinityTerms(const Node& node, const std::vector<NodeSelectorTerm>& terms);
bool ToleratesTaints(const Node& node, const std::vector<Toleration>& tolerations);

class EligibilityChecker {
 public:
  // `reserved_for_priority`: priority of the workload each reserved node is held for (by id);
  // a workload id absent from the map counts as priority +infinity (nobody else may use it).
  EligibilityChecker(const Snapshot& snapshot,
                     absl::flat_hash_map<std::string, double> reserved_for_priority);

  // Nodes the workload may use, ascending index.
  std::vector<NodeIndex> EligibleNodes(const PendingWorkload& workload, double priority) const;
  bool IsEligible(NodeIndex node, const PendingWorkload& workload, double priority) const;

 private:
  bool OwnerAllows(const Node& node, const PendingWorkload& workload, double priority) const;

  const Snapshot& snapshot_;
  absl::flat_hash_map<std::string, NodeIndex> node_by_name_;
  absl::flat_hash_map<std::string, double> reserved_for_priority_;
};

}  // namespace onequeue::queue

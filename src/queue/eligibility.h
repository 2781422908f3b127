#pragma once
// Which nodes a pending workload may use at all, ignoring capacity and time: node selector,
// required affinity, taints/tolerations, the Slurm partition's node set, schedulability and the
// node owner (a node reserved(W) only for W or a workload of higher priority than W).
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "queue/model.h"

namespace onequeue::queue {

// A Slurm job's --constraint over node features (issue 29), in Slurm's syntax: features joined by
// `&` or `,` (AND) and `|` (OR), evaluated left to right as Slurm does (no precedence:
// `a|b&c` is `(a|b)&c`), parentheses to group; `[...]` (matching OR / multiple counts) and
// `name*N` (N of the job's nodes have it) say how the job's nodes are mixed.
class FeatureConstraint {
 public:
  // kInvalidArgument with the position and what is wrong for anything else ("a||b", "a&", "!a").
  static absl::StatusOr<FeatureConstraint> Parse(absl::string_view expression);

  // Whether one node with these features satisfies the expression on its own (brackets read as
  // parentheses, counts ignored). For a plain expression this is the rule for every node.
  bool Matches(const std::vector<std::string>& node_features) const;
  // Counts or brackets: the expression says how the job's nodes are mixed, which a per-node set
  // holds exactly only when every node must meet all of it (see PerNodeRuleFor).
  bool MixesNodes() const { return has_counts_ || has_brackets_; }
  // Why a job of `node_count` nodes cannot be planned with a per-node rule; "" when it can: a plain
  // expression, or a one-node job whose counts are all 1, or counts that all equal node_count
  // outside brackets.
  std::string PerNodeRuleFor(int node_count) const;

 private:
  struct Term {
    enum class Op { kAnd, kOr } op = Op::kAnd;  // how it joins what comes before it
    std::string feature;                        // a feature, or empty for a group
    int count = 0;                              // name*N; 0 = none
    std::vector<Term> group;                    // (...) or [...]
  };
  static bool Eval(const std::vector<Term>& terms, const std::vector<std::string>& features);
  std::vector<Term> terms_;
  std::vector<int> counts_;
  bool has_counts_ = false;
  bool has_brackets_ = false;
  friend class FeatureParser;
};

// node_selector, required_affinity and node_affinity_terms all hold (kube-scheduler's NodeAffinity
// filter: nodeSelector AND at least one required nodeSelectorTerm).
bool MatchesSelectorAndAffinity(const Node& node, const Eligibility& eligibility);
// One term: every matchExpressions (labels; In, NotIn, Exists, DoesNotExist, Gt, Lt) and
// matchFields (metadata.name) requirement holds; an empty term matches nothing.
bool MatchesNodeSelectorTerm(const Node& node, const NodeSelectorTerm& term);
// At least one term matches; no terms: true.
bool MatchesNodeAffinityTerms(const Node& node, const std::vector<NodeSelectorTerm>& terms);
bool ToleratesTaints(const Node& node, const std::vector<Toleration>& tolerations);
// The node's PreferNoSchedule taints no toleration tolerates (kube-scheduler's TaintToleration
// score counts these; fewer is better).
int32_t IntolerablePreferNoScheduleTaints(const Node& node, const std::vector<Toleration>& tolerations);

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

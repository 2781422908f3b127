#include "queue/eligibility.h"

#include <algorithm>
#include <limits>

#include "absl/strings/numbers.h"

namespace onequeue::queue {

namespace {

// `value`: the label's (or field's) value, null when the node has none.
bool Holds(const LabelRequirement& r, const std::string* value) {
  const bool has = value != nullptr;
  const bool in = has && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
  switch (r.op) {
    case LabelRequirement::Operator::kIn: return in;
    case LabelRequirement::Operator::kNotIn: return !in;
    case LabelRequirement::Operator::kExists: return has;
    case LabelRequirement::Operator::kDoesNotExist: return !has;
    case LabelRequirement::Operator::kGt:
    case LabelRequirement::Operator::kLt: {
      // Kubernetes: exactly one integer value; the label must parse as an integer too.
      int64_t label = 0, bound = 0;
      if (!has || r.values.size() != 1 || !absl::SimpleAtoi(*value, &label) ||
          !absl::SimpleAtoi(r.values[0], &bound)) {
        return false;
      }
      return r.op == LabelRequirement::Operator::kGt ? label > bound : label < bound;
    }
  }
  return false;
}

bool LabelHolds(const Node& node, const LabelRequirement& r) {
  auto it = node.labels.find(r.key);
  return Holds(r, it == node.labels.end() ? nullptr : &it->second);
}

bool FieldHolds(const Node& node, const LabelRequirement& r) {
  // The only node field a selector may name (Kubernetes validation).
  return Holds(r, r.key == "metadata.name" ? &node.name : nullptr);
}

}  // namespace

bool MatchesNodeSelectorTerm(const Node& node, const NodeSelectorTerm& term) {
  if (term.match_expressions.empty() && term.match_fields.empty()) return false;
  for (const LabelRequirement& r : term.match_expressions) {
    if (!LabelHolds(node, r)) return false;
  }
  for (const LabelRequirement& r : term.match_fields) {
    if (!FieldHolds(node, r)) return false;
  }
  return true;
}

bool MatchesNodeAffinityTerms(const Node& node, const std::vector<NodeSelectorTerm>& terms) {
  if (terms.empty()) return true;
  return std::any_of(terms.begin(), terms.end(),
                     [&](const NodeSelectorTerm& t) { return MatchesNodeSelectorTerm(node, t); });
}

bool MatchesSelectorAndAffinity(const Node& node, const Eligibility& e) {
  for (const auto& [key, value] : e.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  for (const LabelRequirement& r : e.required_affinity) {
    if (!LabelHolds(node, r)) return false;
  }
  return MatchesNodeAffinityTerms(node, e.node_affinity_terms);
}

namespace {
bool Tolerates(const Toleration& t, const Taint& taint) {
  if (t.effect.has_value() && *t.effect != taint.effect) return false;
  if (t.key.empty()) return t.op == Toleration::Operator::kExists;
  if (t.key != taint.key) return false;
  return t.op == Toleration::Operator::kExists || t.value == taint.value;
}
}  // namespace

bool ToleratesTaints(const Node& node, const std::vector<Toleration>& tolerations) {
  for (const Taint& taint : node.taints) {
    // PreferNoSchedule is a preference, not a rule: it never makes a node ineligible.
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    bool ok = std::any_of(tolerations.begin(), tolerations.end(),
                          [&](const Toleration& t) { return Tolerates(t, taint); });
    if (!ok) return false;
  }
  return true;
}

EligibilityChecker::EligibilityChecker(const Snapshot& snapshot,
                                       absl::flat_hash_map<std::string, double> reserved_for_priority)
    : snapshot_(snapshot), reserved_for_priority_(std::move(reserved_for_priority)) {
  node_by_name_.reserve(snapshot.nodes.size());
  for (size_t i = 0; i < snapshot.nodes.size(); ++i) {
    node_by_name_[snapshot.nodes[i].name] = static_cast<NodeIndex>(i);
  }
}

bool EligibilityChecker::OwnerAllows(const Node& node, const PendingWorkload& w,
                                     double priority) const {
  if (node.owner.kind != OwnerKind::kReserved) return true;
  if (node.owner.reserved_for == w.id) return true;
  auto it = reserved_for_priority_.find(node.owner.reserved_for);
  double holder = it == reserved_for_priority_.end() ? std::numeric_limits<double>::infinity()
                                                     : it->second;
  return priority > holder;
}

bool EligibilityChecker::IsEligible(NodeIndex n, const PendingWorkload& w, double priority) const {
  const Node& node = snapshot_.nodes[n];
  if (!node.schedulable) return false;
  if (!OwnerAllows(node, w, priority)) return false;
  if (!MatchesSelectorAndAffinity(node, w.eligibility)) return false;
  if (!ToleratesTaints(node, w.eligibility.tolerations)) return false;
  if (w.eligibility.allowed_nodes.has_value()) {
    const auto& allowed = *w.eligibility.allowed_nodes;
    if (std::find(allowed.begin(), allowed.end(), node.name) == allowed.end()) return false;
  }
  return true;
}

std::vector<NodeIndex> EligibilityChecker::EligibleNodes(const PendingWorkload& w,
                                                         double priority) const {
  std::vector<NodeIndex> out;
  if (w.eligibility.allowed_nodes.has_value()) {
    // Partition node sets are usually much smaller than the pool: walk them, not the pool.
    for (const std::string& name : *w.eligibility.allowed_nodes) {
      auto it = node_by_name_.find(name);
      if (it == node_by_name_.end()) continue;
      const Node& node = snapshot_.nodes[it->second];
      if (node.schedulable && OwnerAllows(node, w, priority) &&
          MatchesSelectorAndAffinity(node, w.eligibility) &&
          ToleratesTaints(node, w.eligibility.tolerations)) {
        out.push_back(it->second);
      }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  out.reserve(snapshot_.nodes.size());
  for (size_t i = 0; i < snapshot_.nodes.size(); ++i) {
    if (IsEligible(static_cast<NodeIndex>(i), w, priority)) out.push_back(static_cast<NodeIndex>(i));
  }
  return out;
}

}  // namespace onequeue::queue

#include "queue/eligibility.h"

#include <algorithm>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace onequeue::queue {

// Recursive descent over Slurm's constraint syntax; one instance per Parse.
class FeatureParser {
 public:
  FeatureParser(absl::string_view text, FeatureConstraint* out) : text_(text), out_(out) {}

  absl::Status Run() {
    absl::Status s = Sequence(&out_->terms_, '\0');
    if (!s.ok()) return s;
    if (out_->terms_.empty()) return Error("the constraint is empty");
    return absl::OkStatus();
  }

 private:
  using Term = FeatureConstraint::Term;

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("constraint \"", text_, "\" at position ", pos_ + 1, ": ", what));
  }
  bool AtEnd() const { return pos_ >= text_.size(); }

  // terms joined by operators until `close` (or the end for '\0').
  absl::Status Sequence(std::vector<Term>* terms, char close) {
    Term::Op op = Term::Op::kAnd;
    for (;;) {
      Term t;
      t.op = op;
      if (absl::Status s = One(&t); !s.ok()) return s;
      terms->push_back(std::move(t));
      if (AtEnd()) return close == '\0' ? absl::OkStatus() : Error(absl::StrCat("missing '", std::string(1, close), "'"));
      const char c = text_[pos_];
      if (c == close) {
        ++pos_;
        return absl::OkStatus();
      }
      if (c == '&' || c == ',') op = Term::Op::kAnd;
      else if (c == '|') op = Term::Op::kOr;
      else return Error(absl::StrCat("unexpected '", std::string(1, c), "'"));
      ++pos_;
    }
  }

  absl::Status One(Term* t) {
    if (AtEnd()) return Error("a feature is missing");
    const char c = text_[pos_];
    if (c == '(' || c == '[') {
      if (c == '[') {
        if (depth_brackets_ > 0) return Error("brackets inside brackets");
        out_->has_brackets_ = true;
      }
      ++pos_;
      ++(c == '[' ? depth_brackets_ : depth_parens_);
      absl::Status s = Sequence(&t->group, c == '(' ? ')' : ']');
      --(c == '[' ? depth_brackets_ : depth_parens_);
      return s;
    }
    const size_t start = pos_;
    while (!AtEnd() && (absl::ascii_isalnum(text_[pos_]) || text_[pos_] == '_' || text_[pos_] == '-' ||
                        text_[pos_] == '.' || text_[pos_] == ':' || text_[pos_] == '=')) {
      ++pos_;
    }
    if (pos_ == start) return Error(absl::StrCat("a feature is missing before '", std::string(1, c), "'"));
    t->feature = std::string(text_.substr(start, pos_ - start));
    if (!AtEnd() && text_[pos_] == '*') {
      const size_t digits = ++pos_;
      while (!AtEnd() && absl::ascii_isdigit(text_[pos_])) ++pos_;
      if (!absl::SimpleAtoi(text_.substr(digits, pos_ - digits), &t->count) || t->count <= 0)
        return Error("a count after '*' must be a positive number");
      out_->has_counts_ = true;
      out_->counts_.push_back(depth_brackets_ > 0 ? -t->count : t->count);  // negative: inside brackets
    }
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
  int depth_parens_ = 0, depth_brackets_ = 0;
  FeatureConstraint* out_;
};

absl::StatusOr<FeatureConstraint> FeatureConstraint::Parse(absl::string_view expression) {
  FeatureConstraint c;
  FeatureParser p(expression, &c);
  if (absl::Status s = p.Run(); !s.ok()) return s;
  return c;
}

bool FeatureConstraint::Eval(const std::vector<Term>& terms, const std::vector<std::string>& features) {
  bool value = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    const bool v = t.feature.empty() ? Eval(t.group, features)
                                     : std::find(features.begin(), features.end(), t.feature) != features.end();
    if (i == 0) value = v;
    else if (t.op == Term::Op::kAnd) value = value && v;
    else value = value || v;
  }
  return value;
}

bool FeatureConstraint::Matches(const std::vector<std::string>& node_features) const {
  return Eval(terms_, node_features);
}

std::string FeatureConstraint::PerNodeRuleFor(int node_count) const {
  if (!MixesNodes()) return "";
  if (node_count <= 1) {
    for (int c : counts_) {
      if (c > 1 || c < -1) return absl::StrCat("a count of ", std::abs(c), " nodes on a one-node job");
    }
    return "";
  }
  if (has_brackets_)
    return absl::StrCat("brackets (matching OR or multiple counts) over ", node_count,
                        " nodes mix features across the job's nodes, which onequeue does not plan");
  for (int c : counts_) {
    if (c != node_count)
      return absl::StrCat("a count of ", c, " of the job's ", node_count,
                          " nodes mixes features across its nodes, which onequeue does not plan");
  }
  return "";
}

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

int32_t IntolerablePreferNoScheduleTaints(const Node& node, const std::vector<Toleration>& tolerations) {
  int32_t count = 0;
  for (const Taint& taint : node.taints) {
    if (taint.effect != TaintEffect::kPreferNoSchedule) continue;
    count += std::none_of(tolerations.begin(), tolerations.end(),
                          [&](const Toleration& t) { return Tolerates(t, taint); });
  }
  return count;
}

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

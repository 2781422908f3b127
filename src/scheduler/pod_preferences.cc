#include "scheduler/pod_preferences.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "queue/eligibility.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {
namespace {

constexpr int64_t kMaxNodeScore = 100;  // kube-scheduler's framework.MaxNodeScore

bool IsEmpty(const k8s::LabelSelector& s) { return s.match_labels.empty() && s.match_expressions.empty(); }

// A preferred term as a matcher, or none when it can match no pod we can tell (no labelSelector)
// or names namespaces by labels (not watched: ignored, a preference never refuses).
std::optional<InterPodTerm> ToTerm(const k8s::PodAffinityTerm& t, const std::string& own_namespace) {
  if (!t.has_selector) return std::nullopt;
  if (t.has_namespace_selector && !IsEmpty(t.namespace_selector)) return std::nullopt;
  InterPodTerm term;
  term.selector = t.selector;
  term.has_selector = true;
  term.all_namespaces = t.has_namespace_selector;
  term.namespaces = t.namespaces;
  if (term.namespaces.empty() && !term.all_namespaces) term.namespaces.push_back(own_namespace);
  std::sort(term.namespaces.begin(), term.namespaces.end());
  term.namespaces.erase(std::unique(term.namespaces.begin(), term.namespaces.end()), term.namespaces.end());
  term.topology_key = t.topology_key;
  return term;
}

std::vector<WeightedInterPodTerm> ToTerms(const std::vector<k8s::WeightedPodAffinityTerm>& terms,
                                          const std::string& own_namespace) {
  std::vector<WeightedInterPodTerm> out;
  for (const k8s::WeightedPodAffinityTerm& t : terms) {
    if (t.weight == 0) continue;
    if (auto term = ToTerm(t.term, own_namespace)) out.push_back({t.weight, std::move(*term)});
  }
  return out;
}

// kube-scheduler's countPodsMatchSelector: an empty selector counts no pod; deleted pods never.
bool SpreadCounts(const SpreadRule& rule, const std::string& owner_namespace, const PodRecord& pod) {
  return rule.selector.has_value() && !IsEmpty(*rule.selector) && !pod.deleting && pod.namespace_ == owner_namespace &&
         k8s::SelectorMatches(*rule.selector, pod.labels);
}

}  // namespace

void ReadPodPreferences(const k8s::Pod& pod, PodRecord& r) {
  for (const k8s::TopologySpreadConstraint& c : pod.topology_spread_constraints) {
    if (c.when_unsatisfiable != "ScheduleAnyway") continue;
    r.soft_spread.push_back(SpreadRuleOf(pod, c));
  }
  r.preferred_affinity = ToTerms(pod.preferred_pod_affinity, pod.metadata.namespace_);
  r.preferred_anti_affinity = ToTerms(pod.preferred_pod_anti_affinity, pod.metadata.namespace_);
}

bool HasPodPreferences(const PodRecord& pod) {
  return !pod.soft_spread.empty() || !pod.preferred_affinity.empty() || !pod.preferred_anti_affinity.empty();
}

PodPreferenceScorer::PodPreferenceScorer(const std::vector<std::vector<const PodRecord*>>& bound,
                                         const std::vector<queue::Node>& nodes)
    : bound_(bound), nodes_(nodes) {
  for (size_t n = 0; n < bound_.size() && n < nodes_.size(); ++n) {
    for (const PodRecord* p : bound_[n]) {
      if (!p->preferred_affinity.empty() || !p->preferred_anti_affinity.empty()) {
        carriers_.emplace_back(static_cast<queue::NodeIndex>(n), p);
      }
    }
  }
}

// PreScore, Score and NormalizeScore of kube-scheduler's PodTopologySpread: a node's raw score is
// the sum over constraints of (matching pods in its domain) x log(domains + 2) + (maxSkew - 1),
// rounded; then 100 x (max + min - raw) / max over the nodes with every key, 0 for the others.
std::vector<int64_t> PodPreferenceScorer::SpreadScores(const PodRecord& pod) const {
  if (pod.soft_spread.empty()) return {};
  const size_t count = nodes_.size();
  std::vector<char> ignored(count, 0);  // nodes without every constraint's key
  for (size_t n = 0; n < count; ++n) {
    for (const SpreadRule& c : pod.soft_spread) ignored[n] = ignored[n] || !nodes_[n].labels.contains(c.topology_key);
  }
  std::vector<double> raw(count, 0.0);
  for (const SpreadRule& c : pod.soft_spread) {
    std::map<std::string, int64_t> in_domain;  // the domains of the scored nodes, by label value
    for (size_t n = 0; n < count; ++n) {
      if (!ignored[n]) in_domain.try_emplace(nodes_[n].labels.at(c.topology_key), 0);
    }
    for (size_t n = 0; n < count && n < bound_.size(); ++n) {
      if (ignored[n]) continue;
      const queue::Node& node = nodes_[n];
      if (c.honor_node_affinity && !queue::MatchesSelectorAndAffinity(node, pod.eligibility)) continue;
      if (c.honor_node_taints && !queue::ToleratesTaints(node, pod.eligibility.tolerations)) continue;
      int64_t matching = 0;
      for (const PodRecord* p : bound_[n]) matching += SpreadCounts(c, pod.namespace_, *p) ? 1 : 0;
      in_domain[node.labels.at(c.topology_key)] += matching;
    }
    const double weight = std::log(static_cast<double>(in_domain.size()) + 2);
    for (size_t n = 0; n < count; ++n) {
      if (!ignored[n]) raw[n] += static_cast<double>(in_domain[nodes_[n].labels.at(c.topology_key)]) * weight + (c.max_skew - 1);
    }
  }
  int64_t min_score = std::numeric_limits<int64_t>::max(), max_score = 0;
  std::vector<int64_t> scores(count, 0);
  for (size_t n = 0; n < count; ++n) {
    if (ignored[n]) continue;
    scores[n] = std::llround(raw[n]);
    min_score = std::min(min_score, scores[n]);
    max_score = std::max(max_score, scores[n]);
  }
  for (size_t n = 0; n < count; ++n) {
    if (ignored[n]) {
      scores[n] = 0;
    } else {
      scores[n] = max_score == 0 ? kMaxNodeScore : kMaxNodeScore * (max_score + min_score - scores[n]) / max_score;
    }
  }
  return scores;
}

// kube-scheduler's InterPodAffinity score: each (topology key, value) domain gets + weight for
// every pod in it a preferred podAffinity term of the pod matches, - weight for a podAntiAffinity
// term; symmetrically, for every bound pod whose own preferred term the pod matches. A node sums
// its domains; scaled to 0..100 between the lowest and the highest (0 counted as both bounds).
std::vector<int64_t> PodPreferenceScorer::AffinityScores(const PodRecord& pod) const {
  std::map<std::string, std::map<std::string, int64_t>> by_domain;  // key -> value -> score
  const auto add = [&](const WeightedInterPodTerm& t, int64_t sign, const PodRecord& checked, const queue::Node& node) {
    if (!t.term.Matches(checked)) return;
    auto label = node.labels.find(t.term.topology_key);
    if (label != node.labels.end()) by_domain[t.term.topology_key][label->second] += sign * t.weight;
  };
  if (!pod.preferred_affinity.empty() || !pod.preferred_anti_affinity.empty()) {
    for (size_t n = 0; n < bound_.size() && n < nodes_.size(); ++n) {
      for (const PodRecord* p : bound_[n]) {
        for (const WeightedInterPodTerm& t : pod.preferred_affinity) add(t, 1, *p, nodes_[n]);
        for (const WeightedInterPodTerm& t : pod.preferred_anti_affinity) add(t, -1, *p, nodes_[n]);
      }
    }
  }
  for (const auto& [n, carrier] : carriers_) {
    for (const WeightedInterPodTerm& t : carrier->preferred_affinity) add(t, 1, pod, nodes_[n]);
    for (const WeightedInterPodTerm& t : carrier->preferred_anti_affinity) add(t, -1, pod, nodes_[n]);
  }
  if (by_domain.empty()) return {};
  std::vector<int64_t> scores(nodes_.size(), 0);
  int64_t min_score = 0, max_score = 0;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    for (const auto& [key, values] : by_domain) {
      auto label = nodes_[n].labels.find(key);
      if (label == nodes_[n].labels.end()) continue;
      if (auto v = values.find(label->second); v != values.end()) scores[n] += v->second;
    }
    min_score = std::min(min_score, scores[n]);
    max_score = std::max(max_score, scores[n]);
  }
  for (int64_t& s : scores) {
    s = max_score > min_score ? static_cast<int64_t>(static_cast<double>(kMaxNodeScore) * static_cast<double>(s - min_score) /
                                                     static_cast<double>(max_score - min_score))
                              : 0;
  }
  return scores;
}

}  // namespace onequeue::scheduler

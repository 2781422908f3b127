#include "scheduler/pod_placement.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "queue/eligibility.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {
namespace {


std::string Canonical(const k8s::LabelSelector& s) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : s.match_labels) parts.push_back(absl::StrCat(k, "=", v));
  for (const auto& r : s.match_expressions) {
    std::vector<std::string> values = r.values;
    std::sort(values.begin(), values.end());
    parts.push_back(absl::StrCat(r.key, " ", r.op, " (", absl::StrJoin(values, ","), ")"));
  }
  std::sort(parts.begin(), parts.end());
  return absl::StrCat("{", absl::StrJoin(parts, ";"), "}");
}

bool IsEmpty(const k8s::LabelSelector& s) { return s.match_labels.empty() && s.match_expressions.empty(); }

// `what` names the term in a refusal ("required podAffinity").
std::optional<InterPodTerm> ToTerm(const k8s::PodAffinityTerm& t, const std::string& own_namespace, const char* what,
                                   std::string* refusal) {
  InterPodTerm term;
  term.selector = t.selector;
  term.has_selector = t.has_selector;
  term.topology_key = t.topology_key;
  if (t.has_namespace_selector) {
    if (!IsEmpty(t.namespace_selector)) {
      *refusal = absl::StrCat(what, " with a namespaceSelector that has labels is not supported yet (onequeue does "
                              "not watch namespaces; an empty namespaceSelector, every namespace, is)");
      return std::nullopt;
    }
    term.all_namespaces = true;
  }
  term.namespaces = t.namespaces;
  if (term.namespaces.empty() && !term.all_namespaces) term.namespaces.push_back(own_namespace);
  std::sort(term.namespaces.begin(), term.namespaces.end());
  term.namespaces.erase(std::unique(term.namespaces.begin(), term.namespaces.end()), term.namespaces.end());
  term.identity = absl::StrCat(term.all_namespaces ? "*" : absl::StrJoin(term.namespaces, ","), "|",
                               term.has_selector ? Canonical(term.selector) : "none", "|", term.topology_key);
  return term;
}

bool SpreadCounts(const SpreadRule& rule, const std::string& owner_namespace, const PodRecord& pod) {
  // kube-scheduler's countPodsMatchSelector: an empty selector counts no pod; deleted pods never.
  return rule.selector.has_value() && !IsEmpty(*rule.selector) && !pod.deleting && pod.namespace_ == owner_namespace &&
         k8s::SelectorMatches(*rule.selector, pod.labels);
}

using CountsPod = std::function<bool(const PodRecord&)>;

// Builds the snapshot's domains and counters, and each pending workload's rules.
class RulesBuilder {
 public:
  RulesBuilder(const std::vector<std::vector<const PodRecord*>>& bound, queue::Snapshot& snap)
      : bound_(bound), snap_(snap) {}

  int32_t Topology(const std::string& key) {
    auto [it, added] = topology_index_.try_emplace(key, static_cast<int32_t>(snap_.topologies.size()));
    if (!added) return it->second;
    queue::TopologyDomains& t = snap_.topologies.emplace_back();
    t.key = key;
    std::map<std::string, int32_t> ids;
    for (const queue::Node& n : snap_.nodes) {
      auto label = n.labels.find(key);
      if (label == n.labels.end()) {
        t.domain_of_node.push_back(-1);
        continue;
      }
      auto [id, fresh] = ids.try_emplace(label->second, t.count);
      if (fresh) ++t.count;
      t.domain_of_node.push_back(id->second);
    }
    return it->second;
  }

  int32_t Counter(const std::string& identity, CountsPod counts) {
    auto [it, added] = counter_index_.try_emplace(identity, static_cast<int32_t>(snap_.pod_counts.size()));
    if (!added) return it->second;
    queue::PodCounts& c = snap_.pod_counts.emplace_back(snap_.nodes.size(), 0);
    for (size_t n = 0; n < bound_.size() && n < c.size(); ++n) {
      for (const PodRecord* p : bound_[n]) c[n] += counts(*p) ? 1 : 0;
    }
    counter_fn_.push_back(std::move(counts));
    return it->second;
  }

  // Every distinct anti-affinity term of a pod bound or pending: a counter of the pods carrying it
  // (the symmetric rule), made even when no pending pod matches it yet.
  void AddAntiAffinityCarriers(const std::vector<std::vector<const PodRecord*>>& members) {
    auto add = [this](const PodRecord& p) {
      for (const InterPodTerm& term : p.anti_affinity) {
        if (counter_index_.contains(absl::StrCat("has:", term.identity))) continue;
        Topology(term.topology_key);
        carried_.push_back(term);
        Counter(absl::StrCat("has:", term.identity), [identity = term.identity](const PodRecord& other) {
          return std::any_of(other.anti_affinity.begin(), other.anti_affinity.end(),
                             [&](const InterPodTerm& t) { return t.identity == identity; });
        });
      }
    };
    for (const auto& pods : bound_) {
      for (const PodRecord* p : pods) add(*p);
    }
    for (const auto& group : members) {
      for (const PodRecord* p : group) add(*p);
    }
  }

  // The rules of one pending workload, "" or why they cannot be honoured.
  std::string RulesOf(const std::vector<const PodRecord*>& members, queue::PlacementRules& out) {
    const PodRecord& first = *members.front();
    if (members.size() > 1 && (!first.spread.empty() || !first.affinity.empty() || !first.anti_affinity.empty())) {
      return absl::StrCat("topology spread constraints and required pod (anti-)affinity are not supported yet for a "
                          "group of ", members.size(), " pods");
    }
    AddSpreadRules(first, out);
    AddAffinityRules(first, out);
    // Anti-affinity, own and symmetric: the running pods each rule counts are the preemption
    // search's to evict (PlacementRules::carriers), as (counter, topology) pairs.
    std::vector<std::pair<int32_t, int32_t>> lifted;
    for (const InterPodTerm& term : first.anti_affinity) {
      out.rules.push_back({queue::PlacementRule::Kind::kAntiAffinity, Topology(term.topology_key),
                           Counter(absl::StrCat("match:", term.identity),
                                   [term](const PodRecord& p) { return term.Matches(p); })});
      lifted.emplace_back(out.rules.back().counter, out.rules.back().topology);
    }
    // Symmetric: pods (bound, or placed earlier this cycle) whose anti-affinity this pod matches.
    for (const InterPodTerm& term : carried_) {
      if (!std::any_of(members.begin(), members.end(), [&](const PodRecord* p) { return term.Matches(*p); })) continue;
      queue::PlacementRule r;
      r.kind = queue::PlacementRule::Kind::kAntiAffinity;
      r.topology = Topology(term.topology_key);
      r.counter = counter_index_.at(absl::StrCat("has:", term.identity));
      r.symmetric = true;
      lifted.emplace_back(r.counter, r.topology);
      out.rules.push_back(std::move(r));
    }
    if (!lifted.empty()) out.carriers = CarriersOf(std::move(lifted));
    return "";
  }

  // Once every counter exists: the counters each member of the workload adds to.
  void AddCountsToward(const PodRecord& first, queue::PlacementRules& out) const {
    for (size_t c = 0; c < counter_fn_.size(); ++c) {
      if (counter_fn_[c](first)) out.counts_toward.push_back(static_cast<int32_t>(c));
    }
  }

 private:
  void AddSpreadRules(const PodRecord& pod, queue::PlacementRules& out) {
    if (pod.spread.empty()) return;
    // Only nodes with every constraint's key take part (nodeLabelsMatchSpreadConstraints).
    std::vector<char> has_keys(snap_.nodes.size(), 1);
    for (const SpreadRule& s : pod.spread) {
      const queue::TopologyDomains& t = snap_.topologies[Topology(s.topology_key)];
      for (size_t n = 0; n < has_keys.size(); ++n) has_keys[n] = has_keys[n] && t.domain_of_node[n] >= 0;
    }
    for (const SpreadRule& s : pod.spread) {
      queue::PlacementRule r;
      r.kind = queue::PlacementRule::Kind::kSpread;
      r.topology = Topology(s.topology_key);
      r.counter = Counter(absl::StrCat("spread:", s.identity),
                          [s, ns = pod.namespace_](const PodRecord& p) { return SpreadCounts(s, ns, p); });
      r.max_skew = s.max_skew;
      r.min_domains = s.min_domains;
      r.self_match = s.selector.has_value() && k8s::SelectorMatches(*s.selector, pod.labels);
      r.counted_nodes = has_keys;
      for (size_t n = 0; n < has_keys.size(); ++n) {
        const queue::Node& node = snap_.nodes[n];
        if (s.honor_node_affinity && !queue::MatchesSelectorAndAffinity(node, pod.eligibility)) r.counted_nodes[n] = 0;
        if (s.honor_node_taints && !queue::ToleratesTaints(node, pod.eligibility.tolerations)) r.counted_nodes[n] = 0;
      }
      out.rules.push_back(std::move(r));
    }
  }

  void AddAffinityRules(const PodRecord& pod, queue::PlacementRules& out) {
    if (pod.affinity.empty()) return;
    std::vector<std::string> ids;
    for (const InterPodTerm& t : pod.affinity) ids.push_back(t.identity);
    const auto matches_all = [terms = pod.affinity](const PodRecord& p) {
      return std::all_of(terms.begin(), terms.end(), [&](const InterPodTerm& t) { return t.Matches(p); });
    };
    const bool self_match = matches_all(pod);
    const int32_t counter = Counter(absl::StrCat("affinity:", absl::StrJoin(ids, "&")), matches_all);
    for (const InterPodTerm& t : pod.affinity) {
      queue::PlacementRule r;
      r.kind = queue::PlacementRule::Kind::kAffinity;
      r.topology = Topology(t.topology_key);
      r.counter = counter;
      r.self_match = self_match;
      out.rules.push_back(std::move(r));
    }
  }

  // Per node, the running workloads whose bound pods one of the `lifted` (counter, topology)
  // counts in the node's domain; null when there are none. One per distinct set, shared.
  std::shared_ptr<const queue::CarriersByNode> CarriersOf(std::vector<std::pair<int32_t, int32_t>> lifted) {
    std::sort(lifted.begin(), lifted.end());
    lifted.erase(std::unique(lifted.begin(), lifted.end()), lifted.end());
    auto [it, added] = carriers_of_.try_emplace(lifted);
    if (!added) return it->second;
    queue::CarriersByNode out;
    for (const auto& [counter, topology] : lifted) AddCarriers(counter, topology, out);
    if (!out.empty()) it->second = std::make_shared<const queue::CarriersByNode>(std::move(out));
    return it->second;
  }

  // The running workloads whose bound pods `counter` counts, by domain of `topology`, into `out`
  // (sized on the first one) for every node of the domain.
  void AddCarriers(int32_t counter, int32_t topology, queue::CarriersByNode& out) {
    const queue::TopologyDomains& t = snap_.topologies[topology];
    auto [cached, fresh] = carriers_by_domain_.try_emplace({counter, topology});
    std::vector<std::vector<std::string>>& by_domain = cached->second;
    if (fresh) {
      by_domain.resize(static_cast<size_t>(t.count));
      const CountsPod& counts = counter_fn_[counter];
      for (size_t n = 0; n < bound_.size() && n < t.domain_of_node.size(); ++n) {
        const int32_t d = t.domain_of_node[n];
        if (d < 0) continue;
        for (const PodRecord* p : bound_[n]) {
          if (counts(*p)) by_domain[d].push_back(WorkloadIdOf(*p));
        }
      }
    }
    bool any = false;
    for (const auto& ids : by_domain) any = any || !ids.empty();
    if (!any) return;
    if (out.empty()) out.resize(snap_.nodes.size());
    for (size_t n = 0; n < out.size() && n < t.domain_of_node.size(); ++n) {
      const int32_t d = t.domain_of_node[n];
      if (d < 0 || by_domain[d].empty()) continue;
      std::vector<std::string>& ids = out[n];
      ids.insert(ids.end(), by_domain[d].begin(), by_domain[d].end());
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    }
  }

  const std::vector<std::vector<const PodRecord*>>& bound_;
  queue::Snapshot& snap_;
  // By (counter, topology): per domain, the running workloads whose bound pods the counter counts.
  std::map<std::pair<int32_t, int32_t>, std::vector<std::vector<std::string>>> carriers_by_domain_;
  std::map<std::vector<std::pair<int32_t, int32_t>>, std::shared_ptr<const queue::CarriersByNode>> carriers_of_;
  std::map<std::string, int32_t> topology_index_, counter_index_;
  std::vector<CountsPod> counter_fn_;
  std::vector<InterPodTerm> carried_;
};

}  // namespace

bool InterPodTerm::Matches(const PodRecord& pod) const {
  if (!has_selector) return false;
  if (!all_namespaces && !std::binary_search(namespaces.begin(), namespaces.end(), pod.namespace_)) return false;
  return k8s::SelectorMatches(selector, pod.labels);
}

SpreadRule SpreadRuleOf(const k8s::Pod& pod, const k8s::TopologySpreadConstraint& c) {
  SpreadRule s;
  s.max_skew = std::max(1, c.max_skew);
  s.min_domains = std::max(1, c.min_domains.value_or(1));
  s.topology_key = c.topology_key;
  s.selector = c.selector;
  if (s.selector.has_value()) {
    for (const std::string& key : c.match_label_keys) {
      auto label = pod.metadata.labels.find(key);
      if (label != pod.metadata.labels.end()) s.selector->match_expressions.push_back({key, "In", {label->second}});
    }
  }
  s.honor_node_affinity = c.node_affinity_policy != "Ignore";
  s.honor_node_taints = c.node_taints_policy == "Honor";
  return s;
}

void ReadInterPodRules(const k8s::Pod& pod, PodRecord& r) {
  const std::string& ns = pod.metadata.namespace_;
  for (const k8s::TopologySpreadConstraint& c : pod.topology_spread_constraints) {
    if (c.when_unsatisfiable != "DoNotSchedule") continue;  // ScheduleAnyway: a preference (pod_preferences.h)
    SpreadRule s = SpreadRuleOf(pod, c);
    s.identity = absl::StrCat(ns, "|", s.selector.has_value() ? Canonical(*s.selector) : "none");
    r.spread.push_back(std::move(s));
  }
  std::string refusal;
  for (const auto& t : pod.required_pod_affinity) {
    if (auto term = ToTerm(t, ns, "required podAffinity", &refusal)) r.affinity.push_back(std::move(*term));
  }
  for (const auto& t : pod.required_pod_anti_affinity) {
    if (auto term = ToTerm(t, ns, "required podAntiAffinity", &refusal); term && term->has_selector) {
      r.anti_affinity.push_back(std::move(*term));  // a term without a selector keeps no pod away
    }
  }
  if (!refusal.empty()) r.unsupported_placement = refusal;
}

bool HasInterPodRules(const PodRecord& pod) {
  return !pod.spread.empty() || !pod.affinity.empty() || !pod.anti_affinity.empty();
}

void AddInterPodRules(const std::vector<std::vector<const PodRecord*>>& bound,
                      const std::vector<std::vector<const PodRecord*>>& members, queue::Snapshot& snap) {
  const auto any_rules = [](const std::vector<const PodRecord*>& pods) {
    return std::any_of(pods.begin(), pods.end(), [](const PodRecord* p) { return HasInterPodRules(*p); });
  };
  const auto any_anti = [](const std::vector<const PodRecord*>& pods) {  // bound pods: only theirs matter
    return std::any_of(pods.begin(), pods.end(), [](const PodRecord* p) { return !p->anti_affinity.empty(); });
  };
  if (!std::any_of(bound.begin(), bound.end(), any_anti) && !std::any_of(members.begin(), members.end(), any_rules)) {
    return;
  }
  RulesBuilder builder(bound, snap);
  // The symmetric rule (kube-scheduler's "node(s) didn't satisfy existing pods anti-affinity
  // rules"): an existing pod's anti-affinity keeps a matching newcomer out of its domain. The
  // preemption search may still use such a node, or one its own anti-affinity keeps it off, by
  // evicting every running pod the rules count there (PlacementRules::carriers), as
  // kube-scheduler's SelectVictimsOnNode re-checks the filters with the lower-priority pods
  // removed.
  builder.AddAntiAffinityCarriers(members);
  std::vector<queue::PlacementRules> rules(members.size());  // most stay empty: no allocation
  for (size_t i = 0; i < members.size(); ++i) {
    std::string refusal = builder.RulesOf(members[i], rules[i]);
    queue::PendingWorkload& w = snap.pending[i];
    if (!refusal.empty() && w.admission_error == queue::AdmissionError::kNone) {
      w.admission_error = queue::AdmissionError::kInvalidAnnotation;
      w.admission_message = std::move(refusal);
    }
  }
  for (size_t i = 0; i < members.size(); ++i) {
    builder.AddCountsToward(*members[i].front(), rules[i]);
    if (!rules[i].rules.empty() || !rules[i].counts_toward.empty()) {
      snap.pending[i].placement = std::make_shared<const queue::PlacementRules>(std::move(rules[i]));
    }
  }
}

}  // namespace onequeue::scheduler

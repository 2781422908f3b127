#pragma once
// Inter-pod placement (kube-scheduler's PodTopologySpread and InterPodAffinity filters, issue 28):
// what a pod's spec asks for, read once into its PodRecord, and turned each cycle into the queue's
// input (queue/placement_rules.h): node label domains, per-node counts of the pods each rule looks
// at (bound and assumed pods on pool nodes), and per pending workload its rules and the counts its
// members add to, so the planner sees the pods it places within a cycle. Pure: no I/O.
//
// Followed as kube-scheduler v1.37 does:
// - topologySpreadConstraints with whenUnsatisfiable DoNotSchedule: maxSkew, minDomains (default
//   1), labelSelector (none: matches no pod) merged with matchLabelKeys, nodeAffinityPolicy
//   (default Honor) and nodeTaintsPolicy (default Ignore), only nodes with every constraint's key
//   counted; pods being deleted are not counted. ScheduleAnyway is a preference: not used yet.
// - required podAffinity (every term; the first pod of a group may go anywhere while no pod
//   matches its terms, if it matches them itself), required podAntiAffinity on any key, and the
//   anti-affinity of pods already placed (symmetric). namespaces, and a namespaceSelector that
//   is empty (every namespace).
// Differences, refused or documented: a namespaceSelector with labels is refused (onequeue does
// not watch namespaces); a group (gang) of more than one pod with such rules is refused; only pool
// nodes' pods and domains are counted (kube-scheduler counts every node's).
#include <optional>
#include <string>
#include <vector>

#include "k8s_client/models.h"
#include "queue/model.h"

namespace onequeue::scheduler {

struct PodRecord;

// One required (anti-)affinity term with its namespaces resolved.
struct InterPodTerm {
  k8s::LabelSelector selector;
  bool has_selector = false;  // no labelSelector: matches no pod
  std::vector<std::string> namespaces;  // the pod's own when the term names none
  bool all_namespaces = false;          // namespaceSelector {}
  std::string topology_key;
  std::string identity;  // the term, canonical (owner namespace included): one counter per distinct term
  bool Matches(const PodRecord& pod) const;
  friend bool operator==(const InterPodTerm& a, const InterPodTerm& b) { return a.identity == b.identity; }
};

// One topology spread constraint (hard, or ScheduleAnyway for the preference score),
// matchLabelKeys merged into its selector.
struct SpreadRule {
  int32_t max_skew = 1;
  int32_t min_domains = 1;
  std::string topology_key;
  std::optional<k8s::LabelSelector> selector;
  bool honor_node_affinity = true;
  bool honor_node_taints = false;
  std::string identity;  // selector and namespace, canonical: the counter it reads
  friend bool operator==(const SpreadRule& a, const SpreadRule& b) {
    return a.identity == b.identity && a.max_skew == b.max_skew && a.min_domains == b.min_domains &&
           a.topology_key == b.topology_key && a.honor_node_affinity == b.honor_node_affinity &&
           a.honor_node_taints == b.honor_node_taints;
  }
};

// One of the pod's spread constraints as a rule: maxSkew and minDomains at least 1, matchLabelKeys
// ANDed into the selector (as kube-scheduler does), the two node policies; identity left empty.
SpreadRule SpreadRuleOf(const k8s::Pod& pod, const k8s::TopologySpreadConstraint& c);

// Reads the pod's spread constraints and inter-pod terms into `record` (spread, affinity,
// anti_affinity), or into record.unsupported_placement what onequeue cannot honour.
void ReadInterPodRules(const k8s::Pod& pod, PodRecord& record);

bool HasInterPodRules(const PodRecord& pod);

// Fills snap.topologies, snap.pod_counts and each pending workload's placement; members[i] are
// the pods of snap.pending[i], bound[n] the pods bound (or assumed) on pool node n. A workload
// whose rules cannot be honoured is refused (kInvalidAnnotation, the reason in its message).
// Does nothing when no pod has a rule.
void AddInterPodRules(const std::vector<std::vector<const PodRecord*>>& bound,
                      const std::vector<std::vector<const PodRecord*>>& members, queue::Snapshot& snap);

}  // namespace onequeue::scheduler

#pragma once
// Inter-pod placement rules (kube-scheduler's PodTopologySpread and InterPodAffinity filters) as
// the queue's input: the scheduler counts, per node, the pods each rule looks at (PodCounts), and
// says which counts a pending workload's members add to when they are placed. The planner keeps a
// copy of the counts and adds each start of the cycle to it, so pods placed one after another in
// one cycle see each other as kube-scheduler's pods placed one at a time do. Pure data and one
// pure function.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onequeue::queue {

struct Node;

// One node label key's domains: the domain of each node (by NodeIndex), -1 when the node lacks
// the label; domains are numbered 0 .. count-1.
struct TopologyDomains {
  std::string key;
  std::vector<int32_t> domain_of_node;
  int32_t count = 0;
};

// Pods of one kind (those a selector in some namespaces matches, or those carrying one
// anti-affinity term) per node, by NodeIndex.
using PodCounts = std::vector<int32_t>;

// Per node (by NodeIndex), running workload ids (PlacementRules::carriers).
using CarriersByNode = std::vector<std::vector<std::string>>;

struct PlacementRule {
  enum class Kind : uint8_t {
    // PodTopologySpread, whenUnsatisfiable DoNotSchedule: the node must have the key, and
    // count(its domain) + self_match - min(count over the counted nodes' domains) <= max_skew,
    // the minimum read as 0 while fewer than min_domains domains are counted.
    kSpread,
    // Required podAffinity, one rule per term, all sharing one counter (pods matching every term):
    // the node must have every term's key and a counted pod in each term's domain; or, while no
    // counted pod exists anywhere, the workload must match its own terms (self_match).
    kAffinity,
    // Required podAntiAffinity (the pod's own term, or an existing pod's term the pod matches):
    // no counted pod in the node's domain (a node without the key is not in any domain).
    kAntiAffinity,
  };
  Kind kind = Kind::kAntiAffinity;
  int32_t topology = 0;  // Snapshot::topologies
  int32_t counter = 0;   // Snapshot::pod_counts
  int32_t max_skew = 1;
  int32_t min_domains = 1;
  bool self_match = false;
  // kAntiAffinity only: the term is an existing pod's (InterPodAffinity's symmetric rule: a pod
  // already placed whose required anti-affinity the workload matches), not the workload's own.
  // Both hold alike (for a start or a reservation like any other rule; the preemption search
  // reads every anti-affinity rule against the pods this cycle placed only and removes the
  // running pods it counts instead, PlacementRules::carriers); the flag names the reason a
  // workload waits ("existing pods anti-affinity rules" or "pod anti-affinity rules").
  bool symmetric = false;
  // kSpread: the nodes whose pods and domains take part (nodeAffinityPolicy, nodeTaintsPolicy,
  // every constraint's key present), by NodeIndex. Empty: every node with the key.
  std::vector<char> counted_nodes;
};

struct PlacementRules {
  std::vector<PlacementRule> rules;  // every one holds
  // Snapshot::pod_counts each member placed adds one to (on its node).
  std::vector<int32_t> counts_toward;
  // Anti-affinity in the preemption search (issue 28), by NodeIndex: the running workloads
  // (RunningWorkload::id) whose pods a kAntiAffinity rule counts in the node's domain: for a
  // `symmetric` rule those carrying the existing pod's term, for the workload's own term those
  // matching it. Removing every pod an anti-affinity rule counts satisfies it, so a node kept out
  // by anti-affinity rules alone is a candidate of the preemption search only if every one of
  // them may be a victim of this preemptor; they are then victims of any set that uses the node,
  // whatever the resources need (kube-scheduler's SelectVictimsOnNode removes every
  // lower-priority pod and reprieves only those the filters pass without). An id that names no
  // running workload (a pod that is not one, e.g. a DaemonSet's) keeps the node out. The
  // scheduler fills it for every anti-affinity rule at once; null: no running pod counted by any
  // (the search is as without this field). Shared by the workloads with the same rules.
  // (Affinity and spread rules are not lifted: evicting pods cannot satisfy a required affinity,
  // and the spread rules hold in the search as for a start.)
  std::shared_ptr<const CarriersByNode> carriers;
};

// Per node (by NodeIndex): 1 when every rule holds there, given `counts` (Snapshot::pod_counts
// plus what the cycle placed so far). With `placed_before` (Snapshot::pod_counts), the nodes the
// preemption search may use: kAntiAffinity rules, own and `symmetric`, read counts -
// placed_before (the pods this cycle placed; the running pods they count are the search's to
// evict, PlacementRules::carriers).
std::vector<char> NodesAllowedByRules(const std::vector<Node>& nodes, const std::vector<TopologyDomains>& topologies,
                                      const std::vector<PodCounts>& counts, const PlacementRules& rules,
                                      const std::vector<PodCounts>* placed_before = nullptr);

}  // namespace onequeue::queue

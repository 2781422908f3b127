#pragma once
// Inter-pod preferences (issue 28): kube-scheduler v1.37's PodTopologySpread score (constraints
// with whenUnsatisfiable ScheduleAnyway) and InterPodAffinity score (preferred podAffinity and
// podAntiAffinity terms), per pool node, for the node preference scores the queue breaks ties
// with (queue::PendingWorkload::node_preference; snapshot_builder.cc AddNodePreferences). Never
// a reason to wait. Pure: no I/O.
//
// Counted: the pods bound (or assumed bound) on pool nodes; pods onequeue places earlier in the
// same cycle are not (the scores are fixed per cycle). Scaled over the pool's nodes (kube-scheduler:
// over the nodes that pass its filters). Symmetric: an existing pod's preferred terms a pending pod
// matches count for it too; an existing pod's required podAffinity terms (kube-scheduler's
// hardPodAffinityWeight) do not. A preferred term with a namespaceSelector that has labels is
// ignored (onequeue does not watch namespaces); system default spread constraints are not applied.
#include <cstdint>
#include <vector>

#include "k8s_client/models.h"
#include "queue/model.h"
#include "scheduler/pod_placement.h"

namespace onequeue::scheduler {

struct PodRecord;

// One preferred (anti-)affinity term with its weight (1-100).
struct WeightedInterPodTerm {
  int32_t weight = 0;
  InterPodTerm term;
};

// Reads the pod's ScheduleAnyway spread constraints and preferred inter-pod terms into `record`
// (soft_spread, preferred_affinity, preferred_anti_affinity).
void ReadPodPreferences(const k8s::Pod& pod, PodRecord& record);

// Any ScheduleAnyway constraint or preferred inter-pod term of its own.
bool HasPodPreferences(const PodRecord& pod);

// Scores of pending pods against the pods bound on pool nodes. bound[n]: the pods on node n.
class PodPreferenceScorer {
 public:
  PodPreferenceScorer(const std::vector<std::vector<const PodRecord*>>& bound, const std::vector<queue::Node>& nodes);

  // PodTopologySpread: 0..100 per node, the fewer matching pods in its domains the higher; nodes
  // without every constraint's key 0. Empty: the pod has no ScheduleAnyway constraint.
  std::vector<int64_t> SpreadScores(const PodRecord& pod) const;

  // InterPodAffinity: 0..100 per node, from the weights of the terms matched in its domains (the
  // pod's own preferred terms and, symmetrically, the bound pods' ones it matches). Empty: no
  // term matched anything.
  std::vector<int64_t> AffinityScores(const PodRecord& pod) const;

 private:
  const std::vector<std::vector<const PodRecord*>>& bound_;
  const std::vector<queue::Node>& nodes_;
  std::vector<std::pair<queue::NodeIndex, const PodRecord*>> carriers_;  // bound pods with preferred terms
};

}  // namespace onequeue::scheduler

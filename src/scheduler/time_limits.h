#pragma once
// Issue 24 M4: the time limit of a running pod is enforced, as Slurm ends a job at its TimeLimit.
// Backfill plans with every pod's limit (onequeue.io/time-limit, else activeDeadlineSeconds); this
// is what makes that safe. A pod of this scheduler, bound (the informer shows its node), whose
// run since its PodScheduled time reaches its limit plus queue.overTimeLimitSeconds (Slurm's
// OverTimeLimit, default 0) is evicted through the Eviction API, with a TimeLimitExceeded event
// and a log line.
//   * The limit is the one the pod was admitted with (BuiltSnapshot::admitted): an edit of a
//     running pod's annotation does not lengthen its run.
//   * The Eviction API, not a delete: the pod terminates gracefully (terminationGracePeriodSeconds,
//     as Slurm's KillWait) and a PodDisruptionBudget that allows no disruption now is respected;
//     the eviction is asked again every kRetrySeconds until it is allowed or the pod ends. A
//     budget is its owner's word that the pod must not be disrupted now; onequeue is a voluntary
//     disruptor like any other, and the overrun shows in the log and the pod's events.
//   * One eviction per pod per kRetrySeconds: a pod already deleting is not asked again.
// Pure bookkeeping over the cycle's records; the loop calls Enforce once per full cycle.
#include <map>
#include <string>

#include "queue/model.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {

class ClusterActions;
struct CycleStats;

class TimeLimitEnforcer {
 public:
  static constexpr queue::Time kRetrySeconds = 10;

  // `scheduler_name`: only this scheduler's pods; `grace`: queue.overTimeLimitSeconds.
  TimeLimitEnforcer(std::string scheduler_name, queue::Time grace, ClusterActions* actions)
      : scheduler_name_(std::move(scheduler_name)), grace_(grace), actions_(actions) {}

  // Evicts the bound pods of `state` past their limit + grace at `now`. `admitted`: what each pod
  // was admitted with (its limit is read there when present).
  void Enforce(const KubeState& state, const AdmittedPods& admitted, queue::Time now, CycleStats* stats);

 private:
  std::string scheduler_name_;
  queue::Time grace_;
  ClusterActions* actions_;
  std::map<std::string, queue::Time> asked_;  // pod key -> when its eviction was last asked
};

// The time limit a pod record declares: onequeue.io/time-limit, else activeDeadlineSeconds
// (capped at kMaxTimeLimitSeconds); nullopt: none (a service) or an invalid annotation.
std::optional<queue::Duration> TimeLimitOf(const PodRecord& pod);

}  // namespace onequeue::scheduler

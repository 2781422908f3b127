#pragma once
// One scheduling cycle: the informers' view -> snapshot -> queue plan -> actions, with the
// bookkeeping that makes the actions safe to repeat:
//   * assume/forget: a pod bound in this cycle counts as running on its node until the informer
//     shows the binding (or the bind failed and it is forgotten), so the next cycle cannot give
//     the same capacity away twice;
//   * reservations: a preemption first marks its nodes reserved(P) (node annotation, and the
//     preemptor's nominatedNodeName), then evicts each victim once; while the mark stands every
//     lower-priority workload, including the victims' replacements, sees the capacity as taken.
//     When P is bound the mark is released; when an eviction is refused (PDB) it is rolled back;
//   * reporting: waiting reasons are reported only when they change (events are deduplicated).
// The loop owns no threads and reads no clock: the daemon calls RunCycle(now).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "k8s_client/models.h"
#include "queue/planner.h"
#include "queue/preemption.h"
#include "scheduler/config.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {

// The current view of the cluster (the informers' stores).
class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual std::vector<k8s::Node> Nodes() const = 0;
  virtual std::vector<k8s::Pod> Pods() const = 0;
};

// Why a pod waits, as users read it in kubectl describe and the pod's annotations.
struct WaitReport {
  std::string reason;   // a WaitReason name: Priority, Resources, ReservedForHigherPriority, ...
  std::string message;  // plain words
  int32_t queue_position = 0;
  std::optional<queue::Time> estimated_start;
};

// What the loop does to the cluster. Every call is idempotent.
class ClusterActions {
 public:
  virtual ~ClusterActions() = default;
  virtual absl::Status Bind(const std::string& pod_key, const std::string& node, const std::string& message) = 0;
  virtual absl::Status ReportWaiting(const std::string& pod_key, const WaitReport& report) = 0;
  // Records (value non-empty) or clears (empty) the node's onequeue.io/owner annotation.
  virtual absl::Status SetNodeOwner(const std::string& node, const std::string& value) = 0;
  // Sets status.nominatedNodeName; "" clears it (a rolled-back preemption).
  virtual absl::Status Nominate(const std::string& pod_key, const std::string& node) = 0;
  // Eviction API; a PodDisruptionBudget refusal is kFailedPrecondition.
  virtual absl::Status Evict(const std::string& pod_key, const std::string& preemptor, const std::string& message) = 0;
};

struct CycleStats {
  int pending = 0;
  int bound = 0;
  int bind_errors = 0;
  int waiting = 0;
  int reported = 0;
  int preemptions_started = 0;
  int evictions = 0;
  int rollbacks = 0;
};

// Maps the daemon's configuration onto the queue's.
queue::QueueConfig ToQueueConfig(const Config& config);

class SchedulingLoop {
 public:
  SchedulingLoop(const Config& config, const ClusterView* view, ClusterActions* actions);
  CycleStats RunCycle(queue::Time now);

  // Nodes currently reserved for a preemptor (node -> workload), for status and tests.
  const std::map<std::string, std::string>& reservations() const { return reservations_; }

 private:
  // A preemption whose eviction was refused (PodDisruptionBudget): not tried again before
  // `retry_at`, and the preemptor's waiting report says why.
  struct BlockedPreemption {
    queue::Time retry_at = 0;
    std::string message;
  };

  void ForgetConfirmedAssumptions(const std::vector<k8s::Pod>& pods);
  void ReleaseFinishedReservations(const BuiltSnapshot& built, CycleStats* stats);
  void StartPreemption(const queue::PreemptDecision& d, const BuiltSnapshot& built,
                       const std::set<std::string>& terminating, queue::Time now, CycleStats* stats);
  void RollBack(const std::string& preemptor, const BuiltSnapshot& built, CycleStats* stats);
  WaitReport ReportFor(const queue::WaitingStatus& w) const;

  const Config& config_;
  const ClusterView* view_;
  ClusterActions* actions_;
  queue::CheapestVictimsPlanner preemption_;
  queue::QueuePlanner planner_;
  std::map<std::string, std::string> assumed_;        // pod key -> node (bound, not yet seen)
  std::map<std::string, std::string> reservations_;   // node -> preemptor workload id
  std::set<std::string> evicted_;                     // pod keys evicted (each victim once)
  // Preemptors whose victims this process has asked to evict. A reservation recovered from a
  // node annotation is not in it: the step may have stopped before its evictions (crash), so the
  // new process evicts whatever victim is not already leaving.
  std::set<std::string> evicting_;
  std::map<std::string, BlockedPreemption, std::less<>> blocked_;  // preemptor -> refusal
  std::map<std::string, std::string> last_report_;    // pod key -> reason|message|position
};

}  // namespace onequeue::scheduler

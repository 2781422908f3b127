#pragma once
// Wait reporting: what each waiting pod shows (reason, message, position, estimated start), said
// only when it changes, and why, across both worlds ("behind Slurm job 7 on n1").
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "queue/planner.h"
#include "scheduler/slurm_world.h"
#include "scheduler/snapshot_builder.h"
#include "scheduler/wait_reporting.h"

namespace onequeue::scheduler {

class ClusterActions;
struct CycleStats;

// The report for one waiting workload. `blocked`: why its preemption was refused, if it was.
WaitReport ExplainWait(const queue::WaitingStatus& w, const queue::Plan& plan, const BuiltSnapshot& built,
                       const SlurmRecords& slurm, const std::string* blocked);

class WaitingPods {
 public:
  WaitingPods(ClusterActions* actions, queue::Duration resolution) : actions_(actions), resolution_(resolution) {}
  // Writes the report on each pod whose shown report it changes (the estimate as StableEstimate
  // shows it, so a waiting pod is not patched every cycle as the planner's estimate moves).
  void Write(const std::vector<std::string>& pod_keys, const WaitReport& report, CycleStats* stats);
  // Issue 26: what the pod is to show of `report` (its estimate as Write would show it), or
  // nullopt when it shows that already; Sent records a report shown by another write (a
  // preemptor's nomination, ClusterActions::StartNominateWithReport).
  std::optional<WaitReport> Unshown(const std::string& pod_key, const WaitReport& report) const;
  void Sent(const std::string& pod_key, const WaitReport& shown, CycleStats* stats);
  // The pod no longer waits (bound): its last report is forgotten, here and in the actions.
  void Forget(const std::string& pod_key);
  // Reports whose writes failed are written again; returns how many.
  size_t RewriteFailed();
  // Forgets every pod not in `pending`.
  void KeepOnly(const std::set<std::string_view>& pending);
  // Every one of the pods shows a report written by this process.
  bool Shown(const std::vector<std::string>& pod_keys) const {
    return std::all_of(pod_keys.begin(), pod_keys.end(), [&](const std::string& k) { return last_.count(k) > 0; });
  }
  size_t size() const { return last_.size(); }

 private:
  ClusterActions* actions_;
  queue::Duration resolution_;
  std::map<std::string, ShownWait> last_;  // pod key -> what its last report showed
};

}  // namespace onequeue::scheduler

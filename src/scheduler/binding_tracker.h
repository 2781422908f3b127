#pragma once
// Assume / forget for bindings (kube-scheduler's cache, backend/cache/interface.go):
//
//   Send ──> in flight (assumed on its node) ──ok──> bound (assumed until the informer shows it,
//                 │                                        at most kAssumedBindingSeconds)
//                 └─failed──> forgotten (the pod is pending again and planned anew)
//
// Assumptions are the pod's (UID, else "namespace/name"): a pod deleted and made again under the
// same name is another pod, whose place is not assumed. Results of bindings come back on any
// thread and are drained by the loop's thread.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "queue/model.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {

class ClusterActions;
struct CycleStats;

// The identity the loop's assumptions are kept under.
inline std::string_view PodIdentity(const PodRecord& pod) { return pod.uid.empty() ? pod.key : pod.uid; }

class BindingTracker {
 public:
  struct Assumed {
    std::string key, node;
    queue::Time bound_at = 0;  // when the binding was seen to succeed (0: in flight)
  };
  explicit BindingTracker(ClusterActions* actions) : actions_(actions) {}

  // Assumes the pod on `node` and sends its binding.
  void Send(const std::string& id, const std::string& key, const std::string& node, std::string message);
  // Applies the results that have arrived: a bind that landed is confirmed (counted; `bound`
  // runs with its pod key before BindSucceeded); a failed one is forgotten.
  void Drain(queue::Time now, CycleStats* stats, const std::function<void(const std::string&)>& bound);
  // Drops the assumptions the informer confirmed, whose pod is gone, or that expired; returns the
  // rest as the snapshot's assumed bindings (pod key -> node).
  std::map<std::string, std::string> Forget(const KubeState& state, queue::Time now);
  const Assumed* Find(const std::string& identity) const;
  void Confirm(const std::string& identity) { assumed_.erase(identity); }
  bool InFlight(const std::string& identity) const { return binding_.count(identity) > 0; }
  size_t in_flight() const { return binding_.size(); }

 private:
  struct InFlightBind {
    std::string key, node, message;
  };
  // Shared with the callbacks, so a late one after the loop is gone writes into a live object.
  struct Results {
    absl::Mutex mu;
    std::vector<std::pair<std::string, absl::Status>> done ABSL_GUARDED_BY(mu);
  };
  ClusterActions* actions_;
  std::map<std::string, Assumed> assumed_;
  std::map<std::string, InFlightBind> binding_;
  std::shared_ptr<Results> results_ = std::make_shared<Results>();
};

}  // namespace onequeue::scheduler

#include "scheduler/binding_tracker.h"

#include "absl/container/flat_hash_map.h"
#include "scheduler/scheduling_loop.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {
namespace {
// A binding that succeeded but that the pod informer has not shown this long after is forgotten
// (kube-scheduler expires its assumed pods the same way): the pod is planned again from what the
// informer shows, and a second binding of a pod that is bound after all fails harmlessly (409).
constexpr queue::Time kAssumedBindingSeconds = 60;
}  // namespace

void BindingTracker::Send(const std::string& id, const std::string& key, const std::string& node,
                          std::string message) {
  // Assume first: from now on the pod counts on its node, whatever the binding's fate.
  assumed_[id] = {key, node, 0};
  binding_[id] = {key, node, message};
  actions_->StartBind(key, node, message, [results = results_, id](absl::Status s) {
    absl::MutexLock lock(&results->mu);
    results->done.emplace_back(id, std::move(s));
  });
}

void BindingTracker::Drain(queue::Time now, CycleStats* stats, const std::function<void(const std::string&)>& bound) {
  std::vector<std::pair<std::string, absl::Status>> done;
  {
    absl::MutexLock lock(&results_->mu);
    done.swap(results_->done);
  }
  for (auto& [id, status] : done) {
    auto it = binding_.find(id);
    if (it == binding_.end()) continue;
    if (status.ok()) {
      ++stats->bound;
      bound(it->second.key);  // also when BindSucceeded is refused (deposed)
      // From now on the assumption waits for the informer, for a bounded time.
      if (auto a = assumed_.find(id); a != assumed_.end()) a->second.bound_at = now;
      actions_->BindSucceeded(it->second.key, it->second.node, it->second.message);
    } else {
      // Unreserve: the capacity is free again and the pod pending; the plan places it anew.
      ++stats->bind_errors;
      assumed_.erase(id);
    }
    binding_.erase(it);
  }
}

std::map<std::string, std::string> BindingTracker::Forget(const KubeState& state, queue::Time now) {
  std::map<std::string, std::string> still_assumed;  // pod key -> node, for the snapshot
  if (assumed_.empty()) return still_assumed;
  absl::flat_hash_map<std::string_view, const PodRecord*> by_identity;
  by_identity.reserve(state.pods.size());
  for (const auto& p : state.pods) by_identity[PodIdentity(*p)] = p.get();
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    auto p = by_identity.find(it->first);
    const Assumed& a = it->second;
    // Confirmed (the informer shows the binding) or gone (a pod made again under the same name is
    // another pod): the assumption has done its job.
    if (p == by_identity.end() || !p->second->node_name.empty()) {
      it = assumed_.erase(it);
      continue;
    }
    if (a.bound_at != 0 && now - a.bound_at > kAssumedBindingSeconds) {
      spdlog::warn("pod {}: bound to {} {}s ago and the informer still shows it unbound; assumption forgotten",
                   a.key, a.node, now - a.bound_at);
      it = assumed_.erase(it);
      continue;
    }
    still_assumed[a.key] = a.node;
    ++it;
  }
  return still_assumed;
}

const BindingTracker::Assumed* BindingTracker::Find(const std::string& identity) const {
  auto it = assumed_.find(identity);
  return it == assumed_.end() ? nullptr : &it->second;
}

}  // namespace onequeue::scheduler

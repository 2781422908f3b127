#include "scheduler/time_limits.h"

#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "scheduler/scheduling_loop.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {

std::optional<queue::Duration> TimeLimitOf(const PodRecord& pod) {
  if (!pod.time_limit.empty()) {
    absl::StatusOr<queue::Duration> d = ParseTimeLimit(pod.time_limit);
    if (d.ok()) return *d;
    return std::nullopt;  // the pod was refused admission with the reason; nothing to enforce
  }
  if (pod.active_deadline_seconds) return std::min(*pod.active_deadline_seconds, kMaxTimeLimitSeconds);
  return std::nullopt;
}

void TimeLimitEnforcer::Enforce(const KubeState& state, const AdmittedPods& admitted, queue::Time now,
                                CycleStats* stats) {
  std::set<std::string_view> present;
  for (const auto& record : state.pods) {
    const PodRecord& pod = *record;
    if (pod.scheduler_name != scheduler_name_ || pod.node_name.empty() || pod.terminal || pod.deleting) continue;
    present.insert(pod.key);
    const PodRecord* as = &pod;
    if (auto a = admitted.find(std::string_view(pod.uid.empty() ? pod.key : pod.uid)); a != admitted.end()) {
      as = a->second.get();
    }
    const std::optional<queue::Duration> limit = TimeLimitOf(*as);
    if (!limit) continue;
    const queue::Time end = pod.bound + *limit + grace_;
    if (now < end) continue;
    auto asked = asked_.find(pod.key);
    if (asked != asked_.end() && now - asked->second < kRetrySeconds) continue;
    asked_[pod.key] = now;
    const std::string message =
        absl::StrCat("Time limit exceeded: ran ", now - pod.bound, "s, limit ", *limit, "s",
                     grace_ > 0 ? absl::StrCat(" + ", grace_, "s over-time") : "", "; evicted by onequeue");
    absl::Status s = actions_->EvictForTimeLimit(pod.key, message);
    if (s.ok()) {
      spdlog::info("pod {} on {}: {}", pod.key, pod.node_name, message);
      ++stats->time_limits_exceeded;
    } else {
      spdlog::warn("pod {} on {} ran past its time limit ({}s + {}s) but its eviction failed: {}; asked again in {}s",
                   pod.key, pod.node_name, *limit, grace_, s.ToString(), kRetrySeconds);
    }
  }
  std::erase_if(asked_, [&](const auto& e) { return !present.count(e.first); });
}

}  // namespace onequeue::scheduler

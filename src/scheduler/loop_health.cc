#include "scheduler/loop_health.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace onequeue::scheduler {

HealthVerdict DecideHealth(absl::Duration since_last_pass, absl::Duration bound) {
  const std::string age = absl::StrFormat("%.1f s", absl::ToDoubleSeconds(since_last_pass));
  const std::string limit = absl::StrCat(absl::ToInt64Seconds(bound), " s");
  if (since_last_pass > bound) {
    return {false, absl::StrCat("the scheduling loop has not completed a pass for ", age, " (bound ", limit,
                                "): it is stuck")};
  }
  return {true, absl::StrCat("last scheduling loop pass ", age, " ago (bound ", limit, ")")};
}

LoopHealth::LoopHealth(absl::Duration bound, std::function<absl::Duration()> now)
    : bound_(bound), now_(std::move(now)), last_beat_ns_(0) {
  last_beat_ns_.store(absl::ToInt64Nanoseconds(Now()), std::memory_order_relaxed);
}

absl::Duration LoopHealth::Now() const {
  if (now_) return now_();
  return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

void LoopHealth::Beat() { last_beat_ns_.store(absl::ToInt64Nanoseconds(Now()), std::memory_order_relaxed); }

HealthVerdict LoopHealth::Check() const {
  const absl::Duration since = Now() - absl::Nanoseconds(last_beat_ns_.load(std::memory_order_relaxed));
  return DecideHealth(since, bound_);
}

}  // namespace onequeue::scheduler

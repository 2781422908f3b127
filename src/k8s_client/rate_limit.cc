#include "k8s_client/rate_limit.h"

#include <algorithm>
#include <memory>
#include <random>

#include "absl/strings/str_cat.h"
#include "k8s_client/api_status.h"

namespace onequeue::k8s {

TokenBucket::TokenBucket(double qps, int burst, absl::Time now)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)), last_(now) {}

absl::Duration TokenBucket::Reserve(absl::Time now) {
  if (qps_ <= 0) return absl::ZeroDuration();
  absl::MutexLock lock(&mu_);
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  return absl::Seconds(-tokens_ / qps_);
}

bool TokenBucket::TryTake(absl::Time now) {
  if (qps_ <= 0) return true;
  absl::MutexLock lock(&mu_);
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

Backoff::Backoff(absl::Duration initial, absl::Duration max, std::function<double()> rand01,
                 double factor, double jitter)
    : initial_(initial), max_(max), rand01_(std::move(rand01)), factor_(factor), jitter_(jitter) {}

absl::Duration Backoff::Next() {
  current_ = current_ == absl::ZeroDuration() ? initial_ : std::min(max_, current_ * factor_);
  const double r = rand01_ ? rand01_() : 0.0;
  return current_ * (1.0 + jitter_ * r);
}

Retrier::Retrier(const RetryPolicy& policy, std::function<double()> rand01)
    : policy_(policy),
      backoff_(policy.initial_backoff, policy.max_backoff, std::move(rand01), 2.0, policy.jitter) {}

std::optional<absl::Duration> Retrier::NextDelay(const absl::Status& error, absl::string_view method) {
  if (!IsRetryable(error) || attempts_ >= policy_.max_attempts) return std::nullopt;
  if (absl::IsDeadlineExceeded(error) && method != "GET" && !policy_.retry_timed_out_writes) {
    return std::nullopt;
  }
  ++attempts_;
  absl::Duration delay = backoff_.Next();
  if (std::optional<absl::Duration> after = RetryAfterOf(error)) delay = std::max(delay, *after);
  return delay;
}

absl::Status Retrier::GiveUp(const absl::Status& error) const {
  if (error.ok() || attempts_ == 1) return error;
  return absl::Status(error.code(), absl::StrCat(error.message(), " (after ", attempts_, " attempts)"));
}

std::function<double()> DefaultRandom() {
  struct State {
    absl::Mutex mu;
    std::mt19937_64 rng{std::random_device{}()};
  };
  auto state = std::make_shared<State>();
  return [state] {
    absl::MutexLock lock(&state->mu);
    return std::uniform_real_distribution<double>(0.0, 1.0)(state->rng);
  };
}

}  // namespace onequeue::k8s

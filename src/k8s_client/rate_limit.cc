#include "k8s_client/rate_limit.h"

#include <algorithm>
#include <memory>
#include <random>

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

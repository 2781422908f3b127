// Client-side flow control: a token-bucket rate limiter (QPS + burst, like client-go's
// flowcontrol.NewTokenBucketRateLimiter) and exponential backoff with jitter. Time and randomness
// are passed in, so tests are deterministic.
#pragma once

#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace onequeue::k8s {

class TokenBucket {
 public:
  // qps <= 0 means unlimited. The bucket starts full (`burst` tokens).
  TokenBucket(double qps, int burst, absl::Time now);
  // Takes one token and returns how long the caller must wait before sending (zero when a token
  // was available). Tokens may go negative: callers queue up in order, each waiting its turn.
  absl::Duration Reserve(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Takes a token only if one is available now (for dropping, not delaying, what exceeds it).
  bool TryTake(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const double qps_;
  const double burst_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

class Backoff {
 public:
  // delay(n) = min(initial * factor^n, max) * (1 + jitter * rand01()), rand01 in [0, 1).
  Backoff(absl::Duration initial, absl::Duration max, std::function<double()> rand01,
          double factor = 2.0, double jitter = 0.5);
  absl::Duration Next();
  void Reset() { current_ = absl::ZeroDuration(); }

 private:
  absl::Duration initial_, max_;
  std::function<double()> rand01_;
  double factor_, jitter_;
  absl::Duration current_;
};

// A thread-safe uniform [0, 1) source seeded from the OS, for production use.
std::function<double()> DefaultRandom();

}  // namespace onequeue::k8s

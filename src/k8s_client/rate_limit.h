// Client-side flow control: a token-bucket rate limiter (QPS + burst, like client-go's
// flowcontrol.NewTokenBucketRateLimiter), exponential backoff with jitter, and the retry policy
// both REST clients (Kubernetes and slurmrestd) follow. Time and randomness are passed in, so
// tests are deterministic.
#pragma once

#include <functional>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
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

// The one retry policy. Retried: Unavailable (connection refused/reset, 5xx), ResourceExhausted
// (429, Retry-After honoured) and DeadlineExceeded. Each client sets the numbers: Kubernetes 5
// attempts up to 10 s with jitter (many clients share one apiserver); slurmrestd 4 attempts up
// to 2 s without jitter (one client) and no retry of a timed-out write (see slurm_bridge).
struct RetryPolicy {
  int max_attempts = 5;  // 1 = no retry
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(10);
  double jitter = 0.5;  // each delay is stretched by rand01 * jitter of itself
  // A write that timed out may have been acted on. Retry it only when the caller checks the
  // result (the scheduler's Kubernetes writes do; a Slurm job submitted twice would run twice).
  bool retry_timed_out_writes = true;
};

// One request's way through a RetryPolicy.
class Retrier {
 public:
  Retrier(const RetryPolicy& policy, std::function<double()> rand01);
  // After a failed attempt of a `method` request: the delay before the next attempt (the backoff,
  // never shorter than the error's Retry-After), or nullopt when `error` is final.
  std::optional<absl::Duration> NextDelay(const absl::Status& error, absl::string_view method);
  // The error to return when giving up: it says how many attempts were made.
  absl::Status GiveUp(const absl::Status& error) const;
  int attempts() const { return attempts_; }

 private:
  RetryPolicy policy_;
  Backoff backoff_;
  int attempts_ = 1;
};

// A thread-safe uniform [0, 1) source seeded from the OS, for production use.
std::function<double()> DefaultRandom();

}  // namespace onequeue::k8s

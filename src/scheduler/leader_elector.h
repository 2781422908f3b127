#pragma once
// Leader election over a coordination.k8s.io/v1 Lease, and the question every write asks first:
// may this replica still write?
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s_client/scheduler_api.h"

namespace onequeue::scheduler {

// Monotonic time (CLOCK_MONOTONIC: never jumps with NTP or an operator's date, and keeps running
// while the process is stopped). Injected for tests.
using MonotonicClock = std::function<std::chrono::steady_clock::time_point()>;

// What the write gate (fenced_actions.h) asks before each write.
class WritePermit {
 public:
  virtual ~WritePermit() = default;
  // OK while this replica leads and its lease is valid on the monotonic clock; otherwise
  // FailedPrecondition saying why (nothing may be sent).
  virtual absl::Status MayWrite() const = 0;
  // How long from now a write may still take: none may land after the writer's lease ends
  // (issue 24 M1). Zero when MayWrite() refuses; infinite for a permit with no end.
  virtual absl::Duration WriteTimeLeft() const {
    return MayWrite().ok() ? absl::InfiniteDuration() : absl::ZeroDuration();
  }
};

// Leader election as client-go's leaderelection does it: the holder renews the Lease; another
// replica takes it over only once it has seen the same record unchanged for a whole lease
// duration on its own clock (no trust in other machines' clocks). Optimistic concurrency
// (resourceVersion) decides races: a lost race is simply not leading.
//
// Why the holder stops in time: a renew that succeeds was sent after the attempt started (time
// S on this replica's monotonic clock), so every other replica saw the new record after S and
// waits a whole lease duration D from then before taking over. The holder writes only until
// S + renew deadline, with renew deadline = 2/3 D: a third of the lease is left as margin for a
// write already on the wire and for the two machines' clocks running at slightly different rates.
// Each lease request has its own short timeout and no retry (`api` must come from a client built
// with LeaseClientConfig and LeaseRetryPolicy), so a slow apiserver cannot keep an attempt going
// past the deadline; a failed attempt is tried again after retry_period().
class LeaderElector : public WritePermit {
 public:
  struct Options {
    std::string namespace_, name, identity;
    absl::Duration lease_duration = absl::Seconds(15);
    // Timing; the wall clock only stamps the Lease's acquireTime/renewTime for people to read.
    MonotonicClock clock = [] { return std::chrono::steady_clock::now(); };
    std::function<absl::Time()> wall_clock = [] { return absl::Now(); };
  };
  LeaderElector(k8s::SchedulerApi* api, Options options) : api_(api), options_(std::move(options)) {}

  // How long after an attempt that renewed the holder may write: 2/3 of the lease duration.
  static absl::Duration RenewDeadline(absl::Duration lease_duration) { return lease_duration * 2 / 3; }
  // The timeout of each lease request (an attempt is a GET and a PUT): a quarter of the renew
  // deadline, at least 250 ms.
  static absl::Duration RequestTimeout(absl::Duration lease_duration) {
    return std::max(absl::Milliseconds(250), RenewDeadline(lease_duration) / 4);
  }
  // The client settings for the lease requests: bounded connect and request timeouts.
  static k8s::ClientConfig LeaseClientConfig(k8s::ClientConfig config, absl::Duration lease_duration);
  // One attempt per request: a retry would outlive the deadline; the next attempt is the retry.
  static k8s::RetryPolicy LeaseRetryPolicy();

  absl::Duration renew_deadline() const { return RenewDeadline(options_.lease_duration); }
  absl::Duration retry_period() const { return std::max(absl::Milliseconds(200), options_.lease_duration / 7); }

  // One attempt to acquire or renew; true if this replica holds the Lease afterwards.
  bool TryAcquireOrRenew();
  // Gives the Lease up (holder cleared) so a standby takes over at once; best effort. Writes are
  // refused from the moment it is called.
  void Release();
  // Stops all writes at once (leadership given up or lost) without touching the Lease.
  void StopWriting();

  absl::Status MayWrite() const override;
  // Until the renew deadline of the last attempt that renewed (where MayWrite() stops).
  absl::Duration WriteTimeLeft() const override;
  // True while this replica holds the Lease and is inside its renew deadline (MayWrite().ok()).
  bool Leading() const { return MayWrite().ok(); }
  // How long ago (monotonic) the last successful attempt started; infinite if never.
  absl::Duration SinceLastRenew() const;

  const Options& options() const { return options_; }

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  void Renewed(TimePoint attempt_start);
  // True while another replica's record of the lease is younger than its duration, timed from
  // when this replica first observed it (only this replica's own clock is trusted).
  bool OtherHolderAlive(const k8s::Lease& lease, TimePoint observed);

  k8s::SchedulerApi* api_;
  const Options options_;
  // The standby's side (lease thread only).
  std::string observed_record_;  // holder + renewTime last seen
  TimePoint observed_at_{};
  // The holder's side, read by every writer.
  mutable absl::Mutex mu_;
  bool holding_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<TimePoint> renewed_at_ ABSL_GUARDED_BY(mu_);  // start of the last attempt that renewed
};

}  // namespace onequeue::scheduler

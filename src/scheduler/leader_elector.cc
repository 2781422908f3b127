#include "scheduler/leader_elector.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {
namespace {

absl::Duration FromChrono(std::chrono::steady_clock::duration d) {
  return absl::FromChrono(std::chrono::duration_cast<std::chrono::nanoseconds>(d));
}

}  // namespace

k8s::ClientConfig LeaderElector::LeaseClientConfig(k8s::ClientConfig config, absl::Duration lease_duration) {
  config.request_timeout = RequestTimeout(lease_duration);
  config.connect_timeout = std::min(config.connect_timeout, RequestTimeout(lease_duration));
  // Two lease requests per retry period: never held back by a token bucket.
  config.qps = std::max(config.qps, 50.0);
  config.burst = std::max(config.burst, 10);
  return config;
}

k8s::RetryPolicy LeaderElector::LeaseRetryPolicy() {
  k8s::RetryPolicy p;
  p.max_attempts = 1;
  p.retry_timed_out_writes = false;
  return p;
}

void LeaderElector::Renewed(TimePoint attempt_start) {
  absl::MutexLock l(&mu_);
  if (stopped_) return;
  holding_ = true;
  renewed_at_ = attempt_start;
}

bool LeaderElector::TryAcquireOrRenew() {
  // The attempt's start: every record this attempt writes reaches other replicas after it.
  const TimePoint start = options_.clock();
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return false;
  }
  const std::string stamp = k8s::FormatMicroTime(options_.wall_clock());
  const int32_t seconds = static_cast<int32_t>(absl::ToInt64Seconds(options_.lease_duration));
  absl::StatusOr<k8s::Lease> lease = api_->GetLease(options_.namespace_, options_.name);
  // A standby's observation counts from when the answer arrived, not from when it was asked.
  const TimePoint observed = options_.clock();
  auto not_holding = [this] {
    absl::MutexLock l(&mu_);
    holding_ = false;
    return false;
  };
  // An attempt that has taken a renew deadline already (the process was stopped, the answer was
  // slow) decides from a stale read: it writes nothing, so that a replica stopped for longer than
  // the lease sends no request that changes anything once it runs again. The next attempt reads
  // afresh.
  auto stale = [&] {
    if (FromChrono(options_.clock() - start) < renew_deadline()) return false;
    spdlog::warn("leader election: the read of lease {}/{} is {} old: not writing it", options_.namespace_,
                 options_.name, absl::FormatDuration(FromChrono(options_.clock() - start)));
    return true;
  };
  if (absl::IsNotFound(lease.status())) {
    k8s::Lease fresh;
    fresh.metadata.namespace_ = options_.namespace_;
    fresh.metadata.name = options_.name;
    fresh.holder_identity = options_.identity;
    fresh.lease_duration_seconds = seconds;
    fresh.acquire_time = fresh.renew_time = stamp;
    if (stale()) return false;
    auto created = api_->CreateLease(fresh);
    if (!created.ok()) {
      if (!absl::IsAlreadyExists(created.status())) spdlog::warn("leader election: {}", created.status().ToString());
      return not_holding();
    }
    Renewed(start);
    spdlog::info("leader election: {} now holds lease {}/{}", options_.identity, options_.namespace_, options_.name);
    return true;
  }
  if (!lease.ok()) {
    // Unknown: the Lease may still be ours. Writes stop when the renew deadline passes.
    spdlog::warn("leader election: {}", lease.status().ToString());
    return false;
  }
  const bool mine = lease->holder_identity == options_.identity;
  if (!mine && !lease->holder_identity.empty() && OtherHolderAlive(*lease, observed)) return not_holding();
  k8s::Lease next = *lease;
  if (!mine) {
    next.acquire_time = stamp;
    next.lease_transitions = lease->lease_transitions + 1;
  }
  next.holder_identity = options_.identity;
  next.lease_duration_seconds = seconds;
  next.renew_time = stamp;
  if (stale()) return false;
  auto updated = api_->UpdateLease(next);
  if (!updated.ok()) {
    if (absl::IsAborted(updated.status())) return not_holding();  // someone else wrote it first
    spdlog::warn("leader election: {}", updated.status().ToString());
    return mine ? false : not_holding();
  }
  Renewed(start);
  if (!mine) spdlog::info("leader election: {} now holds lease {}/{}", options_.identity, options_.namespace_, options_.name);
  return true;
}

bool LeaderElector::OtherHolderAlive(const k8s::Lease& lease, TimePoint observed) {
  // Its record (holder and renew time) is timed from when this replica first saw it, on this
  // replica's clock: clocks of different machines are never compared.
  const std::string record = absl::StrCat(lease.holder_identity, "|", lease.renew_time);
  if (record != observed_record_) {
    observed_record_ = record;
    observed_at_ = observed;
  }
  const absl::Duration held_for =
      lease.lease_duration_seconds ? absl::Seconds(*lease.lease_duration_seconds) : options_.lease_duration;
  return FromChrono(observed - observed_at_) < held_for;
}

void LeaderElector::StopWriting() {
  absl::MutexLock l(&mu_);
  stopped_ = true;
  holding_ = false;
}

void LeaderElector::Release() {
  StopWriting();
  absl::StatusOr<k8s::Lease> lease = api_->GetLease(options_.namespace_, options_.name);
  if (!lease.ok() || lease->holder_identity != options_.identity) return;
  k8s::Lease next = *lease;
  next.holder_identity.clear();
  next.lease_duration_seconds = 1;
  next.renew_time = k8s::FormatMicroTime(options_.wall_clock());
  auto updated = api_->UpdateLease(next);
  if (!updated.ok()) spdlog::warn("leader election: release: {}", updated.status().ToString());
}

absl::Status LeaderElector::MayWrite() const {
  const TimePoint now = options_.clock();
  absl::MutexLock l(&mu_);
  if (stopped_) return absl::FailedPreconditionError("leadership given up: no writes");
  if (!holding_ || !renewed_at_) return absl::FailedPreconditionError("not the leader: no writes");
  const absl::Duration since = FromChrono(now - *renewed_at_);
  if (since >= renew_deadline()) {
    return absl::FailedPreconditionError(
        absl::StrCat("lease not renewed for ", absl::FormatDuration(since), " (renew deadline ",
                     absl::FormatDuration(renew_deadline()), " of a ", absl::FormatDuration(options_.lease_duration),
                     " lease): another replica may lead soon; no writes"));
  }
  return absl::OkStatus();
}

absl::Duration LeaderElector::WriteTimeLeft() const {
  const TimePoint now = options_.clock();
  absl::MutexLock l(&mu_);
  if (stopped_ || !holding_ || !renewed_at_) return absl::ZeroDuration();
  return std::max(absl::ZeroDuration(), renew_deadline() - FromChrono(now - *renewed_at_));
}

absl::Duration LeaderElector::SinceLastRenew() const {
  const TimePoint now = options_.clock();
  absl::MutexLock l(&mu_);
  if (!renewed_at_) return absl::InfiniteDuration();
  return FromChrono(now - *renewed_at_);
}

}  // namespace onequeue::scheduler

#include "scheduler/leader_elector.h"

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {

bool LeaderElector::TryAcquireOrRenew(absl::Time now) {
  const std::string stamp = k8s::FormatMicroTime(now);
  const int32_t seconds = static_cast<int32_t>(absl::ToInt64Seconds(options_.lease_duration));
  absl::StatusOr<k8s::Lease> lease = api_->GetLease(options_.namespace_, options_.name);
  if (absl::IsNotFound(lease.status())) {
    k8s::Lease fresh;
    fresh.metadata.namespace_ = options_.namespace_;
    fresh.metadata.name = options_.name;
    fresh.holder_identity = options_.identity;
    fresh.lease_duration_seconds = seconds;
    fresh.acquire_time = fresh.renew_time = stamp;
    auto created = api_->CreateLease(fresh);
    if (!created.ok() && !absl::IsAlreadyExists(created.status())) {
      spdlog::warn("leader election: {}", created.status().ToString());
    }
    return created.ok();
  }
  if (!lease.ok()) {
    spdlog::warn("leader election: {}", lease.status().ToString());
    return false;
  }
  const bool mine = lease->holder_identity == options_.identity;
  if (!mine && !lease->holder_identity.empty()) {
    const std::string record = absl::StrCat(lease->holder_identity, "|", lease->renew_time);
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = now;
    }
    const absl::Duration held_for = lease->lease_duration_seconds
                                        ? absl::Seconds(*lease->lease_duration_seconds)
                                        : options_.lease_duration;
    if (now < observed_at_ + held_for) return false;  // the holder is alive as far as we know
  }
  k8s::Lease next = *lease;
  if (!mine) {
    next.acquire_time = stamp;
    next.lease_transitions = lease->lease_transitions + 1;
  }
  next.holder_identity = options_.identity;
  next.lease_duration_seconds = seconds;
  next.renew_time = stamp;
  auto updated = api_->UpdateLease(next);
  if (!updated.ok()) {
    if (!absl::IsAborted(updated.status())) spdlog::warn("leader election: {}", updated.status().ToString());
    return false;
  }
  if (!mine) spdlog::info("leader election: {} now holds lease {}/{}", options_.identity, options_.namespace_, options_.name);
  return true;
}

void LeaderElector::Release(absl::Time now) {
  absl::StatusOr<k8s::Lease> lease = api_->GetLease(options_.namespace_, options_.name);
  if (!lease.ok() || lease->holder_identity != options_.identity) return;
  k8s::Lease next = *lease;
  next.holder_identity.clear();
  next.lease_duration_seconds = 1;
  next.renew_time = k8s::FormatMicroTime(now);
  auto updated = api_->UpdateLease(next);
  if (!updated.ok()) spdlog::warn("leader election: release: {}", updated.status().ToString());
}

}  // namespace onequeue::scheduler

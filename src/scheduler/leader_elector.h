#pragma once
// Leader election over a coordination.k8s.io/v1 Lease.
#include <string>

#include "absl/time/time.h"
#include "k8s_client/scheduler_api.h"

namespace onequeue::scheduler {

// Leader election over a coordination.k8s.io/v1 Lease, as client-go's leaderelection does: the
// holder renews the Lease; another replica takes it over only once it has seen the same record
// unchanged for a whole lease duration on its own clock (no trust in other machines' clocks).
// Optimistic concurrency (resourceVersion) decides races: a lost race is simply not leading.
class LeaderElector {
 public:
  struct Options {
    std::string namespace_, name, identity;
    absl::Duration lease_duration = absl::Seconds(15);
  };
  LeaderElector(k8s::SchedulerApi* api, Options options) : api_(api), options_(std::move(options)) {}

  // One attempt to acquire or renew; true if this replica holds the Lease afterwards. `now` is
  // the local clock.
  bool TryAcquireOrRenew(absl::Time now);
  // Gives the Lease up (holder cleared) so a standby takes over at once; best effort.
  void Release(absl::Time now);
  const Options& options() const { return options_; }

 private:
  k8s::SchedulerApi* api_;
  Options options_;
  std::string observed_record_;  // holder + renewTime last seen
  absl::Time observed_at_ = absl::InfinitePast();
};

}  // namespace onequeue::scheduler

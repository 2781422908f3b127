#pragma once
// Whether the scheduling loop is alive, for the gRPC Health call and the /healthz endpoint
// (issue 13 defect 8). The loop beats after every pass it completes: a cycle when it leads, a
// wake-up when it is a standby, a wait while the informers sync. A pass that hangs (a stuck
// cycle, a deadlock) stops the beats; after `bound` the daemon reports NOT_SERVING, so the
// kubelet's liveness probe restarts it and its Lease passes to a replica that schedules.
//
// Ages are measured on a monotonic clock: a wall-clock step must not make a live loop look dead
// or a dead one alive.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/time/time.h"

namespace onequeue::scheduler {

struct HealthVerdict {
  bool serving = true;
  // "last loop pass 3.2 s ago (bound 60 s)" or why not serving; for people and probes' logs.
  std::string message;
};

// The decision alone: a loop whose last completed pass is older than `bound` is not serving.
HealthVerdict DecideHealth(absl::Duration since_last_pass, absl::Duration bound);

class LoopHealth {
 public:
  // `now` returns a monotonic time (the default: std::chrono::steady_clock); tests pass their own.
  explicit LoopHealth(absl::Duration bound, std::function<absl::Duration()> now = nullptr);

  // The loop completed a pass. Any thread; cheap (one atomic store).
  void Beat();
  // The verdict now. Any thread.
  HealthVerdict Check() const;
  absl::Duration bound() const { return bound_; }

 private:
  absl::Duration Now() const;

  const absl::Duration bound_;
  const std::function<absl::Duration()> now_;
  // Nanoseconds on the monotonic clock; the construction counts as the first beat, so a daemon
  // that starts serves for `bound` before its first pass must have completed.
  std::atomic<int64_t> last_beat_ns_;
};

}  // namespace onequeue::scheduler

#pragma once
// What a waiting pod shows (its PodScheduled condition, queue-position and estimated-start
// annotations) and when it must be written again: only when what it shows changes, so that a
// backlog of waiting pods costs no API request per cycle.
#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "queue/model.h"
#include "scheduler/cycle_status.h"

namespace onequeue::scheduler {

// What the last report written for a pod showed.
struct ShownWait {
  std::string fingerprint;  // WaitFingerprint of the report
  std::optional<queue::Time> estimated_start;
};

// The estimated start as a pod shows it, in steps of ShownEstimateStep: at least a minute, the
// queue's resolution when coarser (the default resolution is 1 s, exact reservation times).
inline queue::Duration ShownEstimateStep(queue::Duration resolution) {
  return std::max<queue::Duration>(resolution, 60);
}

// The planner's estimate can move with each cycle's `now` although nothing changed (behind a
// workload past its time limit it is "now + a step"; with a coarse resolution it lies on a grid
// that starts at each cycle's now). Shown: rounded up onto the absolute grid of `step` (whole
// minutes: RFC 3339 without seconds that flicker), and the value shown before is kept while the
// new one is at most one step earlier than it. A later one is shown at once (a slip, at most once
// per step when it keeps slipping), so is one much earlier. Rounding up keeps a promise a promise:
// the workload starts no later than what it shows.
inline std::optional<queue::Time> StableEstimate(std::optional<queue::Time> shown,
                                                 std::optional<queue::Time> estimate, queue::Duration step) {
  if (!estimate.has_value()) return std::nullopt;
  queue::Time rounded = *estimate;
  if (step > 1) {
    const queue::Time rem = ((rounded % step) + step) % step;
    if (rem != 0) rounded += step - rem;
  }
  if (shown.has_value() && rounded <= *shown && *shown - rounded <= step) return shown;
  return rounded;
}

// Equal for two reports that show the same thing.
inline std::string WaitFingerprint(const WaitReport& r) {
  return absl::StrCat(r.reason, "|", r.message, "|", r.queue_position, "|", r.estimated_start.value_or(-1));
}

}  // namespace onequeue::scheduler

#pragma once
// The daemon's log line for a cycle that acted: what it did, how long it took and where (the
// phases of onequeue_cycle_duration_seconds). A cycle that acted for seconds is one of writes to
// the API; one that planned for seconds is the queue's (docs/benchmarks.md reads cycles so).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace onequeue::scheduler {

struct CycleStats;

// Each phase's name and time, in the order they ran.
using CyclePhaseTimes = std::vector<std::pair<const char*, absl::Duration>>;

// "cycle: 100 pending (0 Slurm), ... 0 bind errors; 1480 ms (snapshot 2, plan 5, act 1472)";
// nullopt for a cycle that bound, reported, preempted, started, lent, reclaimed, returned and held
// nothing (no line: an idle daemon runs one every few seconds).
std::optional<std::string> DescribeCycle(const CycleStats& s, absl::Duration took, const CyclePhaseTimes& phases);

}  // namespace onequeue::scheduler

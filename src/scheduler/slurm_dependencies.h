#pragma once
// Issue 29: Slurm job dependencies (`sbatch --dependency=...`) in the one queue. Pure: no I/O.
//
// A pending job whose dependency is not met is Slurm's to release: onequeue neither holds nor
// starts it (Slurm lifts the dependency when its parents end, or never). What onequeue adds is
// the plan: a job that waits for running parents is reserved no earlier than their expected end
// (start + time limit), so that backfill does not take the nodes it will need then
// (PendingWorkload::not_before). Planned: afterok, afterany, afternotok (the parent's expected
// end) and after (the parent's start, plus the `+minutes` asked), on parents that run now, joined
// by `,` (all: the latest) or `?` (any: the earliest). Not planned, left to Slurm as before: a
// parent that is pending (its start is not known), unknown to the view, an array, or without a
// time limit; `singleton`, `aftercorr`, `afterburstbuffer`; text this parser refuses.
#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "queue/model.h"
#include "slurm_bridge/model.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

struct SlurmDependency {
  enum class Type { kAfter, kAfterAny, kAfterOk, kAfterNotOk };
  // Slurm's state of one dependency as it reports it ("afterok:12(unfulfilled)"); a dependency
  // as the user wrote it ("afterok:12") carries none: kUnfulfilled.
  enum class State { kUnfulfilled, kFulfilled, kFailed };
  Type type = Type::kAfterOk;
  uint32_t job_id = 0;
  std::optional<uint32_t> array_task;  // "12_3": one task of array 12
  bool all_tasks = false;              // "12_*": every task of array 12
  int64_t minutes = 0;                 // after:12+5: five minutes after job 12 started
  State state = State::kUnfulfilled;
};

struct SlurmDependencies {
  std::vector<SlurmDependency> items;
  bool any = false;        // joined by '?': one of them is enough; else ',' (all of them)
  bool singleton = false;  // "singleton": one job of the name and user at a time (left to Slurm)
  // No dependency at all (an empty string or "(null)").
  bool empty() const { return items.empty() && !singleton; }
  // Some dependency is not met yet.
  bool Unfulfilled() const;
};

// Parses Slurm's `dependency` field (the job listing of every REST version, v0.0.38 to v0.0.45,
// and scontrol) and the `--dependency` syntax: "afterok:12:13,afterany:14", "after:12+5",
// "afterok:12_3", "afterok:12_*", "afterok:12(unfulfilled)", "a?b", "singleton", "" and "(null)".
// Refuses anything else with a message naming the part it could not read.
absl::StatusOr<SlurmDependencies> ParseSlurmDependencies(absl::string_view text);

// What the plan does with a pending job of the view.
struct DependencyPlan {
  bool waits = false;  // its dependency is not met: Slurm's to release, onequeue never holds nor starts it
  // Set when the job may be planned, from this time on (the parents' expected end); unset when
  // `waits` and it is not planned (left to Slurm): `message` says why.
  std::optional<queue::Time> not_before;
  std::string message;  // for `oq explain` and the wait status
};

// A pending job Slurm keeps for its dependency: Slurm's reason Dependency or
// DependencyNeverSatisfied, a dependency not met, or one this parser cannot read. Such a job is
// never held by onequeue (whatever the plan says of it) and never started before its not_before.
bool WaitsForDependency(const slurm::SlurmJob& job);

// Reads `job.dependency` (and Slurm's reason "Dependency") against the parents in `view`.
// not_before is never earlier than now + 1: a job Slurm still keeps waiting is never started by
// onequeue, even when a parent has run past its expected end.
DependencyPlan PlanDependency(const slurm::SlurmJob& job, const slurm::SlurmView& view, queue::Time now);

}  // namespace onequeue::scheduler

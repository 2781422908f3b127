#pragma once
// Issue 29: Slurm job arrays in the one queue. Pure: no I/O.
//
// Slurm lists a pending array as one record (job id = the array's id, array_task_string "0-9" or
// "3-9%2") until a task starts: then the task gets a record and a job id of its own. onequeue
// plans each pending task as a workload "slurm/<array>_<task>", in task order (Slurm's order at
// equal priority), at most as many at once as the %N throttle lets run beside the array's running
// tasks. A task is started through the ordinary start path after it is split off by its own id
// (SlurmActions::SplitArrayTask): from then on it is a job like any other.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "slurm_bridge/model.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

using ArrayTask = std::pair<uint32_t, uint32_t>;  // (array job id, task id)
// Tasks onequeue split off and started, not yet seen in their own records: task -> the
// Kubernetes nodes lent for it.
using StartedTasks = std::map<ArrayTask, std::vector<std::string>>;

// "slurm/100_3"; and back (nullopt for a workload that is no array task).
std::string ArrayTaskWorkloadId(uint32_t array_job_id, uint32_t task_id);
std::optional<ArrayTask> ArrayTaskOf(std::string_view workload_id);

// The array's tasks that run (or finish their run) in `view`, by array job id.
std::map<uint32_t, int> RunningTasksByArray(const slurm::SlurmView& view);

// The tasks of the pending array record `job` to plan now, ascending: its pending tasks except
// those in `started` (onequeue started them; the view may not show the split yet), and with a
// %N throttle only N - running - started of them. `started_listed`: the started tasks the record
// still lists (a view made before their split): they hold their nodes as if running. `error`
// when the task string cannot be read (the record is then planned as one job, as before issue 29).
struct TasksToPlan {
  std::vector<uint32_t> tasks;
  std::vector<uint32_t> started_listed;
  std::string error;
};
TasksToPlan PendingTasksToPlan(const slurm::SlurmJob& job, int running, const StartedTasks& started);

// Issue 29: the task to start when the plan starts `planned` (a task of an array): the lowest
// task of that array in `pending_tasks` (this cycle's planned tasks, any order) not in `started`.
// An array's pending tasks share one record, so they ask the same: any of them fits the slot the
// plan chose, and Slurm's order (task order) decides which. The plan itself may put a lower task
// later (a reservation it lost to a change of the world while later tasks kept theirs).
ArrayTask LowestTaskToStart(const ArrayTask& planned, const std::vector<ArrayTask>& pending_tasks,
                            const StartedTasks& started);

// Issue 29: a heterogeneous job's components are left to Slurm: onequeue neither holds nor starts
// them (they wait as held with this message). The queue's gang is N equal members, started
// together; a hetjob's components ask different shapes, and releasing one component lends nodes
// Slurm cannot use until every component can start. Slurm starts the hetjob on nodes that are
// its own (outside the pool, or lent).
std::string HetJobLeftToSlurmMessage(const slurm::SlurmJob& job);

// Whether `job` is a pending array record that still stands for tasks (not one task's own record).
inline bool IsPendingArrayRecord(const slurm::SlurmJob& job) {
  return job.array_job_id != 0 && !job.array_task_id && !job.array_tasks.empty();
}

// The task `job` is the record of, if it is one task of an array: a task split off (a job id of
// its own), or the array's last task left in the array's own record (Slurm gives the last pending
// task the array's job id, as it does a one-task array). Such a record is written by its task id
// "<array>_<task>": a write to the array's job id reaches every record of the array (on 22.05
// `scontrol update JobId=<array>` answers "<array>_0-8: Job has already finished" for the tasks
// that ran, and would hold the split-off tasks still waiting to start; seen live).
inline std::optional<ArrayTask> ArrayTaskOfRecord(const slurm::SlurmJob& job) {
  if (job.array_job_id == 0 || !job.array_task_id) return std::nullopt;
  return ArrayTask{job.array_job_id, *job.array_task_id};
}

}  // namespace onequeue::scheduler

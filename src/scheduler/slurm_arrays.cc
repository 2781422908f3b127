#include "scheduler/slurm_arrays.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace onequeue::scheduler {

std::string ArrayTaskWorkloadId(uint32_t array_job_id, uint32_t task_id) {
  return absl::StrCat("slurm/", slurm::ArrayTaskId(array_job_id, task_id));
}

std::optional<ArrayTask> ArrayTaskOf(std::string_view workload_id) {
  absl::string_view w(workload_id.data(), workload_id.size());
  if (!absl::ConsumePrefix(&w, "slurm/")) return std::nullopt;
  const size_t us = w.find('_');
  if (us == absl::string_view::npos) return std::nullopt;
  ArrayTask t;
  if (!absl::SimpleAtoi(w.substr(0, us), &t.first) || !absl::SimpleAtoi(w.substr(us + 1), &t.second))
    return std::nullopt;
  return t;
}

std::map<uint32_t, int> RunningTasksByArray(const slurm::SlurmView& view) {
  std::map<uint32_t, int> out;
  for (const auto& [id, j] : *view.jobs) {
    if (j.array_job_id == 0 || !j.array_task_id) continue;
    if (j.state == slurm::JobState::kRunning || j.state == slurm::JobState::kSuspended ||
        j.state_flags.count("COMPLETING"))
      ++out[j.array_job_id];
  }
  return out;
}

TasksToPlan PendingTasksToPlan(const slurm::SlurmJob& job, int running, const StartedTasks& started) {
  TasksToPlan out;
  absl::StatusOr<slurm::ArrayTasks> tasks = slurm::ParseArrayTasks(job.array_tasks);
  if (!tasks.ok()) {
    out.error = std::string(tasks.status().message());
    return out;
  }
  const uint32_t throttle = tasks->max_running > 0 ? tasks->max_running : job.array_max_tasks;
  int started_here = 0;
  for (const auto& [s, nodes] : started) started_here += s.first == job.array_job_id ? 1 : 0;
  int64_t room = throttle > 0 ? static_cast<int64_t>(throttle) - running - started_here : INT64_MAX;
  for (uint32_t t : tasks->ids) {
    if (started.count({job.array_job_id, t})) {
      out.started_listed.push_back(t);
      continue;
    }
    if (room <= 0) continue;
    out.tasks.push_back(t);
    --room;
  }
  return out;
}

std::string HetJobLeftToSlurmMessage(const slurm::SlurmJob& job) {
  return absl::StrCat("left to Slurm: job ", job.job_id, " is component ", job.het_job_offset,
                      " of heterogeneous job ", job.het_job_id,
                      "; onequeue plans gangs of equal members only: Slurm starts it on nodes that are Slurm's");
}

ArrayTask LowestTaskToStart(const ArrayTask& planned, const std::vector<ArrayTask>& pending_tasks,
                            const StartedTasks& started) {
  ArrayTask lowest = planned;
  for (const ArrayTask& t : pending_tasks) {
    if (t.first == planned.first && t.second < lowest.second && !started.count(t)) lowest = t;
  }
  return lowest;
}

}  // namespace onequeue::scheduler

// In-memory SlurmApi for unit tests of pure logic (poller bookkeeping, ownership decisions).
// Integration tests use the real slurmrestd instead.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::slurm::testing {

class FakeSlurmApi : public SlurmApi {
 public:
  std::map<uint32_t, SlurmJob> jobs;
  std::map<std::string, SlurmNode> nodes;
  std::vector<SlurmPartition> partitions;
  int64_t last_job_update = 100;  // Slurm's clock of the last job table change
  absl::Status fail_with;         // when not OK, every call returns it
  std::vector<std::string> calls;
  std::vector<std::pair<uint32_t, JobUpdate>> job_updates;  // every UpdateJob, in order
  std::vector<JobSubmission> submissions;                   // every Submit, in order
  uint32_t next_job_id = 1000;
  std::string user = "slurm";  // the token's user: submits jobs and sets node reasons

  ApiVersion version() const override { return ApiVersion::kV0041; }

  absl::StatusOr<JobListing> ListJobs(std::optional<int64_t> update_time) override {
    calls.push_back(update_time ? absl::StrCat("ListJobs@", *update_time) : "ListJobs");
    if (!fail_with.ok()) return fail_with;
    JobListing l;
    if (update_time && *update_time - 1 >= last_job_update) {
      l.unchanged = true;
      return l;
    }
    for (const auto& [id, j] : jobs) l.items.push_back(j);
    // Like slurmctld: the answer carries the time it was made, at least a second after the change.
    l.last_update = last_job_update + 1;
    return l;
  }
  absl::StatusOr<NodeListing> ListNodes(std::optional<int64_t>) override {
    calls.push_back("ListNodes");
    if (!fail_with.ok()) return fail_with;
    NodeListing l;
    for (const auto& [n, node] : nodes) l.items.push_back(node);
    return l;
  }
  absl::StatusOr<PartitionListing> ListPartitions() override {
    calls.push_back("ListPartitions");
    if (!fail_with.ok()) return fail_with;
    PartitionListing l;
    l.items = partitions;
    return l;
  }
  // Issue 29: listed only when set (no call recorded, so call-order tests stay as they were).
  std::optional<std::vector<SlurmReservation>> reservations;
  absl::StatusOr<ReservationListing> ListReservations() override {
    if (!reservations) return SlurmApi::ListReservations();
    if (!fail_with.ok()) return fail_with;
    ReservationListing l;
    l.items = *reservations;
    return l;
  }
  // Issue 29: like slurmctld, the task leaves the array's record for one of its own.
  absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job_id, uint32_t task_id,
                                          const std::string& admin_comment) override {
    calls.push_back(absl::StrCat("SplitArrayTask ", array_job_id, "_", task_id));
    if (!fail_with.ok()) return fail_with;
    auto it = jobs.find(array_job_id);
    if (it == jobs.end()) return absl::NotFoundError("no array");
    absl::StatusOr<ArrayTasks> tasks = ParseArrayTasks(it->second.array_tasks);
    if (!tasks.ok()) return tasks.status();
    std::vector<std::string> left;
    bool found = false;
    for (uint32_t t : tasks->ids) {
      if (t == task_id) found = true;
      else left.push_back(absl::StrCat(t));
    }
    if (!found) return absl::NotFoundError("no such task");
    SlurmJob own = it->second;
    own.job_id = next_job_id++;
    own.array_task_id = task_id;
    own.array_tasks.clear();
    own.admin_comment = admin_comment;
    it->second.array_tasks = absl::StrJoin(left, ",");
    if (tasks->max_running > 0 && !left.empty()) absl::StrAppend(&it->second.array_tasks, "%", tasks->max_running);
    ++last_job_update;
    jobs[own.job_id] = own;
    return own.job_id;
  }
  // Issue 26: job states are listed only when set (else kUnimplemented, and the poller lists
  // jobs by update_time, as the tests written before state mode expect). A record's state is its
  // job's state and flags, and an array record's task list.
  bool lists_job_states = false;
  absl::Status fail_job_states;  // when not OK, ListJobStates returns it
  absl::StatusOr<JobStateListing> ListJobStates() override {
    if (!lists_job_states) return SlurmApi::ListJobStates();
    calls.push_back("ListJobStates");
    if (!fail_with.ok()) return fail_with;
    if (!fail_job_states.ok()) return fail_job_states;
    JobStateListing l;
    for (const auto& [id, j] : jobs) {
      SlurmJobState s;
      s.job_id = id;
      s.state = j.state;
      s.state_flags = j.state_flags;
      s.tasks = j.array_task_id ? absl::StrCat(*j.array_task_id) : j.array_tasks;
      l.items.push_back(s);
    }
    if (after_job_states) after_job_states();
    return l;
  }
  std::function<void()> after_job_states;  // runs once a state listing is made (a write racing the poll)
  std::set<uint32_t> gone_by_get;  // GetJob answers kNotFound for these (gone since the listing)
  absl::Status fail_get_job;       // when not OK, GetJob returns it
  absl::StatusOr<SlurmJob> GetJob(uint32_t id) override {
    if (lists_job_states) calls.push_back(absl::StrCat("GetJob ", id));
    if (!fail_with.ok()) return fail_with;
    if (!fail_get_job.ok()) return fail_get_job;
    if (gone_by_get.count(id)) return absl::NotFoundError("no job");
    auto it = jobs.find(id);
    if (it == jobs.end()) return absl::NotFoundError("no job");
    return it->second;
  }
  // Like slurmctld's job info RPC: an array's id answers every record of the array.
  absl::StatusOr<JobListing> GetJobRecords(uint32_t id) override {
    absl::StatusOr<SlurmJob> own = GetJob(id);
    if (!own.ok()) return own.status();
    JobListing l;
    for (const auto& [other, j] : jobs)
      if (other == id || (j.array_job_id == id && gone_by_get.count(other) == 0)) l.items.push_back(j);
    return l;
  }
  absl::StatusOr<SlurmNode> GetNode(const std::string& node) override {
    if (!fail_with.ok()) return fail_with;
    auto it = nodes.find(node);
    if (it == nodes.end()) return absl::NotFoundError("no node");
    return it->second;
  }
  absl::StatusOr<SubmitResult> Submit(const JobSubmission& s) override {
    calls.push_back(absl::StrCat("Submit ", s.name, " ", s.partition, " ", s.nodelist, " ", s.comment));
    submissions.push_back(s);
    if (!fail_with.ok()) return fail_with;
    SlurmJob j;
    j.job_id = next_job_id++;
    j.name = s.name;
    j.partition = s.partition;
    j.comment = s.comment;
    j.user = user;  // slurmctld: the token's user submits
    j.state = JobState::kPending;
    j.required_nodes = {s.nodelist};
    jobs[j.job_id] = j;
    ++last_job_update;
    return SubmitResult{j.job_id};
  }
  absl::Status CancelJob(uint32_t id) override {
    calls.push_back(absl::StrCat("Cancel ", id));
    if (!fail_with.ok()) return fail_with;
    if (jobs.count(id)) jobs[id].state = JobState::kCancelled;
    ++last_job_update;
    return absl::OkStatus();
  }
  absl::Status SignalJob(uint32_t id, const std::string& s) override { return absl::OkStatus(); }
  absl::Status HoldJob(uint32_t id) override { return absl::OkStatus(); }
  absl::Status ReleaseJob(uint32_t id) override { return absl::OkStatus(); }
  // Applies the update like slurmctld would to a pending job: a hold is priority 0.
  absl::Status UpdateJob(uint32_t id, const JobUpdate& u) override {
    std::string call = absl::StrCat("UpdateJob ", id);
    if (u.comment) absl::StrAppend(&call, " comment=", *u.comment);
    if (u.admin_comment) absl::StrAppend(&call, " admin_comment=", *u.admin_comment);
    if (u.hold) absl::StrAppend(&call, " hold=", *u.hold);
    if (u.priority) absl::StrAppend(&call, " priority=", *u.priority);
    if (u.required_nodes) absl::StrAppend(&call, " nodes=", absl::StrJoin(*u.required_nodes, ","));
    if (u.begin_now) absl::StrAppend(&call, " begin_now");
    calls.push_back(call);
    job_updates.emplace_back(id, u);
    if (!fail_with.ok()) return fail_with;
    auto it = jobs.find(id);
    if (it == jobs.end()) return absl::NotFoundError("no job");
    SlurmJob& j = it->second;
    if (u.comment) j.comment = *u.comment;
    if (u.admin_comment) j.admin_comment = *u.admin_comment;
    if (u.hold) j.priority = *u.hold ? 0 : 1;
    if (u.priority) j.priority = *u.priority;
    if (u.required_nodes) j.required_nodes = *u.required_nodes;
    ++last_job_update;
    return absl::OkStatus();
  }
  absl::Status StartAt(uint32_t id, absl::Time, absl::Time) override {
    calls.push_back(absl::StrCat("StartAt ", id));
    return absl::OkStatus();
  }
  absl::Status RequeueJob(uint32_t id) override { return absl::OkStatus(); }
  absl::Status UpdateNode(const std::string& node, const NodeUpdate& u) override {
    calls.push_back(absl::StrCat(u.kind == NodeUpdate::Kind::kDrain ? "Drain " : "Resume ", node, " ", u.reason));
    if (!fail_with.ok()) return fail_with;
    SlurmNode& n = nodes[node];
    if (u.kind == NodeUpdate::Kind::kDrain) {
      n.state_flags.insert("DRAIN");
      n.reason = u.reason;
      n.reason_set_by_user = user;  // slurmctld records who set the reason
    } else {
      n.state_flags.erase("DRAIN");
      n.reason.clear();
      n.reason_set_by_user.clear();
    }
    return absl::OkStatus();
  }
};

}  // namespace onequeue::slurm::testing

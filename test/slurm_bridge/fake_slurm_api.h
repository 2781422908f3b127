// In-memory SlurmApi for unit tests of pure logic (poller bookkeeping, ownership decisions).
// Integration tests use the real slurmrestd instead.
#pragma once

#include <map>
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
  absl::StatusOr<SlurmJob> GetJob(uint32_t id) override {
    if (!fail_with.ok()) return fail_with;
    auto it = jobs.find(id);
    if (it == jobs.end()) return absl::NotFoundError("no job");
    return it->second;
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

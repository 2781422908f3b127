#include "scheduler/slurm_cluster.h"

#include <cstring>

namespace onequeue::scheduler {

absl::Status SlurmBridgeActions::Fence(const std::string& slurm_node, const std::string& owner) {
  return ownership_->Retag(slurm_node, owner);
}

absl::Status SlurmBridgeActions::Unfence(const std::string& slurm_node) { return ownership_->Lend(slurm_node); }

absl::Status SlurmBridgeActions::Hold(uint32_t job, const std::string& comment) {
  slurm::JobUpdate u;
  u.hold = true;
  u.admin_comment = comment;  // issue 29: the user's comment is never written
  return api_->UpdateJob(job, u);
}

absl::Status SlurmBridgeActions::StartOn(uint32_t job, const std::vector<std::string>& slurm_nodes,
                                         const std::string& comment) {
  // Issue 29: neither the user's comment nor ReqNodeList is written. The plan chose `slurm_nodes`
  // inside what the job allows (partition, --constraint, --nodelist, --exclude); Slurm places the
  // released job on the nodes lent to it (every other pool node of its partition is fenced).
  (void)slurm_nodes;
  slurm::JobUpdate u;
  u.admin_comment = comment;
  u.priority = kStartedJobPriority;
  u.begin_now = true;
  return api_->UpdateJob(job, u);
}

absl::StatusOr<uint32_t> SlurmBridgeActions::SplitArrayTask(uint32_t array_job, uint32_t task,
                                                            const std::string& comment) {
  return api_->SplitArrayTask(array_job, task, comment);
}

absl::Status SlurmBridgeActions::StartArrayTask(uint32_t array_job, uint32_t task,
                                                const std::vector<std::string>& slurm_nodes, const std::string& comment) {
  (void)slurm_nodes;  // not pinned, as StartOn
  slurm::JobUpdate u;
  u.admin_comment = comment;
  u.priority = kStartedJobPriority;
  u.begin_now = true;
  return api_->UpdateArrayTasks(array_job, absl::StrCat(task), u);
}

absl::Status SlurmBridgeActions::HoldArrayTasks(uint32_t array_job, const std::string& tasks, const std::string& comment) {
  slurm::JobUpdate u;
  u.hold = true;
  u.admin_comment = comment;
  return api_->UpdateArrayTasks(array_job, tasks, u);
}

absl::Status SlurmBridgeActions::Requeue(uint32_t job) { return api_->RequeueJob(job); }

absl::Status SlurmBridgeActions::RequeueArrayTask(uint32_t array_job, uint32_t task) {
  return api_->RequeueArrayTask(array_job, task);
}

absl::Status SlurmBridgeActions::Cancel(uint32_t job) { return api_->CancelJob(job); }

absl::StatusOr<uint32_t> SlurmBridgeActions::SubmitPodPlaceholder(const slurm::JobSubmission& job) {
  absl::StatusOr<slurm::SubmitResult> r = api_->Submit(job);
  if (!r.ok()) return r.status();
  return r->job_id;
}

bool SlurmBridgeActions::FenceRequeues() const { return std::strcmp(ownership_->mechanism(), "placeholder") == 0; }

absl::StatusOr<bool> SlurmBridgeActions::Ready(const std::string& slurm_node) {
  absl::StatusOr<slurm::OwnershipStatus> s = ownership_->Status(slurm_node);
  if (!s.ok()) return s.status();
  return s->holder == slurm::NodeHolder::kOnequeue && s->ready;
}

}  // namespace onequeue::scheduler

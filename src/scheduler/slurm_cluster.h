#pragma once
// The loop's Slurm actions over slurmrestd (slurm_bridge): fences by the configured mechanism
// (drain or placeholder), holds and starts jobs through job updates, requeues through scontrol.
#include <memory>
#include <string>
#include <vector>

#include "scheduler/scheduling_loop.h"
#include "slurm_bridge/ownership.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::scheduler {

// The explicit Slurm priority of a job onequeue starts: above anything multifactor gives without
// huge weights, so no job Slurm sees first can take the lent nodes before it.
inline constexpr uint32_t kStartedJobPriority = 4000000000u;

class SlurmBridgeActions : public SlurmActions {
 public:
  SlurmBridgeActions(slurm::SlurmApi* api, slurm::NodeOwnership* ownership) : api_(api), ownership_(ownership) {}

  absl::Status Fence(const std::string& slurm_node, const std::string& owner) override;
  absl::Status Unfence(const std::string& slurm_node) override;
  absl::Status Hold(uint32_t job, const std::string& comment) override;
  absl::Status StartOn(uint32_t job, const std::vector<std::string>& slurm_nodes, const std::string& comment) override;
  absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job, uint32_t task, const std::string& comment) override;
  absl::Status StartArrayTask(uint32_t array_job, uint32_t task, const std::vector<std::string>& slurm_nodes,
                              const std::string& comment) override;
  absl::Status HoldArrayTasks(uint32_t array_job, const std::string& tasks, const std::string& comment) override;
  absl::Status Requeue(uint32_t job) override;
  absl::Status RequeueArrayTask(uint32_t array_job, uint32_t task) override;
  absl::Status Cancel(uint32_t job) override;
  bool FenceRequeues() const override;
  absl::StatusOr<bool> Ready(const std::string& slurm_node) override;
  absl::StatusOr<uint32_t> SubmitPodPlaceholder(const slurm::JobSubmission& job) override;

 private:
  slurm::SlurmApi* api_;
  slurm::NodeOwnership* ownership_;
};

}  // namespace onequeue::scheduler

#pragma once
// What the last scheduling cycle saw and decided, published for readers on other threads (the
// gRPC QueueService behind `oq queue/nodes/priority/explain`). The loop builds one immutable
// CycleStatus per cycle and swaps it in; readers take a shared_ptr and never see a half-made one,
// nor hold the loop up for longer than a pointer copy.
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "queue/plan.h"
#include "scheduler/slurm_world.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {

// Why a pod waits, as users read it in kubectl describe and the pod's annotations.
struct WaitReport {
  std::string reason;   // a WaitReason name: Priority, Resources, ReservedForHigherPriority, ...
  std::string message;  // plain words
  int32_t queue_position = 0;
  std::optional<queue::Time> estimated_start;
};

struct CycleStatus {
  queue::Time now = 0;
  // The plan and, through plan->snapshot, the nodes, running and pending workloads it was made from.
  std::shared_ptr<const queue::Plan> plan;
  std::map<std::string, WorkloadPods, std::less<>> pending_pods;  // pending pod workload -> its pods
  std::map<std::string, WorkloadPods, std::less<>> running_pods;  // running pod workload -> its pods
  // Slurm's side: joined nodes and the jobs by workload id (slurm.view keeps them alive). Empty
  // without Slurm.
  SlurmRecords slurm;
  // What each waiting pod workload was told (the plan's reason, refined: refused preemptions, the
  // Slurm jobs it waits behind).
  std::map<std::string, WaitReport, std::less<>> reports;
  // onequeue.io/owner of every pool node as the cycle read or wrote it.
  std::map<std::string, std::string> node_owner;
  // Lent nodes no Slurm job uses: since when (they return after slurm.returnAfterSeconds).
  std::map<std::string, queue::Time> lent_idle_since;
  int64_t return_after_seconds = 0;
  // Issue 29: each account's fair-share usage (TRES billing-unit seconds, decayed to `now`) and
  // its fair-share factor (0..1), for accounts with usage or shares.
  struct AccountShare {
    double usage = 0;
    double fair_share = 0;
  };
  std::map<std::string, AccountShare> accounts;
};

// The last published CycleStatus. Written by the loop's thread, read by any.
class StatusBoard {
 public:
  void Publish(std::shared_ptr<const CycleStatus> status) {
    absl::MutexLock l(&mu_);
    latest_ = std::move(status);
  }
  // Null before the first cycle (or on a standby replica, which runs none).
  std::shared_ptr<const CycleStatus> Latest() const {
    absl::MutexLock l(&mu_);
    return latest_;
  }

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const CycleStatus> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace onequeue::scheduler

#pragma once
// Issue 29: Slurm's partition limits and states for the pending jobs onequeue orders, as Slurm
// applies them. Pure: no I/O.
//
// Per pending job and per shared partition of its list (`-p a,b`: each partition is checked
// against its own limits, in the job's order, not only the first), whether onequeue may start
// the job there:
//   * State (slurm.conf(5)): UP yes; DRAIN yes, since a DRAIN partition refuses new submissions
//     but still runs the jobs already queued in it; DOWN and INACTIVE no, since their queued
//     jobs are not allocated nodes (Slurm's reasons PartitionDown, PartitionInactive).
//   * MaxTime: a job whose time limit is over the partition's MaxTime is not started there (Slurm
//     keeps it pending: PartitionTimeLimit). A job without a readable limit (the partition's
//     default, or UNLIMITED: the REST answers do not tell them apart) is left to the check Slurm
//     makes when onequeue releases it.
//   * MaxNodes / MinNodes: a job asking more / fewer nodes is not started there
//     (PartitionNodeLimit).
//   * A partition the view does not list (not polled yet) allows the job: Slurm still checks.
// The job may start on the union of the nodes of the partitions that allow it. When none does,
// onequeue never starts it: it is queued as held, with the reason of each partition (in its
// AdminComment and `oq explain`), as Slurm would keep it pending.
//
// Partition PreemptMode OFF (read where the REST version reports it: v0.0.45 only): Slurm never
// preempts the partition's jobs, so onequeue does not choose them as victims either.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "slurm_bridge/model.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

enum class PartitionVerdict { kAllowed, kDown, kInactive, kOverMaxTime, kOverMaxNodes, kUnderMinNodes };

// Slurm's own pending reason for a verdict ("PartitionTimeLimit"); "" for kAllowed.
const char* SlurmReasonOf(PartitionVerdict verdict);

struct PartitionCheck {
  std::string partition;
  PartitionVerdict verdict = PartitionVerdict::kAllowed;
  std::string why;  // "partition pool: time limit 5m over its MaxTime 2m (PartitionTimeLimit)"; "" when allowed
};

struct JobPartitions {
  std::vector<PartitionCheck> checks;  // each shared partition of the job's list, in its order
  // The partitions that allow the job, in the job's order.
  std::vector<std::string> Allowed() const;
  // Why onequeue does not start the job (every partition refuses it): one sentence.
  std::string Reason(uint32_t job_id) const;
};

// Checks `job` (asking `node_count` nodes) against each partition of its list that is in
// `shared`. `partitions` may be null (not polled yet): every partition then allows it.
JobPartitions CheckJobPartitions(const slurm::SlurmJob& job, uint32_t node_count,
                                 const slurm::SlurmView::Partitions* partitions,
                                 const std::vector<std::string>& shared);

// One partition's verdict for a job of `node_count` nodes and time limit `time_limit`.
PartitionCheck CheckPartition(const slurm::SlurmPartition& partition, uint32_t node_count,
                              const std::optional<absl::Duration>& time_limit);

// True when the partition says PreemptMode=OFF: Slurm never preempts its jobs (v0.0.45 reports
// it; elsewhere the mode is unknown and onequeue's QOS table decides alone).
bool NeverPreemptedIn(const std::string& partition, const slurm::SlurmView::Partitions* partitions);

}  // namespace onequeue::scheduler

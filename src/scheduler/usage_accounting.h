#pragma once
// Fair-share input: the usage of finished pods and Slurm jobs, charged to their accounts
// (cpu-seconds, like Slurm's TRES billing of cpus), and the accounts seen when the configuration
// has no account tree (each a leaf with one share).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "queue/model.h"
#include "scheduler/snapshot_builder.h"
#include "slurm_bridge/ownership.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

class UsageAccounting {
 public:
  // identity: onequeue's Slurm user, whose placeholders are fences, not usage (issue 24 M2).
  UsageAccounting(std::string reclaim_partition, slurm::SlurmIdentity identity, queue::Duration half_life)
      : reclaim_partition_(std::move(reclaim_partition)), identity_(std::move(identity)), half_life_(half_life) {}
  // Pods are charged when they stop running, Slurm jobs once when the poll shows them finished;
  // records older than ten half-lives (weighing less than 0.1 %) are dropped.
  void Charge(const BuiltSnapshot& built, const slurm::SlurmView* slurm_view, queue::Time now);
  // Learns the accounts of the snapshot and of the usage; true when a new one appeared.
  bool Learn(const queue::Snapshot& snapshot);
  // The learned accounts as leaves of the root, one share each.
  std::vector<queue::Account> LearnedAccounts() const;
  bool Knows(const std::string& account) const { return learned_.count(account) > 0; }
  const queue::UsageHistory& usage() const { return usage_; }

 private:
  void ChargeJobs(const slurm::SlurmView& view);
  struct RunningCharge {
    std::string account;
    queue::Time start = 0;
    double cores = 0;
  };
  std::string reclaim_partition_;
  slurm::SlurmIdentity identity_;
  queue::Duration half_life_;
  std::map<std::string, RunningCharge> running_;  // running pod workload -> what it uses
  std::set<uint32_t> charged_jobs_;               // finished Slurm jobs already charged
  queue::UsageHistory usage_;
  std::set<std::string> learned_;
};

}  // namespace onequeue::scheduler

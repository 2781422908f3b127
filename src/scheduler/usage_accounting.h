#pragma once
// Fair-share input (issue 29, docs/lending.md "Fair-share from real usage"): what running pods
// and Slurm jobs use, in TRES billing units (tres_billing.h) x seconds, charged to their accounts
// while they run (every charge interval, and the remainder when they stop), decayed with the
// half-life, and saved to a UsageStore (usage_store.h) so a restarted daemon or a new leader
// continues from the same numbers. Also the accounts seen when the configuration has no account
// tree (each a leaf with one share).
//
// What is kept per account is one decayed total (usage at time t; exponential decay makes the
// sum of decayed records equal the decayed sum), so memory and the saved text grow with the
// accounts, not with the running time. What is kept per workload is how far it has been charged
// ("charged until"); that is saved too, so no second of a workload is charged twice across a
// restart and none is lost except what ran after the last save of a pod that stopped while no
// leader ran (at most one charge interval).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "queue/model.h"
#include "scheduler/snapshot_builder.h"
#include "scheduler/tres_billing.h"
#include "slurm_bridge/ownership.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

// Where the usage is kept between daemons (usage_store.h: a ConfigMap).
class UsageStore {
 public:
  virtual ~UsageStore() = default;
  // The saved text; NotFound when nothing is saved yet; any other error: not known now (retry).
  virtual absl::StatusOr<std::string> Load() = 0;
  // Writes the text, conditional on the version last loaded or saved: Aborted when another
  // writer changed it since (load again).
  virtual absl::Status Save(const std::string& text) = 0;
  // Where, for log lines ("ConfigMap onequeue-system/onequeue-usage").
  virtual std::string Describe() const = 0;
};

struct UsageOptions {
  std::string reclaim_partition;
  // onequeue's Slurm user, whose placeholders are fences, not usage (issue 24 M2).
  slurm::SlurmIdentity identity;
  queue::Duration half_life = 12 * 3600;
  queue::Duration charge_interval = 60;  // running work is charged (and the usage saved) this often
  TresBillingWeights weights;            // default: CPU 1
  std::map<std::string, std::string> gres_resources = {{"gpu", "nvidia.com/gpu"}};
  std::string scheduler_name = "onequeue";  // saved, and checked on load (another scheduler's is foreign)
};

class UsageAccounting {
 public:
  explicit UsageAccounting(UsageOptions options) : options_(std::move(options)) {}
  // Saved to and restored from `store` (null: memory only). Loaded at the first Charge (a
  // standby runs no cycle, so that is when this replica leads), saved every charge interval.
  void PersistTo(UsageStore* store) { store_ = store; }

  // Charges what ran since the last charge: a workload that stopped (a pod gone, a Slurm job
  // requeued or finished: up to its end) at once, every running one when charge_interval has
  // passed since the last such charge. Accounts whose usage is older than ten half-lives
  // (weighing less than 0.1 %) are dropped.
  void Charge(const BuiltSnapshot& built, const slurm::SlurmView* slurm_view, queue::Time now);
  // Learns the accounts of the snapshot and of the usage; true when a new one appeared.
  bool Learn(const queue::Snapshot& snapshot);
  // The learned accounts as leaves of the root, one share each.
  std::vector<queue::Account> LearnedAccounts() const;
  bool Knows(const std::string& account) const { return learned_.count(account) > 0; }
  // One record per account: its decayed total as of its last charge.
  const queue::UsageHistory& usage() const { return usage_; }
  // Each account's usage decayed to `now` (billing-unit seconds).
  std::map<std::string, double> UsageAt(queue::Time now) const;

  // The saved form (JSON), and back. Restore replaces everything or, on bad or foreign text,
  // changes nothing and says why.
  std::string Save(queue::Time now) const;
  absl::Status Restore(const std::string& text);

 private:
  // How far one running workload has been charged.
  struct Charged {
    std::string account;
    double rate = 0;            // billing units per second
    queue::Time until = 0;      // charged up to here
    bool done = false;          // a finished Slurm job charged in full (kept while Slurm lists it)
    bool restored = false;      // from the store, not seen running since
  };
  void Add(const std::string& account, double amount, queue::Time now);
  // Charges `c` up to `to` (never back in time).
  void ChargeUpTo(Charged& c, queue::Time to, queue::Time now);
  void ChargePods(const BuiltSnapshot& built, bool all, queue::Time now);
  void ChargeJobs(const slurm::SlurmView& view, bool all, queue::Time now);
  void Seen(const std::string& key, const std::string& account, double rate, queue::Time start, bool all,
            queue::Time now);
  void LoadFromStore();
  void SaveToStore(queue::Time now);
  void Rebuild(queue::Time now);

  UsageOptions options_;
  UsageStore* store_ = nullptr;
  bool loaded_ = false;
  std::string load_error_;          // the last load error logged (logged again only when it changes)
  queue::Time last_charge_ = 0;     // last charge of every running workload (0: none yet)
  struct Total {
    double amount = 0;
    queue::Time at = 0;
  };
  std::map<std::string, Total> totals_;      // account -> usage as of `at`
  std::map<std::string, Charged> charged_;   // "pod/<workload>" or "slurm/<job id>"
  queue::UsageHistory usage_;
  std::set<std::string> learned_;
};

}  // namespace onequeue::scheduler

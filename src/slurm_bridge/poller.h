// The Slurm poller: keeps an immutable view of jobs, nodes and partitions, refreshed by PollOnce.
// Incremental through ?update_time= (Slurm answers "unchanged" when nothing changed, in one of
// three forms (VersionAdapter::IsUnchangedAnswer), else the full table), a periodic full fetch to
// bound any drift, and after any failure the next poll is a full one, so slurmrestd or slurmctld
// restarts lose nothing. An incremental answer never removes a job or node by itself: when it
// lacks any the view has, a full listing (no update_time) is fetched in the same poll and decides.
// Time is an argument: no clock inside.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "slurm_bridge/model.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::slurm {

// Immutable. The three tables are shared between successive views when they did not change, so
// an unchanged poll of 10,000 jobs copies nothing.
struct SlurmView {
  using Jobs = std::map<uint32_t, SlurmJob>;
  using Nodes = std::map<std::string, SlurmNode>;
  using Partitions = std::map<std::string, SlurmPartition>;
  using Reservations = std::map<std::string, SlurmReservation>;
  std::shared_ptr<const Jobs> jobs = std::make_shared<const Jobs>();
  std::shared_ptr<const Nodes> nodes = std::make_shared<const Nodes>();
  std::shared_ptr<const Partitions> partitions = std::make_shared<const Partitions>();
  // Issue 29: advance reservations, listed in full every poll (a maintenance reservation must
  // keep onequeue off its nodes from the next cycle on; the list is short). A failed listing
  // keeps the last table (logged); it does not fail the poll.
  std::shared_ptr<const Reservations> reservations = std::make_shared<const Reservations>();
  absl::Time refreshed_at = absl::InfinitePast();  // time of the last fully successful poll
};

struct PollerOptions {
  bool incremental = true;  // false: full fetch every cycle (the cost baseline)
  // Every this often the job and node lists are fetched in full even when incremental.
  absl::Duration full_refresh_interval = absl::Minutes(5);
  absl::Duration partition_interval = absl::Minutes(1);
  // v0.0.38 answers carry no last_update: the next update_time is the local time the poll
  // started, minus this margin. Slurm answers "no change" iff update_time - 1 >= its last change,
  // so with one clock (slurmrestd on the same host, or NTP) a zero margin misses nothing: the
  // answer was made after the poll started. Raise it by the clock skew otherwise; every margin
  // second turns each change into that many more full fetches (measured in the benchmark).
  absl::Duration clock_margin = absl::ZeroDuration();
};

// What one poll changed, for event-driven queue cycles.
struct PollChanges {
  int jobs_added = 0;
  int jobs_changed = 0;
  int jobs_removed = 0;
  int nodes_changed = 0;
  bool partitions_changed = false;
  bool reservations_changed = false;
  bool any() const {
    return jobs_added + jobs_changed + jobs_removed + nodes_changed > 0 || partitions_changed ||
           reservations_changed;
  }
};

struct PollerStats {
  uint64_t polls = 0;
  uint64_t failures = 0;
  uint64_t full_job_fetches = 0;
  uint64_t unchanged_job_answers = 0;
  // Full listings fetched because an incremental answer lacked jobs or nodes of the view.
  uint64_t confirming_fetches = 0;
  std::string last_error;
};

class SlurmPoller {
 public:
  SlurmPoller(SlurmApi& api, PollerOptions options = {});

  // One cycle. On error the view is kept as it was (it just grows stale) and the status says why.
  absl::StatusOr<PollChanges> PollOnce(absl::Time now);

  std::shared_ptr<const SlurmView> View() const;
  // now - time of the last fully successful poll; InfiniteDuration before the first one.
  absl::Duration Staleness(absl::Time now) const;
  PollerStats stats() const;

 private:
  SlurmApi& api_;
  const PollerOptions options_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const SlurmView> view_ ABSL_GUARDED_BY(mu_);
  PollerStats stats_ ABSL_GUARDED_BY(mu_);
  // Poll bookkeeping; PollOnce is called from one thread at a time.
  std::optional<int64_t> job_update_time_;
  std::optional<int64_t> node_update_time_;
  absl::Time last_full_ = absl::InfinitePast();
  absl::Time last_partitions_ = absl::InfinitePast();
};

}  // namespace onequeue::slurm

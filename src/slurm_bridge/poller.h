// The Slurm poller: keeps an immutable view of jobs, nodes and partitions, refreshed by PollOnce.
// Incremental through ?update_time= (Slurm answers "unchanged" when nothing changed, in one of
// three forms (VersionAdapter::IsUnchangedAnswer), else the full table), a periodic full fetch to
// bound any drift, and after any failure the next poll is a full one, so slurmrestd or slurmctld
// restarts lose nothing. An incremental answer never removes a job or node by itself: when it
// lacks any the view has, a full listing (no update_time) is fetched in the same poll and decides.
// Issue 26: Slurm's update_time is all or nothing (any change returns the whole table), so where
// the api lists job states (SlurmApi::ListJobStates: REST v0.0.41+, squeue before) jobs are
// polled in "state mode" instead: every poll lists the state of every record, fetches alone the
// records that are new or whose state (or array task list) changed, and drops those the complete
// listing lacks. Changes that leave the state as it was (a hold, a release, a new time limit)
// are seen at the next full listing: within full_refresh_interval, or at once for the ids passed
// to Refetch. Time is an argument: no clock inside.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

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
  // Issue 26: state mode where the api lists job states (kUnimplemented: update_time, as before);
  // false: update_time always. Only when incremental.
  bool job_states = true;
  // State mode: more new or changed records than this in one poll are fetched by one full
  // listing instead of one GetJob each (a GetJob costs slurmrestd about one job's JSON and a
  // request; a full listing all of them).
  int max_job_fetches = 20;
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
  // Issue 26, state mode: job-state listings, and records fetched alone (GetJob).
  uint64_t job_state_listings = 0;
  uint64_t single_job_fetches = 0;
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
  // Issue 26: in state mode, fetch `job_id` alone on the next poll whatever its state says: for
  // the jobs onequeue itself wrote (a hold, a start, a requeue), whose new fields would otherwise
  // wait for the next full listing. Thread-safe; a no-op in update_time mode, which sees them.
  void Refetch(uint32_t job_id);

 private:
  // What the jobs step of one poll found; the bookkeeping is committed only if the whole poll
  // succeeds.
  struct JobStep {
    std::shared_ptr<const SlurmView::Jobs> table;  // null: the view's table stays
    bool unchanged = false;                        // update_time: Slurm said nothing changed
    bool full_listing = false;                     // a full job listing was fetched
    std::optional<int64_t> update_time;            // update_time mode: the next one
    std::optional<std::map<uint32_t, SlurmJobState>> states;  // state mode: the next baseline
    uint64_t single_fetches = 0;
    uint64_t confirmations = 0;
  };
  absl::StatusOr<JobStep> PollJobs(const SlurmView::Jobs& old, bool full, absl::Time now, PollChanges& changes);
  absl::StatusOr<JobStep> PollJobsByUpdateTime(const SlurmView::Jobs& old, bool full, absl::Time now,
                                               PollChanges& changes);
  absl::StatusOr<JobStep> PollJobsByStates(const SlurmView::Jobs& old, bool full, const std::set<uint32_t>& asked,
                                           PollChanges& changes);
  // State mode without a full listing: the view's table less the records the complete listing
  // (step.states) lacks, with the records in `fetch` fetched alone (GetJobRecords); a record gone by
  // then is dropped too. step.table stays null when nothing changed.
  absl::Status FetchChangedJobs(const SlurmView::Jobs& old, const std::vector<uint32_t>& fetch, JobStep& step,
                                PollChanges& changes);
  // One fetched record into `table`, counted as added or changed against `old`.
  static void PutFetchedJob(const SlurmView::Jobs& old, SlurmJob job, SlurmView::Jobs& table, PollChanges& changes);

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
  // Set once the api answered ListJobStates with kUnimplemented: update_time from then on.
  bool states_unavailable_ = false;
  std::map<uint32_t, SlurmJobState> last_states_;  // the last state listing, by record
  std::set<uint32_t> refetch_ ABSL_GUARDED_BY(mu_);
};

}  // namespace onequeue::slurm

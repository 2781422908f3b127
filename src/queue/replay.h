#pragma once
// Trace replay: runs an SWF trace through the queue planner in simulated time, so an admin can
// try a policy on their own history (docs/simulate.md).
//
// The model, decided once and written down in docs/simulate.md:
//   * The machine: one node per processor (allocatable 1 cpu), as many as the header's MaxProcs
//     (else MaxNodes, else the widest job), or ReplayOptions::processors when given.
//   * A job of p processors is one gang of p members of 1 cpu each (a Slurm job, all-or-nothing).
//   * Its time limit is the requested time (field 9), which is all the planner knows; it really
//     runs min(run time (field 4), time limit): like Slurm, a job is stopped at its limit. A job
//     without a requested time gets its run time as the limit (a perfect estimate).
//   * Queue order is submit order (all priority weights 0, so ties go to submit time, then id).
//   * Events: every arrival and every completion; all events at one instant are applied, then
//     the planner runs one full cycle (PlanCycle) and everything it says to start starts then.
//   * Jobs that cannot be replayed (unknown processors, run time or submit time, or wider than
//     the machine) are skipped and counted, never silently.
// Pure: no I/O, no clock; the same trace and options always give the same result.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "queue/model.h"
#include "queue/swf.h"

namespace onequeue::queue {

enum class ReplayPolicy {
  kFcfs,          // strict order: the first job that cannot start stops the pass
  kEasy,          // backfill, reservation depth 1
  kConservative,  // backfill, every blocked job gets a reservation
};

absl::StatusOr<ReplayPolicy> ParseReplayPolicy(std::string_view name);
const char* ReplayPolicyName(ReplayPolicy policy);

// The planner configuration a policy maps onto (exact times: resolution 1 s; a window long
// enough for any reservation of the trace).
QueueConfig ReplayQueueConfig(ReplayPolicy policy);

// What the planner plans a job with (docs/simulate.md "Run-time predictions").
enum class RuntimePrediction {
  kTimeLimit,    // the requested time (SWF field 9), as Slurm does
  // EASY++ (Tsafrir, Etsion and Feitelson 2007): the average of the user's two last run times,
  // capped by the time limit (the limit when the user has no finished job yet); a running job
  // that outlives its prediction is planned with its time limit from the next cycle on. Jobs are
  // still killed at their limit only.
  kUserHistory,
};

struct ReplayOptions {
  ReplayPolicy policy = ReplayPolicy::kEasy;
  // Classic conservative backfilling (Mu'alem and Feitelson 2001): a reservation, once made,
  // never moves later. The planner itself re-plans from scratch every cycle, like Slurm, and
  // then an early completion can let earlier jobs move into a new arrangement that pushes a
  // later job's reservation back. With this option the replay orders the queue by each job's
  // current reservation (new jobs last, in submit order) before every cycle, which is the
  // "compression" step of the classic algorithm: every job then starts no later than the first
  // start it was promised. Off by default: the default replays what the daemon would do.
  bool keep_reservations = false;
  // The daemon's own policy (`oq simulate --config`): this planner configuration replaces the
  // policy's (weights, QOS, accounts, reservation depth, resolution and window as given), and the
  // replay then runs as the daemon does (last cycle's reservations are promises when
  // keep_reservations is set, as the daemon's queue.keepReservations, default off, does; `oq
  // simulate --config` sets it from the file), each job's account is its SWF user ("user-N"; "group-N" when the
  // configuration lists the group's account and not the user's), its partition its SWF queue
  // ("queue-N"), its QOS `qos`, and a finished job's processors x run time is charged to its
  // account for fair-share. Without accounts in the configuration every user is a leaf of one
  // share under the root (the daemon's learnt tree).
  std::optional<QueueConfig> config;
  std::string qos;  // every job's QOS with `config` (empty: none)
  // What-if overrides of the policy's planner configuration (`oq simulate --starvation-bound`,
  // `--max-age`), applied to --policy and --config replays alike.
  std::optional<Duration> starvation_bound;  // QueueConfig::starvation_bound
  std::optional<Duration> max_age;           // QueueConfig::max_age
  std::optional<double> starvation_bound_limits;    // QueueConfig::starvation_bound_limits
  std::optional<QueueConfig::StarvationRemedy> starvation_remedy;  // QueueConfig::starvation_remedy
  RuntimePrediction runtime_prediction = RuntimePrediction::kTimeLimit;
  std::optional<int64_t> processors;  // overrides the header
  double tau = 10;                    // bounded slowdown threshold, seconds
};

// One replayed job.
struct JobOutcome {
  int64_t job_number = 0;
  int64_t user = -1;  // SWF field 12 (-1: unknown)
  int64_t processors = 0;
  Time submit = 0;
  Time start = 0;
  Time end = 0;
  Duration run = 0;         // what it ran in the replay: min(run time, limit)
  Duration limit = 0;       // what the planner planned with
  bool cut_at_limit = false;  // the trace's run time exceeded its requested time
  bool backfilled = false;    // started ahead of a blocked higher-priority job
  // The planner's estimated start in the first cycle after the job's submission (unknown if it
  // gave none: the replay asks only for the reservations' starts, QueueConfig::
  // estimate_unreserved), and in the first cycle in which it was first in the queue while waiting.
  std::optional<Time> first_estimate;
  std::optional<Time> head_estimate;
  bool was_head_waiting = false;

  Duration Wait() const { return start - submit; }
  // max(1, (wait + run) / max(run, tau))
  double BoundedSlowdown(double tau) const;
};

struct SkippedJob {
  int64_t job_number = 0;
  int line = 0;
  std::string why;
};

// Bounded slowdown and waits of the jobs of one size class (docs/simulate.md "Metrics").
struct SizeClassSummary {
  std::string name;         // "1", "2-8", ...: the processor counts of the class
  int64_t min_processors = 0;
  int64_t max_processors = 0;  // inclusive
  int64_t jobs = 0;
  double average_bounded_slowdown = 0;
  double average_wait = 0;
  double p99_wait = 0;
  double max_wait = 0;
};

// One user's part: of the jobs, of the work (processors x run time) and of the summed wait.
struct UserSummary {
  int64_t user = -1;
  int64_t jobs = 0;
  double work_share = 0;  // in [0, 1]
  double wait_share = 0;  // in [0, 1]: the user's summed wait / everyone's
  double average_wait = 0;
  double max_wait = 0;
};

struct ReplaySummary {
  int64_t jobs = 0;  // replayed
  int64_t skipped = 0;
  int64_t processors = 0;
  double average_wait = 0;                // seconds
  double max_wait = 0;                    // seconds
  // Nearest-rank percentiles of the waits: the smallest wait w such that at least q of the jobs
  // waited w or less (the ceil(q * n)-th smallest).
  double p50_wait = 0;
  double p95_wait = 0;
  double p99_wait = 0;
  double average_bounded_slowdown = 0;
  double max_bounded_slowdown = 0;
  // used processor-seconds / (processors * makespan); makespan = last end - first submit.
  double utilisation = 0;
  Duration makespan = 0;
  int64_t backfilled = 0;
  int64_t cut_at_limit = 0;
  int64_t cycles = 0;  // planner cycles run
  // Size classes by processors relative to the machine: 1, up to 1/16 of it, up to 1/4 of it,
  // wider (classes that would be empty on a small machine are left out; every job is in one).
  std::vector<SizeClassSummary> size_classes;
  // Every user, largest wait share first (ties: user id).
  std::vector<UserSummary> users;
};

// Nearest-rank percentile (0 < q <= 1) of `values`, which it sorts; 0 when empty.
double NearestRankPercentile(std::vector<double>& values, double q);

// Metrics over any outcomes (also used by the tests on hand-built outcomes).
ReplaySummary Summarise(const std::vector<JobOutcome>& outcomes, int64_t processors, double tau);

struct ReplayResult {
  ReplayPolicy policy = ReplayPolicy::kEasy;
  std::string machine_source;  // "header MaxProcs", "header MaxNodes", "--processors", "widest job"
  std::vector<JobOutcome> jobs;  // in job-number order
  std::vector<SkippedJob> skipped;
  ReplaySummary summary;
};

// kInvalidArgument: bad options or nothing to replay; kInternal: the planner broke a rule the
// replay checks (overfilled a node, started a job twice or on a wrong number of processors) or
// left jobs waiting forever.
absl::StatusOr<ReplayResult> ReplayTrace(const SwfTrace& trace, const ReplayOptions& options);

}  // namespace onequeue::queue

#include "queue/replay.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "queue/plan.h"
#include "queue/planner.h"

namespace onequeue::queue {

absl::StatusOr<ReplayPolicy> ParseReplayPolicy(std::string_view name) {
  if (name == "fcfs") return ReplayPolicy::kFcfs;
  if (name == "easy") return ReplayPolicy::kEasy;
  if (name == "conservative") return ReplayPolicy::kConservative;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy '", std::string(name), "': expected fcfs, easy or conservative"));
}

const char* ReplayPolicyName(ReplayPolicy policy) {
  switch (policy) {
    case ReplayPolicy::kFcfs:
      return "fcfs";
    case ReplayPolicy::kEasy:
      return "easy";
    case ReplayPolicy::kConservative:
      return "conservative";
  }
  return "?";
}

QueueConfig ReplayQueueConfig(ReplayPolicy policy) {
  QueueConfig c;
  // Submit order: every factor off, so the queue order falls back to submit time, then id.
  c.weights = PriorityWeights{0, 0, 0, 0, 0};
  c.resolution = 1;  // exact simulated times, no rounding of reservations
  // Long enough that no reservation of a trace falls outside it (20 years of backlog).
  c.window = Duration{20} * 365 * 24 * 3600;
  // Estimated starts of jobs without a reservation never change what starts; the replay only
  // reads the reservations' starts, so it skips the per-job estimates (a profile query each;
  // issue 27, seventh pass: not even one per cycle, ~15 % of the default policy's replay time).
  c.max_estimates_per_cycle = 1;
  c.estimate_unreserved = false;
  c.starvation_bound = 0;  // the textbook policies have no starvation bound
  c.starvation_bound_limits = 0;
  switch (policy) {
    case ReplayPolicy::kFcfs:
      c.backfill = BackfillMode::kNone;
      c.reservation_depth = 1;
      break;
    case ReplayPolicy::kEasy:
      c.backfill = BackfillMode::kBackfill;
      c.reservation_depth = 1;
      break;
    case ReplayPolicy::kConservative:
      c.backfill = BackfillMode::kBackfill;
      c.reservation_depth = 0;  // unlimited
      break;
  }
  return c;
}

double JobOutcome::BoundedSlowdown(double tau) const {
  const double run_d = static_cast<double>(run);
  return std::max(1.0, (static_cast<double>(Wait()) + run_d) / std::max(run_d, tau));
}

double NearestRankPercentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  const size_t n = values.size();
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n) - 1e-9));
  rank = std::clamp<size_t>(rank, 1, n);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank - 1), values.end());
  return values[rank - 1];
}

namespace {

// Summarise's first pass: averages and maxima of wait and bounded slowdown, backfill counts,
// and what utilisation needs (processor-seconds used, first submit, last end).
struct Totals {
  double wait_sum = 0;
  double used = 0;  // processor-seconds
  Time first_submit = 0;
  Time last_end = 0;
};

Totals SummariseTotals(const std::vector<JobOutcome>& outcomes, double tau, ReplaySummary& s) {
  Totals t;
  double slowdown_sum = 0;
  t.first_submit = outcomes.front().submit;
  t.last_end = outcomes.front().end;
  for (const JobOutcome& j : outcomes) {
    const double wait = static_cast<double>(j.Wait());
    const double slowdown = j.BoundedSlowdown(tau);
    t.wait_sum += wait;
    slowdown_sum += slowdown;
    s.max_wait = std::max(s.max_wait, wait);
    s.max_bounded_slowdown = std::max(s.max_bounded_slowdown, slowdown);
    t.used += static_cast<double>(j.processors) * static_cast<double>(j.run);
    t.first_submit = std::min(t.first_submit, j.submit);
    t.last_end = std::max(t.last_end, j.end);
    s.backfilled += j.backfilled;
    s.cut_at_limit += j.cut_at_limit;
  }
  s.average_wait = t.wait_sum / static_cast<double>(outcomes.size());
  s.average_bounded_slowdown = slowdown_sum / static_cast<double>(outcomes.size());
  return t;
}

// Size classes: [1], [2, P/16], [P/16 + 1, P/4], [P/4 + 1, P] (empty bounds dropped).
std::vector<SizeClassSummary> SummariseSizeClasses(const std::vector<JobOutcome>& outcomes,
                                                   int64_t processors, double tau) {
  const int64_t p16 = std::max<int64_t>(1, processors / 16);
  const int64_t p4 = std::max<int64_t>(p16, processors / 4);
  const int64_t widest = std::max<int64_t>(processors, 1);
  std::vector<std::pair<int64_t, int64_t>> bounds = {{1, 1}};
  if (p16 >= 2) bounds.emplace_back(2, p16);
  if (p4 > p16) bounds.emplace_back(p16 + 1, p4);
  if (widest > p4) bounds.emplace_back(std::max<int64_t>(2, p4 + 1), widest);
  std::vector<SizeClassSummary> classes;
  for (const auto& [lo, hi] : bounds) {
    SizeClassSummary c;
    c.name = lo == hi ? absl::StrCat(lo) : absl::StrCat(lo, "-", hi);
    c.min_processors = lo;
    c.max_processors = hi;
    std::vector<double> class_waits;
    double bsld = 0;
    for (const JobOutcome& j : outcomes) {
      // Jobs wider than the machine (never replayed) would fall in the last class.
      if (j.processors < lo || (j.processors > hi && hi != widest)) continue;
      ++c.jobs;
      bsld += j.BoundedSlowdown(tau);
      class_waits.push_back(static_cast<double>(j.Wait()));
      c.average_wait += static_cast<double>(j.Wait());
      c.max_wait = std::max(c.max_wait, static_cast<double>(j.Wait()));
    }
    if (c.jobs > 0) {
      c.average_bounded_slowdown = bsld / static_cast<double>(c.jobs);
      c.average_wait /= static_cast<double>(c.jobs);
      c.p99_wait = NearestRankPercentile(class_waits, 0.99);
    }
    classes.push_back(std::move(c));
  }
  return classes;
}

// Users: share of the work and of the summed wait (wait_sum: every job's), largest wait share
// first.
std::vector<UserSummary> SummariseUsers(const std::vector<JobOutcome>& outcomes, double wait_sum) {
  std::map<int64_t, UserSummary> by_user;
  double work_total = 0;
  for (const JobOutcome& j : outcomes) {
    UserSummary& u = by_user[j.user];
    u.user = j.user;
    ++u.jobs;
    const double work = static_cast<double>(j.processors) * static_cast<double>(j.run);
    u.work_share += work;
    work_total += work;
    u.wait_share += static_cast<double>(j.Wait());
    u.max_wait = std::max(u.max_wait, static_cast<double>(j.Wait()));
  }
  std::vector<UserSummary> users;
  for (auto& [id, u] : by_user) {
    u.average_wait = u.wait_share / static_cast<double>(u.jobs);
    u.wait_share = wait_sum > 0 ? u.wait_share / wait_sum : 0;
    u.work_share = work_total > 0 ? u.work_share / work_total : 0;
    users.push_back(u);
  }
  std::stable_sort(users.begin(), users.end(),
                   [](const UserSummary& a, const UserSummary& b) { return a.wait_share > b.wait_share; });
  return users;
}

}  // namespace

ReplaySummary Summarise(const std::vector<JobOutcome>& outcomes, int64_t processors, double tau) {
  ReplaySummary s;
  s.processors = processors;
  s.jobs = static_cast<int64_t>(outcomes.size());
  if (outcomes.empty()) return s;
  const Totals totals = SummariseTotals(outcomes, tau, s);
  std::vector<double> waits;
  waits.reserve(outcomes.size());
  for (const JobOutcome& j : outcomes) waits.push_back(static_cast<double>(j.Wait()));
  s.p50_wait = NearestRankPercentile(waits, 0.50);
  s.p95_wait = NearestRankPercentile(waits, 0.95);
  s.p99_wait = NearestRankPercentile(waits, 0.99);
  s.size_classes = SummariseSizeClasses(outcomes, processors, tau);
  s.users = SummariseUsers(outcomes, totals.wait_sum);
  s.makespan = totals.last_end - totals.first_submit;
  if (s.makespan > 0 && processors > 0) {
    s.utilisation = totals.used / (static_cast<double>(processors) * static_cast<double>(s.makespan));
  }
  return s;
}

namespace {

// A job as the replay runs it.
struct ReplayJob {
  int64_t job_number = 0;
  std::string account;    // with ReplayOptions::config: from the SWF user (or group)
  std::string partition;  // with ReplayOptions::config: from the SWF queue
  int line = 0;
  int64_t user = -1;  // SWF field 12
  int64_t processors = 0;
  Time submit = 0;
  Duration limit = 0;
  Duration run = 0;
  bool cut = false;
};

std::string WorkloadId(int64_t job_number) {
  // Zero-padded so that the id tie-break of the queue order is the job-number order.
  return absl::StrFormat("job-%012d", job_number);
}

// The machine size and where it came from.
absl::StatusOr<std::pair<int64_t, std::string>> MachineSize(const SwfTrace& trace,
                                                             const ReplayOptions& options) {
  if (options.processors.has_value()) {
    if (*options.processors <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--processors must be positive; got ", *options.processors));
    }
    return std::make_pair(*options.processors, std::string("--processors"));
  }
  if (trace.header.max_procs.has_value()) return std::make_pair(*trace.header.max_procs, std::string("header MaxProcs"));
  if (trace.header.max_nodes.has_value()) return std::make_pair(*trace.header.max_nodes, std::string("header MaxNodes"));
  int64_t widest = 0;
  for (const SwfJob& j : trace.jobs) widest = std::max(widest, j.Processors());
  if (widest <= 0) {
    return absl::InvalidArgumentError("the trace gives no machine size (MaxProcs/MaxNodes) and no job with a processor count");
  }
  return std::make_pair(widest, std::string("widest job"));
}

// Discrete-event simulation of one trace under one policy.
class Simulator {
 public:
  Simulator(std::vector<ReplayJob> jobs, int64_t processors, const ReplayOptions& options,
            QueueConfig config)
      : jobs_(std::move(jobs)),
        processors_(processors),
        planner_(std::move(config), /*preemption=*/nullptr),
        daemon_(options.config.has_value()),
        qos_(options.qos),
        outcomes_(jobs_.size()),
        seen_(jobs_.size(), 0),
        running_slot_(jobs_.size(), -1),
        node_job_(processors, -1),
        keep_reservations_(options.keep_reservations),
        predict_(options.runtime_prediction == RuntimePrediction::kUserHistory),
        planned_(jobs_.size(), 0) {
    snapshot_ = std::make_shared<Snapshot>();
    snapshot_->nodes.reserve(processors);
    for (int64_t i = 0; i < processors; ++i) {
      Node n;
      n.name = absl::StrCat("p", i);
      n.allocatable[kCpu] = 1000;
      n.owner.kind = OwnerKind::kSlurm;
      snapshot_->nodes.push_back(std::move(n));
    }
    for (size_t i = 0; i < jobs_.size(); ++i) {
      index_of_id_[WorkloadId(jobs_[i].job_number)] = static_cast<int>(i);
      JobOutcome& o = outcomes_[i];
      o.job_number = jobs_[i].job_number;
      o.user = jobs_[i].user;
      o.processors = jobs_[i].processors;
      o.submit = jobs_[i].submit;
      o.run = jobs_[i].run;
      o.limit = jobs_[i].limit;
      o.cut_at_limit = jobs_[i].cut;
    }
  }

  absl::Status Run() {
    while (next_arrival_ < jobs_.size() || !completions_.empty() || next_reserved_start_ < kForever) {
      Time now = next_reserved_start_;
      if (next_arrival_ < jobs_.size()) now = std::min(now, jobs_[next_arrival_].submit);
      if (!completions_.empty()) now = std::min(now, completions_.top().first);
      ApplyEvents(now);
      if (predict_) CorrectOverruns(now);
      // The snapshot is this object's: the planner keeps it only for OnArrival, which the replay
      // never calls, so it is updated in place between cycles instead of copied every cycle.
      Plan plan = keep_reservations_ ? planner_.PlanCycle(snapshot_, now, promises_)
                                     : planner_.PlanCycle(snapshot_, now);
      ++cycles_;
      if (absl::Status s = ApplyPlan(plan, now); !s.ok()) return s;
      if (next_arrival_ == jobs_.size() && completions_.empty() && next_reserved_start_ == kForever &&
          !snapshot_->pending.empty()) {
        const WaitingStatus* w = plan.waiting.empty() ? nullptr : &plan.waiting.front();
        return absl::InternalError(absl::StrCat(
            snapshot_->pending.size(), " job(s) can never start on an idle machine; first: ",
            snapshot_->pending.front().id,
            w ? absl::StrCat(" (", WaitReasonName(w->reason), ": ", absl::string_view(w->Message().data(), w->Message().size()), ")") : ""));
      }
    }
    return absl::OkStatus();
  }

  std::vector<JobOutcome> TakeOutcomes() { return std::move(outcomes_); }
  int64_t cycles() const { return cycles_; }

 private:
  // Completions first (they free nodes), then every arrival at `now`.
  void ApplyEvents(Time now) {
    while (!completions_.empty() && completions_.top().first <= now) {
      const int job = completions_.top().second;
      completions_.pop();
      if (running_slot_[job] >= 0) {
        for (const Allocation& a : snapshot_->running[running_slot_[job]].allocations) node_job_[a.node] = -1;
      }
      RemoveRunning(job);
      if (predict_) {  // the user's two last run times, newest first
        auto& [last, before] = history_[jobs_[job].user];
        before = last;
        last = jobs_[job].run;
      }
      if (daemon_) Charge(jobs_[job].account, now, static_cast<double>(jobs_[job].processors) *
                                                     static_cast<double>(jobs_[job].run));
    }
    while (next_arrival_ < jobs_.size() && jobs_[next_arrival_].submit <= now) {
      const ReplayJob& j = jobs_[next_arrival_++];
      PendingWorkload w;
      w.id = WorkloadId(j.job_number);
      w.kind = WorkloadKind::kSlurmJob;
      w.members = static_cast<int32_t>(j.processors);
      w.members_present = w.members;
      w.per_member[kCpu] = 1000;
      w.gang = true;
      planned_[next_arrival_ - 1] = predict_ ? Predict(j) : j.limit;
      w.time_limit = planned_[next_arrival_ - 1];
      w.submit_time = j.submit;
      if (daemon_) {
        w.account = j.account;
        w.partition = j.partition;
        w.qos = qos_;
      }
      snapshot_->pending.push_back(std::move(w));
      pending_job_.push_back(static_cast<int>(next_arrival_ - 1));
    }
    if (daemon_ && !snapshot_->usage.records.empty()) {
      // Records older than ten half-lives weigh less than 0.1 %: dropped, as the daemon does.
      const Time horizon = now - 10 * planner_.config().usage_half_life;
      std::vector<UsageRecord>& records = snapshot_->usage.records;
      if (std::any_of(records.begin(), records.end(), [&](const UsageRecord& r) { return r.time < horizon; })) {
        std::erase_if(records, [&](const UsageRecord& r) { return r.time < horizon; });
        usage_slot_.clear();
        for (size_t i = 0; i < records.size(); ++i) usage_slot_[records[i].account] = i;
      }
    }
  }

  // Fair-share input, as the daemon charges a finished Slurm job, folded into one record per
  // account: its decayed usage at its last charge (decay is exponential, so decaying the sum is
  // decaying each record). The planner then sums a record per account each cycle instead of one
  // per job of the last ten half-lives (a third of the default policy's replay time before).
  void Charge(const std::string& account, Time now, double amount) {
    std::vector<UsageRecord>& records = snapshot_->usage.records;
    auto [it, added] = usage_slot_.try_emplace(account, records.size());
    if (added) {
      records.push_back(UsageRecord{account, now, amount});
      return;
    }
    UsageRecord& r = records[it->second];
    const Duration half_life = planner_.config().usage_half_life;
    if (half_life > 0 && now > r.time) {
      r.amount *= std::exp2(-static_cast<double>(now - r.time) / static_cast<double>(half_life));
    }
    r.amount += amount;
    r.time = now;
  }

  // Tsafrir, Etsion and Feitelson 2007: the average of the user's two last run times (one when
  // only one is known), never above the time limit; the limit without history.
  Duration Predict(const ReplayJob& j) const {
    auto it = history_.find(j.user);
    if (it == history_.end() || it->second.first <= 0) return j.limit;
    const auto [last, before] = it->second;
    const Duration average = before > 0 ? (last + before + 1) / 2 : last;
    return std::clamp<Duration>(average, 1, std::max<Duration>(1, j.limit));
  }

  // A running job past its predicted end (completions at `now` are applied already, so it is
  // still running) is planned with its time limit from now on (EASY++'s correction).
  void CorrectOverruns(Time now) {
    while (!overruns_.empty() && overruns_.top().first <= now) {
      const int job = overruns_.top().second;
      overruns_.pop();
      const int slot = running_slot_[job];
      if (slot < 0) continue;  // ended
      RunningWorkload& r = snapshot_->running[slot];
      r.expected_end = r.start_time + jobs_[job].limit;
    }
  }

  void RemoveRunning(int job) {
    std::vector<RunningWorkload>& running = snapshot_->running;
    const int slot = running_slot_[job];
    if (slot < 0) return;
    if (slot != static_cast<int>(running.size()) - 1) {
      running[slot] = std::move(running.back());
      running_slot_[index_of_id_.at(running[slot].id)] = slot;
    }
    running.pop_back();
    running_slot_[job] = -1;
  }

  absl::Status ApplyPlan(const Plan& plan, Time now) {
    for (const StartDecision& d : plan.starts) {
      if (absl::Status s = Start(d, now); !s.ok()) return s;
    }
    // With predictions a reservation may start where no arrival or completion falls: at a
    // running job's predicted end that it outlived, or after a late holder's promise (its slot
    // held only from the late cycle on: planner.cc, HeldPromises). The daemon's periodic cycle
    // would start it there; the replay runs a cycle at the earliest such start. Only with
    // predictions: replays without them keep their decisions (and cycle counts) unchanged.
    next_reserved_start_ = kForever;
    if (predict_) {
      for (const ReserveDecision& r : plan.reservations) {
        if (r.start > now) next_reserved_start_ = std::min(next_reserved_start_, r.start);
      }
    }
    if (keep_reservations_) {
      // The promises of the next cycle: node indices stay (the machine never changes).
      promises_.clear();
      for (const ReserveDecision& r : plan.reservations) {
        auto it = index_of_id_.find(r.workload);
        if (it == index_of_id_.end()) continue;
        PromisedReservation& p = promises_.emplace_back();
        p.workload = r.workload;
        p.member_nodes = r.member_nodes;
        p.start = r.start;
        p.end = r.start + std::max<Duration>(1, planned_[it->second]);
        p.per_member[kCpu] = 1000;
      }
    }
    const WaitingStatus* head = nullptr;
    int head_job = -1;
    for (const WaitingStatus& w : plan.waiting) {
      const int job = JobOf(plan, w);
      if (job < 0) continue;
      if (!seen_[job]) {
        seen_[job] = 1;
        outcomes_[job].first_estimate = w.estimated_start;
      }
      if (head == nullptr || w.queue_position < head->queue_position) {
        head = &w;
        head_job = job;
      }
    }
    if (head != nullptr) {
      JobOutcome& o = outcomes_[head_job];
      if (!o.was_head_waiting) {
        o.was_head_waiting = true;
        o.head_estimate = head->estimated_start;
      }
    }
    // Last: the waiting statuses above view the ids of the pending workloads, and find each at
    // its index in Plan::order.
    if (!plan.starts.empty()) {
      // A pending job has never started, so ever_started_ marks exactly this plan's starts (a
      // vector of the trace's size, zeroed every cycle, is not needed).
      // pending_job_ names each pending workload's job (no id hashed), and is kept in step.
      auto& pending = snapshot_->pending;
      size_t kept = 0;
      for (size_t i = 0; i < pending.size(); ++i) {
        if (ever_started_[pending_job_[i]] != 0) continue;
        if (kept != i) {
          pending[kept] = std::move(pending[i]);
          pending_job_[kept] = pending_job_[i];
        }
        ++kept;
      }
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(kept), pending.end());
      pending_job_.resize(kept);
    }
    return absl::OkStatus();
  }

  // The job a waiting status names: the pending workload at its queue position (Plan::order), when
  // the ids agree (they do for a full cycle's plan); else looked up by id.
  int JobOf(const Plan& plan, const WaitingStatus& w) const {
    const size_t position = static_cast<size_t>(w.queue_position);
    if (position >= 1 && position <= plan.order.size()) {
      const size_t i = static_cast<size_t>(plan.order[position - 1]);
      if (i < pending_job_.size() && snapshot_->pending[i].id == w.workload) return pending_job_[i];
    }
    auto it = index_of_id_.find(absl::string_view(w.workload.data(), w.workload.size()));
    return it == index_of_id_.end() ? -1 : it->second;
  }

  // Checks what the planner decided before acting on it: the replay is also a test of the planner.
  absl::Status Start(const StartDecision& d, Time now) {
    auto it = index_of_id_.find(d.workload);
    if (it == index_of_id_.end()) return absl::InternalError("planner started an unknown workload " + d.workload);
    const int job = it->second;
    const ReplayJob& j = jobs_[job];
    if (ever_started_[job]) {
      return absl::InternalError("planner started " + d.workload + " twice");
    }
    if (static_cast<int64_t>(d.member_nodes.size()) != j.processors) {
      return absl::InternalError(absl::StrCat("planner started ", d.workload, " on ", d.member_nodes.size(),
                                              " processors; it needs ", j.processors));
    }
    RunningWorkload r;
    r.id = d.workload;
    r.kind = WorkloadKind::kSlurmJob;
    r.start_time = now;
    r.expected_end = now + planned_[job];
    if (predict_ && planned_[job] < j.limit) overruns_.emplace(now + planned_[job], job);
    r.allocations.reserve(d.member_nodes.size());
    for (NodeIndex n : d.member_nodes) {
      if (n < 0 || n >= processors_ || node_job_[n] >= 0) {
        return absl::InternalError(absl::StrCat("planner put ", d.workload, " on processor ", n,
                                                ", which is busy or does not exist"));
      }
      node_job_[n] = job;
      Allocation a;
      a.node = n;
      a.used[kCpu] = 1000;
      r.allocations.push_back(a);
    }
    ever_started_[job] = 1;
    running_slot_[job] = static_cast<int>(snapshot_->running.size());
    snapshot_->running.push_back(std::move(r));
    JobOutcome& o = outcomes_[job];
    o.start = now;
    o.end = now + j.run;
    o.backfilled = d.backfilled;
    completions_.emplace(o.end, job);
    return absl::OkStatus();
  }

  std::vector<ReplayJob> jobs_;  // submit order
  int64_t processors_;
  QueuePlanner planner_;
  std::shared_ptr<Snapshot> snapshot_;
  std::vector<JobOutcome> outcomes_;
  std::vector<char> seen_;  // appeared in a plan's waiting list at least once
  std::vector<int> running_slot_;  // job -> index in snapshot_->running, or -1
  std::vector<int64_t> node_job_;  // processor -> running job, or -1
  absl::flat_hash_map<std::string, int> index_of_id_;
  std::vector<char> ever_started_ = std::vector<char>(jobs_.size(), 0);
  std::priority_queue<std::pair<Time, int>, std::vector<std::pair<Time, int>>, std::greater<>> completions_;
  size_t next_arrival_ = 0;
  int64_t cycles_ = 0;
  bool daemon_;      // ReplayOptions::config: accounts, partitions, QOS and usage as the daemon
  std::string qos_;
  bool keep_reservations_;
  absl::flat_hash_map<std::string, size_t> usage_slot_;  // account -> its record in the snapshot
  // EASY++ (ReplayOptions::runtime_prediction): what the planner plans each job with, and the
  // correction of a running job that outlives its prediction.
  bool predict_;
  std::vector<Duration> planned_;  // job -> the duration the planner was told
  std::map<int64_t, std::pair<Duration, Duration>> history_;  // user -> (last, the one before); 0 = none
  std::priority_queue<std::pair<Time, int>, std::vector<std::pair<Time, int>>, std::greater<>> overruns_;
  std::vector<PromisedReservation> promises_;  // the last plan's reservations
  std::vector<int> pending_job_;  // per snapshot_->pending entry: its job
  Time next_reserved_start_ = kForever;  // with predictions: the last plan's earliest future reservation
};

// The SWF user's account ("user-N"), or its group's ("group-N") when the configuration lists
// accounts, names the group and not the user (shares per group).
std::string AccountOf(const SwfJob& s, const QueueConfig& config) {
  const std::string user = s.user_id >= 0 ? absl::StrCat("user-", s.user_id) : "user-unknown";
  if (config.accounts.empty() || s.group_id < 0) return user;
  const std::string group = absl::StrCat("group-", s.group_id);
  bool user_listed = false;
  bool group_listed = false;
  for (const Account& a : config.accounts) {
    user_listed = user_listed || a.name == user;
    group_listed = group_listed || a.name == group;
  }
  return !user_listed && group_listed ? group : user;
}

}  // namespace

absl::StatusOr<ReplayResult> ReplayTrace(const SwfTrace& trace, const ReplayOptions& options) {
  if (!(options.tau > 0)) return absl::InvalidArgumentError("tau must be positive");
  auto machine = MachineSize(trace, options);
  if (!machine.ok()) return machine.status();
  const int64_t processors = machine->first;
  if (processors > 1000000) {
    return absl::InvalidArgumentError(absl::StrCat("machine of ", processors,
                                                   " processors: the replay models one node per processor and stops at 1,000,000"));
  }
  ReplayResult result;
  result.policy = options.policy;
  result.machine_source = machine->second;
  std::vector<ReplayJob> jobs;
  for (const SwfJob& s : trace.jobs) {
    auto skip = [&](std::string why) { result.skipped.push_back({s.job_number, s.line, std::move(why)}); };
    const int64_t procs = s.Processors();
    if (procs <= 0) { skip("unknown processor count (fields 5 and 8 are -1)"); continue; }
    if (procs > processors) {
      skip(absl::StrCat("needs ", procs, " processors; the machine has ", processors));
      continue;
    }
    if (s.run_time < 0) { skip("unknown run time (field 4 is -1)"); continue; }
    if (s.submit_time < 0) { skip("unknown submit time (field 2 is -1)"); continue; }
    ReplayJob j;
    j.job_number = s.job_number;
    j.user = s.user_id;
    j.line = s.line;
    j.processors = procs;
    j.submit = s.submit_time;
    j.limit = s.requested_time >= 0 ? s.requested_time : s.run_time;
    j.run = std::min(s.run_time, j.limit);
    j.cut = s.run_time > j.limit;
    if (options.config.has_value()) {
      j.account = AccountOf(s, *options.config);
      j.partition = s.queue >= 0 ? absl::StrCat("queue-", s.queue) : "";
    }
    jobs.push_back(std::move(j));
  }
  if (jobs.empty()) return absl::InvalidArgumentError("no job of the trace can be replayed");
  std::stable_sort(jobs.begin(), jobs.end(), [](const ReplayJob& a, const ReplayJob& b) {
    return std::tie(a.submit, a.job_number) < std::tie(b.submit, b.job_number);
  });
  QueueConfig config = ReplayQueueConfig(options.policy);
  if (options.config.has_value()) {
    config = *options.config;
    // Estimated starts of jobs without a reservation never change what starts (see above).
    config.max_estimates_per_cycle = 1;
    config.estimate_unreserved = false;
    if (config.accounts.empty()) {
      // The daemon's learnt tree: every account seen, one share each, under the root.
      std::set<std::string> seen;
      for (const ReplayJob& j : jobs) seen.insert(j.account);
      for (const std::string& a : seen) config.accounts.push_back(Account{a, "", 1});
    }
    if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  }
  if (options.starvation_bound.has_value()) config.starvation_bound = *options.starvation_bound;
  if (options.max_age.has_value()) config.max_age = *options.max_age;
  if (options.starvation_bound_limits.has_value()) config.starvation_bound_limits = *options.starvation_bound_limits;
  if (options.starvation_remedy.has_value()) config.starvation_remedy = *options.starvation_remedy;
  if (options.starvation_bound.has_value() || options.max_age.has_value() ||
      options.starvation_bound_limits.has_value() || options.starvation_remedy.has_value()) {
    if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  }
  Simulator sim(std::move(jobs), processors, options, std::move(config));
  if (absl::Status s = sim.Run(); !s.ok()) return s;
  result.jobs = sim.TakeOutcomes();
  std::sort(result.jobs.begin(), result.jobs.end(),
            [](const JobOutcome& a, const JobOutcome& b) { return a.job_number < b.job_number; });
  result.summary = Summarise(result.jobs, processors, options.tau);
  result.summary.skipped = static_cast<int64_t>(result.skipped.size());
  result.summary.cycles = sim.cycles();
  return result;
}

}  // namespace onequeue::queue

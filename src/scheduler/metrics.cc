#include "scheduler/metrics.h"

#include "scheduler/node_owner.h"


#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "queue/plan.h"

namespace onequeue::scheduler {
namespace {

constexpr const char* kProfile = "onequeue";

// kube-scheduler's buckets for attempt and extension point durations (exponential from 1 ms).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096, 8.192, 16.384};
}
// Lend and reclaim durations: seconds to hours.
prometheus::Histogram::BucketBoundaries SlowBuckets() {
  return {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400};
}

const char* OwnerLabel(queue::OwnerKind k) {
  switch (k) {
    case queue::OwnerKind::kKubernetes: return "kubernetes";
    case queue::OwnerKind::kSlurm: return "slurm";
    case queue::OwnerKind::kFree: return "free";
    case queue::OwnerKind::kReserved: return "reserved";
  }
  return "free";
}

bool IsLent(const std::string& owner) { return NodeOwner::Parse(owner).slurm(); }

// Registers a family of each metric type (name and help as exposed); the members keep the
// families (and the label-less series, .Add({})) they update.
prometheus::Family<prometheus::Gauge>& GaugeFamily(prometheus::Registry& r, const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Counter>& CounterFamily(prometheus::Registry& r, const char* name,
                                                       const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}
prometheus::Family<prometheus::Histogram>& HistogramFamily(prometheus::Registry& r, const char* name,
                                                           const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r);
}

}  // namespace

SchedulerMetrics::SchedulerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  pending_pods_ = &GaugeFamily(r, "scheduler_pending_pods",
      "Number of pending pods, by the queue type. 'active' means pods being bound in the "
      "last cycle; 'unschedulable' means pods that wait for capacity or priority; 'gated' "
      "means pods held by an administrator or whose gang is incomplete.");
  attempts_ = &CounterFamily(r, "scheduler_schedule_attempts_total",
      "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could "
      "not be scheduled (counted when its waiting reason is written: once per change), "
      "while 'error' means a binding failed.");
  attempt_duration_ = &HistogramFamily(r, "scheduler_scheduling_attempt_duration_seconds",
      "Scheduling attempt latency in seconds (the cycle that made the attempt: "
      "snapshot, queue plan and actions)");
  preemption_attempts_ = &CounterFamily(r, "scheduler_preemption_attempts_total",
      "Total preemption attempts in the cluster till now").Add({});
  preemption_victims_ = &HistogramFamily(r, "scheduler_preemption_victims",
      "Number of selected preemption victims (pods and Slurm jobs)")
      .Add({}, prometheus::Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64});
  extension_point_duration_ = &HistogramFamily(r, "scheduler_framework_extension_point_duration_seconds",
      "Latency for running the extension point (Bind: the binding call to "
      "the API server)");
  pending_workloads_ = &GaugeFamily(r, "onequeue_pending_workloads",
      "Workloads waiting in the one queue after the last cycle, by world (kubernetes: "
      "pod groups; slurm: jobs) and Slurm partition (empty for pods)");
  nodes_ = &GaugeFamily(r, "onequeue_nodes",
      "Pool nodes by owner: kubernetes, slurm (lent), reserved (for a preemptor), free");
  lends_ = &CounterFamily(r, "onequeue_lends_total", "Pool nodes lent to Slurm (or adopted as lent)").Add({});
  reclaims_ = &CounterFamily(r, "onequeue_reclaims_total",
      "Lent nodes taken back from Slurm for a pod").Add({});
  returns_ = &CounterFamily(r, "onequeue_returns_total",
      "Lent nodes given back to Kubernetes after Slurm left them idle (returnAfterSeconds)").Add({});
  slurm_requeues_ = &CounterFamily(r, "onequeue_slurm_victims_total",
      "Slurm jobs requeued or cancelled as preemption victims").Add({});
  slurm_started_ = &CounterFamily(r, "onequeue_slurm_jobs_started_total",
      "Slurm jobs onequeue started on lent nodes").Add({});
  lend_duration_ = &HistogramFamily(r, "onequeue_lend_duration_seconds",
      "How long a node stayed lent to Slurm, observed when it came back").Add({}, SlowBuckets());
  reclaim_duration_ = &HistogramFamily(r, "onequeue_reclaim_duration_seconds",
      "From a lent node's reservation for a pod to Kubernetes owning it again (the "
      "Slurm job requeued and gone)").Add({}, SlowBuckets());
  slurm_poll_duration_ = &HistogramFamily(r, "onequeue_slurm_poll_duration_seconds",
      "One poll of slurmrestd (jobs, nodes, partitions as due), by result");
  slurm_polls_ = &CounterFamily(r, "onequeue_slurm_polls_total", "Polls of slurmrestd, by result");
  cycle_duration_ = &HistogramFamily(r, "onequeue_cycle_duration_seconds",
      "Scheduling cycle latency by phase: snapshot (both worlds' state), plan (the "
      "queue), act (bindings, preemptions, lending, reports), total");
  events_ = &CounterFamily(r, "onequeue_events_total",
      "Events the scheduler recorded, by what it cost: created (a new Event), patched (a "
      "series count written), counted (a repeat counted on its series, no request), aggregated "
      "(combined with similar events), dropped (the per-object rate limit), queue_full (more "
      "Events waiting to be written than the recorder queues)");
  informer_backlog_overflows_ = &CounterFamily(r, "onequeue_informer_backlog_overflows_total",
      "Watches of an informer ended because the events not yet handled passed "
      "kubernetes.maxResponseBytes; each is followed by a full relist");
  cycles_ = &CounterFamily(r, "onequeue_cycles_total", "Scheduling cycles run").Add({});
  mirrors_lost_ = &CounterFamily(r, "onequeue_shared_mirror_lost_total",
                                 "Pods on shared nodes whose Slurm placeholder was lost and not made again in time "
                                 "(issue 25), by node");
  arrival_cycles_ = &CounterFamily(r, "onequeue_arrival_cycles_total",
      "Scheduling cycles that planned only the pods arrived since the last full cycle "
      "(queue.fullCycleSeconds); onequeue_cycles_total counts them too").Add({});
  leader_ = &GaugeFamily(r, "onequeue_leader",
      "1 while this replica holds the leader Lease and schedules, else 0").Add({});
  // The series users alert on exist from the start, at zero.
  for (const char* result : {"scheduled", "unschedulable", "error"}) {
    attempts_->Add({{"result", result}, {"profile", kProfile}});
  }
  for (const char* result : {"success", "error"}) slurm_polls_->Add({{"result", result}});
  for (const char* resource : {"pods", "nodes", "poddisruptionbudgets"}) {
    informer_backlog_overflows_->Add({{"resource", resource}});
  }
}

void SchedulerMetrics::ObserveInformer(const std::string& resource, const k8s::InformerStats& totals) {
  int64_t& seen = informer_overflows_seen_[resource];
  if (totals.backlog_overflows > seen) {
    informer_backlog_overflows_->Add({{"resource", resource}})
        .Increment(static_cast<double>(totals.backlog_overflows - seen));
  }
  seen = totals.backlog_overflows;
}

void SchedulerMetrics::ObserveEvents(const k8s::EventCorrelator::Counters& totals) {
  auto add = [&](const char* outcome, int64_t total, int64_t* seen) {
    if (total > *seen) events_->Add({{"outcome", outcome}}).Increment(static_cast<double>(total - *seen));
    *seen = total;
  };
  add("created", totals.created, &events_seen_.created);
  add("patched", totals.patched, &events_seen_.patched);
  add("counted", totals.counted, &events_seen_.counted);
  add("aggregated", totals.aggregated, &events_seen_.aggregated);
  add("dropped", totals.dropped, &events_seen_.dropped);
  add("queue_full", totals.queue_full, &events_seen_.queue_full);
}

void SchedulerMetrics::ObserveCycle(const CycleStats& stats, const CycleStatus* status, double seconds) {
  cycles_->Increment();
  if (stats.incremental) arrival_cycles_->Increment();
  cycle_duration_->Add({{"phase", "total"}}, LatencyBuckets()).Observe(seconds);
  auto& scheduled = attempts_->Add({{"result", "scheduled"}, {"profile", kProfile}});
  auto& unschedulable = attempts_->Add({{"result", "unschedulable"}, {"profile", kProfile}});
  auto& error = attempts_->Add({{"result", "error"}, {"profile", kProfile}});
  scheduled.Increment(stats.bound);
  unschedulable.Increment(stats.reported);
  error.Increment(stats.bind_errors);
  auto observe = [&](const char* result, int n) {
    auto& h = attempt_duration_->Add({{"result", result}, {"profile", kProfile}}, LatencyBuckets());
    for (int i = 0; i < n; ++i) h.Observe(seconds);
  };
  observe("scheduled", stats.bound);
  observe("unschedulable", stats.reported);
  observe("error", stats.bind_errors);
  preemption_attempts_->Increment(stats.preemptions_started);
  for (int v : stats.preemption_victims) preemption_victims_->Observe(v);
  lends_->Increment(stats.lent);
  reclaims_->Increment(stats.reclaimed);
  returns_->Increment(stats.returned);
  slurm_requeues_->Increment(stats.requeued);
  slurm_started_->Increment(stats.slurm_started);
  for (const std::string& node : stats.mirrors_lost) mirrors_lost_->Add({{"node", node}}).Increment();
  if (status != nullptr && status->plan != nullptr) ObserveStatus(*status);
}

void SchedulerMetrics::SetGauges(
    prometheus::Family<prometheus::Gauge>& family, std::map<std::string, prometheus::Gauge*>* current,
    const std::map<std::string, std::pair<std::map<std::string, std::string>, double>>& values) {
  for (auto it = current->begin(); it != current->end();) {
    if (values.count(it->first)) {
      ++it;
    } else {
      family.Remove(it->second);  // a partition or owner no longer seen: its series goes
      it = current->erase(it);
    }
  }
  for (const auto& [key, v] : values) {
    prometheus::Gauge*& g = (*current)[key];
    if (g == nullptr) g = &family.Add(v.first);
    g->Set(v.second);
  }
}

void SchedulerMetrics::ObserveStatus(const CycleStatus& st) {
  const queue::Plan& plan = *st.plan;
  const queue::Snapshot& s = *plan.snapshot;
  // Every cycle walks every pending workload: hash sets of views and counts per (world,
  // partition), no string built per workload (this was the busy daemon's largest own hotspot).
  absl::flat_hash_set<std::string_view> started;
  started.reserve(plan.starts.size());
  for (const auto& d : plan.starts) started.insert(d.workload);
  absl::flat_hash_set<std::string_view> gated_ids;
  for (const auto& w : plan.waiting) {
    if (w.reason == queue::WaitReason::kHeld || w.reason == queue::WaitReason::kGangIncomplete) {
      gated_ids.insert(w.workload);
    }
  }
  double active = 0, unschedulable = 0, gated = 0;
  absl::flat_hash_map<std::pair<bool, std::string_view>, double> waiting_by_partition;  // (pod?, partition)
  for (const auto& w : s.pending) {
    const bool pod = w.kind == queue::WorkloadKind::kPodGroup;
    const bool is_started = started.contains(w.id);
    if (pod) {
      auto pods = st.pending_pods.find(w.id);
      const double n = pods == st.pending_pods.end() ? 1 : static_cast<double>(pods->second.pod_keys.size());
      if (is_started) active += n;
      else if (gated_ids.contains(w.id)) gated += n;
      else unschedulable += n;
    }
    if (!is_started) waiting_by_partition[{pod, w.partition}] += 1;
  }
  std::map<std::string, std::pair<std::map<std::string, std::string>, double>> pending;
  for (const auto& [key, n] : waiting_by_partition) {
    const std::string world = key.first ? "kubernetes" : "slurm";
    pending[absl::StrCat(world, "|", std::string(key.second))] = {{{"world", world}, {"partition", std::string(key.second)}}, n};
  }
  for (const char* world : {"kubernetes", "slurm"}) {
    // The series of each world exist even when nothing waits (at zero): a partition-less one.
    auto& entry = pending[absl::StrCat(world, "|")];
    entry.first = {{"world", world}, {"partition", ""}};
  }
  SetGauges(*pending_workloads_, &pending_workload_series_, pending);
  SetGauges(*pending_pods_, &pending_pods_series_,
            {{"active", {{{"queue", "active"}}, active}},
             {"unschedulable", {{{"queue", "unschedulable"}}, unschedulable}},
             {"gated", {{{"queue", "gated"}}, gated}}});
  std::map<std::string, std::pair<std::map<std::string, std::string>, double>> owners;
  for (const char* o : {"kubernetes", "slurm", "reserved", "free"}) owners[o] = {{{"owner", o}}, 0};
  for (const auto& n : s.nodes) owners[OwnerLabel(n.owner.kind)].second += 1;
  SetGauges(*nodes_, &node_series_, owners);

  // Lend and reclaim durations, from the owner each cycle read or wrote.
  for (const auto& [node, owner] : st.node_owner) {
    if (IsLent(owner)) {
      lent_since_.try_emplace(node, st.now);
      continue;
    }
    if (auto lent = lent_since_.find(node); lent != lent_since_.end()) {
      lend_duration_->Observe(static_cast<double>(st.now - lent->second));
      lent_since_.erase(lent);
      // Taken for a preemptor: the reclaim begins now.
      if (NodeOwner::Parse(owner).reserved()) reclaim_since_[node] = st.now;
      continue;
    }
    if (auto r = reclaim_since_.find(node); r != reclaim_since_.end() && !NodeOwner::Parse(owner).reserved()) {
      if (NodeOwner::Parse(owner).kubernetes()) reclaim_duration_->Observe(static_cast<double>(st.now - r->second));
      reclaim_since_.erase(r);
    }
  }
  std::erase_if(lent_since_, [&](const auto& e) { return !st.node_owner.count(e.first); });
  std::erase_if(reclaim_since_, [&](const auto& e) { return !st.node_owner.count(e.first); });
}

void SchedulerMetrics::ObservePhase(const std::string& phase, double seconds) {
  cycle_duration_->Add({{"phase", phase}}, LatencyBuckets()).Observe(seconds);
}

void SchedulerMetrics::ObserveBind(double seconds, bool ok) {
  extension_point_duration_
      ->Add({{"extension_point", "Bind"}, {"status", ok ? "Success" : "Error"}, {"profile", kProfile}},
            LatencyBuckets())
      .Observe(seconds);
}

void SchedulerMetrics::ObserveSlurmPoll(double seconds, bool ok) {
  const char* result = ok ? "success" : "error";
  slurm_polls_->Add({{"result", result}}).Increment();
  slurm_poll_duration_->Add({{"result", result}}, LatencyBuckets()).Observe(seconds);
}

absl::Status TimedClusterActions::Bind(const std::string& pod_key, const std::string& node,
                                       const std::string& message) {
  const absl::Time start = absl::Now();
  absl::Status s = inner_->Bind(pod_key, node, message);
  metrics_->ObserveBind(absl::ToDoubleSeconds(absl::Now() - start), s.ok());
  return s;
}

void TimedClusterActions::StartBind(const std::string& pod_key, const std::string& node, const std::string& message,
                                    std::function<void(absl::Status)> done) {
  const absl::Time start = absl::Now();
  inner_->StartBind(pod_key, node, message,
                    [metrics = metrics_, start, done = std::move(done)](absl::Status s) {
                      metrics->ObserveBind(absl::ToDoubleSeconds(absl::Now() - start), s.ok());
                      done(std::move(s));
                    });
}

}  // namespace onequeue::scheduler

#pragma once
// The daemon's Prometheus metrics (prometheus-cpp; served on server.metricsAddress at /metrics).
// kube-scheduler's names where the meaning is the same, so dashboards and alerts written for it
// read onequeue too; onequeue's own (prefix onequeue_) for the two worlds, lending and the cycle.
// docs/user-guide.md lists every series and what it counts.
#include <map>
#include <memory>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "k8s_client/informer.h"
#include "k8s_client/scheduler_api.h"
#include "scheduler/cycle_status.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {

class SchedulerMetrics {
 public:
  SchedulerMetrics();
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  // After each cycle: its counts, its length, and what it saw (null status: counts only). Called
  // from the loop's thread only.
  void ObserveCycle(const CycleStats& stats, const CycleStatus* status, double seconds);
  // A phase of the cycle ended after `seconds` (snapshot, plan, act).
  void ObservePhase(const std::string& phase, double seconds);
  // One binding call to the API server.
  void ObserveBind(double seconds, bool ok);
  // One poll of slurmrestd.
  void ObserveSlurmPoll(double seconds, bool ok);
  void SetLeader(bool leading) { leader_->Set(leading ? 1 : 0); }
  // The event recorder's totals so far (onequeue_events_total{outcome}: created, patched (a
  // series count written), counted (a repeat only counted), aggregated (combined with similar
  // events), dropped (per-object spam filter), queue_full (the recorder's write queue was full)).
  void ObserveEvents(const k8s::EventCorrelator::Counters& totals);
  // An informer's totals so far (`resource`: pods, nodes, poddisruptionbudgets):
  // onequeue_informer_backlog_overflows_total{resource} counts the watches that ended because
  // their unhandled backlog passed its bound (each one costs a full relist).
  void ObserveInformer(const std::string& resource, const k8s::InformerStats& totals);

 private:
  void ObserveStatus(const CycleStatus& status);
  void SetGauges(prometheus::Family<prometheus::Gauge>& family, std::map<std::string, prometheus::Gauge*>* current,
                 const std::map<std::string, std::pair<std::map<std::string, std::string>, double>>& values);

  std::shared_ptr<prometheus::Registry> registry_;
  // kube-scheduler's
  prometheus::Family<prometheus::Gauge>* pending_pods_;
  prometheus::Family<prometheus::Counter>* attempts_;
  prometheus::Family<prometheus::Histogram>* attempt_duration_;
  prometheus::Counter* preemption_attempts_;
  prometheus::Histogram* preemption_victims_;
  prometheus::Family<prometheus::Histogram>* extension_point_duration_;
  // onequeue's
  prometheus::Family<prometheus::Gauge>* pending_workloads_;
  prometheus::Family<prometheus::Gauge>* nodes_;
  prometheus::Counter* lends_;
  prometheus::Counter* reclaims_;
  prometheus::Counter* returns_;
  prometheus::Counter* slurm_requeues_;
  prometheus::Counter* slurm_started_;
  prometheus::Family<prometheus::Counter>* mirrors_lost_;
  prometheus::Histogram* lend_duration_;
  prometheus::Histogram* reclaim_duration_;
  prometheus::Family<prometheus::Histogram>* slurm_poll_duration_;
  prometheus::Family<prometheus::Counter>* slurm_polls_;
  prometheus::Family<prometheus::Histogram>* cycle_duration_;
  prometheus::Counter* cycles_;
  prometheus::Counter* arrival_cycles_;
  prometheus::Gauge* leader_;
  prometheus::Family<prometheus::Counter>* events_;
  k8s::EventCorrelator::Counters events_seen_;
  prometheus::Family<prometheus::Counter>* informer_backlog_overflows_;
  std::map<std::string, int64_t> informer_overflows_seen_;  // resource -> total already counted

  std::map<std::string, prometheus::Gauge*> pending_pods_series_, pending_workload_series_, node_series_;
  // Across cycles (loop thread only): when each node was lent, and when each lent node was
  // reserved for a preemptor (the reclaim began).
  std::map<std::string, int64_t> lent_since_, reclaim_since_;
};

// Times the bindings of the wrapped actions (scheduler_framework_extension_point_duration_seconds
// {extension_point="Bind"}); everything else passes through.
class TimedClusterActions final : public ClusterActions {
 public:
  TimedClusterActions(ClusterActions* inner, SchedulerMetrics* metrics) : inner_(inner), metrics_(metrics) {}
  absl::Status Bind(const std::string& pod_key, const std::string& node, const std::string& message) override;
  // Times from sending the binding to its result.
  void StartBind(const std::string& pod_key, const std::string& node, const std::string& message,
                 std::function<void(absl::Status)> done) override;
  void BindSucceeded(const std::string& pod_key, const std::string& node, const std::string& message) override {
    inner_->BindSucceeded(pod_key, node, message);
  }
  absl::Status ReportWaiting(const std::string& pod_key, const WaitReport& report) override {
    return inner_->ReportWaiting(pod_key, report);
  }
  std::vector<std::string> TakeFailedReports() override { return inner_->TakeFailedReports(); }
  void ForgetWaiting(const std::string& pod_key) override { inner_->ForgetWaiting(pod_key); }
  absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string& resource_version) override {
    return inner_->SetNodeOwner(node, value, resource_version);
  }
  void StartSetNodeOwner(const std::string& node, const std::string& value, const std::string& resource_version,
                         std::function<void(absl::StatusOr<std::string>)> done) override {
    inner_->StartSetNodeOwner(node, value, resource_version, std::move(done));
  }
  void NodeEvent(const std::string& node, const std::string& reason, const std::string& note) override {
    inner_->NodeEvent(node, reason, note);
  }
  absl::Status PodEvent(const std::string& pod_key, const std::string& reason, const std::string& note) override {
    return inner_->PodEvent(pod_key, reason, note);
  }
  absl::Status AnnotateNode(const std::string& node, const std::string& key, const std::string& value) override {
    return inner_->AnnotateNode(node, key, value);
  }
  absl::Status AllocateClaim(const std::string& claim_key, const std::vector<k8s::DeviceAllocationResult>& results,
                             const std::string& node, const k8s::ClaimConsumer& pod) override {
    return inner_->AllocateClaim(claim_key, results, node, pod);
  }
  absl::Status ClearClaim(const std::string& claim_key, const std::string& pod_uid) override {
    return inner_->ClearClaim(claim_key, pod_uid);
  }
  absl::Status SelectVolumeNode(const std::string& claim_key, const std::string& node) override {
    return inner_->SelectVolumeNode(claim_key, node);
  }
  absl::Status Nominate(const std::string& pod_key, const std::string& node) override {
    return inner_->Nominate(pod_key, node);
  }
  void StartNominate(const std::string& pod_key, const std::string& node, std::function<void(absl::Status)> done) override {
    inner_->StartNominate(pod_key, node, std::move(done));
  }
  void StartNominateWithReport(const std::string& pod_key, const std::string& node, const WaitReport& report,
                               std::function<void(absl::Status)> done) override {
    inner_->StartNominateWithReport(pod_key, node, report, std::move(done));
  }
  absl::Status Evict(const std::string& pod_key, const std::string& preemptor, const std::string& message) override {
    return inner_->Evict(pod_key, preemptor, message);
  }
  void StartEvict(const std::string& pod_key, const std::string& preemptor, const std::string& message,
                  std::function<void(absl::Status)> done) override {
    inner_->StartEvict(pod_key, preemptor, message, std::move(done));
  }
  void EvictSucceeded(const std::string& pod_key, const std::string& preemptor, const std::string& message) override {
    inner_->EvictSucceeded(pod_key, preemptor, message);
  }
  void StartDeleteVictim(const std::string& pod_key, const std::string& preemptor, const std::string& condition_message,
                         std::function<void(absl::Status)> done) override {
    inner_->StartDeleteVictim(pod_key, preemptor, condition_message, std::move(done));
  }
  absl::Status EvictForTimeLimit(const std::string& pod_key, const std::string& message) override {
    return inner_->EvictForTimeLimit(pod_key, message);
  }

 private:
  ClusterActions* inner_;
  SchedulerMetrics* metrics_;
};

}  // namespace onequeue::scheduler

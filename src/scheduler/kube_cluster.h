#pragma once
// The scheduling loop's view and actions backed by the real Kubernetes API: informers for pods
// and nodes, and the writes (binding, eviction, status, annotations, events) through k8s_client.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s_client/informer.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"
#include "scheduler/kube_source.h"
#include "scheduler/scheduling_loop.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

class InformerClusterView : public ClusterView {
 public:
  // `source`: the records the informers' handlers keep; `slurm` may be null (Slurm disabled).
  InformerClusterView(const k8s::Informer<k8s::Node>* nodes, const k8s::Informer<k8s::Pod>* pods,
                      const KubeSource* source, const slurm::SlurmPoller* slurm = nullptr)
      : nodes_(nodes), pods_(pods), source_(source), slurm_(slurm) {}
  std::vector<k8s::Node> Nodes() const override { return nodes_->List(); }
  std::vector<k8s::Pod> Pods() const override { return pods_->List(); }
  std::shared_ptr<const KubeState> State() const override { return source_->State(); }
  std::optional<KubeChanges> ChangesSince(uint64_t generation) const override {
    return source_->ChangesSince(generation);
  }
  std::shared_ptr<const slurm::SlurmView> Slurm() const override {
    if (slurm_ == nullptr) return nullptr;
    auto v = slurm_->View();
    // Before the first successful poll the view is empty, not "no jobs": plan nothing for Slurm.
    return v->refreshed_at == absl::InfinitePast() ? nullptr : v;
  }

 private:
  const k8s::Informer<k8s::Node>* nodes_;
  const k8s::Informer<k8s::Pod>* pods_;
  const KubeSource* source_;
  const slurm::SlurmPoller* slurm_;
};

class KubeClusterActions : public ClusterActions {
 public:
  // `instance`: this replica's identity, shown as the events' reportingInstance. `nodes` (may be
  // null): the node informer, whose copy of a node gives its taints when it is at the version an
  // owner write is conditional on (no read before the write).
  KubeClusterActions(k8s::RestClient* client, const k8s::Informer<k8s::Pod>* pods, std::string instance,
                     const k8s::Informer<k8s::Node>* nodes = nullptr);
  ~KubeClusterActions() override;

  absl::Status Bind(const std::string& pod_key, const std::string& node, const std::string& message) override;
  // The binding over the client's shared connection without waiting; the event follows in
  // BindSucceeded, also without waiting. The binding of a pod that waited carries its final wait
  // annotations (FinalWaitAnnotations).
  void StartBind(const std::string& pod_key, const std::string& node, const std::string& message,
                 std::function<void(absl::Status)> done) override;
  void BindSucceeded(const std::string& pod_key, const std::string& node, const std::string& message) override;
  // Sends the condition and annotation patches and returns without waiting for them (one report
  // per pod in flight: Unavailable while the previous one is); a failed write comes back from
  // TakeFailedReports.
  absl::Status ReportWaiting(const std::string& pod_key, const WaitReport& report) override;
  std::vector<std::string> TakeFailedReports() override;
  // Drops the pod's last FailedScheduling event (kept to space out repeats while it waits).
  void ForgetWaiting(const std::string& pod_key) override { last_event_.erase(pod_key); }
  // Pods whose last FailedScheduling event is remembered (for tests).
  size_t remembered_events() const { return last_event_.size(); }
  // A stopping daemon's last sends: waits up to `timeout` in all for the Events and annotation
  // clears still queued or in flight; false if some were still there (they are then lost).
  bool FlushBestEffort(absl::Duration timeout);
  // What the event recorder did so far (for the daemon's metrics).
  k8s::EventCorrelator::Counters event_counters() const { return events_.counters(); }
  // Issue 26: one PATCH when the node's taints at `resource_version` are known (the node
  // informer's copy is at that version, or this process's own write returned it), else a GET first.
  absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string& resource_version) override;
  // SetNodeOwner without waiting (issue 26).
  void StartSetNodeOwner(const std::string& node, const std::string& value, const std::string& resource_version,
                         std::function<void(absl::StatusOr<std::string>)> done) override;
  void NodeEvent(const std::string& node, const std::string& reason, const std::string& note) override;
  absl::Status PodEvent(const std::string& pod_key, const std::string& reason, const std::string& note) override;
  absl::Status AnnotateNode(const std::string& node, const std::string& key, const std::string& value) override;
  absl::Status SelectVolumeNode(const std::string& claim_key, const std::string& node) override;
  absl::Status AllocateClaim(const std::string& claim_key, const std::vector<k8s::DeviceAllocationResult>& results,
                             const std::string& node, const k8s::ClaimConsumer& pod) override;
  absl::Status ClearClaim(const std::string& claim_key, const std::string& pod_uid) override;
  absl::Status BindVolume(const std::string& volume, const std::string& resource_version,
                          const std::string& claim_key, const std::string& claim_uid) override;
  absl::Status Nominate(const std::string& pod_key, const std::string& node) override;
  void StartNominate(const std::string& pod_key, const std::string& node, std::function<void(absl::Status)> done) override;
  // One strategic merge patch of pods/status: nominatedNodeName, PodScheduled=False and the wait
  // annotations (k8s::SchedulerApi::PatchPodSchedulingAsync); the event as ReportWaiting's. While
  // a report of the pod is in flight, the nomination alone (`done` then says Unavailable).
  void StartNominateWithReport(const std::string& pod_key, const std::string& node, const WaitReport& report,
                               std::function<void(absl::Status)> done) override;
  absl::Status Evict(const std::string& pod_key, const std::string& preemptor, const std::string& message) override;
  void StartEvict(const std::string& pod_key, const std::string& preemptor, const std::string& message,
                  std::function<void(absl::Status)> done) override;
  void EvictSucceeded(const std::string& pod_key, const std::string& preemptor, const std::string& message) override;
  // DisruptionTarget condition, then DELETE (k8s::SchedulerApi::PreemptByDeleteAsync).
  void StartDeleteVictim(const std::string& pod_key, const std::string& preemptor, const std::string& condition_message,
                         std::function<void(absl::Status)> done) override;
  absl::Status EvictForTimeLimit(const std::string& pod_key, const std::string& message) override;

 private:
  // The event reference of a pod (its uid from the informer when it knows the pod).
  k8s::ObjectReference PodReference(const std::string& pod_key) const;
  void RecordEvent(const std::string& pod_key, const std::string& type, const std::string& reason,
                   const std::string& action, const std::string& note);

  k8s::RestClient* client_;
  const k8s::Informer<k8s::Pod>* pods_;
  k8s::SchedulerApi api_;
  k8s::EventRecorder events_;
  // Writes that gate nothing (a bound pod's late wait annotations) go a few at a time, like
  // the Events, so that they never crowd out the bindings and victims' deletions they follow.
  std::shared_ptr<k8s::WriteLane> best_effort_;
  // The last FailedScheduling event per waiting pod (the loop calls from one thread).
  struct LastEvent {
    std::string reason, note;
    absl::Time at = absl::InfinitePast();
    bool final_annotations_sent = false;  // the pod's binding carries its final wait annotations
  };
  // Issue 26: the annotations a binding of the pod carries: queue position 0 and estimated start
  // now, if the pod waited (this process reported it, or `pod`, the informer's copy if it has one,
  // shows wait annotations), else none (loop thread).
  std::map<std::string, std::string> FinalWaitAnnotations(const std::string& pod_key, const k8s::Pod* pod);
  std::map<std::string, LastEvent> last_event_;
  // Waiting reports in flight and those that failed, shared with the transport thread's callbacks
  // (which may outlive this object).
  struct ReportWrites {
    absl::Mutex mu;
    std::set<std::string> in_flight ABSL_GUARDED_BY(mu);
    std::vector<std::string> failed ABSL_GUARDED_BY(mu);
    // Bindings of pods whose waiting report was still in flight: sent when it has landed.
    // (A report cancelled at shutdown cancels its binding: the transport is going away.)
    struct DeferredBind {
      std::function<void()> send;
      std::shared_ptr<std::function<void(absl::Status)>> done;
    };
    std::map<std::string, DeferredBind> binds_after ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<ReportWrites> report_writes_ = std::make_shared<ReportWrites>();
  // Marks a report of the pod in flight; false when one is already.
  bool BeginReport(const std::string& pod_key);
  // A report's writes have all answered: no longer in flight, remembered as failed when asked,
  // and the binding that waited for it sent (or cancelled with it).
  static void ReportLanded(const std::shared_ptr<ReportWrites>& writes, const std::string& pod_key, bool failed,
                           bool cancelled, bool retry_if_failed);
  void RecordWaitEvent(const std::string& pod_key, const std::string& reason, std::string event_note, absl::Time now);

  // Issue 26: each node's taints at the version this process's last owner write returned (the
  // PATCH answers with the whole node), shared with the transport thread's callbacks. One entry
  // per node written; resourceVersions are unique, so an entry of a node deleted and made again
  // under its name never matches.
  struct NodeTaints {
    struct Known {
      std::string version;
      nlohmann::json taints;
    };
    absl::Mutex mu;
    std::map<std::string, Known> by_node ABSL_GUARDED_BY(mu);
  };
  // The node's taints at `resource_version` if known without a read ("" : never).
  std::optional<nlohmann::json> KnownTaints(const std::string& node, const std::string& resource_version) const;
  static void RememberTaints(NodeTaints& known, const nlohmann::json& node);
  const k8s::Informer<k8s::Node>* nodes_;
  std::shared_ptr<NodeTaints> node_taints_ = std::make_shared<NodeTaints>();
};

}  // namespace onequeue::scheduler

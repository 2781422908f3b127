#pragma once
// One scheduling cycle: the informers' view -> snapshot -> queue plan -> actions, with the
// bookkeeping that makes the actions safe to repeat:
//   * assume/forget: a pod the cycle binds counts as running on its node from the moment the
//     binding is sent until the informer shows it (or the bind failed and it is forgotten, like
//     kube-scheduler's Unreserve), so the next cycle cannot give the same capacity away twice.
//     Bindings go out asynchronously, many in flight; the cycle never waits for them: their
//     results are drained at the start of the next cycle (and whatever has already arrived at
//     the end of this one). A failed bind is forgotten and the pod is planned again; the members
//     of a gang that did bind keep running and the rest is placed as the remainder of the gang;
//   * assumptions are the pod's (UID), and one the informer has not confirmed a minute after
//     its binding succeeded is forgotten, as kube-scheduler expires its assumed pods;
//   * reservations: a preemption first marks its nodes reserved(P) (node annotation, and the
//     preemptor's nominatedNodeName), then evicts each victim once; while the mark stands every
//     lower-priority workload, including the victims' replacements, sees the capacity as taken,
//     from the loop's own memory however long the node watch takes to show the mark.
//     When P is bound the mark is released; when an eviction is refused (PDB) it is rolled back;
//     when P still waits but the plan has not placed it there for a minute (a gang member
//     deleted, P changed) it is released; a node deleted takes its mark with it;
//   * every node owner write is conditional on the node's resourceVersion the decision was read
//     from: a write from an old read (a deposed leader's) fails (409) and is made again next cycle;
//   * reporting: waiting reasons are reported only when they change (events are deduplicated).
// The loop owns no threads and reads no clock: the daemon calls RunCycle(now).
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "k8s_client/models.h"
#include "queue/planner.h"
#include "queue/preemption.h"
#include "scheduler/config.h"
#include "scheduler/cycle_status.h"
#include "scheduler/slurm_world.h"
#include "scheduler/snapshot_builder.h"
#include "scheduler/wait_reporting.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

// The current view of the cluster (the informers' stores).
class ClusterView {
 public:
  virtual ~ClusterView() = default;
  virtual std::vector<k8s::Node> Nodes() const = 0;
  virtual std::vector<k8s::Pod> Pods() const = 0;
  // The Kubernetes world as parsed records. The informer-backed view keeps them up to date as
  // events arrive (KubeSource); this default parses Nodes() and Pods() again (tests, tools).
  virtual std::shared_ptr<const KubeState> State() const {
    return std::make_shared<const KubeState>(ToKubeState(Nodes(), Pods()));
  }
  // What changed since `generation` (a KubeState's), so that a cycle can plan only the pods that
  // arrived; nullopt: not known (this default), and the cycle plans everything.
  virtual std::optional<KubeChanges> ChangesSince(uint64_t generation) const { return std::nullopt; }
  // The Slurm poller's latest view; null without Slurm (or before its first poll).
  virtual std::shared_ptr<const slurm::SlurmView> Slurm() const { return nullptr; }
};

// What the loop does to the cluster. Every call is idempotent.
class ClusterActions {
 public:
  virtual ~ClusterActions() = default;
  virtual absl::Status Bind(const std::string& pod_key, const std::string& node, const std::string& message) = 0;
  // Sends the binding without waiting for it (the loop keeps many in flight, as kube-scheduler's
  // binding goroutines do); `done` may run on another thread, at any time. What follows a
  // binding that landed (the Scheduled event, clearing the wait annotations) is BindSucceeded,
  // which the loop calls from its own thread. This default binds at once with Bind, which does
  // both.
  virtual void StartBind(const std::string& pod_key, const std::string& node, const std::string& message,
                         std::function<void(absl::Status)> done) {
    done(Bind(pod_key, node, message));
  }
  virtual void BindSucceeded(const std::string& pod_key, const std::string& node, const std::string& message) {}
  // Writes what a waiting pod shows. It may return before the writes land (OK: sent); their
  // failures come back from TakeFailedReports (pod keys), and the loop writes those again.
  virtual absl::Status ReportWaiting(const std::string& pod_key, const WaitReport& report) = 0;
  virtual std::vector<std::string> TakeFailedReports() { return {}; }
  // The pod no longer waits (deleted, bound by another scheduler, admitted elsewhere): whatever is
  // kept about its reports can go, or it would be kept for every pod that ever waited.
  virtual void ForgetWaiting(const std::string& pod_key) {}
  // Records (value non-empty) or clears (empty) the node's onequeue.io/owner annotation. The
  // label onequeue.io/owner follows it (kubernetes | slurm | reserved, for kubectl get nodes -L),
  // and a node lent to Slurm or reserved carries the NoSchedule taint onequeue.io/owner so that
  // other schedulers stay off it. Written only if the node is still at `resource_version`, the
  // version the caller decided from ("" = whatever it is now): a write based on an old read (a
  // deposed leader's, a lagging watch's) fails with kAborted (HTTP 409) and the caller reads
  // again. Returns the node's resourceVersion after the write.
  virtual absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                                   const std::string& resource_version) = 0;
  // An event about a node (Lent, Reclaimed, Returned). Best effort.
  virtual void NodeEvent(const std::string& node, const std::string& reason, const std::string& note) {}
  // Sets status.nominatedNodeName; "" clears it (a rolled-back preemption).
  virtual absl::Status Nominate(const std::string& pod_key, const std::string& node) = 0;
  // Eviction API; a PodDisruptionBudget refusal is kFailedPrecondition.
  virtual absl::Status Evict(const std::string& pod_key, const std::string& preemptor, const std::string& message) = 0;
  // Sends the eviction without waiting (the loop sends one wave of evictions of every preemption
  // at once); `done` may run on another thread. What follows an eviction that happened (the
  // Preempted event) is EvictSucceeded, called from the loop's thread. This default evicts at
  // once with Evict, which does both.
  virtual void StartEvict(const std::string& pod_key, const std::string& preemptor, const std::string& message,
                          std::function<void(absl::Status)> done) {
    done(Evict(pod_key, preemptor, message));
  }
  virtual void EvictSucceeded(const std::string& pod_key, const std::string& preemptor, const std::string& message) {}
};

// What the loop does to Slurm (slurm_cluster.h implements it over slurmrestd). Every call is
// idempotent and tagged "onequeue:", so a successor finds what it left.
class SlurmActions {
 public:
  virtual ~SlurmActions() = default;
  // Keeps Slurm off the node for `owner` ("kubernetes" or "reserved/<P>"): a drain or placeholder
  // tagged onequeue:<owner>; re-tags a node onequeue holds already for another owner.
  virtual absl::Status Fence(const std::string& slurm_node, const std::string& owner) = 0;
  // Gives the node to Slurm (lend): the fence goes.
  virtual absl::Status Unfence(const std::string& slurm_node) = 0;
  // Holds a pending job of a shared partition, onequeue's reason in its comment.
  virtual absl::Status Hold(uint32_t job, const std::string& comment) = 0;
  // Starts the job onequeue chose, on these Slurm nodes only (ReqNodeList, released, begin now).
  virtual absl::Status StartOn(uint32_t job, const std::vector<std::string>& slurm_nodes,
                               const std::string& comment) = 0;
  // A victim: requeued (may run again later) or cancelled.
  virtual absl::Status Requeue(uint32_t job) = 0;
  virtual absl::Status Cancel(uint32_t job) = 0;
  // True when fencing a node already makes Slurm requeue its shared-partition jobs (placeholder:
  // Slurm's partition preemption does it); false when onequeue must requeue them (drain).
  virtual bool FenceRequeues() const = 0;
  // Asked of Slurm now (not of the poller's view): is the node held by onequeue with nothing of
  // Slurm's left running there? A pod is bound to a node taken from Slurm only then.
  virtual absl::StatusOr<bool> Ready(const std::string& slurm_node) = 0;
};

inline constexpr const char* kOwnerKubernetes = "kubernetes";
inline constexpr const char* kOwnerSlurm = "slurm";

struct CycleStats {
  int pending = 0;
  int bound = 0;
  int bind_errors = 0;
  int waiting = 0;
  int reported = 0;
  int preemptions_started = 0;
  int evictions = 0;
  int rollbacks = 0;
  int slurm_pending = 0;
  int slurm_started = 0;
  int slurm_held = 0;
  int requeued = 0;
  int lent = 0;
  int reclaimed = 0;
  int returned = 0;
  // Slurm shares the pool but its view is missing (no poll answered yet) or stale (the poller has
  // not refreshed it for a while): nothing was decided from Slurm's side this cycle.
  bool slurm_unknown = false;
  // The cycle planned only the pods that arrived since the last full cycle (RunArrivalCycle);
  // false: a full cycle.
  bool incremental = false;
  std::vector<int> preemption_victims;  // victims of each preemption started (for metrics)
  // Bound pods whose QOS, account or gang edits (or values their namespace may not use) were
  // ignored, each said once while it lasts (the daemon logs them).
  std::vector<std::string> ignored_edits;
};

// Test hooks: the daemon stops dead (SIGKILL) at a named step when the environment asks for it,
// so the crash-recovery tests can stop it exactly between two steps of the protocol.
using Failpoint = std::function<void(const char* name)>;

// Maps the daemon's configuration onto the queue's.
queue::QueueConfig ToQueueConfig(const Config& config);

class SchedulingLoop {
 public:
  // `slurm` may be null: pods only.
  SchedulingLoop(const Config& config, const ClusterView* view, ClusterActions* actions,
                 SlurmActions* slurm = nullptr, Failpoint failpoint = nullptr);
  CycleStats RunCycle(queue::Time now);
  // Bindings sent whose results the loop has not drained yet (for tests and status).
  size_t bindings_in_flight() const { return binding_.size(); }
  // Pods whose last waiting report the loop remembers (only pods still pending; for tests).
  size_t remembered_reports() const { return last_report_.size(); }

  // After each cycle, what it saw and decided goes to `board` (for the gRPC QueueService); null: not kept.
  void PublishTo(StatusBoard* board) { board_ = board; }
  // Called as each phase of a cycle ends ("snapshot", "plan", "act"): the daemon times them for
  // its metrics (the loop itself reads no clock). Null: not called.
  void MarkPhasesWith(std::function<void(const char* phase)> mark) { mark_phase_ = std::move(mark); }

  // Nodes currently reserved for a preemptor (node -> workload), for status and tests.
  const std::map<std::string, std::string>& reservations() const { return reservations_; }

 private:
  // A preemption whose eviction was refused (PodDisruptionBudget): not tried again before
  // `retry_at`, and the preemptor's waiting report says why.
  struct BlockedPreemption {
    queue::Time retry_at = 0;
    std::string message;
  };

  // Drops the assumptions the informer confirmed, whose pod is gone (or is another pod by now),
  // or that expired; returns the rest as the snapshot's assumed bindings (pod key -> node).
  std::map<std::string, std::string> ForgetConfirmedAssumptions(const KubeState& state,
                                                                const slurm::SlurmView* slurm_view, queue::Time now);
  SlurmWorldOptions SlurmOptions(const BuiltSnapshot& built, queue::Time now);
  // Moves a joined node to `world` before a start there: false if it cannot be done now.
  bool TakeNodeFor(const std::string& node, const std::string& workload, queue::Time now, CycleStats* stats);
  // Issue 24 H1/M3: Slurm shares the pool and this cycle has a fresh view of it. Without one, no
  // node is taken from Slurm, none not known to be outside Slurm is given to a pod, and no
  // reservation is released.
  bool SlurmKnown() const { return slurm_ == nullptr || slurm_known_; }
  bool slurm_known_ = false;
  bool slurm_seen_ = false;             // a fresh view has been seen at least once
  std::set<std::string> last_joined_;  // pool nodes joined to a Slurm node in the last fresh view
  // The Slurm view, or null when it is missing or older than the staleness bound.
  std::shared_ptr<const slurm::SlurmView> FreshSlurmView(queue::Time now, CycleStats* stats);
  void FenceUnknownNodes(BuiltSnapshot* built) const;
  // Issue 24 H2: what became of a Slurm victim the loop asked Slurm to remove.
  enum class VictimOutcome { kLeaving, kRetry, kGiveUp };
  VictimOutcome EvictSlurmVictim(const std::string& preemptor, const std::string& victim, uint32_t job,
                                 const slurm::SlurmJob& record, std::string* why);
  // Applies an outcome: leaving (each victim once), retried later with backoff, or the whole
  // preemption given up (released, the node back to Slurm, the preemptor told why).
  void NoteVictimOutcome(VictimOutcome outcome, const std::string& preemptor, const std::string& victim,
                         const std::string& why, const BuiltSnapshot& built, queue::Time now, CycleStats* stats);
  void RetrySlurmVictims(const BuiltSnapshot& built, queue::Time now, CycleStats* stats);
  struct VictimRetry {
    std::string preemptor;
    int attempts = 0;
    queue::Time retry_at = 0;
  };
  std::map<std::string, VictimRetry> victim_retry_;  // Slurm victim workload -> its next try
  void StartSlurmJob(const queue::StartDecision& start, const BuiltSnapshot& built, queue::Time now,
                     std::set<std::string>* touched, CycleStats* stats);
  void ReconcileSlurmNodes(const std::set<std::string>& touched, queue::Time now, CycleStats* stats);
  void FenceOnce(const JoinedNode& node, const std::string& owner, queue::Time now);
  void HoldWaitingJobs(const queue::Plan& plan, CycleStats* stats);
  std::string OwnerValueOf(const std::string& node) const;
  void Fail(const char* name) {
    if (failpoint_) failpoint_(name);
  }
  void ReleaseFinishedReservations(const BuiltSnapshot& built, queue::Time now, CycleStats* stats);
  // The pods a started preemption still has to evict, in the planner's order.
  struct PlannedEvictions {
    std::string preemptor;
    std::vector<std::string> pod_keys;
    bool refused = false;
  };
  // Steps 1 (reserve) and the Slurm victims of step 2; the pods to evict go to `evictions`.
  void StartPreemption(const queue::PreemptDecision& d, const BuiltSnapshot& built,
                       const std::set<std::string>& terminating, queue::Time now, std::set<std::string>* touched,
                       CycleStats* stats, std::vector<PlannedEvictions>* evictions);
  // Step 2 for pods: wave k sends the k-th eviction of every preemption at once and waits for
  // them all; a preemption whose eviction is refused is rolled back and sends no more.
  void EvictInWaves(std::vector<PlannedEvictions>* evictions, const BuiltSnapshot& built, queue::Time now,
                    CycleStats* stats);
  // Releases the reservations of preemptors that still wait but that this cycle's plan no longer
  // places on the reserved node (a gang member deleted after the evictions, requests changed).
  void ReleaseUnusableReservations(const queue::Plan& plan, const BuiltSnapshot& built, queue::Time now,
                                   std::set<std::string>* touched);
  void RollBack(const std::string& preemptor, const BuiltSnapshot& built, queue::Time now, CycleStats* stats);
  // Writes the node's owner, conditional on the node version this cycle read (or this process
  // wrote since), and remembers it: the informer shows the write a little later, and until it
  // does the loop must not act on the value it replaced. A conflict (kAborted: the node changed
  // since) is tried again next cycle from a fresh read.
  absl::Status SetOwner(const std::string& node, const std::string& value, queue::Time now);
  bool IsPending(const BuiltSnapshot& built, std::string_view workload) const;
  // The snapshot options that say how a pod becomes a workload (scheduler name, pool, QOS table,
  // namespace policies): the same for a full cycle and an arrival.
  SnapshotOptions PolicyOptions() const;
  // Assumes the pod on `node` and sends its binding (results drained by DrainBindResults).
  void SendBinding(const std::string& id, const std::string& key, const std::string& node, std::string message);
  void WriteWaitReport(const std::vector<std::string>& pod_keys, const WaitReport& report, CycleStats* stats);
  // Issue 12, cycles proportional to what changed: when the only changes since the last full
  // cycle are new single-pod workloads of this scheduler (and our own bindings showing up), plans
  // just those with QueuePlanner::OnArrival and acts on them as a full cycle would, then returns
  // true. Returns false, having acted on nothing, when a full cycle must run instead: a full cycle
  // is due (queue.fullCycleSeconds), or anything else changed or is under way (see the .cc).
  bool RunArrivalCycle(queue::Time now, CycleStats* stats);
  // The pod's record as the last full cycle read it or an arrival cycle since saw it; null: new.
  const PodRecord* RecordBefore(const std::string& key);
  // What the last full cycle planned from, for RunArrivalCycle.
  struct ArrivalBasis {
    queue::Time at = 0;
    uint64_t generation = 0;                          // the Kubernetes world's, planned up to
    std::shared_ptr<const queue::Snapshot> snapshot;  // null: no full cycle yet
    std::set<std::string> pending;                    // pod keys pending then, or arrived since
    int waiting_arrivals = 0;                         // arrivals since that wait
    // The records the full cycle read, indexed by pod key when first needed; and the records of
    // the arrivals and bindings seen since: a pod's change is compared with them.
    std::shared_ptr<const KubeState> state;
    absl::flat_hash_map<std::string_view, const PodRecord*> by_key;
    std::map<std::string, std::shared_ptr<const PodRecord>> since;
  };
  ArrivalBasis arrival_basis_;
  bool need_full_cycle_ = true;
  WaitReport ReportFor(const queue::WaitingStatus& w, const queue::Plan& plan, const BuiltSnapshot& built) const;
  void PublishStatus(std::shared_ptr<const queue::Plan> plan, BuiltSnapshot built,
                     std::map<std::string, WaitReport, std::less<>> reports, queue::Time now);

  const Config& config_;
  queue::QueueConfig queue_config_;
  const ClusterView* view_;
  ClusterActions* actions_;
  SlurmActions* slurm_;
  Failpoint failpoint_;
  StatusBoard* board_ = nullptr;
  std::function<void(const char* phase)> mark_phase_;
  void MarkPhase(const char* phase) {
    if (mark_phase_) mark_phase_(phase);
  }
  queue::CheapestVictimsPlanner preemption_;
  std::unique_ptr<queue::QueuePlanner> planner_;
  std::shared_ptr<const queue::Plan> last_plan_;  // its reservations are the next cycle's promises
  // Pods bound (or being bound) that the informer does not show bound yet, by pod UID (else
  // "namespace/name"): a pod deleted and made again under the same name is another pod, whose
  // place is not assumed. `bound_at` is when the binding was seen to succeed (0: in flight): an
  // assumption the informer has not confirmed kAssumedBindingSeconds later is forgotten, as
  // kube-scheduler expires its assumed pods.
  struct AssumedBinding {
    std::string key, node;
    queue::Time bound_at = 0;
  };
  std::map<std::string, AssumedBinding> assumed_;
  // Bindings sent and not yet drained: pod UID (as assumed_) -> pod key, node and the Scheduled
  // event's message.
  struct InFlightBind {
    std::string key, node, message;
  };
  std::map<std::string, InFlightBind> binding_;
  // Results of bindings, filled by the actions' callbacks (any thread), drained by the loop.
  // Shared with the callbacks, so a late one after the loop is gone writes into a live object.
  struct BindResults {
    absl::Mutex mu;
    std::vector<std::pair<std::string, absl::Status>> done ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<BindResults> bind_results_ = std::make_shared<BindResults>();
  // Applies the results that have arrived: a bind that landed is confirmed (counted, its event
  // recorded); a failed one is forgotten, so this or the next plan places the pod again.
  void DrainBindResults(queue::Time now, CycleStats* stats);
  // A gang some of whose members were bound while the binding of others failed (and was
  // forgotten) would wait for ever for members that exist (GangIncomplete): its pending members
  // are placed as the rest of the gang instead. kube-scheduler has no gangs; rolling back the
  // members that bound would mean deleting running pods.
  void PlaceRestOfPartlyBoundGangs(BuiltSnapshot* built);
  std::map<std::string, std::string> reservations_;   // node -> preemptor workload id
  std::map<std::string, queue::Time> unusable_since_;  // reserved node -> since when its preemptor cannot use it
  std::set<std::string> evicted_;                     // pod keys evicted (each victim once)
  // Preemptors whose victims this process has asked to evict. A reservation recovered from a
  // node annotation is not in it: the step may have stopped before its evictions (crash), so the
  // new process evicts whatever victim is not already leaving.
  std::set<std::string> evicting_;
  std::map<std::string, BlockedPreemption, std::less<>> blocked_;  // preemptor -> refusal
  std::map<std::string, ShownWait> last_report_;      // pod key -> what its last report showed

  // The Slurm side. Jobs onequeue started that the poller does not show running yet (assume):
  // job id -> Kubernetes nodes and the time the assumption lapses.
  struct AssumedStart {
    std::vector<std::string> nodes;
    queue::Time until = 0;
    int restarts = 0;  // the job's restart count when started: a higher one means it was requeued
  };
  std::map<uint32_t, AssumedStart> assumed_jobs_;
  std::map<std::string, std::string> node_owner_;      // node -> owner annotation as read this cycle
  // Owner values this process wrote that the node informer has not shown yet: they override the
  // informer's copy (and go into every snapshot) until it shows a version of the node other than
  // those the writes started from, that is the write itself or a later one. Every write carries
  // the version it was decided from as its precondition, so no foreign write can fall between
  // those versions and the written one (resourceVersions are opaque: only equality is compared).
  struct OwnerWrite {
    std::string value;
    std::string written_version;
    std::set<std::string> earlier_versions;
  };
  std::map<std::string, OwnerWrite> owner_written_;
  std::map<std::string, std::string> node_version_;    // node -> resourceVersion the next write expects
  std::map<std::string, std::string> owner_before_reserve_;  // node -> owner value a reservation replaced
  std::map<std::string, queue::Time> last_pod_seen_;   // node -> last cycle a pod ran there
  std::map<std::string, queue::Time> lent_idle_since_;  // lent node -> since when no Slurm job runs there
  std::map<std::string, std::pair<std::string, queue::Time>> last_fence_;  // node -> (wanted, when asked)
  std::map<uint32_t, std::string> last_hold_;          // job -> comment last written
  // Pod UID -> the QOS, account and gang it was admitted with (issue 13: edits of a running pod's
  // annotations do not change how it is scheduled); and the ignored edits already reported.
  AdmittedPods admitted_;
  std::set<std::string> reported_edits_;
  SlurmRecords slurm_records_;

  // Fair-share input: usage of finished pods and Slurm jobs, charged to their accounts.
  void ChargeUsage(const BuiltSnapshot& built, const slurm::SlurmView* slurm_view, queue::Time now);
  // Without a configured account tree every account seen is a leaf with one share; the planner
  // is remade when a new one appears (rare: a new namespace or Slurm account).
  void LearnAccounts(const queue::Snapshot& snapshot);
  struct RunningCharge {
    std::string account;
    queue::Time start = 0;
    double cores = 0;
  };
  std::map<std::string, RunningCharge> running_charges_;  // running pod workload -> what it uses
  std::set<uint32_t> charged_jobs_;                        // finished Slurm jobs already charged
  queue::UsageHistory usage_;
  std::set<std::string> learned_accounts_;
};

}  // namespace onequeue::scheduler

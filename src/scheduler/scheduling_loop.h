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
// The loop owns no threads and reads no clock: the daemon calls RunCycle(now). Each concept is a
// part of its own (issue 24): NodeOwners (node_owners.h), SlurmLending (slurm_lending.h),
// PreemptionExecutor and its state machine (preemption_executor.h), BindingTracker
// (binding_tracker.h), WaitingPods (waiting_pods.h), UsageAccounting (usage_accounting.h).
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
#include "scheduler/binding_tracker.h"
#include "scheduler/config.h"
#include "scheduler/cycle_status.h"
#include "scheduler/job_claim.h"
#include "scheduler/node_owners.h"
#include "scheduler/pod_mirror.h"
#include "scheduler/preemption_executor.h"
#include "scheduler/slurm_lending.h"
#include "scheduler/slurm_world.h"
#include "scheduler/time_limits.h"
#include "scheduler/usage_accounting.h"
#include "scheduler/waiting_pods.h"
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
  // binding that landed (the Scheduled event) is BindSucceeded,
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
  // Issue 26: SetNodeOwner without waiting (the reservation marks of a cycle's preemptions go out
  // at once); `done` may run on another thread. This default writes at once with SetNodeOwner: a
  // decorator must forward it (FencedClusterActions, TimedClusterActions do).
  virtual void StartSetNodeOwner(const std::string& node, const std::string& value, const std::string& resource_version,
                                 std::function<void(absl::StatusOr<std::string>)> done) {
    done(SetNodeOwner(node, value, resource_version));
  }
  // An event about a node (Lent, Reclaimed, Returned). Best effort.
  virtual void NodeEvent(const std::string& node, const std::string& reason, const std::string& note) {}
  // Sets (or, with "", removes) one annotation of a node (issue 25: onequeue.io/split). Best effort.
  virtual absl::Status AnnotateNode(const std::string& node, const std::string& key, const std::string& value) {
    return absl::OkStatus();
  }
  // A Warning event about a pod (issue 25: MirrorLost). OK once it is on its way (recorded
  // asynchronously, like every event); an error when it was not sent (no lease, API refused).
  virtual absl::Status PodEvent(const std::string& pod_key, const std::string& reason, const std::string& note) {
    return absl::OkStatus();
  }
  // Issue 25 DRA, the claim step (docs/sharing.md section 5): the ResourceClaim ("namespace/name")
  // allocated to `results` on `node` with `pod` in reservedFor, as kube-scheduler's DRA plugin
  // writes it (the delete-protection finalizer, then the status by compare-and-swap on the claim as
  // read by this call). Already so: OK, nothing written. kAborted: someone wrote it since the read
  // (the loop reads it again next cycle); kFailedPrecondition: allocated otherwise.
  virtual absl::Status AllocateClaim(const std::string& claim_key, const std::vector<k8s::DeviceAllocationResult>& results,
                                     const std::string& node, const k8s::ClaimConsumer& pod) {
    return absl::UnimplementedError("ResourceClaim allocation");
  }
  // Its undo: when the claim is reserved for `pod_uid`, the pod out of reservedFor and the
  // allocation cleared (onequeue's write, undone); else nothing (OK).
  virtual absl::Status ClearClaim(const std::string& claim_key, const std::string& pod_uid) {
    return absl::UnimplementedError("ResourceClaim allocation");
  }
  // VolumeBinding's PreBind: annotates the claim ("namespace/name") with
  // volume.kubernetes.io/selected-node = `node`, so its provisioner makes the volume there. The
  // loop binds the pod only once this returned OK.
  virtual absl::Status SelectVolumeNode(const std::string& claim_key, const std::string& node) {
    return absl::OkStatus();
  }
  // VolumeBinding's PreBind with a pre-made volume: sets the PersistentVolume's spec.claimRef to
  // the claim ("namespace/name", its uid) and the annotation pv.kubernetes.io/bound-by-controller,
  // only if the volume is still at `resource_version` (else kAborted, HTTP 409: another writer
  // took it). The PV controller then binds the claim. The loop binds the pod only once this
  // returned OK.
  virtual absl::Status BindVolume(const std::string& volume, const std::string& resource_version,
                                  const std::string& claim_key, const std::string& claim_uid) {
    return absl::OkStatus();
  }
  // Sets status.nominatedNodeName; "" clears it (a rolled-back preemption).
  virtual absl::Status Nominate(const std::string& pod_key, const std::string& node) = 0;
  // Issue 26: Nominate without waiting (a cycle's nominations go out at once); `done` may run on
  // another thread. This default nominates at once: a decorator must forward it.
  virtual void StartNominate(const std::string& pod_key, const std::string& node, std::function<void(absl::Status)> done) {
    done(Nominate(pod_key, node));
  }
  // Issue 26: a preemptor's nomination carrying its waiting report, in one pods/status write as
  // kube-scheduler nominates (nominatedNodeName with PodScheduled=False), so that a preemptor costs
  // one pod write before its binding; the FailedScheduling event as ReportWaiting's. `done` (any
  // thread): OK when both landed, the report then shown as after ReportWaiting; otherwise the
  // report is not shown (the caller writes it with ReportWaiting). This default: ReportWaiting,
  // then StartNominate (two writes); a decorator must forward it (FencedClusterActions,
  // TimedClusterActions do).
  virtual void StartNominateWithReport(const std::string& pod_key, const std::string& node, const WaitReport& report,
                                       std::function<void(absl::Status)> done) {
    absl::Status reported = ReportWaiting(pod_key, report);
    StartNominate(pod_key, node, [reported = std::move(reported), done = std::move(done)](absl::Status s) {
      done(s.ok() ? reported : std::move(s));
    });
  }
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
  // Issue 26: a victim no PodDisruptionBudget covers leaves as kube-scheduler's victims do: its
  // status gets the condition DisruptionTarget=True (reason PreemptionByScheduler, message
  // `condition_message`), then the pod is deleted (its own grace period). Without waiting, like
  // StartEvict (NotFound: gone already); EvictSucceeded follows a removal that happened. This
  // default evicts: a decorator must forward it (FencedClusterActions, TimedClusterActions do).
  virtual void StartDeleteVictim(const std::string& pod_key, const std::string& preemptor,
                                 const std::string& condition_message, std::function<void(absl::Status)> done) {
    StartEvict(pod_key, preemptor, condition_message, std::move(done));
  }
  // Ends a pod that ran past its time limit (issue 24 M4), as Slurm ends a job at its TimeLimit:
  // the Eviction API (a PodDisruptionBudget refusal is kFailedPrecondition), then a
  // TimeLimitExceeded event on the pod. This default evicts with Evict (whose event says
  // Preempted): a decorator must forward it (FencedClusterActions, TimedClusterActions do).
  virtual absl::Status EvictForTimeLimit(const std::string& pod_key, const std::string& message) {
    return Evict(pod_key, "", message);
  }
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
  // Holds a pending job of a shared partition, onequeue's reason in its AdminComment.
  virtual absl::Status Hold(uint32_t job, const std::string& comment) = 0;
  // Starts the job onequeue chose (released with a priority above any other, begin now, `comment`
  // in its AdminComment). `slurm_nodes` are the nodes the plan lent for it; the job is NOT pinned
  // to them (issue 29: its ReqNodeList is its user's), so Slurm places it among the nodes lent to
  // it, the fences keeping it off every other pool node.
  virtual absl::Status StartOn(uint32_t job, const std::vector<std::string>& slurm_nodes,
                               const std::string& comment) = 0;
  // Issue 29: one pending task of an array, split off into a record of its own (Slurm keeps the
  // pending tasks in the array's record) with `comment` in its AdminComment; returns the task's
  // own job id, which StartOn then starts. The task stays held as the array was.
  virtual absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job, uint32_t task, const std::string& comment) {
    (void)array_job, (void)task, (void)comment;
    return absl::UnimplementedError("this Slurm side cannot start array tasks");
  }
  // Issue 29: StartOn for a task split off an array, by its task id (slurm::ArrayTaskId).
  virtual absl::Status StartArrayTask(uint32_t array_job, uint32_t task, const std::vector<std::string>& slurm_nodes,
                                      const std::string& comment) {
    (void)array_job, (void)task, (void)slurm_nodes, (void)comment;
    return absl::UnimplementedError("this Slurm side cannot start array tasks");
  }
  // Hold for records of an array by their tasks' ids: `tasks` is Slurm's task list ("9", "3-9"),
  // so a hold never reaches the array's other records (SlurmLending::HoldRecord).
  virtual absl::Status HoldArrayTasks(uint32_t array_job, const std::string& tasks, const std::string& comment) {
    (void)array_job, (void)tasks, (void)comment;
    return absl::UnimplementedError("this Slurm side cannot hold array tasks");
  }
  // A victim that is the array's last task, in the array's own record: requeued by its task id
  // (slurm::SlurmApi::RequeueArrayTask says why).
  virtual absl::Status RequeueArrayTask(uint32_t array_job, uint32_t task) {
    (void)array_job, (void)task;
    return absl::UnimplementedError("this Slurm side cannot requeue array tasks");
  }
  // A victim: requeued (may run again later) or cancelled.
  virtual absl::Status Requeue(uint32_t job) = 0;
  virtual absl::Status Cancel(uint32_t job) = 0;
  // True when fencing a node already makes Slurm requeue its shared-partition jobs (placeholder:
  // Slurm's partition preemption does it); false when onequeue must requeue them (drain).
  virtual bool FenceRequeues() const = 0;
  // Asked of Slurm now (not of the poller's view): is the node held by onequeue with nothing of
  // Slurm's left running there? A pod is bound to a node taken from Slurm only then.
  virtual absl::StatusOr<bool> Ready(const std::string& slurm_node) = 0;
  // Issue 25: submits a pod placeholder (pod_mirror.h builds it) through the same submit as the
  // whole-node placeholders (SlurmApi::Submit); returns its job id. Undone with Cancel.
  virtual absl::StatusOr<uint32_t> SubmitPodPlaceholder(const slurm::JobSubmission& job) {
    return absl::UnimplementedError("this Slurm side cannot mirror pods");
  }
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
  int time_limits_exceeded = 0;  // pods evicted this cycle for running past their time limit
  // Slurm shares the pool but its view is missing (no poll answered yet) or stale (the poller has
  // not refreshed it for a while): nothing was decided from Slurm's side this cycle.
  bool slurm_unknown = false;
  // The cycle planned only the pods that arrived since the last full cycle (RunArrivalCycle);
  // false: a full cycle.
  bool incremental = false;
  // Issue 26: the cycle changed what the next plan sees where no informer event will say so (a
  // finished reservation released in the loop's view only, NodeOwners::Defer, after this cycle's
  // plan saw it reserved): the daemon runs the next cycle without waiting for an event.
  bool run_again = false;
  // Issue 25: shared nodes (Kubernetes names), one entry per pod reported this cycle as having
  // lost its placeholder for good (onequeue_shared_mirror_lost_total{node}).
  std::vector<std::string> mirrors_lost;
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
// The fair-share usage settings of the configuration (usage_accounting.h).
UsageOptions UsageOptionsOf(const Config& config);
// "priority 1.0 (age 0.10, ...)", for the Scheduled event.
std::string DescribePriority(const queue::PriorityBreakdown& p);

class SchedulingLoop {
 public:
  // `slurm` may be null: pods only.
  SchedulingLoop(const Config& config, const ClusterView* view, ClusterActions* actions,
                 SlurmActions* slurm = nullptr, Failpoint failpoint = nullptr);
  CycleStats RunCycle(queue::Time now);
  // Bindings sent whose results the loop has not drained yet (for tests and status).
  size_t bindings_in_flight() const { return bindings_.in_flight(); }
  // Pods whose last waiting report the loop remembers (only pods still pending; for tests).
  size_t remembered_reports() const { return waiting_.size(); }

  // After each cycle, what it saw and decided goes to `board` (for the gRPC QueueService); null: not kept.
  void PublishTo(StatusBoard* board) { board_ = board; }
  // Issue 29: the fair-share usage is saved to `store` and restored from it when this replica
  // starts leading (its first cycle); null: memory only.
  void PersistUsageTo(UsageStore* store) { usage_.PersistTo(store); }
  // Called as each phase of a cycle ends ("snapshot", "plan", "act"): the daemon times them for
  // its metrics (the loop itself reads no clock). Null: not called.
  void MarkPhasesWith(std::function<void(const char* phase)> mark) { mark_phase_ = std::move(mark); }

  // Nodes currently reserved for a preemptor (node -> workload), for status and tests.
  const std::map<std::string, std::string>& reservations() const { return preemptions_.reservations(); }
  // Issue 25: the pods mirrored in Slurm on shared nodes (pod_mirror.h), for status and tests.
  const PodMirrors& mirrors() const { return mirrors_; }
  // Issue 25 step 4: Slurm jobs claiming room on a shared node (job_claim.h), for status and tests.
  const JobClaims& job_claims() const { return job_claims_; }

 private:
  // The named steps of a full cycle (RunCycle).
  // Reads the owners, recovers reservations, forgets confirmed assumptions: the snapshot's options.
  SnapshotOptions ReadWorld(const KubeState& state, queue::Time now);
  BuiltSnapshot BuildCycleSnapshot(const KubeState& state, SnapshotOptions options,
                                   const std::shared_ptr<const slurm::SlurmView>& slurm_view, queue::Time now,
                                   CycleStats* stats);
  std::shared_ptr<const queue::Plan> Plan(const BuiltSnapshot& built, queue::Time now);
  void StartWorkloads(const queue::Plan& plan, const BuiltSnapshot& built, const KubeState& state, queue::Time now,
                      std::set<std::string>* touched, CycleStats* stats);
  // Moves the nodes a pod start takes from Slurm first; false if one cannot change hands yet.
  bool TakeNodes(const queue::Plan& plan, const std::string& workload, const BuiltSnapshot& built, queue::Time now,
                 std::set<std::string>* touched, CycleStats* stats);
  std::map<std::string, WaitReport, std::less<>> ReportWaiting(const queue::Plan& plan, const BuiltSnapshot& built,
                                                               CycleStats* stats);
  // The cycle as the preemption executor's Start sees it: each preemptor's nomination carries its
  // waiting report (issue 26; PreemptionCycle::report_to_show).
  PreemptionCycle WithNominationReports(const queue::Plan& plan, const PreemptionCycle& cycle);
  void RememberArrivalBasis(const std::shared_ptr<const KubeState>& state, const BuiltSnapshot& built,
                            const std::shared_ptr<const slurm::SlurmView>& slurm_view, queue::Time now);
  void DrainBindResults(queue::Time now, CycleStats* stats);
  // A gang some of whose members were bound while the binding of others failed (and was
  // forgotten) would wait for ever for members that exist (GangIncomplete): its pending members
  // are placed as the rest of the gang instead. kube-scheduler has no gangs; rolling back the
  // members that bound would mean deleting running pods.
  void PlaceRestOfPartlyBoundGangs(BuiltSnapshot* built);
  // Without a configured account tree every account seen is a leaf with one share; the planner
  // is remade when a new one appears (rare: a new namespace or Slurm account).
  void LearnAccounts(const queue::Snapshot& snapshot);
  // The snapshot options that say how a pod becomes a workload (scheduler name, pool, QOS table,
  // namespace policies): the same for a full cycle and an arrival.
  SnapshotOptions PolicyOptions() const;
  // Issue 25 (pod_mirror.h): the shared nodes of this cycle, every mirror record moved by the two
  // listings (rebuilt from them on the first cycle with Slurm's view), before the plan.
  void AdvanceMirrors(const KubeState& state, const slurm::SlurmView& view, const BuiltSnapshot& built,
                      queue::Time now, CycleStats* stats);
  // Issue 25 DRA, the claim step (dra_claim_step.cc): each pending pod with ResourceClaims, its
  // claims moved as NextClaimStep says; returns the UIDs of those pods (bound only in kClaimWritten).
  std::set<std::string> StepClaims(const KubeState& state, queue::Time now);
  void StepPodClaims(const PodRecord& pod, const KubeState& state, const SlurmConfig::DraGpus* gpus, queue::Time now);
  // Pods whose placeholder is lost and not made again within the timeout: each reported once per
  // loss (the MirrorLost event on the pod, stats->mirrors_lost), and evicted if
  // sharing.onLostMirror says evict.
  void ReportLostMirrors(queue::Time now, CycleStats* stats);
  // Writes each shared node's split (node_split.h) to its onequeue.io/split annotation when it
  // changed since this process last wrote it.
  void AnnotateSplits(const BuiltSnapshot& built);
  // A pod the plan starts on a shared node gets a placeholder instead of its binding; true if so.
  bool MirrorInsteadOfBinding(const PodRecord* pod, const std::string& node, queue::Time now);
  // Pods whose placeholder runs are bound now.
  void BindMirrored(const KubeState& state, queue::Time now);
  MirroredPod MirroredPodOf(const PodRecord& pod) const;
  // Issue 25 step 4: a pod preemptor (one pod or a gang) whose member nodes are all shared claims
  // its room there (each member's placeholder, pending: PodMirrors::Claim), then its victims are
  // asked to leave; a claim rebuilt after a restart has its victims asked again. Members are bound
  // one by one as their placeholders run, as gangs on shared nodes are.
  void StartSubNodePreemptions(const std::vector<queue::PreemptDecision>& decisions, const KubeState& state,
                               const PreemptionCycle& c);
  // Every member of a pod preemptor claims at once (a member with no victim on its node gets a
  // plain placeholder), or none: one that cannot undoes those claimed before it. The uids claimed.
  std::vector<std::string> ClaimForPods(const queue::PreemptDecision& d, const std::vector<std::string>& keys,
                                        const KubeState& state, const PreemptionCycle& c);
  // Issue 24 G6: whether `workload` is a victim named by a claim that still stands (a pod's pending
  // placeholder, a held job's claim). Such a Slurm job is not started, whatever the plan says,
  // until that claim has run or been undone: a start is not pinned, and Slurm, whose books do not
  // hold pending claims, could run it in the claimed room.
  bool VictimOfAStandingClaim(const std::string& workload) const;
  // Why one of the pods may not claim now (a victim refused lately); null if none.
  const std::string* RefusedClaim(const std::vector<std::string>& pod_keys) const;
  // The same for a Slurm job preemptor (job_claim.h): the job is held with its claim, its victims
  // asked (pods first), and once they are gone it is started there as every job is
  // (SlurmLending::StartJob).
  void StartSubNodeJobPreemptions(const std::vector<queue::PreemptDecision>& decisions, const PreemptionCycle& c);
  std::vector<queue::PreemptDecision> WholeNodePreemptions(const std::vector<queue::PreemptDecision>& decisions,
                                                           const queue::Snapshot& snapshot) const;
  // Assumes the pod on `node` and sends its binding (results drained by DrainBindResults).
  void SendBinding(const std::string& id, const std::string& key, const std::string& node, std::string message);
  // VolumeBinding's PreBind: the pod's unbound WaitForFirstConsumer claims annotated with its
  // node; false when one could not be (the pod is not bound this cycle).
  bool SelectVolumeNodes(const BuiltSnapshot& built, const std::string& pod_key, const std::string& node);
  // The same for claims going to pre-made volumes: each bound to the smallest volume on `node` not
  // chosen this cycle (volumes_chosen_); false when one could not be.
  bool BindPreMadeVolumes(const BuiltSnapshot& built, const std::string& pod_key, const std::string& node);
  void Fail(const char* name) {
    if (failpoint_) failpoint_(name);
  }
  void MarkPhase(const char* phase) {
    if (mark_phase_) mark_phase_(phase);
  }
  void PublishStatus(std::shared_ptr<const queue::Plan> plan, BuiltSnapshot built,
                     std::map<std::string, WaitReport, std::less<>> reports, queue::Time now);

  // Issue 12, cycles proportional to what changed (arrival_cycle.cc): when the only changes since
  // the last full cycle are new single-pod workloads of this scheduler (and our own bindings
  // showing up), plans just those with QueuePlanner::OnArrival and acts on them as a full cycle
  // would, then returns true. Returns false, having acted on nothing, when a full cycle must run
  // instead: a full cycle is due (queue.fullCycleSeconds), or anything else changed or is under way.
  bool RunArrivalCycle(queue::Time now, CycleStats* stats);
  struct Arrival {
    const PodRecord* pod;
    queue::PendingWorkload workload;
    queue::PriorityBreakdown priority;
  };
  struct ArrivalChanges {
    std::vector<const PodRecord*> arrivals;
    std::vector<std::string> confirmed;                  // assumptions the informer now shows bound
    std::vector<std::shared_ptr<const PodRecord>> seen;  // records of the arrivals and confirmed bindings
  };
  bool ArrivalCycleMayRun(queue::Time now, CycleStats* stats, std::optional<KubeChanges>* changes);
  bool SlurmUnchangedSinceBasis(queue::Time now) const;
  bool StartsOnASharedNode(const queue::PlanDelta& delta) const;
  bool SortChanges(const KubeChanges& changes, ArrivalChanges* out);
  bool RankArrivals(const ArrivalChanges& changes, queue::Time now, std::vector<Arrival>* planned);
  bool PlanArrivals(const std::vector<Arrival>& planned, queue::Time now, std::vector<queue::PlanDelta>* deltas);
  void ActOnArrivals(const std::vector<Arrival>& planned, const std::vector<queue::PlanDelta>& deltas,
                     CycleStats* stats);
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
    // The Slurm view that cycle planned from, when it was fresh (issue 26: arrival cycles with
    // Slurm on run only while the poller's tables are still these).
    std::shared_ptr<const slurm::SlurmView> slurm;
  };
  ArrivalBasis arrival_basis_;
  bool need_full_cycle_ = true;

  const Config& config_;
  queue::QueueConfig queue_config_;
  const ClusterView* view_;
  ClusterActions* actions_;
  SlurmActions* slurm_;
  Failpoint failpoint_;
  StatusBoard* board_ = nullptr;
  std::function<void(const char* phase)> mark_phase_;
  queue::CheapestVictimsPlanner preemption_;
  std::unique_ptr<queue::QueuePlanner> planner_;
  std::shared_ptr<const queue::Plan> last_plan_;  // its reservations are the next cycle's promises

  // The parts, each owning one concept (issue 24).
  NodeOwners owners_;                // node owner marks, read and written
  SlurmLending lending_;             // the Slurm view, lend / take / return / fence, holds
  PreemptionExecutor preemptions_;   // one record per preemptor, its state machine
  BindingTracker bindings_;          // assume / forget
  WaitingPods waiting_;              // wait reporting
  UsageAccounting usage_;            // fair-share usage and learned accounts
  TimeLimitEnforcer time_limits_;    // pods past their time limit are evicted (issue 24 M4)
  SlurmRecords slurm_records_;       // this cycle's Slurm world, joined to the pool
  // Pod UID -> the QOS, account and gang it was admitted with (issue 13: edits of a running pod's
  // annotations do not change how it is scheduled); and the ignored edits already reported.
  AdmittedPods admitted_;
  std::set<std::string> reported_edits_;
  // C1: the nodes a start took from a reservation this cycle (TakeNodes); no preemption reserves
  // them again in the same cycle (WholeNodePreemptions).
  std::set<std::string> retaken_this_cycle_;
  std::set<std::string> volumes_chosen_;  // PersistentVolumes claimed in this StartWorkloads
  // Issue 25: pods on shared nodes, each mirrored by a Slurm placeholder; the shared nodes of the
  // last cycle (Kubernetes name -> both names and the shared partition).
  PodMirrors mirrors_;
  bool mirrors_rebuilt_ = false;
  bool shares_nodes_ = false;  // the configuration has a partition with sharing: shared
  std::map<std::string, MirrorNode> shared_nodes_;
  // Issue 25 step 4: Slurm jobs holding room on a shared node until their victims are gone; read
  // back from Slurm on the first cycle with its view.
  JobClaims job_claims_;
  bool job_claims_rebuilt_ = false;
  std::map<std::string, std::string> split_written_;  // node -> the onequeue.io/split value written
};

}  // namespace onequeue::scheduler

#pragma once
// Carries out the queue's preemption decisions: the atomic preemption protocol of
// docs/architecture.md, one record per preemptor P, whose state moves only through Next():
//
//                 Reserve: Slurm fences, then reserved(P) marks, then nominations sent
//     (no record) ─────────────────────────────┐      a mark reserved(P) read back (restart)
//          ^                                    v      ──────────────────────────┐
//          │                               kReserved <───────────────────────────┘
//          │                                │    │ a Slurm victim's requeue/cancel failed,
//          │            every victim asked  │    v retried with backoff
//          │                                │  kEvicting ──── all asked ───┐
//          │                                v                             v
//          │                        kWaitingForVictims <──────────────────┘
//          │                                │  ^  the plan no longer places P on a reserved node
//          │                                v  │  (placed there again: back)
//          │                            kUnusable ── past unusableReservationSeconds, or at once
//          │                                          when the plan starts a workload holding
//          │                                          no reservation there: that node released
//          │   refused: a PodDisruptionBudget, a victim Slurm will not requeue (and policy
//          │   forbids cancelling it), a mark or fence that could not be written
//          │        kReserved | kEvicting ──────> kBlocked (marks released; retry after retry_at;
//          │        a node the live check cannot release yet stays reserved in the record, D6)
//          │
//          └──── kReleased: P started (its nodes consumed by the start), P gone, every node
//                released; the record is dropped.
//
// Release() is the only way a reserved node stops being reserved; which owner it gets back
// depends on why (see ReleaseKind). Each victim is evicted once: pods by key for as long as the
// pod exists, Slurm jobs per record.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "queue/planner.h"
#include "scheduler/all_answered.h"
#include "scheduler/config.h"
#include "scheduler/node_owners.h"
#include "scheduler/slurm_lending.h"
#include "scheduler/slurm_world.h"
#include "scheduler/snapshot_builder.h"
#include "scheduler/cycle_status.h"

namespace onequeue::scheduler {

class ClusterActions;
class SlurmActions;
struct CycleStats;

// Issue 26: the longest a finished reservation's release waits for no preemption to be under
// way (NodeOwners::Defer). Its mark is a NoSchedule taint to other schedulers: held seconds, not
// minutes, past the bound preemptor; long enough to outlast a burst of preemptions (100 preemptors
// are bound within ~2-4 s on the bench's 100 nodes).
inline constexpr int64_t kMaxReleaseDeferralSeconds = 10;

enum class PreemptionState { kReserved, kEvicting, kWaitingForVictims, kUnusable, kBlocked, kReleased };
enum class PreemptionEvent {
  kReserve,       // marks written (or read back): victims not asked by this process yet
  kVictimRetry,   // a Slurm victim is to be asked again
  kVictimsAsked,  // every victim asked
  kUnusable,      // the plan places P elsewhere or nowhere
  kUsable,        // placed on its nodes again
  kRefused,       // rolled back
  kRelease,       // over
};
const char* PreemptionStateName(PreemptionState s);
// Issue 26: how a victim pod of a whole-node preemption leaves. kEvict: the Eviction API, which
// honours a PodDisruptionBudget (and costs the apiserver a budget lookup for every pod). kDelete:
// as kube-scheduler v1.37 removes its victims, the condition DisruptionTarget=True (reason
// PreemptionByScheduler) on the pod's status, then a DELETE with the pod's grace period.
enum class VictimRemoval { kEvict, kDelete };
// kEvict when a PodDisruptionBudget covers the victim (its budget group is set), or when the
// budgets are not read (Config::test_without_budgets: only the Eviction API honours them then);
// kDelete otherwise.
VictimRemoval RemovalOf(const queue::RunningWorkload& victim, bool budgets_read);
// ALL transitions. An event a state does not take leaves it as it is (and is logged).
PreemptionState Next(PreemptionState from, PreemptionEvent event, bool victims_asked);

// What one cycle gives the executor to act on.
struct PreemptionCycle {
  const BuiltSnapshot& built;
  const SlurmRecords& slurm;
  const std::set<std::string>& terminating;  // pod keys being deleted
  queue::Time now = 0;
  CycleStats* stats = nullptr;
  std::set<std::string>* touched = nullptr;  // nodes whose Slurm side this cycle has set
  // Issue 26: the waiting report a preemptor's pod is to show, written with its nomination in one
  // status write as kube-scheduler nominates (ClusterActions::StartNominateWithReport); nullopt
  // when the pod shows it already. `report_shown` is told of each that landed. Null: the
  // nomination alone (the report follows from the loop's ReportWaiting).
  std::function<std::optional<WaitReport>(std::string_view preemptor, const std::string& pod_key)> report_to_show;
  std::function<void(const std::string& pod_key, const WaitReport& shown)> report_shown;
  bool IsPending(std::string_view workload) const {
    return built.pending_pods.find(workload) != built.pending_pods.end() ||
           slurm.pending.find(workload) != slurm.pending.end();
  }
};

// Issue 25: the victims of a claim on `nodes` that still hold something there, by the snapshot. A
// victim that left and runs elsewhere now (its workload made again and bound on another node, a
// requeued job started on another node) frees nothing in the claimed room: it is not asked again,
// and a job's claim does not wait for it. A victim the snapshot does not hold as running is kept.
std::vector<std::string> VictimsHoldingRoomOn(const std::vector<std::string>& victims,
                                              const std::vector<std::string>& nodes, const queue::Snapshot& snapshot);

class PreemptionExecutor {
 public:
  PreemptionExecutor(const Config& config, ClusterActions* actions, SlurmActions* slurm, NodeOwners* owners,
                     SlurmLending* lending, std::function<void(const char*)> fail)
      : config_(config), actions_(actions), slurm_(slurm), owners_(owners), lending_(lending), fail_(std::move(fail)) {}

  // Reservations read back from the marks (a restarted or newly elected scheduler finishes or
  // rolls back what its predecessor began); a deleted node's reservation goes with it.
  void Recover();
  // Step 1 and the Slurm victims of step 2 of each decision, then step 2 for pods in waves.
  void Start(const std::vector<queue::PreemptDecision>& decisions, const PreemptionCycle& c);
  // Issue 25 step 4: on a shared node nothing is reserved or fenced whole (the claim is the
  // preemptor's pod placeholder, PodMirrors, which keeps the state): the victims of `preemptor`
  // are asked to leave by the same rules as Start's (Slurm jobs requeued, or cancelled where
  // slurm.cancelUnrequeueable allows; pods evicted, each once). A victim gone or leaving already is
  // not asked again. OK when every victim was asked; else why not (a PodDisruptionBudget, a job
  // Slurm will not requeue, a failed call): the caller undoes the claim.
  // Only victims holding something on the claim's `nodes` are asked: one that left and runs
  // elsewhere now (its workload made again) is not asked again for this claim.
  absl::Status AskSubNodeVictims(const std::string& preemptor, const std::vector<std::string>& victims,
                                 const std::vector<std::string>& nodes, const PreemptionCycle& c);
  // Slurm victims whose requeue or cancel failed, asked again once their backoff has passed.
  void RetryVictims(const PreemptionCycle& c);
  // Releases the reservations of preemptors that no longer wait (started, deleted). On nodes
  // Slurm does not know the write is deferred while another preemption is under way
  // (DeferReleases), the node released in this process's view meanwhile. Returns whether it
  // released one so (issue 26): no watch event follows such a release, and this cycle's plan,
  // made before it, saw the node reserved.
  bool ReleaseFinished(const PreemptionCycle& c);
  // Releases the nodes a waiting preemptor has not been able to use for the grace.
  void ReleaseUnusable(const queue::Plan& plan, const PreemptionCycle& c);
  // A start took the node (TakeNodeFor, a Slurm job's lend): its reservation is consumed.
  void Consumed(const std::string& node, bool fail_after);
  // Pods evicted that are gone now are forgotten (a pod of the same name later is another one).
  void ForgetGonePods(const std::function<bool(const std::string&)>& exists);

  const std::map<std::string, std::string>& reservations() const { return by_node_; }
  // Why a refused preemption waits, for its waiting report; null if not refused.
  const std::string* BlockedMessage(std::string_view preemptor) const;
  // Issue 26: the preemptor's victims were all asked by a Start before the latest one, and it
  // waits only for them to leave: its nomination says where it goes, so its waiting report (written
  // when they were asked) need not be written again as its queue position moves. That holds while
  // its reservation does, kUnusable within the grace included: while the victims terminate the
  // plan may place it on no node (another workload has the cycle's reservation), and rewriting
  // ~90 such preemptors cost two pod writes each (preempt2's outlier). Refused (kBlocked), or its
  // nodes released, it is reported again.
  bool AskedEarlier(std::string_view preemptor) const {
    auto it = records_.find(preemptor);
    return it != records_.end() && it->second.victims_asked && !asked_now_.count(preemptor) &&
           it->second.state != PreemptionState::kBlocked && !it->second.nodes.empty();
  }
  // Nothing under way (the arrival cycles need that).
  bool Idle() const { return records_.empty() && evicted_pods_.empty(); }
  bool HasEvictedPods() const { return !evicted_pods_.empty(); }

 private:
  struct VictimRetry {
    int attempts = 0;
    queue::Time retry_at = 0;
  };
  struct Preemption {
    PreemptionState state = PreemptionState::kReserved;
    bool victims_asked = false;  // by this process (a recovered reservation has not)
    // Reserved nodes whose victims this process asked (a node read back after a restart, or kept
    // from an earlier decision of P's, is not among them until P's decision there is carried out).
    std::set<std::string> asked_on;
    std::map<std::string, std::optional<NodeOwner>> nodes;  // reserved node -> owner before, if known
    std::map<std::string, queue::Time> unusable_since;       // reserved node -> since when P cannot use it
    // Reserved nodes a workload holding no reservation of its own was started on: their room is gone.
    std::set<std::string> taken_on;
    std::set<std::string> slurm_victims;                     // asked to leave (each once)
    std::map<std::string, VictimRetry> retries;              // Slurm victims to ask again
    queue::Time retry_at = 0;                                // kBlocked
    std::string blocked_message;
  };
  enum class ReleaseKind {
    kRolledBack,  // back to the owner it had; failures ignored. Unknown or unmarked before, on a
                  // node Slurm shares: as kFinished (the live check), kept if that cannot be done (D6)
    kFinished,    // P no longer waits: Kubernetes' if Slurm shares it and the live check says no
                  // Slurm job runs there (else Slurm's), unmarked if Slurm does not know it
    kUnusable,    // back to the owner it had, if still reserved(P); kept when the write fails
    kConsumed,    // a start wrote the new owner already: nothing to write
    kGone,        // the node was deleted: nothing to write
  };
  enum class VictimOutcome { kLeaving, kRetry, kGiveUp };
  struct PlannedEvictions {
    std::string preemptor;
    std::vector<std::string> pod_keys;
    std::vector<VictimRemoval> removals;  // one per pod key
    bool refused = false;
  };

  void Move(const std::string& preemptor, Preemption& p, PreemptionEvent event);
  // D7: Slurm work a reservation under way never asked, named by this cycle's plan on its nodes.
  void AskLateSlurmVictims(const queue::PreemptDecision& d, const PreemptionCycle& c);
  // The one release path: true when the node is no longer reserved for P (its record updated).
  bool Release(const std::string& preemptor, Preemption& p, const std::string& node, ReleaseKind kind,
               const PreemptionCycle* c);
  // Issue 26: whether this cycle's finished releases wait (another preemption is under way, the
  // oldest deferred one younger than kMaxReleaseDeferralSeconds).
  bool DeferReleases(const PreemptionCycle& c) const;
  // A node Slurm shares, known to this cycle's view: Slurm work may run there (D6).
  bool MayCarrySlurmWork(const std::string& node, const PreemptionCycle* c) const;
  // kFinished on a node still marked reserved(P): Kubernetes' after the live check, else Slurm's
  // (drain) or still reserved until the next cycle; false when not released.
  bool ReleaseFinishedNode(const std::string& node, const PreemptionCycle& c);
  // Every node of P released, nominations cleared, the record blocked until `retry_at`.
  void RollBack(const std::string& preemptor, const PreemptionCycle& c, queue::Time retry_at, std::string why);
  void ClearNominations(const std::string& preemptor, const PreemptionCycle& c);
  // Whether `workload` holds reserved nodes (a preemption of its own under way or refused).
  bool HoldsNodes(std::string_view workload) const;
  // Step 1 for every decision of the cycle: fences, then every mark at once; the decisions whose
  // marks all landed (the others rolled back).
  std::vector<const queue::PreemptDecision*> Reserve(const std::vector<const queue::PreemptDecision*>& decisions,
                                                     const PreemptionCycle& c);
  // Reserve's first write: the joined nodes fenced for `mark`; false (rolled back) if one fails.
  bool FenceForReservation(const std::string& preemptor, const std::set<std::string>& names, const NodeOwner& mark,
                           const PreemptionCycle& c);
  void AskSlurmVictims(const queue::PreemptDecision& d, const PreemptionCycle& c);
  // `fenced`: its node is fenced for the preemptor (false on a shared node: requeued here).
  // `requeued`: set when Slurm took the requeue (the job is pending again).
  VictimOutcome EvictSlurmVictim(uint32_t job, const slurm::SlurmJob& record, std::string* why, bool fenced = true,
                                 bool* requeued = nullptr);
  // Applies an outcome; false when the preemption was given up.
  bool NoteVictim(const std::string& preemptor, const std::string& victim, VictimOutcome outcome,
                  const std::string& why, const PreemptionCycle& c);
  struct Nomination {
    std::string preemptor, pod_key, node;
  };
  // Step 1's nominations of the cycle's reserved preemptions, all at once, left in flight (their
  // answers: AwaitNominations) while the victims are asked.
  void Nominate(std::vector<Nomination> nominations, const PreemptionCycle& c);
  // The nominations in flight answered (before a rollback clears one, and at the end of Start).
  void AwaitNominations();
  void EvictInWaves(std::vector<PlannedEvictions>* evictions, const PreemptionCycle& c);
  // The wave in which the k-th victim of `p` is asked (preemption_waves.cc).
  static size_t WaveOf(const PlannedEvictions& p, size_t k);
  // One wave's removals (members: index into `evictions`, victim index) all in flight, answered.
  std::vector<absl::Status> SendWave(const std::vector<PlannedEvictions>& evictions,
                                     const std::vector<std::pair<size_t, size_t>>& members);
  void Reindex();
  void Fail(const char* name) {
    if (fail_) fail_(name);
  }

  const Config& config_;
  ClusterActions* actions_;
  SlurmActions* slurm_;
  NodeOwners* owners_;
  SlurmLending* lending_;
  std::function<void(const char*)> fail_;
  std::map<std::string, Preemption, std::less<>> records_;  // by preemptor
  std::map<std::string, std::string> by_node_;              // reserved node -> preemptor
  std::set<std::string> evicted_pods_;                      // pod keys evicted (each victim once)
  std::set<std::string, std::less<>> asked_now_;            // preemptors whose victims the latest Start asked
  struct NominationsInFlight {
    std::vector<Nomination> nominations;
    std::vector<std::optional<WaitReport>> reports;  // the report each carries, if any
    std::function<void(const std::string& pod_key, const WaitReport& shown)> report_shown;
    InFlight<absl::Status> answers;
  };
  std::unique_ptr<NominationsInFlight> nominating_;  // Start's, until AwaitNominations
};

}  // namespace onequeue::scheduler

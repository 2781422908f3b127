#pragma once
// The Slurm side of the pool: which view of Slurm a cycle may act on, and the moves of nodes
// between the worlds (lend, return, take back, fence) with the live check that guards them.
//
//   * The view: the poller's, while fresh. Missing (no poll answered yet: a restart) or stale (not
//     refreshed for max(30 s, 10 poll intervals): slurmrestd hangs), nothing is decided from
//     Slurm's side (issue 24 H1, M3): no node is taken from or lent to Slurm, a pod goes only where
//     onequeue fenced Slurm off before (kubernetes) or where the last view showed no Slurm node.
//   * Lend (StartJob): the node is marked slurm/<job> first, then the job is released and the
//     fence lifted; if the job cannot be started the marks are undone (issue 24 M3).
//   * A start, once asked, is one of onequeue's assumed starts (counted running on its nodes)
//     until a view settles it; ConfirmStarts is the one place it moves (issue 24 D5):
//       asked, ok                --> kReleased
//       asked, kDeadlineExceeded --> kUnknown: the release may have landed (slurmrestd hung). The
//           node stays lent, the job counted there, its fence not lifted, until a view listed
//           after the call returned says which:
//       kUnknown --running, ended or requeued--> confirmed (dropped; the lend stands)
//       kUnknown --pending, released by the start (its AdminComment)--> kReleased
//       kUnknown --pending, not released--> failed: the lend undone (UndoLend, the one path a
//           refused start takes too)
//       kReleased --running, ended or requeued--> confirmed; --pending past 120 s--> lapsed
//           (dropped: the next plan decides again; the lend stays until the node is idle)
//   * Take (TakeNodeFor) and Return (Reconcile): fenced first, then Slurm is asked now (Ready,
//     not the poll) whether anything of its own still runs there; only then is the node marked
//     kubernetes (issue 24 H3). A node Slurm turns out to use stays Slurm's.
//   * Reconcile: every joined node's Slurm side is made to match its owner (fence tagged with it,
//     or lifted for a lent node), once per kFenceRetrySeconds at most; holds keep Slurm's waiting
//     jobs from starting anywhere onequeue did not choose.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "queue/planner.h"
#include "scheduler/config.h"
#include "scheduler/slurm_arrays.h"
#include "scheduler/node_owners.h"
#include "scheduler/slurm_world.h"
#include "scheduler/snapshot_builder.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

class ClusterActions;
class SlurmActions;
struct CycleStats;

class SlurmLending {
 public:
  // `slurm` null: Slurm does not share the pool and every method is a no-op.
  SlurmLending(const Config& config, SlurmActions* slurm, ClusterActions* actions, NodeOwners* owners,
               std::function<void(const char*)> fail)
      : config_(config), slurm_(slurm), actions_(actions), owners_(owners), fail_(std::move(fail)) {}

  bool enabled() const { return slurm_ != nullptr; }
  // The view this cycle acts on: `view` if fresh, else null (stats->slurm_unknown).
  std::shared_ptr<const slurm::SlurmView> Observe(std::shared_ptr<const slurm::SlurmView> view, queue::Time now,
                                                  CycleStats* stats);
  // True when `view` is recent enough to decide from (the bound Observe applies).
  bool Fresh(const slurm::SlurmView& view, queue::Time now) const;
  // True without Slurm, or when this cycle's view is fresh.
  bool known() const { return slurm_ == nullptr || known_; }
  // Without a fresh view: the nodes no pod may go to (see above).
  void FenceUnknownNodes(BuiltSnapshot* built) const;
  // Remembers which pool nodes the fresh view joined.
  void Joined(const SlurmRecords& records);
  // The options AddSlurmWorld needs from the loop's state (assumed starts, hysteresis, headroom).
  SlurmWorldOptions Options(const BuiltSnapshot& built, queue::Time now);
  // Moves every assumed start by the view (see above): drops the ones it confirms or that lapsed,
  // settles the unknown ones and undoes the lend of those that did not land.
  void ConfirmStarts(const slurm::SlurmView& view, queue::Time now, CycleStats* stats);
  void ForgetStart(uint32_t job) { assumed_jobs_.erase(job); }
  bool HasAssumedStarts() const { return !assumed_jobs_.empty(); }

  // Moves a joined node to Kubernetes before a pod starts there: false if it cannot be done now.
  bool TakeNodeFor(const std::string& node, const std::string& workload, const SlurmRecords& records,
                   queue::Time now, CycleStats* stats);
  // Lends the start's nodes and starts the job there; returns the nodes lent (empty: not started).
  std::vector<std::string> StartJob(const queue::StartDecision& start, const BuiltSnapshot& built,
                                    const SlurmRecords& records, queue::Time now, std::set<std::string>* touched,
                                    CycleStats* stats);
  // Fences a joined node for `owner` now (a reservation's, Kubernetes') and remembers it.
  absl::Status Fence(const JoinedNode& node, const std::string& owner, queue::Time now);
  // The live check before a node Slurm shares becomes Kubernetes' (issue 24 H3, D1): fenced for
  // kubernetes, then Slurm asked now (Ready, not the poll) whether anything of its own runs there.
  // kClear: nothing does, the caller may write the kubernetes owner; kBusy: a Slurm job runs
  // there; kNoAnswer: Slurm did not answer the check; kNotFenced: the fence failed (not asked).
  // Writes no owner.
  enum class LiveCheck { kClear, kBusy, kNoAnswer, kNotFenced };
  LiveCheck FenceForKubernetes(const JoinedNode& node, queue::Time now);
  // Lifts onequeue's fence now (a node that stays Slurm's) and remembers it.
  absl::Status Unfence(const JoinedNode& node, queue::Time now);
  void ForgetNode(const std::string& node) { last_fence_.erase(node); }
  void Reconcile(const SlurmRecords& records, const std::set<std::string>& touched, queue::Time now,
                 CycleStats* stats);
  // `leave`: jobs whose AdminComment is another part's (issue 25: a sub-node claim, job_claim.h),
  // not written here.
  void HoldWaitingJobs(const queue::Plan& plan, const SlurmRecords& records, CycleStats* stats,
                       const std::set<uint32_t>& leave = {});

  const std::map<std::string, queue::Time>& lent_idle_since() const { return lent_idle_since_; }

 private:
  // Issue 29: an array task's own job id, split off the array's pending record (nullopt: not now).
  // Hold for one pending record. An array's records by their tasks' ids (a task's record, or the
  // pending tasks the array's record stands for), so the hold reaches no other record of the array
  // (a task onequeue released, tasks that ran) and works on 22.05, whose REST API refuses an update
  // of an array's id once a task was split off.
  absl::Status HoldRecord(const slurm::SlurmJob& job, const std::string& comment);
  // The job id StartJob writes; for an array task also which task (`split`: split off the array's
  // pending record here; otherwise the task's own record, written by its task id). nullopt: not now.
  std::optional<uint32_t> JobToStart(const queue::StartDecision& start, const SlurmRecords& records,
                                     std::optional<ArrayTask>* task, bool* split);
  std::optional<uint32_t> SplitOffArrayTask(const ArrayTask& task, const std::string& workload,
                                            const SlurmRecords& records);
  void FenceOnce(const JoinedNode& node, const std::string& owner, queue::Time now);
  // The owner marks a lend wrote (node -> owner before), each put back while it still says
  // slurm/<job>: the one undo of a lend, for a start refused at once or found not landed later.
  using LendMarks = std::vector<std::pair<std::string, NodeOwner>>;
  void UndoLend(uint32_t job, const LendMarks& marked);
  // Lent events for the nodes a start marked, once it is known to stand.
  void ReportLent(uint32_t job, const LendMarks& marked, CycleStats* stats);
  // After a successful start: the fence of each lent node lifted.
  void LiftFences(const std::vector<std::string>& k8s_nodes, const std::vector<std::string>& slurm_nodes,
                  const SlurmRecords& records, queue::Time now, std::set<std::string>* touched);
  // Returns a lent node that has been idle long enough, if Slurm says nothing runs there now.
  void ReturnIdle(const JoinedNode& node, queue::Time now, CycleStats* stats);
  // `start_unconfirmed`: a job onequeue released is not yet seen running. onequeue does not pin a
  // job to the nodes it planned (issue 29: ReqNodeList is the user's), so Slurm may start it on any
  // node lent to it: no idle lent node is returned (fenced) until every such start is confirmed.
  void ReconcileLent(const JoinedNode& node, bool busy, bool start_unconfirmed, queue::Time now,
                     CycleStats* stats);
  std::string HoldComment(const queue::WaitingStatus& w, const slurm::SlurmJob& job, const SlurmRecords& records) const;
  void Fail(const char* name) {
    if (fail_) fail_(name);
  }

  const Config& config_;
  SlurmActions* slurm_;
  ClusterActions* actions_;
  NodeOwners* owners_;
  std::function<void(const char*)> fail_;
  bool known_ = false;
  bool seen_ = false;                  // a fresh view has been seen at least once
  std::set<std::string> last_joined_;  // pool nodes joined to a Slurm node in the last fresh view
  // Jobs onequeue started that the poller does not show running yet (assume).
  enum class StartState { kReleased, kUnknown };
  struct AssumedStart {
    std::vector<std::string> nodes;
    queue::Time until = 0;
    int restarts = 0;  // the job's restart count when started: a higher one means it was requeued
    std::optional<std::pair<uint32_t, uint32_t>> array_task;  // issue 29: (array, task) it was split from
    StartState state = StartState::kReleased;
    // kUnknown (D5): when the start was asked; the first cycle after the call returned (0: none
    // yet), a view listed after which is the answer; the AdminComment a landed release wrote;
    // the marks to undo if it did not land.
    queue::Time asked_at = 0;
    queue::Time unknown_after = 0;
    std::string comment;
    LendMarks marked;
  };
  // What a view says of an assumed start (ConfirmStarts acts on it).
  enum class StartFate { kWaiting, kConfirmed, kReleased, kLapsed, kFailed };
  static StartFate FateOf(const AssumedStart& a, const slurm::SlurmView& view, uint32_t job, queue::Time listed_at,
                          queue::Time now);
  std::map<uint32_t, AssumedStart> assumed_jobs_;
  // Issue 29: the array tasks among assumed_jobs_, and the tasks of `array` planned this cycle.
  scheduler::StartedTasks StartedArrayTasks() const;
  static std::vector<ArrayTask> PendingTasksOf(uint32_t array, const SlurmRecords& records);
  std::map<std::string, queue::Time> last_pod_seen_;    // node -> last cycle a pod ran there
  std::map<std::string, queue::Time> lent_idle_since_;  // lent node -> since when no Slurm job runs there
  std::map<std::string, std::pair<std::string, queue::Time>> last_fence_;  // node -> (wanted, when asked)
  std::map<uint32_t, std::string> last_hold_;           // job -> comment last written
};

}  // namespace onequeue::scheduler

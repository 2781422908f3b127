#pragma once
// Issue 25 step 4, sub-node preemption with a Slurm job as the preemptor (docs/sharing.md, "What
// step 4 does today"), of one node or of several (a gang: every member node shared). The sibling
// of pod_mirror.h's claim: a pod preemptor claims its room with its own pending placeholder; a
// Slurm job claims it by staying held, its AdminComment naming the node(s) and the victims, while
// it counts on its node(s) in onequeue's plan. One record per job, whose
// state moves only through NextJobClaimState (the one table below); an event a state does not take
// is an error (kFailedPrecondition) and leaves the record as it is.
//
//   kPlanned --held (AdminComment "onequeue: Preempting on shared node N: victims", or
//             "... shared nodes N1,N2: victims" for a job of several nodes)--> kClaimed
//   kClaimed --every victim asked (pods evicted first, then jobs requeued)--> kWaitingForVictims
//   kWaitingForVictims --every victim gone: released through SlurmLending::StartJob--> kStarted
//   kPlanned | kClaimed | kWaitingForVictims --undo--> kUndoing --hold rewritten--> kUndone
//
// A job of several nodes claims on all of them at once with one record and one hold: its victims
// are the queue's victims on every member node, it starts only once every one of them is gone,
// and the one undo (a refusal, a timeout) releases the room on every node together.
//
// The room is held in onequeue's plan by the record (the job counts as assumed on its nodes, like a
// start not yet seen, so no pod and no other job is planned there) and in Slurm by holds: the job
// itself stays held until its victims are gone, and onequeue holds every other pending job of the
// shared partitions (SlurmLending::HoldWaitingJobs, which leaves the claimed jobs' comments alone).
// Once the victims are gone the job is started the way onequeue starts every Slurm job
// (SlurmLending::StartJob: released with a priority above any other), and Slurm starts it in the
// room. kStarted and kUndone are final: the record is dropped (kStarted: the start is SlurmLending's
// assumption until the poll shows it; kUndone: the job waits again).
//
// Undo has one path: the hold is written again with a comment that is not a claim ("onequeue:
// PreemptionUndone: ..."), so a successor does not read the claim back; the job stays held by
// onequeue. Whatever the cause: a victim refused (a PodDisruptionBudget, a job Slurm will not
// requeue), the job no longer pending, its node no longer shared, victims not gone in time.
//
// A successor rebuilds every record from Slurm's listing alone (Rebuild): a pending job held by
// onequeue whose AdminComment is a claim is kClaimed, and its victims are asked again (one that has
// left already no longer runs and is not asked twice).
//
// An array task (issue 29, "slurm/<array>_<task>") claims the same way: its pending tasks share the
// array's record, so the claim is the hold of that record (`job` is the array's id), and once the
// victims are gone SlurmLending::StartJob splits the task off and starts it, as for any task. A
// successor reads such a claim back as the array's lowest pending task's (the tasks ask the same).
//
// No I/O of its own: Slurm is reached through SlurmActions::Hold. No clock: time is an argument.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "queue/model.h"
#include "scheduler/slurm_arrays.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

class SlurmActions;

enum class JobClaimState { kPlanned, kClaimed, kWaitingForVictims, kStarted, kUndoing, kUndone };
enum class JobClaimEvent {
  kHeld,          // the job is held with the claim in its AdminComment
  kVictimsAsked,  // every victim was asked to leave
  kStarted,       // every victim gone: the job was released to start there
  kUndo,          // give up: the job waits again
  kRewritten,     // the claim is gone from the AdminComment (or the job no longer pending)
};
const char* JobClaimStateName(JobClaimState s);
const char* JobClaimEventName(JobClaimEvent e);
// ALL transitions. An event the state does not take: kFailedPrecondition naming both.
absl::StatusOr<JobClaimState> NextJobClaimState(JobClaimState from, JobClaimEvent event);
bool JobClaimFinal(JobClaimState s);

// The AdminComment of a claimed job: "onequeue: Preempting on shared node <node>: <v1>,<v2>", or
// "onequeue: Preempting on shared nodes <n1>,<n2>: <v1>,<v2>" when it claims on several nodes.
std::string JobClaimComment(const std::vector<std::string>& nodes, const std::vector<std::string>& victims);
struct ParsedJobClaim {
  std::vector<std::string> nodes;  // Kubernetes names, at least one
  std::vector<std::string> victims;
};
// The claim an AdminComment carries; nullopt if it carries none.
std::optional<ParsedJobClaim> ParseJobClaim(const std::string& admin_comment);

struct JobClaimOptions {
  // A claim whose victims have not all gone this long after they were asked is undone.
  queue::Time victims_timeout = 300;
  // After a victim refused, the same job does not claim again for this long.
  queue::Time refused_retry = 30;
};

struct JobClaimRecord {
  std::string workload;  // "slurm/<id>"
  uint32_t job = 0;
  std::vector<std::string> nodes;  // Kubernetes names of the shared nodes (one per member node)
  std::vector<std::string> victims;  // on all of them
  JobClaimState state = JobClaimState::kPlanned;
  queue::Time since = 0;
  std::string why;  // why it is undone, or what the last failed call said
};

class JobClaims {
 public:
  JobClaims(JobClaimOptions options, SlurmActions* slurm) : options_(options), slurm_(slurm) {}

  // A job the plan starts on shared nodes `nodes` (one, or each of a gang's) only by preempting
  // `victims` there: a record in kPlanned, the claim written as its hold at once (kClaimed).
  // kAlreadyExists if the job has a record; kFailedPrecondition while a refusal blocks it; the
  // hold's error (record dropped).
  absl::Status Claim(const std::string& workload, uint32_t job, const std::vector<std::string>& nodes,
                     const std::vector<std::string>& victims, queue::Time now);
  // The victims of a kClaimed record were asked: ok moves it to kWaitingForVictims; an error undoes
  // it and blocks the job's next claim for refused_retry.
  absl::Status VictimsAsked(const std::string& workload, const absl::Status& asked, queue::Time now);
  // The job was released to start (kStarted; the record is dropped).
  absl::Status Started(const std::string& workload, queue::Time now);
  // One cycle, before any claim is made: a record whose job is no longer pending (by `jobs`, the
  // poll), one of whose nodes is no longer one of `shared_nodes`, or whose victims have not left
  // within the timeout is undone; an undo whose write failed is written again; final records are dropped.
  void Advance(const slurm::SlurmView::Jobs& jobs, const std::set<std::string>& shared_nodes, queue::Time now);
  // After a restart: every record from the listing (replaces what the records held).
  void Rebuild(const slurm::SlurmView::Jobs& jobs, queue::Time now);

  // kClaimed records: their victims are to be asked.
  std::vector<const JobClaimRecord*> ToAskVictims() const;
  // kWaitingForVictims records none of whose victims is `running` any more.
  std::vector<const JobClaimRecord*> ReadyToStart(
      const std::function<bool(const JobClaimRecord&, const std::string& victim)>& holds_room) const;
  // The claims that hold a room in the plan: job id -> its nodes (kPlanned, kClaimed, kWaitingForVictims).
  // Not an array task's claim: see HoldingTasks.
  std::map<uint32_t, std::vector<std::string>> Holding() const;
  // The same for array tasks' claims ("slurm/<array>_<task>", its hold on the array's pending
  // record): (array, task) -> its node. The task counts on its node as one started, not planned
  // again from the array's record (SlurmWorldOptions::started_tasks); the rest of the array waits.
  std::map<ArrayTask, std::vector<std::string>> HoldingTasks() const;
  // Jobs whose AdminComment is the claim's or a refusal's (records, refusals): HoldWaitingJobs
  // leaves them alone.
  std::set<uint32_t> CommentsOwned(queue::Time now) const;
  const std::string* Refused(const std::string& workload, queue::Time now) const;

  const std::map<std::string, JobClaimRecord>& records() const { return records_; }
  const JobClaimRecord* Find(const std::string& workload) const;

 private:
  // The one way a record changes state; an illegal event is logged and returned.
  absl::Status Move(JobClaimRecord& r, JobClaimEvent event, queue::Time now);
  // kUndo, then the hold rewritten (kRewritten); a failed write is retried by Advance.
  void UndoRecord(JobClaimRecord& r, const std::string& why, bool pending, queue::Time now);
  void Rewrite(JobClaimRecord& r, bool pending, queue::Time now);

  JobClaimOptions options_;
  SlurmActions* slurm_;
  std::map<std::string, JobClaimRecord> records_;  // by workload id
  struct Refusal {
    queue::Time until = 0;
    uint32_t job = 0;
    std::string why;
  };
  std::map<std::string, Refusal> refused_;  // by workload id
};

}  // namespace onequeue::scheduler

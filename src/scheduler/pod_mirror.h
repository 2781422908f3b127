#pragma once
// Issue 25, docs/sharing.md step 3: a pod on a shared node is mirrored in Slurm by a pod
// placeholder, a Slurm job of exactly the pod's size pinned to the node, so that Slurm's own
// scheduler never starts a job into what the pod holds. One record per pod (by UID), whose state
// moves only through NextMirrorState (the one table below); an event a state does not take is an
// error (kFailedPrecondition) and leaves the record as it is.
//
//   kPlanned --submitted--> kPlaceholderPending --poll: RUNNING on the node--> kPlaceholderRunning
//   kPlaceholderRunning --pod bound--> kBound --pod gone--> kEnding --cancelled--> kDone
//   kBound --placeholder lost (cancelled, TIMEOUT, requeued)--> kUnmirrored --submitted-->
//       kRemirrorPending --RUNNING on the node--> kBound   (kRemirrorPending --lost--> kUnmirrored)
//   kUnmirrored | kRemirrorPending --pod gone--> kEnding
//   kPlanned | kPlaceholderPending | kPlaceholderRunning --undo--> kUndoing --cancelled--> kUndone
//   kPlaceholderPending --pod found bound there, placeholder still pending--> kRemirrorPending
//       (a bind that landed before the poll saw the placeholder run, or a pod bound by someone
//       else: the pod runs, so it is never undone; it waits for its placeholder as a re-made one does)
//
// Step 4, sub-node preemption (docs/sharing.md section 4): a pod the plan starts on a shared node
// only by preempting there claims its room first, then the victims are asked to leave:
//   kPlanned --claim submitted (placeholder pending, pinned, victims in its comment)--> kClaimed
//   kClaimed --every victim asked (requeued, cancelled, evicted)--> kWaitingForVictims
//   kClaimed | kWaitingForVictims --RUNNING on the node--> kPlaceholderRunning (then as above)
//   kClaimed | kWaitingForVictims --undo--> kUndoing (a victim refused, the pod gone, timeout)
//
// The claim step (issue 25 DRA, gpus: dra nodes only; docs/sharing.md section 5): the pod's
// ResourceClaims are allocated to the devices of the placeholder's GPU indices before the bind:
//   kPlaceholderRunning --claims written (each as NextClaimStep: written, or found written)-->
//       kClaimWritten --pod bound--> kBound;  kClaimWritten --undo--> kUndoing (as above)
// The claims are the durable record of the step: a successor rebuilds kPlaceholderRunning and finds
// them written (NextClaimStep kBind). A claim reserved for the pod and not as the placeholder's
// indices ask (the record undone, the placeholder gone) is cleared by the claim step, never here.
//
// A submit that timed out (kDeadlineExceeded: slurmrestd hung, the job may have landed) is not
// undone at once: the placeholder may stand in Slurm, pending, and for a claim name its victims.
//   kPlanned --submit timed out--> kSubmitUnknown (the pod holds its place on the node, and a
//       claim counts as standing: its pod is no victim)
//   kSubmitUnknown --the listing shows onequeue-pod-<uid>--> kPlaceholderPending | kClaimed
//   kSubmitUnknown --undo (a listing taken after the call returned does not show it)--> kUndoing
// The pending placeholder is the claim in Slurm (when a victim leaves, Slurm gives the room to
// it); the record is the claim in onequeue's plan (the pod counts on the node). A successor reads
// the victims back from the placeholder's comment and asks them again (a victim that left already
// is not asked twice: it no longer runs).
//
// kDone and kUndone are final: the record is dropped (kUndone: the pod waits again). Undo has one
// path: cancel the placeholder (if one was submitted), whatever the cause (submit refused, the
// placeholder not started in time or lost before the bind, the pod deleted or bound elsewhere,
// the bind failed, the plan no longer places the pod there).
//
// A placeholder counts as onequeue's only when Slurm says onequeue's Slurm user submitted it
// (issue 24 M2); it names its pod in its job name (onequeue-pod-<uid>) and comment
// ("onequeue: pod <namespace>/<name> <uid>"), so a successor rebuilds every record from the two
// listings alone (Rebuild): a placeholder whose pod is gone is cancelled; a pod bound on a shared
// node without a running placeholder gets a new one.
//
// No I/O of its own: Slurm is reached through SlurmActions (SubmitPodPlaceholder, Cancel), and the
// two listings are arguments. No clock: time is an argument.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "queue/model.h"
#include "slurm_bridge/model.h"
#include "slurm_bridge/ownership.h"

namespace onequeue::scheduler {

class SlurmActions;

enum class MirrorState {
  kPlanned,
  kPlaceholderPending,
  kPlaceholderRunning,
  kBound,
  kUnmirrored,       // bound, its placeholder lost: a new one is to be submitted
  kRemirrorPending,  // bound, a new placeholder submitted, not seen running yet
  kEnding,
  kDone,
  kUndoing,
  kUndone,
  kClaimed,            // a preemptor's placeholder submitted (pending); its victims not all asked
  kWaitingForVictims,  // every victim asked; the placeholder pending until they have left
  kSubmitUnknown,      // the submit timed out: the placeholder may have landed (a claim counts as standing)
  kClaimWritten,       // gpus: dra: the pod's ResourceClaims are allocated to the placeholder's GPU indices
};
enum class MirrorEvent {
  kSubmitted,        // the placeholder was accepted by Slurm (it has a job id)
  kRunningSeen,      // the poll shows the placeholder RUNNING on the pod's node
  kPodBound,         // the pod's binding landed on that node
  kPlaceholderLost,  // the placeholder is gone or no longer runs (after the bind)
  kPodGone,          // the pod ended or was deleted (after the bind)
  kCancelled,        // the placeholder is cancelled (or was never submitted)
  kUndo,             // before the bind: give up, the pod waits again
  kClaimSubmitted,   // a preemptor's placeholder was accepted by Slurm (pending behind its victims)
  kVictimsAsked,     // every victim of the preemptor was asked to leave
  kBoundWhilePending,  // the pod is found bound on the node while its placeholder is still pending
  kSubmitTimedOut,   // the submit ended in kDeadlineExceeded: it may or may not have landed
  kClaimWritten,     // gpus: dra: every claim of the pod is allocated as the placeholder's indices ask
};
const char* MirrorStateName(MirrorState s);
const char* MirrorEventName(MirrorEvent e);
// ALL transitions. An event the state does not take: kFailedPrecondition naming both.
absl::StatusOr<MirrorState> NextMirrorState(MirrorState from, MirrorEvent event);
// Final states: the record is dropped.
bool MirrorFinal(MirrorState s);

// What a placeholder asks of Slurm: the pod's requests in Slurm's units.
struct MirrorSize {
  uint32_t cpus = 1;             // whole CPUs, rounded up from the pod's millicores (at least 1)
  int64_t memory_mb = 0;         // rounded up from bytes; 0 = the partition's default
  std::map<std::string, int64_t> gres;  // Slurm GRES name ("gpu") -> count
  friend bool operator==(const MirrorSize&, const MirrorSize&) = default;
};

// The pod as the Kubernetes listing shows it.
struct MirroredPod {
  std::string uid;
  std::string key;        // namespace/name
  std::string node;       // Kubernetes node it is bound to; "" while pending
  MirrorSize size;
  // Issue 25 tenancy: the Slurm account its placeholder is submitted under (its tenant's first
  // account, PlaceholderAccountOf); "" = onequeue's user's default.
  std::string account;
};

// A shared pool node, both names, and the shared partition its placeholders go to.
struct MirrorNode {
  std::string node;        // Kubernetes name
  std::string slurm_node;  // Slurm name
  std::string partition;   // the node's shared partition
};

inline constexpr char kPodPlaceholderPrefix[] = "onequeue-pod-";
// The reason of the Warning event on a pod whose placeholder was lost and not made again.
inline constexpr char kMirrorLostReason[] = "MirrorLost";
std::string PodPlaceholderName(const std::string& uid);
// The submission of a placeholder for `pod` on `node`: pinned (nodelist, one node), in the node's
// shared partition, the pod's size, UNLIMITED (or `time_limit_minutes`), requeue, tagged.
// A preemptor's placeholder (step 4) names its victims in the comment: " preempting a,b".
slurm::JobSubmission PodPlaceholderSubmission(const MirroredPod& pod, const MirrorNode& node,
                                              uint32_t time_limit_minutes,
                                              const std::vector<std::string>& victims = {});
// The victims a preemptor's placeholder names in its comment (" preempting a,b"); empty if none.
std::vector<std::string> ClaimVictims(const std::string& comment);
// The UID of the pod a job mirrors, when it is one of onequeue's pod placeholders (its name, and
// submitted by onequeue's Slurm user); nullopt otherwise.
std::optional<std::string> MirroredUid(const slurm::SlurmJob& job, const slurm::SlurmIdentity& identity);

struct PodMirrorOptions {
  slurm::SlurmIdentity identity{"slurm", ""};
  // A placeholder that has not started this long after it was submitted is undone (before the
  // bind) or reported (a re-mirror after it).
  queue::Time pending_timeout = 60;
  // A preemptor's claim whose placeholder has not started this long after its victims were asked
  // is undone (a victim that does not leave: a long grace, a stuck node).
  queue::Time victims_timeout = 300;
  // After a victim refused (a PodDisruptionBudget, a job Slurm will not requeue), the same pod does
  // not claim again for this long.
  queue::Time refused_retry = 30;
  uint32_t time_limit_minutes = slurm::kTimeLimitUnlimited;
  // Test hook (the daemon's Failpoint): "mirror-after-pod-end", after a bound pod's end is seen
  // and before its placeholder is cancelled.
  std::function<void(const char*)> failpoint;
};

struct PodMirrorRecord {
  MirroredPod pod;
  MirrorNode node;
  MirrorState state = MirrorState::kPlanned;
  std::optional<uint32_t> job;  // the placeholder, once submitted
  queue::Time submitted_at = 0;  // by this process (0: read from a listing)
  queue::Time since = 0;        // when the record entered its state
  std::string why;              // why it is undone, or what the last failed call said
  std::vector<std::string> victims;  // a preemptor's (step 4): the workloads asked to leave
  bool lost_reported = false;   // this loss of its placeholder is reported (cleared when mirrored again)
  // kSubmitUnknown: the time of the first cycle after the timed-out submit returned; a listing
  // taken after it is the answer (0: not known yet).
  queue::Time unknown_after = 0;
};

// Issue 25 C1: the placeholder of a record in this state may stand in Slurm, pending, as the pod's
// claim when `victims` is not empty (kClaimed, kWaitingForVictims, and kSubmitUnknown until a
// listing says otherwise): its pod is never another preemptor's victim meanwhile.
bool MirrorClaimStands(const PodMirrorRecord& r);

class PodMirrors {
 public:
  PodMirrors(PodMirrorOptions options, SlurmActions* slurm) : options_(std::move(options)), slurm_(slurm) {}

  // A pod the plan places on a shared node: a record in kPlanned and its placeholder submitted at
  // once (kPlaceholderPending; a refused submit is undone). kAlreadyExists if the pod has a record.
  absl::Status Plan(const MirroredPod& pod, const MirrorNode& node, queue::Time now);

  // One cycle: moves every record by the two listings (the poll's jobs, the pods by UID), submits
  // and cancels what its state asks, and drops final records.
  // `listed_at`: when the jobs were listed (the poll); a placeholder submitted since is not in it
  // yet and is not taken for gone.
  void Advance(const std::vector<slurm::SlurmJob>& jobs, const std::map<std::string, MirroredPod>& pods,
               queue::Time now, queue::Time listed_at = std::numeric_limits<queue::Time>::max());
  // Step 4: a pod the plan starts on a shared node by preempting `victims` there: a record in
  // kPlanned, its placeholder submitted at once (kClaimed, pending: the claim), the victims named
  // in its comment. The caller then asks the victims and says how it went (VictimsAsked).
  // kAlreadyExists if the pod has a record; kFailedPrecondition while a refusal blocks it.
  absl::Status Claim(const MirroredPod& pod, const MirrorNode& node, const std::vector<std::string>& victims,
                     queue::Time now);
  // The victims of a kClaimed record were asked: ok moves it to kWaitingForVictims; an error (a
  // refusal, a failed call) undoes it (one path: the placeholder cancelled) and blocks the pod's
  // next claim for refused_retry.
  absl::Status VictimsAsked(const std::string& uid, const absl::Status& asked, queue::Time now);
  // Records whose victims are to be asked (kClaimed: just claimed, or rebuilt after a restart).
  std::vector<const PodMirrorRecord*> ToAskVictims() const;
  // Why the pod may not claim now (a victim refused lately); null if it may.
  const std::string* Refused(const std::string& uid, queue::Time now) const;
  // The same by pod key, for its waiting report (a refusal is forgotten by Advance once over).
  const std::string* RefusedPod(const std::string& key) const;

  // gpus: dra: the pod's claims are written as its placeholder's indices ask (kClaimWritten).
  absl::Status ClaimWritten(const std::string& uid, queue::Time now);
  // The pod's binding landed (kPodBound) or failed (undo).
  absl::Status Bound(const std::string& uid, queue::Time now);
  absl::Status BindFailed(const std::string& uid, const std::string& why, queue::Time now);
  // Before the bind: the plan no longer places the pod on its record's node.
  absl::Status Undo(const std::string& uid, const std::string& why, queue::Time now);

  // After a restart: every record from the two listings. `shared_nodes`: the shared pool nodes by
  // Kubernetes name. Replaces what the records held; then Advance acts on them.
  void Rebuild(const std::vector<slurm::SlurmJob>& jobs, const std::map<std::string, MirroredPod>& pods,
               const std::map<std::string, MirrorNode>& shared_nodes, queue::Time now);
  // Pods bound on a shared node without a record (bound by another process, a bind that landed
  // after its record was undone): a record in kUnmirrored each, so Advance gives it a placeholder.
  void AdoptUnmirrored(const std::map<std::string, MirroredPod>& pods,
                       const std::map<std::string, MirrorNode>& shared_nodes, queue::Time now);

  const std::map<std::string, PodMirrorRecord>& records() const { return records_; }
  const PodMirrorRecord* Find(const std::string& uid) const;
  // Pods whose placeholder runs (kPlaceholderRunning) or whose claims are written too
  // (kClaimWritten): bound now, except on a gpus: dra node before the claim step (the loop's).
  std::vector<const PodMirrorRecord*> ReadyToBind() const;
  // Bound pods whose re-made placeholder has not started within the timeout (to be reported).
  std::vector<const PodMirrorRecord*> Lost(queue::Time now) const;
  // The loss of the pod's placeholder was reported (until it is mirrored again).
  void MarkReported(const std::string& uid);
  // The placeholder job ids of the records (a placeholder is not a Slurm workload: its pod is).
  std::map<uint32_t, std::string> PlaceholderJobs() const;

 private:
  // The one way a record changes state; an illegal event is logged and returned.
  absl::Status Move(PodMirrorRecord& r, MirrorEvent event, queue::Time now);
  void Submit(PodMirrorRecord& r, queue::Time now);
  // Cancels the placeholder (if any) and moves on kCancelled; a failed cancel is retried next cycle.
  void CancelPlaceholder(PodMirrorRecord& r, queue::Time now);
  // A new record for `pod` (a claim when `victims` is not empty), its placeholder submitted;
  // the record is dropped again when the submit fails.
  absl::Status Open(const MirroredPod& pod, const MirrorNode& node, const std::vector<std::string>& victims,
                    queue::Time now);
  void UndoRecord(PodMirrorRecord& r, const std::string& why, queue::Time now);
  // kSubmitUnknown by the listing: the placeholder found (by its name) is taken as submitted; not
  // in a listing taken after the call returned, the record is undone.
  void AdvanceUnknown(PodMirrorRecord& r, const std::vector<slurm::SlurmJob>& jobs, const MirroredPod* pod,
                      queue::Time now, queue::Time listed_at);
  // A preemptor's claim (kClaimed, kWaitingForVictims) by the listings.
  void AdvanceClaim(PodMirrorRecord& r, const MirroredPod* pod, bool running_there, bool pending, bool unseen,
                    queue::Time now);
  // `unseen`: the placeholder was submitted after the listing was taken (not in it yet).
  void AdvanceOne(PodMirrorRecord& r, const slurm::SlurmJob* job, const MirroredPod* pod, bool unseen,
                  queue::Time now);
  // After the bind: the pod is gone (or bound elsewhere); its placeholder is cancelled.
  void EndMirror(PodMirrorRecord& r, queue::Time now);

  PodMirrorOptions options_;
  SlurmActions* slurm_;
  std::map<std::string, PodMirrorRecord> records_;  // by pod UID
  struct Refusal {
    queue::Time until = 0;
    std::string why;
    std::string key;  // the pod's namespace/name
  };
  std::map<std::string, Refusal> refused_;  // by pod UID: no claim before `until`
};

}  // namespace onequeue::scheduler

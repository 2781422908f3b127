#include "scheduler/pod_mirror.h"

#include <algorithm>
#include <array>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "scheduler/scheduling_loop.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {

const char* MirrorStateName(MirrorState s) {
  switch (s) {
    case MirrorState::kPlanned: return "Planned";
    case MirrorState::kPlaceholderPending: return "PlaceholderPending";
    case MirrorState::kPlaceholderRunning: return "PlaceholderRunning";
    case MirrorState::kBound: return "Bound";
    case MirrorState::kUnmirrored: return "Unmirrored";
    case MirrorState::kRemirrorPending: return "RemirrorPending";
    case MirrorState::kEnding: return "Ending";
    case MirrorState::kDone: return "Done";
    case MirrorState::kUndoing: return "Undoing";
    case MirrorState::kUndone: return "Undone";
    case MirrorState::kClaimed: return "Claimed";
    case MirrorState::kWaitingForVictims: return "WaitingForVictims";
    case MirrorState::kSubmitUnknown: return "SubmitUnknown";
    case MirrorState::kClaimWritten: return "ClaimWritten";
  }
  return "?";
}

const char* MirrorEventName(MirrorEvent e) {
  switch (e) {
    case MirrorEvent::kSubmitted: return "submitted";
    case MirrorEvent::kRunningSeen: return "running-seen";
    case MirrorEvent::kPodBound: return "pod-bound";
    case MirrorEvent::kPlaceholderLost: return "placeholder-lost";
    case MirrorEvent::kPodGone: return "pod-gone";
    case MirrorEvent::kCancelled: return "cancelled";
    case MirrorEvent::kUndo: return "undo";
    case MirrorEvent::kClaimSubmitted: return "claim-submitted";
    case MirrorEvent::kVictimsAsked: return "victims-asked";
    case MirrorEvent::kBoundWhilePending: return "bound-while-pending";
    case MirrorEvent::kSubmitTimedOut: return "submit-timed-out";
    case MirrorEvent::kClaimWritten: return "claim-written";
  }
  return "?";
}

namespace {

struct Transition {
  MirrorState from;
  MirrorEvent event;
  MirrorState to;
};

using S = MirrorState;
using E = MirrorEvent;
// The machine, whole.
constexpr std::array<Transition, 29> kTransitions = {{
    {S::kPlanned, E::kSubmitted, S::kPlaceholderPending},
    {S::kPlaceholderPending, E::kRunningSeen, S::kPlaceholderRunning},
    {S::kPlaceholderRunning, E::kPodBound, S::kBound},
    {S::kBound, E::kPodGone, S::kEnding},
    {S::kEnding, E::kCancelled, S::kDone},
    // A placeholder lost after the bind is made again.
    {S::kBound, E::kPlaceholderLost, S::kUnmirrored},
    {S::kUnmirrored, E::kSubmitted, S::kRemirrorPending},
    {S::kRemirrorPending, E::kRunningSeen, S::kBound},
    {S::kRemirrorPending, E::kPlaceholderLost, S::kUnmirrored},
    {S::kUnmirrored, E::kPodGone, S::kEnding},
    {S::kRemirrorPending, E::kPodGone, S::kEnding},
    // Bound while its placeholder is still pending: the pod runs; it waits for the placeholder as a
    // bound pod whose placeholder was re-made does (kRemirrorPending: running -> kBound, lost ->
    // submitted again, reported if it does not run in time).
    {S::kPlaceholderPending, E::kBoundWhilePending, S::kRemirrorPending},
    // Undo: every state before the bind, one path.
    {S::kPlanned, E::kUndo, S::kUndoing},
    {S::kPlaceholderPending, E::kUndo, S::kUndoing},
    {S::kPlaceholderRunning, E::kUndo, S::kUndoing},
    {S::kUndoing, E::kCancelled, S::kUndone},
    // Step 4: a preemptor claims its room (the placeholder pending), then its victims are asked.
    {S::kPlanned, E::kClaimSubmitted, S::kClaimed},
    {S::kClaimed, E::kVictimsAsked, S::kWaitingForVictims},
    {S::kClaimed, E::kRunningSeen, S::kPlaceholderRunning},
    {S::kWaitingForVictims, E::kRunningSeen, S::kPlaceholderRunning},
    {S::kClaimed, E::kUndo, S::kUndoing},
    {S::kWaitingForVictims, E::kUndo, S::kUndoing},
    // C1: a submit that timed out may have landed; the listing says which (found: as submitted).
    {S::kPlanned, E::kSubmitTimedOut, S::kSubmitUnknown},
    {S::kSubmitUnknown, E::kSubmitted, S::kPlaceholderPending},
    {S::kSubmitUnknown, E::kClaimSubmitted, S::kClaimed},
    {S::kSubmitUnknown, E::kUndo, S::kUndoing},
    // gpus: dra: the claim step between the placeholder's start and the bind.
    {S::kPlaceholderRunning, E::kClaimWritten, S::kClaimWritten},
    {S::kClaimWritten, E::kPodBound, S::kBound},
    {S::kClaimWritten, E::kUndo, S::kUndoing},
}};

constexpr char kPreempting[] = " preempting ";

constexpr int64_t kMiB = 1024 * 1024;

}  // namespace

absl::StatusOr<MirrorState> NextMirrorState(MirrorState from, MirrorEvent event) {
  for (const Transition& t : kTransitions) {
    if (t.from == from && t.event == event) return t.to;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("pod mirror: ", MirrorStateName(from), " does not take ", MirrorEventName(event)));
}

bool MirrorFinal(MirrorState s) { return s == MirrorState::kDone || s == MirrorState::kUndone; }

bool MirrorClaimStands(const PodMirrorRecord& r) {
  return r.state == MirrorState::kClaimed || r.state == MirrorState::kWaitingForVictims ||
         (r.state == MirrorState::kSubmitUnknown && !r.victims.empty());
}

std::string PodPlaceholderName(const std::string& uid) { return absl::StrCat(kPodPlaceholderPrefix, uid); }

slurm::JobSubmission PodPlaceholderSubmission(const MirroredPod& pod, const MirrorNode& node,
                                              uint32_t time_limit_minutes, const std::vector<std::string>& victims) {
  slurm::JobSubmission job;
  job.name = PodPlaceholderName(pod.uid);
  job.script = "#!/bin/sh\nexec sleep 100000000\n";
  job.partition = node.partition;
  job.nodelist = node.slurm_node;
  job.node_count = 1;
  job.cpus = std::max<uint32_t>(1, pod.size.cpus);
  job.memory_per_node_mb = pod.size.memory_mb;
  job.gres_per_node = pod.size.gres;
  job.account = pod.account;  // issue 25 tenancy: under the pod's tenant's account
  job.comment = absl::StrCat(slurm::kOwnerTagPrefix, " pod ", pod.key, " ", pod.uid);
  if (!victims.empty()) absl::StrAppend(&job.comment, kPreempting, absl::StrJoin(victims, ","));
  job.time_limit_minutes = time_limit_minutes;
  job.requeue = true;
  return job;
}

std::vector<std::string> ClaimVictims(const std::string& comment) {
  const size_t at = comment.find(kPreempting);
  if (at == std::string::npos) return {};
  return absl::StrSplit(comment.substr(at + sizeof(kPreempting) - 1), ',', absl::SkipEmpty());
}

std::optional<std::string> MirroredUid(const slurm::SlurmJob& job, const slurm::SlurmIdentity& identity) {
  if (!absl::StartsWith(job.name, kPodPlaceholderPrefix) || !identity.Submitted(job.user)) return std::nullopt;
  std::string uid = job.name.substr(sizeof(kPodPlaceholderPrefix) - 1);
  if (uid.empty()) return std::nullopt;
  return uid;
}

absl::Status PodMirrors::Move(PodMirrorRecord& r, MirrorEvent event, queue::Time now) {
  absl::StatusOr<MirrorState> to = NextMirrorState(r.state, event);
  if (!to.ok()) {
    spdlog::error("pod {}: {}", r.pod.key, std::string(to.status().message()));
    return to.status();
  }
  if (*to != r.state) r.since = now;
  // A placeholder lost again (a re-made one gone before it ran) is a loss of its own: reported
  // once more (issue 24 F3); mirrored again, the next loss is new too.
  if (*to == MirrorState::kBound || event == MirrorEvent::kPlaceholderLost) r.lost_reported = false;
  r.state = *to;
  return absl::OkStatus();
}

void PodMirrors::EndMirror(PodMirrorRecord& r, queue::Time now) {
  (void)Move(r, MirrorEvent::kPodGone, now);
  if (options_.failpoint) options_.failpoint("mirror-after-pod-end");
  CancelPlaceholder(r, now);
}

void PodMirrors::MarkReported(const std::string& uid) {
  if (auto it = records_.find(uid); it != records_.end()) it->second.lost_reported = true;
}

absl::Status PodMirrors::Plan(const MirroredPod& pod, const MirrorNode& node, queue::Time now) {
  if (records_.count(pod.uid)) return absl::AlreadyExistsError(absl::StrCat("pod ", pod.key, " is mirrored already"));
  return Open(pod, node, {}, now);
}

absl::Status PodMirrors::Open(const MirroredPod& pod, const MirrorNode& node, const std::vector<std::string>& victims,
                              queue::Time now) {
  PodMirrorRecord& r = records_[pod.uid];
  r.pod = pod;
  r.node = node;
  r.victims = victims;
  r.state = MirrorState::kPlanned;
  r.since = now;
  Submit(r, now);
  if (MirrorFinal(r.state)) {
    const std::string why = r.why;
    records_.erase(pod.uid);
    return absl::UnavailableError(why);
  }
  return absl::OkStatus();
}

void PodMirrors::Submit(PodMirrorRecord& r, queue::Time now) {
  const bool claim = r.state == MirrorState::kPlanned && !r.victims.empty();
  absl::StatusOr<uint32_t> id = slurm_->SubmitPodPlaceholder(
      PodPlaceholderSubmission(r.pod, r.node, options_.time_limit_minutes, claim ? r.victims : std::vector<std::string>{}));
  if (!id.ok()) {
    r.why = absl::StrCat("placeholder not submitted: ", id.status().message());
    if (r.state == MirrorState::kPlanned && absl::IsDeadlineExceeded(id.status())) {
      // It may have landed (C1): known by the listing, a claim standing until then.
      r.submitted_at = now;
      r.unknown_after = 0;
      (void)Move(r, MirrorEvent::kSubmitTimedOut, now);
      return;
    }
    if (r.state == MirrorState::kPlanned) UndoRecord(r, r.why, now);
    return;  // kUnmirrored: submitted again next cycle
  }
  r.job = *id;
  r.submitted_at = now;
  (void)Move(r, claim ? MirrorEvent::kClaimSubmitted : MirrorEvent::kSubmitted, now);
}

void PodMirrors::CancelPlaceholder(PodMirrorRecord& r, queue::Time now) {
  if (r.job) {
    if (absl::Status s = slurm_->Cancel(*r.job); !s.ok()) {
      r.why = absl::StrCat("placeholder ", *r.job, " not cancelled yet: ", s.message());
      return;  // kEnding / kUndoing: cancelled again next cycle
    }
    r.job.reset();
  }
  (void)Move(r, MirrorEvent::kCancelled, now);
}

void PodMirrors::UndoRecord(PodMirrorRecord& r, const std::string& why, queue::Time now) {
  if (!Move(r, MirrorEvent::kUndo, now).ok()) return;
  r.why = why;
  CancelPlaceholder(r, now);
}

absl::Status PodMirrors::Claim(const MirroredPod& pod, const MirrorNode& node, const std::vector<std::string>& victims,
                               queue::Time now) {
  if (victims.empty()) return absl::InvalidArgumentError(absl::StrCat("pod ", pod.key, ": a claim without victims"));
  if (const std::string* why = Refused(pod.uid, now)) return absl::FailedPreconditionError(*why);
  if (records_.count(pod.uid)) return absl::AlreadyExistsError(absl::StrCat("pod ", pod.key, " is mirrored already"));
  return Open(pod, node, victims, now);
}

absl::Status PodMirrors::VictimsAsked(const std::string& uid, const absl::Status& asked, queue::Time now) {
  auto it = records_.find(uid);
  if (it == records_.end()) return absl::NotFoundError(absl::StrCat("pod ", uid, " has no mirror"));
  PodMirrorRecord& r = it->second;
  if (asked.ok()) return Move(r, MirrorEvent::kVictimsAsked, now);
  const std::string why = absl::StrCat("preemption on shared node ", r.node.node, " undone: ", asked.message());
  refused_[uid] = Refusal{now + options_.refused_retry, why, r.pod.key};
  UndoRecord(r, why, now);
  if (MirrorFinal(r.state)) records_.erase(it);
  return absl::OkStatus();
}

std::vector<const PodMirrorRecord*> PodMirrors::ToAskVictims() const {
  std::vector<const PodMirrorRecord*> out;
  for (const auto& [uid, r] : records_) {
    if (r.state == MirrorState::kClaimed) out.push_back(&r);
  }
  return out;
}

const std::string* PodMirrors::Refused(const std::string& uid, queue::Time now) const {
  auto it = refused_.find(uid);
  return it == refused_.end() || now >= it->second.until ? nullptr : &it->second.why;
}

const std::string* PodMirrors::RefusedPod(const std::string& key) const {
  for (const auto& [uid, refusal] : refused_) {
    if (refusal.key == key) return &refusal.why;
  }
  return nullptr;
}

absl::Status PodMirrors::Bound(const std::string& uid, queue::Time now) {
  auto it = records_.find(uid);
  if (it == records_.end()) return absl::NotFoundError(absl::StrCat("pod ", uid, " has no mirror"));
  return Move(it->second, MirrorEvent::kPodBound, now);
}

absl::Status PodMirrors::ClaimWritten(const std::string& uid, queue::Time now) {
  auto it = records_.find(uid);
  if (it == records_.end()) return absl::NotFoundError(absl::StrCat("pod ", uid, " has no mirror"));
  return Move(it->second, MirrorEvent::kClaimWritten, now);
}

absl::Status PodMirrors::BindFailed(const std::string& uid, const std::string& why, queue::Time now) {
  return Undo(uid, absl::StrCat("binding failed: ", why), now);
}

absl::Status PodMirrors::Undo(const std::string& uid, const std::string& why, queue::Time now) {
  auto it = records_.find(uid);
  if (it == records_.end()) return absl::NotFoundError(absl::StrCat("pod ", uid, " has no mirror"));
  PodMirrorRecord& r = it->second;
  absl::StatusOr<MirrorState> to = NextMirrorState(r.state, MirrorEvent::kUndo);
  if (!to.ok()) return to.status();
  UndoRecord(r, why, now);
  if (MirrorFinal(r.state)) records_.erase(it);
  return absl::OkStatus();
}

void PodMirrors::AdvanceClaim(PodMirrorRecord& r, const MirroredPod* pod, bool running_there, bool pending,
                              bool unseen, queue::Time now) {
  const bool pod_here = pod != nullptr && pod->node == r.node.node;
  if (pod == nullptr) return UndoRecord(r, "the pod is gone", now);
  if (!pod->node.empty() && !pod_here) return UndoRecord(r, "the pod is bound elsewhere", now);
  if (running_there) {
    (void)Move(r, MirrorEvent::kRunningSeen, now);  // the victims have left: Slurm gave it the room
    if (pod_here) (void)Move(r, MirrorEvent::kPodBound, now);
    return;
  }
  if (unseen) return;  // the poll predates the submit
  if (!pending) return UndoRecord(r, "the claim's placeholder is gone or runs elsewhere", now);
  if (r.state == MirrorState::kWaitingForVictims && now - r.since >= options_.victims_timeout) {
    return UndoRecord(r, absl::StrCat("the victims have not left in ", options_.victims_timeout, " s"), now);
  }
  // kClaimed: the loop asks the victims (ToAskVictims).
}

void PodMirrors::AdvanceUnknown(PodMirrorRecord& r, const std::vector<slurm::SlurmJob>& jobs, const MirroredPod* pod,
                                queue::Time now, queue::Time listed_at) {
  const std::string uid = r.pod.uid;
  const slurm::SlurmJob* found = nullptr;
  for (const slurm::SlurmJob& j : jobs) {
    if ((j.state == slurm::JobState::kPending || j.state == slurm::JobState::kRunning) &&
        MirroredUid(j, options_.identity) == uid) {
      found = &j;
      break;
    }
  }
  if (found != nullptr) {
    r.job = found->job_id;
    (void)Move(r, r.victims.empty() ? MirrorEvent::kSubmitted : MirrorEvent::kClaimSubmitted, now);
    return AdvanceOne(r, found, pod, /*unseen=*/false, now);  // then as any submitted record
  }
  if (r.unknown_after == 0) {
    if (now > r.submitted_at) r.unknown_after = now;  // this cycle began after the call returned
    return;
  }
  if (listed_at <= r.unknown_after) return;  // the listing may predate the landing
  UndoRecord(r, absl::StrCat(r.why, "; not in Slurm's listing since"), now);
}

void PodMirrors::AdvanceOne(PodMirrorRecord& r, const slurm::SlurmJob* job, const MirroredPod* pod, bool unseen,
                            queue::Time now) {
  const bool running_there = job != nullptr && job->state == slurm::JobState::kRunning &&
                             std::find(job->nodes.begin(), job->nodes.end(), r.node.slurm_node) != job->nodes.end();
  const bool pending = job != nullptr && job->state == slurm::JobState::kPending;
  const bool pod_here = pod != nullptr && pod->node == r.node.node;
  const bool pod_gone = pod == nullptr;
  switch (r.state) {
    case MirrorState::kPlanned:
      return Submit(r, now);
    case MirrorState::kPlaceholderPending:
    case MirrorState::kPlaceholderRunning:
    case MirrorState::kClaimWritten:
      if (pod_gone) return UndoRecord(r, "the pod is gone", now);
      if (!pod->node.empty() && !pod_here) return UndoRecord(r, "the pod is bound elsewhere", now);
      if (running_there) {
        if (r.state == MirrorState::kPlaceholderPending) (void)Move(r, MirrorEvent::kRunningSeen, now);
        if (pod_here) (void)Move(r, MirrorEvent::kPodBound, now);  // the binding landed
        return;
      }
      if (pod_here) {
        // Bound while its placeholder does not run: a bind sent while it ran, the placeholder lost
        // since (kBound then makes a new one); never undone, the pod runs.
        if (r.state != MirrorState::kPlaceholderPending) return (void)Move(r, MirrorEvent::kPodBound, now);
        r.why = "bound before its placeholder runs";
        (void)Move(r, MirrorEvent::kBoundWhilePending, now);
        // kRemirrorPending from now on: the same placeholder, or a new one if it is gone.
        if (!unseen && !pending) AdvanceOne(r, job, pod, unseen, now);
        return;
      }
      if (unseen) return;  // the poll predates the submit
      if (!pending) return UndoRecord(r, "the placeholder is gone or runs elsewhere", now);
      if (r.state != MirrorState::kPlaceholderPending) return UndoRecord(r, "the placeholder no longer runs", now);
      if (now - r.since >= options_.pending_timeout) {
        return UndoRecord(r, absl::StrCat("Slurm has not started the placeholder in ", options_.pending_timeout, " s"),
                          now);
      }
      return;
    case MirrorState::kClaimed:
    case MirrorState::kWaitingForVictims:
      return AdvanceClaim(r, pod, running_there, pending, unseen, now);
    case MirrorState::kBound:
      if (pod_gone || !pod_here) return EndMirror(r, now);
      if (running_there) return;
      (void)Move(r, MirrorEvent::kPlaceholderLost, now);
      if (pending) {  // requeued (NODE_FAIL): the same job is the new placeholder
        (void)Move(r, MirrorEvent::kSubmitted, now);
        return;
      }
      r.job.reset();
      return Submit(r, now);
    case MirrorState::kUnmirrored:
      if (pod_gone || !pod_here) return EndMirror(r, now);
      return Submit(r, now);
    case MirrorState::kRemirrorPending:
      if (pod_gone || !pod_here) return EndMirror(r, now);
      if (running_there) {
        (void)Move(r, MirrorEvent::kRunningSeen, now);
        return;
      }
      if (unseen) return;  // the poll predates the submit
      if (!pending) {
        (void)Move(r, MirrorEvent::kPlaceholderLost, now);
        r.job.reset();
        return Submit(r, now);
      }
      return;
    case MirrorState::kEnding:
    case MirrorState::kUndoing:
      return CancelPlaceholder(r, now);
    case MirrorState::kSubmitUnknown:  // Advance: AdvanceUnknown
    case MirrorState::kDone:
    case MirrorState::kUndone: return;
  }
}

void PodMirrors::Advance(const std::vector<slurm::SlurmJob>& jobs, const std::map<std::string, MirroredPod>& pods,
                         queue::Time now, queue::Time listed_at) {
  std::erase_if(refused_, [&](const auto& e) { return now >= e.second.until; });
  std::map<uint32_t, const slurm::SlurmJob*> by_id;
  for (const slurm::SlurmJob& j : jobs) by_id[j.job_id] = &j;
  for (auto it = records_.begin(); it != records_.end();) {
    PodMirrorRecord& r = it->second;
    const slurm::SlurmJob* job = nullptr;
    if (r.job) {
      auto j = by_id.find(*r.job);
      if (j != by_id.end()) job = j->second;
    }
    auto p = pods.find(it->first);
    const bool unseen = job == nullptr && r.job && r.submitted_at != 0 && listed_at <= r.submitted_at;
    if (r.state == MirrorState::kSubmitUnknown) AdvanceUnknown(r, jobs, p == pods.end() ? nullptr : &p->second, now, listed_at);
    else AdvanceOne(r, job, p == pods.end() ? nullptr : &p->second, unseen, now);
    if (MirrorFinal(r.state)) it = records_.erase(it);
    else ++it;
  }
}

void PodMirrors::Rebuild(const std::vector<slurm::SlurmJob>& jobs, const std::map<std::string, MirroredPod>& pods,
                         const std::map<std::string, MirrorNode>& shared_nodes, queue::Time now) {
  records_.clear();
  std::map<std::string, std::string> k8s_of_slurm;
  for (const auto& [name, n] : shared_nodes) k8s_of_slurm[n.slurm_node] = name;
  // The placeholders of each pod, running ones first.
  std::map<std::string, std::vector<const slurm::SlurmJob*>> of_pod;
  for (const slurm::SlurmJob& j : jobs) {
    if (j.state != slurm::JobState::kRunning && j.state != slurm::JobState::kPending) continue;
    if (std::optional<std::string> uid = MirroredUid(j, options_.identity)) of_pod[*uid].push_back(&j);
  }
  for (auto& [uid, list] : of_pod) {
    std::stable_sort(list.begin(), list.end(), [](const slurm::SlurmJob* a, const slurm::SlurmJob* b) {
      return a->state == slurm::JobState::kRunning && b->state != slurm::JobState::kRunning;
    });
  }
  auto node_of = [&](const slurm::SlurmJob& j) -> const MirrorNode* {
    const std::vector<std::string>& names = j.nodes.empty() ? j.required_nodes : j.nodes;
    if (names.size() != 1) return nullptr;
    auto k = k8s_of_slurm.find(names.front());
    return k == k8s_of_slurm.end() ? nullptr : &shared_nodes.at(k->second);
  };
  for (const auto& [uid, list] : of_pod) {
    auto pod = pods.find(uid);
    bool kept = false;
    for (const slurm::SlurmJob* j : list) {
      const MirrorNode* node = node_of(*j);
      const bool fits = pod != pods.end() && node != nullptr && !kept &&
                        (pod->second.node.empty() || pod->second.node == node->node);
      PodMirrorRecord r;
      r.pod = pod != pods.end() ? pod->second : MirroredPod{uid, "", "", {}};
      if (node != nullptr) r.node = *node;
      r.job = j->job_id;
      r.since = now;
      const bool running = j->state == slurm::JobState::kRunning;
      if (!fits) {
        // A placeholder without its pod (or a second one, or one beside a pod bound elsewhere):
        // cancelled, under a key of its own so that the pod's record is not replaced.
        r.state = pod == pods.end() ? MirrorState::kEnding : MirrorState::kUndoing;
        records_[absl::StrCat(uid, "#", j->job_id)] = std::move(r);
        continue;
      }
      kept = true;
      r.victims = ClaimVictims(j->comment);
      if (pod->second.node.empty() && !running && !r.victims.empty()) {
        r.state = MirrorState::kClaimed;  // a preemptor's claim: its victims are asked (again)
      } else if (pod->second.node.empty()) {
        r.state = running ? MirrorState::kPlaceholderRunning : MirrorState::kPlaceholderPending;
      } else {
        r.state = running ? MirrorState::kBound : MirrorState::kRemirrorPending;
      }
      records_[uid] = std::move(r);
    }
  }
  AdoptUnmirrored(pods, shared_nodes, now);
}

void PodMirrors::AdoptUnmirrored(const std::map<std::string, MirroredPod>& pods,
                                 const std::map<std::string, MirrorNode>& shared_nodes, queue::Time now) {
  for (const auto& [uid, pod] : pods) {
    if (pod.node.empty() || records_.count(uid)) continue;
    auto node = shared_nodes.find(pod.node);
    if (node == shared_nodes.end()) continue;
    PodMirrorRecord r;
    r.pod = pod;
    r.node = node->second;
    r.state = MirrorState::kUnmirrored;
    r.since = now;
    records_[uid] = std::move(r);
  }
}

const PodMirrorRecord* PodMirrors::Find(const std::string& uid) const {
  auto it = records_.find(uid);
  return it == records_.end() ? nullptr : &it->second;
}

std::vector<const PodMirrorRecord*> PodMirrors::ReadyToBind() const {
  std::vector<const PodMirrorRecord*> out;
  for (const auto& [uid, r] : records_) {
    if (r.state == MirrorState::kPlaceholderRunning || r.state == MirrorState::kClaimWritten) out.push_back(&r);
  }
  return out;
}

std::vector<const PodMirrorRecord*> PodMirrors::Lost(queue::Time now) const {
  std::vector<const PodMirrorRecord*> out;
  for (const auto& [uid, r] : records_) {
    if ((r.state == MirrorState::kUnmirrored || r.state == MirrorState::kRemirrorPending) &&
        now - r.since >= options_.pending_timeout)
      out.push_back(&r);
  }
  return out;
}

std::map<uint32_t, std::string> PodMirrors::PlaceholderJobs() const {
  std::map<uint32_t, std::string> out;
  for (const auto& [uid, r] : records_) {
    if (r.job) out[*r.job] = r.pod.key;
  }
  return out;
}

}  // namespace onequeue::scheduler

#include "scheduler/preemption_executor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/all_answered.h"
#include "scheduler/scheduling_loop.h"
#include "slurm_bridge/adapter.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {
namespace {

// A reservation its preemptor still waiting cannot use (a gang member deleted after the
// evictions, requests that no longer fit there) is released after this long: long enough for a
// controller to make a deleted member again (the mark keeps the node meanwhile), short enough
// that no node stays reserved and idle for ever: queue.preemption.unusableReservationSeconds
// (default 60).

// Issue 24 H2: a requeue or cancel that failed for a reason that passes (slurmrestd down, a
// timeout) is asked again after 5 s, 10 s, 20 s, ... up to a minute.
constexpr queue::Time kVictimRetrySeconds = 5;
constexpr queue::Time kVictimRetryMaxSeconds = 60;
// A preemption given up because Slurm will not requeue its victim (and policy forbids cancelling
// it) is not tried again for this long: the victim runs on, and every try drains its node.
constexpr queue::Time kUnrequeueableRetrySeconds = 300;

// Whether anything runs on `node` (by name) in the snapshot.
bool RunsWork(const queue::Snapshot& s, const std::string& node) {
  for (const queue::RunningWorkload& r : s.running) {
    for (const queue::Allocation& a : r.allocations) {
      if (s.nodes[a.node].name == node) return true;
    }
  }
  return false;
}

bool IsTransient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsAborted(s) || absl::IsResourceExhausted(s);
}

}  // namespace

// Issue 25, see the header. Kept whole: a gang leaves together; the asking skips what has left.
std::vector<std::string> VictimsHoldingRoomOn(const std::vector<std::string>& victims,
                                              const std::vector<std::string>& nodes, const queue::Snapshot& snapshot) {
  std::set<queue::NodeIndex> claimed;
  for (queue::NodeIndex n = 0; n < static_cast<queue::NodeIndex>(snapshot.nodes.size()); ++n) {
    if (std::find(nodes.begin(), nodes.end(), snapshot.nodes[n].name) != nodes.end()) claimed.insert(n);
  }
  std::set<std::string_view> elsewhere;  // running, and on none of the claimed nodes
  for (const queue::RunningWorkload& w : snapshot.running) {
    if (std::find(victims.begin(), victims.end(), w.id) == victims.end()) continue;
    const bool there = std::any_of(w.allocations.begin(), w.allocations.end(),
                                   [&](const queue::Allocation& a) { return claimed.contains(a.node); });
    if (!there) elsewhere.insert(w.id);
  }
  std::vector<std::string> out;
  for (const std::string& v : victims) {
    if (!elsewhere.contains(v)) out.push_back(v);
  }
  return out;
}

const char* PreemptionStateName(PreemptionState s) {
  switch (s) {
    case PreemptionState::kReserved: return "reserved";
    case PreemptionState::kEvicting: return "evicting";
    case PreemptionState::kWaitingForVictims: return "waiting-for-victims";
    case PreemptionState::kUnusable: return "unusable";
    case PreemptionState::kBlocked: return "blocked";
    case PreemptionState::kReleased: return "released";
  }
  return "?";
}

VictimRemoval RemovalOf(const queue::RunningWorkload& victim, bool budgets_read) {
  return budgets_read && victim.disruption_budget_group.empty() ? VictimRemoval::kDelete : VictimRemoval::kEvict;
}

PreemptionState Next(PreemptionState from, PreemptionEvent event, bool victims_asked) {
  using S = PreemptionState;
  switch (event) {
    case PreemptionEvent::kRelease: return S::kReleased;
    case PreemptionEvent::kRefused: return from == S::kReleased ? from : S::kBlocked;
    case PreemptionEvent::kReserve:
      if (from == S::kReleased || from == S::kBlocked || from == S::kReserved) return S::kReserved;
      break;
    case PreemptionEvent::kVictimRetry:
      if (from == S::kReserved || from == S::kEvicting || from == S::kWaitingForVictims) return S::kEvicting;
      break;
    case PreemptionEvent::kVictimsAsked:
      if (from == S::kReserved || from == S::kEvicting) return S::kWaitingForVictims;
      break;
    case PreemptionEvent::kUnusable:
      if (from == S::kReserved || from == S::kWaitingForVictims || from == S::kUnusable) return S::kUnusable;
      break;
    case PreemptionEvent::kUsable:
      if (from == S::kUnusable) return victims_asked ? S::kWaitingForVictims : S::kReserved;
      break;
  }
  return from;
}

void PreemptionExecutor::Move(const std::string& preemptor, Preemption& p, PreemptionEvent event) {
  const PreemptionState next = Next(p.state, event, p.victims_asked);
  if (next != p.state) spdlog::debug("preemption for {}: {} -> {}", preemptor, PreemptionStateName(p.state),
                                     PreemptionStateName(next));
  p.state = next;
}

void PreemptionExecutor::Reindex() {
  by_node_.clear();
  for (const auto& [preemptor, p] : records_) {
    for (const auto& [node, before] : p.nodes) by_node_[node] = preemptor;
  }
}

void PreemptionExecutor::Recover() {
  for (const auto& [node, owner] : owners_->all()) {
    if (!owner.reserved()) continue;
    const std::string& preemptor = owner.reserved_for();
    if (auto held = by_node_.find(node); held != by_node_.end() && held->second != preemptor) {
      Preemption& other = records_[held->second];
      Release(held->second, other, node, ReleaseKind::kGone, nullptr);  // the mark says otherwise now
    }
    auto [it, made] = records_.try_emplace(preemptor);
    if (made) {
      it->second.state = PreemptionState::kReleased;
      Move(preemptor, it->second, PreemptionEvent::kReserve);
    }
    it->second.nodes.try_emplace(node, std::nullopt);
  }
  // A node deleted takes its reservation with it: nothing is written to a node that is gone.
  for (auto& [preemptor, p] : records_) {
    for (auto n = p.nodes.begin(); n != p.nodes.end();) {
      const std::string node = n->first;
      ++n;
      if (owners_->Exists(node)) continue;
      spdlog::info("node {} reserved for {} is gone; its reservation is dropped", node, preemptor);
      Release(preemptor, p, node, ReleaseKind::kGone, nullptr);
      lending_->ForgetNode(node);
    }
  }
  Reindex();
}

bool PreemptionExecutor::Release(const std::string& preemptor, Preemption& p, const std::string& node,
                                 ReleaseKind kind, const PreemptionCycle* c) {
  auto held = p.nodes.find(node);
  if (held == p.nodes.end()) return true;
  const bool still_marked = owners_->Of(node).IsReservedFor(preemptor);
  NodeOwner back = held->second.value_or(NodeOwner::Unmarked());
  if (back.reserved()) back = NodeOwner::Unmarked();
  switch (kind) {
    case ReleaseKind::kRolledBack:
      // Issue 24 D6: unmarked is no owner to go back to on a node Slurm shares (the owner before
      // unknown: read back after a crash, its victim maybe never asked): the reconcile would give
      // the fenced node to Kubernetes from the poll alone while that victim runs on. It goes back
      // as a finished reservation does, through the live check, or stays reserved until it can.
      if (still_marked && back.unmarked() && MayCarrySlurmWork(node, c)) {
        if (!ReleaseFinishedNode(node, *c)) return false;
        break;
      }
      (void)owners_->Set(node, back);  // the reconcile pass puts the Slurm side right
      break;
    case ReleaseKind::kFinished:
      if (still_marked && !ReleaseFinishedNode(node, *c)) return false;
      break;
    case ReleaseKind::kUnusable:
      if (still_marked && !owners_->Set(node, back).ok()) return false;
      Fail("release-after-write");
      break;
    case ReleaseKind::kConsumed:
    case ReleaseKind::kGone:
      break;
  }
  p.nodes.erase(held);
  p.unusable_since.erase(node);
  p.asked_on.erase(node);
  p.taken_on.erase(node);
  return true;
}

bool PreemptionExecutor::MayCarrySlurmWork(const std::string& node, const PreemptionCycle* c) const {
  return c != nullptr && slurm_ != nullptr && c->slurm.nodes.count(node) > 0;
}

bool PreemptionExecutor::ReleaseFinishedNode(const std::string& node, const PreemptionCycle& c) {
  auto joined = c.slurm.nodes.find(node);
  if (joined == c.slurm.nodes.end() || slurm_ == nullptr) {  // a node Slurm does not know loses the mark
    if (!owners_->Set(node, NodeOwner::Unmarked()).ok()) return false;
    Fail("release-after-write");
    return true;
  }
  // A node Slurm shares goes to Kubernetes only after the live check (issue 24 D1): a victim this
  // process never asked to leave (its predecessor crashed before the requeue) or a job the poll
  // had not shown may still run there.
  c.touched->insert(node);
  NodeOwner next = NodeOwner::Kubernetes();
  switch (lending_->FenceForKubernetes(joined->second, c.now)) {
    case SlurmLending::LiveCheck::kClear: break;
    case SlurmLending::LiveCheck::kBusy:
      if (slurm_->FenceRequeues()) return false;  // the fence requeues it: asked again next cycle
      // Drain: nothing will make the job leave; the node stays Slurm's, the drain lifted.
      next = NodeOwner::Parse(kOwnerSlurm);
      break;
    case SlurmLending::LiveCheck::kNoAnswer:
    case SlurmLending::LiveCheck::kNotFenced: return false;  // still reserved: tried again next cycle
  }
  if (!owners_->Set(node, next).ok()) return false;
  if (next.slurm()) {
    spdlog::info("node {}: its reservation is over but a Slurm job runs there; it stays Slurm's", node);
    (void)lending_->Unfence(joined->second, c.now);
  }
  Fail("release-after-write");
  return true;
}

bool PreemptionExecutor::HoldsNodes(std::string_view workload) const {
  auto it = records_.find(workload);
  return it != records_.end() && !it->second.nodes.empty();
}

void PreemptionExecutor::ClearNominations(const std::string& preemptor, const PreemptionCycle& c) {
  // The nomination is part of step 1: a released preemptor is nominated nowhere.
  if (auto pods = c.built.pending_pods.find(preemptor); pods != c.built.pending_pods.end()) {
    for (const auto& key : pods->second.pod_keys) (void)actions_->Nominate(key, "");
  }
}

void PreemptionExecutor::RollBack(const std::string& preemptor, const PreemptionCycle& c, queue::Time retry_at,
                                  std::string why) {
  AwaitNominations();  // its nomination is cleared below: not before it has landed
  auto it = records_.find(preemptor);
  if (it == records_.end()) return;
  Preemption& p = it->second;
  std::vector<std::string> nodes;
  for (const auto& [node, before] : p.nodes) nodes.push_back(node);
  // A node the live check could not release yet (D6) stays in the record, reserved: the record
  // is kept (blocked until `retry_at`) so that a later cycle releases it or reserves it again.
  for (const std::string& node : nodes) Release(preemptor, p, node, ReleaseKind::kRolledBack, &c);
  ClearNominations(preemptor, c);
  ++c.stats->rollbacks;
  p.retries.clear();
  p.victims_asked = false;
  p.asked_on.clear();
  if (why.empty() && p.nodes.empty()) {
    records_.erase(it);
  } else {
    Move(preemptor, p, PreemptionEvent::kRefused);
    p.retry_at = retry_at;
    p.blocked_message = std::move(why);
  }
  Reindex();
}

std::vector<const queue::PreemptDecision*> PreemptionExecutor::Reserve(
    const std::vector<const queue::PreemptDecision*>& decisions, const PreemptionCycle& c) {
  // 1. Reserve, durably, before anything is evicted: on a node Slurm shares a fence tagged for the
  // preemptor, then the node annotation. Fence first (issue 24 D3): the mark alone on a lent node
  // that is not fenced lets Slurm start a job there if this process dies between the two writes;
  // a fence alone only keeps Slurm's scheduler off, and the reconcile lifts a fence whose mark
  // never landed (SlurmLending::Reconcile). Written even when a record has it already (recovered
  // after a restart, or read back from a lagging informer after a rollback): the writes are
  // idempotent and the only proof that the marks are there.
  struct Fenced {
    const queue::PreemptDecision* d;
    std::set<std::string> names;
  };
  std::vector<Fenced> fenced;
  for (const queue::PreemptDecision* d : decisions) {
    std::set<std::string> names;
    if (!config_.test_without_reservations) {  // tests only: see Config::test_without_reservations
      for (queue::NodeIndex n : d->member_nodes) names.insert(c.built.snapshot->nodes[n].name);
    }
    auto [it, made] = records_.try_emplace(d->preemptor);
    if (made) it->second.state = PreemptionState::kReleased;
    Move(d->preemptor, it->second, PreemptionEvent::kReserve);
    if (!FenceForReservation(d->preemptor, names, NodeOwner::ReservedFor(d->preemptor), c)) continue;
    fenced.push_back({d, std::move(names)});
  }
  // Issue 26: the marks of every preemption of the cycle go out at once (one round trip for the
  // cycle, not a GET and a PATCH per node one after another); each preemption still has all its
  // marks before its nomination and its first eviction.
  std::vector<std::pair<std::string, NodeOwner>> writes;
  std::vector<NodeOwner> before;
  for (const Fenced& f : fenced) {
    for (const auto& name : f.names) {
      writes.emplace_back(name, NodeOwner::ReservedFor(f.d->preemptor));
      before.push_back(owners_->Of(name));
    }
  }
  const std::vector<absl::Status> written = owners_->SetAll(writes);
  std::vector<const queue::PreemptDecision*> reserved;
  size_t w = 0;
  for (const Fenced& f : fenced) {
    bool all = true;
    for (const auto& name : f.names) {
      if (written[w].ok()) {
        auto& slot = records_.at(f.d->preemptor).nodes[name];
        if (!before[w].reserved()) slot = before[w];
        c.touched->insert(name);
      } else {
        all = false;
      }
      ++w;
    }
    if (!all) {
      RollBack(f.d->preemptor, c, 0, "");  // the marks that landed are released
      continue;
    }
    reserved.push_back(f.d);
  }
  Reindex();
  for (const queue::PreemptDecision* d : reserved) {
    if (!d->member_nodes.empty() && !config_.test_without_reservations) Fail("preempt-after-reserve");
  }
  return reserved;
}

bool PreemptionExecutor::FenceForReservation(const std::string& preemptor, const std::set<std::string>& names,
                                             const NodeOwner& mark, const PreemptionCycle& c) {
  if (slurm_ == nullptr) return true;
  bool fenced = false;
  for (const auto& name : names) {
    auto joined = c.slurm.nodes.find(name);
    if (joined == c.slurm.nodes.end()) continue;
    absl::Status s = lending_->Fence(joined->second, mark.value(), c.now);
    if (!s.ok()) {
      spdlog::warn("preemption for {}: fencing Slurm node {} failed: {}; rolled back", preemptor,
                   joined->second.slurm_name, s.ToString());
      RollBack(preemptor, c, 0, "");
      return false;
    }
    c.touched->insert(name);
    fenced = true;
  }
  if (fenced) Fail("preempt-after-fence");
  return true;
}

PreemptionExecutor::VictimOutcome PreemptionExecutor::EvictSlurmVictim(uint32_t job, const slurm::SlurmJob& record,
                                                                      std::string* why, bool fenced,
                                                                      bool* requeued) {
  absl::Status s;
  if (record.requeue) {
    if (fenced && slurm_->FenceRequeues()) return VictimOutcome::kLeaving;  // the fence requeues it
    // The array's last task runs in the array's own record: by the array's id Slurm would requeue
    // the tasks that ran too. Without a way to name the task it is not requeued (cancel path).
    s = record.array_task_id && record.array_job_id == job ? slurm_->RequeueArrayTask(job, *record.array_task_id)
                                                           : slurm_->Requeue(job);
    if (requeued != nullptr) *requeued = s.ok();
    // Not found, or not running any more (completing, pending again): it has left. A job Slurm
    // will not requeue (not a batch job) is still running: it goes on to the cancel path below.
    if (s.ok() || absl::IsNotFound(s) || (absl::IsFailedPrecondition(s) && !slurm::IsBatchOnlyRefusal(s))) {
      return VictimOutcome::kLeaving;
    }
    if (IsTransient(s)) {
      *why = absl::StrCat("requeue of Slurm job ", job, " failed: ", s.message());
      return VictimOutcome::kRetry;
    }
  }
  // Slurm will not requeue it (requeue=false, an srun/salloc allocation, no way to requeue).
  const std::string refusal = record.requeue ? std::string(s.message()) : "requeue disabled for the job";
  if (!config_.slurm.cancel_unrequeueable) {
    *why = absl::StrCat("preemption given up: Slurm will not requeue job ", job, " (", refusal,
                        ") and slurm.cancelUnrequeueable is false; the node stays with Slurm");
    return VictimOutcome::kGiveUp;
  }
  s = slurm_->Cancel(job);
  if (s.ok() || absl::IsNotFound(s)) return VictimOutcome::kLeaving;
  *why = absl::StrCat("Slurm will not requeue job ", job, " (", refusal, ") and cancelling it failed: ", s.message());
  return IsTransient(s) ? VictimOutcome::kRetry : VictimOutcome::kGiveUp;
}

bool PreemptionExecutor::NoteVictim(const std::string& preemptor, const std::string& victim, VictimOutcome outcome,
                                    const std::string& why, const PreemptionCycle& c) {
  Preemption& p = records_.at(preemptor);
  switch (outcome) {
    case VictimOutcome::kLeaving:
      p.retries.erase(victim);
      p.slurm_victims.insert(victim);
      ++c.stats->requeued;
      return true;
    case VictimOutcome::kRetry: {
      VictimRetry& r = p.retries[victim];
      const queue::Time delay = std::min(kVictimRetryMaxSeconds, kVictimRetrySeconds << std::min(r.attempts, 4));
      ++r.attempts;
      r.retry_at = c.now + delay;
      Move(preemptor, p, PreemptionEvent::kVictimRetry);
      spdlog::warn("preemption for {}: {}; asked again in {}s", preemptor, why, delay);
      return true;
    }
    case VictimOutcome::kGiveUp:
      spdlog::warn("preemption for {}: {}", preemptor, why);
      RollBack(preemptor, c, c.now + kUnrequeueableRetrySeconds, why);
      return false;
  }
  return true;
}

void PreemptionExecutor::AskSlurmVictims(const queue::PreemptDecision& d, const PreemptionCycle& c) {
  // 2. Evict each victim once: Slurm jobs are requeued (or cancelled when they may not be).
  bool slurm_victims = false;
  for (const auto& victim : d.victims) {
    const std::optional<uint32_t> job_id = SlurmJobOf(victim);
    if (!job_id) continue;
    slurm_victims = true;
    const Preemption& p = records_.at(d.preemptor);
    if (p.slurm_victims.count(victim) || p.retries.count(victim) || slurm_ == nullptr) continue;
    // A victim onequeue started a moment ago may still be assumed running: it is leaving now.
    lending_->ForgetStart(*job_id);
    auto job = c.slurm.running.find(victim);
    if (job == c.slurm.running.end()) continue;  // already left
    std::string why;
    const VictimOutcome outcome = EvictSlurmVictim(*job_id, *job->second, &why);
    if (!NoteVictim(d.preemptor, victim, outcome, why, c)) return;
  }
  if (slurm_victims) Fail("reclaim-after-requeue");
}

// Issue 24 D7: Slurm's own scheduler started a job on a node between the poll a reservation was
// planned from and its fence. The reservation's victims leave; the job, nobody's victim, would run
// on the reserved node for ever. When this cycle's plan, from a newer poll, names it as a victim of
// the same preemptor on nodes all reserved for it already, it is asked as the first victims were
// (AskSlurmVictims asks each victim once).
void PreemptionExecutor::AskLateSlurmVictims(const queue::PreemptDecision& d, const PreemptionCycle& c) {
  const Preemption& p = records_.at(d.preemptor);
  for (queue::NodeIndex n : d.member_nodes) {
    if (!p.nodes.count(c.built.snapshot->nodes[n].name)) return;  // another place: not this reservation
  }
  const bool new_slurm_victim = std::any_of(d.victims.begin(), d.victims.end(), [&](const std::string& v) {
    return SlurmJobOf(v) && !p.slurm_victims.count(v) && !p.retries.count(v);
  });
  if (new_slurm_victim) AskSlurmVictims(d, c);
}

absl::Status PreemptionExecutor::AskSubNodeVictims(const std::string& preemptor,
                                                   const std::vector<std::string>& claimed_victims,
                                                   const std::vector<std::string>& nodes, const PreemptionCycle& c) {
  const std::vector<std::string> victims = VictimsHoldingRoomOn(claimed_victims, nodes, *c.built.snapshot);
  const std::string message = absl::StrCat("Preempted by ", preemptor, " (higher priority, shared node)");
  int asked = 0;
  // Pods first: a PodDisruptionBudget refusal (the likely one) then stops the preemption before
  // any Slurm job has been requeued for nothing.
  for (const std::string& victim : victims) {
    auto vp = c.built.running_pods.find(victim);
    if (SlurmJobOf(victim) || vp == c.built.running_pods.end()) continue;  // a job, or gone
    for (const std::string& pod_key : vp->second.VictimPodKeys()) {
      if (evicted_pods_.count(pod_key) || c.terminating.count(pod_key)) continue;  // leaving already
      absl::Status s = actions_->Evict(pod_key, preemptor, message);
      if (!s.ok() && !absl::IsNotFound(s)) {
        return absl::FailedPreconditionError(absl::StrCat("eviction of ", pod_key, " refused: ", s.message()));
      }
      if (s.ok()) actions_->EvictSucceeded(pod_key, preemptor, message);
      evicted_pods_.insert(pod_key);
      ++c.stats->evictions;
      ++asked;
    }
  }
  for (const std::string& victim : victims) {
    const std::optional<uint32_t> job_id = SlurmJobOf(victim);
    if (!job_id) continue;
    if (slurm_ == nullptr) return absl::FailedPreconditionError("no Slurm side to requeue a Slurm victim");
    lending_->ForgetStart(*job_id);
    auto job = c.slurm.running.find(victim);
    if (job == c.slurm.running.end()) continue;  // left already (requeued by a predecessor, ended)
    std::string why;
    bool requeued = false;
    if (EvictSlurmVictim(*job_id, *job->second, &why, /*fenced=*/false, &requeued) != VictimOutcome::kLeaving) {
      return absl::UnavailableError(why);
    }
    // Issue 25 G3: held at once, so Slurm's own scheduler does not start it again into the claimed
    // room once its BeginTime has passed while onequeue cannot poll or write (slurmrestd down or
    // hanging); onequeue starts it again when its plan does (SlurmLending::StartJob), as every
    // held job. A failed hold is written by HoldWaitingJobs once the poll shows the job pending.
    if (requeued) {
      const absl::Status h = slurm_->Hold(
          *job_id, absl::StrCat(slurm::kOwnerTagPrefix, " Requeued for ", preemptor, "'s claim on a shared node"));
      if (!h.ok()) spdlog::warn("Slurm job {} requeued for {} but not held: {}", *job_id, preemptor, h.ToString());
    }
    ++c.stats->requeued;
    ++asked;
  }
  ++c.stats->preemptions_started;
  c.stats->preemption_victims.push_back(asked);
  return absl::OkStatus();
}

void PreemptionExecutor::Start(const std::vector<queue::PreemptDecision>& decisions, const PreemptionCycle& c) {
  asked_now_.clear();
  std::vector<PlannedEvictions> evictions;
  // How each victim leaves (issue 26): deleted unless a budget covers it.
  std::map<std::string, VictimRemoval, std::less<>> removal;
  for (const queue::PreemptDecision& d : decisions) {
    for (const auto& victim : d.victims) removal.emplace(victim, VictimRemoval::kEvict);
  }
  if (!removal.empty()) {
    for (const queue::RunningWorkload& rw : c.built.snapshot->running) {
      if (auto it = removal.find(rw.id); it != removal.end()) it->second = RemovalOf(rw, !config_.test_without_budgets);
    }
  }
  std::vector<const queue::PreemptDecision*> to_reserve;
  for (const queue::PreemptDecision& d : decisions) {
    if (auto it = records_.find(d.preemptor); it != records_.end()) {
      const Preemption& p = it->second;
      if (p.state == PreemptionState::kBlocked ? c.now < p.retry_at : p.victims_asked) {  // under way
        if (p.state != PreemptionState::kBlocked) AskLateSlurmVictims(d, c);
        continue;
      }
    }
    auto pods = c.built.pending_pods.find(d.preemptor);
    const bool slurm_preemptor = SlurmJobOf(d.preemptor).has_value();
    if (pods == c.built.pending_pods.end() && !slurm_preemptor) continue;
    if (slurm_preemptor && (slurm_ == nullptr || !c.slurm.pending.count(d.preemptor))) continue;
    to_reserve.push_back(&d);
  }
  const std::vector<const queue::PreemptDecision*> reserved = Reserve(to_reserve, c);
  // The nominations (part of step 1), all at once like the marks, before any victim is asked.
  std::vector<Nomination> nominations;
  for (const queue::PreemptDecision* d : reserved) {
    Fail("reclaim-after-reserve");
    if (auto pods = c.built.pending_pods.find(d->preemptor); pods != c.built.pending_pods.end()) {
      for (size_t i = 0; i < pods->second.pod_keys.size() && i < d->member_nodes.size(); ++i) {
        nominations.push_back({d->preemptor, pods->second.pod_keys[i], c.built.snapshot->nodes[d->member_nodes[i]].name});
      }
    }
  }
  Nominate(std::move(nominations), c);
  for (const queue::PreemptDecision* dp : reserved) {
    const queue::PreemptDecision& d = *dp;
    ++c.stats->preemptions_started;
    c.stats->preemption_victims.push_back(static_cast<int>(d.victims.size()));
    AskSlurmVictims(d, c);
    if (records_.at(d.preemptor).state == PreemptionState::kBlocked) continue;  // given up
    PlannedEvictions planned{d.preemptor, {}};
    for (const auto& victim : d.victims) {
      auto vp = c.built.running_pods.find(victim);
      if (vp == c.built.running_pods.end()) continue;
      for (const auto& pod_key : vp->second.VictimPodKeys()) {
        // Already leaving (evicted by a predecessor that crashed, or deleted): not evicted again.
        if (evicted_pods_.count(pod_key) || c.terminating.count(pod_key)) continue;
        planned.pod_keys.push_back(pod_key);
        planned.removals.push_back(removal.at(victim));
      }
    }
    evictions.push_back(std::move(planned));
    // 3. The start happens in a later cycle, when the victims are gone and the plan starts P there.
  }
  EvictInWaves(&evictions, c);
  AwaitNominations();
  for (const queue::PreemptDecision* d : reserved) {
    auto it = records_.find(d->preemptor);
    if (it == records_.end() || !it->second.victims_asked) continue;
    for (queue::NodeIndex n : d->member_nodes) it->second.asked_on.insert(c.built.snapshot->nodes[n].name);
  }
}

void PreemptionExecutor::Nominate(std::vector<Nomination> nominations, const PreemptionCycle& c) {
  // Issue 26: each nomination carries its pod's waiting report (one status write, as
  // kube-scheduler nominates with PodScheduled=False), unless the pod shows that report already.
  // A nomination that failed is not written again (the reservation holds the nodes); a report
  // that did not land is written by the loop's ReportWaiting. Its answer gates nothing else, so
  // the victims are asked while it is in flight, as kube-scheduler's nomination and deletions go
  // together; the marks, which keep the room from being taken back, have landed before.
  std::vector<std::optional<WaitReport>> reports(nominations.size());
  if (c.report_to_show) {
    for (size_t i = 0; i < nominations.size(); ++i) reports[i] = c.report_to_show(nominations[i].preemptor, nominations[i].pod_key);
  }
  const std::vector<Nomination>* sent = &nominations;
  const std::vector<std::optional<WaitReport>>* carried = &reports;
  InFlight<absl::Status> answers(nominations.size(), [&](size_t i, std::function<void(absl::Status)> done) {
    const Nomination& n = (*sent)[i];
    if ((*carried)[i]) actions_->StartNominateWithReport(n.pod_key, n.node, *(*carried)[i], std::move(done));
    else actions_->StartNominate(n.pod_key, n.node, std::move(done));
  });
  nominating_ = std::make_unique<NominationsInFlight>(
      NominationsInFlight{std::move(nominations), std::move(reports), c.report_shown, std::move(answers)});
}

void PreemptionExecutor::AwaitNominations() {
  if (nominating_ == nullptr) return;
  std::unique_ptr<NominationsInFlight> n = std::move(nominating_);
  const std::vector<absl::Status> answers = n->answers.Wait();
  for (size_t i = 0; i < n->nominations.size(); ++i) {
    if (n->reports[i] && answers[i].ok() && n->report_shown) n->report_shown(n->nominations[i].pod_key, *n->reports[i]);
  }
}

void PreemptionExecutor::RetryVictims(const PreemptionCycle& c) {
  if (slurm_ == nullptr) return;
  for (auto it = records_.begin(); it != records_.end(); ++it) {
    const std::string preemptor = it->first;
    Preemption& p = it->second;
    bool gave_up = false;
    for (auto r = p.retries.begin(); r != p.retries.end() && !gave_up;) {
      const std::string victim = r->first;
      const queue::Time retry_at = r->second.retry_at;
      auto job = c.slurm.running.find(victim);
      if (job == c.slurm.running.end()) {  // it left after all
        r = p.retries.erase(r);
        continue;
      }
      ++r;  // NoteVictim may erase this entry
      if (c.now < retry_at) continue;
      std::string why;
      const VictimOutcome outcome = EvictSlurmVictim(*SlurmJobOf(victim), *job->second, &why);
      gave_up = !NoteVictim(preemptor, victim, outcome, why, c);
    }
    if (!gave_up && p.retries.empty() && p.state == PreemptionState::kEvicting) {
      Move(preemptor, p, PreemptionEvent::kVictimsAsked);
    }
  }
}

bool PreemptionExecutor::ReleaseFinished(const PreemptionCycle& c) {
  // Issue 26: the marks of finished preemptions on nodes Slurm does not know (ReleaseFinishedNode
  // would unmark them one GET and PATCH after another) are cleared all at once; Release then finds
  // them unmarked and updates the records. A write that failed is tried again next cycle.
  std::vector<std::pair<std::string, NodeOwner>> unmark;
  for (const auto& [preemptor, p] : records_) {
    if (c.IsPending(preemptor)) continue;
    for (const auto& [node, before] : p.nodes) {
      const bool joined = slurm_ != nullptr && c.slurm.nodes.count(node);
      if (!joined && owners_->Of(node).IsReservedFor(preemptor)) unmark.emplace_back(node, NodeOwner::Unmarked());
    }
  }
  bool deferred = false;
  if (DeferReleases(c)) {
    // The preemptor no longer waits, so nothing holds the node for it: it is released in this
    // process's view (every snapshot, Recover) now and written once no preemption is under way.
    for (const auto& [node, value] : unmark) owners_->Defer(node, value, c.now);
    deferred = !unmark.empty();
    unmark.clear();
  } else {
    for (auto& w : owners_->TakeDeferred()) unmark.push_back(std::move(w));
  }
  std::set<std::string> unwritten;
  if (!unmark.empty()) {
    const std::vector<absl::Status> written = owners_->SetAll(unmark);
    for (size_t i = 0; i < unmark.size(); ++i) {
      if (!written[i].ok()) unwritten.insert(unmark[i].first);
    }
    if (unwritten.size() < unmark.size()) Fail("release-after-write");
  }
  for (auto it = records_.begin(); it != records_.end();) {
    // The preemptor no longer waits (bound, started, or deleted): the reservation has done its job.
    if (c.IsPending(it->first)) {
      ++it;
      continue;
    }
    Preemption& p = it->second;
    for (auto n = p.nodes.begin(); n != p.nodes.end();) {
      const std::string node = n->first;
      ++n;
      if (unwritten.count(node)) continue;
      Release(it->first, p, node, ReleaseKind::kFinished, &c);
    }
    if (p.nodes.empty()) {
      Move(it->first, p, PreemptionEvent::kRelease);
      it = records_.erase(it);
    } else {
      ++it;  // a write failed: tried again next cycle
    }
  }
  Reindex();
  return deferred;
}

bool PreemptionExecutor::DeferReleases(const PreemptionCycle& c) const {
  // The release of a finished reservation gates nothing here (the node is released in this
  // process's view at once): it only lifts the mark other schedulers see, and a restarted
  // scheduler makes it from the mark. While preemptions are under way their writes (marks,
  // nominations, victims' removals, bindings) are what the apiserver's throughput is for; the
  // releases wait for a moment without one, at most kMaxReleaseDeferralSeconds.
  const bool under_way = std::any_of(records_.begin(), records_.end(), [&](const auto& r) {
    return c.IsPending(r.first) && r.second.state != PreemptionState::kBlocked && !r.second.nodes.empty();
  });
  if (!under_way) return false;
  const std::optional<int64_t> oldest = owners_->OldestDeferred();
  return !oldest || c.now - *oldest < kMaxReleaseDeferralSeconds;
}

void PreemptionExecutor::ReleaseUnusable(const queue::Plan& plan, const PreemptionCycle& c) {
  if (by_node_.empty()) return;
  // The nodes each workload's decisions of this cycle use.
  std::map<std::string, std::set<std::string>, std::less<>> planned;
  auto add = [&](const std::string& workload, const queue::MemberNodes& nodes) {
    for (queue::NodeIndex n : nodes) planned[workload].insert(c.built.snapshot->nodes[n].name);
  };
  // Nodes this cycle's plan starts a workload on, by the workload. On a node reserved for P that P
  // is not placed on, that is a workload of higher priority (the owner rule) taking the room P's
  // victims made.
  std::map<std::string, std::string_view> started_on;
  std::set<std::string_view> starting;
  for (const auto& d : plan.starts) {
    add(d.workload, d.member_nodes);
    starting.insert(d.workload);
    for (queue::NodeIndex n : d.member_nodes) started_on.emplace(c.built.snapshot->nodes[n].name, d.workload);
  }
  for (const auto& d : plan.preemptions) add(d.preemptor, d.member_nodes);
  for (const auto& d : plan.reservations) add(d.workload, d.member_nodes);
  for (auto it = records_.begin(); it != records_.end();) {
    const std::string preemptor = it->first;
    Preemption& p = it->second;
    // A preemptor that no longer waits is ReleaseFinished's (next cycle).
    if (!c.IsPending(preemptor) || p.nodes.empty()) {
      ++it;
      continue;
    }
    auto uses = planned.find(preemptor);
    bool released = false;
    for (auto n = p.nodes.begin(); n != p.nodes.end();) {
      const std::string node = n->first;
      ++n;
      // Remembered across cycles: in the cycle of the start the plan may still place P there too.
      if (auto taker = started_on.find(node); taker != started_on.end() && taker->second != preemptor &&
                                              !HoldsNodes(taker->second)) {
        p.taken_on.insert(node);
      }
      if (uses != planned.end() && uses->second.count(node)) {
        p.unusable_since.erase(node);
        continue;
      }
      // Still pending, but this cycle's plan puts it elsewhere or nowhere: a gang member deleted
      // after the evictions (GangIncomplete), requests that no longer fit there, a better place.
      // Past the grace the node goes back to the owner it had, or it stays reserved and idle for ever.
      // The grace keeps room made for a preemptor that may come back. A node whose victims were
      // never asked (read back after a crash before they were, or left from an earlier decision)
      // while work still runs there holds no room, only its work under a fence: released at once
      // (issue 24 D4), as a finished reservation is (the live check: Slurm's while a Slurm job runs
      // there), since the owner it had is not known after a restart.
      // A room taken (taken_on) holds nothing for P until its taker ends, and while reserved keeps P
      // from preempting elsewhere: released at once, unless P starts elsewhere now (ReleaseFinished's).
      // A taker holding a reservation is no take: its own room, freed when it starts, is P's.
      const queue::Time since = p.unusable_since.try_emplace(node, c.now).first->second;
      const bool room_made = p.asked_on.count(node) > 0 || !RunsWork(*c.built.snapshot, node);
      const bool room_taken = p.taken_on.count(node) > 0 && !starting.count(preemptor);
      if (room_made && !room_taken && c.now - since < config_.queue.preemption.unusable_reservation_seconds) continue;
      spdlog::info("node {} released: {} still waits but {}", node, preemptor,
                   room_taken  ? "a workload of higher priority starts there"
                   : room_made ? absl::StrCat("has not been able to use it for ", c.now - since, "s")
                               : absl::StrCat("has not been able to use it for ", c.now - since, "s (its victims never asked)"));
      if (!Release(preemptor, p, node, room_made ? ReleaseKind::kUnusable : ReleaseKind::kFinished, &c)) continue;
      c.touched->insert(node);
      released = true;
    }
    Move(preemptor, p, p.unusable_since.empty() ? PreemptionEvent::kUsable : PreemptionEvent::kUnusable);
    if (released && p.nodes.empty()) {
      // Its preemption is over: nominated nowhere, and free to preempt again when it fits.
      ClearNominations(preemptor, c);
      if (p.state != PreemptionState::kBlocked) {
        Move(preemptor, p, PreemptionEvent::kRelease);
        it = records_.erase(it);
        continue;
      }
    }
    ++it;
  }
  Reindex();
}

void PreemptionExecutor::Consumed(const std::string& node, bool fail_after) {
  auto held = by_node_.find(node);
  if (held == by_node_.end()) return;
  const std::string preemptor = held->second;
  Release(preemptor, records_.at(preemptor), node, ReleaseKind::kConsumed, nullptr);
  Reindex();
  if (fail_after) Fail("release-after-write");
}

void PreemptionExecutor::ForgetGonePods(const std::function<bool(const std::string&)>& exists) {
  std::erase_if(evicted_pods_, [&](const std::string& key) { return !exists(key); });
}

const std::string* PreemptionExecutor::BlockedMessage(std::string_view preemptor) const {
  auto it = records_.find(preemptor);
  if (it == records_.end() || it->second.blocked_message.empty()) return nullptr;
  return &it->second.blocked_message;
}

}  // namespace onequeue::scheduler

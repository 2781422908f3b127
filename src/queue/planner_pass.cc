// The cycle pass's decision for one workload (PlanOne), step by step: what admission rules out,
// strict order, start now, preempt, reserve, estimate; and the wait statuses, owner changes and
// preemption decisions it appends to the plan. See planner_pass.h; docs/queue.md "Backfill".
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "queue/never_fits.h"
#include "queue/planner_pass.h"
#include "queue/profile.h"

namespace onequeue::queue::internal {
namespace {

// Why no node admits it when evicting running pods is what anti-affinity rules ask and it may not
// preempt them: kube-scheduler's reasons for the kinds of anti-affinity rules it has.
const char* AntiAffinityReason(const PlacementRules& rules) {
  bool own = false, existing = false;
  for (const PlacementRule& r : rules.rules) {
    if (r.kind == PlacementRule::Kind::kAntiAffinity) (r.symmetric ? existing : own) = true;
  }
  if (own && existing) {
    return "no node of the pool satisfies its pod (anti-)affinity now: node(s) didn't match pod anti-affinity rules, "
           "node(s) didn't satisfy existing pods anti-affinity rules";
  }
  return own ? "no node of the pool satisfies its pod (anti-)affinity now: node(s) didn't match pod anti-affinity rules"
             : "no node of the pool satisfies its pod (anti-)affinity now: node(s) didn't satisfy existing pods "
               "anti-affinity rules";
}

}  // namespace

void CyclePass::EmitOwnerChanges(const PendingWorkload& w, const MemberNodes& nodes) {
  const OwnerKind world =
      w.kind == WorkloadKind::kPodGroup ? OwnerKind::kKubernetes : OwnerKind::kSlurm;
  // A shared node changes no hands: each world's use of it is bounded per workload, not by owner.
  const auto settled = [&](NodeIndex n) {
    return s_.owner_kind[n] == world || SharesWorlds(s_.snapshot->nodes[n], config_);
  };
  // Most starts land on nodes their world already owns: check that before copying anything.
  if (std::all_of(nodes.begin(), nodes.end(), settled)) return;
  MemberNodes distinct = nodes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (NodeIndex n : distinct) {
    if (!settled(n)) plan_.owner_changes.push_back(OwnerChange{n, world, w.id});
  }
}

void CyclePass::Wait(std::string_view id, WaitReason reason, std::string message,
                     int32_t position, std::optional<Time> estimate, bool has_reservation) {
  Wait(id, reason, "", position, estimate, has_reservation);
  plan_.waiting.back().message = std::move(message);
}

void CyclePass::Wait(std::string_view id, WaitReason reason, const char* fixed_message,
                     int32_t position, std::optional<Time> estimate, bool has_reservation) {
  // Built in place: 85,000 of these per cycle.
  WaitingStatus& status = plan_.waiting.emplace_back();
  status.workload = id;
  status.reason = reason;
  status.fixed_message = fixed_message;
  status.queue_position = position;
  status.estimated_start = estimate;
  status.has_reservation = has_reservation;
}

namespace {

// Whether eight nodes from these positions are all eligible (each byte nonzero), unclaimed and
// unreserved (each byte zero): a word each, no branch per node.
bool AllOpen8(const char* eligible, const char* claimed, const char* reserved) {
  uint64_t e, c, r;
  std::memcpy(&e, eligible, 8);
  std::memcpy(&c, claimed, 8);
  std::memcpy(&r, reserved, 8);
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
  const bool some_zero = ((e - kOnes) & ~e & kHighs) != 0;  // exact: true iff a byte of e is 0
  return !some_zero && (c | r) == 0;
}

}  // namespace

// The eligible nodes TryPreempt may use, ascending.
void CyclePass::ListPreemptNodes(const PendingWorkload& w, double priority, const std::vector<char>& eligible,
                                 std::vector<NodeIndex>& out) {
  // Issue 25: preemption never crosses tenants on a same-tenant node (the victims would have to be
  // all of the other tenant's work there, which the search does not know): such a node is out.
  // Usable's first tests inline over plain arrays (5,000 nodes per preemptor, issue 26): the rest
  // only for a node reserved(W), and the tenant only where some node is same-tenant.
  const int16_t tenant = s_.TenantId(w.tenant);
  const char* const is_eligible = eligible.data();
  const char* const claimed = s_.claimed.data();
  const char* const reserved = s_.reserved_owner.data();
  const bool tenants = s_.any_same_tenant;
  // Every node written, the count advanced only for a kept one: no push_back and no branch on
  // the common node (eligible, unclaimed, unreserved; ~24 M instructions per steady cycle before).
  out.resize(eligible.size());
  NodeIndex* const kept_nodes = out.data();
  size_t kept = 0;
  const NodeIndex nodes = static_cast<NodeIndex>(eligible.size());
  for (NodeIndex n = 0; n < nodes; ++n) {
    // Eight nodes at once where all eight are eligible, unclaimed and unreserved (the common run;
    // issue 26: 183 preemptors x 5,000 nodes a steady cycle): kept in order, as one by one.
    if (!tenants && n + 8 <= nodes && AllOpen8(is_eligible + n, claimed + n, reserved + n)) {
      for (int k = 0; k < 8; ++k) kept_nodes[kept + k] = n + k;
      kept += 8;
      n += 7;
      continue;
    }
    kept_nodes[kept] = n;
    const bool open = (is_eligible[n] != 0) & (claimed[n] == 0);
    if (open & (reserved[n] == 0) & !tenants) {
      ++kept;
      continue;
    }
    if (!open || (reserved[n] && !Usable(n, w, priority, eligible))) continue;
    if (tenants && s_.profile->OtherTenant(n, tenant)) continue;
    ++kept;
  }
  out.resize(kept);
}

// Issue 26 (the steady cycle, twelfth pass): ListPreemptNodes' list when no node is reserved(W)
// or same-tenant (then it is the eligible nodes not claimed, whoever asks), from the list kept
// for `eligible` across the cycle's preemptors: built once, each claim made since taken out (the
// claimed only grow within a cycle), read in place (~56,000 instructions a preemptor before).
void CyclePass::KeepPreemptNodes(const std::vector<char>& eligible,
                                 QueuePlanner::State::EligibleSet::PreemptNodes& kept) {
  if (!kept.built) {
    kept.nodes.clear();
    for (NodeIndex n = 0; n < static_cast<NodeIndex>(eligible.size()); ++n) {
      if (eligible[n] != 0 && s_.claimed[n] == 0) kept.nodes.push_back(n);
    }
    kept.built = true;
    kept.claims = s_.claim_log.size();
  }
  for (; kept.claims < s_.claim_log.size(); ++kept.claims) {
    const NodeIndex n = s_.claim_log[kept.claims];
    auto it = std::lower_bound(kept.nodes.begin(), kept.nodes.end(), n);
    if (it != kept.nodes.end() && *it == n) kept.nodes.erase(it);
  }
}

std::optional<PreemptDecision> CyclePass::TryPreempt(const PendingWorkload& w, double priority,
                                                     const std::vector<char>& eligible, Time now,
                                                     bool* no_room,
                                                     QueuePlanner::State::EligibleSet::PreemptNodes* kept) {
  *no_room = false;
  if (preemption_ == nullptr) return std::nullopt;
  PreemptionInput in;
  in.snapshot = s_.snapshot.get();
  in.shared_snapshot = s_.snapshot;
  in.config = &config_;
  in.preemptor = &w;
  in.preemptor_priority = priority;
  in.now = now;
  // Buffers kept in the state: no allocation per preemptor once they have grown.
  in.eligible_nodes = std::move(s_.scratch_preempt_nodes);
  in.eligible_nodes.clear();
  if (kept != nullptr && !s_.any_reserved_owner && !s_.any_same_tenant) {
    KeepPreemptNodes(eligible, *kept);
    in.eligible_list = &kept->nodes;
  } else {
    ListPreemptNodes(w, priority, eligible, in.eligible_nodes);
  }
  in.eligible_sorted_unclaimed = true;  // either way: ascending, in range, none claimed
  in.free_now = &s_.profile->FreeNowAll();  // read in place
  // The profile starts from each node's allocatable and subtracts its blocks.
  in.free_now_within_allocatable = !s_.profile->AnyNegativeBlock();
  in.claimed = &s_.claimed;
  in.already_victims = &s_.victims;
  in.already_victim_indices = &s_.victim_indices;
  std::optional<PreemptDecision> d = preemption_->PlanOrRuleOut(in, no_room);
  s_.scratch_preempt_nodes = std::move(in.eligible_nodes);
  if (!d.has_value()) return std::nullopt;
  // Defence in depth: never act on a decision that breaks the queue's rules.
  const int16_t tenant = s_.TenantId(w.tenant);
  if (static_cast<int32_t>(d->member_nodes.size()) != std::max<int32_t>(1, w.members)) return std::nullopt;
  for (NodeIndex n : d->member_nodes) {
    if (n < 0 || n >= static_cast<NodeIndex>(eligible.size()) || !Usable(n, w, priority, eligible) ||
        s_.profile->OtherTenant(n, tenant)) {
      return std::nullopt;
    }
  }
  const std::vector<RunningWorkload>& running = s_.snapshot->running;
  if (s_.running_by_id.empty()) {
    s_.running_by_id.reserve(running.size());
    for (size_t i = 0; i < running.size(); ++i) s_.running_by_id.try_emplace(running[i].id, static_cast<int32_t>(i));
  }
  s_.scratch_victims.clear();
  for (const std::string& v : d->victims) {
    auto it = s_.running_by_id.find(v);
    if (it == s_.running_by_id.end()) return std::nullopt;
    const RunningWorkload& r = running[it->second];
    if (r.priority >= priority || !r.preemptible) return std::nullopt;
    if (std::find(s_.victim_indices.begin(), s_.victim_indices.end(), it->second) != s_.victim_indices.end()) {
      return std::nullopt;
    }
    s_.scratch_victims.push_back(it->second);
  }
  d->preemptor = w.id;
  return d;
}

void CyclePass::PlanOne(const PendingWorkload& w, const QueuePlanner::State::Facts& facts,
                        double priority, int32_t position, Time now, const Promise* promise) {
  // A workload that waits reads only `facts` (not `w`): see State::Facts.
  const std::string_view id = facts.id;
  // 1. What the queue cannot fix by waiting for capacity.
  if (WaitsForAdmission(w, facts, position)) return;
  const QueuePlanner::State::EligibleSet& eligible_set = StaticEligible(w, facts.eligibility);
  const bool strict = config_.backfill == BackfillMode::kNone;
  const Duration duration = facts.duration;
  const auto make_turn = [&]() {
    return Turn{w,
                facts,
                priority,
                position,
                now,
                promise,
                eligible_set.bits,
                duration,
                RequestSize{s_.shapes[facts.shape], facts.members, duration},
                now == s_.now &&
                    ((in_cycle_ && !s_.out_of_priority_order) || s_.reserved_for_priority.empty()) &&
                    !s_.promise_phase && !s_.any_same_tenant && !HoldsReservedNodes(w.id),
                eligible_set.preempt_bits.empty() ? nullptr : &eligible_set.preempt_bits, &eligible_set};
  };
  if (eligible_set.count == 0) {
    // Anti-affinity: running pods whose anti-affinity it matches, or that its own anti-affinity
    // repels, keep it off every node, but a preemption that evicts them may make room
    // (PlacementRules::carriers).
    if (eligible_set.preempt_count > 0 && !(strict && s_.any_blocked) &&
        !(facts.has_not_before && w.not_before > now) && (CanPreemptAnything(facts.qos) || ByClass(w)) &&
        Preempts(make_turn())) {
      return;
    }
    // Never runs as things are: it must not hold anyone else back, even in strict order.
    const bool by_rules = static_cast<size_t>(facts.eligibility) < s_.class_has_rules.size() &&
                          s_.class_has_rules[facts.eligibility];
    // Nodes that only running pods' anti-affinity keeps it off: kube-scheduler's reason.
    const bool by_carriers = eligible_set.preempt_count > 0;
    Wait(id, WaitReason::kPartitionNodesUnavailable,
         by_carriers ? AntiAffinityReason(*w.placement)
         : by_rules  ? "no node of the pool satisfies its topology spread constraints and pod (anti-)affinity now"
                     : "no node of the pool matches its partition, selector, affinity and tolerations",
         position, std::nullopt, false);
    return;
  }
  // Issue 29: not before its time (a Slurm dependency's parent's expected end). It neither starts
  // nor preempts now; it is reserved from then on, and blocks nobody meanwhile: it takes no
  // reservation of the depth and does not mark the queue blocked (Slurm does not plan a job
  // whose dependency is unmet at all), so what is behind it backfills as before, around its slot.
  if (facts.has_not_before && w.not_before > now) {
    ReserveNotBefore(w, facts, priority, position, promise, eligible_set.bits);
    return;
  }
  // 2. Strict order (no backfill): behind a blocked workload nothing starts.
  if (strict && s_.any_blocked) {
    Wait(id, WaitReason::kPriority, "waiting behind higher-priority workloads (no backfill)",
         position, std::nullopt, false);
    return;
  }
  const Turn turn = make_turn();
  // 3. Start now if it fits without delaying any reservation (the profile holds them).
  if (StartsNow(turn)) return;
  // 4. Preempt, if its QOS may.
  if ((CanPreemptAnything(facts.qos) || ByClass(w)) && Preempts(turn)) return;
  // 5. Blocked: reserve, within the depth or when starving.
  const WaitReason reason = WhyBlocked(turn);
  // A promise is kept even past the depth (the depth may have been lowered since); a starving
  // workload (pending for starvation_bound or longer) gets one past the depth, uncounted
  // there, up to max_starving_reservations a cycle (kReserve; kFrontReserve: the next oldest).
  const bool within_depth = config_.reservation_depth == 0 || strict ||
                            s_.reservations < config_.reservation_depth || promise != nullptr;
  const bool reserve_starving = StarvingReservedPastDepth(config_.starvation_remedy) &&
                                s_.starving_reservations < config_.max_starving_reservations;
  if (within_depth || (reserve_starving && Starving(w.submit_time, duration, now))) {
    ReserveOrWait(turn, reason, within_depth);
    return;
  }
  // 6. Beyond the reservation depth: an estimate from the profile, without reserving.
  WaitWithEstimate(turn, reason);
}

bool CyclePass::WaitsForAdmission(const PendingWorkload& w,
                                  const QueuePlanner::State::Facts& facts, int32_t position) {
  const std::string_view id = facts.id;
  if (!facts.placeable) {
    if (w.admission_error == AdmissionError::kInvalidAnnotation) {
      Wait(id, WaitReason::kInvalidAnnotation, w.admission_message, position, std::nullopt, false);
      return true;
    }
    if (w.admission_error == AdmissionError::kQosNotAllowed) {
      Wait(id, WaitReason::kQosNotAllowed, w.admission_message, position, std::nullopt, false);
      return true;
    }
    if (w.admission_error == AdmissionError::kAccountNotAllowed) {
      Wait(id, WaitReason::kAccountNotAllowed, w.admission_message, position, std::nullopt, false);
      return true;
    }
    if (w.held) {
      // A message the scheduler gave (issue 29: a Slurm job left to Slurm says why).
      Wait(id, WaitReason::kHeld, w.admission_message.empty() ? "held by an administrator" : w.admission_message,
           position, std::nullopt, false);
      return true;
    }
  }
  if (facts.qos_unknown) {
    Wait(id, WaitReason::kQosNotAllowed, absl::StrCat("QOS ", w.qos, " is not in the QOS table"),
         position, std::nullopt, false);
    return true;
  }
  if (!facts.placeable) {  // what is left: members of the gang are missing
    Wait(id, WaitReason::kGangIncomplete,
         absl::StrCat(w.members_present, " of ", w.members, " pods of the group exist"), position,
         std::nullopt, false);
    return true;
  }
  return false;
}

bool CyclePass::StartsNow(const Turn& t) {
  if (t.KnownToFail(s_.failed_now)) return false;
  if (std::optional<MemberNodes> nodes = TryStartNow(t.w, t.duration, t.priority, t.eligible, t.now)) {
    Commit(t.w, t.duration, *nodes, t.now, false);
    if (t.facts.counts_placed) CountPlaced(t.w, *nodes);
    EmitOwnerChanges(t.w, *nodes);
    plan_.starts.push_back(StartDecision{t.w.id, std::move(*nodes), s_.any_blocked});
    return true;
  }
  t.Remember(s_.failed_now);
  return false;
}

bool CyclePass::Preempts(const Turn& t) {
  // The memo of ruled-out searches holds along a full cycle's walk by descending priority only
  // (an arrival evaluated later may have a higher priority: more candidates).
  FailureMemo* memo = nullptr;
  const RequestSize size{t.size.per_member, t.size.members, 0};  // the run time does not matter here
  if (t.memo_valid && in_cycle_ && !s_.out_of_priority_order && t.facts.qos != nullptr &&
      t.facts.qos >= config_.qos.data() && t.facts.qos < config_.qos.data() + config_.qos.size()) {
    if (s_.failed_preempt.size() < config_.qos.size()) s_.failed_preempt.resize(config_.qos.size());
    memo = &s_.failed_preempt[t.facts.qos - config_.qos.data()];
    if (memo->KnownToFail(t.facts.kind, t.facts.eligibility, size)) return false;
  }
  bool no_room = false;
  QueuePlanner::State::EligibleSet::PreemptNodes* kept =
      t.eligible_set == nullptr ? nullptr : &t.eligible_set->preempt_nodes[t.preempt_eligible != nullptr ? 1 : 0];
  std::optional<PreemptDecision> d = TryPreempt(
      t.w, t.priority, t.preempt_eligible != nullptr ? *t.preempt_eligible : t.eligible, t.now, &no_room, kept);
  if (!d.has_value()) {
    if (no_room && memo != nullptr) memo->Failed(t.facts.kind, t.facts.eligibility, size);
    return false;
  }
  s_.victim_indices.insert(s_.victim_indices.end(), s_.scratch_victims.begin(), s_.scratch_victims.end());
  for (NodeIndex n : d->member_nodes) {
    s_.claimed[n] = 1;
    s_.claim_log.push_back(n);
    s_.node_seq[n] = ++s_.seq;
  }
  s_.victims.insert(s_.victims.end(), d->victims.begin(), d->victims.end());
  if (t.facts.counts_placed) CountPlaced(t.w, d->member_nodes);
  std::string msg = absl::StrCat("preempting ", d->victims.size(), " lower-priority workload(s)");
  Time start = d->earliest_start;
  plan_.preemptions.push_back(std::move(*d));
  Wait(t.facts.id, WaitReason::kPreempting, std::move(msg), t.position, start, true);
  s_.any_blocked = true;
  return true;
}

WaitReason CyclePass::WhyBlocked(const Turn& t) {
  const bool first_blocked = !s_.any_blocked;
  s_.any_blocked = true;
  WaitReason reason = first_blocked ? WaitReason::kResources : WaitReason::kPriority;
  if (!first_blocked) {
    // A success stays true only while the nodes it used stay usable: not so for a lower
    // priority where a node is reserved(W) for a pending workload.
    const bool fits_memo_valid = t.memo_valid && s_.reserved_for_priority.empty();
    std::vector<NodeIndex> witnesses;
    if (fits_memo_valid && s_.fits_ignoring_reservations.KnownToFit(
                               t.facts.kind, t.facts.eligibility, t.size, s_.node_seq, s_.seq)) {
      reason = WaitReason::kReservedForHigherPriority;
    } else if (!t.KnownToFail(s_.failed_ignoring_reservations)) {
      if (FitsIgnoringReservations(t.w, t.duration, t.priority, t.eligible, t.now, &witnesses)) {
        reason = WaitReason::kReservedForHigherPriority;
        if (fits_memo_valid) {
          s_.fits_ignoring_reservations.Fitted(t.facts.kind, t.facts.eligibility, t.size, s_.seq,
                                               std::move(witnesses));
        }
      } else {
        t.Remember(s_.failed_ignoring_reservations);
      }
    }
  }
  // A node reserved(W) for a higher-priority workload (its preemption under way) is the reason
  // when it alone stands in the way; checked only while some node carries such a mark (rare).
  if (reason != WaitReason::kReservedForHigherPriority && s_.any_reserved_owner &&
      FitsNowButForReservedNodes(t.w, t.duration, t.priority, t.eligible, t.now)) {
    reason = WaitReason::kReservedForHigherPriority;
  }
  return reason;
}

Time CyclePass::NotBefore(const Turn& t) {
  return t.memo_valid
             ? s_.not_before.NotBefore(t.facts.kind, t.facts.eligibility, t.size, t.now)
             : t.now;
}

std::optional<CyclePass::Placement> CyclePass::Earliest(const Turn& t, Time bound, bool any_nodes) {
  if (bound >= kForever) return std::nullopt;
  std::optional<Placement> at = EarliestPlacement(t.w, t.duration, t.priority, t.eligible, bound, any_nodes);
  if (t.memo_valid) {
    s_.not_before.Found(t.facts.kind, t.facts.eligibility, t.size,
                        at.has_value() ? at->start : kForever);
  }
  if (at.has_value()) s_.estimate_witness[ShapeOf(t)] = at->nodes;
  return at;
}

std::optional<std::string> CyclePass::NeverFits(const Turn& t) {
  const internal::ShapeKey key{t.w.per_member, 0, WorkloadKind{}, false, t.facts.eligibility};
  auto [it, added] = s_.empty_pool.try_emplace(key);
  if (added) it->second = CapacityWhenEmpty(*s_.snapshot, t.w.per_member, t.eligible);
  return WhyItNeverFits(*s_.snapshot, t.w, it->second);
}

std::optional<Time> CyclePass::StartFromWitness(const Turn& t, Time bound) {
  const AvailabilityProfile& p = *s_.profile;
  const Time start = p.RoundUp(std::max(bound, p.now()));  // EarliestPlacement's first candidate
  if (bound >= kForever || start > p.horizon()) return std::nullopt;
  auto it = s_.estimate_witness.find(ShapeOf(t));
  if (it == s_.estimate_witness.end() || !SlotFits(t.w, t.duration, t.priority, t.eligible, it->second, start)) {
    return std::nullopt;
  }
  if (t.memo_valid) s_.not_before.Found(t.facts.kind, t.facts.eligibility, t.size, start);
  return start;
}

void CyclePass::ReserveOrWait(const Turn& t, WaitReason reason, bool within_depth) {
  const std::string_view id = t.facts.id;
  const Promise* promise = t.promise;
  std::optional<Placement> at = Earliest(t, NotBefore(t));
  // The promised slot, when the search finds nothing earlier: it is free by construction (held
  // by a placeholder until now), and the search may miss it when it lies off this cycle's
  // resolution grid (the grid starts at each cycle's now).
  if (promise != nullptr && promise->placeholder && (!at.has_value() || at->start > promise->start) &&
      SlotFits(t.w, t.duration, t.priority, t.eligible, promise->nodes, promise->start)) {
    at = Placement{promise->start, promise->nodes};
  }
  if (!at.has_value()) {
    if (reason == WaitReason::kReservedForHigherPriority) {  // the mark holds the node past the window
      Wait(id, reason, "the capacity it fits in is reserved for higher-priority workloads",
           t.position, std::nullopt, false);
      return;
    }
    // Rare path: tell "never, as the pool is" (a request no eligible node can hold) from "later".
    if (std::optional<std::string> never = NeverFits(t)) {
      Wait(id, WaitReason::kResources, std::move(*never), t.position, std::nullopt, false);
      return;
    }
    Wait(id, WaitReason::kBeyondWindow, "cannot start within the planning window", t.position,
         std::nullopt, false);
    return;
  }
  Commit(t.w, t.duration, at->nodes, at->start, true);
  if (within_depth) {
    ++s_.reservations;
  } else {
    ++s_.starving_reservations;
  }
  s_.last_reservation_position = std::max(s_.last_reservation_position, t.position);
  plan_.reservations.push_back(ReserveDecision{t.w.id, at->nodes, at->start});
  // The time is in estimated_start: a message without it stays the same from cycle to cycle
  // (the daemon patches a pod's status only when what it shows changes).
  Wait(id, reason, "nodes are reserved for it from its estimated start", t.position, at->start,
       true);
}

void CyclePass::ReserveNotBefore(const PendingWorkload& w, const QueuePlanner::State::Facts& facts, double priority,
                                 int32_t position, const Promise* promise, const std::vector<char>& eligible) {
  // No memo: the memos are keyed by a workload's shape, and this one's earliest start is its own.
  std::optional<Placement> at = EarliestPlacement(w, facts.duration, priority, eligible, w.not_before);
  if (promise != nullptr && promise->placeholder && promise->start >= w.not_before &&
      (!at.has_value() || at->start > promise->start) &&
      SlotFits(w, facts.duration, priority, eligible, promise->nodes, promise->start)) {
    at = Placement{promise->start, promise->nodes};
  }
  const std::string& why = w.admission_message;
  if (!at.has_value()) {
    Wait(facts.id, WaitReason::kDependency,
         absl::StrCat(why.empty() ? "may not start yet" : why, "; no room within the planning window after that"),
         position, std::nullopt, false);
    return;
  }
  Commit(w, facts.duration, at->nodes, at->start, true);
  // An arrival ahead of it changes its slot: OnArrival asks for a full cycle then.
  s_.last_reservation_position = std::max(s_.last_reservation_position, position);
  plan_.reservations.push_back(ReserveDecision{w.id, at->nodes, at->start});
  if (why.empty()) {
    Wait(facts.id, WaitReason::kDependency, "may not start yet: nodes are reserved for it from its estimated start",
         position, at->start, true);
  } else {
    Wait(facts.id, WaitReason::kDependency, why, position, at->start, true);
  }
}

void CyclePass::WaitWithEstimate(const Turn& t, WaitReason reason) {
  std::optional<Time> estimate;
  const bool budget_left = config_.estimate_unreserved && (config_.max_estimates_per_cycle == 0 ||
                                                           s_.estimates < config_.max_estimates_per_cycle);
  if (budget_left) {
    const PendingWorkload& w = t.w;
    auto key = std::make_pair(ShapeKey{w.per_member, std::max<int32_t>(1, w.members), w.kind,
                                       w.pack_topology, t.facts.eligibility},
                              t.duration);
    auto it = s_.any_same_tenant ? s_.estimate_memo.end() : s_.estimate_memo.find(key);
    if (it != s_.estimate_memo.end()) {
      if (it->second < kForever) estimate = it->second;
    } else if (const Time bound = NotBefore(t); bound < kForever) {
      ++s_.estimates;  // the budget counts searches, not what memos answer (a witness stands for one)
      if (std::optional<Time> start = StartFromWitness(t, bound)) {
        estimate = *start;
      } else if (std::optional<Placement> at = Earliest(t, bound, /*any_nodes=*/true)) {  // the start alone
        estimate = at->start;
      }
      if (!s_.any_same_tenant) s_.estimate_memo[key] = estimate.value_or(kForever);
    }
  }
  Wait(t.facts.id, reason,
       reason == WaitReason::kResources ? "waiting for resources"
       : reason == WaitReason::kReservedForHigherPriority
           ? "the capacity it fits in is reserved for higher-priority workloads"
           : "waiting behind higher-priority workloads",
       t.position, estimate, false);
}

}  // namespace onequeue::queue::internal

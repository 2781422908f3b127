#pragma once
// The cycle pass of the planner (internal to src/queue): one walk over the queue, or the
// evaluation of one arrival, against a QueuePlanner::State. Its members live in three files by
// concept:
//   planner_pass.cc       PlanOne: the decision for one workload, step by step (start now,
//                         preempt, reserve, estimate) and the wait statuses it appends
//   planner_placement.cc  where and when a workload fits: node walks over the free index and the
//                         availability profile, node choice (topology packing), Commit
//   planner_promises.cc   last cycle's reservations held as placeholders until their turn
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queue/model.h"
#include "queue/plan.h"
#include "queue/planner.h"
#include "queue/planner_memos.h"
#include "queue/planner_state.h"

namespace onequeue::queue::internal {

// One planning pass over the queue, or the evaluation of one arrival, against a State.
class CyclePass {
 public:
  // A reservation the previous cycle made (PlanCycle's `promised`), as this cycle holds it.
  struct Promise {
    MemberNodes nodes;
    Time start = 0;             // max(promised start, now)
    Time end = 0;               // the promised end
    Resources per_member;       // the promised request
    bool placeholder = false;   // its slot was still free and is held in the profile
  };

  // in_cycle: a full cycle's walk in queue order (false: one arrival evaluated afterwards).
  CyclePass(const QueueConfig& config, const PreemptionPlanner* preemption,
            QueuePlanner::State& state, Plan& plan, bool in_cycle)
      : config_(config), preemption_(preemption), s_(state), plan_(plan), in_cycle_(in_cycle) {}

  // StarvingAt (model.h) with this pass's configuration. With StarvationRemedy::kReserve such a
  // workload gets a reservation past the depth; with kFront the queue order already put it first;
  // with kFrontReserve both.
  bool Starving(Time submit, Duration duration, Time now) const {
    return StarvingAt(config_, submit, duration, now);
  }

  // Plans the workload at 1-based `position`; appends to plan_.
  // promise: the workload held a reservation last cycle (its placeholder already taken back).
  void PlanOne(const PendingWorkload& w, const QueuePlanner::State::Facts& facts, double priority,
               int32_t position, Time now, const Promise* promise = nullptr);

  // Holds a promise's slot in the profile until its holder's turn, when the slot still fits
  // there (the nodes exist, are usable by the holder, and have the promised room from
  // promise.start to promise.end).
  bool AddPlaceholder(const PendingWorkload& w, const QueuePlanner::State::Facts& facts,
                      double priority, const Promise& promise);
  void RemovePlaceholder(const PendingWorkload& w, const Promise& promise);

 private:
  struct Placement {
    Time start = 0;
    MemberNodes nodes;
  };

  // PlanOne's steps, in order. Each returns true when it decided the workload's fate (a wait
  // status, a start or a preemption was appended to plan_).
  // 1. What the queue cannot fix by waiting for capacity (admission, hold, QOS, missing gang
  // members).
  bool WaitsForAdmission(const PendingWorkload& w, const QueuePlanner::State::Facts& facts,
                         int32_t position);
  // What the steps after the static checks share: the workload, where it stands, and whether the
  // memos may be used for it (the memo plumbing in one place).
  struct Turn {
    const PendingWorkload& w;
    const QueuePlanner::State::Facts& facts;
    double priority;
    int32_t position;
    Time now;
    const Promise* promise;
    const std::vector<char>& eligible;  // static eligibility of the workload's class
    Duration duration;                  // facts.duration
    RequestSize size;                   // what the memos compare
    // The failure memos assume the walk by descending priority of a full cycle; an arrival
    // evaluated later sits between them, which matters only where a node is reserved(W) for a
    // pending workload (usable only by higher priorities), or when time moved on.
    bool memo_valid;
    // Symmetric anti-affinity: the nodes the preemption search may use (EligibleSet::preempt_bits).
    // Null: `eligible`.
    const std::vector<char>* preempt_eligible = nullptr;
    // The class's set (its TryPreempt node lists are kept there); null: none kept.
    const QueuePlanner::State::EligibleSet* eligible_set = nullptr;

    bool KnownToFail(FailureMemo& memo) const {
      return memo_valid && memo.KnownToFail(facts.kind, facts.eligibility, size);
    }
    void Remember(FailureMemo& memo) const {
      if (memo_valid) memo.Failed(facts.kind, facts.eligibility, size);
    }
  };
  // Issue 26: a holder of reserved(W) nodes may use them, and a workload of equal priority before
  // it in the walk may not (the owner rule wants strictly higher): what failed for that one proves
  // nothing for the holder, so no memo is used for it (session 38's 60-s stall: 13 preemptors of
  // one priority, each beside its own free reserved node, all waiting because the first of them,
  // whose own node still ran work, could not start and its failure was remembered for the shape).
  bool HoldsReservedNodes(const std::string& id) const {
    return !s_.reserved_nodes_of.empty() && s_.reserved_nodes_of.contains(id);
  }
  // 3. Starts now if it fits without delaying any reservation (the profile holds them).
  bool StartsNow(const Turn& t);
  // A start or preemption of a workload whose members add to pod counts (PlacementRules).
  void CountPlaced(const PendingWorkload& w, const MemberNodes& nodes);
  // 4. Preempts, when the preemption planner finds victims (its QOS may preempt: checked by the
  // caller).
  bool Preempts(const Turn& t);
  // 5. Blocked: why (marks the queue blocked). Nothing eligible at all, reserved capacity, or not
  // enough capacity.
  WaitReason WhyBlocked(const Turn& t);
  // 5. Reserves the earliest placement in the window (or the promised slot), or waits without
  // one when none exists. within_depth: the reservation counts against the depth.
  void ReserveOrWait(const Turn& t, WaitReason reason, bool within_depth);
  // Issue 29: a workload whose not_before is after now: reserved at its earliest placement from
  // not_before on (or a promise no earlier), uncounted against the depth; waits kDependency.
  void ReserveNotBefore(const PendingWorkload& w, const QueuePlanner::State::Facts& facts, double priority,
                        int32_t position, const Promise* promise, const std::vector<char>& eligible);
  // 6. Beyond the reservation depth: waits with an estimate from the profile, without reserving.
  void WaitWithEstimate(const Turn& t, WaitReason reason);
  // The earliest start the NotBeforeMemo allows for this request (`now` when unknown).
  // Asked only when a placement is searched (most blocked workloads need none).
  Time NotBefore(const Turn& t);
  // EarliestPlacement from `bound` (none when bound is kForever), remembered in the
  // NotBeforeMemo: capacity only shrinks within a cycle, so a shape with no placement in the
  // window for a time limit d has none for any limit >= d either.
  // any_nodes: EarliestPlacement's (the caller reads the start alone).
  std::optional<Placement> Earliest(const Turn& t, Time bound, bool any_nodes = false);
  // Issue 26: the start Earliest(t, bound) would find when it is the search's first candidate
  // time S = RoundUp(max(bound, profile now)): the search returns S exactly when members fit at
  // S on the nodes with room then, which the last placement found for the shape shows when it
  // still fits there (SlotFits, against the profile as it is now). nullopt: not shown, search.
  // Records S in the NotBeforeMemo as Earliest would. Only the start: the nodes a search would
  // choose may differ, so reservations (which keep nodes) always search.
  std::optional<Time> StartFromWitness(const Turn& t, Time bound);
  // WhyItNeverFits for the turn's workload, reading the empty pool once per request per member
  // and eligibility class a cycle: the pool's nodes are fixed for the cycle, the eligible nodes
  // per class, and a long queue asks it of every workload past the window.
  std::optional<std::string> NeverFits(const Turn& t);
  internal::ShapeKey ShapeOf(const Turn& t) const {
    return internal::ShapeKey{t.w.per_member, std::max<int32_t>(1, t.w.members), t.w.kind, t.w.pack_topology,
                              t.facts.eligibility};
  }

  // Visits every node where a member of `w` might have room at time t >= the profile's now: the
  // free index of the scarcest resource it asks for (room at the profile's now) plus the nodes
  // where a block ended in (profile now, t]; every node for requests of neither cpu nor an
  // extended resource. Stops when `visit` returns false. Defined in planner_placement.cc, whose
  // searches are its only callers (a template: a caller elsewhere would not link).
  template <typename Visit>
  void ForEachNodeWithRoomAt(const PendingWorkload& w, Time t, Visit visit);
  // Issue 26 (thirteenth pass): visits, ascending, a superset of the nodes where a member of `w`
  // has room at t >= the profile's now, given that no block's usage is negative: among the nodes
  // with ScarceSlot's resource (`scarce` >= 0), those with a block end in (now, t] and those whose
  // free now holds the request's amount of it. Stops when `visit` returns false.
  template <typename Visit>
  void ForEachStartCandidate(const PendingWorkload& w, Time t, int scarce, Visit visit);
  const QueuePlanner::State::EligibleSet& StaticEligible(const PendingWorkload& w, int32_t eclass);
  bool Usable(NodeIndex n, const PendingWorkload& w, double priority,
              const std::vector<char>& eligible) const;
  // TryStartNow's question about a node with a block starting before the end (cap >= 1): its
  // answer when no, remembered in s_.no_room_now while the node is unchanged (issue 26: ~27,000
  // such questions per steady cycle, nearly all no, each sweeping a dozen blocks).
  int64_t CopiesNowWithBlockAhead(const PendingWorkload& w, NodeIndex n, Time now, Duration duration, int64_t cap,
                                  int16_t tenant, int slots);
  // duration: the workload's run time (RunDuration, from its Facts).
  std::optional<MemberNodes> TryStartNow(const PendingWorkload& w, Duration duration, double priority,
                                         const std::vector<char>& eligible, Time now);
  // Fluxion's avail_time_first over a node set, driven by time: a node's availability can only
  // rise when one of its own blocks ends, so the candidate start times are `on_or_after` and the
  // block ends after it, visited in ascending order (one ordered list for the whole pool). At
  // each candidate only the nodes whose block ended there are re-examined; once the nodes seen
  // feasible add up to the gang, they are re-verified at that time (a node feasible earlier can
  // be blocked later by a block that starts after its last check) and the first time that holds
  // is the answer. A single-member workload stops at the first node that frees up for it.
  // The nodes found without room at the search's start are remembered (s_.no_room, issue 26):
  // the next search of the request from the same start skips them while they are unchanged.
  //
  // Node choice (PreferLatestFreed): among the nodes with room at that time, those whose last
  // block ended latest before it come first, the nodes free since the search began last, so the
  // reservation leaves the nodes free now to backfill (textbook EASY's extra processors).
  // any_nodes (issue 26, thirteenth pass: an estimate, which reads the start alone): the same
  // start, with any nodes that hold the members then instead of the choice above (the search at
  // the first candidate time stops once its feasible nodes hold them; no sort). Ignored while a
  // block of negative usage exists (ForEachStartCandidate; the tests compare the two that way).
  std::optional<Placement> EarliestPlacement(const PendingWorkload& w, Duration duration, double priority,
                                             const std::vector<char>& eligible, Time on_or_after,
                                             bool any_nodes = false);
  // EarliestPlacement's first candidate time: notes in s_.placement every node with room for a
  // member at `start` (copies_at), or stops once the nodes hold `enough` members (a search for the
  // start alone); for a scarce resource it walks ForEachStartCandidate's nodes ascending and a
  // one-member search (lowest_wins) stops at the first with room.
  template <typename CopiesAt>
  void NoteAtStart(const PendingWorkload& w, Time start, int scarce, Duration duration, bool lowest_wins,
                   int64_t enough, CopiesAt copies_at);
  // The extended resource `w` asks for that the fewest nodes have, when at most a quarter of the
  // nodes have it and no block's usage is negative; else -1. A node without it never has room
  // for a member (its free there is 0 at every instant), so EarliestPlacement's answer is the same
  // without asking it (issue 26: a GPU request asked every node whose block ended).
  int ScarceSlot(const PendingWorkload& w) const;
  // True when EarliestPlacement from `start` (its first candidate time) would find nothing, shown
  // node by node over the nodes with ScarceSlot's resource: none the search may use has room for
  // one member at `start` or at any grid time one of its own block ends rounds up to, up to the
  // horizon; the search asks every node at those times only, and usage rises only at block ends
  // (issue 26: ~17,000 block ends of the pool walked by each such search). False: not shown.
  bool NoNodeEverHasRoom(const PendingWorkload& w, Duration duration, double priority,
                         const std::vector<char>& eligible, Time start, int16_t tenant, int slots,
                         int scarce) const;
  // preference_order: the candidates come best first (a reservation's, see EarliestPlacement)
  // and packing keeps that order inside a domain; otherwise packing orders by node.
  MemberNodes ChooseNodes(const PendingWorkload& w,
                          const std::vector<std::pair<NodeIndex, int64_t>>& candidates,
                          bool preference_order = false);
  // no_room: set when the preemption planner ruled the preemptor out (PlanOrRuleOut).
  // On a decision, s_.scratch_victims holds its victims as indices into snapshot->running.
  // kept: the list kept for `eligible` (EligibleSet::preempt_nodes), or null.
  std::optional<PreemptDecision> TryPreempt(const PendingWorkload& w, double priority,
                                            const std::vector<char>& eligible, Time now, bool* no_room,
                                            QueuePlanner::State::EligibleSet::PreemptNodes* kept = nullptr);
  void ListPreemptNodes(const PendingWorkload& w, double priority, const std::vector<char>& eligible,
                        std::vector<NodeIndex>& out);
  void KeepPreemptNodes(const std::vector<char>& eligible, QueuePlanner::State::EligibleSet::PreemptNodes& kept);
  void Commit(const PendingWorkload& w, Duration duration, const MemberNodes& nodes, Time start,
              bool reservation);
  // Every member of `w` fits on `nodes` (member i on nodes[i]) over [start, start + duration).
  bool SlotFits(const PendingWorkload& w, Duration duration, double priority,
                const std::vector<char>& eligible, const MemberNodes& nodes, Time start);
  void EmitOwnerChanges(const PendingWorkload& w, const MemberNodes& nodes);
  void Wait(std::string_view id, WaitReason reason, std::string message, int32_t position,
            std::optional<Time> estimate, bool has_reservation);
  // The same with a constant text (no allocation).
  void Wait(std::string_view id, WaitReason reason, const char* fixed_message,
            int32_t position, std::optional<Time> estimate, bool has_reservation);
  // witnesses: the nodes that made it fit.
  bool FitsIgnoringReservations(const PendingWorkload& w, Duration duration, double priority,
                                const std::vector<char>& eligible, Time now,
                                std::vector<NodeIndex>* witnesses);
  // Would start now if the nodes reserved(W) for others (a preemption under way) were usable:
  // then the mark, not capacity, is why it waits (kReservedForHigherPriority).
  bool FitsNowButForReservedNodes(const PendingWorkload& w, Duration duration, double priority,
                                  const std::vector<char>& eligible, Time now);

  const QueueConfig& config_;
  const PreemptionPlanner* preemption_;
  QueuePlanner::State& s_;
  Plan& plan_;
  const bool in_cycle_;
};

// Dynamic part of eligibility: the owner (reserved(W) only for W or higher) and this cycle's
// preemption claims. Inline, always (GCC made it a call from the searches' lambdas): it runs
// once per node visited in every search.
[[gnu::always_inline]] inline bool CyclePass::Usable(NodeIndex n, const PendingWorkload& w, double priority,
                              const std::vector<char>& eligible) const {
  if (!eligible[n] || s_.claimed[n]) return false;
  if (!s_.reserved_owner[n]) return true;
  const NodeOwner& owner = s_.snapshot->nodes[n].owner;
  if (owner.kind != OwnerKind::kReserved || owner.reserved_for == w.id) return true;
  auto it = s_.reserved_for_priority.find(owner.reserved_for);
  return it != s_.reserved_for_priority.end() && priority > it->second;
}

}  // namespace onequeue::queue::internal

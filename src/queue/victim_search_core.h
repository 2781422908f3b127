#pragma once
// The victim search of one preemptor (victim_search.h), internal to its two files:
//   victim_search.cc        the candidate nodes and units: the usable nodes, the cap's window walk,
//                           the nodes a lean search leaves out, each slot's units (UseNodes); Run
//   victim_search_exact.cc  the exact search over those slots: greedy bound, node by node, iterative
//                           deepening, the steps counted against the work budget, the choice
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "queue/victim_search.h"

namespace onequeue::queue::internal::victims {

struct Cost {
  // For a by-class preemptor, its highest PriorityClass (= max_priority), compared before the
  // count: kube-scheduler takes more victims of lower classes (on one node it reprieves the
  // highest first; across nodes it prefers the lowest highest class) rather than one of a higher
  // class. Constant for any other preemptor, whose sets are the fewest victims first.
  double class_first = -std::numeric_limits<double>::infinity();
  int32_t count = 0;
  // Empty sets weigh below every unit (PriorityClass values may be negative).
  double max_priority = -std::numeric_limits<double>::infinity();  // the highest VictimSearch::Weight of its units
  // The highest multifactor priority: breaks ties of PriorityClass for a by-class preemptor (for
  // any other it equals max_priority).
  double max_multifactor = -std::numeric_limits<double>::infinity();
  int64_t run_time_lost = 0;
  friend bool operator<(const Cost& a, const Cost& b) {
    return std::tie(a.class_first, a.count, a.max_priority, a.max_multifactor, a.run_time_lost) <
           std::tie(b.class_first, b.count, b.max_priority, b.max_multifactor, b.run_time_lost);
  }
};

// The search state: capacity per slot with the chosen units applied, and how many member copies
// fit in total. Apply/Unapply are O(slots the unit touches).
class FitState {
 public:
  FitState(Scratch& s, const VictimIndex& index, const Resources& per_member, int32_t members)
      : s_(s), index_(index), per_member_(per_member), members_(members) {
    s_.copies.assign(s_.capacity.size(), 0);
    for (size_t n = 0; n < s_.capacity.size(); ++n) Refresh(static_cast<int>(n));
  }

  bool Fits() const { return total_copies_ >= members_; }
  int64_t Copies(int slot) const { return s_.copies[slot]; }

  bool WithinBudget(const SearchUnit& u) const {
    for (uint32_t k = u.disruptions.begin; k < u.disruptions.end; ++k) {
      const auto& [group, pods] = index_.disruptions[k];
      if (s_.budget_left[group] < pods) return false;
    }
    return true;
  }

  void Apply(const SearchUnit& u) { Change(u, +1); }
  void Unapply(const SearchUnit& u) { Change(u, -1); }
  // Dry: Apply and Unapply change the budgets only (capacity, blockers and copies stay), for a
  // search its caller proved cannot make room (VictimSearch::CannotMakeRoom): Fits() stays false
  // as it would, and WithinBudget answers as it would, so the search takes the same steps.
  void SetDry(bool dry) { dry_ = dry; }
  bool dry() const { return dry_; }

 private:
  void Change(const SearchUnit& u, int sign) {
    for (uint32_t k = u.disruptions.begin; k < u.disruptions.end; ++k) {
      s_.budget_left[index_.disruptions[k].first] -= sign * index_.disruptions[k].second;
    }
    if (dry_) return;
    for (uint32_t k = u.blockers.begin; k < u.blockers.end; ++k) s_.slot_blockers[s_.blockers[k]] -= sign;
    for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) {
      const int slot = s_.frees[k].first;
      const Resources& freed = index_.frees[s_.frees[k].second].second;
      if (sign > 0) {
        s_.capacity[slot] += freed;
      } else {
        s_.capacity[slot] -= freed;
      }
    }
    for (uint32_t k = u.blockers.begin; k < u.blockers.end; ++k) Refresh(s_.blockers[k]);
    for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) Refresh(s_.frees[k].first);
  }

  void Refresh(int slot) {
    total_copies_ -= s_.copies[slot];
    s_.copies[slot] = s_.slot_blockers[slot] > 0 ? 0 : s_.capacity[slot].CopiesOf(per_member_, members_);
    total_copies_ += s_.copies[slot];
  }

  Scratch& s_;
  const VictimIndex& index_;
  Resources per_member_;
  int32_t members_;
  int64_t total_copies_ = 0;
  bool dry_ = false;
};

// One decision: the candidate nodes, the units on them, then the exact search over those.
class VictimSearch {
 public:
  VictimSearch(const PreemptionInput& in, const VictimIndex& index, ViableMemo& memo, Scratch& scratch,
               int64_t work_budget, bool with_reason, bool scarce_nodes, bool slot_shortcuts)
      : in_(in),
        index_(index),
        memo_(memo),
        s_(scratch),
        work_budget_(work_budget),
        with_reason_(with_reason),
        by_class_(ByClass(*in.preemptor)),
        scarce_allowed_(scarce_nodes),
        slot_shortcuts_(slot_shortcuts) {}

  std::optional<PreemptionChoice> Run(const QosPolicy& preemptor_qos);
  // After Run returned nullopt: true when the members cannot fit on the usable nodes even with
  // every candidate gone (PreemptionPlanner::PlanOrRuleOut), or there is no usable node.
  bool NoRoom() const { return no_room_; }

 private:
  // Cached per candidate key (ViableMemo): the window walk and UseNodes of every search with the
  // same key ask it.
  bool Candidate(int unit) const;
  bool CandidateUncached(int unit) const;  // earlier victims aside
  // What a unit weighs in this search (Cost::max_priority): its multifactor priority, or, for a
  // preemptor that goes by PriorityClass (issue 28), its highest PriorityClass value, as
  // kube-scheduler prefers the victims of the lowest PriorityClass. Its candidates all go by
  // class (CandidateUncached), and UseNodes orders them by it.
  double Weight(const IndexUnit& u) const {
    return by_class_ ? static_cast<double>(u.max_class_priority) : u.max_priority;
  }
  // A reference into the input, the snapshot or the index (all outlive the search): no copy of
  // 16 amounts per node asked (issue 26: ~300,000 per steady cycle); inline, as ~500,000 calls a
  // steady cycle cost ~7 M instructions as calls.
  const Resources& FreeNow(NodeIndex n) const {
    if (in_.free_now != nullptr) {
      return static_cast<size_t>(n) < in_.free_now->size() ? (*in_.free_now)[n] : in_.snapshot->nodes[n].allocatable;
    }
    return index_.derived_free(n);
  }
  int Blockers(NodeIndex n) const { return index_.workloads_of(n, Other()); }
  // Every FreeNow(n)[k] <= the node's allocatable[k]: the caller's word for its free_now, or no
  // negative use among the running workloads for the index's (issue 26, twelfth pass).
  bool FreeWithinAllocatable() const {
    return in_.free_now != nullptr ? in_.free_now_within_allocatable : !index_.any_negative_use();
  }
  WorkloadKind Other() const {
    return in_.preemptor->kind == WorkloadKind::kPodGroup ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
  }
  // The usable nodes: s_.usable, or the caller's eligible list itself when it gave its word
  // that each is usable (PreemptionInput::eligible_sorted_unclaimed; no copy per search).
  const std::vector<NodeIndex>& Usable() const { return *usable_; }
  bool FindUsable(const QosPolicy& preemptor_qos);
  void KeepUnclaimedAscending();
  void ExcludeEarlierVictims();
  void SelectMemo();
  bool RequireCarriers();
  // Units node `n` needs gone before a member may use it (anti-affinity's carriers).
  int Required(NodeIndex n) const {
    if (required_.empty()) return 0;
    auto lo = std::lower_bound(required_.begin(), required_.end(), std::make_pair(n, -1));
    auto hi = std::lower_bound(lo, required_.end(), std::make_pair(n + 1, -1));
    return static_cast<int>(hi - lo);
  }
  bool FitsWithoutVictims() const;
  enum class PrefixFit { kFits, kDoesNotFit, kUnknown };
  PrefixFit FitsOnAscendingPrefix() const;
  PrefixFit FitsOnNodesWithScarce() const;
  int64_t ViableCopies(NodeIndex n) const;
  ViableMemo::Viable ViableUncached(NodeIndex n) const;
  void Count(NodeIndex n, const IndexUnit& unit, int sign, ViableMemo::Viable& viable) const;
  bool CandidateAtAnyPriority(int unit) const;
  bool ChooseWindow();
  bool ChooseWindowScarce(int64_t usable, int64_t wanted, int64_t offset);
  void ChooseScarce();
  bool ScarceKept(int r);
  bool UseLeanNodes();
  bool UseScarceNodes();
  void CountSkipped(size_t slot);
  void UseNodes(bool all_usable);
  void CollectCandidateUnits();
  std::optional<PreemptionChoice> SearchNodes();
  std::optional<PreemptionChoice> SearchNodesOnce();
  void Greedy(FitState& state);
  void PerNode(FitState& state);
  bool CannotMakeRoom(const FitState& state, int slot, const int* begin, const int* end) const;
  int64_t DryStepsBound(const int* begin, const int* end) const;
  int64_t StepsBound(int64_t k, int64_t per_call) const;
  Cost SlotBound(double weight) const;
  void CountLeftOut(size_t& at, size_t slot);
  bool MayLeaveOut(NodeIndex n, const ViableMemo::Viable& viable) const;
  void ResetSearch(int64_t work);
  // `slot`: the one slot all of [begin, end) touch (PerNode), or -1.
  void Deepen(FitState& state, const int* begin, const int* end, int slot = -1);
  void SearchOneVictim(FitState& state, int slot, const int* begin, const int* end);
  int FitsAlone(const FitState& state, int slot, const SearchUnit& su) const;
  void Search(FitState& state, const int* begin, const int* end, const int* at, Cost cost, int32_t count_bound);
  PreemptionChoice MakeChoice(FitState& state) const;
  // Counts `steps` search steps that would each have been pruned, against the work budget
  // exactly as Search counts them one by one (so the same searches run out of budget, and
  // decide, as without the shortcut).
  void CountPrunedSteps(int64_t steps) {
    if (work_ + steps > work_budget_) {
      work_ = work_budget_ + 1;
      exhausted_ = true;
    } else {
      work_ += steps;
    }
  }

  // One step of Search over a unit, shared with SearchOneVictim. The units come cheapest first,
  // so by non-decreasing priority: once one alone would make a set of the best set's size at
  // least and of higher priority, so would every later one (the caller counts them at once).
  bool PrunesTheRest(const Cost& cost, const IndexUnit& u) const {
    return cost.count + 1 >= best_cost_->count && std::max(cost.max_priority, Weight(u)) > best_cost_->max_priority;
  }
  // The cost of the set `cost` with unit `u` added.
  Cost WithUnit(const Cost& cost, const IndexUnit& u) const {
    Cost next = cost;
    next.count += u.count;
    next.max_priority = std::max(cost.max_priority, Weight(u));
    next.max_multifactor = std::max(cost.max_multifactor, u.max_priority);
    next.run_time_lost += u.run_time_lost;
    if (by_class_) next.class_first = next.max_priority;
    return next;
  }

  const PreemptionInput& in_;
  const VictimIndex& index_;
  ViableMemo& memo_;
  const std::vector<NodeIndex>* usable_ = nullptr;  // Usable()
  int memo_entry_ = -1;  // memo_'s entry for this search's key (SelectMemo)
  int memo_base_ = -1;   // the entry its node entries start from (ViableMemo::Base), or -1
  Scratch& s_;
  int64_t work_budget_;
  bool with_reason_;
  bool by_class_;
  int64_t work_ = 0;
  bool exhausted_ = false;
  bool capped_ = false;
  bool walked_all_ = false;  // ChooseWindow walked every usable node (s_.viable is complete)
  bool lean_ = false;        // the slots are UseLeanNodes': the nodes left out are in s_.left_out
  bool no_room_ = false;
  bool budget_skipped_ = false;  // Greedy passed over a unit for a disruption budget
  // PerNode: false skips the slots whose units cannot make room, adding a bound of the steps
  // their search would count to skipped_steps_; true searches them dry, counting each step.
  bool exact_steps_ = false;
  int64_t skipped_steps_ = 0;
  bool fits_already_ = false;
  // Issue 26, eleventh pass: the extended resource slot whose ScarceNodes this search uses (-1:
  // none): the window walk asks only the kept nodes (none of the others can hold a member), and
  // a one-member search over every usable node leaves out the kSkip nodes (scarce_lean_), their
  // steps bounded in PerNode (CountSkipped, from node skipped_to_ on).
  bool scarce_allowed_ = true;
  // Issue 26, thirteenth pass (CheapestVictimsPlanner's slot_shortcuts): PerNode does not ask
  // CannotMakeRoom of a slot found viable, and Deepen's bound 1 tries a unit touching one slot
  // without applying it (SearchOneVictim).
  bool slot_shortcuts_ = true;
  int scarce_ = -1;
  const ScarceNodes* scarce_nodes_ = nullptr;
  bool scarce_lean_ = false;
  size_t skipped_to_ = 0;
  int32_t skipped_bound_ = 0;                           // CountSkipped's bound, 0: none yet
  const std::vector<int64_t>* skipped_before_ = nullptr;  // its BoundBefore
  std::optional<Cost> best_cost_;
  // (node, index unit): the carriers that must be victims for a member to use the node, sorted.
  std::vector<std::pair<NodeIndex, int>> required_;
  std::vector<std::pair<int, int>> required_by_unit_;  // (index unit, slot) of UseNodes' slots
};

}  // namespace onequeue::queue::internal::victims

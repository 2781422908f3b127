// The exact search of one preemptor's victim search over the slots UseNodes set (victim_search_core.h):
// a greedy bound, the cheapest set node by node, iterative deepening for gangs, the steps counted
// against the work budget (and those a skipped slot would have counted), and the choice made.
#include <algorithm>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "queue/planner_state.h"
#include "queue/victim_search_core.h"

namespace onequeue::queue::internal::victims {

// The search over the slots, first skipping what PerNode may skip. The steps skipped count only
// if the work budget runs out: when the steps counted plus a bound of those skipped stay within
// it, it ran out in neither, and the search decided as the one counting every step; else it
// runs again, counting them (PerNode runs those slots dry).
std::optional<PreemptionChoice> VictimSearch::SearchNodes() {
  const int64_t work = work_;
  exact_steps_ = false;
  skipped_steps_ = 0;
  std::optional<PreemptionChoice> choice = SearchNodesOnce();
  if (!exhausted_ && skipped_steps_ <= work_budget_ - work_) return choice;
  ResetSearch(work);
  if (scarce_lean_) {  // over the kept nodes (UseScarceNodes): again over every usable node
    scarce_lean_ = false;
    scarce_ = -1;
    walked_all_ = false;  // the kSkip nodes were not asked
    UseLeanNodes();
    return SearchNodes();
  }
  if (lean_) {  // as the search over every node would, it searches again counting every step
    lean_ = false;
    UseNodes(/*all_usable=*/true);
  }
  exact_steps_ = true;
  return SearchNodesOnce();
}

void VictimSearch::ResetSearch(int64_t work) {
  work_ = work;
  exhausted_ = false;
  best_cost_.reset();
  budget_skipped_ = false;
  fits_already_ = false;
}

std::optional<PreemptionChoice> VictimSearch::SearchNodesOnce() {
  s_.chosen.clear();
  FitState state(s_, index_, in_.preemptor->per_member, in_.preemptor->members);
  if (state.Fits()) {  // nothing to preempt: it fits already
    fits_already_ = true;
    return std::nullopt;
  }
  Greedy(state);
  if (!best_cost_) return std::nullopt;  // even every candidate together would not make room
  PerNode(state);
  if (in_.preemptor->members > 1) {
    s_.all.resize(s_.units.size());
    for (size_t i = 0; i < s_.all.size(); ++i) s_.all[i] = static_cast<int>(i);
    Deepen(state, s_.all.data(), s_.all.data() + s_.all.size());
  }
  return MakeChoice(state);
}

// Cheapest-first until the preemptor fits, then drop (most expensive first) every unit that is
// not needed. Gives the bound the exact search starts from.
void VictimSearch::Greedy(FitState& state) {
  std::vector<int>& taken = s_.taken;
  taken.clear();
  for (size_t i = 0; i < s_.units.size() && !state.Fits(); ++i) {
    if (!state.WithinBudget(s_.units[i])) {
      budget_skipped_ = true;
      continue;
    }
    state.Apply(s_.units[i]);
    taken.push_back(static_cast<int>(i));
  }
  if (!state.Fits()) {
    for (int i : taken) state.Unapply(s_.units[i]);
    return;
  }
  for (int k = static_cast<int>(taken.size()) - 1; k >= 0; --k) {
    state.Unapply(s_.units[taken[k]]);
    if (state.Fits()) {
      taken.erase(taken.begin() + k);
    } else {
      state.Apply(s_.units[taken[k]]);
    }
  }
  Cost cost;
  for (int i : taken) {
    const IndexUnit& u = index_.unit(s_.units[i].unit);
    cost.count += u.count;
    cost.max_priority = std::max(cost.max_priority, Weight(u));
    cost.max_multifactor = std::max(cost.max_multifactor, u.max_priority);
    if (by_class_) cost.class_first = cost.max_priority;
    cost.run_time_lost += u.run_time_lost;
  }
  best_cost_ = cost;
  s_.best.assign(taken.begin(), taken.end());
  for (int i : taken) state.Unapply(s_.units[i]);
}

// Iterative deepening on the victim count over [begin, end) (search units, cheapest first): the
// first count at which any set fits is the fewest; within it, branch and bound on (highest
// priority, run time lost). Starts from best_cost_ (greedy, or an earlier search). By class
// (Cost::class_first), Greedy's cheapest-first prefix already has the lowest highest class any
// fitting set can have (more victims only free more), so the better sets are among the fewer.
void VictimSearch::Deepen(FitState& state, const int* begin, const int* end, int slot) {
  if (!best_cost_) return;
  const int32_t best_count = best_cost_->count;
  for (int32_t bound = 1; bound <= best_count && !exhausted_; ++bound) {
    if (bound == 1 && slot >= 0 && slot_shortcuts_ && in_.preemptor->members == 1) {
      SearchOneVictim(state, slot, begin, end);
    } else {
      Search(state, begin, end, begin, Cost{}, bound);
    }
    if (best_cost_->count <= bound) return;  // nothing with fewer victims exists here
  }
}

// Search(state, begin, end, begin, Cost{}, 1) for one member over the units of slot `slot`
// (PerNode's, from a state that holds no copy: the member does not fit), without applying a unit
// that touches that slot alone (issue 26, the steady cycle's thirteenth pass: ~8,000 slots a
// steady cycle, each unit applied and taken back). Same steps, same sets, same order: at bound 1
// a unit is tried alone; Search's call under it either fits (a set, no step) or, not fitting,
// counts one step per later unit, pruned or over the bound (next.count > 1), so all of them at
// once (CountPrunedSteps, which runs out of budget exactly when the steps one by one would). A
// unit alone makes the member fit exactly when its slot, with no workload of the other world left
// and the unit's frees added, covers the request (FitState::Refresh; every other slot holds none).
void VictimSearch::SearchOneVictim(FitState& state, int slot, const int* begin, const int* end) {
  const Cost cost;
  for (const int* c = begin; c < end && !exhausted_; ++c) {
    if (++work_ > work_budget_) {
      exhausted_ = true;
      return;
    }
    const SearchUnit& su = s_.units[*c];
    const IndexUnit& u = index_.unit(su.unit);
    if (PrunesTheRest(cost, u)) {
      CountPrunedSteps(end - c - 1);
      return;
    }
    const Cost next = WithUnit(cost, u);
    if (next.count > 1 || !(next < *best_cost_) || !state.WithinBudget(su)) continue;
    work_ += static_cast<int64_t>(su.steps);
    const int fits = FitsAlone(state, slot, su);
    if (fits < 0) {  // it touches another slot: as Search does
      state.Apply(su);
      s_.chosen.push_back(*c);
      Search(state, begin, end, c + 1, next, 1);
      s_.chosen.pop_back();
      state.Unapply(su);
    } else if (fits > 0) {
      best_cost_ = next;
      s_.best.assign(s_.chosen.begin(), s_.chosen.end());
      s_.best.push_back(*c);
    } else if (end - c - 1 > 0) {
      CountPrunedSteps(end - c - 1);
    }
  }
}

// Whether applying `su` alone makes the member fit, when it frees one entry, on `slot`, and
// removes workloads of the other world there only: 1 or 0; -1 when it touches another slot.
int VictimSearch::FitsAlone(const FitState& state, int slot, const SearchUnit& su) const {
  if (su.frees.size() != 1 || s_.frees[su.frees.begin].first != slot) return -1;
  int blockers = s_.slot_blockers[slot];
  for (uint32_t k = su.blockers.begin; k < su.blockers.end; ++k) {
    if (s_.blockers[k] != slot) return -1;
    --blockers;
  }
  if (state.dry() || blockers > 0) return 0;  // dry: Fits() stays false
  const Resources& room = s_.capacity[slot];
  const Resources& freed = index_.frees[s_.frees[su.frees.begin].second].second;
  const Resources& request = in_.preemptor->per_member;
  for (int r = 0; r < kMaxResourceKinds; ++r) {
    if (request[r] > room[r] + freed[r]) return 0;
  }
  return 1;
}

void VictimSearch::Search(FitState& state, const int* begin, const int* end, const int* at, Cost cost,
                          int32_t count_bound) {
  if (state.Fits()) {
    if (cost < *best_cost_) {
      best_cost_ = cost;
      s_.best.assign(s_.chosen.begin(), s_.chosen.end());
    }
    return;  // adding victims only costs more
  }
  for (const int* c = at; c < end && !exhausted_; ++c) {
    // Every step counts against the budget, pruned or not, so one call stays bounded.
    if (++work_ > work_budget_) {
      exhausted_ = true;
      return;
    }
    const SearchUnit& su = s_.units[*c];
    const IndexUnit& u = index_.unit(su.unit);
    if (PrunesTheRest(cost, u)) {
      CountPrunedSteps(end - c - 1);
      return;
    }
    const Cost next = WithUnit(cost, u);
    if (next.count > count_bound || !(next < *best_cost_) || !state.WithinBudget(su)) continue;
    work_ += static_cast<int64_t>(su.steps);
    state.Apply(su);
    s_.chosen.push_back(*c);
    Search(state, begin, end, c + 1, next, count_bound);
    s_.chosen.pop_back();
    state.Unapply(su);
  }
}

// Node by node: the cheapest set among the units that touch one node. When the preemptor is a
// single member this is the whole answer: in a cheapest set every unit touches the node the
// member lands on (any other unit could be dropped), so the best over all nodes is optimal.
// For gangs it gives the global search a tight bound to start from.
void VictimSearch::PerNode(FitState& state) {
  const size_t slots = s_.nodes.size();
  s_.by_slot_begin.assign(slots + 1, 0);
  // A unit touches the slots it frees, and those where it is a required victim without freeing.
  const auto frees_on = [this](const SearchUnit& u, int slot) {
    for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) {
      if (s_.frees[k].first == slot) return true;
    }
    return false;
  };
  for (const SearchUnit& u : s_.units) {
    for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) ++s_.by_slot_begin[s_.frees[k].first + 1];
    for (uint32_t k = u.required_begin; k < u.blockers.end; ++k) {
      if (!frees_on(u, s_.blockers[k])) ++s_.by_slot_begin[s_.blockers[k] + 1];
    }
  }
  for (size_t n = 0; n < slots; ++n) s_.by_slot_begin[n + 1] += s_.by_slot_begin[n];
  s_.by_slot.resize(s_.by_slot_begin[slots]);
  s_.taken.assign(s_.by_slot_begin.begin(), s_.by_slot_begin.end() - 1);  // fill positions
  for (size_t i = 0; i < s_.units.size(); ++i) {
    const SearchUnit& u = s_.units[i];
    for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) s_.by_slot[s_.taken[s_.frees[k].first]++] = static_cast<int>(i);
    for (uint32_t k = u.required_begin; k < u.blockers.end; ++k) {
      if (!frees_on(u, s_.blockers[k])) s_.by_slot[s_.taken[s_.blockers[k]]++] = static_cast<int>(i);
    }
  }
  size_t left_out = 0;  // UseLeanNodes' nodes, counted in their place among the slots
  skipped_to_ = 0;
  skipped_bound_ = 0;
  for (size_t slot = 0; slot < slots && !exhausted_; ++slot) {
    if (lean_) CountLeftOut(left_out, slot);
    if (scarce_lean_) CountSkipped(slot);
    if (exhausted_) break;
    const int* begin = s_.by_slot.data() + s_.by_slot_begin[slot];
    const int* end = s_.by_slot.data() + s_.by_slot_begin[slot + 1];
    if (begin == end) continue;
    // Only a strictly cheaper set replaces the best, so a slot whose bound is not below it has
    // nothing to give. (Then the best has one victim, so Deepen would make one pass over the
    // slot's units, every one pruned: its steps are counted as it would count them.)
    if (!(SlotBound(Weight(index_.unit(s_.units[*begin].unit))) < *best_cost_)) {
      CountPrunedSteps(end - begin);
      continue;
    }
    // Most slots of a full pool (issue 26: ~4,700 of 5,000 per search) cannot take a member
    // whatever goes: their search would only count steps against the budget (SearchNodes).
    // A node this search found viable holds a member with every candidate on it gone, so
    // CannotMakeRoom is false there (without carriers, which ViableCopies does not count).
    const bool viable = slot_shortcuts_ && required_.empty() && s_.slot_viable[slot];
    if (!viable && CannotMakeRoom(state, static_cast<int>(slot), begin, end)) {
      if (!exact_steps_) {
        skipped_steps_ = std::min(work_budget_ + 1, skipped_steps_ + DryStepsBound(begin, end));
        continue;
      }
      state.SetDry(true);
    }
    Deepen(state, begin, end, static_cast<int>(slot));
    state.SetDry(false);
  }
  if (lean_ && !exhausted_) CountLeftOut(left_out, slots);
  if (scarce_lean_ && !exhausted_) CountSkipped(slots);
}

// The kSkip nodes UseScarceNodes passed over below slot `slot`'s node (every node from
// skipped_to_ on, when `slot` is past the last): a bound of the steps each would count in the
// search over every usable node (ScarceNodes::BoundBefore at the deepening bound PerNode has
// there, the best set's count: a kSkip node finds no set, so the best is the same at its place),
// added to those skipped: the decision stands only if the budget covers them (SearchNodes).
void VictimSearch::CountSkipped(size_t slot) {
  const size_t end = slot < s_.nodes.size() ? static_cast<size_t>(s_.nodes[slot]) : scarce_nodes_->of.size();
  const int32_t bound = std::max<int32_t>(1, best_cost_->count);
  int64_t steps = work_budget_ + 1;
  if (bound <= ScarceNodes::kMaxBound) {
    if (bound != skipped_bound_) {  // the sums of this bound, asked once per bound a search reaches
      skipped_before_ = &scarce_nodes_->BoundBefore(bound);
      skipped_bound_ = bound;
    }
    const std::vector<int64_t>& before = *skipped_before_;
    if (before[end] < ScarceNodes::kSaturated) steps = before[end] - before[skipped_to_];
  }
  skipped_steps_ = std::min(work_budget_ + 1, skipped_steps_ + std::min(work_budget_ + 1, steps));
  skipped_to_ = end;
}

// A lower bound of every set of a slot's units whose cheapest weighs `weight`: one victim at
// least, of at least that priority (the first: cheapest first), no run time lost. By class, a
// later unit of the same class may have a lower multifactor priority.
Cost VictimSearch::SlotBound(double weight) const {
  Cost bound;
  bound.count = 1;
  bound.max_priority = weight;
  bound.max_multifactor = by_class_ ? -std::numeric_limits<double>::infinity() : weight;
  bound.run_time_lost = 0;
  if (by_class_) bound.class_first = weight;
  return bound;
}

// What PerNode does with each node UseLeanNodes left out before slot `slot` (kept and left-out
// nodes keep the usable nodes' order), from s_.left_out[at] on, had it been a slot: its k units
// touch it alone and cannot make room (so CannotMakeRoom holds), each frees one entry there (so
// DryStepsBound is StepsBound(k, 2k)). Same steps counted, same bound added up, at the same
// point: the lean search runs out of budget, or is searched again counting every step, exactly
// when the search over every node would.
void VictimSearch::CountLeftOut(size_t& at, size_t slot) {
  for (; at < s_.left_out.size() && s_.left_out[at].before <= slot && !exhausted_; ++at) {
    const Scratch::LeftOut& node = s_.left_out[at];
    if (!(SlotBound(node.cheapest) < *best_cost_)) {
      CountPrunedSteps(node.units);
    } else if (!exact_steps_) {
      skipped_steps_ = std::min(work_budget_ + 1, skipped_steps_ + StepsBound(node.units, 2 * node.units));
    }
  }
}

// At least the steps Deepen(state, begin, end) counts when no subset makes room (best_cost_
// unchanged): bounds 1..B (B = best_cost_->count); for bound b, a Search call per set of at most b
// units (each counts one victim at least), each call at most one step per unit plus the frees of
// the units it applies. Saturates past the work budget.
int64_t VictimSearch::DryStepsBound(const int* begin, const int* end) const {
  int64_t per_call = end - begin;
  for (const int* c = begin; c < end; ++c) per_call += s_.units[*c].steps;
  return StepsBound(end - begin, per_call);
}

// DryStepsBound of k units whose calls take at most `per_call` steps each.
int64_t VictimSearch::StepsBound(int64_t k, int64_t per_call) const {
  const int64_t limit = work_budget_ + 1;
  int64_t total = 0;
  int64_t calls = 0;   // sets of at most b units: sum of C(k, j), j <= b
  int64_t choose = 1;  // C(k, j)
  for (int64_t b = 0; b <= best_cost_->count && total < limit; ++b) {
    if (b > 0) choose = b > k ? 0 : std::min(limit, choose * (k - b + 1) / b);
    calls = std::min(limit, calls + choose);
    if (b == 0) continue;
    total = calls > limit / std::max<int64_t>(1, per_call) ? limit : std::min(limit, total + calls * per_call);
  }
  return total;
}

// True when no subset of the units [begin, end) (search units, all touching `slot`) makes the
// preemptor fit: each touches no slot but `slot` (so every other slot keeps its copies), and
// `slot` with all of them gone holds no more copies than now. Frees only add capacity and
// blockers only go, so a subset leaves `slot` no more room than all of them; the state does not
// fit before (PerNode's searches start from the empty set), so it fits with none of them.
// Runs for every slot of the search: it reads only the slots the request asks for.
bool VictimSearch::CannotMakeRoom(const FitState& state, int slot, const int* begin, const int* end) const {
  int blockers = s_.slot_blockers[slot];
  for (const int* c = begin; c < end; ++c) {
    const SearchUnit& u = s_.units[*c];
    for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) {
      if (s_.frees[k].first != slot) return false;
    }
    for (uint32_t k = u.blockers.begin; k < u.blockers.end; ++k) {
      if (s_.blockers[k] != slot) return false;
      --blockers;
    }
  }
  if (blockers > 0) return true;  // a workload of the other world stays: no copy, as now
  const Resources& request = in_.preemptor->per_member;
  if (state.Copies(slot) == 0) {
    // No copy with all of them gone: some slot of the request stays short even then (no free
    // below 0 there, so no subset frees more of it).
    for (int r = 0; r < kMaxResourceKinds; ++r) {
      if (request[r] <= 0) continue;
      int64_t room = s_.capacity[slot][r];
      bool nonnegative = true;
      for (const int* c = begin; c < end; ++c) {
        const SearchUnit& u = s_.units[*c];
        for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) {
          const int64_t freed = index_.frees[s_.frees[k].second].second[r];
          nonnegative = nonnegative && freed >= 0;
          room += freed;
        }
      }
      if (nonnegative && room < request[r]) return true;
    }
    return false;
  }
  return false;  // a gang's slot that holds copies already: searched as it is
}

PreemptionChoice VictimSearch::MakeChoice(FitState& state) const {
  const Snapshot& snap = *in_.snapshot;
  PreemptionChoice choice;
  choice.exact = !exhausted_;
  choice.capped = capped_;
  choice.victim_count = best_cost_->count;
  choice.max_victim_priority = best_cost_->max_priority;
  choice.run_time_lost = best_cost_->run_time_lost;
  PreemptDecision& d = choice.decision;
  d.preemptor = in_.preemptor->id;
  Duration grace = 0;
  const size_t slots = s_.nodes.size();
  std::vector<char> touched(slots, 0);
  for (int ui : s_.best) {
    const SearchUnit& su = s_.units[ui];
    state.Apply(su);
    for (uint32_t k = su.frees.begin; k < su.frees.end; ++k) touched[s_.frees[k].first] = 1;
    const IndexUnit& u = index_.unit(su.unit);
    for (uint32_t k = u.workloads.begin; k < u.workloads.end; ++k) {
      const RunningWorkload& r = snap.running[index_.unit_workloads[k]];
      d.victims.push_back(r.id);
      if (const QosPolicy* q = FindQos(*in_.config, r.qos)) grace = std::max(grace, q->grace_time);
    }
  }
  std::sort(d.victims.begin(), d.victims.end());
  d.earliest_start = in_.now + grace;

  // Members go first to nodes the victims free (those are the nodes to reserve), most room
  // first, then to other nodes; ties by node index.
  std::vector<int> order;
  for (size_t s = 0; s < slots; ++s) {
    if (state.Copies(static_cast<int>(s)) > 0) order.push_back(static_cast<int>(s));
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_tuple(-touched[a], -state.Copies(a), s_.nodes[a]) <
           std::make_tuple(-touched[b], -state.Copies(b), s_.nodes[b]);
  });
  for (int s : order) {
    for (int64_t c = 0; c < state.Copies(s) && static_cast<int32_t>(d.member_nodes.size()) < in_.preemptor->members; ++c) {
      d.member_nodes.push_back(s_.nodes[s]);
    }
  }
  if (with_reason_) {
    std::vector<NodeIndex> nodes = d.member_nodes;
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    std::vector<std::string> node_names;
    for (NodeIndex n : nodes) node_names.push_back(snap.nodes[n].name);
    const std::string lower =
        by_class_
            ? absl::StrFormat("lower PriorityClass (highest %d < %d)", static_cast<int32_t>(choice.max_victim_priority),
                              in_.preemptor->priority_class_value.value_or(0))
            : absl::StrFormat("lower priority (highest %.1f < %.1f)", choice.max_victim_priority,
                              in_.preemptor_priority);
    choice.reason = absl::StrFormat("preempts %d workload%s (%s) of %s on node%s %s; %d s of run time lost",
                                    choice.victim_count, choice.victim_count == 1 ? "" : "s",
                                    absl::StrJoin(d.victims, ", "), lower, nodes.size() == 1 ? "" : "s",
                                    absl::StrJoin(node_names, ", "), choice.run_time_lost);
  }
  for (int ui : s_.best) state.Unapply(s_.units[ui]);
  return choice;
}

}  // namespace onequeue::queue::internal::victims

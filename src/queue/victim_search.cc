#include "queue/victim_search.h"

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "queue/planner_state.h"

namespace onequeue::queue::internal {

const QosPolicy* FindQos(const QueueConfig& config, std::string_view name) {
  for (const QosPolicy& q : config.qos) {
    if (q.name == name) return &q;
  }
  return nullptr;
}

namespace {

// Whether a victim's QOS allows this preemptor to take it: known, preemptible, and named in the
// preemptor QOS's can_preempt.
bool QosAllows(const QueueConfig& config, const QosPolicy& preemptor_qos, std::string_view victim_qos) {
  const QosPolicy* q = FindQos(config, victim_qos);
  if (q == nullptr || !q->preemptible) return false;
  return std::find(preemptor_qos.can_preempt.begin(), preemptor_qos.can_preempt.end(), victim_qos) !=
         preemptor_qos.can_preempt.end();
}

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

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

// One decision: the candidate nodes, the units on them, then the exact search over those.
class VictimSearch {
 public:
  VictimSearch(const PreemptionInput& in, const VictimIndex& index, ViableMemo& memo, Scratch& scratch,
               int64_t work_budget, bool with_reason)
      : in_(in),
        index_(index),
        memo_(memo),
        s_(scratch),
        work_budget_(work_budget),
        with_reason_(with_reason),
        by_class_(ByClass(*in.preemptor)) {}

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
  Resources FreeNow(NodeIndex n) const;
  int Blockers(NodeIndex n) const { return index_.workloads_of(n, Other()); }
  WorkloadKind Other() const {
    return in_.preemptor->kind == WorkloadKind::kPodGroup ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
  }
  bool FindUsable(const QosPolicy& preemptor_qos);
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
  int64_t ViableCopies(NodeIndex n) const;
  ViableMemo::Viable ViableUncached(NodeIndex n) const;
  bool ChooseWindow();
  bool UseLeanNodes();
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
  void Deepen(FitState& state, const int* begin, const int* end);
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

  const PreemptionInput& in_;
  const VictimIndex& index_;
  ViableMemo& memo_;
  int memo_entry_ = -1;  // memo_'s entry for this search's key (SelectMemo)
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
  std::optional<Cost> best_cost_;
  // (node, index unit): the carriers that must be victims for a member to use the node, sorted.
  std::vector<std::pair<NodeIndex, int>> required_;
  std::vector<std::pair<int, int>> required_by_unit_;  // (index unit, slot) of UseNodes' slots
};

// May this index unit go for this preemptor (before looking at nodes)? Strictly lower priority,
// every workload preemptible and of a QOS the preemptor's may preempt, none an earlier victim of
// this cycle, within its budget groups on its own.
bool VictimSearch::Candidate(int unit) const {
  if (s_.excluded[unit] == s_.search) return false;
  int8_t& verdict = memo_.verdict(memo_entry_, unit);
  if (verdict < 0) verdict = CandidateUncached(unit) ? 1 : 0;
  return verdict != 0;
}

bool VictimSearch::CandidateUncached(int unit) const {
  const IndexUnit& u = index_.unit(unit);
  if (by_class_) {
    // Issue 28 (kube-scheduler's rule): pod groups without QOS, of strictly lower PriorityClass.
    if (!u.all_by_class || !(u.max_class_priority < in_.preemptor->priority_class_value.value_or(0)) ||
        !u.all_preemptible || u.over_budget) {
      return false;
    }
    return true;
  }
  if (!(u.max_priority < in_.preemptor_priority) || !u.all_preemptible || u.over_budget) return false;
  for (uint32_t k = u.qos.begin; k < u.qos.end; ++k) {
    if (!s_.allowed_qos[index_.unit_qos[k]]) return false;
  }
  return true;
}

Resources VictimSearch::FreeNow(NodeIndex n) const {
  if (in_.free_now != nullptr) {
    return static_cast<size_t>(n) < in_.free_now->size() ? (*in_.free_now)[n] : in_.snapshot->nodes[n].allocatable;
  }
  return index_.derived_free(n);
}

// The eligible, unclaimed nodes (ascending), the QOS it may preempt, the earlier victims.
bool VictimSearch::FindUsable(const QosPolicy& preemptor_qos) {
  const Snapshot& snap = *in_.snapshot;
  s_.Next(snap.nodes.size(), index_.unit_count());
  s_.usable.clear();
  for (NodeIndex n : in_.eligible_nodes) {
    if (n < 0 || static_cast<size_t>(n) >= snap.nodes.size() || s_.node_stamp[n] == s_.stamp) continue;
    s_.node_stamp[n] = s_.stamp;  // seen (a duplicate is skipped)
    if (in_.claimed != nullptr && static_cast<size_t>(n) < in_.claimed->size() && (*in_.claimed)[n]) continue;
    s_.usable.push_back(n);
  }
  if (s_.usable.empty()) return false;
  const std::vector<std::string_view>& qos = index_.qos_names();
  s_.allowed_qos.resize(qos.size());
  for (size_t q = 0; q < qos.size(); ++q) s_.allowed_qos[q] = QosAllows(*in_.config, preemptor_qos, qos[q]);
  ExcludeEarlierVictims();
  SelectMemo();
  return RequireCarriers();
}

void VictimSearch::ExcludeEarlierVictims() {
  s_.excluded_units.clear();
  const auto exclude = [this](int u) {
    if (u < 0 || s_.excluded[u] == s_.search) return;
    s_.excluded[u] = s_.search;
    s_.excluded_units.push_back(u);
  };
  if (in_.already_victim_indices != nullptr) {  // by index: no id to look up
    for (int32_t i : *in_.already_victim_indices) exclude(index_.unit_of_running(i));
  } else if (in_.already_victims != nullptr) {
    for (const std::string& v : *in_.already_victims) exclude(index_.unit_of(v));
  }
  memo_.SyncExcluded(s_.excluded_units, index_);
}

// The memo entry of the candidates this preemptor sees: by class, those below its PriorityClass;
// else those below its priority (a prefix of the index's order) of the QOS it may preempt.
void VictimSearch::SelectMemo() {
  ViableMemo::Key& key = s_.key;
  key.by_class = by_class_;
  key.other = Other();
  if (by_class_) {
    key.threshold = in_.preemptor->priority_class_value.value_or(0);
    key.allowed_qos.clear();
  } else {
    key.threshold = index_.units_below(in_.preemptor_priority);
    key.allowed_qos.assign(s_.allowed_qos.begin(), s_.allowed_qos.end());
  }
  memo_entry_ = memo_.Select(key);
}

// Anti-affinity, own and symmetric (PlacementRules::carriers): a node whose running carriers may all be
// victims stays usable, each of them a required victim there (required_); any other node with
// carriers goes.
bool VictimSearch::RequireCarriers() {
  required_.clear();
  const PlacementRules* rules = in_.preemptor->placement.get();
  if (rules == nullptr || rules->carriers == nullptr) return true;
  size_t kept = 0;
  for (NodeIndex n : s_.usable) {
    const size_t begin = required_.size();
    bool usable = true;
    if (static_cast<size_t>(n) < rules->carriers->size()) {
      for (const std::string& id : (*rules->carriers)[n]) {
        const int u = index_.unit_of(id);
        if (u < 0 || !Candidate(u)) {
          usable = false;
          break;
        }
        required_.emplace_back(n, u);
      }
    }
    if (!usable) {
      required_.resize(begin);
      continue;
    }
    std::sort(required_.begin() + static_cast<std::ptrdiff_t>(begin), required_.end());
    required_.erase(std::unique(required_.begin() + static_cast<std::ptrdiff_t>(begin), required_.end()),
                    required_.end());
    s_.usable[kept++] = n;
  }
  s_.usable.resize(kept);
  return !s_.usable.empty();
}

bool VictimSearch::FitsWithoutVictims() const {
  const PendingWorkload& p = *in_.preemptor;
  int64_t total = 0;
  for (NodeIndex n : s_.usable) {
    if (Blockers(n) > 0 || Required(n) > 0) continue;
    total += FreeNow(n).CopiesOf(p.per_member, p.members);
    if (total >= p.members) return true;
  }
  return false;
}

// Member copies node `n` could hold with every candidate unit on it evicted (budgets aside): what
// is free now (read afresh) plus what its candidates free (memoised per key, ViableMemo).
int64_t VictimSearch::ViableCopies(NodeIndex n) const {
  const ViableMemo::Viable* viable = memo_.Find(memo_entry_, n);
  if (viable == nullptr) viable = &memo_.Store(memo_entry_, n, ViableUncached(n));
  if (viable->blockers_left > 0) return 0;
  return (FreeNow(n) + viable->freed).CopiesOf(in_.preemptor->per_member, in_.preemptor->members);
}

ViableMemo::Viable VictimSearch::ViableUncached(NodeIndex n) const {
  ViableMemo::Viable viable;
  viable.blockers_left = Blockers(n);
  const WorkloadKind other = Other();
  for (const int* u = index_.units_on_begin(n); u != index_.units_on_end(n); ++u) {
    if (!Candidate(*u)) continue;
    const IndexUnit& unit = index_.unit(*u);
    ++viable.units;
    viable.cheapest = std::min(viable.cheapest, Weight(unit));
    // units_on lists a unit on each node it frees something on: one entry means this node only.
    viable.alone = viable.alone && unit.frees.size() == 1 && unit.disruptions.empty();
    for (uint32_t k = unit.frees.begin; k < unit.frees.end; ++k) {
      if (index_.frees[k].first != n) continue;
      viable.freed += index_.frees[k].second;
      viable.alone = viable.alone && !index_.frees[k].second.AnyNegative();
    }
    for (uint32_t k = unit.blockers.begin; k < unit.blockers.end; ++k) {
      viable.blockers_left -= index_.blockers[k].first == n && index_.blockers[k].second == other;
      viable.alone = viable.alone && index_.blockers[k].first == n;
    }
  }
  return viable;
}

// The candidate cap (QueueConfig::preemption, like kube-scheduler's minCandidateNodesPercentage
// and minCandidateNodesAbsolute): from an offset derived from the preemptor's id, walk the usable
// nodes (wrapping around) until max(percentage % of them, absolute) nodes could hold a member
// once their candidates are gone and they hold all members together. True, with s_.nodes set
// to those nodes (ascending), when the cap binds; false when every usable node is examined
// anyway (the search then uses them all, exactly as without a cap).
bool VictimSearch::ChooseWindow() {
  const PreemptionConfig& cap = in_.config->preemption;
  const int64_t usable = static_cast<int64_t>(s_.usable.size());
  const int64_t wanted =
      std::max<int64_t>(usable * std::max<int32_t>(0, cap.min_candidate_nodes_percentage) / 100,
                        std::max<int32_t>(0, cap.min_candidate_nodes_absolute));
  if (wanted >= usable) return false;
  const int64_t offset = static_cast<int64_t>(Fnv1a(in_.preemptor->id) % static_cast<uint64_t>(usable));
  s_.viable.assign(usable, 0);
  int64_t viable_nodes = 0;
  int64_t viable_copies = 0;
  int64_t examined = 0;
  for (; examined < usable && (viable_nodes < wanted || viable_copies < in_.preemptor->members); ++examined) {
    const int64_t position = (offset + examined) % usable;
    const int64_t copies = ViableCopies(s_.usable[position]);
    if (copies == 0) continue;
    s_.viable[position] = 1;
    ++viable_nodes;
    viable_copies += copies;
  }
  if (examined == usable) {  // the cap did not bind: s_.viable holds every usable node's answer
    walked_all_ = true;
    return false;
  }
  s_.nodes.clear();
  for (int64_t position = 0; position < usable; ++position) {  // ascending node order
    if (s_.viable[position]) s_.nodes.push_back(s_.usable[position]);
  }
  return true;
}

// Issue 26: a one-member search over every usable node leaves out the nodes that cannot take the
// member whatever goes and whose candidate units run there alone, take from no disruption budget
// and free nothing negative (ViableMemo::Viable::alone): in a full pool most of them. Applied or
// not, such a unit changes no copies anywhere (frees only add, so no subset of the node's units
// gives it a copy) and no budget, so the greedy pass takes the same units; every slot kept lists
// the same units with the same frees (a unit on a kept slot is on no left-out node); and PerNode
// finds nothing on a left-out node, whose steps CountLeftOut counts as PerNode would. So the
// search decides as the one over every usable node. True with s_.nodes and the units set.
bool VictimSearch::UseLeanNodes() {
  if (in_.preemptor->members != 1 || !required_.empty()) return false;
  if (!walked_all_) {  // no window walk (the cap is off, or above the usable nodes): ask each node
    s_.viable.assign(s_.usable.size(), 0);
    for (size_t position = 0; position < s_.usable.size(); ++position) {
      s_.viable[position] = ViableCopies(s_.usable[position]) > 0;
    }
  }
  s_.nodes.clear();
  s_.left_out.clear();
  for (size_t position = 0; position < s_.usable.size(); ++position) {
    const NodeIndex n = s_.usable[position];
    const ViableMemo::Viable* v = s_.viable[position] ? nullptr : memo_.Find(memo_entry_, n);
    if (v == nullptr || !MayLeaveOut(n, *v)) {
      s_.nodes.push_back(n);
    } else if (v->units > 0) {  // a slot without units counts nothing
      s_.left_out.push_back({s_.nodes.size(), v->units, v->cheapest});
    }
  }
  UseNodes(/*all_usable=*/false);
  return true;
}

// Node `n` (ViableCopies 0) may be left out: its units are alone there, and PerNode would find
// CannotMakeRoom true for it (a workload of the other world stays, or a resource the member asks
// for stays short with every candidate gone; a capacity already below 0 in a resource it does
// not ask for would not do).
bool VictimSearch::MayLeaveOut(NodeIndex n, const ViableMemo::Viable& viable) const {
  if (!viable.alone) return false;
  if (viable.blockers_left > 0) return true;
  const Resources room = FreeNow(n) + viable.freed;
  const Resources& request = in_.preemptor->per_member;
  for (int r = 0; r < kMaxResourceKinds; ++r) {
    if (request[r] > 0 && room[r] < request[r]) return true;
  }
  return false;
}

// The candidate units on the search's slots, and the required carriers of its slots wherever
// they run, cheapest first (s_.candidate_units; units stamped with s_.stamp as seen).
void VictimSearch::CollectCandidateUnits() {
  s_.candidate_units.clear();
  for (NodeIndex n : s_.nodes) {
    for (const int* u = index_.units_on_begin(n); u != index_.units_on_end(n); ++u) {
      if (s_.unit_stamp[*u] == s_.stamp) continue;  // seen on an earlier node
      s_.unit_stamp[*u] = s_.stamp;
      if (Candidate(*u)) {
        s_.candidate_units.push_back(*u);
        s_.in_units[*u] = s_.stamp;
      }
    }
  }
  // Carriers required on a search node that run elsewhere in its domain (a wider topology key).
  required_by_unit_.clear();
  for (const auto& [n, u] : required_) {
    if (s_.node_stamp[n] != s_.stamp) continue;
    required_by_unit_.emplace_back(u, s_.slot_of[n]);
    if (s_.unit_stamp[u] == s_.stamp) continue;
    s_.unit_stamp[u] = s_.stamp;
    s_.candidate_units.push_back(u);  // a candidate: RequireCarriers kept only such nodes
    s_.in_units[u] = s_.stamp;
  }
  std::sort(required_by_unit_.begin(), required_by_unit_.end());
  // Cheapest first: the index's order (by multifactor priority), or by class for a by-class
  // preemptor (ties in the index's order), as Greedy, PerNode and Search's pruning assume.
  if (by_class_) {
    std::sort(s_.candidate_units.begin(), s_.candidate_units.end(), [&](int a, int b) {
      const double wa = Weight(index_.unit(a)), wb = Weight(index_.unit(b));
      return wa != wb ? wa < wb : a < b;
    });
  } else if (s_.candidate_units.size() * 16 > index_.unit_count()) {
    // Many (every usable node): the same units in index order, without sorting them.
    s_.candidate_units.clear();
    for (int u = 0; u < static_cast<int>(index_.unit_count()); ++u) {
      if (s_.in_units[u] == s_.stamp) s_.candidate_units.push_back(u);
    }
  } else {
    std::sort(s_.candidate_units.begin(), s_.candidate_units.end());
  }
}

// The search's slots (s_.nodes, or every usable node) and the candidate units on them, each with
// its frees and blockers restricted to those slots, cheapest first; and the initial fit state.
void VictimSearch::UseNodes(bool all_usable) {
  if (all_usable) s_.nodes.assign(s_.usable.begin(), s_.usable.end());
  s_.Bump();  // node stamps of the window walk are stale now
  for (size_t slot = 0; slot < s_.nodes.size(); ++slot) {
    s_.node_stamp[s_.nodes[slot]] = s_.stamp;
    s_.slot_of[s_.nodes[slot]] = static_cast<int>(slot);
  }
  CollectCandidateUnits();
  s_.units.clear();
  s_.frees.clear();
  s_.blockers.clear();
  const WorkloadKind other = Other();
  for (int u : s_.candidate_units) {
    const IndexUnit& iu = index_.unit(u);
    SearchUnit su;
    su.unit = u;
    su.disruptions = iu.disruptions;
    su.frees.begin = static_cast<uint32_t>(s_.frees.size());
    for (uint32_t k = iu.frees.begin; k < iu.frees.end; ++k) {
      const NodeIndex n = index_.frees[k].first;
      if (s_.node_stamp[n] == s_.stamp) s_.frees.emplace_back(s_.slot_of[n], k);
    }
    su.frees.end = static_cast<uint32_t>(s_.frees.size());
    su.blockers.begin = static_cast<uint32_t>(s_.blockers.size());
    for (uint32_t k = iu.blockers.begin; k < iu.blockers.end; ++k) {
      const NodeIndex n = index_.blockers[k].first;
      if (index_.blockers[k].second == other && s_.node_stamp[n] == s_.stamp) s_.blockers.push_back(s_.slot_of[n]);
    }
    su.required_begin = static_cast<uint32_t>(s_.blockers.size());
    if (!required_by_unit_.empty()) {
      for (auto r = std::lower_bound(required_by_unit_.begin(), required_by_unit_.end(), std::make_pair(u, -1));
           r != required_by_unit_.end() && r->first == u; ++r) {
        s_.blockers.push_back(r->second);
      }
    }
    su.blockers.end = static_cast<uint32_t>(s_.blockers.size());
    s_.units.push_back(su);
  }
  s_.capacity.resize(s_.nodes.size());
  s_.slot_blockers.resize(s_.nodes.size());
  for (size_t slot = 0; slot < s_.nodes.size(); ++slot) {
    s_.capacity[slot] = FreeNow(s_.nodes[slot]);
    s_.slot_blockers[slot] = Blockers(s_.nodes[slot]) + Required(s_.nodes[slot]);
  }
  s_.budget_left.assign(index_.budget_allowed().begin(), index_.budget_allowed().end());
}

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
void VictimSearch::Deepen(FitState& state, const int* begin, const int* end) {
  if (!best_cost_) return;
  const int32_t best_count = best_cost_->count;
  for (int32_t bound = 1; bound <= best_count && !exhausted_; ++bound) {
    Search(state, begin, end, begin, Cost{}, bound);
    if (best_cost_->count <= bound) return;  // nothing with fewer victims exists here
  }
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
    // The units come cheapest first, so by non-decreasing priority: once one alone would make a
    // set of the best set's size at least and of higher priority, so would every later one, and
    // the loop would only count them as steps (pruned): count them at once.
    if (cost.count + 1 >= best_cost_->count && std::max(cost.max_priority, Weight(u)) > best_cost_->max_priority) {
      CountPrunedSteps(end - c - 1);
      return;
    }
    Cost next = cost;
    next.count += u.count;
    next.max_priority = std::max(cost.max_priority, Weight(u));
    next.max_multifactor = std::max(cost.max_multifactor, u.max_priority);
    next.run_time_lost += u.run_time_lost;
    if (by_class_) next.class_first = next.max_priority;
    if (next.count > count_bound || !(next < *best_cost_) || !state.WithinBudget(su)) continue;
    work_ += static_cast<int64_t>(su.frees.size());
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
  for (size_t slot = 0; slot < slots && !exhausted_; ++slot) {
    if (lean_) CountLeftOut(left_out, slot);
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
    if (CannotMakeRoom(state, static_cast<int>(slot), begin, end)) {
      if (!exact_steps_) {
        skipped_steps_ = std::min(work_budget_ + 1, skipped_steps_ + DryStepsBound(begin, end));
        continue;
      }
      state.SetDry(true);
    }
    Deepen(state, begin, end);
    state.SetDry(false);
  }
  if (lean_ && !exhausted_) CountLeftOut(left_out, slots);
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
  for (const int* c = begin; c < end; ++c) per_call += s_.units[*c].frees.size();
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

std::optional<PreemptionChoice> VictimSearch::Run(const QosPolicy& preemptor_qos) {
  if (!FindUsable(preemptor_qos)) {
    no_room_ = true;
    return std::nullopt;
  }
  // Nothing to preempt when it fits already, anywhere it may go (capped or not).
  if (FitsWithoutVictims()) return std::nullopt;
  capped_ = ChooseWindow();
  lean_ = !capped_ && UseLeanNodes();
  if (!lean_) UseNodes(/*all_usable=*/!capped_);
  budget_skipped_ = false;
  std::optional<PreemptionChoice> choice = SearchNodes();
  if (!choice && capped_) {
    // The window could not make room (a gang, or budgets): every usable node, as without a cap.
    capped_ = false;
    work_ = 0;
    exhausted_ = false;
    best_cost_.reset();
    UseNodes(/*all_usable=*/true);
    budget_skipped_ = false;
    choice = SearchNodes();
  }
  // Over every usable node, Greedy applied every candidate (none passed over for a budget) and
  // the members still did not fit: no set of victims makes room.
  no_room_ = !choice && !best_cost_.has_value() && !budget_skipped_ && !fits_already_;
  return choice;
}

}  // namespace

std::optional<PreemptionChoice> RunVictimSearch(const PreemptionInput& in, const VictimIndex& index,
                                                ViableMemo& memo, Scratch& scratch, int64_t work_budget,
                                                bool with_reason, const QosPolicy& preemptor_qos, bool* no_room) {
  VictimSearch search(in, index, memo, scratch, work_budget, with_reason);
  std::optional<PreemptionChoice> choice = search.Run(preemptor_qos);
  if (no_room != nullptr) *no_room = !choice && search.NoRoom();
  return choice;
}

}  // namespace onequeue::queue::internal

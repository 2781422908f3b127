#include "queue/victim_search.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queue/planner_state.h"
#include "queue/victim_search_core.h"

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

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

namespace victims {

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

// The eligible, unclaimed nodes (ascending), the QOS it may preempt, the earlier victims.
bool VictimSearch::FindUsable(const QosPolicy& preemptor_qos) {
  const Snapshot& snap = *in_.snapshot;
  s_.Next(snap.nodes.size(), index_.unit_count());
  s_.usable.clear();
  usable_ = &s_.usable;
  const std::vector<NodeIndex>& eligible = in_.Eligible();
  if (in_.eligible_sorted_unclaimed) {  // the caller's word: each usable, read in place
    usable_ = &eligible;
  } else if (std::adjacent_find(eligible.begin(), eligible.end(), std::greater_equal<NodeIndex>()) == eligible.end()) {
    KeepUnclaimedAscending();
  } else {
    for (NodeIndex n : eligible) {
      if (n < 0 || static_cast<size_t>(n) >= snap.nodes.size() || s_.node_stamp[n] == s_.stamp) continue;
      s_.node_stamp[n] = s_.stamp;  // seen (a duplicate is skipped)
      if (in_.claimed != nullptr && static_cast<size_t>(n) < in_.claimed->size() && (*in_.claimed)[n]) continue;
      s_.usable.push_back(n);
    }
  }
  if (Usable().empty()) return false;
  const std::vector<std::string_view>& qos = index_.qos_names();
  s_.allowed_qos.resize(qos.size());
  for (size_t q = 0; q < qos.size(); ++q) s_.allowed_qos[q] = QosAllows(*in_.config, preemptor_qos, qos[q]);
  ExcludeEarlierVictims();
  SelectMemo();
  return RequireCarriers();
}

// FindUsable for eligible nodes strictly ascending (TryPreempt's, issue 26: 5,000 per search): no
// duplicate can occur, so none is looked for (no stamps); the same nodes kept, in the same order.
void VictimSearch::KeepUnclaimedAscending() {
  const std::vector<NodeIndex>& eligible = in_.Eligible();
  const size_t nodes = in_.snapshot->nodes.size();
  const char* claimed = in_.claimed != nullptr ? in_.claimed->data() : nullptr;
  const size_t claimed_size = in_.claimed != nullptr ? in_.claimed->size() : 0;
  s_.usable.resize(eligible.size());
  size_t kept = 0;
  // Ascending, so every node is in range when the first and the last are: then each is written
  // and kept unless claimed, without a branch (issue 26: 183 searches of 5,000 nodes a cycle).
  if (!eligible.empty() && eligible.front() >= 0 && static_cast<size_t>(eligible.back()) < nodes &&
      claimed_size >= nodes) {
    for (NodeIndex n : eligible) {
      s_.usable[kept] = n;
      kept += claimed[n] == 0;
    }
    s_.usable.resize(kept);
    return;
  }
  for (NodeIndex n : eligible) {
    const size_t i = static_cast<size_t>(n);
    if (n < 0 || i >= nodes || (i < claimed_size && claimed[i])) continue;
    s_.usable[kept++] = n;
  }
  s_.usable.resize(kept);
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
  memo_base_ = memo_.Base(memo_entry_);
}

// Anti-affinity, own and symmetric (PlacementRules::carriers): a node whose running carriers may all be
// victims stays usable, each of them a required victim there (required_); any other node with
// carriers goes.
bool VictimSearch::RequireCarriers() {
  required_.clear();
  const PlacementRules* rules = in_.preemptor->placement.get();
  if (rules == nullptr || rules->carriers == nullptr) return true;
  if (usable_ != &s_.usable) {  // the caller's list: filtered in a copy
    s_.usable.assign(usable_->begin(), usable_->end());
    usable_ = &s_.usable;
  }
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
  for (NodeIndex n : Usable()) {
    if (Blockers(n) > 0 || Required(n) > 0) continue;
    total += FreeNow(n).CopiesOf(p.per_member, p.members);
    if (total >= p.members) return true;
  }
  return false;
}

// Issue 26: about 2 of 3 preemptors of a steady cycle fit without any victim, found only after
// listing 5,000 usable nodes and choosing a memo entry. When a strictly ascending prefix of the
// eligible nodes (so no duplicate, each in range), unclaimed and without blockers, holds every
// member, FindUsable keeps each of those nodes and FitsWithoutVictims counts at least their
// copies: the same nullopt (no_room_ false) from the prefix alone (kFits). When the whole list is
// strictly ascending and in range and does not fit, the usable nodes are exactly those walked, so
// FitsWithoutVictims' total is this one (kDoesNotFit: it need not walk them again). Carriers
// (anti-affinity) may take nodes out or require victims: kUnknown, as for any other list.
VictimSearch::PrefixFit VictimSearch::FitsOnAscendingPrefix() const {
  const PendingWorkload& p = *in_.preemptor;
  if (p.placement != nullptr && p.placement->carriers != nullptr) return PrefixFit::kUnknown;
  if (in_.eligible_sorted_unclaimed && p.members >= 1 && FreeWithinAllocatable()) {
    const PrefixFit fit = FitsOnNodesWithScarce();
    if (fit != PrefixFit::kUnknown) return fit;
  }
  const size_t nodes = in_.snapshot->nodes.size();
  const char* claimed = in_.claimed != nullptr ? in_.claimed->data() : nullptr;
  const size_t claimed_size = in_.claimed != nullptr ? in_.claimed->size() : 0;
  int64_t total = 0;
  NodeIndex last = -1;
  for (NodeIndex n : in_.Eligible()) {
    if (n <= last || static_cast<size_t>(n) >= nodes) return PrefixFit::kUnknown;
    last = n;
    if ((static_cast<size_t>(n) < claimed_size && claimed[n]) || Blockers(n) > 0) continue;
    total += FreeNow(n).CopiesOf(p.per_member, p.members);
    if (total >= p.members) return PrefixFit::kFits;
  }
  return PrefixFit::kDoesNotFit;
}

// Issue 26 (the steady cycle, twelfth pass): FitsOnAscendingPrefix over the eligible nodes that
// have the extended resource the preemptor asks that the fewest nodes have (at most a quarter of
// them), found in the eligible list (ascending, in range, none claimed: the caller's word) by a
// merge. Every other node has at most its allocatable free (FreeWithinAllocatable), none of that
// resource, so no copy: the total over these nodes is the total over all (copies only add), and
// the answer the same. kUnknown when the preemptor asks no such resource.
VictimSearch::PrefixFit VictimSearch::FitsOnNodesWithScarce() const {
  const PendingWorkload& p = *in_.preemptor;
  const std::vector<NodeIndex>* with = nullptr;
  for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
    if (p.per_member[r] <= 0) continue;
    const std::vector<NodeIndex>& nodes = index_.nodes_with(r);
    if (with == nullptr || nodes.size() < with->size()) with = &nodes;
  }
  if (with == nullptr || with->size() * 4 > in_.snapshot->nodes.size()) return PrefixFit::kUnknown;
  const std::vector<NodeIndex>& eligible = in_.Eligible();
  size_t e = 0;
  int64_t total = 0;
  for (NodeIndex n : *with) {  // a merge of the two ascending lists
    while (e < eligible.size() && eligible[e] < n) ++e;
    if (e == eligible.size()) break;
    if (eligible[e] != n || Blockers(n) > 0) continue;
    total += FreeNow(n).CopiesOf(p.per_member, p.members);
    if (total >= p.members) return PrefixFit::kFits;
  }
  return PrefixFit::kDoesNotFit;
}

// Member copies node `n` could hold with every candidate unit on it evicted (budgets aside): what
// is free now (read afresh) plus what its candidates free (memoised per key, ViableMemo).
int64_t VictimSearch::ViableCopies(NodeIndex n) const {
  const ViableMemo::Viable* viable = memo_.Find(memo_entry_, n);
  if (viable == nullptr) viable = &memo_.Store(memo_entry_, n, ViableUncached(n));
  if (viable->blockers_left > 0) return 0;
  const Resources& request = in_.preemptor->per_member;
  const int32_t members = in_.preemptor->members;
  if (members > 1) return (FreeNow(n) + viable->freed).CopiesOf(request, members);
  // CopiesOf(request, members <= 1) per kind, without the sum's 16 amounts (issue 26: asked of
  // every usable node by a search over them all): members when every kind covers the request.
  const Resources& free = FreeNow(n);
  for (int r = 0; r < kMaxResourceKinds; ++r) {
    if (request[r] > free[r] + viable->freed[r]) return 0;
  }
  return members;
}

// Issue 26: each new key's walk over ~5,000 nodes summed every candidate afresh (~930
// instructions a node). With a base entry for the node (ViableMemo::Base, not by class), only the
// units between the two thresholds change: added when the base's is lower, taken out when it is
// higher (then the lowest candidate stays the cheapest, if any candidate stays).
ViableMemo::Viable VictimSearch::ViableUncached(NodeIndex n) const {
  const int* begin = index_.units_on_begin(n);
  const int* end = index_.units_on_end(n);
  const ViableMemo::Viable* base = memo_base_ >= 0 ? memo_.Find(memo_base_, n) : nullptr;
  ViableMemo::Viable viable;
  if (base != nullptr) {
    viable = *base;
    const int64_t from = memo_.threshold(memo_base_);
    const int64_t to = s_.key.threshold;
    const int* u = std::lower_bound(begin, end, std::min(from, to));
    if (from > to) {  // the base's candidates in [to, from) go
      for (; u != end && *u < from; ++u) {
        if (CandidateAtAnyPriority(*u)) Count(n, index_.unit(*u), -1, viable);
      }
      if (viable.units == 0) viable.cheapest = std::numeric_limits<double>::infinity();
      return viable;
    }
    begin = u;  // this key's candidates in [from, to) come
  } else {
    viable.blockers_left = Blockers(n);
  }
  for (const int* u = begin; u != end; ++u) {
    // Not by class: no unit from the key's threshold on is below the preemptor's priority.
    if (!by_class_ && *u >= s_.key.threshold) break;
    if (Candidate(*u)) Count(n, index_.unit(*u), +1, viable);
  }
  return viable;
}

// Adds (sign +1) or takes out (-1) candidate `unit`'s share of node `n`'s entry; the cheapest
// only when adding.
void VictimSearch::Count(NodeIndex n, const IndexUnit& unit, int sign, ViableMemo::Viable& viable) const {
  const WorkloadKind other = Other();
  viable.units += sign;
  if (sign > 0) viable.cheapest = std::min(viable.cheapest, Weight(unit));
  // units_on lists a unit on each node it frees something on: one entry means this node only.
  bool alone = unit.frees.size() == 1 && unit.disruptions.empty();
  for (uint32_t k = unit.frees.begin; k < unit.frees.end; ++k) {
    if (index_.frees[k].first != n) continue;
    if (sign > 0) {
      viable.freed += index_.frees[k].second;
    } else {
      viable.freed -= index_.frees[k].second;
    }
    alone = alone && !index_.frees[k].second.AnyNegative();
  }
  for (uint32_t k = unit.blockers.begin; k < unit.blockers.end; ++k) {
    viable.blockers_left -= sign * (index_.blockers[k].first == n && index_.blockers[k].second == other);
    alone = alone && index_.blockers[k].first == n;
  }
  viable.shared += sign * !alone;
}

// Candidate (not by class) but for the priority: what a key of any threshold asks of a unit below
// it (ViableUncached, taking out a base's candidates).
bool VictimSearch::CandidateAtAnyPriority(int unit) const {
  if (s_.excluded[unit] == s_.search) return false;
  const IndexUnit& u = index_.unit(unit);
  if (!u.all_preemptible || u.over_budget) return false;
  for (uint32_t k = u.qos.begin; k < u.qos.end; ++k) {
    if (!s_.allowed_qos[index_.unit_qos[k]]) return false;
  }
  return true;
}

// The candidate cap (QueueConfig::preemption, like kube-scheduler's minCandidateNodesPercentage
// and minCandidateNodesAbsolute): from an offset derived from the preemptor's id, walk the usable
// nodes (wrapping around) until max(percentage % of them, absolute) nodes could hold a member
// once their candidates are gone and they hold all members together. True, with s_.nodes set
// to those nodes (ascending), when the cap binds; false when every usable node is examined
// anyway (the search then uses them all, exactly as without a cap).
bool VictimSearch::ChooseWindow() {
  const PreemptionConfig& cap = in_.config->preemption;
  const std::vector<NodeIndex>& nodes = Usable();
  const int64_t usable = static_cast<int64_t>(nodes.size());
  const int64_t wanted =
      std::max<int64_t>(usable * std::max<int32_t>(0, cap.min_candidate_nodes_percentage) / 100,
                        std::max<int32_t>(0, cap.min_candidate_nodes_absolute));
  if (wanted >= usable) return false;
  const int64_t offset = static_cast<int64_t>(Fnv1a(in_.preemptor->id) % static_cast<uint64_t>(usable));
  if (scarce_ >= 0 && wanted >= 1) return ChooseWindowScarce(usable, wanted, offset);
  s_.viable.assign(usable, 0);
  int64_t viable_nodes = 0;
  int64_t viable_copies = 0;
  int64_t examined = 0;
  for (; examined < usable && (viable_nodes < wanted || viable_copies < in_.preemptor->members); ++examined) {
    const int64_t position = (offset + examined) % usable;
    const int64_t copies = ViableCopies(nodes[position]);
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
    if (s_.viable[position]) s_.nodes.push_back(nodes[position]);
  }
  s_.slot_viable.assign(s_.nodes.size(), 1);  // the walk keeps viable nodes only
  return true;
}

// ChooseWindow over the kept nodes only (ChooseScarce): a kSkip node holds no copy whatever goes
// (ViableCopies 0), so the walk over every position from `offset` keeps the same nodes, in the same
// order, and stops after the same one. It examined every position (the cap did not bind) when it
// stopped after the last one, offset - 1, or never; then s_.kept_viable holds every kept node's
// answer too.
bool VictimSearch::ChooseWindowScarce(int64_t usable, int64_t wanted, int64_t offset) {
  const std::vector<NodeIndex>& nodes = Usable();
  const std::vector<int64_t>& kept = s_.kept_positions;
  s_.kept_viable.assign(kept.size(), 0);  // by kept entry, not by position (twelfth pass)
  const size_t first = static_cast<size_t>(std::lower_bound(kept.begin(), kept.end(), offset) - kept.begin());
  const int64_t last = (offset + usable - 1) % usable;
  int64_t viable_nodes = 0;
  int64_t viable_copies = 0;
  for (size_t j = 0; j < kept.size(); ++j) {
    const size_t k = (first + j) % kept.size();
    const int64_t position = kept[k];
    const int64_t copies = ViableCopies(nodes[position]);
    if (copies == 0) continue;
    s_.kept_viable[k] = 1;
    ++viable_nodes;
    viable_copies += copies;
    if (viable_nodes < wanted || viable_copies < in_.preemptor->members) continue;
    if (position == last) break;  // examined every position: the cap did not bind
    s_.nodes.clear();
    for (size_t i = 0; i < kept.size(); ++i) {  // ascending node order
      if (s_.kept_viable[i]) s_.nodes.push_back(nodes[kept[i]]);
    }
    s_.slot_viable.assign(s_.nodes.size(), 1);
    return true;
  }
  walked_all_ = true;
  return false;
}

// Issue 26, eleventh pass: the ScarceNodes of the extended resource the preemptor asks that the
// fewest nodes keep, when they are at most a quarter of the nodes and every usable node without
// that resource (not kHasR) has less of it free now than a member asks (so with no kSkip node
// can a member ever fit: nothing there frees any of it). Sets scarce_ and s_.kept_positions.
void VictimSearch::ChooseScarce() {
  scarce_ = -1;
  if (!scarce_allowed_) return;
  int best = -1;
  for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
    if (in_.preemptor->per_member[r] <= 0) continue;
    if (best < 0 || index_.scarce_nodes(r).kept < index_.scarce_nodes(best).kept) best = r;
  }
  if (best < 0 || index_.scarce_nodes(best).kept * 4 > in_.snapshot->nodes.size()) return;
  if (ScarceKept(best)) {
    scarce_ = best;
    scarce_nodes_ = &index_.scarce_nodes(best);
  }
}

// The positions of the usable nodes not kSkip; false when a usable node without resource `r` has
// as much of it free now as a member asks.
bool VictimSearch::ScarceKept(int r) {
  const std::vector<uint8_t>& of = index_.scarce_nodes(r).of;
  const int64_t request = in_.preemptor->per_member[r];
  s_.kept_positions.clear();
  const std::vector<NodeIndex>& nodes = Usable();
  if (in_.eligible_sorted_unclaimed && FreeWithinAllocatable()) {
    // Issue 26 (twelfth pass): a node not kHasR has allocatable[r] <= 0, so at most 0 of r free
    // (FreeWithinAllocatable), less than the request: the check below holds everywhere. The
    // usable nodes are ascending and in range (the caller's word; RequireCarriers keeps the
    // order), so the kept nodes' positions come from a merge of the two lists, without a read
    // per node.
    size_t p = 0;
    for (NodeIndex n : index_.scarce_nodes(r).kept_nodes) {
      while (p < nodes.size() && nodes[p] < n) ++p;
      if (p == nodes.size()) break;
      if (nodes[p] == n) s_.kept_positions.push_back(static_cast<int64_t>(p));
    }
    return true;
  }
  for (size_t p = 0; p < nodes.size(); ++p) {
    const NodeIndex n = nodes[p];
    if (static_cast<size_t>(n) >= of.size()) return false;
    const uint8_t c = of[n];
    if (c != ScarceNodes::kHasR && FreeNow(n)[r] >= request) return false;
    if (c != ScarceNodes::kSkip) s_.kept_positions.push_back(static_cast<int64_t>(p));
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
  if (scarce_ >= 0) return UseScarceNodes();
  const std::vector<NodeIndex>& nodes = Usable();
  if (!walked_all_) {  // no window walk (the cap is off, or above the usable nodes): ask each node
    s_.viable.assign(nodes.size(), 0);
    for (size_t position = 0; position < nodes.size(); ++position) {
      s_.viable[position] = ViableCopies(nodes[position]) > 0;
    }
  }
  s_.nodes.clear();
  s_.slot_viable.clear();
  s_.left_out.clear();
  for (size_t position = 0; position < nodes.size(); ++position) {
    const NodeIndex n = nodes[position];
    const ViableMemo::Viable* v = s_.viable[position] ? nullptr : memo_.Find(memo_entry_, n);
    if (v == nullptr || !MayLeaveOut(n, *v)) {
      s_.nodes.push_back(n);
      s_.slot_viable.push_back(s_.viable[position]);
    } else if (v->units > 0) {  // a slot without units counts nothing
      s_.left_out.push_back({s_.nodes.size(), v->units, v->cheapest});
    }
  }
  UseNodes(/*all_usable=*/false);
  return true;
}

// UseLeanNodes over the kept nodes (ChooseScarce) only: each is kept, left out or counted exactly
// as there. A kSkip node holds no copy whatever goes, none of its units runs on a node that could
// (so none is in a set that makes room) or takes from a budget (so the greedy pass takes the same
// units), and its units' frees on kept slots are counted in full (SearchUnit::steps): the
// search decides as the one over every usable node, and counts at least its steps, except those
// of the kSkip nodes themselves, which PerNode adds up as a bound (CountSkipped). SearchNodes
// keeps the decision only when the steps counted plus those bounds stay within the work budget
// (then neither search ran out of it); otherwise it searches again over every usable node.
bool VictimSearch::UseScarceNodes() {
  const std::vector<NodeIndex>& nodes = Usable();
  const std::vector<int64_t>& kept = s_.kept_positions;
  if (!walked_all_) {  // no window walk: ask each kept node (no other can hold the member)
    s_.kept_viable.assign(kept.size(), 0);
    for (size_t k = 0; k < kept.size(); ++k) s_.kept_viable[k] = ViableCopies(nodes[kept[k]]) > 0;
  }
  s_.nodes.clear();
  s_.slot_viable.clear();
  s_.left_out.clear();
  for (size_t k = 0; k < kept.size(); ++k) {
    const NodeIndex n = nodes[kept[k]];
    const ViableMemo::Viable* v = s_.kept_viable[k] ? nullptr : memo_.Find(memo_entry_, n);
    if (v == nullptr || !MayLeaveOut(n, *v)) {
      s_.nodes.push_back(n);
      s_.slot_viable.push_back(s_.kept_viable[k]);
    } else if (v->units > 0) {
      s_.left_out.push_back({s_.nodes.size(), v->units, v->cheapest});
    }
  }
  scarce_lean_ = true;
  UseNodes(/*all_usable=*/false);
  return true;
}

// Node `n` (ViableCopies 0) may be left out: its units are alone there, and PerNode would find
// CannotMakeRoom true for it (a workload of the other world stays, or a resource the member asks
// for stays short with every candidate gone; a capacity already below 0 in a resource it does
// not ask for would not do).
bool VictimSearch::MayLeaveOut(NodeIndex n, const ViableMemo::Viable& viable) const {
  if (!viable.alone()) return false;
  if (viable.blockers_left > 0) return true;
  const Resources& free = FreeNow(n);
  const Resources& request = in_.preemptor->per_member;
  for (int r = 0; r < kMaxResourceKinds; ++r) {
    if (request[r] > 0 && free[r] + viable.freed[r] < request[r]) return true;
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
      if (Candidate(*u)) s_.candidate_units.push_back(*u);
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
  }
  std::sort(required_by_unit_.begin(), required_by_unit_.end());
  // Cheapest first: the index's order (by multifactor priority), or by class for a by-class
  // preemptor (ties in the index's order), as Greedy, PerNode and Search's pruning assume.
  if (by_class_) {
    std::sort(s_.candidate_units.begin(), s_.candidate_units.end(), [&](int a, int b) {
      const double wa = Weight(index_.unit(a)), wb = Weight(index_.unit(b));
      return wa != wb ? wa < wb : a < b;
    });
  } else if (s_.candidate_units.size() * 64 < index_.unit_count()) {
    std::sort(s_.candidate_units.begin(), s_.candidate_units.end());
  } else {
    // The same units (each once) in index order, without sorting them: a bit per unit, read a
    // word at a time and cleared as read (issue 26, twelfth pass: a stamp per unit read one by
    // one cost ~7 M instructions a steady cycle).
    std::vector<uint64_t>& bits = s_.unit_bits;
    for (int u : s_.candidate_units) bits[static_cast<size_t>(u) >> 6] |= uint64_t{1} << (u & 63);
    s_.candidate_units.clear();
    for (size_t w = 0; w < bits.size(); ++w) {
      for (uint64_t word = bits[w]; word != 0; word &= word - 1) {
        s_.candidate_units.push_back(static_cast<int>(w * 64 + static_cast<size_t>(std::countr_zero(word))));
      }
      bits[w] = 0;
    }
  }
}

// The search's slots (s_.nodes, or every usable node) and the candidate units on them, each with
// its frees and blockers restricted to those slots, cheapest first; and the initial fit state.
void VictimSearch::UseNodes(bool all_usable) {
  if (all_usable) s_.nodes.assign(Usable().begin(), Usable().end());
  if (all_usable || s_.slot_viable.size() != s_.nodes.size()) s_.slot_viable.assign(s_.nodes.size(), 0);
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
    su.steps = scarce_lean_ ? iu.frees.size() : su.frees.size();
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

std::optional<PreemptionChoice> VictimSearch::Run(const QosPolicy& preemptor_qos) {
  // FitsWithoutVictims' answer where the eligible list gives it alone (before listing them).
  const PrefixFit prefix = FitsOnAscendingPrefix();
  if (prefix == PrefixFit::kFits) return std::nullopt;
  if (!FindUsable(preemptor_qos)) {
    no_room_ = true;
    return std::nullopt;
  }
  // Nothing to preempt when it fits already, anywhere it may go (capped or not).
  if (prefix == PrefixFit::kUnknown && FitsWithoutVictims()) return std::nullopt;
  ChooseScarce();
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

}  // namespace victims

std::optional<PreemptionChoice> RunVictimSearch(const PreemptionInput& in, const VictimIndex& index,
                                                ViableMemo& memo, Scratch& scratch, int64_t work_budget,
                                                bool with_reason, const QosPolicy& preemptor_qos, bool* no_room,
                                                bool scarce_nodes, bool slot_shortcuts) {
  victims::VictimSearch search(in, index, memo, scratch, work_budget, with_reason, scarce_nodes, slot_shortcuts);
  std::optional<PreemptionChoice> choice = search.Run(preemptor_qos);
  if (no_room != nullptr) *no_room = !choice && search.NoRoom();
  return choice;
}

}  // namespace onequeue::queue::internal

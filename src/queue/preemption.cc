#include "queue/preemption.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace onequeue::queue {
namespace {

// Running workloads that must be evicted together (one gang, or one workload without a gang).
struct VictimUnit {
  std::vector<int> workloads;  // indices into Snapshot::running
  int32_t count = 0;
  double max_priority = 0;
  int64_t run_time_lost = 0;
  std::string first_id;  // smallest workload id, for a deterministic order
  // (usable node slot, capacity freed there)
  std::vector<std::pair<int, Resources>> frees;
  // Usable node slots where this unit removes a workload of the other world (exclusive nodes),
  // once per (workload, node).
  std::vector<int> blockers_removed;
  // (budget group slot, pods taken from it)
  std::vector<std::pair<int, int>> disruptions;
};

struct Cost {
  int32_t count = 0;
  double max_priority = 0;
  int64_t run_time_lost = 0;
  friend bool operator<(const Cost& a, const Cost& b) {
    return std::tie(a.count, a.max_priority, a.run_time_lost) <
           std::tie(b.count, b.max_priority, b.run_time_lost);
  }
};

const QosPolicy* FindQos(const QueueConfig& config, const std::string& name) {
  for (const QosPolicy& q : config.qos) {
    if (q.name == name) return &q;
  }
  return nullptr;
}

// Whether a victim's QOS allows this preemptor to take it: known, preemptible, and named in the
// preemptor QOS's can_preempt.
bool QosAllows(const QueueConfig& config, const QosPolicy& preemptor_qos, const std::string& victim_qos) {
  const QosPolicy* q = FindQos(config, victim_qos);
  if (q == nullptr || !q->preemptible) return false;
  return std::find(preemptor_qos.can_preempt.begin(), preemptor_qos.can_preempt.end(), victim_qos) !=
         preemptor_qos.can_preempt.end();
}

// The search state: capacity per usable node with the chosen units applied, and how many member
// copies fit in total. Apply/Unapply are O(nodes the unit touches).
class FitState {
 public:
  FitState(std::vector<Resources> capacity, std::vector<int> blockers, std::vector<int> budget_left,
           const Resources& per_member, int32_t members)
      : capacity_(std::move(capacity)),
        blockers_(std::move(blockers)),
        budget_left_(std::move(budget_left)),
        per_member_(per_member),
        members_(members),
        copies_(capacity_.size(), 0) {
    for (size_t n = 0; n < capacity_.size(); ++n) Refresh(static_cast<int>(n));
  }

  bool Fits() const { return total_copies_ >= members_; }
  int64_t Copies(int slot) const { return copies_[slot]; }
  size_t slots() const { return capacity_.size(); }

  bool WithinBudget(const VictimUnit& u) const {
    for (const auto& [group, pods] : u.disruptions) {
      if (budget_left_[group] < pods) return false;
    }
    return true;
  }

  void Apply(const VictimUnit& u) { Change(u, +1); }
  void Unapply(const VictimUnit& u) { Change(u, -1); }

 private:
  void Change(const VictimUnit& u, int sign) {
    for (const auto& [group, pods] : u.disruptions) budget_left_[group] -= sign * pods;
    for (int slot : u.blockers_removed) blockers_[slot] -= sign;
    for (const auto& [slot, freed] : u.frees) {
      if (sign > 0) {
        capacity_[slot] += freed;
      } else {
        capacity_[slot] -= freed;
      }
    }
    for (int slot : u.blockers_removed) Refresh(slot);
    for (const auto& f : u.frees) Refresh(f.first);
  }

  void Refresh(int slot) {
    total_copies_ -= copies_[slot];
    copies_[slot] = blockers_[slot] > 0 ? 0 : capacity_[slot].CopiesOf(per_member_, members_);
    total_copies_ += copies_[slot];
  }

  std::vector<Resources> capacity_;
  std::vector<int> blockers_;
  std::vector<int> budget_left_;
  Resources per_member_;
  int32_t members_;
  std::vector<int64_t> copies_;
  int64_t total_copies_ = 0;
};

// Running workloads grouped into the units a preemption takes whole: by gang id (in order of
// first appearance), or alone. Indices into `running`.
std::vector<std::vector<int>> GroupByGang(const std::vector<RunningWorkload>& running) {
  std::vector<std::vector<int>> groups;
  absl::flat_hash_map<std::string, int> group_of_gang;
  for (size_t i = 0; i < running.size(); ++i) {
    const std::string& gang = running[i].gang_id;
    if (gang.empty()) {
      groups.push_back({static_cast<int>(i)});
      continue;
    }
    auto [it, inserted] = group_of_gang.try_emplace(gang, static_cast<int>(groups.size()));
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(static_cast<int>(i));
  }
  return groups;
}

// Cheapest first: lowest priority, least run time lost, fewest workloads, then by id.
void SortCheapestFirst(std::vector<VictimUnit>& units) {
  // Sort indices, then move each unit once (units are heavy to swap).
  std::vector<int> order(units.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    const VictimUnit& a = units[x];
    const VictimUnit& b = units[y];
    return std::tie(a.max_priority, a.run_time_lost, a.count, a.first_id) <
           std::tie(b.max_priority, b.run_time_lost, b.count, b.first_id);
  });
  std::vector<VictimUnit> sorted;
  sorted.reserve(units.size());
  for (int i : order) sorted.push_back(std::move(units[i]));
  units = std::move(sorted);
}

// Everything one call needs, built once from the input.
class VictimSearch {
 public:
  VictimSearch(const PreemptionInput& in, int64_t work_budget) : in_(in), work_budget_(work_budget) {}

  std::optional<PreemptionChoice> Run();

 private:
  bool BuildUsableNodes();
  void BuildUnits(const QosPolicy& preemptor_qos);
  FitState InitialState() const;
  void Greedy(FitState& state);
  void PerNode(FitState& state);
  void Deepen(FitState& state, const std::vector<int>& candidates);
  void Search(FitState& state, const std::vector<int>& candidates, size_t start, Cost cost,
              int32_t count_bound);
  PreemptionChoice MakeChoice(FitState& state) const;
  // Exclusive (not shared) node: the preemptor needs every workload of the other world gone.
  bool ExclusiveNode(NodeIndex n) const {
    return static_cast<size_t>(n) < in_.snapshot->nodes.size() && !SharesWorlds(in_.snapshot->nodes[n], *in_.config);
  }

  const PreemptionInput& in_;
  int64_t work_budget_;
  int64_t work_ = 0;
  bool exhausted_ = false;

  std::vector<NodeIndex> usable_;        // slot -> node
  std::vector<int> slot_of_;             // node -> slot or -1
  std::vector<int> initial_blockers_;    // per slot
  std::vector<int> initial_budget_;      // per budget group slot
  std::vector<VictimUnit> units_;        // sorted cheapest first

  std::vector<int> chosen_;              // unit indices on the current search path
  std::optional<Cost> best_cost_;
  std::vector<int> best_units_;
};

bool VictimSearch::BuildUsableNodes() {
  const Snapshot& snap = *in_.snapshot;
  slot_of_.assign(snap.nodes.size(), -1);
  for (NodeIndex n : in_.eligible_nodes) {
    if (n < 0 || static_cast<size_t>(n) >= snap.nodes.size() || slot_of_[n] >= 0) continue;
    if (in_.claimed != nullptr && static_cast<size_t>(n) < in_.claimed->size() && (*in_.claimed)[n]) continue;
    slot_of_[n] = static_cast<int>(usable_.size());
    usable_.push_back(n);
  }
  initial_blockers_.assign(usable_.size(), 0);
  for (const RunningWorkload& r : snap.running) {
    if (r.kind == in_.preemptor->kind) continue;
    absl::flat_hash_set<int> seen;
    for (const Allocation& a : r.allocations) {
      const int slot = a.node >= 0 && static_cast<size_t>(a.node) < slot_of_.size() ? slot_of_[a.node] : -1;
      if (slot >= 0 && ExclusiveNode(a.node) && seen.insert(slot).second) ++initial_blockers_[slot];
    }
  }
  return !usable_.empty();
}

void VictimSearch::BuildUnits(const QosPolicy& preemptor_qos) {
  const Snapshot& snap = *in_.snapshot;
  absl::flat_hash_set<std::string> already;
  if (in_.already_victims != nullptr) already.insert(in_.already_victims->begin(), in_.already_victims->end());

  const std::vector<std::vector<int>> groups = GroupByGang(snap.running);

  absl::flat_hash_map<std::string, int> budget_slot;
  absl::flat_hash_map<std::string, bool> qos_allows;  // victim QOS name -> allowed (few names)
  auto may_be_victim = [&](const RunningWorkload& r) {
    if (!(r.priority < in_.preemptor_priority) || !r.preemptible) return false;
    auto [it, inserted] = qos_allows.try_emplace(r.qos, false);
    if (inserted) it->second = QosAllows(*in_.config, preemptor_qos, r.qos);
    return it->second && (already.empty() || !already.contains(r.id));
  };
  for (const std::vector<int>& group : groups) {
    bool all_may = true;
    for (int i : group) all_may = all_may && may_be_victim(snap.running[i]);
    if (!all_may) continue;  // a gang goes whole or not at all
    VictimUnit u;
    u.workloads = group;
    u.count = static_cast<int32_t>(group.size());
    // Units touch few nodes and budget groups: linear merging beats a hash map per unit.
    std::vector<std::pair<int, Resources>>& freed = u.frees;
    std::vector<std::pair<int, int>>& pods_by_budget = u.disruptions;
    for (int i : group) {
      const RunningWorkload& r = snap.running[i];
      u.max_priority = u.first_id.empty() ? r.priority : std::max(u.max_priority, r.priority);
      if (u.first_id.empty() || r.id < u.first_id) u.first_id = r.id;
      u.run_time_lost += std::max<int64_t>(0, in_.now - r.start_time);
      absl::flat_hash_set<int> blocker_seen;
      for (const Allocation& a : r.allocations) {
        const int slot = a.node >= 0 && static_cast<size_t>(a.node) < slot_of_.size() ? slot_of_[a.node] : -1;
        if (slot < 0) continue;
        auto f = std::find_if(freed.begin(), freed.end(), [&](const auto& e) { return e.first == slot; });
        if (f == freed.end()) {
          freed.emplace_back(slot, a.used);
        } else {
          f->second += a.used;
        }
        if (ExclusiveNode(a.node) && r.kind != in_.preemptor->kind && blocker_seen.insert(slot).second) {
          u.blockers_removed.push_back(slot);
        }
      }
      if (!r.disruption_budget_group.empty()) {
        auto [it, inserted] = budget_slot.try_emplace(r.disruption_budget_group,
                                                      static_cast<int>(initial_budget_.size()));
        if (inserted) {
          auto allowed = snap.disruptions_allowed.find(r.disruption_budget_group);
          initial_budget_.push_back(allowed == snap.disruptions_allowed.end() ? 0 : std::max(0, allowed->second));
        }
        const int pods = std::max<int>(1, static_cast<int>(r.allocations.size()));
        auto b = std::find_if(pods_by_budget.begin(), pods_by_budget.end(),
                              [&](const auto& e) { return e.first == it->second; });
        if (b == pods_by_budget.end()) {
          pods_by_budget.emplace_back(it->second, pods);
        } else {
          b->second += pods;
        }
      }
    }
    if (freed.empty()) continue;  // frees nothing the preemptor could use
    std::sort(u.frees.begin(), u.frees.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::sort(u.disruptions.begin(), u.disruptions.end());
    bool over_budget = false;
    for (const auto& [slot, pods] : u.disruptions) over_budget = over_budget || pods > initial_budget_[slot];
    if (over_budget) continue;  // could never be taken whole
    units_.push_back(std::move(u));
  }
  SortCheapestFirst(units_);
}

FitState VictimSearch::InitialState() const {
  const Snapshot& snap = *in_.snapshot;
  std::vector<Resources> capacity(usable_.size());
  for (size_t s = 0; s < usable_.size(); ++s) {
    const NodeIndex n = usable_[s];
    if (in_.free_now != nullptr && static_cast<size_t>(n) < in_.free_now->size()) {
      capacity[s] = (*in_.free_now)[n];
    } else {
      capacity[s] = snap.nodes[n].allocatable;
    }
  }
  if (in_.free_now == nullptr) {  // derive it: allocatable minus every running allocation
    for (const RunningWorkload& r : snap.running) {
      for (const Allocation& a : r.allocations) {
        if (a.node >= 0 && static_cast<size_t>(a.node) < slot_of_.size() && slot_of_[a.node] >= 0) {
          capacity[slot_of_[a.node]] -= a.used;
        }
      }
    }
  }
  return FitState(std::move(capacity), initial_blockers_, initial_budget_, in_.preemptor->per_member,
                  in_.preemptor->members);
}

// Cheapest-first until the preemptor fits, then drop (most expensive first) every unit that is
// not needed. Gives the bound the exact search starts from.
void VictimSearch::Greedy(FitState& state) {
  std::vector<int> taken;
  for (size_t i = 0; i < units_.size() && !state.Fits(); ++i) {
    if (!state.WithinBudget(units_[i])) continue;
    state.Apply(units_[i]);
    taken.push_back(static_cast<int>(i));
  }
  if (!state.Fits()) {
    for (int i : taken) state.Unapply(units_[i]);
    return;
  }
  for (int k = static_cast<int>(taken.size()) - 1; k >= 0; --k) {
    state.Unapply(units_[taken[k]]);
    if (state.Fits()) {
      taken.erase(taken.begin() + k);
    } else {
      state.Apply(units_[taken[k]]);
    }
  }
  Cost cost;
  for (int i : taken) {
    cost.count += units_[i].count;
    cost.max_priority = std::max(cost.max_priority, units_[i].max_priority);
    cost.run_time_lost += units_[i].run_time_lost;
  }
  best_cost_ = cost;
  best_units_ = taken;
  for (int i : taken) state.Unapply(units_[i]);
}

// Iterative deepening on the victim count over `candidates` (unit indices, cheapest first): the
// first count at which any set fits is the fewest; within it, branch and bound on (highest
// priority, run time lost). Starts from best_cost_ (greedy, or an earlier search).
void VictimSearch::Deepen(FitState& state, const std::vector<int>& candidates) {
  if (!best_cost_) return;
  const int32_t best_count = best_cost_->count;
  for (int32_t bound = 1; bound <= best_count && !exhausted_; ++bound) {
    Search(state, candidates, 0, Cost{}, bound);
    if (best_cost_->count <= bound) return;  // nothing with fewer victims exists here
  }
}

void VictimSearch::Search(FitState& state, const std::vector<int>& candidates, size_t start,
                          Cost cost, int32_t count_bound) {
  if (state.Fits()) {
    if (cost < *best_cost_) {
      best_cost_ = cost;
      best_units_ = chosen_;
    }
    return;  // adding victims only costs more
  }
  for (size_t c = start; c < candidates.size() && !exhausted_; ++c) {
    // Every step counts against the budget, pruned or not, so one call stays bounded.
    if (++work_ > work_budget_) {
      exhausted_ = true;
      return;
    }
    const VictimUnit& u = units_[candidates[c]];
    Cost next{cost.count + u.count, std::max(cost.max_priority, u.max_priority),
              cost.run_time_lost + u.run_time_lost};
    if (next.count > count_bound || !(next < *best_cost_) || !state.WithinBudget(u)) continue;
    work_ += static_cast<int64_t>(u.frees.size());
    state.Apply(u);
    chosen_.push_back(candidates[c]);
    Search(state, candidates, c + 1, next, count_bound);
    chosen_.pop_back();
    state.Unapply(u);
  }
}

// Node by node: the cheapest set among the units that touch one node. When the preemptor is a
// single member this is the whole answer: in a cheapest set every unit touches the node the
// member lands on (any other unit could be dropped), so the best over all nodes is optimal.
// For gangs it gives the global search a tight bound to start from.
void VictimSearch::PerNode(FitState& state) {
  std::vector<std::vector<int>> by_slot(usable_.size());
  for (size_t i = 0; i < units_.size(); ++i) {
    for (const auto& f : units_[i].frees) by_slot[f.first].push_back(static_cast<int>(i));
  }
  for (const std::vector<int>& candidates : by_slot) {
    if (candidates.empty() || exhausted_) continue;
    Deepen(state, candidates);
  }
}

PreemptionChoice VictimSearch::MakeChoice(FitState& state) const {
  const Snapshot& snap = *in_.snapshot;
  PreemptionChoice choice;
  choice.exact = !exhausted_;
  choice.victim_count = best_cost_->count;
  choice.max_victim_priority = best_cost_->max_priority;
  choice.run_time_lost = best_cost_->run_time_lost;
  PreemptDecision& d = choice.decision;
  d.preemptor = in_.preemptor->id;
  Duration grace = 0;
  std::vector<char> touched(usable_.size(), 0);
  for (int ui : best_units_) {
    state.Apply(units_[ui]);
    for (const auto& f : units_[ui].frees) touched[f.first] = 1;
    for (int w : units_[ui].workloads) {
      const RunningWorkload& r = snap.running[w];
      d.victims.push_back(r.id);
      if (const QosPolicy* q = FindQos(*in_.config, r.qos)) grace = std::max(grace, q->grace_time);
    }
  }
  std::sort(d.victims.begin(), d.victims.end());
  d.earliest_start = in_.now + grace;

  // Members go first to nodes the victims free (those are the nodes to reserve), most room
  // first, then to other nodes; ties by node index.
  std::vector<int> order(usable_.size());
  for (size_t s = 0; s < order.size(); ++s) order[s] = static_cast<int>(s);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_tuple(-touched[a], -state.Copies(a), usable_[a]) <
           std::make_tuple(-touched[b], -state.Copies(b), usable_[b]);
  });
  for (int s : order) {
    for (int64_t c = 0; c < state.Copies(s) && static_cast<int32_t>(d.member_nodes.size()) < in_.preemptor->members; ++c) {
      d.member_nodes.push_back(usable_[s]);
    }
  }
  std::vector<NodeIndex> nodes = d.member_nodes;
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::vector<std::string> node_names;
  for (NodeIndex n : nodes) node_names.push_back(snap.nodes[n].name);
  choice.reason = absl::StrFormat(
      "preempts %d workload%s (%s) of lower priority (highest %.1f < %.1f) on node%s %s; %d s of "
      "run time lost",
      choice.victim_count, choice.victim_count == 1 ? "" : "s", absl::StrJoin(d.victims, ", "),
      choice.max_victim_priority, in_.preemptor_priority, nodes.size() == 1 ? "" : "s",
      absl::StrJoin(node_names, ", "), choice.run_time_lost);
  for (int ui : best_units_) state.Unapply(units_[ui]);
  return choice;
}

std::optional<PreemptionChoice> VictimSearch::Run() {
  if (in_.snapshot == nullptr || in_.config == nullptr || in_.preemptor == nullptr) return std::nullopt;
  const PendingWorkload& p = *in_.preemptor;
  if (p.members <= 0 || !p.may_preempt) return std::nullopt;  // preemptionPolicy: Never
  const QosPolicy* qos = FindQos(*in_.config, p.qos);
  if (qos == nullptr || qos->can_preempt.empty()) return std::nullopt;
  if (!BuildUsableNodes()) return std::nullopt;
  BuildUnits(*qos);  // before the state: it sizes the disruption budgets
  FitState state = InitialState();
  if (state.Fits()) return std::nullopt;  // nothing to preempt: it fits already
  Greedy(state);
  if (!best_cost_) return std::nullopt;  // even every candidate together would not make room
  PerNode(state);
  if (p.members > 1) {
    std::vector<int> all(units_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    Deepen(state, all);
  }
  return MakeChoice(state);
}

}  // namespace

std::optional<PreemptionChoice> CheapestVictimsPlanner::Choose(const PreemptionInput& input) const {
  VictimSearch search(input, work_budget_);
  return search.Run();
}

std::optional<PreemptDecision> CheapestVictimsPlanner::Plan(const PreemptionInput& input) const {
  std::optional<PreemptionChoice> choice = Choose(input);
  if (!choice) return std::nullopt;
  return std::move(choice->decision);
}

}  // namespace onequeue::queue

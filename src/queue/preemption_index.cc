// The victim index (preemption_index.h): units grouped, ordered and listed per node once per
// snapshot.
#include "queue/preemption_index.h"

#include <algorithm>
#include <span>
#include <string>

namespace onequeue::queue::internal {

namespace {

// Gangs (in order of first appearance) or single workloads: group g's running workloads are
// members[group_begin[g], group_begin[g + 1]), in index order (flat arrays: a vector per group
// cost a malloc and a free per running workload, ~3 M instructions per steady cycle; issue 26,
// the steady cycle's thirteenth pass).
void GroupRunning(const Snapshot& snap, std::vector<int>& group_begin, std::vector<int>& members) {
  const size_t running = snap.running.size();
  std::vector<int> group_of(running);
  int groups = 0;
  {
    absl::flat_hash_map<std::string_view, int> group_of_gang;
    for (size_t i = 0; i < running; ++i) {
      const std::string& gang = snap.running[i].gang_id;
      if (gang.empty()) {
        group_of[i] = groups++;
        continue;
      }
      auto [it, inserted] = group_of_gang.try_emplace(gang, groups);
      if (inserted) ++groups;
      group_of[i] = it->second;
    }
  }
  group_begin.assign(static_cast<size_t>(groups) + 1, 0);
  for (int g : group_of) ++group_begin[g + 1];
  for (int g = 0; g < groups; ++g) group_begin[g + 1] += group_begin[g];
  members.resize(running);
  std::vector<int> fill(group_begin.begin(), group_begin.end() - 1);
  for (size_t i = 0; i < running; ++i) members[fill[group_of[i]]++] = static_cast<int>(i);
}

}  // namespace

void VictimIndex::Build(const Snapshot& snap, const QueueConfig& config, Time now) {
  snapshot_ = &snap;
  now_ = now;
  shared_nodes_ = config.shared_nodes;
  units_.clear();
  unit_workloads.clear();
  frees.clear();
  blockers.clear();
  disruptions.clear();
  unit_qos.clear();
  unit_of_workload_.clear();
  qos_names_.clear();
  budget_allowed_.clear();
  for (auto& s : scarce_) s.reset();
  for (auto& w : nodes_with_) w.reset();
  any_negative_use_ = -1;
  std::vector<int> group_begin, members;
  GroupRunning(snap, group_begin, members);
  const int groups = static_cast<int>(group_begin.size()) - 1;
  absl::flat_hash_map<std::string_view, int> budget_of;
  absl::flat_hash_map<std::string_view, int> qos_of;
  for (int g = 0; g < groups; ++g) {
    BuildUnit(snap, config, now, members.data() + group_begin[g], members.data() + group_begin[g + 1], budget_of, qos_of);
  }
  // Cheapest first; the order every search walks (ids are unique, so it is total, and any sort
  // gives this one order). Flat keys, the id read only on a tie of the rest: sorting indices
  // into the units cost ~20 M instructions per steady cycle (issue 26).
  struct SortKey {
    double max_priority;
    int64_t run_time_lost;
    int32_t count;
    int32_t unit;
  };
  std::vector<SortKey> order(units_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const IndexUnit& u = units_[i];
    order[i] = SortKey{u.max_priority, u.run_time_lost, u.count, static_cast<int32_t>(i)};
  }
  std::sort(order.begin(), order.end(), [&](const SortKey& a, const SortKey& b) {
    // As std::tie(max_priority, run_time_lost, count, first_id) compares.
    if (a.max_priority < b.max_priority) return true;
    if (b.max_priority < a.max_priority) return false;
    if (a.run_time_lost != b.run_time_lost) return a.run_time_lost < b.run_time_lost;
    if (a.count != b.count) return a.count < b.count;
    return units_[a.unit].first_id < units_[b.unit].first_id;
  });
  min_class_priority_ = INT32_MAX;
  for (const IndexUnit& u : units_) {
    if (u.all_by_class && u.all_preemptible && !u.over_budget) {
      min_class_priority_ = std::min(min_class_priority_, u.max_class_priority);
    }
  }
  std::vector<IndexUnit> sorted;
  sorted.reserve(units_.size());
  for (const SortKey& k : order) sorted.push_back(units_[k.unit]);
  units_ = std::move(sorted);
  unit_of_workload_built_ = false;
  unit_of_running_.assign(snap.running.size(), -1);
  for (size_t u = 0; u < units_.size(); ++u) {
    for (uint32_t k = units_[u].workloads.begin; k < units_[u].workloads.end; ++k) {
      unit_of_running_[unit_workloads[k]] = static_cast<int>(u);
    }
  }
  BuildNodeLists(snap, config);
}

void VictimIndex::BuildUnitOfWorkload() const {
  unit_of_workload_.reserve(snapshot_->running.size());
  for (size_t u = 0; u < units_.size(); ++u) {  // the order Build used: the first unit wins
    for (uint32_t k = units_[u].workloads.begin; k < units_[u].workloads.end; ++k) {
      unit_of_workload_.try_emplace(snapshot_->running[unit_workloads[k]].id, static_cast<int>(u));
    }
  }
  unit_of_workload_built_ = true;
}

void VictimIndex::BuildUnit(const Snapshot& snap, const QueueConfig& config, Time now, const int* group_begin,
                            const int* group_end, absl::flat_hash_map<std::string_view, int>& budget_of,
                            absl::flat_hash_map<std::string_view, int>& qos_of) {
  const size_t nodes = snap.nodes.size();
  const std::span<const int> group(group_begin, group_end);
  IndexUnit u;
  u.count = static_cast<int32_t>(group.size());
  u.workloads.begin = static_cast<uint32_t>(unit_workloads.size());
  u.frees.begin = static_cast<uint32_t>(frees.size());
  u.blockers.begin = static_cast<uint32_t>(blockers.size());
  u.disruptions.begin = static_cast<uint32_t>(disruptions.size());
  u.qos.begin = static_cast<uint32_t>(unit_qos.size());
  for (int i : group) {
    const RunningWorkload& r = snap.running[i];
    unit_workloads.push_back(i);
    u.max_priority = u.first_id.empty() ? r.priority : std::max(u.max_priority, r.priority);
    if (u.first_id.empty() || r.id < u.first_id) u.first_id = r.id;
    u.run_time_lost += std::max<int64_t>(0, now - r.start_time);
    u.all_preemptible = u.all_preemptible && r.preemptible;
    u.all_by_class = u.all_by_class && r.class_priority.has_value();
    if (r.class_priority) u.max_class_priority = std::max(u.max_class_priority, *r.class_priority);
    auto [q, q_new] = qos_of.try_emplace(r.qos, static_cast<int>(qos_names_.size()));
    if (q_new) qos_names_.push_back(r.qos);
    if (std::find(unit_qos.begin() + u.qos.begin, unit_qos.end(), q->second) == unit_qos.end()) {
      unit_qos.push_back(q->second);
    }
    const size_t blockers_of_r = blockers.size();
    for (const Allocation& a : r.allocations) {
      if (a.node < 0 || static_cast<size_t>(a.node) >= nodes) continue;
      // Units touch few nodes: linear merging beats a hash map per unit.
      auto f = std::find_if(frees.begin() + u.frees.begin, frees.end(), [&](const auto& e) { return e.first == a.node; });
      if (f == frees.end()) {
        frees.emplace_back(a.node, a.used);
      } else {
        f->second += a.used;
      }
      if (!SharesWorlds(snap.nodes[a.node], config) &&
          std::find_if(blockers.begin() + blockers_of_r, blockers.end(),
                       [&](const auto& e) { return e.first == a.node; }) == blockers.end()) {
        blockers.emplace_back(a.node, r.kind);
      }
    }
    if (!r.disruption_budget_group.empty()) {
      auto [it, inserted] = budget_of.try_emplace(r.disruption_budget_group, static_cast<int>(budget_allowed_.size()));
      if (inserted) {
        auto allowed = snap.disruptions_allowed.find(r.disruption_budget_group);
        budget_allowed_.push_back(allowed == snap.disruptions_allowed.end() ? 0 : std::max(0, allowed->second));
      }
      const int pods = std::max<int>(1, static_cast<int>(r.allocations.size()));
      auto b = std::find_if(disruptions.begin() + u.disruptions.begin, disruptions.end(),
                            [&](const auto& e) { return e.first == it->second; });
      if (b == disruptions.end()) {
        disruptions.emplace_back(it->second, pods);
      } else {
        b->second += pods;
      }
    }
  }
  u.workloads.end = static_cast<uint32_t>(unit_workloads.size());
  u.frees.end = static_cast<uint32_t>(frees.size());
  u.blockers.end = static_cast<uint32_t>(blockers.size());
  u.disruptions.end = static_cast<uint32_t>(disruptions.size());
  u.qos.end = static_cast<uint32_t>(unit_qos.size());
  std::sort(frees.begin() + u.frees.begin, frees.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (uint32_t k = u.disruptions.begin; k < u.disruptions.end; ++k) {
    u.over_budget = u.over_budget || disruptions[k].second > budget_allowed_[disruptions[k].first];
  }
  units_.push_back(u);
}

void VictimIndex::BuildNodeLists(const Snapshot& snap, const QueueConfig& config) {
  const size_t nodes = snap.nodes.size();
  node_units_begin_.assign(nodes + 1, 0);
  for (const IndexUnit& u : units_) {
    for (uint32_t k = u.frees.begin; k < u.frees.end; ++k) ++node_units_begin_[frees[k].first + 1];
  }
  for (size_t n = 0; n < nodes; ++n) node_units_begin_[n + 1] += node_units_begin_[n];
  node_units_.assign(node_units_begin_[nodes], 0);
  std::vector<uint32_t> fill(node_units_begin_.begin(), node_units_begin_.end() - 1);
  for (size_t u = 0; u < units_.size(); ++u) {  // ascending: each node's list is cheapest first
    for (uint32_t k = units_[u].frees.begin; k < units_[u].frees.end; ++k) {
      node_units_[fill[frees[k].first]++] = static_cast<int>(u);
    }
  }
  node_kind_workloads_.assign(nodes, {0, 0});
  derived_free_.resize(nodes);
  for (size_t n = 0; n < nodes; ++n) derived_free_[n] = snap.nodes[n].allocatable;
  std::vector<int> seen;  // nodes already counted for the current workload
  for (const RunningWorkload& r : snap.running) {
    seen.clear();
    for (const Allocation& a : r.allocations) {
      if (a.node < 0 || static_cast<size_t>(a.node) >= nodes) continue;
      derived_free_[a.node] -= a.used;
      if (SharesWorlds(snap.nodes[a.node], config) || std::find(seen.begin(), seen.end(), a.node) != seen.end()) continue;
      seen.push_back(a.node);
      ++node_kind_workloads_[a.node][KindSlot(r.kind)];
    }
  }
}

int64_t VictimIndex::units_below(double priority) const {
  auto it = std::lower_bound(units_.begin(), units_.end(), priority,
                             [](const IndexUnit& u, double p) { return u.max_priority < p; });
  return it - units_.begin();
}

namespace {

// StepsBound (victim_search_exact.cc) without a work budget: sets of at most b of k units, b up
// to `bound`, at most `per_call` steps each; saturated at ScarceNodes::kSaturated.
int64_t StepsBoundUnsaturated(int64_t k, int64_t per_call, int bound) {
  constexpr int64_t kLimit = ScarceNodes::kSaturated;
  int64_t total = 0, calls = 0, choose = 1;
  for (int64_t b = 1; b <= bound && total < kLimit; ++b) {
    if (b == 1) calls = 1;
    choose = b > k ? 0 : std::min(kLimit, choose * (k - b + 1) / b);
    calls = std::min(kLimit, calls + choose);
    total = calls > kLimit / std::max<int64_t>(1, per_call) ? kLimit : std::min(kLimit, total + calls * per_call);
  }
  return total;
}

}  // namespace

const ScarceNodes& VictimIndex::scarce_nodes(int r) const {
  std::unique_ptr<ScarceNodes>& slot = scarce_[r];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<ScarceNodes>();
  ScarceNodes& s = *slot;
  const size_t nodes = node_units_begin_.empty() ? 0 : node_units_begin_.size() - 1;
  s.of.assign(nodes, ScarceNodes::kSkip);
  for (size_t n = 0; n < nodes; ++n) {
    if (snapshot_->nodes[n].allocatable[r] > 0) s.of[n] = ScarceNodes::kHasR;
  }
  for (const auto& [n, freed] : frees) {
    if (freed[r] > 0) s.of[n] = ScarceNodes::kHasR;
  }
  // A unit running on a node with r, or taking from a budget, keeps every node it is on.
  std::vector<char> keeps(units_.size(), 0);
  for (size_t u = 0; u < units_.size(); ++u) {
    const IndexUnit& unit = units_[u];
    bool k = !unit.disruptions.empty();
    for (uint32_t f = unit.frees.begin; f < unit.frees.end && !k; ++f) k = s.of[frees[f].first] == ScarceNodes::kHasR;
    keeps[u] = k;
  }
  s.units_and_steps.assign(nodes, {0, 0});
  for (size_t n = 0; n < nodes; ++n) {
    int64_t k = 0, per_call = 0;
    for (const int* u = units_on_begin(n); u != units_on_end(n); ++u) {
      if (keeps[*u] && s.of[n] == ScarceNodes::kSkip) s.of[n] = ScarceNodes::kKeep;
      ++k;
      per_call += 1 + units_[*u].frees.size();
    }
    const bool skip = s.of[n] == ScarceNodes::kSkip;
    s.kept += !skip;
    if (!skip) s.kept_nodes.push_back(static_cast<NodeIndex>(n));
    if (skip) s.units_and_steps[n] = {k, per_call};
  }
  return s;
}

const std::vector<int64_t>& ScarceNodes::BoundBefore(int bound) const {
  std::vector<int64_t>& before = bound_before_[bound - 1];
  if (!before.empty()) return before;
  before.assign(of.size() + 1, 0);
  for (size_t n = 0; n < of.size(); ++n) {
    const auto [k, per_call] = units_and_steps[n];
    const int64_t here = of[n] == kSkip ? StepsBoundUnsaturated(k, per_call, bound) : 0;
    before[n + 1] = std::min(kSaturated, before[n] + here);
  }
  return before;
}

const std::vector<NodeIndex>& VictimIndex::nodes_with(int r) const {
  std::unique_ptr<std::vector<NodeIndex>>& slot = nodes_with_[r];
  if (slot != nullptr) return *slot;
  slot = std::make_unique<std::vector<NodeIndex>>();
  const size_t nodes = node_units_begin_.empty() ? 0 : node_units_begin_.size() - 1;
  for (size_t n = 0; n < nodes; ++n) {
    if (snapshot_->nodes[n].allocatable[r] > 0) slot->push_back(static_cast<NodeIndex>(n));
  }
  return *slot;
}

bool VictimIndex::any_negative_use() const {
  if (any_negative_use_ < 0) {
    any_negative_use_ = 0;
    const size_t nodes = node_units_begin_.empty() ? 0 : node_units_begin_.size() - 1;
    for (const RunningWorkload& r : snapshot_->running) {
      for (const Allocation& a : r.allocations) {
        if (a.node >= 0 && static_cast<size_t>(a.node) < nodes && a.used.AnyNegative()) any_negative_use_ = 1;
      }
    }
  }
  return any_negative_use_ != 0;
}

namespace {
// Distinct keys kept per index; a cycle's preemptors have a handful (priority bands, QOS, world).
constexpr size_t kMaxEntries = 16;
}  // namespace

void ViableMemo::Reset(size_t nodes, size_t units) {
  nodes_ = nodes;
  units_ = units;
  used_ = 0;
  next_evicted_ = 0;
  excluded_.assign(units, 0);
  excluded_list_.clear();
}

int ViableMemo::Select(const Key& key) {
  for (size_t e = 0; e < used_; ++e) {
    if (entries_[e].key == key) return static_cast<int>(e);
  }
  size_t e = used_;
  if (used_ < kMaxEntries) {
    ++used_;
  } else {
    e = next_evicted_;
    next_evicted_ = (next_evicted_ + 1) % kMaxEntries;
  }
  if (e >= entries_.size()) entries_.emplace_back();
  Entry& entry = entries_[e];
  entry.key = key;
  entry.verdict.assign(units_, -1);
  entry.at.assign(nodes_, 0);
  entry.viable.clear();
  return static_cast<int>(e);
}

int ViableMemo::Base(int entry) const {
  const Key& key = entries_[entry].key;
  if (key.by_class) return -1;
  int base = -1;
  int64_t distance = 0;
  for (size_t e = 0; e < used_; ++e) {
    const Key& k = entries_[e].key;
    if (static_cast<int>(e) == entry || k.by_class || k.other != key.other || k.allowed_qos != key.allowed_qos) continue;
    const int64_t d = k.threshold > key.threshold ? k.threshold - key.threshold : key.threshold - k.threshold;
    if (base < 0 || d < distance) {
      base = static_cast<int>(e);
      distance = d;
    }
  }
  return base;
}

void ViableMemo::SyncExcluded(const std::vector<int>& units, const VictimIndex& index) {
  for (int u : units) {
    if (excluded_[u]) continue;
    excluded_[u] = 1;
    excluded_list_.push_back(u);
    DropNodesOf(index.unit(u), index);
  }
  if (excluded_list_.size() == units.size()) return;  // the same earlier victims, or more
  // An earlier victim of the last call is not one now: a new cycle (the node entries would miss
  // its frees). The memo is the cycle's: it starts afresh, candidacies too.
  used_ = 0;
  next_evicted_ = 0;
  for (int u : excluded_list_) excluded_[u] = 0;
  excluded_list_.clear();
  for (int u : units) {
    excluded_[u] = 1;
    excluded_list_.push_back(u);
  }
}

void ViableMemo::DropNodesOf(const IndexUnit& unit, const VictimIndex& index) {
  for (size_t e = 0; e < used_; ++e) {
    std::vector<uint32_t>& at = entries_[e].at;
    for (uint32_t k = unit.frees.begin; k < unit.frees.end; ++k) at[index.frees[k].first] = 0;
    for (uint32_t k = unit.blockers.begin; k < unit.blockers.end; ++k) at[index.blockers[k].first] = 0;
  }
}

}  // namespace onequeue::queue::internal

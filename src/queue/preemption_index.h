#pragma once
// The victim index of CheapestVictimsPlanner (preemption.h, docs/queue.md "Preemption"): what a
// victim search needs from a snapshot that does not depend on the preemptor, built once per
// snapshot and shared by the searches of a cycle. Internal to preemption.cc and victim_search.cc.
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "queue/model.h"

namespace onequeue::queue::internal {

inline int KindSlot(WorkloadKind k) { return k == WorkloadKind::kPodGroup ? 0 : 1; }

// A half-open range into one of the index's or the search's flat arrays.
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t size() const { return end - begin; }
  bool empty() const { return begin == end; }
};

// Running workloads that must be evicted together (one gang, or one workload without a gang),
// with what does not depend on the preemptor.
struct IndexUnit {
  Span workloads;    // VictimIndex::unit_workloads: indices into Snapshot::running
  Span frees;        // VictimIndex::frees: (node, capacity freed there), ascending node
  Span blockers;     // VictimIndex::blockers: one per (workload, exclusive node it is on)
  Span disruptions;  // VictimIndex::disruptions: (budget group, pods taken from it)
  Span qos;          // VictimIndex::unit_qos: the distinct QOS ids of its workloads
  int32_t count = 0;
  double max_priority = 0;
  int64_t run_time_lost = 0;
  std::string_view first_id;  // smallest workload id, for a deterministic order
  bool all_preemptible = true;
  bool over_budget = false;  // takes more pods from a budget group than it allows: never a victim
  // Issue 28: every workload has a class_priority (pod groups without QOS); the highest of them.
  bool all_by_class = true;
  int32_t max_class_priority = INT32_MIN;
};

// Issue 26 (the steady cycle, eleventh pass): for one extended resource slot r, which nodes a
// one-member victim search of a preemptor asking r may pass over without asking their candidates
// (VictimSearch::UseScarceNodes; docs/queue.md "Preemption"). A node is kSkip when its allocatable
// has no r, no running workload frees r there, and none of its units runs on a node with r (or
// freeing r: kHasR) or takes from a disruption budget; every other node is kept (kKeep, kHasR).
// Per deepening bound B (1..kMaxBound), `BoundBefore(B)[n]` sums over the kSkip nodes below n a
// bound of the steps the search over every node could count on each of them
// (VictimSearch::StepsBound of its k units, k plus their frees per call), saturated at kSaturated;
// each bound's sums made when first asked (issue 26, twelfth pass: mostly only B = 1 is).
struct ScarceNodes {
  enum Class : uint8_t { kSkip = 0, kKeep = 1, kHasR = 2 };
  static constexpr int kMaxBound = 6;
  static constexpr int64_t kSaturated = int64_t{1} << 50;
  std::vector<uint8_t> of;  // per node
  size_t kept = 0;          // nodes not kSkip
  std::vector<NodeIndex> kept_nodes;  // those nodes, ascending
  // Per kSkip node (0 for the others): its units, and their steps per call (1 + frees each).
  std::vector<std::pair<int64_t, int64_t>> units_and_steps;
  const std::vector<int64_t>& BoundBefore(int bound) const;  // nodes + 1 entries

 private:
  mutable std::array<std::vector<int64_t>, kMaxBound> bound_before_;
};

// Built once per snapshot (and `now`), shared by every victim search of a cycle: the victim units
// in the cheapest-first order (lowest priority, least run time lost, fewest workloads, then by
// id), and per node the units on it and the workloads of each world that block the other world
// there. String views point into the snapshot: valid while it lives.
class VictimIndex {
 public:
  void Build(const Snapshot& snap, const QueueConfig& config, Time now);

  bool BuiltFor(const Snapshot* snap, Time now, bool shared_nodes) const {
    return snapshot_ == snap && now_ == now && shared_nodes_ == shared_nodes;
  }
  const IndexUnit& unit(int u) const { return units_[u]; }
  size_t unit_count() const { return units_.size(); }
  // Units with a workload on node `n`, cheapest first.
  const int* units_on_begin(NodeIndex n) const { return node_units_.data() + node_units_begin_[n]; }
  const int* units_on_end(NodeIndex n) const { return node_units_.data() + node_units_begin_[n + 1]; }
  // Workloads of world `kind` holding something on node `n` when it is exclusive (0 if shared).
  int workloads_of(NodeIndex n, WorkloadKind kind) const { return node_kind_workloads_[n][KindSlot(kind)]; }
  const Resources& derived_free(NodeIndex n) const { return derived_free_[n]; }
  // The unit holding the running workload `id`, or -1.
  int unit_of(std::string_view id) const {
    if (!unit_of_workload_built_) BuildUnitOfWorkload();
    auto it = unit_of_workload_.find(id);
    return it == unit_of_workload_.end() ? -1 : it->second;
  }
  // The unit holding snapshot.running[i], or -1 (an index out of range).
  int unit_of_running(int32_t i) const {
    return i >= 0 && static_cast<size_t>(i) < unit_of_running_.size() ? unit_of_running_[i] : -1;
  }
  const std::vector<std::string_view>& qos_names() const { return qos_names_; }
  const std::vector<int>& budget_allowed() const { return budget_allowed_; }
  // Issue 28: the lowest max_class_priority of a unit that could go by PriorityClass (every
  // workload with a class_priority, preemptible, within budget); INT32_MAX when none: a
  // preemptor by class below or at it has no candidate, and its search stops at once.
  int32_t min_class_priority() const { return min_class_priority_; }
  // How many units have a max_priority below `priority`: the units come by ascending
  // max_priority, so these are the first ones, the only ones a preemptor of that priority may
  // take (VictimSearch::CandidateUncached). Preemptors with the same count see the same units.
  int64_t units_below(double priority) const;
  // ScarceNodes of extended resource slot `r`, built at the first call for r after Build (the
  // searches of a planner are serialised, so the lazy build needs no lock).
  const ScarceNodes& scarce_nodes(int r) const;
  // The nodes whose allocatable has some of extended resource slot `r`, ascending (built at the
  // first call for r after Build, as scarce_nodes).
  const std::vector<NodeIndex>& nodes_with(int r) const;
  // Some running workload uses a negative amount somewhere: derived_free may exceed allocatable
  // (found at the first call after Build).
  bool any_negative_use() const;

  std::vector<int> unit_workloads;
  std::vector<std::pair<NodeIndex, Resources>> frees;
  std::vector<std::pair<NodeIndex, WorkloadKind>> blockers;
  std::vector<std::pair<int, int>> disruptions;
  std::vector<int> unit_qos;

 private:
  void BuildUnit(const Snapshot& snap, const QueueConfig& config, Time now, const int* group_begin, const int* group_end,
                 absl::flat_hash_map<std::string_view, int>& budget_of, absl::flat_hash_map<std::string_view, int>& qos_of);
  void BuildNodeLists(const Snapshot& snap, const QueueConfig& config);
  // unit_of's map, made at its first call after Build (issue 26, twelfth pass: the cycle pass
  // names earlier victims by index, so a cycle without anti-affinity carriers never asks).
  void BuildUnitOfWorkload() const;

  const Snapshot* snapshot_ = nullptr;
  Time now_ = 0;
  bool shared_nodes_ = false;
  std::vector<IndexUnit> units_;
  std::vector<uint32_t> node_units_begin_;
  std::vector<int> node_units_;
  std::vector<std::array<int, 2>> node_kind_workloads_;
  std::vector<Resources> derived_free_;
  mutable absl::flat_hash_map<std::string_view, int> unit_of_workload_;
  mutable bool unit_of_workload_built_ = false;
  std::vector<int> unit_of_running_;
  std::vector<std::string_view> qos_names_;
  std::vector<int> budget_allowed_;
  int32_t min_class_priority_ = INT32_MAX;
  mutable std::array<std::unique_ptr<ScarceNodes>, kMaxResourceKinds> scarce_;
  mutable std::array<std::unique_ptr<std::vector<NodeIndex>>, kMaxResourceKinds> nodes_with_;
  mutable int8_t any_negative_use_ = -1;  // -1: not known yet
};

// Issue 26: what the candidate cap's window walk (victim_search.cc, ViableCopies) learns about a
// node, kept across the searches of a cycle that see the same candidates. Per candidate key (see
// Key), per node: the capacity its candidate units free there and how many workloads of the
// other world stay on it once they go; and per unit whether it is a candidate at all (earlier
// victims aside). Neither depends on the node's free capacity or on claims, which every search
// reads afresh (a claimed node is not usable, so its entry is not read); a node's entries depend
// on which units earlier preemptions of the cycle took, so they are dropped when a unit on the
// node becomes an earlier victim (SyncExcluded), and every entry when the set of earlier victims
// is not the last one grown (a new cycle: the memo is the cycle's). Reset with each new index.
class ViableMemo {
 public:
  // Everything a unit's candidacy and a node's entry depend on, besides the earlier victims:
  // two searches with equal keys ask the same question of every unit and node.
  struct Key {
    bool by_class = false;
    // By class: the preemptor's PriorityClass value; else VictimIndex::units_below its priority.
    int64_t threshold = 0;
    WorkloadKind other = WorkloadKind::kPodGroup;  // the world whose workloads block a node
    std::vector<char> allowed_qos;  // per QOS id of the index: may be preempted (empty by class)
    bool operator==(const Key&) const = default;
  };
  struct Viable {
    Resources freed;       // by the node's candidate units, on the node
    int blockers_left = 0; // workloads of the other world left on it (exclusive nodes)
    int32_t units = 0;     // candidate units on the node
    // The lowest VictimSearch::Weight among them (the key says which weight).
    double cheapest = std::numeric_limits<double>::infinity();
    // Candidate units on the node that run on another node too, take from a disruption budget or
    // free a negative amount there (a count, not a flag, so that a unit can be taken out again:
    // VictimSearch::ViableUncached). None: what VictimSearch::UseLeanNodes may leave out.
    int32_t shared = 0;
    bool alone() const { return shared == 0; }
  };

  // Every entry is stale: a new index of `nodes` nodes and `units` units.
  void Reset(size_t nodes, size_t units);
  // The entry of `key` (made, or an old one's storage reused, when new): its id for the calls
  // below, valid until the next Select.
  int Select(const Key& key);
  // `units`: the distinct units that are earlier victims for this search. Drops the node entries
  // this changes (those of the units new since the last call); every entry when some unit of the
  // last call is missing.
  void SyncExcluded(const std::vector<int>& units, const VictimIndex& index);

  // Issue 26: the entry a new key's node entries may start from (VictimSearch::ViableUncached):
  // of the keys that differ from `entry`'s only in the threshold (neither by class), the one with
  // the nearest; -1 when none. Units come cheapest first, so its candidates and `entry`'s differ
  // only in the units between the two thresholds; and its node entries were made, or dropped,
  // with the same earlier victims. A cycle's preemptors mostly differ in priority only.
  int Base(int entry) const;
  int64_t threshold(int entry) const { return entries_[entry].key.threshold; }

  // Whether `unit` is a candidate under the entry's key, earlier victims aside: -1 not known.
  int8_t& verdict(int entry, int unit) { return entries_[entry].verdict[unit]; }
  const Viable* Find(int entry, NodeIndex n) const {
    const Entry& e = entries_[entry];
    return e.at[n] != 0 ? &e.viable[e.at[n] - 1] : nullptr;
  }
  const Viable& Store(int entry, NodeIndex n, const Viable& v) {
    Entry& e = entries_[entry];
    e.viable.push_back(v);
    e.at[n] = static_cast<uint32_t>(e.viable.size());
    return e.viable.back();
  }

 private:
  struct Entry {
    Key key;
    std::vector<int8_t> verdict;  // per unit
    // Per node: 1 + its entry in `viable`, 0 when unknown (or dropped). Dense, in the order
    // stored: a key that walks few nodes (most of a burst's, each with its own priority) costs
    // a per-node index to clear, not 5,000 Resources.
    std::vector<uint32_t> at;
    std::vector<Viable> viable;
  };
  void DropNodesOf(const IndexUnit& unit, const VictimIndex& index);

  size_t nodes_ = 0;
  size_t units_ = 0;
  std::vector<Entry> entries_;  // the first `used_` hold keys of the current index
  size_t used_ = 0;
  size_t next_evicted_ = 0;      // past kMaxEntries keys, the entry reused next (round robin)
  std::vector<char> excluded_;   // per unit: in the last SyncExcluded
  std::vector<int> excluded_list_;
};

}  // namespace onequeue::queue::internal

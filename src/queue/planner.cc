// The backfill planner. See planner.h for the contract and docs/queue.md "Backfill" for the
// algorithm and its invariants.
#include "queue/planner.h"

#include <algorithm>
#include <array>
#include <bit>
#include <deque>
#include <limits>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "queue/eligibility.h"
#include "queue/priority.h"
#include "queue/profile.h"

namespace onequeue::queue {

absl::Status ValidateConfig(const QueueConfig& c) {
  if (c.reservation_depth < 0) {
    return absl::InvalidArgumentError("reservation_depth must be >= 0 (0 = unlimited)");
  }
  if (c.resolution <= 0) return absl::InvalidArgumentError("resolution must be > 0 seconds");
  if (c.window <= 0) return absl::InvalidArgumentError("window must be > 0 seconds");
  if (c.max_age < 0) return absl::InvalidArgumentError("max_age must be >= 0");
  if (c.starvation_bound < 0) return absl::InvalidArgumentError("starvation_bound must be >= 0 (0 = off)");
  if (c.usage_half_life < 0) return absl::InvalidArgumentError("usage_half_life must be >= 0");
  if (c.max_estimates_per_cycle < 0) {
    return absl::InvalidArgumentError("max_estimates_per_cycle must be >= 0 (0 = unlimited)");
  }
  absl::flat_hash_set<std::string> names;
  for (const QosPolicy& q : c.qos) {
    if (!names.insert(q.name).second) return absl::InvalidArgumentError("duplicate qos " + q.name);
    if (q.priority < 0) return absl::InvalidArgumentError("qos " + q.name + ": priority < 0");
    if (q.grace_time < 0) return absl::InvalidArgumentError("qos " + q.name + ": grace_time < 0");
  }
  for (const QosPolicy& q : c.qos) {
    for (const std::string& v : q.can_preempt) {
      if (!names.contains(v)) {
        return absl::InvalidArgumentError("qos " + q.name + ": can_preempt names unknown qos " + v);
      }
    }
  }
  absl::flat_hash_map<std::string, std::string> parent;
  for (const Account& a : c.accounts) {
    if (a.name.empty()) return absl::InvalidArgumentError("account with an empty name");
    if (!parent.emplace(a.name, a.parent).second) {
      return absl::InvalidArgumentError("duplicate account " + a.name);
    }
    if (a.shares < 0) return absl::InvalidArgumentError("account " + a.name + ": shares < 0");
  }
  for (const Account& a : c.accounts) {
    if (!a.parent.empty() && !parent.contains(a.parent)) {
      return absl::InvalidArgumentError("account " + a.name + ": unknown parent " + a.parent);
    }
    // Walk up: a cycle never reaches the root.
    std::string cur = a.parent;
    for (size_t steps = 0; !cur.empty(); ++steps) {
      if (steps > c.accounts.size()) {
        return absl::InvalidArgumentError("account tree has a cycle through " + a.name);
      }
      cur = parent[cur];
    }
  }
  absl::flat_hash_set<std::string> partitions;
  for (const Partition& p : c.partitions) {
    if (!partitions.insert(p.name).second) {
      return absl::InvalidArgumentError("duplicate partition " + p.name);
    }
  }
  return absl::OkStatus();
}

namespace {

// What makes two workloads interchangeable for "does it fit now": same request, member count,
// kind, topology packing and static eligibility. Capacity only shrinks during a cycle and the
// queue is walked by descending priority, so once a shape failed to start now for a duration d,
// every later workload of that shape with a duration >= d fails too (a Slurm-like "skip").
struct ShapeKey {
  Resources per_member;
  int32_t members;
  WorkloadKind kind;
  bool pack;
  int32_t eligibility;  // eligibility class (kUnconstrained = no constraint)

  friend bool operator==(const ShapeKey&, const ShapeKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ShapeKey& k) {
    return H::combine(std::move(h), k.per_member.amount, k.members, k.kind, k.pack, k.eligibility);
  }
};

// What the memos below compare: how much a request asks. (Comparing requests by number through
// a cached matrix instead of Covers was tried: more instructions, not fewer.)
struct RequestSize {
  Resources per_member;
  int32_t members;
  Duration duration;

  // True when this asks at least as much as `other` per member, for at least as many members
  // and at least as long.
  bool AtLeast(const RequestSize& other) const {
    return members >= other.members && duration >= other.duration &&
           per_member.Covers(other.per_member);
  }
};

// Workloads with the same static eligibility (selector, affinity, tolerations, partition nodes)
// share a class id, numbered per cycle from kUnconstrained = 0 (no constraint, most workloads).
// The id is found once per workload in the priority pass, so the planning pass neither builds
// nor hashes a signature.
constexpr int32_t kUnconstrained = 0;

// Memo groups per workload kind and eligibility class: a vector indexed by class id.
template <typename Group>
class PerEligibility {
 public:
  Group* Find(WorkloadKind kind, int32_t eligibility) {
    const size_t i = Index(kind, eligibility);
    return i < groups_.size() ? &groups_[i] : nullptr;
  }
  Group& FindOrAdd(WorkloadKind kind, int32_t eligibility) {
    const size_t i = Index(kind, eligibility);
    if (i >= groups_.size()) groups_.resize(i + 1);
    return groups_[i];
  }

 private:
  static size_t Index(WorkloadKind kind, int32_t eligibility) {
    return static_cast<size_t>(eligibility) * 2 + static_cast<size_t>(kind);
  }
  std::vector<Group> groups_;
};

// Requests that failed one question of this cycle ("start now?", "fit now if no reservation
// existed?"). Within a cycle capacity only shrinks and the queue is walked by descending
// priority (so the nodes a workload may use only shrink too): a request that asks at least as
// much as one that failed fails too. One check against a few remembered failures then replaces
// a walk over thousands of nodes. Only minimal failures are kept (a Pareto frontier), at most
// kMaxPerGroup per group: it is a memo, and forgetting costs only time.
class FailureMemo {
 public:
  bool KnownToFail(WorkloadKind kind, int32_t eligibility, const RequestSize& r) {
    std::vector<RequestSize>* group = groups_.Find(kind, eligibility);
    if (group == nullptr) return false;
    for (size_t i = 0; i < group->size(); ++i) {
      if (r.AtLeast((*group)[i])) {
        // Neighbours in the queue tend to hit the same failure: move it one step to the front.
        if (i > 0) std::swap((*group)[i], (*group)[i - 1]);
        return true;
      }
    }
    return false;
  }
  void Failed(WorkloadKind kind, int32_t eligibility, const RequestSize& r) {
    std::vector<RequestSize>& group = groups_.FindOrAdd(kind, eligibility);
    // The new failure is minimal (it was not known): drop the ones it dominates.
    std::erase_if(group, [&](const RequestSize& f) { return f.AtLeast(r); });
    if (group.size() < kMaxPerGroup) group.push_back(r);
  }

 private:
  static constexpr size_t kMaxPerGroup = 64;
  PerEligibility<std::vector<RequestSize>> groups_;
};

// The earliest placement of a request only moves later during a cycle (capacity only shrinks):
// after a request found its earliest start at t (or none inside the window: kForever), every
// request asking at least as much cannot start before t. The search for it then starts at t
// instead of now, which skips most of the profile once thousands of reservations exist
// (conservative backfill).
class NotBeforeMemo {
 public:
  // The latest known lower bound on the start of this request; `now` when nothing is known.
  Time NotBefore(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
                 Time now) {
    const std::vector<Bound>* group = groups_.Find(kind, eligibility);
    Time bound = now;
    if (group == nullptr) return bound;
    for (const Bound& b : *group) {
      if (b.not_before > bound && r.AtLeast(b.size)) bound = b.not_before;
    }
    return bound;
  }
  void Found(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
             Time not_before) {
    std::vector<Bound>& group = groups_.FindOrAdd(kind, eligibility);
    // Drop the bounds this one makes useless: they apply to fewer requests and say less.
    std::erase_if(group, [&](const Bound& b) {
      return b.size.AtLeast(r) && b.not_before <= not_before;
    });
    if (group.size() >= kMaxPerGroup) group.erase(group.begin());
    group.push_back(Bound{r, not_before});
  }

 private:
  static constexpr size_t kMaxPerGroup = 64;
  struct Bound {
    RequestSize size;
    Time not_before;
  };
  PerEligibility<std::vector<Bound>> groups_;
};

// The converse for one question, "would it fit now if no reservation existed": a request that
// fitted on some nodes (its witnesses), and every request asking no more, still fits as long as
// nothing started on (or claimed) one of those nodes since: starts and claims are the only
// things that shrink what this question looks at. The caller bumps a node's sequence number at
// each start or claim on it.
class FitsMemo {
 public:
  // `seq`: the current sequence number (the highest in node_seq).
  bool KnownToFit(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
                  const std::vector<int64_t>& node_seq, int64_t seq) {
    std::vector<Fit>* group = groups_.Find(kind, eligibility);
    if (group == nullptr) return false;
    for (size_t i = 0; i < group->size();) {
      Fit& f = (*group)[i];
      if (!f.size.AtLeast(r)) {
        ++i;
        continue;
      }
      // Verified at the current sequence number: nothing started anywhere since.
      const bool intact = f.verified == seq ||
                          std::all_of(f.witnesses.begin(), f.witnesses.end(),
                                      [&](NodeIndex n) { return node_seq[n] <= f.seq; });
      if (intact) {
        f.verified = seq;
        return true;
      }
      group->erase(group->begin() + static_cast<std::ptrdiff_t>(i));
    }
    return false;
  }
  void Fitted(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
              int64_t seq, std::vector<NodeIndex> witnesses) {
    std::vector<Fit>& group = groups_.FindOrAdd(kind, eligibility);
    if (group.size() >= kMaxPerGroup) group.erase(group.begin());
    group.push_back(Fit{r, seq, seq, std::move(witnesses)});
  }

 private:
  static constexpr size_t kMaxPerGroup = 16;
  struct Fit {
    RequestSize size;
    int64_t seq;       // the sequence number when it fitted
    int64_t verified;  // the last sequence number at which its witnesses were checked
    std::vector<NodeIndex> witnesses;
  };
  PerEligibility<std::vector<Fit>> groups_;
};

std::string EligibilitySignature(const Eligibility& e) {
  if (e.node_selector.empty() && e.required_affinity.empty() && e.tolerations.empty() &&
      !e.allowed_nodes.has_value()) {
    return "";
  }
  std::string s = "v1";
  for (const auto& [k, v] : e.node_selector) absl::StrAppend(&s, "|s", k, "=", v);
  for (const LabelRequirement& r : e.required_affinity) {
    absl::StrAppend(&s, "|a", r.key, ":", static_cast<int>(r.op));
    for (const std::string& v : r.values) absl::StrAppend(&s, ",", v);
  }
  for (const Toleration& t : e.tolerations) {
    absl::StrAppend(&s, "|t", t.key, ":", static_cast<int>(t.op), ":", t.value, ":",
                    t.effect.has_value() ? static_cast<int>(*t.effect) : -1);
  }
  if (e.allowed_nodes.has_value()) {
    absl::StrAppend(&s, "|n");
    for (const std::string& n : *e.allowed_nodes) absl::StrAppend(&s, ",", n);
  }
  return s;
}

Duration RunDuration(const PendingWorkload& w) {
  return w.time_limit.has_value() ? std::max<Duration>(1, *w.time_limit) : kForever;
}

bool CanPreemptAnything(const QosPolicy* q) { return q != nullptr && !q->can_preempt.empty(); }

// Nodes by the free amount of one resource now (cpu in whole cores, a GPU-like extended resource
// in units), in buckets, so "which nodes could hold r of it now" walks only the nodes with at
// least that much free, smallest first (best fit, like Slurm's cons_tres). Free capacity only
// shrinks during a cycle (but for the placeholders of promised reservations, taken back at their
// holder's turn), so a node mostly moves to lower buckets; stale entries are dropped lazily while
// walking.
class FreeIndex {
 public:
  // slot: the resource; unit: the amount one bucket stands for (1000 millicores for cpu).
  void Build(const AvailabilityProfile& p, int slot, int64_t unit) {
    slot_ = slot;
    unit_ = std::max<int64_t>(1, unit);
    int64_t max_units = 0;
    for (size_t n = 0; n < p.size(); ++n) max_units = std::max(max_units, p.Capacity(n)[slot_] / unit_);
    for (PerKind& k : kinds_) {
      k.buckets.assign(static_cast<size_t>(std::min<int64_t>(max_units, 4096)) + 1, {});
      k.live.assign(k.buckets.size(), 0);
      k.stale.assign(k.buckets.size(), 0);
      k.bucket_of.assign(p.size(), -1);
    }
    for (NodeIndex n = 0; n < static_cast<NodeIndex>(p.size()); ++n) Update(n, p);
  }
  void Update(NodeIndex n, const AvailabilityProfile& p) {
    for (int kind = 0; kind < 2; ++kind) {
      PerKind& k = kinds_[kind];
      int64_t free = p.FreeNow(n)[slot_];
      // A node running the other world's workload now cannot take this kind now.
      bool blocked = p.OtherKindNow(n, static_cast<WorkloadKind>(kind));
      int32_t b = free <= 0 || blocked ? -1 : Bucket(k, free);
      if (b == k.bucket_of[n]) continue;
      if (k.bucket_of[n] >= 0) {
        --k.live[k.bucket_of[n]];
        ++k.stale[k.bucket_of[n]];
      }
      if (b > k.bucket_of[n] && b >= 0) {
        // Free capacity grew (a promise's placeholder was taken back): the node may have left
        // this bucket before, and its stale entry there would come alive twice.
        const size_t before = k.buckets[b].size();
        std::erase(k.buckets[b], n);
        k.stale[b] -= static_cast<int32_t>(before - k.buckets[b].size());
      }
      k.bucket_of[n] = b;
      if (b >= 0) {
        k.buckets[b].push_back(n);
        ++k.live[b];
      }
    }
  }
  // How many nodes ForEachWithAtLeast would visit (to pick the shortest walk).
  int64_t CountWithAtLeast(WorkloadKind kind, int64_t amount) const {
    const PerKind& k = kinds_[static_cast<int>(kind)];
    int64_t count = 0;
    for (size_t b = static_cast<size_t>(Bucket(k, std::max<int64_t>(0, amount))); b < k.live.size(); ++b) {
      count += k.live[b];
    }
    return count;
  }
  // Visits the nodes where a workload of `kind` might start now with `amount` of the resource,
  // smallest free bucket first; stops when `visit` returns false.
  template <typename Visit>
  void ForEachWithAtLeast(WorkloadKind kind, int64_t amount, Visit visit) {
    PerKind& k = kinds_[static_cast<int>(kind)];
    for (size_t b = static_cast<size_t>(Bucket(k, std::max<int64_t>(0, amount))); b < k.buckets.size(); ++b) {
      std::vector<NodeIndex>& v = k.buckets[b];
      // Entries of nodes that moved to a lower bucket since are skipped, and dropped once they
      // are half of the list: a walk that stops at its first node must not pay for the whole
      // bucket (thousands of nearly full nodes share the low ones).
      if (k.stale[b] > 16 && 2 * static_cast<size_t>(k.stale[b]) > v.size()) {
        std::erase_if(v, [&](NodeIndex n) { return k.bucket_of[n] != static_cast<int32_t>(b); });
        k.stale[b] = 0;
      }
      for (NodeIndex n : v) {
        if (k.bucket_of[n] != static_cast<int32_t>(b)) continue;  // moved since
        if (!visit(n)) return;
      }
    }
  }

 private:
  struct PerKind {
    std::vector<std::vector<NodeIndex>> buckets;
    std::vector<int32_t> live;   // nodes currently in each bucket (the lists also hold stale ones)
    std::vector<int32_t> stale;  // entries of each bucket's list whose node moved since
    std::vector<int32_t> bucket_of;
  };
  int32_t Bucket(const PerKind& k, int64_t amount) const {
    return static_cast<int32_t>(std::min<int64_t>(amount / unit_, static_cast<int64_t>(k.buckets.size()) - 1));
  }
  int slot_ = kCpu;
  int64_t unit_ = 1000;
  std::array<PerKind, 2> kinds_;
};

}  // namespace

// Everything one cycle builds and OnArrival reuses.
struct QueuePlanner::State {
  // What the priority pass learns about a workload for the planning pass, which then reads only
  // the workload's first two cache lines (id .. per_member): it visits 100,000 workloads in
  // priority order, at random places in memory, and that pass is bound by memory.
  // A workload that waits for a known reason (most of them) is planned from these alone: one
  // cache line.
  struct alignas(64) Facts {
    std::string_view id;  // the workload's id (in the snapshot, or in `arrivals`)
    const QosPolicy* qos = nullptr;
    Duration duration = 0;
    int32_t shape = 0;                     // per-member request: shapes[shape]
    int32_t members = 1;                   // >= 1
    int32_t eligibility = kUnconstrained;  // class id
    WorkloadKind kind = WorkloadKind::kPodGroup;
    bool qos_unknown = false;  // names a QOS the (non-empty) table lacks
    // No admission error, not held, no missing gang member: the planner may place it.
    bool placeable = true;
  };

  std::shared_ptr<const Snapshot> snapshot;
  Time now = 0;
  std::unique_ptr<PriorityCalculator> priority;
  std::unique_ptr<EligibilityChecker> checker;
  std::unique_ptr<AvailabilityProfile> profile;
  // Workload numbers: 0 .. pending-1 are snapshot->pending, the next ones `arrivals`.
  std::deque<PendingWorkload> arrivals;  // stable storage for workloads added by OnArrival
  std::vector<Facts> facts;              // per workload number
  std::vector<SortedQueueKey> order;     // the queue: workload numbers by ComesBefore
  // Distinct per-member requests (a few hundred in a queue of 100,000), so Facts stays small.
  ResourcesTable shapes;

  const PendingWorkload& Workload(int32_t number) const {
    const size_t pending = snapshot->pending.size();
    const size_t n = static_cast<size_t>(number);
    return n < pending ? snapshot->pending[n] : arrivals[n - pending];
  }
  QueueOrderKey KeyOf(const SortedQueueKey& k) const {
    return {k.priority, k.submit_time, &Workload(k.index).id};
  }

  // Static eligibility (selector, affinity, taints, partition, schedulable) per eligibility
  // class, built when the first workload of the class is planned (null until then).
  struct EligibleSet {
    std::vector<char> bits;
    int32_t count = 0;
  };
  std::vector<std::unique_ptr<EligibleSet>> eligible_by_class{1};
  absl::flat_hash_map<std::string, int32_t> class_of_signature;  // constrained classes only

  Facts FactsOf(const PendingWorkload& w, const QosPolicy* qos, const QueueConfig& config) {
    Facts f;
    f.id = w.id;
    f.shape = shapes.Intern(w.per_member);
    f.members = std::max<int32_t>(1, w.members);
    f.kind = w.kind;
    f.placeable = w.admission_error == AdmissionError::kNone && !w.held &&
                  !(w.gang && w.members_present < w.members);
    f.qos = qos;
    f.qos_unknown = !w.qos.empty() && !config.qos.empty() && qos == nullptr;
    f.duration = RunDuration(w);
    const Eligibility& e = w.eligibility;
    if (!e.node_selector.empty() || !e.required_affinity.empty() || !e.tolerations.empty() ||
        e.allowed_nodes.has_value()) {
      auto [it, added] = class_of_signature.try_emplace(EligibilitySignature(e),
                                                        static_cast<int32_t>(eligible_by_class.size()));
      if (added) eligible_by_class.emplace_back();
      f.eligibility = it->second;
    }
    return f;
  }
  std::vector<char> claimed;  // nodes promised to a preemptor this cycle
  std::vector<char> reserved_owner;  // node owner is reserved(W) (compact: checked per node)
  bool any_reserved_owner = false;   // some node is reserved(W): a preemption is under way
  std::vector<OwnerKind> owner_kind;  // per node, compact (Node is large and scattered)
  // Per extended resource slot: the nodes whose allocatable has some of it (a GPU request only
  // looks at GPU nodes).
  std::array<std::vector<NodeIndex>, kMaxResourceKinds> nodes_with;
  // Free-capacity indexes: cpu, and each extended resource that some node has (GPUs).
  std::array<std::unique_ptr<FreeIndex>, kMaxResourceKinds> free_index;
  // Per topology label (finest first): the node's domain id (first seen in node order = 0), or
  // -1 when the node lacks the label.
  std::vector<std::vector<int32_t>> domains;
  std::vector<int32_t> domain_count;  // per topology label: how many domains
  std::vector<std::string> victims;
  // Scratch buffers of TryStartNow and ChooseNodes, kept to save ~30,000 allocations per cycle.
  std::vector<std::pair<NodeIndex, int64_t>> scratch_candidates;
  std::vector<std::pair<NodeIndex, int64_t>> scratch_inside;
  std::vector<int64_t> scratch_capacity;
  FailureMemo failed_now;     // could not start now
  NotBeforeMemo not_before;  // earliest possible starts (kForever: none inside the window)
  // Would not fit now even if no reservation existed (the reason, not the decision).
  FailureMemo failed_ignoring_reservations;
  // Estimation memo per (shape, duration) for the whole cycle. Capacity only shrinks during a
  // cycle, so a memoised estimate can be optimistic by the backfills planned after it was made:
  // an estimate, not a promise (reservations are the promises).
  absl::flat_hash_map<std::pair<ShapeKey, Duration>, Time> estimate_memo;
  FitsMemo fits_ignoring_reservations;
  // Per node: the sequence number of the last start or preemption claim on it (FitsMemo).
  std::vector<int64_t> node_seq;
  // Per node: the stamp of the last ForEachNodeWithRoomAt that listed it as freed.
  std::vector<uint32_t> node_stamp;
  uint32_t stamp = 0;
  int64_t seq = 0;

  int32_t reservations = 0;
  int32_t starving_reservations = 0;  // made past the depth for starving workloads (uncounted)
  int32_t last_reservation_position = 0;  // 1-based; 0 = none; the largest so far
  // Some promise's placeholder (PlanCycle's `promised`) is still in the profile: capacity can
  // grow when its holder takes it back, so the memos (which assume it only shrinks) are neither
  // read nor written.
  bool promise_phase = false;
  // The walk left priority order (backfill_shortest_first): where a node is reserved(W) usability
  // depends on priority, and the memos assume it only falls.
  bool out_of_priority_order = false;
  bool any_blocked = false;               // a higher-priority workload waits
  int32_t estimates = 0;
  Resources pool_total;
  absl::flat_hash_map<std::string, double> reserved_for_priority;
};

namespace {

// A reservation's candidate nodes (node -> {copies, freed}), best first: the node whose last
// block ended latest before the reservation's start first (ties by node), the nodes free since
// the search began last. The reservation then leaves the nodes that are free now, and the nodes
// that free early, to backfilled starts: with one node per processor its spare nodes are exactly
// textbook EASY's extra processors (test/queue/easy_reference_test.cc), where taking the free
// ones first let a shorter job behind start instead of the one that fitted beside it.
template <typename FeasibleMap>
std::vector<std::pair<NodeIndex, int64_t>> PreferLatestFreed(const FeasibleMap& feasible) {
  std::vector<std::tuple<Time, NodeIndex, int64_t>> ranked;
  ranked.reserve(feasible.size());
  for (const auto& [n, f] : feasible) ranked.emplace_back(f.freed, n, f.copies);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
    return std::get<1>(a) < std::get<1>(b);
  });
  std::vector<std::pair<NodeIndex, int64_t>> best_first;
  best_first.reserve(ranked.size());
  for (const auto& [freed, n, copies] : ranked) best_first.emplace_back(n, copies);
  return best_first;
}

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

  // True when a workload submitted at `submit` has waited starvation_bound or longer at `now`
  // (docs/queue.md "Starvation"): it gets a reservation past the depth.
  bool Starving(Time submit, Time now) const {
    return config_.starvation_bound > 0 && now - submit >= config_.starvation_bound;
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

  // Visits every node where a member of `w` might have room at time t >= the profile's now: the
  // free index of the scarcest resource it asks for (room at the profile's now) plus the nodes
  // where a block ended in (profile now, t]; every node for requests of neither cpu nor an
  // extended resource. Stops when `visit` returns false.
  template <typename Visit>
  void ForEachNodeWithRoomAt(const PendingWorkload& w, Time t, Visit visit);
  const QueuePlanner::State::EligibleSet& StaticEligible(const PendingWorkload& w, int32_t eclass);
  bool Usable(NodeIndex n, const PendingWorkload& w, double priority,
              const std::vector<char>& eligible) const;
  // duration: the workload's run time (RunDuration, from its Facts).
  std::optional<MemberNodes> TryStartNow(const PendingWorkload& w, Duration duration, double priority,
                                         const std::vector<char>& eligible, Time now);
  std::optional<Placement> EarliestPlacement(const PendingWorkload& w, Duration duration, double priority,
                                             const std::vector<char>& eligible, Time on_or_after);
  // preference_order: the candidates come best first (a reservation's, see EarliestPlacement)
  // and packing keeps that order inside a domain; otherwise packing orders by node.
  MemberNodes ChooseNodes(const PendingWorkload& w,
                          const std::vector<std::pair<NodeIndex, int64_t>>& candidates,
                          bool preference_order = false);
  std::optional<PreemptDecision> TryPreempt(const PendingWorkload& w, double priority,
                                            const std::vector<char>& eligible, Time now);
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

template <typename Visit>
void CyclePass::ForEachNodeWithRoomAt(const PendingWorkload& w, Time t, Visit visit) {
  const AvailabilityProfile& p = *s_.profile;
  // Walk the index that lists the fewest nodes with enough of what the request asks for (the GPU
  // index for a GPU request when GPUs are scarce, the cpu index when cpu is).
  // Counting is skipped when a single index applies (most requests ask for no GPU).
  std::array<int, kMaxResourceKinds> indexed;
  int candidates = 0;
  for (int r = 0; r < kMaxResourceKinds; ++r) {
    if (w.per_member[r] > 0 && s_.free_index[r] != nullptr) indexed[candidates++] = r;
  }
  int slot = candidates > 0 ? indexed[0] : -1;
  if (candidates > 1) {
    int64_t shortest = s_.free_index[slot]->CountWithAtLeast(w.kind, w.per_member[slot]);
    for (int i = 1; i < candidates; ++i) {
      const int r = indexed[i];
      const int64_t count = s_.free_index[r]->CountWithAtLeast(w.kind, w.per_member[r]);
      if (count < shortest) {
        slot = r;
        shortest = count;
      }
    }
  }
  if (slot < 0) {
    for (NodeIndex n = 0; n < static_cast<NodeIndex>(p.size()); ++n) {
      if (!visit(n)) return;
    }
    return;
  }
  // Nodes with a block ending in (now, t], each once: marked with this call's stamp rather than
  // sorted (late times gather thousands of them).
  std::vector<NodeIndex> freed;
  const uint32_t stamp = ++s_.stamp;
  if (t > p.now()) {
    p.ForEachEndAfter(p.now(), [&](Time end, NodeIndex n) {
      if (end > t) return false;
      if (s_.node_stamp[n] != stamp) {
        s_.node_stamp[n] = stamp;
        freed.push_back(n);
      }
      return true;
    });
  }
  bool go_on = true;
  s_.free_index[slot]->ForEachWithAtLeast(w.kind, w.per_member[slot], [&](NodeIndex n) {
    if (s_.node_stamp[n] == stamp) return true;  // visited below
    go_on = visit(n);
    return go_on;
  });
  for (size_t i = 0; go_on && i < freed.size(); ++i) go_on = visit(freed[i]);
}

const QueuePlanner::State::EligibleSet& CyclePass::StaticEligible(const PendingWorkload& w,
                                                                  int32_t eclass) {
  std::unique_ptr<QueuePlanner::State::EligibleSet>& slot = s_.eligible_by_class[eclass];
  if (slot != nullptr) return *slot;
  const Snapshot& snap = *s_.snapshot;
  slot = std::make_unique<QueuePlanner::State::EligibleSet>();
  QueuePlanner::State::EligibleSet& set = *slot;
  std::vector<char>& bits = set.bits;
  bits.assign(snap.nodes.size(), 0);
  absl::flat_hash_set<std::string> allowed;
  if (w.eligibility.allowed_nodes.has_value()) {
    allowed.insert(w.eligibility.allowed_nodes->begin(), w.eligibility.allowed_nodes->end());
  }
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const Node& node = snap.nodes[i];
    bits[i] = node.schedulable && MatchesSelectorAndAffinity(node, w.eligibility) &&
              ToleratesTaints(node, w.eligibility.tolerations) &&
              (!w.eligibility.allowed_nodes.has_value() || allowed.contains(node.name));
    set.count += bits[i];
  }
  return set;
}

// Dynamic part of eligibility: the owner (reserved(W) only for W or higher) and this cycle's
// preemption claims.
bool CyclePass::Usable(NodeIndex n, const PendingWorkload& w, double priority,
                       const std::vector<char>& eligible) const {
  if (!eligible[n] || s_.claimed[n]) return false;
  if (!s_.reserved_owner[n]) return true;
  const NodeOwner& owner = s_.snapshot->nodes[n].owner;
  if (owner.kind != OwnerKind::kReserved || owner.reserved_for == w.id) return true;
  auto it = s_.reserved_for_priority.find(owner.reserved_for);
  return it != s_.reserved_for_priority.end() && priority > it->second;
}

MemberNodes CyclePass::ChooseNodes(
    const PendingWorkload& w, const std::vector<std::pair<NodeIndex, int64_t>>& candidates,
    bool preference_order) {
  // candidates: (node, copies) with sum(copies) >= members. Without packing: in the given order.
  MemberNodes out;
  const int32_t members = std::max<int32_t>(1, w.members);
  out.reserve(static_cast<size_t>(members));
  auto take = [&](const std::vector<std::pair<NodeIndex, int64_t>>& from) {
    for (const auto& [n, copies] : from) {
      for (int64_t c = 0; c < copies && static_cast<int32_t>(out.size()) < members; ++c) {
        out.push_back(n);
      }
      if (static_cast<int32_t>(out.size()) == members) break;
    }
  };
  if (!w.pack_topology || s_.domains.empty() || members == 1) {
    take(candidates);
    return out;
  }
  // Fewest domains: at each level, finest first, the smallest single domain that holds the whole
  // gang (best fit keeps big domains for big gangs; ties to the lowest domain id, i.e. the first
  // seen in node order); if no domain at any level holds it, fill the finest domains largest
  // first (greedy, like Slurm's topology/tree fallback). Domain ids are precomputed per cycle.
  // Capacities per domain in a vector indexed by domain id (ids are dense per level): a gang
  // that packs looks at every node with room, thousands of them.
  std::vector<int64_t>& capacity = s_.scratch_capacity;
  for (size_t level = 0; level < s_.domains.size(); ++level) {
    const std::vector<int32_t>& domain_of = s_.domains[level];
    capacity.assign(s_.domain_count[level], 0);
    for (const auto& [n, copies] : candidates) {
      if (domain_of[n] >= 0) capacity[domain_of[n]] += copies;
    }
    int32_t best = -1;
    for (int32_t d = 0; d < static_cast<int32_t>(capacity.size()); ++d) {
      if (capacity[d] >= members && (best < 0 || capacity[d] < capacity[best])) best = d;
    }
    if (best >= 0) {
      std::vector<std::pair<NodeIndex, int64_t>>& inside = s_.scratch_inside;
      inside.clear();
      for (const auto& c : candidates) {
        if (domain_of[c.first] == best) inside.push_back(c);
      }
      if (!preference_order) std::sort(inside.begin(), inside.end());
      take(inside);
      return out;
    }
  }
  const std::vector<int32_t>& finest = s_.domains.front();
  capacity.assign(s_.domain_count.front(), 0);
  for (const auto& [n, copies] : candidates) {
    if (finest[n] >= 0) capacity[finest[n]] += copies;
  }
  auto cap_of = [&](NodeIndex n) { return finest[n] >= 0 ? capacity[finest[n]] : 0; };
  std::vector<std::pair<NodeIndex, int64_t>> sorted = candidates;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
    const int64_t ca = cap_of(a.first), cb = cap_of(b.first);
    if (ca != cb) return ca > cb;
    if (finest[a.first] != finest[b.first]) return finest[a.first] < finest[b.first];
    return !preference_order && a.first < b.first;
  });
  take(sorted);
  return out;
}

std::optional<MemberNodes> CyclePass::TryStartNow(const PendingWorkload& w, Duration duration,
                                                  double priority,
                                                  const std::vector<char>& eligible, Time now) {
  const int32_t members = std::max<int32_t>(1, w.members);
  const Time end = SaturatingAdd(now, duration);
  const bool pack = w.pack_topology && !config_.topology_labels.empty() && members > 1;
  std::vector<std::pair<NodeIndex, int64_t>>& candidates = s_.scratch_candidates;
  int64_t found = 0;
  const AvailabilityProfile& p = *s_.profile;
  auto consider = [&](NodeIndex n) {
    if (!Usable(n, w, priority, eligible)) return;
    int64_t copies = p.Copies(n, now, end, w.per_member, w.kind, pack ? members : members - found);
    if (copies <= 0) return;
    candidates.emplace_back(n, copies);
    found += copies;
  };
  // Packing looks at every node with room (for the topology choice); otherwise the walk stops
  // once the members are placed. (A packing gang that does not fit walks every node either way,
  // so a first pass that stops early only added work to those that fit.)
  candidates.clear();
  ForEachNodeWithRoomAt(w, now, [&](NodeIndex n) {
    consider(n);
    return pack || found < members;
  });
  if (found < members) return std::nullopt;
  if (!pack) std::sort(candidates.begin(), candidates.end());  // packing sorts what it takes
  return ChooseNodes(w, candidates);
}

std::optional<CyclePass::Placement> CyclePass::EarliestPlacement(const PendingWorkload& w,
                                                                 Duration duration,
                                                                 double priority,
                                                                 const std::vector<char>& eligible,
                                                                 Time on_or_after) {
  // Fluxion's avail_time_first over a node set, driven by time: a node's availability can only
  // rise when one of its own blocks ends, so the candidate start times are `on_or_after` and the
  // block ends after it, visited in ascending order (one ordered list for the whole pool). At
  // each candidate only the nodes whose block ended there are re-examined; once the nodes seen
  // feasible add up to the gang, they are re-verified at that time (a node feasible earlier can
  // be blocked later by a block that starts after its last check) and the first time that holds
  // is the answer. A single-member workload stops at the first node that frees up for it.
  //
  // Node choice (PreferLatestFreed): among the nodes with room at that time, those whose last
  // block ended latest before it come first, the nodes free since the search began last, so the
  // reservation leaves the nodes free now to backfill (textbook EASY's extra processors).
  AvailabilityProfile& p = *s_.profile;
  const int32_t members = std::max<int32_t>(1, w.members);
  struct Feasible {
    int64_t copies;
    Time freed;  // the latest block end at which the node was examined (the search's start: none)
  };
  absl::flat_hash_map<NodeIndex, Feasible> feasible;
  // Sized once: growing it node by node was a tenth of an EASY replay.
  feasible.reserve(std::min<size_t>(p.size(), 2 * static_cast<size_t>(members) + 16));
  int64_t total = 0;
  auto copies_at = [&](NodeIndex n, Time t) -> int64_t {
    if (!Usable(n, w, priority, eligible)) return 0;
    return p.Copies(n, t, SaturatingAdd(t, duration), w.per_member, w.kind, members);
  };
  auto note = [&](NodeIndex n, int64_t c, Time freed) {
    if (c <= 0) return;
    auto [it, inserted] = feasible.emplace(n, Feasible{c, freed});
    if (!inserted) {
      total -= it->second.copies;
      it->second = Feasible{c, freed};
    }
    total += c;
  };
  auto try_finish = [&](Time t) -> std::optional<Placement> {
    if (total < members) return std::nullopt;
    total = 0;
    for (auto it = feasible.begin(); it != feasible.end();) {
      int64_t c = copies_at(it->first, t);
      if (c <= 0) {
        feasible.erase(it++);
        continue;
      }
      it->second.copies = c;
      total += c;
      ++it;
    }
    if (total < members) return std::nullopt;
    return Placement{t, ChooseNodes(w, PreferLatestFreed(feasible), /*preference_order=*/true)};
  };

  const Time start = p.RoundUp(std::max(on_or_after, p.now()));
  if (start > p.horizon()) return std::nullopt;
  ForEachNodeWithRoomAt(w, start, [&](NodeIndex n) {
    note(n, copies_at(n, start), start);
    return true;
  });
  std::optional<Placement> result = try_finish(start);
  if (result.has_value()) return result;
  Time batch = -1;
  p.ForEachEndAfter(start, [&](Time end, NodeIndex n) {
    const Time t = p.RoundUp(end);
    if (t > p.horizon()) return false;
    if (batch >= 0 && t != batch) {
      result = try_finish(batch);
      if (result.has_value()) return false;
    }
    batch = t;
    note(n, copies_at(n, t), end);
    return true;
  });
  if (!result.has_value() && batch >= 0) result = try_finish(batch);
  return result;
}

bool CyclePass::FitsIgnoringReservations(const PendingWorkload& w, Duration duration,
                                         double priority,
                                         const std::vector<char>& eligible, Time now,
                                         std::vector<NodeIndex>* witnesses) {
  const int32_t members = std::max<int32_t>(1, w.members);
  const Time end = SaturatingAdd(now, duration);
  int64_t found = 0;
  const AvailabilityProfile& p = *s_.profile;
  auto consider = [&](NodeIndex n) {
    if (Usable(n, w, priority, eligible)) {
      const int64_t copies = p.Copies(n, now, end, w.per_member, w.kind, members - found, true);
      if (copies > 0) witnesses->push_back(n);
      found += copies;
    }
  };
  // Reservations start at or after the profile's now, so the nodes with room then (reservations
  // included only when they start exactly then) bound the nodes worth looking at.
  ForEachNodeWithRoomAt(w, now, [&](NodeIndex n) {
    consider(n);
    return found < members;
  });
  return found >= members;
}

bool CyclePass::FitsNowButForReservedNodes(const PendingWorkload& w, Duration duration,
                                           double priority, const std::vector<char>& eligible,
                                           Time now) {
  const int32_t members = std::max<int32_t>(1, w.members);
  const Time end = SaturatingAdd(now, duration);
  int64_t found = 0;
  bool needs_a_reserved_node = false;
  const AvailabilityProfile& p = *s_.profile;
  ForEachNodeWithRoomAt(w, now, [&](NodeIndex n) {
    if (!eligible[n] || s_.claimed[n]) return true;
    const int64_t copies = p.Copies(n, now, end, w.per_member, w.kind, members - found);
    if (copies > 0 && !Usable(n, w, priority, eligible)) needs_a_reserved_node = true;
    found += copies;
    return found < members;
  });
  return found >= members && needs_a_reserved_node;
}

void CyclePass::Commit(const PendingWorkload& w, Duration duration, const MemberNodes& nodes,
                       Time start,
                       bool reservation) {
  const Time end = SaturatingAdd(start, duration);
  // One block per node with the sum of the members placed there (runs of a sorted copy; one
  // member, the common case, needs no copy).
  MemberNodes copy;
  if (nodes.size() > 1) {
    copy = nodes;
    std::sort(copy.begin(), copy.end());
  }
  const MemberNodes& sorted_nodes = nodes.size() > 1 ? copy : nodes;
  for (size_t i = 0; i < sorted_nodes.size();) {
    const NodeIndex n = sorted_nodes[i];
    size_t j = i;
    while (j < sorted_nodes.size() && sorted_nodes[j] == n) ++j;
    const int64_t count = static_cast<int64_t>(j - i);
    i = j;
    AvailabilityProfile::Block b;
    b.start = start;
    b.end = end;
    b.used = w.per_member.Times(count);
    b.kind = w.kind;
    b.reservation = reservation;
    s_.profile->Add(n, b);
    if (!reservation) s_.node_seq[n] = ++s_.seq;
    if (start <= s_.profile->now()) {
      for (const auto& index : s_.free_index) {
        if (index != nullptr) index->Update(n, *s_.profile);
      }
    }
  }
}

namespace {
// Calls visit(node, members on it) for each distinct node of `nodes`.
template <typename Visit>
void ForEachNodeCount(const MemberNodes& nodes, Visit visit) {
  MemberNodes sorted_nodes = nodes;
  std::sort(sorted_nodes.begin(), sorted_nodes.end());
  for (size_t i = 0; i < sorted_nodes.size();) {
    size_t j = i;
    while (j < sorted_nodes.size() && sorted_nodes[j] == sorted_nodes[i]) ++j;
    visit(sorted_nodes[i], static_cast<int64_t>(j - i));
    i = j;
  }
}
}  // namespace

bool CyclePass::SlotFits(const PendingWorkload& w, Duration duration, double priority,
                         const std::vector<char>& eligible, const MemberNodes& nodes, Time start) {
  if (static_cast<int32_t>(nodes.size()) != std::max<int32_t>(1, w.members)) return false;
  const AvailabilityProfile& p = *s_.profile;
  bool fits = true;
  ForEachNodeCount(nodes, [&](NodeIndex n, int64_t count) {
    fits = fits && n >= 0 && n < static_cast<NodeIndex>(p.size()) && Usable(n, w, priority, eligible) &&
           p.Copies(n, start, SaturatingAdd(start, duration), w.per_member, w.kind, count) >= count;
  });
  return fits;
}

bool CyclePass::AddPlaceholder(const PendingWorkload& w, const QueuePlanner::State::Facts& facts,
                               double priority, const Promise& promise) {
  if (!facts.placeable || facts.qos_unknown || promise.end <= promise.start) return false;
  const std::vector<char>& eligible = StaticEligible(w, facts.eligibility).bits;
  AvailabilityProfile& p = *s_.profile;
  bool fits = !promise.nodes.empty();
  ForEachNodeCount(promise.nodes, [&](NodeIndex n, int64_t count) {
    if (!fits) return;
    fits = n >= 0 && n < static_cast<NodeIndex>(p.size()) && Usable(n, w, priority, eligible) &&
           p.Copies(n, promise.start, promise.end, promise.per_member, w.kind, count) >= count;
  });
  if (!fits) return false;
  ForEachNodeCount(promise.nodes, [&](NodeIndex n, int64_t count) {
    p.Add(n, AvailabilityProfile::Block{promise.start, promise.end, promise.per_member.Times(count), w.kind, true});
    if (promise.start <= p.now()) {
      for (const auto& index : s_.free_index) {
        if (index != nullptr) index->Update(n, p);
      }
    }
  });
  return true;
}

void CyclePass::RemovePlaceholder(const PendingWorkload& w, const Promise& promise) {
  AvailabilityProfile& p = *s_.profile;
  ForEachNodeCount(promise.nodes, [&](NodeIndex n, int64_t count) {
    p.Remove(n, AvailabilityProfile::Block{promise.start, promise.end, promise.per_member.Times(count), w.kind, true});
    if (promise.start <= p.now()) {
      for (const auto& index : s_.free_index) {
        if (index != nullptr) index->Update(n, p);
      }
    }
  });
}

void CyclePass::EmitOwnerChanges(const PendingWorkload& w, const MemberNodes& nodes) {
  const OwnerKind world =
      w.kind == WorkloadKind::kPodGroup ? OwnerKind::kKubernetes : OwnerKind::kSlurm;
  // Most starts land on nodes their world already owns: check that before copying anything.
  if (std::all_of(nodes.begin(), nodes.end(), [&](NodeIndex n) { return s_.owner_kind[n] == world; })) {
    return;
  }
  MemberNodes distinct = nodes;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (NodeIndex n : distinct) {
    if (s_.owner_kind[n] != world) plan_.owner_changes.push_back(OwnerChange{n, world, w.id});
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

std::optional<PreemptDecision> CyclePass::TryPreempt(const PendingWorkload& w, double priority,
                                                     const std::vector<char>& eligible, Time now) {
  if (preemption_ == nullptr) return std::nullopt;
  PreemptionInput in;
  in.snapshot = s_.snapshot.get();
  in.config = &config_;
  in.preemptor = &w;
  in.preemptor_priority = priority;
  in.now = now;
  for (NodeIndex n = 0; n < static_cast<NodeIndex>(eligible.size()); ++n) {
    if (Usable(n, w, priority, eligible)) in.eligible_nodes.push_back(n);
  }
  std::vector<Resources> free_now(s_.profile->size());
  for (size_t n = 0; n < free_now.size(); ++n) free_now[n] = s_.profile->FreeNow(n);
  in.free_now = &free_now;
  in.claimed = &s_.claimed;
  in.already_victims = &s_.victims;
  std::optional<PreemptDecision> d = preemption_->Plan(in);
  if (!d.has_value()) return std::nullopt;
  // Defence in depth: never act on a decision that breaks the queue's rules.
  if (static_cast<int32_t>(d->member_nodes.size()) != std::max<int32_t>(1, w.members)) return std::nullopt;
  for (NodeIndex n : d->member_nodes) {
    if (n < 0 || n >= static_cast<NodeIndex>(eligible.size()) || !Usable(n, w, priority, eligible)) {
      return std::nullopt;
    }
  }
  for (const std::string& v : d->victims) {
    auto it = std::find_if(s_.snapshot->running.begin(), s_.snapshot->running.end(),
                           [&](const RunningWorkload& r) { return r.id == v; });
    if (it == s_.snapshot->running.end() || it->priority >= priority || !it->preemptible) {
      return std::nullopt;
    }
    if (std::find(s_.victims.begin(), s_.victims.end(), v) != s_.victims.end()) return std::nullopt;
  }
  d->preemptor = w.id;
  return d;
}

void CyclePass::PlanOne(const PendingWorkload& w, const QueuePlanner::State::Facts& facts,
                        double priority, int32_t position, Time now, const Promise* promise) {
  // A workload that waits reads only `facts` (not `w`): see State::Facts.
  const std::string_view id = facts.id;
  // 1. What the queue cannot fix by waiting for capacity.
  if (!facts.placeable) {
    if (w.admission_error == AdmissionError::kInvalidAnnotation) {
      Wait(id, WaitReason::kInvalidAnnotation, w.admission_message, position, std::nullopt, false);
      return;
    }
    if (w.admission_error == AdmissionError::kQosNotAllowed) {
      Wait(id, WaitReason::kQosNotAllowed, w.admission_message, position, std::nullopt, false);
      return;
    }
    if (w.admission_error == AdmissionError::kAccountNotAllowed) {
      Wait(id, WaitReason::kAccountNotAllowed, w.admission_message, position, std::nullopt, false);
      return;
    }
    if (w.held) {
      Wait(id, WaitReason::kHeld, "held by an administrator", position, std::nullopt, false);
      return;
    }
  }
  const QosPolicy* qos = facts.qos;
  if (facts.qos_unknown) {
    Wait(id, WaitReason::kQosNotAllowed, absl::StrCat("QOS ", w.qos, " is not in the QOS table"),
         position, std::nullopt, false);
    return;
  }
  if (!facts.placeable) {  // what is left: members of the gang are missing
    Wait(id, WaitReason::kGangIncomplete,
         absl::StrCat(w.members_present, " of ", w.members, " pods of the group exist"), position,
         std::nullopt, false);
    return;
  }
  const int32_t sig = facts.eligibility;
  const QueuePlanner::State::EligibleSet& eligible_set = StaticEligible(w, sig);
  const std::vector<char>& eligible = eligible_set.bits;
  if (eligible_set.count == 0) {
    // Never runs as things are: it must not hold anyone else back, even in strict order.
    Wait(id, WaitReason::kPartitionNodesUnavailable,
         "no node of the pool matches its partition, selector, affinity and tolerations",
         position, std::nullopt, false);
    return;
  }
  // 2. Strict order (no backfill): behind a blocked workload nothing starts.
  const bool strict = config_.backfill == BackfillMode::kNone;
  if (strict && s_.any_blocked) {
    Wait(id, WaitReason::kPriority, "waiting behind higher-priority workloads (no backfill)",
         position, std::nullopt, false);
    return;
  }
  // 3. Start now if it fits without delaying any reservation (the profile holds them).
  const Duration duration = facts.duration;
  // The failure memos assume the walk by descending priority of a full cycle; an arrival
  // evaluated later sits between them, which matters only where a node is reserved(W) for a
  // pending workload (usable only by higher priorities), or when time moved on.
  const bool memo_valid = now == s_.now &&
                          ((in_cycle_ && !s_.out_of_priority_order) || s_.reserved_for_priority.empty()) &&
                          !s_.promise_phase;
  const RequestSize size{s_.shapes[facts.shape], facts.members, duration};
  auto known = [&](FailureMemo& memo) {
    return memo_valid && memo.KnownToFail(facts.kind, sig, size);
  };
  auto remember = [&](FailureMemo& memo) {
    if (memo_valid) memo.Failed(facts.kind, sig, size);
  };
  const bool known_to_fail = known(s_.failed_now);
  if (!known_to_fail) {
    if (std::optional<MemberNodes> nodes = TryStartNow(w, duration, priority, eligible, now)) {
      Commit(w, duration, *nodes, now, false);
      EmitOwnerChanges(w, *nodes);
      plan_.starts.push_back(StartDecision{w.id, std::move(*nodes), s_.any_blocked});
      return;
    }
    remember(s_.failed_now);
  }
  // 4. Preempt, if its QOS may.
  if (CanPreemptAnything(qos)) {
    if (std::optional<PreemptDecision> d = TryPreempt(w, priority, eligible, now)) {
      for (NodeIndex n : d->member_nodes) {
        s_.claimed[n] = 1;
        s_.node_seq[n] = ++s_.seq;
      }
      s_.victims.insert(s_.victims.end(), d->victims.begin(), d->victims.end());
      std::string msg = absl::StrCat("preempting ", d->victims.size(), " lower-priority workload(s)");
      Time start = d->earliest_start;
      plan_.preemptions.push_back(std::move(*d));
      Wait(id, WaitReason::kPreempting, std::move(msg), position, start, true);
      s_.any_blocked = true;
      return;
    }
  }
  // 5. Blocked. Why: nothing eligible at all, reserved capacity, or not enough capacity.
  const bool first_blocked = !s_.any_blocked;
  s_.any_blocked = true;
  WaitReason reason = first_blocked ? WaitReason::kResources : WaitReason::kPriority;
  if (!first_blocked) {
    // A success stays true only while the nodes it used stay usable: not so for a lower
    // priority where a node is reserved(W) for a pending workload.
    const bool fits_memo_valid = memo_valid && s_.reserved_for_priority.empty();
    std::vector<NodeIndex> witnesses;
    if (fits_memo_valid &&
        s_.fits_ignoring_reservations.KnownToFit(facts.kind, sig, size, s_.node_seq, s_.seq)) {
      reason = WaitReason::kReservedForHigherPriority;
    } else if (!known(s_.failed_ignoring_reservations)) {
      if (FitsIgnoringReservations(w, duration, priority, eligible, now, &witnesses)) {
        reason = WaitReason::kReservedForHigherPriority;
        if (fits_memo_valid) {
          s_.fits_ignoring_reservations.Fitted(facts.kind, sig, size, s_.seq, std::move(witnesses));
        }
      } else {
        remember(s_.failed_ignoring_reservations);
      }
    }
  }
  // A node reserved(W) for a higher-priority workload (its preemption under way) is the reason
  // when it alone stands in the way; checked only while some node carries such a mark (rare).
  if (reason != WaitReason::kReservedForHigherPriority && s_.any_reserved_owner &&
      FitsNowButForReservedNodes(w, duration, priority, eligible, now)) {
    reason = WaitReason::kReservedForHigherPriority;
  }
  // A promise is kept even past the depth (the depth may have been lowered since); a starving
  // workload (pending for starvation_bound or longer) gets one past the depth, uncounted.
  const bool within_depth = config_.reservation_depth == 0 || strict ||
                            s_.reservations < config_.reservation_depth || promise != nullptr;
  const bool may_reserve = within_depth || Starving(w.submit_time, now);
  // Capacity only shrinks within a cycle: a shape with no placement in the window for a time
  // limit d has none for any limit >= d either.
  // Asked only when a placement is searched (most blocked workloads need none).
  auto not_before = [&]() {
    return memo_valid ? s_.not_before.NotBefore(facts.kind, sig, size, now) : now;
  };
  auto earliest = [&](Time bound) -> std::optional<Placement> {
    if (bound >= kForever) return std::nullopt;
    std::optional<Placement> at = EarliestPlacement(w, duration, priority, eligible, bound);
    if (memo_valid) {
      s_.not_before.Found(facts.kind, sig, size, at.has_value() ? at->start : kForever);
    }
    return at;
  };
  if (may_reserve) {
    std::optional<Placement> at = earliest(not_before());
    // The promised slot, when the search finds nothing earlier: it is free by construction (held
    // by a placeholder until now), and the search may miss it when it lies off this cycle's
    // resolution grid (the grid starts at each cycle's now).
    if (promise != nullptr && promise->placeholder && (!at.has_value() || at->start > promise->start) &&
        SlotFits(w, duration, priority, eligible, promise->nodes, promise->start)) {
      at = Placement{promise->start, promise->nodes};
    }
    if (!at.has_value()) {
      if (reason == WaitReason::kReservedForHigherPriority) {  // the mark holds the node past the window
        Wait(id, reason, "the capacity it fits in is reserved for higher-priority workloads", position,
             std::nullopt, false);
        return;
      }
      Wait(id, WaitReason::kBeyondWindow, "cannot start within the planning window", position,
           std::nullopt, false);
      return;
    }
    Commit(w, duration, at->nodes, at->start, true);
    if (within_depth) {
      ++s_.reservations;
    } else {
      ++s_.starving_reservations;
    }
    s_.last_reservation_position = std::max(s_.last_reservation_position, position);
    plan_.reservations.push_back(ReserveDecision{w.id, at->nodes, at->start});
    // The time is in estimated_start: a message without it stays the same from cycle to cycle
    // (the daemon patches a pod's status only when what it shows changes).
    Wait(id, reason, "nodes are reserved for it from its estimated start", position, at->start,
         true);
    return;
  }
  // 6. Beyond the reservation depth: an estimate from the profile, without reserving.
  std::optional<Time> estimate;
  const bool budget_left =
      config_.max_estimates_per_cycle == 0 || s_.estimates < config_.max_estimates_per_cycle;
  if (budget_left) {
    auto key = std::make_pair(
        ShapeKey{w.per_member, std::max<int32_t>(1, w.members), w.kind, w.pack_topology, sig},
        duration);
    auto it = s_.estimate_memo.find(key);
    if (it != s_.estimate_memo.end()) {
      if (it->second < kForever) estimate = it->second;
    } else if (const Time bound = not_before(); bound < kForever) {
      ++s_.estimates;  // the budget counts searches, not what memos answer
      std::optional<Placement> at = earliest(bound);
      s_.estimate_memo[key] = at.has_value() ? at->start : kForever;
      if (at.has_value()) estimate = at->start;
    }
  }
  Wait(id, reason,
       reason == WaitReason::kResources ? "waiting for resources"
       : reason == WaitReason::kReservedForHigherPriority
           ? "the capacity it fits in is reserved for higher-priority workloads"
           : "waiting behind higher-priority workloads",
       position, estimate, false);
}

}  // namespace

QueuePlanner::QueuePlanner(QueueConfig config, const PreemptionPlanner* preemption)
    : config_(std::move(config)), preemption_(preemption) {}

QueuePlanner::~QueuePlanner() = default;

Plan QueuePlanner::PlanCycle(std::shared_ptr<const Snapshot> snapshot, Time now) {
  return PlanCycle(std::move(snapshot), now, {});
}

Plan QueuePlanner::PlanCycle(std::shared_ptr<const Snapshot> snapshot, Time now,
                             const std::vector<PromisedReservation>& promised) {
  auto st = std::make_unique<State>();
  State& s = *st;
  s.snapshot = std::move(snapshot);
  s.now = now;
  const Snapshot& snap = *s.snapshot;

  std::vector<Resources> capacity;
  capacity.reserve(snap.nodes.size());
  for (const Node& n : snap.nodes) {
    capacity.push_back(n.allocatable);
    s.pool_total += n.allocatable;
  }
  s.profile = std::make_unique<AvailabilityProfile>(std::move(capacity), now, config_.window,
                                                    config_.resolution, config_.shared_nodes);
  // Running workloads occupy their nodes until their expected end (a workload past its end is
  // assumed to end within one resolution step, like Slurm), or for good when it has none.
  for (const RunningWorkload& r : snap.running) {
    Time end = kForever;
    // Only past its end: one ending within the next step ends when it says (a promise made
    // before may start right then).
    if (r.expected_end.has_value()) end = *r.expected_end > now ? *r.expected_end : now + config_.resolution;
    for (const Allocation& a : r.allocations) {
      if (a.node < 0 || a.node >= static_cast<NodeIndex>(snap.nodes.size())) continue;
      s.profile->Add(a.node, AvailabilityProfile::Block{std::min(r.start_time, now), end, a.used,
                                                        r.kind, false});
    }
  }
  s.priority = std::make_unique<PriorityCalculator>(config_, snap.usage, s.pool_total, now);
  s.claimed.assign(snap.nodes.size(), 0);
  s.node_seq.assign(snap.nodes.size(), 0);
  s.node_stamp.assign(snap.nodes.size(), 0);
  for (NodeIndex n = 0; n < static_cast<NodeIndex>(snap.nodes.size()); ++n) {
    for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
      if (snap.nodes[n].allocatable[r] > 0) s.nodes_with[r].push_back(n);
    }
  }
  for (const std::string& label : config_.topology_labels) {
    absl::flat_hash_map<std::string, int32_t> ids;
    std::vector<int32_t>& of = s.domains.emplace_back(snap.nodes.size(), -1);
    for (size_t n = 0; n < snap.nodes.size(); ++n) {
      auto it = snap.nodes[n].labels.find(label);
      if (it == snap.nodes[n].labels.end()) continue;
      of[n] = ids.emplace(it->second, static_cast<int32_t>(ids.size())).first->second;
    }
    s.domain_count.push_back(static_cast<int32_t>(ids.size()));
  }
  s.reserved_owner.assign(snap.nodes.size(), 0);
  s.owner_kind.resize(snap.nodes.size());
  for (size_t n = 0; n < snap.nodes.size(); ++n) {
    s.reserved_owner[n] = snap.nodes[n].owner.kind == OwnerKind::kReserved;
    s.any_reserved_owner = s.any_reserved_owner || s.reserved_owner[n];
    s.owner_kind[n] = snap.nodes[n].owner.kind;
  }
  s.profile->SealBase();
  s.free_index[kCpu] = std::make_unique<FreeIndex>();
  s.free_index[kCpu]->Build(*s.profile, kCpu, 1000);
  for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
    if (s.nodes_with[r].empty()) continue;
    s.free_index[r] = std::make_unique<FreeIndex>();
    s.free_index[r]->Build(*s.profile, r, 1);
  }

  Plan plan;
  plan.now = now;
  plan.snapshot = s.snapshot;
  const size_t pending = snap.pending.size();
  plan.priorities.reserve(pending);
  // One sequential pass over the workloads: priority, sort key and what the planning pass needs.
  s.facts.reserve(pending);
  std::vector<QueueOrderKey> keys;
  keys.reserve(pending);
  for (const PendingWorkload& w : snap.pending) {
    const QosPolicy* qos = nullptr;
    const PriorityBreakdown& b = plan.priorities.emplace_back(s.priority->Compute(w, &qos));
    keys.push_back(QueueOrderKey{b.total, w.submit_time, &w.id});
    s.facts.push_back(s.FactsOf(w, qos, config_));
  }
  // Priorities of the workloads that hold reserved(W) nodes (few), for the owner rule.
  absl::flat_hash_set<std::string> holders;
  for (const Node& n : snap.nodes) {
    if (n.owner.kind == OwnerKind::kReserved) holders.insert(n.owner.reserved_for);
  }
  if (!holders.empty()) {
    for (size_t i = 0; i < pending; ++i) {
      if (holders.contains(snap.pending[i].id)) {
        s.reserved_for_priority[snap.pending[i].id] = plan.priorities[i].total;
      }
    }
  }
  s.order = SortByQueueOrder(keys);

  // Last cycle's reservations (docs/queue.md "Promises"). Each promised slot is held by a
  // placeholder from the start of the walk until its holder's own turn in queue order, when the
  // holder takes it back and plans again: it starts now, or finds that slot or an earlier one.
  // Whatever is planned before it (higher priority) avoids the slot, so a reservation never moves
  // later; and the holder keeps its place in the queue, so it never takes capacity ahead of a
  // higher-priority workload that can start now. Only a change of its own (request, time limit,
  // eligibility, hold) or of the world under the slot (a node gone, a running workload past its
  // end) drops a promise.
  CyclePass pass(config_, preemption_, s, plan, /*in_cycle=*/true);
  std::vector<CyclePass::Promise> promises;
  std::vector<int32_t> promise_of(pending, -1);  // workload number -> index in promises
  int32_t placeholders = 0;                       // placeholders still in the profile
  if (!promised.empty()) {
    absl::flat_hash_map<std::string_view, const PromisedReservation*> by_id;
    for (const PromisedReservation& r : promised) by_id.emplace(r.workload, &r);
    std::vector<double> priority_of(pending, 0);
    for (const SortedQueueKey& k : s.order) priority_of[k.index] = k.priority;
    // Placeholders go in by promised start (ties by workload number): the earliest promises are
    // checked against the fewest others.
    std::vector<std::pair<Time, int32_t>> holders;  // (promised start, workload number)
    for (size_t i = 0; i < pending; ++i) {
      auto it = by_id.find(std::string_view(snap.pending[i].id));
      if (it != by_id.end()) holders.emplace_back(it->second->start, static_cast<int32_t>(i));
    }
    std::sort(holders.begin(), holders.end());
    promises.reserve(holders.size());
    for (const auto& [start, number] : holders) {
      const PromisedReservation& r = *by_id.at(std::string_view(snap.pending[number].id));
      // What is left of the slot from now on (a holder not started at its promised start, e.g.
      // a cycle that came late, is held from now).
      CyclePass::Promise promise{r.member_nodes, std::max(r.start, now), r.end, r.per_member, false};
      promise.placeholder = pass.AddPlaceholder(snap.pending[number], s.facts[number], priority_of[number], promise);
      placeholders += promise.placeholder ? 1 : 0;
      promise_of[number] = static_cast<int32_t>(promises.size());
      promises.push_back(std::move(promise));
    }
  }
  plan.order.reserve(pending);
  for (const SortedQueueKey& k : s.order) plan.order.push_back(k.index);

  plan.waiting.reserve(pending);
  // While a placeholder is in the profile, capacity can grow (its holder takes it back), so the
  // memos (which assume it only shrinks) are neither read nor written.
  s.promise_phase = placeholders > 0;
  auto plan_one = [&](const SortedQueueKey& k, int32_t position) {
    const int32_t p = promise_of[k.index];
    if (p < 0) {
      pass.PlanOne(snap.pending[k.index], s.facts[k.index], k.priority, position, now);
      return;
    }
    const CyclePass::Promise& promise = promises[p];
    if (promise.placeholder) {
      pass.RemovePlaceholder(snap.pending[k.index], promise);
      --placeholders;
    }
    pass.PlanOne(snap.pending[k.index], s.facts[k.index], k.priority, position, now, &promise);
    s.promise_phase = placeholders > 0;
  };
  // The queue order visits the facts at random places: fetch the ones a few steps ahead.
  // The workload itself is read only by those that start or search for a placement.
  constexpr size_t kPrefetchAhead = 8;
  const bool shortest_first = config_.backfill_shortest_first && config_.backfill == BackfillMode::kBackfill &&
                              config_.reservation_depth > 0;
  for (size_t i = 0; i < s.order.size(); ++i) {
    if (i + kPrefetchAhead < s.order.size()) __builtin_prefetch(&s.facts[s.order[i + kPrefetchAhead].index]);
    plan_one(s.order[i], static_cast<int32_t>(i + 1));
    if (shortest_first && s.reservations >= config_.reservation_depth && i + 1 < s.order.size()) {
      // Every reservation is made: the rest are backfill candidates, shortest first (ties in
      // queue order); each keeps its queue position. A promise holder among them still finds
      // its slot held until its turn.
      std::vector<int32_t> rest(s.order.size() - i - 1);
      for (size_t r = 0; r < rest.size(); ++r) rest[r] = static_cast<int32_t>(i + 1 + r);
      // Starving workloads first, oldest first (ties in queue order), so they reserve before a
      // candidate takes their capacity now and nothing submitted later, starving or not, is
      // reserved ahead of them; then the candidates, shortest first.
      auto starving = [&](int32_t r) { return pass.Starving(s.order[r].submit_time, now); };
      std::stable_sort(rest.begin(), rest.end(), [&](int32_t a, int32_t b) {
        const bool sa = starving(a);
        const bool sb = starving(b);
        if (sa != sb) return sa;
        if (sa) return s.order[a].submit_time < s.order[b].submit_time;
        return s.facts[s.order[a].index].duration < s.facts[s.order[b].index].duration;
      });
      s.out_of_priority_order = true;
      for (int32_t r : rest) plan_one(s.order[r], r + 1);
      break;
    }
  }
  s.promise_phase = false;
  state_ = std::move(st);
  return plan;
}

absl::StatusOr<PlanDelta> QueuePlanner::OnArrival(const PendingWorkload& workload, Time now) {
  if (state_ == nullptr) {
    return absl::FailedPreconditionError("OnArrival needs a previous PlanCycle");
  }
  State& s = *state_;
  if (now < s.now) return absl::InvalidArgumentError("OnArrival: time went backwards");
  PlanDelta delta;
  // Priority on the cycle's clock, so it compares with the queue it joins.
  const PendingWorkload& w = s.arrivals.emplace_back(workload);
  const QosPolicy* qos = nullptr;
  const double priority = s.priority->Compute(w, &qos).total;
  const SortedQueueKey entry{priority, w.submit_time, static_cast<int32_t>(s.facts.size())};
  s.facts.push_back(s.FactsOf(w, qos, config_));
  auto pos = std::lower_bound(s.order.begin(), s.order.end(), entry,
                              [&](const SortedQueueKey& a, const SortedQueueKey& b) {
                                return ComesBefore(s.KeyOf(a), s.KeyOf(b));
                              });
  const int32_t position = static_cast<int32_t>(pos - s.order.begin()) + 1;
  // Landing ahead of a reservation (or with preemption rights) changes what the workloads
  // behind it get: only a full cycle answers that correctly.
  if (position <= s.last_reservation_position || (CanPreemptAnything(qos) && preemption_)) {
    s.arrivals.pop_back();
    s.facts.pop_back();
    delta.needs_full_cycle = true;
    return delta;
  }
  s.order.insert(pos, entry);
  delta.positions_shifted_from = position;
  Plan scratch;
  CyclePass pass(config_, preemption_, s, scratch, /*in_cycle=*/false);
  pass.PlanOne(w, s.facts[entry.index], priority, position, now);
  delta.starts = std::move(scratch.starts);
  delta.reservations = std::move(scratch.reservations);
  delta.owner_changes = std::move(scratch.owner_changes);
  if (!scratch.waiting.empty()) delta.waiting = std::move(scratch.waiting.front());
  return delta;
}

}  // namespace onequeue::queue

#pragma once
// What one planner cycle builds and OnArrival reuses: QueuePlanner::State (internal to
// src/queue). PlanCycle (planner.cc) fills it; the cycle pass (planner_pass.h) reads and
// updates it while it walks the queue.
#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "queue/eligibility.h"
#include "queue/model.h"
#include "queue/never_fits.h"
#include "queue/planner.h"
#include "queue/planner_free_index.h"
#include "queue/planner_memos.h"
#include "queue/priority.h"
#include "queue/profile.h"
#include "queue/resources.h"

namespace onequeue::queue {
namespace internal {

// A stable text per distinct static eligibility (selector, affinity, tolerations, allowed
// nodes); "" for none. Workloads with equal signatures share an eligibility class.
std::string EligibilitySignature(const Eligibility& e);
// The same, appended to *out (the planner's per-workload call reuses one buffer: no allocation).
void AppendEligibilitySignature(const Eligibility& e, std::string* out);

// The run time the planner plans with: the time limit (at least 1 s), or kForever without one.
inline Duration RunDuration(const PendingWorkload& w) {
  return w.time_limit.has_value() ? std::max<Duration>(1, *w.time_limit) : kForever;
}

inline bool CanPreemptAnything(const QosPolicy* q) { return q != nullptr && !q->can_preempt.empty(); }

// Issue 28, kube-scheduler's DefaultPreemption for pods onequeue manages without a QOS: a pod
// group without an explicit QOS and with a PriorityClass value (spec.priority, which the
// apiserver always sets) preempts (unless preemptionPolicy: Never) pod groups without QOS of
// strictly lower PriorityClass value (RunningWorkload::class_priority). QOS rules otherwise.
inline bool ByClass(const PendingWorkload& w) {
  return w.kind == WorkloadKind::kPodGroup && w.qos.empty() && w.may_preempt && w.priority_class_value.has_value();
}

}  // namespace internal

namespace internal {

// EarliestPlacement's nodes seen feasible so far (node -> copies, the block end at which it was
// examined), as per-node arrays stamped per search instead of a hash map built per search.
struct PlacementScratch {
  std::vector<NodeIndex> nodes;  // the nodes in the set, in no particular order
  std::vector<int64_t> copies;
  std::vector<Time> freed;
  std::vector<Time> checked;  // the time at which `copies` was found
  std::vector<uint32_t> mark;  // == stamp: in the set
  uint32_t stamp = 0;
  int64_t total = 0;  // the sum of `copies` over the set

  void Begin(size_t node_count) {
    nodes.clear();
    total = 0;
    if (mark.size() != node_count) {
      mark.assign(node_count, 0);
      copies.assign(node_count, 0);
      freed.assign(node_count, 0);
      checked.assign(node_count, 0);
      stamp = 0;
    }
    if (++stamp == 0) {  // wrapped: forget every old mark
      std::fill(mark.begin(), mark.end(), 0);
      stamp = 1;
    }
  }
  bool Contains(NodeIndex n) const { return mark[n] == stamp; }
  void Insert(NodeIndex n) {
    mark[n] = stamp;
    nodes.push_back(n);
  }
  void Drop(NodeIndex n) { mark[n] = 0; }  // the caller takes it out of `nodes` and `total`
  // Asks every node of the set again at t (a node feasible earlier can be blocked at t by a
  // block that starts after its last check) and keeps those with room; a node found feasible at
  // t itself keeps its answer (the profile has not changed since).
  template <typename CopiesAt>
  void Reverify(Time t, CopiesAt copies_at) {
    total = 0;
    size_t kept = 0;
    for (NodeIndex n : nodes) {
      const int64_t c = checked[n] == t ? copies[n] : copies_at(n, t);
      if (c <= 0) {
        Drop(n);
        continue;
      }
      copies[n] = c;
      checked[n] = t;
      total += c;
      nodes[kept++] = n;
    }
    nodes.resize(kept);
  }
  // `members` members on the set's nodes, in the set's order, each node taking up to its copies
  // (total >= members): a placement, not the search's choice (CyclePass::EarliestPlacement's
  // `any_nodes`).
  MemberNodes AnyMembers(int32_t members) const {
    MemberNodes out;
    out.reserve(static_cast<size_t>(members));
    for (NodeIndex n : nodes) {
      for (int64_t c = 0; c < copies[n] && static_cast<int32_t>(out.size()) < members; ++c) out.push_back(n);
      if (static_cast<int32_t>(out.size()) == members) break;
    }
    return out;
  }
  // Node n holds c copies (c > 0; else nothing changes) from t on, its last block having ended at
  // `freed` (the search's start for a node free then).
  void Note(NodeIndex n, int64_t c, Time freed_at, Time t) {
    if (c <= 0) return;
    if (Contains(n)) {
      total -= copies[n];
    } else {
      Insert(n);
    }
    copies[n] = c;
    freed[n] = freed_at;
    checked[n] = t;
    total += c;
  }
};

}  // namespace internal

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
    int32_t shape = 0;    // per-member request: shapes[shape]
    int32_t members = 1;  // >= 1
    int32_t eligibility = internal::kUnconstrained;  // class id
    WorkloadKind kind = WorkloadKind::kPodGroup;
    bool qos_unknown = false;  // names a QOS the (non-empty) table lacks
    // No admission error, not held, no missing gang member: the planner may place it.
    bool placeable = true;
    // Its members add to some Snapshot::pod_counts when placed (PlacementRules::counts_toward).
    bool counts_placed = false;
    // PendingWorkload::not_before is set (issue 29): compared with the cycle's now in PlanOne.
    bool has_not_before = false;
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
    // With anti-affinity that running pods break (PlacementRules::carriers): the nodes the
    // preemption search may use, whose running carriers it must evict (NodesAllowedByRules' placed_before). Else
    // empty: the search uses `bits`.
    std::vector<char> preempt_bits;
    int32_t preempt_count = 0;
    // Issue 26 (the steady cycle, twelfth pass): TryPreempt's nodes for `bits` ([0]) and
    // `preempt_bits` ([1]) while no node is reserved(W) or same-tenant: the eligible nodes not
    // claimed, ascending (CyclePass::ListPreemptNodes' list then), kept across the cycle's
    // preemptors; the claims made since (State::claim_log) are taken out when next asked.
    struct PreemptNodes {
      bool built = false;
      size_t claims = 0;  // entries of State::claim_log taken out
      std::vector<NodeIndex> nodes;
    };
    mutable std::array<PreemptNodes, 2> preempt_nodes;
  };
  std::vector<std::unique_ptr<EligibleSet>> eligible_by_class{1};
  absl::flat_hash_map<std::string, int32_t> class_of_signature;  // constrained classes only
  std::string signature_buffer;  // FactsOf's, reused
  std::vector<char> class_has_rules;  // by class (shorter: 0): a workload's own, with PlacementRules
  // Snapshot::pod_counts plus the members this cycle started (placement_rules.h).
  std::vector<PodCounts> pod_counts;

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
    f.duration = internal::RunDuration(w);
    const Eligibility& e = w.eligibility;
    f.counts_placed = w.placement != nullptr && !w.placement->counts_toward.empty();
    f.has_not_before = w.not_before > 0;
    if (w.placement != nullptr && !w.placement->rules.empty()) {
      // Inter-pod rules: a class of its own, its nodes read anew against the counts of the moment
      // (StaticEligible), and no memo shared with another workload.
      f.eligibility = static_cast<int32_t>(eligible_by_class.size());
      eligible_by_class.emplace_back();
      class_has_rules.resize(eligible_by_class.size(), 0);
      class_has_rules.back() = 1;
    } else if (!e.node_selector.empty() || !e.required_affinity.empty() || !e.node_affinity_terms.empty() ||
        !e.tolerations.empty() || e.allowed_nodes.has_value()) {
      signature_buffer.clear();
      internal::AppendEligibilitySignature(e, &signature_buffer);
      // Looked up first: a string is copied only for a new class.
      auto it = class_of_signature.find(signature_buffer);
      if (it == class_of_signature.end()) {
        it = class_of_signature.emplace(signature_buffer, static_cast<int32_t>(eligible_by_class.size())).first;
        eligible_by_class.emplace_back();
      }
      f.eligibility = it->second;
    }
    return f;
  }
  std::vector<char> claimed;  // nodes promised to a preemptor this cycle
  std::vector<NodeIndex> claim_log;  // the same nodes, in the order claimed
  // Issue 25 tenancy: some node is same-tenant (Node::same_tenant). Then every block carries its
  // workload's tenant as a number (TenantId), and the memos, which compare workloads by shape
  // alone, are neither read nor written (two tenants of one shape differ there).
  bool any_same_tenant = false;
  absl::flat_hash_map<std::string, int16_t> tenant_ids;
  int16_t TenantId(const std::string& tenant) {
    if (!any_same_tenant) return AvailabilityProfile::kNoTenant;
    auto [it, added] = tenant_ids.try_emplace(tenant, static_cast<int16_t>(tenant_ids.size()));
    // More tenants than an int16 counts share the last number (never kMixedTenants).
    if (added && tenant_ids.size() >= static_cast<size_t>(AvailabilityProfile::kMixedTenants))
      it->second = AvailabilityProfile::kMixedTenants - 1;
    return it->second;
  }
  std::vector<char> reserved_owner;  // node owner is reserved(W) (compact: checked per node)
  bool any_reserved_owner = false;   // some node is reserved(W): a preemption is under way
  std::vector<OwnerKind> owner_kind;  // per node, compact (Node is large and scattered)
  // Per extended resource slot: the nodes whose allocatable has some of it (a GPU request only
  // looks at GPU nodes).
  std::array<std::vector<NodeIndex>, kMaxResourceKinds> nodes_with;
  // The same as a bitmap per node, for the slots some node has (issue 26: a search of a scarce
  // resource skips the nodes without it, CyclePass::ScarceSlot).
  std::array<std::vector<char>, kMaxResourceKinds> has_resource;
  // Free-capacity indexes: cpu, and each extended resource that some node has (GPUs).
  std::array<std::unique_ptr<internal::FreeIndex>, kMaxResourceKinds> free_index;
  // Per topology label (finest first): the node's domain id (first seen in node order = 0), or
  // -1 when the node lacks the label.
  std::vector<std::vector<int32_t>> domains;
  std::vector<int32_t> domain_count;  // per topology label: how many domains
  std::vector<std::string> victims;
  // The same victims by index into snapshot->running (PreemptionInput::already_victim_indices),
  // and the running workloads by id (built at the first preemption decision of a cycle, to check
  // a decision's victims without a walk over every running workload).
  std::vector<int32_t> victim_indices;
  absl::flat_hash_map<std::string_view, int32_t> running_by_id;
  // Preemption searches ruled out this cycle (PreemptionPlanner::PlanOrRuleOut), one memo per
  // QOS of the config (by position): a preemptor of that QOS that asks at least as much, walked
  // later (no higher priority, no more usable nodes, capacity or candidates) is ruled out too.
  std::vector<internal::FailureMemo> failed_preempt;
  // Scratch buffers of TryPreempt (its usable nodes, a decision's victims as running indices).
  std::vector<NodeIndex> scratch_preempt_nodes;
  std::vector<int32_t> scratch_victims;
  // Scratch buffers of TryStartNow and ChooseNodes, kept to save ~30,000 allocations per cycle.
  std::vector<std::pair<NodeIndex, int64_t>> scratch_candidates;
  std::vector<std::pair<NodeIndex, int64_t>> scratch_inside;
  std::vector<int64_t> scratch_capacity;
  // EarliestPlacement's node ranking (PreferLatestFreed) and its result.
  std::vector<std::tuple<Time, NodeIndex, int64_t>> scratch_ranked;
  std::vector<std::pair<NodeIndex, int64_t>> scratch_best_first;
  internal::PlacementScratch placement;  // EarliestPlacement's feasible nodes
  internal::NoRoomMemo no_room;          // EarliestPlacement's nodes without room at its start
  internal::NoRoomMemo no_room_now;      // TryStartNow's nodes without room now (its own: one start)
  std::vector<std::pair<Time, NodeIndex>> scratch_batch;  // EarliestPlacement's batch of block ends
  MemberNodes scratch_member_nodes;      // ForEachNodeCount's sorted copy
  internal::FailureMemo failed_now;    // could not start now
  internal::NotBeforeMemo not_before;  // earliest possible starts (kForever: none inside the window)
  // Would not fit now even if no reservation existed (the reason, not the decision).
  internal::FailureMemo failed_ignoring_reservations;
  // Estimation memo per (shape, duration) for the whole cycle. Capacity only shrinks during a
  // cycle, so a memoised estimate can be optimistic by the backfills planned after it was made:
  // an estimate, not a promise (reservations are the promises).
  absl::flat_hash_map<std::pair<internal::ShapeKey, Duration>, Time> estimate_memo;
  // Issue 26: per shape, the nodes of the last placement a search found for it this cycle: a
  // candidate, never an answer (CyclePass::StartFromWitness verifies it against the profile as
  // it is then, so a witness whose nodes have filled up since is merely not used).
  absl::flat_hash_map<internal::ShapeKey, MemberNodes> estimate_witness;
  internal::FitsMemo fits_ignoring_reservations;
  // Per request per member and eligibility class (ShapeKey with members 0, kind and packing
  // unset: the summary serves every size): what WhyItNeverFits reads of the empty pool this
  // cycle (CyclePass::NeverFits).
  absl::flat_hash_map<internal::ShapeKey, EmptyPoolCapacity> empty_pool;
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
  // Issue 26: each pending holder's reserved(W) nodes, ascending. A holder that can start now
  // starts on them first (TryStartNow): on another's reserved node (the owner rule allows it to
  // one of higher priority) it would displace that holder, whose own node stays reserved for it.
  absl::flat_hash_map<std::string, std::vector<NodeIndex>> reserved_nodes_of;
};

}  // namespace onequeue::queue

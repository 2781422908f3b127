// The backfill planner: a cycle's set-up (the availability profile, node indexes, the queue in
// priority order, last cycle's promises) and its walk over the queue; OnArrival. See planner.h
// for the contract and docs/queue.md "Backfill" for the algorithm and its invariants. The
// decision for one workload is the cycle pass (planner_pass.h); its memos, free index and state
// have their own headers (planner_memos.h, planner_free_index.h, planner_state.h).
#include "queue/planner.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "queue/planner_pass.h"
#include "queue/planner_state.h"
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
  if (c.max_starving_reservations < 1) {
    return absl::InvalidArgumentError("max_starving_reservations must be >= 1");
  }
  if (!(c.starvation_bound_limits >= 0) || !std::isfinite(c.starvation_bound_limits)) {
    return absl::InvalidArgumentError("starvation_bound_limits must be a finite number >= 0 (0 = off)");
  }
  if (!(c.starvation_width_scale >= 0 && c.starvation_width_scale <= 1)) {
    return absl::InvalidArgumentError("starvation_width_scale must be 0 (off) to 1");
  }
  if ((c.starvation_width_scale > 0 || c.starving_order != QueueConfig::StarvingOrder::kOldest) &&
      !StarvingToFront(c.starvation_remedy)) {
    return absl::InvalidArgumentError("starvation_width_scale and starving_order first-starved need starvation_remedy front or front-reserve");
  }
  if (StarvingToFront(c.starvation_remedy)) {
    // The front's base must stay above every weighted sum (factors are at most 1).
    const PriorityWeights& w = c.weights;
    if (!(w.age + w.fair_share + w.job_size + w.partition + w.qos < kStarvingFront / 10)) {
      return absl::InvalidArgumentError("with starvation_remedy front or front-reserve the priority weights must sum below 1e12; starvation_remedy reserve takes any weights");
    }
    if (c.starvation_bound == 0 && c.starvation_bound_limits == 0) {
      return absl::InvalidArgumentError("starvation_remedy front and front-reserve need a starvation bound (nothing would starve)");
    }
  }
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

namespace internal {

std::string EligibilitySignature(const Eligibility& e) {
  std::string s;
  AppendEligibilitySignature(e, &s);
  return s;
}

void AppendEligibilitySignature(const Eligibility& e, std::string* out) {
  if (e.node_selector.empty() && e.required_affinity.empty() && e.node_affinity_terms.empty() &&
      e.tolerations.empty() && !e.allowed_nodes.has_value()) {
    return;
  }
  std::string& s = *out;
  s += "v1";
  for (const auto& [k, v] : e.node_selector) absl::StrAppend(&s, "|s", k, "=", v);
  for (const LabelRequirement& r : e.required_affinity) {
    absl::StrAppend(&s, "|a", r.key, ":", static_cast<int>(r.op));
    for (const std::string& v : r.values) absl::StrAppend(&s, ",", v);
  }
  for (const NodeSelectorTerm& term : e.node_affinity_terms) {
    absl::StrAppend(&s, "|T");
    for (const auto* list : {&term.match_expressions, &term.match_fields}) {
      absl::StrAppend(&s, list == &term.match_fields ? "|f" : "|e");
      for (const LabelRequirement& r : *list) {
        absl::StrAppend(&s, "|a", r.key, ":", static_cast<int>(r.op));
        for (const std::string& v : r.values) absl::StrAppend(&s, ",", v);
      }
    }
  }
  for (const Toleration& t : e.tolerations) {
    absl::StrAppend(&s, "|t", t.key, ":", static_cast<int>(t.op), ":", t.value, ":",
                    t.effect.has_value() ? static_cast<int>(*t.effect) : -1);
  }
  if (e.allowed_nodes.has_value()) {
    absl::StrAppend(&s, "|n");
    for (const std::string& n : *e.allowed_nodes) absl::StrAppend(&s, ",", n);
  }
}

}  // namespace internal

namespace {

using internal::CanPreemptAnything;
using internal::CyclePass;
using internal::FreeIndex;
using State = QueuePlanner::State;

// The availability profile of the cycle: every node's capacity (summed into pool_total), and the
// running workloads on it.
void BuildProfile(const QueueConfig& config, State& s) {
  const Snapshot& snap = *s.snapshot;
  const Time now = s.now;
  std::vector<Resources> capacity;
  std::vector<uint8_t> shared, same_tenant;
  capacity.reserve(snap.nodes.size());
  shared.reserve(snap.nodes.size());
  s.any_same_tenant = false;
  for (const Node& n : snap.nodes) {
    capacity.push_back(n.allocatable);
    shared.push_back(SharesWorlds(n, config) ? 1 : 0);
    s.any_same_tenant = s.any_same_tenant || n.same_tenant;
    s.pool_total += n.allocatable;
  }
  if (s.profile != nullptr) {  // the last cycle's, handed over by PlanCycle: its allocations reused
    s.profile->Reset(capacity, now, config.window, config.resolution, shared);
  } else {
    s.profile = std::make_unique<AvailabilityProfile>(std::move(capacity), now, config.window,
                                                      config.resolution, std::move(shared));
  }
  if (s.any_same_tenant) {
    same_tenant.reserve(snap.nodes.size());
    for (const Node& n : snap.nodes) same_tenant.push_back(n.same_tenant ? 1 : 0);
    s.profile->SetSameTenant(std::move(same_tenant));
  }
  // Running workloads occupy their nodes until their expected end (a workload past its end is
  // assumed to end within one resolution step, like Slurm), or for good when it has none.
  for (const RunningWorkload& r : snap.running) {
    Time end = kForever;
    // Only past its end: one ending within the next step ends when it says (a promise made
    // before may start right then).
    if (r.expected_end.has_value()) end = *r.expected_end > now ? *r.expected_end : now + config.resolution;
    const int16_t tenant = s.TenantId(r.tenant);
    for (const Allocation& a : r.allocations) {
      if (a.node < 0 || a.node >= static_cast<NodeIndex>(snap.nodes.size())) continue;
      s.profile->Add(a.node, AvailabilityProfile::Block{std::min(r.start_time, now), end, a.used,
                                                        r.kind, false, tenant});
    }
  }
  // Issue 29: a node's windows of unavailability (Slurm reservations) take its whole capacity.
  for (NodeIndex n = 0; n < static_cast<NodeIndex>(snap.nodes.size()); ++n) {
    for (const Unavailability& u : snap.nodes[n].unavailable) {
      if (u.end <= now || u.end <= u.start) continue;
      s.profile->Add(n, AvailabilityProfile::Block{u.start, u.end, snap.nodes[n].allocatable,
                                                   WorkloadKind::kSlurmJob, false});
    }
  }
}

// What the searches look up per node, built once per cycle: claims and sequence numbers, the
// nodes with each extended resource, topology domain ids, owners, and the free-capacity indexes
// (after the profile is sealed with the running workloads).
void IndexNodes(const QueueConfig& config, State& s) {
  const Snapshot& snap = *s.snapshot;
  s.claimed.assign(snap.nodes.size(), 0);
  s.claim_log.clear();
  s.node_seq.assign(snap.nodes.size(), 0);
  s.node_stamp.assign(snap.nodes.size(), 0);
  for (NodeIndex n = 0; n < static_cast<NodeIndex>(snap.nodes.size()); ++n) {
    const Resources& allocatable = snap.nodes[n].allocatable;
    // Most nodes have no extended resource: the slots or-ed (no branch) before a test per slot.
    int64_t any = 0;
    for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) any |= allocatable[r];
    if (any == 0) continue;
    for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
      if (allocatable[r] > 0) s.nodes_with[r].push_back(n);
    }
  }
  for (const std::string& label : config.topology_labels) {
    absl::flat_hash_map<std::string, int32_t> ids;
    std::vector<int32_t> of(snap.nodes.size(), -1);
    for (size_t n = 0; n < snap.nodes.size(); ++n) {
      auto it = snap.nodes[n].labels.find(label);
      if (it == snap.nodes[n].labels.end()) continue;
      of[n] = ids.emplace(it->second, static_cast<int32_t>(ids.size())).first->second;
    }
    // A label no node has is no level (issue 29: the daemon's default, topology.kubernetes.io/zone,
    // packs only where the nodes carry it; without any, gangs are placed as without packing).
    if (ids.empty()) continue;
    s.domains.push_back(std::move(of));
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
  // The indexes PlanCycle handed over from the last cycle are built again in place.
  if (s.free_index[kCpu] == nullptr) s.free_index[kCpu] = std::make_unique<FreeIndex>();
  s.free_index[kCpu]->Build(*s.profile, kCpu, 1000);
  for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
    if (!s.nodes_with[r].empty()) {
      s.has_resource[r].assign(snap.nodes.size(), 0);
      for (NodeIndex n : s.nodes_with[r]) s.has_resource[r][n] = 1;
    }
  }
  for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
    if (s.nodes_with[r].empty()) {
      s.free_index[r].reset();
      continue;
    }
    if (s.free_index[r] == nullptr) s.free_index[r] = std::make_unique<FreeIndex>();
    s.free_index[r]->Build(*s.profile, r, 1);
  }
}

// The priority pass: every pending workload's priority (into the plan), its Facts, the queue
// order, and the priorities of the workloads that hold reserved(W) nodes (the owner rule).
void RankPending(const QueueConfig& config, State& s, Plan& plan) {
  const Snapshot& snap = *s.snapshot;
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
    s.facts.push_back(s.FactsOf(w, qos, config));
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
    for (size_t n = 0; n < snap.nodes.size(); ++n) {
      const NodeOwner& owner = snap.nodes[n].owner;
      if (owner.kind == OwnerKind::kReserved && s.reserved_for_priority.contains(owner.reserved_for)) {
        s.reserved_nodes_of[owner.reserved_for].push_back(static_cast<NodeIndex>(n));
      }
    }
  }
  s.order = SortByQueueOrder(keys);
}

// Last cycle's reservations (docs/queue.md "Promises"). Each promised slot is held by a
// placeholder from the start of the walk until its holder's own turn in queue order, when the
// holder takes it back and plans again: it starts now, or finds that slot or an earlier one.
// Whatever is planned before it (higher priority) avoids the slot, so a reservation never moves
// later; and the holder keeps its place in the queue, so it never takes capacity ahead of a
// higher-priority workload that can start now. Only a change of its own (request, time limit,
// eligibility, hold) or of the world under the slot (a node gone, a running workload past its
// end) drops a promise.
class HeldPromises {
 public:
  explicit HeldPromises(size_t pending) : promise_of_(pending, -1) {}

  // Holds every promise of a still pending workload (a placeholder when its slot still fits).
  void Hold(const std::vector<PromisedReservation>& promised, const State& s, CyclePass& pass,
            Time now);
  // Placeholders still in the profile: while there are any, capacity can grow (a holder takes
  // its slot back), so the memos (which assume it only shrinks) are neither read nor written.
  bool AnyHeld() const { return placeholders_ > 0; }
  // The promise of workload `number`, its placeholder taken back out of the profile; null when
  // the workload holds none.
  const CyclePass::Promise* TakeBack(int32_t number, const PendingWorkload& w, CyclePass& pass) {
    const int32_t p = promise_of_[number];
    if (p < 0) return nullptr;
    const CyclePass::Promise& promise = promises_[p];
    if (promise.placeholder) {
      pass.RemovePlaceholder(w, promise);
      --placeholders_;
    }
    return &promise;
  }

 private:
  std::vector<CyclePass::Promise> promises_;  // filled once by Hold: pointers into it stay valid
  std::vector<int32_t> promise_of_;           // workload number -> index in promises_
  int32_t placeholders_ = 0;                  // placeholders still in the profile
};

void HeldPromises::Hold(const std::vector<PromisedReservation>& promised, const State& s,
                        CyclePass& pass, Time now) {
  const Snapshot& snap = *s.snapshot;
  const size_t pending = snap.pending.size();
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
  promises_.reserve(holders.size());
  for (const auto& [start, number] : holders) {
    const PromisedReservation& r = *by_id.at(std::string_view(snap.pending[number].id));
    // What is left of the slot from now on (a holder not started at its promised start, e.g.
    // a cycle that came late, is held from now).
    CyclePass::Promise promise{r.member_nodes, std::max(r.start, now), r.end, r.per_member, false};
    promise.placeholder = pass.AddPlaceholder(snap.pending[number], s.facts[number], priority_of[number], promise);
    placeholders_ += promise.placeholder ? 1 : 0;
    promise_of_[number] = static_cast<int32_t>(promises_.size());
    promises_.push_back(std::move(promise));
  }
}

// The queue positions from `first` on, in shortest-first backfill order: starving workloads
// first, oldest first (ties in queue order), so they reserve before a candidate takes their
// capacity now and nothing submitted later, starving or not, is reserved ahead of them; then the
// candidates, shortest first (ties in queue order). Each position's key once, flat, and its
// position as the last key (the stable order without a stable sort): reading the facts and
// asking Starving in every comparison cost ~13 M instructions per steady cycle (issue 26).
std::vector<int32_t> ShortestFirst(const QueuePlanner::State& s, const internal::CyclePass& pass, size_t first,
                                   Time now) {
  struct Key {
    bool not_starving;
    int64_t key;  // submit time when starving, else the duration
    int32_t position;
  };
  std::vector<Key> keys(s.order.size() - first);
  for (size_t r = 0; r < keys.size(); ++r) {
    const SortedQueueKey& k = s.order[first + r];
    const Duration duration = s.facts[k.index].duration;
    const bool starving = pass.Starving(k.submit_time, duration, now);
    keys[r] = Key{!starving, starving ? k.submit_time : duration, static_cast<int32_t>(first + r)};
  }
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.not_starving != b.not_starving) return b.not_starving;
    if (a.key != b.key) return a.key < b.key;
    return a.position < b.position;
  });
  std::vector<int32_t> rest(keys.size());
  for (size_t r = 0; r < keys.size(); ++r) rest[r] = keys[r].position;
  return rest;
}

// The walk over the queue: each workload's turn in priority order (a promise holder takes its
// slot back first); with backfill_shortest_first, once every reservation is made, the rest as
// backfill candidates, shortest first.
void WalkQueue(const QueueConfig& config, State& s, CyclePass& pass, HeldPromises& held) {
  const Snapshot& snap = *s.snapshot;
  const Time now = s.now;
  auto plan_one = [&](const SortedQueueKey& k, int32_t position) {
    const CyclePass::Promise* promise = held.TakeBack(k.index, snap.pending[k.index], pass);
    if (promise == nullptr) {
      pass.PlanOne(snap.pending[k.index], s.facts[k.index], k.priority, position, now);
      return;
    }
    pass.PlanOne(snap.pending[k.index], s.facts[k.index], k.priority, position, now, promise);
    s.promise_phase = held.AnyHeld();
  };
  // The queue order visits the facts at random places: fetch the ones a few steps ahead.
  // The workload itself is read only by those that start or search for a placement.
  constexpr size_t kPrefetchAhead = 8;
  const bool shortest_first = config.backfill_shortest_first && config.backfill == BackfillMode::kBackfill &&
                              config.reservation_depth > 0;
  for (size_t i = 0; i < s.order.size(); ++i) {
    if (i + kPrefetchAhead < s.order.size()) __builtin_prefetch(&s.facts[s.order[i + kPrefetchAhead].index]);
    plan_one(s.order[i], static_cast<int32_t>(i + 1));
    if (shortest_first && s.reservations >= config.reservation_depth && i + 1 < s.order.size()) {
      // Every reservation is made: the rest are backfill candidates, shortest first (ties in
      // queue order); each keeps its queue position. A promise holder among them still finds
      // its slot held until its turn.
      const std::vector<int32_t> rest = ShortestFirst(s, pass, i + 1, now);
      s.out_of_priority_order = true;
      for (int32_t r : rest) plan_one(s.order[r], r + 1);
      break;
    }
  }
}

}  // namespace

QueuePlanner::QueuePlanner(QueueConfig config, const PreemptionPlanner* preemption)
    : config_(std::move(config)),
      preemption_(preemption),
      fair_share_tree_(std::make_unique<const FairShareTree>(config_)) {}

QueuePlanner::~QueuePlanner() = default;

Plan QueuePlanner::PlanCycle(std::shared_ptr<const Snapshot> snapshot, Time now) {
  return PlanCycle(std::move(snapshot), now, {});
}

Plan QueuePlanner::PlanCycle(std::shared_ptr<const Snapshot> snapshot, Time now,
                             const std::vector<PromisedReservation>& promised) {
  auto st = std::make_unique<State>();
  State& s = *st;
  if (state_ != nullptr) {
    // The last cycle's profile and free indexes are rebuilt from scratch below, in the storage
    // they grew (per-cycle allocation was ~18 % of a replay's time).
    s.profile = std::move(state_->profile);
    s.free_index = std::move(state_->free_index);
    // And the searches' scratch buffers, each emptied (or stamped anew) before every use.
    s.placement = std::move(state_->placement);
    s.scratch_candidates = std::move(state_->scratch_candidates);
    s.scratch_inside = std::move(state_->scratch_inside);
    s.scratch_capacity = std::move(state_->scratch_capacity);
    s.scratch_ranked = std::move(state_->scratch_ranked);
    s.scratch_best_first = std::move(state_->scratch_best_first);
    s.scratch_batch = std::move(state_->scratch_batch);
    state_.reset();
  }
  s.snapshot = std::move(snapshot);
  s.now = now;
  s.pod_counts = s.snapshot->pod_counts;  // the cycle's starts add to it (placement_rules.h)
  BuildProfile(config_, s);
  s.priority = std::make_unique<PriorityCalculator>(config_, *fair_share_tree_, s.snapshot->usage, s.pool_total, now);
  IndexNodes(config_, s);

  Plan plan;
  plan.now = now;
  plan.snapshot = s.snapshot;
  RankPending(config_, s, plan);
  CyclePass pass(config_, preemption_, s, plan, /*in_cycle=*/true);
  const size_t pending = s.snapshot->pending.size();
  HeldPromises held(pending);
  if (!promised.empty()) held.Hold(promised, s, pass, now);
  plan.order.reserve(pending);
  for (const SortedQueueKey& k : s.order) plan.order.push_back(k.index);

  plan.waiting.reserve(pending);
  s.promise_phase = held.AnyHeld();
  WalkQueue(config_, s, pass, held);
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
  if (position <= s.last_reservation_position || ((CanPreemptAnything(qos) || internal::ByClass(w)) && preemption_)) {
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

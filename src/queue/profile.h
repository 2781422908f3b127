#pragma once
// Per-node availability in time, like Fluxion's planner (resource/planner/c/planner.h): each node
// holds blocks [start, end) of used resources (running workloads, reservations, backfilled
// starts); queries answer "how many copies of this request fit on node n over [start, end)" and
// "the earliest time >= on_or_after at which one copy fits for `duration`".
//
// Contract of every query: times are absolute seconds; `end` may be kForever (a service, or a
// running workload without an expected end); nothing is planned to start after horizon()
// (now + window): AvailTimeFirst returns kForever instead. Start times that AvailTimeFirst
// returns lie on the resolution grid now + k * resolution (like Slurm's bf_resolution), so one
// reservation never lands a few seconds before another and fragments the profile.
//
// Per-node blocks stay few (the workloads on one node), so each query is a small sweep; the
// planner keeps free_now and the first future block start per node for the common question
// "does it fit right now, until its time limit?" in O(resources).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"

#include "queue/model.h"

namespace onequeue::queue {

inline Time SaturatingAdd(Time t, Duration d) {
  if (t >= kForever || d >= kForever - t) return kForever;
  return t + d;
}

// Instants [from, to) at which a node has no room for a request (AvailabilityProfile::Copies);
// from = kForever: none known.
struct NoRoomSpan {
  Time from = kForever;
  Time to = kForever;
};

class AvailabilityProfile {
 public:
  struct Block {
    Time start = 0;
    Time end = kForever;
    Resources used;
    WorkloadKind kind = WorkloadKind::kPodGroup;
    bool reservation = false;  // a reservation of a blocked workload (not yet running)
    // Issue 25: the block's tenant (an id the planner numbers per cycle); on a same-tenant node a
    // query of another tenant finds no room while it lasts. kNoTenant: anyone's (a Slurm
    // reservation's whole-node window).
    int16_t tenant = -1;
  };
  static constexpr int16_t kNoTenant = -1;
  static constexpr int16_t kMixedTenants = std::numeric_limits<int16_t>::max();

  // Issue 25: same_tenant[n] != 0: node n holds work of one tenant at a time (Node::same_tenant).
  // Call before any Add.
  void SetSameTenant(std::vector<uint8_t> same_tenant) {
    same_tenant_ = std::move(same_tenant);
    same_tenant_.resize(capacity_.size(), 0);
  }

  // capacity[n]: node n's allocatable. shared_nodes=false: pods and Slurm jobs never overlap
  // on one node.
  AvailabilityProfile(std::vector<Resources> capacity, Time now, Duration window,
                      Duration resolution, bool shared_nodes);
  // shared[n] != 0: node n is shared (pods and Slurm jobs side by side, each at its size); the
  // others are exclusive to one world at a time. Missing entries are exclusive.
  AvailabilityProfile(std::vector<Resources> capacity, Time now, Duration window,
                      Duration resolution, std::vector<uint8_t> shared);

  // Makes this profile the one the constructor builds from the same arguments (no block, not
  // sealed, versions 0), keeping its allocations: the planner reuses one profile across cycles.
  void Reset(const std::vector<Resources>& capacity, Time now, Duration window, Duration resolution,
             const std::vector<uint8_t>& shared);

  void Add(NodeIndex node, const Block& block);
  // Takes back one block equal to `block` that Add put on `node` (a promised reservation's
  // placeholder, planner.cc): its capacity is free again. False when the node has no such block.
  bool Remove(NodeIndex node, const Block& block);

  // Copies of `request` (0..cap) that fit on `node` throughout [start, end) for a workload of
  // `kind`. ignore_reservations: as if no reservation existed (used to tell the reason
  // ReservedForHigherPriority from Resources).
  // `tenant`: the querying workload's (issue 25); on a same-tenant node a block of another tenant
  // overlapping [start, end) leaves no room.
  // `slots`: SlotsFor(request), for a caller asking about one request many times (-1: found here).
  // Always inlined: a caller with two calls of it had GCC make it a call (~25 instructions more
  // per node visited, ~1,000,000 visits per cycle).
  // `blocked` (ninth pass, for the searches' NoRoomMemo): when the answer is 0 and it is given, it
  // is set to a span [from, to) meeting [start, end) whose every instant has no room: the query of
  // the same request, kind and tenant over any interval that meets the span answers 0 too while
  // the node is unchanged (its NodeVersion), or to from = kForever when none is known (a node that
  // ever held a block of negative usage; ignore_reservations). Untouched when the answer is not 0.
  [[gnu::always_inline]] int64_t Copies(NodeIndex node, Time start, Time end, const Resources& request,
                                        WorkloadKind kind, int64_t cap, bool ignore_reservations = false,
                                        int16_t tenant = kNoTenant, int slots = -1,
                                        NoRoomSpan* blocked = nullptr) const {
    // Fast path, inline (the planner asks this of ~200,000 nodes per cycle): starting now and
    // ending before any future block starts, the tightest moment is now (blocks active now only
    // end later), so free_now answers it.
    if (start <= now_ && end <= first_future_start_[node] && !ignore_reservations && end > now_ &&
        (kinds_[node] & ~KindBit(kind)) == 0 &&  // kinds_ stays 0 on shared nodes
        TenantFits(node, tenant)) {
      const int64_t copies = free_now_[node].CopiesOf(request, cap, slots < 0 ? kMaxResourceKinds : slots);
      if (blocked != nullptr && copies <= 0) *blocked = NoRoomSpan{negative_blocks_[node] ? kForever : now_, now_ + 1};
      return copies;
    }
    return CopiesSlow(node, start, end, request, kind, cap, ignore_reservations, tenant, slots, blocked);
  }
  // How many leading slots a query about `request` must compare: past them every capacity, usage
  // and the request are 0 (most pools name cpu, memory and pods only).
  int SlotsFor(const Resources& request) const;

  // Earliest grid time t >= on_or_after, t <= horizon(), at which one copy of `request` fits on
  // `node` over [t, t + duration); kForever when there is none.
  Time AvailTimeFirst(NodeIndex node, Time on_or_after, Duration duration,
                      const Resources& request, WorkloadKind kind, int16_t tenant = kNoTenant) const;
  // AvailTimeFirst(node, first, ...) <= horizon(): one copy fits at `first` (a grid time >= now)
  // or at the grid time one of the node's block ends after it rounds up to, up to the horizon;
  // the candidates asked in block order, without AvailTimeFirst's sort and allocation (issue 26:
  // CyclePass::NoNodeEverHasRoom). `slots`: as Copies'.
  bool FitsSometime(NodeIndex node, Time first, Duration duration, const Resources& request,
                    WorkloadKind kind, int16_t tenant, int slots) const;
  // Some node was given a block of negative usage: its free may exceed its capacity there, and a
  // usage may fall at a block start (the node-by-node arguments need every usage >= 0).
  bool AnyNegativeBlock() const { return any_negative_blocks_; }

  // Issue 25: the node is same-tenant and holds (now or planned) a block of a tenant other than
  // `tenant`. No tenant's block at all, or only `tenant`'s: false.
  bool OtherTenant(NodeIndex node, int16_t tenant) const { return !TenantFits(node, tenant); }

  // Block ends in (after, horizon()], ascending, as (end, node): the only moments at which a
  // node's availability can rise. `visit` returns false to stop. Ends of the blocks added before
  // SealBase() live in one sorted vector, later ones in a small ordered set.
  template <typename Visit>
  void ForEachEndAfter(Time after, Visit visit) const;

  // ForEachEndAfter(now(), visit) with the ends of the blocks added before SealBase cut to each
  // node's earliest: every node listed there is first met at the same (end, node), so a caller
  // that keeps each node once (CyclePass::ForEachNodeWithRoomAt) gets the same nodes in the same
  // order, without walking a full pool's ~4 running ends per node (issue 26).
  template <typename Visit>
  void ForEachFirstEndAfterNow(Visit visit) const {
    if (sealed_ && !base_first_built_) BuildBaseFirstEnds();
    WalkEnds(sealed_ ? base_first_ends_ : base_ends_, now_, visit);
  }

  // Sorts the ends of the blocks added so far (the running workloads); call once before queries.
  void SealBase();

  // Rounds t up onto the grid now + k * resolution.
  Time RoundUp(Time t) const;

  const Resources& FreeNow(NodeIndex node) const { return free_now_[node]; }
  // FreeNow of every node, indexed by NodeIndex (the preemption planner reads it in place).
  const std::vector<Resources>& FreeNowAll() const { return free_now_; }
  Time FirstFutureStart(NodeIndex node) const { return first_future_start_[node]; }
  // The node's earliest block end after now (kForever: none). With no block of negative usage, a
  // node without an end in (now, t] has at t at most its free now of every resource (the blocks
  // active now are still active then, and blocks starting since only add): a copy that fits at t
  // fits in FreeNow too (issue 26, CyclePass::ForEachStartCandidate).
  Time FirstEndAfterNow(NodeIndex node) const { return first_end_after_now_[node]; }
  // True when a block of the other world is active at now on the node (exclusive nodes only):
  // a workload of `kind` cannot start there now.
  bool OtherKindNow(NodeIndex node, WorkloadKind kind) const {
    return (kinds_now_[node] & ~KindBit(kind)) != 0;
  }
  static uint8_t KindBit(WorkloadKind k) { return k == WorkloadKind::kPodGroup ? 1 : 2; }
  const Resources& Capacity(NodeIndex node) const { return capacity_[node]; }
  size_t size() const { return capacity_.size(); }
  Time now() const { return now_; }
  Time horizon() const { return horizon_; }
  Duration resolution() const { return resolution_; }
  // Bumped by every Add: memoised answers are valid while it is unchanged.
  uint64_t version() const { return version_; }
  // Bumped by every Add and Remove on `node`: an answer about the node alone (NoRoomMemo) is
  // valid while it is unchanged.
  uint32_t NodeVersion(NodeIndex node) const { return node_version_[node]; }

 private:
  int64_t CopiesSlow(NodeIndex node, Time start, Time end, const Resources& request,
                     WorkloadKind kind, int64_t cap, bool ignore_reservations, int16_t tenant, int slots,
                     NoRoomSpan* blocked = nullptr) const;
  // No block of another tenant anywhere on the node (always true off same-tenant nodes).
  bool TenantFits(NodeIndex node, int16_t tenant) const {
    const int16_t t = node_tenant_[node];
    return t == kNoTenant || t == tenant;
  }
  // A block as stored: its usage by number in usages_, 24 bytes instead of 88 (the placement
  // searches read every block of every node they visit, and stalled on loading them).
  struct StoredBlock {
    Time start;
    Time end;
    int32_t used;  // usages_[used]
    WorkloadKind kind;
    bool reservation;
    int16_t tenant;
  };
  static_assert(sizeof(StoredBlock) == 24);
  // Folds one block into the node's summaries (free_now_, first future starts, kinds).
  void Summarise(NodeIndex node, const StoredBlock& b);
  // The node's summaries once `removed` is gone from its blocks.
  void ResummariseAfterRemove(NodeIndex node, const Block& removed);

  std::vector<Resources> capacity_;
  std::vector<std::vector<StoredBlock>> blocks_;  // per node, sorted by start
  ResourcesTable usages_;  // the distinct usages of the blocks
  std::vector<char> usage_nonnegative_;  // per usage number: no slot below 0
  // Per node: it was given a block of negative usage (never cleared): Copies reports no blocked
  // instant there (the argument for one needs every block's usage >= 0).
  std::vector<uint8_t> negative_blocks_;
  bool any_negative_blocks_ = false;  // some entry of negative_blocks_ is set
  int32_t last_usage_ = -1;              // the number InternUsage returned last
  // The number of `used` in usages_ (added when new).
  int32_t InternUsage(const Resources& used);
  std::vector<Resources> free_now_;       // capacity minus blocks active at now_
  std::vector<Time> first_future_start_;  // smallest block start > now_ (kForever: none)
  std::vector<Time> first_end_after_now_;  // per node: its earliest block end after now_ (kForever: none)
  // The same two, leaving reservations out (for ignore_reservations): reservations active at
  // now_ summed, and the smallest start > now_ of a block that is not a reservation.
  std::vector<Resources> reserved_now_;
  std::vector<Time> first_future_nonreserved_start_;
  std::vector<uint8_t> kinds_nonreserved_;  // kinds_ without reservations
  // Bit per WorkloadKind present among the node's blocks; always 0 on a shared node, where the
  // worlds may overlap (so the fast paths need no test of their own).
  std::vector<uint8_t> kinds_;
  std::vector<uint8_t> kinds_now_;        // same, for the blocks active at now_
  Time now_ = 0;
  Time horizon_ = 0;
  Duration resolution_ = 1;
  std::vector<uint8_t> shared_;  // per node: 1 = shared
  std::vector<uint8_t> same_tenant_;  // per node: 1 = one tenant at a time (issue 25)
  // Per node: kNoTenant (no tenant's block), the one tenant of all its blocks, or kMixedTenants.
  // Kept for same-tenant nodes only (kNoTenant elsewhere), so off them the fast paths pass.
  std::vector<int16_t> node_tenant_;
  uint64_t version_ = 0;
  std::vector<uint32_t> node_version_;  // per node, see NodeVersion
  // Slots [active_slots_, kMaxResourceKinds) are 0 in every capacity and every block's usage
  // (most pools use cpu, memory and pods): CopiesSlow's slot loops stop there for a request that
  // asks none of them either.
  int active_slots_ = 0;
  void Activate(const Resources& r);
  bool sealed_ = false;
  std::vector<std::pair<Time, NodeIndex>> base_ends_;
  // Ends of the blocks added after SealBase (thousands per cycle), grouped by time: most share
  // a few values (now + a common time limit), so an insert is an append; each group's nodes are
  // sorted (and made distinct) lazily, before the next ForEachEndAfter, for the groups touched
  // since (`dirty_ends_`).
  struct EndGroup {
    std::vector<NodeIndex> nodes;
    size_t sorted = 0;  // nodes[0, sorted) are sorted and distinct
  };
  mutable absl::btree_map<Time, EndGroup> added_ends_;
  mutable std::vector<Time> dirty_ends_;
  void SortAddedEnds() const;
  void SortFewEnds();  // SealBase for fewer than 512 ends
  // base_ends_ after now, each node's first only (ForEachFirstEndAfterNow): made once, as
  // base_ends_ does not change once sealed (a base block removed later keeps its end there).
  mutable std::vector<std::pair<Time, NodeIndex>> base_first_ends_;
  mutable bool base_first_built_ = false;
  void BuildBaseFirstEnds() const;
  // The ends of `base` (sorted) and of added_ends_ after `after`, merged (ForEachEndAfter).
  template <typename Visit>
  void WalkEnds(const std::vector<std::pair<Time, NodeIndex>>& base, Time after, Visit& visit) const;
};

template <typename Visit>
void AvailabilityProfile::ForEachEndAfter(Time after, Visit visit) const {
  WalkEnds(base_ends_, after, visit);
}

template <typename Visit>
void AvailabilityProfile::WalkEnds(const std::vector<std::pair<Time, NodeIndex>>& base, Time after,
                                   Visit& visit) const {
  SortAddedEnds();
  auto a = std::upper_bound(base.begin(), base.end(), std::make_pair(after, std::numeric_limits<NodeIndex>::max()));
  const auto a_end = base.end();
  auto g = added_ends_.upper_bound(after);
  // The current group's time and nodes, read once per group: a btree iterator's every use is
  // checked in Debian's hardened abseil, and the searches walk thousands of ends per call.
  Time group_time = 0;
  const NodeIndex* node = nullptr;  // null: no group left
  const NodeIndex* group_end = nullptr;
  const auto load = [&] {
    while (g != added_ends_.end() && g->second.nodes.empty()) ++g;
    if (g == added_ends_.end()) {
      node = group_end = nullptr;
      return;
    }
    group_time = g->first;
    node = g->second.nodes.data();
    group_end = node + g->second.nodes.size();
  };
  load();
  while (a != a_end || node != nullptr) {
    std::pair<Time, NodeIndex> next;
    if (node == nullptr || (a != a_end && *a < std::make_pair(group_time, *node))) {
      next = *a++;
    } else {
      next = {group_time, *node};
      if (++node == group_end) {
        ++g;
        load();
      }
    }
    if (next.first > horizon_) return;
    if (!visit(next.first, next.second)) return;
  }
}

}  // namespace onequeue::queue

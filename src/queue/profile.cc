#include "queue/profile.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/container/inlined_vector.h"

namespace onequeue::queue {
AvailabilityProfile::AvailabilityProfile(std::vector<Resources> capacity, Time now,
                                         Duration window, Duration resolution, bool shared_nodes)
    : AvailabilityProfile(capacity, now, window, resolution,
                          std::vector<uint8_t>(capacity.size(), shared_nodes ? 1 : 0)) {}

AvailabilityProfile::AvailabilityProfile(std::vector<Resources> capacity, Time now,
                                         Duration window, Duration resolution,
                                         std::vector<uint8_t> shared) {
  Reset(capacity, now, window, resolution, shared);
}

void AvailabilityProfile::Reset(const std::vector<Resources>& capacity, Time now, Duration window,
                                Duration resolution, const std::vector<uint8_t>& shared) {
  const size_t n = capacity.size();
  capacity_.assign(capacity.begin(), capacity.end());
  // A node holds a few running workloads and gains a few blocks per cycle: one allocation for
  // the common case instead of a vector growing 1, 2, 4, 8 (~25,000 reallocations per cycle).
  // Kept across Resets, with what each node's vector grew to.
  blocks_.resize(n);
  for (std::vector<StoredBlock>& b : blocks_) {
    b.clear();
    b.reserve(4);
  }
  usages_.Clear();
  usage_nonnegative_.clear();
  last_usage_ = -1;
  free_now_.assign(capacity_.begin(), capacity_.end());
  first_future_start_.assign(n, kForever);
  first_end_after_now_.assign(n, kForever);
  reserved_now_.assign(n, Resources{});
  first_future_nonreserved_start_.assign(n, kForever);
  kinds_nonreserved_.assign(n, 0);
  kinds_.assign(n, 0);
  kinds_now_.assign(n, 0);
  now_ = now;
  horizon_ = SaturatingAdd(now, std::max<Duration>(0, window));
  resolution_ = std::max<Duration>(1, resolution);
  shared_.assign(shared.begin(), shared.end());
  shared_.resize(n, 0);
  same_tenant_.assign(n, 0);
  node_tenant_.assign(n, kNoTenant);
  version_ = 0;
  node_version_.assign(n, 0);
  negative_blocks_.assign(n, 0);
  any_negative_blocks_ = false;
  active_slots_ = 0;
  for (const Resources& c : capacity_) Activate(c);
  sealed_ = false;
  base_ends_.clear();
  added_ends_.clear();
  dirty_ends_.clear();
  base_first_ends_.clear();
  base_first_built_ = false;
}

void AvailabilityProfile::Activate(const Resources& r) {
  for (int i = kMaxResourceKinds - 1; i >= active_slots_; --i) {
    if (r.amount[i] != 0) {
      active_slots_ = i + 1;
      return;
    }
  }
}

int32_t AvailabilityProfile::InternUsage(const Resources& used) {
  // Most blocks in a row have the same usage (a gang's members, one node each): compare with the
  // last one before hashing.
  if (last_usage_ >= 0 && ResourcesEq()(usages_[last_usage_], used)) return last_usage_;
  const int32_t id = usages_.Intern(used);
  last_usage_ = id;
  if (static_cast<size_t>(id) == usage_nonnegative_.size()) {
    usage_nonnegative_.push_back(!used.AnyNegative());
    Activate(used);
  }
  return id;
}

Time AvailabilityProfile::RoundUp(Time t) const {
  if (t <= now_) return now_;
  if (t >= kForever) return kForever;
  Duration offset = t - now_;
  Duration slots = (offset + resolution_ - 1) / resolution_;
  return now_ + slots * resolution_;
}

void AvailabilityProfile::Summarise(NodeIndex node, const StoredBlock& b) {
  const Resources& used = usages_[b.used];
  // On a shared node the worlds may overlap: no kind bit is ever set, so no kind conflicts.
  const uint8_t kind_bit = shared_[node] ? 0 : KindBit(b.kind);
  if (b.start <= now_ && b.end > now_) {
    free_now_[node] -= used;
    kinds_now_[node] |= kind_bit;
  }
  if (b.start > now_) first_future_start_[node] = std::min(first_future_start_[node], b.start);
  if (b.end > now_) first_end_after_now_[node] = std::min(first_end_after_now_[node], b.end);
  kinds_[node] |= kind_bit;
  if (same_tenant_[node] && b.tenant != kNoTenant) {
    int16_t& t = node_tenant_[node];
    t = t == kNoTenant || t == b.tenant ? b.tenant : kMixedTenants;
  }
  if (b.reservation) {
    if (b.start <= now_ && b.end > now_) reserved_now_[node] += used;
  } else {
    kinds_nonreserved_[node] |= kind_bit;
    if (b.start > now_) {
      first_future_nonreserved_start_[node] = std::min(first_future_nonreserved_start_[node], b.start);
    }
  }
}

void AvailabilityProfile::Add(NodeIndex node, const Block& block) {
  const StoredBlock stored{block.start, block.end, InternUsage(block.used), block.kind, block.reservation,
                           block.tenant};
  // Kept sorted by start (ties in insertion order): CopiesSlow stops at the first block that
  // starts after its interval. Every query is independent of the order of a node's blocks.
  std::vector<StoredBlock>& blocks = blocks_[node];
  if (blocks.empty() || blocks.back().start <= stored.start) {
    blocks.push_back(stored);
  } else {
    blocks.insert(std::upper_bound(blocks.begin(), blocks.end(), stored.start,
                                   [](Time t, const StoredBlock& b) { return t < b.start; }),
                  stored);
  }
  Summarise(node, stored);
  if (!usage_nonnegative_[stored.used]) {
    negative_blocks_[node] = 1;
    any_negative_blocks_ = true;
  }
  if (block.end < kForever && block.end > now_) {
    if (sealed_) {
      EndGroup& group = added_ends_[block.end];
      if (group.sorted == group.nodes.size()) dirty_ends_.push_back(block.end);
      group.nodes.push_back(node);
    } else {
      base_ends_.emplace_back(block.end, node);
    }
  }
  ++version_;
  ++node_version_[node];
}

void AvailabilityProfile::ResummariseAfterRemove(NodeIndex node, const Block& removed) {
  // The sums active at now lose the block's usage (integers: the same as summing the rest again);
  // the times, kind bits and tenant are found again from the remaining blocks (a node holds a few).
  if (removed.start <= now_ && removed.end > now_) {
    free_now_[node] += removed.used;
    if (removed.reservation) reserved_now_[node] -= removed.used;
  }
  Time first_future = kForever;
  Time first_future_nonreserved = kForever;
  Time first_end_after_now = kForever;
  uint8_t kinds = 0, kinds_now = 0, kinds_nonreserved = 0;
  int16_t tenant = kNoTenant;
  const bool shared = shared_[node] != 0;
  const bool same_tenant = same_tenant_[node] != 0;
  for (const StoredBlock& b : blocks_[node]) {
    const uint8_t kind_bit = shared ? 0 : KindBit(b.kind);
    if (b.start <= now_ && b.end > now_) kinds_now |= kind_bit;
    if (b.start > now_) first_future = std::min(first_future, b.start);
    if (b.end > now_) first_end_after_now = std::min(first_end_after_now, b.end);
    kinds |= kind_bit;
    if (same_tenant && b.tenant != kNoTenant) {
      tenant = tenant == kNoTenant || tenant == b.tenant ? b.tenant : kMixedTenants;
    }
    if (!b.reservation) {
      kinds_nonreserved |= kind_bit;
      if (b.start > now_) first_future_nonreserved = std::min(first_future_nonreserved, b.start);
    }
  }
  first_future_start_[node] = first_future;
  first_future_nonreserved_start_[node] = first_future_nonreserved;
  first_end_after_now_[node] = first_end_after_now;
  kinds_[node] = kinds;
  kinds_now_[node] = kinds_now;
  kinds_nonreserved_[node] = kinds_nonreserved;
  node_tenant_[node] = tenant;
}

bool AvailabilityProfile::Remove(NodeIndex node, const Block& block) {
  std::vector<StoredBlock>& blocks = blocks_[node];
  auto it = std::find_if(blocks.begin(), blocks.end(), [&](const StoredBlock& b) {
    return b.start == block.start && b.end == block.end && b.kind == block.kind &&
           b.reservation == block.reservation && b.tenant == block.tenant && usages_[b.used] == block.used;
  });
  if (it == blocks.end()) return false;
  blocks.erase(it);
  ResummariseAfterRemove(node, block);
  // Its end stops being a moment at which the node frees, unless another block ends then too.
  const bool end_still_there = std::any_of(blocks.begin(), blocks.end(),
                                           [&](const StoredBlock& b) { return b.end == block.end; });
  if (block.end < kForever && block.end > now_ && !end_still_there) {
    if (sealed_) {
      auto g = added_ends_.find(block.end);
      if (g != added_ends_.end()) {
        std::vector<NodeIndex>& nodes = g->second.nodes;
        // The sorted part is distinct: one binary search there; the unsorted tail (appended
        // since the last sort) may hold the node any number of times.
        const auto sorted_end = nodes.begin() + static_cast<std::ptrdiff_t>(g->second.sorted);
        const auto tail = std::remove(sorted_end, nodes.end(), node);
        nodes.erase(tail, nodes.end());
        const auto in_sorted = std::lower_bound(nodes.begin(), nodes.begin() + static_cast<std::ptrdiff_t>(g->second.sorted), node);
        if (in_sorted != nodes.begin() + static_cast<std::ptrdiff_t>(g->second.sorted) && *in_sorted == node) {
          nodes.erase(in_sorted);
          --g->second.sorted;
        }
        if (nodes.empty()) added_ends_.erase(g);  // a stale dirty_ends_ entry is skipped
      }
    } else {
      std::erase(base_ends_, std::make_pair(block.end, node));
    }
  }
  ++version_;
  ++node_version_[node];
  return true;
}

void AvailabilityProfile::BuildBaseFirstEnds() const {
  base_first_ends_.clear();
  std::vector<char> seen(capacity_.size(), 0);
  auto a = std::upper_bound(base_ends_.begin(), base_ends_.end(),
                            std::make_pair(now_, std::numeric_limits<NodeIndex>::max()));
  for (; a != base_ends_.end(); ++a) {
    const NodeIndex n = a->second;
    if (n >= 0 && static_cast<size_t>(n) < seen.size()) {
      if (seen[n]) continue;
      seen[n] = 1;
    }
    base_first_ends_.push_back(*a);
  }
  base_first_built_ = true;
}

void AvailabilityProfile::SealBase() {
  base_first_built_ = false;
  // A few hundred ends (a trace replay's 128 processors) sort faster than the radix passes below
  // clear their 2,048 counters: as the same 64-bit keys, which compare in one instruction.
  if (base_ends_.size() < 512) {
    SortFewEnds();
    sealed_ = true;
    return;
  }
  // LSD radix sort of (end - now, node) packed in 64 bits: ~25,000 running blocks per cycle,
  // where std::sort took ~5 % of a cycle. Digits equal in every key (the high bits) are skipped.
  std::vector<uint64_t> keys(base_ends_.size()), scratch(base_ends_.size());
  bool packable = true;
  for (size_t i = 0; i < base_ends_.size(); ++i) {
    const auto& [end, node] = base_ends_[i];
    const uint64_t offset = static_cast<uint64_t>(end - now_);  // > 0: only ends after now are kept
    if (offset >= (uint64_t{1} << 32) || node < 0) packable = false;
    keys[i] = (offset << 32) | static_cast<uint32_t>(node);
  }
  if (!packable) {
    std::sort(base_ends_.begin(), base_ends_.end());
  } else {
    constexpr int kBits = 11;
    constexpr uint32_t kBuckets = 1u << kBits;
    std::vector<uint32_t> count(kBuckets + 1);
    for (int shift = 0; shift < 64 && keys.size() > 1; shift += kBits) {
      auto digit = [&](uint64_t k) { return static_cast<uint32_t>((k >> shift) & (kBuckets - 1)); };
      std::fill(count.begin(), count.end(), 0);
      for (uint64_t k : keys) ++count[digit(k) + 1];
      if (count[digit(keys[0]) + 1] == keys.size()) continue;
      for (size_t d = 0; d < kBuckets; ++d) count[d + 1] += count[d];
      for (uint64_t k : keys) scratch[count[digit(k)]++] = k;
      keys.swap(scratch);
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      base_ends_[i] = {now_ + static_cast<Time>(keys[i] >> 32), static_cast<NodeIndex>(keys[i] & 0xffffffffu)};
    }
  }
  sealed_ = true;
}

void AvailabilityProfile::SortFewEnds() {
  std::array<uint64_t, 512> keys;
  for (size_t i = 0; i < base_ends_.size(); ++i) {
    const auto& [end, node] = base_ends_[i];
    const uint64_t offset = static_cast<uint64_t>(end - now_);  // > 0: only ends after now are kept
    if (offset >= (uint64_t{1} << 32) || node < 0) {  // not packable: pairs
      std::sort(base_ends_.begin(), base_ends_.end());
      return;
    }
    keys[i] = (offset << 32) | static_cast<uint32_t>(node);
  }
  std::sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(base_ends_.size()));
  for (size_t i = 0; i < base_ends_.size(); ++i) {
    base_ends_[i] = {now_ + static_cast<Time>(keys[i] >> 32), static_cast<NodeIndex>(keys[i] & 0xffffffffu)};
  }
}

void AvailabilityProfile::SortAddedEnds() const {
  for (Time end : dirty_ends_) {
    auto found = added_ends_.find(end);
    if (found == added_ends_.end()) continue;  // emptied by Remove
    EndGroup& group = found->second;
    auto middle = group.nodes.begin() + static_cast<std::ptrdiff_t>(group.sorted);
    std::sort(middle, group.nodes.end());
    std::inplace_merge(group.nodes.begin(), middle, group.nodes.end());
    group.nodes.erase(std::unique(group.nodes.begin(), group.nodes.end()), group.nodes.end());
    group.sorted = group.nodes.size();
  }
  dirty_ends_.clear();
}

namespace {
// !(capacity - used).Covers(request), slot by slot without building the difference: on a
// one-processor node the first slot (cpu) already answers. Slots from `slots` on are 0 in all
// three (AvailabilityProfile::active_slots_), so they cannot answer.
bool LeavesNoRoom(const Resources& capacity, const Resources& used, const Resources& request, int slots) {
  for (int i = 0; i < slots; ++i) {
    if (request.amount[i] > capacity.amount[i] - used.amount[i]) return true;
  }
  return false;
}

// Resources::CopiesOf over the first `slots` slots (the others are 0 in both vectors).
int64_t CopiesWithin(const Resources& free, const Resources& request, int64_t cap, int slots) {
  return free.CopiesOf(request, cap, slots);
}

// True when `request` asks nothing from slot `slots` on (a compare with zeros: libc's memcmp
// takes 32 bytes a step where the loop took one slot).
bool AsksOnlyWithin(const Resources& request, int slots) {
  static constexpr std::array<int64_t, kMaxResourceKinds> kZeros{};
  return std::memcmp(request.amount.data() + slots, kZeros.data(),
                     sizeof(int64_t) * static_cast<size_t>(kMaxResourceKinds - slots)) == 0;
}
}  // namespace

int AvailabilityProfile::SlotsFor(const Resources& request) const {
  return AsksOnlyWithin(request, active_slots_) ? active_slots_ : kMaxResourceKinds;
}

int64_t AvailabilityProfile::CopiesSlow(NodeIndex node, Time start, Time end,
                                        const Resources& request, WorkloadKind kind, int64_t cap,
                                        bool ignore_reservations, int16_t tenant, int slots,
                                        NoRoomSpan* blocked_span) const {
  if (start < now_) start = now_;
  if (end <= start) return cap;
  // A 0 names instants that have no room (Copies' contract): those a block of another world or
  // tenant is active at (any interval through one meets the block), or, when every block of the
  // node is >= 0, those whose active blocks leave no room (any interval through such an instant
  // sweeps its own start or the latest start among those blocks, where at least they are active):
  // a block that alone leaves no room, its whole span.
  const bool sums_hold = !negative_blocks_[node] && !ignore_reservations;
  auto blocked = [&](Time from, Time to, bool any_usage, int64_t copies = 0) {
    if (blocked_span != nullptr && copies <= 0) {
      *blocked_span = any_usage || sums_hold ? NoRoomSpan{from, to} : NoRoomSpan{};
    }
    return copies;
  };
  // Always 0 on shared nodes; and no block of another tenant (always off same-tenant nodes).
  const bool kinds_ok = (kinds_[node] & ~KindBit(kind)) == 0 && TenantFits(node, tenant);
  // Fast path: starting now and ending before any future block starts: the tightest moment is
  // now (blocks active now only end later), so free_now answers it.
  if (start == now_ && end <= first_future_start_[node] && kinds_ok && !ignore_reservations) {
    return blocked(now_, now_ + 1, false, free_now_[node].CopiesOf(request, cap));
  }
  // The same without reservations: the other blocks active at now only end later either.
  if (ignore_reservations && start == now_ && end <= first_future_nonreserved_start_[node] &&
      (kinds_nonreserved_[node] & ~KindBit(kind)) == 0 && TenantFits(node, tenant)) {
    return blocked(now_, now_ + 1, false, (free_now_[node] + reserved_now_[node]).CopiesOf(request, cap));
  }
  const std::vector<StoredBlock>& blocks = blocks_[node];
  if (slots < 0) slots = SlotsFor(request);
  // Only the blocks overlapping [start, end) matter: gather them once (a node may hold many
  // reservations spread over the window), then sweep the moments where usage can rise: `start`
  // and every block start inside the interval.
  absl::InlinedVector<const StoredBlock*, 16> overlapping;
  for (const StoredBlock& b : blocks) {
    if (b.start >= end) break;  // sorted by start: no later block overlaps either
    if (ignore_reservations && b.reservation) continue;
    if (start < b.end) {
      if (!shared_[node] && b.kind != kind) return blocked(b.start, b.end, true);
      // Issue 25: a block of another tenant on a same-tenant node leaves no room while it lasts.
      if (same_tenant_[node] && b.tenant != kNoTenant && b.tenant != tenant) {
        return blocked(b.start, b.end, true);
      }
      // The block is active at max(start, b.start), inside the interval: when its usage alone
      // (the others' being >= 0) leaves no room for one copy, none fits (the answer of the
      // sweep below, found without it; on one-processor nodes the common case).
      if (b.start < b.end && usage_nonnegative_[b.used] && LeavesNoRoom(capacity_[node], usages_[b.used], request, slots)) {
        return blocked(b.start, b.end, false);
      }
      overlapping.push_back(&b);
    }
  }
  if (overlapping.empty()) return blocked(now_, kForever, false, CopiesWithin(capacity_[node], request, cap, slots));
  auto copies_at = [&](Time p) {
    Resources free = capacity_[node];
    for (const StoredBlock* b : overlapping) {
      if (b->start <= p && p < b->end) {
        const Resources& used = usages_[b->used];
        for (int i = 0; i < slots; ++i) free.amount[i] -= used.amount[i];
      }
    }
    return CopiesWithin(free, request, cap, slots);
  };
  // At now the blocks active are those free_now_ sums already (a node runs a dozen workloads):
  // the same integers, summed once per Add instead of once per question.
  int64_t copies = start == now_ && !ignore_reservations ? free_now_[node].CopiesOf(request, cap, slots)
                                                         : copies_at(start);
  if (copies == 0) return blocked(start, start + 1, false);
  for (const StoredBlock* b : overlapping) {
    if (b->start > start) {
      copies = std::min(copies, copies_at(b->start));
      if (copies == 0) return blocked(b->start, b->start + 1, false);
    }
  }
  return copies;
}

Time AvailabilityProfile::AvailTimeFirst(NodeIndex node, Time on_or_after, Duration duration,
                                         const Resources& request, WorkloadKind kind, int16_t tenant) const {
  // Candidates: on_or_after and every block end after it (usage only falls at block ends).
  Time first = RoundUp(std::max(on_or_after, now_));
  if (first > horizon_) return kForever;
  if (Copies(node, first, SaturatingAdd(first, duration), request, kind, 1, false, tenant) > 0) return first;
  std::vector<Time> candidates;
  for (const StoredBlock& b : blocks_[node]) {
    if (b.end > first && b.end <= horizon_) candidates.push_back(RoundUp(b.end));
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (Time t : candidates) {
    if (t > horizon_) break;
    if (Copies(node, t, SaturatingAdd(t, duration), request, kind, 1, false, tenant) > 0) return t;
  }
  return kForever;
}

bool AvailabilityProfile::FitsSometime(NodeIndex node, Time first, Duration duration, const Resources& request,
                                       WorkloadKind kind, int16_t tenant, int slots) const {
  if (first > horizon_) return false;
  if (Copies(node, first, SaturatingAdd(first, duration), request, kind, 1, false, tenant, slots) > 0) return true;
  // AvailTimeFirst's candidates, each asked once or more (their order does not change the answer).
  for (const StoredBlock& b : blocks_[node]) {
    if (b.end <= first || b.end > horizon_) continue;
    const Time t = RoundUp(b.end);
    if (t <= horizon_ && Copies(node, t, SaturatingAdd(t, duration), request, kind, 1, false, tenant, slots) > 0) {
      return true;
    }
  }
  return false;
}

}  // namespace onequeue::queue

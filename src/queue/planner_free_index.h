#pragma once
// The free-capacity index of the planner (internal to src/queue): which nodes have at least a
// given amount of one resource free now, per workload kind. Header-only: Update and
// ForEachWithAtLeast run once per node in the cycle pass's hot loops and must stay inlinable.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "queue/model.h"
#include "queue/profile.h"
#include "queue/resources.h"

namespace onequeue::queue::internal {


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
      // Emptied in place: a planner builds its index again every cycle.
      k.buckets.resize(static_cast<size_t>(std::min<int64_t>(max_units, 4096)) + 1);
      for (std::vector<NodeIndex>& b : k.buckets) b.clear();
      k.live.assign(k.buckets.size(), 0);
      k.stale.assign(k.buckets.size(), 0);
      k.bucket_of.assign(p.size(), -1);
      k.grew.assign(p.size(), 0);
    }
    // Every list is empty and no node is in one: each node goes straight to its bucket (Update's
    // search of the bucket for a stale entry of the node, a walk of the whole list, finds none).
    for (int kind = 0; kind < 2; ++kind) {
      PerKind& k = kinds_[kind];
      for (NodeIndex n = 0; n < static_cast<NodeIndex>(p.size()); ++n) {
        const int32_t b = BucketNow(k, n, p, static_cast<WorkloadKind>(kind));
        k.bucket_of[n] = b;
        if (b >= 0) {
          k.buckets[b].push_back(n);
          ++k.live[b];
        }
      }
    }
  }
  void Update(NodeIndex n, const AvailabilityProfile& p) {
    for (int kind = 0; kind < 2; ++kind) {
      PerKind& k = kinds_[kind];
      const int32_t b = BucketNow(k, n, p, static_cast<WorkloadKind>(kind));
      if (b == k.bucket_of[n]) continue;
      if (k.bucket_of[n] >= 0) {
        --k.live[k.bucket_of[n]];
        ++k.stale[k.bucket_of[n]];
      }
      if (b > k.bucket_of[n]) k.grew[n] = 1;
      if (b >= 0 && k.grew[n]) {
        // The node's free capacity grew this cycle (a promise's placeholder was taken back): it
        // may have left bucket b before, growing or shrinking back into it now, and its stale
        // entry there would come alive twice. Only such nodes pay for the search of the list.
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
    std::vector<uint8_t> grew;  // per node: its free capacity grew since Build (see Update)
  };
  // The bucket node n belongs in now for `kind`, or -1 (none free, or the other world runs there:
  // a node running the other world's workload now cannot take this kind now).
  int32_t BucketNow(const PerKind& k, NodeIndex n, const AvailabilityProfile& p, WorkloadKind kind) const {
    const int64_t free = p.FreeNow(n)[slot_];
    return free <= 0 || p.OtherKindNow(n, kind) ? -1 : Bucket(k, free);
  }
  int32_t Bucket(const PerKind& k, int64_t amount) const {
    return static_cast<int32_t>(std::min<int64_t>(amount / unit_, static_cast<int64_t>(k.buckets.size()) - 1));
  }
  int slot_ = kCpu;
  int64_t unit_ = 1000;
  std::array<PerKind, 2> kinds_;
};

}  // namespace onequeue::queue::internal

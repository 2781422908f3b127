#pragma once
// Multifactor priority, like Slurm's priority/multifactor: a weighted sum of factors, each
// normalised to [0, 1]. See docs/queue.md "Priority" for each factor's definition.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "queue/model.h"
#include "queue/plan.h"

namespace onequeue::queue {

// Fair-share factor per account, Slurm's classic formula F = 2^(-U/S):
//   U = the account subtree's usage decayed by the half-life to `now`, divided by all usage;
//   S = the account's normalised shares: its shares among its siblings, times its parent's S.
// An account absent from the tree gets F = 0 (it has no shares). Deterministic: the same history,
// tree and `now` give the same factors (records are summed in a fixed order).
absl::flat_hash_map<std::string, double> ComputeFairShare(const QueueConfig& config,
                                                          const UsageHistory& usage, Time now);

// Name -> value for the small tables of a config (QOS, partitions, accounts), looked up for
// every pending workload of every cycle (100,000 of them). Open addressing on a key made of the
// name's length and first 8 bytes (read without a library call), which decides names of up to 8
// characters without a string compare: ~25 instructions a lookup where hashing the name with
// absl::Hash and comparing it took ~125 (callgrind, the 20 accounts of queue_bench).
template <typename T>
class NameTable {
 public:
  void Set(const std::string& name, T value) {
    if (const T* existing = Find(name)) {
      values_[static_cast<size_t>(existing - values_.data())] = value;
      return;
    }
    names_.push_back(name);
    values_.push_back(value);
    heads_.push_back(Head(name));
    if (2 * names_.size() > slots_.size()) {
      slots_.assign(std::bit_ceil(std::max<size_t>(8, 4 * names_.size())), -1);
      shift_ = 64 - std::countr_zero(slots_.size());
      for (size_t i = 0; i < names_.size(); ++i) Place(static_cast<int32_t>(i));
    } else {
      Place(static_cast<int32_t>(names_.size() - 1));
    }
  }
  const T* Find(std::string_view name) const {
    if (slots_.empty()) return nullptr;
    const Key k = Head(name);
    for (size_t s = Slot(k);; s = (s + 1) & (slots_.size() - 1)) {
      const int32_t i = slots_[s];
      if (i < 0) return nullptr;
      if (heads_[i] == k && (k.size <= 8 || name.substr(8) == std::string_view(names_[i]).substr(8))) {
        return &values_[i];
      }
    }
  }

 private:
  struct Key {
    uint64_t prefix;
    uint64_t size;
    friend bool operator==(const Key&, const Key&) = default;
  };
  // Names of 4-7 bytes by two overlapping 4-byte loads (the length is part of the key, so the
  // overlap is unambiguous); 8 and more by their first 8 bytes (the rest compared on a match).
  static Key Head(std::string_view name) {
    const char* p = name.data();
    const size_t n = name.size();
    uint64_t v = 0;
    if (n >= 8) {
      std::memcpy(&v, p, 8);
    } else if (n >= 4) {
      uint32_t lo, hi;
      std::memcpy(&lo, p, 4);
      std::memcpy(&hi, p + n - 4, 4);
      v = lo | (static_cast<uint64_t>(hi) << 32);
    } else {
      for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    return {v, n};
  }
  size_t Slot(const Key& k) const {
    // Fibonacci hashing on the top bits; the fold first brings the prefix's top bytes down
    // (names often differ in their last byte only), which a multiplication never carries down.
    uint64_t h = k.prefix + k.size;
    h ^= h >> 32;
    return static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void Place(int32_t i) {
    size_t s = Slot(heads_[i]);
    while (slots_[s] >= 0) s = (s + 1) & (slots_.size() - 1);
    slots_[s] = i;
  }
  std::vector<std::string> names_;
  std::vector<T> values_;
  std::vector<Key> heads_;
  std::vector<int32_t> slots_;  // power of two, at most half full; -1 = empty
  int shift_ = 64;              // 64 - log2(slots_.size())
};

// The part of ComputeFairShare that depends on the account tree alone (normalised shares, each
// account's chain to the root, names to numbers). A QueuePlanner builds it once, from its
// configuration, which never changes, and each cycle then only sums the usage (issue 27: the
// per-cycle string maps were 12 % of the default policy's replay). Factors answers exactly what
// ComputeFairShare does: the same sums in the same order.
class FairShareTree {
 public:
  explicit FairShareTree(const QueueConfig& config);
  // factors[i]: the fair-share factor of config.accounts[i] for this usage at `now`.
  void Factors(const UsageHistory& usage, Time now, std::vector<double>& factors) const;
  // The number of an account (the last of that name in config.accounts), null when none.
  const int32_t* Find(std::string_view name) const { return number_.Find(name); }
  size_t size() const { return norm_shares_.size(); }

 private:
  Duration half_life_;
  std::vector<double> norm_shares_;                 // per account
  std::vector<std::vector<int32_t>> chain_;         // per account: itself and its ancestors, up
  NameTable<int32_t> number_;                       // name -> account number
  // Scratch of Factors, kept so a cycle allocates nothing: one caller at a time (a planner's).
  mutable std::vector<double> own_, subtree_;
  mutable std::vector<int32_t> order_;  // accounts by first appearance among the records
  mutable std::vector<char> seen_;
};

class PriorityCalculator {
 public:
  // `pool_total`: the sum of allocatable over the pool (for the job-size factor).
  PriorityCalculator(const QueueConfig& config, const UsageHistory& usage,
                     const Resources& pool_total, Time now);
  // The same with the account tree built already (`tree` was built from `config` and outlives
  // the calculator).
  PriorityCalculator(const QueueConfig& config, const FairShareTree& tree, const UsageHistory& usage,
                     const Resources& pool_total, Time now);

  // qos (optional): set to the workload's QOS policy (null when none or unknown), which the
  // planner needs too and this looks up anyway.
  PriorityBreakdown Compute(const PendingWorkload& workload, const QosPolicy** qos = nullptr) const;

  // QOS lookups shared with the planner.
  const QosPolicy* FindQos(const std::string& name) const;

 private:
  void Init(const UsageHistory& usage);  // the factors; the tables of the QOS and partitions
  const QueueConfig& config_;
  Resources pool_total_;
  // (slot, 1 / pool total) for the slots the size factor looks at (not pods, not empty ones).
  std::vector<std::pair<int, double>> inverse_pool_total_;
  Time now_;
  std::unique_ptr<FairShareTree> own_tree_;  // when not given one
  const FairShareTree* tree_;
  std::vector<double> fair_share_;  // per account number of tree_
  struct QosEntry {
    const QosPolicy* policy;
    double factor;  // priority / the largest QOS priority
  };
  NameTable<QosEntry> qos_;
  NameTable<double> partition_factor_;  // PriorityTier / the largest tier
  double max_qos_priority_ = 0;
};

// Strict queue order: higher priority first, then earlier submit, then id (total order, so the
// plan is deterministic).
struct QueueOrderKey {
  double priority;
  Time submit_time;
  const std::string* id;
};
inline bool ComesBefore(const QueueOrderKey& a, const QueueOrderKey& b) {
  if (a.priority != b.priority) return a.priority > b.priority;
  if (a.submit_time != b.submit_time) return a.submit_time < b.submit_time;
  return *a.id < *b.id;
}

// Indices 0..n-1 of `keys` in queue order (ComesBefore). An LSD radix sort on the priority,
// 11 bits at a time; submit times and ids only break ties. For 100,000 workloads: 5.4 ms
// against 13.9 ms for std::sort with ComesBefore (queue_bench BM_QueueOrder).
// Returns the keys' priority and submit time beside each index, so a caller need not look them
// up again at random.
struct SortedQueueKey {
  double priority;
  Time submit_time;
  int32_t index;
};
std::vector<SortedQueueKey> SortByQueueOrder(const std::vector<QueueOrderKey>& keys);

}  // namespace onequeue::queue

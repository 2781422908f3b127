#include "queue/priority.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cmath>
#include <string_view>
#include <vector>

namespace onequeue::queue {
namespace {

double Clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// 2^(-age/half_life): the weight of usage that finished `age` seconds ago.
double DecayWeight(Duration age, Duration half_life) {
  if (half_life <= 0) return 1.0;  // no decay configured
  if (age <= 0) return 1.0;
  return std::exp2(-static_cast<double>(age) / static_cast<double>(half_life));
}

}  // namespace

FairShareTree::FairShareTree(const QueueConfig& config) : half_life_(config.usage_half_life) {
  const std::vector<Account>& accounts = config.accounts;
  // Accounts by name (the last of a name), and the sum of sibling shares per parent (root = "").
  absl::flat_hash_map<std::string, int32_t> by_name;
  for (size_t i = 0; i < accounts.size(); ++i) by_name[accounts[i].name] = static_cast<int32_t>(i);
  absl::flat_hash_map<std::string, double> sibling_shares;
  for (const Account& a : accounts) sibling_shares[a.parent] += std::max(0.0, a.shares);
  for (const auto& [name, i] : by_name) number_.Set(name, i);
  // Normalised shares S: product of share fractions from the root down; an unknown ancestor
  // gives 0. Cycles in the tree are rejected by ValidateConfig, the depth guard only protects
  // against misuse. The chain: the account and its known ancestors, as the usage climbs them.
  norm_shares_.resize(accounts.size());
  chain_.resize(accounts.size());
  for (size_t i = 0; i < accounts.size(); ++i) {
    double s = 1.0;
    std::string cur = accounts[i].name;
    for (int depth = 0; depth < 64 && !cur.empty(); ++depth) {
      auto it = by_name.find(cur);
      if (it == by_name.end()) {
        s = 0.0;
        break;
      }
      const Account& a = accounts[it->second];
      chain_[i].push_back(it->second);
      const double total = sibling_shares[a.parent];
      s *= total > 0 ? std::max(0.0, a.shares) / total : 0.0;
      cur = a.parent;
    }
    norm_shares_[i] = s;
  }
}

void FairShareTree::Factors(const UsageHistory& usage, Time now, std::vector<double>& factors) const {
  const size_t n = norm_shares_.size();
  // Decayed usage per account, in the records' order (a deterministic sum), then charged to the
  // account and each of its ancestors (subtree usage), accounts by first appearance.
  own_.assign(n, 0.0);
  subtree_.assign(n, 0.0);
  seen_.assign(n, 0);
  order_.clear();
  double total_usage = 0;
  for (const UsageRecord& r : usage.records) {
    const double u = r.amount * DecayWeight(now - r.time, half_life_);
    if (u <= 0) continue;
    total_usage += u;
    const int32_t* k = number_.Find(r.account);
    if (k == nullptr) continue;  // no account of the tree: counts in the total only
    if (!seen_[*k]) {
      seen_[*k] = 1;
      order_.push_back(*k);
    }
    own_[*k] += u;
  }
  for (const int32_t k : order_) {
    for (const int32_t j : chain_[k]) subtree_[j] += own_[k];
  }
  factors.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double s = norm_shares_[i];
    if (s <= 0) continue;
    // chain_[i][0] is the account's own number (the last of its name); an empty name has none.
    const double own_subtree = chain_[i].empty() ? 0.0 : subtree_[chain_[i][0]];
    const double u = total_usage > 0 ? own_subtree / total_usage : 0.0;
    factors[i] = Clamp01(std::exp2(-u / s));
  }
}

absl::flat_hash_map<std::string, double> ComputeFairShare(const QueueConfig& config,
                                                          const UsageHistory& usage, Time now) {
  const FairShareTree tree(config);
  std::vector<double> factors;
  tree.Factors(usage, now, factors);
  absl::flat_hash_map<std::string, double> out;
  for (size_t i = 0; i < config.accounts.size(); ++i) out[config.accounts[i].name] = factors[i];
  return out;
}

PriorityCalculator::PriorityCalculator(const QueueConfig& config, const UsageHistory& usage,
                                       const Resources& pool_total, Time now)
    : config_(config),
      pool_total_(pool_total),
      now_(now),
      own_tree_(std::make_unique<FairShareTree>(config)),
      tree_(own_tree_.get()) {
  Init(usage);
}

PriorityCalculator::PriorityCalculator(const QueueConfig& config, const FairShareTree& tree,
                                       const UsageHistory& usage, const Resources& pool_total, Time now)
    : config_(config), pool_total_(pool_total), now_(now), tree_(&tree) {
  Init(usage);
}

void PriorityCalculator::Init(const UsageHistory& usage) {
  const QueueConfig& config = config_;
  tree_->Factors(usage, now_, fair_share_);
  for (int i = 0; i < kMaxResourceKinds; ++i) {
    if (i != kPods && pool_total_[i] > 0) {
      inverse_pool_total_.emplace_back(i, 1.0 / static_cast<double>(pool_total_[i]));
    }
  }
  // The QOS and partition factors are per table entry: computed here once, not per workload.
  for (const QosPolicy& q : config.qos) {
    max_qos_priority_ = std::max(max_qos_priority_, static_cast<double>(q.priority));
  }
  for (const QosPolicy& q : config.qos) {
    qos_.Set(q.name, QosEntry{&q, max_qos_priority_ > 0
                                      ? Clamp01(static_cast<double>(q.priority) / max_qos_priority_)
                                      : 0.0});
  }
  double max_partition_tier = 0;
  for (const Partition& p : config.partitions) {
    max_partition_tier = std::max(max_partition_tier, static_cast<double>(p.tier));
  }
  for (const Partition& p : config.partitions) {
    partition_factor_.Set(p.name, max_partition_tier > 0
                                      ? Clamp01(static_cast<double>(p.tier) / max_partition_tier)
                                      : 0.0);
  }
}

const QosPolicy* PriorityCalculator::FindQos(const std::string& name) const {
  const QosEntry* q = qos_.Find(name);
  return q == nullptr ? nullptr : q->policy;
}

PriorityBreakdown PriorityCalculator::Compute(const PendingWorkload& w, const QosPolicy** qos) const {
  PriorityBreakdown b;
  // Age: time waited, saturating at max_age (Slurm's PriorityMaxAge).
  if (config_.max_age > 0) {
    b.age = Clamp01(static_cast<double>(now_ - w.submit_time) / static_cast<double>(config_.max_age));
  }
  // Fair-share: 2^(-U/S) of the workload's account (0 when the account is unknown).
  if (const int32_t* k = tree_->Find(w.account)) b.fair_share = fair_share_[*k];
  // Job size: the dominant share of the pool the whole workload asks for (favours large
  // workloads, like Slurm's default PriorityFavorSmall=NO).
  const double members = static_cast<double>(std::max<int32_t>(1, w.members));
  double dominant = 0;
  for (const auto& [slot, inverse] : inverse_pool_total_) {
    dominant = std::max(dominant, static_cast<double>(w.per_member[slot]) * members * inverse);
  }
  b.job_size = Clamp01(dominant);
  // Partition: PriorityTier / largest tier.
  if (const double* factor = partition_factor_.Find(w.partition)) b.partition = *factor;
  // QOS: the QOS priority / largest QOS priority; a pod without a QOS but with a PriorityClass
  // maps its value onto the same scale: clamp(value / priority_class_max).
  const QosEntry* q = w.qos.empty() ? nullptr : qos_.Find(w.qos);
  if (qos != nullptr) *qos = q == nullptr ? nullptr : q->policy;
  if (q != nullptr && max_qos_priority_ > 0) {
    b.qos = q->factor;
  } else if (w.qos.empty() && w.priority_class_value.has_value() && config_.priority_class_max > 0) {
    b.qos = Clamp01(static_cast<double>(*w.priority_class_value) / config_.priority_class_max);
  }
  const PriorityWeights& wt = config_.weights;
  b.total = wt.age * b.age + wt.fair_share * b.fair_share + wt.job_size * b.job_size +
            wt.partition * b.partition + wt.qos * b.qos;
  if (StarvingToFront(config_.starvation_remedy)) {
    const Duration duration = w.time_limit.has_value() ? std::max<Duration>(1, *w.time_limit) : kForever;
    // The width scale shortens a wide workload's bounds (its job-size factor, whatever the weight).
    const double bound = StarvationBoundOf(config_, duration, b.job_size);
    const double waited = static_cast<double>(now_ - w.submit_time);
    if (waited >= bound) {
      // Oldest first, or (kFirstStarved) the longest past its bound first: whole seconds, exact.
      const bool first_starved = config_.starving_order == QueueConfig::StarvingOrder::kFirstStarved;
      b.total = kStarvingFront + (first_starved ? std::floor(waited - bound) : waited);
    }
  }
  return b;
}

namespace {

constexpr size_t kDirectSortMax = 64;

std::vector<SortedQueueKey> SortDirectly(const std::vector<QueueOrderKey>& keys) {
  std::vector<int32_t> index(keys.size());
  for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int32_t>(i);
  std::sort(index.begin(), index.end(), [&](int32_t x, int32_t y) {
    if (ComesBefore(keys[x], keys[y])) return true;
    return !ComesBefore(keys[y], keys[x]) && x < y;
  });
  std::vector<SortedQueueKey> order(index.size());
  for (size_t i = 0; i < index.size(); ++i) {
    const QueueOrderKey& k = keys[index[i]];
    order[i] = SortedQueueKey{k.priority, k.submit_time, index[i]};
  }
  return order;
}

}  // namespace

std::vector<SortedQueueKey> SortByQueueOrder(const std::vector<QueueOrderKey>& keys) {
  // Radix sort on the upper 32 bits of the priority's order-preserving integer image (three
  // passes instead of six for all 64), then runs with equal upper bits (few and short: they
  // agree to ~7 significant digits) are finished by the full comparison.
  struct Record {
    uint32_t key;  // upper bits of the priority image: unsigned ascending = priority descending
    int32_t index;
  };
  const size_t n = keys.size();
  // A short queue (the replays' cycles hold ~16 workloads) sorts directly: the radix passes clear
  // 2,048 counters each, ~50,000 instructions a cycle for nothing. The same total order (ties of
  // equal keys by index), so the same result for distinct ids. NaN priorities take the radix path.
  if (n <= kDirectSortMax && std::none_of(keys.begin(), keys.end(), [](const QueueOrderKey& k) {
        return std::isnan(k.priority);
      })) {
    return SortDirectly(keys);
  }
  std::vector<Record> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    const double p = keys[i].priority == 0 ? 0.0 : keys[i].priority;  // -0 sorts as 0
    const uint64_t bits = std::bit_cast<uint64_t>(p);
    // IEEE 754: flip every bit of a negative number, only the sign of a positive one; that
    // orders doubles as unsigned integers. Then invert for descending.
    const uint64_t ascending = (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
    a[i] = Record{static_cast<uint32_t>(~ascending >> 32), static_cast<int32_t>(i)};
  }
  // Least significant digit first: stable counting passes of 11 bits (2,048 buckets keep the
  // scatter cache-friendly); a digit equal in every record is skipped.
  constexpr int kBits = 11;
  constexpr uint32_t kBuckets = 1u << kBits;
  std::vector<uint32_t> count(kBuckets + 1);
  for (int shift = 0; shift < 32 && n > 1; shift += kBits) {
    auto digit = [&](const Record& r) { return (r.key >> shift) & (kBuckets - 1); };
    std::fill(count.begin(), count.end(), 0);
    for (const Record& r : a) ++count[digit(r) + 1];
    if (count[digit(a[0]) + 1] == n) continue;
    for (size_t d = 0; d < kBuckets; ++d) count[d + 1] += count[d];
    for (const Record& r : a) b[count[digit(r)]++] = r;
    a.swap(b);
  }
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && a[j].key == a[i].key) ++j;
    if (j - i > 1) {
      std::sort(a.begin() + static_cast<std::ptrdiff_t>(i), a.begin() + static_cast<std::ptrdiff_t>(j),
                [&](const Record& x, const Record& y) { return ComesBefore(keys[x.index], keys[y.index]); });
    }
    i = j;
  }
  std::vector<SortedQueueKey> order(n);
  for (size_t i = 0; i < n; ++i) {
    const QueueOrderKey& k = keys[a[i].index];
    order[i] = SortedQueueKey{k.priority, k.submit_time, a[i].index};
  }
  return order;
}

}  // namespace onequeue::queue

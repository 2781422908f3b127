#include "queue/priority.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "queue/planner.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace onequeue::queue {
namespace {

QueueConfig TwoAccounts() {
  QueueConfig c;
  c.accounts = {{"a", "", 1}, {"b", "", 3}};
  c.usage_half_life = 100;
  return c;
}

TEST(FairShare, NoUsageGivesOne) {
  auto f = ComputeFairShare(TwoAccounts(), {}, 0);
  EXPECT_DOUBLE_EQ(f["a"], 1.0);
  EXPECT_DOUBLE_EQ(f["b"], 1.0);
}

TEST(FairShare, ClassicFormulaWithHalfLife) {
  UsageHistory h;
  h.records = {{"a", 0, 100}, {"b", 100, 100}};
  // At t=100: a's usage decayed to 50, b's is 100; U_a = 1/3, S_a = 1/4 -> 2^(-4/3).
  auto f = ComputeFairShare(TwoAccounts(), h, 100);
  EXPECT_NEAR(f["a"], std::exp2(-(1.0 / 3) / 0.25), 1e-12);
  EXPECT_NEAR(f["b"], std::exp2(-(2.0 / 3) / 0.75), 1e-12);
  EXPECT_DOUBLE_EQ(f["unknown"], 0.0);
}

TEST(FairShare, SubtreeUsageCountsForParent) {
  QueueConfig c;
  c.accounts = {{"dept", "", 1}, {"team", "dept", 1}, {"other", "", 1}};
  UsageHistory h;
  h.records = {{"team", 0, 10}};
  auto f = ComputeFairShare(c, h, 0);
  EXPECT_NEAR(f["dept"], std::exp2(-1.0 / 0.5), 1e-12);
  EXPECT_NEAR(f["team"], std::exp2(-1.0 / 0.5), 1e-12);
  EXPECT_DOUBLE_EQ(f["other"], 1.0);
}

TEST(Priority, FactorsAreNormalised) {
  QueueConfig c = TwoAccounts();
  c.qos = {QosPolicy{.name = "low", .priority = 10}, QosPolicy{.name = "high", .priority = 100}};
  c.partitions = {{"batch", 1}, {"prio", 4}};
  c.max_age = 1000;
  Resources pool;
  pool[kCpu] = 100000;
  PriorityCalculator calc(c, {}, pool, 500);
  PendingWorkload w;
  w.id = "w";
  w.account = "a";
  w.qos = "low";
  w.partition = "batch";
  w.submit_time = 0;
  w.members = 2;
  w.per_member[kCpu] = 25000;
  PriorityBreakdown b = calc.Compute(w);
  EXPECT_DOUBLE_EQ(b.age, 0.5);
  EXPECT_DOUBLE_EQ(b.fair_share, 1.0);
  EXPECT_DOUBLE_EQ(b.job_size, 0.5);
  EXPECT_DOUBLE_EQ(b.partition, 0.25);
  EXPECT_DOUBLE_EQ(b.qos, 0.1);
  EXPECT_DOUBLE_EQ(b.total, 1000 * 0.5 + 10000 * 1.0 + 1000 * 0.5 + 1000 * 0.25 + 10000 * 0.1);
}

TEST(Priority, PriorityClassMapsOntoQosFactor) {
  QueueConfig c;
  c.priority_class_max = 1000;
  PriorityCalculator calc(c, {}, Resources{}, 0);
  PendingWorkload w;
  w.id = "p";
  w.priority_class_value = 250;
  EXPECT_DOUBLE_EQ(calc.Compute(w).qos, 0.25);
  w.priority_class_value = 5000;  // clamped
  EXPECT_DOUBLE_EQ(calc.Compute(w).qos, 1.0);
}

TEST(Priority, AgeSaturatesAndNeverNegative) {
  QueueConfig c;
  c.max_age = 10;
  PriorityCalculator calc(c, {}, Resources{}, 100);
  PendingWorkload w;
  w.id = "x";
  w.submit_time = 0;
  EXPECT_DOUBLE_EQ(calc.Compute(w).age, 1.0);
  w.submit_time = 200;  // clock skew: submitted "in the future"
  EXPECT_DOUBLE_EQ(calc.Compute(w).age, 0.0);
}


// The fair-share factors as ComputeFairShare computed them before the account tree was kept
// across cycles (commit 29ed90b), string maps built every call: the reference the tree must equal
// bit for bit.
double ReferenceDecay(Duration age, Duration half_life) {
  if (half_life <= 0 || age <= 0) return 1.0;
  return std::exp2(-static_cast<double>(age) / static_cast<double>(half_life));
}

absl::flat_hash_map<std::string, double> ReferenceFairShare(const QueueConfig& config,
                                                            const UsageHistory& usage, Time now) {
  // Accounts by name, and each account's chain to the root.
  absl::flat_hash_map<std::string, const Account*> by_name;
  for (const Account& a : config.accounts) by_name[a.name] = &a;

  // Sum of sibling shares per parent (root = "").
  absl::flat_hash_map<std::string, double> sibling_shares;
  for (const Account& a : config.accounts) sibling_shares[a.parent] += std::max(0.0, a.shares);

  // Normalised shares S: product of share fractions from the root down. Memoised; cycles in the
  // tree are rejected by ValidateConfig, the depth guard only protects against misuse.
  absl::flat_hash_map<std::string, double> norm_shares;
  auto shares_of = [&](const std::string& name) {
    double s = 1.0;
    std::string cur = name;
    for (int depth = 0; depth < 64 && !cur.empty(); ++depth) {
      auto it = by_name.find(cur);
      if (it == by_name.end()) return 0.0;
      const Account* a = it->second;
      double total = sibling_shares[a->parent];
      s *= total > 0 ? std::max(0.0, a->shares) / total : 0.0;
      cur = a->parent;
    }
    return s;
  };
  for (const Account& a : config.accounts) norm_shares[a.name] = shares_of(a.name);

  // Decayed usage, charged to the account and each of its ancestors (subtree usage). Records
  // are processed in their given order, which is deterministic for a given history.
  // First per account (one lookup per record, no copy of its name), then up the tree once per
  // account: a cycle over thousands of records of a few accounts costs a few thousand lookups,
  // not a walk with copied names per record.
  absl::flat_hash_map<std::string_view, double> own_usage;
  std::vector<std::string_view> accounts_in_order;  // first appearance: a deterministic sum order
  double total_usage = 0;
  for (const UsageRecord& r : usage.records) {
    double u = r.amount * ReferenceDecay(now - r.time, config.usage_half_life);
    if (u <= 0) continue;
    total_usage += u;
    auto [it, added] = own_usage.try_emplace(r.account, 0.0);
    if (added) accounts_in_order.push_back(r.account);
    it->second += u;
  }
  absl::flat_hash_map<std::string, double> subtree_usage;
  for (std::string_view account : accounts_in_order) {
    const double u = own_usage[account];
    std::string cur(account);
    for (int depth = 0; depth < 64 && !cur.empty(); ++depth) {
      subtree_usage[cur] += u;
      auto it = by_name.find(cur);
      if (it == by_name.end()) break;
      cur = it->second->parent;
    }
  }

  absl::flat_hash_map<std::string, double> factor;
  for (const Account& a : config.accounts) {
    double s = norm_shares[a.name];
    if (s <= 0) {
      factor[a.name] = 0;
      continue;
    }
    double u = total_usage > 0 ? subtree_usage[a.name] / total_usage : 0.0;
    factor[a.name] = std::clamp(std::exp2(-u / s), 0.0, 1.0);
  }
  return factor;
}

// A random account tree (some shares 0, some parents unknown, a name given twice) and a random
// usage history (some records of accounts outside the tree).
QueueConfig RandomTree(std::mt19937& rng) {
  QueueConfig c;
  c.usage_half_life = std::uniform_int_distribution<int>(0, 3)(rng) * 500;
  const int n = std::uniform_int_distribution<int>(1, 12)(rng);
  for (int i = 0; i < n; ++i) {
    Account a;
    a.name = "acct" + std::to_string(i);
    const int p = std::uniform_int_distribution<int>(-2, i - 1)(rng);
    a.parent = p == -2 ? "nobody" : p < 0 ? "" : "acct" + std::to_string(p);
    a.shares = std::uniform_int_distribution<int>(0, 4)(rng);
    c.accounts.push_back(a);
  }
  if (n > 2 && rng() % 4 == 0) c.accounts.push_back(Account{"acct1", "", 2});
  return c;
}

UsageHistory RandomUsage(std::mt19937& rng, int accounts) {
  UsageHistory h;
  const int n = std::uniform_int_distribution<int>(0, 20)(rng);
  for (int i = 0; i < n; ++i) {
    const int a = std::uniform_int_distribution<int>(0, accounts)(rng);  // == accounts: outside
    h.records.push_back(UsageRecord{"acct" + std::to_string(a), std::uniform_int_distribution<int>(0, 5000)(rng),
                                    std::uniform_real_distribution<double>(0, 1000)(rng)});
  }
  return h;
}

TEST(FairShareTree, AnswersWhatTheStringMapsAnsweredBitForBit) {
  std::mt19937 rng(27);
  for (int round = 0; round < 500; ++round) {
    const QueueConfig c = RandomTree(rng);
    const FairShareTree tree(c);  // one tree, many histories: as a planner keeps it
    for (int cycle = 0; cycle < 4; ++cycle) {
      const UsageHistory h = RandomUsage(rng, static_cast<int>(c.accounts.size()));
      const Time now = std::uniform_int_distribution<int>(0, 6000)(rng);
      const auto want = ReferenceFairShare(c, h, now);
      const auto got = ComputeFairShare(c, h, now);
      const PriorityCalculator calc(c, tree, h, Resources{}, now);
      for (const Account& a : c.accounts) {
        EXPECT_EQ(got.at(a.name), want.at(a.name)) << "round " << round << " account " << a.name;
        PendingWorkload w;
        w.account = a.name;
        EXPECT_EQ(calc.Compute(w).fair_share, want.at(a.name)) << "round " << round << " cycle " << cycle;
      }
    }
  }
}

// The planner keeps the account tree across cycles, not the factors: a cycle after the usage
// changed ranks by the new usage.
TEST(FairShareTree, APlannerRanksEachCycleByThatCyclesUsage) {
  QueueConfig c = TwoAccounts();
  c.weights = PriorityWeights{0, 10000, 0, 0, 0};
  QueuePlanner planner(c, nullptr);
  auto snap = std::make_shared<Snapshot>();
  Node node;
  node.name = "n";
  node.allocatable[kCpu] = 1000;
  snap->nodes.push_back(node);
  for (const char* account : {"a", "b"}) {
    PendingWorkload w;
    w.id = std::string("job-") + account;
    w.account = account;
    w.per_member[kCpu] = 2000;  // never fits: both stay pending
    w.time_limit = 60;
    snap->pending.push_back(w);
  }
  for (const char* heavy : {"a", "b", "a"}) {
    snap->usage.records = {UsageRecord{heavy, 0, 100}};
    const Plan plan = planner.PlanCycle(snap, 10);
    const auto want = ComputeFairShare(c, snap->usage, 10);
    ASSERT_EQ(plan.priorities.size(), 2u);
    EXPECT_EQ(plan.priorities[0].fair_share, want.at("a")) << "heavy " << heavy;
    EXPECT_EQ(plan.priorities[1].fair_share, want.at("b")) << "heavy " << heavy;
    EXPECT_LT(plan.priorities[heavy[0] == 'a' ? 0 : 1].fair_share, plan.priorities[heavy[0] == 'a' ? 1 : 0].fair_share);
  }
}

}  // namespace
}  // namespace onequeue::queue

namespace onequeue::queue {
namespace {

// The radix sort of the queue order against the comparator it replaces, with many exact ties
// (equal priority and submit time: ids decide), negative and zero priorities, and large times.
TEST(SortByQueueOrder, MatchesComesBefore) {
  std::mt19937_64 rng(3);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int trial = 0; trial < 200; ++trial) {
    const int n = static_cast<int>(pick(0, 2000));
    std::vector<std::string> ids(n);
    std::vector<QueueOrderKey> keys(n);
    for (int i = 0; i < n; ++i) {
      ids[i] = "w" + std::to_string(pick(0, 1'000'000));
      const int64_t p = pick(0, 10);
      // p == 10: priorities equal in their upper 32 bits, apart in the lower ones only.
      keys[i].priority = p == 0 ? 0.0 : p == 1 ? -0.0 : p == 2 ? -static_cast<double>(pick(1, 5))
                         : p == 10 ? 1000.0 + static_cast<double>(pick(0, 50)) * 1e-10
                                   : static_cast<double>(pick(0, 50)) / 7.0 * (p == 3 ? 1e9 : 1);
      keys[i].submit_time = pick(0, 2) == 0 ? pick(-5, 5) : 1'800'000'000 + pick(0, 30);
      keys[i].id = &ids[i];
    }
    std::vector<int32_t> expected(n);
    for (int i = 0; i < n; ++i) expected[i] = i;
    std::stable_sort(expected.begin(), expected.end(),
                     [&](int32_t a, int32_t b) { return ComesBefore(keys[a], keys[b]); });
    std::vector<SortedQueueKey> got = SortByQueueOrder(keys);
    ASSERT_EQ(got.size(), expected.size());
    for (int i = 0; i < n; ++i) {
      // The keys come back unchanged (-0 as 0) beside their index.
      ASSERT_EQ(got[i].priority, keys[got[i].index].priority);
      ASSERT_EQ(got[i].submit_time, keys[got[i].index].submit_time);
      // Equal ids with equal keys may come in any order: compare the keys at each position.
      const QueueOrderKey& g = keys[got[i].index];
      const QueueOrderKey& e = keys[expected[i]];
      ASSERT_TRUE(!ComesBefore(g, e) && !ComesBefore(e, g)) << "trial " << trial << " position " << i;
    }
  }
}

// Short queues (up to 64 workloads) are sorted directly, longer ones by the radix passes: both
// give the order ComesBefore gives, on either side of the switch, for distinct ids (as a
// snapshot's are), with ties on priority and submit time, zero, -0 and negative priorities.
TEST(SortByQueueOrder, ShortAndLongQueuesInComesBeforeOrder) {
  std::mt19937_64 rng(27);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (int n = 0; n <= 80; ++n) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<std::string> ids(n);
      for (int i = 0; i < n; ++i) ids[i] = "job-" + std::to_string(1000 + i);
      std::shuffle(ids.begin(), ids.end(), rng);  // distinct, not in index order
      std::vector<QueueOrderKey> keys(n);
      for (int i = 0; i < n; ++i) {
        const int64_t p = pick(0, 4);
        keys[i].priority = p == 0 ? 0.0 : p == 1 ? -0.0 : p == 2 ? -static_cast<double>(pick(1, 3))
                                                               : static_cast<double>(pick(0, 6)) / 3.0;
        keys[i].submit_time = pick(0, 3);
        keys[i].id = &ids[i];
      }
      std::vector<int32_t> expected(n);
      for (int i = 0; i < n; ++i) expected[i] = i;
      std::sort(expected.begin(), expected.end(), [&](int32_t a, int32_t b) { return ComesBefore(keys[a], keys[b]); });
      const std::vector<SortedQueueKey> got = SortByQueueOrder(keys);
      ASSERT_EQ(got.size(), expected.size());
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(got[i].index, expected[i]) << "n " << n << " position " << i;
        ASSERT_EQ(got[i].submit_time, keys[got[i].index].submit_time);
        ASSERT_EQ(std::signbit(got[i].priority), std::signbit(keys[got[i].index].priority));
      }
    }
  }
}

}  // namespace
}  // namespace onequeue::queue

namespace onequeue::queue {
namespace {

// NameTable against a std::map: short and long names, shared 8-byte prefixes, the empty name,
// and tables on both sides of the linear/hashed switch.
TEST(NameTable, FindsWhatAMapFinds) {
  for (int size : {0, 1, 7, 32, 33, 100}) {
    NameTable<int> table;
    std::map<std::string, int> expected;
    std::vector<std::string> probes = {"", "a", "acct", "acct0", "acct00", "prefix-1", "prefix-12",
                                       "prefix-123456789", "prefix-123456780"};
    for (int i = 0; i < size; ++i) {
      std::string name = i % 3 == 0 ? "prefix-" + std::to_string(i * 1111) : "acct" + std::to_string(i);
      if (i == 5) name = "";
      table.Set(name, i);
      expected[name] = i;
      probes.push_back(name);
      probes.push_back(name + "x");
    }
    table.Set("acct1", -1);  // overwrite
    expected["acct1"] = -1;
    probes.push_back("acct1");
    for (const std::string& probe : probes) {
      const int* got = table.Find(probe);
      auto it = expected.find(probe);
      if (it == expected.end()) {
        EXPECT_EQ(got, nullptr) << "size " << size << " probe '" << probe << "'";
      } else {
        ASSERT_NE(got, nullptr) << "size " << size << " probe '" << probe << "'";
        EXPECT_EQ(*got, it->second) << "size " << size << " probe '" << probe << "'";
      }
    }
  }
}

}  // namespace
}  // namespace onequeue::queue

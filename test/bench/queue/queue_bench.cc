// Planning-cycle benchmarks: 100,000 pending workloads (a fifth of them gangs) on 10,000 nodes.
// Run: build-<you>/test/bench/queue/queue_bench  (see docs/queue.md "Benchmarks").
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <memory>
#include <random>
#include <unordered_map>

#include "queue/planner.h"
#include "queue/priority.h"

namespace onequeue::queue {
namespace {

constexpr int kNodes = 10'000;
constexpr int kPending = 100'000;
constexpr Time kNow = 1'800'000'000;
constexpr int64_t kGiB = int64_t{1} << 30;

Resources Req(int64_t cpus, int64_t mem_gib, int64_t gpus, bool pod) {
  Resources r;
  r[kCpu] = cpus * 1000;
  r[kMemory] = mem_gib * kGiB;
  r[kPods] = pod ? 1 : 0;
  r[kFirstExtended] = gpus;
  return r;
}

QueueConfig BenchConfig(int32_t depth) {
  QueueConfig c;
  c.reservation_depth = depth;
  c.resolution = 60;
  c.window = 24 * 3600;
  c.topology_labels = {"rack", "block"};
  c.qos = {QosPolicy{.name = "low", .priority = 10}, QosPolicy{.name = "normal", .priority = 50},
           QosPolicy{.name = "high", .priority = 100}};
  c.partitions = {Partition{"batch", 1}, Partition{"interactive", 2}};
  for (int i = 0; i < 20; ++i) {
    c.accounts.push_back(Account{"acct" + std::to_string(i), i < 4 ? "" : "acct" + std::to_string(i % 4),
                                 static_cast<double>(1 + i % 5)});
  }
  return c;
}

PendingWorkload RandomPending(std::mt19937_64& rng, int i, Time submit_lo, Time submit_hi) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  static constexpr int64_t kSizes[] = {1, 2, 4, 8, 16, 32, 64};
  static constexpr Duration kLimits[] = {600, 1800, 3600, 4 * 3600, 12 * 3600, 24 * 3600};
  static constexpr const char* kQos[] = {"low", "normal", "normal", "high"};
  PendingWorkload w;
  w.id = "w" + std::to_string(i);
  w.kind = pick(0, 1) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
  const bool pod = w.kind == WorkloadKind::kPodGroup;
  const bool gang = pick(0, 4) == 0;  // a fifth are gangs
  const bool gpu = pick(0, 19) == 0;
  if (gang) {
    w.members = static_cast<int32_t>(pick(2, 32));
    int64_t cpus = kSizes[pick(3, 6)];
    w.per_member = Req(cpus, cpus * 4, gpu ? pick(1, 8) : 0, pod);
    w.pack_topology = pick(0, 1) == 0;
  } else {
    w.members = 1;
    int64_t cpus = kSizes[pick(0, 6)];
    w.per_member = Req(cpus, cpus * 4, gpu ? pick(1, 8) : 0, pod);
  }
  w.members_present = w.members;
  w.gang = true;
  if (pick(0, 49) != 0) w.time_limit = kLimits[pick(0, 5)];  // 2% services
  w.qos = kQos[pick(0, 3)];
  w.account = "acct" + std::to_string(pick(0, 19));
  w.partition = pick(0, 9) == 0 ? "interactive" : "batch";
  w.submit_time = pick(submit_lo, submit_hi);
  if (pick(0, 19) == 0) w.eligibility.node_selector["zone"] = pick(0, 1) ? "a" : "b";
  return w;
}

// A pool that is busy (most nodes nearly full, ends spread over a day, some services), the
// state in which a queue of 100,000 exists at all.
std::shared_ptr<Snapshot> BuildSnapshot(uint64_t seed, int pending) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto s = std::make_shared<Snapshot>();
  s->resource_names.names.push_back("nvidia.com/gpu");
  s->nodes.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    Node n;
    n.name = "node-" + std::to_string(i);
    const bool gpu = i % 8 == 0;
    n.allocatable = Req(64, 256, gpu ? 8 : 0, false);
    n.allocatable[kPods] = 110;
    n.labels = {{"rack", "r" + std::to_string(i / 40)}, {"block", "b" + std::to_string(i / 400)},
                {"zone", i % 2 ? "a" : "b"}};
    n.owner.kind = i % 2 ? OwnerKind::kKubernetes : OwnerKind::kSlurm;
    s->nodes.push_back(std::move(n));
  }
  // Running: 1-4 workloads per node using 48..64 cpus in total; 2% of the nodes idle.
  int id = 0;
  for (NodeIndex n = 0; n < kNodes; ++n) {
    if (pick(0, 49) == 0) continue;
    WorkloadKind kind = s->nodes[n].owner.kind == OwnerKind::kKubernetes ? WorkloadKind::kPodGroup
                                                                           : WorkloadKind::kSlurmJob;
    int64_t budget = pick(48, 64);
    while (budget > 0) {
      int64_t cpus = std::min<int64_t>(budget, 8 * pick(1, 8));
      budget -= cpus;
      RunningWorkload r;
      r.id = "run" + std::to_string(id++);
      r.kind = kind;
      r.allocations = {Allocation{n, Req(cpus, cpus * 4, 0, kind == WorkloadKind::kPodGroup)}};
      r.start_time = kNow - pick(0, 3600);
      if (pick(0, 19) != 0) r.expected_end = kNow + pick(60, 24 * 3600);
      r.qos = "normal";
      r.priority = static_cast<double>(pick(0, 20000));
      s->running.push_back(std::move(r));
    }
  }
  for (int i = 0; i < 200; ++i) {
    s->usage.records.push_back(UsageRecord{"acct" + std::to_string(i % 20), kNow - pick(0, 30 * 86400),
                                           static_cast<double>(pick(1, 1'000'000))});
  }
  s->pending.reserve(pending);
  for (int i = 0; i < pending; ++i) s->pending.push_back(RandomPending(rng, i, kNow - 7 * 86400, kNow));
  return s;
}

const std::shared_ptr<Snapshot>& SharedSnapshot() {
  static const auto* snap = new std::shared_ptr<Snapshot>(BuildSnapshot(42, kPending));
  return *snap;
}

// The steady state: the cycle after the one above, with its starts running and the queue topped
// up to 100,000 again. This is what the daemon's periodic full pass sees most of the time.
const std::shared_ptr<Snapshot>& SteadySnapshot() {
  static const auto* snap = [] {
    const auto& first = SharedSnapshot();
    QueuePlanner planner(BenchConfig(100), nullptr);
    Plan p = planner.PlanCycle(first, kNow);
    auto s = std::make_shared<Snapshot>(*first);
    std::unordered_map<std::string, const StartDecision*> started;
    for (const StartDecision& d : p.starts) started[d.workload] = &d;
    std::vector<PendingWorkload> still;
    for (PendingWorkload& w : s->pending) {
      auto it = started.find(w.id);
      if (it == started.end()) {
        still.push_back(std::move(w));
        continue;
      }
      RunningWorkload r;
      r.id = w.id;
      r.kind = w.kind;
      r.start_time = kNow;
      if (w.time_limit.has_value()) r.expected_end = kNow + *w.time_limit;
      for (NodeIndex n : it->second->member_nodes) r.allocations.push_back(Allocation{n, w.per_member});
      s->running.push_back(std::move(r));
    }
    std::mt19937_64 rng(4242);
    for (int i = static_cast<int>(still.size()); i < kPending; ++i) {
      still.push_back(RandomPending(rng, 1'000'000 + i, kNow, kNow));
    }
    s->pending = std::move(still);
    return new std::shared_ptr<Snapshot>(std::move(s));
  }();
  return *snap;
}

// A fingerprint of the decisions (starts and their nodes, reservations, every waiting reason and
// estimate), so an optimisation can show it changed no decision: compare it across builds.
double PlanFingerprint(const Plan& p) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  auto mix_str = [&](std::string_view str) { for (char c : str) mix(static_cast<unsigned char>(c)); };
  for (const auto& d : p.starts) { mix_str(d.workload); for (auto n : d.member_nodes) mix(n); }
  for (const auto& r : p.reservations) { mix_str(r.workload); mix(r.start); for (auto n : r.member_nodes) mix(n); }
  for (const auto& w : p.waiting) {
    mix_str(w.workload);
    mix(static_cast<uint64_t>(w.reason));
    mix(static_cast<uint64_t>(w.queue_position));
    mix(static_cast<uint64_t>(w.estimated_start.value_or(-1)));
  }
  return static_cast<double>(h % 1'000'000'007ull);
}

void ReportPlan(benchmark::State& state, const Plan& p) {
  state.counters["fingerprint"] = PlanFingerprint(p);
  state.counters["starts"] = static_cast<double>(p.starts.size());
  state.counters["reservations"] = static_cast<double>(p.reservations.size());
  int64_t estimated = 0;
  for (const auto& w : p.waiting) estimated += w.estimated_start.has_value();
  state.counters["estimated"] = static_cast<double>(estimated);
}

// Times full cycles of a fresh planner on `snap` (arg 0 = reservation depth, arg 1 =
// max_estimates_per_cycle) and reports the last plan. Freeing the previous plan is not timed.
void TimeCycles(benchmark::State& state, const std::shared_ptr<Snapshot>& snap, Time now) {
  QueueConfig c = BenchConfig(static_cast<int32_t>(state.range(0)));
  c.max_estimates_per_cycle = static_cast<int32_t>(state.range(1));
  Plan last;
  for (auto _ : state) {
    QueuePlanner planner(c, nullptr);
    Plan p = planner.PlanCycle(snap, now);
    benchmark::DoNotOptimize(p);
    state.PauseTiming();
    last = std::move(p);
    state.ResumeTiming();
  }
  ReportPlan(state, last);
  state.counters["pending"] = static_cast<double>(snap->pending.size());
}

void BM_SteadyCycle(benchmark::State& state) { TimeCycles(state, SteadySnapshot(), kNow + 60); }
BENCHMARK(BM_SteadyCycle)
    ->ArgNames({"depth", "max_estimates"})
    ->Args({100, 1})
    ->Args({1, 1})
    ->Args({100, 1000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);


// Full cycle: arg 0 = reservation depth (1 = EASY, 100 = hybrid, 0 = conservative),
// arg 1 = max_estimates_per_cycle (0 = estimate every waiting workload).
void BM_FullCycle(benchmark::State& state) {
  TimeCycles(state, SharedSnapshot(), kNow);
  state.counters["nodes"] = kNodes;
}
BENCHMARK(BM_FullCycle)
    ->ArgNames({"depth", "max_estimates"})
    ->Args({100, 1})
    ->Args({1, 1})
    ->Args({100, 1000})
    ->Args({1, 1000})
    ->Args({100, 0})
    ->Args({1, 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK(BM_FullCycle)
    ->ArgNames({"depth", "max_estimates"})
    ->Args({0, 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The queue order of 100,000 workloads: the radix sort the planner uses vs std::sort with
// ComesBefore (arg 0 = 1: std::sort).
void BM_QueueOrder(benchmark::State& state) {
  const auto& snap = SharedSnapshot();
  std::mt19937_64 rng(5);
  std::vector<QueueOrderKey> keys;
  for (const PendingWorkload& w : snap->pending) {
    keys.push_back(QueueOrderKey{std::uniform_real_distribution<double>(0, 1e6)(rng), w.submit_time, &w.id});
  }
  for (auto _ : state) {
    if (state.range(0) == 1) {
      std::vector<int32_t> idx(keys.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int32_t>(i);
      std::sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return ComesBefore(keys[a], keys[b]); });
      benchmark::DoNotOptimize(idx);
    } else {
      auto order = SortByQueueOrder(keys);
      benchmark::DoNotOptimize(order);
    }
  }
}
BENCHMARK(BM_QueueOrder)->ArgNames({"std_sort"})->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// One arrival after a full cycle: a new, low-priority workload (age 0) planned incrementally.
// arg 0 = depth; arg 1 = seconds since the cycle (0: same instant; > 0: nodes re-examined).
void BM_Arrival(benchmark::State& state) {
  const auto& snap = SharedSnapshot();
  QueueConfig c = BenchConfig(static_cast<int32_t>(state.range(0)));
  c.max_estimates_per_cycle = 1000;
  QueuePlanner planner(c, nullptr);
  planner.PlanCycle(snap, kNow);
  std::mt19937_64 rng(99);
  const Time at = kNow + state.range(1);
  int i = 0, full = 0;
  std::vector<PendingWorkload> arrivals;
  for (int k = 0; k < 4096; ++k) arrivals.push_back(RandomPending(rng, kPending + k, at, at));
  for (auto _ : state) {
    const PendingWorkload& w = arrivals[i++ % arrivals.size()];
    auto d = planner.OnArrival(w, at);
    full += d.ok() && d->needs_full_cycle;
    benchmark::DoNotOptimize(d);
  }
  state.counters["needs_full_cycle"] = full;
}
BENCHMARK(BM_Arrival)->ArgNames({"depth", "later_s"})->Args({100, 0})->Args({100, 30})->Args({1, 0})
    ->Unit(benchmark::kMicrosecond)->Iterations(2000);

// Memory: heap bytes per pending workload held by the snapshot (the input) and by the planner
// between cycles plus the plan (the output), measured with mallinfo2 deltas.
// Heap in use: small blocks (uordblks) plus mmapped large blocks (hblkhd), e.g. big vectors.
double HeapInUse() {
  struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks) + static_cast<double>(m.hblkhd);
}

void BM_MemoryPerPending(benchmark::State& state) {
  for (auto _ : state) {
    double before = HeapInUse();
    auto empty = BuildSnapshot(7, 0);
    double with_empty = HeapInUse();
    auto snap = BuildSnapshot(7, kPending);
    double with_snapshot = HeapInUse();
    // The pending part of the input: the full snapshot minus one without pending workloads.
    const double input = (with_snapshot - with_empty) - (with_empty - before);
    empty.reset();
    double base = HeapInUse();
    auto planner = std::make_unique<QueuePlanner>(BenchConfig(100), nullptr);
    Plan p = planner->PlanCycle(snap, kNow);
    double after = HeapInUse();
    state.counters["sizeof_PendingWorkload"] = sizeof(PendingWorkload);
    state.counters["input_bytes_per_pending"] = input / kPending;
    state.counters["planner_and_plan_bytes_per_pending"] =
        (after - base) / kPending;
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_MemoryPerPending)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace onequeue::queue

BENCHMARK_MAIN();

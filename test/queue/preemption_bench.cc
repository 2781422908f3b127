// Cost of one preemption decision (CheapestVictimsPlanner::Choose) on a full pool: every node
// runs a few lower-priority pods, and the preemptor (one pod, or a gang of whole nodes) must
// evict some of them. Figures and command in docs/simulate.md.
// BM_PreemptionChoose: as in a cycle, the victim index kept across decisions (the input shares
// the snapshot) and the default candidate cap (10 %, at least 100 nodes);
// BM_PreemptionChooseUncapped: the same with a cap of 100 % (every usable node searched);
// BM_PreemptionChooseColdIndex: the index built for every decision (no shared snapshot).
#include <benchmark/benchmark.h>

#include <memory>
#include <random>

#include "queue/preemption.h"

namespace onequeue::queue {
namespace {

struct Pool {
  std::shared_ptr<Snapshot> shared = std::make_shared<Snapshot>();
  Snapshot& snapshot = *shared;
  QueueConfig config;
  std::vector<Resources> free_now;
  std::vector<char> claimed;
  std::vector<std::string> victims;
  std::vector<NodeIndex> eligible;
};

// `nodes` nodes of 8 cpus, each full with 4 pods of 2 cpus (random priority below 100; one in
// eight pods in a gang of 4 spread over 4 nodes; one in four under a budget allowing 2).
Pool MakePool(int nodes) {
  std::mt19937_64 rng(7);
  Pool p;
  p.config.qos = {{"high", 100, false, {"low"}, 0}, {"low", 10, true, {}, 0}};
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = "n" + std::to_string(n);
    node.allocatable[kCpu] = 8000;
    p.snapshot.nodes.push_back(node);
    p.free_now.push_back(Resources{});
    p.eligible.push_back(n);
    for (int k = 0; k < 4; ++k) {
      RunningWorkload r;
      r.id = "w" + std::to_string(n) + "-" + std::to_string(k);
      Allocation a;
      a.node = n;
      a.used[kCpu] = 2000;
      r.allocations.push_back(a);
      r.priority = static_cast<double>(rng() % 100);
      r.qos = "low";
      r.start_time = static_cast<Time>(rng() % 10000);
      if (rng() % 8 == 0) r.gang_id = "g" + std::to_string(n / 4) + "-" + std::to_string(k);
      if (rng() % 4 == 0) r.disruption_budget_group = "pdb" + std::to_string(rng() % 16);
      p.snapshot.running.push_back(r);
    }
  }
  for (int g = 0; g < 16; ++g) p.snapshot.disruptions_allowed["pdb" + std::to_string(g)] = 2;
  p.claimed.assign(nodes, 0);
  return p;
}

enum class Mode { kCapped, kUncapped, kColdIndex };

// Args: nodes, preemptor members, cpu per member (millicores).
void TimeChoose(benchmark::State& state, Mode mode) {
  Pool pool = MakePool(static_cast<int>(state.range(0)));
  if (mode == Mode::kUncapped) pool.config.preemption.min_candidate_nodes_percentage = 100;
  PendingWorkload w;
  w.id = "P";
  w.qos = "high";
  w.members = static_cast<int32_t>(state.range(1));
  w.per_member[kCpu] = state.range(2);
  PreemptionInput in;
  in.snapshot = &pool.snapshot;
  if (mode != Mode::kColdIndex) in.shared_snapshot = pool.shared;
  in.config = &pool.config;
  in.preemptor = &w;
  in.preemptor_priority = 150;
  in.now = 10000;
  in.eligible_nodes = pool.eligible;
  in.free_now = &pool.free_now;
  in.claimed = &pool.claimed;
  in.already_victims = &pool.victims;
  CheapestVictimsPlanner planner;
  int64_t victims = 0;
  bool exact = true;
  bool capped = false;
  for (auto _ : state) {
    auto choice = planner.Choose(in);
    if (!choice) {
      state.SkipWithError("no decision");
      return;
    }
    victims = choice->victim_count;
    exact = choice->exact;
    capped = choice->capped;
    benchmark::DoNotOptimize(choice);
  }
  state.counters["victims"] = static_cast<double>(victims);
  state.counters["exact"] = exact ? 1 : 0;
  state.counters["capped"] = capped ? 1 : 0;
}

void BM_PreemptionChoose(benchmark::State& state) { TimeChoose(state, Mode::kCapped); }
void BM_PreemptionChooseUncapped(benchmark::State& state) { TimeChoose(state, Mode::kUncapped); }
void BM_PreemptionChooseColdIndex(benchmark::State& state) { TimeChoose(state, Mode::kColdIndex); }

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "members", "cpu"})
      ->Args({100, 1, 2000})
      ->Args({1000, 1, 2000})
      ->Args({1000, 1, 8000})
      ->Args({1000, 4, 8000})
      ->Args({10000, 1, 4000})
      ->Args({10000, 8, 8000})
      ->Unit(benchmark::kMicrosecond)
      ->MeasureProcessCPUTime();
}
BENCHMARK(BM_PreemptionChoose)->Apply(Shapes);
BENCHMARK(BM_PreemptionChooseUncapped)->Apply(Shapes);
BENCHMARK(BM_PreemptionChooseColdIndex)->Apply(Shapes);

}  // namespace
}  // namespace onequeue::queue

BENCHMARK_MAIN();

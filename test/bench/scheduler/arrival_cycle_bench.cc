// Issue 26, arrival cycles with Slurm on: the daemon's whole cycle (SchedulingLoop::RunCycle on the
// in-memory cluster of test/scheduler/fake_world.h, watched through a KubeSource as the informers
// feed it) when one interactive pod arrives between two Slurm polls that answered "no change".
// Arg 5: queue.fullCycleSeconds 5, the arrival is planned alone (QueuePlanner::OnArrival);
// arg 0: every cycle full (snapshot of both worlds, the whole plan, the lending and the holds).
// The world (second arg N): N 8-CPU nodes of partition "pool" that Kubernetes holds, 2 pods bound
// on each, 2N Slurm jobs waiting (held by onequeue). Each iteration adds one 1-CPU pod and runs a
// cycle; the arrivals fill 100 of the 6N free CPUs. Run: build/test/bench/scheduler/arrival_cycle_bench
// (docs/benchmarks.md, "Arrival cycles with Slurm on").
#include <benchmark/benchmark.h>

#include <string>

#include "../../scheduler/watched_world.h"

namespace onequeue::scheduler {
namespace {

// The fake world seen through a KubeSource (watched_world.h), with the changes the bench makes.
class BenchWorld : public WatchedWorld {
 public:
  void Node(const std::string& name) {
    AddNode(name, "8");
    source_.UpsertNode(Nodes().back());
  }
  void Pod(const std::string& name, const std::string& node = "") {
    AddPod(name, "1", "normal", node);
    k8s::Pod* p = Find("ns/" + name);
    p->metadata.annotations[kTimeLimitAnnotation] = "1h";
    source_.UpsertPod(*p);
  }

};

void BM_InteractivePodCycleWithSlurmOn(benchmark::State& state) {
  Config config = SlurmLoopConfig("drain");
  config.queue.full_cycle_seconds = state.range(0);
  BenchWorld world;
  FakeSlurm slurm;
  world.slurm = &slurm;
  slurm.now = kNow;
  const int kNodes = static_cast<int>(state.range(1)), kJobs = 2 * kNodes;
  for (int i = 0; i < kNodes; ++i) {
    const std::string node = "n" + std::to_string(i);
    world.Node(node);
    slurm.AddNode(node);
    world.Pod("bound-" + std::to_string(2 * i), node);
    world.Pod("bound-" + std::to_string(2 * i + 1), node);
  }
  for (int j = 1; j <= kJobs; ++j) slurm.Submit(static_cast<uint32_t>(j), 8);
  SchedulingLoop loop(config, &world, &world, &slurm);
  loop.RunCycle(kNow);      // fences the pool for Kubernetes, holds the jobs
  loop.RunCycle(kNow + 1);  // the owner marks show up
  slurm.frozen_view = slurm.View();  // from here on every poll answers "no change"
  loop.RunCycle(kNow + 1);
  int arrived = 0, incremental = 0, bound = 0;
  for (auto _ : state) {
    state.PauseTiming();
    world.Pod("interactive-" + std::to_string(arrived++));
    state.ResumeTiming();
    const CycleStats s = loop.RunCycle(kNow + 2);
    incremental += s.incremental ? 1 : 0;
    bound += s.bound;
  }
  state.counters["incremental"] = incremental;
  state.counters["bound"] = bound;
}
BENCHMARK(BM_InteractivePodCycleWithSlurmOn)
    ->Args({5, 1000})
    ->Args({0, 1000})
    ->Args({5, 5000})
    ->Args({0, 5000})
    ->Iterations(100)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace onequeue::scheduler

BENCHMARK_MAIN();

// Speed of trace replay (`oq simulate`): jobs simulated per second of wall time, per policy, on a
// synthetic trace generated here with a fixed seed (docs/simulate.md has the figures and command).
//
// The synthetic workload, loosely after the Parallel Workloads Archive's traces: job sizes are
// mostly small with a power-of-two bias, run times log-uniform from 30 s to 12 h, users ask for
// 1x-5x the time they use (rounded up to 5 minutes), arrivals are Poisson at the offered load
// given as the benchmark's argument (percent of the machine).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "queue/replay.h"
#include "queue/swf.h"
#include "scheduler/config.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::queue {
namespace {

SwfTrace SyntheticTrace(uint64_t seed, int jobs, int64_t processors, double load) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  SwfTrace t;
  t.header.max_procs = processors;
  struct Draft {
    int64_t procs, run, limit;
  };
  std::vector<Draft> drafts;
  double work = 0;
  for (int i = 0; i < jobs; ++i) {
    int64_t procs;
    const double u = unit(rng);
    if (u < 0.3) {
      procs = 1;
    } else if (u < 0.8) {
      procs = int64_t{1} << static_cast<int>(unit(rng) * std::log2(static_cast<double>(processors)));
    } else {
      procs = 1 + static_cast<int64_t>(unit(rng) * static_cast<double>(processors - 1));
    }
    const int64_t run = static_cast<int64_t>(std::exp(std::log(30.0) + unit(rng) * (std::log(43200.0) - std::log(30.0))));
    const int64_t asked = static_cast<int64_t>(static_cast<double>(run) * (1.0 + 4.0 * unit(rng)));
    const int64_t limit = ((asked + 299) / 300) * 300;
    drafts.push_back({procs, run, limit});
    work += static_cast<double>(procs) * static_cast<double>(run);
  }
  // Mean inter-arrival so that offered work / (processors * span) = load.
  const double span = work / (static_cast<double>(processors) * load);
  std::exponential_distribution<double> gap(static_cast<double>(jobs) / span);
  double now = 0;
  for (int i = 0; i < jobs; ++i) {
    now += gap(rng);
    SwfJob j;
    j.job_number = i + 1;
    j.submit_time = static_cast<int64_t>(now);
    j.run_time = drafts[i].run;
    j.requested_procs = drafts[i].procs;
    j.allocated_procs = drafts[i].procs;
    j.requested_time = drafts[i].limit;
    j.status = 1;
    t.jobs.push_back(j);
  }
  return t;
}

// Args: policy (0 fcfs, 1 easy, 2 conservative), jobs, processors, load in percent.
void BM_Replay(benchmark::State& state) {
  const auto policy = static_cast<ReplayPolicy>(state.range(0));
  const int jobs = static_cast<int>(state.range(1));
  const int64_t processors = state.range(2);
  const SwfTrace trace = SyntheticTrace(42, jobs, processors, static_cast<double>(state.range(3)) / 100.0);
  ReplayOptions options;
  options.policy = policy;
  ReplaySummary last;
  for (auto _ : state) {
    auto r = ReplayTrace(trace, options);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    last = r->summary;
    benchmark::DoNotOptimize(last);
  }
  state.SetLabel(ReplayPolicyName(policy));
  state.SetItemsProcessed(state.iterations() * jobs);  // items/s = jobs simulated per second
  state.counters["cycles"] = static_cast<double>(last.cycles);
  state.counters["avg_wait_s"] = last.average_wait;
  state.counters["avg_bsld"] = last.average_bounded_slowdown;
  state.counters["util"] = last.utilisation;
}

BENCHMARK(BM_Replay)
    ->ArgNames({"policy", "jobs", "procs", "load"})
    ->Args({0, 2000, 128, 70})
    ->Args({1, 2000, 128, 70})
    ->Args({2, 2000, 128, 70})
    // Issue 15: EASY must replay more than 10,000 jobs/s on a 100,000-job trace.
    ->Args({1, 100000, 128, 70})
    ->Unit(benchmark::kMillisecond)
    // CPU time, not wall time: the 2-core CI machine is shared, wall time is noise.
    ->MeasureProcessCPUTime();

// Issue 27: the daemon's default policy (`oq simulate TRACE --config` with an empty file: the
// same ParseConfig and ToQueueConfig, promises kept) on a generated trace read from the file named
// by ONEQUEUE_REPLAY_TRACE, e.g. the 200,000-job heavy_steady shape:
//   python3 test/queue/traces/generate_shapes.py --jobs 200000 /tmp heavy_steady
//   ONEQUEUE_REPLAY_TRACE=/tmp/shape_heavy_steady.swf build/test/queue/replay_bench --benchmark_filter=BM_ReplayDefaultPolicy
// ONEQUEUE_REPLAY_CONFIG=FILE replays with that configuration file instead of the defaults.
void BM_ReplayDefaultPolicy(benchmark::State& state) {
  const char* path = std::getenv("ONEQUEUE_REPLAY_TRACE");
  if (path == nullptr) {
    state.SkipWithError("set ONEQUEUE_REPLAY_TRACE to an SWF trace (generate_shapes.py --jobs 200000 DIR heavy_steady)");
    return;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  auto trace = ParseSwfStrict(text.str(), 10);
  if (!trace.ok()) {
    state.SkipWithError(std::string(trace.status().message()).c_str());
    return;
  }
  // ONEQUEUE_REPLAY_CONFIG: a configuration file instead (`oq simulate --config FILE`), e.g. a
  // default not yet switched (queue.starvationRemedy: front, queue.keepReservations: false).
  const char* config_path = std::getenv("ONEQUEUE_REPLAY_CONFIG");
  auto config = config_path != nullptr
                    ? scheduler::LoadConfigFile(config_path)
                    : scheduler::ParseConfig("apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n", "defaults");
  if (!config.ok()) {
    state.SkipWithError(std::string(config.status().message()).c_str());
    return;
  }
  ReplayOptions options;
  options.config = scheduler::ToQueueConfig(*config);
  options.keep_reservations = config->queue.keep_reservations;
  // The Slurm default QOS when the table names it, as `oq simulate --config` replays.
  for (const QosPolicy& q : options.config->qos) {
    if (q.name == config->slurm.default_qos) options.qos = q.name;
  }
  ReplaySummary last;
  for (auto _ : state) {
    auto r = ReplayTrace(*trace, options);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    last = r->summary;
    benchmark::DoNotOptimize(last);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(trace->jobs.size()));
  state.counters["cycles"] = static_cast<double>(last.cycles);
  state.counters["avg_bsld"] = last.average_bounded_slowdown;
  state.counters["max_wait_s"] = last.max_wait;
}
BENCHMARK(BM_ReplayDefaultPolicy)->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime();

}  // namespace
}  // namespace onequeue::queue

BENCHMARK_MAIN();

// What sharing buys (issue 25's benchmark figure, docs/benchmarks.md "Shared nodes"): a
// synthetic mixed workload of fractional pods and Slurm jobs on 4-GPU nodes, run through the real
// queue planner in simulated time twice, with every node exclusive and with every node shared.
// Not a speed measurement: node-hours, waits and makespan are simulated quantities, the same on
// every machine. The test checks that sharing never needs more node-hours or a longer makespan on
// these mixes, and prints the figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT

constexpr int64_t kGiB = int64_t{1} << 30;

struct MixedJob {
  std::string id;
  WorkloadKind kind;
  Time submit;
  int64_t gpus;
  Duration run;
};

struct SimResult {
  double node_hours = 0;     // sum over nodes of the time at least one workload ran there
  double gpu_hours = 0;      // work done: GPUs x run time
  Time makespan = 0;         // last end
  double average_wait = 0;   // seconds
  int64_t finished = 0;
};

// The workload: `count` jobs, half pods and half Slurm jobs, 1, 2 or 4 GPUs (8 CPUs and 64 GiB per
// GPU), run times 10-60 min (exact limits), Poisson arrivals at `load` times the machine's GPUs.
std::vector<MixedJob> MixedWorkload(uint64_t seed, int count, int nodes, double load) {
  std::mt19937_64 rng(seed);
  const int64_t gpu_choices[] = {1, 1, 1, 2, 2, 4};
  std::vector<MixedJob> jobs;
  double t = 0;
  // Mean GPUs ~1.83 x mean run 2100 s = ~3850 GPU-seconds per job; the machine has 4 x nodes GPUs.
  const double mean_gap = 3850.0 / (4.0 * nodes * load);
  std::exponential_distribution<double> gap(1.0 / mean_gap);
  for (int i = 0; i < count; ++i) {
    MixedJob j;
    j.kind = rng() % 2 == 0 ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
    j.id = (j.kind == WorkloadKind::kPodGroup ? "ns/pod-" : "slurm/") + std::to_string(i);
    j.submit = static_cast<Time>(t);
    j.gpus = gpu_choices[rng() % 6];
    j.run = 600 + static_cast<Duration>(rng() % 3001);
    jobs.push_back(j);
    t += gap(rng);
  }
  return jobs;
}

SimResult Simulate(const std::vector<MixedJob>& jobs, int nodes, NodeSharing sharing) {
  struct Running {
    const MixedJob* job;
    NodeIndex node;
    Time start;
  };
  std::vector<Node> machine;
  for (int i = 0; i < nodes; ++i) {
    Node n = MakeNode("gpu-" + std::to_string(i), 32000, 256 * kGiB, 4);
    n.sharing = sharing;
    machine.push_back(n);
  }
  QueueConfig config = SubmitOrderConfig();
  config.window = 1'000'000;
  std::vector<Running> running;
  std::vector<const MixedJob*> waiting;
  std::vector<int> on_node(nodes, 0);
  std::vector<Time> busy_since(nodes, 0);
  SimResult out;
  size_t next = 0;
  double waits = 0;
  Time now = 0;
  while (next < jobs.size() || !waiting.empty() || !running.empty()) {
    // The next event: an arrival or an end, whichever is first.
    Time t = kForever;
    if (next < jobs.size()) t = jobs[next].submit;
    for (const Running& r : running) t = std::min(t, r.start + r.job->run);
    if (t == kForever) break;  // waiting work that can never start (does not happen on these mixes)
    now = t;
    for (auto it = running.begin(); it != running.end();) {
      if (it->start + it->job->run > now) { ++it; continue; }
      if (--on_node[it->node] == 0) out.node_hours += static_cast<double>(now - busy_since[it->node]) / 3600;
      out.gpu_hours += static_cast<double>(it->job->gpus * it->job->run) / 3600;
      out.makespan = std::max(out.makespan, now);
      ++out.finished;
      it = running.erase(it);
    }
    while (next < jobs.size() && jobs[next].submit <= now) waiting.push_back(&jobs[next++]);

    auto snap = std::make_shared<Snapshot>();
    snap->nodes = machine;
    for (int n = 0; n < nodes; ++n) {
      snap->nodes[n].owner.kind = OwnerKind::kFree;  // exclusivity comes from what runs there
    }
    std::map<std::string, const MixedJob*> by_id;
    for (const Running& r : running) {
      RunningWorkload w = MakeRunning(r.job->id, r.node, Cpu(8000 * r.job->gpus, 64 * kGiB * r.job->gpus, r.job->gpus),
                                      r.start, r.start + r.job->run);
      w.kind = r.job->kind;
      if (w.kind == WorkloadKind::kPodGroup) w.allocations[0].used[kPods] = 1;
      snap->running.push_back(w);
    }
    for (const MixedJob* j : waiting) {
      snap->pending.push_back(PendingBuilder(j->id, 8000 * j->gpus)
                                  .Kind(j->kind)
                                  .Memory(64 * kGiB * j->gpus)
                                  .Gpus(j->gpus)
                                  .Limit(j->run)
                                  .Submit(j->submit));
      by_id[j->id] = j;
    }
    QueuePlanner planner(config, nullptr);
    const Plan plan = planner.PlanCycle(snap, now);
    for (const StartDecision& s : plan.starts) {
      const MixedJob* j = by_id.at(s.workload);
      const NodeIndex n = s.member_nodes.at(0);
      if (on_node[n]++ == 0) busy_since[n] = now;
      running.push_back({j, n, now});
      waits += static_cast<double>(now - j->submit);
      waiting.erase(std::find(waiting.begin(), waiting.end(), j));
    }
  }
  out.average_wait = jobs.empty() ? 0 : waits / static_cast<double>(jobs.size());
  return out;
}

TEST(SharingSim, SharedNodesNeedNoMoreNodeHoursOnAFractionalMix) {
  constexpr int kNodes = 8;
  std::printf("load  seed  mode       node-hours  gpu-hours  gpu-util  makespan-h  avg-wait-s\n");
  for (double load : {0.9, 0.5})
  for (uint64_t seed : {1, 2, 3}) {
    const std::vector<MixedJob> jobs = MixedWorkload(seed, 400, kNodes, load);
    const SimResult exclusive = Simulate(jobs, kNodes, NodeSharing::kExclusive);
    const SimResult shared = Simulate(jobs, kNodes, NodeSharing::kShared);
    for (const auto& [name, r] : {std::pair{"exclusive", exclusive}, std::pair{"shared", shared}}) {
      std::printf("%4.1f  %4llu  %-9s  %10.1f  %9.1f  %7.1f%%  %10.2f  %10.0f\n", load, static_cast<unsigned long long>(seed),
                  name, r.node_hours, r.gpu_hours, 100.0 * r.gpu_hours / (4.0 * r.node_hours),
                  static_cast<double>(r.makespan) / 3600, r.average_wait);
    }
    EXPECT_EQ(exclusive.finished, 400);
    EXPECT_EQ(shared.finished, 400);
    EXPECT_DOUBLE_EQ(exclusive.gpu_hours, shared.gpu_hours);  // the same work done
    EXPECT_LE(shared.node_hours, exclusive.node_hours) << "seed " << seed;
    EXPECT_LE(shared.average_wait, exclusive.average_wait) << "seed " << seed;
  }
}

}  // namespace
}  // namespace onequeue::queue

// Issue 26, tenth pass: a placement search of an extended resource that few nodes have (GPUs on
// an eighth of the pool) asks only the nodes that have it, and first proves node by node whether
// any of them ever has room in the window (CyclePass::ScarceSlot, NoNodeEverHasRoom), instead of
// walking every block end of the pool. Checked against plain references:
//   - AvailabilityProfile::FitsSometime against every grid time of the window, asked one by one;
//   - whole plans against the same worlds with many more GPU nodes appended, unschedulable: they
//     change no decision (the job size factor, a share of the pool, weighs 0 here), but make GPUs
//     common, so the searches there ask every node as before.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "queue/planner.h"
#include "queue/profile.h"
#include "queue/testing_builders.h"

namespace onequeue::queue {
namespace {

using testing::Cpu;
using testing::MakeNode;
using testing::MakeRunning;
using testing::PendingBuilder;

TEST(ScarceResource, FitsSometimeIsSomeGridTimeOfTheWindowWithRoom) {
  std::mt19937_64 rng(26);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1000;
  int with_room_later = 0;  // answers true only through a block end (the case a start-only check misses)
  for (int trial = 0; trial < 2'000; ++trial) {
    const int nodes = static_cast<int>(pick(1, 3));
    std::vector<Resources> capacity(nodes, Cpu(4000, 64, 2));
    const Duration resolution = pick(1, 10);
    AvailabilityProfile p(capacity, kNow, /*window=*/pick(20, 150), resolution, pick(0, 1) == 0);
    for (int b = static_cast<int>(pick(0, 8)); b > 0; --b) {
      AvailabilityProfile::Block block;
      block.reservation = pick(0, 1) == 0;
      block.start = block.reservation ? kNow + pick(0, 100) : kNow - pick(0, 50);
      block.end = pick(0, 9) == 0 ? kForever : std::max(block.start, kNow) + pick(1, 120);
      block.kind = pick(0, 3) == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
      block.used = Cpu(pick(0, 4) * 1000, pick(0, 32), pick(0, 2));
      p.Add(static_cast<NodeIndex>(pick(0, nodes - 1)), block);
      if (pick(0, 3) == 0) p.SealBase();
    }
    for (int q = 0; q < 10; ++q) {
      const NodeIndex n = static_cast<NodeIndex>(pick(0, nodes - 1));
      const Time first = p.RoundUp(kNow + pick(0, 120));
      const Duration duration = pick(1, 100);
      const Resources request = Cpu(pick(0, 4) * 500, pick(0, 32), pick(1, 2));
      const WorkloadKind kind = pick(0, 1) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
      bool expected = false;
      for (Time t = first; t <= p.horizon() && !expected; t += resolution) {
        expected = p.Copies(n, t, SaturatingAdd(t, duration), request, kind, 1) > 0;
      }
      ASSERT_EQ(p.FitsSometime(n, first, duration, request, kind, AvailabilityProfile::kNoTenant, -1), expected)
          << "trial " << trial << " query " << q << " node " << n << " first " << first;
      ASSERT_EQ(p.AvailTimeFirst(n, first, duration, request, kind) <= p.horizon(), expected);
      with_room_later += expected && p.Copies(n, first, SaturatingAdd(first, duration), request, kind, 1) == 0;
    }
  }
  EXPECT_GT(with_room_later, 100);
}

// 12-16 nodes in two zones, 1-3 of them with GPUs (so GPUs are scarce: a quarter of the nodes or
// fewer), nearly full of running work that ends within the window, after it or never; pending
// pods and jobs, a third of them asking GPUs, some pinned to a zone, some gangs. Rarely a running
// workload of negative usage on a node without GPUs (a node's free may then exceed its capacity:
// the searches must ask every node again).
std::shared_ptr<Snapshot> ScarceGpuWorld(std::mt19937_64& rng, Time now, int* negative) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto snap = std::make_shared<Snapshot>();
  const int nodes = static_cast<int>(pick(12, 16));
  const int gpu_nodes = static_cast<int>(pick(1, 3));
  for (int n = 0; n < nodes; ++n) {
    const bool gpu = n % (nodes / gpu_nodes) == 0 && n / (nodes / gpu_nodes) < gpu_nodes;
    snap->nodes.push_back(MakeNode("n" + std::to_string(n), 4000, 1 << 30, gpu ? 4 : 0,
                                   {{"zone", n % 2 ? "a" : "b"}}));
  }
  int id = 0;
  for (int n = 0; n < nodes; ++n) {
    for (int r = static_cast<int>(pick(0, 3)); r > 0; --r) {
      const std::optional<Time> end = pick(0, 5) == 0 ? std::nullopt : std::optional<Time>(now + pick(1, 900));
      const int64_t gpus = snap->nodes[n].allocatable[kFirstExtended] > 0 ? pick(0, 2) : 0;
      snap->running.push_back(
          MakeRunning("r" + std::to_string(++id), n, Cpu(1000, 0, gpus), now - pick(0, 300), end));
    }
  }
  if (pick(0, 9) == 0) {
    NodeIndex n = 1;
    while (snap->nodes[n].allocatable[kFirstExtended] > 0) ++n;
    snap->running.push_back(MakeRunning("negative", n, Cpu(0, 0, -1), now - 10, now + pick(1, 900)));
    ++*negative;
  }
  for (int w = static_cast<int>(pick(5, 25)); w > 0; --w) {
    PendingBuilder b("w" + std::to_string(w), pick(1, 4) * 500, static_cast<int32_t>(pick(0, 3) == 0 ? pick(2, 3) : 1));
    b.Limit(pick(0, 8) == 0 ? std::nullopt : std::optional<Duration>(pick(30, 600))).Submit(now - pick(0, 900));
    if (pick(0, 2) == 0) b.Gpus(pick(1, 4));
    if (pick(0, 3) == 0) b.Selector("zone", pick(0, 1) ? "a" : "b");
    if (pick(0, 4) == 0) b.Kind(WorkloadKind::kSlurmJob);
    snap->pending.push_back(b);
  }
  return snap;
}

TEST(ScarceResource, PlansAsWhenGpusAreCommon) {
  std::mt19937_64 rng(2626);
  int negative = 0;
  for (int policy = 0; policy < 3; ++policy) {
    QueueConfig config;
    config.window = 600;
    config.resolution = policy == 1 ? 30 : 1;
    config.reservation_depth = policy == 2 ? 0 : 2;  // conservative: every blocked one reserves
    config.weights.job_size = 0;  // its factor is a share of the pool, which the extra nodes grow
    Time now = 10'000;
    for (int cycle = 0; cycle < 300; ++cycle) {
      now += std::uniform_int_distribution<Time>(0, 50)(rng);
      const std::shared_ptr<Snapshot> scarce = ScarceGpuWorld(rng, now, &negative);
      auto common = std::make_shared<Snapshot>(*scarce);
      const size_t nodes = common->nodes.size();
      for (size_t n = 0; n < 3 * nodes; ++n) {
        Node extra = MakeNode("x" + std::to_string(n), 4000, 1 << 30, 4, {{"zone", n % 2 ? "a" : "b"}});
        extra.schedulable = false;
        common->nodes.push_back(std::move(extra));
      }
      QueuePlanner a(config, nullptr), b(config, nullptr);
      ASSERT_EQ(testing::DescribePlan(a.PlanCycle(scarce, now), false), testing::DescribePlan(b.PlanCycle(common, now), false))
          << "policy " << policy << " cycle " << cycle;
    }
  }
  EXPECT_GT(negative, 20);
}

}  // namespace
}  // namespace onequeue::queue

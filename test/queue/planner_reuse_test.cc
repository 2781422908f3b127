// Issue 27, fifth pass: a planner hands its availability profile, free indexes and search
// scratch from one PlanCycle to the next (rebuilt in place, not allocated anew). That must
// decide nothing differently: a planner kept across cycles of unrelated worlds (other node
// counts, capacities, GPUs, running and pending workloads) plans each exactly as a planner that
// plans nothing else.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "queue/planner.h"
#include "queue/testing_builders.h"

namespace onequeue::queue {
namespace {

using testing::Cpu;
using testing::MakeNode;
using testing::MakeRunning;
using testing::PendingBuilder;

std::shared_ptr<Snapshot> RandomWorld(std::mt19937_64& rng, Time now) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto snap = std::make_shared<Snapshot>();
  const int nodes = static_cast<int>(pick(1, 12));
  for (int n = 0; n < nodes; ++n) {
    snap->nodes.push_back(MakeNode("n" + std::to_string(n), pick(1, 8) * 1000, 1 << 30, pick(0, 3) == 0 ? pick(1, 4) : 0));
  }
  for (int r = static_cast<int>(pick(0, 2 * nodes)); r > 0; --r) {
    const NodeIndex node = static_cast<NodeIndex>(pick(0, nodes - 1));
    const std::optional<Time> end = pick(0, 6) == 0 ? std::nullopt : std::optional<Time>(now + pick(-5, 400));
    snap->running.push_back(MakeRunning("r" + std::to_string(r), node, Cpu(pick(1, 2) * 500), now - pick(0, 300), end));
  }
  for (int w = static_cast<int>(pick(0, 20)); w > 0; --w) {
    PendingBuilder b("w" + std::to_string(w), pick(1, 4) * 500, static_cast<int32_t>(pick(1, 6)));
    b.Limit(pick(0, 8) == 0 ? std::nullopt : std::optional<Duration>(pick(1, 600))).Submit(now - pick(0, 900));
    if (pick(0, 4) == 0) b.Gpus(pick(1, 2));
    if (pick(0, 3) == 0) b.Kind(WorkloadKind::kSlurmJob);
    snap->pending.push_back(b);
  }
  return snap;
}

TEST(PlannerReuse, AKeptPlannerPlansEachCycleAsAFreshOne) {
  std::mt19937_64 rng(27);
  for (int policy = 0; policy < 3; ++policy) {
    QueueConfig config;
    config.resolution = 1 + policy * 10;
    if (policy == 1) config.reservation_depth = 3;
    if (policy == 2) config.backfill_shortest_first = true;
    QueuePlanner kept(config, nullptr);
    Time now = 10'000;
    for (int cycle = 0; cycle < 300; ++cycle) {
      now += std::uniform_int_distribution<Time>(0, 50)(rng);
      const std::shared_ptr<Snapshot> world = RandomWorld(rng, now);
      QueuePlanner fresh(config, nullptr);
      const std::string expected = testing::DescribePlan(fresh.PlanCycle(world, now));
      ASSERT_EQ(testing::DescribePlan(kept.PlanCycle(world, now)), expected) << "policy " << policy << " cycle " << cycle;
    }
  }
}

// Issue 27, seventh pass: QueueConfig::estimate_unreserved = false (the trace replay's) skips
// the estimated starts of the workloads without a reservation. Their searches decide nothing: the
// plan is the one made with estimates, but for those estimates, which are unknown. Over random
// worlds and policies where workloads wait past the reservation depth (starving ones reserved
// after them too, shortest first, a planner kept across cycles).
TEST(EstimatesOff, ThePlanIsTheOneWithEstimatesWithoutTheUnreservedOnes) {
  std::mt19937_64 rng(2707);
  int dropped = 0;
  for (int policy = 0; policy < 4; ++policy) {
    QueueConfig config;
    config.resolution = 1 + policy * 7;
    config.reservation_depth = policy == 1 ? 3 : 1;
    config.backfill_shortest_first = policy == 2;
    config.starvation_bound = policy == 3 ? 300 : 0;  // kReserve: starving ones reserved past the depth
    if (policy == 0) config.max_estimates_per_cycle = 2;
    QueueConfig off = config;
    off.estimate_unreserved = false;
    QueuePlanner kept_off(off, nullptr);
    Time now = 20'000;
    for (int cycle = 0; cycle < 300; ++cycle) {
      now += std::uniform_int_distribution<Time>(0, 50)(rng);
      const std::shared_ptr<Snapshot> world = RandomWorld(rng, now);
      QueuePlanner with(config, nullptr);
      Plan expected = with.PlanCycle(world, now);
      for (WaitingStatus& w : expected.waiting) {
        if (w.has_reservation || !w.estimated_start.has_value()) continue;
        w.estimated_start.reset();
        ++dropped;
      }
      ASSERT_EQ(testing::DescribePlan(kept_off.PlanCycle(world, now)), testing::DescribePlan(expected))
          << "policy " << policy << " cycle " << cycle;
    }
  }
  EXPECT_GT(dropped, 300);  // the comparison covers many estimates
}

}  // namespace
}  // namespace onequeue::queue

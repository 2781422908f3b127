// Issue 26, thirteenth pass: EarliestPlacement reads every node with room at its first candidate
// time t walking the nodes ascending and asking only a superset of those with room
// (CyclePass::ForEachStartCandidate): a node with a block end in (now, t], or one whose free now
// holds the request's amount of one resource; an estimate's search (the start alone) stops there
// once the nodes hold the members; and a packing gang's zone is put in order only as far as the
// gang takes (ChooseNodes).
// Checked against plain references:
//   - AvailabilityProfile::FirstEndAfterNow against the blocks a random walk of Adds and Removes
//     left, and the superset itself: every node with room at a later time is such a node;
//   - whole plans against the same worlds with one more node, unschedulable, running a workload of
//     negative usage: with a negative block the searches go the old way (the free index and the
//     block ends up to t; the zone's full sort), so every decision must be the same both ways.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
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

TEST(StartCandidates, EveryNodeWithRoomLaterHasAnEndSinceNowOrRoomInItsFreeNow) {
  std::mt19937_64 rng(1326);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1000;
  int with_room_later_by_an_end = 0;  // room at t only because a block ended since now
  for (int trial = 0; trial < 2'000; ++trial) {
    const int nodes = static_cast<int>(pick(1, 3));
    std::vector<Resources> capacity(nodes, Cpu(4000, 64, 2));
    AvailabilityProfile p(capacity, kNow, /*window=*/200, /*resolution=*/pick(1, 10), pick(0, 1) == 0);
    std::vector<std::vector<AvailabilityProfile::Block>> added(nodes);
    for (int b = static_cast<int>(pick(0, 10)); b > 0; --b) {
      const NodeIndex n = static_cast<NodeIndex>(pick(0, nodes - 1));
      if (!added[n].empty() && pick(0, 4) == 0) {  // take one back
        const size_t i = static_cast<size_t>(pick(0, static_cast<int64_t>(added[n].size()) - 1));
        ASSERT_TRUE(p.Remove(n, added[n][i]));
        added[n].erase(added[n].begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      AvailabilityProfile::Block block;
      block.reservation = pick(0, 1) == 0;
      block.start = block.reservation ? kNow + pick(0, 100) : kNow - pick(0, 50);
      block.end = pick(0, 9) == 0 ? kForever : std::max(block.start, kNow) + pick(0, 120);
      block.kind = pick(0, 3) == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
      block.used = Cpu(pick(0, 4) * 1000, pick(0, 32), pick(0, 2));
      p.Add(n, block);
      added[n].push_back(block);
      if (pick(0, 3) == 0) p.SealBase();
    }
    for (NodeIndex n = 0; n < nodes; ++n) {
      Time first_end = kForever;
      for (const AvailabilityProfile::Block& b : added[n]) {
        if (b.end > kNow) first_end = std::min(first_end, b.end);
      }
      ASSERT_EQ(p.FirstEndAfterNow(n), first_end) << "trial " << trial << " node " << n;
    }
    for (int q = 0; q < 10; ++q) {
      const NodeIndex n = static_cast<NodeIndex>(pick(0, nodes - 1));
      const Time t = kNow + (pick(0, 2) == 0 ? 0 : pick(1, 150));
      const Duration duration = pick(1, 100);
      const Resources request = Cpu(pick(0, 4) * 500, pick(0, 32), pick(0, 2));
      const WorkloadKind kind = pick(0, 1) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
      if (p.Copies(n, t, SaturatingAdd(t, duration), request, kind, 1) <= 0) continue;
      if (p.FirstEndAfterNow(n) <= t) {
        with_room_later_by_an_end += !p.FreeNow(n).Covers(request);
        continue;
      }
      for (int r = 0; r < kMaxResourceKinds; ++r) {
        ASSERT_GE(p.FreeNow(n)[r], request[r]) << "trial " << trial << " query " << q << " slot " << r;
      }
    }
  }
  EXPECT_GT(with_room_later_by_an_end, 100);
}

// 10-16 nodes in two zones (a quarter with GPUs, or all of them), partly busy with running work
// that ends within the window, after it or never; pending pods and jobs: single ones, gangs that
// pack into a zone, some asking GPUs, some pinned to a zone, some without a time limit.
std::shared_ptr<Snapshot> PackingWorld(std::mt19937_64& rng, Time now) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto snap = std::make_shared<Snapshot>();
  const int nodes = static_cast<int>(pick(10, 16));
  const bool gpus_everywhere = pick(0, 3) == 0;
  for (int n = 0; n < nodes; ++n) {
    const bool gpu = gpus_everywhere || n % 4 == 0;
    snap->nodes.push_back(MakeNode("n" + std::to_string(n), 4000, 1 << 30, gpu ? 4 : 0,
                                   {{"zone", n % 2 ? "a" : "b"}}));
  }
  int id = 0;
  for (int n = 0; n < nodes; ++n) {
    for (int r = static_cast<int>(pick(0, 3)); r > 0; --r) {
      const std::optional<Time> end = pick(0, 5) == 0 ? std::nullopt : std::optional<Time>(now + pick(1, 900));
      const int64_t gpus = snap->nodes[n].allocatable[kFirstExtended] > 0 ? pick(0, 2) : 0;
      snap->running.push_back(
          MakeRunning("r" + std::to_string(++id), n, Cpu(pick(1, 2) * 500, 0, gpus), now - pick(0, 300), end));
    }
  }
  for (int w = static_cast<int>(pick(5, 30)); w > 0; --w) {
    const int32_t members = static_cast<int32_t>(pick(0, 2) == 0 ? pick(2, 6) : 1);
    PendingBuilder b("w" + std::to_string(w), pick(1, 4) * 500, members);
    b.Limit(pick(0, 8) == 0 ? std::nullopt : std::optional<Duration>(pick(30, 600))).Submit(now - pick(0, 900));
    if (members > 1 && pick(0, 3) != 0) b.Pack();
    if (pick(0, 3) == 0) b.Gpus(pick(1, 3));
    if (pick(0, 4) == 0) b.Selector("zone", pick(0, 1) ? "a" : "b");
    if (pick(0, 4) == 0) b.Kind(WorkloadKind::kSlurmJob);
    snap->pending.push_back(b);
  }
  return snap;
}

TEST(StartCandidates, PlansAsTheSearchesWithoutTheShortcut) {
  std::mt19937_64 rng(13013);
  int starts = 0, reservations = 0, estimates = 0;
  for (int policy = 0; policy < 3; ++policy) {
    QueueConfig config;
    config.window = 600;
    config.resolution = policy == 1 ? 30 : 1;
    config.reservation_depth = policy == 2 ? 0 : 3;  // conservative: every blocked one reserves
    config.weights.job_size = 0;  // its factor is a share of the pool, which the extra node grows
    config.topology_labels = {"zone"};
    Time now = 10'000;
    for (int cycle = 0; cycle < 300; ++cycle) {
      now += std::uniform_int_distribution<Time>(0, 50)(rng);
      const std::shared_ptr<Snapshot> world = PackingWorld(rng, now);
      // The same world with a node no workload may use, running a workload of negative usage:
      // the profile then has a negative block, and the searches take the old way.
      auto plain = std::make_shared<Snapshot>(*world);
      Node extra = MakeNode("x", 4000, 1 << 30, 4, {{"zone", "a"}});
      extra.schedulable = false;
      plain->nodes.push_back(std::move(extra));
      plain->running.push_back(MakeRunning("negative", static_cast<NodeIndex>(plain->nodes.size() - 1),
                                           Cpu(-500, 0, 0), now - 10, now + 300));
      QueuePlanner a(config, nullptr), b(config, nullptr);
      const Plan fast = a.PlanCycle(world, now);
      ASSERT_EQ(testing::DescribePlan(fast, false), testing::DescribePlan(b.PlanCycle(plain, now), false))
          << "policy " << policy << " cycle " << cycle;
      starts += static_cast<int>(fast.starts.size());
      reservations += static_cast<int>(fast.reservations.size());
      for (const WaitingStatus& s : fast.waiting) estimates += s.estimated_start.has_value() && !s.has_reservation;
    }
  }
  EXPECT_GT(starts, 1000);
  EXPECT_GT(reservations, 300);
  EXPECT_GT(estimates, 300);  // EarliestPlacement's any_nodes: the start alone
}

}  // namespace
}  // namespace onequeue::queue

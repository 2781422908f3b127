// Issue 29: a node's windows of unavailability (Slurm advance reservations, maintenance) in the
// plan: nothing is planned on the node across a window, for pods and Slurm jobs alike; a workload
// that ends before a window starts still runs there now; after the window the node is usable.
#include <gtest/gtest.h>

#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {
using testing::Cpu;
using testing::FindReservation;
using testing::FindStart;
using testing::MakeNode;
using testing::PendingBuilder;

constexpr Time kNow = 10'000;

std::shared_ptr<Snapshot> TwoNodes() {
  auto s = std::make_shared<Snapshot>();
  s->nodes = {MakeNode("a", 4000), MakeNode("b", 4000)};
  return s;
}

TEST(NodeUnavailabilityTest, NothingIsPlannedOnANodeDuringItsWindowWhoeverAsks) {
  auto s = TwoNodes();
  s->nodes[0].unavailable = {{kNow - 60, kForever, "Slurm reservation maint (MAINT)"}};  // active, no end
  s->pending = {PendingBuilder("pod", 4000).Submit(1), PendingBuilder("slurm/7", 4000).Kind(WorkloadKind::kSlurmJob).Submit(2)};
  QueuePlanner planner(testing::SubmitOrderConfig(), nullptr);
  Plan p = planner.PlanCycle(s, kNow);
  ASSERT_NE(FindStart(p, "pod"), nullptr);
  EXPECT_EQ(FindStart(p, "pod")->member_nodes, std::vector<NodeIndex>{1});
  // The job does not start on the reserved node; it waits for b, after the pod's time limit.
  EXPECT_EQ(FindStart(p, "slurm/7"), nullptr);
  const ReserveDecision* r = FindReservation(p, "slurm/7");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->member_nodes, std::vector<NodeIndex>{1});
  EXPECT_EQ(r->start, kNow + 100);
}

TEST(NodeUnavailabilityTest, AFutureWindowTakesOnlyWhatWouldOverlapIt) {
  auto s = TwoNodes();
  s->nodes.pop_back();
  s->nodes[0].unavailable = {{kNow + 500, kNow + 1000, "Slurm reservation later"}};
  s->pending = {PendingBuilder("short", 4000).Limit(400).Submit(1),  // ends before the window: now
                PendingBuilder("long", 4000).Limit(600).Submit(2),   // would overlap: after the window
                PendingBuilder("service", 1000).Limit(std::nullopt).Submit(3)};  // never ends: never
  QueuePlanner planner(testing::SubmitOrderConfig(), nullptr);
  Plan p = planner.PlanCycle(s, kNow);
  EXPECT_NE(FindStart(p, "short"), nullptr);
  EXPECT_EQ(FindStart(p, "long"), nullptr);
  const ReserveDecision* r = FindReservation(p, "long");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, kNow + 1000);
  EXPECT_EQ(FindStart(p, "service"), nullptr);
}

TEST(NodeUnavailabilityTest, AWindowThatEndedChangesNothing) {
  auto s = TwoNodes();
  s->nodes.pop_back();
  s->nodes[0].unavailable = {{kNow - 1000, kNow, "Slurm reservation past"}};
  s->pending = {PendingBuilder("pod", 4000).Submit(1)};
  QueuePlanner planner(testing::SubmitOrderConfig(), nullptr);
  Plan p = planner.PlanCycle(s, kNow);
  EXPECT_NE(FindStart(p, "pod"), nullptr);
}

}  // namespace
}  // namespace onequeue::queue

// Issue 26: an estimate past the reservation depth may be shown by the last placement found for
// its shape (CyclePass::StartFromWitness) instead of searched; the witness is only a candidate,
// checked against the profile as it is when asked. A witness whose node filled up since must
// not be taken for the answer.
#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue::testing {
namespace {

// Now 1000; two nodes of 1000 millicores, N0 busy until 1010, N1 until 1020. In queue order (age):
//   A  1000 m, 200 s   blocked: the one reservation of the depth, N0 from 1010
//   X  1000 m, 100 s   past the depth: estimated 1020 (N1), the witness of its shape
//   Z   900 m,  30 s   starving (waited 400 >= 10 x 30): reserved past the depth, N1 from 1020
//   Y  1000 m, 120 s   X's shape, at least X's size, so not before 1020: the witness (N1 at
//                      1020) no longer fits (Z holds it), so the estimate is searched: 1050
Plan PlanWitnessScene() {
  Snapshot s;
  s.nodes = {MakeNode("N0", 1000), MakeNode("N1", 1000)};
  s.running = {MakeRunning("R0", 0, Cpu(1000), 0, 1010), MakeRunning("R1", 1, Cpu(1000), 0, 1020)};
  s.pending = {PendingBuilder("A", 1000).Limit(200).Submit(0), PendingBuilder("X", 1000).Limit(100).Submit(500),
               PendingBuilder("Z", 900).Limit(30).Submit(600), PendingBuilder("Y", 1000).Limit(120).Submit(700)};
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  c.starvation_bound = 0;
  c.starvation_bound_limits = 10;
  auto snap = std::make_shared<Snapshot>(std::move(s));
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(snap, 1000);
  CheckPlanInvariants(*snap, c, p);
  return p;
}

TEST(EstimateWitness, AWitnessWhoseNodeFilledUpSinceIsNotTheAnswer) {
  const Plan p = PlanWitnessScene();
  ASSERT_NE(FindReservation(p, "A"), nullptr);
  EXPECT_EQ(FindReservation(p, "A")->start, 1010);
  ASSERT_NE(FindReservation(p, "Z"), nullptr);
  EXPECT_EQ(FindReservation(p, "Z")->start, 1020);
  EXPECT_EQ(FindReservation(p, "Z")->member_nodes, MemberNodes{1});
  ASSERT_NE(FindWaiting(p, "X"), nullptr);
  EXPECT_EQ(FindWaiting(p, "X")->estimated_start, std::optional<Time>(1020));
  ASSERT_NE(FindWaiting(p, "Y"), nullptr);
  EXPECT_FALSE(FindWaiting(p, "Y")->has_reservation);
  EXPECT_EQ(FindWaiting(p, "Y")->estimated_start, std::optional<Time>(1050));
}

}  // namespace
}  // namespace onequeue::queue::testing

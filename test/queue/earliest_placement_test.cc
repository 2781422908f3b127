// Issue 26: the earliest-placement search's shortcuts decide as the full search did. At the
// search's start every node with room ties on "freed" (the start itself), so a one-member
// reservation takes the lowest-numbered of them, whatever order the free index visits them in
// (fullest first): CyclePass::EarliestPlacement stops looking at nodes numbered above the lowest
// found, and must not skip a lower one.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "queue/plan.h"
#include "queue/planner.h"

namespace onequeue::queue {
namespace {

Node FourCores(const std::string& name) {
  Node n;
  n.name = name;
  n.allocatable[kCpu] = 4000;
  n.allocatable[kPods] = 110;
  return n;
}

//   4 nodes of 4 cpus; node 3 runs a 1-cpu workload with no end (the free index visits it first,
//   fullest first), the others are empty. "later" (2 cpus, 100 s) may not start before 200: it
//   is reserved at 200 on node 0, the lowest-numbered node with room then.
TEST(EarliestPlacement, AOneMemberReservationTakesTheLowestNumberedNodeWithRoomAtItsStart) {
  QueueConfig config;
  config.resolution = 10;
  config.window = 100'000;
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->nodes = {FourCores("n0"), FourCores("n1"), FourCores("n2"), FourCores("n3")};
  RunningWorkload small;
  small.id = "small";
  small.kind = WorkloadKind::kSlurmJob;
  Resources one;
  one[kCpu] = 1000;
  small.allocations = {Allocation{3, one}};
  snapshot->running = {small};
  PendingWorkload later;
  later.id = "later";
  later.kind = WorkloadKind::kSlurmJob;
  later.per_member[kCpu] = 2000;
  later.time_limit = 100;
  later.not_before = 200;
  snapshot->pending = {later};
  QueuePlanner planner(config, nullptr);
  const Plan plan = planner.PlanCycle(snapshot, 0);
  ASSERT_EQ(plan.reservations.size(), 1u);
  EXPECT_EQ(plan.reservations[0].start, 200);
  EXPECT_EQ(plan.reservations[0].member_nodes, MemberNodes{0});
}

}  // namespace
}  // namespace onequeue::queue

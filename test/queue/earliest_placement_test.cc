// Issue 26: the earliest-placement search's shortcuts for one-member workloads decide as the full
// search did (CyclePass::EarliestPlacement, PreferLatestFreed). At the search's start every node
// with room ties on "freed" (the start itself), so the lowest-numbered of them is taken, whatever
// order the free index visits them in (fullest first): the search stops looking at nodes numbered
// above the lowest found, and must not skip a lower one. At a later time (a batch of block ends
// rounded onto the grid) the node whose block ended latest is taken, the lowest-numbered among
// equal ends: the batch is asked in that order and stops at the first node with room.
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

//   4 nodes of 4 cpus, all full: node 0 until 110, nodes 1 and 2 until 150, node 3 until 120 and
//   130 (two workloads). On the 100 s grid all free at 200. "wide" (4 cpus) is reserved at 200
//   on node 1: the latest end (150), the lower of the two nodes that share it.
TEST(EarliestPlacement, AOneMemberReservationTakesTheNodeFreedLatestInItsBatchLowestNumberFirst) {
  QueueConfig config;
  config.resolution = 100;
  config.window = 100'000;
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->nodes = {FourCores("n0"), FourCores("n1"), FourCores("n2"), FourCores("n3")};
  auto running = [](const std::string& id, NodeIndex node, int64_t cpu, Time end) {
    RunningWorkload r;
    r.id = id;
    r.kind = WorkloadKind::kSlurmJob;
    Resources used;
    used[kCpu] = cpu;
    r.allocations = {Allocation{node, used}};
    r.expected_end = end;
    return r;
  };
  snapshot->running = {running("r0", 0, 4000, 110), running("r1", 1, 4000, 150), running("r2", 2, 4000, 150),
                       running("r3a", 3, 2000, 120), running("r3b", 3, 2000, 130)};
  PendingWorkload wide;
  wide.id = "wide";
  wide.kind = WorkloadKind::kSlurmJob;
  wide.per_member[kCpu] = 4000;
  wide.time_limit = 100;
  snapshot->pending = {wide};
  QueuePlanner planner(config, nullptr);
  const Plan plan = planner.PlanCycle(snapshot, 0);
  ASSERT_EQ(plan.reservations.size(), 1u);
  EXPECT_EQ(plan.reservations[0].start, 200);
  EXPECT_EQ(plan.reservations[0].member_nodes, MemberNodes{1});
}

}  // namespace
}  // namespace onequeue::queue

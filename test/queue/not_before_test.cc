// Issue 29: PendingWorkload::not_before, the earliest time a workload may start (a Slurm job's
// dependency on a running parent: the parent's expected end). Before it the queue neither starts
// nor preempts for the workload; it reserves it from not_before on, waiting with
// WaitReason::kDependency, and blocks nobody meanwhile (no reservation of the depth, no blocked
// queue), so what is behind it backfills around its slot.
#include <gtest/gtest.h>

#include <memory>

#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT

constexpr Time kNow = 10;

Plan PlanOnce(Snapshot s, QueueConfig c = SubmitOrderConfig()) {
  auto snap = std::make_shared<Snapshot>(std::move(s));
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(snap, kNow);
  CheckPlanInvariants(*snap, c, p);
  return p;
}

PendingWorkload Child(int64_t cpu, Time not_before, Time submit = 0) {
  PendingWorkload w = PendingBuilder("slurm/2", cpu).Kind(WorkloadKind::kSlurmJob).Submit(submit);
  w.not_before = not_before;
  w.admission_message = "waits for its dependency: job 1 ends by its time limit";
  return w;
}

TEST(NotBeforeTest, AWorkloadThatFitsNowIsNotStartedBeforeItsNotBefore) {
  Snapshot s;
  s.nodes = {MakeNode("n1", 8000)};
  s.pending = {Child(8000, 500)};
  Plan p = PlanOnce(s);
  EXPECT_EQ(FindStart(p, "slurm/2"), nullptr);
  const WaitingStatus* w = FindWaiting(p, "slurm/2");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, WaitReason::kDependency);
  EXPECT_EQ(std::string(WaitReasonName(w->reason)), "Dependency");
  EXPECT_EQ(w->Message(), "waits for its dependency: job 1 ends by its time limit");
  EXPECT_TRUE(w->has_reservation);
  EXPECT_EQ(w->estimated_start, 500);
}

TEST(NotBeforeTest, ItIsReservedAtNotBeforeWhereItsParentEnds) {
  // The parent runs on n1 until 1000; the child asks the whole node and may start at 1000.
  Snapshot s;
  s.nodes = {MakeNode("n1", 8000)};
  s.running = {MakeRunning("slurm/1", 0, Cpu(8000), 0, 1000)};
  s.pending = {Child(8000, 1000)};
  Plan p = PlanOnce(s);
  const ReserveDecision* r = FindReservation(p, "slurm/2");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, 1000);
  EXPECT_EQ(FindWaiting(p, "slurm/2")->reason, WaitReason::kDependency);
}

TEST(NotBeforeTest, AReservationFallsAtTheFirstRoomAfterNotBefore) {
  // Another job holds the node past not_before: the reservation is at its end, not before.
  Snapshot s;
  s.nodes = {MakeNode("n1", 8000)};
  s.running = {MakeRunning("other", 0, Cpu(8000), 0, 3000)};
  s.pending = {Child(8000, 1000)};
  Plan p = PlanOnce(s);
  const ReserveDecision* r = FindReservation(p, "slurm/2");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, 3000);
}

TEST(NotBeforeTest, BackfillBehindItIsNotDelayedAndDoesNotDelayIt) {
  // The child comes first in the queue and asks the whole node from 1000. B (ends at 510) starts
  // now, as it would without the child; C (would run to 5010) is kept off the child's slot.
  Snapshot s;
  s.nodes = {MakeNode("n1", 8000)};
  s.pending = {Child(8000, 1000, /*submit=*/0), PendingBuilder("ns/b", 8000).Limit(500).Submit(1),
               PendingBuilder("ns/c", 8000).Limit(5000).Submit(2)};
  Plan p = PlanOnce(s);
  ASSERT_NE(FindStart(p, "ns/b"), nullptr);
  EXPECT_FALSE(FindStart(p, "ns/b")->backfilled) << "the child blocks nobody";
  EXPECT_EQ(FindStart(p, "ns/c"), nullptr);
  ASSERT_NE(FindReservation(p, "slurm/2"), nullptr);
  EXPECT_EQ(FindReservation(p, "slurm/2")->start, 1000);
}

TEST(NotBeforeTest, ItTakesNoReservationOfTheDepthNorBlocksStrictOrder) {
  // EASY (depth 1): the blocked D behind the child still gets the one reservation of the depth.
  Snapshot s;
  s.nodes = {MakeNode("n1", 8000)};
  s.running = {MakeRunning("R", 0, Cpu(8000), 0, 100)};
  s.pending = {Child(8000, 2000, /*submit=*/0), PendingBuilder("ns/d", 8000).Limit(300).Submit(1)};
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  Plan p = PlanOnce(s, c);
  ASSERT_NE(FindReservation(p, "ns/d"), nullptr);
  EXPECT_EQ(FindReservation(p, "ns/d")->start, 100);
  ASSERT_NE(FindReservation(p, "slurm/2"), nullptr);
  EXPECT_EQ(FindReservation(p, "slurm/2")->start, 2000);
  // Strict order: the child does not stop the pass, E behind it starts on the free node.
  Snapshot strict;
  strict.nodes = {MakeNode("n1", 8000)};
  strict.pending = {Child(8000, 2000, /*submit=*/0), PendingBuilder("ns/e", 8000).Limit(300).Submit(1)};
  c.backfill = BackfillMode::kNone;
  Plan q = PlanOnce(strict, c);
  EXPECT_NE(FindStart(q, "ns/e"), nullptr);
}

TEST(NotBeforeTest, ANotBeforeThatHasPassedIsNoBar) {
  Snapshot s;
  s.nodes = {MakeNode("n1", 8000)};
  s.pending = {Child(8000, kNow)};
  Plan p = PlanOnce(s);
  EXPECT_NE(FindStart(p, "slurm/2"), nullptr);
}

}  // namespace
}  // namespace onequeue::queue

// Scenario tests of one scheduling cycle after another: workloads in -> decisions out. The
// cluster here is a small in-memory world that behaves like the real one where it matters: a
// bind sets nodeName, an eviction deletes the pod, and a "ReplicaSet" recreates every evicted
// replica at once (the replacement that wins the node back under the default scheduler).
#include "scheduler/scheduling_loop.h"

#include "fake_world.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;

TEST(SchedulingLoopTest, BindsWhatFitsAndNeverGivesCapacityAwayTwice) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("a", "3", "scavenger");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  CycleStats s = loop.RunCycle(kNow);
  EXPECT_EQ(s.bound, 1);
  EXPECT_THAT(w.binds, ::testing::ElementsAre("ns/a->n1"));
  EXPECT_THAT(w.bind_messages[0], ::testing::HasSubstr("priority"));
  // A second pod that does not fit beside the first waits, with a reason, reported once.
  w.AddPod("b", "3", "scavenger");
  loop.RunCycle(kNow + 1);
  loop.RunCycle(kNow + 2);
  EXPECT_EQ(w.binds.size(), 1u);
  ASSERT_EQ(w.reports["ns/b"].size(), 1u);
  EXPECT_FALSE(w.reports["ns/b"][0].reason.empty());
  EXPECT_EQ(w.reports["ns/b"][0].queue_position, 1);
}

TEST(SchedulingLoopTest, PreemptionCannotLoopTheReplacementNeverWinsTheNodeBack) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("batch", "4", "scavenger", "n1", "2026-11-21T09:00:00Z");
  w.AddPod("jupyter", "2", "interactive");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);

  CycleStats s = loop.RunCycle(kNow);
  EXPECT_EQ(s.preemptions_started, 1);
  EXPECT_THAT(w.evictions, ::testing::ElementsAre("ns/batch"));
  EXPECT_EQ(w.Find("ns/jupyter")->nominated_node_name, "n1");
  EXPECT_EQ(loop.reservations().at("n1"), "ns/jupyter");

  // The victim's replacement exists now. Cycles go on: the preemptor gets the node, the
  // replacement never does, and the victim is evicted exactly once.
  for (int i = 1; i <= 5; ++i) loop.RunCycle(kNow + i);
  EXPECT_EQ(w.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(w.NodeOf("ns/batch-r"), "");
  EXPECT_THAT(w.evictions, ::testing::ElementsAre("ns/batch"));
  for (const auto& b : w.binds) EXPECT_NE(b, "ns/batch-r->n1");
  // The reservation is released once the preemptor is bound.
  EXPECT_TRUE(loop.reservations().empty());
  EXPECT_EQ(w.Nodes()[0].metadata.annotations.count(kOwnerAnnotation), 0u);
}

TEST(SchedulingLoopTest, ReplacementWaitsWithReservedForHigherPriorityWhileVictimsLeave) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("batch", "4", "scavenger", "n1", "2026-11-21T09:00:00Z");
  w.AddPod("jupyter", "4", "interactive");
  w.recreate_evicted = true;
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  // Simulate a slow preemptor bind: a replica appears before the preemptor is bound. It must not
  // take n1: n1 is reserved(jupyter) in the snapshot.
  loop.RunCycle(kNow + 1);
  EXPECT_EQ(w.NodeOf("ns/batch-r"), "");
  EXPECT_EQ(w.NodeOf("ns/jupyter"), "n1");
}

TEST(SchedulingLoopTest, PdbRefusalRollsTheWholeStepBack) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("batch", "4", "scavenger", "n1", "2026-11-21T09:00:00Z");
  w.AddPod("jupyter", "2", "interactive");
  w.pdb_blocks.insert("ns/batch");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  CycleStats s = loop.RunCycle(kNow);
  EXPECT_EQ(s.rollbacks, 1);
  EXPECT_TRUE(w.evictions.empty());
  EXPECT_TRUE(loop.reservations().empty());
  EXPECT_EQ(w.Nodes()[0].metadata.annotations.count(kOwnerAnnotation), 0u)
      << "no node stays reserved without a live preemption";
  EXPECT_EQ(w.NodeOf("ns/batch"), "n1");
}

TEST(SchedulingLoopTest, ARestartedSchedulerRecoversReservationsFromNodeAnnotations) {
  World w;
  w.AddNode("n1", "4");
  w.AddNode("n2", "4");
  w.SetNodeOwner("n1", "reserved/ns/jupyter");
  w.AddPod("jupyter", "2", "interactive");
  w.AddPod("low", "2", "scavenger", "", "2026-11-21T08:00:00Z");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);  // a fresh process: nothing in memory
  loop.RunCycle(kNow);
  EXPECT_EQ(w.NodeOf("ns/low"), "n2") << "the low-priority pod must not take the reserved node";
  EXPECT_EQ(w.NodeOf("ns/jupyter"), "n1");
  loop.RunCycle(kNow + 1);
  EXPECT_TRUE(loop.reservations().empty());
}

// Found end to end (test/e2e/preemption_e2e_test.cc): after a refusal the preemptor was retried
// every cycle (a reservation written and an eviction refused several times a second), its
// nomination stayed, and its report said only "preempting".
TEST(SchedulingLoopTest, PdbRefusalIsReportedClearsTheNominationAndBacksOff) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("batch", "4", "scavenger", "n1", "2026-11-21T09:00:00Z");
  w.AddPod("jupyter", "2", "interactive");
  w.pdb_blocks.insert("ns/batch");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  EXPECT_EQ(w.evict_attempts, 1);
  EXPECT_EQ(w.Find("ns/jupyter")->nominated_node_name, "");
  ASSERT_FALSE(w.reports["ns/jupyter"].empty());
  const WaitReport& r = w.reports["ns/jupyter"].back();
  EXPECT_EQ(r.reason, "Resources");
  EXPECT_THAT(r.message, ::testing::HasSubstr("PodDisruptionBudget"));
  EXPECT_THAT(r.message, ::testing::HasSubstr("ns/batch"));
  for (int i = 1; i < 30; ++i) loop.RunCycle(kNow + i);
  EXPECT_EQ(w.evict_attempts, 1) << "a refused preemption is not retried every cycle";
  EXPECT_EQ(w.reports["ns/jupyter"].size(), 1u) << "the same refusal is reported once";
  loop.RunCycle(kNow + 31);
  EXPECT_EQ(w.evict_attempts, 2) << "retried once the back-off has passed";
  w.pdb_blocks.clear();
  loop.RunCycle(kNow + 62);
  EXPECT_THAT(w.evictions, ::testing::ElementsAre("ns/batch"));
}

// Found end to end: a scheduler that crashed after writing the reservation but before evicting
// left a reservation its successor recovered and then waited on for ever (it never evicted).
TEST(SchedulingLoopTest, ASuccessorFinishesAStepThatCrashedBeforeItsEvictions) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("batch", "4", "scavenger", "n1", "2026-11-21T09:00:00Z");
  w.AddPod("jupyter", "2", "interactive");
  w.SetNodeOwner("n1", "reserved/ns/jupyter");
  w.Nominate("ns/jupyter", "n1");
  w.recreate_evicted = true;
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);  // the successor: nothing in memory
  loop.RunCycle(kNow);
  EXPECT_THAT(w.evictions, ::testing::ElementsAre("ns/batch"));
  for (int i = 1; i < 4; ++i) loop.RunCycle(kNow + i);
  EXPECT_THAT(w.evictions, ::testing::ElementsAre("ns/batch")) << "each victim once";
  EXPECT_EQ(w.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(w.NodeOf("ns/batch-r"), "");
  EXPECT_TRUE(loop.reservations().empty());
  EXPECT_EQ(w.Nodes()[0].metadata.annotations.count(kOwnerAnnotation), 0u);
}

// A successor that finds the victim already leaving (its predecessor evicted it) does not evict
// it a second time.
TEST(SchedulingLoopTest, ASuccessorDoesNotEvictAVictimThatIsAlreadyLeaving) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("batch", "4", "scavenger", "n1", "2026-11-21T09:00:00Z");
  w.Find("ns/batch")->metadata.deletion_timestamp = "2026-11-21T10:59:59Z";
  w.AddPod("jupyter", "2", "interactive");
  w.SetNodeOwner("n1", "reserved/ns/jupyter");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  loop.RunCycle(kNow + 1);
  EXPECT_EQ(w.evict_attempts, 0);
  EXPECT_EQ(w.NodeOf("ns/jupyter"), "");
  EXPECT_FALSE(loop.reservations().empty()) << "the reservation holds while the victim leaves";
}

TEST(SchedulingLoopTest, QosMapsOntoQueueConfig) {
  queue::QueueConfig q = ToQueueConfig(TestConfig());
  ASSERT_EQ(q.qos.size(), 2u);
  EXPECT_THAT(q.qos[0].can_preempt, ::testing::ElementsAre("scavenger"));
  EXPECT_TRUE(q.qos[1].can_preempt.empty());
  EXPECT_EQ(q.reservation_depth, 1);
}

}  // namespace
}  // namespace onequeue::scheduler

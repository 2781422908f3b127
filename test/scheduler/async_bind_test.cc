// Binding off the cycle (issue 12): the cycle decides and assumes, the bindings go out without
// waiting, many in flight, and their results are drained at the start of the next cycle. A
// failed binding is forgotten (kube-scheduler's Unreserve) and the pod planned again; a gang
// whose members partly bound is completed, never left waiting for members that exist.
// The world answers bindings only when the test says so (World::async_binds, CompleteBinds).
#include "scheduler/scheduling_loop.h"

#include "fake_world.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onequeue::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::vector<std::string> InFlight(const World& w) {
  std::vector<std::string> out;
  for (const auto& b : w.in_flight) out.push_back(b.key + "->" + b.node);
  return out;
}

TEST(AsyncBindTest, BindsOfOneCycleAreAllInFlightBeforeAnyCompletes) {
  World w;
  w.async_binds = true;
  for (const char* n : {"n1", "n2", "n3"}) w.AddNode(n, "4");
  for (const char* p : {"a", "b", "c"}) w.AddPod(p, "3", "scavenger");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);

  CycleStats first = loop.RunCycle(kNow);
  // All three were sent in the cycle; none has been answered, and the cycle did not wait.
  EXPECT_EQ(w.in_flight.size(), 3u);
  EXPECT_THAT(w.binds, IsEmpty());
  EXPECT_EQ(loop.bindings_in_flight(), 3u);
  EXPECT_EQ(first.bound, 0);

  // A cycle while they are in flight: the assumed pods hold their nodes, so a fourth pod that
  // fits nowhere beside them waits, and no binding is sent twice.
  w.AddPod("d", "3", "scavenger");
  CycleStats second = loop.RunCycle(kNow + 1);
  EXPECT_EQ(w.in_flight.size(), 3u);
  EXPECT_EQ(second.waiting, 1);
  EXPECT_FALSE(w.reports["ns/d"].empty());

  // The answers arrive; the next cycle drains them: counted, events recorded, nothing in flight.
  w.CompleteBinds();
  CycleStats third = loop.RunCycle(kNow + 2);
  EXPECT_EQ(third.bound, 3);
  EXPECT_EQ(third.bind_errors, 0);
  EXPECT_EQ(loop.bindings_in_flight(), 0u);
  EXPECT_EQ(w.bind_succeeded.size(), 3u);
  std::set<std::string> nodes;
  for (const char* p : {"ns/a", "ns/b", "ns/c"}) nodes.insert(w.NodeOf(p));
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(w.NodeOf("ns/d"), "");
}

TEST(AsyncBindTest, AFailedBindIsForgottenAndThePodIsPlannedAgain) {
  World w;
  w.async_binds = true;
  w.AddNode("n1", "4");
  w.AddPod("a", "3", "scavenger");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);

  loop.RunCycle(kNow);
  ASSERT_THAT(InFlight(w), ElementsAre("ns/a->n1"));
  w.fail_binds = {"ns/a"};
  w.CompleteBinds();
  EXPECT_EQ(w.NodeOf("ns/a"), "");

  // The failure is drained at the start of the cycle: the assumption is forgotten, the node is
  // free again, and the same cycle's plan places the pod anew.
  CycleStats retry = loop.RunCycle(kNow + 1);
  EXPECT_EQ(retry.bind_errors, 1);
  EXPECT_EQ(retry.bound, 0);
  EXPECT_THAT(InFlight(w), ElementsAre("ns/a->n1"));
  EXPECT_THAT(w.bind_succeeded, IsEmpty());

  w.fail_binds.clear();
  w.CompleteBinds();
  CycleStats done = loop.RunCycle(kNow + 2);
  EXPECT_EQ(done.bound, 1);
  EXPECT_EQ(w.NodeOf("ns/a"), "n1");
  EXPECT_THAT(w.bind_succeeded, ElementsAre("ns/a->n1"));
  EXPECT_THAT(w.binds, ElementsAre("ns/a->n1"));
}

TEST(AsyncBindTest, AFailedBindFreesTheCapacityForAnotherPod) {
  World w;
  w.async_binds = true;
  w.AddNode("n1", "4");
  w.AddPod("a", "3", "scavenger");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  ASSERT_THAT(InFlight(w), ElementsAre("ns/a->n1"));
  // a is deleted while its binding is in flight: the binding fails (NotFound) and n1 is free.
  w.DeletePod("ns/a");
  w.AddPod("b", "3", "scavenger");
  w.CompleteBinds();
  CycleStats s = loop.RunCycle(kNow + 1);
  EXPECT_EQ(s.bind_errors, 1);
  EXPECT_THAT(InFlight(w), ElementsAre("ns/b->n1"));
}

TEST(AsyncBindTest, AGangMemberFailingDoesNotLeaveTheGangWaitingForEver) {
  World w;
  w.async_binds = true;
  for (const char* n : {"n1", "n2", "n3"}) w.AddNode(n, "4");
  for (const char* member : {"train-0", "train-1", "train-2"}) {
    w.AddPod(member, "3", "interactive");
    w.Find(std::string("ns/") + member)->metadata.annotations[kGroupAnnotation] = "train";
    w.Find(std::string("ns/") + member)->metadata.annotations[kGroupSizeAnnotation] = "3";
  }
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);

  loop.RunCycle(kNow);
  ASSERT_EQ(w.in_flight.size(), 3u);  // the whole gang at once
  w.fail_binds = {"ns/train-1"};
  w.CompleteBinds();
  EXPECT_EQ(w.NodeOf("ns/train-1"), "");

  // train-0 and train-2 run; train-1 is forgotten and placed again as the rest of its gang
  // (not GangIncomplete: its siblings exist and run).
  CycleStats retry = loop.RunCycle(kNow + 1);
  EXPECT_EQ(retry.bind_errors, 1);
  ASSERT_EQ(w.in_flight.size(), 1u);
  EXPECT_EQ(w.in_flight[0].key, "ns/train-1");
  for (const auto& r : w.reports["ns/train-1"]) EXPECT_NE(r.reason, "GangIncomplete");

  w.fail_binds.clear();
  w.CompleteBinds();
  CycleStats done = loop.RunCycle(kNow + 2);
  EXPECT_EQ(done.bound, 1);
  std::set<std::string> nodes;
  for (const char* p : {"ns/train-0", "ns/train-1", "ns/train-2"}) nodes.insert(w.NodeOf(p));
  EXPECT_EQ(nodes, (std::set<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(loop.bindings_in_flight(), 0u);
}

TEST(AsyncBindTest, AGangWhoseMembersAreMissingStillWaitsWhole) {
  // The rest-of-a-gang rule applies only when the members that exist and run make the group
  // complete: two of three members, none bound, still wait (GangIncomplete), never bound alone.
  World w;
  w.async_binds = true;
  for (const char* n : {"n1", "n2", "n3"}) w.AddNode(n, "4");
  for (const char* member : {"train-0", "train-1"}) {
    w.AddPod(member, "3", "interactive");
    w.Find(std::string("ns/") + member)->metadata.annotations[kGroupAnnotation] = "train";
    w.Find(std::string("ns/") + member)->metadata.annotations[kGroupSizeAnnotation] = "3";
  }
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  loop.RunCycle(kNow + 1);
  EXPECT_THAT(w.in_flight, IsEmpty());
  ASSERT_FALSE(w.reports["ns/train-0"].empty());
  EXPECT_EQ(w.reports["ns/train-0"].back().reason, "GangIncomplete");
}

}  // namespace
}  // namespace onequeue::scheduler

// Issue 28: a workload's node preference (PendingWorkload::node_preference: kube-scheduler's
// scores for preferred node affinity, PreferNoSchedule taints, ...) breaks ties between the nodes
// the queue finds equal, for a start now and for a reservation; without one, nothing changes.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT

Plan RunWith(const QueueConfig& c, Snapshot s, Time now) {
  auto snap = std::make_shared<Snapshot>(std::move(s));
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(snap, now);
  CheckPlanInvariants(*snap, c, p);
  return p;
}

PendingWorkload Preferring(PendingWorkload w, std::vector<int32_t> scores) {
  w.node_preference = std::make_shared<const std::vector<int32_t>>(std::move(scores));
  return w;
}

TEST(NodePreference, TwoEqualNodesThePodPrefersTheSecondStartsOnTheSecond) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000), MakeNode("n1", 4000)};
  s.pending = {Preferring(PendingBuilder("P", 1000).Submit(0), {0, 10})};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindStart(p, "P"), nullptr);
  EXPECT_EQ(FindStart(p, "P")->member_nodes, (MemberNodes{1}));

  // Without the preference: the first node, as always.
  s.pending = {PendingBuilder("P", 1000).Submit(0)};
  p = RunWith(SubmitOrderConfig(), s, 0);
  EXPECT_EQ(FindStart(p, "P")->member_nodes, (MemberNodes{0}));
}

TEST(NodePreference, EqualScoresKeepTheNodeOrder) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000), MakeNode("n1", 4000), MakeNode("n2", 4000)};
  s.pending = {Preferring(PendingBuilder("P", 1000).Submit(0), {0, 5, 5})};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindStart(p, "P"), nullptr);
  EXPECT_EQ(FindStart(p, "P")->member_nodes, (MemberNodes{1}));
}

TEST(NodePreference, APreferredNodeWithoutRoomIsPassedOver) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000), MakeNode("n1", 4000), MakeNode("n2", 4000)};
  s.running = {MakeRunning("R", 2, Cpu(4000), 0, 100)};
  s.pending = {Preferring(PendingBuilder("P", 1000).Submit(0), {0, 1, 9})};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindStart(p, "P"), nullptr);
  EXPECT_EQ(FindStart(p, "P")->member_nodes, (MemberNodes{1}));
}

TEST(NodePreference, AGangFillsItsPreferredNodesFirst) {
  Snapshot s;
  for (int i = 0; i < 4; ++i) s.nodes.push_back(MakeNode("n" + std::to_string(i), 1000));
  s.pending = {Preferring(PendingBuilder("G", 1000, 2).Submit(0), {0, 3, 1, 3})};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindStart(p, "G"), nullptr);
  MemberNodes nodes = FindStart(p, "G")->member_nodes;
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (MemberNodes{1, 3}));
}

// A reservation of two members at 40: n0 frees at 30, n1 and n2 at 40. Without a preference the
// nodes freed latest (n1, n2) are taken; with one for n0 and n2, those.
TEST(NodePreference, AReservationTakesThePreferredNodesAmongThoseFreeAtItsStart) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 1000), MakeNode("n1", 1000), MakeNode("n2", 1000)};
  s.running = {MakeRunning("R0", 0, Cpu(1000), 0, 30), MakeRunning("R1", 1, Cpu(1000), 0, 40),
               MakeRunning("R2", 2, Cpu(1000), 0, 40)};
  s.pending = {PendingBuilder("H", 1000, 2).Limit(100).Submit(0)};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindReservation(p, "H"), nullptr);
  EXPECT_EQ(FindReservation(p, "H")->start, 40);
  MemberNodes nodes = FindReservation(p, "H")->member_nodes;
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (MemberNodes{1, 2}));

  s.pending = {Preferring(PendingBuilder("H", 1000, 2).Limit(100).Submit(0), {9, 0, 1})};
  p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindReservation(p, "H"), nullptr);
  EXPECT_EQ(FindReservation(p, "H")->start, 40);
  nodes = FindReservation(p, "H")->member_nodes;
  std::sort(nodes.begin(), nodes.end());
  EXPECT_EQ(nodes, (MemberNodes{0, 2}));
}

// A vector that does not name every node is no preference (never read out of bounds).
TEST(NodePreference, AScoreVectorOfTheWrongLengthIsIgnored) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000), MakeNode("n1", 4000)};
  s.pending = {Preferring(PendingBuilder("P", 1000).Submit(0), {0})};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindStart(p, "P"), nullptr);
  EXPECT_EQ(FindStart(p, "P")->member_nodes, (MemberNodes{0}));
}

}  // namespace
}  // namespace onequeue::queue

// Scenario tests that read "workloads in -> start order / decisions out" (Slurm's
// testsuite/slurm_unit/backfill and flux's t1003-qmanager-policy style).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT

struct Expected {
  std::vector<std::string> started;
  std::vector<std::pair<std::string, Time>> reserved;  // workload -> reservation start
};

void ExpectPlan(const Plan& p, const Expected& e) {
  EXPECT_EQ(StartedIds(p), e.started);
  std::vector<std::pair<std::string, Time>> reserved;
  for (const auto& r : p.reservations) reserved.emplace_back(r.workload, r.start);
  EXPECT_EQ(reserved, e.reserved);
}

Plan RunWith(QueueConfig c, Snapshot s, Time now) {
  auto snap = std::make_shared<Snapshot>(std::move(s));
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(snap, now);
  CheckPlanInvariants(*snap, c, p);
  return p;
}

// The textbook difference between EASY and conservative backfill (Mu'alem & Feitelson 2001):
// one 10-cpu node; R runs on 6 cpus until t=100.
//   J1  8 cpus 100 s   blocked: every policy reserves it at t=100
//   J2  9 cpus 100 s   blocked behind J1: conservative reserves t=200, EASY does not reserve
//   J3  2 cpus 250 s   fits now; it would delay J2 (2 + 9 > 10 at t=200) but not J1:
//                      EASY starts it, conservative reserves it after J2 (t=300)
//   J4  2 cpus  50 s   fits now and ends before anything reserved: starts under every backfill
Snapshot TextbookSnapshot() {
  Snapshot s;
  s.nodes = {MakeNode("n0", 10000)};
  s.running = {MakeRunning("R", 0, Cpu(6000), 0, 100)};
  s.pending = {PendingBuilder("J1", 8000).Limit(100).Submit(1),
               PendingBuilder("J2", 9000).Limit(100).Submit(2),
               PendingBuilder("J3", 2000).Limit(250).Submit(3),
               PendingBuilder("J4", 2000).Limit(50).Submit(4)};
  return s;
}

// A waiting status names its workload by a view of the id in the plan's snapshot, which the plan
// keeps alive: it stays valid after the planner and every other reference to the snapshot are
// gone (ids longer than the small-string buffer, as real namespace/name ids are).
TEST(Scenario, WaitingIdsViewThePlansSnapshot) {
  Snapshot s = TextbookSnapshot();
  for (auto& w : s.pending) w.id = "some-namespace/a-rather-long-pod-group-name-" + w.id;
  Plan p = RunWith(SubmitOrderConfig(), std::move(s), 0);  // planner and caller's pointer gone
  ASSERT_NE(p.snapshot, nullptr);
  ASSERT_FALSE(p.waiting.empty());
  for (const WaitingStatus& w : p.waiting) {
    bool inside = false;
    for (const PendingWorkload& pending : p.snapshot->pending) {
      inside |= w.workload.data() == pending.id.data() && w.workload == pending.id;
    }
    EXPECT_TRUE(inside) << w.workload;
  }
  EXPECT_NE(FindWaiting(p, "some-namespace/a-rather-long-pod-group-name-J1"), nullptr);
}

TEST(Scenario, TextbookEasy) {
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  Plan p = RunWith(c, TextbookSnapshot(), 0);
  ExpectPlan(p, {{"J3", "J4"}, {{"J1", 100}}});
  EXPECT_TRUE(FindStart(p, "J3")->backfilled);
  EXPECT_EQ(FindWaiting(p, "J1")->reason, WaitReason::kResources);
  EXPECT_EQ(FindWaiting(p, "J2")->reason, WaitReason::kPriority);
  EXPECT_FALSE(FindWaiting(p, "J2")->has_reservation);
  // Estimated from the profile when J2 was examined (before J3 backfilled: EASY's known cost).
  EXPECT_EQ(FindWaiting(p, "J2")->estimated_start, std::optional<Time>(200));
}

TEST(Scenario, TextbookConservative) {
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 0;
  Plan p = RunWith(c, TextbookSnapshot(), 0);
  ExpectPlan(p, {{"J4"}, {{"J1", 100}, {"J2", 200}, {"J3", 300}}});
  EXPECT_EQ(FindWaiting(p, "J3")->estimated_start, std::optional<Time>(300));
}

TEST(Scenario, TextbookHybridDepthTwo) {
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 2;
  Plan p = RunWith(c, TextbookSnapshot(), 0);
  // J1 and J2 reserved; J3 is beyond the depth and would delay J2: it waits unreserved.
  ExpectPlan(p, {{"J4"}, {{"J1", 100}, {"J2", 200}}});
  EXPECT_EQ(FindWaiting(p, "J3")->estimated_start, std::optional<Time>(300));
}

TEST(Scenario, TextbookFcfs) {
  QueueConfig c = SubmitOrderConfig();
  c.backfill = BackfillMode::kNone;
  Plan p = RunWith(c, TextbookSnapshot(), 0);
  ExpectPlan(p, {{}, {{"J1", 100}}});
  EXPECT_EQ(FindWaiting(p, "J4")->reason, WaitReason::kPriority);
}

// Slurm's bf_resolution: reservation starts are rounded up onto the grid now + k * resolution.
TEST(Scenario, ResolutionRoundsReservationsUp) {
  QueueConfig c = SubmitOrderConfig();
  c.resolution = 60;
  Plan p = RunWith(c, TextbookSnapshot(), 0);
  ASSERT_NE(FindReservation(p, "J1"), nullptr);
  EXPECT_EQ(FindReservation(p, "J1")->start, 120);
}

// bf_window: nothing is reserved beyond now + window.
TEST(Scenario, BeyondTheWindowIsUnknown) {
  QueueConfig c = SubmitOrderConfig();
  c.window = 50;
  Plan p = RunWith(c, TextbookSnapshot(), 0);
  const WaitingStatus* w = FindWaiting(p, "J1");
  EXPECT_EQ(w->reason, WaitReason::kBeyondWindow);
  EXPECT_FALSE(w->estimated_start.has_value());
}

// Issue 15, part 1: the instant at which oq simulate's EASY diverged from textbook EASY on an
// archive trace. One node per processor, 100 of them: p0..p9 are free, R80 holds p10..p89 until
// T = 100, R10 holds p90..p99 until 500.
//   H  80 processors, 100 s   blocked: reserved at T = 100, when 90 processors are free
//   A  10 processors, 300 s   ends after T, but fits in the 10 processors H leaves spare at T:
//                             textbook EASY starts it now (it delays nobody)
//   B   5 processors,  50 s   ends before T; once A runs nothing is free: it waits
// The reservation must take the 80 processors that are busy now (R80's), not the 10 free ones:
// reserving p0..p9 plus 70 of R80's let B start instead of A.
Snapshot SpareProcessorsSnapshot() {
  Snapshot s;
  for (int i = 0; i < 100; ++i) s.nodes.push_back(MakeNode("p" + std::to_string(i), 1000));
  auto job = [](std::string id, NodeIndex first, NodeIndex last, Time end) {
    RunningWorkload r = MakeRunning(std::move(id), first, Cpu(1000), 0, end);
    for (NodeIndex n = first + 1; n <= last; ++n) r.allocations.push_back(Allocation{n, Cpu(1000)});
    return r;
  };
  s.running = {job("R80", 10, 89, 100), job("R10", 90, 99, 500)};
  s.pending = {PendingBuilder("H", 1000, 80).Limit(100).Submit(1),
               PendingBuilder("A", 1000, 10).Limit(300).Submit(2),
               PendingBuilder("B", 1000, 5).Limit(50).Submit(3)};
  for (PendingWorkload& w : s.pending) w.gang = true;
  return s;
}

TEST(Scenario, EasyBackfillsIntoTheReservationsSpareNodes) {
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  Plan p = RunWith(c, SpareProcessorsSnapshot(), 0);
  ExpectPlan(p, {{"A"}, {{"H", 100}}});
  MemberNodes busy_now;
  for (NodeIndex n = 10; n < 90; ++n) busy_now.push_back(n);
  ASSERT_NE(FindReservation(p, "H"), nullptr);
  MemberNodes reserved = FindReservation(p, "H")->member_nodes;
  std::sort(reserved.begin(), reserved.end());
  EXPECT_EQ(reserved, busy_now);
  ASSERT_NE(FindStart(p, "A"), nullptr);
  EXPECT_TRUE(FindStart(p, "A")->backfilled);
  EXPECT_EQ(FindWaiting(p, "B")->reason, WaitReason::kPriority);
}

// Among the nodes free at the reservation's start, the reservation takes those whose current
// holders end latest: n0 is free, n1 frees at 10, n2 at 20, R3 holds n3..n5 until 30. H (4 nodes)
// is reserved at 30 on n3..n5 and n2 (20 beats 10 and free-now), so the one-node job L, which runs
// past 30, still starts now on n0 (textbook EASY: 6 free at 30, 2 spare, 1 free now).
TEST(Scenario, ReservationTakesTheNodesWhoseHoldersEndLatest) {
  Snapshot s;
  for (int i = 0; i < 6; ++i) s.nodes.push_back(MakeNode("n" + std::to_string(i), 1000));
  RunningWorkload r3 = MakeRunning("R3", 3, Cpu(1000), 0, 30);
  r3.allocations.push_back(Allocation{4, Cpu(1000)});
  r3.allocations.push_back(Allocation{5, Cpu(1000)});
  s.running = {MakeRunning("R1", 1, Cpu(1000), 0, 10), MakeRunning("R2", 2, Cpu(1000), 0, 20), r3};
  s.pending = {PendingBuilder("H", 1000, 4).Limit(100).Submit(1),
               PendingBuilder("L", 1000).Limit(1000).Submit(2)};
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  Plan p = RunWith(c, s, 0);
  ExpectPlan(p, {{"L"}, {{"H", 30}}});
  ASSERT_NE(FindReservation(p, "H"), nullptr);
  ASSERT_NE(FindStart(p, "L"), nullptr);
  MemberNodes reserved = FindReservation(p, "H")->member_nodes;
  std::sort(reserved.begin(), reserved.end());
  EXPECT_EQ(reserved, (MemberNodes{2, 3, 4, 5}));
  EXPECT_EQ(FindStart(p, "L")->member_nodes, (MemberNodes{0}));
}

// Running services (no expected end) hold their nodes for the whole window.
TEST(Scenario, RunningServiceHoldsItsNodeForever) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000), MakeNode("n1", 4000)};
  s.running = {MakeRunning("svc", 0, Cpu(4000), 0, std::nullopt),
               MakeRunning("job", 1, Cpu(4000), 0, 70)};
  s.pending = {PendingBuilder("J", 4000).Limit(10).Submit(0)};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  ASSERT_NE(FindReservation(p, "J"), nullptr);
  EXPECT_EQ(FindReservation(p, "J")->start, 70);
  EXPECT_EQ(FindReservation(p, "J")->member_nodes, (MemberNodes{1}));
}

// Gangs pack into the fewest topology domains: rack r1 has room for 2 members, rack r2 for 3.
TEST(Scenario, GangPacksIntoOneRackWhenAsked) {
  Snapshot s;
  s.nodes = {MakeNode("a0", 4000, 1 << 30, 0, {{"rack", "r1"}, {"block", "b1"}}),
             MakeNode("a1", 4000, 1 << 30, 0, {{"rack", "r1"}, {"block", "b1"}}),
             MakeNode("b0", 4000, 1 << 30, 0, {{"rack", "r2"}, {"block", "b1"}}),
             MakeNode("b1", 4000, 1 << 30, 0, {{"rack", "r2"}, {"block", "b1"}}),
             MakeNode("b2", 4000, 1 << 30, 0, {{"rack", "r2"}, {"block", "b1"}})};
  s.pending = {PendingBuilder("packed", 4000, 3).Pack().Submit(0)};
  QueueConfig c = SubmitOrderConfig();
  c.topology_labels = {"rack", "block"};
  Plan p = RunWith(c, s, 0);
  ASSERT_NE(FindStart(p, "packed"), nullptr);
  EXPECT_EQ(FindStart(p, "packed")->member_nodes, (MemberNodes{2, 3, 4}));

  // Without packing: first fit over the node order.
  s.pending = {PendingBuilder("spread", 4000, 3).Submit(0)};
  p = RunWith(c, s, 0);
  EXPECT_EQ(FindStart(p, "spread")->member_nodes, (MemberNodes{0, 1, 2}));
}

// Issue 29: the daemon's default topology key (topology.kubernetes.io/zone) on nodes that lack
// it: no level, so a packing gang is placed as without packing (best fit), not in node order.
TEST(Scenario, ATopologyLabelNoNodeHasChangesNoPlacement) {
  Snapshot s;
  s.nodes = {MakeNode("big", 8000), MakeNode("s0", 4000), MakeNode("s1", 4000)};
  s.pending = {PendingBuilder("spread", 4000, 2).Submit(0)};
  QueueConfig c = SubmitOrderConfig();
  Plan p = RunWith(c, s, 0);
  ASSERT_NE(FindStart(p, "spread"), nullptr);
  const MemberNodes unpacked = FindStart(p, "spread")->member_nodes;
  s.pending = {PendingBuilder("packed", 4000, 2).Pack().Submit(0)};
  c.topology_labels = {"topology.kubernetes.io/zone"};
  p = RunWith(c, s, 0);
  ASSERT_NE(FindStart(p, "packed"), nullptr);
  EXPECT_EQ(FindStart(p, "packed")->member_nodes, unpacked);
}

TEST(Scenario, GangPicksTheSmallestRackThatHoldsIt) {
  Snapshot s;
  s.nodes = {MakeNode("a0", 4000, 1 << 30, 0, {{"rack", "big"}}),
             MakeNode("a1", 4000, 1 << 30, 0, {{"rack", "big"}}),
             MakeNode("a2", 4000, 1 << 30, 0, {{"rack", "big"}}),
             MakeNode("c0", 4000, 1 << 30, 0, {{"rack", "small"}}),
             MakeNode("c1", 4000, 1 << 30, 0, {{"rack", "small"}})};
  s.pending = {PendingBuilder("pair", 4000, 2).Pack().Submit(0)};
  QueueConfig c = SubmitOrderConfig();
  c.topology_labels = {"rack"};
  Plan p = RunWith(c, s, 0);
  EXPECT_EQ(FindStart(p, "pair")->member_nodes, (MemberNodes{3, 4}));
}

// A packing gang's reservation chooses among every node free at its start, not only the first
// of the latest-freed order (x0 and y0, in two racks): rack r2 holds it whole.
TEST(Scenario, AGangReservationPacksIntoOneRack) {
  Snapshot s;
  s.nodes = {MakeNode("x0", 4000, 1 << 30, 0, {{"rack", "r1"}}),
             MakeNode("y0", 4000, 1 << 30, 0, {{"rack", "r2"}}),
             MakeNode("y1", 4000, 1 << 30, 0, {{"rack", "r2"}})};
  for (NodeIndex n = 0; n < 3; ++n) s.running.push_back(MakeRunning("r" + std::to_string(n), n, Cpu(4000), 0, 100));
  s.pending = {PendingBuilder("pair", 4000, 2).Pack().Submit(0)};
  QueueConfig c = SubmitOrderConfig();
  c.topology_labels = {"rack"};
  Plan p = RunWith(c, s, 0);
  ASSERT_NE(FindReservation(p, "pair"), nullptr);
  EXPECT_EQ(FindReservation(p, "pair")->start, 100);
  EXPECT_EQ(FindReservation(p, "pair")->member_nodes, (MemberNodes{1, 2}));
}

TEST(Scenario, ReservedForHigherPriorityReason) {
  // J1 (top) is reserved on both nodes from t=100; "small" would fit now on n1 but runs too
  // long: its reason is that the capacity is reserved.
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000), MakeNode("n1", 4000)};
  s.running = {MakeRunning("R", 0, Cpu(4000), 0, 100)};
  s.pending = {PendingBuilder("J1", 4000, 2).Limit(100).Submit(1),
               PendingBuilder("small", 1000).Limit(500).Submit(2)};
  Plan p = RunWith(SubmitOrderConfig(), s, 0);
  EXPECT_EQ(FindWaiting(p, "small")->reason, WaitReason::kReservedForHigherPriority);
}

TEST(Scenario, QosAndPriorityClassOrderTheQueue) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 1000)};
  PendingWorkload pod = PendingBuilder("pod-pc", 1000).Submit(5);
  pod.priority_class_value = 500;
  s.pending = {PendingBuilder("normal", 1000).Qos("normal").Submit(0), pod,
               PendingBuilder("high", 1000).Qos("high").Submit(9)};
  QueueConfig c = SubmitOrderConfig();
  c.qos = {QosPolicy{.name = "normal", .priority = 1}, QosPolicy{.name = "high", .priority = 100}};
  c.weights.qos = 1e6;
  c.priority_class_max = 1000;  // 500 -> QOS factor 0.5, between normal (0.01) and high (1)
  Plan p = RunWith(c, s, 10);
  EXPECT_EQ(p.OrderIds(), (std::vector<std::string>{"high", "pod-pc", "normal"}));
  EXPECT_EQ(StartedIds(p), (std::vector<std::string>{"high"}));
  EXPECT_DOUBLE_EQ(p.PriorityAt(1).qos, 0.5);
}

TEST(Scenario, UnknownQosWaitsWithQosNotAllowed) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000)};
  s.pending = {PendingBuilder("typo", 1000).Qos("hihg").Submit(0),
               PendingBuilder("fine", 1000).Qos("normal").Submit(1)};
  QueueConfig c = SubmitOrderConfig();
  c.qos = {QosPolicy{.name = "normal", .priority = 1}};
  Plan p = RunWith(c, s, 10);
  EXPECT_EQ(StartedIds(p), (std::vector<std::string>{"fine"}));
  EXPECT_EQ(FindWaiting(p, "typo")->reason, WaitReason::kQosNotAllowed);
  EXPECT_EQ(FindWaiting(p, "typo")->message, "QOS hihg is not in the QOS table");
}

// ---------------------------------------------------------------------------------------------
// Incremental arrivals
// ---------------------------------------------------------------------------------------------

TEST(Incremental, ArrivalBehindTheReservationsIsPlannedAlone) {
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(std::make_shared<Snapshot>(TextbookSnapshot()), 0);
  ASSERT_EQ(p.starts.size(), 2u);  // J3, J4: 6 + 2 + 2 = 10 cpus used now
  // A small late job: nothing free now -> waits, estimate from the profile.
  auto d = planner.OnArrival(PendingBuilder("J5", 1000).Limit(10).Submit(5), 5);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(d->needs_full_cycle);
  EXPECT_TRUE(d->starts.empty());
  ASSERT_TRUE(d->waiting.has_value());
  EXPECT_EQ(d->waiting->queue_position, 5);
  EXPECT_EQ(d->positions_shifted_from, 5);
  EXPECT_EQ(d->waiting->estimated_start, std::optional<Time>(50));  // when J4 ends
  // At t=60 J4 has ended in the profile: a 30 s job fits before J1's reservation at 100.
  auto d2 = planner.OnArrival(PendingBuilder("J6", 2000).Limit(30).Submit(60), 60);
  ASSERT_TRUE(d2.ok());
  ASSERT_EQ(d2->starts.size(), 1u);
  EXPECT_EQ(d2->starts[0].workload, "J6");
  // ...but not a 50 s one (it would delay J1).
  auto d3 = planner.OnArrival(PendingBuilder("J7", 2000).Limit(50).Submit(61), 61);
  ASSERT_TRUE(d3.ok());
  EXPECT_TRUE(d3->starts.empty());
}

// The failure memos assume the walk by falling priority. An arrival planned afterwards may have a
// higher priority than workloads whose failures were remembered: where a node is reserved(P)
// for a pending workload, it may use that node when they could not.
//   n0: 4 cpus, reserved(P);  n1: 8 cpus, busy until t=100
//   R (oldest) 8 cpus: reserved on n1 at t=100.  P: 16 cpus, never fits.
//   L (after P) 1 cpu: may not use n0 (lower than P), n1 is full: fails, and is remembered.
//   A arrives between R and P, 1 cpu: it may use n0, so it starts there.
TEST(Incremental, ArrivalAboveAReservedNodesHolderIgnoresFailuresOfLowerPriorities) {
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  Snapshot s;
  s.nodes = {MakeNode("n0", 4000), MakeNode("n1", 8000)};
  s.nodes[0].owner.kind = OwnerKind::kReserved;
  s.nodes[0].owner.reserved_for = "P";
  s.running = {MakeRunning("X", 1, Cpu(8000), 0, 100)};
  s.pending = {PendingBuilder("R", 8000).Submit(0), PendingBuilder("P", 16000).Submit(5),
               PendingBuilder("L", 1000).Limit(10).Submit(10)};
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(std::make_shared<Snapshot>(std::move(s)), 20);
  ASSERT_EQ(p.reservations.size(), 1u);
  EXPECT_EQ(p.reservations[0].workload, "R");
  EXPECT_EQ(FindStart(p, "L"), nullptr);
  auto d = planner.OnArrival(PendingBuilder("A", 1000).Limit(10).Submit(3), 20);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_FALSE(d->needs_full_cycle);
  ASSERT_EQ(d->starts.size(), 1u);
  EXPECT_EQ(d->starts[0].member_nodes, (MemberNodes{0}));
}

// A reservation's text does not carry its start (estimated_start does): the daemon patches a
// pod's status only when what it shows changes, and the start moves with every cycle's grid.
TEST(Scenario, ReservationMessageStaysTheSameFromCycleToCycle) {
  QueueConfig c = SubmitOrderConfig();
  c.reservation_depth = 1;
  c.resolution = 60;
  Plan first = RunWith(c, TextbookSnapshot(), 0);
  Plan later = RunWith(c, TextbookSnapshot(), 30);
  const WaitingStatus* a = FindWaiting(first, "J1");
  const WaitingStatus* b = FindWaiting(later, "J1");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->has_reservation && b->has_reservation);
  EXPECT_NE(a->estimated_start, b->estimated_start);  // 120 vs 150: the grid moved
  EXPECT_EQ(a->Message(), b->Message());
}

TEST(Incremental, ArrivalAheadOfAReservationNeedsAFullCycle) {
  QueueConfig c = SubmitOrderConfig();
  QueuePlanner planner(c, nullptr);
  EXPECT_EQ(planner.OnArrival(PendingBuilder("x", 1).Submit(0), 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  planner.PlanCycle(std::make_shared<Snapshot>(TextbookSnapshot()), 10);
  auto d = planner.OnArrival(PendingBuilder("old", 1000).Submit(0), 10);  // older than J1
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->needs_full_cycle);
}

TEST(Config, ValidationNamesTheField) {
  QueueConfig c;
  c.reservation_depth = -1;
  EXPECT_EQ(ValidateConfig(c).message(), "reservation_depth must be >= 0 (0 = unlimited)");
  c = QueueConfig{};
  c.accounts = {{"a", "b", 1}, {"b", "a", 1}};
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c = QueueConfig{};
  c.qos = {QosPolicy{.name = "x", .can_preempt = {"nope"}}};
  EXPECT_EQ(ValidateConfig(c).message(), "qos x: can_preempt names unknown qos nope");
  EXPECT_TRUE(ValidateConfig(QueueConfig{}).ok());
}

}  // namespace
}  // namespace onequeue::queue

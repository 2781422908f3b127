// The preemption planner: table-driven cases (cheapest set, gangs whole, disruption budgets,
// never equal or higher priority, QOS rules, exclusive nodes, no decision when preemption cannot
// help), then a property test that compares it with brute force over random small clusters.
#include "queue/preemption.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace onequeue::queue {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

Resources Cpu(int64_t millicores) {
  Resources r;
  r[kCpu] = millicores;
  return r;
}

// A small cluster described in a few lines; builds the snapshot, config and input.
struct Scenario {
  Snapshot snapshot;
  QueueConfig config;
  PendingWorkload preemptor;
  double preemptor_priority = 100;
  Time now = 1000;
  std::vector<char> claimed;
  std::vector<std::string> already_victims;
  std::vector<Resources> free_now;
  std::vector<NodeIndex> eligible;

  Scenario(int nodes, int64_t cpu_per_node) {
    for (int i = 0; i < nodes; ++i) {
      Node n;
      n.name = "n" + std::to_string(i);
      n.allocatable = Cpu(cpu_per_node);
      snapshot.nodes.push_back(n);
      eligible.push_back(i);
    }
    config.qos = {
        {"high", 100, /*preemptible=*/false, /*can_preempt=*/{"normal", "low"}, /*grace_time=*/30},
        {"normal", 50, true, {}, 10},
        {"low", 10, true, {}, 0},
        {"pinned", 10, /*preemptible=*/false, {}, 0},
    };
    preemptor.id = "P";
    preemptor.qos = "high";
    preemptor.members = 1;
    preemptor.per_member = Cpu(cpu_per_node);
    claimed.assign(nodes, 0);
  }

  // A running workload holding `cpu` on each listed node.
  RunningWorkload& Run(const std::string& id, std::vector<NodeIndex> nodes, int64_t cpu, double priority,
                       Time start = 0, const std::string& qos = "low") {
    RunningWorkload r;
    r.id = id;
    for (NodeIndex n : nodes) r.allocations.push_back({n, Cpu(cpu)});
    r.priority = priority;
    r.qos = qos;
    r.start_time = start;
    snapshot.running.push_back(r);
    return snapshot.running.back();
  }

  PreemptionInput Input() {
    free_now.clear();
    for (const Node& n : snapshot.nodes) free_now.push_back(n.allocatable);
    for (const RunningWorkload& r : snapshot.running) {
      for (const Allocation& a : r.allocations) free_now[a.node] -= a.used;
    }
    PreemptionInput in;
    in.snapshot = &snapshot;
    in.config = &config;
    in.preemptor = &preemptor;
    in.preemptor_priority = preemptor_priority;
    in.now = now;
    in.eligible_nodes = eligible;
    in.free_now = &free_now;
    in.claimed = &claimed;
    in.already_victims = &already_victims;
    return in;
  }

  std::optional<PreemptionChoice> Choose() { return CheapestVictimsPlanner().Choose(Input()); }
};

TEST(Preemption, FewestVictimsFirst) {
  Scenario s(2, 4000);
  s.Run("a", {0}, 2000, 1);
  s.Run("b", {0}, 2000, 1);
  s.Run("c", {1}, 4000, 50);  // higher priority, but one victim beats two
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("c"));
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));
  EXPECT_EQ(c->decision.preemptor, "P");
  EXPECT_TRUE(c->exact);
}

// Issue 26: eligible nodes in ascending order (TryPreempt's) take a path without duplicate
// checks; it keeps the same nodes as the general one, claimed nodes out.
TEST(Preemption, TheUsableNodesAreTheSameWhetherTheEligibleNodesAscendOrNot) {
  for (const std::vector<NodeIndex>& eligible : {std::vector<NodeIndex>{0, 1, 2}, std::vector<NodeIndex>{2, 0, 1, 2}}) {
    Scenario s(3, 4000);
    s.Run("a", {0}, 4000, 1);  // the cheapest, on a node a preemption of this cycle claimed
    s.Run("b", {1}, 4000, 5);
    s.Run("c", {2}, 4000, 3);
    s.claimed[0] = 1;
    s.eligible = eligible;
    auto c = s.Choose();
    ASSERT_TRUE(c.has_value());
    EXPECT_THAT(c->decision.victims, ElementsAre("c"));
    EXPECT_THAT(c->decision.member_nodes, ElementsAre(2));
  }
}

// Issue 26: whether the preemptor fits without victims is first asked of the eligible list as
// given, while it ascends (VictimSearch::FitsOnAscendingPrefix). A free node claimed earlier in
// the cycle is no room there.
TEST(Preemption, AFreeNodeClaimedEarlierInTheCycleIsNoRoomWithoutVictims) {
  Scenario s(2, 4000);
  s.Run("a", {0}, 4000, 1);
  s.claimed[1] = 1;  // free, but promised to a higher priority earlier this cycle
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("a"));
}

// A node listed twice holds its copies once: a gang of two does not fit on one free node.
TEST(Preemption, ANodeListedTwiceIsCountedOnceWhenAskingWhetherItFitsWithoutVictims) {
  Scenario s(2, 4000);
  s.preemptor.members = 2;
  s.Run("a", {0}, 4000, 1);
  s.eligible = {1, 1, 0};
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("a"));
  EXPECT_THAT(c->decision.member_nodes, UnorderedElementsAre(0, 1));
}

// The free node after full ones in a list that does not ascend: it fits, nothing to preempt
// and nothing ruled out, even where the capped window (one node; "P"'s offset lands on node 0)
// would hold only a full node.
TEST(Preemption, ItFitsWithoutVictimsWhateverTheOrderOfTheEligibleNodes) {
  Scenario s(5, 4000);
  for (NodeIndex n = 0; n < 4; ++n) s.Run("a" + std::to_string(n), {n}, 4000, 1);
  s.eligible = {1, 0, 2, 3, 4};
  s.config.preemption.min_candidate_nodes_percentage = 0;
  s.config.preemption.min_candidate_nodes_absolute = 1;
  bool no_room = true;
  EXPECT_FALSE(CheapestVictimsPlanner().PlanOrRuleOut(s.Input(), &no_room).has_value());
  EXPECT_FALSE(no_room);
}

TEST(Preemption, ThenLowestPriority) {
  Scenario s(3, 4000);
  s.Run("a", {0}, 4000, 20);
  s.Run("b", {1}, 4000, 5);
  s.Run("c", {2}, 4000, 30);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("b"));
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));
  EXPECT_DOUBLE_EQ(c->max_victim_priority, 5);
}

// Equally cheap in every other way: the victim index orders them by id (VictimIndex::Build),
// so the smallest id goes, wherever it runs.
TEST(Preemption, ThenTheSmallestId) {
  Scenario s(3, 4000);
  s.Run("c", {0}, 4000, 5);
  s.Run("a", {2}, 4000, 5);
  s.Run("b", {1}, 4000, 5);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("a"));
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(2));
}

TEST(Preemption, ThenLeastRunTimeLost) {
  Scenario s(2, 4000);
  s.Run("old", {0}, 4000, 5, /*start=*/100);
  s.Run("young", {1}, 4000, 5, /*start=*/900);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("young"));
  EXPECT_EQ(c->run_time_lost, 100);
}

// The scene of the two tests below: node 0 cannot take an 8-CPU member whatever goes (a pinned
// 7-CPU workload), zu runs on nodes 0 and 1, v on node 1 (16 CPUs), b1 and b2 fill node 2.
void AddZuOnANodeWithoutRoomAndV(Scenario& s) {
  s.snapshot.nodes[1].allocatable = Cpu(16000);
  s.Run("pin", {0}, 7000, 1, 0, "pinned");
  s.Run("zu", {0, 1}, 8000, 5).allocations[0].used = Cpu(1000);
  s.Run("v", {1}, 8000, 5);
  s.Run("b1", {2}, 4000, 1);
  s.Run("b2", {2}, 4000, 1);
}

// Issue 26: the node-by-node search runs dry over a node whose units cannot make room; a unit
// that also runs on another node can, and stays searched there. Equal costs go to the set found
// first: "zu" (on n0, where the member cannot land, and n1) is found at n0 before "v" at n1, as
// the search without the shortcut found it (the greedy pass's {b1, b2} costs two victims).
TEST(Preemption, AWorkloadAlsoOnANodeWithoutRoomIsFoundThereFirst) {
  Scenario s(3, 8000);
  AddZuOnANodeWithoutRoomAndV(s);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("zu"));
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));
}

// The same on shared nodes, where no workload blocks the other world: node 0 cannot take the
// member whatever goes, and its only candidate, zu, also runs on node 1, so node 0 stays a slot
// of the search over every node (issue 26: only nodes whose units run there alone are left out)
// and zu, found there first, wins the tie with v.
TEST(Preemption, OnSharedNodesAWorkloadAlsoOnANodeWithoutRoomIsFoundThereFirst) {
  Scenario s(3, 8000);
  s.config.shared_nodes = true;
  AddZuOnANodeWithoutRoomAndV(s);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("zu"));
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));
}

TEST(Preemption, TheHighestVictimPriorityCountsNotTheSum) {
  // Two victims either way: {a, b} has highest priority 9, {c, d} has 6.
  Scenario s(2, 4000);
  s.preemptor.per_member = Cpu(4000);
  s.Run("a", {0}, 2000, 1);
  s.Run("b", {0}, 2000, 9);
  s.Run("c", {1}, 2000, 6);
  s.Run("d", {1}, 2000, 6);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("c", "d"));
}

TEST(Preemption, GangsGoWhole) {
  Scenario s(3, 4000);
  s.Run("g-0", {0}, 4000, 1).gang_id = "g";
  s.Run("g-1", {1}, 4000, 1).gang_id = "g";
  s.Run("solo", {2}, 4000, 60);
  // One victim (solo, higher priority) beats a whole gang of two.
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("solo"));

  // When only the gang can make room, both members go even though one node would do.
  s.snapshot.running.pop_back();
  s.Run("pinned", {2}, 4000, 1, 0, "pinned");
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("g-0", "g-1"));
  EXPECT_EQ(c->victim_count, 2);
  ASSERT_EQ(c->decision.member_nodes.size(), 1u);
  EXPECT_THAT(c->decision.member_nodes[0], ::testing::AnyOf(0, 1));
}

TEST(Preemption, AGangWithOneUntouchableMemberIsNoCandidate) {
  Scenario s(2, 4000);
  s.Run("g-0", {0}, 4000, 1).gang_id = "g";
  s.Run("g-1", {1}, 4000, 200).gang_id = "g";  // higher priority than the preemptor
  EXPECT_FALSE(s.Choose().has_value());
}

TEST(Preemption, DisruptionBudgetsAreRespected) {
  Scenario s(2, 4000);
  s.Run("a", {0}, 2000, 1).disruption_budget_group = "pdb";
  s.Run("b", {0}, 2000, 1).disruption_budget_group = "pdb";
  s.Run("c", {1}, 1000, 1);
  s.Run("d", {1}, 1000, 1);
  s.Run("e", {1}, 2000, 1);
  s.snapshot.disruptions_allowed["pdb"] = 1;
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("c", "d", "e"));  // node 0 would break the budget

  s.snapshot.disruptions_allowed["pdb"] = 2;
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("a", "b"));

  s.snapshot.disruptions_allowed.erase("pdb");  // a named group missing from the map allows none
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("c", "d", "e"));
}

TEST(Preemption, AMultiNodeVictimCountsOnePodPerAllocationAgainstItsBudget) {
  Scenario s(2, 4000);
  s.preemptor.per_member = Cpu(2000);
  s.Run("wide", {0, 1}, 2000, 1).disruption_budget_group = "pdb";
  s.Run("x", {0}, 2000, 1);
  s.snapshot.nodes[1].allocatable = Cpu(2000);  // node 1 is full with wide's pod
  s.snapshot.disruptions_allowed["pdb"] = 1;
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("x"));
}

TEST(Preemption, NeverEqualOrHigherPriority) {
  Scenario s(1, 4000);
  s.Run("same", {0}, 4000, 100);
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].priority = 150;
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].priority = 99.5;
  EXPECT_TRUE(s.Choose().has_value());
}

TEST(Preemption, OnlyPreemptibleQosNamedByThePreemptorsQos) {
  Scenario s(1, 4000);
  s.Run("v", {0}, 4000, 1, 0, "pinned");  // QOS not preemptible
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].qos = "high";  // preemptible=false in the table
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].qos = "mystery";  // unknown QOS: not a victim
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].qos = "normal";
  s.snapshot.running[0].preemptible = false;  // the workload itself says no
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].preemptible = true;
  EXPECT_TRUE(s.Choose().has_value());
  s.preemptor.qos = "normal";  // a QOS that may preempt nothing
  EXPECT_FALSE(s.Choose().has_value());
}

// Issue 28, kube-scheduler's DefaultPreemption: a pod group without QOS preempts pod groups
// without QOS (class_priority set) of strictly lower PriorityClass value, whatever their
// multifactor priority; never a workload with a QOS, never equal or higher class.
TEST(Preemption, WithoutQosAPodPreemptsPodsWithoutQosOfStrictlyLowerPriorityClass) {
  Scenario s(1, 4000);
  s.preemptor.qos = "";
  s.preemptor.priority_class_value = 1000;
  s.preemptor_priority = 1;  // the multifactor priority does not decide here
  RunningWorkload& v = s.Run("v", {0}, 4000, /*priority=*/50);
  v.class_priority = 1000;  // equal class: no
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].class_priority = 2000;  // higher: no
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].class_priority = 999;
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("v"));
  s.snapshot.running[0].class_priority.reset();  // a workload with an explicit QOS: QOS rules only
  EXPECT_FALSE(s.Choose().has_value());
  s.snapshot.running[0].class_priority = 999;
  s.snapshot.running[0].preemptible = false;  // the workload itself says no
  EXPECT_FALSE(s.Choose().has_value());
}

TEST(Preemption, WithoutQosPreemptionPolicyNeverStillNeverPreempts) {
  Scenario s(1, 4000);
  s.preemptor.qos = "";
  s.preemptor.priority_class_value = 1000;
  s.Run("v", {0}, 4000, 1).class_priority = 0;
  EXPECT_TRUE(s.Choose().has_value());
  s.preemptor.may_preempt = false;
  EXPECT_FALSE(s.Choose().has_value());
}

TEST(Preemption, WithoutQosVictimsAreStillTheFewestThenLowestPriority) {
  Scenario s(3, 4000);
  s.preemptor.qos = "";
  s.preemptor.priority_class_value = 1000;
  s.Run("a", {0}, 2000, 1).class_priority = 0;
  s.Run("b", {0}, 2000, 1).class_priority = 0;
  s.Run("c", {1}, 4000, 30).class_priority = 0;
  s.Run("d", {2}, 4000, 20).class_priority = 0;
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("d"));
}

// kube-scheduler's conformance spec "validates lower priority pod preemption by critical pod":
// with one victim either way, the victim of the lower PriorityClass goes, whatever the
// multifactor priorities (age and size made the medium pod's the lower one in CI).
TEST(Preemption, WithoutQosAmongEquallyFewVictimsTheLowestPriorityClassGoes) {
  Scenario s(2, 4000);
  s.preemptor.qos = "";
  s.preemptor.priority_class_value = 2000000000;
  s.Run("low", {0}, 4000, /*priority=*/10000.2).class_priority = 1;
  s.Run("medium", {1}, 4000, /*priority=*/10000.0).class_priority = 100;
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("low"));
  EXPECT_THAT(c->reason, HasSubstr("of lower PriorityClass (highest 1 < 2000000000)"));
  // Swapped classes: the other one.
  s.snapshot.running[0].class_priority = 100;
  s.snapshot.running[1].class_priority = 1;
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("medium"));
}

// kube-scheduler's conformance spec "runs ReplicaSets to verify preemption running path": on one
// node, two victims of lower classes go rather than one of a higher class (kube-scheduler
// reprieves the highest class first).
TEST(Preemption, WithoutQosMoreVictimsOfLowerClassesGoRatherThanOneOfAHigherClass) {
  Scenario s(1, 1000);
  s.preemptor.qos = "";
  s.preemptor.priority_class_value = 4;
  s.preemptor.per_member = Cpu(500);
  s.Run("p1", {0}, 200, /*priority=*/1).class_priority = 1;
  s.Run("p2", {0}, 300, /*priority=*/1).class_priority = 2;
  s.Run("p3", {0}, 450, /*priority=*/1).class_priority = 3;
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, UnorderedElementsAre("p1", "p2"));
}

TEST(Preemption, ASlurmJobWithoutQosDoesNotPreemptByPriorityClass) {
  Scenario s(1, 4000);
  s.preemptor.qos = "";
  s.preemptor.kind = WorkloadKind::kSlurmJob;
  s.preemptor.priority_class_value = 1000;
  s.Run("v", {0}, 4000, 1).class_priority = 0;
  EXPECT_FALSE(s.Choose().has_value());
}

TEST(Preemption, NoDecisionWhenPreemptionCannotHelp) {
  Scenario s(2, 4000);
  s.Run("a", {0}, 4000, 1);
  s.preemptor.per_member = Cpu(8000);  // bigger than any node
  EXPECT_FALSE(s.Choose().has_value());
  s.preemptor.per_member = Cpu(4000);  // node 1 is free: no victims needed
  EXPECT_FALSE(s.Choose().has_value());
  s.eligible = {0};  // only node 0 is eligible: evict a
  EXPECT_TRUE(s.Choose().has_value());
  s.claimed[0] = 1;  // promised to a higher priority earlier this cycle
  EXPECT_FALSE(s.Choose().has_value());
  s.claimed[0] = 0;
  s.already_victims = {"a"};  // an earlier preemption of this cycle already takes it
  EXPECT_FALSE(s.Choose().has_value());
}

// PlanOrRuleOut's no_room (issue 26): the cycle pass memoises it for every later preemptor that
// asks at least as much, so it must be set only when no victim set can make room, never when the
// preemptor fits already or when a disruption budget made the greedy pass skip a unit.
TEST(Preemption, RulesOutOnlyWhatNoVictimSetCanHelp) {
  Scenario s(2, 4000);
  s.Run("a", {0}, 4000, 1);
  const CheapestVictimsPlanner planner;
  bool no_room = false;
  s.preemptor.per_member = Cpu(8000);  // bigger than any node
  EXPECT_FALSE(planner.PlanOrRuleOut(s.Input(), &no_room).has_value());
  EXPECT_TRUE(no_room);
  s.preemptor.per_member = Cpu(4000);  // node 1 is free: it fits already, which a bigger one may not
  EXPECT_FALSE(planner.PlanOrRuleOut(s.Input(), &no_room).has_value());
  EXPECT_FALSE(no_room);
  s.eligible = {0};
  EXPECT_TRUE(planner.PlanOrRuleOut(s.Input(), &no_room).has_value());
  EXPECT_FALSE(no_room);
  s.already_victims = {"a"};  // its only candidate is taken: nothing can make room
  EXPECT_FALSE(planner.PlanOrRuleOut(s.Input(), &no_room).has_value());
  EXPECT_TRUE(no_room);
  s.already_victims.clear();
  std::vector<int32_t> by_index = {0};  // the same, by index into snapshot.running
  PreemptionInput in = s.Input();
  in.already_victim_indices = &by_index;
  EXPECT_FALSE(planner.PlanOrRuleOut(in, &no_room).has_value());
  EXPECT_TRUE(no_room);
  s.eligible = {};  // no usable node
  EXPECT_FALSE(planner.PlanOrRuleOut(s.Input(), &no_room).has_value());
  EXPECT_TRUE(no_room);
}

TEST(Preemption, ABudgetThatMadeTheGreedyPassSkipAUnitRulesNothingOut) {
  Scenario s(2, 4000);
  s.preemptor.per_member = Cpu(8000);  // fits nowhere, whatever goes
  s.Run("a", {0}, 2000, 1).disruption_budget_group = "pdb";
  s.Run("b", {0}, 2000, 1).disruption_budget_group = "pdb";
  s.snapshot.disruptions_allowed["pdb"] = 1;
  bool no_room = true;
  EXPECT_FALSE(CheapestVictimsPlanner().PlanOrRuleOut(s.Input(), &no_room).has_value());
  EXPECT_FALSE(no_room);  // conservative: the skipped unit could have mattered to another set
}

TEST(Preemption, AGangPreemptorGetsAllItsMembersPlaced) {
  Scenario s(4, 4000);
  s.preemptor.members = 3;
  s.preemptor.per_member = Cpu(3000);
  s.Run("a", {0}, 2000, 3);
  s.Run("b", {1}, 2000, 1);
  s.Run("c", {2}, 2000, 2);
  s.Run("d", {3}, 2000, 4);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("a", "b", "c"));
  EXPECT_THAT(c->decision.member_nodes, UnorderedElementsAre(0, 1, 2));
}

TEST(Preemption, ExclusiveNodesNeedEveryJobOfTheOtherWorldGone) {
  Scenario s(1, 8000);
  s.preemptor.per_member = Cpu(2000);  // fits in the free half of the node...
  RunningWorkload& job = s.Run("slurm-1", {0}, 4000, 1);
  job.kind = WorkloadKind::kSlurmJob;  // ...but a Slurm job runs there
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("slurm-1"));
  s.config.shared_nodes = true;
  EXPECT_FALSE(s.Choose().has_value());  // shared: it fits already
}

TEST(Preemption, TheDecisionIsOneAtomicStepWithItsReason) {
  Scenario s(2, 4000);
  s.Run("a", {1}, 4000, 7, 400, "normal");
  s.Run("b", {0}, 4000, 70, 0, "low");
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->decision.preemptor, "P");
  EXPECT_THAT(c->decision.victims, ElementsAre("a"));
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));
  EXPECT_EQ(c->decision.earliest_start, 1000 + 10);  // normal's grace time
  EXPECT_EQ(c->reason, "preempts 1 workload (a) of lower priority (highest 7.0 < 100.0) on node n1; "
                       "600 s of run time lost");
  auto plain = CheapestVictimsPlanner().Plan(s.Input());
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->victims, c->decision.victims);
}

// Issue 28 through the queue planner: a pod group without QOS and of a higher PriorityClass is
// planned a preemption (the planner asks the hook without a preempting QOS), one with
// preemptionPolicy: Never waits.
TEST(Preemption, ThroughTheQueuePlannerAPodWithoutQosPreemptsByPriorityClass) {
  auto snapshot = std::make_shared<Snapshot>();
  Node n;
  n.name = "n0";
  n.allocatable = Cpu(4000);
  snapshot->nodes.push_back(n);
  RunningWorkload low;
  low.id = "low";
  low.allocations = {{0, Cpu(4000)}};
  low.class_priority = 1;
  low.expected_end = 100000;
  snapshot->running.push_back(low);
  PendingWorkload p;
  p.id = "high";
  p.per_member = Cpu(4000);
  p.priority_class_value = 1000;
  p.time_limit = 600;
  snapshot->pending.push_back(p);
  QueueConfig config;
  CheapestVictimsPlanner victims;
  QueuePlanner planner(config, &victims);
  Plan plan = planner.PlanCycle(snapshot, 1000);
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].preemptor, "high");
  EXPECT_THAT(plan.preemptions[0].victims, ElementsAre("low"));

  snapshot = std::make_shared<Snapshot>(*snapshot);
  snapshot->pending[0].may_preempt = false;
  QueuePlanner again(config, &victims);
  EXPECT_TRUE(again.PlanCycle(snapshot, 1000).preemptions.empty());
}

// Symmetric pod anti-affinity (issue 28, PlacementRules::carriers): running workloads whose
// required anti-affinity the preemptor matches keep it off their node unless every one of them is
// a victim; then they go whatever the resources need (kube-scheduler's SelectVictimsOnNode).
std::shared_ptr<PlacementRules> CarriersOn(size_t nodes, std::map<NodeIndex, std::vector<std::string>> carriers) {
  auto rules = std::make_shared<PlacementRules>();
  auto by_node = std::make_shared<CarriersByNode>(nodes);
  for (auto& [n, ids] : carriers) (*by_node)[n] = std::move(ids);
  rules->carriers = by_node;
  return rules;
}

TEST(Preemption, SymmetricAntiAffinityACarrierOfLowerPriorityIsEvicted) {
  Scenario s(1, 4000);
  s.Run("worker", {0}, 2000, 5);
  s.Run("filler", {0}, 2000, 1);
  s.preemptor.per_member = Cpu(2000);
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("filler"));  // without the rule: the cheapest
  s.preemptor.placement = CarriersOn(1, {{0, {"worker"}}});
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("worker"));  // the carrier goes, and frees enough
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(0));
}

TEST(Preemption, SymmetricAntiAffinityACarrierIsNeverReprievedEvenWhenTheResourcesDoNotNeedIt) {
  Scenario s(1, 4000);
  s.Run("worker", {0}, 1000, 1);  // room for the preemptor (2000) beside it
  s.preemptor.per_member = Cpu(2000);
  EXPECT_FALSE(s.Choose().has_value());  // without the rule: it fits, nothing to preempt
  s.preemptor.placement = CarriersOn(1, {{0, {"worker"}}});
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("worker"));
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(0));

  // Two carriers on the node: both go, although one would free enough.
  s.Run("worker-b", {0}, 3000, 2);
  s.snapshot.running[0].allocations[0].used = Cpu(1000);
  s.preemptor.per_member = Cpu(1000);
  s.snapshot.running[1].allocations[0].used = Cpu(2000);
  s.preemptor.placement = CarriersOn(1, {{0, {"worker", "worker-b"}}});
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("worker", "worker-b"));
}

TEST(Preemption, SymmetricAntiAffinityACarrierThatCannotBeAVictimKeepsTheNodeOut) {
  Scenario s(2, 4000);
  s.Run("pinned-worker", {0}, 1000, 1, 0, "pinned");  // not preemptible, room beside it
  s.Run("batch", {1}, 4000, 5);
  s.preemptor.per_member = Cpu(2000);
  s.preemptor.placement = CarriersOn(2, {{0, {"pinned-worker"}}});
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("batch"));  // node 0 is out, not "fits already"
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));

  // Higher priority than the preemptor, or a pod that is no running workload: out too.
  s.snapshot.running[0].qos = "low";
  s.snapshot.running[0].priority = 500;
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));
  s.snapshot.running[0].priority = 1;
  s.preemptor.placement = CarriersOn(2, {{0, {"kube-system/daemon"}}});
  c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.member_nodes, ElementsAre(1));
  s.eligible = {0};
  EXPECT_FALSE(s.Choose().has_value());
}

TEST(Preemption, SymmetricAntiAffinityACarrierElsewhereInTheDomainIsAVictimToo) {
  // A zone key: the carrier runs on node 1, the preemptor fits on node 0 of the same zone.
  Scenario s(2, 4000);
  s.Run("zone-guard", {1}, 4000, 1);
  s.preemptor.per_member = Cpu(2000);
  s.preemptor.placement = CarriersOn(2, {{0, {"zone-guard"}}, {1, {"zone-guard"}}});
  auto c = s.Choose();
  ASSERT_TRUE(c.has_value());
  EXPECT_THAT(c->decision.victims, ElementsAre("zone-guard"));
  EXPECT_EQ(c->decision.member_nodes.size(), 1u);
}

// Through the queue planner: the carriers keep it off every node for a start (no node satisfies
// the rule), and the preemption search evicts them.
TEST(Preemption, ThroughTheQueuePlannerSymmetricAntiAffinityPreemptsTheCarriers) {
  auto snapshot = std::make_shared<Snapshot>();
  Node n;
  n.name = "n0";
  n.allocatable = Cpu(4000);
  n.labels["kubernetes.io/hostname"] = "n0";
  snapshot->nodes.push_back(n);
  snapshot->topologies.push_back({"kubernetes.io/hostname", {0}, 1});
  snapshot->pod_counts.push_back({1});  // one pod carrying the term on n0
  RunningWorkload worker;
  worker.id = "slurm-worker";
  worker.allocations = {{0, Cpu(1000)}};
  worker.class_priority = 1;
  worker.expected_end = 100000;
  snapshot->running.push_back(worker);
  PendingWorkload p;
  p.id = "jupyter";
  p.per_member = Cpu(1000);
  p.priority_class_value = 1000;
  p.time_limit = 600;
  auto rules = std::make_shared<PlacementRules>();
  PlacementRule r;
  r.kind = PlacementRule::Kind::kAntiAffinity;
  r.symmetric = true;
  rules->rules.push_back(r);
  rules->carriers = std::make_shared<const CarriersByNode>(CarriersByNode{{"slurm-worker"}});
  p.placement = rules;
  snapshot->pending.push_back(p);
  QueueConfig config;
  CheapestVictimsPlanner victims;
  QueuePlanner planner(config, &victims);
  Plan plan = planner.PlanCycle(snapshot, 1000);
  EXPECT_TRUE(plan.starts.empty());
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_THAT(plan.preemptions[0].victims, ElementsAre("slurm-worker"));

  // A carrier of a higher class: no preemption, and the reason names the rule.
  snapshot = std::make_shared<Snapshot>(*snapshot);
  snapshot->running[0].class_priority = 5000;
  QueuePlanner again(config, &victims);
  plan = again.PlanCycle(snapshot, 1000);
  EXPECT_TRUE(plan.preemptions.empty());
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_THAT(std::string(plan.waiting[0].Message()), HasSubstr("didn't satisfy existing pods anti-affinity rules"));
}

// The preemptor's own required anti-affinity (issue 28, PlacementRules::carriers): running pods
// matching its term in a node's domain keep it off the node for a start, but kube-scheduler's
// SelectVictimsOnNode re-runs its InterPodAffinity filter with the lower-priority pods removed,
// so the node is a preemption candidate when every one of them may be a victim, and they then go
// (never reprieved). Through the queue planner: there the own rule is read without the running
// pods (NodesAllowedByRules' placed_before) and the carriers are required victims.
class OwnAntiAffinityWorld {
 public:
  // `nodes` of 4000 millicores; `one_zone`: all in one domain (a zone key), else one per node.
  OwnAntiAffinityWorld(int nodes, bool one_zone) : snapshot_(std::make_shared<Snapshot>()) {
    TopologyDomains t{one_zone ? "topology.kubernetes.io/zone" : "kubernetes.io/hostname", {}, one_zone ? 1 : nodes};
    for (int i = 0; i < nodes; ++i) {
      Node n;
      n.name = "n" + std::to_string(i);
      n.allocatable = Cpu(4000);
      snapshot_->nodes.push_back(n);
      t.domain_of_node.push_back(one_zone ? 0 : i);
    }
    snapshot_->topologies.push_back(t);
    snapshot_->pod_counts.push_back(PodCounts(static_cast<size_t>(nodes), 0));  // pods matching app=web
    carriers_ = CarriersByNode(static_cast<size_t>(nodes));
  }
  // A running pod; `matches`: it has app=web (counted by the term). `running`: false for a pod
  // that is no running workload (e.g. a DaemonSet's).
  void Run(const std::string& id, NodeIndex node, int64_t cpu, int32_t class_priority, bool matches,
           bool running = true) {
    if (running) {
      RunningWorkload r;
      r.id = id;
      r.allocations = {{node, Cpu(cpu)}};
      r.class_priority = class_priority;
      r.expected_end = 100000;
      snapshot_->running.push_back(r);
    }
    if (!matches) return;
    ++snapshot_->pod_counts[0][node];
    const TopologyDomains& t = snapshot_->topologies[0];
    for (size_t n = 0; n < carriers_.size(); ++n) {
      if (t.domain_of_node[n] == t.domain_of_node[node]) carriers_[n].push_back(id);
    }
  }
  // A pending web pod (app=web, 1000 millicores) repelling app=web on the world's key.
  void Pending(const std::string& id, int32_t class_value) {
    PendingWorkload p;
    p.id = id;
    p.per_member = Cpu(1000);
    p.priority_class_value = class_value;
    p.time_limit = 600;
    p.submit_time = static_cast<Time>(snapshot_->pending.size());  // in the order given
    snapshot_->pending.push_back(p);
  }
  Plan PlanCycle() {
    auto rules = std::make_shared<PlacementRules>();
    PlacementRule r;
    r.kind = PlacementRule::Kind::kAntiAffinity;  // its own term: not symmetric
    rules->rules.push_back(r);
    rules->counts_toward = {0};  // it has app=web itself
    bool any = false;
    for (const auto& ids : carriers_) any = any || !ids.empty();
    if (any) rules->carriers = std::make_shared<const CarriersByNode>(carriers_);
    auto snapshot = std::make_shared<Snapshot>(*snapshot_);
    for (PendingWorkload& p : snapshot->pending) p.placement = rules;
    QueuePlanner planner(config_, &victims_);
    return planner.PlanCycle(snapshot, 1000);
  }

 private:
  std::shared_ptr<Snapshot> snapshot_;
  CarriersByNode carriers_;
  QueueConfig config_;
  CheapestVictimsPlanner victims_;
};

TEST(Preemption, OwnAntiAffinityAMatchingPodOfLowerPriorityIsEvictedAndNeverReprieved) {
  OwnAntiAffinityWorld world(1, /*one_zone=*/false);
  world.Run("web-old", 0, 1000, 1, /*matches=*/true);  // room for the newcomer beside it
  world.Run("batch", 0, 1000, 1, /*matches=*/false);
  world.Pending("web-new", 1000);
  const Plan plan = world.PlanCycle();
  EXPECT_TRUE(plan.starts.empty());
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].preemptor, "web-new");
  EXPECT_THAT(plan.preemptions[0].victims, ElementsAre("web-old"));  // the matching pod only
  EXPECT_THAT(plan.preemptions[0].member_nodes, ElementsAre(0));
}

TEST(Preemption, OwnAntiAffinityAMatchingPodThatCannotBeAVictimKeepsTheNodeOut) {
  OwnAntiAffinityWorld higher(1, /*one_zone=*/false);
  higher.Run("web-old", 0, 1000, 5000, /*matches=*/true);  // a higher class than the newcomer's
  higher.Pending("web-new", 1000);
  Plan plan = higher.PlanCycle();
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_TRUE(plan.preemptions.empty());
  ASSERT_EQ(plan.waiting.size(), 1u);
  EXPECT_THAT(std::string(plan.waiting[0].Message()), HasSubstr("didn't match pod anti-affinity rules"));

  OwnAntiAffinityWorld daemon(1, /*one_zone=*/false);
  daemon.Run("kube-system/web-agent", 0, 100, 0, /*matches=*/true, /*running=*/false);  // no running workload
  daemon.Run("batch", 0, 3000, 1, /*matches=*/false);
  daemon.Pending("web-new", 1000);
  plan = daemon.PlanCycle();
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_TRUE(plan.preemptions.empty());
}

TEST(Preemption, OwnAntiAffinityAMatchingPodElsewhereInTheDomainIsAVictimToo) {
  // A zone key: the matching pod fills node 1; node 0 of the same zone is free.
  OwnAntiAffinityWorld world(2, /*one_zone=*/true);
  world.Run("web-old", 1, 4000, 1, /*matches=*/true);
  world.Pending("web-new", 1000);
  const Plan plan = world.PlanCycle();
  EXPECT_TRUE(plan.starts.empty());
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_THAT(plan.preemptions[0].victims, ElementsAre("web-old"));
  EXPECT_EQ(plan.preemptions[0].member_nodes.size(), 1u);
}

TEST(Preemption, OwnAntiAffinityAPodPlacedEarlierInTheCycleKeepsTheNodeOut) {
  // web-a starts on the free node 0; web-b may not join it there (web-a is no victim: placed this
  // cycle), so it preempts the matching pod on node 1.
  OwnAntiAffinityWorld world(2, /*one_zone=*/false);
  world.Run("web-old", 1, 1000, 1, /*matches=*/true);
  world.Pending("web-a", 2000);
  world.Pending("web-b", 1000);
  const Plan plan = world.PlanCycle();
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].workload, "web-a");
  EXPECT_THAT(plan.starts[0].member_nodes, ElementsAre(0));
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_EQ(plan.preemptions[0].preemptor, "web-b");
  EXPECT_THAT(plan.preemptions[0].victims, ElementsAre("web-old"));
  EXPECT_THAT(plan.preemptions[0].member_nodes, ElementsAre(1));
}

// Through the queue planner: the hook is called for a preempting QOS, the decision lands in the
// Plan as one PreemptDecision, and the claimed nodes are off limits for the rest of the cycle.
// Issue 26: TryPreempt lists its nodes eight at a time where all eight are open; a run of eight
// with a node the preemptor may not use keeps that node out: node 3 (ineligible, under the
// cheapest victim) and node 5 (reserved for another workload, under the next), so the victim is
// the cheapest on a node it may use.
TEST(Preemption, ThroughTheQueuePlannerANodeItMayNotUseAmongEightIsNoCandidate) {
  auto snapshot = std::make_shared<Snapshot>();
  for (int i = 0; i < 16; ++i) {
    Node n;
    n.name = "n" + std::to_string(i);
    n.allocatable = Cpu(4000);
    n.labels["pool"] = i == 3 ? "b" : "a";
    RunningWorkload low;
    low.id = "low-" + std::to_string(i);
    low.allocations = {{i, Cpu(4000)}};
    if (i == 5) n.owner = NodeOwner{OwnerKind::kReserved, "someone-else"};
    low.priority = i == 3 ? 1 : (i == 5 ? 1.5 : (i == 12 ? 2 : 10 + i));
    low.qos = "low";
    low.expected_end = 100000;
    snapshot->nodes.push_back(n);
    snapshot->running.push_back(low);
  }
  PendingWorkload p;
  p.id = "urgent";
  p.qos = "high";
  p.per_member = Cpu(4000);
  p.time_limit = 600;
  p.eligibility.node_selector["pool"] = "a";
  snapshot->pending.push_back(p);
  QueueConfig config;
  config.qos = {{"high", 100, false, {"low"}, 30}, {"low", 1, true, {}, 0}};
  CheapestVictimsPlanner victims;
  QueuePlanner planner(config, &victims);
  Plan plan = planner.PlanCycle(snapshot, 1000);
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_THAT(plan.preemptions[0].victims, ElementsAre("low-12"));
  EXPECT_THAT(plan.preemptions[0].member_nodes, ElementsAre(12));
}

TEST(Preemption, ThroughTheQueuePlannerTheDecisionIsOneAtomicStep) {
  auto snapshot = std::make_shared<Snapshot>();
  for (int i = 0; i < 2; ++i) {
    Node n;
    n.name = "n" + std::to_string(i);
    n.allocatable = Cpu(4000);
    snapshot->nodes.push_back(n);
  }
  RunningWorkload low;
  low.id = "low-0";
  low.allocations = {{0, Cpu(4000)}};
  low.priority = 5;
  low.qos = "low";
  low.expected_end = 100000;
  snapshot->running.push_back(low);
  low.id = "low-1";
  low.allocations = {{1, Cpu(4000)}};
  low.priority = 7;
  snapshot->running.push_back(low);
  PendingWorkload p;
  p.id = "urgent";
  p.qos = "high";
  p.per_member = Cpu(4000);
  p.time_limit = 600;
  snapshot->pending.push_back(p);
  PendingWorkload small = p;
  small.id = "small";
  small.qos = "low";
  small.per_member = Cpu(1000);
  snapshot->pending.push_back(small);

  QueueConfig config;
  config.qos = {{"high", 100, false, {"low"}, 30}, {"low", 1, true, {}, 0}};
  CheapestVictimsPlanner victims;
  QueuePlanner planner(config, &victims);
  Plan plan = planner.PlanCycle(snapshot, 1000);
  ASSERT_EQ(plan.preemptions.size(), 1u);
  const PreemptDecision& d = plan.preemptions[0];
  EXPECT_EQ(d.preemptor, "urgent");
  EXPECT_THAT(d.victims, ElementsAre("low-0"));  // the lower of the two priorities
  EXPECT_THAT(d.member_nodes, ElementsAre(0));
  EXPECT_EQ(d.earliest_start, 1000);  // the victims' QOS has no grace time
  EXPECT_TRUE(plan.starts.empty());
  bool preempting = false;
  for (const WaitingStatus& w : plan.waiting) {
    if (w.workload == "urgent") preempting = w.reason == WaitReason::kPreempting;
  }
  EXPECT_TRUE(preempting);
}

// ---------------------------------------------------------------------------------------------
// Property test: random small clusters, checked against brute force over every victim subset.
// ---------------------------------------------------------------------------------------------

struct BruteCost {
  int count;
  double max_priority;
  int64_t lost;
  bool operator<(const BruteCost& o) const {
    return std::tie(count, max_priority, lost) < std::tie(o.count, o.max_priority, o.lost);
  }
  bool operator==(const BruteCost& o) const {
    return count == o.count && max_priority == o.max_priority && lost == o.lost;
  }
};

// Independent of the planner: which running workloads a victim set of gang-closed units may hold,
// and whether the preemptor's members fit once they are gone.
class Brute {
 public:
  explicit Brute(const PreemptionInput& in) : in_(in) {}

  bool Allowed(const RunningWorkload& r) const {
    if (!(r.priority < in_.preemptor_priority) || !r.preemptible) return false;
    const QosPolicy* mine = nullptr;
    const QosPolicy* theirs = nullptr;
    for (const auto& q : in_.config->qos) {
      if (q.name == in_.preemptor->qos) mine = &q;
      if (q.name == r.qos) theirs = &q;
    }
    if (!mine || !theirs || !theirs->preemptible) return false;
    for (const auto& name : mine->can_preempt) {
      if (name == r.qos) return true;
    }
    return false;
  }

  bool Fits(const std::set<std::string>& victims) const {
    const Snapshot& s = *in_.snapshot;
    std::map<std::string, int> disrupted;
    for (const auto& r : s.running) {
      if (victims.count(r.id) && !r.disruption_budget_group.empty()) {
        disrupted[r.disruption_budget_group] += std::max<int>(1, r.allocations.size());
      }
    }
    for (const auto& [group, pods] : disrupted) {
      auto it = s.disruptions_allowed.find(group);
      if (pods > (it == s.disruptions_allowed.end() ? 0 : it->second)) return false;
    }
    int64_t copies = 0;
    for (NodeIndex n : in_.Eligible()) {
      if ((*in_.claimed)[n]) continue;
      Resources cap = s.nodes[n].allocatable;
      bool blocked = false;
      for (const auto& r : s.running) {
        for (const auto& a : r.allocations) {
          if (a.node != n || victims.count(r.id)) continue;
          cap -= a.used;
          const bool shared = in_.config->shared_nodes || s.nodes[n].sharing == NodeSharing::kShared;
          if (!shared && r.kind != in_.preemptor->kind) blocked = true;
        }
      }
      if (!blocked) copies += cap.CopiesOf(in_.preemptor->per_member, in_.preemptor->members);
    }
    return copies >= in_.preemptor->members;
  }

  // The best cost over every gang-closed subset of allowed workloads; nullopt if none fits (or
  // it fits with no victims at all).
  std::optional<BruteCost> Best() const {
    const Snapshot& s = *in_.snapshot;
    if (Fits({})) return std::nullopt;
    std::map<std::string, std::vector<int>> units;
    for (size_t i = 0; i < s.running.size(); ++i) {
      const auto& r = s.running[i];
      units[r.gang_id.empty() ? "solo:" + r.id : "gang:" + r.gang_id].push_back(i);
    }
    std::vector<std::vector<int>> ok;
    for (const auto& [key, members] : units) {
      bool all = true;
      for (int i : members) all = all && Allowed(s.running[i]);
      if (all) ok.push_back(members);
    }
    std::optional<BruteCost> best;
    for (uint32_t mask = 1; mask < (1u << ok.size()); ++mask) {
      std::set<std::string> victims;
      BruteCost cost{0, 0, 0};
      for (size_t u = 0; u < ok.size(); ++u) {
        if (!(mask & (1u << u))) continue;
        for (int i : ok[u]) {
          victims.insert(s.running[i].id);
          cost.count++;
          cost.max_priority = std::max(cost.max_priority, s.running[i].priority);
          cost.lost += std::max<int64_t>(0, in_.now - s.running[i].start_time);
        }
      }
      if ((!best || cost < *best) && Fits(victims)) best = cost;
    }
    return best;
  }

 private:
  const PreemptionInput& in_;
};

TEST(PreemptionProperty, MatchesBruteForceAndKeepsEveryRuleOnRandomClusters) {
  std::mt19937_64 rng(5);
  int decisions = 0;
  for (int round = 0; round < 1500; ++round) {
    const int nodes = 2 + rng() % 4;
    Scenario s(nodes, 4000);
    s.config.shared_nodes = rng() % 4 == 0;
    // Some nodes shared on their own (issue 25): exclusive and shared nodes in one decision.
    // (Their own generator: the rounds' other draws stay what they were.)
    std::mt19937_64 sharing_rng(round);
    for (Node& node : s.snapshot.nodes) {
      node.sharing = sharing_rng() % 3 == 0 ? NodeSharing::kShared : NodeSharing::kExclusive;
    }
    s.preemptor.members = 1 + rng() % 3;
    s.preemptor.per_member = Cpu(1000 * (1 + rng() % 4));
    s.preemptor.kind = rng() % 2 ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
    s.preemptor_priority = 50;
    const char* qos_names[] = {"low", "normal", "pinned", "high"};
    int id = 0;
    for (int n = 0; n < nodes; ++n) {
      int64_t left = 4000;
      const int count = rng() % 3;
      for (int k = 0; k < count && left >= 1000; ++k) {
        const int64_t cpu = 1000 * (1 + rng() % (left / 1000));
        left -= cpu;
        std::vector<NodeIndex> where = {n};
        RunningWorkload& r = s.Run("w" + std::to_string(id++), where, cpu,
                                   /*priority=*/static_cast<double>(rng() % 70), /*start=*/rng() % 1000,
                                   qos_names[rng() % 4 == 0 ? 1 + rng() % 3 : 0]);
        r.kind = rng() % 3 == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
        if (rng() % 4 == 0) r.gang_id = "g" + std::to_string(rng() % 3);
        if (rng() % 4 == 0) r.disruption_budget_group = "pdb" + std::to_string(rng() % 2);
      }
    }
    for (const char* g : {"pdb0", "pdb1"}) {
      if (rng() % 2) s.snapshot.disruptions_allowed[g] = rng() % 3;
    }
    s.eligible.clear();
    for (int n = 0; n < nodes; ++n) {
      if (rng() % 5 != 0) s.eligible.push_back(n);
    }
    if (rng() % 6 == 0) s.claimed[rng() % nodes] = 1;

    const PreemptionInput in = s.Input();
    const auto choice = CheapestVictimsPlanner().Choose(in);
    const auto best = Brute(in).Best();
    ASSERT_EQ(choice.has_value(), best.has_value()) << "round " << round;
    if (!choice) continue;
    ++decisions;
    EXPECT_TRUE(choice->exact);
    const BruteCost got{choice->victim_count, choice->max_victim_priority, choice->run_time_lost};
    EXPECT_EQ(got, *best) << "round " << round << ": " << choice->reason;

    // Every rule, checked on the decision itself.
    std::set<std::string> victims(choice->decision.victims.begin(), choice->decision.victims.end());
    EXPECT_EQ(victims.size(), choice->decision.victims.size()) << "a victim listed twice";
    std::map<std::string, std::vector<std::string>> gangs;
    for (const auto& r : s.snapshot.running) {
      if (!r.gang_id.empty()) gangs[r.gang_id].push_back(r.id);
      if (!victims.count(r.id)) continue;
      EXPECT_LT(r.priority, s.preemptor_priority);
      EXPECT_TRUE(Brute(in).Allowed(r)) << r.id;
    }
    for (const auto& [gang, members] : gangs) {
      int in_set = 0;
      for (const auto& m : members) in_set += victims.count(m);
      EXPECT_TRUE(in_set == 0 || in_set == static_cast<int>(members.size())) << "gang " << gang << " split";
    }
    EXPECT_TRUE(Brute(in).Fits(victims));
    // The member placement fits node by node once the victims are gone.
    ASSERT_EQ(choice->decision.member_nodes.size(), static_cast<size_t>(s.preemptor.members));
    std::map<NodeIndex, Resources> placed;
    for (NodeIndex n : choice->decision.member_nodes) {
      EXPECT_TRUE(std::find(s.eligible.begin(), s.eligible.end(), n) != s.eligible.end());
      EXPECT_FALSE(s.claimed[n]);
      placed[n] += s.preemptor.per_member;
    }
    for (const auto& [n, need] : placed) {
      Resources cap = s.snapshot.nodes[n].allocatable;
      for (const auto& r : s.snapshot.running) {
        for (const auto& a : r.allocations) {
          if (a.node == n && !victims.count(r.id)) cap -= a.used;
        }
      }
      EXPECT_TRUE(cap.Covers(need)) << "node " << n << " overfilled in round " << round;
    }
  }
  EXPECT_GT(decisions, 200);  // the generator must actually exercise preemption
}

}  // namespace
}  // namespace onequeue::queue

// Issue 26: the candidate cap's window walk keeps, per node and candidate key, what the node's
// candidates free (ViableMemo, preemption_index.h) across the searches of a cycle. The memo is an
// invariant: a planner that keeps it across calls decides exactly as a fresh planner per call.
// These tests make a stale entry visible as a different window, hence a different decision: a
// window the walk thinks can make room but cannot falls back to every usable node, where a
// cheaper victim elsewhere wins.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "queue/preemption.h"

namespace onequeue::queue {
namespace {

using ::testing::ElementsAre;

Resources Cpu(int64_t millicores) {
  Resources r;
  r[kCpu] = millicores;
  return r;
}

// Nodes A, B, C, D of 4 CPUs. A gang G (priority 10) fills A and B; c (priority 50) fills C;
// d (priority 20) fills D. The cap keeps one viable node: a window of one node.
struct Pool {
  std::shared_ptr<Snapshot> snapshot = std::make_shared<Snapshot>();
  QueueConfig config;
  std::vector<Resources> free_now;
  std::vector<char> claimed;
  std::vector<std::string> victims;  // earlier victims of the cycle

  explicit Pool(int64_t cpu_per_node = 4000) {
    for (const char* name : {"A", "B", "C", "D"}) {
      Node n;
      n.name = name;
      n.allocatable = Cpu(cpu_per_node);
      snapshot->nodes.push_back(n);
    }
    config.qos = {{"high", 100, /*preemptible=*/false, /*can_preempt=*/{"low"}, /*grace_time=*/0},
                  {"low", 10, true, {}, 0}};
    config.preemption.min_candidate_nodes_percentage = 0;
    config.preemption.min_candidate_nodes_absolute = 1;
    claimed.assign(snapshot->nodes.size(), 0);
  }

  void Run(const std::string& id, std::vector<NodeIndex> nodes, int64_t cpu, double priority,
           const std::string& gang = "") {
    RunningWorkload r;
    r.id = id;
    r.gang_id = gang;
    for (NodeIndex n : nodes) r.allocations.push_back({n, Cpu(cpu)});
    r.priority = priority;
    r.qos = "low";
    snapshot->running.push_back(r);
  }

  void ComputeFreeNow() {
    free_now.clear();
    for (const Node& n : snapshot->nodes) free_now.push_back(n.allocatable);
    for (const RunningWorkload& r : snapshot->running) {
      for (const Allocation& a : r.allocations) free_now[a.node] -= a.used;
    }
  }

  // One search of the cycle by `planner`, for a preemptor of priority 100 and QOS high (the same
  // candidate key every time), one member of `cpu`, that may use `eligible`.
  std::optional<PreemptionChoice> Choose(const CheapestVictimsPlanner& planner, const std::string& id, int64_t cpu,
                                         std::vector<NodeIndex> eligible, double priority = 100,
                                         const std::string& qos = "high") const {
    PendingWorkload w;
    w.id = id;
    w.qos = qos;
    w.members = 1;
    w.per_member = Cpu(cpu);
    PreemptionInput in;
    in.snapshot = snapshot.get();
    in.shared_snapshot = snapshot;
    in.config = &config;
    in.preemptor = &w;
    in.preemptor_priority = priority;
    in.now = 1000;
    in.eligible_nodes = std::move(eligible);
    in.free_now = &free_now;
    in.claimed = &claimed;
    in.already_victims = &victims;
    return planner.Choose(in);
  }

  // As the cycle pass does with a decision: its nodes claimed, its victims not taken again.
  void Take(const PreemptionChoice& c) {
    for (NodeIndex n : c.decision.member_nodes) claimed[n] = 1;
    victims.insert(victims.end(), c.decision.victims.begin(), c.decision.victims.end());
  }
};

// "late-1" walks the usable nodes B, C, D from position 0 (its offset, Fnv1a("late-1") % 3): B
// first. The first assertions check that premise with a planner that has no memo.
constexpr char kLate[] = "late-1";

std::vector<std::string> Victims(const std::optional<PreemptionChoice>& c) {
  return c ? c->decision.victims : std::vector<std::string>{"(none)"};
}

TEST(PreemptionMemo, ANodeEntryIsDroppedWhenAVictimOnItIsTakenElsewhere) {
  Pool p;
  p.Run("g1", {0}, 4000, 10, "G");
  p.Run("g2", {1}, 4000, 10, "G");
  p.Run("c", {2}, 4000, 50);
  p.Run("d", {3}, 4000, 20);
  p.ComputeFreeNow();
  const CheapestVictimsPlanner kept;  // one planner for the whole cycle, as PlanCycle's
  // 1. Nothing holds 8 CPUs: the walk examines every node (and remembers B as freed by G).
  EXPECT_FALSE(p.Choose(kept, "big", 8000, {0, 1, 2, 3}).has_value());
  // 2. A preemptor that may only use A takes the gang: A is claimed, and B loses its victims.
  const std::optional<PreemptionChoice> first = p.Choose(kept, "onA", 4000, {0});
  ASSERT_TRUE(first.has_value());
  EXPECT_THAT(first->decision.victims, ElementsAre("g1", "g2"));
  p.Take(*first);
  // 3. B cannot make room now: the window is C (its first viable node), the victim c. A stale
  //    entry for B would make B the window, which fails, then every node: d, the cheaper.
  const CheapestVictimsPlanner fresh;
  ASSERT_THAT(Victims(p.Choose(fresh, kLate, 4000, {0, 1, 2, 3})), ElementsAre("c"));
  EXPECT_THAT(Victims(p.Choose(kept, kLate, 4000, {0, 1, 2, 3})), ElementsAre("c"));
}

TEST(PreemptionMemo, ANodeEntryDoesNotKeepTheNodesFreeCapacity) {
  // Nodes of 8 CPUs: b holds 4 on B (4 free), c and d fill C and D; the preemptor needs 6.
  Pool p(8000);
  p.Run("a", {0}, 8000, 10);  // A: full, and claimed below
  p.Run("b", {1}, 4000, 10);
  p.Run("c", {2}, 8000, 50);
  p.Run("d", {3}, 8000, 20);
  p.ComputeFreeNow();
  p.claimed[0] = 1;  // A is promised already: usable are B, C, D
  const CheapestVictimsPlanner kept;
  EXPECT_FALSE(p.Choose(kept, "big", 16000, {0, 1, 2, 3}).has_value());  // walks B, C, D
  // An earlier start of the cycle takes B's 4 free CPUs (B stays unclaimed, e.g. a shared node).
  p.free_now[1] = Cpu(0);
  // B could hold 4 CPUs with b gone: not enough, so the window is C. A memo that kept B's free
  // capacity (8 CPUs with b gone) would make B the window, fail there, and settle for d.
  const CheapestVictimsPlanner fresh;
  ASSERT_THAT(Victims(p.Choose(fresh, kLate, 6000, {0, 1, 2, 3})), ElementsAre("c"));
  EXPECT_THAT(Victims(p.Choose(kept, kLate, 6000, {0, 1, 2, 3})), ElementsAre("c"));
}

TEST(PreemptionMemo, ANewCycleWithFewerEarlierVictimsSeesTheirNodesAgain) {
  Pool p;
  p.Run("g1", {0}, 4000, 10, "G");
  p.Run("g2", {1}, 4000, 10, "G");
  p.Run("c", {2}, 4000, 50);
  p.Run("d", {3}, 4000, 20);
  p.ComputeFreeNow();
  const CheapestVictimsPlanner kept;
  // Cycle 1: G is taken (its nodes' entries computed without it: B frees nothing).
  const std::optional<PreemptionChoice> first = p.Choose(kept, "onA", 4000, {0});
  ASSERT_TRUE(first.has_value());
  p.Take(*first);
  EXPECT_FALSE(p.Choose(kept, "big", 8000, {0, 1, 2, 3}).has_value());
  // Cycle 2 on the same snapshot: nothing claimed, no earlier victim. B is viable again (G): the
  // window is B, so G's two victims go (uncapped, d alone would), as a fresh planner says. An
  // entry for B kept from cycle 1 (G gone) would make C the window: c.
  p.claimed.assign(4, 0);
  p.victims.clear();
  const CheapestVictimsPlanner fresh;
  const std::vector<std::string> expected = Victims(p.Choose(fresh, kLate, 4000, {1, 2, 3}));
  ASSERT_THAT(expected, ElementsAre("g1", "g2"));
  EXPECT_EQ(Victims(p.Choose(kept, kLate, 4000, {1, 2, 3})), expected);
}

// A new key's node entries start from the entry of the nearest key that differs only in the
// threshold (ViableMemo::Base). Nodes A, B, C, D, each full: a (70), b (60), c (50), d (20). A
// preemptor of priority 55 may take c and d: from B, its walk finds C the first viable node.
struct Ladder : Pool {
  Ladder() {
    Run("a", {0}, 4000, 70);
    Run("b", {1}, 4000, 60);
    Run("c", {2}, 4000, 50);
    Run("d", {3}, 4000, 20);
    ComputeFreeNow();
  }
};

TEST(PreemptionMemo, AnEntryFromAHigherPriorityKeyLosesTheUnitsBetween) {
  Ladder p;
  const CheapestVictimsPlanner kept;
  // Priority 100: every unit a candidate; nothing holds 8 CPUs, so every node's entry is made.
  EXPECT_FALSE(p.Choose(kept, "big", 8000, {0, 1, 2, 3}, 100).has_value());
  // Priority 55 starts from those: b must go from B's entry. Kept, B would be the window, fail
  // there, and every node would give d, the cheapest.
  const CheapestVictimsPlanner fresh;
  ASSERT_THAT(Victims(p.Choose(fresh, kLate, 4000, {1, 2, 3}, 55)), ElementsAre("c"));
  EXPECT_THAT(Victims(p.Choose(kept, kLate, 4000, {1, 2, 3}, 55)), ElementsAre("c"));
}

TEST(PreemptionMemo, AnEntryOfAnotherQosIsNoBase) {
  Ladder p;
  p.snapshot->running[1].qos = "low2";  // b
  p.config.qos.push_back({"wide", 100, false, {"low", "low2"}, 0});
  p.config.qos.push_back({"low2", 10, true, {}, 0});
  const CheapestVictimsPlanner kept;
  // At priority 65 QOS wide may take b too: its key, at the same threshold, counts b on B.
  EXPECT_FALSE(p.Choose(kept, "big", 8000, {0, 1, 2, 3}, 65, "wide").has_value());
  // QOS high may not: B is not viable for it. Started from wide's entries, B would be the window.
  const CheapestVictimsPlanner fresh;
  ASSERT_THAT(Victims(p.Choose(fresh, kLate, 4000, {1, 2, 3}, 65, "high")), ElementsAre("c"));
  EXPECT_THAT(Victims(p.Choose(kept, kLate, 4000, {1, 2, 3}, 65, "high")), ElementsAre("c"));
}

TEST(PreemptionMemo, AnEntryFromALowerPriorityKeyGainsTheUnitsBetween) {
  Ladder p;
  const CheapestVictimsPlanner kept;
  // Priority 25: d alone is a candidate (every node's entry made, none viable for 8 CPUs).
  EXPECT_FALSE(p.Choose(kept, "big", 8000, {0, 1, 2, 3}, 25).has_value());
  // Priority 55 starts from those: c must join C's entry. Left out, C would not be viable, and
  // the window would be D: d.
  const CheapestVictimsPlanner fresh;
  ASSERT_THAT(Victims(p.Choose(fresh, kLate, 4000, {1, 2, 3}, 55)), ElementsAre("c"));
  EXPECT_THAT(Victims(p.Choose(kept, kLate, 4000, {1, 2, 3}, 55)), ElementsAre("c"));
}

}  // namespace
}  // namespace onequeue::queue

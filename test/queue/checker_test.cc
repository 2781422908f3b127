// Two things the random tests rest on:
//   * eligibility.cc's toleration and node affinity matching, case by case against Kubernetes'
//     rules (the random generator produces them too, checked by the plan checker's own matching);
//   * the plan checker of testing_builders.h is able to fail: a plan that leaves a workload
//     waiting although it fits, loses a workload, reorders the queue or places a workload where
//     it may not run is caught.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "queue/eligibility.h"
#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT

// ---------------------------------------------------------------------------------------------
// Tolerations and node affinity (eligibility.cc)
// ---------------------------------------------------------------------------------------------

Node Tainted(std::vector<Taint> taints) {
  Node n = MakeNode("n", 4000);
  n.taints = std::move(taints);
  return n;
}

Toleration Tol(std::string key, Toleration::Operator op, std::string value = "",
               std::optional<TaintEffect> effect = std::nullopt) {
  return Toleration{std::move(key), op, std::move(value), effect};
}

constexpr auto kEqual = Toleration::Operator::kEqual;
constexpr auto kExists = Toleration::Operator::kExists;

TEST(Tolerations, EqualNeedsTheSameKeyAndValue) {
  const Node n = Tainted({{"dedicated", "gpu", TaintEffect::kNoSchedule}});
  EXPECT_FALSE(ToleratesTaints(n, {}));
  EXPECT_TRUE(ToleratesTaints(n, {Tol("dedicated", kEqual, "gpu")}));
  EXPECT_FALSE(ToleratesTaints(n, {Tol("dedicated", kEqual, "cpu")}));
  EXPECT_FALSE(ToleratesTaints(n, {Tol("other", kEqual, "gpu")}));
}

TEST(Tolerations, ExistsIgnoresTheValueAndAnEmptyKeyToleratesEverything) {
  const Node n = Tainted({{"dedicated", "gpu", TaintEffect::kNoSchedule}, {"spot", "", TaintEffect::kNoExecute}});
  EXPECT_FALSE(ToleratesTaints(n, {Tol("dedicated", kExists)})) << "spot is not tolerated";
  EXPECT_TRUE(ToleratesTaints(n, {Tol("dedicated", kExists), Tol("spot", kExists)}));
  EXPECT_TRUE(ToleratesTaints(n, {Tol("", kExists)}));
  EXPECT_FALSE(ToleratesTaints(n, {Tol("", kEqual)})) << "an empty key with Equal tolerates nothing";
}

TEST(Tolerations, TheEffectMustMatchWhenGiven) {
  const Node n = Tainted({{"dedicated", "gpu", TaintEffect::kNoExecute}});
  EXPECT_FALSE(ToleratesTaints(n, {Tol("dedicated", kEqual, "gpu", TaintEffect::kNoSchedule)}));
  EXPECT_TRUE(ToleratesTaints(n, {Tol("dedicated", kEqual, "gpu", TaintEffect::kNoExecute)}));
  EXPECT_TRUE(ToleratesTaints(n, {Tol("dedicated", kEqual, "gpu")}));  // no effect: every effect
  EXPECT_FALSE(ToleratesTaints(n, {Tol("", kExists, "", TaintEffect::kNoSchedule)}));
  EXPECT_TRUE(ToleratesTaints(n, {Tol("", kExists, "", TaintEffect::kNoExecute)}));
}

TEST(Tolerations, PreferNoScheduleNeverExcludesANode) {
  const Node n = Tainted({{"soft", "x", TaintEffect::kPreferNoSchedule}});
  EXPECT_TRUE(ToleratesTaints(n, {}));
}

TEST(Tolerations, EveryTaintNeedsItsOwnToleration) {
  const Node n = Tainted({{"a", "1", TaintEffect::kNoSchedule}, {"b", "2", TaintEffect::kNoSchedule}});
  EXPECT_FALSE(ToleratesTaints(n, {Tol("a", kEqual, "1")}));
  EXPECT_FALSE(ToleratesTaints(n, {Tol("b", kEqual, "2")}));
  EXPECT_TRUE(ToleratesTaints(n, {Tol("b", kEqual, "2"), Tol("a", kEqual, "1")}));
}

Eligibility Affinity(std::string key, LabelRequirement::Operator op, std::vector<std::string> values = {}) {
  Eligibility e;
  e.required_affinity.push_back(LabelRequirement{std::move(key), op, std::move(values)});
  return e;
}

TEST(NodeAffinity, EachOperatorAsKubernetesDefinesIt) {
  const Node gpu = MakeNode("g", 4000, 1 << 30, 0, {{"type", "gpu"}});
  const Node cpu = MakeNode("c", 4000, 1 << 30, 0, {{"type", "cpu"}});
  const Node bare = MakeNode("b", 4000);
  using Op = LabelRequirement::Operator;
  const Eligibility in = Affinity("type", Op::kIn, {"gpu", "tpu"});
  EXPECT_TRUE(MatchesSelectorAndAffinity(gpu, in));
  EXPECT_FALSE(MatchesSelectorAndAffinity(cpu, in));
  EXPECT_FALSE(MatchesSelectorAndAffinity(bare, in));
  const Eligibility not_in = Affinity("type", Op::kNotIn, {"gpu"});
  EXPECT_FALSE(MatchesSelectorAndAffinity(gpu, not_in));
  EXPECT_TRUE(MatchesSelectorAndAffinity(cpu, not_in));
  EXPECT_TRUE(MatchesSelectorAndAffinity(bare, not_in)) << "NotIn matches a node without the label";
  const Eligibility exists = Affinity("type", Op::kExists);
  EXPECT_TRUE(MatchesSelectorAndAffinity(gpu, exists));
  EXPECT_FALSE(MatchesSelectorAndAffinity(bare, exists));
  const Eligibility absent = Affinity("type", Op::kDoesNotExist);
  EXPECT_FALSE(MatchesSelectorAndAffinity(cpu, absent));
  EXPECT_TRUE(MatchesSelectorAndAffinity(bare, absent));
}

TEST(NodeAffinity, RequirementsAndTheSelectorAreAllRequired) {
  const Node n = MakeNode("n", 4000, 1 << 30, 0, {{"type", "gpu"}, {"zone", "a"}});
  using Op = LabelRequirement::Operator;
  Eligibility e = Affinity("type", Op::kIn, {"gpu"});
  e.required_affinity.push_back({"zone", Op::kNotIn, {"a"}});
  EXPECT_FALSE(MatchesSelectorAndAffinity(n, e));
  e.required_affinity.back().values = {"b"};
  EXPECT_TRUE(MatchesSelectorAndAffinity(n, e));
  e.node_selector["zone"] = "b";
  EXPECT_FALSE(MatchesSelectorAndAffinity(n, e));
  e.node_selector["zone"] = "a";
  EXPECT_TRUE(MatchesSelectorAndAffinity(n, e));
}

// The checker's own matching agrees with eligibility.cc on every small combination.
TEST(NodeAffinity, TheCheckersMatchingAgreesWithEligibility) {
  using Op = LabelRequirement::Operator;
  const std::vector<Node> nodes = {MakeNode("a", 1, 1, 0, {{"k", "x"}}), MakeNode("b", 1, 1, 0, {{"k", "y"}}),
                                   MakeNode("c", 1, 1, 0, {})};
  int checked = 0;
  for (Op op : {Op::kIn, Op::kNotIn, Op::kExists, Op::kDoesNotExist}) {
    for (const std::vector<std::string>& values :
         std::vector<std::vector<std::string>>{{}, {"x"}, {"x", "y"}, {"z"}}) {
      const Eligibility e = Affinity("k", op, values);
      for (const Node& n : nodes) {
        EXPECT_EQ(MatchesSelectorAndAffinity(n, e), checker::NodeMatches(n, e));
        ++checked;
      }
    }
  }
  for (TaintEffect effect : {TaintEffect::kNoSchedule, TaintEffect::kPreferNoSchedule, TaintEffect::kNoExecute}) {
    const Node n = Tainted({{"k", "v", effect}});
    for (const Toleration& t : {Tol("k", kEqual, "v"), Tol("k", kEqual, "w"), Tol("k", kExists), Tol("", kExists),
                                Tol("", kEqual), Tol("k", kExists, "", TaintEffect::kNoSchedule),
                                Tol("k", kExists, "", TaintEffect::kNoExecute)}) {
      EXPECT_EQ(ToleratesTaints(n, {t}), checker::TaintsTolerated(n, {t}));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 4 * 4 * 3 + 3 * 7);
}

// ---------------------------------------------------------------------------------------------
// The checker can fail
// ---------------------------------------------------------------------------------------------

// The checker's failures on a plan (they are collected here, not reported).
std::vector<std::string> CheckerFailures(const Snapshot& snap, const QueueConfig& config, const Plan& plan) {
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    CheckPlanInvariants(snap, config, plan);
  }
  std::vector<std::string> messages;
  for (int i = 0; i < results.size(); ++i) {
    if (results.GetTestPartResult(i).failed()) messages.push_back(results.GetTestPartResult(i).message());
  }
  return messages;
}

bool AnyContains(const std::vector<std::string>& messages, const std::string& text) {
  for (const auto& m : messages) {
    if (m.find(text) != std::string::npos) return true;
  }
  return false;
}

// Two free nodes, one tainted; three small workloads that all start.
struct SmallPool {
  std::shared_ptr<Snapshot> snap = std::make_shared<Snapshot>();
  QueueConfig config = SubmitOrderConfig();
  Plan plan;
  SmallPool() {
    snap->nodes = {MakeNode("n0", 4000), MakeNode("n1", 4000)};
    snap->nodes[1].taints = {Taint{"dedicated", "x", TaintEffect::kNoSchedule}};
    snap->nodes[1].allocatable[kCpu] = 1000;
    snap->pending = {PendingBuilder("a", 1000).Submit(1), PendingBuilder("b", 1000).Submit(2),
                     PendingBuilder("c", 1000).Submit(3)};
    QueuePlanner planner(config, nullptr);
    plan = planner.PlanCycle(snap, 100);
  }
};

TEST(PlanChecker, ThePlannersPlanPasses) {
  SmallPool p;
  EXPECT_EQ(p.plan.starts.size(), 3u);
  EXPECT_TRUE(CheckerFailures(*p.snap, p.config, p.plan).empty());
}

TEST(PlanChecker, AnAllWaitingPlanIsCaught) {
  SmallPool p;
  Plan lazy = p.plan;
  for (const StartDecision& s : lazy.starts) {
    WaitingStatus w;
    w.workload = p.snap->pending[0].id == s.workload   ? std::string_view(p.snap->pending[0].id)
                 : p.snap->pending[1].id == s.workload ? std::string_view(p.snap->pending[1].id)
                                                       : std::string_view(p.snap->pending[2].id);
    w.reason = WaitReason::kResources;
    lazy.waiting.push_back(w);
  }
  lazy.starts.clear();
  EXPECT_TRUE(AnyContains(CheckerFailures(*p.snap, p.config, lazy), "although it fits now"));
}

TEST(PlanChecker, AWorkloadLostOrCountedTwiceIsCaught) {
  SmallPool p;
  Plan lost = p.plan;
  lost.starts.back() = lost.starts.front();  // same count, one id twice, one missing
  const auto failures = CheckerFailures(*p.snap, p.config, lost);
  EXPECT_TRUE(AnyContains(failures, "started 0, waiting 0"));
  EXPECT_TRUE(AnyContains(failures, "started 2, waiting 0"));
}

TEST(PlanChecker, AQueueOutOfPriorityOrderIsCaught) {
  SmallPool p;
  Plan swapped = p.plan;
  std::swap(swapped.order[0], swapped.order[2]);
  EXPECT_TRUE(AnyContains(CheckerFailures(*p.snap, p.config, swapped), "queue position 1"));
  Plan wrong_total = p.plan;
  wrong_total.priorities[0].total += 1;
  EXPECT_TRUE(AnyContains(CheckerFailures(*p.snap, p.config, wrong_total), "total"));
}

TEST(PlanChecker, AStartOnANodeItDoesNotTolerateIsCaught) {
  SmallPool p;
  Plan bad = p.plan;
  bad.starts[0].member_nodes = {1};  // tainted, and the workload has no toleration
  bad.starts[1].member_nodes = {0};
  bad.starts[2].member_nodes = {0};
  EXPECT_TRUE(AnyContains(CheckerFailures(*p.snap, p.config, bad), "may not use n1"));
}

}  // namespace
}  // namespace onequeue::queue

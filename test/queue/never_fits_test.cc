// A request no eligible node can ever hold is reported as such, naming the resource, instead of as
// "cannot start within the planning window" (issue 23: Slurm jobs asking for the RealMemory Slurm
// knows while the Kubernetes twins offer less were held as BeyondWindow with no hint).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

#include "queue/never_fits.h"
#include "queue/planner.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT

constexpr int64_t kMi = int64_t{1} << 20;

Plan PlanOnce(Snapshot s) {
  auto snap = std::make_shared<Snapshot>(std::move(s));
  QueueConfig c = SubmitOrderConfig();
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(snap, 10);
  CheckPlanInvariants(*snap, c, p);
  return p;
}

// The issue's scene: 4 nodes of 15000Mi (the twins' allocatable), a Slurm job asking 16000Mi per
// node (Slurm's RealMemory).
TEST(NeverFits, AJobAskingMoreMemoryThanAnyNodeOffersSaysSo) {
  Snapshot s;
  for (int i = 1; i <= 4; ++i) s.nodes.push_back(MakeNode("n" + std::to_string(i), 8000, 15000 * kMi));
  s.pending = {PendingBuilder("slurm/7", 4000).Kind(WorkloadKind::kSlurmJob).Memory(16000 * kMi)};
  Plan p = PlanOnce(s);
  const WaitingStatus* w = FindWaiting(p, "slurm/7");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, WaitReason::kResources);
  EXPECT_EQ(w->message,
            "no eligible node can ever hold it: it asks for memory 16000Mi per member; the largest of the 4 "
            "eligible nodes offers 15000Mi (n1)");
}

TEST(NeverFits, AGangLargerThanTheEligibleNodesSaysHowManyMembersFit) {
  Snapshot s;
  for (int i = 1; i <= 2; ++i) s.nodes.push_back(MakeNode("n" + std::to_string(i), 8000));
  s.pending = {PendingBuilder("ns/gang", 3000, 6)};
  Plan p = PlanOnce(s);
  const WaitingStatus* w = FindWaiting(p, "ns/gang");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, WaitReason::kResources);
  EXPECT_EQ(w->message, "the 2 eligible nodes hold at most 4 of its 6 members even when empty");
}

// What fits an empty node but not within the window keeps its reason.
TEST(NeverFits, AWorkloadThatFitsLaterThanTheWindowIsStillBeyondIt) {
  Snapshot s;
  s.nodes = {MakeNode("n1", 8000)};
  s.running = {MakeRunning("R", 0, Cpu(8000), 0, std::nullopt)};  // a service: holds n1 for good
  s.pending = {PendingBuilder("slurm/8", 4000).Kind(WorkloadKind::kSlurmJob)};
  Plan p = PlanOnce(s);
  const WaitingStatus* w = FindWaiting(p, "slurm/8");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, WaitReason::kBeyondWindow);
}

// The planner reads the empty pool once per request per member and eligibility class a cycle
// (CyclePass::NeverFits): workloads of one request and different sizes, and of another request,
// each get their own answer. Both nodes are held for good, so nothing starts within the window.
TEST(NeverFits, OneCycleAnswersEachSizeAndRequestOnItsOwn) {
  Snapshot s;
  for (int i = 1; i <= 2; ++i) {
    s.nodes.push_back(MakeNode("n" + std::to_string(i), 8000));
    s.running.push_back(MakeRunning("R" + std::to_string(i), i - 1, Cpu(8000), 0, std::nullopt));
  }
  s.pending = {PendingBuilder("ns/one", 3000, 1).Submit(1), PendingBuilder("ns/six", 3000, 6).Submit(2),
               PendingBuilder("ns/four", 3000, 4).Submit(3), PendingBuilder("ns/wide", 5000, 3).Submit(4)};
  Plan p = PlanOnce(s);
  auto message = [&](const std::string& id) {
    const WaitingStatus* w = FindWaiting(p, id);
    return w == nullptr ? std::string("(none)") : std::string(w->Message());
  };
  EXPECT_EQ(message("ns/one"), "cannot start within the planning window");
  EXPECT_EQ(message("ns/six"), "the 2 eligible nodes hold at most 4 of its 6 members even when empty");
  EXPECT_EQ(message("ns/four"), "cannot start within the planning window");
  EXPECT_EQ(message("ns/wide"), "the 2 eligible nodes hold at most 2 of its 3 members even when empty");
}

// The summary the planner keeps answers for every member count as counting each node's copies,
// capped at the member count, does (the walk WhyItNeverFits made before the summary).
TEST(NeverFits, TheEmptyPoolSummaryAnswersForEverySize) {
  Snapshot s;
  s.nodes = {MakeNode("a", 8000), MakeNode("b", 3000), MakeNode("c", 16000), MakeNode("d", 2000)};
  const std::vector<char> eligible = {1, 1, 0, 1};
  for (int64_t cpu : {1000, 3000, 8000, 9000}) {
    PendingWorkload w = PendingBuilder("ns/g", cpu, 1);
    const EmptyPoolCapacity pool = CapacityWhenEmpty(s, w.per_member, eligible);
    for (int32_t members = 1; members <= 13; ++members) {
      w.members = members;
      int64_t capped = 0;
      for (int64_t node_cpu : {8000, 3000, 2000}) capped += std::min<int64_t>(node_cpu / cpu, members);
      std::optional<std::string> expected;
      if (cpu > 8000) {
        expected = "no eligible node can ever hold it: it asks for cpu 9 per member; the largest of the 3 "
                   "eligible nodes offers 8 (a)";
      } else if (capped < members) {
        expected = absl::StrCat("the 3 eligible nodes hold at most ", capped, " of its ", members,
                                " members even when empty");
      }
      EXPECT_EQ(WhyItNeverFits(s, w, pool), expected) << cpu << " x " << members;
    }
  }
}

TEST(NeverFits, AmountsAreWrittenAsKubernetesWritesThem) {
  const ResourceNames names;
  EXPECT_EQ(FormatAmount(names, kCpu, 2000), "2");
  EXPECT_EQ(FormatAmount(names, kCpu, 1500), "1500m");
  EXPECT_EQ(FormatAmount(names, kMemory, int64_t{4} << 30), "4Gi");
  EXPECT_EQ(FormatAmount(names, kMemory, 16000 * kMi), "16000Mi");
  EXPECT_EQ(FormatAmount(names, kPods, 3), "3");
}

}  // namespace
}  // namespace onequeue::queue

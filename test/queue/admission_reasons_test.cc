// Issue 13 defect 1, the queue's half: a workload the scheduler refused at admission (its
// namespace may not use the QOS or account it asked for) waits with that reason, and nothing else
// happens for it: no start, no reservation, no preemption, though its QOS could preempt.
#include <gtest/gtest.h>

#include "queue/planner.h"
#include "queue/preemption.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT: the test builders

Snapshot OneBusyNode(AdmissionError error, std::string message) {
  Snapshot s;
  s.nodes = {MakeNode("n1", 4000)};
  RunningWorkload victim = MakeRunning("victim", 0, Cpu(4000), 0, 1000, /*priority=*/1);
  victim.qos = "scavenger";
  s.running = {victim};
  PendingWorkload w = PendingBuilder("tenant/p", 1000).Qos("interactive");
  w.admission_error = error;
  w.admission_message = std::move(message);
  s.pending = {w};
  return s;
}

QueueConfig PreemptingConfig() {
  QueueConfig c;
  c.qos = {{"interactive", 1000, false, {"scavenger"}, 0}, {"scavenger", 0, true, {}, 0}};
  return c;
}

TEST(AdmissionReasons, AccountNotAllowedWaitsWithItsOwnReasonAndPreemptsNothing) {
  CheapestVictimsPlanner preemption;
  QueuePlanner planner(PreemptingConfig(), &preemption);
  const Plan plan = planner.PlanCycle(
      std::make_shared<Snapshot>(OneBusyNode(AdmissionError::kAccountNotAllowed,
                                             "namespace \"tenant\" may not charge account \"vip\"")),
      10);
  const WaitingStatus* w = FindWaiting(plan, "tenant/p");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, WaitReason::kAccountNotAllowed);
  EXPECT_STREQ(WaitReasonName(w->reason), "AccountNotAllowed");
  EXPECT_EQ(w->Message(), "namespace \"tenant\" may not charge account \"vip\"");
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_TRUE(plan.preemptions.empty());
  EXPECT_TRUE(plan.reservations.empty());
}

TEST(AdmissionReasons, QosNotAllowedByTheNamespacePreemptsNothing) {
  CheapestVictimsPlanner preemption;
  QueuePlanner planner(PreemptingConfig(), &preemption);
  // Control: admitted, the same workload preempts the victim.
  const Plan admitted = planner.PlanCycle(std::make_shared<Snapshot>(OneBusyNode(AdmissionError::kNone, "")), 10);
  EXPECT_EQ(admitted.preemptions.size(), 1u);
  const Plan plan = planner.PlanCycle(
      std::make_shared<Snapshot>(OneBusyNode(AdmissionError::kQosNotAllowed,
                                             "namespace \"tenant\" may not use QOS \"interactive\"")),
      10);
  const WaitingStatus* w = FindWaiting(plan, "tenant/p");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, WaitReason::kQosNotAllowed);
  EXPECT_TRUE(plan.preemptions.empty());
  EXPECT_TRUE(plan.starts.empty());
}

}  // namespace
}  // namespace onequeue::queue

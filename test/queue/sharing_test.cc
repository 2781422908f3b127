// Shared nodes in the queue (issue 25, docs/sharing.md): pods and Slurm jobs on one node at the
// size each asks for, planned together, and sub-node preemption. Scenario tests that read
// "workloads in -> decisions out" on one 4-GPU node (32 CPUs, 4 GPUs) like the issue's, plus an
// exclusive twin where the contrast matters. Every plan also passes the independent checker
// (CheckPlanInvariants), which knows per-node sharing on its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "queue/planner.h"
#include "queue/preemption.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kGiB = int64_t{1} << 30;

Node GpuNode(std::string name, NodeSharing sharing) {
  Node n = MakeNode(std::move(name), 32000, 256 * kGiB, 4);
  n.sharing = sharing;
  return n;
}

RunningWorkload RunningOn(std::string id, WorkloadKind kind, NodeIndex node, int64_t gpus, Time end,
                          double priority = 1, std::string qos = "") {
  RunningWorkload r = MakeRunning(std::move(id), node, Cpu(8000, 32 * kGiB, gpus), 0, end, priority);
  r.kind = kind;
  r.qos = std::move(qos);
  return r;
}

PendingWorkload Wants(std::string id, WorkloadKind kind, int64_t gpus, Time submit = 1) {
  return PendingBuilder(std::move(id), 8000).Kind(kind).Memory(32 * kGiB).Gpus(gpus).Limit(100).Submit(submit);
}

Plan PlanOnce(const Snapshot& s, QueueConfig c = SubmitOrderConfig(), PreemptionPlanner* victims = nullptr) {
  auto snap = std::make_shared<Snapshot>(s);
  QueuePlanner planner(c, victims);
  Plan p = planner.PlanCycle(snap, 10);
  if (victims == nullptr) CheckPlanInvariants(*snap, c, p);
  return p;
}

constexpr auto kPod = WorkloadKind::kPodGroup;
constexpr auto kJob = WorkloadKind::kSlurmJob;

// The first scene: a 2-GPU Slurm job runs; a 2-GPU pod starts beside it on a shared node,
// and changes no node's hands. On an exclusive node it waits for the job's end.
TEST(Sharing, APodStartsBesideASlurmJobOnASharedNodeOnly) {
  Snapshot s;
  s.nodes = {GpuNode("gpu-0", NodeSharing::kShared)};
  s.running = {RunningOn("slurm/17", kJob, 0, 2, 1000)};
  s.pending = {Wants("research/train", kPod, 2)};
  Plan shared = PlanOnce(s);
  EXPECT_THAT(StartedIds(shared), ElementsAre("research/train"));
  EXPECT_THAT(shared.owner_changes, IsEmpty());

  s.nodes[0].sharing = NodeSharing::kExclusive;
  Plan exclusive = PlanOnce(s);
  EXPECT_THAT(StartedIds(exclusive), IsEmpty());
  const ReserveDecision* r = FindReservation(exclusive, "research/train");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, 1000);  // the job's end
}

// A Slurm job that needs 3 GPUs is not started beside a pod holding 2: it is planned for the pod's
// end, not now (Slurm's own scheduler is kept off the same space by the pod's placeholder, not by
// the queue: docs/sharing.md, section 3).
TEST(Sharing, AJobThatDoesNotFitBesideAPodWaitsForItsEnd) {
  Snapshot s;
  s.nodes = {GpuNode("gpu-0", NodeSharing::kShared)};
  s.running = {RunningOn("research/train", kPod, 0, 2, 500)};
  s.pending = {Wants("slurm/18", kJob, 3), Wants("slurm/19", kJob, 2, 2)};
  Plan p = PlanOnce(s);
  EXPECT_THAT(StartedIds(p), ElementsAre("slurm/19"));  // 2 GPUs fit now, and end before 500
  const ReserveDecision* r = FindReservation(p, "slurm/18");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, 500);
}

// A pod that does not fit beside what both worlds hold waits with a reason, and takes the
// earliest moment it fits as its reservation.
TEST(Sharing, APodThatDoesNotFitWaitsWithAReason) {
  Snapshot s;
  s.nodes = {GpuNode("gpu-0", NodeSharing::kShared)};
  s.running = {RunningOn("slurm/17", kJob, 0, 2, 300), RunningOn("research/a", kPod, 0, 1, 200)};
  s.pending = {Wants("research/big", kPod, 3)};
  Plan p = PlanOnce(s);
  EXPECT_THAT(StartedIds(p), IsEmpty());
  const WaitingStatus* w = FindWaiting(p, "research/big");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->has_reservation);
  const ReserveDecision* r = FindReservation(p, "research/big");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, 300);  // 1 GPU free now, 2 at 200, 3 only when the job ends at 300
}

// Shared and exclusive nodes in one plan: the exclusive node keeps its one-world rule, the shared
// one packs both worlds; nothing changes hands on the shared node.
TEST(Sharing, SharedAndExclusiveNodesInOnePlan) {
  Snapshot s;
  s.nodes = {GpuNode("gpu-0", NodeSharing::kExclusive), GpuNode("gpu-1", NodeSharing::kShared)};
  s.nodes[0].owner.kind = OwnerKind::kSlurm;  // lent: slurm/1 runs there
  s.running = {RunningOn("slurm/1", kJob, 0, 2, 1000), RunningOn("slurm/2", kJob, 1, 2, 1000)};
  s.pending = {Wants("ns/p1", kPod, 2, 1), Wants("ns/p2", kPod, 2, 2), Wants("slurm/3", kJob, 2, 3)};
  Plan p = PlanOnce(s);
  // p1 beside slurm/2 on the shared node; p2 cannot use the exclusive node while slurm/1 runs and
  // the shared node is full; slurm/3 fits beside slurm/1 on the exclusive node (same world).
  EXPECT_THAT(StartedIds(p), ElementsAre("ns/p1", "slurm/3"));
  const StartDecision* p1 = FindStart(p, "ns/p1");
  ASSERT_NE(p1, nullptr);
  EXPECT_THAT(p1->member_nodes, ElementsAre(1));
  EXPECT_THAT(p.owner_changes, IsEmpty());
}

// Sub-node preemption, the last scene: on a full shared node a 2-GPU Slurm job (QOS low)
// and a 2-GPU pod (QOS normal) run; an interactive pod needing 2 GPUs, which may preempt low only,
// takes the job's half: one victim, the other pod untouched. On an exclusive node the same pod
// would need every Slurm job there gone; here only what its size needs goes.
TEST(Sharing, SubNodePreemptionTakesOnlyWhatThePreemptorNeeds) {
  Snapshot s;
  s.nodes = {GpuNode("gpu-0", NodeSharing::kShared)};
  s.running = {RunningOn("slurm/17", kJob, 0, 2, 100000, 5, "low"),
               RunningOn("research/notebook", kPod, 0, 2, 100000, 50, "normal")};
  PendingWorkload interactive = Wants("research/jupyter", kPod, 2);
  interactive.qos = "interactive";
  s.pending = {interactive};
  QueueConfig c = SubmitOrderConfig();
  c.weights.qos = 10000;  // the interactive pod's priority (10,000) is above both running ones
  c.qos = {{"interactive", 100, false, {"low"}, 0}, {"normal", 50, false, {}, 0}, {"low", 1, true, {}, 0}};
  CheapestVictimsPlanner victims;
  Plan p = PlanOnce(s, c, &victims);
  ASSERT_EQ(p.preemptions.size(), 1u);
  EXPECT_EQ(p.preemptions[0].preemptor, "research/jupyter");
  EXPECT_THAT(p.preemptions[0].victims, ElementsAre("slurm/17"));
  EXPECT_THAT(p.preemptions[0].member_nodes, ElementsAre(0));
}

// Sub-node preemption chooses across both worlds by the usual cost: the fewest victims first. A
// 3-GPU interactive pod on a node with 1 GPU free, a 1-GPU low pod and a 2-GPU low Slurm job needs
// 2 more GPUs: the job alone does it (one victim), not the pod (too small alone).
TEST(Sharing, SubNodePreemptionPicksTheFewestVictimsOfEitherWorld) {
  Snapshot s;
  s.nodes = {GpuNode("gpu-0", NodeSharing::kShared)};
  s.running = {RunningOn("ns/low-pod", kPod, 0, 1, 100000, 3, "low"),
               RunningOn("slurm/5", kJob, 0, 2, 100000, 4, "low")};
  PendingWorkload interactive = Wants("ns/jupyter", kPod, 3);
  interactive.qos = "interactive";
  interactive.per_member[kCpu] = 8000;
  s.pending = {interactive};
  QueueConfig c = SubmitOrderConfig();
  c.weights.qos = 10000;
  c.qos = {{"interactive", 100, false, {"low"}, 0}, {"low", 1, true, {}, 0}};
  CheapestVictimsPlanner victims;
  Plan p = PlanOnce(s, c, &victims);
  ASSERT_EQ(p.preemptions.size(), 1u);
  EXPECT_THAT(p.preemptions[0].victims, ElementsAre("slurm/5"));

  // The same node exclusive cannot even hold both worlds; with only the Slurm job there, the pod
  // needs it gone although 2 GPUs are free: the exclusive rule, unchanged.
  s.nodes[0].sharing = NodeSharing::kExclusive;
  s.running = {RunningOn("slurm/5", kJob, 0, 2, 100000, 4, "low")};
  s.pending[0].per_member[kFirstExtended] = 1;
  Plan q = PlanOnce(s, c, &victims);
  ASSERT_EQ(q.preemptions.size(), 1u);
  EXPECT_THAT(q.preemptions[0].victims, ElementsAre("slurm/5"));
}

}  // namespace
}  // namespace onequeue::queue

// Issue 25 step 4, a gang of pods as the preemptor on shared nodes (sub_node_preemption.cc):
// every member claims the room on its own node at once, naming only the victims there; the
// victims are asked once for the whole gang (pods first); a refusal undoes every member's claim.
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "fake_world.h"
#include "scheduler/job_claim.h"
#include "scheduler/scheduling_loop.h"
#include "two_shared_nodes_scene.h"

namespace onequeue::scheduler {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

constexpr queue::Time kT0 = 1763722800;  // 2025-11-21T11:00:00Z

// The scene of two_shared_nodes_scene.h; a gang of two interactive pods of 4 CPUs each arrives:
// it fits only by taking both batch halves, one member on each node.
struct PodGangScene : TwoSharedNodesScene {
  void MirrorTheBoundPodThenAddTheGang(SchedulingLoop& loop) {
    ASSERT_NO_FATAL_FAILURE(MirrorTheBoundPod(loop, kT0));
    for (const char* member : {"train-0", "train-1"}) {
      c.k8s.AddPod(member, "4", "interactive");
      c.k8s.Find(std::string("ns/") + member)->metadata.annotations[kGroupAnnotation] = "train";
      c.k8s.Find(std::string("ns/") + member)->metadata.annotations[kGroupSizeAnnotation] = "2";
    }
  }
  // The member's claim (placeholder) on `node`, by the node its placeholder is pinned to.
  const slurm::SlurmJob* ClaimOn(const std::string& node) {
    for (uint32_t id : c.slurm.pod_placeholders) {
      const slurm::SlurmJob& j = c.slurm.Job(id);
      if (id != low_placeholder && j.required_nodes == std::vector<std::string>{node}) return &j;
    }
    return nullptr;
  }
};

// Each member claims on its own node and names only the victim there; each victim is asked once;
// nothing is bound before its claim runs; once Slurm runs both claims both members are bound, the
// interactive jobs beside untouched.
TEST(SharedGangLoopTest, EachMemberClaimsItsOwnNodeNamingOnlyTheVictimThereAndIsBoundOnceItRuns) {
  PodGangScene s;
  SlurmLoopCluster& c = s.c;
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenAddTheGang(loop));
  c.Cycle(loop, kT0 + 2);
  const slurm::SlurmJob* on_n1 = s.ClaimOn("n1");
  const slurm::SlurmJob* on_n2 = s.ClaimOn("n2");
  ASSERT_NE(on_n1, nullptr);
  ASSERT_NE(on_n2, nullptr);
  EXPECT_THAT(on_n1->comment, HasSubstr("preempting ns/low"));
  EXPECT_THAT(on_n1->comment, ::testing::Not(HasSubstr("slurm/9")));
  EXPECT_THAT(on_n2->comment, HasSubstr("preempting slurm/9"));
  EXPECT_THAT(on_n2->comment, ::testing::Not(HasSubstr("ns/low")));
  EXPECT_THAT(c.k8s.evictions, ::testing::ElementsAre("ns/low"));
  EXPECT_EQ(c.slurm.requeues[9], 1);
  EXPECT_EQ(c.k8s.NodeOf("ns/train-0"), "");
  EXPECT_EQ(c.k8s.NodeOf("ns/train-1"), "");
  EXPECT_THAT(c.slurm.calls, ::testing::Not(Contains(::testing::StartsWith("fence"))));
  const uint32_t claim_n1 = on_n1->job_id;
  const uint32_t claim_n2 = on_n2->job_id;
  for (int t = 3; t <= 4; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.requeues[9], 1);  // asked once
  EXPECT_EQ(c.k8s.evictions.size(), 1u);
  // slurmctld gives the freed room to the pending claims: the members are bound there.
  ASSERT_TRUE(c.slurm.Fits(claim_n1, "n1"));
  ASSERT_TRUE(c.slurm.Fits(claim_n2, "n2"));
  c.slurm.Run(claim_n1, "n1");
  c.slurm.Run(claim_n2, "n2");
  for (int t = 5; t <= 7; ++t) c.Cycle(loop, kT0 + t);
  std::set<std::string> bound{c.k8s.NodeOf("ns/train-0"), c.k8s.NodeOf("ns/train-1")};
  EXPECT_EQ(bound, (std::set<std::string>{"n1", "n2"}));
  EXPECT_EQ(c.slurm.Job(6).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(9).state, slurm::JobState::kPending);
  EXPECT_EQ(c.slurm.requeues[9], 1);
}

// Pods first, across the whole gang: the batch pod's PodDisruptionBudget refuses, so job 9 on the
// other member's node is never requeued and both members' claims are undone (their placeholders
// cancelled); the gang waits with the refusal as its reason and does not claim again at once.
TEST(SharedGangLoopTest, ARefusalOnOneMembersNodeUndoesEveryMembersClaimBeforeAnyJobIsRequeued) {
  PodGangScene s;
  SlurmLoopCluster& c = s.c;
  c.k8s.pdb_blocks.insert("ns/low");
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenAddTheGang(loop));
  c.Cycle(loop, kT0 + 2);
  ASSERT_EQ(c.slurm.pod_placeholders.size(), 3u);  // the two claims were made, then undone
  EXPECT_EQ(c.Calls("requeue 9"), 0);
  EXPECT_TRUE(c.k8s.evictions.empty());
  for (uint32_t id : c.slurm.pod_placeholders) {
    if (id != s.low_placeholder) EXPECT_EQ(c.slurm.Job(id).state, slurm::JobState::kCancelled) << id;
  }
  EXPECT_TRUE(loop.mirrors().Find(c.k8s.UidOf("ns/train-0")) == nullptr);
  EXPECT_TRUE(loop.mirrors().Find(c.k8s.UidOf("ns/train-1")) == nullptr);
  c.Cycle(loop, kT0 + 3);
  EXPECT_EQ(c.slurm.pod_placeholders.size(), 3u);  // blocked for a while: no new claim
  EXPECT_EQ(c.slurm.Job(9).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.k8s.NodeOf("ns/low"), "n1");
  EXPECT_EQ(c.k8s.NodeOf("ns/train-0"), "");
  ASSERT_FALSE(c.k8s.reports["ns/train-0"].empty());
  EXPECT_THAT(c.k8s.reports["ns/train-0"].back().message, HasSubstr("undone"));
  EXPECT_THAT(c.k8s.reports["ns/train-0"].back().message, HasSubstr("PodDisruptionBudget"));
}

// A member with room on its node needs no claim: it gets a plain placeholder, but it belongs to the
// gang's preemption all the same. Without the batch job on n2, the member there has no victim; the
// refusal on n1 cancels its placeholder too, so it is never bound alone.
TEST(SharedGangLoopTest, AMemberThatNeededNoVictimIsUndoneWithTheGangOnARefusal) {
  PodGangScene s;
  SlurmLoopCluster& c = s.c;
  c.slurm.Job(9).state = slurm::JobState::kCompleted;
  c.slurm.Job(9).nodes.clear();
  c.k8s.pdb_blocks.insert("ns/low");
  SchedulingLoop loop(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPodThenAddTheGang(loop));
  c.Cycle(loop, kT0 + 2);
  const slurm::SlurmJob* on_n2 = s.ClaimOn("n2");
  ASSERT_NE(on_n2, nullptr) << "the member on n2 got no placeholder";
  EXPECT_THAT(on_n2->comment, ::testing::Not(HasSubstr("preempting")));
  EXPECT_EQ(on_n2->state, slurm::JobState::kCancelled);
  const uint32_t plain = on_n2->job_id;
  c.slurm.Run(plain, "n2");  // even if Slurm had started it: no bind follows
  const size_t placeholders = c.slurm.pod_placeholders.size();
  for (int t = 3; t <= 4; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.pod_placeholders.size(), placeholders) << "a blocked gang submits nothing";
  EXPECT_EQ(c.k8s.NodeOf("ns/train-0"), "");
  EXPECT_EQ(c.k8s.NodeOf("ns/train-1"), "");
  EXPECT_TRUE(c.k8s.evictions.empty());
}

// G7's scenes: job 9 interactive, so ns/low (a gang of one, group "low") is the only victim on n1.
void MakeTheLowPodTheOnlyVictimAGangOfOne(SlurmLoopCluster& c) {
  c.slurm.Job(9).qos = "";
  c.k8s.Find("ns/low")->metadata.annotations[kGroupAnnotation] = "low";
  c.k8s.Find("ns/low")->metadata.annotations[kGroupSizeAnnotation] = "1";
}

// Job 9 ends and leaves n2.
void EndJob9(SlurmLoopCluster& c) {
  c.slurm.Job(9).state = slurm::JobState::kCompleted;
  c.slurm.Job(9).nodes.clear();
}

// From kT0 to kT0 + 4: the bound pod mirrored, then `add_preemptor` (a pod or a Slurm job) claims
// the low pod's room on n1 and the low pod is evicted; job 9 ends, so the pod made again (the same
// workload) gets its placeholder on n2, which Slurm runs, and is bound there.
void ClaimThenBindTheReplacementOnN2(TwoSharedNodesScene& s, SchedulingLoop& loop,
                                     const std::function<void()>& add_preemptor) {
  SlurmLoopCluster& c = s.c;
  ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPod(loop, kT0));
  add_preemptor();
  c.Cycle(loop, kT0 + 2);
  ASSERT_EQ(c.k8s.evictions, std::vector<std::string>{"ns/low"});
  EndJob9(c);  // room for the replacement on n2
  c.Cycle(loop, kT0 + 3);
  const PodMirrorRecord* replacement = loop.mirrors().Find(c.k8s.UidOf("ns/low-r"));
  ASSERT_NE(replacement, nullptr) << "the replacement got no placeholder";
  ASSERT_TRUE(replacement->job.has_value());
  c.slurm.Run(*replacement->job, "n2");
  c.Cycle(loop, kT0 + 4);
  ASSERT_EQ(c.k8s.NodeOf("ns/low-r"), "n2");
}

// G7 (issue 25): a successor reads a claim back and asks its victims again, by workload. The
// victim, a gang's pod, has left already; the pod its controller made again is the same workload
// (the same group) and, with room on n2 now, has its placeholder under way there: it is counted in
// the gang's workload but is no victim, so the claim's victims asked again evict nothing.
TEST(SharedGangLoopTest, ASuccessorAsksAClaimsVictimAgainButNotTheVictimsReplacement) {
  TwoSharedNodesScene s;
  SlurmLoopCluster& c = s.c;
  MakeTheLowPodTheOnlyVictimAGangOfOne(c);
  {
    SchedulingLoop first(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    ASSERT_NO_FATAL_FAILURE(s.MirrorTheBoundPod(first, kT0));
    c.k8s.AddPod("jupyter", "4", "interactive");
    c.Cycle(first, kT0 + 2);
    ASSERT_EQ(c.k8s.evictions, std::vector<std::string>{"ns/low"});
    ASSERT_NE(c.k8s.Find("ns/low-r"), nullptr);  // made again at once, unbound, same group
    EndJob9(c);  // room for it on n2
    c.Cycle(first, kT0 + 3);
    const PodMirrorRecord* replacement = first.mirrors().Find(c.k8s.UidOf("ns/low-r"));
    ASSERT_NE(replacement, nullptr) << "the replacement got no placeholder";
    ASSERT_EQ(replacement->state, MirrorState::kPlaceholderPending);
    ASSERT_EQ(replacement->node.node, "n2");
  }
  SchedulingLoop successor(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(successor, kT0 + 4);
  const PodMirrorRecord* claim = successor.mirrors().Find(c.k8s.UidOf("ns/jupyter"));
  ASSERT_NE(claim, nullptr);
  EXPECT_EQ(claim->state, MirrorState::kWaitingForVictims);  // read back, its victims asked again
  EXPECT_EQ(c.k8s.evictions, std::vector<std::string>{"ns/low"});
  EXPECT_EQ(c.k8s.NodeOf("ns/low-r"), "");  // still there, waiting for its placeholder
}

// Found while fixing G7 (not a checker violation: no invariant names it): the same, but the
// replacement's placeholder ran and it is bound on n2 before the crash. It is ordinary running work
// of the victim's workload, and the claim names workloads, not pods: the successor evicts it for
// nothing (no room on n1 is freed). Fixed: a claim's victims are asked only where they hold
// something on the claimed node (PreemptionExecutor::AskSubNodeVictims).
TEST(SharedGangLoopTest, ASuccessorAsksAClaimsVictimAgainButNotAReplacementBoundElsewhere) {
  TwoSharedNodesScene s;
  SlurmLoopCluster& c = s.c;
  MakeTheLowPodTheOnlyVictimAGangOfOne(c);
  {
    SchedulingLoop first(s.cfg, &c.k8s, &c.k8s, &c.slurm);
    ASSERT_NO_FATAL_FAILURE(
        ClaimThenBindTheReplacementOnN2(s, first, [&c] { c.k8s.AddPod("jupyter", "4", "interactive"); }));
  }
  SchedulingLoop successor(s.cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(successor, kT0 + 5);
  EXPECT_EQ(c.k8s.evictions, std::vector<std::string>{"ns/low"});
}

// The scene of the two job-claim tests below: the low pod is the only victim, a gang of one, and
// an evicted pod lingers terminating until FinishDeletions.
struct JobClaimScene : TwoSharedNodesScene {
  JobClaimScene() {
    MakeTheLowPodTheOnlyVictimAGangOfOne(c);
    c.k8s.linger_evicted = true;
  }
  void SubmitTheJob() { c.slurm.Submit(8, 4); }
  // The evicted pod gone, three cycles of `loop` from kT0 + 5: the job runs on n1, the replacement
  // still on n2, and nothing else was evicted.
  void FinishTheEvictionAndExpectTheJobOnN1(SchedulingLoop& loop) {
    c.k8s.FinishDeletions();
    for (int t = 5; t <= 7; ++t) c.Cycle(loop, kT0 + t);
    EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
    EXPECT_EQ(c.slurm.Job(8).nodes, std::vector<std::string>{"n1"});
    EXPECT_EQ(c.k8s.NodeOf("ns/low-r"), "n2");
    EXPECT_EQ(c.k8s.evictions, std::vector<std::string>{"ns/low"});
  }
};

// A job's claim (issue 25) whose victim, a gang's pod, is made again by its controller and bound on
// n2 while the evicted pod still terminates on n1. The victim is a workload: it still runs, but on
// none of the claimed nodes, so once the evicted pod has gone the job starts on n1. Found writing
// the test below: before, the claim waited for the workload to stop running anywhere (until its
// victims timeout undid it), holding n1's free room idle.
TEST(SharedGangLoopTest, AJobClaimStartsOnceItsVictimLeftTheClaimedNodeThoughItsWorkloadRunsElsewhere) {
  JobClaimScene s;
  SchedulingLoop loop(s.cfg, &s.c.k8s, &s.c.k8s, &s.c.slurm);
  ASSERT_NO_FATAL_FAILURE(ClaimThenBindTheReplacementOnN2(s, loop, [&s] { s.SubmitTheJob(); }));
  EXPECT_EQ(s.c.slurm.Job(8).state, slurm::JobState::kPending);  // the evicted pod still holds n1
  s.FinishTheEvictionAndExpectTheJobOnN1(loop);
}

// The same with a crash while the claim waits: the successor reads the claim back from the job's
// AdminComment and asks its victims again on n1 only (StartSubNodeJobPreemptions passes the
// claim's nodes to AskSubNodeVictims): the replacement on n2 stays, and the job starts on n1.
TEST(SharedGangLoopTest, ASuccessorAsksAJobClaimsVictimAgainButNotAReplacementBoundElsewhere) {
  JobClaimScene s;
  {
    SchedulingLoop first(s.cfg, &s.c.k8s, &s.c.k8s, &s.c.slurm);
    ASSERT_NO_FATAL_FAILURE(ClaimThenBindTheReplacementOnN2(s, first, [&s] { s.SubmitTheJob(); }));
    ASSERT_NE(first.job_claims().Find("slurm/8"), nullptr) << "the claim ended before the crash";
  }
  SchedulingLoop successor(s.cfg, &s.c.k8s, &s.c.k8s, &s.c.slurm);
  ASSERT_NE(ParseJobClaim(s.c.slurm.Job(8).admin_comment), std::nullopt);
  s.FinishTheEvictionAndExpectTheJobOnN1(successor);
}

}  // namespace
}  // namespace onequeue::scheduler

// Issue 24: the cross-world defects found by reading the loop, each as a scenario on the in-memory
// cluster (fake_world.h) that failed on the code of a77dcd9 and passes since its fix.
//   H1  restart before the first Slurm poll: nothing is taken for a pod, no reservation dropped;
//   H2  a refused requeue is retried; a job Slurm will not requeue is cancelled, or (policy) the
//       preemption is given up and the node returned to Slurm, the preemptor told why;
//   H3  a lent node is marked Kubernetes' only after a live check says nothing of Slurm runs there;
//   M3  a failed StartOn undoes the lend; a stale Slurm view is not acted on.
//   D5  a StartOn that timed out keeps the lend until a view says whether it landed.
//   D6  a reservation read back after a crash and rolled back goes through the live check.
// And one suspicion checked and found no defect (it passes on the code before D6's fix): a
// victim whose Slurm start is unconfirmed is asked to leave like a running one.
//   M4  a bound pod past its time limit (+ queue.overTimeLimitSeconds) is evicted, as Slurm ends a
//       job at TimeLimit (+ OverTimeLimit);
//   M6  a node onequeue holds is fenced again while it is down, so it comes back fenced.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "fake_world.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr queue::Time kT0 = 1763722800;

Config SlurmConfig() { return SlurmLoopConfig(); }

using Cluster = SlurmLoopCluster;

// H1: a successor leader starts while Slurm job 7 still runs on n1, which its predecessor reserved
// for ns/jupyter (and fenced) before requeueing the job. Until the first poll answers, the
// successor knows nothing of job 7: it binds nothing there and keeps the reservation; once Slurm
// answers, it requeues the job and only then binds the pod.
TEST(LoopDefectsTest, H1_BeforeTheFirstSlurmPollAReservedNodeIsNeitherBoundNorReleased) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "reserved/ns/jupyter");
  c.slurm.Submit(7);
  c.slurm.Run(7, "n1");
  ASSERT_TRUE(c.slurm.Fence("n1", "reserved/ns/jupyter").ok());
  c.k8s.AddPod("jupyter", "2", "interactive");
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.k8s.slurm_unpolled = true;
  for (int t = 0; t < 3; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "") << "bound beside Slurm job 7 before Slurm answered";
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "reserved/ns/jupyter");
  EXPECT_EQ(loop.reservations().count("n1"), 1u);
  c.k8s.slurm_unpolled = false;
  for (int t = 3; t < 8; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
}

// H1, fresh install: n1 carries no owner annotation yet and Slurm job 7 runs there. Before the
// first poll it is not Kubernetes' (Slurm has not said so); after it, the node is adopted as lent.
TEST(LoopDefectsTest, H1_BeforeTheFirstSlurmPollAnUnmarkedNodeIsNotTakenForAPod) {
  Cluster c(1);
  c.slurm.Submit(7, 8);  // the whole node
  c.slurm.Run(7, "n1");
  c.k8s.AddPod("web", "2", "normal");
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.k8s.slurm_unpolled = true;
  c.Cycle(loop, kT0);
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "") << "bound to an unmarked node before Slurm answered";
  c.k8s.slurm_unpolled = false;
  for (int t = 1; t < 4; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "slurm");
  EXPECT_EQ(c.k8s.NodeOf("ns/web"), "");
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
}

// H1: a Slurm preemptor's reservation is not dropped because no poll has listed the job yet.
TEST(LoopDefectsTest, H1_BeforeTheFirstSlurmPollASlurmPreemptorsReservationIsKept) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "reserved/slurm/7");
  c.slurm.Submit(7);
  Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.k8s.slurm_unpolled = true;
  for (int t = 0; t < 3; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "reserved/slurm/7");
  EXPECT_EQ(loop.reservations().count("n1"), 1u);
}

// n1 is lent to Slurm job 7 (drain mechanism); an interactive pod reclaims it.
struct Reclaim {
  Cluster c{1};
  Config cfg = SlurmConfig();
  Reclaim() {
    c.k8s.SetNodeOwner("n1", "slurm/7");
    c.slurm.Submit(7);
    c.slurm.Run(7, "n1");
    c.k8s.AddPod("jupyter", "2", "interactive");
  }
};

// H2: slurmrestd refuses the requeue once (down for a moment): it is asked again, with backoff,
// and the pod gets the node; it used to count as requeued and the pod waited for the time limit.
TEST(LoopDefectsTest, H2_ARequeueThatFailedIsRetriedAndThePreemptionCompletes) {
  Reclaim r;
  r.c.slurm.requeue_unavailable[7] = 2;
  SchedulingLoop loop(r.cfg, &r.c.k8s, &r.c.k8s, &r.c.slurm);
  for (int t = 0; t <= 120; t += 5) r.c.Cycle(loop, kT0 + t);
  EXPECT_EQ(r.c.Calls("requeue 7"), 3);
  EXPECT_EQ(r.c.slurm.requeues[7], 1);
  EXPECT_EQ(r.c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(r.c.k8s.OwnerOf("n1"), "kubernetes");
}

// H2: job 7 is an srun allocation, which Slurm will not requeue: it is cancelled (the default
// policy), once, and the pod gets the node.
TEST(LoopDefectsTest, H2_AJobSlurmWillNotRequeueIsCancelledWhenPolicyAllows) {
  Reclaim r;
  r.c.slurm.not_requeueable.insert(7);
  SchedulingLoop loop(r.cfg, &r.c.k8s, &r.c.k8s, &r.c.slurm);
  for (int t = 0; t <= 10; ++t) r.c.Cycle(loop, kT0 + t);
  EXPECT_EQ(r.c.Calls("cancel 7"), 1);
  EXPECT_EQ(r.c.slurm.Job(7).state, slurm::JobState::kCancelled);
  EXPECT_EQ(r.c.k8s.NodeOf("ns/jupyter"), "n1");
}

// H2: the same with cancelUnrequeueable false: the preemption is given up, the reservation
// released, the node returned to Slurm (no drain left for nothing), and the pod told why.
TEST(LoopDefectsTest, H2_WhenCancelIsNotAllowedTheNodeGoesBackToSlurmAndThePreemptorIsToldWhy) {
  Reclaim r;
  r.c.slurm.not_requeueable.insert(7);
  r.cfg.slurm.cancel_unrequeueable = false;
  SchedulingLoop loop(r.cfg, &r.c.k8s, &r.c.k8s, &r.c.slurm);
  for (int t = 0; t <= 10; ++t) r.c.Cycle(loop, kT0 + t);
  EXPECT_EQ(r.c.Calls("cancel 7"), 0);
  EXPECT_EQ(r.c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_TRUE(loop.reservations().empty());
  EXPECT_EQ(r.c.k8s.OwnerOf("n1"), "slurm/7");
  EXPECT_EQ(r.c.slurm.FenceOwner("n1"), "") << "n1 left drained for nothing";
  EXPECT_EQ(r.c.k8s.NodeOf("ns/jupyter"), "");
  ASSERT_FALSE(r.c.k8s.reports["ns/jupyter"].empty());
  EXPECT_THAT(r.c.k8s.reports["ns/jupyter"].back().message, HasSubstr("will not requeue"));
}

// H3: n1, lent, has been idle for returnAfterSeconds by the last poll; between that poll and the
// return, Slurm starts job 8 there. The return asks Slurm (Ready) after the fence: job 8 runs, so
// the node stays Slurm's (no pod can be bound beside job 8) and the drain is lifted again.
TEST(LoopDefectsTest, H3_ANodeIsReturnedToKubernetesOnlyAfterALiveCheckSaysNoSlurmJobRunsThere) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "slurm/7");
  c.slurm.Submit(7).state = slurm::JobState::kCompleted;
  Config cfg = SlurmConfig();
  cfg.slurm.return_after_seconds = 20;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.slurm.frozen_view = c.slurm.View();  // the last poll: n1 idle
  c.slurm.Submit(8);
  c.slurm.Run(8, "n1");
  for (int t = 21; t <= 23; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_NE(c.k8s.OwnerOf("n1"), "kubernetes") << "returned while Slurm job 8 runs there";
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "") << "left drained while job 8 runs";
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
  EXPECT_THAT(c.k8s.node_events, Not(Contains("n1 Returned")));
}

// M3: StartOn fails (slurmrestd down): the annotation and taint written for the lend are undone,
// so nodes are not lent one after another during an outage.
TEST(LoopDefectsTest, M3_AFailedStartOnUndoesTheLend) {
  Cluster c(2);
  c.slurm.Submit(7);
  c.slurm.Submit(8);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.start_error = absl::UnavailableError("slurmrestd: connection refused");
  for (int t = 0; t <= 3; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_GE(c.Calls("start 7") + c.Calls("start 8"), 1);
  for (const char* node : {"n1", "n2"}) {
    SCOPED_TRACE(node);
    EXPECT_THAT(c.k8s.OwnerOf(node), Not(HasSubstr("slurm"))) << "left marked lent after a failed start";
    EXPECT_EQ(c.slurm.FenceOwner(node), "kubernetes");
  }
  c.slurm.start_error = absl::OkStatus();
  for (int t = 4; t <= 20; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(8).state, slurm::JobState::kRunning);
}

// D5 (issue 24, found by the checker): StartOn of job 7 times out (slurmrestd hung) after its
// release landed; n1 is fenced for Kubernetes, so the job waits, released. Its start is unknown,
// not failed: n1 stays lent to it and the job counts as running there (job 8, as large, is not
// started beside it) and n1's fence stays, until a view listed after the call returned shows job 7
// released; then n1 is unfenced and job 7 runs there.
TEST(LoopDefectsTest, D5_AStartThatTimedOutButLandedKeepsTheNodeLentUntilTheViewShowsIt) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "kubernetes");
  ASSERT_TRUE(c.slurm.Fence("n1", "kubernetes").ok());
  c.slurm.Submit(7, 8);
  c.slurm.Submit(8, 8);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.start_times_out = true;
  c.Cycle(loop, kT0);
  c.slurm.start_times_out = false;
  ASSERT_EQ(c.Calls("start 7"), 1);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "slurm/7") << "a start that timed out was taken for failed";
  c.Cycle(loop, kT0 + 1);  // its view may predate the landing: nothing settled
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "slurm/7");
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes") << "unfenced before the view said the start landed";
  EXPECT_EQ(c.Calls("start 8"), 0) << "job 8 started where job 7 may run";
  c.Cycle(loop, kT0 + 2);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "slurm/7");
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_EQ(c.slurm.Job(7).nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(c.Calls("start 8"), 0);
  EXPECT_THAT(c.k8s.node_events, Contains("n1 Lent"));
}

// D5: the same timeout, but nothing landed (job 7 still held). n1 stays lent and fenced until a
// view listed after the call returned shows job 7 pending and not released; then the lend is
// undone (the undo of a refused start): n1 is Kubernetes' again, its fence never lifted.
TEST(LoopDefectsTest, D5_AStartThatTimedOutAndDidNotLandIsUndoneOnceTheViewShowsIt) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "kubernetes");
  ASSERT_TRUE(c.slurm.Fence("n1", "kubernetes").ok());
  c.slurm.Submit(7, 8);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.start_error = absl::DeadlineExceededError("slurmrestd: no answer in 60 s");
  c.k8s.owner_changes.clear();
  c.Cycle(loop, kT0);
  c.Cycle(loop, kT0 + 1);
  ASSERT_EQ(c.Calls("start 7"), 1) << "started again while its first start is unknown";
  EXPECT_EQ(c.k8s.owner_changes, std::vector<std::string>{"n1=slurm/7"}) << "taken for failed at once";
  c.Cycle(loop, kT0 + 2);  // undone, then (the plan's next start) lent again
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kPending);
  ASSERT_GE(c.k8s.owner_changes.size(), 2u) << "the lend of a start that did not land stands";
  EXPECT_EQ(c.k8s.owner_changes[1], "n1=kubernetes");
  EXPECT_EQ(c.Calls("lend n1"), 0);
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes");
  EXPECT_THAT(c.k8s.node_events, Not(Contains("n1 Lent")));
}

// D6's scene: n1 reserved for ns/jupyter by a predecessor (marked and fenced), job 7 running
// there never asked; the next `timeouts` fences of n1 land but time out.
void ReadBackReservationWithTimedOutFences(Cluster& c, int timeouts) {
  c.k8s.SetNodeOwner("n1", "reserved/ns/jupyter");
  c.slurm.Submit(7);
  c.slurm.Run(7, "n1");
  ASSERT_TRUE(c.slurm.Fence("n1", "reserved/ns/jupyter").ok());
  c.k8s.AddPod("jupyter", "2", "interactive");
  c.slurm.fence_times_out["n1"] = timeouts;
  c.k8s.owner_changes.clear();
}

// D6 (issue 24, found by the checker): a successor reads back n1's reservation for ns/jupyter
// (its predecessor fenced and marked n1, then crashed before asking job 7, which still runs there).
// Its own fence of n1 for the reservation lands but times out, and the preemption is rolled back.
// The owner n1 had before is unknown: it is not written unmarked (the reconcile would then give
// the fenced node to Kubernetes from the poll while job 7 runs) but released through the live
// check: job 7 runs, so n1 is Slurm's, its drain lifted. The next cycle preempts again.
TEST(LoopDefectsTest, D6_ARollbackOfAReservationReadBackGoesThroughTheLiveCheck) {
  Cluster c(1);
  ASSERT_NO_FATAL_FAILURE(ReadBackReservationWithTimedOutFences(c, 1));
  const Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.fence_times_out["n1"], 0) << "the reservation's fence was not tried";
  EXPECT_EQ(c.k8s.owner_changes, std::vector<std::string>{"n1=slurm"}) << "not released by the live check";
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "") << "left drained while job 7 runs";
  EXPECT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  EXPECT_TRUE(loop.reservations().empty());
  for (int t = 1; t <= 8; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
}

// D6: the same, but the live check's fence times out too (slurmrestd still hung): n1 is not
// released yet. It stays reserved for ns/jupyter (no owner written, the record kept), and the
// preemption is carried out once Slurm answers.
TEST(LoopDefectsTest, D6_ARollbackWhoseLiveCheckCannotBeDoneKeepsTheReservation) {
  Cluster c(1);
  ASSERT_NO_FATAL_FAILURE(ReadBackReservationWithTimedOutFences(c, 2));
  const Config cfg = SlurmConfig();
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  ASSERT_EQ(c.slurm.fence_times_out["n1"], 0) << "the live check's fence was not tried";
  EXPECT_TRUE(c.k8s.owner_changes.empty()) << "an owner written without a live check";
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "reserved/ns/jupyter");
  EXPECT_EQ(loop.reservations().count("n1"), 1u) << "the reservation dropped from the records";
  for (int t = 1; t <= 8; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_THAT(c.k8s.owner_changes, Not(Contains("n1="))) << "written unmarked";
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
}

// AskSlurmVictims and an unconfirmed start (checked after D6: AskSlurmVictims forgets the start,
// ForgetStart, before asking): job 7 is started on n1, lent and unfenced; the call times out but
// the release landed and Slurm runs job 7 there at once. The next cycle's view was listed before
// (job 7 pending): interactive ns/jupyter preempts job 7, counted on n1 as an assumed start. An
// unknown start is not taken for gone: job 7 is a victim like a running job and is requeued in
// that cycle, and the pod gets n1. (Forgetting the start loses only the undo of a lend that did
// not land; its other nodes stay lent and are returned by ReturnIdle's live check.)
TEST(LoopDefectsTest, AVictimWhoseStartIsUnconfirmedIsAskedToLeave) {
  Cluster c(1);
  c.k8s.SetNodeOwner("n1", "slurm");
  c.slurm.Submit(7, 8);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.frozen_view = c.slurm.View();  // the poller's last view: job 7 pending, n1 idle
  c.slurm.start_times_out = true;
  c.Cycle(loop, kT0);
  c.slurm.start_times_out = false;
  ASSERT_EQ(c.Calls("start 7"), 1);
  ASSERT_EQ(c.slurm.Job(7).state, slurm::JobState::kRunning);
  c.k8s.AddPod("jupyter", "8", "interactive");
  c.Cycle(loop, kT0 + 1);
  EXPECT_EQ(c.k8s.OwnerOf("n1"), "reserved/ns/jupyter");
  EXPECT_EQ(c.slurm.requeues[7], 1) << "job 7, whose start is unknown, taken for gone and not asked";
  c.slurm.frozen_view = nullptr;
  for (int t = 2; t <= 8; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.slurm.requeues[7], 1);
  EXPECT_EQ(c.k8s.NodeOf("ns/jupyter"), "n1");
}

// M3: the poller's view stopped moving (slurmrestd hangs): what it shows is not acted on. Job 7
// was pending two minutes ago; it is not started on that strength.
TEST(LoopDefectsTest, M3_AStaleSlurmViewIsNotActedOn) {
  Cluster c(1);
  c.slurm.Submit(7);
  Config cfg = SlurmConfig();
  cfg.slurm.lend_after_seconds = 0;
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.slurm.frozen_view = c.slurm.View();  // refreshed at kT0
  c.Cycle(loop, kT0 + 120);
  c.Cycle(loop, kT0 + 121);
  EXPECT_EQ(c.Calls("start 7"), 0) << "started from a view two minutes old";
  EXPECT_NE(c.k8s.OwnerOf("n1"), "slurm/7");
  c.slurm.frozen_view = nullptr;  // the poller answers again
  for (int t = 122; t <= 124; ++t) c.Cycle(loop, kT0 + t);
  EXPECT_EQ(c.Calls("start 7"), 1);
}

// M6 (c): n1 is Kubernetes' (fenced for it by a placeholder). It goes down and its placeholder
// ends with it (NODE_FAIL: submitted with requeue=false, as before the fix). Reconcile skipped
// down nodes, so n1 came back unfenced and Slurm could start a job beside the pods before the
// next fence. Now a node onequeue holds is fenced again while it is down.
TEST(LoopDefectsTest, M6_ADownNodeOnequeueHoldsIsFencedAgainWhileDownSoItComesBackFenced) {
  Cluster c(1);
  c.slurm.placeholder = true;
  Config cfg = SlurmLoopConfig("placeholder");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.Cycle(loop, kT0 + 1);
  ASSERT_EQ(c.slurm.FenceOwner("n1"), "kubernetes");
  ASSERT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
  c.slurm.down.insert("n1");
  c.slurm.LoseFence("n1");
  c.slurm.calls.clear();
  c.Cycle(loop, kT0 + 30);
  EXPECT_THAT(c.slurm.calls, Contains("fence n1 kubernetes"));
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes") << "n1 would come back unfenced";
  // A node lent to Slurm that goes down stays Slurm's: nothing is fenced there.
  c.k8s.SetNodeOwner("n1", "slurm");
  c.slurm.LoseFence("n1");
  c.slurm.calls.clear();
  c.Cycle(loop, kT0 + 60);
  EXPECT_THAT(c.slurm.calls, Not(Contains(HasSubstr("fence n1"))));
}

// M6 (b): the placeholder of a node onequeue holds vanished while the node is up (ended at its
// time limit, cancelled by hand): the next reconcile submits it again.
TEST(LoopDefectsTest, M6_APlaceholderThatVanishedIsSubmittedAgainWhileOnequeueHoldsTheNode) {
  Cluster c(1);
  c.slurm.placeholder = true;
  Config cfg = SlurmLoopConfig("placeholder");
  SchedulingLoop loop(cfg, &c.k8s, &c.k8s, &c.slurm);
  c.Cycle(loop, kT0);
  c.Cycle(loop, kT0 + 1);
  ASSERT_EQ(c.k8s.OwnerOf("n1"), "kubernetes");
  c.slurm.LoseFence("n1");
  c.Cycle(loop, kT0 + 30);
  EXPECT_EQ(c.slurm.FenceOwner("n1"), "kubernetes");
}

// --- M4: the time limit is enforced ----------------------------------------------------------

std::string Rfc3339(queue::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(t), absl::UTCTimeZone());
}

// A pod of this scheduler bound to `node` at `bound_at` (its PodScheduled condition), with
// `limit` as onequeue.io/time-limit ("" none).
void AddBoundPod(World& w, const std::string& name, const std::string& node, queue::Time bound_at,
                 const std::string& limit) {
  w.AddPod(name, "1", "scavenger", node, Rfc3339(bound_at - 60));
  k8s::Pod* p = w.Find("ns/" + name);
  if (!limit.empty()) p->metadata.annotations["onequeue.io/time-limit"] = limit;
  p->conditions.push_back({"PodScheduled", "True", "", "", Rfc3339(bound_at)});
}

// Backfill trusts a pod's time limit; nothing ended a pod at it. Now one that runs past it is
// evicted (Eviction API) with a TimeLimitExceeded event, once; a pod without a limit, one of
// another scheduler and one still within its limit are left alone.
TEST(LoopDefectsTest, M4_APodPastItsTimeLimitIsEvictedOnce) {
  World w;
  w.recreate_evicted = false;
  w.AddNode("n1", "8");
  AddBoundPod(w, "job", "n1", kT0 - 600, "10m");
  AddBoundPod(w, "deadline", "n1", kT0 - 300, "");
  w.Find("ns/deadline")->active_deadline_seconds = 300;
  AddBoundPod(w, "service", "n1", kT0 - 100000, "");
  AddBoundPod(w, "later", "n1", kT0 - 600, "11m");
  AddBoundPod(w, "foreign", "n1", kT0 - 600, "1m");
  w.Find("ns/foreign")->scheduler_name = "default-scheduler";
  const Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  CycleStats s = loop.RunCycle(kT0 - 1);
  EXPECT_THAT(w.time_limit_evictions, ::testing::IsEmpty());
  s = loop.RunCycle(kT0);
  EXPECT_THAT(w.time_limit_evictions, ::testing::UnorderedElementsAre("ns/job", "ns/deadline"));
  EXPECT_EQ(s.time_limits_exceeded, 2);
  loop.RunCycle(kT0 + 1);
  loop.RunCycle(kT0 + 59);
  EXPECT_EQ(w.time_limit_evictions.size(), 2u) << "evicted twice";
  loop.RunCycle(kT0 + 60);
  EXPECT_THAT(w.time_limit_evictions, ::testing::UnorderedElementsAre("ns/job", "ns/deadline", "ns/later"));
  EXPECT_TRUE(w.Find("ns/service") != nullptr && w.Find("ns/foreign") != nullptr);
}

// queue.overTimeLimitSeconds is Slurm's OverTimeLimit: the pod gets that much more.
TEST(LoopDefectsTest, M4_OverTimeLimitSecondsIsAGraceAfterTheLimit) {
  World w;
  w.recreate_evicted = false;
  w.AddNode("n1", "8");
  AddBoundPod(w, "job", "n1", kT0 - 600, "10m");
  Config cfg = TestConfig();
  cfg.queue.over_time_limit_seconds = 120;
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kT0 + 119);
  EXPECT_THAT(w.time_limit_evictions, ::testing::IsEmpty());
  loop.RunCycle(kT0 + 120);
  EXPECT_THAT(w.time_limit_evictions, ::testing::ElementsAre("ns/job"));
}

// A PodDisruptionBudget refusal is respected (the Eviction API): the pod keeps running, and the
// eviction is asked again a while later, not every cycle.
TEST(LoopDefectsTest, M4_ABudgetRefusalIsRespectedAndRetriedLater) {
  World w;
  w.recreate_evicted = false;
  w.AddNode("n1", "8");
  AddBoundPod(w, "job", "n1", kT0 - 600, "10m");
  w.pdb_blocks.insert("ns/job");
  const Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kT0);
  loop.RunCycle(kT0 + 1);
  EXPECT_EQ(w.evict_attempts, 1);
  EXPECT_NE(w.Find("ns/job"), nullptr);
  w.pdb_blocks.clear();
  loop.RunCycle(kT0 + 30);
  EXPECT_THAT(w.time_limit_evictions, ::testing::ElementsAre("ns/job"));
}

// The limit a running pod is held to is the one it was admitted with: lengthening the annotation
// of a running pod does not lengthen its run (backfill planned with the admitted one).
TEST(LoopDefectsTest, M4_ALimitEditedOnARunningPodDoesNotLengthenIt) {
  World w;
  w.recreate_evicted = false;
  w.AddNode("n1", "8");
  AddBoundPod(w, "job", "n1", kT0 - 600, "10m");
  const Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kT0 - 10);
  w.Find("ns/job")->metadata.annotations["onequeue.io/time-limit"] = "100h";
  loop.RunCycle(kT0);
  EXPECT_THAT(w.time_limit_evictions, ::testing::ElementsAre("ns/job"));
}

}  // namespace
}  // namespace onequeue::scheduler

// Issue 25 step 3 (docs/sharing.md): the pod-placeholder state machine, over an in-memory Slurm
// (pure logic: the fake records submits and cancels; the listings are built by each test).
#include "scheduler/pod_mirror.h"
#include "scheduler/job_claim.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using S = MirrorState;
using E = MirrorEvent;

// Slurm as the machine reaches it: submits get ids from 100, cancels are recorded.
class FakePlaceholderSlurm : public SlurmActions {
 public:
  std::vector<slurm::JobSubmission> submitted;
  std::vector<uint32_t> cancelled;
  bool refuse_submit = false;
  bool refuse_cancel = false;
  // A hanging slurmrestd (C1): the submit ends in kDeadlineExceeded, after landing or not.
  enum { kAnswers, kLandsThenTimesOut, kTimesOut } hang = kAnswers;
  uint32_t next_id = 100;

  absl::StatusOr<uint32_t> SubmitPodPlaceholder(const slurm::JobSubmission& job) override {
    if (refuse_submit) return absl::UnavailableError("slurmrestd down");
    if (hang == kTimesOut) return absl::DeadlineExceededError("slurmrestd hangs");
    submitted.push_back(job);
    if (hang == kLandsThenTimesOut) return ++next_id, absl::DeadlineExceededError("slurmrestd hangs");
    return next_id++;
  }
  absl::Status Cancel(uint32_t job) override {
    if (refuse_cancel) return absl::UnavailableError("slurmrestd down");
    cancelled.push_back(job);
    return absl::OkStatus();
  }
  absl::Status Fence(const std::string&, const std::string&) override { return absl::OkStatus(); }
  absl::Status Unfence(const std::string&) override { return absl::OkStatus(); }
  // Holds (issue 25 step 4: a Slurm job's claim is its hold's AdminComment), by job.
  std::map<uint32_t, std::string> holds;
  bool refuse_hold = false;
  absl::Status Hold(uint32_t job, const std::string& comment) override {
    if (refuse_hold) return absl::UnavailableError("slurmrestd down");
    holds[job] = comment;
    return absl::OkStatus();
  }
  absl::Status StartOn(uint32_t, const std::vector<std::string>&, const std::string&) override {
    return absl::OkStatus();
  }
  absl::Status Requeue(uint32_t) override { return absl::OkStatus(); }
  bool FenceRequeues() const override { return true; }
  absl::StatusOr<bool> Ready(const std::string&) override { return true; }
};

MirroredPod Pod(const std::string& node = "") {
  MirroredPod p;
  p.uid = "uid-1";
  p.key = "ns/pod1";
  p.node = node;
  p.size.cpus = 2;
  p.size.memory_mb = 512;
  p.size.gres = {{"gpu", 1}};
  return p;
}
const MirrorNode kNode{"k-n1", "n1", "shared"};

slurm::SlurmJob Placeholder(uint32_t id, slurm::JobState state, const std::string& uid = "uid-1",
                            const std::string& user = "slurm") {
  slurm::SlurmJob j;
  j.job_id = id;
  j.name = PodPlaceholderName(uid);
  j.user = user;
  j.partition = "shared";
  j.state = state;
  j.required_nodes = {"n1"};
  if (state == slurm::JobState::kRunning) j.nodes = {"n1"};
  return j;
}

std::map<std::string, MirroredPod> Pods(const MirroredPod& p) { return {{p.uid, p}}; }

class PodMirrorTest : public ::testing::Test {
 protected:
  PodMirrorOptions Options() {
    PodMirrorOptions o;
    o.pending_timeout = 60;
    return o;
  }
  FakePlaceholderSlurm slurm_;
  PodMirrors mirrors_{Options(), &slurm_};
  S StateOf(const std::string& uid = "uid-1") {
    const PodMirrorRecord* r = mirrors_.Find(uid);
    return r == nullptr ? S::kDone : r->state;
  }
  bool Has(const std::string& uid = "uid-1") { return mirrors_.Find(uid) != nullptr; }
};

// The table, whole: every legal transition, and every other pair refused.
TEST(PodMirrorMachine, EveryTransitionOfTheTableAndNoOther) {
  const std::map<std::pair<S, E>, S> legal = {
      {{S::kPlanned, E::kSubmitted}, S::kPlaceholderPending},
      {{S::kPlaceholderPending, E::kRunningSeen}, S::kPlaceholderRunning},
      {{S::kPlaceholderRunning, E::kPodBound}, S::kBound},
      {{S::kBound, E::kPodGone}, S::kEnding},
      {{S::kEnding, E::kCancelled}, S::kDone},
      {{S::kBound, E::kPlaceholderLost}, S::kUnmirrored},
      {{S::kUnmirrored, E::kSubmitted}, S::kRemirrorPending},
      {{S::kRemirrorPending, E::kRunningSeen}, S::kBound},
      {{S::kRemirrorPending, E::kPlaceholderLost}, S::kUnmirrored},
      {{S::kUnmirrored, E::kPodGone}, S::kEnding},
      {{S::kRemirrorPending, E::kPodGone}, S::kEnding},
      {{S::kPlanned, E::kUndo}, S::kUndoing},
      {{S::kPlaceholderPending, E::kUndo}, S::kUndoing},
      {{S::kPlaceholderRunning, E::kUndo}, S::kUndoing},
      {{S::kUndoing, E::kCancelled}, S::kUndone},
      // Step 4: a preemptor's claim.
      {{S::kPlanned, E::kClaimSubmitted}, S::kClaimed},
      {{S::kClaimed, E::kVictimsAsked}, S::kWaitingForVictims},
      {{S::kClaimed, E::kRunningSeen}, S::kPlaceholderRunning},
      {{S::kWaitingForVictims, E::kRunningSeen}, S::kPlaceholderRunning},
      {{S::kClaimed, E::kUndo}, S::kUndoing},
      {{S::kWaitingForVictims, E::kUndo}, S::kUndoing},
      // Found bound while its placeholder is still pending: waits for it as a re-made one.
      {{S::kPlaceholderPending, E::kBoundWhilePending}, S::kRemirrorPending},
      // C1: a submit that timed out may have landed; the listing says which.
      {{S::kPlanned, E::kSubmitTimedOut}, S::kSubmitUnknown},
      {{S::kSubmitUnknown, E::kSubmitted}, S::kPlaceholderPending},
      {{S::kSubmitUnknown, E::kClaimSubmitted}, S::kClaimed},
      {{S::kSubmitUnknown, E::kUndo}, S::kUndoing},
      // Issue 25 DRA: the claim step on a gpus: dra node, between the placeholder's start and the bind.
      {{S::kPlaceholderRunning, E::kClaimWritten}, S::kClaimWritten},
      {{S::kClaimWritten, E::kPodBound}, S::kBound},
      {{S::kClaimWritten, E::kUndo}, S::kUndoing},
  };
  int refused = 0;
  for (int s = 0; s <= static_cast<int>(S::kClaimWritten); ++s) {
    for (int e = 0; e <= static_cast<int>(E::kClaimWritten); ++e) {
      const auto from = static_cast<S>(s);
      const auto event = static_cast<E>(e);
      absl::StatusOr<S> to = NextMirrorState(from, event);
      auto it = legal.find({from, event});
      if (it == legal.end()) {
        EXPECT_TRUE(absl::IsFailedPrecondition(to.status())) << MirrorStateName(from) << " " << MirrorEventName(event);
        ++refused;
      } else {
        ASSERT_TRUE(to.ok()) << MirrorStateName(from) << " " << MirrorEventName(event);
        EXPECT_EQ(*to, it->second) << MirrorStateName(from) << " " << MirrorEventName(event);
      }
    }
  }
  EXPECT_EQ(refused, 14 * 12 - 29);
  // Undo only before the bind.
  for (S after : {S::kBound, S::kUnmirrored, S::kRemirrorPending, S::kEnding, S::kDone, S::kUndoing, S::kUndone})
    EXPECT_FALSE(NextMirrorState(after, E::kUndo).ok()) << MirrorStateName(after);
  EXPECT_TRUE(MirrorFinal(S::kDone));
  EXPECT_TRUE(MirrorFinal(S::kUndone));
  EXPECT_FALSE(MirrorFinal(S::kBound));
}

TEST(PodMirrorMachine, PlaceholderIsThePodsSizePinnedAndTagged) {
  slurm::JobSubmission j = PodPlaceholderSubmission(Pod(), kNode, slurm::kTimeLimitUnlimited);
  EXPECT_EQ(j.name, "onequeue-pod-uid-1");
  EXPECT_EQ(j.partition, "shared");
  EXPECT_EQ(j.nodelist, "n1");
  EXPECT_EQ(j.node_count, 1u);
  EXPECT_FALSE(j.exclusive);
  EXPECT_EQ(j.cpus, 2u);
  EXPECT_EQ(j.memory_per_node_mb, 512);
  EXPECT_EQ(j.gres_per_node, (std::map<std::string, int64_t>{{"gpu", 1}}));
  EXPECT_EQ(j.comment, "onequeue: pod ns/pod1 uid-1");
  EXPECT_EQ(j.time_limit_minutes, slurm::kTimeLimitUnlimited);
  EXPECT_TRUE(j.requeue);
  // Only onequeue's Slurm user's jobs of that name are pod placeholders (issue 24 M2).
  const slurm::SlurmIdentity me{"slurm", ""};
  EXPECT_EQ(MirroredUid(Placeholder(1, slurm::JobState::kRunning), me), "uid-1");
  EXPECT_EQ(MirroredUid(Placeholder(1, slurm::JobState::kRunning, "uid-1", "mallory"), me), std::nullopt);
  slurm::SlurmJob other = Placeholder(1, slurm::JobState::kRunning);
  other.name = "train";
  EXPECT_EQ(MirroredUid(other, me), std::nullopt);
}

// Planned -> PlaceholderPending -> PlaceholderRunning -> Bound -> Ending -> Done.
// Issue 25 tenancy: a pod's placeholder is submitted under its tenant's account
// (PlaceholderAccountOf), so Slurm's MCS / ExclusiveUser sees it as the tenant's; none: the default.
TEST(PodMirrorMachine, APlaceholderGoesUnderThePodsTenantAccount) {
  MirroredPod p = Pod();
  EXPECT_EQ(PodPlaceholderSubmission(p, kNode, slurm::kTimeLimitUnlimited).account, "");
  p.account = "physics";
  EXPECT_EQ(PodPlaceholderSubmission(p, kNode, slurm::kTimeLimitUnlimited).account, "physics");
}

TEST_F(PodMirrorTest, TheWholeLifeOfAMirroredPod) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  EXPECT_EQ(StateOf(), S::kPlaceholderPending);
  ASSERT_EQ(slurm_.submitted.size(), 1u);
  EXPECT_THAT(mirrors_.ReadyToBind(), IsEmpty());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, Pods(Pod()), 5);
  EXPECT_EQ(StateOf(), S::kPlaceholderPending);
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 10);
  EXPECT_EQ(StateOf(), S::kPlaceholderRunning);
  ASSERT_EQ(mirrors_.ReadyToBind().size(), 1u);
  EXPECT_EQ(mirrors_.ReadyToBind()[0]->node.node, "k-n1");
  ASSERT_TRUE(mirrors_.Bound("uid-1", 11).ok());
  EXPECT_EQ(StateOf(), S::kBound);
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod("k-n1")), 15);
  EXPECT_EQ(StateOf(), S::kBound);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
  // The pod ends: Ending, the placeholder cancelled, Done (dropped).
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, {}, 20);
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
  EXPECT_EQ(slurm_.submitted.size(), 1u);
}

TEST_F(PodMirrorTest, AFailedCancelStaysEndingAndIsRetried) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  ASSERT_TRUE(mirrors_.Bound("uid-1", 6).ok());
  slurm_.refuse_cancel = true;
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, {}, 10);
  EXPECT_EQ(StateOf(), S::kEnding);
  slurm_.refuse_cancel = false;
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, {}, 15);
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
}

// Undo from each state before the bind: one path, the placeholder cancelled, the record dropped.
TEST_F(PodMirrorTest, UndoFromPlannedWhenTheSubmitIsRefused) {
  slurm_.refuse_submit = true;
  EXPECT_FALSE(mirrors_.Plan(Pod(), kNode, 0).ok());
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, IsEmpty());  // nothing was submitted
}

TEST_F(PodMirrorTest, UndoFromPlaceholderPendingAfterTheTimeout) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, Pods(Pod()), 59);
  EXPECT_EQ(StateOf(), S::kPlaceholderPending);
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, Pods(Pod()), 60);
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
}

TEST_F(PodMirrorTest, UndoFromPlaceholderPendingWhenThePodIsDeleted) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, {}, 5);
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
}

TEST_F(PodMirrorTest, UndoFromPlaceholderRunningWhenTheBindFails) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  ASSERT_EQ(StateOf(), S::kPlaceholderRunning);
  ASSERT_TRUE(mirrors_.BindFailed("uid-1", "conflict", 6).ok());
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
}

TEST_F(PodMirrorTest, UndoFromPlaceholderRunningWhenItIsLostBeforeTheBind) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  mirrors_.Advance({}, Pods(Pod()), 10);  // an admin's scancel
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));  // cancelling a gone job is OK (idempotent)
}

TEST_F(PodMirrorTest, UndoWhenThePlanNoLongerPlacesThePodThere) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  ASSERT_TRUE(mirrors_.Undo("uid-1", "planned elsewhere", 1).ok());
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
}

TEST_F(PodMirrorTest, AnUndoWhoseCancelFailsStaysUndoingUntilItLands) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  slurm_.refuse_cancel = true;
  ASSERT_TRUE(mirrors_.Undo("uid-1", "planned elsewhere", 1).ok());
  EXPECT_EQ(StateOf(), S::kUndoing);
  EXPECT_THAT(mirrors_.ReadyToBind(), IsEmpty());
  slurm_.refuse_cancel = false;
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
}

TEST_F(PodMirrorTest, IllegalEventsAreErrorsAndChangeNothing) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(mirrors_.Bound("uid-1", 1)));  // not running yet
  EXPECT_EQ(StateOf(), S::kPlaceholderPending);
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  ASSERT_TRUE(mirrors_.Bound("uid-1", 6).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(mirrors_.Undo("uid-1", "too late", 7)));  // after the bind
  EXPECT_EQ(StateOf(), S::kBound);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
  EXPECT_TRUE(absl::IsAlreadyExists(mirrors_.Plan(Pod(), kNode, 8)));
  EXPECT_TRUE(absl::IsNotFound(mirrors_.Bound("nobody", 8)));
}

// After the bind a lost placeholder is made again; the pod keeps running.
TEST_F(PodMirrorTest, ALostPlaceholderOfABoundPodIsMadeAgain) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  ASSERT_TRUE(mirrors_.Bound("uid-1", 6).ok());
  mirrors_.Advance({}, Pods(Pod("k-n1")), 10);  // cancelled by an admin
  EXPECT_EQ(StateOf(), S::kRemirrorPending);
  ASSERT_EQ(slurm_.submitted.size(), 2u);
  EXPECT_EQ(mirrors_.Find("uid-1")->job, 101u);
  EXPECT_THAT(mirrors_.Lost(69), IsEmpty());
  EXPECT_EQ(mirrors_.Lost(70).size(), 1u);  // not started in time: the node is reported
  mirrors_.Advance({Placeholder(101, slurm::JobState::kRunning)}, Pods(Pod("k-n1")), 75);
  EXPECT_EQ(StateOf(), S::kBound);
  EXPECT_THAT(mirrors_.Lost(200), IsEmpty());
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
}

TEST_F(PodMirrorTest, ARequeuedPlaceholderIsKeptAsTheNewOne) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  ASSERT_TRUE(mirrors_.Bound("uid-1", 6).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, Pods(Pod("k-n1")), 10);  // NODE_FAIL, requeued
  EXPECT_EQ(StateOf(), S::kRemirrorPending);
  EXPECT_EQ(slurm_.submitted.size(), 1u);
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod("k-n1")), 15);
  EXPECT_EQ(StateOf(), S::kBound);
}

TEST_F(PodMirrorTest, ARefusedResubmitIsTriedAgainAndThePodEndingCancelsNothingMissing) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  ASSERT_TRUE(mirrors_.Bound("uid-1", 6).ok());
  slurm_.refuse_submit = true;
  mirrors_.Advance({}, Pods(Pod("k-n1")), 10);
  EXPECT_EQ(StateOf(), S::kUnmirrored);
  mirrors_.Advance({}, Pods(Pod("k-n1")), 15);
  EXPECT_EQ(StateOf(), S::kUnmirrored);
  mirrors_.Advance({}, {}, 20);  // the pod ends: Ending, nothing to cancel, Done
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
}

// A binding that landed is seen in the pod listing even if the loop never heard of its result.
TEST_F(PodMirrorTest, ABindingSeenInTheListingMovesToBound) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 5);
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod("k-n1")), 10);
  EXPECT_EQ(StateOf(), S::kBound);
}

// A pod found bound on its node while its placeholder is still pending (a bind that landed before
// the poll saw the placeholder run, or a pod bound by someone else) is never undone: it runs. It
// goes PlaceholderPending -> RemirrorPending and waits for its placeholder as a bound pod whose
// placeholder was re-made does: reported when it does not run in time, Bound once it runs (it
// used to stay PlaceholderPending, neither bound nor reported).
TEST_F(PodMirrorTest, APodBoundWhileItsPlaceholderIsPendingWaitsForItAsARemadeOne) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, Pods(Pod("k-n1")), 5);
  EXPECT_EQ(StateOf(), S::kRemirrorPending);
  EXPECT_EQ(mirrors_.Find("uid-1")->job, 100u);  // the same placeholder
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
  EXPECT_THAT(mirrors_.Lost(64), IsEmpty());
  EXPECT_EQ(mirrors_.Lost(65).size(), 1u);  // not running 60 s later: reported
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod("k-n1")), 70);
  EXPECT_EQ(StateOf(), S::kBound);
  EXPECT_EQ(slurm_.submitted.size(), 1u);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
}

// The same with the pending placeholder gone meanwhile: a new one is submitted at once.
TEST_F(PodMirrorTest, APodBoundWhileItsPlaceholderIsPendingGetsANewOneIfThatIsGone) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 0).ok());
  mirrors_.Advance({}, Pods(Pod("k-n1")), 5);
  EXPECT_EQ(StateOf(), S::kRemirrorPending);
  ASSERT_EQ(slurm_.submitted.size(), 2u);
  EXPECT_EQ(mirrors_.Find("uid-1")->job, 101u);
  mirrors_.Advance({Placeholder(101, slurm::JobState::kRunning)}, Pods(Pod("k-n1")), 10);
  EXPECT_EQ(StateOf(), S::kBound);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
}

// Rebuild from the two listings after a restart.
TEST_F(PodMirrorTest, RebuildCancelsAPlaceholderWithoutItsPod) {
  const std::map<std::string, MirrorNode> shared = {{"k-n1", kNode}};
  mirrors_.Rebuild({Placeholder(7, slurm::JobState::kRunning, "gone-uid")}, {}, shared, 0);
  mirrors_.Advance({Placeholder(7, slurm::JobState::kRunning, "gone-uid")}, {}, 0);
  EXPECT_THAT(mirrors_.records(), IsEmpty());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(7u));
}

TEST_F(PodMirrorTest, RebuildGivesABoundPodWithoutAPlaceholderANewOne) {
  const std::map<std::string, MirrorNode> shared = {{"k-n1", kNode}};
  mirrors_.Rebuild({}, Pods(Pod("k-n1")), shared, 0);
  EXPECT_EQ(StateOf(), S::kUnmirrored);
  mirrors_.Advance({}, Pods(Pod("k-n1")), 0);
  EXPECT_EQ(StateOf(), S::kRemirrorPending);
  ASSERT_EQ(slurm_.submitted.size(), 1u);
  EXPECT_EQ(slurm_.submitted[0].nodelist, "n1");
  EXPECT_EQ(slurm_.submitted[0].cpus, 2u);
}

TEST_F(PodMirrorTest, RebuildKeepsWhatIsUnderWayAndIgnoresOthersJobs) {
  const std::map<std::string, MirrorNode> shared = {{"k-n1", kNode}, {"k-n2", {"k-n2", "n2", "shared"}}};
  MirroredPod bound = Pod("k-n1");
  MirroredPod waiting = Pod();
  waiting.uid = "uid-2";
  waiting.key = "ns/pod2";
  MirroredPod exclusive = Pod("k-x9");  // bound on an exclusive node: not mirrored
  exclusive.uid = "uid-3";
  const std::vector<slurm::SlurmJob> jobs = {
      Placeholder(1, slurm::JobState::kRunning, "uid-1"), Placeholder(2, slurm::JobState::kPending, "uid-2"),
      Placeholder(3, slurm::JobState::kRunning, "uid-9", "mallory"),  // someone else's: hands off
  };
  mirrors_.Rebuild(jobs, {{"uid-1", bound}, {"uid-2", waiting}, {"uid-3", exclusive}}, shared, 0);
  EXPECT_EQ(StateOf("uid-1"), S::kBound);
  EXPECT_EQ(StateOf("uid-2"), S::kPlaceholderPending);
  EXPECT_FALSE(Has("uid-3"));
  EXPECT_EQ(mirrors_.records().size(), 2u);
  EXPECT_EQ(mirrors_.Find("uid-1")->job, 1u);
}

TEST_F(PodMirrorTest, RebuildCancelsASecondPlaceholderAndOneBesideAPodBoundElsewhere) {
  const std::map<std::string, MirrorNode> shared = {{"k-n1", kNode}, {"k-n2", {"k-n2", "n2", "shared"}}};
  slurm::SlurmJob elsewhere = Placeholder(2, slurm::JobState::kRunning);
  elsewhere.nodes = elsewhere.required_nodes = {"n2"};
  const std::vector<slurm::SlurmJob> jobs = {Placeholder(1, slurm::JobState::kRunning), elsewhere,
                                             Placeholder(3, slurm::JobState::kPending)};
  mirrors_.Rebuild(jobs, Pods(Pod("k-n1")), shared, 0);
  EXPECT_EQ(StateOf(), S::kBound);
  mirrors_.Advance(jobs, Pods(Pod("k-n1")), 0);
  EXPECT_EQ(StateOf(), S::kBound);
  EXPECT_EQ(mirrors_.records().size(), 1u);
  EXPECT_THAT(slurm_.cancelled, ElementsAre(2u, 3u));
}

// Step 4: a preemptor's claim. Claimed (the placeholder pending, its victims in its comment) ->
// WaitingForVictims (asked) -> PlaceholderRunning (Slurm gave it the room) -> Bound.
TEST_F(PodMirrorTest, AClaimIsSubmittedBeforeTheVictimsAreAskedAndBindsWhenItRuns) {
  ASSERT_TRUE(mirrors_.Claim(Pod(), kNode, {"slurm/17"}, 0).ok());
  EXPECT_EQ(StateOf(), S::kClaimed);
  ASSERT_EQ(slurm_.submitted.size(), 1u);
  EXPECT_EQ(slurm_.submitted[0].comment, "onequeue: pod ns/pod1 uid-1 preempting slurm/17");
  EXPECT_EQ(slurm_.submitted[0].nodelist, "n1");
  ASSERT_EQ(mirrors_.ToAskVictims().size(), 1u);
  EXPECT_THAT(mirrors_.ToAskVictims()[0]->victims, ElementsAre("slurm/17"));
  ASSERT_TRUE(mirrors_.VictimsAsked("uid-1", absl::OkStatus(), 1).ok());
  EXPECT_EQ(StateOf(), S::kWaitingForVictims);
  EXPECT_THAT(mirrors_.ToAskVictims(), IsEmpty());
  // Pending past the plain pending timeout: a claim waits for its victims longer.
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, Pods(Pod()), 100);
  EXPECT_EQ(StateOf(), S::kWaitingForVictims);
  EXPECT_THAT(mirrors_.ReadyToBind(), IsEmpty());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kRunning)}, Pods(Pod()), 110);
  EXPECT_EQ(StateOf(), S::kPlaceholderRunning);
  ASSERT_EQ(mirrors_.ReadyToBind().size(), 1u);
  ASSERT_TRUE(mirrors_.Bound("uid-1", 111).ok());
  EXPECT_EQ(StateOf(), S::kBound);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
  EXPECT_FALSE(mirrors_.Claim(Pod(), kNode, {"slurm/17"}, 112).ok());  // one record per pod
}

// A victim refused (a PodDisruptionBudget, a job Slurm will not requeue): the one undo path (the
// claim's placeholder cancelled), and the pod does not claim again before refused_retry.
TEST_F(PodMirrorTest, ARefusedVictimUndoesTheClaimAndBlocksTheNextForAWhile) {
  ASSERT_TRUE(mirrors_.Claim(Pod(), kNode, {"ns/guarded"}, 0).ok());
  ASSERT_TRUE(mirrors_.VictimsAsked("uid-1", absl::FailedPreconditionError("PDB"), 1).ok());
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u));
  ASSERT_NE(mirrors_.Refused("uid-1", 2), nullptr);
  EXPECT_THAT(*mirrors_.Refused("uid-1", 2), ::testing::HasSubstr("PDB"));
  EXPECT_TRUE(absl::IsFailedPrecondition(mirrors_.Claim(Pod(), kNode, {"ns/guarded"}, 2)));
  EXPECT_EQ(mirrors_.Refused("uid-1", 31), nullptr);
  EXPECT_TRUE(mirrors_.Claim(Pod(), kNode, {"ns/guarded"}, 31).ok());
}

// Undo from the claim's states: the pod deleted, the victims not gone in time, the placeholder lost.
TEST_F(PodMirrorTest, AClaimIsUndoneWhenThePodGoesTheVictimsStayOrThePlaceholderIsLost) {
  ASSERT_TRUE(mirrors_.Claim(Pod(), kNode, {"slurm/17"}, 0).ok());
  mirrors_.Advance({Placeholder(100, slurm::JobState::kPending)}, {}, 1);  // pod deleted while claimed
  EXPECT_FALSE(Has());
  ASSERT_TRUE(mirrors_.Claim(Pod(), kNode, {"slurm/17"}, 2).ok());
  ASSERT_TRUE(mirrors_.VictimsAsked("uid-1", absl::OkStatus(), 2).ok());
  mirrors_.Advance({Placeholder(101, slurm::JobState::kPending)}, Pods(Pod()), 2 + 300);
  EXPECT_FALSE(Has());
  ASSERT_TRUE(mirrors_.Claim(Pod(), kNode, {"slurm/17"}, 400).ok());
  ASSERT_TRUE(mirrors_.VictimsAsked("uid-1", absl::OkStatus(), 400).ok());
  mirrors_.Advance({}, Pods(Pod()), 401);  // an admin cancelled the claim
  EXPECT_FALSE(Has());
  EXPECT_THAT(slurm_.cancelled, ElementsAre(100u, 101u, 102u));  // a cancel of a gone job is harmless
}

// A restart between the claim and the victims (or after them): the successor reads the victims
// back from the pending placeholder's comment and has them asked again; a claim already running
// is ready to bind.
TEST_F(PodMirrorTest, RebuildReadsAClaimAndItsVictimsBackFromThePlaceholder) {
  const std::map<std::string, MirrorNode> shared = {{"k-n1", kNode}};
  slurm::SlurmJob claim = Placeholder(7, slurm::JobState::kPending);
  claim.comment = "onequeue: pod ns/pod1 uid-1 preempting slurm/17,ns/low";
  mirrors_.Rebuild({claim}, Pods(Pod()), shared, 0);
  EXPECT_EQ(StateOf(), S::kClaimed);
  ASSERT_EQ(mirrors_.ToAskVictims().size(), 1u);
  EXPECT_THAT(mirrors_.ToAskVictims()[0]->victims, ElementsAre("slurm/17", "ns/low"));
  mirrors_.Advance({claim}, Pods(Pod()), 0);
  EXPECT_EQ(StateOf(), S::kClaimed);
  claim.state = slurm::JobState::kRunning;
  claim.nodes = {"n1"};
  PodMirrors successor(Options(), &slurm_);
  successor.Rebuild({claim}, Pods(Pod()), shared, 5);
  EXPECT_EQ(successor.Find("uid-1")->state, S::kPlaceholderRunning);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
}

// A listing taken before the placeholder was submitted does not show it: that is not a lost
// placeholder (found live on 22.05: a claim submitted 0.3 s before the next cycle, whose poll was
// older, was undone, and the pod was bound by a plain placeholder after the requeue instead).
TEST_F(PodMirrorTest, APlaceholderMissingFromAListingOlderThanItsSubmitIsNotTakenForGone) {
  ASSERT_TRUE(mirrors_.Plan(Pod(), kNode, 10).ok());
  mirrors_.Advance({}, Pods(Pod()), 10, /*listed_at=*/10);
  EXPECT_EQ(StateOf(), S::kPlaceholderPending);
  ASSERT_TRUE(mirrors_.Claim([] { MirroredPod p = Pod(); p.uid = "uid-2"; p.key = "ns/pod2"; return p; }(), kNode,
                             {"slurm/17"}, 10)
                  .ok());
  ASSERT_TRUE(mirrors_.VictimsAsked("uid-2", absl::OkStatus(), 10).ok());
  std::map<std::string, MirroredPod> both = Pods(Pod());
  both["uid-2"] = Pod();
  both["uid-2"].uid = "uid-2";
  both["uid-2"].key = "ns/pod2";
  mirrors_.Advance({}, both, 11, /*listed_at=*/9);
  EXPECT_EQ(StateOf("uid-1"), S::kPlaceholderPending);
  EXPECT_EQ(StateOf("uid-2"), S::kWaitingForVictims);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
  // A listing taken after the submit that does not show it: gone, undone.
  mirrors_.Advance({}, both, 12, /*listed_at=*/11);
  EXPECT_FALSE(Has("uid-1"));
  EXPECT_FALSE(Has("uid-2"));
}

// C1 (seed 739/385 of the checker): a claim whose submit timed out may have landed, pending and
// naming its victims: it stands (the pod holds its place, no preemptor may take it as a victim)
// until a listing taken after the call returned says; found, it is the claim; not found, undone.
TEST_F(PodMirrorTest, AClaimWhoseSubmitTimedOutStandsUntilAListingSaysWhetherItLanded) {
  slurm_.hang = FakePlaceholderSlurm::kLandsThenTimesOut;
  ASSERT_TRUE(mirrors_.Claim(Pod(), kNode, {"slurm/17"}, 10).ok());
  EXPECT_EQ(StateOf(), S::kSubmitUnknown);
  EXPECT_TRUE(MirrorClaimStands(*mirrors_.Find("uid-1")));
  EXPECT_THAT(mirrors_.ToAskVictims(), IsEmpty());  // not before it is known to stand
  EXPECT_TRUE(absl::IsAlreadyExists(mirrors_.Claim(Pod(), kNode, {"slurm/17"}, 10)));  // no second one
  slurm::SlurmJob landed = Placeholder(100, slurm::JobState::kPending);
  landed.comment = slurm_.submitted[0].comment;
  mirrors_.Advance({}, Pods(Pod()), 70, /*listed_at=*/69);  // the cycle after the call returned
  mirrors_.Advance({}, Pods(Pod()), 75, /*listed_at=*/70);  // a listing not after that cycle
  EXPECT_EQ(StateOf(), S::kSubmitUnknown);
  mirrors_.Advance({landed}, Pods(Pod()), 80, /*listed_at=*/79);
  EXPECT_EQ(StateOf(), S::kClaimed);
  EXPECT_EQ(mirrors_.Find("uid-1")->job, 100u);
  ASSERT_EQ(mirrors_.ToAskVictims().size(), 1u);
  EXPECT_THAT(slurm_.cancelled, IsEmpty());

  // Not landed: undone once a listing after the call returned does not show it (nothing to cancel).
  slurm_.hang = FakePlaceholderSlurm::kTimesOut;
  MirroredPod other = Pod();
  other.uid = "uid-2";
  other.key = "ns/pod2";
  ASSERT_TRUE(mirrors_.Claim(other, kNode, {"slurm/18"}, 100).ok());
  EXPECT_EQ(StateOf("uid-2"), S::kSubmitUnknown);
  mirrors_.Advance({landed}, {{"uid-1", Pod()}, {"uid-2", other}}, 160, 159);
  EXPECT_EQ(StateOf("uid-2"), S::kSubmitUnknown);
  mirrors_.Advance({landed}, {{"uid-1", Pod()}, {"uid-2", other}}, 165, 161);
  EXPECT_FALSE(Has("uid-2"));
  EXPECT_THAT(slurm_.cancelled, IsEmpty());
  // A plain placeholder's timed-out submit likewise, found: kPlaceholderPending.
  slurm_.hang = FakePlaceholderSlurm::kLandsThenTimesOut;
  ASSERT_TRUE(mirrors_.Plan(other, kNode, 200).ok());
  EXPECT_EQ(StateOf("uid-2"), S::kSubmitUnknown);
  EXPECT_FALSE(MirrorClaimStands(*mirrors_.Find("uid-2")));
  slurm::SlurmJob plain = Placeholder(slurm_.next_id - 1, slurm::JobState::kPending, "uid-2");
  mirrors_.Advance({landed, plain}, {{"uid-1", Pod()}, {"uid-2", other}}, 205, 204);
  EXPECT_EQ(StateOf("uid-2"), S::kPlaceholderPending);
}

TEST_F(PodMirrorTest, AdoptGivesAPodBoundWithoutARecordAPlaceholder) {
  const std::map<std::string, MirrorNode> shared = {{"k-n1", kNode}};
  mirrors_.AdoptUnmirrored(Pods(Pod("k-n1")), shared, 0);
  mirrors_.Advance({}, Pods(Pod("k-n1")), 0);
  EXPECT_EQ(StateOf(), S::kRemirrorPending);
  EXPECT_EQ(slurm_.submitted.size(), 1u);
}


// Issue 25 step 4 with a Slurm job preemptor (job_claim.h): the sibling table, whole.
TEST(JobClaimMachine, EveryTransitionOfTheTableAndNoOther) {
  using JS = JobClaimState;
  using JE = JobClaimEvent;
  const std::map<std::pair<JS, JE>, JS> legal = {
      {{JS::kPlanned, JE::kHeld}, JS::kClaimed},
      {{JS::kClaimed, JE::kVictimsAsked}, JS::kWaitingForVictims},
      {{JS::kWaitingForVictims, JE::kStarted}, JS::kStarted},
      {{JS::kPlanned, JE::kUndo}, JS::kUndoing},
      {{JS::kClaimed, JE::kUndo}, JS::kUndoing},
      {{JS::kWaitingForVictims, JE::kUndo}, JS::kUndoing},
      {{JS::kUndoing, JE::kRewritten}, JS::kUndone},
  };
  int refused = 0;
  for (int s = 0; s <= static_cast<int>(JS::kUndone); ++s) {
    for (int e = 0; e <= static_cast<int>(JE::kRewritten); ++e) {
      const auto from = static_cast<JS>(s);
      const auto event = static_cast<JE>(e);
      absl::StatusOr<JS> to = NextJobClaimState(from, event);
      auto it = legal.find({from, event});
      if (it == legal.end()) {
        EXPECT_TRUE(absl::IsFailedPrecondition(to.status())) << JobClaimStateName(from) << " " << JobClaimEventName(event);
        ++refused;
      } else {
        ASSERT_TRUE(to.ok()) << JobClaimStateName(from) << " " << JobClaimEventName(event);
        EXPECT_EQ(*to, it->second);
      }
    }
  }
  EXPECT_EQ(refused, 6 * 5 - static_cast<int>(legal.size()));
  EXPECT_TRUE(JobClaimFinal(JS::kStarted));
  EXPECT_TRUE(JobClaimFinal(JS::kUndone));
  EXPECT_FALSE(JobClaimFinal(JS::kWaitingForVictims));
}

// The claim is written in the job's AdminComment and read back from it alone; the comment of an
// undone claim (and any other of onequeue's) is no claim.
TEST(JobClaimMachine, TheClaimIsReadBackFromTheAdminComment) {
  const std::string c = JobClaimComment({"n1"}, {"ns/low", "slurm/7"});
  EXPECT_EQ(c, "onequeue: Preempting on shared node n1: ns/low,slurm/7");
  std::optional<ParsedJobClaim> p = ParseJobClaim(c);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(p->victims, (std::vector<std::string>{"ns/low", "slurm/7"}));
  EXPECT_EQ(ParseJobClaim("onequeue: Preempting: preempting 1 lower-priority workload(s)"), std::nullopt);
  EXPECT_EQ(ParseJobClaim("onequeue: PreemptionUndone: preemption on shared node n1 undone: x"), std::nullopt);
  EXPECT_EQ(ParseJobClaim("onequeue: Preempting on shared node n1: "), std::nullopt);
}


slurm::SlurmView::Jobs PendingHeldJob(uint32_t id, const std::string& admin_comment) {
  slurm::SlurmJob j;
  j.job_id = id;
  j.state = slurm::JobState::kPending;
  j.priority = 0;
  j.admin_comment = admin_comment;
  return {{id, j}};
}

// A job of several nodes (a gang) claims on every member node with one hold: the comment names
// the nodes and is read back whole, the record holds the room on each, and one undo (here: one of
// the nodes is no longer shared) releases them all at once through the one rewritten hold.
TEST(JobClaimMachine, AClaimOnSeveralNodesIsReadBackAndUndoneOnEveryNodeAtOnce) {
  const std::string c = JobClaimComment({"n1", "n2"}, {"ns/low", "slurm/9"});
  EXPECT_EQ(c, "onequeue: Preempting on shared nodes n1,n2: ns/low,slurm/9");
  std::optional<ParsedJobClaim> p = ParseJobClaim(c);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(p->victims, (std::vector<std::string>{"ns/low", "slurm/9"}));
  EXPECT_EQ(ParseJobClaim("onequeue: Preempting on shared nodes : ns/low"), std::nullopt);
  EXPECT_EQ(ParseJobClaim("onequeue: Preempting on shared nodesn1: ns/low"), std::nullopt);
  FakePlaceholderSlurm slurm;
  JobClaims claims(JobClaimOptions{}, &slurm);
  ASSERT_TRUE(claims.Claim("slurm/8", 8, {"n1", "n2"}, {"ns/low", "slurm/9"}, 100).ok());
  EXPECT_EQ(slurm.holds[8], c);
  EXPECT_EQ(claims.Holding(), (std::map<uint32_t, std::vector<std::string>>{{8, {"n1", "n2"}}}));
  claims.Advance(PendingHeldJob(8, slurm.holds[8]), {"n1", "n2"}, 101);
  ASSERT_NE(claims.Find("slurm/8"), nullptr);
  claims.Advance(PendingHeldJob(8, slurm.holds[8]), {"n1"}, 102);
  EXPECT_EQ(claims.Find("slurm/8"), nullptr);
  EXPECT_TRUE(claims.Holding().empty());
  EXPECT_EQ(slurm.holds[8],
            "onequeue: PreemptionUndone: preemption on shared nodes n1,n2 undone: n2 is no longer shared");
  EXPECT_EQ(ParseJobClaim(slurm.holds[8]), std::nullopt);
}

// Undo has one path, the hold rewritten without the claim, whatever the cause: the job no longer
// pending (nothing to write), victims not gone in time, a failed rewrite retried next cycle.
TEST(JobClaimMachine, EveryCauseUndoesThroughTheRewrittenHold) {
  FakePlaceholderSlurm slurm;
  JobClaims claims(JobClaimOptions{}, &slurm);
  const std::set<std::string> shared = {"n1"};
  ASSERT_TRUE(claims.Claim("slurm/8", 8, {"n1"}, {"ns/low"}, 100).ok());
  EXPECT_EQ(slurm.holds[8], "onequeue: Preempting on shared node n1: ns/low");
  EXPECT_EQ(claims.Holding(), (std::map<uint32_t, std::vector<std::string>>{{8, {"n1"}}}));
  EXPECT_EQ(claims.Claim("slurm/8", 8, {"n1"}, {"ns/low"}, 101).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(claims.VictimsAsked("slurm/8", absl::OkStatus(), 101).ok());
  claims.Advance(PendingHeldJob(8, slurm.holds[8]), shared, 200);
  EXPECT_EQ(claims.Find("slurm/8")->state, JobClaimState::kWaitingForVictims);
  // Victims not gone in 300 s; the first rewrite fails and is retried.
  slurm.refuse_hold = true;
  claims.Advance(PendingHeldJob(8, slurm.holds[8]), shared, 401);
  ASSERT_NE(claims.Find("slurm/8"), nullptr);
  EXPECT_EQ(claims.Find("slurm/8")->state, JobClaimState::kUndoing);
  EXPECT_TRUE(claims.Holding().empty());
  slurm.refuse_hold = false;
  claims.Advance(PendingHeldJob(8, slurm.holds[8]), shared, 402);
  EXPECT_EQ(claims.Find("slurm/8"), nullptr);
  EXPECT_THAT(slurm.holds[8], ::testing::HasSubstr("PreemptionUndone: preemption on shared node n1 undone: the victims"));
  // A claim whose job was cancelled meanwhile: undone with nothing to write.
  ASSERT_TRUE(claims.Claim("slurm/9", 9, {"n1"}, {"slurm/7"}, 500).ok());
  slurm.holds.erase(9);
  claims.Advance({}, shared, 501);
  EXPECT_EQ(claims.Find("slurm/9"), nullptr);
  EXPECT_FALSE(slurm.holds.count(9));
  // A hold that cannot be written makes no claim.
  slurm.refuse_hold = true;
  EXPECT_FALSE(claims.Claim("slurm/10", 10, {"n1"}, {"ns/low"}, 600).ok());
  EXPECT_EQ(claims.Find("slurm/10"), nullptr);
}

// A successor reads a claim back from a pending job held by onequeue, and nothing else: not an
// undone claim, not a claim comment on a job released (priority > 0) or running.
TEST(JobClaimMachine, RebuildReadsOnlyHeldPendingJobsWithAClaim) {
  FakePlaceholderSlurm slurm;
  JobClaims claims(JobClaimOptions{}, &slurm);
  slurm::SlurmView::Jobs jobs = PendingHeldJob(8, JobClaimComment({"n1"}, {"ns/low", "slurm/7"}));
  jobs.merge(PendingHeldJob(9, "onequeue: PreemptionUndone: preemption on shared node n1 undone: x"));
  jobs.merge(PendingHeldJob(10, JobClaimComment({"n1"}, {"ns/a"})));
  jobs.at(10).priority = 4000000000u;
  jobs.merge(PendingHeldJob(11, JobClaimComment({"n1"}, {"ns/b"})));
  jobs.at(11).state = slurm::JobState::kRunning;
  claims.Rebuild(jobs, 100);
  ASSERT_EQ(claims.records().size(), 1u);
  const JobClaimRecord* r = claims.Find("slurm/8");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->state, JobClaimState::kClaimed);
  EXPECT_EQ(r->nodes, std::vector<std::string>{"n1"});
  EXPECT_EQ(r->victims, (std::vector<std::string>{"ns/low", "slurm/7"}));
  EXPECT_EQ(claims.ToAskVictims().size(), 1u);
}

}  // namespace
}  // namespace onequeue::scheduler

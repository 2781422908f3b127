#include "slurm_bridge/ownership.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "fake_slurm_api.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace onequeue::slurm {
namespace {
using testing::FakeSlurmApi;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

// onequeue's Slurm identity in these tests: FakeSlurmApi's token user.
const SlurmIdentity kOnequeue{"slurm", ""};

class OwnershipTest : public ::testing::Test {
 protected:
  OwnershipTest() {
    for (const char* n : {"n1", "n2", "n3"}) {
      api_.nodes[n].name = n;
      api_.nodes[n].state = NodeState::kIdle;
      api_.nodes[n].partitions = {"batch", "reclaim"};
    }
    api_.nodes["n2"].state_flags = {"DRAIN"};
    api_.nodes["n2"].reason = "bad DIMM";
    api_.nodes["n2"].reason_set_by_user = "root";
  }
  FakeSlurmApi api_;
};

TEST(OwnerTagTest, RoundTrip) {
  EXPECT_EQ(OwnerTag("pod-a"), "onequeue:pod-a");
  EXPECT_EQ(OwnerFromTag("onequeue:pod-a"), "pod-a");
  EXPECT_FALSE(OwnerFromTag("maintenance").has_value());
  EXPECT_FALSE(OwnerFromTag("onequeue:").has_value());
}

TEST_F(OwnershipTest, DrainIsIdempotentAndTagged) {
  auto own = MakeDrainOwnership(api_, kOnequeue);
  ASSERT_TRUE(own->Reclaim("n1", "pod-a").ok());
  ASSERT_TRUE(own->Reclaim("n1", "pod-a").ok());
  EXPECT_EQ(std::count(api_.calls.begin(), api_.calls.end(), "Drain n1 onequeue:pod-a"), 1);
  absl::StatusOr<OwnershipStatus> s = own->Status("n1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->holder, NodeHolder::kOnequeue);
  EXPECT_EQ(s->owner, "pod-a");
  EXPECT_TRUE(s->ready);
  EXPECT_TRUE(absl::IsFailedPrecondition(own->Reclaim("n1", "pod-b")));
  ASSERT_TRUE(own->Lend("n1").ok());
  ASSERT_TRUE(own->Lend("n1").ok());
  EXPECT_EQ(std::count(api_.calls.begin(), api_.calls.end(), "Resume n1 "), 1);
  EXPECT_EQ(own->Status("n1")->holder, NodeHolder::kSlurm);
}

TEST_F(OwnershipTest, AdminDrainIsNeverTouched) {
  std::vector<std::unique_ptr<NodeOwnership>> mechanisms;
  mechanisms.push_back(MakeDrainOwnership(api_, kOnequeue));
  mechanisms.push_back(MakePlaceholderOwnership(api_, {.identity = kOnequeue}, [] { return absl::Now(); }));
  for (auto& own : mechanisms) {
    absl::Status lend = own->Lend("n2");
    absl::Status reclaim = own->Reclaim("n2", "pod-a");
    if (std::string(own->mechanism()) == "drain") {
      EXPECT_TRUE(absl::IsFailedPrecondition(lend)) << lend;
      EXPECT_THAT(lend.message(), HasSubstr("bad DIMM"));
    }
    EXPECT_TRUE(absl::IsFailedPrecondition(reclaim)) << reclaim;
    EXPECT_THAT(reclaim.message(), HasSubstr("root"));
    absl::Status retag = own->Retag("n2", "kubernetes");
    EXPECT_TRUE(absl::IsFailedPrecondition(retag)) << retag;
    EXPECT_THAT(retag.message(), HasSubstr("bad DIMM"));
    EXPECT_EQ(own->Status("n2")->holder, NodeHolder::kAdmin);
  }
  EXPECT_EQ(api_.nodes["n2"].reason, "bad DIMM");
  EXPECT_THAT(api_.calls, Not(Contains(HasSubstr("n2"))));
}

TEST_F(OwnershipTest, PlaceholderSubmitsOnceAndCancelsOnLend) {
  auto own = MakePlaceholderOwnership(api_, {.reclaim_partition = "reclaim", .identity = kOnequeue}, [] { return absl::Now(); });
  ASSERT_TRUE(own->Reclaim("n3", "pod-a").ok());
  ASSERT_TRUE(own->Reclaim("n3", "pod-a").ok());
  EXPECT_EQ(std::count(api_.calls.begin(), api_.calls.end(),
                       "Submit onequeue-placeholder-n3 reclaim n3 onequeue:pod-a"), 1);
  absl::StatusOr<OwnershipStatus> s = own->Status("n3");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->holder, NodeHolder::kOnequeue);
  EXPECT_FALSE(s->ready);  // pending until Slurm starts it
  // A job Slurm requeued for it waits on BeginTime; Lend releases it.
  SlurmJob victim;
  victim.job_id = 7;
  victim.partition = "batch";
  victim.state = JobState::kPending;
  victim.state_reason = "BeginTime";
  victim.restart_count = 1;
  api_.jobs[7] = victim;
  ASSERT_TRUE(own->Lend("n3").ok());
  EXPECT_THAT(api_.calls, Contains("Cancel 1000"));
  EXPECT_THAT(api_.calls, Contains("StartAt 7"));
  EXPECT_EQ(own->Status("n3")->holder, NodeHolder::kSlurm);
}

TEST_F(OwnershipTest, DrainRetagRewritesTheReasonWithoutResuming) {
  auto own = MakeDrainOwnership(api_, kOnequeue);
  ASSERT_TRUE(own->Reclaim("n1", "reserved/pod-a").ok());
  ASSERT_TRUE(own->Retag("n1", "kubernetes").ok());
  ASSERT_TRUE(own->Retag("n1", "kubernetes").ok());  // idempotent
  EXPECT_THAT(api_.calls, ::testing::ElementsAre("Drain n1 onequeue:reserved/pod-a", "Drain n1 onequeue:kubernetes"));
  absl::StatusOr<OwnershipStatus> s = own->Status("n1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->holder, NodeHolder::kOnequeue);
  EXPECT_EQ(s->owner, "kubernetes");
  // Not held yet: the same as Reclaim.
  ASSERT_TRUE(own->Retag("n3", "kubernetes").ok());
  EXPECT_EQ(api_.nodes["n3"].reason, "onequeue:kubernetes");
}

TEST_F(OwnershipTest, PlaceholderRetagRewritesTheCommentOfTheSamePlaceholder) {
  auto own = MakePlaceholderOwnership(api_, {.reclaim_partition = "reclaim", .identity = kOnequeue}, [] { return absl::Now(); });
  ASSERT_TRUE(own->Reclaim("n3", "reserved/pod-a").ok());
  ASSERT_TRUE(own->Retag("n3", "kubernetes").ok());
  ASSERT_TRUE(own->Retag("n3", "kubernetes").ok());  // idempotent
  // One comment update of the same job: never cancelled, never submitted again. (The submit reads
  // the reclaim partition's MaxTime first: issue 24 M6.)
  EXPECT_THAT(api_.calls, ::testing::ElementsAre("ListJobs", "ListPartitions",
                                                 "Submit onequeue-placeholder-n3 reclaim n3 onequeue:reserved/pod-a",
                                                 "UpdateJob 1000 comment=onequeue:kubernetes"));
  absl::StatusOr<OwnershipStatus> s = own->Status("n3");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->owner, "kubernetes");
  EXPECT_EQ(s->placeholder_job, 1000u);
  // Reclaim for yet another owner still refuses.
  EXPECT_TRUE(absl::IsFailedPrecondition(own->Reclaim("n3", "pod-b")));
  // Not held yet: the same as Reclaim.
  ASSERT_TRUE(own->Retag("n1", "kubernetes").ok());
  EXPECT_THAT(api_.calls, Contains("Submit onequeue-placeholder-n1 reclaim n1 onequeue:kubernetes"));
}

TEST_F(OwnershipTest, PlaceholderRetagPassesOnUpdateErrors) {
  auto own = MakePlaceholderOwnership(api_, {.reclaim_partition = "reclaim", .identity = kOnequeue}, [] { return absl::Now(); });
  ASSERT_TRUE(own->Reclaim("n3", "pod-a").ok());
  api_.fail_with = absl::UnavailableError("slurmrestd down");
  EXPECT_TRUE(absl::IsUnavailable(own->Retag("n3", "kubernetes")));
}

// Every case OwnershipFromView tells apart, checked against Status() over the same Slurm state.
class OwnershipFromViewTest : public ::testing::Test {
 protected:
  OwnershipFromViewTest() {
    auto node = [&](const std::string& name, NodeState state, std::set<std::string> flags, std::string reason) {
      SlurmNode& n = api_.nodes[name];
      n.name = name;
      n.state = state;
      n.state_flags = std::move(flags);
      // Slurm records who set a reason: onequeue's user for its tagged drains, an admin otherwise.
      n.reason_set_by_user = reason.rfind("onequeue:", 0) == 0 ? "slurm" : "root";
      n.reason = std::move(reason);
      n.partitions = {"batch", "reclaim"};
    };
    node("idle", NodeState::kIdle, {}, "");
    node("admin", NodeState::kIdle, {"DRAIN"}, "bad DIMM");
    node("drained", NodeState::kIdle, {"DRAIN"}, "onequeue:pod-a");
    node("draining", NodeState::kMixed, {"DRAIN"}, "onequeue:pod-b");
    node("down", NodeState::kDown, {}, "Not responding");
    node("down-ours", NodeState::kDown, {"DRAIN"}, "onequeue:pod-c");
    node("ph-running", NodeState::kAllocated, {}, "");
    node("ph-pending", NodeState::kMixed, {}, "");
    node("admin-ph", NodeState::kAllocated, {"DRAIN"}, "maintenance");
    node("not-ph", NodeState::kIdle, {}, "");
    node("forged-drain", NodeState::kIdle, {"DRAIN"}, "onequeue:pod-h");
    api_.nodes["forged-drain"].reason_set_by_user = "mallory";  // an operator other than onequeue
    node("forged-ph", NodeState::kAllocated, {}, "");
    auto job = [&](uint32_t id, const std::string& name, const std::string& partition, JobState state,
                   const std::string& comment) {
      SlurmJob& j = api_.jobs[id];
      j.job_id = id;
      j.name = name;
      j.partition = partition;
      j.state = state;
      j.comment = comment;
      j.user = "slurm";  // onequeue's user submits its placeholders
    };
    job(1, "onequeue-placeholder-ph-running", "reclaim", JobState::kRunning, "onequeue:pod-d");
    job(2, "onequeue-placeholder-ph-pending", "reclaim", JobState::kPending, "onequeue:pod-e");
    job(3, "onequeue-placeholder-admin-ph", "reclaim", JobState::kRunning, "onequeue:pod-f");
    // None of these is a placeholder: finished, wrong partition, no tag, other name.
    job(4, "onequeue-placeholder-not-ph", "reclaim", JobState::kCancelled, "onequeue:pod-g");
    job(5, "onequeue-placeholder-not-ph", "batch", JobState::kRunning, "onequeue:pod-g");
    job(6, "onequeue-placeholder-not-ph", "reclaim", JobState::kRunning, "waiting");
    job(7, "onequeue-placeholder-idle-x", "reclaim", JobState::kRunning, "onequeue:pod-g");
    // A user's job dressed as a placeholder: name, partition and tag right, but not onequeue's user.
    job(8, "onequeue-placeholder-forged-ph", "reclaim", JobState::kRunning, "onequeue:pod-i");
    api_.jobs[8].user = "mallory";
    view_.nodes = std::make_shared<const SlurmView::Nodes>(api_.nodes);
    view_.jobs = std::make_shared<const SlurmView::Jobs>(api_.jobs);
  }
  FakeSlurmApi api_;
  SlurmView view_;
};

TEST_F(OwnershipFromViewTest, DrainMechanism) {
  const std::map<std::string, OwnershipStatus> m = OwnershipFromView(view_, "drain", "reclaim", kOnequeue);
  ASSERT_EQ(m.size(), api_.nodes.size());
  EXPECT_EQ(m.at("idle").holder, NodeHolder::kSlurm);
  EXPECT_EQ(m.at("admin").holder, NodeHolder::kAdmin);
  EXPECT_EQ(m.at("drained").holder, NodeHolder::kOnequeue);
  EXPECT_EQ(m.at("drained").owner, "pod-a");
  EXPECT_TRUE(m.at("drained").ready);
  EXPECT_EQ(m.at("draining").owner, "pod-b");
  EXPECT_FALSE(m.at("draining").ready);  // a job still runs there
  EXPECT_EQ(m.at("down").holder, NodeHolder::kDown);
  EXPECT_EQ(m.at("down-ours").holder, NodeHolder::kOnequeue);
  EXPECT_TRUE(m.at("down-ours").ready);
  EXPECT_EQ(m.at("ph-running").holder, NodeHolder::kSlurm);  // placeholders mean nothing here
}

TEST_F(OwnershipFromViewTest, PlaceholderMechanism) {
  const std::map<std::string, OwnershipStatus> m = OwnershipFromView(view_, "placeholder", "reclaim", kOnequeue);
  ASSERT_EQ(m.size(), api_.nodes.size());
  EXPECT_EQ(m.at("ph-running").holder, NodeHolder::kOnequeue);
  EXPECT_EQ(m.at("ph-running").owner, "pod-d");
  EXPECT_TRUE(m.at("ph-running").ready);
  EXPECT_EQ(m.at("ph-running").placeholder_job, 1u);
  EXPECT_EQ(m.at("ph-pending").owner, "pod-e");
  EXPECT_FALSE(m.at("ph-pending").ready);
  EXPECT_EQ(m.at("ph-pending").placeholder_job, 2u);
  EXPECT_EQ(m.at("admin-ph").holder, NodeHolder::kAdmin);  // an admin drain wins over anything
  EXPECT_EQ(m.at("not-ph").holder, NodeHolder::kSlurm);
  EXPECT_EQ(m.at("idle").holder, NodeHolder::kSlurm);
  EXPECT_EQ(m.at("drained").owner, "pod-a");  // our drain, e.g. DrainBeforeEviction's
  EXPECT_EQ(m.at("down").holder, NodeHolder::kDown);
  EXPECT_TRUE(OwnershipFromView(SlurmView{}, "placeholder", "reclaim", kOnequeue).empty());
}

// Issue 24 M2: the onequeue: tag is trusted only on what onequeue's own Slurm user wrote: a
// placeholder submitted by another user (anyone may name a job and write its comment) is that
// user's job, and a drain whose reason another user set is an administrator's (hands off).
TEST_F(OwnershipFromViewTest, TagsAnotherUserWroteAreNotOnequeues) {
  for (const char* mechanism : {"drain", "placeholder"}) {
    SCOPED_TRACE(mechanism);
    const std::map<std::string, OwnershipStatus> m = OwnershipFromView(view_, mechanism, "reclaim", kOnequeue);
    EXPECT_EQ(m.at("forged-ph").holder, NodeHolder::kSlurm);
    EXPECT_EQ(m.at("forged-drain").holder, NodeHolder::kAdmin);
    EXPECT_EQ(m.at("drained").holder, NodeHolder::kOnequeue);  // onequeue's own, as before
  }
}

TEST_F(OwnershipFromViewTest, SameAnswerAsStatus) {
  std::vector<std::unique_ptr<NodeOwnership>> mechanisms;
  mechanisms.push_back(MakeDrainOwnership(api_, kOnequeue));
  mechanisms.push_back(MakePlaceholderOwnership(api_, {.reclaim_partition = "reclaim", .identity = kOnequeue}, [] { return absl::Now(); }));
  for (auto& own : mechanisms) {
    const std::map<std::string, OwnershipStatus> m = OwnershipFromView(view_, own->mechanism(), "reclaim", kOnequeue);
    for (const auto& [name, node] : api_.nodes) {
      SCOPED_TRACE(absl::StrCat(own->mechanism(), " ", name));
      absl::StatusOr<OwnershipStatus> s = own->Status(name);
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ(m.at(name).holder, s->holder);
      EXPECT_EQ(m.at(name).owner, s->owner);
      EXPECT_EQ(m.at(name).ready, s->ready);
      EXPECT_EQ(m.at(name).placeholder_job, s->placeholder_job);
      EXPECT_EQ(m.at(name).detail, s->detail);
    }
  }
}

TEST_F(OwnershipTest, DrainBeforeEvictionLeavesExistingDrains) {
  ASSERT_TRUE(DrainBeforeEviction(api_, "n2", "slurmd-pod").ok());
  EXPECT_EQ(api_.nodes["n2"].reason, "bad DIMM");
  ASSERT_TRUE(DrainBeforeEviction(api_, "n1", "slurmd-pod").ok());
  EXPECT_EQ(api_.nodes["n1"].reason, "onequeue:slurmd-pod");
}

// Issue 24 M6 (b): a placeholder submitted with the partition's default time limit and
// requeue=false ended at TIMEOUT or NODE_FAIL, and the fence with it. It is submitted with the
// reclaim partition's MaxTime (UNLIMITED when it has none) and requeue=true.
TEST_F(OwnershipTest, PlaceholderIsSubmittedWithTheReclaimPartitionsMaxTimeAndRequeue) {
  SlurmPartition reclaim;
  reclaim.name = "reclaim";
  reclaim.max_time = absl::Hours(48);
  reclaim.default_time = absl::Hours(1);
  api_.partitions = {reclaim};
  auto own = MakePlaceholderOwnership(api_, {.reclaim_partition = "reclaim"}, [] { return absl::Now(); });
  ASSERT_TRUE(own->Reclaim("n3", "pod-a").ok());
  ASSERT_EQ(api_.submissions.size(), 1u);
  EXPECT_EQ(api_.submissions[0].time_limit_minutes, 48u * 60);
  EXPECT_TRUE(api_.submissions[0].requeue);
  api_.partitions[0].max_time.reset();  // MaxTime=INFINITE
  ASSERT_TRUE(own->Lend("n3").ok());
  ASSERT_TRUE(own->Reclaim("n3", "pod-b").ok());
  ASSERT_EQ(api_.submissions.size(), 2u);
  EXPECT_EQ(api_.submissions[1].time_limit_minutes, kTimeLimitUnlimited);
  EXPECT_TRUE(api_.submissions[1].requeue);
}

// Issue 24 M6 (a): Slurm's partition preemption lets a placeholder requeue every job of a lower
// tier on its node, whatever its partition; onequeue means to displace only the jobs of the
// partitions it lends to (the others are load, never victims, in its plan). It refuses to fence
// over a job of another partition, and says which.
TEST_F(OwnershipTest, PlaceholderIsNotSubmittedOverAJobOfAPartitionOnequeueDoesNotShare) {
  api_.nodes["n3"].partitions = {"batch", "debug", "reclaim"};
  SlurmJob other;
  other.job_id = 5;
  other.partition = "debug";
  other.state = JobState::kRunning;
  other.nodes = {"n3"};
  api_.jobs[5] = other;
  auto own = MakePlaceholderOwnership(api_, {.reclaim_partition = "reclaim", .shared_partitions = {"batch"}},
                                      [] { return absl::Now(); });
  absl::Status s = own->Reclaim("n3", "pod-a");
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("job 5"));
  EXPECT_THAT(s.message(), HasSubstr("debug"));
  EXPECT_THAT(api_.calls, Not(Contains(HasSubstr("Submit"))));
  // A job of the shared partition is what the placeholder is for.
  api_.jobs[5].partition = "batch";
  ASSERT_TRUE(own->Reclaim("n3", "pod-a").ok());
  EXPECT_THAT(api_.calls, Contains(HasSubstr("Submit onequeue-placeholder-n3")));
}

}  // namespace
}  // namespace onequeue::slurm

#include "slurm_bridge/ownership.h"

#include "fake_slurm_api.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace onequeue::slurm {
namespace {
using testing::FakeSlurmApi;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

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
  auto own = MakeDrainOwnership(api_);
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
  mechanisms.push_back(MakeDrainOwnership(api_));
  mechanisms.push_back(MakePlaceholderOwnership(api_, {}, [] { return absl::Now(); }));
  for (auto& own : mechanisms) {
    absl::Status lend = own->Lend("n2");
    absl::Status reclaim = own->Reclaim("n2", "pod-a");
    if (std::string(own->mechanism()) == "drain") {
      EXPECT_TRUE(absl::IsFailedPrecondition(lend)) << lend;
      EXPECT_THAT(lend.message(), HasSubstr("bad DIMM"));
    }
    EXPECT_TRUE(absl::IsFailedPrecondition(reclaim)) << reclaim;
    EXPECT_THAT(reclaim.message(), HasSubstr("root"));
    EXPECT_EQ(own->Status("n2")->holder, NodeHolder::kAdmin);
  }
  EXPECT_EQ(api_.nodes["n2"].reason, "bad DIMM");
  EXPECT_THAT(api_.calls, Not(Contains(HasSubstr("n2"))));
}

TEST_F(OwnershipTest, PlaceholderSubmitsOnceAndCancelsOnLend) {
  auto own = MakePlaceholderOwnership(api_, {.reclaim_partition = "reclaim"}, [] { return absl::Now(); });
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

TEST_F(OwnershipTest, DrainBeforeEvictionLeavesExistingDrains) {
  ASSERT_TRUE(DrainBeforeEviction(api_, "n2", "slurmd-pod").ok());
  EXPECT_EQ(api_.nodes["n2"].reason, "bad DIMM");
  ASSERT_TRUE(DrainBeforeEviction(api_, "n1", "slurmd-pod").ok());
  EXPECT_EQ(api_.nodes["n1"].reason, "onequeue:slurmd-pod");
}

}  // namespace
}  // namespace onequeue::slurm

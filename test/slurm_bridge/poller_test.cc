#include "slurm_bridge/poller.h"

#include "fake_slurm_api.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace onequeue::slurm {
namespace {
using testing::FakeSlurmApi;
using ::testing::ElementsAre;

SlurmJob MakeJob(uint32_t id, JobState s) {
  SlurmJob j;
  j.job_id = id;
  j.state = s;
  return j;
}

class PollerTest : public ::testing::Test {
 protected:
  PollerTest() {
    api_.jobs[1] = MakeJob(1, JobState::kRunning);
    api_.jobs[2] = MakeJob(2, JobState::kPending);
    api_.nodes["n1"].name = "n1";
  }
  FakeSlurmApi api_;
  absl::Time t0_ = absl::FromUnixSeconds(1000);
};

TEST_F(PollerTest, FirstPollIsFullThenIncremental) {
  SlurmPoller poller(api_);
  EXPECT_EQ(poller.Staleness(t0_), absl::InfiniteDuration());
  absl::StatusOr<PollChanges> c = poller.PollOnce(t0_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->jobs_added, 2);
  EXPECT_EQ(poller.View()->jobs->size(), 2u);
  EXPECT_EQ(poller.Staleness(t0_ + absl::Seconds(3)), absl::Seconds(3));

  api_.calls.clear();
  c = poller.PollOnce(t0_ + absl::Seconds(5));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->any());
  EXPECT_EQ(api_.calls.front(), "ListJobs@101");  // the server's last_update is passed back
  EXPECT_EQ(poller.stats().unchanged_job_answers, 1u);
  EXPECT_EQ(poller.View()->jobs->size(), 2u);  // unchanged answer keeps the view

  api_.jobs[2].state = JobState::kRunning;
  api_.jobs.erase(1);
  api_.jobs[3] = MakeJob(3, JobState::kPending);
  api_.last_job_update = 200;
  c = poller.PollOnce(t0_ + absl::Seconds(10));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->jobs_added, 1);
  EXPECT_EQ(c->jobs_changed, 1);
  EXPECT_EQ(c->jobs_removed, 1);
  EXPECT_EQ(poller.View()->jobs->at(2).state, JobState::kRunning);
}

TEST_F(PollerTest, FailureKeepsTheViewGrowsStaleAndNextPollIsFull) {
  SlurmPoller poller(api_);
  ASSERT_TRUE(poller.PollOnce(t0_).ok());
  api_.fail_with = absl::UnavailableError("cannot connect to slurmrestd");
  absl::StatusOr<PollChanges> c = poller.PollOnce(t0_ + absl::Seconds(30));
  EXPECT_TRUE(absl::IsUnavailable(c.status()));
  EXPECT_EQ(poller.View()->jobs->size(), 2u);
  EXPECT_EQ(poller.Staleness(t0_ + absl::Seconds(30)), absl::Seconds(30));
  EXPECT_EQ(poller.stats().failures, 1u);
  EXPECT_EQ(poller.stats().last_error, "cannot connect to slurmrestd");

  api_.fail_with = absl::OkStatus();
  api_.calls.clear();
  ASSERT_TRUE(poller.PollOnce(t0_ + absl::Seconds(40)).ok());
  EXPECT_EQ(api_.calls.front(), "ListJobs");  // full, not incremental
  EXPECT_EQ(poller.Staleness(t0_ + absl::Seconds(40)), absl::ZeroDuration());
}

TEST_F(PollerTest, NonIncrementalFetchesEverythingEveryCycle) {
  SlurmPoller poller(api_, PollerOptions{.incremental = false});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(poller.PollOnce(t0_ + absl::Seconds(i)).ok());
  EXPECT_EQ(poller.stats().full_job_fetches, 3u);
  EXPECT_EQ(poller.stats().unchanged_job_answers, 0u);
}

TEST_F(PollerTest, PeriodicFullRefresh) {
  SlurmPoller poller(api_, PollerOptions{.full_refresh_interval = absl::Minutes(1)});
  ASSERT_TRUE(poller.PollOnce(t0_).ok());
  api_.calls.clear();
  ASSERT_TRUE(poller.PollOnce(t0_ + absl::Seconds(61)).ok());
  EXPECT_EQ(api_.calls.front(), "ListJobs");
}

}  // namespace
}  // namespace onequeue::slurm

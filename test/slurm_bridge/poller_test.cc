#include "slurm_bridge/poller.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"

#include "fake_slurm_api.h"
#include "scripted_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace onequeue::slurm {
namespace {
using testing::FakeSlurmApi;
using testing::Recorded;
using testing::ScriptedTransport;
using ::testing::ElementsAre;

SlurmJob MakeJob(uint32_t id, JobState s) {
  SlurmJob j;
  j.job_id = id;
  j.state = s;
  return j;
}

// An array's pending record: every task still in it.
SlurmJob PendingArray(uint32_t id, const std::string& tasks) {
  SlurmJob j = MakeJob(id, JobState::kPending);
  j.array_job_id = id;
  j.array_tasks = tasks;
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

// Issue 25: a running job whose allocation per node Slurm's answer did not give is kept, with the
// error (logged once); its allocation becoming readable, or changing, is a change of the job.
TEST_F(PollerTest, AJobWithAnUnreadableAllocationIsKeptAndItsAllocationIsPartOfItsKey) {
  api_.jobs[1].allocation.error = "job 1: cannot read its allocation per node (no job_resources)";
  SlurmPoller poller(api_);
  ASSERT_TRUE(poller.PollOnce(t0_).ok());
  ASSERT_EQ(poller.View()->jobs->count(1), 1u);
  EXPECT_EQ(poller.View()->jobs->at(1).allocation.error, api_.jobs[1].allocation.error);
  api_.jobs[1].allocation.error.clear();
  api_.jobs[1].allocation.nodes.push_back(NodeAllocation{"n1", 2, 300, {{"gpu", 1}}, {{"gpu", {0}}}});
  api_.last_job_update = 300;
  absl::StatusOr<PollChanges> c = poller.PollOnce(t0_ + absl::Seconds(5));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->jobs_changed, 1);
  EXPECT_TRUE(poller.View()->jobs->at(1).allocation.readable());
}

// Issue 29: reservations are listed every poll; a change of one (new, gone, other nodes or
// window) is a change that wakes the queue; the same list again is none.
TEST_F(PollerTest, ReservationsAreListedEveryPollAndTheirChangesCount) {
  SlurmPoller poller(api_);
  ASSERT_TRUE(poller.PollOnce(t0_).ok());
  EXPECT_TRUE(poller.View()->reservations->empty());  // an api without reservations: none
  SlurmReservation maint;
  maint.name = "maint";
  maint.nodes = {"n1"};
  maint.flags = {"MAINT"};
  api_.reservations = std::vector<SlurmReservation>{maint};
  absl::StatusOr<PollChanges> c = poller.PollOnce(t0_ + absl::Seconds(1));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->reservations_changed);
  EXPECT_TRUE(c->any());
  ASSERT_EQ(poller.View()->reservations->count("maint"), 1u);
  EXPECT_TRUE(poller.View()->reservations->at("maint").maint());
  c = poller.PollOnce(t0_ + absl::Seconds(2));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->reservations_changed);
  api_.reservations->front().nodes = {"n1", "n2"};
  c = poller.PollOnce(t0_ + absl::Seconds(3));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->reservations_changed);
  api_.reservations->clear();
  c = poller.PollOnce(t0_ + absl::Seconds(4));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->reservations_changed);
  EXPECT_TRUE(poller.View()->reservations->empty());
}

// Issue 29: a partition's limits (MaxTime, MaxNodes, MinNodes) or PreemptMode changing in Slurm
// is a partitions change, so it counts from the next poll; the same answer again is none.
TEST_F(PollerTest, APartitionsLimitsOrPreemptModeChangingIsAPartitionsChange) {
  SlurmPartition p;
  p.name = "batch";
  p.nodes = {"n1"};
  p.state = "UP";
  api_.partitions = {p};
  SlurmPoller poller(api_);
  ASSERT_TRUE(poller.PollOnce(t0_).ok());
  absl::Time now = t0_;
  auto changed = [&]() {
    now += PollerOptions().partition_interval;  // a poll that lists partitions
    const auto listed = std::count(api_.calls.begin(), api_.calls.end(), "ListPartitions");
    absl::StatusOr<PollChanges> c = poller.PollOnce(now);
    EXPECT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(std::count(api_.calls.begin(), api_.calls.end(), "ListPartitions"), listed + 1);
    return c.ok() && c->partitions_changed;
  };
  EXPECT_FALSE(changed());  // an identical answer
  const std::vector<std::pair<std::string, std::function<void(SlurmPartition&)>>> edits = {
      {"MaxTime", [](SlurmPartition& q) { q.max_time = absl::Hours(1); }},
      {"MaxNodes", [](SlurmPartition& q) { q.max_nodes = 2; }},
      {"MinNodes", [](SlurmPartition& q) { q.min_nodes = 2; }},
      {"PreemptMode", [](SlurmPartition& q) { q.preempt_mode = {"OFF"}; }},
  };
  for (const auto& [field, edit] : edits) {
    edit(api_.partitions.front());
    EXPECT_TRUE(changed()) << field;
    EXPECT_FALSE(changed()) << field << " again";
    api_.partitions.front() = p;
    EXPECT_TRUE(changed()) << field << " back";
  }
  ASSERT_EQ(poller.View()->partitions->count("batch"), 1u);
}

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

// The safety net over the in-memory Slurm: an incremental answer that lacks a job the view has is
// checked with a full listing in the same poll; a job really gone is removed by that listing.
TEST_F(PollerTest, AJobMissingFromAnIncrementalAnswerIsRemovedOnlyByAFullListing) {
  SlurmPoller poller(api_);
  ASSERT_TRUE(poller.PollOnce(t0_).ok());
  api_.jobs.erase(1);
  api_.last_job_update = 200;
  api_.calls.clear();
  absl::StatusOr<PollChanges> c = poller.PollOnce(t0_ + absl::Seconds(5));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(api_.calls, ElementsAre("ListJobs@101", "ListJobs", "ListNodes"));
  EXPECT_EQ(c->jobs_removed, 1);
  EXPECT_EQ(poller.View()->jobs->count(1), 0u);
  EXPECT_EQ(poller.stats().confirming_fetches, 1u);
}

// Issue 26, state mode: the poller over a fake Slurm that lists job states. Its first poll lists
// states, then every job once; later polls list states and fetch alone what they changed.
class StateModeTest : public PollerTest {
 protected:
  StateModeTest() { api_.lists_job_states = true; }
  // Polls at t0 + `seconds` and returns what the api was asked in that poll.
  std::vector<std::string> Poll(SlurmPoller& poller, int seconds, PollChanges* changes = nullptr) {
    api_.calls.clear();
    absl::StatusOr<PollChanges> c = poller.PollOnce(t0_ + absl::Seconds(seconds));
    EXPECT_TRUE(c.ok()) << c.status();
    if (changes != nullptr && c.ok()) *changes = *c;
    return api_.calls;
  }
};

TEST_F(StateModeTest, TheFirstPollListsStatesThenEveryJob) {
  SlurmPoller poller(api_);
  PollChanges c;
  EXPECT_THAT(Poll(poller, 0, &c), ElementsAre("ListJobStates", "ListJobs", "ListNodes", "ListPartitions"));
  EXPECT_EQ(c.jobs_added, 2);
  EXPECT_EQ(poller.stats().full_job_fetches, 1u);
  EXPECT_EQ(poller.stats().job_state_listings, 1u);
}

TEST_F(StateModeTest, AQuietQueueCostsOneStateListingAPoll) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  PollChanges c;
  for (int i = 1; i <= 3; ++i) EXPECT_THAT(Poll(poller, 2 * i, &c), ElementsAre("ListJobStates", "ListNodes"));
  EXPECT_FALSE(c.any());
  EXPECT_EQ(poller.stats().full_job_fetches, 1u);
  EXPECT_EQ(poller.stats().single_job_fetches, 0u);
}

TEST_F(StateModeTest, ASubmittedJobIsFetchedAloneNotByAFullListing) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.jobs[3] = MakeJob(3, JobState::kPending);
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c), ElementsAre("ListJobStates", "GetJob 3", "ListNodes"));
  EXPECT_EQ(c.jobs_added, 1);
  EXPECT_EQ(c.jobs_changed + c.jobs_removed, 0);
  EXPECT_EQ(poller.View()->jobs->size(), 3u);
  EXPECT_EQ(poller.stats().full_job_fetches, 1u);
  EXPECT_EQ(poller.stats().single_job_fetches, 1u);
}

TEST_F(StateModeTest, AFinishingJobIsFetchedAloneAndCountsAsChanged) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.jobs[1].state = JobState::kCompleted;
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c), ElementsAre("ListJobStates", "GetJob 1", "ListNodes"));
  EXPECT_EQ(c.jobs_changed, 1);
  EXPECT_EQ(poller.View()->jobs->at(1).state, JobState::kCompleted);
  api_.jobs[2].state_flags.insert("REQUEUED");  // a flag alone is a change of state too
  EXPECT_THAT(Poll(poller, 4, &c), ElementsAre("ListJobStates", "GetJob 2", "ListNodes"));
}

TEST_F(StateModeTest, ARecordTheCompleteListingLacksIsRemovedWithoutAnyFetch) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.jobs.erase(1);
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c), ElementsAre("ListJobStates", "ListNodes"));
  EXPECT_EQ(c.jobs_removed, 1);
  EXPECT_EQ(poller.View()->jobs->count(1), 0u);
}

// The bound docs/slurm_bridge.md gives: a change that leaves the state as it was (here a new
// priority, as a user's hold or release) waits for the full listing of full_refresh_interval.
TEST_F(StateModeTest, AChangeThatKeepsTheStateIsSeenAtTheNextFullListing) {
  SlurmPoller poller(api_, PollerOptions{.full_refresh_interval = absl::Minutes(1)});
  Poll(poller, 0);
  api_.jobs[2].priority = 7;
  EXPECT_THAT(Poll(poller, 2), ElementsAre("ListJobStates", "ListNodes"));
  EXPECT_EQ(poller.View()->jobs->at(2).priority, 0);
  PollChanges c;
  EXPECT_THAT(Poll(poller, 60, &c), ElementsAre("ListJobStates", "ListJobs", "ListNodes", "ListPartitions"));
  EXPECT_EQ(c.jobs_changed, 1);
  EXPECT_EQ(poller.View()->jobs->at(2).priority, 7);
}

// The daemon's own writes: an id passed to Refetch is fetched on the next poll, once.
TEST_F(StateModeTest, ARefetchedJobIsFetchedOnTheNextPollWhateverItsState) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.jobs[2].priority = 7;
  poller.Refetch(2);
  poller.Refetch(77);  // not listed: nothing to fetch
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c), ElementsAre("ListJobStates", "GetJob 2", "ListNodes"));
  EXPECT_EQ(c.jobs_changed, 1);
  EXPECT_EQ(poller.View()->jobs->at(2).priority, 7);
  EXPECT_THAT(Poll(poller, 4), ElementsAre("ListJobStates", "ListNodes"));
}

// The daemon's write client wrapped by NotifyJobWrites: what it wrote is fetched on the next
// poll; a write that failed is not reported.
TEST_F(StateModeTest, JobsWrittenThroughNotifyJobWritesAreFetchedOnTheNextPoll) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  auto inner = std::make_unique<FakeSlurmApi>();  // the write client's own handle on the same "Slurm"
  FakeSlurmApi* writes = inner.get();
  writes->jobs = api_.jobs;
  std::unique_ptr<SlurmApi> loop_api =
      NotifyJobWrites(std::move(inner), [&poller](uint32_t id) { poller.Refetch(id); });
  JobUpdate hold;
  hold.hold = true;
  ASSERT_TRUE(loop_api->UpdateJob(2, hold).ok());
  api_.jobs[2] = writes->jobs[2];
  EXPECT_THAT(Poll(poller, 2), ElementsAre("ListJobStates", "GetJob 2", "ListNodes"));
  writes->fail_with = absl::UnavailableError("refused");
  EXPECT_FALSE(loop_api->UpdateJob(1, hold).ok());
  EXPECT_THAT(Poll(poller, 4), ElementsAre("ListJobStates", "ListNodes"));
}

TEST_F(StateModeTest, MoreChangedRecordsThanMaxJobFetchesMakeOneFullListing) {
  SlurmPoller poller(api_, PollerOptions{.max_job_fetches = 2});
  Poll(poller, 0);
  for (uint32_t id : {3, 4}) api_.jobs[id] = MakeJob(id, JobState::kPending);
  EXPECT_THAT(Poll(poller, 2), ElementsAre("ListJobStates", "GetJob 3", "GetJob 4", "ListNodes"));
  for (uint32_t id : {5, 6, 7}) api_.jobs[id] = MakeJob(id, JobState::kPending);
  PollChanges c;
  EXPECT_THAT(Poll(poller, 4, &c), ElementsAre("ListJobStates", "ListJobs", "ListNodes"));
  EXPECT_EQ(c.jobs_added, 3);
  EXPECT_EQ(poller.stats().full_job_fetches, 2u);
}

// Issue 29's arrays: a task starting leaves the pending record for one of its own; the new record
// and the record whose task list shrank are both fetched.
TEST_F(StateModeTest, AnArrayTaskSplittingOffFetchesItsRecordAndTheArrays) {
  api_.jobs[5] = PendingArray(5, "0-3");
  SlurmPoller poller(api_);
  Poll(poller, 0);
  absl::StatusOr<uint32_t> task = api_.SplitArrayTask(5, 0, "");
  ASSERT_TRUE(task.ok());
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c),
              ElementsAre("ListJobStates", "GetJob 5", absl::StrCat("GetJob ", *task), "ListNodes"));
  EXPECT_EQ(c.jobs_added, 1);
  EXPECT_EQ(c.jobs_changed, 1);
  EXPECT_EQ(poller.View()->jobs->at(5).array_tasks, "1,2,3");
}

// Found live on 22.05 (slurm_e2e_test ATenTaskArrayRunsAsTenTasksInOrder): the daemon splits a
// task off the array after a poll's state listing and before its fetches. The array's record,
// fetched, no longer lists the task, and the task's own record was not listed: unless the fetch
// of the array takes every record Slurm answers for it, the view lacks the task for a poll, and
// the daemon took the task it had just started for gone and started more on its node.
TEST_F(StateModeTest, ATaskSplitOffBetweenTheListingAndTheFetchesIsInTheView) {
  api_.jobs[5] = PendingArray(5, "0-3");
  SlurmPoller poller(api_);
  Poll(poller, 0);
  ASSERT_TRUE(api_.SplitArrayTask(5, 0, "").ok());  // the array's record changes: it is fetched
  absl::StatusOr<uint32_t> late = absl::UnknownError("not split");
  api_.after_job_states = [&] {
    late = api_.SplitArrayTask(5, 1, "started by onequeue");
    api_.after_job_states = nullptr;
  };
  PollChanges c;
  Poll(poller, 2, &c);
  ASSERT_TRUE(late.ok());
  const SlurmView::Jobs& jobs = *poller.View()->jobs;
  EXPECT_EQ(jobs.at(5).array_tasks, "2,3");
  ASSERT_EQ(jobs.count(*late), 1u) << "task 1 is in neither the array's record nor one of its own";
  EXPECT_EQ(jobs.at(*late).array_task_id, 1u);
  EXPECT_EQ(c.jobs_added, 2);  // task 0's record and task 1's, each counted once
  // The next listing differs from the baseline (the array's record lists tasks 2 and 3; task 1's
  // record is new to it): both fetched once more, unchanged.
  EXPECT_THAT(Poll(poller, 4, &c),
              ElementsAre("ListJobStates", "GetJob 5", absl::StrCat("GetJob ", *late), "ListNodes"));
  EXPECT_FALSE(c.any());
}

TEST_F(StateModeTest, AJobGoneBeforeItsFetchIsDroppedAndNotCounted) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.jobs[3] = MakeJob(3, JobState::kPending);
  api_.gone_by_get = {3};
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c), ElementsAre("ListJobStates", "GetJob 3", "ListNodes"));
  EXPECT_FALSE(c.any());
  EXPECT_EQ(poller.View()->jobs->count(3), 0u);
  api_.gone_by_get.clear();  // listed again: asked again
  EXPECT_THAT(Poll(poller, 4, &c), ElementsAre("ListJobStates", "GetJob 3", "ListNodes"));
  EXPECT_EQ(c.jobs_added, 1);
}

// The invariant of update_time mode kept: any failure keeps the view and makes the next poll full.
TEST_F(StateModeTest, AFailedFetchKeepsTheViewAndTheNextPollIsFull) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.jobs[3] = MakeJob(3, JobState::kPending);
  api_.jobs.erase(1);
  api_.fail_get_job = absl::UnavailableError("slurmrestd went away");
  EXPECT_TRUE(absl::IsUnavailable(poller.PollOnce(t0_ + absl::Seconds(2)).status()));
  EXPECT_EQ(poller.View()->jobs->size(), 2u);
  EXPECT_EQ(poller.View()->jobs->count(1), 1u);
  api_.fail_get_job = absl::OkStatus();
  PollChanges c;
  EXPECT_THAT(Poll(poller, 4, &c), ElementsAre("ListJobStates", "ListJobs", "ListNodes"));
  EXPECT_EQ(c.jobs_added, 1);
  EXPECT_EQ(c.jobs_removed, 1);
}

TEST_F(StateModeTest, AFailedStateListingKeepsTheViewAndTheNextPollIsFull) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.fail_job_states = absl::UnavailableError("squeue: Unable to contact slurm controller");
  EXPECT_FALSE(poller.PollOnce(t0_ + absl::Seconds(2)).ok());
  EXPECT_EQ(poller.View()->jobs->size(), 2u);
  api_.fail_job_states = absl::OkStatus();
  EXPECT_THAT(Poll(poller, 4), ElementsAre("ListJobStates", "ListJobs", "ListNodes"));
}

// A state listing this build cannot read (kInternal) lists the jobs in full for that poll.
TEST_F(StateModeTest, AnUnreadableStateListingListsJobsInFull) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  api_.fail_job_states = absl::InternalError("jobs/state/ lists a job without a usable job_id");
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c), ElementsAre("ListJobStates", "ListJobs", "ListNodes"));
  EXPECT_EQ(poller.View()->jobs->size(), 2u);
  EXPECT_EQ(poller.stats().failures, 0u);
}

// Issue 16's lesson: an empty listing while the view has jobs removes nothing by itself.
TEST_F(StateModeTest, AnEmptyStateListingIsCheckedWithAFullListing) {
  SlurmPoller poller(api_);
  Poll(poller, 0);
  const std::map<uint32_t, SlurmJob> all = api_.jobs;
  api_.jobs.clear();
  PollChanges c;
  EXPECT_THAT(Poll(poller, 2, &c), ElementsAre("ListJobStates", "ListJobs", "ListNodes"));
  EXPECT_EQ(c.jobs_removed, 2);  // really gone: the full listing says so
  EXPECT_EQ(poller.stats().confirming_fetches, 1u);
  api_.jobs = all;
  EXPECT_THAT(Poll(poller, 4), ElementsAre("ListJobStates", "GetJob 1", "GetJob 2", "ListNodes"));
}

TEST_F(StateModeTest, WithoutAStateListingJobsArePolledByUpdateTimeForGood) {
  api_.lists_job_states = false;
  SlurmPoller poller(api_);
  EXPECT_THAT(Poll(poller, 0), ElementsAre("ListJobs", "ListNodes", "ListPartitions"));
  api_.lists_job_states = true;  // not asked again
  EXPECT_THAT(Poll(poller, 2), ElementsAre("ListJobs@101", "ListNodes"));
}

TEST_F(StateModeTest, JobStatesOffKeepsUpdateTime) {
  SlurmPoller poller(api_, PollerOptions{.job_states = false});
  EXPECT_THAT(Poll(poller, 0), ElementsAre("ListJobs", "ListNodes", "ListPartitions"));
  EXPECT_THAT(Poll(poller, 2), ElementsAre("ListJobs@101", "ListNodes"));
}

// The poller over RestSlurmApi and a scripted slurmrestd that answers with recorded answers of a
// real server: first poll full (jobs, nodes, partitions), later polls incremental.
class PollerOverRecordedAnswersTest : public ::testing::Test {
 protected:
  // A RestSlurmApi of `v` over a scripted slurmrestd, its poller, and the first (full) poll
  // answered with `first` (jobs, nodes, partitions).
  void Start(ApiVersion v, std::vector<HttpResponse> first) {
    api_ = testing::ScriptedSlurmApi(v, t_);
    poller_ = std::make_unique<SlurmPoller>(*api_, PollerOptions{.job_states = false});  // update_time mode
    t_->answers = std::move(first);
    ASSERT_TRUE(poller_->PollOnce(t0_).ok());
  }
  // The job ids of the view.
  std::vector<uint32_t> ViewJobs(const SlurmPoller& p) const {
    std::vector<uint32_t> ids;
    for (const auto& [id, j] : *p.View()->jobs) ids.push_back(id);
    return ids;
  }
  std::string LastJobsPath() const {
    for (auto it = t_->seen.rbegin(); it != t_->seen.rend(); ++it)
      if (it->path.find("/jobs/") != std::string::npos) return it->path;
    return "";
  }
  // The first poll's answers: jobs, nodes, partitions, recorded on 25.11.7.
  static std::vector<HttpResponse> Full2511() {
    return {Recorded(200, "slurm-25.11/jobs.json"), Recorded(200, "slurm-25.11/nodes.json"),
            Recorded(200, "slurm-25.11/partitions.json"), NoReservations()};
  }
  // Issue 29: every poll ends with the reservations listing; none here.
  static HttpResponse NoReservations() { return HttpResponse{200, R"({"reservations": []})"}; }
  // Polls once more with `answers` (jobs, then nodes; the reservations answer is added) at
  // t0 + `seconds`.
  absl::StatusOr<PollChanges> PollAgain(std::vector<HttpResponse> answers, int seconds) {
    answers.push_back(NoReservations());
    t_->answers = std::move(answers);
    return poller_->PollOnce(t0_ + absl::Seconds(seconds));
  }
  std::unique_ptr<SlurmApi> api_;
  std::unique_ptr<SlurmPoller> poller_;
  ScriptedTransport* t_ = nullptr;
  const absl::Time t0_ = absl::FromUnixSeconds(1795368330);
};

// Slurm 22.05 (v0.0.38): "unchanged" is HTTP 304 with an empty body (raw-22.05 fixtures are its
// real answers). It has no last_update: the next update_time is the poll's local start.
TEST_F(PollerOverRecordedAnswersTest, UnchangedAnswersOf2205KeepTheView) {
  Start(ApiVersion::kV0038, {Recorded(200, "raw-22.05/jobs38.json"), Recorded(200, "raw-22.05/nodes38.json"),
                             Recorded(200, "raw-22.05/parts38.json"), NoReservations()});
  const std::vector<uint32_t> all = ViewJobs(*poller_);
  ASSERT_EQ(all.size(), 3u);
  for (int i = 1; i <= 3; ++i) {
    absl::StatusOr<PollChanges> c = PollAgain({Recorded(304, ""), Recorded(304, "")}, 5 * i);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->any());
    EXPECT_EQ(LastJobsPath(), absl::StrCat("/slurm/v0.0.38/jobs/?update_time=", absl::ToUnixSeconds(t0_)));
    EXPECT_EQ(ViewJobs(*poller_), all);
    EXPECT_EQ(poller_->View()->nodes->size(), 8u);
  }
  EXPECT_EQ(poller_->stats().unchanged_job_answers, 3u);
  EXPECT_EQ(poller_->stats().confirming_fetches, 0u);
}

// Slurm 25.11 (v0.0.44): jobs answer "unchanged" with HTTP 200, an empty list, last_update 0
// and a warning (jobs-unchanged.json); nodes with 304. Recorded from a real 25.11.7.
TEST_F(PollerOverRecordedAnswersTest, UnchangedAnswersOf2511KeepTheView) {
  Start(ApiVersion::kV0044, Full2511());
  EXPECT_EQ(ViewJobs(*poller_), (std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(poller_->View()->nodes->size(), 4u);
  absl::StatusOr<PollChanges> c =
      PollAgain({Recorded(200, "slurm-25.11/jobs-unchanged.json"), Recorded(304, "")}, 5);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->any());
  // The server's last_update of the full answer is what the incremental request carries.
  EXPECT_EQ(LastJobsPath(), "/slurm/v0.0.44/jobs/?update_time=1795368320");
  EXPECT_EQ(poller_->stats().unchanged_job_answers, 1u);
  EXPECT_EQ(poller_->View()->nodes->size(), 4u);
}

// Issue 16: read as a listing, 25.11's "unchanged" answer emptied the view every other poll and
// the daemon saw every Slurm job vanish. Fed poll after poll, it loses no job, asks no full
// listing, and keeps asking from the same update_time.
TEST_F(PollerOverRecordedAnswersTest, The2511EmptyListAnswerLosesNoJob) {
  Start(ApiVersion::kV0044, Full2511());
  const std::shared_ptr<const SlurmView::Jobs> first = poller_->View()->jobs;
  ASSERT_EQ(first->size(), 9u);
  for (int i = 1; i <= 6; ++i) {
    const size_t requests = t_->seen.size();
    absl::StatusOr<PollChanges> c =
        PollAgain({Recorded(200, "slurm-25.11/jobs-unchanged.json"), Recorded(304, "")}, 5 * i);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->jobs_removed, 0) << "poll " << i;
    EXPECT_EQ(poller_->View()->jobs, first) << "poll " << i;  // the same table, not a copy
    EXPECT_EQ(t_->seen.size() - requests, 3u) << "poll " << i;  // jobs + nodes + reservations, no full listing
    EXPECT_EQ(LastJobsPath(), "/slurm/v0.0.44/jobs/?update_time=1795368320");
  }
  EXPECT_EQ(poller_->stats().unchanged_job_answers, 6u);
  EXPECT_EQ(poller_->stats().confirming_fetches, 0u);
}

// The safety net over real answers: an empty answer the adapter does not take for "unchanged"
// (here: 25.11's answer with a last_update and without the warning) removes nothing by itself;
// the full listing fetched at once keeps every job.
TEST_F(PollerOverRecordedAnswersTest, AnUnrecognisedEmptyAnswerIsCheckedWithAFullListing) {
  Start(ApiVersion::kV0044, Full2511());
  nlohmann::json odd = testing::ReadFixture("slurm-25.11/jobs-unchanged.json");
  odd["last_update"]["number"] = 1795368399;
  odd["warnings"] = nlohmann::json::array();
  absl::StatusOr<PollChanges> c =
      PollAgain({{200, odd.dump()}, Recorded(200, "slurm-25.11/jobs.json"), Recorded(304, "")}, 5);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->jobs_removed, 0);
  EXPECT_EQ(poller_->View()->jobs->size(), 9u);
  EXPECT_EQ(poller_->stats().confirming_fetches, 1u);
  ASSERT_EQ(t_->seen.size(), 4u + 4u);  // each poll lists reservations last (issue 29)
  EXPECT_EQ(t_->seen[5].path, "/slurm/v0.0.44/jobs/");  // the full listing
}

}  // namespace
}  // namespace onequeue::slurm

// Issue 27 part 1: what `oq simulate` reports beyond the means, on hand-built outcomes whose
// figures can be worked out by hand: nearest-rank wait percentiles, bounded slowdown and waits
// per job-size class, and each user's share of the work and of the summed wait.
#include <gtest/gtest.h>

#include <vector>

#include "queue/replay.h"

namespace onequeue::queue {
namespace {

JobOutcome Job(int64_t user, Time submit, Time start, Duration run, int64_t procs) {
  JobOutcome j;
  j.user = user;
  j.submit = submit;
  j.start = start;
  j.run = run;
  j.end = start + run;
  j.processors = procs;
  return j;
}

TEST(ReplayUserMetrics, NearestRankPercentiles) {
  std::vector<double> v = {5, 1, 4, 2, 3};  // sorted: 1 2 3 4 5
  EXPECT_DOUBLE_EQ(NearestRankPercentile(v, 0.5), 3);   // ceil(2.5) = 3rd
  EXPECT_DOUBLE_EQ(NearestRankPercentile(v, 0.99), 5);  // ceil(4.95) = 5th
  EXPECT_DOUBLE_EQ(NearestRankPercentile(v, 0.2), 1);   // exactly the 1st
  std::vector<double> empty;
  EXPECT_DOUBLE_EQ(NearestRankPercentile(empty, 0.5), 0);
  // 100 waits 1..100: p50 = 50, p95 = 95, p99 = 99.
  std::vector<JobOutcome> jobs;
  for (int i = 1; i <= 100; ++i) jobs.push_back(Job(1, 0, i, 100, 1));
  const ReplaySummary s = Summarise(jobs, 64, 10);
  EXPECT_DOUBLE_EQ(s.p50_wait, 50);
  EXPECT_DOUBLE_EQ(s.p95_wait, 95);
  EXPECT_DOUBLE_EQ(s.p99_wait, 99);
  EXPECT_DOUBLE_EQ(s.max_wait, 100);
}

TEST(ReplayUserMetrics, SizeClassesOfA64ProcessorMachine) {
  // Classes 1, 2-4 (1/16), 5-16 (1/4), 17-64.
  std::vector<JobOutcome> jobs = {
      Job(1, 0, 0, 100, 1),      // bsld 1
      Job(1, 0, 100, 100, 1),    // bsld 2
      Job(2, 0, 300, 100, 4),    // bsld 4
      Job(2, 0, 0, 100, 16),     // bsld 1
      Job(3, 0, 900, 100, 64),   // bsld 10
      Job(3, 0, 0, 100, 17),     // bsld 1
  };
  const ReplaySummary s = Summarise(jobs, 64, 10);
  ASSERT_EQ(s.size_classes.size(), 4u);
  EXPECT_EQ(s.size_classes[0].name, "1");
  EXPECT_EQ(s.size_classes[1].name, "2-4");
  EXPECT_EQ(s.size_classes[2].name, "5-16");
  EXPECT_EQ(s.size_classes[3].name, "17-64");
  EXPECT_EQ(s.size_classes[0].jobs, 2);
  EXPECT_DOUBLE_EQ(s.size_classes[0].average_bounded_slowdown, 1.5);
  EXPECT_DOUBLE_EQ(s.size_classes[0].max_wait, 100);
  EXPECT_EQ(s.size_classes[1].jobs, 1);
  EXPECT_DOUBLE_EQ(s.size_classes[1].average_bounded_slowdown, 4);
  EXPECT_EQ(s.size_classes[2].jobs, 1);
  EXPECT_DOUBLE_EQ(s.size_classes[2].average_bounded_slowdown, 1);
  EXPECT_EQ(s.size_classes[3].jobs, 2);
  EXPECT_DOUBLE_EQ(s.size_classes[3].average_bounded_slowdown, 5.5);
  EXPECT_DOUBLE_EQ(s.size_classes[3].average_wait, 450);
  EXPECT_DOUBLE_EQ(s.size_classes[3].p99_wait, 900);
  int64_t total = 0;
  for (const SizeClassSummary& c : s.size_classes) total += c.jobs;
  EXPECT_EQ(total, s.jobs);  // every job in exactly one class

  // A 4-processor machine has no "up to 1/16" class: 1, then 2-4.
  const ReplaySummary small = Summarise({Job(1, 0, 0, 10, 1), Job(1, 0, 0, 10, 3)}, 4, 10);
  ASSERT_EQ(small.size_classes.size(), 2u);
  EXPECT_EQ(small.size_classes[1].name, "2-4");
  EXPECT_EQ(small.size_classes[1].jobs, 1);
}

TEST(ReplayUserMetrics, UsersByShareOfTheSummedWait) {
  // User 7 waits 300 of the 400 seconds and does a quarter of the work.
  std::vector<JobOutcome> jobs = {
      Job(7, 0, 300, 100, 1),  // work 100, wait 300
      Job(8, 0, 100, 100, 2),  // work 200, wait 100
      Job(9, 0, 0, 100, 1),    // work 100, wait 0
  };
  const ReplaySummary s = Summarise(jobs, 4, 10);
  ASSERT_EQ(s.users.size(), 3u);
  EXPECT_EQ(s.users[0].user, 7);
  EXPECT_DOUBLE_EQ(s.users[0].wait_share, 0.75);
  EXPECT_DOUBLE_EQ(s.users[0].work_share, 0.25);
  EXPECT_DOUBLE_EQ(s.users[0].max_wait, 300);
  EXPECT_EQ(s.users[1].user, 8);
  EXPECT_DOUBLE_EQ(s.users[1].wait_share, 0.25);
  EXPECT_DOUBLE_EQ(s.users[1].work_share, 0.5);
  EXPECT_EQ(s.users[2].user, 9);
  EXPECT_DOUBLE_EQ(s.users[2].wait_share, 0);
}

// The user reaches the outcomes from the trace's field 12.
TEST(ReplayUserMetrics, UserComesFromTheTrace) {
  auto trace = ParseSwfStrict(
      "1 0 -1 100 2 -1 -1 2 100 -1 1 11 1 -1 1 -1 -1 -1\n"
      "2 0 -1 100 2 -1 -1 2 100 -1 1 12 1 -1 1 -1 -1 -1\n");
  ASSERT_TRUE(trace.ok()) << trace.status();
  ReplayOptions options;
  options.processors = 2;
  auto r = ReplayTrace(*trace, options);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->jobs.size(), 2u);
  EXPECT_EQ(r->jobs[0].user, 11);
  EXPECT_EQ(r->jobs[1].user, 12);
  ASSERT_EQ(r->summary.users.size(), 2u);
  EXPECT_EQ(r->summary.users[0].user, 12);  // waited 100 s behind job 1
  EXPECT_DOUBLE_EQ(r->summary.users[0].wait_share, 1.0);
}

}  // namespace
}  // namespace onequeue::queue

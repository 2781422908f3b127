// Trace replay: the metrics on hand-built outcomes, then the three policies on the hand-written
// trace test/queue/traces/backfill32.swf (consistent with each other, deterministic, and never
// breaking what each policy promises), then a random synthetic trace for the invariants.
#include "queue/replay.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

namespace onequeue::queue {
namespace {

using ::testing::HasSubstr;

std::string ReadSourceFile(const std::string& relative) {
  const char* root = std::getenv("ONEQUEUE_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

SwfTrace TestTrace() {
  const std::string text = ReadSourceFile("test/queue/traces/backfill32.swf");
  auto trace = ParseSwfStrict(text);
  EXPECT_TRUE(trace.ok()) << trace.status() << " (set ONEQUEUE_SOURCE_DIR to the repository root)";
  return trace.ok() ? *trace : SwfTrace{};
}

ReplayResult Replay(const SwfTrace& trace, ReplayPolicy policy) {
  ReplayOptions options;
  options.policy = policy;
  auto r = ReplayTrace(trace, options);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : ReplayResult{};
}

std::map<int64_t, JobOutcome> ByNumber(const ReplayResult& r) {
  std::map<int64_t, JobOutcome> m;
  for (const JobOutcome& j : r.jobs) m[j.job_number] = j;
  return m;
}

// Independent of the planner: at no instant do running jobs hold more processors than exist.
void ExpectCapacityNeverExceeded(const ReplayResult& r) {
  std::map<Time, int64_t> delta;
  for (const JobOutcome& j : r.jobs) {
    if (j.end == j.start) continue;
    delta[j.start] += j.processors;
    delta[j.end] -= j.processors;
  }
  int64_t used = 0;
  for (const auto& [t, d] : delta) {
    used += d;
    ASSERT_LE(used, r.summary.processors) << "at t=" << t << " under " << ReplayPolicyName(r.policy);
  }
}

JobOutcome Outcome(Time submit, Time start, Duration run, int64_t procs) {
  JobOutcome j;
  j.submit = submit;
  j.start = start;
  j.run = run;
  j.end = start + run;
  j.processors = procs;
  return j;
}

TEST(ReplayMetrics, WaitBoundedSlowdownAndUtilisation) {
  // Bounded slowdown with tau = 10: max(1, (wait + run) / max(run, 10)).
  EXPECT_DOUBLE_EQ(Outcome(0, 0, 100, 1).BoundedSlowdown(10), 1.0);
  EXPECT_DOUBLE_EQ(Outcome(0, 100, 100, 1).BoundedSlowdown(10), 2.0);
  EXPECT_DOUBLE_EQ(Outcome(0, 20, 2, 1).BoundedSlowdown(10), 2.2);   // short job: tau bounds it
  EXPECT_DOUBLE_EQ(Outcome(0, 5, 0, 1).BoundedSlowdown(10), 1.0);    // max(1, 0.5)
  EXPECT_DOUBLE_EQ(Outcome(0, 50, 0, 1).BoundedSlowdown(10), 5.0);

  // Two jobs on 4 processors: [0,100) on 4, then [100,200) on 2.
  std::vector<JobOutcome> jobs = {Outcome(0, 0, 100, 4), Outcome(0, 100, 100, 2)};
  ReplaySummary s = Summarise(jobs, 4, 10);
  EXPECT_EQ(s.jobs, 2);
  EXPECT_DOUBLE_EQ(s.average_wait, 50);
  EXPECT_DOUBLE_EQ(s.max_wait, 100);
  EXPECT_DOUBLE_EQ(s.average_bounded_slowdown, 1.5);
  EXPECT_EQ(s.makespan, 200);
  EXPECT_DOUBLE_EQ(s.utilisation, (400.0 + 200.0) / (4.0 * 200.0));

  EXPECT_EQ(Summarise({}, 4, 10).jobs, 0);
  EXPECT_DOUBLE_EQ(Summarise({Outcome(0, 0, 0, 1)}, 4, 10).utilisation, 0);  // no makespan
}

TEST(ReplayPolicyNames, ParseAndPrint) {
  for (ReplayPolicy p : {ReplayPolicy::kFcfs, ReplayPolicy::kEasy, ReplayPolicy::kConservative}) {
    auto parsed = ParseReplayPolicy(ReplayPolicyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParseReplayPolicy("sjf");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("fcfs, easy or conservative"));
  EXPECT_EQ(ReplayQueueConfig(ReplayPolicy::kFcfs).backfill, BackfillMode::kNone);
  EXPECT_EQ(ReplayQueueConfig(ReplayPolicy::kEasy).reservation_depth, 1);
  EXPECT_EQ(ReplayQueueConfig(ReplayPolicy::kConservative).reservation_depth, 0);
}

class TestTraceReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_ = TestTrace();
    ASSERT_FALSE(trace_.jobs.empty());
    fcfs_ = Replay(trace_, ReplayPolicy::kFcfs);
    easy_ = Replay(trace_, ReplayPolicy::kEasy);
    conservative_ = Replay(trace_, ReplayPolicy::kConservative);
  }
  SwfTrace trace_;
  ReplayResult fcfs_, easy_, conservative_;
};

TEST_F(TestTraceReplay, EveryJobRunsOnceWithinCapacity) {
  for (const ReplayResult* r : {&fcfs_, &easy_, &conservative_}) {
    EXPECT_EQ(r->jobs.size(), trace_.jobs.size());
    EXPECT_TRUE(r->skipped.empty());
    EXPECT_EQ(r->summary.processors, 32);
    EXPECT_EQ(r->machine_source, "header MaxProcs");
    for (const JobOutcome& j : r->jobs) {
      EXPECT_GE(j.start, j.submit) << "job " << j.job_number;
      EXPECT_FALSE(j.cut_at_limit);
    }
    ExpectCapacityNeverExceeded(*r);
  }
}

TEST_F(TestTraceReplay, BackfillingNeverLowersUtilisationAndHelpsHere) {
  EXPECT_GE(easy_.summary.utilisation, fcfs_.summary.utilisation);
  EXPECT_GE(conservative_.summary.utilisation, fcfs_.summary.utilisation);
  // The trace is written so that backfilling matters.
  EXPECT_LT(easy_.summary.average_wait, fcfs_.summary.average_wait);
  EXPECT_LT(conservative_.summary.average_wait, fcfs_.summary.average_wait);
  EXPECT_GT(easy_.summary.backfilled, 0);
  EXPECT_GT(conservative_.summary.backfilled, 0);
  EXPECT_EQ(fcfs_.summary.backfilled, 0);
}

TEST_F(TestTraceReplay, FcfsStartsJobsInSubmitOrder) {
  std::vector<JobOutcome> jobs = fcfs_.jobs;
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobOutcome& a, const JobOutcome& b) {
    return std::tie(a.submit, a.job_number) < std::tie(b.submit, b.job_number);
  });
  for (size_t i = 1; i < jobs.size(); ++i) {
    EXPECT_LE(jobs[i - 1].start, jobs[i].start) << "job " << jobs[i].job_number << " overtook "
                                                << jobs[i - 1].job_number;
  }
}

TEST_F(TestTraceReplay, EasyNeverDelaysTheFirstQueuedJob) {
  // The first job of the trace starts at once under both.
  EXPECT_EQ(ByNumber(easy_)[1].start, ByNumber(fcfs_)[1].start);
  // Whenever a job is first in the queue and waiting, it holds the reservation: backfilled jobs
  // never push it past the start the planner promised it then. The promise itself is what FCFS
  // would give it from that state (all earlier jobs running, their limits known).
  int heads = 0;
  for (const JobOutcome& j : easy_.jobs) {
    if (!j.was_head_waiting) continue;
    ++heads;
    ASSERT_TRUE(j.head_estimate.has_value()) << "job " << j.job_number;
    EXPECT_LE(j.start, *j.head_estimate) << "job " << j.job_number;
  }
  EXPECT_GT(heads, 5);
}

// Classic conservative backfilling (keep_reservations): every job starts no later than the first
// start the planner promised it.
TEST_F(TestTraceReplay, ConservativeWithKeptReservationsNeverDelaysAnyJob) {
  ReplayOptions options;
  options.policy = ReplayPolicy::kConservative;
  options.keep_reservations = true;
  auto kept = ReplayTrace(trace_, options);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ExpectCapacityNeverExceeded(*kept);
  int reserved = 0;
  for (const JobOutcome& j : kept->jobs) {
    if (!j.first_estimate.has_value()) continue;  // started in its first cycle
    ++reserved;
    EXPECT_LE(j.start, *j.first_estimate) << "job " << j.job_number;
  }
  EXPECT_GT(reserved, 10);
  EXPECT_GE(kept->summary.utilisation, fcfs_.summary.utilisation);
}

// The planner's own conservative mode re-plans from scratch each cycle (like Slurm): the first
// queued job is never delayed, but a job further back can be, when an early completion lets the
// jobs ahead of it move into a new arrangement (docs/simulate.md has the numbers).
TEST_F(TestTraceReplay, ConservativeNeverDelaysTheFirstQueuedJob) {
  int heads = 0;
  for (const JobOutcome& j : conservative_.jobs) {
    if (!j.was_head_waiting) continue;
    ++heads;
    ASSERT_TRUE(j.head_estimate.has_value()) << "job " << j.job_number;
    EXPECT_LE(j.start, *j.head_estimate) << "job " << j.job_number;
  }
  EXPECT_GT(heads, 5);
}

TEST_F(TestTraceReplay, TheTextbookCasesOfTheTrace) {
  auto fcfs = ByNumber(fcfs_), easy = ByNumber(easy_), cons = ByNumber(conservative_);
  // Segment 1: job 3 backfills at once under EASY and conservative; FCFS keeps it behind job 2.
  EXPECT_EQ(easy[3].start, 20);
  EXPECT_EQ(cons[3].start, 20);
  EXPECT_EQ(fcfs[3].start, 1000);
  EXPECT_EQ(fcfs[2].start, 1000);
  EXPECT_EQ(easy[2].start, 1000);
  // Segment 2: conservative protects job 13's reservation and keeps job 14 waiting (EASY's side
  // of this segment has its own test above).
  EXPECT_EQ(cons[13].start, 12000);
  EXPECT_EQ(cons[14].start, 13000);
  EXPECT_EQ(fcfs[13].start, 12000);
  EXPECT_EQ(fcfs[14].start, 13000);
  // Segment 3: short jobs fill the holes that early completions open.
  EXPECT_EQ(easy[23].start, 20600);
  EXPECT_EQ(fcfs[23].start, 21500);
}

// Textbook EASY: job 14 fits in the 4 processors that job 12's reservation leaves spare, so it
// starts at once, and that delays job 13 (second in the queue) from 12000 to 12530. (This needs
// the reservation to leave the processors that are free now to backfill; a planner that reserves
// the free processors first makes EASY behave like conservative here.)
TEST_F(TestTraceReplay, EasyBackfillsIntoTheSpareProcessorsOfTheReservation) {
  auto easy = ByNumber(easy_);
  EXPECT_EQ(easy[14].start, 10030);
  EXPECT_EQ(easy[13].start, 12530);
  EXPECT_TRUE(easy[14].backfilled);
}

TEST_F(TestTraceReplay, IsDeterministic) {
  for (ReplayPolicy p : {ReplayPolicy::kFcfs, ReplayPolicy::kEasy, ReplayPolicy::kConservative}) {
    ReplayResult again = Replay(trace_, p);
    const ReplayResult& first = p == ReplayPolicy::kFcfs ? fcfs_ : p == ReplayPolicy::kEasy ? easy_ : conservative_;
    ASSERT_EQ(again.jobs.size(), first.jobs.size());
    for (size_t i = 0; i < again.jobs.size(); ++i) {
      EXPECT_EQ(again.jobs[i].start, first.jobs[i].start) << ReplayPolicyName(p) << " job " << again.jobs[i].job_number;
    }
    EXPECT_EQ(again.summary.average_wait, first.summary.average_wait);
    EXPECT_EQ(again.summary.cycles, first.summary.cycles);
  }
}

TEST(Replay, SkipsWhatItCannotReplayAndSaysWhy) {
  const std::string text =
      "; MaxProcs: 4\n"
      "1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 1 -1 -1\n"
      "2 0 -1 10 -1 -1 -1 -1 20 -1 1 1 1 -1 1 1 -1 -1\n"  // no processor count
      "3 0 -1 -1 2 -1 -1 2 20 -1 1 1 1 -1 1 1 -1 -1\n"    // no run time
      "4 0 -1 10 8 -1 -1 8 20 -1 1 1 1 -1 1 1 -1 -1\n"    // wider than the machine
      "5 0 -1 50 1 -1 -1 1 30 -1 1 1 1 -1 1 1 -1 -1\n"    // runs past its limit: cut at 30
      "6 0 -1 10 1 -1 -1 1 -1 -1 1 1 1 -1 1 1 -1 -1\n";   // no limit: its run time is the limit
  auto trace = ParseSwfStrict(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  auto r = ReplayTrace(*trace, {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->skipped.size(), 3u);
  EXPECT_THAT(r->skipped[0].why, HasSubstr("unknown processor count"));
  EXPECT_EQ(r->skipped[0].line, 3);
  EXPECT_THAT(r->skipped[1].why, HasSubstr("unknown run time"));
  EXPECT_THAT(r->skipped[2].why, HasSubstr("needs 8 processors; the machine has 4"));
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_TRUE(r->jobs[1].cut_at_limit);
  EXPECT_EQ(r->jobs[1].run, 30);
  EXPECT_EQ(r->jobs[2].limit, 10);
  EXPECT_EQ(r->summary.skipped, 3);
  EXPECT_EQ(r->summary.cut_at_limit, 1);
}

TEST(Replay, MachineSizeComesFromTheHeaderTheOptionOrTheWidestJob) {
  auto trace = ParseSwfStrict("1 0 -1 10 3 -1 -1 3 20 -1 1 1 1 -1 1 1 -1 -1\n");
  ASSERT_TRUE(trace.ok());
  auto r = ReplayTrace(*trace, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.processors, 3);
  EXPECT_EQ(r->machine_source, "widest job");
  trace->header.max_nodes = 6;
  r = ReplayTrace(*trace, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.processors, 6);
  EXPECT_EQ(r->machine_source, "header MaxNodes");
  ReplayOptions options;
  options.processors = 12;
  r = ReplayTrace(*trace, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.processors, 12);
  options.processors = 0;
  EXPECT_EQ(ReplayTrace(*trace, options).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReplayTrace(SwfTrace{}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// A random trace with bursts, short and long jobs and over-estimated limits: the same invariants
// on something nobody tuned by hand.
SwfTrace RandomTrace(uint64_t seed, int jobs, int64_t processors) {
  std::mt19937_64 rng(seed);
  SwfTrace t;
  t.header.max_procs = processors;
  Time submit = 0;
  for (int i = 1; i <= jobs; ++i) {
    submit += rng() % 4 == 0 ? 0 : rng() % 900;
    SwfJob j;
    j.job_number = i;
    j.submit_time = submit;
    j.requested_procs = 1 + rng() % processors;
    if (rng() % 2) j.requested_procs = 1 + rng() % 4;
    j.requested_time = 60 * (1 + rng() % 60);
    j.run_time = j.requested_time * static_cast<int64_t>(1 + rng() % 100) / 100;
    t.jobs.push_back(j);
  }
  return t;
}

TEST(Replay, RandomTracesKeepEveryPolicysPromise) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SwfTrace trace = RandomTrace(seed, 120, 24);
    ReplayResult fcfs = Replay(trace, ReplayPolicy::kFcfs);
    ReplayResult easy = Replay(trace, ReplayPolicy::kEasy);
    ReplayResult cons = Replay(trace, ReplayPolicy::kConservative);
    for (const ReplayResult* r : {&fcfs, &easy, &cons}) {
      ASSERT_EQ(r->jobs.size(), 120u);
      ExpectCapacityNeverExceeded(*r);
    }
    // The first queued job is never delayed by backfilling, under EASY and conservative alike.
    // (That EVERY conservative reservation holds is not checked here: the planner re-plans from
    // scratch each cycle, like Slurm, and when an early completion lets earlier jobs move
    // forward they can push a later job's reservation back; see docs/simulate.md.)
    for (const ReplayResult* r : {&easy, &cons}) {
      int heads = 0;
      for (const JobOutcome& j : r->jobs) {
        heads += j.was_head_waiting;
        if (j.was_head_waiting && j.head_estimate) {
          EXPECT_LE(j.start, *j.head_estimate) << ReplayPolicyName(r->policy) << " seed " << seed
                                               << " job " << j.job_number;
        }
      }
      EXPECT_GT(heads, 10) << "seed " << seed << ": the trace must make jobs wait";
    }
    EXPECT_GE(easy.summary.utilisation, fcfs.summary.utilisation * 0.95) << "seed " << seed;
    ReplayOptions kept_options;
    kept_options.policy = ReplayPolicy::kConservative;
    kept_options.keep_reservations = true;
    auto kept = ReplayTrace(trace, kept_options);
    ASSERT_TRUE(kept.ok()) << kept.status();
    ExpectCapacityNeverExceeded(*kept);
    for (const JobOutcome& j : kept->jobs) {
      if (j.first_estimate) {
        EXPECT_LE(j.start, *j.first_estimate) << "kept reservations, seed " << seed << " job " << j.job_number;
      }
    }
  }
}

}  // namespace
}  // namespace onequeue::queue

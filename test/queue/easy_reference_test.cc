// oq simulate's EASY (ReplayTrace over the node-level planner) against a textbook EASY written
// here from the literature (Lifka 1995; Mu'alem & Feitelson 2001), which shares nothing with the
// planner: it counts processors, keeps the queue in submit order, takes the requested times as
// limits, and at every event
//   1. starts jobs from the head of the queue while they fit;
//   2. gives the first job that does not fit a reservation at the shadow time (the earliest time
//      enough processors are free, running jobs ending at their start + limit), and counts the
//      extra processors (free at the shadow time beyond what the head needs);
//   3. starts any later job that fits now and either ends by the shadow time or needs no more
//      than the extra processors (which it then uses up).
// Every job must start at the same time in both, on random traces of many shapes.
//
// The planner's other rules would make exact matching impossible: reservation starts rounded up
// to `resolution` and nothing reserved beyond `window`. ReplayTrace already configures them away
// (ReplayQueueConfig: resolution 1 s, a window of 20 years, longer than any trace here), and the
// test checks that it still does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "queue/replay.h"
#include "queue/swf.h"

namespace onequeue::queue {
namespace {

struct TextbookJob {
  int64_t number = 0;
  Time submit = 0;
  int64_t procs = 0;
  Duration limit = 0;  // the requested time (the run time when none was requested)
  Duration run = 0;    // min(run time, limit)
};

struct TextbookResult {
  std::map<int64_t, Time> start;  // job number -> start
  int64_t backfilled = 0;           // started by rule 3
  int64_t into_extra = 0;           // of those, ending after the shadow time (used extra processors)
};

TextbookResult TextbookEasy(std::vector<TextbookJob> jobs, int64_t processors) {
  std::sort(jobs.begin(), jobs.end(), [](const TextbookJob& a, const TextbookJob& b) {
    return a.submit != b.submit ? a.submit < b.submit : a.number < b.number;
  });
  struct Running {
    Time expected_end;  // start + limit: all a scheduler knows
    Time end;           // start + run: when it really ends
    int64_t procs;
  };
  TextbookResult result;
  std::vector<Running> running;
  std::vector<const TextbookJob*> queue;  // waiting, in submit order
  int64_t free = processors;
  size_t next = 0;
  while (next < jobs.size() || !running.empty()) {
    Time now = next < jobs.size() ? jobs[next].submit : kForever;
    for (const Running& r : running) now = std::min(now, r.end);
    // Every event of this instant: completions, then arrivals; then one scheduling pass.
    std::erase_if(running, [&](const Running& r) {
      if (r.end > now) return false;
      free += r.procs;
      return true;
    });
    while (next < jobs.size() && jobs[next].submit <= now) queue.push_back(&jobs[next++]);
    auto launch = [&](const TextbookJob& j) {
      result.start[j.number] = now;
      free -= j.procs;
      running.push_back(Running{now + j.limit, now + j.run, j.procs});
    };
    size_t first_waiting = 0;
    while (first_waiting < queue.size() && queue[first_waiting]->procs <= free) {
      launch(*queue[first_waiting++]);
    }
    queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(first_waiting));
    if (queue.empty()) continue;
    const TextbookJob& head = *queue.front();
    std::vector<Running> by_end = running;
    std::sort(by_end.begin(), by_end.end(),
              [](const Running& a, const Running& b) { return a.expected_end < b.expected_end; });
    int64_t available = free;
    Time shadow = now;
    for (size_t k = 0; available < head.procs;) {
      shadow = by_end.at(k).expected_end;
      while (k < by_end.size() && by_end[k].expected_end == shadow) available += by_end[k++].procs;
    }
    int64_t extra = available - head.procs;
    std::vector<const TextbookJob*> still_waiting = {&head};
    for (size_t i = 1; i < queue.size(); ++i) {
      const TextbookJob& j = *queue[i];
      const bool ends_by_shadow = now + j.limit <= shadow;
      if (j.procs <= free && (ends_by_shadow || j.procs <= extra)) {
        launch(j);
        ++result.backfilled;
        if (!ends_by_shadow) {
          extra -= j.procs;
          ++result.into_extra;
        }
      } else {
        still_waiting.push_back(&j);
      }
    }
    queue = std::move(still_waiting);
  }
  return result;
}

std::vector<TextbookJob> JobsOf(const SwfTrace& trace) {
  std::vector<TextbookJob> jobs;
  for (const SwfJob& s : trace.jobs) {
    TextbookJob j;
    j.number = s.job_number;
    j.submit = s.submit_time;
    j.procs = s.Processors();
    j.limit = s.requested_time >= 0 ? s.requested_time : s.run_time;
    j.run = std::min(s.run_time, j.limit);
    jobs.push_back(j);
  }
  return jobs;
}

// Random traces of different shapes: machine size, how wide the jobs are, how bursty arrivals
// are, how load compares with capacity, how far limits over-estimate run times. Limits come from
// a few round values (equal expected ends, so shadow times shared by several jobs), some run
// times equal their limit (completions at a reservation's start), some jobs give no limit.
SwfTrace RandomShapeTrace(uint64_t seed, int jobs) {
  std::mt19937_64 rng(seed);
  auto below = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  const int64_t sizes[] = {8, 16, 24, 32, 64, 100};
  const int64_t processors = sizes[below(6)];
  const int64_t gap = 30 + below(600);         // mean arrival gap scale: the load
  const int burst_percent = static_cast<int>(below(60));
  const int wide_percent = 5 + static_cast<int>(below(40));
  const int exact_percent = static_cast<int>(below(40));
  SwfTrace t;
  t.header.max_procs = processors;
  Time submit = 0;
  for (int i = 1; i <= jobs; ++i) {
    if (below(100) >= burst_percent) submit += below(2 * gap);
    SwfJob j;
    j.job_number = i;
    j.submit_time = submit;
    if (below(100) < wide_percent) {
      j.requested_procs = processors / 2 + 1 + below(processors - processors / 2);
    } else if (below(2) == 0) {
      j.requested_procs = 1 + below(std::min<int64_t>(4, processors));
    } else {
      j.requested_procs = 1 + below(processors / 2);
    }
    j.requested_time = below(3) == 0 ? 60 * (1 + below(60)) : 300 * (1 + below(12));
    const int kind = static_cast<int>(below(100));
    if (kind < exact_percent) {
      j.run_time = j.requested_time;
    } else {
      j.run_time = std::max<int64_t>(1, j.requested_time * (1 + below(100)) / 100);
    }
    if (below(20) == 0) {
      j.run_time = 1 + below(3600);  // no limit given: the run time is the limit
      j.requested_time = -1;
    } else if (below(30) == 0) {
      j.run_time = j.requested_time + 1 + below(600);  // runs past its limit: cut there
    }
    t.jobs.push_back(j);
  }
  return t;
}

// Compares every job's start; returns how many jobs were compared.
int64_t ExpectSameStarts(const SwfTrace& trace, const std::string& name, TextbookResult* textbook) {
  ReplayOptions options;
  options.policy = ReplayPolicy::kEasy;
  auto replay = ReplayTrace(trace, options);
  EXPECT_TRUE(replay.ok()) << name << ": " << replay.status();
  if (!replay.ok()) return 0;
  EXPECT_TRUE(replay->skipped.empty()) << name;
  *textbook = TextbookEasy(JobsOf(trace), replay->summary.processors);
  EXPECT_EQ(replay->jobs.size(), textbook->start.size()) << name;
  int mismatches = 0;
  for (const JobOutcome& j : replay->jobs) {
    auto it = textbook->start.find(j.job_number);
    const Time expected = it == textbook->start.end() ? -1 : it->second;
    if (j.start != expected && ++mismatches <= 3) {
      ADD_FAILURE() << name << ": job " << j.job_number << " (" << j.processors
                    << " processors, submit " << j.submit << ", limit " << j.limit
                    << ") starts at " << j.start << " in oq simulate --policy easy, at " << expected
                    << " in textbook EASY";
    }
  }
  EXPECT_EQ(mismatches, 0) << name << ": jobs whose start differs";
  return static_cast<int64_t>(replay->jobs.size());
}

TEST(TextbookEasyReference, ReplayConfigLeavesNothingToRoundOrCutOff) {
  const QueueConfig c = ReplayQueueConfig(ReplayPolicy::kEasy);
  EXPECT_EQ(c.resolution, 1);
  EXPECT_GE(c.window, Duration{10} * 365 * 24 * 3600);  // every trace below spans < 1 year
  EXPECT_EQ(c.reservation_depth, 1);
  EXPECT_EQ(c.backfill, BackfillMode::kBackfill);
}

// The reference itself, on the instant: 100 processors, 10 free; a job of 80 ends at
// T = 100, one of 10 at 500; the head needs 80 (reserved at T, 10 spare); a 10-processor job
// ending after T starts now into the spare ones, and the shorter job behind it cannot.
TEST(TextbookEasyReference, BackfillsIntoTheSpareProcessors) {
  std::vector<TextbookJob> jobs = {{1, 0, 80, 100, 100},  {2, 0, 10, 500, 500},
                                   {3, 1, 80, 100, 100},  {4, 2, 10, 300, 300},
                                   {5, 3, 5, 50, 50}};
  // Job 2 holds 10 until 500; 10 processors are free from t = 0.
  TextbookResult r = TextbookEasy(jobs, 100);
  EXPECT_EQ(r.start[1], 0);
  EXPECT_EQ(r.start[2], 0);
  EXPECT_EQ(r.start[3], 100);
  EXPECT_EQ(r.start[4], 2);    // into the spare processors
  EXPECT_EQ(r.start[5], 200);  // nothing free at 3, nor at 100 once job 3 runs; job 3 ends at 200
}

TEST(TextbookEasyReference, EveryStartMatchesOnRandomTraces) {
  constexpr int kTraces = 120;
  constexpr int kJobs = 250;
  int64_t compared = 0, backfilled = 0, into_extra = 0;
  for (uint64_t seed = 1; seed <= kTraces; ++seed) {
    TextbookResult textbook;
    compared += ExpectSameStarts(RandomShapeTrace(seed, kJobs), "seed " + std::to_string(seed),
                                 &textbook);
    backfilled += textbook.backfilled;
    into_extra += textbook.into_extra;
    if (HasFailure()) break;  // one trace's report is enough
  }
  // The traces exercise both backfill rules (ends by the shadow time; uses extra processors).
  EXPECT_GT(backfilled, 1000);
  EXPECT_GT(into_extra, 200);
  if (HasFailure()) return;
  std::cout << "[ textbook EASY ] " << kTraces << " random traces, " << compared
            << " jobs, every start equal; " << backfilled << " backfilled, " << into_extra
            << " of them into the reservation's extra processors\n";
}

// The hand-written trace of docs/simulate.md as well (segment 2 is the spare-processor case).
TEST(TextbookEasyReference, EveryStartMatchesOnTheTestTrace) {
  const char* root = std::getenv("ONEQUEUE_SOURCE_DIR");
  std::ifstream in(std::string(root ? root : ".") + "/test/queue/traces/backfill32.swf");
  std::stringstream text;
  text << in.rdbuf();
  auto trace = ParseSwfStrict(text.str());
  ASSERT_TRUE(trace.ok()) << trace.status() << " (set ONEQUEUE_SOURCE_DIR to the repository root)";
  TextbookResult textbook;
  EXPECT_EQ(ExpectSameStarts(*trace, "backfill32.swf", &textbook), 42);
}

}  // namespace
}  // namespace onequeue::queue

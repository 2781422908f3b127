// The daemon's log line for a cycle (cycle_log.h): what it did, its time and its phases.
#include "scheduler/cycle_log.h"

#include <gtest/gtest.h>

#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

TEST(CycleLogTest, ACycleThatActedSaysWhatItDidHowLongItTookAndWhere) {
  CycleStats s;
  s.pending = 100;
  s.waiting = 100;
  s.reported = 99;
  s.preemptions_started = 99;
  s.evictions = 297;
  const std::optional<std::string> line =
      DescribeCycle(s, absl::Milliseconds(1480),
                    {{"snapshot", absl::Milliseconds(2)}, {"plan", absl::Microseconds(5900)}, {"act", absl::Milliseconds(1472)}});
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line,
            "cycle: 100 pending (0 Slurm), 0 bound, 0 Slurm jobs started, 100 waiting (99 reported, 0 Slurm held), "
            "99 preemptions, 297 evictions, 0 requeued, 0 lent, 0 reclaimed, 0 returned, 0 bind errors; "
            "1480 ms (snapshot 2, plan 5, act 1472)");
}

TEST(CycleLogTest, ACycleThatDidNothingHasNoLine) {
  CycleStats s;
  s.pending = 3;
  s.waiting = 3;
  EXPECT_FALSE(DescribeCycle(s, absl::Milliseconds(4), {{"snapshot", absl::Milliseconds(1)}}).has_value());
}

}  // namespace
}  // namespace onequeue::scheduler

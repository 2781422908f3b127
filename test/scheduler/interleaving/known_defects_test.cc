// Issue 24: the defects the interleaving checker found, each as its shrunk scenario (seed, setup
// and steps, printed by Checker::AsCode) that must run without a violation once the defect is
// fixed. DISABLED_ while the fix is open: the lead enables each test when its fix merges (and
// switches the defect's fault kinds back on in AMillionStepsKeepEveryInvariant).
#include <gtest/gtest.h>

#include "checker.h"

namespace onequeue::scheduler {
namespace {

using S = StepKind;

void ExpectClean(const Scenario& s) {
  const Checker checker(KnownOpenDefects::None());
  std::optional<Failure> f = checker.Run(s);
  EXPECT_FALSE(f.has_value()) << "(" << (f ? f->violation.invariant : ' ') << ") "
                              << (f ? f->violation.message : "") << "\n"
                              << checker.Story(s);
}

// H1 (issue 24), restart before the first Slurm poll: daemon #1 crashes after reserving n1
// (lent, Slurm job 1 running) for interactive pod ns/jupyter3; the restarted daemon's first cycle
// runs before its first poll and binds the pod on n1 beside job 1 -> (a).
TEST(KnownDefectsTest, DISABLED_H1_ARestartedDaemonBindsNothingBesideASlurmJobBeforeItsFirstPoll) {
  ExpectClean({841, {"placeholder", {2, 2, 1, 1}, 0, 0},
               {{S::kCycle, 24912}, {S::kInteractivePod, 27644}, {S::kCrashAt, 180}, {S::kPoll, 28589},
                {S::kCycle, 52621}, {S::kRestart, 27214}, {S::kCycle, 21558}}});
}

// KNOWN_DEFECT_TESTS

}  // namespace
}  // namespace onequeue::scheduler

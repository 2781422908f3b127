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

// KNOWN_DEFECT_TESTS

}  // namespace
}  // namespace onequeue::scheduler

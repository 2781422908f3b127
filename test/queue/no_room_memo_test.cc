// Issue 26: internal::NoRoomMemo, the earliest-placement search's memo of the nodes without room
// at its start, used as CyclePass::EarliestPlacement uses it (Begin, then KnownNoRoom before a
// Copies query and NoRoom after a 0). Each test makes one input of a remembered "no" change and
// checks that the memo no longer answers it: the node's blocks (Remove, Add), the start, the
// duration, the request.
#include <gtest/gtest.h>

#include <vector>

#include "queue/planner_memos.h"
#include "queue/profile.h"
#include "queue/resources.h"

namespace onequeue::queue {
namespace {

using internal::NoRoomMemo;

constexpr Time kNow = 1000;
constexpr Time kStart = 1600;  // a search's start, on the 60 s grid

Resources Cores(int64_t cpu) {
  Resources r;
  r[kCpu] = cpu;
  return r;
}

// Two 4-core nodes; node 0 is taken over [1500, 2000) by a reservation.
AvailabilityProfile TwoNodes() {
  AvailabilityProfile p({Cores(4), Cores(4)}, kNow, /*window=*/86400, /*resolution=*/60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{1500, 2000, Cores(4), WorkloadKind::kSlurmJob, true});
  return p;
}

// What EarliestPlacement does for one node: the memo's answer, else the profile's (remembered
// when it is 0).
int64_t CopiesAt(const AvailabilityProfile& p, NoRoomMemo& memo, NodeIndex n, Time t, Duration d,
                 const Resources& request) {
  if (memo.KnownNoRoom(n, t, p.NodeVersion(n))) return 0;
  const int64_t c = p.Copies(n, t, t + d, request, WorkloadKind::kSlurmJob, 1);
  if (c <= 0) memo.NoRoom(n, t, p.NodeVersion(n));
  return c;
}

TEST(NoRoomMemo, ANoIsKnownForTheSameStartAndNoShorterDuration) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  EXPECT_EQ(CopiesAt(p, memo, 1, kStart, 300, Cores(1)), 1);
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 600, p.size());
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
  EXPECT_FALSE(memo.KnownNoRoom(1, kStart, p.NodeVersion(1)));  // it had room: nothing kept
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart + 60, p.NodeVersion(0)));  // another time of the walk
}

// The stale entry that matters: a promise's placeholder taken back (Remove) frees the node, and
// the next search from the same start must see it (CyclePass::RemovePlaceholder).
TEST(NoRoomMemo, ARemoveOnTheNodeForgetsItsNo) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  ASSERT_TRUE(p.Remove(0, AvailabilityProfile::Block{1500, 2000, Cores(4), WorkloadKind::kSlurmJob, true}));
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 1);
}

TEST(NoRoomMemo, AnAddOnTheNodeForgetsItsNo) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  const uint32_t before = p.NodeVersion(0);
  p.Add(0, AvailabilityProfile::Block{3000, 4000, Cores(1), WorkloadKind::kSlurmJob, true});
  EXPECT_NE(p.NodeVersion(0), before);
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
}

TEST(NoRoomMemo, AnotherStartOrAShorterDurationStartsAfresh) {
  AvailabilityProfile p = TwoNodes();
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 0);
  // Both nos below are true (the reservation covers [1600, 1660) too), yet each is found by its
  // own query: the set starts afresh.
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 60, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 60, Cores(1)), 0);
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart + 60, 60, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart + 60, p.NodeVersion(0)));
}

// A no for d, found again for a shorter d', would be wrong when the block starts inside
// [t + d', t + d): the memo must not answer the shorter question from the longer one.
TEST(NoRoomMemo, ANoForALongDurationIsNotANoForAShortOne) {
  AvailabilityProfile p({Cores(4)}, kNow, 86400, 60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{2000, 3000, Cores(4), WorkloadKind::kSlurmJob, true});
  NoRoomMemo memo;
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 600, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 600, Cores(1)), 0);  // [1600, 2200) meets the block
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 1);  // [1600, 1900) does not
}

// Another request, kind or tenant has a set of its own: a no for 4 cores is no no for 1.
TEST(NoRoomMemo, EachRequestHasItsOwnSet) {
  AvailabilityProfile p({Cores(4)}, kNow, 86400, 60, false);
  p.SealBase();
  p.Add(0, AvailabilityProfile::Block{1500, 2000, Cores(2), WorkloadKind::kSlurmJob, true});
  NoRoomMemo memo;
  memo.Begin(Cores(4), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  ASSERT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(4)), 0);
  memo.Begin(Cores(1), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
  EXPECT_EQ(CopiesAt(p, memo, 0, kStart, 300, Cores(1)), 1);
  memo.Begin(Cores(4), WorkloadKind::kPodGroup, -1, kStart, 300, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
  memo.Begin(Cores(4), WorkloadKind::kSlurmJob, 3, kStart, 300, p.size());
  EXPECT_FALSE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
  memo.Begin(Cores(4), WorkloadKind::kSlurmJob, -1, kStart, 300, p.size());
  EXPECT_TRUE(memo.KnownNoRoom(0, kStart, p.NodeVersion(0)));
}

}  // namespace
}  // namespace onequeue::queue

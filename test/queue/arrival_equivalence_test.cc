// Issue 12 "cycles proportional to what changed": the daemon may plan workloads that arrived
// since the last full cycle with QueuePlanner::OnArrival instead of a full PlanCycle, but only if
// that decides for each arrival exactly what a full cycle would. These scenarios check it: after
// a full cycle, arrivals one by one (nothing departs, no node changes), each planned by OnArrival
// and, for reference, by a fresh full PlanCycle at the same time over the same world (the earlier
// decisions applied: starts running, the rest pending).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "queue/planner.h"
#include "queue/testing_builders.h"

namespace onequeue::queue {
namespace {

using testing::Cpu;
using testing::FindReservation;
using testing::FindStart;
using testing::FindWaiting;
using testing::MakeNode;
using testing::MakeRunning;
using testing::PendingBuilder;

// What a plan decided for one workload, comparable between the two paths. The queue position is
// kept apart: it counts the workloads of the cycle's queue ahead, and for OnArrival that queue
// still holds those that started since the full cycle (a full cycle sees them running).
struct Decision {
  bool starts = false;
  MemberNodes nodes;
  std::optional<Time> reserved_from;
  std::optional<Time> estimated_start;
  WaitReason reason = WaitReason::kPriority;
  int32_t position = 0;  // not compared
  bool operator==(const Decision& o) const {
    return starts == o.starts && nodes == o.nodes && reserved_from == o.reserved_from &&
           estimated_start == o.estimated_start && reason == o.reason;
  }
};

std::ostream& operator<<(std::ostream& os, const Decision& d) {
  os << (d.starts ? "starts on" : "waits");
  for (NodeIndex n : d.nodes) os << " n" << n;
  if (d.reserved_from) os << " reserved from " << *d.reserved_from;
  if (!d.starts) {
    os << " position " << d.position << " reason " << WaitReasonName(d.reason) << " estimate "
       << (d.estimated_start ? std::to_string(*d.estimated_start) : "none");
  }
  return os;
}

Decision FromPlan(const Plan& p, const std::string& id) {
  Decision d;
  if (const StartDecision* s = FindStart(p, id)) {
    d.starts = true;
    d.nodes = s->member_nodes;
    return d;
  }
  if (const ReserveDecision* r = FindReservation(p, id)) d.reserved_from = r->start;
  if (const WaitingStatus* w = FindWaiting(p, id)) {
    d.position = w->queue_position;
    d.estimated_start = w->estimated_start;
    d.reason = w->reason;
  }
  return d;
}

Decision FromDelta(const PlanDelta& delta) {
  Decision d;
  if (!delta.starts.empty()) {
    d.starts = true;
    d.nodes = delta.starts[0].member_nodes;
    return d;
  }
  if (!delta.reservations.empty()) d.reserved_from = delta.reservations[0].start;
  if (delta.waiting) {
    d.position = delta.waiting->queue_position;
    d.estimated_start = delta.waiting->estimated_start;
    d.reason = delta.waiting->reason;
  }
  return d;
}

QueueConfig DaemonLikeConfig() {
  QueueConfig c = testing::SubmitOrderConfig();  // age only: arrivals sort last, in order
  c.reservation_depth = 1;                       // EASY, as the daemon's default
  c.backfill_shortest_first = true;              // the daemon's default
  return c;
}

// Plans `arrivals` (each with its arrival time) after a full cycle at `t0` both ways and expects
// the same decision for each; returns how many OnArrival could answer (no full cycle needed).
int ExpectSameDecisions(const QueueConfig& config, const Snapshot& base, Time t0,
                        const std::vector<std::pair<PendingWorkload, Time>>& arrivals) {
  QueuePlanner incremental(config, nullptr);
  const Plan first = incremental.PlanCycle(std::make_shared<Snapshot>(base), t0);
  // The world as the reference cycles see it: the first plan's starts run from t0.
  Snapshot world = base;
  world.pending.clear();
  for (const PendingWorkload& w : base.pending) {
    const StartDecision* s = FindStart(first, w.id);
    if (s == nullptr) {
      world.pending.push_back(w);
      continue;
    }
    RunningWorkload r = MakeRunning(w.id, s->member_nodes[0], w.per_member, t0, t0 + *w.time_limit);
    r.allocations.clear();
    for (NodeIndex n : s->member_nodes) r.allocations.push_back(Allocation{n, w.per_member});
    world.running.push_back(std::move(r));
  }
  int answered = 0;
  int started_since_full_cycle = static_cast<int>(first.starts.size());
  for (const auto& [arrival, at] : arrivals) {
    absl::StatusOr<PlanDelta> delta = incremental.OnArrival(arrival, at);
    EXPECT_TRUE(delta.ok()) << delta.status();
    if (!delta.ok()) return answered;
    world.pending.push_back(arrival);
    QueuePlanner reference(config, nullptr);
    const Plan full = reference.PlanCycle(std::make_shared<Snapshot>(world), at);
    const Decision expected = FromPlan(full, arrival.id);
    // Nothing departed: what waited still waits, so the full cycle's only possible start is the
    // arrival's (what OnArrival leaves alone, a full cycle leaves alone too).
    for (const StartDecision& st : full.starts) EXPECT_EQ(st.workload, arrival.id) << "at " << at;
    if (delta->needs_full_cycle) {
      // The daemon runs a full cycle then; the incremental planner is rebuilt from it.
      incremental.PlanCycle(std::make_shared<Snapshot>(world), at);
      started_since_full_cycle = static_cast<int>(full.starts.size());
    } else {
      ++answered;
      const Decision got = FromDelta(*delta);
      EXPECT_EQ(got, expected) << arrival.id << " at " << at;
      // Arrivals sort last here (age only): every workload started since the full cycle is ahead.
      if (!got.starts) EXPECT_EQ(got.position - expected.position, started_since_full_cycle) << arrival.id;
      started_since_full_cycle += got.starts ? 1 : 0;
    }
    if (expected.starts) {  // it runs from now on, in both worlds
      world.pending.pop_back();
      RunningWorkload r = MakeRunning(arrival.id, expected.nodes[0], arrival.per_member, at, at + *arrival.time_limit);
      r.allocations.clear();
      for (NodeIndex n : expected.nodes) r.allocations.push_back(Allocation{n, arrival.per_member});
      world.running.push_back(std::move(r));
    }
  }
  return answered;
}

// Four 8-cpu nodes, busy until different times; a backlog whose head holds the reservation.
Snapshot BusyPool() {
  Snapshot s;
  s.nodes = {MakeNode("n0", 8000), MakeNode("n1", 8000), MakeNode("n2", 8000), MakeNode("n3", 8000)};
  s.running = {MakeRunning("R0", 0, Cpu(8000), 0, 1000), MakeRunning("R1", 1, Cpu(6000), 0, 1200),
               MakeRunning("R2", 2, Cpu(4000), 0, 1500), MakeRunning("R3", 3, Cpu(7000), 0, 2000)};
  s.pending = {PendingBuilder("head", 8000, 2).Limit(3600).Submit(10),  // two whole nodes: reserved
               PendingBuilder("mid", 8000).Limit(600).Submit(20),         // waits behind it
               PendingBuilder("small", 1000).Limit(100).Submit(30)};      // backfills now
  return s;
}

TEST(ArrivalEquivalence, ArrivalsBehindTheReservationGetWhatAFullCycleGivesThem) {
  std::vector<std::pair<PendingWorkload, Time>> arrivals = {
      // Free now: n1 2 cpus, n2 4, n3 1, less what "small" took.
      {PendingBuilder("a1", 1000).Limit(300).Submit(101), 101},
      {PendingBuilder("a2", 2000).Limit(5000).Submit(102), 102},  // would it delay the reservation?
      {PendingBuilder("a3", 4000).Limit(100).Submit(103), 103},
      {PendingBuilder("a4", 8000).Limit(100).Submit(104), 104},   // a whole node
      {PendingBuilder("a5", 1000).Limit(50).Submit(105), 105},
      {PendingBuilder("a6", 500).Limit(50).Submit(106), 106},
      {PendingBuilder("a7", 2000, 3).Limit(200).Submit(107), 107},  // a gang of 3
  };
  const int answered = ExpectSameDecisions(DaemonLikeConfig(), BusyPool(), 100, arrivals);
  EXPECT_EQ(answered, static_cast<int>(arrivals.size())) << "every arrival sorts behind the reservation";
}

TEST(ArrivalEquivalence, DeeperReservationsAndAFreePoolAgreeToo) {
  QueueConfig c = DaemonLikeConfig();
  c.reservation_depth = 3;
  Snapshot s = BusyPool();
  std::vector<std::pair<PendingWorkload, Time>> arrivals;
  for (int i = 0; i < 12; ++i) {
    arrivals.push_back({PendingBuilder("b" + std::to_string(i), 500 * (1 + i % 4)).Limit(60 + 40 * i).Submit(200 + i),
                        200 + i});
  }
  const int answered = ExpectSameDecisions(c, s, 199, arrivals);
  EXPECT_GT(answered, 0);
  // An empty pool: everything starts, both ways.
  Snapshot empty;
  empty.nodes = s.nodes;
  const int all = ExpectSameDecisions(c, empty, 0, {{PendingBuilder("e1", 8000).Limit(10).Submit(1), 1},
                                                    {PendingBuilder("e2", 4000, 2).Limit(10).Submit(2), 2}});
  EXPECT_EQ(all, 2);
}

}  // namespace
}  // namespace onequeue::queue

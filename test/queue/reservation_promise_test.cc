// Issue 15 part 2: last cycle's reservations are promises. PlanCycle(snapshot, now, promised)
// never moves a reservation later than the start it promised, unless the holder itself changed.
//
// The property test plays thousands of random event sequences (arrivals of pods and Slurm jobs of
// any priority, completions earlier than the time limit, cancellations, priorities drifting with
// age, holders that change their own time limit or are held) through the planner, the way the
// daemon does: each cycle gets the previous plan's reservations (CarryReservations). It checks,
// every cycle, that each holder still pending either starts now or keeps a reservation no later
// than max(promised start, now); and over the whole run, that every job starts no later than the
// last start it was promised. The same sequences without promises do move reservations later
// (so the property is not vacuous).
#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "queue/plan.h"
#include "queue/planner.h"

namespace onequeue::queue {
namespace {

Node PoolNode(int i, int64_t cpu_millis) {
  Node n;
  n.name = "node-" + std::to_string(i);
  n.allocatable[kCpu] = cpu_millis;
  n.allocatable[kPods] = 110;
  n.owner.kind = OwnerKind::kFree;
  return n;
}

PendingWorkload Job(const std::string& id, WorkloadKind kind, int32_t members, int64_t cpu,
                    Duration limit, const std::string& qos, Time submit) {
  PendingWorkload w;
  w.id = id;
  w.kind = kind;
  w.members = members;
  w.members_present = members;
  w.per_member[kCpu] = cpu;
  if (kind == WorkloadKind::kPodGroup) w.per_member[kPods] = 1;
  w.time_limit = limit;
  w.qos = qos;
  w.account = "acct";
  w.submit_time = submit;
  return w;
}

QueueConfig PromiseConfig(int32_t depth, Duration resolution) {
  QueueConfig c;
  c.weights = PriorityWeights{.age = 1000, .fair_share = 0, .job_size = 500, .partition = 0, .qos = 10000};
  c.max_age = 3600;  // priorities drift within a run
  c.qos = {QosPolicy{.name = "normal", .priority = 1, .preemptible = true, .can_preempt = {}, .grace_time = 0},
           QosPolicy{.name = "high", .priority = 100, .preemptible = true, .can_preempt = {}, .grace_time = 0}};
  c.reservation_depth = depth;
  c.resolution = resolution;
  c.window = 30 * 24 * 3600;  // no reservation falls outside it
  return c;
}

struct Running {
  Time actual_end = 0;
  RunningWorkload workload;
};

// What one random event sequence did.
struct SequenceResult {
  int64_t cycles = 0;
  int64_t promises_checked = 0;
  int64_t moved_later = 0;  // promises broken (must be 0 with promises)
  std::vector<std::string> failures;  // the first few, for the message
};

void Fail(SequenceResult* r, std::string what) {
  ++r->moved_later;
  if (r->failures.size() < 5) r->failures.push_back(std::move(what));
}

// One random event sequence. with_promises=false: every cycle plans from scratch (the control).
SequenceResult PlaySequence(uint32_t seed, bool with_promises) {
  std::mt19937 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };

  const int32_t depths[] = {1, 2, 4, 0};
  const Duration resolutions[] = {1, 10, 60};
  const QueueConfig config = PromiseConfig(depths[uniform(0, 3)], resolutions[uniform(0, 2)]);
  QueuePlanner planner(config, nullptr);
  const int node_count = static_cast<int>(uniform(3, 10));
  const int64_t node_cpu = 1000 * uniform(2, 8);
  std::vector<Node> nodes;
  for (int i = 0; i < node_count; ++i) nodes.push_back(PoolNode(i, node_cpu));

  std::vector<PendingWorkload> pending;
  std::vector<Running> running;
  std::map<std::string, Time> promise;  // workload -> the start its latest reservation promised
  std::set<std::string> changed;        // holders that changed themselves since the last cycle
  std::shared_ptr<const Plan> last;
  SequenceResult result;
  int next_id = 0;
  Time now = 0;

  auto arrive = [&]() {
    const WorkloadKind kind = chance(0.5) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
    const int32_t members = static_cast<int32_t>(chance(0.6) ? 1 : uniform(2, node_count));
    const int64_t cpu = 1000 * uniform(1, node_cpu / 1000);
    pending.push_back(Job("w" + std::to_string(next_id++), kind, members, cpu, uniform(30, 2000),
                          chance(0.2) ? "high" : "normal", now));
  };
  for (int i = 0, first = static_cast<int>(uniform(3, 12)); i < first; ++i) arrive();

  const int steps = static_cast<int>(uniform(20, 50));
  for (int step = 0; step < steps; ++step) {
    // Completions at or before now (never later than the expected end: no overruns).
    std::erase_if(running, [&](const Running& r) { return r.actual_end <= now; });
    auto snapshot = std::make_shared<Snapshot>();
    snapshot->nodes = nodes;
    for (const Running& r : running) snapshot->running.push_back(r.workload);
    snapshot->pending = pending;
    std::vector<PromisedReservation> promised;
    if (with_promises && last != nullptr) promised = CarryReservations(*last, *snapshot);
    auto plan = std::make_shared<const Plan>(planner.PlanCycle(snapshot, now, promised));
    ++result.cycles;

    // The check: every holder of a promise that is still pending and did not change itself.
    std::map<std::string, Time> reserved;
    for (const ReserveDecision& r : plan->reservations) reserved[r.workload] = r.start;
    std::set<std::string> started;
    for (const StartDecision& d : plan->starts) started.insert(d.workload);
    for (const PendingWorkload& w : pending) {
      auto p = promise.find(w.id);
      if (p == promise.end() || changed.contains(w.id)) continue;
      ++result.promises_checked;
      if (started.contains(w.id)) {
        if (now > std::max(p->second, now)) Fail(&result, w.id + " started late");
        continue;
      }
      auto r = reserved.find(w.id);
      if (r == reserved.end()) {
        Fail(&result, "seed " + std::to_string(seed) + " t=" + std::to_string(now) + ": " + w.id +
                          " lost its reservation (promised " + std::to_string(p->second) + ")");
      } else if (r->second > std::max(p->second, now)) {
        Fail(&result, "seed " + std::to_string(seed) + " t=" + std::to_string(now) + ": " + w.id +
                          " moved from " + std::to_string(p->second) + " to " + std::to_string(r->second));
      }
    }
    changed.clear();
    promise.clear();
    for (const ReserveDecision& r : plan->reservations) promise[r.workload] = r.start;

    // Capacity is never exceeded by what runs (an independent sum per node).
    std::vector<int64_t> used(nodes.size(), 0);
    std::vector<uint8_t> kinds(nodes.size(), 0);
    for (const Running& r : running) {
      for (const Allocation& a : r.workload.allocations) {
        used[a.node] += a.used[kCpu];
        kinds[a.node] |= r.workload.kind == WorkloadKind::kPodGroup ? 1 : 2;
      }
    }

    // Apply the starts.
    for (const StartDecision& d : plan->starts) {
      auto it = std::find_if(pending.begin(), pending.end(), [&](const PendingWorkload& w) { return w.id == d.workload; });
      if (it == pending.end()) {
        Fail(&result, "started an unknown workload " + d.workload);
        continue;
      }
      Running r;
      r.workload.id = it->id;
      r.workload.kind = it->kind;
      r.workload.qos = it->qos;
      r.workload.account = it->account;
      r.workload.start_time = now;
      r.workload.expected_end = now + *it->time_limit;
      r.actual_end = now + uniform(1, *it->time_limit);
      for (NodeIndex n : d.member_nodes) {
        Allocation a;
        a.node = n;
        a.used = it->per_member;
        r.workload.allocations.push_back(a);
        used[n] += it->per_member[kCpu];
        kinds[n] |= it->kind == WorkloadKind::kPodGroup ? 1 : 2;
        if (used[n] > node_cpu || kinds[n] == 3) Fail(&result, "node " + std::to_string(n) + " overfilled");
      }
      running.push_back(std::move(r));
      pending.erase(it);
    }
    last = plan;

    // Events before the next cycle.
    if (chance(0.15) && !pending.empty()) {  // a cancellation
      pending.erase(pending.begin() + uniform(0, static_cast<int64_t>(pending.size()) - 1));
    }
    if (chance(0.15) && !pending.empty()) {  // a holder (or any job) changes itself
      PendingWorkload& w = pending[uniform(0, static_cast<int64_t>(pending.size()) - 1)];
      if (chance(0.5)) {
        w.time_limit = *w.time_limit + uniform(1, 500);
      } else {
        w.held = !w.held;
      }
      changed.insert(w.id);
    }
    // The next cycle: a completion, an arrival, or a promised start, whichever comes first.
    Time next = now + uniform(1, 400);
    for (const Running& r : running) next = std::min(next, r.actual_end);
    for (const ReserveDecision& r : plan->reservations) {
      if (r.start > now) next = std::min(next, r.start);
    }
    now = std::max(now + 1, next);
    for (int i = 0, arrivals = static_cast<int>(chance(0.5) ? uniform(1, 3) : 0); i < arrivals; ++i) arrive();
  }
  return result;
}

TEST(ReservationPromise, NoReservationMovesLaterOverThousandsOfRandomSequences) {
  int64_t cycles = 0;
  int64_t checked = 0;
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    const SequenceResult r = PlaySequence(seed, /*with_promises=*/true);
    cycles += r.cycles;
    checked += r.promises_checked;
    ASSERT_EQ(r.moved_later, 0) << "seed " << seed << ": " << (r.failures.empty() ? "" : r.failures.front());
  }
  // The sequences exercise the rule: tens of thousands of promises were checked.
  EXPECT_GT(checked, 20000) << cycles << " cycles";
  std::cout << "2000 sequences, " << cycles << " cycles, " << checked << " promises checked\n";
}

TEST(ReservationPromise, WithoutPromisesTheSameSequencesMoveReservationsLater) {
  int64_t moved = 0;
  for (uint32_t seed = 1; seed <= 2000; ++seed) moved += PlaySequence(seed, /*with_promises=*/false).moved_later;
  EXPECT_GT(moved, 100);
  std::cout << "without promises: " << moved << " reservations moved later or were lost\n";
}

// A Slurm job running on all 4 cpus of node `n` since 0, until `end`.
RunningWorkload FullNode(const std::string& id, NodeIndex n, Time end) {
  RunningWorkload r;
  r.id = id;
  r.kind = WorkloadKind::kSlurmJob;
  r.start_time = 0;
  r.expected_end = end;
  Allocation a;
  a.node = n;
  a.used[kCpu] = 4000;
  r.allocations = {a};
  return r;
}

// Scenario: a higher-priority newcomer does not take the slot promised to the waiting job.
//   2 nodes of 4 cpus. Running: "long" holds node 0 until 1000, "short" node 1 until 100.
//   Waiting: "wide" (2 nodes x 4 cpus, 500 s) reserved at 1000 on both nodes.
//   At t=50 "urgent" (QOS high, 1 node x 4 cpus, 2000 s) arrives: from scratch it would take node 1
//   at 100 and push "wide" to 2100; with the promise it keeps its place ahead of "wide" in the
//   queue but plans around the slot held for "wide".
TEST(ReservationPromise, AHigherPriorityNewcomerDoesNotDelayAPromise) {
  QueueConfig config = PromiseConfig(/*depth=*/0, /*resolution=*/1);
  QueuePlanner planner(config, nullptr);
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->nodes = {PoolNode(0, 4000), PoolNode(1, 4000)};
  snapshot->running = {FullNode("long", 0, 1000), FullNode("short", 1, 100)};
  snapshot->pending = {Job("wide", WorkloadKind::kSlurmJob, 2, 4000, 500, "normal", 0)};
  auto first = std::make_shared<const Plan>(planner.PlanCycle(snapshot, 0, {}));
  ASSERT_EQ(first->reservations.size(), 1u);
  EXPECT_EQ(first->reservations[0].start, 1000);

  auto next = std::make_shared<Snapshot>(*snapshot);
  next->pending.push_back(Job("urgent", WorkloadKind::kSlurmJob, 1, 4000, 2000, "high", 50));
  const Plan scratch = planner.PlanCycle(next, 50, {});
  ASSERT_EQ(scratch.OrderIds().front(), "urgent");
  const Plan kept = planner.PlanCycle(next, 50, CarryReservations(*first, *next));
  EXPECT_EQ(kept.OrderIds(), (std::vector<std::string>{"urgent", "wide"}));
  std::map<std::string, Time> start;
  for (const ReserveDecision& r : scratch.reservations) start["scratch:" + r.workload] = r.start;
  for (const ReserveDecision& r : kept.reservations) start["kept:" + r.workload] = r.start;
  EXPECT_EQ(start["scratch:urgent"], 100);
  EXPECT_EQ(start["scratch:wide"], 2100);
  EXPECT_EQ(start["kept:wide"], 1000);
  EXPECT_EQ(start["kept:urgent"], 1500);
}

// Scenario: a holder does not take an earlier slot ahead of a higher-priority workload that can
// start now (slurm_e2e_test HigherPriorityGetsTheNodeWhicheverWorld saw a held Slurm job do so
// when holders led the queue).
//   2 nodes of 4 cpus. Running: "long" holds node 0 until 1000, "mid" node 1 until 500.
//   Waiting: "held" (1 node x 4 cpus, 300 s, normal) reserved at 500 on node 1.
//   At t=500 "mid" has ended and "urgent" (QOS high, 1 node x 4 cpus, 100 s) arrives; node 1 is
//   free. "urgent" comes first in the queue and would end at 600, after the promised start, so it
//   may not start there; "held" starts at its promised 500. But when "held" was promised 1000 on
//   node 0, "urgent" starts now on node 1 and "held" keeps (or beats) its promise.
TEST(ReservationPromise, AHolderDoesNotStartAheadOfAHigherPriorityWorkloadThatCanStartNow) {
  QueueConfig config = PromiseConfig(/*depth=*/0, /*resolution=*/1);
  QueuePlanner planner(config, nullptr);
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->nodes = {PoolNode(0, 4000), PoolNode(1, 4000)};
  snapshot->running = {FullNode("long", 0, 1000), FullNode("mid", 1, 5000)};  // node 1 busy for long
  snapshot->pending = {Job("held", WorkloadKind::kSlurmJob, 1, 4000, 300, "normal", 0)};
  auto first = std::make_shared<const Plan>(planner.PlanCycle(snapshot, 0, {}));
  ASSERT_EQ(first->reservations.size(), 1u);
  ASSERT_EQ(first->reservations[0].start, 1000);  // node 0, when "long" ends
  ASSERT_EQ(first->reservations[0].member_nodes, MemberNodes{0});

  // "mid" ended early; "urgent" arrives.
  auto next = std::make_shared<Snapshot>(*snapshot);
  next->running = {FullNode("long", 0, 1000)};
  next->pending.push_back(Job("urgent", WorkloadKind::kPodGroup, 1, 4000, 100, "high", 500));
  const Plan kept = planner.PlanCycle(next, 500, CarryReservations(*first, *next));
  EXPECT_EQ(kept.OrderIds(), (std::vector<std::string>{"urgent", "held"}));
  ASSERT_EQ(kept.starts.size(), 1u);
  EXPECT_EQ(kept.starts[0].workload, "urgent");
  EXPECT_EQ(kept.starts[0].member_nodes, MemberNodes{1});
  ASSERT_EQ(kept.reservations.size(), 1u);
  EXPECT_EQ(kept.reservations[0].workload, "held");
  EXPECT_LE(kept.reservations[0].start, 1000);  // its promise, or better (node 1 at 600)
  EXPECT_EQ(kept.reservations[0].start, 600);
}

// Scenario: a start the previous plan made did not happen (the daemon waited a cycle for the node
// to change hands), so the reservation placed after it is not a promise: kept, it would hold the
// higher-priority starter off its node (slurm_e2e_test HigherPriorityGetsTheNodeWhicheverWorld,
// when the two cycles fell in different seconds).
//   1 node of 4 cpus, free. "pod" (QOS high, 4 cpus, 100 s) starts at 0; "job" (normal, 4 cpus)
//   reserves at 100. At t=1 "pod" is still pending: it must start now, not wait behind "job".
TEST(ReservationPromise, AReservationAfterAStartThatDidNotHappenIsNoPromise) {
  QueueConfig config = PromiseConfig(/*depth=*/0, /*resolution=*/1);
  QueuePlanner planner(config, nullptr);
  auto snapshot = std::make_shared<Snapshot>();
  snapshot->nodes = {PoolNode(0, 4000)};
  snapshot->pending = {Job("pod", WorkloadKind::kPodGroup, 1, 4000, 100, "high", 0),
                       Job("job", WorkloadKind::kSlurmJob, 1, 4000, 60, "normal", 0)};
  auto first = std::make_shared<const Plan>(planner.PlanCycle(snapshot, 0, {}));
  ASSERT_EQ(first->starts.size(), 1u);
  ASSERT_EQ(first->starts[0].workload, "pod");
  ASSERT_EQ(first->reservations.size(), 1u);
  ASSERT_EQ(first->reservations[0].start, 100);

  // Nothing changed but the clock: "pod" did not start.
  EXPECT_TRUE(CarryReservations(*first, *snapshot).empty());
  const Plan next = planner.PlanCycle(snapshot, 1, CarryReservations(*first, *snapshot));
  ASSERT_EQ(next.starts.size(), 1u);
  EXPECT_EQ(next.starts[0].workload, "pod");

  // When "pod" did start (it runs now), "job" keeps its promise.
  auto started = std::make_shared<Snapshot>();
  started->nodes = snapshot->nodes;
  RunningWorkload r = FullNode("pod", 0, 100);
  r.kind = WorkloadKind::kPodGroup;
  started->running = {r};
  started->pending = {snapshot->pending[1]};
  const std::vector<PromisedReservation> kept = CarryReservations(*first, *started);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].workload, "job");
  EXPECT_EQ(kept[0].start, 100);
}

// The daemon carries a plan's reservations into the next snapshot by node name; a promise whose
// node left the pool is dropped.
TEST(ReservationPromise, CarryReservationsMapsNodesByNameAndDropsLostNodes) {
  Plan previous;
  auto before = std::make_shared<Snapshot>();
  before->nodes = {PoolNode(0, 1000), PoolNode(1, 1000), PoolNode(2, 1000)};
  previous.snapshot = before;
  previous.reservations = {ReserveDecision{"a", {0, 2}, 10}, ReserveDecision{"b", {1}, 20}};
  Snapshot next;
  next.nodes = {PoolNode(2, 1000), PoolNode(0, 1000)};  // node-1 left, the others moved
  before->pending = {Job("a", WorkloadKind::kSlurmJob, 2, 1000, 100, "normal", 0),
                     Job("b", WorkloadKind::kSlurmJob, 1, 1000, 100, "normal", 0)};
  const std::vector<PromisedReservation> carried = CarryReservations(previous, next);
  ASSERT_EQ(carried.size(), 1u);
  EXPECT_EQ(carried[0].workload, "a");
  EXPECT_EQ(carried[0].member_nodes, (MemberNodes{1, 0}));
  EXPECT_EQ(carried[0].start, 10);
  EXPECT_EQ(carried[0].end, 110);  // start + the time limit it was promised with
  EXPECT_EQ(carried[0].per_member[kCpu], 1000);
}

}  // namespace
}  // namespace onequeue::queue

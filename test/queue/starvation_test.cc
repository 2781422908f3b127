// Issue 27: no starvation. A workload pending for QueueConfig::starvation_bound or longer gets a
// reservation past the reservation depth (docs/queue.md "Starvation"): first in one cycle, then
// as a scenario replayed in simulated time, where a heavy user's wide job, overtaken by a stream
// of light users' small jobs under fair-share, starts within the documented bound.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "queue/planner.h"
#include "queue/replay.h"
#include "queue/swf.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT

// One 10-cpu node, R on 6 cpus until t=100; EASY (depth 1), bound 1000 s, now = 5000.
//   J1  8 cpus  submitted at 4900: blocked, takes the EASY reservation (t=100 -> now: 5000)
//   OLD 9 cpus  submitted at 0 (waited 5000 >= 1000): reserved too, past the depth
//   NEW 9 cpus  submitted at 4950: past the depth and not starving: no reservation
Snapshot StarvingSnapshot() {
  Snapshot s;
  s.nodes = {MakeNode("n0", 10000)};
  s.running = {MakeRunning("R", 0, Cpu(6000), 0, 5100)};
  s.pending = {PendingBuilder("J1", 8000).Limit(100).Submit(4900),
               PendingBuilder("OLD", 9000).Limit(100).Submit(0),
               PendingBuilder("NEW", 9000).Limit(100).Submit(4950)};
  return s;
}

QueueConfig EasyWithBound(Duration bound) {
  QueueConfig c;
  // J1 first, then OLD, then NEW whatever their age: QOS decides.
  c.weights = PriorityWeights{.age = 0, .fair_share = 0, .job_size = 0, .partition = 0, .qos = 1};
  c.qos = {QosPolicy{.name = "high", .priority = 3}, QosPolicy{.name = "mid", .priority = 2},
           QosPolicy{.name = "low", .priority = 1}};
  c.resolution = 1;
  c.window = 100'000;
  c.reservation_depth = 1;
  c.starvation_bound = bound;
  return c;
}

Plan PlanStarving(Duration bound) {
  Snapshot s = StarvingSnapshot();
  s.pending[0].qos = "high";
  s.pending[1].qos = "mid";
  s.pending[2].qos = "low";
  auto snap = std::make_shared<Snapshot>(std::move(s));
  const QueueConfig c = EasyWithBound(bound);
  QueuePlanner planner(c, nullptr);
  Plan p = planner.PlanCycle(snap, 5000);
  return p;
}

TEST(Starvation, AStarvingWorkloadIsReservedPastTheDepth) {
  const Plan p = PlanStarving(1000);
  ASSERT_NE(FindReservation(p, "J1"), nullptr);
  EXPECT_EQ(FindReservation(p, "J1")->start, 5100);
  ASSERT_NE(FindReservation(p, "OLD"), nullptr);
  EXPECT_EQ(FindReservation(p, "OLD")->start, 5200);  // after J1
  EXPECT_EQ(FindReservation(p, "NEW"), nullptr);
  EXPECT_EQ(p.reservations.size(), 2u);
}

TEST(Starvation, WithoutABoundEasyReservesOnlyTheFirst) {
  const Plan p = PlanStarving(0);
  ASSERT_NE(FindReservation(p, "J1"), nullptr);
  EXPECT_EQ(FindReservation(p, "OLD"), nullptr);
  EXPECT_EQ(p.reservations.size(), 1u);
}

TEST(Starvation, ANegativeBoundIsRefused) {
  QueueConfig c;
  c.starvation_bound = -1;
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  for (double limits : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    QueueConfig l;
    l.starvation_bound_limits = limits;
    EXPECT_EQ(ValidateConfig(l).code(), absl::StatusCode::kInvalidArgument) << limits;
  }
}

// StarvationRemedy::kFront: a starving workload goes to the head of the queue, oldest first,
// whatever its QOS, and takes the depth's reservation; nothing is reserved past the depth.
// Two starving workloads: OLD1 (QOS high, submitted at 10) and OLD0 (QOS mid, at 0): OLD0, the
// older, is first and reserved; OLD1 and J1 (QOS high, not starving) wait with an estimate.
TEST(Starvation, WithTheFrontRemedyTheOldestStarvingWorkloadTakesTheDepthsReservation) {
  Snapshot s = StarvingSnapshot();
  s.pending[1].id = "OLD1";
  s.pending[1].submit_time = 10;
  s.pending[2].id = "OLD0";
  s.pending[2].submit_time = 0;
  s.pending[0].qos = "high";
  s.pending[1].qos = "high";
  s.pending[2].qos = "mid";
  QueueConfig c = EasyWithBound(1000);
  c.starvation_remedy = QueueConfig::StarvationRemedy::kFront;
  ASSERT_TRUE(ValidateConfig(c).ok());
  QueuePlanner planner(c, nullptr);
  const Plan p = planner.PlanCycle(std::make_shared<Snapshot>(std::move(s)), 5000);
  ASSERT_NE(FindReservation(p, "OLD0"), nullptr);
  EXPECT_EQ(FindReservation(p, "OLD0")->start, 5100);
  EXPECT_EQ(FindReservation(p, "OLD1"), nullptr);
  EXPECT_EQ(FindReservation(p, "J1"), nullptr);
  EXPECT_EQ(p.reservations.size(), 1u);
}

// The front is above every weighted sum, so the weights must stay below it, and it needs a bound.
TEST(Starvation, TheFrontRemedyRefusesWeightsAboveItsBaseAndNoBound) {
  QueueConfig c;
  c.starvation_remedy = QueueConfig::StarvationRemedy::kFront;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.weights.qos = 2e12;
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  QueueConfig unbounded;
  unbounded.starvation_remedy = QueueConfig::StarvationRemedy::kFront;
  unbounded.starvation_bound = 0;
  unbounded.starvation_bound_limits = 0;
  EXPECT_EQ(ValidateConfig(unbounded).code(), absl::StatusCode::kInvalidArgument);
}

// One node of 10000 with R running until 5100; J1 (8000, QOS high, submitted at 4900) and OLD0-OLD4
// (9000, submitted at 0-40), all with 100 s limits; old_qos(i) names OLDi's QOS.
Snapshot StarvingBacklog(const std::function<std::string(int)>& old_qos) {
  Snapshot s;
  s.nodes = {MakeNode("n0", 10000)};
  s.running = {MakeRunning("R", 0, Cpu(6000), 0, 5100)};
  s.pending = {PendingBuilder("J1", 8000).Limit(100).Submit(4900)};
  s.pending[0].qos = "high";
  for (int i = 0; i < 5; ++i) {
    s.pending.push_back(PendingBuilder(absl::StrCat("OLD", i), 9000).Limit(100).Submit(i * 10));
    s.pending.back().qos = old_qos(i);
  }
  return s;
}

// The cap on starving reservations: J1 (QOS high) takes the depth's reservation; 5 starving
// workloads past the depth (one QOS, so in queue order, oldest first), at most 2 reserved a
// cycle: the first 2; the others wait with an estimate. A cap below 1 is refused.
TEST(Starvation, AtMostTheCapOfStarvingWorkloadsIsReservedACycleOldestFirst) {
  Snapshot s = StarvingBacklog([](int) { return "mid"; });
  QueueConfig c = EasyWithBound(1000);
  c.max_starving_reservations = 2;
  QueuePlanner planner(c, nullptr);
  const Plan p = planner.PlanCycle(std::make_shared<Snapshot>(std::move(s)), 5000);
  EXPECT_NE(FindReservation(p, "J1"), nullptr);
  EXPECT_NE(FindReservation(p, "OLD0"), nullptr);
  EXPECT_NE(FindReservation(p, "OLD1"), nullptr);
  for (const char* id : {"OLD2", "OLD3", "OLD4"}) EXPECT_EQ(FindReservation(p, id), nullptr) << id;
  EXPECT_EQ(p.reservations.size(), 3u);  // J1's (the depth) and 2 starving
  QueueConfig zero;
  zero.max_starving_reservations = 0;
  EXPECT_EQ(ValidateConfig(zero).code(), absl::StatusCode::kInvalidArgument);
}

// StarvationRemedy::kFrontReserve, K = max_starving_reservations = 2: the starving go to the
// front, oldest first, whatever their QOS (OLD4, the youngest, has the highest), so OLD0 takes
// the depth's reservation, and the next K oldest, OLD1 and OLD2, are reserved past the depth,
// each after the one before; OLD3 (the K+1th past the depth), OLD4 and J1 (QOS high, not
// starving) wait with an estimate. With kFront only OLD0 is reserved.
Plan PlanFrontReserve(QueueConfig::StarvationRemedy remedy) {
  Snapshot s = StarvingBacklog([](int i) { return i == 4 ? "high" : "low"; });
  QueueConfig c = EasyWithBound(1000);
  c.starvation_remedy = remedy;
  c.max_starving_reservations = 2;
  EXPECT_TRUE(ValidateConfig(c).ok());
  QueuePlanner planner(c, nullptr);
  return planner.PlanCycle(std::make_shared<Snapshot>(std::move(s)), 5000);
}

TEST(Starvation, WithFrontReserveTheKOldestStarvingPastTheDepthAreReservedAndNotTheNext) {
  const Plan p = PlanFrontReserve(QueueConfig::StarvationRemedy::kFrontReserve);
  ASSERT_NE(FindReservation(p, "OLD0"), nullptr);
  EXPECT_EQ(FindReservation(p, "OLD0")->start, 5100);  // the depth's: the oldest
  ASSERT_NE(FindReservation(p, "OLD1"), nullptr);
  EXPECT_EQ(FindReservation(p, "OLD1")->start, 5200);  // past the depth, the next oldest
  ASSERT_NE(FindReservation(p, "OLD2"), nullptr);
  EXPECT_EQ(FindReservation(p, "OLD2")->start, 5300);
  for (const char* id : {"OLD3", "OLD4", "J1"}) EXPECT_EQ(FindReservation(p, id), nullptr) << id;
  EXPECT_EQ(p.reservations.size(), 3u);  // 1 (the depth) + K
  const Plan front = PlanFrontReserve(QueueConfig::StarvationRemedy::kFront);
  EXPECT_NE(FindReservation(front, "OLD0"), nullptr);
  EXPECT_EQ(front.reservations.size(), 1u);
  // The front's validation holds for front-reserve too.
  QueueConfig heavy;
  heavy.starvation_remedy = QueueConfig::StarvationRemedy::kFrontReserve;
  heavy.weights.qos = 2e12;
  EXPECT_EQ(ValidateConfig(heavy).code(), absl::StatusCode::kInvalidArgument);
}

// The relative bound in one cycle: OLD (limit 100) has waited 5000 s, 50 x its limit, and is
// reserved past the depth with no absolute bound; with a multiple of 60 it is not starving yet.
TEST(Starvation, AWorkloadWaitingMultiplesOfItsLimitIsReservedPastTheDepth) {
  auto plan = [](double limits) {
    Snapshot s = StarvingSnapshot();
    s.pending[0].qos = "high";
    s.pending[1].qos = "mid";
    s.pending[2].qos = "low";
    QueueConfig c = EasyWithBound(0);
    c.starvation_bound_limits = limits;
    QueuePlanner planner(c, nullptr);
    return planner.PlanCycle(std::make_shared<Snapshot>(std::move(s)), 5000);
  };
  const Plan p = plan(3);
  ASSERT_NE(FindReservation(p, "OLD"), nullptr);
  EXPECT_EQ(FindReservation(p, "NEW"), nullptr);  // waited 50 s, half its limit
  EXPECT_EQ(FindReservation(plan(60), "OLD"), nullptr);
}

// The scenario, replayed in simulated time: 16 processors.
//   t=0      the heavy user 1 fills the machine with 16 one-processor jobs of 5,000 s (80,000
//            processor-seconds charged to it at t=5000)
//   t=100..  a stream of light users (100 of them, in turn) submits a one-processor job of 30
//            minutes every 100 s until t=20,000: 18 processors' worth on 16, so from t=5000 a
//            backlog of light jobs is always blocked (the longest waits ~2.5 hours), and each
//            light user's usage stays far below user 1's
//   t=5001   user 1 submits W: 16 processors, 30 minutes
// Under fair-share user 1 has the lowest priority: W is overtaken by every small job and never
// becomes the head that EASY reserves for, so without a bound it waits for the stream to end and
// its backlog to drain. With a bound of 2 hours it is reserved at the first event after it has
// waited that long (arrivals every 100 s), oldest starving first, and starts within the bound
// plus the time the capacity it needs stays held by what ran or was reserved before it: the
// running 30-minute jobs, then the EASY head's 30 minutes (docs/queue.md "Starvation").
SwfTrace HeavyUserScenario() {
  std::string text = "; MaxProcs: 16\n";
  int64_t n = 0;
  auto job = [&](Time submit, int64_t procs, Duration run, int64_t user) {
    text += absl::StrCat(++n, " ", submit, " -1 ", run, " ", procs, " -1 -1 ", procs, " ", run,
                         " -1 1 ", user, " 1 -1 1 -1 -1 -1\n");
  };
  for (int i = 0; i < 16; ++i) job(0, 1, 5000, 1);
  int light = 0;
  bool w_added = false;
  for (Time t = 100; t <= 20000; t += 100) {
    if (!w_added && t > 5001) {
      job(5001, 16, 1800, 1);  // W
      w_added = true;
    }
    job(t, 1, 1800, 2 + (light++ % 100));
  }
  auto trace = ParseSwfStrict(text);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : SwfTrace{};
}

constexpr Time kWSubmit = 5001;

// limits: QueueConfig::starvation_bound_limits (0: the absolute bound alone).
QueueConfig FairShare(Duration bound, double limits = 0) {
  QueueConfig c;
  c.weights = PriorityWeights{.age = 1000, .fair_share = 10000, .job_size = 0, .partition = 0, .qos = 0};
  c.usage_half_life = 12 * 3600;
  c.reservation_depth = 1;
  c.backfill_shortest_first = true;
  c.resolution = 1;
  c.window = 7 * 86400;
  c.starvation_bound = bound;
  c.starvation_bound_limits = limits;
  return c;
}

Duration WaitOfW(Duration bound, double limits = 0,
                 QueueConfig::StarvationRemedy remedy = QueueConfig::StarvationRemedy::kReserve,
                 bool keep_reservations = true) {
  ReplayOptions options;
  options.config = FairShare(bound, limits);
  options.config->starvation_remedy = remedy;
  options.keep_reservations = keep_reservations;
  auto r = ReplayTrace(HeavyUserScenario(), options);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return -1;
  for (const JobOutcome& j : r->jobs) {
    if (j.submit == kWSubmit) return j.Wait();
  }
  ADD_FAILURE() << "W not replayed";
  return -1;
}

TEST(Starvation, AHeavyUsersWideJobOvertakenBySmallOnesStartsWithinTheBound) {
  // Without a bound: W waits for the stream to end (t=20,000).
  EXPECT_GT(WaitOfW(0), 15000);
  // With a bound of 2 hours: the bound, the gap to the next event, two 30-minute limits.
  const Duration bound = 2 * 3600;
  const Duration wait = WaitOfW(bound);
  EXPECT_GE(wait, bound);
  EXPECT_LE(wait, bound + 100 + 2 * 1800);
  // The library's default absolute bound (2 days) alone is longer than this scenario: W waits as
  // without one.
  EXPECT_EQ(WaitOfW(QueueConfig{}.starvation_bound), WaitOfW(0));
}

// The relative bound (issue 27, the default since): W (time limit 30 min) is starving once it has
// waited 3 x 30 min (the daemon's default multiple), and starts within that, the gap to the next
// event and two 30-minute limits, whatever the absolute bound (with the library's 2 days: the same).
TEST(Starvation, TheBoundInMultiplesOfTheTimeLimitCatchesAShortWideJob) {
  const Duration bound = 3 * 1800;
  const Duration wait = WaitOfW(0, 3);
  EXPECT_GE(wait, bound);
  EXPECT_LE(wait, bound + 100 + 2 * 1800);
  EXPECT_EQ(WaitOfW(QueueConfig{}.starvation_bound, 3), wait);
}

// StarvationRemedy::kFront in the same scenario: once starving, W is the head of the queue and
// takes the EASY reservation itself. Without kept promises it starts within the bound, the gap to
// the next event and one 30-minute limit (the running jobs'); with them the head reserved before
// W starved keeps its promised slot, one more limit, as with the reserve remedy.
TEST(Starvation, WithTheFrontRemedyTheWideJobStartsWithinTheBoundAndOneLimit) {
  const Duration bound = 2 * 3600;
  const Duration unkept = WaitOfW(bound, 0, QueueConfig::StarvationRemedy::kFront, false);
  EXPECT_GE(unkept, bound);
  EXPECT_LE(unkept, bound + 100 + 1800);
  const Duration kept = WaitOfW(bound, 0, QueueConfig::StarvationRemedy::kFront, true);
  EXPECT_GE(kept, bound);
  EXPECT_LE(kept, bound + 100 + 2 * 1800);
}

// Issue 27's width scale (docs/queue.md "Beyond the family"), the front remedy, no promises: W
// asks for the whole pool (job-size factor 1), so with QueueConfig::starvation_width_scale 0.5
// its 2-hour bound is 1 hour, and it starts within that, the gap to the next event and one
// 30-minute limit; a one-processor job's bound (share 1/16) would barely move. Without the scale
// W waits the whole 2 hours.
TEST(Starvation, WithTheWidthScaleAWholePoolJobStarvesAtHalfTheBound) {
  auto wait_of_w = [](double scale) {
    ReplayOptions options;
    options.config = FairShare(2 * 3600);
    options.config->starvation_remedy = QueueConfig::StarvationRemedy::kFront;
    options.config->starvation_width_scale = scale;
    options.keep_reservations = false;
    auto r = ReplayTrace(HeavyUserScenario(), options);
    EXPECT_TRUE(r.ok()) << r.status();
    for (const JobOutcome& j : r.ok() ? r->jobs : std::vector<JobOutcome>{}) {
      if (j.submit == kWSubmit) return j.Wait();
    }
    ADD_FAILURE() << "W not replayed";
    return Duration{-1};
  };
  const Duration scaled = wait_of_w(0.5);
  EXPECT_GE(scaled, 3600);
  EXPECT_LE(scaled, 3600 + 100 + 1800);
  EXPECT_GE(wait_of_w(0), 2 * 3600);
  QueueConfig c;
  c.starvation_width_scale = 0.5;
  EXPECT_EQ(StarvationBoundOf(c, kForever, 1.0 / 16), c.starvation_bound * (1 - 0.5 / 16));
  EXPECT_EQ(StarvationBoundOf(c, kForever, 0), c.starvation_bound);
}

// The width scale and the first-starved order act on the front: refused with the reserve remedy,
// and a scale outside 0..1 is refused.
TEST(Starvation, TheWidthScaleAndTheOrderNeedAFrontAndAScaleOf0To1) {
  QueueConfig c;
  c.starvation_width_scale = 0.5;
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);  // kReserve
  c.starvation_remedy = QueueConfig::StarvationRemedy::kFront;
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    c.starvation_width_scale = bad;
    EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  QueueConfig order;
  order.starving_order = QueueConfig::StarvingOrder::kFirstStarved;
  EXPECT_EQ(ValidateConfig(order).code(), absl::StatusCode::kInvalidArgument);
}

// QueueConfig::StarvingOrder, the front remedy, absolute bound 4500 s and 3 x the limit, now =
// 5000, one 10-cpu node with R on 6 until 5100. OLD (9 cpus, limit 10000 s, submitted at 0)
// starved at 4500; SHORT (9 cpus, limit 100 s, submitted at 1000) starved at 1300, 3 x its limit
// after its submission. Oldest first OLD takes the depth's reservation; first-starved SHORT does.
TEST(Starvation, TheFirstStarvedOrderPutsTheOneLongestPastItsBoundFirst) {
  auto reserved = [](QueueConfig::StarvingOrder order) {
    Snapshot s;
    s.nodes = {MakeNode("n0", 10000)};
    s.running = {MakeRunning("R", 0, Cpu(6000), 0, 5100)};
    s.pending = {PendingBuilder("OLD", 9000).Limit(10000).Submit(0),
                 PendingBuilder("SHORT", 9000).Limit(100).Submit(1000)};
    QueueConfig c = EasyWithBound(4500);
    c.starvation_bound_limits = 3;
    c.starvation_remedy = QueueConfig::StarvationRemedy::kFront;
    c.starving_order = order;
    EXPECT_TRUE(ValidateConfig(c).ok());
    QueuePlanner planner(c, nullptr);
    const Plan p = planner.PlanCycle(std::make_shared<Snapshot>(std::move(s)), 5000);
    EXPECT_EQ(p.reservations.size(), 1u);
    return FindReservation(p, "OLD") != nullptr ? std::string("OLD")
           : FindReservation(p, "SHORT") != nullptr ? std::string("SHORT") : std::string();
  };
  EXPECT_EQ(reserved(QueueConfig::StarvingOrder::kOldest), "OLD");
  EXPECT_EQ(reserved(QueueConfig::StarvingOrder::kFirstStarved), "SHORT");
}

// EASY (submit order) for reference: W waits only for the light jobs submitted before it.
TEST(Starvation, EasyRunsTheWideJobInSubmitOrder) {
  ReplayOptions options;
  options.policy = ReplayPolicy::kEasy;
  auto r = ReplayTrace(HeavyUserScenario(), options);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const JobOutcome& j : r->jobs) {
    if (j.submit == kWSubmit) EXPECT_LT(j.Wait(), 10000);  // ~50 light jobs x 30 min on 16
  }
}

// EASY++ (ReplayOptions::runtime_prediction, docs/simulate.md "Run-time predictions"): 4
// processors; R (user 3) holds 3 until t=1000, A (user 1) ran 100 s of its 1000 s limit; H (user
// 2, all 4 processors) is reserved at t=1000; C (user 1, 1 processor, limit 1000 s, runs 100 s)
// arrives at t=102. With the limit it would delay H (1102 > 1000) and waits for H; predicted
// from A (100 s) it ends before 1000 and is backfilled at once.
SwfTrace PredictionTrace() {
  auto trace = ParseSwfStrict(
      "; MaxProcs: 4\n"
      "1   0 -1 1000 3 -1 -1 3 1000 -1 1 3 1 -1 1 -1 -1 -1\n"
      "2   0 -1  100 1 -1 -1 1 1000 -1 1 1 1 -1 1 -1 -1 -1\n"
      "3 101 -1   10 4 -1 -1 4   10 -1 1 2 1 -1 1 -1 -1 -1\n"
      "4 102 -1  100 1 -1 -1 1 1000 -1 1 1 1 -1 1 -1 -1 -1\n");
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : SwfTrace{};
}

TEST(ReplayPredictions, AUsersShortHistoryLetsItsJobBackfill) {
  ReplayOptions options;
  options.policy = ReplayPolicy::kEasy;
  auto limits = ReplayTrace(PredictionTrace(), options);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->jobs[2].start, 1000);
  EXPECT_EQ(limits->jobs[3].start, 1010);  // after H
  options.runtime_prediction = RuntimePrediction::kUserHistory;
  auto predicted = ReplayTrace(PredictionTrace(), options);
  ASSERT_TRUE(predicted.ok()) << predicted.status();
  EXPECT_EQ(predicted->jobs[3].start, 102);  // backfilled
  EXPECT_TRUE(predicted->jobs[3].backfilled);
  EXPECT_EQ(predicted->jobs[2].start, 1000);  // H not delayed: C ended at 202
}

// A job that outlives its prediction is planned with its limit from then on. 2 processors: A
// (user 1) ran 100 s; C2 (user 1, limit 1000 s, predicted 100 s, runs 600 s) starts at 102 and
// outlives its prediction at 202. H (2 processors) arrives at 300: corrected, C2 holds its
// processor until 1102, so H is reserved there, and X (1 processor, 500 s, at 301) ends before
// and is backfilled at once. Uncorrected, the planner would take C2 as ending within a step,
// reserve H at ~301 and hold X back.
TEST(ReplayPredictions, AnOverrunIsCorrectedToTheLimit) {
  auto trace = ParseSwfStrict(
      "; MaxProcs: 2\n"
      "1   0 -1  100 1 -1 -1 1 1000 -1 1 1 1 -1 1 -1 -1 -1\n"
      "2 102 -1  600 1 -1 -1 1 1000 -1 1 1 1 -1 1 -1 -1 -1\n"
      "3 300 -1  100 2 -1 -1 2  100 -1 1 2 1 -1 1 -1 -1 -1\n"
      "4 301 -1  500 1 -1 -1 1  500 -1 1 3 1 -1 1 -1 -1 -1\n");
  ASSERT_TRUE(trace.ok()) << trace.status();
  ReplayOptions options;
  options.policy = ReplayPolicy::kEasy;
  options.runtime_prediction = RuntimePrediction::kUserHistory;
  auto r = ReplayTrace(*trace, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs[1].start, 102);
  EXPECT_EQ(r->jobs[1].end, 702);
  EXPECT_EQ(r->jobs[3].start, 301);  // X backfilled
  EXPECT_EQ(r->jobs[2].start, 801);  // H when C2 (702) and X (801) are done
}


// Issue 27 (docs/simulate.md "Run-time predictions"): a reservation that starts where no arrival
// or completion falls. 2 processors, conservative with promises. R1 (user 1, predicted 50 s)
// and R2 (user 2, predicted 150 s) both run 200-300. H (2 processors, 50 s, at 210) is reserved
// at R2's predicted end 350, L (1 processor, 100 s, at 220) at R1's, 250: promised [250, 350).
// R1 outlives its prediction; at 300 both end and the machine is idle, but L's promise is held
// only from 300 to 350, too short for it, so H keeps 350 and L is reserved after H. Nothing
// starts at 300 and no arrival or completion follows: the replay used to stop with "2 job(s)
// can never start on an idle machine". It now runs a cycle at the earliest reservation's start
// too: at 250 L cannot start (R1 outlived its prediction, which that cycle corrects, dropping L's
// promise), so at 300 the idle machine starts H, and L follows at 350.
TEST(ReplayPredictions, AReservationWithNoEventAtItsStartStillStarts) {
  auto trace = ParseSwfStrict(
      "; MaxProcs: 2\n"
      "1   0 -1   50 1 -1 -1 1 1000 -1 1 1 1 -1 1 -1 -1 -1\n"
      "2   0 -1  150 1 -1 -1 1 1000 -1 1 2 1 -1 1 -1 -1 -1\n"
      "3 200 -1  100 1 -1 -1 1 1000 -1 1 1 1 -1 1 -1 -1 -1\n"
      "4 200 -1  100 1 -1 -1 1 1000 -1 1 2 1 -1 1 -1 -1 -1\n"
      "5 210 -1   50 2 -1 -1 2   50 -1 1 3 1 -1 1 -1 -1 -1\n"
      "6 220 -1  100 1 -1 -1 1  100 -1 1 4 1 -1 1 -1 -1 -1\n");
  ASSERT_TRUE(trace.ok()) << trace.status();
  ReplayOptions options;
  options.policy = ReplayPolicy::kConservative;
  options.keep_reservations = true;
  options.runtime_prediction = RuntimePrediction::kUserHistory;
  auto r = ReplayTrace(*trace, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs[2].end, 300);
  EXPECT_EQ(r->jobs[3].end, 300);
  EXPECT_EQ(r->jobs[4].start, 300);
  EXPECT_EQ(r->jobs[5].start, 350);
  // With time limits the reservations sit at the limits' ends and the completions at 300 start
  // H at once, then L.
  options.runtime_prediction = RuntimePrediction::kTimeLimit;
  auto limits = ReplayTrace(*trace, options);
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->jobs[4].start, 300);
  EXPECT_EQ(limits->jobs[5].start, 350);
}

}  // namespace
}  // namespace onequeue::queue

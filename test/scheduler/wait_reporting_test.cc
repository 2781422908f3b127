// Issue 12: reporting that costs nothing when nothing changed. A waiting pod is written (condition,
// annotations) only when what it shows changes; its estimated start is shown rounded to the
// queue's resolution and kept from cycle to cycle while the planner's estimate only moves with its
// grid; a report whose asynchronous write failed is written again the next cycle.
#include "scheduler/wait_reporting.h"

#include "fake_world.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/informer.h"
#include "k8s_client/rest_client.h"
#include "scheduler/fenced_actions.h"
#include "scheduler/kube_cluster.h"
#include "scheduler/metrics.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

// A creation timestamp `minutes` before kNow.
std::string At(int minutes) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(kNow - 60 * minutes), absl::UTCTimeZone());
}

TEST(StableEstimateTest, RoundedUpToTheStepAndKeptWhileItOnlyMovesWithTheGrid) {
  EXPECT_EQ(ShownEstimateStep(1), 60);  // the default resolution: exact times, shown to the minute
  EXPECT_EQ(ShownEstimateStep(300), 300);
  constexpr queue::Duration kRes = 60;
  const queue::Time minute = kNow;  // 11:00:00, on the grid
  EXPECT_EQ(StableEstimate(std::nullopt, std::nullopt, kRes), std::nullopt);
  EXPECT_EQ(StableEstimate(minute, std::nullopt, kRes), std::nullopt);   // unknown now: shown so
  EXPECT_EQ(StableEstimate(std::nullopt, minute, kRes), minute);
  EXPECT_EQ(StableEstimate(std::nullopt, minute + 1, kRes), minute + 60);  // rounded up: a promise stays one
  // A running workload ends at 11:30:20; the planner's grid starts at each cycle's now, so its
  // estimate is anywhere in [11:30:20, 11:31:20). Shown: 11:31:00 or 11:32:00, then kept.
  const queue::Time end = minute + 30 * 60 + 20;
  std::optional<queue::Time> shown;
  std::set<queue::Time> values;
  for (int cycle = 0; cycle < 200; ++cycle) {
    const queue::Time now = kNow + 7 * cycle;
    const queue::Time grid_estimate = now + ((end - now + kRes - 1) / kRes) * kRes;
    ASSERT_GE(grid_estimate, end);
    ASSERT_LT(grid_estimate, end + kRes);
    shown = StableEstimate(shown, grid_estimate, kRes);
    values.insert(*shown);
  }
  EXPECT_LE(values.size(), 2u) << "changes at most once";
  EXPECT_EQ(*shown % kRes, 0);
  // A slip is shown at once, however small; a move earlier by more than a resolution too.
  EXPECT_EQ(StableEstimate(minute + 120, minute + 121, kRes), minute + 180);
  EXPECT_EQ(StableEstimate(minute + 600, minute + 300, kRes), minute + 300);
  EXPECT_EQ(StableEstimate(minute + 600, minute + 540, kRes), minute + 600);  // one step earlier: kept
}

// Three pods waiting behind one running for 1 h on a full node: one holds the reservation, the
// others wait beyond the depth with an estimate.
struct Backlog {
  World w;
  Config cfg = TestConfig();
  Backlog() {
    w.AddNode("n1", "4");
    w.AddPod("running", "4", "scavenger", "n1", At(30));
    w.AddPod("b", "4", "scavenger", "", At(20));
    w.AddPod("c", "4", "scavenger", "", At(19));
    w.AddPod("d", "4", "scavenger", "", At(18));
    for (const char* key : {"ns/running", "ns/b", "ns/c", "ns/d"}) {
      w.Find(key)->metadata.annotations[kTimeLimitAnnotation] = "1h";
    }
  }
  int Reports() const {
    int n = 0;
    for (const auto& [key, r] : w.reports) n += static_cast<int>(r.size());
    return n;
  }
};

TEST(WaitReportingTest, BehindAPodPastItsTimeLimitTheEstimateIsWrittenOncePerMinuteNotEveryCycle) {
  Backlog b;
  // The running pod's hour has passed: the planner assumes it ends any moment (an estimate of
  // about now + 1 s for the pod behind it), which moves with every cycle's now.
  b.w.DeletePod("ns/running");
  b.w.AddPod("running", "4", "scavenger", "n1", At(90));
  b.w.Find("ns/running")->metadata.annotations[kTimeLimitAnnotation] = "1h";
  // Past its limit yet still running: within queue.overTimeLimitSeconds (since issue 24 M4 a pod
  // past its limit and that grace is evicted).
  b.cfg.queue.over_time_limit_seconds = 86400;
  SchedulingLoop loop(b.cfg, &b.w, &b.w);
  loop.RunCycle(kNow + 3);
  for (queue::Time t = kNow + 7; t < kNow + 300; t += 4) loop.RunCycle(t);  // 74 cycles, 4 s apart
  const auto& shown = b.w.reports["ns/b"];
  // Once per minute crossed (11:01 ... 11:05), not 75 times.
  EXPECT_LE(shown.size(), 6u);
  EXPECT_GE(shown.size(), 5u);
  for (const WaitReport& r : shown) {
    ASSERT_TRUE(r.estimated_start.has_value());
    EXPECT_EQ(*r.estimated_start % 60, 0);
  }
  EXPECT_EQ(*shown.back().estimated_start, kNow + 300);  // 11:05:00 (the last cycle's estimate: +299 + 1 s)
}

TEST(WaitReportingTest, ConsecutiveCyclesSecondsApartWriteNothingWhenNothingChanged) {
  Backlog b;
  SchedulingLoop loop(b.cfg, &b.w, &b.w);
  CycleStats first = loop.RunCycle(kNow + 3);
  EXPECT_EQ(first.reported, 3);
  ASSERT_EQ(b.Reports(), 3);
  ASSERT_TRUE(b.w.reports["ns/b"][0].estimated_start.has_value());
  const queue::Time shown = *b.w.reports["ns/b"][0].estimated_start;
  EXPECT_EQ(shown % 60, 0) << "on the resolution grid (whole minutes)";
  // Cycles every few seconds, as informer events trigger them: the planner's estimates move with
  // its grid, what the pods show does not.
  for (queue::Time t = kNow + 7; t < kNow + 300; t += 4) {
    CycleStats s = loop.RunCycle(t);
    EXPECT_EQ(s.reported, 0) << "at +" << t - kNow << " s";
  }
  EXPECT_EQ(b.Reports(), 3);
  // What changes is written: the pod ahead leaves, the others move up.
  b.w.DeletePod("ns/b");
  loop.RunCycle(kNow + 301);
  EXPECT_EQ(b.w.reports["ns/c"].size(), 2u);
  EXPECT_EQ(b.w.reports["ns/c"].back().queue_position, 1);
  EXPECT_EQ(b.w.reports["ns/d"].size(), 2u);
}

// As KubeClusterActions: the writes land later; failed ones come back from TakeFailedReports, and
// a pod whose previous report is still in flight is refused (Unavailable) until it has landed.
class AsyncReportingWorld : public World {
 public:
  std::set<std::string> in_flight;
  std::vector<std::string> failed;
  absl::Status ReportWaiting(const std::string& key, const WaitReport& r) override {
    if (in_flight.count(key)) return absl::UnavailableError("previous report in flight");
    in_flight.insert(key);
    return World::ReportWaiting(key, r);
  }
  std::vector<std::string> TakeFailedReports() override { return std::exchange(failed, {}); }
  // The transport answers every write in flight; those of `fail` fail.
  void Land(const std::set<std::string>& fail = {}) {
    for (const std::string& key : in_flight) {
      if (fail.count(key)) failed.push_back(key);
    }
    in_flight.clear();
  }
};

TEST(WaitReportingTest, AFailedAsynchronousWriteIsWrittenAgainNextCycleAndOnlyIt) {
  AsyncReportingWorld w;
  w.AddNode("n1", "4");
  w.AddPod("running", "4", "scavenger", "n1", At(30));
  w.AddPod("b", "4", "scavenger", "", At(20));
  w.AddPod("c", "4", "scavenger", "", At(19));
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  EXPECT_EQ(loop.RunCycle(kNow).reported, 2);
  w.Land(/*fail=*/{"ns/c"});
  EXPECT_EQ(loop.RunCycle(kNow + 5).reported, 1);
  EXPECT_EQ(w.reports["ns/b"].size(), 1u);
  EXPECT_EQ(w.reports["ns/c"].size(), 2u);
  w.Land();
  EXPECT_EQ(loop.RunCycle(kNow + 10).reported, 0);
  // Still in flight when the report changes: refused, so sent the cycle after it landed.
  w.DeletePod("ns/b");
  EXPECT_EQ(loop.RunCycle(kNow + 15).reported, 1);  // c moves up
  w.AddPod("e", "4", "scavenger", "", At(60));  // older: ahead of c, whose position changes
  EXPECT_EQ(loop.RunCycle(kNow + 20).reported, 1);                // e only; c's write is in flight
  w.Land();
  EXPECT_EQ(loop.RunCycle(kNow + 25).reported, 1);  // c's new position now
  EXPECT_EQ(w.reports["ns/c"].back().queue_position, 2);
}

// The daemon wraps its actions (the write gate, the bind timer): a failed report must still come
// back to the loop through them.
TEST(WaitReportingTest, TheDaemonsWrappersPassFailedReportsThrough) {
  struct Leading : WritePermit {
    absl::Status MayWrite() const override { return absl::OkStatus(); }
  } permit;
  AsyncReportingWorld w;
  SchedulerMetrics metrics;
  TimedClusterActions timed(&w, &metrics);
  FencedClusterActions fenced(&timed, &permit);
  w.failed = {"ns/x"};
  EXPECT_EQ(fenced.TakeFailedReports(), std::vector<std::string>{"ns/x"});
  EXPECT_TRUE(w.failed.empty());
}

// The same for the asynchronous eviction: through the wrappers it must reach the inner actions'
// StartEvict (a wrapper without it falls back to a synchronous Evict, one victim at a time).
TEST(WaitReportingTest, TheDaemonsWrappersPassAsynchronousEvictionsThrough) {
  struct Leading : WritePermit {
    absl::Status MayWrite() const override { return absl::OkStatus(); }
  } permit;
  struct Recording : AsyncReportingWorld {
    std::vector<std::string> calls;
    absl::Status Evict(const std::string& key, const std::string&, const std::string&) override {
      calls.push_back("Evict " + key);
      return absl::OkStatus();
    }
    void StartEvict(const std::string& key, const std::string&, const std::string&,
                    std::function<void(absl::Status)> done) override {
      calls.push_back("StartEvict " + key);
      done(absl::OkStatus());
    }
    void EvictSucceeded(const std::string& key, const std::string&, const std::string&) override {
      calls.push_back("EvictSucceeded " + key);
    }
  } w;
  SchedulerMetrics metrics;
  TimedClusterActions timed(&w, &metrics);
  FencedClusterActions fenced(&timed, &permit);
  fenced.StartEvict("ns/v", "ns/p", "Preempted", [](absl::Status) {});
  fenced.EvictSucceeded("ns/v", "ns/p", "Preempted");
  EXPECT_EQ(w.calls, (std::vector<std::string>{"StartEvict ns/v", "EvictSucceeded ns/v"}));
}

// Issue 26: the reservation's writes without waiting reach the inner actions' Start* through the
// wrappers (a wrapper without them falls back to one synchronous write after another).
TEST(WaitReportingTest, TheDaemonsWrappersPassTheReservationsAsynchronousWritesThrough) {
  struct Leading : WritePermit {
    absl::Status MayWrite() const override { return absl::OkStatus(); }
  } permit;
  struct Recording : AsyncReportingWorld {
    std::vector<std::string> calls;
    absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string&, const std::string&) override {
      calls.push_back("SetNodeOwner " + node);
      return std::string("2");
    }
    void StartSetNodeOwner(const std::string& node, const std::string&, const std::string&,
                           std::function<void(absl::StatusOr<std::string>)> done) override {
      calls.push_back("StartSetNodeOwner " + node);
      done(std::string("2"));
    }
    absl::Status Nominate(const std::string& key, const std::string&) override {
      calls.push_back("Nominate " + key);
      return absl::OkStatus();
    }
    void StartNominate(const std::string& key, const std::string&, std::function<void(absl::Status)> done) override {
      calls.push_back("StartNominate " + key);
      done(absl::OkStatus());
    }
  } w;
  SchedulerMetrics metrics;
  TimedClusterActions timed(&w, &metrics);
  FencedClusterActions fenced(&timed, &permit);
  fenced.StartSetNodeOwner("n1", "reserved/ns/p", "1", [](absl::StatusOr<std::string>) {});
  fenced.StartNominate("ns/p", "n1", [](absl::Status) {});
  EXPECT_EQ(w.calls, (std::vector<std::string>{"StartSetNodeOwner n1", "StartNominate ns/p"}));
}

// Issue 26: an apiserver with one node, n1: a GET answers it at `version`, a PATCH makes a new
// version (`version` + 1) unless its resourceVersion precondition differs (409), and answers the
// whole node with the patch's taints (as the real one answers a merge patch). Requests are kept.
class OneNodeServer : public k8s::HttpTransport {
 public:
  std::vector<k8s::HttpRequest> sent;
  int version = 5;
  nlohmann::json taints = nlohmann::json::parse(
      R"([{"key":"other","effect":"NoExecute","timeAdded":"2026-11-21T10:00:00Z"},
          {"key":"onequeue.io/owner","value":"kubernetes","effect":"NoSchedule"}])");
  nlohmann::json Node() const {
    return {{"metadata", {{"name", "n1"}, {"resourceVersion", std::to_string(version)}}}, {"spec", {{"taints", taints}}}};
  }
  void SendAsync(k8s::HttpRequest r, ResponseCallback done) override {
    sent.push_back(r);
    if (r.method == "GET") return done(k8s::HttpResponse{200, Node().dump()});
    if (r.method != "PATCH" || r.path.find("/nodes/") == std::string::npos) return done(k8s::HttpResponse{200, "{}"});
    const nlohmann::json patch = nlohmann::json::parse(r.body);
    if (patch["metadata"].value("resourceVersion", "") != std::to_string(version)) {
      return done(k8s::HttpResponse{409, R"({"kind":"Status","reason":"Conflict","code":409})"});
    }
    if (patch.contains("spec")) taints = patch["spec"]["taints"];
    ++version;
    done(k8s::HttpResponse{200, Node().dump()});
  }
  std::unique_ptr<k8s::HttpStream> OpenStream(k8s::HttpRequest, ChunkCallback, StreamDoneCallback done) override {
    done(absl::UnimplementedError("no streams"));
    return nullptr;
  }
  std::vector<std::string> Methods() const {
    std::vector<std::string> out;
    for (const auto& r : sent) out.push_back(r.method);
    return out;
  }
};

// A node informer fed by hand (the test's copy of what the watch showed).
class FedNodes : public k8s::Informer<k8s::Node> {
 public:
  using Informer::Informer;
  void Show(const nlohmann::json& node) { ASSERT_TRUE(Apply(k8s::WatchEventType::kAdded, node)); }
};

struct OwnerWrites {
  OwnerWrites() : client(k8s::ClientConfig{}, std::unique_ptr<k8s::HttpTransport>(wire = new OneNodeServer)) {}
  OneNodeServer* wire;
  k8s::RestClient client;
  k8s::Informer<k8s::Pod> pods{&client, k8s::kPods, {}};
  FedNodes nodes{&client, k8s::kNodes, {}};
  KubeClusterActions actions{&client, &pods, "test", &nodes};
  absl::StatusOr<std::string> StartSet(const std::string& value, const std::string& version) {
    std::optional<absl::StatusOr<std::string>> answer;
    actions.StartSetNodeOwner("n1", value, version, [&](absl::StatusOr<std::string> r) { answer = r; });
    return answer.value_or(absl::UnknownError("no answer"));
  }
  nlohmann::json LastPatch() const { return nlohmann::json::parse(wire->sent.back().body); }
};

// Issue 26: StartSetNodeOwner is SetNodeOwner without waiting. Where the taints at the version it
// is conditional on are not known (the informer shows another version, this process never wrote
// that one), it reads the node, then writes the owner with the caller's resourceVersion as the
// precondition, keeping the node's other taints.
TEST(WaitReportingTest, AMarkAtAVersionWhoseTaintsAreUnknownReadsTheNodeFirst) {
  OwnerWrites t;
  t.nodes.Show(t.wire->Node());  // the informer at 5
  t.wire->version = 6;           // the loop decided from 6 (an own write forgotten: a restart)
  absl::StatusOr<std::string> answer = t.StartSet("reserved/ns/p", "6");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, "7");
  EXPECT_EQ(t.wire->Methods(), (std::vector<std::string>{"GET", "PATCH"}));
  const nlohmann::json patch = t.LastPatch();
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "6") << "the version the loop decided from";
  EXPECT_EQ(patch["metadata"]["annotations"]["onequeue.io/owner"], "reserved/ns/p");
  EXPECT_EQ(patch["spec"]["taints"],
            nlohmann::json::parse(R"([{"key":"other","effect":"NoExecute","timeAdded":"2026-11-21T10:00:00Z"},
                                      {"key":"onequeue.io/owner","value":"reserved","effect":"NoSchedule"}])"));
}

// Issue 26: at the version the node informer shows, its copy gives the taints: one PATCH, no GET
// (kube-scheduler makes no node request at all). Every field of a taint is written back.
TEST(WaitReportingTest, AMarkAtTheInformersVersionIsOnePatchNoGet) {
  OwnerWrites t;
  t.nodes.Show(t.wire->Node());
  absl::StatusOr<std::string> answer = t.StartSet("reserved/ns/p", "5");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, "6");
  EXPECT_EQ(t.wire->Methods(), std::vector<std::string>{"PATCH"});
  const nlohmann::json patch = t.LastPatch();
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "5");
  EXPECT_EQ(patch["spec"]["taints"],
            nlohmann::json::parse(R"([{"key":"other","effect":"NoExecute","timeAdded":"2026-11-21T10:00:00Z"},
                                      {"key":"onequeue.io/owner","value":"reserved","effect":"NoSchedule"}])"));
}

// Issue 26: the version this process's own write returned (the watch has not shown it yet) is
// known too: the answer was the whole node. The unmark after the preemptor is bound is one PATCH.
TEST(WaitReportingTest, AMarkAtTheVersionThisProcessWroteIsOnePatchNoGet) {
  OwnerWrites t;
  t.nodes.Show(t.wire->Node());
  ASSERT_TRUE(t.StartSet("reserved/ns/p", "5").ok());
  t.wire->sent.clear();
  absl::StatusOr<std::string> answer = t.actions.SetNodeOwner("n1", "", "6");  // the informer still at 5
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, "7");
  EXPECT_EQ(t.wire->Methods(), std::vector<std::string>{"PATCH"});
  EXPECT_EQ(t.LastPatch()["spec"]["taints"],
            nlohmann::json::parse(R"([{"key":"other","effect":"NoExecute","timeAdded":"2026-11-21T10:00:00Z"}])"))
      << "only our taint goes";
}

// Issue 26: without the read, a node changed since that version is still caught by the
// precondition: 409, kAborted, and the loop writes again from a fresh read next cycle.
TEST(WaitReportingTest, AMarkWithoutAReadOnANodeChangedSinceIsAborted) {
  OwnerWrites t;
  t.nodes.Show(t.wire->Node());
  t.wire->version = 9;  // someone else wrote the node after the informer's copy
  absl::StatusOr<std::string> answer = t.StartSet("reserved/ns/p", "5");
  EXPECT_TRUE(absl::IsAborted(answer.status())) << answer.status();
  EXPECT_EQ(t.wire->Methods(), std::vector<std::string>{"PATCH"});
  EXPECT_TRUE(absl::IsAborted(t.actions.SetNodeOwner("n1", "", "5").status()));
}

// Issue 26: a preemptor's nomination carries its waiting report: one pods/status write with
// nominatedNodeName, PodScheduled=False (reason and message as ReportWaiting writes them) and the
// wait annotations, as kube-scheduler nominates; the FailedScheduling event still says why.
TEST(WaitReportingTest, APreemptorsNominationAndReportAreOneStatusWrite) {
  OwnerWrites t;
  std::optional<absl::Status> answer;
  t.actions.StartNominateWithReport("ns/p", "n1", WaitReport{"Preempting", "preempting 3 pods on n1", 4, kNow + 90},
                                    [&](absl::Status s) { answer = s; });
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(answer->ok()) << *answer;
  std::vector<k8s::HttpRequest> pod_writes, events;
  for (const auto& r : t.wire->sent) (r.path.find("/events") != std::string::npos ? events : pod_writes).push_back(r);
  ASSERT_EQ(pod_writes.size(), 1u);
  EXPECT_EQ(pod_writes[0].method, "PATCH");
  EXPECT_EQ(pod_writes[0].path, "/api/v1/namespaces/ns/pods/p/status");
  EXPECT_EQ(pod_writes[0].content_type, "application/strategic-merge-patch+json");
  const nlohmann::json patch = nlohmann::json::parse(pod_writes[0].body);
  EXPECT_EQ(patch["status"]["nominatedNodeName"], "n1");
  const nlohmann::json& condition = patch["status"]["conditions"][0];
  EXPECT_EQ(condition["type"], "PodScheduled");
  EXPECT_EQ(condition["status"], "False");
  EXPECT_EQ(condition["reason"], "Unschedulable");
  EXPECT_EQ(condition["message"], "Preempting: preempting 3 pods on n1 (queue position 4)");
  EXPECT_EQ(patch["metadata"]["annotations"][kQueuePositionAnnotation], "4");
  EXPECT_EQ(patch["metadata"]["annotations"][kEstimatedStartAnnotation],
            k8s::FormatRfc3339(absl::FromUnixSeconds(kNow + 90)));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(nlohmann::json::parse(events[0].body)["reason"], "FailedScheduling");
  EXPECT_EQ(t.actions.TakeFailedReports(), std::vector<std::string>{});
}

// What the event recorder decided is exported as running totals, by outcome.
TEST(EventMetricsTest, RecorderTotalsBecomeOnequeueEventsTotal) {
  SchedulerMetrics metrics;
  k8s::EventCorrelator::Counters totals;
  totals.created = 2;
  totals.dropped = 1;
  metrics.ObserveEvents(totals);
  totals.created = 5;
  totals.counted = 4;
  totals.queue_full = 3;
  metrics.ObserveEvents(totals);
  metrics.ObserveEvents(totals);  // nothing new
  std::map<std::string, double> by_outcome;
  for (const auto& family : metrics.registry()->Collect()) {
    if (family.name != "onequeue_events_total") continue;
    for (const auto& m : family.metric) by_outcome[m.label.at(0).value] = m.counter.value;
  }
  EXPECT_EQ(by_outcome["created"], 5);
  EXPECT_EQ(by_outcome["dropped"], 1);
  EXPECT_EQ(by_outcome["counted"], 4);
  EXPECT_EQ(by_outcome["queue_full"], 3);
  EXPECT_EQ(by_outcome.count("aggregated"), 0u);  // never seen: no series yet
}

// Issue 25: each pod reported as having lost its Slurm placeholder counts once in
// onequeue_shared_mirror_lost_total, by its shared node.
TEST(SharedMirrorMetricsTest, ReportedLossesBecomeOnequeueSharedMirrorLostTotalByNode) {
  SchedulerMetrics metrics;
  CycleStats stats;
  stats.mirrors_lost = {"s1", "s2", "s1"};
  metrics.ObserveCycle(stats, nullptr, 0.01);
  metrics.ObserveCycle(CycleStats{}, nullptr, 0.01);  // nothing new
  std::map<std::string, double> by_node;
  for (const auto& family : metrics.registry()->Collect()) {
    if (family.name != "onequeue_shared_mirror_lost_total") continue;
    for (const auto& m : family.metric) by_node[m.label.at(0).value] = m.counter.value;
  }
  EXPECT_EQ(by_node, (std::map<std::string, double>{{"s1", 2}, {"s2", 1}}));
}

// The cycle's gauges, from its plan: pending pods by kube-scheduler's queue names (started =
// active, held or gang-incomplete = gated, the rest unschedulable; a group counts its pods), and
// pending workloads by world and partition (started ones excluded; each world's partition-less
// series present at zero). A partition that empties loses its series.
TEST(CycleGaugeMetricsTest, PendingPodsAndWorkloadsFollowThePlan) {
  auto snapshot = std::make_shared<queue::Snapshot>();
  auto pod = [](std::string id, std::string partition) {
    queue::PendingWorkload w;
    w.id = std::move(id);
    w.kind = queue::WorkloadKind::kPodGroup;
    w.partition = std::move(partition);
    return w;
  };
  snapshot->pending = {pod("ns/started", "gpu"), pod("ns/held", "gpu"), pod("ns/group", "cpu"), pod("ns/one", "")};
  queue::PendingWorkload job;
  job.id = "slurm/7";
  job.kind = queue::WorkloadKind::kSlurmJob;
  job.partition = "batch";
  snapshot->pending.push_back(job);
  auto plan = std::make_shared<queue::Plan>();
  plan->snapshot = snapshot;
  plan->starts.push_back(queue::StartDecision{"ns/started", {}, false});
  queue::WaitingStatus held;
  held.workload = snapshot->pending[1].id;
  held.reason = queue::WaitReason::kHeld;
  plan->waiting.push_back(held);
  CycleStatus status;
  status.plan = plan;
  status.pending_pods["ns/started"].pod_keys = {"ns/s-0", "ns/s-1"};
  status.pending_pods["ns/held"].pod_keys = {"ns/h-0"};
  status.pending_pods["ns/group"].pod_keys = {"ns/g-0", "ns/g-1", "ns/g-2"};  // ns/one: none known, counts 1
  SchedulerMetrics metrics;
  metrics.ObserveCycle(CycleStats{}, &status, 0.01);
  auto gauges = [&](const std::string& name) {
    std::map<std::string, double> values;
    for (const auto& family : metrics.registry()->Collect()) {
      if (family.name != name) continue;
      for (const auto& m : family.metric) {
        std::string key;
        for (const auto& l : m.label) key += l.name + "=" + l.value + ",";
        values[key] = m.gauge.value;
      }
    }
    return values;
  };
  EXPECT_EQ(gauges("scheduler_pending_pods"),
            (std::map<std::string, double>{{"queue=active,", 2}, {"queue=gated,", 1}, {"queue=unschedulable,", 4}}));
  EXPECT_EQ(gauges("onequeue_pending_workloads"),
            (std::map<std::string, double>{{"partition=,world=kubernetes,", 1},
                                           {"partition=,world=slurm,", 0},
                                           {"partition=batch,world=slurm,", 1},
                                           {"partition=cpu,world=kubernetes,", 1},
                                           {"partition=gpu,world=kubernetes,", 1}}));
  // The next cycle: the gpu workloads are gone (started and bound, held and deleted).
  snapshot->pending.erase(snapshot->pending.begin(), snapshot->pending.begin() + 2);
  plan->starts.clear();
  plan->waiting.clear();
  metrics.ObserveCycle(CycleStats{}, &status, 0.01);
  EXPECT_EQ(gauges("onequeue_pending_workloads").count("partition=gpu,world=kubernetes,"), 0u);
  EXPECT_EQ(gauges("scheduler_pending_pods")["queue=unschedulable,"], 4);
}

// Issue 13: an informer's backlog overflows (each a relist) are exported as running totals per
// resource, every series present at zero from the start.
TEST(InformerMetricsTest, BacklogOverflowsBecomeOnequeueInformerBacklogOverflowsTotal) {
  SchedulerMetrics metrics;
  auto by_resource = [&] {
    std::map<std::string, double> values;
    for (const auto& family : metrics.registry()->Collect()) {
      if (family.name != "onequeue_informer_backlog_overflows_total") continue;
      for (const auto& m : family.metric) values[m.label.at(0).value] = m.counter.value;
    }
    return values;
  };
  EXPECT_EQ(by_resource(), (std::map<std::string, double>{{"nodes", 0}, {"poddisruptionbudgets", 0}, {"pods", 0}}));
  k8s::InformerStats pods;
  pods.backlog_overflows = 2;
  pods.events = 1000;
  metrics.ObserveInformer("pods", pods);
  metrics.ObserveInformer("nodes", k8s::InformerStats{});
  pods.backlog_overflows = 3;
  metrics.ObserveInformer("pods", pods);
  metrics.ObserveInformer("pods", pods);  // nothing new
  EXPECT_EQ(by_resource(), (std::map<std::string, double>{{"nodes", 0}, {"poddisruptionbudgets", 0}, {"pods", 3}}));
}

// A pod informer fed by hand.
class FedPods : public k8s::Informer<k8s::Pod> {
 public:
  using Informer::Informer;
  void Show(const nlohmann::json& pod) { ASSERT_TRUE(Apply(k8s::WatchEventType::kAdded, pod)); }
};

// Issue 26 (onequeue's writes per preemptor): a pod that waited (the loop wrote its queue position
// and estimated start, or the informer shows them) is bound by a Binding whose
// metadata.annotations carry the final values, queue position 0 and the estimated start replaced
// by the time of the binding: the apiserver copies a binding's annotations onto the pod
// (BindingREST's setPodNodeAndMetadata), so the bound pod no longer shows it waits with no PATCH
// after the binding. A pod bound at its first cycle (no wait annotations) gets a plain Binding.
// Either way BindSucceeded writes the Scheduled event only.
TEST(WaitReportingTest, ABindingCarriesTheFinalWaitAnnotationsOfAPodThatWaitedAndNothingFollows) {
  auto transport = std::make_unique<OneNodeServer>();
  OneNodeServer* wire = transport.get();
  k8s::RestClient client(k8s::ClientConfig{}, std::move(transport));
  FedPods pods(&client, k8s::kPods, {});
  KubeClusterActions actions(&client, &pods, "test");
  auto pod = [](const std::string& name, nlohmann::json annotations) {
    return nlohmann::json{{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", "uid-" + name},
                                        {"resourceVersion", "3"}, {"annotations", annotations}}},
                          {"spec", {{"schedulerName", "onequeue"}}}};
  };
  pods.Show(pod("waited", {{kQueuePositionAnnotation, "4"}, {kEstimatedStartAnnotation, "2026-11-30T10:00:00Z"},
                           {"team", "a"}}));
  pods.Show(pod("at-once", {{"team", "a"}}));
  // Reported by this process, the report landed, the informer not there yet.
  pods.Show(pod("reported", {{"team", "a"}}));
  ASSERT_TRUE(actions.ReportWaiting("ns/reported", WaitReport{"Resources", "no room", 2, std::nullopt}).ok());
  wire->sent.clear();
  const absl::Time before = absl::Now() - absl::Seconds(1);
  std::map<std::string, absl::Status> answers;
  for (const std::string name : {"waited", "at-once", "reported"}) {
    actions.StartBind("ns/" + name, "n1", "bound to n1", [&answers, name](absl::Status s) { answers[name] = s; });
  }
  for (const std::string name : {"waited", "at-once", "reported"}) {
    ASSERT_TRUE(answers[name].ok()) << name;
    actions.BindSucceeded("ns/" + name, "n1", "bound to n1");
  }
  ASSERT_TRUE(actions.FlushBestEffort(absl::Seconds(5)));
  std::map<std::string, nlohmann::json> bindings;
  int events = 0, patches = 0;
  for (const k8s::HttpRequest& r : wire->sent) {
    if (r.method == "PATCH") ++patches;
    if (r.method == "POST" && r.path.find("/events") != std::string::npos) ++events;
    if (r.method == "POST" && absl::EndsWith(r.path, "/binding")) {
      const nlohmann::json b = nlohmann::json::parse(r.body);
      bindings[b["metadata"]["name"]] = b;
    }
  }
  EXPECT_EQ(events, 3) << "a Scheduled event for each";
  EXPECT_EQ(patches, 0) << "no write after the binding but its event";
  ASSERT_EQ(bindings.size(), 3u);
  EXPECT_FALSE(bindings["at-once"]["metadata"].contains("annotations")) << bindings["at-once"].dump();
  for (const std::string name : {"waited", "reported"}) {
    const nlohmann::json& a = bindings[name]["metadata"]["annotations"];
    ASSERT_TRUE(a.is_object()) << name << ": " << bindings[name].dump();
    EXPECT_EQ(a.size(), 2u) << "only onequeue's wait annotations: the binding never touches the pod's own";
    EXPECT_EQ(a.value(kQueuePositionAnnotation, ""), "0") << name;
    absl::Time at;
    std::string err;
    ASSERT_TRUE(absl::ParseTime(absl::RFC3339_full, a.value(kEstimatedStartAnnotation, ""), &at, &err)) << name;
    EXPECT_GE(at, before) << name << ": the estimated start becomes the time it was bound";
    EXPECT_LE(at, absl::Now() + absl::Seconds(1)) << name;
  }
}

// Issue 13: memory that grows with pod churn. The loop's last report per pod and the actions' last
// FailedScheduling event per pod are kept only while the pod waits: 1,000 pods that waited and
// were deleted leave nothing behind in either.
// Answers every request 200 at once (the apiserver's answers do not matter here).
class AcceptingTransport : public k8s::HttpTransport {
 public:
  int requests = 0;
  void SendAsync(k8s::HttpRequest, ResponseCallback done) override {
    ++requests;
    done(k8s::HttpResponse{200, "{}"});
  }
  std::unique_ptr<k8s::HttpStream> OpenStream(k8s::HttpRequest, ChunkCallback, StreamDoneCallback done) override {
    done(absl::UnimplementedError("no streams"));
    return nullptr;
  }
};

TEST(WaitReportingTest, PodsThatWaitedAndWereDeletedLeaveNothingRemembered) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("running", "4", "scavenger", "n1", At(30));
  for (int i = 0; i < 1000; ++i) w.AddPod("p" + std::to_string(i), "4", "scavenger", "", At(20));
  auto transport = std::make_unique<AcceptingTransport>();
  AcceptingTransport* sent = transport.get();
  k8s::ClientConfig client_config;
  k8s::RestClient client(client_config, std::move(transport));
  k8s::Informer<k8s::Pod> pods(&client, k8s::kPods, {});
  KubeClusterActions actions(&client, &pods, "test");
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &actions);
  EXPECT_EQ(loop.RunCycle(kNow).reported, 1000);
  EXPECT_GT(sent->requests, 0);
  EXPECT_EQ(loop.remembered_reports(), 1000u);
  EXPECT_EQ(actions.remembered_events(), 1000u);
  for (int i = 0; i < 1000; ++i) w.DeletePod("ns/p" + std::to_string(i));
  loop.RunCycle(kNow + 5);
  EXPECT_EQ(loop.remembered_reports(), 0u);
  EXPECT_EQ(actions.remembered_events(), 0u);
}

// The same through the daemon's wrappers (write gate, bind timer), and a pod that stops pending
// because it is bound is forgotten too.
TEST(WaitReportingTest, ABoundPodIsForgottenThroughTheDaemonsWrappers) {
  struct Leading : WritePermit {
    absl::Status MayWrite() const override { return absl::OkStatus(); }
  } permit;
  struct Forgetting : World {
    std::set<std::string> remembered;
    absl::Status ReportWaiting(const std::string& key, const WaitReport& r) override {
      remembered.insert(key);
      return World::ReportWaiting(key, r);
    }
    void ForgetWaiting(const std::string& key) override { remembered.erase(key); }
  } w;
  w.AddNode("n1", "4");
  w.AddPod("running", "4", "scavenger", "n1", At(30));
  w.AddPod("a", "4", "scavenger", "", At(20));
  w.AddPod("b", "4", "scavenger", "", At(19));
  SchedulerMetrics metrics;
  TimedClusterActions timed(&w, &metrics);
  FencedClusterActions fenced(&timed, &permit);
  Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &fenced);
  loop.RunCycle(kNow);
  EXPECT_EQ(w.remembered, (std::set<std::string>{"ns/a", "ns/b"}));
  w.DeletePod("ns/running");
  w.DeletePod("ns/b");
  loop.RunCycle(kNow + 5);  // a is bound to n1, b is gone
  EXPECT_EQ(w.NodeOf("ns/a"), "n1");
  loop.RunCycle(kNow + 10);
  EXPECT_EQ(loop.remembered_reports(), 0u);
  EXPECT_THAT(w.remembered, ::testing::IsEmpty());
}

}  // namespace
}  // namespace onequeue::scheduler

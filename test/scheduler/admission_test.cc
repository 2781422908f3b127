// Issue 13, defects 1-3: what a tenant may ask for, and what it cannot change once admitted.
//   1. per-namespace QOS/account policy: a pod that asks for more waits (QOSNotAllowed,
//      AccountNotAllowed) and nothing else happens;
//   2. a running pod's QOS, account and gang are fixed at admission: re-annotating it
//      `interactive` does not make it un-preemptible, and the ignored edit is reported;
//   3. a running pod's priority is on the preemptor's (multifactor) scale, not its PriorityClass
//      value, in both directions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_world.h"
#include "nlohmann/json.hpp"
#include "queue/planner.h"
#include "queue/preemption.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

k8s::Node PoolNode(const std::string& name, const std::string& cpu = "4") {
  json j = {{"metadata", {{"name", name}, {"labels", {{"onequeue.io/pool", "a"}}}}},
            {"status", {{"allocatable", {{"cpu", cpu}, {"memory", "32Gi"}, {"pods", "110"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  return *k8s::Node::FromJson(j);
}

k8s::Pod Pod(const std::string& namespace_, const std::string& name, json annotations, const std::string& node = "",
             const std::string& cpu = "1", std::optional<int32_t> priority_class = std::nullopt,
             const std::string& created = "2026-11-21T10:00:00Z") {
  json j = {{"metadata", {{"name", name}, {"namespace", namespace_}, {"uid", "uid-" + name},
                          {"creationTimestamp", created}, {"annotations", annotations}}},
            {"spec", {{"schedulerName", "onequeue"},
                      {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}}},
            {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) j["spec"]["nodeName"] = node;
  if (priority_class) j["spec"]["priority"] = *priority_class;
  return *k8s::Pod::FromJson(j);
}

const queue::PendingWorkload* Pending(const BuiltSnapshot& b, const std::string& id) {
  for (const auto& w : b.snapshot->pending) {
    if (w.id == id) return &w;
  }
  return nullptr;
}

// --- Defect 1: per-namespace policy ------------------------------------------------------------

TEST(AdmissionTest, NamespacePolicyRefusesQosAndAccountsItDoesNotAllowAndFillsDefaults) {
  SnapshotOptions o;
  o.known_qos = {"interactive", "normal", "scavenger"};
  o.namespace_policies["team-a"] = {{"normal", "scavenger"}, "normal", {"team-a", "shared"}, "team-a"};
  o.namespace_policies[kAnyNamespace] = {{"scavenger"}, "scavenger", {}, ""};
  auto built = BuildSnapshot(
      {PoolNode("n1")},
      {Pod("team-a", "greedy", {{"onequeue.io/qos", "interactive"}}),
       Pod("team-a", "thief", {{"onequeue.io/qos", "normal"}, {"onequeue.io/account", "team-b"}}),
       Pod("team-a", "plain", json::object()),
       Pod("team-a", "shared", {{"onequeue.io/qos", "scavenger"}, {"onequeue.io/account", "shared"}}),
       Pod("other", "greedy", {{"onequeue.io/qos", "normal"}}), Pod("other", "plain", json::object())},
      o, kNow);
  const auto* greedy = Pending(built, "team-a/greedy");
  ASSERT_NE(greedy, nullptr);
  EXPECT_EQ(greedy->admission_error, queue::AdmissionError::kQosNotAllowed);
  EXPECT_THAT(greedy->admission_message,
              HasSubstr("namespace \"team-a\" may not use QOS \"interactive\" (allowed: normal, scavenger)"));
  const auto* thief = Pending(built, "team-a/thief");
  EXPECT_EQ(thief->admission_error, queue::AdmissionError::kAccountNotAllowed);
  EXPECT_THAT(thief->admission_message, HasSubstr("may not charge account \"team-b\""));
  const auto* plain = Pending(built, "team-a/plain");
  EXPECT_EQ(plain->admission_error, queue::AdmissionError::kNone);
  EXPECT_EQ(plain->qos, "normal");
  EXPECT_EQ(plain->account, "team-a");
  EXPECT_EQ(Pending(built, "team-a/shared")->admission_error, queue::AdmissionError::kNone);
  // "*": every namespace without its own policy.
  EXPECT_EQ(Pending(built, "other/greedy")->admission_error, queue::AdmissionError::kQosNotAllowed);
  EXPECT_EQ(Pending(built, "other/plain")->qos, "scavenger");
  EXPECT_EQ(Pending(built, "other/plain")->admission_error, queue::AdmissionError::kNone);
}

TEST(AdmissionTest, WithoutPoliciesEveryPodMayAskForAnyDefinedQosAsBefore) {
  SnapshotOptions o;
  o.known_qos = {"interactive"};
  auto built = BuildSnapshot({PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "interactive"}})}, o, kNow);
  EXPECT_EQ(Pending(built, "ns/p")->admission_error, queue::AdmissionError::kNone);
  EXPECT_EQ(Pending(built, "ns/p")->account, "ns");
}

Config PolicyConfig() {
  Config c = TestConfig();
  c.queue.qos.push_back({"normal", 100, true, false, 0});
  NamespacePolicyConfig ns;
  ns.namespace_ = "ns";
  ns.allowed_qos = {"normal", "scavenger"};
  ns.default_qos = "normal";
  ns.allowed_accounts = {"ns"};
  c.queue.namespace_policies.push_back(ns);
  return c;
}

TEST(AdmissionTest, ATenantAllowedOnlyNormalAsksForInteractiveNothingIsEvictedAndItWaitsWithTheReason) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("victim", "4", "scavenger", "n1");
  w.AddPod("jupyter", "2", "interactive");
  w.AddPod("billed-elsewhere", "1", "normal");
  w.Find("ns/billed-elsewhere")->metadata.annotations["onequeue.io/account"] = "physics";
  const Config cfg = PolicyConfig();
  SchedulingLoop loop(cfg, &w, &w);
  for (int i = 0; i < 3; ++i) {
    CycleStats s = loop.RunCycle(kNow + i);
    EXPECT_EQ(s.preemptions_started, 0);
    EXPECT_EQ(s.bound, 0);
  }
  EXPECT_THAT(w.evictions, IsEmpty());
  EXPECT_EQ(w.evict_attempts, 0);
  for (const std::string& c : w.owner_changes) EXPECT_THAT(c, ::testing::Not(HasSubstr("reserved")));
  EXPECT_EQ(w.Find("ns/jupyter")->nominated_node_name, "");
  ASSERT_FALSE(w.reports["ns/jupyter"].empty());
  EXPECT_EQ(w.reports["ns/jupyter"].back().reason, "QOSNotAllowed");
  EXPECT_THAT(w.reports["ns/jupyter"].back().message, HasSubstr("may not use QOS \"interactive\""));
  ASSERT_FALSE(w.reports["ns/billed-elsewhere"].empty());
  EXPECT_EQ(w.reports["ns/billed-elsewhere"].back().reason, "AccountNotAllowed");
}

// A refused workload is never placed, and it is not ranked with what it was refused either: it
// ranks as its namespace's defaults would (oq explain showed it first, with interactive's priority).
TEST(AdmissionTest, APodRefusedItsQosQueuesBehindAnOlderPodOfTheDefaultQos) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("victim", "4", "interactive", "n1");  // not preemptible: everyone waits
  w.AddPod("batch", "4", "normal", "", "2026-11-21T10:00:00Z");
  w.AddPod("jupyter", "4", "interactive", "", "2026-11-21T10:30:00Z");
  const Config cfg = PolicyConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  ASSERT_FALSE(w.reports["ns/jupyter"].empty());
  ASSERT_FALSE(w.reports["ns/batch"].empty());
  EXPECT_EQ(w.reports["ns/jupyter"].back().reason, "QOSNotAllowed");
  EXPECT_EQ(w.reports["ns/batch"].back().queue_position, 1);
  EXPECT_EQ(w.reports["ns/jupyter"].back().queue_position, 2);
}

TEST(AdmissionTest, ARefusedWorkloadRanksWithTheNamespaceDefaultsOrTheLowestQos) {
  queue::QueueConfig queue_config;
  queue_config.qos = {{"interactive", 1000, false, {}, 0}, {"normal", 100, true, {}, 0}, {"scavenger", 0, true, {}, 0}};
  SnapshotOptions o;
  o.queue_config = &queue_config;
  o.known_qos = {"interactive", "normal", "scavenger"};
  o.namespace_policies["team-a"] = {{"normal", "interactive"}, "normal", {"team-a"}, "team-a"};
  o.namespace_policies["team-b"] = {{"normal"}, "", {}, ""};
  auto built = BuildSnapshot(
      {PoolNode("n1")},
      {Pod("team-a", "thief", {{"onequeue.io/qos", "interactive"}, {"onequeue.io/account", "team-b"}}),
       Pod("team-a", "greedy", {{"onequeue.io/qos", "scavenger"}}),
       Pod("team-b", "greedy", {{"onequeue.io/qos", "interactive"}}),
       Pod("team-b", "unknown", {{"onequeue.io/qos", "platinum"}})},
      o, kNow);
  const auto* thief = Pending(built, "team-a/thief");
  ASSERT_NE(thief, nullptr);
  EXPECT_EQ(thief->admission_error, queue::AdmissionError::kAccountNotAllowed);
  EXPECT_EQ(thief->qos, "normal");
  EXPECT_EQ(thief->account, "team-a");
  EXPECT_THAT(thief->admission_message, HasSubstr("\"team-b\""));
  EXPECT_EQ(Pending(built, "team-a/greedy")->qos, "normal");
  // No default QOS in team-b: the table's lowest.
  EXPECT_EQ(Pending(built, "team-b/greedy")->admission_error, queue::AdmissionError::kQosNotAllowed);
  EXPECT_EQ(Pending(built, "team-b/greedy")->qos, "scavenger");
  EXPECT_EQ(Pending(built, "team-b/unknown")->qos, "scavenger");
  EXPECT_THAT(Pending(built, "team-b/unknown")->admission_message, HasSubstr("\"platinum\""));
}

// --- Defect 2: admitted values are fixed ------------------------------------------------------

TEST(AdmissionTest, ReannotatingARunningPodInteractiveDoesNotMakeItUnpreemptible) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("victim", "4", "scavenger", "n1");
  const Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  CycleStats s = loop.RunCycle(kNow);  // first sight: admitted as scavenger
  EXPECT_THAT(s.ignored_edits, IsEmpty());
  // The tenant re-annotates its running pod to the QOS that may not be preempted.
  w.Find("ns/victim")->metadata.annotations["onequeue.io/qos"] = "interactive";
  w.AddPod("jupyter", "2", "interactive");
  s = loop.RunCycle(kNow + 1);
  EXPECT_EQ(s.preemptions_started, 1);
  EXPECT_THAT(w.evictions, ElementsAre("ns/victim"));
  ASSERT_EQ(s.ignored_edits.size(), 1u);
  EXPECT_THAT(s.ignored_edits[0], HasSubstr("pod ns/victim: annotations changed after admission"));
  EXPECT_THAT(s.ignored_edits[0], HasSubstr("scheduled as admitted (qos \"scavenger\""));
}

TEST(AdmissionTest, AnIgnoredEditIsReportedOnceWhileItLasts) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("p", "1", "scavenger", "n1");
  const Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  loop.RunCycle(kNow);
  w.Find("ns/p")->metadata.annotations["onequeue.io/qos"] = "interactive";
  EXPECT_EQ(loop.RunCycle(kNow + 1).ignored_edits.size(), 1u);
  EXPECT_THAT(loop.RunCycle(kNow + 2).ignored_edits, IsEmpty());
}

TEST(AdmissionTest, ARunningPodKeepsTheQosAccountAndGangItWasAdmittedWith) {
  SnapshotOptions o;
  o.known_qos = {"interactive", "scavenger"};
  // Admitted alone, as scavenger, charged to ns; now it says interactive, another account and a gang.
  const auto was = std::make_shared<const PodRecord>(
      PodRecord::From(Pod("ns", "p", {{"onequeue.io/qos", "scavenger"}})));
  AdmittedPods admitted;
  admitted.emplace(std::string_view(was->uid), was);
  o.admitted = &admitted;
  auto built = BuildSnapshot({PoolNode("n1")},
                             {Pod("ns", "p",
                                  {{"onequeue.io/qos", "interactive"}, {"onequeue.io/account", "vip"},
                                   {"onequeue.io/group", "shield"}, {"onequeue.io/group-size", "2"}},
                                  "n1"),
                              Pod("ns", "q", {{"onequeue.io/qos", "interactive"}, {"onequeue.io/group", "shield"}},
                                  "n1")},
                             o, kNow);
  const auto& running = built.snapshot->running;
  ASSERT_EQ(running.size(), 2u);  // p is not glued into q's gang
  const queue::RunningWorkload& p = running[0].id == "ns/p" ? running[0] : running[1];
  EXPECT_EQ(p.id, "ns/p");
  EXPECT_EQ(p.qos, "scavenger");
  EXPECT_EQ(p.account, "ns");
  EXPECT_EQ(p.gang_id, "");
  ASSERT_EQ(built.ignored_edits.size(), 1u);
  EXPECT_THAT(built.ignored_edits[0], HasSubstr("pod ns/p"));
  // Remembered for the next cycle: p as admitted, q (first seen bound) as it carries itself.
  EXPECT_EQ(AdmittedValues(*built.admitted.at("uid-p")), (AdmittedAs{"scavenger", "", "", ""}));
  EXPECT_EQ(AdmittedValues(*built.admitted.at("uid-q")), (AdmittedAs{"interactive", "", "shield", ""}));
}

TEST(AdmissionTest, APendingPodIsAdmittedAsItIsWhenLastSeenPending) {
  SnapshotOptions o;
  o.known_qos = {"interactive", "scavenger"};
  auto pending = BuildSnapshot({PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "scavenger"}})}, o, kNow);
  EXPECT_EQ(AdmittedValues(*pending.admitted.at("uid-p")), (AdmittedAs{"scavenger", "", "", ""}));
  // Bound since, and re-annotated: scheduled as scavenger.
  o.admitted = &pending.admitted;
  auto bound = BuildSnapshot({PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "interactive"}}, "n1")}, o, kNow);
  ASSERT_EQ(bound.snapshot->running.size(), 1u);
  EXPECT_EQ(bound.snapshot->running[0].qos, "scavenger");
  EXPECT_TRUE(bound.admitted.count("uid-p"));
}

TEST(AdmissionTest, ARunningPodWithAQosItsNamespaceMayNotUseIsScheduledWithTheDefault) {
  // Bound by someone else (or before the policy): it cannot keep a QOS its namespace may not use.
  SnapshotOptions o;
  o.known_qos = {"interactive", "normal"};
  o.namespace_policies["ns"] = {{"normal"}, "normal", {}, ""};
  auto built = BuildSnapshot({PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "interactive"}}, "n1")}, o, kNow);
  ASSERT_EQ(built.snapshot->running.size(), 1u);
  EXPECT_EQ(built.snapshot->running[0].qos, "normal");
  ASSERT_EQ(built.ignored_edits.size(), 1u);
  EXPECT_THAT(built.ignored_edits[0], HasSubstr("QOS \"interactive\" is not allowed in namespace \"ns\""));
}

// --- Defect 3: running and pending priorities on one scale ------------------------------------

TEST(AdmissionTest, APodWithAHighPriorityClassIsPreemptibleByAHigherQosWhenItsQosAllows) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("victim", "4", "scavenger", "n1");
  w.Find("ns/victim")->priority = 100000;  // above the largest multifactor total (23000 here)
  w.AddPod("jupyter", "2", "interactive");
  const Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  CycleStats s = loop.RunCycle(kNow);
  EXPECT_EQ(s.preemptions_started, 1);
  EXPECT_THAT(w.evictions, ElementsAre("ns/victim"));
}

TEST(AdmissionTest, APodThatTheMultifactorRanksHigherIsNotPreemptedByAnEqualQosWithALowerPriorityClass) {
  // "normal" may preempt "normal" (Slurm's Preempt= may list the QOS itself), so only the
  // priorities decide. The running pod is larger (size factor 1); the preemptor is small: the
  // multifactor ranks the running pod higher, though its PriorityClass value (1000) is below the
  // preemptor's multifactor total (~10250).
  queue::QueueConfig qc;
  qc.qos = {{"normal", 100, true, {"normal"}, 0}};
  SnapshotOptions o;
  o.known_qos = {"normal"};
  o.queue_config = &qc;
  auto built = BuildSnapshot(
      {PoolNode("n1")},
      {Pod("ns", "running", {{"onequeue.io/qos", "normal"}}, "n1", "4", 1000, "2026-11-20T10:00:00Z"),
       Pod("ns", "preemptor", {{"onequeue.io/qos", "normal"}}, "", "1", 0, "2026-11-21T10:59:00Z")},
      o, kNow);
  ASSERT_EQ(built.snapshot->running.size(), 1u);
  ASSERT_EQ(built.snapshot->pending.size(), 1u);
  queue::CheapestVictimsPlanner preemption;
  queue::QueuePlanner planner(qc, &preemption);
  const queue::Plan plan = planner.PlanCycle(built.snapshot, kNow);
  ASSERT_EQ(plan.priorities.size(), 1u);
  EXPECT_GT(built.snapshot->running[0].priority, plan.priorities[0].total);
  EXPECT_THAT(plan.preemptions, IsEmpty());
  EXPECT_THAT(plan.starts, IsEmpty());

  // And the other way round: sizes and ages swapped, the preemptor ranks higher by the same
  // multifactor and takes the node.
  auto swapped = BuildSnapshot(
      {PoolNode("n1")},
      {Pod("ns", "running", {{"onequeue.io/qos", "normal"}}, "n1", "1", 1000, "2026-11-21T10:59:00Z"),
       Pod("ns", "preemptor", {{"onequeue.io/qos", "normal"}}, "", "4", 0, "2026-11-20T10:00:00Z")},
      o, kNow);
  queue::QueuePlanner planner2(qc, &preemption);
  const queue::Plan plan2 = planner2.PlanCycle(swapped.snapshot, kNow);
  ASSERT_EQ(plan2.preemptions.size(), 1u);
  EXPECT_THAT(plan2.preemptions[0].victims, ElementsAre("ns/running"));
}

// --- Issue 24 M4: what a tenant cannot change or lift -----------------------------------------

// The time limit (onequeue.io/time-limit, else activeDeadlineSeconds) is fixed when the pod is
// first seen: a limit edited later, pending or bound, is ignored (and reported), so a tenant
// cannot be backfilled on a short limit and then lengthen it.
TEST(AdmissionTest, TheTimeLimitIsFixedWhenThePodIsFirstSeen) {
  SnapshotOptions o;
  o.known_qos = {"scavenger"};
  const json first_seen = {{"onequeue.io/qos", "scavenger"}, {"onequeue.io/time-limit", "30m"}};
  auto first = BuildSnapshot({PoolNode("n1")}, {Pod("ns", "p", first_seen)}, o, kNow);
  ASSERT_NE(Pending(first, "ns/p"), nullptr);
  ASSERT_EQ(Pending(first, "ns/p")->time_limit, 1800);
  // Still pending, edited: the limit it was first seen with stays.
  o.admitted = &first.admitted;
  auto edited = BuildSnapshot(
      {PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "scavenger"}, {"onequeue.io/time-limit", "1m"}})}, o, kNow);
  ASSERT_NE(Pending(edited, "ns/p"), nullptr);
  EXPECT_EQ(Pending(edited, "ns/p")->time_limit, 1800);
  // Bound, then lengthened to 100 hours: it still ends 30 minutes after it started.
  o.admitted = &edited.admitted;
  auto bound = BuildSnapshot(
      {PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "scavenger"}, {"onequeue.io/time-limit", "100h"}}, "n1")},
      o, kNow);
  ASSERT_EQ(bound.snapshot->running.size(), 1u);
  EXPECT_EQ(bound.snapshot->running[0].expected_end, bound.snapshot->running[0].start_time + 1800);
  ASSERT_EQ(bound.ignored_edits.size(), 1u);
  EXPECT_THAT(bound.ignored_edits[0], HasSubstr("time limit"));
}

// An unparsable limit is not fixed: the tenant may correct it while the pod waits.
TEST(AdmissionTest, AnInvalidTimeLimitMayBeCorrectedWhilePending) {
  SnapshotOptions o;
  o.known_qos = {"scavenger"};
  auto first = BuildSnapshot(
      {PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "scavenger"}, {"onequeue.io/time-limit", "soon"}})}, o, kNow);
  ASSERT_EQ(Pending(first, "ns/p")->admission_error, queue::AdmissionError::kInvalidAnnotation);
  o.admitted = &first.admitted;
  auto fixed = BuildSnapshot(
      {PoolNode("n1")}, {Pod("ns", "p", {{"onequeue.io/qos", "scavenger"}, {"onequeue.io/time-limit", "10m"}})}, o, kNow);
  EXPECT_EQ(Pending(fixed, "ns/p")->admission_error, queue::AdmissionError::kNone);
  EXPECT_EQ(Pending(fixed, "ns/p")->time_limit, 600);
}

// `oq hold` is recorded in the pod's status (condition onequeue.io/Held), which the pod's owner
// cannot write (the edit and admin roles have no pods/status), not in an annotation the owner
// can delete; an owner's own onequeue.io/hold annotation neither holds nor releases anything.
k8s::Pod WithHeldCondition(k8s::Pod pod, const std::string& status, const std::string& message) {
  pod.conditions.push_back({"onequeue.io/Held", status, "HeldByAdministrator", message, ""});
  return pod;
}

TEST(AdmissionTest, AHoldIsTheHeldConditionAndTheOwnersAnnotationCannotLiftIt) {
  SnapshotOptions o;
  o.known_qos = {"scavenger"};
  const json plain = {{"onequeue.io/qos", "scavenger"}};
  json annotated = plain;
  annotated["onequeue.io/hold"] = "maintenance";
  auto built = BuildSnapshot(
      {PoolNode("n1")},
      {WithHeldCondition(Pod("ns", "held", plain), "True", "maintenance"),  // held; owner removed any annotation
       WithHeldCondition(Pod("ns", "released", plain), "False", ""),        // oq release
       Pod("ns", "annotated", annotated)},                                  // the owner's annotation alone
      o, kNow);
  ASSERT_NE(Pending(built, "ns/held"), nullptr);
  EXPECT_TRUE(Pending(built, "ns/held")->held);
  EXPECT_FALSE(Pending(built, "ns/released")->held);
  EXPECT_FALSE(Pending(built, "ns/annotated")->held);
  EXPECT_EQ(PodRecord::From(WithHeldCondition(Pod("ns", "held", plain), "True", "maintenance")).hold, "maintenance");
}

// --- Issue 24 M4: a pod without a QOS is a victim as a pod of its default QOS ------------------
// Its namespace's defaultQos, else the table's lowest QOS (docs/user-guide.md); its rank still
// comes from its PriorityClass, as before.

TEST(AdmissionTest, APodWithoutAQosIsPreemptibleAsTheLowestQosWhenItsNamespaceHasNoDefault) {
  World w;
  w.AddNode("n1", "4");
  w.AddPod("victim", "4", "", "n1");
  w.Find("ns/victim")->metadata.annotations.erase("onequeue.io/qos");
  w.AddPod("jupyter", "2", "interactive");
  const Config cfg = TestConfig();
  SchedulingLoop loop(cfg, &w, &w);
  CycleStats s = loop.RunCycle(kNow);
  EXPECT_EQ(s.preemptions_started, 1);
  EXPECT_THAT(w.evictions, ElementsAre("ns/victim"));
}

TEST(AdmissionTest, APodWithoutAQosRanksByItsPriorityClassButIsAVictimAsItsDefaultQos) {
  queue::QueueConfig qc;
  qc.qos = {{"interactive", 1000, false, {"normal", "scavenger"}, 0},
            {"normal", 100, true, {}, 0},
            {"scavenger", 0, true, {}, 0}};
  SnapshotOptions o;
  o.known_qos = {"interactive", "normal", "scavenger"};
  o.queue_config = &qc;
  o.namespace_policies["team-a"] = {{}, "normal", {}, ""};
  auto built = BuildSnapshot({PoolNode("n1", "8")},
                             {Pod("ns", "bare", json::object(), "n1", "1", 500000000),
                              Pod("ns", "scav", {{"onequeue.io/qos", "scavenger"}}, "n1", "1"),
                              Pod("team-a", "defaulted", json::object(), "n1", "1")},
                             o, kNow);
  std::map<std::string, const queue::RunningWorkload*> running;
  for (const auto& r : built.snapshot->running) running[r.id] = &r;
  ASSERT_EQ(running.size(), 3u);
  EXPECT_EQ(running["ns/bare"]->qos, "scavenger");        // no namespace default: the lowest QOS
  EXPECT_EQ(running["team-a/defaulted"]->qos, "normal");  // the namespace's defaultQos
  // Ranked by its PriorityClass (0.5 of the QOS factor), not as a scavenger pod (0).
  EXPECT_GT(running["ns/bare"]->priority, running["ns/scav"]->priority);
  // And the interactive preemptor may take it.
  queue::CheapestVictimsPlanner preemption;
  queue::QueuePlanner planner(qc, &preemption);
  auto with_preemptor = BuildSnapshot({PoolNode("n1", "1")},
                                      {Pod("ns", "bare", json::object(), "n1", "1", 500000000),
                                       Pod("ns", "jupyter", {{"onequeue.io/qos", "interactive"}}, "", "1")},
                                      o, kNow);
  const queue::Plan plan = planner.PlanCycle(with_preemptor.snapshot, kNow);
  ASSERT_EQ(plan.preemptions.size(), 1u);
  EXPECT_THAT(plan.preemptions[0].victims, ElementsAre("ns/bare"));
}

}  // namespace
}  // namespace onequeue::scheduler

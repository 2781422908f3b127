// Placement parity with kube-scheduler's PodTopologySpread and InterPodAffinity filters (issue 28):
// Kubernetes objects in, the plan out. Pods placed in one cycle count for each other, as
// kube-scheduler's pods placed one at a time do.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "nlohmann/json.hpp"
#include "queue/planner.h"
#include "queue/preemption.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr queue::Time kNow = 1795262400;
constexpr const char* kZone = "topology.kubernetes.io/zone";

k8s::Node Node(const std::string& name, const std::string& zone, json labels = json::object()) {
  labels["onequeue.io/pool"] = "a";
  labels["kubernetes.io/hostname"] = name;
  if (!zone.empty()) labels[kZone] = zone;
  json j = {{"metadata", {{"name", name}, {"labels", labels}}},
            {"status", {{"allocatable", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  return *k8s::Node::FromJson(j);
}

json Pod(const std::string& name, json labels, const std::string& ns = "ns") {
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}, {"creationTimestamp", "2026-11-21T10:00:00Z"}}},
          {"spec", {{"schedulerName", "onequeue"},
                    {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}
json Bound(json pod, const std::string& node) {
  pod["spec"]["nodeName"] = node;
  pod["spec"]["schedulerName"] = "default-scheduler";
  pod["status"]["phase"] = "Running";
  return pod;
}
json Spread(json pod, json selector, int max_skew = 1, json extra = json::object()) {
  json c = {{"maxSkew", max_skew}, {"topologyKey", kZone}, {"whenUnsatisfiable", "DoNotSchedule"}, {"labelSelector", selector}};
  c.update(extra);
  pod["spec"]["topologySpreadConstraints"].push_back(c);
  return pod;
}
json Term(json selector, const std::string& key = kZone) { return {{"labelSelector", selector}, {"topologyKey", key}}; }
json WithAffinity(json pod, const char* kind, json term) {
  pod["spec"]["affinity"][kind]["requiredDuringSchedulingIgnoredDuringExecution"].push_back(term);
  return pod;
}
json Labels(const std::string& app) { return {{"matchLabels", {{"app", app}}}}; }

std::vector<k8s::Pod> Parse(const std::vector<json>& pods) {
  std::vector<k8s::Pod> out;
  for (const json& j : pods) {
    auto p = k8s::Pod::FromJson(j);
    EXPECT_TRUE(p.ok()) << p.status();
    out.push_back(*p);
  }
  return out;
}

struct Result {
  BuiltSnapshot built;
  queue::Plan plan;
  // workload id -> the zone (or node, by_node) of its start
  std::map<std::string, std::string> where;
  std::vector<std::string> waiting;
};

Result Plan(const std::vector<k8s::Node>& nodes, const std::vector<json>& pods, bool by_node = false) {
  Result r{BuildSnapshot(nodes, Parse(pods), SnapshotOptions(), kNow), {}, {}, {}};
  queue::CheapestVictimsPlanner preemption;
  queue::QueuePlanner planner(queue::QueueConfig(), &preemption);
  r.plan = planner.PlanCycle(r.built.snapshot, kNow);
  for (const auto& s : r.plan.starts) {
    const queue::Node& n = r.built.snapshot->nodes[s.member_nodes.at(0)];
    r.where[s.workload] = by_node ? n.name : n.labels.at(kZone);
  }
  for (const auto& w : r.plan.waiting) r.waiting.emplace_back(w.workload);
  std::sort(r.waiting.begin(), r.waiting.end());
  return r;
}

std::map<std::string, int> PerZone(const Result& r) {
  std::map<std::string, int> out;
  for (const auto& [id, zone] : r.where) ++out[zone];
  return out;
}

std::vector<k8s::Node> TwoZones() { return {Node("a1", "a"), Node("a2", "a"), Node("b1", "b"), Node("b2", "b")}; }

// PodTopologySpread: six replicas created at once spread 3/3 over two zones, although one zone
// has room for all of them (the control without the constraint packs them).
TEST(InterPodPlacementTest, SpreadOverZonesCountsThePodsPlacedInTheSameCycle) {
  std::vector<json> spread, packed;
  for (int i = 0; i < 6; ++i) {
    spread.push_back(Spread(Pod("web-" + std::to_string(i), {{"app", "web"}}), Labels("web")));
    packed.push_back(Pod("web-" + std::to_string(i), {{"app", "web"}}));
  }
  const Result control = Plan(TwoZones(), packed);
  ASSERT_EQ(control.where.size(), 6u);
  EXPECT_NE(PerZone(control), (std::map<std::string, int>{{"a", 3}, {"b", 3}}));

  const Result r = Plan(TwoZones(), spread);
  EXPECT_EQ(PerZone(r), (std::map<std::string, int>{{"a", 3}, {"b", 3}}));
}

// Bound pods of the same namespace and selector count (any scheduler's); other namespaces' do not;
// a node without the key is never chosen.
TEST(InterPodPlacementTest, SpreadCountsBoundPodsOfItsNamespaceAndSkipsNodesWithoutTheKey) {
  std::vector<k8s::Node> nodes = TwoZones();
  nodes.push_back(Node("nozone", ""));
  const Result r = Plan(nodes, {Bound(Pod("old", {{"app", "web"}}), "a1"),
                                Bound(Pod("foreign", {{"app", "web"}}, "other"), "b1"),
                                Bound(Pod("foreign2", {{"app", "web"}}, "other"), "b2"),
                                Spread(Pod("new", {{"app", "web"}}), Labels("web"))});
  EXPECT_EQ(r.where.at("ns/new"), "b");

  const Result alone = Plan({Node("nozone", "")}, {Spread(Pod("new", {{"app", "web"}}), Labels("web"))});
  EXPECT_THAT(alone.where, IsEmpty());
  EXPECT_THAT(alone.waiting, ElementsAre("ns/new"));
}

// minDomains: with fewer domains than asked, the global minimum is 0, so one zone holding a
// matching pod takes no second one (maxSkew 1); without minDomains it does.
TEST(InterPodPlacementTest, MinDomainsReadsTheMinimumAsZeroWhileDomainsAreFewer) {
  const std::vector<k8s::Node> one_zone = {Node("a1", "a"), Node("a2", "a")};
  const json bound = Bound(Pod("old", {{"app", "web"}}), "a1");
  EXPECT_EQ(Plan(one_zone, {bound, Spread(Pod("new", {{"app", "web"}}), Labels("web"))}).where.size(), 1u);
  const Result r = Plan(one_zone, {bound, Spread(Pod("new", {{"app", "web"}}), Labels("web"), 1, {{"minDomains", 2}})});
  EXPECT_THAT(r.where, IsEmpty());
  EXPECT_THAT(r.waiting, ElementsAre("ns/new"));
}

// nodeAffinityPolicy Honor (the default): a zone the pod's node selector excludes does not pull
// the minimum down; with Ignore it does, and the pod cannot go anywhere.
TEST(InterPodPlacementTest, NodeAffinityPolicyDecidesWhichZonesCount) {
  const std::vector<k8s::Node> nodes = {Node("a1", "a", {{"tier", "x"}}), Node("b1", "b", {{"tier", "x"}}), Node("c1", "c")};
  auto pod = [](json extra) {
    json p = Spread(Pod("new", {{"app", "web"}}), Labels("web"), 1, extra);
    p["spec"]["nodeSelector"] = {{"tier", "x"}};
    return p;
  };
  const std::vector<json> bound = {Bound(Pod("p1", {{"app", "web"}}), "a1"), Bound(Pod("p2", {{"app", "web"}}), "b1")};
  std::vector<json> honor = bound, ignore = bound;
  honor.push_back(pod(json::object()));
  ignore.push_back(pod({{"nodeAffinityPolicy", "Ignore"}}));
  EXPECT_EQ(Plan(nodes, honor).where.size(), 1u);
  EXPECT_THAT(Plan(nodes, ignore).waiting, ElementsAre("ns/new"));
}

// matchLabelKeys: only the pods of the pod's own revision (pod-template-hash) are counted.
TEST(InterPodPlacementTest, MatchLabelKeysCountOnlyThePodsOfTheSameRevision) {
  const std::vector<k8s::Node> nodes = {Node("a1", "a"), Node("b1", "b", {{"tier", "full"}})};
  std::vector<json> pods = {Bound(Pod("old1", {{"app", "web"}, {"pod-template-hash", "old"}}), "a1"),
                            Bound(Pod("old2", {{"app", "web"}, {"pod-template-hash", "old"}}), "a1")};
  // b1 is taken by another pod so the choice is zone a or nothing.
  json filler = Bound(Pod("filler", {{"app", "db"}}), "b1");
  filler["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4";
  pods.push_back(filler);
  std::vector<json> without = pods, with = pods;
  without.push_back(Spread(Pod("new", {{"app", "web"}, {"pod-template-hash", "new"}}), Labels("web")));
  with.push_back(Spread(Pod("new", {{"app", "web"}, {"pod-template-hash", "new"}}), Labels("web"), 1,
                        {{"matchLabelKeys", {"pod-template-hash"}}}));
  EXPECT_THAT(Plan(nodes, without).waiting, ElementsAre("ns/new"));
  EXPECT_EQ(Plan(nodes, with).where.at("ns/new"), "a");
}

// ScheduleAnyway is a preference: never a reason to wait.
TEST(InterPodPlacementTest, ScheduleAnywayNeverKeepsAPodPending) {
  json p = Spread(Pod("new", {{"app", "web"}}), Labels("web"), 1, {{"whenUnsatisfiable", "ScheduleAnyway"}, {"minDomains", 5}});
  EXPECT_EQ(Plan({Node("a1", "a")}, {Bound(Pod("old", {{"app", "web"}}), "a1"), p}).where.size(), 1u);
}

// Required podAntiAffinity on the zone key: three replicas that repel each other, two zones: two
// start (in different zones) in one cycle, the third waits.
TEST(InterPodPlacementTest, AntiAffinityOnAnyKeyHoldsWithinOneCycle) {
  std::vector<json> pods;
  for (const char* name : {"db-0", "db-1", "db-2"}) pods.push_back(WithAffinity(Pod(name, {{"app", "db"}}), "podAntiAffinity", Term(Labels("db"))));
  const Result r = Plan(TwoZones(), pods);
  EXPECT_EQ(PerZone(r), (std::map<std::string, int>{{"a", 1}, {"b", 1}}));
  EXPECT_EQ(r.waiting.size(), 1u);

  // Hostname key: one per node.
  std::vector<json> per_node;
  for (const char* name : {"x-0", "x-1", "x-2"}) {
    per_node.push_back(WithAffinity(Pod(name, {{"app", "x"}}), "podAntiAffinity", Term(Labels("x"), "kubernetes.io/hostname")));
  }
  const Result hosts = Plan({Node("a1", "a"), Node("a2", "a")}, per_node, /*by_node=*/true);
  ASSERT_EQ(hosts.where.size(), 2u);
  EXPECT_NE(hosts.where.begin()->second, std::next(hosts.where.begin())->second);
}

// Symmetric: a bound pod's anti-affinity keeps a new matching pod (with no rule of its own) out of
// its zone; and a pod placed earlier in the cycle does the same.
TEST(InterPodPlacementTest, AnExistingPodsAntiAffinityKeepsMatchingPodsOut) {
  const json repels_web = WithAffinity(Pod("guard", {{"app", "guard"}}), "podAntiAffinity", Term(Labels("web")));
  const Result bound = Plan(TwoZones(), {Bound(repels_web, "a1"), Pod("web", {{"app", "web"}})});
  EXPECT_EQ(bound.where.at("ns/web"), "b");

  // In one cycle: the guard (higher priority: created first) takes a zone, the web pods avoid it.
  json guard = repels_web;
  guard["metadata"]["creationTimestamp"] = "2026-11-21T09:00:00Z";
  const Result cycle = Plan(TwoZones(), {guard, Pod("web-0", {{"app", "web"}}), Pod("web-1", {{"app", "web"}})});
  ASSERT_EQ(cycle.where.size(), 3u);
  EXPECT_NE(cycle.where.at("ns/web-0"), cycle.where.at("ns/guard"));
  EXPECT_NE(cycle.where.at("ns/web-1"), cycle.where.at("ns/guard"));
}

// Symmetric, with preemption (kube-scheduler's SelectVictimsOnNode): where every pod repelling the
// newcomer has a lower priority, they are its victims, even when the node has room beside them;
// a repelling pod it may not preempt keeps the node out ("node(s) didn't satisfy existing pods
// anti-affinity rules").
TEST(InterPodPlacementTest, ExistingPodsAntiAffinityIsLiftedOnlyByPreemptingThePodsThatCarryIt) {
  const json repels_web = WithAffinity(Pod("guard", {{"app", "guard"}}), "podAntiAffinity",
                                       Term(Labels("web"), "kubernetes.io/hostname"));
  json guard = Bound(repels_web, "a1");
  guard["spec"]["schedulerName"] = "onequeue";
  guard["spec"]["priority"] = 10;
  json web = Pod("web", {{"app", "web"}});
  web["spec"]["priority"] = 1000;
  const Result r = Plan({Node("a1", "a")}, {guard, web}, /*by_node=*/true);
  EXPECT_TRUE(r.plan.starts.empty());
  ASSERT_EQ(r.plan.preemptions.size(), 1u);
  EXPECT_EQ(r.plan.preemptions[0].preemptor, "ns/web");
  EXPECT_THAT(r.plan.preemptions[0].victims, ElementsAre("ns/guard"));

  guard["spec"]["priority"] = 5000;  // it may not preempt the guard: the node stays out
  const Result kept = Plan({Node("a1", "a")}, {guard, web}, /*by_node=*/true);
  EXPECT_TRUE(kept.plan.starts.empty());
  EXPECT_TRUE(kept.plan.preemptions.empty());
  ASSERT_EQ(kept.plan.waiting.size(), 1u);
  EXPECT_THAT(std::string(kept.plan.waiting[0].Message()),
              HasSubstr("node(s) didn't satisfy existing pods anti-affinity rules"));
}

// The preemptor's own anti-affinity, with preemption (kube-scheduler's SelectVictimsOnNode re-runs
// its InterPodAffinity filter with the lower-priority pods removed): where every pod its term
// repels in the node's domain has a lower priority, they are its victims, even when the node has
// room beside them; a repelled pod it may not preempt, or one that is no running workload (a
// DaemonSet's), keeps the node out ("node(s) didn't match pod anti-affinity rules").
TEST(InterPodPlacementTest, OwnAntiAffinityIsLiftedOnlyByPreemptingThePodsItRepels) {
  json old = Bound(Pod("web-old", {{"app", "web"}}), "a1");
  old["spec"]["schedulerName"] = "onequeue";
  old["spec"]["priority"] = 10;
  json web = WithAffinity(Pod("web", {{"app", "web"}}), "podAntiAffinity", Term(Labels("web"), "kubernetes.io/hostname"));
  web["spec"]["priority"] = 1000;
  const json batch = Bound(Pod("batch", {{"app", "batch"}}), "a1");  // not repelled: stays
  const Result r = Plan({Node("a1", "a")}, {old, batch, web}, /*by_node=*/true);
  EXPECT_TRUE(r.plan.starts.empty());
  ASSERT_EQ(r.plan.preemptions.size(), 1u);
  EXPECT_EQ(r.plan.preemptions[0].preemptor, "ns/web");
  EXPECT_THAT(r.plan.preemptions[0].victims, ElementsAre("ns/web-old"));

  old["spec"]["priority"] = 5000;  // it may not preempt web-old: the node stays out
  const Result kept = Plan({Node("a1", "a")}, {old, web}, /*by_node=*/true);
  EXPECT_TRUE(kept.plan.starts.empty());
  EXPECT_TRUE(kept.plan.preemptions.empty());
  ASSERT_EQ(kept.plan.waiting.size(), 1u);
  EXPECT_THAT(std::string(kept.plan.waiting[0].Message()), HasSubstr("node(s) didn't match pod anti-affinity rules"));

  json agent = Bound(Pod("web-agent", {{"app", "web"}}), "a1");
  agent["metadata"]["ownerReferences"] = {{{"apiVersion", "apps/v1"}, {"kind", "DaemonSet"}, {"name", "web-agent"},
                                           {"uid", "u1"}, {"controller", true}}};
  const Result daemon = Plan({Node("a1", "a")}, {agent, web}, /*by_node=*/true);
  EXPECT_TRUE(daemon.plan.starts.empty());
  EXPECT_TRUE(daemon.plan.preemptions.empty());
  EXPECT_EQ(daemon.waiting, std::vector<std::string>{"ns/web"});
}

// Required podAffinity: the pod goes where a matching pod runs; the first pod of a self-affine
// group goes anywhere and the rest follow it within the cycle; one matching nothing (not even
// itself) waits.
TEST(InterPodPlacementTest, AffinityCoLocatesAndTheFirstOfAGroupMayGoAnywhere) {
  const Result near = Plan(TwoZones(), {Bound(Pod("cache", {{"app", "cache"}}), "b2"),
                                        WithAffinity(Pod("web", {{"app", "web"}}), "podAffinity", Term(Labels("cache")))});
  EXPECT_EQ(near.where.at("ns/web"), "b");

  std::vector<json> group;
  for (const char* name : {"g-0", "g-1", "g-2", "g-3", "g-4", "g-5"}) {
    group.push_back(WithAffinity(Pod(name, {{"app", "g"}}), "podAffinity", Term(Labels("g"))));
  }
  const Result together = Plan(TwoZones(), group);
  EXPECT_EQ(together.where.size(), 6u);
  EXPECT_EQ(PerZone(together).size(), 1u);

  const Result alone = Plan(TwoZones(), {WithAffinity(Pod("lonely", {{"app", "web"}}), "podAffinity", Term(Labels("cache")))});
  EXPECT_THAT(alone.waiting, ElementsAre("ns/lonely"));
}

// namespaces and namespaceSelector: a term names other namespaces, or every one ({}); a selector
// with labels (onequeue does not watch namespaces) is refused with the reason, never ignored.
TEST(InterPodPlacementTest, NamespacesOfATermAndNamespaceSelectors) {
  const json other = Bound(Pod("cache", {{"app", "cache"}}, "other"), "b1");
  json named = Term(Labels("cache"));
  named["namespaces"] = {"other"};
  EXPECT_EQ(Plan(TwoZones(), {other, WithAffinity(Pod("web", {{"app", "web"}}), "podAffinity", named)}).where.at("ns/web"), "b");
  json every = Term(Labels("cache"));
  every["namespaceSelector"] = json::object();
  EXPECT_EQ(Plan(TwoZones(), {other, WithAffinity(Pod("web", {{"app", "web"}}), "podAffinity", every)}).where.at("ns/web"), "b");
  EXPECT_THAT(Plan(TwoZones(), {other, WithAffinity(Pod("web", {{"app", "web"}}), "podAffinity", Term(Labels("cache")))}).waiting,
              ElementsAre("ns/web"));  // its own namespace only: nothing matches

  json labelled = Term(Labels("cache"));
  labelled["namespaceSelector"] = {{"matchLabels", {{"team", "x"}}}};
  const Result refused = Plan(TwoZones(), {WithAffinity(Pod("web", {{"app", "web"}}), "podAntiAffinity", labelled)});
  ASSERT_EQ(refused.plan.waiting.size(), 1u);
  EXPECT_EQ(refused.plan.waiting[0].reason, queue::WaitReason::kInvalidAnnotation);
  EXPECT_THAT(std::string(refused.plan.waiting[0].Message()), HasSubstr("namespaceSelector"));
}

// A gang of more than one pod with such rules is refused with the reason.
TEST(InterPodPlacementTest, AGangWithInterPodRulesIsRefused) {
  std::vector<json> gang;
  for (const char* name : {"m-0", "m-1"}) {
    json p = Spread(Pod(name, {{"app", "m"}}), Labels("m"));
    p["metadata"]["annotations"] = {{"onequeue.io/group", "g"}, {"onequeue.io/group-size", "2"}};
    gang.push_back(p);
  }
  const Result r = Plan(TwoZones(), gang);
  ASSERT_EQ(r.plan.waiting.size(), 1u);
  EXPECT_EQ(r.plan.waiting[0].reason, queue::WaitReason::kInvalidAnnotation);
  EXPECT_THAT(std::string(r.plan.waiting[0].Message()), HasSubstr("group of 2 pods"));
}

}  // namespace
}  // namespace onequeue::scheduler

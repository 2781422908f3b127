#include "k8s_client/models.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace onequeue::k8s {
namespace {

using nlohmann::json;

Pod MustPod(const json& j) {
  absl::StatusOr<Pod> p = Pod::FromJson(j);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : Pod{};
}

json Ctr(const char* cpu, const char* mem, const char* restart = nullptr) {
  json c = {{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}, {"memory", mem}}}}}};
  if (restart) c["restartPolicy"] = restart;
  return c;
}

std::string Req(const Pod& p, const std::string& r) {
  auto it = p.requests.find(r);
  return it == p.requests.end() ? "<none>" : it->second.ToString();
}

// Cases after upstream resourcehelper's TestPodRequests (sidecars, init containers, overhead).
TEST(PodRequestsTest, SumsContainersAndTakesMaxOfInitContainers) {
  Pod p = MustPod({{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
                   {"spec", {{"containers", {Ctr("100m", "100Mi"), Ctr("200m", "100Mi")}},
                             {"initContainers", {Ctr("500m", "50Mi")}}}}});
  EXPECT_EQ(Req(p, "cpu"), "500m");
  EXPECT_EQ(Req(p, "memory"), "200Mi");
}

TEST(PodRequestsTest, SidecarsAddToTheTotalAndToLaterInitContainers) {
  Pod p = MustPod({{"metadata", {{"name", "p"}}},
                   {"spec", {{"containers", {Ctr("1", "1Gi")}},
                             {"initContainers", {Ctr("1", "1Gi", "Always"),   // sidecar
                                                 Ctr("2", "1Gi"),             // runs with it: 3
                                                 Ctr("1", "1Gi", "Always")}}}}});
  // steady state: 1 (main) + 1 + 1 (sidecars) = 3; init peak: 2 + 1 = 3 cpu, 2Gi memory
  EXPECT_EQ(Req(p, "cpu"), "3");
  EXPECT_EQ(Req(p, "memory"), "3Gi");
  Pod q = MustPod({{"metadata", {{"name", "q"}}},
                   {"spec", {{"containers", {Ctr("1", "1Gi")}},
                             {"initContainers", {Ctr("1", "1Gi", "Always"), Ctr("5", "1Gi")}}}}});
  EXPECT_EQ(Req(q, "cpu"), "6");  // init container 5 + the sidecar started before it
}

TEST(PodRequestsTest, OverheadAndPodLevelRequests) {
  Pod p = MustPod({{"metadata", {{"name", "p"}}},
                   {"spec", {{"containers", {Ctr("100m", "500Mi")}},
                             {"overhead", {{"cpu", "10m"}, {"memory", "1Mi"}}}}}});
  EXPECT_EQ(Req(p, "cpu"), "110m");
  EXPECT_EQ(Req(p, "memory"), "501Mi");
  Pod q = MustPod({{"metadata", {{"name", "q"}}},
                   {"spec", {{"containers", {Ctr("100m", "500Mi")}},
                             {"resources", {{"requests", {{"cpu", "2"}}}}}}}});
  EXPECT_EQ(Req(q, "cpu"), "2");
  EXPECT_EQ(Req(q, "memory"), "500Mi");
}

TEST(PodTest, ParsesSchedulingFieldsAndIgnoresUnknownOnes) {
  json j = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod", "futureField": {"x": 1},
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "42",
                 "labels": {"app": "a"}, "annotations": {"onequeue.io/qos": "high"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u0", "controller": true}],
                 "deletionTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"schedulerName": "onequeue", "priority": 1000, "priorityClassName": "high",
             "nodeSelector": {"disk": "ssd"},
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
             "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}],
             "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": 0.5, "memory": "1Gi"}}}]},
    "status": {"phase": "Pending", "nominatedNodeName": "n1",
               "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})");
  Pod p = MustPod(j);
  EXPECT_EQ(p.metadata.Key(), "ns/p");
  EXPECT_EQ(p.metadata.resource_version, "42");
  EXPECT_EQ(p.scheduler_name, "onequeue");
  EXPECT_EQ(p.priority, 1000);
  EXPECT_EQ(p.node_selector.at("disk"), "ssd");
  ASSERT_EQ(p.required_node_affinity.size(), 1u);
  EXPECT_EQ(p.required_node_affinity[0].match_expressions[0].values.size(), 2u);
  ASSERT_EQ(p.tolerations.size(), 1u);
  EXPECT_EQ(p.tolerations[0].toleration_seconds, 30);
  EXPECT_TRUE(p.metadata.owner_references[0].controller);
  EXPECT_EQ(p.metadata.deletion_timestamp, "2026-01-01T00:00:00Z");
  EXPECT_EQ(Req(p, "cpu"), "500m");  // a JSON number is accepted, as Quantity.UnmarshalJSON does
  EXPECT_EQ(p.nominated_node_name, "n1");
  EXPECT_EQ(p.conditions[0].reason, "Unschedulable");
}

TEST(PodTest, WrongTypesAndBadQuantitiesAreErrorsNotCrashes) {
  EXPECT_FALSE(Pod::FromJson(json::parse(R"({"metadata": {"name": 5}})")).ok());
  EXPECT_FALSE(Pod::FromJson(json::parse(R"({"spec": {"containers": {}}})")).ok());
  EXPECT_FALSE(Pod::FromJson(json::parse(
      R"({"spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}})")).ok());
  EXPECT_FALSE(Pod::FromJson(json::parse(R"({"spec": {"priority": "high"}})")).ok());
  EXPECT_FALSE(Pod::FromJson(json::parse(R"([1,2])")).ok());
  absl::Status s = Pod::FromJson(json::parse(R"({"spec": {"priority": 99999999999}})")).status();
  EXPECT_FALSE(s.ok());
}

TEST(ModelsTest, NodePdbPriorityClassLeaseEvent) {
  absl::StatusOr<Node> n = Node::FromJson(json::parse(R"({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
      "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
      "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                 "conditions": [{"type": "Ready", "status": "True"}]}})"));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(n->metadata.Key(), "n1");
  EXPECT_TRUE(n->unschedulable);
  EXPECT_EQ(n->allocatable.at("memory").ToString(), "32Gi");
  EXPECT_EQ(n->taints[0].effect, "NoSchedule");
  // Issue 26: every field of a taint is kept, so that the list can be written back whole.
  absl::StatusOr<Node> tainted = Node::FromJson(json::parse(R"({"metadata": {"name": "n2"},
      "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-21T10:00:00Z"}]}})"));
  ASSERT_TRUE(tainted.ok()) << tainted.status();
  EXPECT_EQ(tainted->taints[0].time_added, "2026-11-21T10:00:00Z");

  absl::StatusOr<PodDisruptionBudget> pdb = PodDisruptionBudget::FromJson(json::parse(R"({
      "metadata": {"name": "b", "namespace": "ns"},
      "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}},
      "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 2}})"));
  ASSERT_TRUE(pdb.ok()) << pdb.status();
  EXPECT_TRUE(pdb->min_available->is_string);
  EXPECT_EQ(pdb->min_available->string_value, "50%");
  EXPECT_EQ(pdb->selector->match_labels.at("app"), "a");

  absl::StatusOr<PriorityClass> pc = PriorityClass::FromJson(json::parse(
      R"({"metadata": {"name": "high"}, "value": 1000000, "preemptionPolicy": "Never"})"));
  ASSERT_TRUE(pc.ok());
  EXPECT_EQ(pc->value, 1000000);

  Lease l;
  l.metadata.name = "onequeue";
  l.metadata.namespace_ = "onequeue-system";
  l.metadata.resource_version = "7";
  l.holder_identity = "me";
  l.lease_duration_seconds = 15;
  absl::StatusOr<Lease> back = Lease::FromJson(l.ToJson());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->holder_identity, "me");
  EXPECT_EQ(back->metadata.resource_version, "7");

  Event e;
  e.metadata.namespace_ = "ns";
  e.metadata.name = "p.1";
  e.reason = "Scheduled";
  e.regarding.kind = "Pod";
  e.regarding.name = "p";
  e.series_count = 3;
  absl::StatusOr<Event> eb = Event::FromJson(e.ToJson());
  ASSERT_TRUE(eb.ok());
  EXPECT_EQ(eb->series_count, 3);
  EXPECT_EQ(eb->regarding.name, "p");
}

TEST(ModelsTest, CsiDriverAndStorageCapacityParseAndBadFieldsAreErrors) {
  auto driver = CsiDriver::FromJson(json::parse(R"({"metadata": {"name": "lvm"}, "spec": {}})"));
  ASSERT_TRUE(driver.ok());
  EXPECT_FALSE(driver->storage_capacity);  // unset: no capacity check
  auto capacity = CsiStorageCapacity::FromJson(
      json::parse(R"({"metadata": {"name": "c", "namespace": "kube-system"}, "storageClassName": "lvm",
                                "capacity": "1Gi"})"));
  ASSERT_TRUE(capacity.ok());
  EXPECT_FALSE(capacity->node_topology.has_value());  // no node has access
  EXPECT_EQ(capacity->capacity->Value(), int64_t{1} << 30);
  EXPECT_FALSE(capacity->maximum_volume_size.has_value());
  EXPECT_EQ(CsiStorageCapacity::FromJson(json::parse(R"({"capacity": "lots"})")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CsiDriver::FromJson(json::parse(R"({"spec": {"storageCapacity": "yes"}})")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onequeue::k8s

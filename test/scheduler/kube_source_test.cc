// The Kubernetes source: records parsed once per change, a state rebuilt only when a generation
// moved, unchanged records shared between states.
#include "scheduler/kube_source.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;

k8s::Pod Pod(const std::string& name, const std::string& node = "") {
  json j = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"resourceVersion", "1"}}},
            {"spec", {{"schedulerName", "onequeue"},
                      {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}},
            {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) j["spec"]["nodeName"] = node;
  return *k8s::Pod::FromJson(j);
}

k8s::Node Node(const std::string& name) {
  json j = {{"metadata", {{"name", name}, {"labels", {{"onequeue.io/pool", "a"}}}}},
            {"status", {{"allocatable", {{"cpu", "4"}}}, {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  return *k8s::Node::FromJson(j);
}

TEST(KubeSourceTest, AStateIsRebuiltOnlyWhenSomethingChangedAndSharesUnchangedRecords) {
  KubeSource source;
  source.UpsertNode(Node("n1"));
  source.UpsertPod(Pod("a"));
  source.UpsertPod(Pod("b"));
  auto first = source.State();
  ASSERT_EQ(first->pods.size(), 2u);
  EXPECT_EQ(source.State(), first) << "nothing changed: the same state";
  source.UpsertPod(Pod("b", "n1"));  // b is bound
  auto second = source.State();
  ASSERT_NE(second, first);
  EXPECT_GT(second->generation, first->generation);
  EXPECT_EQ(second->pods[0], first->pods[0]) << "a did not change: its record is shared";
  EXPECT_EQ(second->pods[1]->node_name, "n1");
  EXPECT_GT(second->pods[1]->generation, first->pods[1]->generation);
  source.DeletePod(Pod("a"));
  EXPECT_EQ(source.State()->pods.size(), 1u);
  source.DeleteNode(Node("n1"));
  EXPECT_TRUE(source.State()->nodes.empty());
  // The first state is immutable: still what it was.
  EXPECT_EQ(first->pods.size(), 2u);
  EXPECT_EQ(first->pods[1]->node_name, "");
}

// PodDisruptionBudgets reach the state the snapshot is built from (issue 13 defect 7): a change of
// a budget's status moves the generation, so the next cycle plans with it.
TEST(KubeSourceTest, BudgetsAreInTheStateAndTheirChangesMoveTheGeneration) {
  auto budget = [](int allowed) {
    return *k8s::PodDisruptionBudget::FromJson(
        json{{"metadata", {{"name", "db"}, {"namespace", "ns"}}},
             {"spec", {{"selector", {{"matchLabels", {{"app", "db"}}}}}}},
             {"status", {{"disruptionsAllowed", allowed}}}});
  };
  KubeSource source;
  source.UpsertBudget(budget(1));
  auto first = source.State();
  ASSERT_EQ(first->budgets.size(), 1u);
  EXPECT_EQ(first->budgets[0]->key, "ns/db");
  EXPECT_EQ(first->budgets[0]->disruptions_allowed, 1);
  source.UpsertBudget(budget(0));  // a pod of the budget became unready
  auto second = source.State();
  ASSERT_NE(second, first);
  EXPECT_EQ(second->budgets[0]->disruptions_allowed, 0);
  source.DeleteBudget(budget(0));
  EXPECT_TRUE(source.State()->budgets.empty());
  EXPECT_GT(source.generation(), second->generation);
}

TEST(KubeSourceTest, CsiNodesAreInTheStateWithEachDriversLimitAndTheirChangesNeedAFullCycle) {
  const auto csi_node = *k8s::CsiNode::FromJson(json{
      {"metadata", {{"name", "n1"}}},
      {"spec", {{"drivers", json::array({{{"name", "ebs.csi.aws.com"}, {"allocatable", {{"count", 25}}}},
                                         {{"name", "efs.csi.aws.com"}}})}}}});
  KubeSource source;
  const uint64_t before = source.generation();
  source.UpsertCsiNode(csi_node);
  auto state = source.State();
  ASSERT_EQ(state->csi_nodes.size(), 1u);
  EXPECT_EQ(state->csi_nodes[0]->metadata.name, "n1");
  ASSERT_EQ(state->csi_nodes[0]->drivers.size(), 2u);
  EXPECT_EQ(state->csi_nodes[0]->drivers[0].allocatable_count, 25);
  EXPECT_EQ(state->csi_nodes[0]->drivers[1].allocatable_count, std::nullopt);  // no limit
  EXPECT_TRUE(source.ChangesSince(before)->others);
  source.DeleteCsiNode(csi_node);
  EXPECT_TRUE(source.State()->csi_nodes.empty());
}

TEST(KubeSourceTest, CsiDriversAndStorageCapacitiesAreInTheStateAndTheirChangesNeedAFullCycle) {
  const auto driver = *k8s::CsiDriver::FromJson(
      json{{"metadata", {{"name", "lvm.csi.example.com"}}}, {"spec", {{"storageCapacity", true}}}});
  const auto capacity = *k8s::CsiStorageCapacity::FromJson(
      json{{"metadata", {{"name", "cap-n1"}, {"namespace", "kube-system"}}},
           {"storageClassName", "lvm"},
           {"nodeTopology", {{"matchLabels", {{"kubernetes.io/hostname", "n1"}}}}},
           {"capacity", "100Gi"},
           {"maximumVolumeSize", "10Gi"}});
  KubeSource source;
  uint64_t before = source.generation();
  source.UpsertCsiDriver(driver);
  EXPECT_TRUE(source.ChangesSince(before)->others);
  before = source.generation();
  source.UpsertCsiCapacity(capacity);
  EXPECT_TRUE(source.ChangesSince(before)->others);
  auto state = source.State();
  ASSERT_EQ(state->csi_drivers.size(), 1u);
  EXPECT_EQ(state->csi_drivers[0]->metadata.name, "lvm.csi.example.com");
  EXPECT_TRUE(state->csi_drivers[0]->storage_capacity);
  ASSERT_EQ(state->csi_capacities.size(), 1u);
  const k8s::CsiStorageCapacity& c = *state->csi_capacities[0];
  EXPECT_EQ(c.metadata.Key(), "kube-system/cap-n1");
  EXPECT_EQ(c.storage_class_name, "lvm");
  ASSERT_TRUE(c.node_topology.has_value());
  EXPECT_EQ(c.node_topology->match_labels.at("kubernetes.io/hostname"), "n1");
  EXPECT_EQ(c.capacity->Value(), int64_t{100} << 30);
  EXPECT_EQ(c.maximum_volume_size->Value(), int64_t{10} << 30);
  before = source.generation();
  source.DeleteCsiDriver(driver);
  source.DeleteCsiCapacity(capacity);
  EXPECT_TRUE(source.ChangesSince(before)->others);
  EXPECT_TRUE(source.State()->csi_drivers.empty());
  EXPECT_TRUE(source.State()->csi_capacities.empty());
}

}  // namespace
}  // namespace onequeue::scheduler

// Placement parity with kube-scheduler, side by side on one cluster (issue 28): the same pods,
// onequeue's (schedulerName onequeue, on a one-node onequeue pool) and kube-scheduler's twins
// (schedulerName default-scheduler, on a one-node pool of their own), each ending as its twin does:
//   * two pods asking one hostPort: one bound, the other Pending (Unschedulable);
//   * a pod asking more ephemeral-storage than any node has: Pending (Unschedulable), named;
//   * a gated pod: Pending with PodScheduled=False/SchedulingGated and no FailedScheduling, and
//     bound once its gates are removed;
//   * four pods with a hard topology spread constraint over two zones (two nodes a side): two
//     per zone; a pod with a DRA resource claim: never bound (onequeue refuses it with an event);
//   * a pod whose claim is of a WaitForFirstConsumer class: the claim annotated
//     volume.kubernetes.io/selected-node with the pod's node (onequeue binds the pod then; kube-
//     scheduler waits for a provisioner, which kwok's cluster has not); a pod whose claim does not
//     exist: Pending, the claim named.
// The real kube-apiserver, kube-scheduler and kwok; no mock. Bounded polling only.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "e2e/e2e_support.h"

namespace onequeue::e2e {
namespace {

using ::testing::HasSubstr;

class PlacementE2E : public E2ETest {
 protected:
  // A one-node pool: `pool` is the onequeue.io/pool label value; 100Gi of ephemeral-storage.
  void AddNode(const std::string& name, const std::string& pool, const std::string& zone = "") {
    json node = PoolNode(name, pool, "4");
    if (!zone.empty()) node["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone;
    for (const char* field : {"allocatable", "capacity"}) node["status"][field]["ephemeral-storage"] = "100Gi";
    ASSERT_TRUE(Create(client_.get(), k8s::kNodes, "", node).ok());
    ASSERT_TRUE(WaitForNodeReady(client_.get(), name)) << name;
  }

  // One pod for each scheduler: "oq-<name>" for onequeue, "ks-<name>" for kube-scheduler on its
  // own node; `edit` shapes both alike.
  void CreateTwins(const std::string& name, const std::function<void(json&)>& edit) {
    for (const bool ours : {true, false}) {
      PodOptions o;
      o.scheduler_name = ours ? "onequeue" : "default-scheduler";
      json pod = MakePod((ours ? "oq-" : "ks-") + name, ns_, o);
      if (!ours) pod["spec"]["nodeSelector"] = {{"onequeue.io/pool", peer_pool()}};
      edit(pod);
      auto s = Create(client_.get(), k8s::kPods, ns_, pod);
      ASSERT_TRUE(s.ok()) << name << ": " << s;
    }
  }

  std::string peer_pool() const { return "peer-" + ns_; }

  std::string ScheduledReason(const std::string& pod) {
    auto p = GetPod(client_.get(), ns_, pod);
    if (!p.ok()) return "";
    auto c = PodScheduled(*p);
    return c ? absl::StrCat(c->status, "/", c->reason) : "";
  }
  bool Bound(const std::string& pod) {
    auto p = GetPod(client_.get(), ns_, pod);
    return p.ok() && !p->node_name.empty();
  }
  // The notes of the FailedScheduling events about `pod`, joined.
  std::string FailedNotes(const std::string& pod) {
    std::string notes;
    for (const auto& e : EventsWithReason(client_.get(), ns_, pod, "FailedScheduling")) absl::StrAppend(&notes, e.note, "\n");
    return notes;
  }
};

json WithHostPort(json pod, int port) {
  pod["spec"]["containers"][0]["ports"] = json::array({{{"containerPort", port}, {"hostPort", port}}});
  return pod;
}

TEST_F(PlacementE2E, HostPortEphemeralStorageAndGatesEndAsKubeSchedulersTwins) {
  AddNode(ns_ + "-1", ns_);
  AddNode("peer-" + ns_, peer_pool());
  CreateTwins("port-a", [](json& p) { p = WithHostPort(p, 8080); });
  CreateTwins("port-b", [](json& p) { p = WithHostPort(p, 8080); });
  CreateTwins("disk", [](json& p) { p["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "200Gi"; });
  CreateTwins("gated", [](json& p) { p["spec"]["schedulingGates"] = json::array({{{"name", "example.com/quota"}}}); });
  StartScheduler();

  for (const std::string side : {"oq-", "ks-"}) {
    SCOPED_TRACE(side);
    // NodePorts: one of the two is bound, the other is Unschedulable and stays unbound.
    ASSERT_TRUE(Eventually(kBindTimeout, [&] {
      const bool a = Bound(side + "port-a"), b = Bound(side + "port-b");
      const std::string loser = side + (a ? "port-b" : "port-a");
      return a != b && ScheduledReason(loser) == "False/Unschedulable";
    })) << (scheduler_ ? scheduler_->Log() : "");
    // NodeResourcesFit: the disk pod is Unschedulable, its event names ephemeral-storage.
    ASSERT_TRUE(Eventually(kBindTimeout, [&] {
      return ScheduledReason(side + "disk") == "False/Unschedulable" &&
             absl::StrContains(FailedNotes(side + "disk"), "ephemeral-storage");
    })) << FailedNotes(side + "disk");
  }
  const std::string oq_loser = Bound("oq-port-a") ? "oq-port-b" : "oq-port-a";
  const std::string ks_loser = Bound("ks-port-a") ? "ks-port-b" : "ks-port-a";
  EXPECT_THAT(FailedNotes(ks_loser), HasSubstr("free ports"));
  // onequeue's event gives the queue's reason code (the port is named per node by oq explain).
  EXPECT_TRUE(absl::StartsWith(FailedNotes(oq_loser), "Resources:") ||
              absl::StartsWith(FailedNotes(oq_loser), "Priority:"))
      << FailedNotes(oq_loser);
  std::cout << "[ compare ] hostPort loser: kube-scheduler: " << FailedNotes(ks_loser)
            << "[ compare ] hostPort loser: onequeue: " << FailedNotes(oq_loser)
            << "[ compare ] disk: kube-scheduler: " << FailedNotes("ks-disk")
            << "[ compare ] disk: onequeue: " << FailedNotes("oq-disk") << std::flush;

  // SchedulingGates: both gated pods were seen by cycles that decided the others: each still
  // carries the API server's SchedulingGated condition, and no scheduler reported on it.
  for (const std::string pod : {"oq-gated", "ks-gated"}) {
    EXPECT_FALSE(Bound(pod)) << pod;
    EXPECT_EQ(ScheduledReason(pod), "False/SchedulingGated") << pod;
    EXPECT_EQ(FailedNotes(pod), "") << pod;
  }
  for (const std::string pod : {"oq-gated", "ks-gated"}) {
    auto out = testing::Kubectl(testing::K8sClusterEnvironment::Info(),
                                {"patch", "pod", pod, "-n", ns_, "--type=json", "-p",
                                 R"([{"op":"remove","path":"/spec/schedulingGates"}])"});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  for (const std::string pod : {"oq-gated", "ks-gated"}) {
    EXPECT_TRUE(Eventually(kBindTimeout, [&] { return Bound(pod); })) << pod;
  }
  // Still one pod per host port, on each side.
  EXPECT_NE(Bound("oq-port-a"), Bound("oq-port-b"));
  EXPECT_NE(Bound("ks-port-a"), Bound("ks-port-b"));
  EXPECT_FALSE(Bound("oq-disk"));
  EXPECT_FALSE(Bound("ks-disk"));
}

// PodTopologySpread and DynamicResources. Each side's spread pods carry their own app label, so
// neither side counts the other's pods.
TEST_F(PlacementE2E, TopologySpreadOverZonesAndAResourceClaimEndAsKubeSchedulersTwins) {
  for (const char* zone : {"za", "zb"}) {
    AddNode(absl::StrCat(ns_, "-", zone), ns_, zone);
    AddNode(absl::StrCat("peer-", ns_, "-", zone), peer_pool(), zone);
  }
  for (int i = 0; i < 4; ++i) {
    CreateTwins(absl::StrCat("spread-", i), [](json& p) {
      const std::string app = p["metadata"]["name"].get<std::string>().substr(0, 3) + "spread";
      p["metadata"]["labels"]["app"] = app;
      p["spec"]["topologySpreadConstraints"] = json::array({{{"maxSkew", 1},
                                                             {"topologyKey", "topology.kubernetes.io/zone"},
                                                             {"whenUnsatisfiable", "DoNotSchedule"},
                                                             {"labelSelector", {{"matchLabels", {{"app", app}}}}}}});
    });
  }
  CreateTwins("dra", [](json& p) {
    p["spec"]["resourceClaims"] = json::array({{{"name", "gpu"}, {"resourceClaimName", "no-such-claim"}}});
  });
  StartScheduler();

  for (const std::string side : {"oq-", "ks-"}) {
    SCOPED_TRACE(side);
    std::map<std::string, int> per_zone;
    ASSERT_TRUE(Eventually(kBindTimeout, [&] {
      per_zone.clear();
      for (int i = 0; i < 4; ++i) {
        auto p = GetPod(client_.get(), ns_, absl::StrCat(side, "spread-", i));
        if (!p.ok() || p->node_name.empty()) return false;
        ++per_zone[p->node_name.substr(p->node_name.size() - 2)];
      }
      return true;
    })) << (scheduler_ ? scheduler_->Log() : "");
    EXPECT_EQ(per_zone, (std::map<std::string, int>{{"za", 2}, {"zb", 2}}));
  }
  // DynamicResources: onequeue says why (the claim named); neither side binds the pod.
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return absl::StrContains(FailedNotes("oq-dra"), "resourceClaims (gpu)"); }))
      << FailedNotes("oq-dra");
  EXPECT_FALSE(Bound("oq-dra"));
  EXPECT_FALSE(Bound("ks-dra"));
  std::cout << "[ compare ] dra: kube-scheduler: " << ScheduledReason("ks-dra") << " " << FailedNotes("ks-dra")
            << "\n[ compare ] dra: onequeue: " << FailedNotes("oq-dra") << std::flush;
}

// VolumeBinding. The class names a provisioner no one runs, so no volume is ever made: each side's
// claim shows where its scheduler chose to put it.
TEST_F(PlacementE2E, AWaitForFirstConsumerClaimAndAMissingClaimEndAsKubeSchedulersTwins) {
  AddNode(ns_ + "-1", ns_);
  AddNode("peer-" + ns_, peer_pool());
  const std::string storage_class = "wffc-" + ns_;
  ASSERT_TRUE(Create(client_.get(), k8s::kStorageClasses, "",
                     {{"apiVersion", "storage.k8s.io/v1"},
                      {"kind", "StorageClass"},
                      {"metadata", {{"name", storage_class}}},
                      {"provisioner", "example.com/nobody"},
                      {"volumeBindingMode", "WaitForFirstConsumer"}})
                  .ok());
  for (const std::string side : {"oq-", "ks-"}) {
    ASSERT_TRUE(Create(client_.get(), k8s::kPersistentVolumeClaims, ns_,
                       {{"apiVersion", "v1"},
                        {"kind", "PersistentVolumeClaim"},
                        {"metadata", {{"name", side + "home"}}},
                        {"spec", {{"storageClassName", storage_class},
                                  {"accessModes", json::array({"ReadWriteOnce"})},
                                  {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}})
                    .ok());
  }
  const auto with_claim = [](const std::string& claim_of_side) {
    return [claim_of_side](json& p) {
      const std::string side = p["metadata"]["name"].get<std::string>().substr(0, 3);
      const std::string claim = claim_of_side.empty() ? "missing" : side + claim_of_side;
      p["spec"]["volumes"] = json::array({{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", claim}}}}});
    };
  };
  CreateTwins("wffc", with_claim("home"));
  CreateTwins("nopvc", with_claim(""));
  StartScheduler();

  const auto selected_node = [&](const std::string& claim) -> std::string {
    auto c = client_->Get(k8s::ObjectPath(k8s::kPersistentVolumeClaims, ns_, claim));
    if (!c.ok()) return "";
    return (*c)["metadata"].value("annotations", json::object()).value("volume.kubernetes.io/selected-node", "");
  };
  // onequeue: the claim names the node, and the pod is bound there.
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    auto p = GetPod(client_.get(), ns_, "oq-wffc");
    return p.ok() && !p->node_name.empty() && selected_node("oq-home") == p->node_name;
  })) << selected_node("oq-home") << "\n" << (scheduler_ ? scheduler_->Log() : "");
  EXPECT_EQ(Pod("oq-wffc").node_name, ns_ + "-1");
  // kube-scheduler: the claim names its node (PreBind), the pod waits for the volume.
  EXPECT_TRUE(Eventually(kBindTimeout, [&] { return selected_node("ks-home") == "peer-" + ns_; }))
      << selected_node("ks-home");
  // A missing claim: Pending on both sides, each naming the claim.
  for (const std::string pod : {"oq-nopvc", "ks-nopvc"}) {
    EXPECT_TRUE(Eventually(kBindTimeout, [&] {
      return absl::StrContains(FailedNotes(pod), "persistentvolumeclaim \"missing\" not found");
    })) << pod << ": " << FailedNotes(pod);
    EXPECT_FALSE(Bound(pod)) << pod;
  }
  std::cout << "[ compare ] missing claim: kube-scheduler: " << ScheduledReason("ks-nopvc") << " " << FailedNotes("ks-nopvc")
            << "[ compare ] missing claim: onequeue: " << ScheduledReason("oq-nopvc") << " " << FailedNotes("oq-nopvc")
            << "[ compare ] wffc: kube-scheduler bound: " << Bound("ks-wffc") << std::flush;
}

}  // namespace
}  // namespace onequeue::e2e

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.kwok = true, .kube_scheduler = true})

// The fault suite (issue 13): the control plane fails in the middle of a preemption. The
// reservation is written and the victim evicted, but it is still terminating (kwok keeps a deleted
// pod for its grace period), when etcd is compacted at its current revision and kube-apiserver is
// killed (SIGKILL) and started again: every watch of the daemon ends, the resourceVersions it held
// are gone (410 on the way back), and the objects it acted on change while it cannot see them.
// The step must still finish with the protocol's invariants, read from a watch of the test's own
// that lives through the restart too:
//   * the preemptor ends Running on the reserved node; the daemon never exits;
//   * the victim is evicted once (one deletion, one Preempted event); no pod is bound twice;
//   * nothing but the preemptor is ever bound to that node after the reservation (the victim's
//     replacement, made by the ReplicaSet controller at once, waits);
//   * no node keeps the reservation once the preemptor runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "e2e/e2e_support.h"
#include "k8s_client/informer.h"

namespace onequeue::e2e {
namespace {

constexpr const char* kOwner = "onequeue.io/owner";

class RestartFaultE2E : public E2ETest {
 protected:
  struct Binding {
    std::string pod, uid, node;
  };

  void TearDown() override {
    if (pods_) pods_->Stop();
    E2ETest::TearDown();
  }

  void Watch() {
    k8s::InformerOptions options;
    options.namespace_ = ns_;
    auto on_pod = [this](const k8s::Pod* old_pod, const k8s::Pod& pod) {
      if (pod.node_name.empty() || (old_pod != nullptr && !old_pod->node_name.empty())) return;
      absl::MutexLock l(&mu_);
      bindings_.push_back({pod.metadata.name, pod.metadata.uid, pod.node_name});
    };
    pods_ = std::make_unique<k8s::Informer<k8s::Pod>>(
        client_.get(), k8s::kPods, options,
        k8s::InformerHandlers<k8s::Pod>{[=](const k8s::Pod& p) { on_pod(nullptr, p); },
                                        [=](const k8s::Pod& o, const k8s::Pod& p) { on_pod(&o, p); },
                                        [this](const k8s::Pod& p) {
                                          absl::MutexLock l(&mu_);
                                          ++deletions_[p.metadata.name];
                                        }});
    pods_->Start();
    ASSERT_TRUE(pods_->WaitForSync(absl::Seconds(30)));
  }

  // A Deployment of preemptible (scavenger) 4-CPU pods, labelled app=batch, that take
  // `grace_seconds` to go once deleted.
  void CreateBatch(int replicas, int64_t grace_seconds) {
    PodOptions o;
    o.cpu = "4";
    o.qos = "scavenger";
    o.time_limit = "4h";
    o.labels = {{"app", "batch"}};
    o.grace_seconds = grace_seconds;
    json d = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", "batch"}, {"namespace", ns_}}},
              {"spec",
               {{"replicas", replicas},
                {"selector", {{"matchLabels", {{"app", "batch"}}}}},
                {"template", {{"metadata", PodMetadata("", "", o)}, {"spec", PodSpec(o)}}}}}};
    ASSERT_TRUE(Create(client_.get(), Deployments(), ns_, d).ok());
  }

  std::set<std::string> RunningBatch(int n) {
    std::set<std::string> names;
    EXPECT_TRUE(Eventually(kRunningTimeout, [&] {
      names.clear();
      auto pods = ListPods(client_.get(), ns_, "app=batch");
      if (!pods.ok()) return false;
      for (const auto& p : *pods) {
        if (p.phase == "Running" && p.metadata.deletion_timestamp.empty()) names.insert(p.metadata.name);
      }
      return static_cast<int>(names.size()) == n;
    }));
    return names;
  }

  std::string OwnerOf(const std::string& node) {
    auto n = GetNode(client_.get(), node);
    if (!n.ok()) return "?";
    auto it = n->metadata.annotations.find(kOwner);
    return it == n->metadata.annotations.end() ? "" : it->second;
  }

  absl::Mutex mu_;
  std::vector<Binding> bindings_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> deletions_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<k8s::Informer<k8s::Pod>> pods_;
};

TEST_F(RestartFaultE2E, AnApiserverCrashAndEtcdCompactionMidPreemptionLoseNothing) {
  AddPool(2, "4");
  Watch();
  StartScheduler();
  CreateBatch(2, /*grace_seconds=*/20);
  const std::set<std::string> originals = RunningBatch(2);
  ASSERT_EQ(originals.size(), 2u);

  PodOptions urgent;
  urgent.cpu = "4";
  urgent.qos = "interactive";
  CreatePod("urgent", urgent);
  std::string victim, node;
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    for (const auto& name : originals) {
      auto p = GetPod(client_.get(), ns_, name);
      if (p.ok() && !p->metadata.deletion_timestamp.empty()) {
        victim = name;
        node = p->node_name;
      }
    }
    return !victim.empty();
  })) << "no victim was evicted";
  ASSERT_EQ(OwnerOf(node), "reserved/" + ns_ + "/urgent");
  ASSERT_TRUE(Pod("urgent").node_name.empty()) << "bound before its victim left";

  const auto& info = testing::K8sClusterEnvironment::Info();
  auto compacted = testing::CompactEtcd(info);
  ASSERT_TRUE(compacted.ok()) << compacted;
  auto restarted = testing::RestartApiserver(info);
  ASSERT_TRUE(restarted.ok()) << restarted;
  // Still mid-step: the victim takes its grace period to go.
  EXPECT_TRUE(GetPod(client_.get(), ns_, victim).ok()) << "the victim left before the restart was over";

  ASSERT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool("urgent"); }))
      << Describe(EventsAbout(client_.get(), ns_, "urgent"));
  EXPECT_EQ(Pod("urgent").node_name, node);
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] { return !absl::StartsWith(OwnerOf(node), "reserved/"); }))
      << node << " keeps " << OwnerOf(node);
  // The replacement the ReplicaSet made for the victim waits (the pool is full).
  std::string replacement;
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    auto pods = ListPods(client_.get(), ns_, "app=batch");
    if (!pods.ok()) return false;
    for (const auto& p : *pods) {
      if (!originals.count(p.metadata.name)) replacement = p.metadata.name;
    }
    return !replacement.empty();
  }));
  EXPECT_TRUE(Pod(replacement).node_name.empty()) << replacement << " bound to " << Pod(replacement).node_name;

  EXPECT_EQ(CountEvents(EventsWithReason(client_.get(), ns_, victim, "Preempted")), 1);
  for (const auto& name : originals) {
    if (name != victim) EXPECT_TRUE(EventsWithReason(client_.get(), ns_, name, "Preempted").empty()) << name;
  }
  absl::MutexLock l(&mu_);
  EXPECT_EQ(deletions_[victim], 1);
  std::map<std::string, int> binds_per_uid;
  for (const auto& b : bindings_) {
    ++binds_per_uid[b.uid];
    if (b.node == node && !originals.count(b.pod)) EXPECT_EQ(b.pod, "urgent") << b.pod << " bound to the reserved node";
  }
  for (const auto& [uid, count] : binds_per_uid) EXPECT_EQ(count, 1) << "pod uid " << uid << " bound twice";
  EXPECT_FALSE(scheduler_->WaitForExit(absl::ZeroDuration())) << "the daemon exited:\n" << scheduler_->Log();
}

}  // namespace
}  // namespace onequeue::e2e

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.controller_manager = true, .kwok = true, .kwok_graceful = true})

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
#include "e2e/e2e_support.h"

namespace onequeue::e2e {
namespace {

constexpr const char* kOwner = "onequeue.io/owner";

class RestartFaultE2E : public E2ETest {
 protected:
  void TearDown() override {
    watch_.reset();
    E2ETest::TearDown();
  }

  std::string OwnerOf(const std::string& node) {
    auto n = GetNode(client_.get(), node);
    if (!n.ok()) return "?";
    auto it = n->metadata.annotations.find(kOwner);
    return it == n->metadata.annotations.end() ? "" : it->second;
  }

  std::unique_ptr<ClusterWatch> watch_;
};

TEST_F(RestartFaultE2E, AnApiserverCrashAndEtcdCompactionMidPreemptionLoseNothing) {
  AddPool(2, "4");
  watch_ = std::make_unique<ClusterWatch>(client_.get(), ns_, ns_);
  ASSERT_TRUE(watch_->Start());
  StartScheduler();
  CreateDeployment("batch", 2, "4", /*grace_seconds=*/20);
  const std::set<std::string> originals = WaitRunning("batch", 2);
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
    for (const auto& p : PodsOf("batch")) {
      if (!originals.count(p.metadata.name)) replacement = p.metadata.name;
    }
    return !replacement.empty();
  }));
  EXPECT_TRUE(Pod(replacement).node_name.empty()) << replacement << " bound to " << Pod(replacement).node_name;

  EXPECT_EQ(CountEvents(EventsWithReason(client_.get(), ns_, victim, "Preempted")), 1);
  for (const auto& name : originals) {
    if (name != victim) EXPECT_TRUE(EventsWithReason(client_.get(), ns_, name, "Preempted").empty()) << name;
  }
  std::map<std::string, int> deletions;
  for (const auto& d : watch_->deleted()) ++deletions[d];
  EXPECT_EQ(deletions[victim], 1);
  std::map<std::string, int> binds_per_uid;
  for (const auto& b : watch_->bindings()) {
    ++binds_per_uid[b.uid];
    if (b.node == node && !originals.count(b.pod)) EXPECT_EQ(b.pod, "urgent") << b.pod << " bound to the reserved node";
  }
  for (const auto& [uid, count] : binds_per_uid) EXPECT_EQ(count, 1) << "pod uid " << uid << " bound twice";
  EXPECT_FALSE(scheduler_->WaitForExit(absl::ZeroDuration())) << "the daemon exited:\n" << scheduler_->Log();
}

}  // namespace
}  // namespace onequeue::e2e

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.controller_manager = true, .kwok = true, .kwok_graceful = true})

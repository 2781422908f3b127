// Smoke test of the local Kubernetes control plane: the real kube-apiserver (built from the pinned
// upstream version) on etcd, with kwok as the fake kubelets. It shows that the components answer,
// that RBAC separates the identities, that nothing listens outside loopback, and that the restart
// and compaction helpers do what the client tests rely on. The environment itself checks, at
// TearDown, that every process it started is gone.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/k8s_cluster.h"
#include "common/process.h"

namespace onequeue::testing {
namespace {

const K8sClusterInfo& Cluster() { return K8sClusterEnvironment::Info(); }

// Polls `ready` every 250 ms until it holds or `timeout` passes; returns whether it held.
bool WaitFor(const std::function<bool()>& ready, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (ready()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

std::string PinnedKubernetesVersion() {
  std::ifstream in(std::string(ONEQUEUE_SOURCE_DIR) + "/test/cluster/versions.env");
  for (std::string line; std::getline(in, line);) {
    absl::string_view rest(line);
    if (absl::ConsumePrefix(&rest, "KUBERNETES_VERSION=")) return std::string(rest);
  }
  return "unknown";
}

std::string Jsonpath(const std::string& kind, const std::string& name, const std::string& path,
                     const std::string& ns = "") {
  std::vector<std::string> args = {"get", kind, name, "-o", "jsonpath=" + path};
  if (!ns.empty()) args.insert(args.begin(), {"-n", ns});
  auto out = Kubectl(Cluster(), args);
  return out.ok() ? *out : "";
}

TEST(K8sSmoke, KubectlVersionReportsPinnedServer) {
  auto out = Kubectl(Cluster(), {"version"});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::string want = PinnedKubernetesVersion();
  EXPECT_TRUE(absl::StrContains(*out, "Server Version: " + want)) << *out;
  EXPECT_TRUE(absl::StrContains(*out, "Client Version: " + want)) << *out;
  std::cerr << *out;
}

TEST(K8sSmoke, KwokMakesNodeReadyAndBoundPodRunning) {
  const std::string node = R"({
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "smoke-node-1", "labels": {"kubernetes.io/hostname": "smoke-node-1", "type": "kwok"}},
    "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
               "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"}}})";
  const std::string pod = R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "smoke-pod-1", "namespace": "default"},
    "spec": {"nodeName": "smoke-node-1",
             "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                             "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}})";
  auto created = Kubectl(Cluster(), {"create", "-f", "-"}, node);
  ASSERT_TRUE(created.ok()) << created.status();
  created = Kubectl(Cluster(), {"create", "-f", "-"}, pod);
  ASSERT_TRUE(created.ok()) << created.status();

  EXPECT_TRUE(WaitFor(
      [] { return Jsonpath("node", "smoke-node-1", R"({.status.conditions[?(@.type=="Ready")].status})") == "True"; },
      std::chrono::seconds(90)))
      << "node never turned Ready: " << Kubectl(Cluster(), {"get", "node", "smoke-node-1", "-o", "yaml"}).value_or("");
  EXPECT_TRUE(WaitFor([] { return Jsonpath("pod", "smoke-pod-1", "{.status.phase}", "default") == "Running"; },
                      std::chrono::seconds(90)))
      << "pod never Running: "
      << Kubectl(Cluster(), {"get", "pod", "-n", "default", "smoke-pod-1", "-o", "yaml"}).value_or("");
  std::cerr << Kubectl(Cluster(), {"get", "nodes,pods", "-A", "-o", "wide"}).value_or("");

  // kwok also finishes graceful deletions (no kubelet would): the pod disappears.
  auto deleted = Kubectl(Cluster(), {"delete", "pod", "-n", "default", "smoke-pod-1", "--wait=true", "--timeout=60s"});
  EXPECT_TRUE(deleted.ok()) << deleted.status();
}

TEST(K8sSmoke, SchedulerIdentityHasLeastPrivilegeAndNobodyIsForbidden) {
  const K8sClusterInfo& c = Cluster();
  auto listed = KubectlAs(c, c.scheduler_kubeconfig, {"get", "pods", "-A"});
  EXPECT_TRUE(listed.ok()) << listed.status();
  auto whoami = KubectlAs(c, c.scheduler_kubeconfig, {"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"});
  EXPECT_EQ(whoami.value_or(""), "system:serviceaccount:onequeue-system:onequeue") << whoami.status();

  // What a scheduler needs, and nothing more.
  struct Case {
    std::vector<std::string> can_i;
    bool allowed;
  };
  const Case cases[] = {
      {{"create", "pods", "--subresource=binding", "-n", "default"}, true},
      {{"create", "pods", "--subresource=eviction", "-n", "default"}, true},
      {{"patch", "pods", "--subresource=status", "-n", "default"}, true},
      {{"watch", "nodes"}, true},
      {{"patch", "nodes"}, true},
      {{"create", "events.events.k8s.io", "-n", "default"}, true},
      {{"update", "leases.coordination.k8s.io", "-n", "onequeue-system"}, true},
      {{"patch", "pods", "-n", "default"}, true},  // the waiting-reason annotations
      // Exactly the chart's rules (helm_e2e_test asserts them): nothing the code does not call.
      {{"get", "pods", "-n", "default"}, false},  // the informer lists and watches
      {{"create", "events", "-n", "default"}, false},  // events.k8s.io only
      {{"update", "pods", "--subresource=status", "-n", "default"}, false},
      {{"list", "priorityclasses.scheduling.k8s.io"}, false},
      {{"watch", "poddisruptionbudgets.policy"}, true},  // victims the budgets allow
      {{"create", "poddisruptionbudgets.policy", "-n", "default"}, false},
      {{"patch", "persistentvolumeclaims", "-n", "default"}, true},  // selected-node (VolumeBinding)
      {{"patch", "persistentvolumes"}, true},  // claimRef of a pre-made volume (VolumeBinding)
      {{"update", "persistentvolumes"}, false},
      {{"create", "pods", "-n", "default"}, false},
      {{"update", "pods", "-n", "default"}, false},
      {{"delete", "pods", "-n", "default"}, true},  // a preemption victim no budget covers (issue 26)
      {{"delete", "nodes"}, false},
      {{"get", "secrets", "-n", "onequeue-system"}, false},
      {{"update", "leases.coordination.k8s.io", "-n", "kube-system"}, false},
      {{"update", "configmaps", "-n", "onequeue-system"}, true},  // fair-share usage (issue 29)
      {{"update", "configmaps", "-n", "default"}, false},
  };
  for (const Case& tc : cases) {
    std::vector<std::string> args = {"auth", "can-i"};
    args.insert(args.end(), tc.can_i.begin(), tc.can_i.end());
    auto answer = KubectlAs(c, c.scheduler_kubeconfig, args);  // exits 1 on "no"
    std::string verdict(absl::StripAsciiWhitespace(answer.ok() ? *answer : answer.status().message()));
    EXPECT_EQ(answer.ok(), tc.allowed) << absl::StrJoin(tc.can_i, " ") << ": " << verdict;
  }

  auto forbidden = KubectlAs(c, c.nobody_kubeconfig, {"get", "pods", "-A"});
  ASSERT_FALSE(forbidden.ok());
  EXPECT_EQ(forbidden.status().code(), absl::StatusCode::kPermissionDenied) << forbidden.status();
  EXPECT_TRUE(absl::StrContains(forbidden.status().message(), "onequeue-nobody")) << forbidden.status();
}

// `ss -ltunp` lists every listening socket with its owner; each one a cluster process owns must be
// on 127.0.0.1.
TEST(K8sSmoke, NothingListensOutsideLoopback) {
  const auto pids = ClusterPids(Cluster());
  ASSERT_FALSE(pids.empty());
  auto listed = RunProcess({.argv = {"/usr/bin/ss", "-Hltunp"}, .timeout = std::chrono::seconds(30)});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->exit_code, 0) << listed->err;
  const std::string& ss = listed->out;
  ASSERT_FALSE(ss.empty());
  int sockets = 0;
  bool apiserver_found = false;
  const std::string api_port = Cluster().server.substr(Cluster().server.rfind(':') + 1);
  for (absl::string_view line : absl::StrSplit(ss, '\n', absl::SkipEmpty())) {
    for (const auto& [name, pid] : pids) {
      if (!absl::StrContains(line, absl::StrCat("pid=", pid, ","))) continue;
      std::vector<absl::string_view> cols = absl::StrSplit(line, ' ', absl::SkipWhitespace());
      ASSERT_GE(cols.size(), 5u) << line;
      const std::string local(cols[4]);
      ++sockets;
      EXPECT_TRUE(absl::StartsWith(local, "127.0.0.1:")) << name << " listens on " << local << ": " << line;
      if (name == "kube-apiserver" && local == "127.0.0.1:" + api_port) apiserver_found = true;
    }
  }
  EXPECT_TRUE(apiserver_found) << "kube-apiserver not seen on port " << api_port << " in:\n" << ss;
  std::cerr << sockets << " listening sockets of " << pids.size() << " cluster processes, all on 127.0.0.1\n";
}

// The resourceVersion of a list (the list's own metadata comes first in the raw JSON).
std::string ListResourceVersion(const std::string& path) {
  auto raw = Kubectl(Cluster(), {"get", "--raw", path});
  if (!raw.ok()) return "";
  const std::string key = "\"resourceVersion\":\"";
  const size_t at = raw->find(key);
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size();
  return raw->substr(begin, raw->find('"', begin) - begin);
}

int ApiserverPid() {
  for (const auto& [name, pid] : ClusterPids(Cluster())) {
    if (name == "kube-apiserver") return pid;
  }
  return 0;
}

// After a compaction and an apiserver restart (its watch cache starts afresh), a watch from a
// resourceVersion older than the compaction ends with 410 Gone, and so does an exact list; the
// apiserver is back on the same port, so the kubeconfig still works.
TEST(K8sSmoke, RestartKeepsPortAndCompactionExpiresOldVersions) {
  const K8sClusterInfo& c = Cluster();
  const std::string cms = "/api/v1/namespaces/default/configmaps";
  const std::string old_rv = ListResourceVersion(cms);
  ASSERT_FALSE(old_rv.empty());
  for (int i = 0; i < 3; ++i) {
    auto made = Kubectl(c, {"create", "configmap", "-n", "default", absl::StrCat("smoke-cm-", i)});
    ASSERT_TRUE(made.ok()) << made.status();
  }
  const int old_pid = ApiserverPid();
  absl::Status compacted = CompactEtcd(c);
  ASSERT_TRUE(compacted.ok()) << compacted;
  absl::Status restarted = RestartApiserver(c);
  ASSERT_TRUE(restarted.ok()) << restarted;
  EXPECT_NE(ApiserverPid(), old_pid);
  auto after = Kubectl(c, {"get", "configmaps", "-n", "default", "smoke-cm-2", "-o", "name"});
  EXPECT_TRUE(after.ok()) << after.status();

  auto watch = Kubectl(c, {"get", "--raw", absl::StrCat(cms, "?watch=1&timeoutSeconds=5&resourceVersion=", old_rv)});
  ASSERT_TRUE(watch.ok()) << watch.status();  // the watch itself opens: 410 comes as an ERROR event
  EXPECT_TRUE(absl::StrContains(*watch, "\"type\":\"ERROR\"") && absl::StrContains(*watch, "\"code\":410"))
      << *watch;
  auto list = Kubectl(c, {"get", "--raw", absl::StrCat(cms, "?resourceVersionMatch=Exact&resourceVersion=", old_rv)});
  ASSERT_FALSE(list.ok()) << *list;
  EXPECT_TRUE(absl::StrContains(list.status().message(), "(Expired)")) << list.status();
}

}  // namespace
}  // namespace onequeue::testing

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.kwok = true})

// Integration tests of the Kubernetes client against the real kube-apiserver of the local cluster
// (etcd + kube-apiserver, no kwok: pods stay Pending). No mock server. The cluster is started once
// for this binary by K8sClusterEnvironment.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/k8s_cluster.h"
#include "k8s_client/config.h"
#include "k8s_client/dra.h"
#include "k8s_client/informer.h"
#include "k8s_client/models.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"

namespace onequeue::k8s {
namespace {

using nlohmann::json;
using ::onequeue::testing::K8sClusterEnvironment;

const ::onequeue::testing::K8sClusterInfo& Cluster() { return K8sClusterEnvironment::Info(); }

std::unique_ptr<RestClient> ClientFor(const std::string& kubeconfig, double qps = 0) {
  absl::StatusOr<ClientConfig> cfg = LoadKubeconfig(kubeconfig);
  EXPECT_TRUE(cfg.ok()) << cfg.status();
  if (!cfg.ok()) return nullptr;
  cfg->qps = qps;  // 0: no client-side limit (test setup); the server's APF still applies
  absl::StatusOr<std::unique_ptr<RestClient>> c = RestClient::Create(*cfg);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

RestClient& Admin() {
  static RestClient* admin = ClientFor(Cluster().kubeconfig).release();
  return *admin;
}

// Polls `cond` every 50 ms until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& cond, absl::Duration timeout = absl::Seconds(60)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!cond()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return true;
}

json PodJson(const std::string& ns, const std::string& name, const std::string& group = "a") {
  return json{{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", name}, {"namespace", ns}, {"labels", {{"group", group}}}}},
              {"spec",
               {{"schedulerName", "onequeue"},
                {"terminationGracePeriodSeconds", 0},
                {"containers",
                 {{{"name", "c"},
                   {"image", "registry.k8s.io/pause:3.10"},
                   {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "500Mi"}}}}}}}}}}};
}

void CreateNamespace(const std::string& ns) {
  auto r = Admin().Post("/api/v1/namespaces",
                        json{{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  ASSERT_TRUE(r.ok() || r.status().code() == absl::StatusCode::kAlreadyExists) << r.status();
}

// Sends `requests` with at most `in_flight` outstanding (HTTP/2 multiplexed), waits for all;
// returns the failures.
std::vector<absl::Status> RunAll(RestClient& client, std::vector<HttpRequest> requests, int in_flight = 100) {
  absl::Mutex mu;
  int outstanding = 0;
  std::vector<absl::Status> failures;
  for (auto& req : requests) {
    {
      absl::MutexLock lock(&mu);
      auto room = [&] { return outstanding < in_flight; };
      mu.Await(absl::Condition(&room));
      ++outstanding;
    }
    client.DoAsync(std::move(req), [&](absl::StatusOr<std::string> r) {
      absl::MutexLock lock(&mu);
      --outstanding;
      if (!r.ok()) failures.push_back(r.status());
    });
  }
  absl::MutexLock lock(&mu);
  auto none = [&] { return outstanding == 0; };
  mu.Await(absl::Condition(&none));
  return failures;
}

HttpRequest CreatePodRequest(const std::string& ns, const std::string& name, const std::string& group = "a") {
  HttpRequest r;
  r.method = "POST";
  r.path = CollectionPath(kPods, ns);
  r.body = PodJson(ns, name, group).dump();
  return r;
}

HttpRequest DeletePodRequest(const std::string& ns, const std::string& name) {
  HttpRequest r;
  r.method = "DELETE";
  r.path = ObjectPath(kPods, ns, name);
  r.body = json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"gracePeriodSeconds", 0}}.dump();
  return r;
}

HttpRequest LabelPodRequest(const std::string& ns, const std::string& name, const std::string& value) {
  HttpRequest r;
  r.method = "PATCH";
  r.path = ObjectPath(kPods, ns, name);
  r.content_type = "application/merge-patch+json";
  r.body = json{{"metadata", {{"labels", {{"touched", value}}}}}}.dump();
  return r;
}

void CreatePods(const std::string& ns, const std::string& prefix, int from, int to) {
  std::vector<HttpRequest> reqs;
  for (int i = from; i < to; ++i) reqs.push_back(CreatePodRequest(ns, absl::StrCat(prefix, i)));
  std::vector<absl::Status> failures = RunAll(Admin(), std::move(reqs));
  ASSERT_TRUE(failures.empty()) << failures.size() << " creates failed, first: " << failures[0];
}

// key -> resourceVersion of every pod in `ns`, from a fresh paginated list.
std::map<std::string, std::string> FreshList(const std::string& ns) {
  std::map<std::string, std::string> out;
  ListOptions opts;
  opts.limit = 1000;
  do {
    auto page = Admin().Get(CollectionPath(kPods, ns) + opts.ToQuery());
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) return out;
    for (const auto& item : (*page)["items"]) {
      out[ns + "/" + item["metadata"]["name"].get<std::string>()] =
          item["metadata"]["resourceVersion"].get<std::string>();
    }
    opts.continue_token = (*page)["metadata"].value("continue", "");
  } while (!opts.continue_token.empty());
  return out;
}

// Builds a mirror of the cluster from handler calls only, and counts anomalies: an add for a key
// already present, an update or delete for a key absent (a duplicated or missed event).
struct Mirror {
  absl::Mutex mu;
  std::map<std::string, std::string> objects;  // key -> resourceVersion
  std::map<std::string, int> adds, updates, deletes;
  int anomalies = 0;

  InformerHandlers<Pod> Handlers() {
    return {
        [this](const Pod& p) {
          absl::MutexLock l(&mu);
          if (objects.count(p.metadata.Key())) ++anomalies;
          objects[p.metadata.Key()] = p.metadata.resource_version;
          ++adds[p.metadata.Key()];
        },
        [this](const Pod& old_pod, const Pod& p) {
          absl::MutexLock l(&mu);
          if (!objects.count(p.metadata.Key())) ++anomalies;
          objects[p.metadata.Key()] = p.metadata.resource_version;
          ++updates[p.metadata.Key()];
        },
        [this](const Pod& p) {
          absl::MutexLock l(&mu);
          if (!objects.erase(p.metadata.Key())) ++anomalies;
          ++deletes[p.metadata.Key()];
        },
    };
  }
  std::map<std::string, std::string> Snapshot() {
    absl::MutexLock l(&mu);
    return objects;
  }
};

std::map<std::string, std::string> StoreSnapshot(const Informer<Pod>& inf) {
  std::map<std::string, std::string> out;
  for (const Pod& p : inf.List()) out[p.metadata.Key()] = p.metadata.resource_version;
  return out;
}

TEST(K8sClientIntegration, InformerOver5000PodsSeesEachChangeExactlyOnce) {
  const std::string ns = "informer-5000";
  CreateNamespace(ns);
  const absl::Time t0 = absl::Now();
  CreatePods(ns, "p-", 0, 5000);
  std::fprintf(stderr, "created 5000 pods in %s\n", absl::FormatDuration(absl::Now() - t0).c_str());

  Mirror mirror;
  InformerOptions opts;
  opts.namespace_ = ns;
  opts.page_size = 500;
  Informer<Pod> informer(&Admin(), kPods, opts, mirror.Handlers());
  // A second informer with a label selector sees only its group.
  InformerOptions selected = opts;
  selected.label_selector = "group=b";
  Informer<Pod> group_b(&Admin(), kPods, selected);
  informer.Start();
  group_b.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(120)));
  ASSERT_TRUE(group_b.WaitForSync(absl::Seconds(120)));
  EXPECT_EQ(informer.Size(), 5000u);
  EXPECT_GE(informer.Stats().pages, 10);  // 5000 / 500: the list was paginated
  EXPECT_EQ(group_b.Size(), 0u);

  // 100 creates (group b), 100 label updates, 100 deletes, all concurrently.
  std::vector<HttpRequest> reqs;
  for (int i = 0; i < 100; ++i) {
    reqs.push_back(CreatePodRequest(ns, absl::StrCat("new-", i), "b"));
    reqs.push_back(LabelPodRequest(ns, absl::StrCat("p-", i), "yes"));
    reqs.push_back(DeletePodRequest(ns, absl::StrCat("p-", 4900 + i)));
  }
  std::vector<absl::Status> failures = RunAll(Admin(), std::move(reqs));
  ASSERT_TRUE(failures.empty()) << failures[0];

  const std::map<std::string, std::string> truth = FreshList(ns);
  ASSERT_EQ(truth.size(), 5000u);
  EXPECT_TRUE(Eventually([&] { return StoreSnapshot(informer) == truth; }));
  EXPECT_TRUE(Eventually([&] { return mirror.Snapshot() == truth; }));
  EXPECT_TRUE(Eventually([&] { return group_b.Size() == 100u; }));
  absl::MutexLock l(&mirror.mu);
  EXPECT_EQ(mirror.anomalies, 0);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(mirror.adds[ns + "/new-" + std::to_string(i)], 1);
    EXPECT_EQ(mirror.updates[ns + "/p-" + std::to_string(i)], 1);
    EXPECT_EQ(mirror.deletes[ns + "/p-" + std::to_string(4900 + i)], 1);
  }
  EXPECT_EQ(mirror.adds.size(), 5100u);  // 5000 listed + 100 created, each once
  informer.Stop();
  group_b.Stop();
  // No cleanup: the cluster is discarded with this test binary.
}

TEST(K8sClientIntegration, WatchSurvivesApiserverRestartAndCompaction) {
  const std::string ns = "informer-restart";
  const std::string other = "informer-elsewhere";
  CreateNamespace(ns);
  CreateNamespace(other);
  CreatePods(ns, "p-", 0, 300);

  Mirror mirror;
  InformerOptions opts;
  opts.namespace_ = ns;
  opts.page_size = 100;
  opts.max_backoff = absl::Seconds(2);  // reconnect soon after the restart
  Informer<Pod> informer(&Admin(), kPods, opts, mirror.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(60)));

  auto churn = [&](int round) {
    std::vector<HttpRequest> reqs;
    for (int i = 0; i < 30; ++i) {
      reqs.push_back(CreatePodRequest(ns, absl::StrCat("r", round, "-", i)));
      reqs.push_back(LabelPodRequest(ns, absl::StrCat("p-", round * 30 + i), absl::StrCat("round", round)));
      reqs.push_back(DeletePodRequest(ns, absl::StrCat("p-", 299 - round * 30 - i)));
    }
    std::vector<absl::Status> failures = RunAll(Admin(), std::move(reqs));
    EXPECT_TRUE(failures.empty()) << failures[0];
  };
  churn(0);
  ASSERT_TRUE(Eventually([&] { return StoreSnapshot(informer) == FreshList(ns); }));
  const InformerStats before = informer.Stats();

  // Move etcd's revision past what this informer has seen (changes in a namespace it does not
  // watch), compact, and restart the apiserver: the re-watch from the informer's old
  // resourceVersion must get 410 and relist.
  CreatePods(other, "x-", 0, 50);
  ASSERT_TRUE(::onequeue::testing::CompactEtcd(Cluster()).ok());
  ASSERT_TRUE(::onequeue::testing::RestartApiserver(Cluster()).ok());
  churn(1);
  churn(2);

  std::map<std::string, std::string> truth;
  EXPECT_TRUE(Eventually([&] {
    truth = FreshList(ns);
    return StoreSnapshot(informer) == truth && mirror.Snapshot() == truth;
  }, absl::Seconds(90)));
  const InformerStats after = informer.Stats();
  std::fprintf(stderr, "informer stats: lists %lld watches %lld expired %lld events %lld bookmarks %lld\n",
               static_cast<long long>(after.lists), static_cast<long long>(after.watches),
               static_cast<long long>(after.expired), static_cast<long long>(after.events),
               static_cast<long long>(after.bookmarks));
  EXPECT_GT(after.watches, before.watches);  // it reconnected
  EXPECT_GE(after.expired, 1);               // and saw 410 Gone
  EXPECT_GE(after.lists, 2);                 // and relisted
  absl::MutexLock l(&mirror.mu);
  EXPECT_EQ(mirror.anomalies, 0);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 30; ++i) {
      EXPECT_EQ(mirror.adds[absl::StrCat(ns, "/r", round, "-", i)], 1);
      EXPECT_EQ(mirror.updates[absl::StrCat(ns, "/p-", round * 30 + i)], 1);
      EXPECT_EQ(mirror.deletes[absl::StrCat(ns, "/p-", 299 - round * 30 - i)], 1);
    }
  }
  informer.Stop();
}

json NodeJson(const std::string& name) {
  return json{{"apiVersion", "v1"},
              {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
              {"status", {{"capacity", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}},
                          {"allocatable", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}}}}};
}

void CreatePod(const std::string& ns, const std::string& name, const std::string& group = "a") {
  auto r = Admin().Post(CollectionPath(kPods, ns), PodJson(ns, name, group));
  ASSERT_TRUE(r.ok()) << r.status();
}

void MarkRunning(const std::string& ns, const std::string& name) {
  auto r = Admin().Patch(ObjectPath(kPods, ns, name, "status"),
                         json{{"status", {{"phase", "Running"},
                                          {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}},
                         "application/strategic-merge-patch+json");
  ASSERT_TRUE(r.ok()) << r.status();
}

TEST(K8sClientIntegration, SchedulerWritesUnderItsOwnIdentity) {
  const std::string ns = "writes";
  CreateNamespace(ns);
  auto node = Admin().Post("/api/v1/nodes", NodeJson("node-1"));
  ASSERT_TRUE(node.ok() || node.status().code() == absl::StatusCode::kAlreadyExists) << node.status();
  std::unique_ptr<RestClient> sched_client = ClientFor(Cluster().scheduler_kubeconfig, 50);
  ASSERT_NE(sched_client, nullptr);
  SchedulerApi api(sched_client.get());

  // Binding
  CreatePod(ns, "bind-me");
  ASSERT_TRUE(api.Bind(ns, "bind-me", "node-1").ok());
  auto pod = Admin().Get(ObjectPath(kPods, ns, "bind-me"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ((*pod)["spec"]["nodeName"], "node-1");
  absl::Status again = api.Bind(ns, "bind-me", "node-1");
  EXPECT_EQ(again.code(), absl::StatusCode::kAborted) << again;  // 409: already assigned
  EXPECT_EQ(api.Bind(ns, "no-such-pod", "node-1").code(), absl::StatusCode::kNotFound);

  // Status patch: PodScheduled=False + nominatedNodeName, then clear the nomination.
  CreatePod(ns, "nominate-me");
  Condition cond{"PodScheduled", "False", "Unschedulable", "0/1 nodes are available", ""};
  ASSERT_TRUE(api.PatchPodScheduling(ns, "nominate-me", cond, "node-1", absl::Now()).ok());
  auto p = Pod::FromJson(*Admin().Get(ObjectPath(kPods, ns, "nominate-me")));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->nominated_node_name, "node-1");
  bool found = false;
  for (const Condition& c : p->conditions) {
    if (c.type == "PodScheduled") {
      found = true;
      EXPECT_EQ(c.status, "False");
      EXPECT_EQ(c.reason, "Unschedulable");
    }
  }
  EXPECT_TRUE(found);
  ASSERT_TRUE(api.PatchPodScheduling(ns, "nominate-me", cond, std::string(), absl::Now()).ok());
  EXPECT_EQ(Pod::FromJson(*Admin().Get(ObjectPath(kPods, ns, "nominate-me")))->nominated_node_name, "");

  // Issue 26: a preemptor nominated with its waiting report in ONE pods/status write, its wait
  // annotations included. Seen on this apiserver (v1.37): metadata.annotations of a pods/status
  // strategic merge patch are stored (the pod status strategy resets spec, deletionTimestamp and
  // ownerReferences, not annotations), under the scheduler's own role (pods/status only), and a
  // null removes one.
  CreatePod(ns, "nominate-with-report");
  auto patch_status = [&](const std::map<std::string, std::optional<std::string>>& annotations) {
    auto result = std::make_shared<std::optional<absl::Status>>();
    auto mu = std::make_shared<absl::Mutex>();
    Condition waiting{"PodScheduled", "False", "Unschedulable", "Preempting: 3 pods on node-1 (queue position 4)", ""};
    api.PatchPodSchedulingAsync(ns, "nominate-with-report", waiting, "node-1", annotations, absl::Now(),
                                [result, mu](absl::Status st) {
                                  absl::MutexLock lock(mu.get());
                                  *result = std::move(st);
                                });
    EXPECT_TRUE(Eventually([&] {
      absl::MutexLock lock(mu.get());
      return result->has_value();
    }, absl::Seconds(20)));
    absl::MutexLock lock(mu.get());
    return result->value_or(absl::DeadlineExceededError("no answer"));
  };
  absl::Status nominated = patch_status({{"onequeue.io/queue-position", "4"}, {"onequeue.io/estimated-start", "unknown"}});
  ASSERT_TRUE(nominated.ok()) << nominated;
  json reported = *Admin().Get(ObjectPath(kPods, ns, "nominate-with-report"));
  EXPECT_EQ(reported["status"].value("nominatedNodeName", ""), "node-1");
  EXPECT_EQ(reported["metadata"]["annotations"].value("onequeue.io/queue-position", ""), "4") << reported.dump();
  EXPECT_EQ(reported["metadata"]["annotations"].value("onequeue.io/estimated-start", ""), "unknown");
  bool waiting_condition = false;
  for (const auto& c : reported["status"]["conditions"]) {
    if (c.value("type", "") != "PodScheduled") continue;
    waiting_condition = true;
    EXPECT_EQ(c.value("status", ""), "False");
    EXPECT_EQ(c.value("reason", ""), "Unschedulable");
    EXPECT_EQ(c.value("message", ""), "Preempting: 3 pods on node-1 (queue position 4)");
  }
  EXPECT_TRUE(waiting_condition) << reported.dump();
  ASSERT_TRUE(patch_status({{"onequeue.io/queue-position", std::nullopt}}).ok());
  reported = *Admin().Get(ObjectPath(kPods, ns, "nominate-with-report"));
  EXPECT_FALSE(reported["metadata"]["annotations"].contains("onequeue.io/queue-position")) << reported.dump();
  EXPECT_EQ(reported["metadata"]["annotations"].value("onequeue.io/estimated-start", ""), "unknown");

  // Issue 26: the binding of a pod that waited carries its final wait annotations, which the
  // apiserver sets on the pod in the binding's own write (setPodNodeAndMetadata), under the
  // scheduler's role (pods/binding only): no PATCH of the pod after it. Seen on this apiserver.
  ASSERT_TRUE(api.Bind(ns, "nominate-with-report", "node-1", "",
                       {{"onequeue.io/queue-position", "0"}, {"onequeue.io/estimated-start", "2026-12-01T09:00:00Z"}})
                  .ok());
  reported = *Admin().Get(ObjectPath(kPods, ns, "nominate-with-report"));
  EXPECT_EQ(reported["spec"].value("nodeName", ""), "node-1");
  EXPECT_EQ(reported["metadata"]["annotations"].value("onequeue.io/queue-position", ""), "0") << reported.dump();
  EXPECT_EQ(reported["metadata"]["annotations"].value("onequeue.io/estimated-start", ""), "2026-12-01T09:00:00Z");

  // Eviction without a PDB: the (running) pod goes away.
  CreatePod(ns, "evict-me", "free");
  MarkRunning(ns, "evict-me");
  absl::Status evicted = api.Evict(ns, "evict-me", 0);
  ASSERT_TRUE(evicted.ok()) << evicted;
  EXPECT_TRUE(Eventually([&] {
    return Admin().Get(ObjectPath(kPods, ns, "evict-me")).status().code() == absl::StatusCode::kNotFound;
  }, absl::Seconds(20)));

  // Eviction blocked by a PDB (status filled in as the disruption controller would).
  CreatePod(ns, "guarded", "guarded");
  MarkRunning(ns, "guarded");
  auto pdb = Admin().Post(CollectionPath(kPodDisruptionBudgets, ns),
                          json{{"apiVersion", "policy/v1"}, {"kind", "PodDisruptionBudget"},
                               {"metadata", {{"name", "guard-pdb"}}},
                               {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"group", "guarded"}}}}}}}});
  ASSERT_TRUE(pdb.ok()) << pdb.status();
  auto pdb_status = Admin().Patch(
      ObjectPath(kPodDisruptionBudgets, ns, "guard-pdb", "status"),
      json{{"status", {{"observedGeneration", (*pdb)["metadata"]["generation"]}, {"disruptionsAllowed", 0},
                       {"currentHealthy", 1}, {"desiredHealthy", 1}, {"expectedPods", 1}}}},
      "application/merge-patch+json");
  ASSERT_TRUE(pdb_status.ok()) << pdb_status.status();
  absl::Status blocked = api.Evict(ns, "guarded", 0);
  EXPECT_EQ(blocked.code(), absl::StatusCode::kFailedPrecondition) << blocked;
  EXPECT_TRUE(absl::StrContains(blocked.message(), "blocked by PodDisruptionBudget guard-pdb")) << blocked;
  EXPECT_TRUE(Admin().Get(ObjectPath(kPods, ns, "guarded")).ok());  // still there

  // Issue 26: a victim no budget covers, removed as kube-scheduler does: DisruptionTarget=True
  // (PreemptionByScheduler), then DELETE (a finalizer keeps the pod to read what was written).
  auto preempt = [&](const std::string& pod, const std::string& uid) {
    auto result = std::make_shared<std::optional<absl::Status>>();
    auto mu = std::make_shared<absl::Mutex>();
    api.PreemptByDeleteAsync(ns, pod, uid, "onequeue: preempting to accommodate a higher priority pod", absl::Now(),
                             [result, mu](absl::Status st) {
                               absl::MutexLock lock(mu.get());
                               *result = std::move(st);
                             });
    EXPECT_TRUE(Eventually([&] {
      absl::MutexLock lock(mu.get());
      return result->has_value();
    }, absl::Seconds(20)));
    absl::MutexLock lock(mu.get());
    return result->value_or(absl::DeadlineExceededError("no answer"));
  };
  json kept = PodJson(ns, "delete-me", "free");
  kept["metadata"]["finalizers"] = {"onequeue.io/test"};
  auto made = Admin().Post(CollectionPath(kPods, ns), kept);
  ASSERT_TRUE(made.ok()) << made.status();
  MarkRunning(ns, "delete-me");
  // A uid that is not the pod's: the delete's precondition spares a pod made again under the name.
  absl::Status other = preempt("delete-me", "not-its-uid");
  EXPECT_EQ(other.code(), absl::StatusCode::kNotFound) << other;
  json spared = *Admin().Get(ObjectPath(kPods, ns, "delete-me"));
  EXPECT_FALSE(spared["metadata"].contains("deletionTimestamp"));
  EXPECT_FALSE(absl::StrContains(spared["status"].dump(), "DisruptionTarget")) << spared["status"].dump();
  absl::Status deleted = preempt("delete-me", (*made)["metadata"]["uid"].get<std::string>());
  ASSERT_TRUE(deleted.ok()) << deleted;
  auto victim = Admin().Get(ObjectPath(kPods, ns, "delete-me"));
  ASSERT_TRUE(victim.ok()) << victim.status();
  EXPECT_TRUE((*victim)["metadata"].contains("deletionTimestamp"));
  bool disruption = false;
  for (const auto& c : (*victim)["status"]["conditions"]) {
    if (c.value("type", "") != "DisruptionTarget") continue;
    disruption = true;
    EXPECT_EQ(c.value("status", ""), "True");
    EXPECT_EQ(c.value("reason", ""), "PreemptionByScheduler");
    EXPECT_EQ(c.value("message", ""), "onequeue: preempting to accommodate a higher priority pod");
  }
  EXPECT_TRUE(disruption) << victim->dump();
  EXPECT_EQ(preempt("no-such-pod", "").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(Admin().Patch(ObjectPath(kPods, ns, "delete-me"), json{{"metadata", {{"finalizers", nullptr}}}},
                            "application/merge-patch+json").ok());

  // Events with series deduplication.
  EventRecorder recorder(sched_client.get(), "onequeue", "onequeue-test");
  ObjectReference ref{"v1", "Pod", ns, "nominate-me", p->metadata.uid, "", ""};
  auto e1 = recorder.Record(ref, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available", absl::Now());
  ASSERT_TRUE(e1.ok()) << e1.status();
  auto e2 = recorder.Record(ref, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available", absl::Now());
  ASSERT_TRUE(e2.ok()) << e2.status();
  EXPECT_EQ(e1->metadata.name, e2->metadata.name);
  EXPECT_EQ(e2->series_count, 2);
  auto stored = Event::FromJson(*Admin().Get(ObjectPath(kEvents, ns, e1->metadata.name)));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->series_count, 2);

  // Leases with optimistic concurrency (the scheduler may use leases in onequeue-system only).
  Lease lease;
  lease.metadata.namespace_ = "onequeue-system";
  lease.metadata.name = "onequeue-leader";
  lease.holder_identity = "replica-a";
  lease.lease_duration_seconds = 15;
  lease.acquire_time = lease.renew_time = FormatMicroTime(absl::Now());
  auto created = api.CreateLease(lease);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(api.CreateLease(lease).status().code(), absl::StatusCode::kAlreadyExists);
  auto got = api.GetLease("onequeue-system", "onequeue-leader");
  ASSERT_TRUE(got.ok()) << got.status();
  Lease renewed = *got;
  renewed.renew_time = FormatMicroTime(absl::Now());
  auto updated = api.UpdateLease(renewed);
  ASSERT_TRUE(updated.ok()) << updated.status();
  Lease stale = *got;  // still carries the old resourceVersion
  stale.holder_identity = "replica-b";
  EXPECT_EQ(api.UpdateLease(stale).status().code(), absl::StatusCode::kAborted);

  // What its role does not allow is a clear Forbidden.
  auto create_pod = sched_client->Post(CollectionPath(kPods, ns), PodJson(ns, "not-allowed"));
  EXPECT_EQ(create_pod.status().code(), absl::StatusCode::kPermissionDenied) << create_pod.status();
  EXPECT_TRUE(absl::StrContains(create_pod.status().message(), "403 Forbidden")) << create_pod.status();
  Lease elsewhere = lease;
  elsewhere.metadata.namespace_ = "default";
  EXPECT_EQ(api.CreateLease(elsewhere).status().code(), absl::StatusCode::kPermissionDenied);
  std::unique_ptr<RestClient> nobody = ClientFor(Cluster().nobody_kubeconfig);
  EXPECT_EQ(nobody->Get(CollectionPath(kPods, ns)).status().code(), absl::StatusCode::kPermissionDenied);
}

// Issue 25, docs/sharing.md section 5: resource.k8s.io/v1 is served by the test apiserver (v1.37),
// the daemon's role lists and watches a node's ResourceSlices and reads claims, and it writes a
// claim's allocation as kube-scheduler's DRA plugin does: the delete-protection finalizer by a
// normal update, then status (allocation + reservedFor) by a PUT whose resourceVersion makes it a
// compare-and-swap (a stale write is Aborted, to be re-read), and the undo clears both.
TEST(K8sClientIntegration, TheSchedulerAllocatesAResourceClaimByIndexUnderItsOwnIdentity) {
  const std::string ns = "dra";
  CreateNamespace(ns);
  auto cls = Admin().Post(CollectionPath(kDeviceClasses, ""),
                          json{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "DeviceClass"},
                               {"metadata", {{"name", "gpu.example.com"}}}, {"spec", json::object()}});
  ASSERT_TRUE(cls.ok() || cls.status().code() == absl::StatusCode::kAlreadyExists) << cls.status();
  json devices = json::array();
  for (int i = 0; i < 4; ++i) devices.push_back({{"name", "gpu-" + std::to_string(i)}, {"attributes", {{"index", {{"int", i}}}}}});
  auto slice = Admin().Post(CollectionPath(kResourceSlices, ""),
                            json{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"},
                                 {"metadata", {{"name", "dra-node-gpus"}}},
                                 {"spec", {{"driver", "gpu.example.com"}, {"nodeName", "dra-node"},
                                           {"pool", {{"name", "dra-node"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                                           {"devices", devices}}}});
  ASSERT_TRUE(slice.ok()) << slice.status();
  auto made = Admin().Post(CollectionPath(kResourceClaims, ns),
                           json{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
                                {"metadata", {{"name", "two-gpus"}, {"namespace", ns}}},
                                {"spec", {{"devices", {{"requests", json::array({{{"name", "gpus"},
                                   {"exactly", {{"deviceClassName", "gpu.example.com"}, {"count", 2}}}}})}}}}}});
  ASSERT_TRUE(made.ok()) << made.status();

  std::unique_ptr<RestClient> sched = ClientFor(Cluster().scheduler_kubeconfig, 50);
  ASSERT_NE(sched, nullptr);
  InformerOptions opts;
  opts.field_selector = "spec.nodeName=dra-node";
  Informer<ResourceSlice> slices(sched.get(), kResourceSlices, opts);
  slices.Start();
  ASSERT_TRUE(slices.WaitForSync(absl::Seconds(30)));
  ASSERT_EQ(slices.List().size(), 1u);
  EXPECT_EQ(slices.List()[0].devices.size(), 4u);

  absl::StatusOr<json> read = GetClaim(*sched, ns, "two-gpus");
  ASSERT_TRUE(read.ok()) << read.status();
  absl::StatusOr<json> guarded = PutClaim(*sched, WithFinalizer(*read));
  ASSERT_TRUE(guarded.ok()) << guarded.status();
  const std::vector<DeviceAllocationResult> results = {{"gpus", "gpu.example.com", "dra-node", "gpu-2"},
                                                       {"gpus", "gpu.example.com", "dra-node", "gpu-3"}};
  absl::StatusOr<json> written = PutClaimStatus(*sched, WithAllocation(*guarded, results, "dra-node", {"", "pods", "nb", "uid-nb"}));
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<ResourceClaim> claim = ResourceClaim::FromJson(*GetClaim(Admin(), ns, "two-gpus"));
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_TRUE(claim->allocated);
  EXPECT_EQ(claim->results, results);
  EXPECT_EQ(claim->allocation_node, "dra-node");
  EXPECT_EQ(claim->reserved_for, (std::vector<ClaimConsumer>{{"", "pods", "nb", "uid-nb"}}));
  EXPECT_EQ(claim->metadata.resource_version, (*written)["metadata"]["resourceVersion"].get<std::string>());

  // A write from the claim as read before: 409, never an overwrite.
  absl::StatusOr<json> stale = PutClaimStatus(*sched, WithoutConsumer(*guarded, "uid-nb", true));
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted) << stale.status();
  // The undo from the claim as it is now: allocation and reservedFor cleared.
  absl::StatusOr<json> undone = PutClaimStatus(*sched, WithoutConsumer(*written, "uid-nb", true));
  ASSERT_TRUE(undone.ok()) << undone.status();
  claim = ResourceClaim::FromJson(*GetClaim(Admin(), ns, "two-gpus"));
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_FALSE(claim->allocated);
  EXPECT_TRUE(claim->reserved_for.empty());
  slices.Stop();
}

TEST(K8sClientIntegration, TokenFileIsReReadWhenItRotates) {
  absl::StatusOr<ClientConfig> cfg = LoadKubeconfig(Cluster().kubeconfig);
  ASSERT_TRUE(cfg.ok());
  cfg->bearer_token.clear();
  cfg->client_cert_pem.clear();
  cfg->client_key_pem.clear();
  cfg->client_cert_file.clear();
  cfg->client_key_file.clear();
  cfg->token_file = ::testing::TempDir() + "/k8s_client_rotating_token";
  auto write_token = [&](const std::string& token) {
    std::FILE* f = std::fopen(cfg->token_file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs((token + "\n").c_str(), f);
    std::fclose(f);
  };
  write_token(Cluster().scheduler_token);
  auto client = RestClient::Create(*cfg);
  ASSERT_TRUE(client.ok());
  const std::string ns = "writes";
  CreateNamespace(ns);
  auto as_scheduler = (*client)->Post(CollectionPath(kPods, ns), PodJson(ns, "rotated"));
  EXPECT_EQ(as_scheduler.status().code(), absl::StatusCode::kPermissionDenied) << as_scheduler.status();
  write_token(Cluster().admin_token);  // the file rotates: the next request uses the new token
  auto as_admin = (*client)->Post(CollectionPath(kPods, ns), PodJson(ns, "rotated"));
  EXPECT_TRUE(as_admin.ok()) << as_admin.status();
}

TEST(K8sClientIntegration, WrongCaFailsTlsVerification) {
  absl::StatusOr<ClientConfig> cfg = LoadKubeconfig(Cluster().kubeconfig);
  ASSERT_TRUE(cfg.ok());
  // A CA bundle that did not sign the apiserver's certificate: the system's.
  const std::string other_ca = "/etc/ssl/certs/ca-certificates.crt";
  if (!std::filesystem::exists(other_ca)) GTEST_SKIP() << other_ca << " missing";
  cfg->ca_pem.clear();
  cfg->ca_file = other_ca;
  auto client = RestClient::Create(*cfg);
  ASSERT_TRUE(client.ok());
  auto r = (*client)->Get("/version");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "TLS verification")) << r.status();
  // The right CA works.
  auto good = Admin().Get("/version");
  EXPECT_TRUE(good.ok()) << good.status();
}

}  // namespace
}  // namespace onequeue::k8s

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({})

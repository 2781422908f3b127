// Raw binding throughput on the local kube-apiserver (started with bench=true: no max-inflight
// limits, no API priority and fairness, as scheduler_perf/kwokctl do): 5,000 nodes and 10,000
// pending pods (one container, cpu 100m, memory 500Mi, like scheduler_perf's SchedulingBasic),
// then every pod is bound, round-robin over the nodes, as fast as the apiserver accepts, with no
// scheduling decision. Reports pods/s and the client's CPU seconds (getrusage) for the binding
// phase. Not a ctest test: run it by hand (docs/k8s_client.md).
//
// Environment knobs: ONEQUEUE_BENCH_NODES (5000), ONEQUEUE_BENCH_PODS (10000),
// ONEQUEUE_BENCH_INFLIGHT (64 requests in flight), ONEQUEUE_BENCH_QPS (0 = no client limit),
// ONEQUEUE_BENCH_STREAMS and ONEQUEUE_BENCH_CONNECTIONS (HTTP/2 streams per connection and
// connections: TransportConfig's defaults), ONEQUEUE_BENCH_CLIENT (curl or nghttp2: the HTTP
// client, ClientConfig::client; default curl).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/k8s_cluster.h"
#include "k8s_client/config.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"

namespace onequeue::k8s {
namespace {

using nlohmann::json;

int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : def;
}

HttpClient EnvClient() {
  const char* v = std::getenv("ONEQUEUE_BENCH_CLIENT");
  return v && std::string(v) == "nghttp2" ? HttpClient::kNghttp2 : HttpClient::kCurl;
}

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

// Runs `count` async calls made by `start(i, done)` with at most `in_flight` outstanding.
int RunBounded(int count, int in_flight,
               const std::function<void(int, std::function<void(absl::Status)>)>& start) {
  absl::Mutex mu;
  int outstanding = 0, failures = 0;
  std::string first_error;
  for (int i = 0; i < count; ++i) {
    {
      absl::MutexLock lock(&mu);
      auto room = [&] { return outstanding < in_flight; };
      mu.Await(absl::Condition(&room));
      ++outstanding;
    }
    start(i, [&](absl::Status s) {
      absl::MutexLock lock(&mu);
      --outstanding;
      if (!s.ok()) {
        if (failures++ == 0) first_error = std::string(s.message());
      }
    });
  }
  absl::MutexLock lock(&mu);
  auto none = [&] { return outstanding == 0; };
  mu.Await(absl::Condition(&none));
  if (failures) std::fprintf(stderr, "%d failures, first: %s\n", failures, first_error.c_str());
  return failures;
}

std::unique_ptr<RestClient> ClientFor(const std::string& kubeconfig, double qps) {
  absl::StatusOr<ClientConfig> cfg = LoadKubeconfig(kubeconfig);
  if (!cfg.ok()) return nullptr;
  cfg->qps = qps;
  cfg->burst = qps > 0 ? static_cast<int>(qps) : 1;
  cfg->streams_per_connection = EnvInt("ONEQUEUE_BENCH_STREAMS", cfg->streams_per_connection);
  cfg->max_connections = EnvInt("ONEQUEUE_BENCH_CONNECTIONS", cfg->max_connections);
  cfg->client = EnvClient();
  auto c = RestClient::Create(*cfg);
  return c.ok() ? *std::move(c) : nullptr;
}

void Post(RestClient& c, const std::string& path, const json& body, std::function<void(absl::Status)> done) {
  HttpRequest r;
  r.method = "POST";
  r.path = path;
  r.body = body.dump();
  c.DoAsync(std::move(r), [done = std::move(done)](absl::StatusOr<std::string> s) { done(s.status()); });
}

TEST(K8sBench, BindingThroughput) {
  const auto& info = ::onequeue::testing::K8sClusterEnvironment::Info();
  const int nodes = EnvInt("ONEQUEUE_BENCH_NODES", 5000);
  const int pods = EnvInt("ONEQUEUE_BENCH_PODS", 10000);
  const int in_flight = EnvInt("ONEQUEUE_BENCH_INFLIGHT", 64);
  const double qps = EnvInt("ONEQUEUE_BENCH_QPS", 0);
  std::unique_ptr<RestClient> admin = ClientFor(info.kubeconfig, 0);
  ASSERT_NE(admin, nullptr);
  const std::string ns = "bench";
  ASSERT_TRUE(admin->Post("/api/v1/namespaces", json{{"apiVersion", "v1"}, {"kind", "Namespace"},
                                                    {"metadata", {{"name", ns}}}}).ok());
  absl::Time t = absl::Now();
  ASSERT_EQ(RunBounded(nodes, in_flight, [&](int i, auto done) {
    const std::string name = absl::StrCat("node-", i);
    Post(*admin, "/api/v1/nodes",
         json{{"apiVersion", "v1"}, {"kind", "Node"},
              {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
              {"status", {{"capacity", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}},
                          {"allocatable", {{"cpu", "4"}, {"memory", "32Gi"}, {"pods", "110"}}}}}},
         std::move(done));
  }), 0);
  const double node_s = absl::ToDoubleSeconds(absl::Now() - t);
  t = absl::Now();
  ASSERT_EQ(RunBounded(pods, in_flight, [&](int i, auto done) {
    Post(*admin, CollectionPath(kPods, ns),
         json{{"apiVersion", "v1"}, {"kind", "Pod"},
              {"metadata", {{"name", absl::StrCat("pod-", i)}, {"namespace", ns}}},
              {"spec", {{"schedulerName", "onequeue"},
                        {"containers", {{{"name", "c"}, {"image", "registry.k8s.io/pause:3.10"},
                                         {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "500Mi"}}}}}}}}}}},
         std::move(done));
  }), 0);
  const double pod_s = absl::ToDoubleSeconds(absl::Now() - t);

  // The measured phase: bind every pod under the scheduler's own identity.
  std::unique_ptr<RestClient> sched = ClientFor(info.scheduler_kubeconfig, qps);
  ASSERT_NE(sched, nullptr);
  SchedulerApi api(sched.get());
  const double cpu0 = CpuSeconds();
  t = absl::Now();
  const int failures = RunBounded(pods, in_flight, [&](int i, auto done) {
    api.BindAsync(ns, absl::StrCat("pod-", i), absl::StrCat("node-", i % nodes), std::move(done));
  });
  const double bind_s = absl::ToDoubleSeconds(absl::Now() - t);
  const double cpu = CpuSeconds() - cpu0;
  EXPECT_EQ(failures, 0);

  // Check: every pod has a node.
  int bound = 0;
  ListOptions opts;
  opts.limit = 2000;
  do {
    auto page = admin->Get(CollectionPath(kPods, ns) + opts.ToQuery());
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& p : (*page)["items"]) bound += p["spec"].contains("nodeName") ? 1 : 0;
    opts.continue_token = (*page)["metadata"].value("continue", "");
  } while (!opts.continue_token.empty());
  EXPECT_EQ(bound, pods);
  std::printf("RESULT client=%s nodes=%d pods=%d in_flight=%d client_qps=%s: created nodes in %.2f s (%.0f/s), "
              "pods in %.2f s (%.0f/s); bound %d pods in %.2f s = %.0f pods/s; client CPU %.2f s "
              "(%.1f us per binding)\n",
              EnvClient() == HttpClient::kNghttp2 ? "nghttp2" : "curl", nodes, pods, in_flight, qps > 0 ? absl::StrCat(qps).c_str() : "unlimited", node_s,
              nodes / node_s, pod_s, pods / pod_s, bound, bind_s, pods / bind_s, cpu, cpu / pods * 1e6);
}

}  // namespace
}  // namespace onequeue::k8s

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.bench = true})

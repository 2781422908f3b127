// The raw binding ceiling under a round's conditions (issue 26, session 30): binds pods that
// already wait on a running side_by_side cluster (kwok marking bound pods Running, the bench's
// watch open), round-robin over its nodes, as fast as the apiserver accepts, with no scheduling
// decision, through the daemon's own client (RestClient, SchedulerApi::BindAsync). The same
// measured phase as k8s_binding_throughput_bench, but on the rounds' cluster instead of a fresh
// one with no kwok and no watcher. Like a scheduler, it first lists the namespace's pods and the
// nodes (what an informer's sync costs the apiserver; not timed), then binds. Run by
// test/bench/cluster/side_by_side.sh --raw-rounds; by hand:
//   k8s_bind_existing_bench KUBECONFIG NAMESPACE PODS NODES IN_FLIGHT START_FILE
// binds NAMESPACE/pod-I to bench-node-(I mod NODES) for I < PODS (bench_driver.py's names), writes
// the unix time of its first binding to START_FILE before sending it, and prints one RESULT line.
// ONEQUEUE_BENCH_CLIENT=nghttp2 binds through the nghttp2 client (ClientConfig::client), else curl.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "k8s_client/config.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"

namespace {

double CpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s KUBECONFIG NAMESPACE PODS NODES IN_FLIGHT START_FILE\n", argv[0]);
    return 2;
  }
  const std::string ns = argv[2];
  const int pods = std::atoi(argv[3]), nodes = std::atoi(argv[4]), in_flight = std::atoi(argv[5]);
  absl::StatusOr<onequeue::k8s::ClientConfig> cfg = onequeue::k8s::LoadKubeconfig(argv[1]);
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s\n", std::string(cfg.status().message()).c_str());
    return 1;
  }
  cfg->qps = 0;  // as k8s_binding_throughput_bench: no client-side limit
  cfg->burst = 1;
  if (const char* c = std::getenv("ONEQUEUE_BENCH_CLIENT"); c && std::string(c) == "nghttp2") {
    cfg->client = onequeue::k8s::HttpClient::kNghttp2;
  }
  auto client = onequeue::k8s::RestClient::Create(*cfg);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", std::string(client.status().message()).c_str());
    return 1;
  }
  onequeue::k8s::SchedulerApi api(client->get());
  // A scheduler's sync: every pod of the namespace and every node, a page of 500 at a time.
  for (const std::string collection : {"/api/v1/namespaces/" + ns + "/pods", std::string("/api/v1/nodes")}) {
    onequeue::k8s::ListOptions opts;
    opts.limit = 500;
    do {
      auto page = (*client)->Get(collection + opts.ToQuery());
      if (!page.ok()) {
        std::fprintf(stderr, "list %s: %s\n", collection.c_str(), std::string(page.status().message()).c_str());
        return 1;
      }
      opts.continue_token = (*page)["metadata"].value("continue", "");
    } while (!opts.continue_token.empty());
  }
  absl::Mutex mu;
  int outstanding = 0, failures = 0;
  std::string first_error;
  const double cpu0 = CpuSeconds();
  const absl::Time t0 = absl::Now();
  std::ofstream(argv[6]) << absl::StrFormat("%.3f\n", absl::ToDoubleSeconds(t0 - absl::UnixEpoch()));
  for (int i = 0; i < pods; ++i) {
    {
      absl::MutexLock lock(&mu);
      auto room = [&] { return outstanding < in_flight; };
      mu.Await(absl::Condition(&room));
      ++outstanding;
    }
    api.BindAsync(ns, absl::StrCat("pod-", i), absl::StrCat("bench-node-", i % nodes), [&](absl::Status s) {
      absl::MutexLock lock(&mu);
      --outstanding;
      if (!s.ok() && failures++ == 0) first_error = std::string(s.message());
    });
  }
  {
    absl::MutexLock lock(&mu);
    auto none = [&] { return outstanding == 0; };
    mu.Await(absl::Condition(&none));
  }
  const double bind_s = absl::ToDoubleSeconds(absl::Now() - t0);
  const double cpu = CpuSeconds() - cpu0;
  if (failures) std::fprintf(stderr, "%d failures, first: %s\n", failures, first_error.c_str());
  std::printf("RESULT existing cluster, nodes=%d pods=%d in_flight=%d client_qps=unlimited: bound %d pods in %.2f s "
              "= %.0f pods/s; client CPU %.2f s (%.1f us per binding)\n",
              nodes, pods, in_flight, pods - failures, bind_s, (pods - failures) / bind_s, cpu, cpu / pods * 1e6);
  return failures == 0 ? 0 : 1;
}

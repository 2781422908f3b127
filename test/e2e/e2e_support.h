// Shared pieces of the end-to-end tests: the onequeue-scheduler daemon run as a child process
// against the local cluster (test/common/k8s_cluster.h), an admin API client, objects built as
// JSON, bounded polling, and the events a user reads in kubectl describe.
//
// Every wait here is bounded polling of a condition; nothing sleeps to make an assertion true.
#ifndef ONEQUEUE_TEST_E2E_E2E_SUPPORT_H_
#define ONEQUEUE_TEST_E2E_E2E_SUPPORT_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <iostream>
#include <map>
#include <set>
#include <source_location>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/k8s_cluster.h"
#include "k8s_client/informer.h"
#include "k8s_client/models.h"
#include "k8s_client/rest_client.h"
#include "nlohmann/json.hpp"

namespace onequeue::e2e {

using nlohmann::json;

// Polls `condition` every `interval` until it holds or `timeout` passes; returns its last value.
// With ONEQUEUE_E2E_TRACE_WAITS set, every wait of a second or more is written to stderr with its
// caller's file:line and length ("[wait] slurm_e2e_test.cc:431 12.3 s ok"): where a case's time goes.
bool Eventually(absl::Duration timeout, const std::function<bool()>& condition,
                absl::Duration interval = absl::Milliseconds(200),
                std::source_location where = std::source_location::current());
// The same trace line for a span the test measures itself (a fixed sleep, a SetUp, a TearDown).
void TraceWait(absl::Time since, const std::string& what, std::source_location where = std::source_location::current());

// A REST client as the cluster's admin (system:masters), for the tests' own reads and writes.
absl::StatusOr<std::unique_ptr<k8s::RestClient>> AdminClient(const testing::K8sClusterInfo& info);

// Runs argv (no shell; testing::RunProcess), stdout and stderr merged, its process group killed
// after `timeout`. `extra_env`: NAME=value entries ahead of (and overriding) the inherited ones.
struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or the timeout
  std::string output;
};
CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout = absl::Seconds(120),
                         const std::vector<std::string>& extra_env = {});

// The daemon under test, started with a configuration file in `dir`, output in dir/<name>.log.
// Stopped (SIGTERM, then SIGKILL) by its own PID when destroyed.
class SchedulerProcess {
 public:
  SchedulerProcess(std::string dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {}
  ~SchedulerProcess();
  SchedulerProcess(const SchedulerProcess&) = delete;
  SchedulerProcess& operator=(const SchedulerProcess&) = delete;

  // Writes the configuration and starts the binary; fails if it exits at once. `extra_env`:
  // NAME=value entries added to its environment (e.g. ONEQUEUE_FAILPOINTS).
  absl::Status Start(const std::string& config_yaml, const std::vector<std::string>& extra_env = {});
  // Waits up to `timeout` for the process to end by itself (a failpoint); true if it did.
  bool WaitForExit(absl::Duration timeout);
  // SIGKILL: a crash, nothing is cleaned up.
  void Crash();
  // SIGTERM and wait (SIGKILL after 10 s); returns the exit status (-1 if killed).
  int Stop();
  bool Running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  std::string Log() const;
  std::string log_path() const { return dir_ + "/" + name_ + ".log"; }
  // "127.0.0.1:PORT" of its gRPC QueueService (grpcAddress 127.0.0.1:0 picks the port; the log
  // names it), waiting up to 10 s for the line; empty if it never came.
  std::string GrpcAddress() const;
  // The same for its Prometheus /metrics (metricsAddress 127.0.0.1:0).
  std::string MetricsAddress() const;

 private:
  std::string dir_, name_;
  pid_t pid_ = -1;
};

// A SchedulerConfiguration for the local cluster: the scheduler's own least-privilege identity,
// the pool `pool_label`, QOS interactive (canPreempt) > normal > batch > scavenger, no leader
// election unless asked, gRPC on a free port, fair-share usage in memory only (usageConfigMap ""):
// each test's daemon starts from its own empty usage, not from the last test's.
// `leader_election`: the leaderElection block as flow YAML.
std::string SchedulerConfigYaml(const testing::K8sClusterInfo& info, const std::string& pool_label,
                                const std::string& leader_election = "{enabled: false}");

// A pool node kwok will run: labels onequeue.io/pool=<pool>, `cpu` CPUs, 16Gi, 110 pods.
json PoolNode(const std::string& name, const std::string& pool, const std::string& cpu);

struct PodOptions {
  std::string cpu = "1";
  std::string qos;         // onequeue.io/qos, none if empty
  std::string time_limit = "1h";
  std::string scheduler_name = "onequeue";
  std::string group;       // onequeue.io/group
  std::string group_size;  // onequeue.io/group-size
  json extra_annotations = json::object();
  json labels = json::object();
  int64_t grace_seconds = 0;  // terminationGracePeriodSeconds: kwok deletes evicted pods at once
};
// A pod spec (a Pod's "spec", also used in Deployment templates).
json PodSpec(const PodOptions& o);
json PodMetadata(const std::string& name, const std::string& ns, const PodOptions& o);
json MakePod(const std::string& name, const std::string& ns, const PodOptions& o);

// Create helpers; AlreadyExists is success (tests may be re-run against a kept cluster).
absl::Status Create(k8s::RestClient* client, const k8s::ResourceType& type, const std::string& ns,
                    const json& object);
absl::Status CreateNamespace(k8s::RestClient* client, const std::string& ns);
const k8s::ResourceType& Deployments();
const k8s::ResourceType& ReplicaSets();
const k8s::ResourceType& CoreEvents();

absl::StatusOr<k8s::Pod> GetPod(k8s::RestClient* client, const std::string& ns, const std::string& name);
absl::StatusOr<k8s::Node> GetNode(k8s::RestClient* client, const std::string& name);
absl::StatusOr<std::vector<k8s::Pod>> ListPods(k8s::RestClient* client, const std::string& ns,
                                               const std::string& label_selector = "");
// The PodScheduled condition, if the pod has one.
std::optional<k8s::Condition> PodScheduled(const k8s::Pod& pod);

// Waits up to a minute for the node's Ready condition (kwok marks its nodes Ready).
bool WaitForNodeReady(k8s::RestClient* client, const std::string& name);

// events.k8s.io/v1 events about one object (series folded in: count >= 1).
struct SeenEvent {
  std::string reason, note, type, reporting_controller;
  int count = 1;
};
std::vector<SeenEvent> EventsAbout(k8s::RestClient* client, const std::string& ns, const std::string& name);
std::vector<SeenEvent> EventsWithReason(k8s::RestClient* client, const std::string& ns,
                                        const std::string& name, const std::string& reason);
int CountEvents(const std::vector<SeenEvent>& events);
std::string Describe(const std::vector<SeenEvent>& events);

// Watches of one namespace's pods and one pool's nodes (label onequeue.io/pool=<pool>) that
// record, in order, what the protocol's invariants are checked against: every binding (pod, uid,
// node, when seen), every deletion, each pod's nomination and first Running, and the
// onequeue.io/owner values each node went through. Checked over the whole history, not on a
// snapshot taken at the end; the informers relist after an apiserver restart, so the record spans
// it.
class ClusterWatch {
 public:
  struct Binding {
    std::string pod, uid, node;
    absl::Time at;
  };
  ClusterWatch(k8s::RestClient* client, const std::string& ns, const std::string& pool);
  ~ClusterWatch() { Stop(); }
  ClusterWatch(const ClusterWatch&) = delete;
  ClusterWatch& operator=(const ClusterWatch&) = delete;
  // Starts both watches; true once both have listed.
  bool Start(absl::Duration timeout = absl::Seconds(30));
  void Stop();

  std::vector<Binding> bindings() const;
  std::vector<std::string> deleted() const;  // pod names, once per deletion seen
  std::string nominated(const std::string& pod) const;
  std::optional<absl::Time> running_at(const std::string& pod) const;
  // The onequeue.io/owner values `node` went through ("" = none).
  std::vector<std::string> owners(const std::string& node) const;
  bool AnyReserved() const;   // some node's current owner is reserved/...
  bool EverReserved() const;  // some node was ever reserved/...

 private:
  void OnPod(const k8s::Pod* old_pod, const k8s::Pod& pod);
  void OnPodDeleted(const k8s::Pod& pod);
  void OnNode(const k8s::Node& node);

  std::unique_ptr<k8s::Informer<k8s::Pod>> pods_;
  std::unique_ptr<k8s::Informer<k8s::Node>> nodes_;
  mutable absl::Mutex mu_;
  std::vector<Binding> bindings_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> deleted_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> nominated_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, absl::Time> running_at_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::string>> owners_ ABSL_GUARDED_BY(mu_);
};

// The fixture of every e2e test: its own namespace e2e-<test name>, pool nodes labelled
// onequeue.io/pool=<namespace>, and the daemon scheduling exactly that pool.
// Generous: on a loaded 2-core machine kwok's watches fall behind for tens of seconds (it relists
// after "RequestWatchProgress is disabled"), and bound pods turn Running only then.
inline constexpr absl::Duration kBindTimeout = absl::Seconds(90);
inline constexpr absl::Duration kRunningTimeout = absl::Seconds(150);

class E2ETest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = absl::AsciiStrToLower(test->name());
    if (name.size() > 40) name.resize(40);
    SetUpNamespace("e2e-" + name);
  }

  // The test's namespace `ns`, its folder in the cluster's, and an admin client.
  void SetUpNamespace(const std::string& ns) {
    ns_ = ns;
    dir_ = absl::StrCat(testing::K8sClusterEnvironment::Info().dir, "/", ns_);
    mkdir(dir_.c_str(), 0755);
    auto client = AdminClient(testing::K8sClusterEnvironment::Info());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    ASSERT_TRUE(CreateNamespace(client_.get(), ns_).ok());
  }

  void TearDown() override {
    if (scheduler_ && HasFailure()) std::cerr << "--- scheduler log ---\n" << scheduler_->Log();
    scheduler_.reset();
    // The next test's daemon sees every onequeue pod of the cluster: leave none pending.
    (void)testing::Kubectl(testing::K8sClusterEnvironment::Info(),
                           {"delete", "deployments,pods", "--all", "-n", ns_, "--grace-period=0", "--force",
                            "--wait=false"});
  }

  // Pool nodes named <ns>-<i>, labelled onequeue.io/pool=<ns>, Ready (kwok).
  void AddPool(int nodes, const std::string& cpu) {
    for (int i = 1; i <= nodes; ++i) {
      const std::string name = absl::StrCat(ns_, "-", i);
      ASSERT_TRUE(Create(client_.get(), k8s::kNodes, "", PoolNode(name, ns_, cpu)).ok());
      ASSERT_TRUE(WaitForNodeReady(client_.get(), name)) << name << " never became Ready (is kwok running?)";
    }
  }

  void StartScheduler() {
    scheduler_ = std::make_unique<SchedulerProcess>(dir_, "onequeue-scheduler");
    auto s = scheduler_->Start(SchedulerConfigYaml(testing::K8sClusterEnvironment::Info(), "onequeue.io/pool=" + ns_));
    ASSERT_TRUE(s.ok()) << s;
  }

  void CreatePod(const std::string& name, const PodOptions& o) {
    auto s = Create(client_.get(), k8s::kPods, ns_, MakePod(name, ns_, o));
    ASSERT_TRUE(s.ok()) << name << ": " << s;
  }

  k8s::Pod Pod(const std::string& name) {
    auto p = GetPod(client_.get(), ns_, name);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : k8s::Pod{};
  }

  bool IsBoundToPool(const std::string& name) {
    auto p = GetPod(client_.get(), ns_, name);
    return p.ok() && absl::StartsWith(p->node_name, ns_ + "-");
  }

  bool IsRunningOnPool(const std::string& name) {
    auto p = GetPod(client_.get(), ns_, name);
    return p.ok() && p->phase == "Running" && absl::StartsWith(p->node_name, ns_ + "-");
  }

  // A Deployment `name` of `replicas` preemptible pods (QOS scavenger, time limit 4h) of `cpu`,
  // labelled app=<name>; deleted, each takes `grace_seconds` to go where kwok keeps pods for their
  // grace period (K8sClusterOptions::kwok_graceful).
  void CreateDeployment(const std::string& name, int replicas, const std::string& cpu, int64_t grace_seconds = 0) {
    PodOptions o;
    o.cpu = cpu;
    o.qos = "scavenger";
    o.time_limit = "4h";
    o.labels = {{"app", name}};
    o.grace_seconds = grace_seconds;
    json d = {{"apiVersion", "apps/v1"},
              {"kind", "Deployment"},
              {"metadata", {{"name", name}, {"namespace", ns_}}},
              {"spec",
               {{"replicas", replicas},
                {"selector", {{"matchLabels", {{"app", name}}}}},
                {"template", {{"metadata", PodMetadata("", "", o)}, {"spec", PodSpec(o)}}}}}};
    auto s = Create(client_.get(), Deployments(), ns_, d);
    ASSERT_TRUE(s.ok()) << s;
  }

  std::vector<k8s::Pod> PodsOf(const std::string& app) {
    auto pods = ListPods(client_.get(), ns_, "app=" + app);
    return pods.ok() ? *pods : std::vector<k8s::Pod>{};
  }

  // Waits until `n` pods of the app run (none terminating); returns their names.
  std::set<std::string> WaitRunning(const std::string& app, int n) {
    std::set<std::string> names;
    EXPECT_TRUE(Eventually(kRunningTimeout, [&] {
      names.clear();
      for (const auto& p : PodsOf(app)) {
        if (p.phase == "Running" && p.metadata.deletion_timestamp.empty()) names.insert(p.metadata.name);
      }
      return static_cast<int>(names.size()) == n;
    })) << app << ": " << names.size() << " of " << n << " running";
    return names;
  }

  // Waits for a FailedScheduling event about `pod` whose note starts with `reason`.
  bool WaitForFailedScheduling(const std::string& pod, const std::string& reason) {
    return WaitForFailedSchedulingAny(pod, {reason});
  }
  // Any one of several reasons: one wait, not one timeout per reason that did not come.
  bool WaitForFailedSchedulingAny(const std::string& pod, const std::vector<std::string>& reasons) {
    return Eventually(kBindTimeout, [&] {
      for (const auto& e : EventsWithReason(client_.get(), ns_, pod, "FailedScheduling")) {
        for (const auto& reason : reasons) {
          if (absl::StartsWith(e.note, reason + ":")) return true;
        }
      }
      return false;
    });
  }

  std::string ns_, dir_;
  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<SchedulerProcess> scheduler_;
};

}  // namespace onequeue::e2e

#endif  // ONEQUEUE_TEST_E2E_E2E_SUPPORT_H_

// onequeue-scheduler: the daemon. Validates its configuration, serves the gRPC QueueService, and
// (kubernetes.enabled) watches pods and nodes and runs event-driven, coalesced queue cycles, under
// leader election when configured; the Slurm poller is wired in as it lands.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <pwd.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include <cstdlib>
#include <set>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "k8s_client/config.h"
#include "k8s_client/dra.h"
#include "k8s_client/informer.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"
#include "onequeue/version.h"
#include "scheduler/config.h"
#include "scheduler/cycle_log.h"
#include "scheduler/fenced_actions.h"
#include "scheduler/grpc_service.h"
#include "scheduler/kube_cluster.h"
#include "scheduler/leader_elector.h"
#include "scheduler/usage_store.h"
#include "scheduler/loop_health.h"
#include "scheduler/metrics.h"
#include "scheduler/metrics_server.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/slurm_cluster.h"
#include "slurm_bridge/ownership.h"
#include "slurm_bridge/poller.h"
#include "slurm_bridge/slurm_api.h"
#include "spdlog/spdlog.h"

namespace {

// How long a stopping daemon waits for its queued Events and late wait-annotation writes (a pod is given
// 30 s to stop unless its spec says otherwise).
constexpr absl::Duration kBestEffortFlush = absl::Seconds(3);

constexpr const char* kUsage = R"(Usage: onequeue-scheduler --config FILE [options]

One Slurm-style priority/backfill queue for Kubernetes pods (schedulerName: onequeue) and Slurm
jobs on one shared pool of nodes.

Options:
  --config FILE     the SchedulerConfiguration (YAML, apiVersion onequeue.io/v1alpha1); required
  --check-config    validate the configuration, print a summary and exit (0 if valid)
  --grpc-address A  override server.grpcAddress (host:port, 127.0.0.1 by default)
  --version         print the version and exit
  --help            print this help and exit

Exit codes: 0 success, 1 runtime failure, 2 usage error, 3 invalid or unreadable configuration.
)";

int Usage(const char* why) {
  std::fprintf(stderr, "onequeue-scheduler: %s\n\n%s", why, kUsage);
  return 2;
}

}  // namespace

namespace onequeue::scheduler {

// Wakes the loop when an informer sees a change; cycles are coalesced: many events between two
// cycles cost one cycle.
class CycleTrigger {
 public:
  void Fire() {
    absl::MutexLock l(&mu_);
    dirty_ = true;
  }
  // Waits until fired or `timeout` passes (the periodic full pass); returns false on stop.
  bool Wait(absl::Duration timeout) {
    absl::MutexLock l(&mu_);
    auto ready = [this] { return dirty_ || stop_; };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    dirty_ = false;
    return !stop_;
  }
  void Stop() {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }

 private:
  absl::Mutex mu_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = true;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

absl::StatusOr<k8s::ClientConfig> KubeClientConfig(const Config& config, const std::string& identity) {
  absl::StatusOr<k8s::ClientConfig> c = config.kubernetes.kubeconfig.empty()
                                            ? k8s::InClusterConfig()
                                            : k8s::LoadKubeconfig(config.kubernetes.kubeconfig);
  if (!c.ok()) return c;
  c->qps = config.kubernetes.qps;
  c->burst = config.kubernetes.burst;
  c->max_response_bytes = static_cast<size_t>(config.kubernetes.max_response_bytes);
  absl::StatusOr<k8s::HttpClientChoice> choice =
      k8s::ChooseHttpClient(config.kubernetes.http_client, c->server, [](const char* name) { return std::getenv(name); });
  if (!choice.ok()) return choice.status();
  // A proxy the environment names decides "auto", or is ignored by "nghttp2": the admin reads which.
  if (!choice->note.empty()) spdlog::warn("kubernetes: {}", choice->note);
  c->client = choice->client;
  // The replica's identity too: the apiserver's audit log tells the replicas' writes apart.
  c->user_agent = absl::StrCat("onequeue-scheduler/", kVersion, " (", identity, ")");
  return c;
}

// Acquires and renews the Lease until `stop`. Leadership that cannot be renewed within the renew
// deadline (2/3 of the lease duration, on the monotonic clock) is lost: the process stops
// (SIGTERM to itself, exit code 1), like kube-scheduler, because a former leader's memory
// (assumed bindings, evictions under way) must not meet a new leader's decisions; the Deployment
// restarts it as a standby. Writes stop earlier still, on their own: the write gate
// (fenced_actions.h) asks the elector before each one, so a cycle that runs on while this thread
// is late (or the whole process was stopped) sends nothing once the deadline has passed.
void KeepLease(LeaderElector* elector, absl::Notification* stop, std::atomic<bool>* leading,
               std::atomic<bool>* lost, CycleTrigger* trigger, const LoopHealth* health) {
  spdlog::info("leader election: {} waits for lease {}/{} (renew deadline {}, request timeout {})",
               elector->options().identity, elector->options().namespace_, elector->options().name,
               absl::FormatDuration(elector->renew_deadline()),
               absl::FormatDuration(LeaderElector::RequestTimeout(elector->options().lease_duration)));
  do {
    // A leader whose loop is stuck would keep the Lease and schedule nothing. It stops renewing
    // and exits at once (not SIGTERM: shutting down joins the stuck loop thread, which never
    // returns); the Lease expires and a replica that schedules takes over. Not released first:
    // the stuck cycle could resume and write after another replica took the Lease.
    if (*leading && health != nullptr) {
      if (const HealthVerdict v = health->Check(); !v.serving) {
        elector->StopWriting();
        spdlog::critical("leader election: {}; giving up the Lease (not renewing it) and exiting", v.message);
        spdlog::default_logger()->flush();
        _exit(1);
      }
    }
    const bool held = elector->TryAcquireOrRenew();
    if (held && elector->Leading()) {
      if (!leading->exchange(true)) {
        spdlog::info("leader election: leading");
        trigger->Fire();
      }
    } else if (*leading && !elector->Leading()) {
      elector->StopWriting();
      spdlog::error("leader election: lease not renewed for {}: leadership lost, stopping",
                    absl::FormatDuration(elector->SinceLastRenew()));
      *leading = false;
      *lost = true;
      kill(getpid(), SIGTERM);
      return;
    }
  } while (!stop->WaitForNotificationWithTimeout(elector->retry_period()));
  if (*leading) elector->Release();
}

// ONEQUEUE_FAILPOINTS=name[,name]: the daemon stops dead (SIGKILL, nothing cleaned up) when the
// loop reaches a named step. For the crash-recovery tests only; unset in every real deployment.
Failpoint FailpointsFromEnvironment() {
  const char* env = std::getenv("ONEQUEUE_FAILPOINTS");
  if (env == nullptr || *env == '\0') return nullptr;
  std::set<std::string> names = absl::StrSplit(env, ',', absl::SkipEmpty());
  spdlog::warn("failpoints armed (tests only): {}", env);
  auto stopped_once = std::make_shared<std::atomic<bool>>(false);
  return [names, stopped_once](const char* name) {
    // NAME=stop: the whole process stops there (SIGSTOP to itself), once, as a frozen VM or a
    // long pause would stop it; SIGCONT resumes that very step (the deposed-leader test).
    if (names.count(absl::StrCat(name, "=stop")) && !stopped_once->exchange(true)) {
      spdlog::critical("failpoint {}: stopping the process (SIGSTOP)", name);
      spdlog::default_logger()->flush();
      // raise: this thread stops before it returns (a signal to the whole process would stop it
      // a moment later, after it went on to its next write).
      raise(SIGSTOP);
      spdlog::warn("failpoint {}: continued", name);
      return;
    }
    // NAME=hang: the thread that reaches it never comes back (a stuck loop, for the health test).
    if (names.count(absl::StrCat(name, "=hang"))) {
      spdlog::critical("failpoint {}: hanging for ever", name);
      spdlog::default_logger()->flush();
      for (;;) absl::SleepFor(absl::Hours(1));
    }
    if (!names.count(name)) return;
    spdlog::critical("failpoint {}: stopping dead", name);
    spdlog::default_logger()->flush();
    kill(getpid(), SIGKILL);
  };
}

struct SlurmSide {
  std::unique_ptr<slurm::SlurmApi> api;       // the poller's and the admin calls'
  std::unique_ptr<slurm::SlurmApi> loop_api;  // the loop's writes, bounded by the lease (issue 24 M1)
  std::unique_ptr<slurm::NodeOwnership> ownership;
  std::unique_ptr<slurm::SlurmPoller> poller;
  std::unique_ptr<SlurmBridgeActions> actions;
};

// `write_time_left`: how long the loop's writes may still take (the lease); null: unbounded.
absl::StatusOr<SlurmSide> ConnectSlurm(const SlurmConfig& c, std::function<absl::Duration()> write_time_left) {
  slurm::SlurmApiOptions o;
  if (c.url.rfind("unix://", 0) == 0) {
    o.transport.unix_socket = c.url.substr(7);
    o.transport.base_url = "http://localhost";
  } else {
    o.transport.base_url = c.url;
  }
  o.user = c.user;
  o.token_file = c.token_file;
  if (c.api_version != "auto") {
    auto v = slurm::ParseApiVersion(c.api_version);
    if (!v.ok()) return v.status();
    o.pinned_version = *v;
  }
  o.scontrol_path = c.scontrol_path;
  o.slurm_conf = c.slurm_conf;
  SlurmSide side;
  auto api = slurm::ConnectSlurmApi(o);
  if (!api.ok()) return api.status();
  side.api = std::move(*api);
  const slurm::SlurmIdentity identity{c.user, c.scontrol_user};
  // The loop's own client: every write it sends (each step of a lend too) must land before the
  // lease ends, while the admin calls (served by a standby too) and the poller are not bounded.
  o.pinned_version = side.api->version();
  o.write_time_left = std::move(write_time_left);
  auto loop_api = slurm::ConnectSlurmApi(o);
  if (!loop_api.ok()) return loop_api.status();
  side.loop_api = std::move(*loop_api);
  // Issue 26: in state mode the poller sees a change that keeps a job's state (onequeue's holds,
  // an admin's oq hold) only at its next full listing: both clients tell it which jobs they wrote,
  // and it fetches those on its next poll. The poller reads through the unwrapped client, which
  // the wrapper keeps alive.
  side.poller = std::make_unique<slurm::SlurmPoller>(*side.api);
  auto refetch = [poller = side.poller.get()](uint32_t job_id) { poller->Refetch(job_id); };
  side.api = slurm::NotifyJobWrites(std::move(side.api), refetch);
  side.loop_api = slurm::NotifyJobWrites(std::move(side.loop_api), refetch);
  if (c.lend_mechanism == "drain") {
    side.ownership = slurm::MakeDrainOwnership(*side.loop_api, identity);
  } else {
    slurm::PlaceholderOptions po;
    po.reclaim_partition = c.reclaim_partition;
    po.identity = identity;
    po.shared_partitions = c.shared_partitions;  // issue 24 M6: the only jobs a placeholder displaces
    side.ownership = slurm::MakePlaceholderOwnership(*side.loop_api, po, [] { return absl::Now(); });
  }
  side.actions = std::make_unique<SlurmBridgeActions>(side.loop_api.get(), side.ownership.get());
  return side;
}

// The daemon's parts, started in named steps by Run(): the servers (gRPC QueueService, /metrics),
// the Slurm side (client, ownership mechanism, poller thread), the Kubernetes side (client,
// informers, leader election) and the loop thread. Run() waits for SIGTERM or SIGINT and stops
// them in order; the destructor stops whatever a failed start left running.
class Daemon {
 public:
  explicit Daemon(const Config& config)
      : config_(config), loop_health_(absl::Seconds(config.server.health_cycle_age_seconds)) {}
  ~Daemon() { Stop(); }
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // The exit code: 0 after a signal, 1 when leadership was lost or a part could not start, 3 when
  // the Kubernetes client configuration cannot be read.
  int Run() {
    BlockSignals();
    if (int rc = StartServers(); rc != 0) return rc;
    SetIdentity();
    if (config_.slurm.enabled && config_.kubernetes.enabled) {
      if (int rc = StartSlurm(); rc != 0) return rc;
    }
    if (config_.kubernetes.enabled) {
      if (int rc = StartKubernetes(); rc != 0) return rc;
    } else {
      spdlog::warn("kubernetes.enabled is false: serving the API only, scheduling nothing");
    }
    if (config_.slurm.enabled && !config_.kubernetes.enabled) {
      spdlog::warn("slurm.enabled without kubernetes.enabled: Slurm is not polled (nothing to share it with)");
    }
    int sig = 0;
    sigwait(&signals_, &sig);
    spdlog::info("signal {}: shutting down", sig);
    Stop();
    return lost_leadership_ ? 1 : 0;
  }

 private:
  // Signals are handled by one thread that waits for them; every other thread blocks them,
  // including the gRPC and /metrics servers' threads, so the mask is set before they start.
  void BlockSignals() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  }

  int StartServers() {
    // The last cycle's status, read by the gRPC QueueService (oq queue/nodes/priority/explain).
    ServiceInfo service_info;
    service_info.status = &status_board_;
    service_info.weights = ToQueueConfig(config_).weights;
    service_info.admin = &admin_;
    service_info.admin_token_file = config_.server.admin_token_file;
    service_info.tls_cert_file = config_.server.tls_cert_file;
    service_info.tls_key_file = config_.server.tls_key_file;
    // The loop beats after every pass; Health and /healthz turn NOT_SERVING when it stops (stuck).
    // Without Kubernetes no loop runs, and there is nothing to be stuck.
    if (config_.kubernetes.enabled) service_info.health = &loop_health_;
    auto server = StartQueueServer(config_.server.grpc_address, service_info);
    if (!server.ok()) {
      spdlog::error("{}", server.status().ToString());
      return 1;
    }
    server_ = std::move(*server);
    spdlog::info("onequeue-scheduler {} serving onequeue.v1.QueueService on port {}", kVersion, server_->port());
    auto metrics_server = StartMetricsServer(config_.server.metrics_address, metrics_.registry(),
                                             config_.kubernetes.enabled ? &loop_health_ : nullptr);
    if (!metrics_server.ok()) {
      spdlog::error("{}", metrics_server.status().ToString());
      return 1;
    }
    metrics_server_ = std::move(*metrics_server);
    spdlog::info("serving Prometheus /metrics on port {} (and /healthz)", metrics_server_->port());
    return 0;
  }

  void SetIdentity() {
    char host[256] = "onequeue";
    gethostname(host, sizeof(host) - 1);
    host_ = host;
    // The Lease holder's name, and in every request's User-Agent.
    identity_ = absl::StrCat(host_, "_", getpid());
    // Tests only (the control run of the deposed-leader test); unset in every real deployment.
    const char* no_gate = std::getenv("ONEQUEUE_TEST_WITHOUT_WRITE_GATE");
    without_write_gate_ = no_gate != nullptr && std::string(no_gate) == "1";
  }

  int StartSlurm() {
    // The elector is made in StartKubernetes, before the loop starts; without one writes are not
    // bounded (issue 24 M1: the loop's Slurm writes end with the lease).
    auto side = ConnectSlurm(config_.slurm, without_write_gate_ ? std::function<absl::Duration()>() : [this] {
      return elector_ ? elector_->WriteTimeLeft() : absl::InfiniteDuration();
    });
    if (!side.ok()) {
      spdlog::error("slurm: {}", side.status().ToString());
      return 1;
    }
    slurm_side_ = std::move(*side);
    admin_.ConnectSlurm(slurm_side_.api.get());
    spdlog::info("slurm: slurmrestd {} ({}), lending by {}, shared partitions {}", config_.slurm.url,
                 slurm::VersionString(slurm_side_.api->version()), slurm_side_.ownership->mechanism(),
                 absl::StrJoin(config_.slurm.shared_partitions, ","));
    // The poller runs beside the loop: a change Slurm reports wakes a cycle, like an informer event.
    poll_thread_ = std::thread([this] {
      const absl::Duration every = absl::Seconds(config_.slurm.poll_interval_seconds);
      do {
        const absl::Time poll_start = absl::Now();
        auto changes = slurm_side_.poller->PollOnce(poll_start);
        metrics_.ObserveSlurmPoll(absl::ToDoubleSeconds(absl::Now() - poll_start), changes.ok());
        if (!changes.ok()) spdlog::warn("slurm poll: {}", changes.status().ToString());
        else if (changes->any()) trigger_.Fire();
      } while (!stop_poll_.WaitForNotificationWithTimeout(every));
    });
    return 0;
  }

  int StartKubernetes() {
    auto kc = KubeClientConfig(config_, identity_);
    if (!kc.ok()) {
      spdlog::error("kubernetes: {}", kc.status().ToString());
      return 3;
    }
    auto created = k8s::RestClient::Create(*kc);
    if (!created.ok()) {
      spdlog::error("kubernetes: {}", created.status().ToString());
      return 1;
    }
    // Which HTTP client carries the API's traffic (kubernetes.httpClient): a site comparing the two
    // reads it here, and the e2e variants on nghttp2 check it.
    spdlog::info("kubernetes: {} over HTTP client {}", kc->server,
                 kc->client == k8s::HttpClient::kNghttp2 ? "nghttp2" : "curl");
    client_ = std::move(*created);
    admin_.ConnectKubernetes(client_.get());
    StartInformers();
    if (config_.leader_election.enabled) {
      if (int rc = StartLeaderElection(*kc); rc != 0) return rc;
    }
    loop_thread_ = std::thread([this] { RunLoop(); });
    return 0;
  }

  // The handlers keep the Kubernetes source's records current (parsed once per change) and wake
  // a cycle.
  void StartInformers() {
    k8s::InformerHandlers<k8s::Node> node_handlers{
        [this](const k8s::Node& n) { kube_source_.UpsertNode(n); trigger_.Fire(); },
        [this](const k8s::Node&, const k8s::Node& n) { kube_source_.UpsertNode(n); trigger_.Fire(); },
        [this](const k8s::Node& n) { kube_source_.DeleteNode(n); trigger_.Fire(); }};
    k8s::InformerHandlers<k8s::Pod> pod_handlers{
        [this](const k8s::Pod& p) { kube_source_.UpsertPod(p); trigger_.Fire(); },
        [this](const k8s::Pod&, const k8s::Pod& p) { kube_source_.UpsertPod(p); trigger_.Fire(); },
        [this](const k8s::Pod& p) { kube_source_.DeletePod(p); trigger_.Fire(); }};
    k8s::InformerOptions informer_options;  // a watch's unhandled bytes: bounded like a response
    informer_options.max_backlog_bytes = static_cast<size_t>(config_.kubernetes.max_response_bytes);
    nodes_ = std::make_unique<k8s::Informer<k8s::Node>>(client_.get(), k8s::kNodes, informer_options, node_handlers);
    pods_ = std::make_unique<k8s::Informer<k8s::Pod>>(client_.get(), k8s::kPods, informer_options, pod_handlers);
    // PodDisruptionBudgets: preemption picks victim sets the budgets allow (issue 13 defect 7).
    const bool read_budgets = !config_.test_without_budgets;
    k8s::InformerHandlers<k8s::PodDisruptionBudget> budget_handlers{
        [this, read_budgets](const k8s::PodDisruptionBudget& b) {
          if (read_budgets) kube_source_.UpsertBudget(b);
          trigger_.Fire();
        },
        [this, read_budgets](const k8s::PodDisruptionBudget&, const k8s::PodDisruptionBudget& b) {
          if (read_budgets) kube_source_.UpsertBudget(b);
          trigger_.Fire();
        },
        [this](const k8s::PodDisruptionBudget& b) { kube_source_.DeleteBudget(b); trigger_.Fire(); }};
    budgets_ = std::make_unique<k8s::Informer<k8s::PodDisruptionBudget>>(client_.get(), k8s::kPodDisruptionBudgets,
                                                                          informer_options, budget_handlers);
    // Volumes (VolumeBinding, VolumeZone, VolumeRestrictions: volume_placement.h).
    k8s::InformerHandlers<k8s::PersistentVolumeClaim> claim_handlers{
        [this](const k8s::PersistentVolumeClaim& c) { kube_source_.UpsertClaim(c); trigger_.Fire(); },
        [this](const k8s::PersistentVolumeClaim&, const k8s::PersistentVolumeClaim& c) {
          kube_source_.UpsertClaim(c);
          trigger_.Fire();
        },
        [this](const k8s::PersistentVolumeClaim& c) { kube_source_.DeleteClaim(c); trigger_.Fire(); }};
    k8s::InformerHandlers<k8s::PersistentVolume> volume_handlers{
        [this](const k8s::PersistentVolume& v) { kube_source_.UpsertVolume(v); trigger_.Fire(); },
        [this](const k8s::PersistentVolume&, const k8s::PersistentVolume& v) {
          kube_source_.UpsertVolume(v);
          trigger_.Fire();
        },
        [this](const k8s::PersistentVolume& v) { kube_source_.DeleteVolume(v); trigger_.Fire(); }};
    k8s::InformerHandlers<k8s::StorageClass> class_handlers{
        [this](const k8s::StorageClass& c) { kube_source_.UpsertClass(c); trigger_.Fire(); },
        [this](const k8s::StorageClass&, const k8s::StorageClass& c) { kube_source_.UpsertClass(c); trigger_.Fire(); },
        [this](const k8s::StorageClass& c) { kube_source_.DeleteClass(c); trigger_.Fire(); }};
    claims_ = std::make_unique<k8s::Informer<k8s::PersistentVolumeClaim>>(client_.get(), k8s::kPersistentVolumeClaims,
                                                                           informer_options, claim_handlers);
    volumes_ = std::make_unique<k8s::Informer<k8s::PersistentVolume>>(client_.get(), k8s::kPersistentVolumes,
                                                                       informer_options, volume_handlers);
    classes_ = std::make_unique<k8s::Informer<k8s::StorageClass>>(client_.get(), k8s::kStorageClasses,
                                                                   informer_options, class_handlers);
    // NodeVolumeLimits: each CSI driver's attach limit per node.
    k8s::InformerHandlers<k8s::CsiNode> csi_node_handlers{
        [this](const k8s::CsiNode& n) { kube_source_.UpsertCsiNode(n); trigger_.Fire(); },
        [this](const k8s::CsiNode&, const k8s::CsiNode& n) { kube_source_.UpsertCsiNode(n); trigger_.Fire(); },
        [this](const k8s::CsiNode& n) { kube_source_.DeleteCsiNode(n); trigger_.Fire(); }};
    csi_nodes_ = std::make_unique<k8s::Informer<k8s::CsiNode>>(client_.get(), k8s::kCsiNodes, informer_options,
                                                                csi_node_handlers);
    // VolumeBinding's storage capacity check: which CSI drivers opt in, and their capacity per class.
    k8s::InformerHandlers<k8s::CsiDriver> csi_driver_handlers{
        [this](const k8s::CsiDriver& d) { kube_source_.UpsertCsiDriver(d); trigger_.Fire(); },
        [this](const k8s::CsiDriver&, const k8s::CsiDriver& d) { kube_source_.UpsertCsiDriver(d); trigger_.Fire(); },
        [this](const k8s::CsiDriver& d) { kube_source_.DeleteCsiDriver(d); trigger_.Fire(); }};
    csi_drivers_ = std::make_unique<k8s::Informer<k8s::CsiDriver>>(client_.get(), k8s::kCsiDrivers, informer_options,
                                                                    csi_driver_handlers);
    k8s::InformerHandlers<k8s::CsiStorageCapacity> csi_capacity_handlers{
        [this](const k8s::CsiStorageCapacity& c) { kube_source_.UpsertCsiCapacity(c); trigger_.Fire(); },
        [this](const k8s::CsiStorageCapacity&, const k8s::CsiStorageCapacity& c) {
          kube_source_.UpsertCsiCapacity(c);
          trigger_.Fire();
        },
        [this](const k8s::CsiStorageCapacity& c) { kube_source_.DeleteCsiCapacity(c); trigger_.Fire(); }};
    csi_capacities_ = std::make_unique<k8s::Informer<k8s::CsiStorageCapacity>>(
        client_.get(), k8s::kCsiStorageCapacities, informer_options, csi_capacity_handlers);
    StartDraInformers(informer_options);
    nodes_->Start();
    pods_->Start();
    budgets_->Start();
    claims_->Start();
    volumes_->Start();
    classes_->Start();
    csi_nodes_->Start();
    csi_drivers_->Start();
    csi_capacities_->Start();
  }

  // Issue 25 DRA (dra_pods.h): ResourceClaims and ResourceSlices, read only where some partition
  // says gpus: dra (the chart's RBAC has them; a cluster without resource.k8s.io/v1 never asks).
  template <typename T>
  std::unique_ptr<k8s::Informer<T>> DraInformer(const k8s::ResourceType& type, const k8s::InformerOptions& options,
                                                void (KubeSource::*upsert)(const T&), void (KubeSource::*remove)(const T&)) {
    auto informer = std::make_unique<k8s::Informer<T>>(client_.get(), type, options, k8s::InformerHandlers<T>{
        [this, upsert](const T& o) { (kube_source_.*upsert)(o); trigger_.Fire(); },
        [this, upsert](const T&, const T& o) { (kube_source_.*upsert)(o); trigger_.Fire(); },
        [this, remove](const T& o) { (kube_source_.*remove)(o); trigger_.Fire(); }});
    informer->Start();
    return informer;
  }
  void StartDraInformers(const k8s::InformerOptions& options) {
    if (config_.slurm.partition_dra_gpus.empty()) return;
    resource_claims_ = DraInformer<k8s::ResourceClaim>(k8s::kResourceClaims, options, &KubeSource::UpsertResourceClaim,
                                                       &KubeSource::DeleteResourceClaim);
    resource_slices_ = DraInformer<k8s::ResourceSlice>(k8s::kResourceSlices, options, &KubeSource::UpsertResourceSlice,
                                                       &KubeSource::DeleteResourceSlice);
  }

  int StartLeaderElection(const k8s::ClientConfig& kc) {
    leading_ = false;
    // The Lease has its own client: short timeouts, no retries, and a token bucket that the
    // loop's bursts of writes do not empty.
    const absl::Duration lease_duration = absl::Seconds(config_.leader_election.lease_duration_seconds);
    auto lease_client = k8s::RestClient::Create(LeaderElector::LeaseClientConfig(kc, lease_duration),
                                                LeaderElector::LeaseRetryPolicy());
    if (!lease_client.ok()) {
      spdlog::error("kubernetes: {}", lease_client.status().ToString());
      return 1;
    }
    lease_rest_client_ = std::move(*lease_client);
    lease_api_ = std::make_unique<k8s::SchedulerApi>(lease_rest_client_.get());
    // The loop's writes have their own client whose every request but reads asks the elector
    // at the last moment, on the transport thread (a write queued or rate-limited while this
    // replica led must not leave once it does not); the admin calls keep the shared client.
    auto writer = k8s::RestClient::Create(kc);
    if (!writer.ok()) {
      spdlog::error("kubernetes: {}", writer.status().ToString());
      return 1;
    }
    loop_writer_ = std::move(*writer);
    LeaderElector::Options lo;
    lo.namespace_ = config_.leader_election.namespace_;
    lo.name = config_.leader_election.lease_name;
    lo.identity = identity_;
    lo.lease_duration = lease_duration;
    elector_ = std::make_unique<LeaderElector>(lease_api_.get(), std::move(lo));
    if (without_write_gate_) {
      spdlog::warn("ONEQUEUE_TEST_WITHOUT_WRITE_GATE=1 (tests only): writes do not ask whether this replica still leads");
    } else {
      loop_writer_->SetWriteGate([e = elector_.get()] { return e->MayWrite(); });
    }
    lease_thread_ = std::thread(
        [this] { KeepLease(elector_.get(), &stop_lease_, &leading_, &lost_leadership_, &trigger_, &loop_health_); });
    return 0;
  }

  // False when stopped while waiting.
  bool WaitForInformersAndFirstPoll() {
    while (!nodes_->WaitForSync(absl::Seconds(1)) || !pods_->WaitForSync(absl::Seconds(1)) ||
           !budgets_->WaitForSync(absl::Seconds(1)) || !claims_->WaitForSync(absl::Seconds(1)) ||
           !volumes_->WaitForSync(absl::Seconds(1)) || !classes_->WaitForSync(absl::Seconds(1)) ||
           !csi_nodes_->WaitForSync(absl::Seconds(1)) || !csi_drivers_->WaitForSync(absl::Seconds(1)) ||
           !csi_capacities_->WaitForSync(absl::Seconds(1)) ||
           (resource_claims_ && (!resource_claims_->WaitForSync(absl::Seconds(1)) ||
                                 !resource_slices_->WaitForSync(absl::Seconds(1))))) {
      loop_health_.Beat();  // waiting, not stuck: a large cluster's first list takes a while
      if (!trigger_.Wait(absl::ZeroDuration())) return false;
      spdlog::info("waiting for the pod and node informers to sync");
    }
    spdlog::info("informers synced: {} nodes, {} pods", nodes_->Size(), pods_->Size());
    // Likewise the first Slurm poll: a cycle without it would not know which lent nodes run
    // Slurm jobs, nor which jobs wait. Bounded: a slurmrestd that does not answer does not stop
    // the pods (the loop then keeps them off nodes lent to Slurm).
    if (!slurm_side_.poller) return true;
    const double wait_seconds = config_.slurm.first_poll_wait_seconds;
    const absl::Time give_up = absl::Now() + absl::Seconds(wait_seconds);
    while (slurm_side_.poller->View()->refreshed_at == absl::InfinitePast() && absl::Now() < give_up) {
      loop_health_.Beat();
      if (!trigger_.Wait(absl::Milliseconds(200))) return false;
    }
    if (slurm_side_.poller->View()->refreshed_at == absl::InfinitePast()) {
      spdlog::warn("slurm: no successful poll after {} s; scheduling pods, keeping them off lent nodes",
                   wait_seconds);
    }
    return true;
  }

  // The loop thread: the loop's actions (timed, and under leader election fenced: every write
  // first asks whether this replica still leads), then cycles until stopped.
  void RunLoop() {
    if (!WaitForInformersAndFirstPoll()) return;
    InformerClusterView view(nodes_.get(), pods_.get(), &kube_source_, slurm_side_.poller.get());
    KubeClusterActions actions(loop_writer_ ? loop_writer_.get() : client_.get(), pods_.get(), host_, nodes_.get());
    TimedClusterActions timed_actions(&actions, &metrics_);
    ClusterActions* cluster_actions = &timed_actions;
    SlurmActions* slurm_actions = slurm_side_.actions.get();
    // Refusals are logged in full once, then at most one line a second (a deposed leader's cycle
    // can refuse thousands of writes).
    RefusedWriteLog refused_log([] { return std::chrono::steady_clock::now(); },
                                [](const std::string& line) { spdlog::warn("{}", line); });
    std::unique_ptr<FencedClusterActions> fenced_cluster;
    std::unique_ptr<FencedSlurmActions> fenced_slurm;
    if (elector_ && !without_write_gate_) {
      const RefusedWrite refused = RefusedWriteLog::To(&refused_log);
      fenced_cluster = std::make_unique<FencedClusterActions>(cluster_actions, elector_.get(), refused);
      cluster_actions = fenced_cluster.get();
      if (slurm_actions != nullptr) {
        fenced_slurm = std::make_unique<FencedSlurmActions>(slurm_actions, elector_.get(), refused);
        slurm_actions = fenced_slurm.get();
      }
    }
    const Failpoint failpoint = FailpointsFromEnvironment();
    SchedulingLoop loop(config_, &view, cluster_actions, slurm_actions, failpoint);
    loop.MarkPhasesWith([this](const char* phase) {
      const absl::Time now = absl::Now();
      metrics_.ObservePhase(phase, absl::ToDoubleSeconds(now - phase_start_));
      phase_times_.emplace_back(phase, now - phase_start_);
      phase_start_ = now;
    });
    loop.PublishTo(&status_board_);
    // Issue 29: fair-share usage in a ConfigMap of the daemon's namespace, written through the
    // loop's client (its write gate: only the leader writes), read when this replica leads.
    std::unique_ptr<ConfigMapUsageStore> usage_store;
    if (!config_.queue.usage_config_map.empty()) {
      usage_store = std::make_unique<ConfigMapUsageStore>(loop_writer_ ? loop_writer_.get() : client_.get(),
                                                          config_.leader_election.namespace_,
                                                          config_.queue.usage_config_map);
      loop.PersistUsageTo(usage_store.get());
    }
    RunCycles(loop, actions, failpoint);
    // Stopping (SIGTERM): the Events and late wait-annotation writes a burst left queued go out now, while
    // the Lease is still held (it is given up after this thread ends), within a bound well inside
    // the pod's termination grace period.
    if (leading_ && !actions.FlushBestEffort(kBestEffortFlush)) {
      spdlog::warn("stopping with Events or wait-annotation writes still unsent after {}", absl::FormatDuration(kBestEffortFlush));
    }
  }

  // Event-driven, coalesced, with a periodic full pass so estimates and ages stay fresh. A
  // standby replica keeps its informers warm and runs no cycle until it leads. The periodic pass
  // is a full cycle when queue.fullCycleSeconds has passed since the last one (the cycles events
  // trigger in between may plan only what arrived): wake that often.
  void RunCycles(SchedulingLoop& loop, const KubeClusterActions& actions, const Failpoint& failpoint) {
    const int64_t full_every = config_.queue.full_cycle_seconds;
    const absl::Duration period = absl::Seconds(full_every > 0 ? std::min<int64_t>(5, full_every) : 5);
    while (trigger_.Wait(period)) {
      // The previous pass (a cycle, or a standby's wake-up) completed: a cycle that hangs never
      // comes back here, and the beats stop.
      loop_health_.Beat();
      metrics_.SetLeader(leading_);
      if (!leading_) continue;
      if (failpoint) failpoint("cycle-start");  // tests: cycle-start=hang is a stuck loop
      const absl::Time cycle_start = phase_start_ = absl::Now();
      phase_times_.clear();
      const CycleStats s = loop.RunCycle(absl::ToUnixSeconds(cycle_start));
      metrics_.ObserveCycle(s, status_board_.Latest().get(), absl::ToDoubleSeconds(absl::Now() - cycle_start));
      metrics_.ObserveEvents(actions.event_counters());
      metrics_.ObserveInformer("pods", pods_->Stats());
      metrics_.ObserveInformer("nodes", nodes_->Stats());
      if (budgets_) metrics_.ObserveInformer("poddisruptionbudgets", budgets_->Stats());
      LogCycle(s, absl::Now() - cycle_start, phase_times_);
      if (s.run_again) {  // issue 26: it freed what its plan could not use, and no event says so
        spdlog::info("cycle: reservations released in this process's view only; the next cycle runs at once");
        trigger_.Fire();
      }
      absl::SleepFor(absl::Milliseconds(100));  // coalesce bursts of events into one cycle
    }
  }

  static void LogCycle(const CycleStats& s, absl::Duration took, const CyclePhaseTimes& phases) {
    for (const std::string& e : s.ignored_edits) spdlog::warn("{}", e);
    if (std::optional<std::string> line = DescribeCycle(s, took, phases)) spdlog::info("{}", *line);
  }

  // Stops the parts in order (idempotent): the loop, the poller, then the Lease (no cycle runs
  // once it is given up), the informers and the gRPC server.
  void Stop() {
    if (stopped_) return;
    stopped_ = true;
    trigger_.Stop();
    if (loop_thread_.joinable()) loop_thread_.join();
    stop_poll_.Notify();
    if (poll_thread_.joinable()) poll_thread_.join();
    stop_lease_.Notify();
    if (lease_thread_.joinable()) lease_thread_.join();
    if (budgets_) budgets_->Stop();
    if (claims_) claims_->Stop();
    if (volumes_) volumes_->Stop();
    if (classes_) classes_->Stop();
    if (csi_nodes_) csi_nodes_->Stop();
    if (csi_drivers_) csi_drivers_->Stop();
    if (csi_capacities_) csi_capacities_->Stop();
    if (resource_claims_) resource_claims_->Stop();
    if (resource_slices_) resource_slices_->Stop();
    if (pods_) pods_->Stop();
    if (nodes_) nodes_->Stop();
    if (server_) server_->Shutdown();
  }

  const Config& config_;
  sigset_t signals_;
  StatusBoard status_board_;
  DaemonAdminActions admin_;
  LoopHealth loop_health_;
  SchedulerMetrics metrics_;
  std::unique_ptr<QueueServer> server_;
  std::unique_ptr<MetricsServer> metrics_server_;
  std::string host_, identity_;
  bool without_write_gate_ = false;
  CycleTrigger trigger_;
  KubeSource kube_source_;
  SlurmSide slurm_side_;
  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<k8s::Informer<k8s::Node>> nodes_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> pods_;
  std::unique_ptr<k8s::Informer<k8s::PodDisruptionBudget>> budgets_;
  std::unique_ptr<k8s::Informer<k8s::PersistentVolumeClaim>> claims_;
  std::unique_ptr<k8s::Informer<k8s::PersistentVolume>> volumes_;
  std::unique_ptr<k8s::Informer<k8s::StorageClass>> classes_;
  std::unique_ptr<k8s::Informer<k8s::CsiNode>> csi_nodes_;
  std::unique_ptr<k8s::Informer<k8s::CsiDriver>> csi_drivers_;
  std::unique_ptr<k8s::Informer<k8s::CsiStorageCapacity>> csi_capacities_;
  std::unique_ptr<k8s::Informer<k8s::ResourceClaim>> resource_claims_;
  std::unique_ptr<k8s::Informer<k8s::ResourceSlice>> resource_slices_;
  std::unique_ptr<k8s::RestClient> lease_rest_client_, loop_writer_;
  std::unique_ptr<k8s::SchedulerApi> lease_api_;
  std::unique_ptr<LeaderElector> elector_;
  bool stopped_ = false;
  std::atomic<bool> leading_{true};
  std::atomic<bool> lost_leadership_{false};
  absl::Time phase_start_;  // the loop thread's: when the current phase began
  CyclePhaseTimes phase_times_;  // the loop thread's: this cycle's
  absl::Notification stop_poll_, stop_lease_;
  std::thread poll_thread_, lease_thread_, loop_thread_;  // last: joined (Stop) before the rest goes
};

int RunDaemon(const Config& config) { return Daemon(config).Run(); }

}  // namespace onequeue::scheduler

int main(int argc, char** argv) {
  std::string config_path, grpc_address;
  bool check_only = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("onequeue-scheduler %s\n", onequeue::kVersion);
      return 0;
    } else if (a == "--check-config") {
      check_only = true;
    } else if (a == "--config" || a == "--grpc-address") {
      const char* v = value(a.c_str());
      if (!v) return Usage((a + " needs a value").c_str());
      (a == "--config" ? config_path : grpc_address) = v;
    } else if (a.rfind("--config=", 0) == 0) {
      config_path = a.substr(9);
    } else {
      return Usage(("unknown argument: " + a).c_str());
    }
  }
  if (config_path.empty()) return Usage("--config FILE is required");

  auto config = onequeue::scheduler::LoadConfigFile(config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "onequeue-scheduler: %s\n", std::string(config.status().message()).c_str());
    return 3;
  }
  if (!grpc_address.empty()) config->server.grpc_address = grpc_address;
  // scontrol runs as this process's user: the drains it sets carry that name (reason_set_by_user).
  if (!config->slurm.scontrol_path.empty()) {
    if (const passwd* pw = getpwuid(geteuid()); pw != nullptr) config->slurm.scontrol_user = pw->pw_name;
  }
  if (absl::Status s = onequeue::scheduler::CheckGrpcExposure(config->server); !s.ok()) {
    std::fprintf(stderr, "onequeue-scheduler: --grpc-address %s\n", std::string(s.message()).c_str());
    return 3;
  }
  if (absl::Status s = onequeue::scheduler::CheckAdminTokenTransport(config->server); !s.ok()) {
    std::fprintf(stderr, "onequeue-scheduler: server.adminTokenFile %s\n", std::string(s.message()).c_str());
    return 3;
  }
  // Tests only (the control runs of the reservation tests); unset in every real deployment.
  if (const char* off = std::getenv("ONEQUEUE_TEST_WITHOUT_RESERVATIONS"); off != nullptr && std::string(off) == "1") {
    config->test_without_reservations = true;
    spdlog::warn("ONEQUEUE_TEST_WITHOUT_RESERVATIONS=1 (tests only): preemptions write no reservation");
  }
  if (const char* off = std::getenv("ONEQUEUE_TEST_WITHOUT_BUDGETS"); off != nullptr && std::string(off) == "1") {
    config->test_without_budgets = true;
    spdlog::warn("ONEQUEUE_TEST_WITHOUT_BUDGETS=1 (tests only): PodDisruptionBudgets are not read");
  }
  if (check_only) {
    std::printf("%s: valid (schedulerName %s, slurm %s, reservationDepth %d)\n", config_path.c_str(),
                config->scheduler_name.c_str(), config->slurm.enabled ? "enabled" : "disabled",
                config->queue.reservation_depth);
    return 0;
  }

  return onequeue::scheduler::RunDaemon(*config);
}

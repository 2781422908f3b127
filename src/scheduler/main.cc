// onequeue-scheduler: the daemon. Validates its configuration, serves the gRPC QueueService, and
// (kubernetes.enabled) watches pods and nodes and runs event-driven, coalesced queue cycles, under
// leader election when configured; the Slurm poller is wired in as it lands.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
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
#include "k8s_client/informer.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"
#include "onequeue/version.h"
#include "scheduler/config.h"
#include "scheduler/fenced_actions.h"
#include "scheduler/grpc_service.h"
#include "scheduler/kube_cluster.h"
#include "scheduler/leader_elector.h"
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
  // The loop's own client: every write it sends (each step of a lend too) must land before the
  // lease ends, while the admin calls (served by a standby too) and the poller are not bounded.
  o.pinned_version = side.api->version();
  o.write_time_left = std::move(write_time_left);
  auto loop_api = slurm::ConnectSlurmApi(o);
  if (!loop_api.ok()) return loop_api.status();
  side.loop_api = std::move(*loop_api);
  if (c.lend_mechanism == "drain") {
    side.ownership = slurm::MakeDrainOwnership(*side.loop_api);
  } else {
    slurm::PlaceholderOptions po;
    po.reclaim_partition = c.reclaim_partition;
    side.ownership = slurm::MakePlaceholderOwnership(*side.loop_api, po, [] { return absl::Now(); });
  }
  side.poller = std::make_unique<slurm::SlurmPoller>(*side.api);
  side.actions = std::make_unique<SlurmBridgeActions>(side.loop_api.get(), side.ownership.get());
  return side;
}

int RunDaemon(const Config& config) {
  // Signals are handled by one thread that waits for them; every other thread blocks them,
  // including the gRPC and /metrics servers' threads, so the mask is set before they start.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  // The last cycle's status, read by the gRPC QueueService (oq queue/nodes/priority/explain).
  StatusBoard status_board;
  ServiceInfo service_info;
  service_info.status = &status_board;
  service_info.weights = ToQueueConfig(config).weights;
  DaemonAdminActions admin;
  service_info.admin = &admin;
  service_info.admin_token_file = config.server.admin_token_file;
  service_info.tls_cert_file = config.server.tls_cert_file;
  service_info.tls_key_file = config.server.tls_key_file;
  // The loop beats after every pass; Health and /healthz turn NOT_SERVING when it stops (stuck).
  // Without Kubernetes no loop runs, and there is nothing to be stuck.
  LoopHealth loop_health(absl::Seconds(config.server.health_cycle_age_seconds));
  if (config.kubernetes.enabled) service_info.health = &loop_health;
  auto server = StartQueueServer(config.server.grpc_address, service_info);
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  spdlog::info("onequeue-scheduler {} serving onequeue.v1.QueueService on port {}", kVersion, (*server)->port());
  SchedulerMetrics metrics;
  auto metrics_server = StartMetricsServer(config.server.metrics_address, metrics.registry(),
                                           config.kubernetes.enabled ? &loop_health : nullptr);
  if (!metrics_server.ok()) {
    spdlog::error("{}", metrics_server.status().ToString());
    return 1;
  }
  spdlog::info("serving Prometheus /metrics on port {} (and /healthz)", (*metrics_server)->port());

  std::unique_ptr<k8s::RestClient> client;
  std::unique_ptr<k8s::Informer<k8s::Node>> nodes;
  std::unique_ptr<k8s::Informer<k8s::Pod>> pods;
  std::unique_ptr<k8s::Informer<k8s::PodDisruptionBudget>> budgets;
  std::unique_ptr<k8s::RestClient> lease_rest_client, loop_writer;
  std::unique_ptr<k8s::SchedulerApi> lease_api;
  std::unique_ptr<LeaderElector> elector;
  CycleTrigger trigger;
  KubeSource kube_source;
  std::thread loop_thread, lease_thread;
  absl::Notification stop_lease;
  std::atomic<bool> leading{true};
  std::atomic<bool> lost_leadership{false};
  char host[256] = "onequeue";
  gethostname(host, sizeof(host) - 1);
  // Tests only (the control run of the deposed-leader test); unset in every real deployment.
  const char* no_gate = std::getenv("ONEQUEUE_TEST_WITHOUT_WRITE_GATE");
  const bool without_write_gate = no_gate != nullptr && std::string(no_gate) == "1";
  // The Lease holder's name, and in every request's User-Agent.
  const std::string identity = absl::StrCat(host, "_", getpid());
  SlurmSide slurm_side;
  std::thread poll_thread;
  absl::Notification stop_poll;
  if (config.slurm.enabled && config.kubernetes.enabled) {
    // The elector is made below, before the loop starts; without one writes are not bounded.
    auto side = ConnectSlurm(config.slurm, without_write_gate ? std::function<absl::Duration()>() : [&elector] {
      return elector ? elector->WriteTimeLeft() : absl::InfiniteDuration();
    });
    if (!side.ok()) {
      spdlog::error("slurm: {}", side.status().ToString());
      return 1;
    }
    slurm_side = std::move(*side);
    admin.ConnectSlurm(slurm_side.api.get());
    spdlog::info("slurm: slurmrestd {} ({}), lending by {}, shared partitions {}", config.slurm.url,
                 slurm::VersionString(slurm_side.api->version()), slurm_side.ownership->mechanism(),
                 absl::StrJoin(config.slurm.shared_partitions, ","));
    // The poller runs beside the loop: a change Slurm reports wakes a cycle, like an informer event.
    poll_thread = std::thread([&] {
      const absl::Duration every = absl::Seconds(config.slurm.poll_interval_seconds);
      do {
        const absl::Time poll_start = absl::Now();
        auto changes = slurm_side.poller->PollOnce(poll_start);
        metrics.ObserveSlurmPoll(absl::ToDoubleSeconds(absl::Now() - poll_start), changes.ok());
        if (!changes.ok()) spdlog::warn("slurm poll: {}", changes.status().ToString());
        else if (changes->any()) trigger.Fire();
      } while (!stop_poll.WaitForNotificationWithTimeout(every));
    });
  }
  if (config.kubernetes.enabled) {
    auto kc = KubeClientConfig(config, identity);
    if (!kc.ok()) {
      spdlog::error("kubernetes: {}", kc.status().ToString());
      return 3;
    }
    auto created = k8s::RestClient::Create(*kc);
    if (!created.ok()) {
      spdlog::error("kubernetes: {}", created.status().ToString());
      return 1;
    }
    client = std::move(*created);
    admin.ConnectKubernetes(client.get());
    // The handlers keep the Kubernetes source's records current (parsed once per change) and
    // wake a cycle.
    k8s::InformerHandlers<k8s::Node> node_handlers{
        [&](const k8s::Node& n) { kube_source.UpsertNode(n); trigger.Fire(); },
        [&](const k8s::Node&, const k8s::Node& n) { kube_source.UpsertNode(n); trigger.Fire(); },
        [&](const k8s::Node& n) { kube_source.DeleteNode(n); trigger.Fire(); }};
    k8s::InformerHandlers<k8s::Pod> pod_handlers{
        [&](const k8s::Pod& p) { kube_source.UpsertPod(p); trigger.Fire(); },
        [&](const k8s::Pod&, const k8s::Pod& p) { kube_source.UpsertPod(p); trigger.Fire(); },
        [&](const k8s::Pod& p) { kube_source.DeletePod(p); trigger.Fire(); }};
    k8s::InformerOptions informer_options;  // a watch's unhandled bytes: bounded like a response
    informer_options.max_backlog_bytes = static_cast<size_t>(config.kubernetes.max_response_bytes);
    nodes = std::make_unique<k8s::Informer<k8s::Node>>(client.get(), k8s::kNodes, informer_options,
                                                        node_handlers);
    pods = std::make_unique<k8s::Informer<k8s::Pod>>(client.get(), k8s::kPods, informer_options,
                                                      pod_handlers);
    // PodDisruptionBudgets: preemption picks victim sets the budgets allow (issue 13 defect 7).
    const bool read_budgets = !config.test_without_budgets;
    k8s::InformerHandlers<k8s::PodDisruptionBudget> budget_handlers{
        [&, read_budgets](const k8s::PodDisruptionBudget& b) { if (read_budgets) kube_source.UpsertBudget(b); trigger.Fire(); },
        [&, read_budgets](const k8s::PodDisruptionBudget&, const k8s::PodDisruptionBudget& b) {
          if (read_budgets) kube_source.UpsertBudget(b);
          trigger.Fire();
        },
        [&](const k8s::PodDisruptionBudget& b) { kube_source.DeleteBudget(b); trigger.Fire(); }};
    budgets = std::make_unique<k8s::Informer<k8s::PodDisruptionBudget>>(client.get(), k8s::kPodDisruptionBudgets,
                                                                         informer_options, budget_handlers);
    nodes->Start();
    pods->Start();
    budgets->Start();
    if (config.leader_election.enabled) {
      leading = false;
      // The Lease has its own client: short timeouts, no retries, and a token bucket that the
      // loop's bursts of writes do not empty.
      const absl::Duration lease_duration = absl::Seconds(config.leader_election.lease_duration_seconds);
      auto lease_client = k8s::RestClient::Create(LeaderElector::LeaseClientConfig(*kc, lease_duration),
                                                  LeaderElector::LeaseRetryPolicy());
      if (!lease_client.ok()) {
        spdlog::error("kubernetes: {}", lease_client.status().ToString());
        return 1;
      }
      lease_rest_client = std::move(*lease_client);
      lease_api = std::make_unique<k8s::SchedulerApi>(lease_rest_client.get());
      // The loop's writes have their own client whose every request but reads asks the elector
      // at the last moment, on the transport thread (a write queued or rate-limited while this
      // replica led must not leave once it does not); the admin calls keep the shared client.
      auto writer = k8s::RestClient::Create(*kc);
      if (!writer.ok()) {
        spdlog::error("kubernetes: {}", writer.status().ToString());
        return 1;
      }
      loop_writer = std::move(*writer);
      LeaderElector::Options lo;
      lo.namespace_ = config.leader_election.namespace_;
      lo.name = config.leader_election.lease_name;
      lo.identity = identity;
      lo.lease_duration = lease_duration;
      elector = std::make_unique<LeaderElector>(lease_api.get(), std::move(lo));
      if (without_write_gate) {
        spdlog::warn("ONEQUEUE_TEST_WITHOUT_WRITE_GATE=1 (tests only): writes do not ask whether this replica still leads");
      } else {
        loop_writer->SetWriteGate([e = elector.get()] { return e->MayWrite(); });
      }
      lease_thread = std::thread([&] { KeepLease(elector.get(), &stop_lease, &leading, &lost_leadership, &trigger, &loop_health); });
    }
    loop_thread = std::thread([&] {
      while (!nodes->WaitForSync(absl::Seconds(1)) || !pods->WaitForSync(absl::Seconds(1)) ||
             !budgets->WaitForSync(absl::Seconds(1))) {
        loop_health.Beat();  // waiting, not stuck: a large cluster's first list takes a while
        if (!trigger.Wait(absl::ZeroDuration())) return;
        spdlog::info("waiting for the pod and node informers to sync");
      }
      spdlog::info("informers synced: {} nodes, {} pods", nodes->Size(), pods->Size());
      // Likewise the first Slurm poll: a cycle without it would not know which lent nodes run
      // Slurm jobs, nor which jobs wait. Bounded: a slurmrestd that does not answer does not stop
      // the pods (the loop then keeps them off nodes lent to Slurm).
      if (slurm_side.poller) {
        const absl::Time give_up = absl::Now() + absl::Seconds(30);
        while (slurm_side.poller->View()->refreshed_at == absl::InfinitePast() && absl::Now() < give_up) {
          loop_health.Beat();
          if (!trigger.Wait(absl::Milliseconds(200))) return;
        }
        if (slurm_side.poller->View()->refreshed_at == absl::InfinitePast()) {
          spdlog::warn("slurm: no successful poll after 30 s; scheduling pods, keeping them off lent nodes");
        }
      }
      InformerClusterView view(nodes.get(), pods.get(), &kube_source, slurm_side.poller.get());
      KubeClusterActions actions(loop_writer ? loop_writer.get() : client.get(), pods.get(), host);
      TimedClusterActions timed_actions(&actions, &metrics);
      ClusterActions* cluster_actions = &timed_actions;
      SlurmActions* slurm_actions = slurm_side.actions.get();
      // Under leader election every write first asks whether this replica still leads. Refusals
      // are logged in full once, then at most one line a second (a deposed leader's cycle can
      // refuse thousands of writes).
      RefusedWriteLog refused_log([] { return std::chrono::steady_clock::now(); },
                                  [](const std::string& line) { spdlog::warn("{}", line); });
      std::unique_ptr<FencedClusterActions> fenced_cluster;
      std::unique_ptr<FencedSlurmActions> fenced_slurm;
      if (elector && !without_write_gate) {
        const RefusedWrite refused = RefusedWriteLog::To(&refused_log);
        fenced_cluster = std::make_unique<FencedClusterActions>(cluster_actions, elector.get(), refused);
        cluster_actions = fenced_cluster.get();
        if (slurm_actions != nullptr) {
          fenced_slurm = std::make_unique<FencedSlurmActions>(slurm_actions, elector.get(), refused);
          slurm_actions = fenced_slurm.get();
        }
      }
      const Failpoint failpoint = FailpointsFromEnvironment();
      SchedulingLoop loop(config, &view, cluster_actions, slurm_actions, failpoint);
      absl::Time phase_start;
      loop.MarkPhasesWith([&](const char* phase) {
        const absl::Time now = absl::Now();
        metrics.ObservePhase(phase, absl::ToDoubleSeconds(now - phase_start));
        phase_start = now;
      });
      loop.PublishTo(&status_board);
      // Event-driven, coalesced, with a periodic full pass so estimates and ages stay fresh.
      // A standby replica keeps its informers warm and runs no cycle until it leads.
      // The periodic pass is a full cycle when queue.fullCycleSeconds has passed since the last one
      // (the cycles events trigger in between may plan only what arrived): wake that often.
      const int64_t full_every = config.queue.full_cycle_seconds;
      const absl::Duration period = absl::Seconds(full_every > 0 ? std::min<int64_t>(5, full_every) : 5);
      while (trigger.Wait(period)) {
        // The previous pass (a cycle, or a standby's wake-up) completed: a cycle that hangs never
        // comes back here, and the beats stop.
        loop_health.Beat();
        metrics.SetLeader(leading);
        if (!leading) continue;
        if (failpoint) failpoint("cycle-start");  // tests: cycle-start=hang is a stuck loop
        const absl::Time cycle_start = phase_start = absl::Now();
        const CycleStats s = loop.RunCycle(absl::ToUnixSeconds(cycle_start));
        metrics.ObserveCycle(s, status_board.Latest().get(), absl::ToDoubleSeconds(absl::Now() - cycle_start));
        metrics.ObserveEvents(actions.event_counters());
        metrics.ObserveInformer("pods", pods->Stats());
        metrics.ObserveInformer("nodes", nodes->Stats());
        if (budgets) metrics.ObserveInformer("poddisruptionbudgets", budgets->Stats());
        for (const std::string& e : s.ignored_edits) spdlog::warn("{}", e);
        if (s.bound || s.reported || s.preemptions_started || s.bind_errors || s.slurm_started || s.lent ||
            s.reclaimed || s.returned || s.slurm_held) {
          spdlog::info("cycle: {} pending ({} Slurm), {} bound, {} Slurm jobs started, {} waiting ({} reported, "
                       "{} Slurm held), {} preemptions, {} evictions, {} requeued, {} lent, {} reclaimed, "
                       "{} returned, {} bind errors",
                       s.pending, s.slurm_pending, s.bound, s.slurm_started, s.waiting, s.reported, s.slurm_held,
                       s.preemptions_started, s.evictions, s.requeued, s.lent, s.reclaimed, s.returned,
                       s.bind_errors);
        }
        absl::SleepFor(absl::Milliseconds(100));  // coalesce bursts of events into one cycle
      }
    });
  } else {
    spdlog::warn("kubernetes.enabled is false: serving the API only, scheduling nothing");
  }
  if (config.slurm.enabled && !config.kubernetes.enabled) {
    spdlog::warn("slurm.enabled without kubernetes.enabled: Slurm is not polled (nothing to share it with)");
  }

  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("signal {}: shutting down", sig);
  trigger.Stop();
  if (loop_thread.joinable()) loop_thread.join();
  stop_poll.Notify();
  if (poll_thread.joinable()) poll_thread.join();
  stop_lease.Notify();  // after the loop: no cycle runs once the Lease is given up
  if (lease_thread.joinable()) lease_thread.join();
  if (budgets) budgets->Stop();
  if (pods) pods->Stop();
  if (nodes) nodes->Stop();
  (*server)->Shutdown();
  return lost_leadership ? 1 : 0;
}

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
  if (absl::Status s = onequeue::scheduler::CheckGrpcExposure(config->server); !s.ok()) {
    std::fprintf(stderr, "onequeue-scheduler: --grpc-address %s\n", std::string(s.message()).c_str());
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

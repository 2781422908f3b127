#include "e2e/stackhpc_scenario.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/process.h"
#include "e2e/e2e_support.h"

namespace onequeue::e2e::stackhpc {
namespace {

constexpr const char* kSlurmNodeLabel = "onequeue.io/slurm-node";
constexpr const char* kWorkerScheduler = "slurm-worker-scheduler";
constexpr const char* kWorkerPriorityClass = "stackhpc-slurm-worker";
constexpr const char* kInteractivePriorityClass = "stackhpc-interactive";
constexpr const char* kPartition = "pool";
const k8s::ResourceType kStatefulSets{"/apis/apps/v1", "statefulsets", true};

// One Slurm job as `scontrol show jobs -o` reports it.
struct SlurmJob {
  uint32_t id = 0;
  std::string state, nodes, partition;
  int restarts = 0;
  int64_t run_seconds = 0;
};

// RunTime: [D-]HH:MM:SS.
int64_t ParseRunTime(absl::string_view text) {
  int64_t days = 0;
  if (size_t dash = text.find('-'); dash != absl::string_view::npos) {
    (void)absl::SimpleAtoi(text.substr(0, dash), &days);
    text = text.substr(dash + 1);
  }
  int64_t total = 0;
  for (absl::string_view part : absl::StrSplit(text, ':')) {
    int64_t v = 0;
    (void)absl::SimpleAtoi(part, &v);
    total = total * 60 + v;
  }
  return days * 86400 + total;
}

std::map<uint32_t, SlurmJob> ShowJobs(const testing::SlurmClusterInfo& slurm) {
  std::map<uint32_t, SlurmJob> jobs;
  auto out = testing::SlurmCommand(slurm, {"scontrol", "show", "jobs", "-o"});
  if (!out.ok()) return jobs;
  for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
    SlurmJob job;
    for (absl::string_view kv : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      const size_t eq = kv.find('=');
      if (eq == absl::string_view::npos) continue;
      const absl::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
      if (key == "JobId") (void)absl::SimpleAtoi(value, &job.id);
      else if (key == "JobState") job.state = std::string(value);
      else if (key == "NodeList") job.nodes = std::string(value);
      else if (key == "Partition") job.partition = std::string(value);
      else if (key == "Restarts") (void)absl::SimpleAtoi(value, &job.restarts);
      else if (key == "RunTime") job.run_seconds = ParseRunTime(value);
    }
    if (job.id != 0 && job.partition == kPartition) jobs[job.id] = job;
  }
  return jobs;
}

json GpuRequests(int gpus) {
  const std::string g = absl::StrCat(gpus);
  return {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", g}}}, {"limits", {{"nvidia.com/gpu", g}}}};
}

class Run {
 public:
  Run(Way way, const ScenarioOptions& options, const Clusters& clusters)
      : way_(way),
        o_(options),
        c_(clusters),
        ns_("sh-" + WayName(way) + (options.worker_controller == "deployment" ? "-d" : "")) {
    result_.way = WayName(way);
    if (HasWorkerPods(way) && options.worker_controller == "deployment") result_.way += "-deployment";
  }
  ~Run() { TearDown(); }

  absl::StatusOr<ScenarioResult> Go() {
    if (auto s = SetUp(); !s.ok()) return s;
    // The measured window.
    window_start_ = absl::Now();
    absl::Time next_interactive = window_start_, next_sample = window_start_;
    const absl::Time window_end = window_start_ + o_.bound;
    while (absl::Now() < window_end) {
      const absl::Time now = absl::Now();
      if (result_.interactive_created < o_.interactive && now >= next_interactive) {
        CreateInteractive(result_.interactive_created + 1);
        next_interactive += o_.interval;
      }
      Observe(/*jobs=*/now >= next_sample);
      if (now >= next_sample) {
        TopUpBacklog();
        TakeSample(now);
        next_sample += absl::Seconds(1);
      }
      absl::SleepFor(absl::Milliseconds(200));
    }
    EndWindow();
    // Settle: the requeued jobs get their chance to run again.
    const absl::Time settle_end = absl::Now() + o_.settle;
    while (absl::Now() < settle_end) {
      Observe(/*jobs=*/true);
      bool all_done = true;
      for (const auto& [id, job] : jobs_) {
        if (job.restarts > 0 && job.state != "COMPLETED") all_done = false;
      }
      if (all_done) break;
      absl::SleepFor(absl::Milliseconds(500));
    }
    Observe(/*jobs=*/true);
    Finish();
    if (!o_.output_dir.empty()) WriteOutput();
    return result_;
  }

 private:
  bool WorkerWay() const { return HasWorkerPods(way_); }
  bool OnequeueWay() const { return way_ == Way::kOnequeueWorkers || way_ == Way::kOnequeueLending; }
  std::string K8sNode(int i) const { return absl::StrCat(ns_, "-", i); }
  const std::string& SlurmNode(int i) const { return c_.slurm->nodes[i - 1]; }
  std::string Log(const std::string& name) const { return absl::StrCat(dir_, "/", name, ".log"); }

  absl::Status SetUp() {
    if (static_cast<int>(c_.slurm->nodes.size()) < o_.nodes) {
      return absl::FailedPreconditionError(absl::StrCat("the Slurm cluster has ", c_.slurm->nodes.size(),
                                                        " nodes, the scenario needs ", o_.nodes));
    }
    dir_ = absl::StrCat(c_.work_dir, "/", ns_);
    mkdir(c_.work_dir.c_str(), 0755);
    mkdir(dir_.c_str(), 0755);
    auto client = AdminClient(*c_.k8s);
    if (!client.ok()) return client.status();
    client_ = std::move(*client);
    if (auto s = CreateNamespace(client_.get(), ns_); !s.ok()) return s;
    for (auto [name, value] : {std::pair{kWorkerPriorityClass, -1}, std::pair{kInteractivePriorityClass, 1000}}) {
      json pc = {{"apiVersion", "scheduling.k8s.io/v1"},
                 {"kind", "PriorityClass"},
                 {"metadata", {{"name", name}}},
                 {"value", value},
                 {"preemptionPolicy", "PreemptLowerPriority"}};
      if (auto s = Create(client_.get(), k8s::kPriorityClasses, "", pc); !s.ok()) return s;
    }
    // The GPU pool: kwok nodes standing for Slurm nodes n1..nN (label onequeue.io/slurm-node).
    for (int i = 1; i <= o_.nodes; ++i) {
      json node = PoolNode(K8sNode(i), ns_, "8");
      for (const char* field : {"allocatable", "capacity"}) {
        node["status"][field]["nvidia.com/gpu"] = absl::StrCat(o_.gpus);
      }
      node["metadata"]["labels"][kSlurmNodeLabel] = SlurmNode(i);
      if (auto s = Create(client_.get(), k8s::kNodes, "", node); !s.ok()) return s;
    }
    for (int i = 1; i <= o_.nodes; ++i) {
      if (!WaitForNodeReady(client_.get(), K8sNode(i))) {
        return absl::DeadlineExceededError(K8sNode(i) + " never became Ready (is kwok running?)");
      }
    }
    std::vector<std::string> slurm_nodes(c_.slurm->nodes.begin(), c_.slurm->nodes.begin() + o_.nodes);
    (void)testing::SlurmCommand(*c_.slurm, {"scontrol", "delete", absl::StrCat("partition=", kPartition)});
    auto made = testing::SlurmCommand(
        *c_.slurm, {"scontrol", "create", absl::StrCat("PartitionName=", kPartition),
                    absl::StrCat("Nodes=", absl::StrJoin(slurm_nodes, ",")), "PriorityTier=1", "MaxTime=INFINITE",
                    "State=UP"});
    if (!made.ok()) return made.status();
    if (WorkerWay()) {
      // No worker pod yet: no slurmd, so the Slurm nodes take no job.
      for (int i = 1; i <= o_.nodes; ++i) SetSlurmNodeUp(i, false);
    }
    if (auto s = StartSchedulers(); !s.ok()) return s;
    if (WorkerWay()) {
      if (auto s = CreateWorkers(); !s.ok()) return s;
    }
    // Fill the pool with Slurm work: one job per node, and a backlog behind them.
    for (int i = 0; i < 2 * o_.nodes; ++i) Submit();
    const bool busy = Eventually(absl::Seconds(180), [&] {
      Observe(/*jobs=*/true);
      int running = 0;
      for (const auto& [id, job] : jobs_) running += job.state == "RUNNING";
      return running >= o_.nodes;
    }, absl::Milliseconds(500));
    if (!busy) {
      return absl::DeadlineExceededError(absl::StrCat("the pool never filled with ", o_.nodes,
                                                      " running Slurm jobs within 180 s (", WayName(way_), ")"));
    }
    return absl::OkStatus();
  }

  absl::Status StartSchedulers() {
    if (way_ == Way::kTwoSchedulers) {
      // A second kube-scheduler whose one profile schedules the worker pods.
      const std::string config = dir_ + "/worker-scheduler.yaml";
      std::ofstream(config) << "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                            << "clientConnection:\n  kubeconfig: " << c_.k8s->dir << "/kube-scheduler.kubeconfig\n"
                            << "leaderElection:\n  leaderElect: false\n"
                            << "profiles:\n- schedulerName: " << kWorkerScheduler << "\n";
      auto pid = testing::SpawnProcess({.argv = {c_.k8s->upstream_bin + "/kube-scheduler", "--config=" + config,
                                                 "--secure-port=0"},
                                        .output_file = Log("worker-scheduler"),
                                        .merge_stderr = true});
      if (!pid.ok()) return pid.status();
      worker_scheduler_pid_ = *pid;
      absl::SleepFor(absl::Seconds(2));
      if (testing::WaitPid(worker_scheduler_pid_, std::chrono::milliseconds(0)).has_value()) {
        worker_scheduler_pid_ = -1;
        return absl::InternalError("the second kube-scheduler exited at once; see " + Log("worker-scheduler"));
      }
    }
    if (OnequeueWay()) {
      onequeue_ = std::make_unique<SchedulerProcess>(dir_, "onequeue-scheduler");
      std::string yaml = SchedulerConfigYaml(*c_.k8s, "onequeue.io/pool=" + ns_);
      if (way_ == Way::kOnequeueLending) {
        const auto& s = *c_.slurm;
        absl::StrAppend(&yaml, "slurm:\n  enabled: true\n  url: \"", s.rest_url, "\"\n  tokenFile: \"", s.token_file,
                        "\"\n  user: ", s.user, "\n  apiVersion: ", s.rest_api, "\n  lendMechanism: ", o_.lend_mechanism,
                        "\n  sharedPartitions: [", kPartition, "]\n  nodeLabel: ", kSlurmNodeLabel,
                        "\n  lendAfterSeconds: 0\n  returnAfterSeconds: 600\n  pollIntervalSeconds: 0.5\n"
                        "  defaultQos: batch\n  reclaimPartition: ",
                        s.reclaim_partition, "\n  scontrolPath: \"", s.bin_dir, "/scontrol\"\n  slurmConf: \"",
                        s.slurm_conf, "\"\n");
      }
      if (auto st = onequeue_->Start(yaml); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  std::string PodScheduler(bool worker) const {
    if (OnequeueWay()) return "onequeue";
    if (worker && way_ == Way::kTwoSchedulers) return kWorkerScheduler;
    return "default-scheduler";
  }

  absl::Status CreateWorkers() {
    json anti = {{"podAntiAffinity",
                  {{"requiredDuringSchedulingIgnoredDuringExecution",
                    json::array({{{"labelSelector", {{"matchLabels", {{"app", "jupyter"}}}}},
                                  {"topologyKey", "kubernetes.io/hostname"}}})}}}};
    // The grace period is Kubernetes' default (30 s): slurmd is given time to stop, and the node
    // stays taken until it has.
    json pod_spec = {{"schedulerName", PodScheduler(true)},
                     {"priorityClassName", kWorkerPriorityClass},
                     {"nodeSelector", {{"onequeue.io/pool", ns_}}},
                     {"affinity", anti},
                     {"containers", json::array({{{"name", "slurmd"}, {"image", "slinky/slurmd"},
                                                  {"resources", GpuRequests(o_.gpus)}}})}};
    json pod_template = {{"metadata", {{"labels", {{"app", "slurm-worker"}}}, {"annotations", {{"onequeue.io/qos", "batch"}}}}},
                     {"spec", pod_spec}};
    json spec = {{"replicas", o_.nodes}, {"selector", {{"matchLabels", {{"app", "slurm-worker"}}}}}, {"template", pod_template}};
    if (o_.worker_controller == "deployment") {
      json deployment = {{"apiVersion", "apps/v1"},
                         {"kind", "Deployment"},
                         {"metadata", {{"name", "slurm-worker"}, {"namespace", ns_}}},
                         {"spec", spec}};
      return Create(client_.get(), Deployments(), ns_, deployment);
    }
    if (o_.worker_controller != "statefulset") {
      return absl::InvalidArgumentError("worker controller must be statefulset or deployment, not " +
                                        o_.worker_controller);
    }
    spec["podManagementPolicy"] = "Parallel";
    spec["serviceName"] = "slurm-worker";
    json sts = {{"apiVersion", "apps/v1"},
                {"kind", "StatefulSet"},
                {"metadata", {{"name", "slurm-worker"}, {"namespace", ns_}}},
                {"spec", spec}};
    return Create(client_.get(), kStatefulSets, ns_, sts);
  }

  void CreateInteractive(int k) {
    const std::string name = absl::StrCat("jupyter-", k);
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name},
                  {"namespace", ns_},
                  {"labels", {{"app", "jupyter"}}},
                  {"annotations", {{"onequeue.io/qos", "interactive"}, {"onequeue.io/time-limit", "8h"}}}}},
                {"spec",
                 {{"schedulerName", PodScheduler(false)},
                  {"priorityClassName", kInteractivePriorityClass},
                  {"terminationGracePeriodSeconds", 0},
                  {"nodeSelector", {{"onequeue.io/pool", ns_}}},
                  {"containers", json::array({{{"name", "notebook"}, {"image", "jupyter/base-notebook"},
                                               {"resources", GpuRequests(o_.gpus)}}})}}}};
    interactive_created_[name] = absl::Now();
    auto s = Create(client_.get(), k8s::kPods, ns_, pod);
    if (!s.ok()) std::cerr << "stackhpc: creating " << name << ": " << s << "\n";
    ++result_.interactive_created;
  }

  void Submit() {
    auto out = testing::SlurmCommand(
        *c_.slurm, {"sbatch", "--parsable", "-p", kPartition, "-N1", "-c8", absl::StrCat("--gres=gpu:", o_.gpus),
                    "-t", "10", "--requeue", "-o", "/dev/null", absl::StrCat("--wrap=sleep ", o_.job_seconds)});
    uint32_t id = 0;
    if (out.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*out), &id)) {
      ++result_.jobs_submitted;
      submitted_.insert(id);
    } else {
      std::cerr << "stackhpc: sbatch failed: " << (out.ok() ? *out : out.status().ToString()) << "\n";
    }
  }

  // Keeps at least one job per node waiting that never ran: a batch queue with work to drain.
  void TopUpBacklog() {
    int fresh_pending = 0;
    for (const auto& [id, job] : jobs_) fresh_pending += job.state == "PENDING" && job.restarts == 0;
    for (int i = fresh_pending; i < o_.nodes; ++i) Submit();
  }

  // Slinky's part: a Slurm node takes jobs only while a worker pod runs on its Kubernetes node.
  void SetSlurmNodeUp(int i, bool up) {
    auto it = slurm_up_.find(i);
    if (it != slurm_up_.end() && it->second == up) return;
    slurm_up_[i] = up;
    if (up) {
      (void)testing::SlurmCommand(*c_.slurm, {"scontrol", "update", "nodename=" + SlurmNode(i), "state=resume"});
      return;
    }
    (void)testing::SlurmCommand(*c_.slurm, {"scontrol", "update", "nodename=" + SlurmNode(i), "state=drain",
                                            "reason=no slurm-worker pod"});
    // slurmd went with its pod: the jobs it ran are requeued.
    for (const auto& [id, job] : ShowJobs(*c_.slurm)) {
      if (job.state == "RUNNING" && job.nodes == SlurmNode(i)) {
        (void)testing::SlurmCommand(*c_.slurm, {"scontrol", "requeue", absl::StrCat(id)});
      }
    }
  }

  int InteractiveWaiting() const {
    int waiting = 0;
    for (const auto& [name, created] : interactive_created_) waiting += !interactive_bound_.count(name);
    return waiting;
  }

  void Observe(bool jobs) {
    auto pods = ListPods(client_.get(), ns_);
    std::set<std::string> reserved;
    if (OnequeueWay()) {
      for (int i = 1; i <= o_.nodes; ++i) {
        auto n = GetNode(client_.get(), K8sNode(i));
        if (!n.ok()) continue;
        auto a = n->metadata.annotations.find("onequeue.io/owner");
        if (a != n->metadata.annotations.end() && absl::StartsWith(a->second, "reserved/")) {
          reserved.insert(K8sNode(i));
        }
      }
    }
    if (pods.ok()) {
      // Departures first: a victim gone and its successor bound within one poll is no overbooking.
      std::set<std::string> present;
      for (const k8s::Pod& p : *pods) present.insert(p.metadata.uid);
      for (auto& [uid, seen] : seen_) {
        if (present.count(uid)) continue;
        OnGone(seen);
        seen.removed = true;
      }
      std::map<std::string, bool> worker_running_on;
      for (const k8s::Pod& p : *pods) {
        const std::string& uid = p.metadata.uid;
        const bool worker = absl::StartsWith(p.metadata.name, "slurm-worker-");
        PodSeen& seen = seen_[uid];
        seen.name = p.metadata.name;
        seen.worker = worker;
        if (!p.node_name.empty() && seen.node.empty()) {
          seen.node = p.node_name;
          // Every pod asks all GPUs of a node: another pod still there (running or terminating,
          // it holds its GPUs until it is gone) means the node is booked twice. A kubelet would
          // refuse the second (OutOfnvidia.com/gpu); kwok runs both.
          for (const auto& [other_uid, other] : seen_) {
            if (other_uid != uid && !other.removed && other.node == p.node_name) {
              ++result_.overbooked_bindings;
              if (!worker && other.worker) ++result_.interactive_bound_onto_worker;
              break;
            }
          }
          OnBound(seen, reserved);
        }
        if (!p.metadata.deletion_timestamp.empty()) OnGone(seen);
        if (worker && p.phase == "Running" && p.metadata.deletion_timestamp.empty() && !p.node_name.empty()) {
          worker_running_on[p.node_name] = true;
        }
      }
      if (WorkerWay()) {
        for (int i = 1; i <= o_.nodes; ++i) SetSlurmNodeUp(i, worker_running_on.count(K8sNode(i)) > 0);
      }
    }
    if (jobs) {
      // Only this run's jobs: scontrol keeps earlier runs' finished jobs for MinJobAge.
      jobs_.clear();
      for (auto& [id, job] : ShowJobs(*c_.slurm)) {
        if (submitted_.count(id)) jobs_[id] = std::move(job);
      }
      if (way_ == Way::kOnequeueLending) {
        for (const auto& [id, job] : jobs_) {
          if (job.restarts == 0 || job.state != "RUNNING") continue;
          for (int i = 1; i <= o_.nodes; ++i) {
            if (job.nodes == SlurmNode(i) && reserved.count(K8sNode(i))) back_on_reserved_.insert(id);
          }
        }
      }
    }
  }

  struct PodSeen {
    std::string name, node;
    bool worker = false;
    bool gone = false;     // deleted (terminating) or removed
    bool removed = false;  // no longer in the API
  };

  void OnBound(const PodSeen& pod, const std::set<std::string>& reserved) {
    if (pod.worker) {
      if (needed_.count(pod.node)) ++result_.replacements_on_needed_nodes;
      if (reserved.count(pod.node)) ++result_.replacements_on_reserved_nodes;
      return;
    }
    auto created = interactive_created_.find(pod.name);
    if (created == interactive_created_.end() || interactive_bound_.count(pod.name)) return;
    interactive_bound_.insert(pod.name);
    result_.bind_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - created->second));
    needed_.erase(pod.node);
  }

  void OnGone(PodSeen& pod) {
    if (pod.gone) return;
    pod.gone = true;
    // Nobody but a scheduler deletes worker pods while the window runs.
    if (!pod.worker || ending_) return;
    ++result_.worker_evictions;
    ++evictions_of_worker_[pod.name];
    if (!pod.node.empty() && InteractiveWaiting() > 0) needed_.insert(pod.node);
  }

  void TakeSample(absl::Time now) {
    ScenarioResult& r = result_;
    struct Sample s;
    s.seconds = absl::ToDoubleSeconds(now - window_start_);
    int requeues = 0, running = 0;
    for (const auto& [id, job] : jobs_) {
      requeues += job.restarts;
      running += job.state == "RUNNING";
    }
    s.evictions = r.worker_evictions + (WorkerWay() ? 0 : requeues);
    s.waiting_interactive = InteractiveWaiting();
    s.slurm_running = running;
    r.timeline.push_back(s);
  }

  void EndWindow() {
    ending_ = true;
    Observe(/*jobs=*/true);
    for (const auto& [id, job] : jobs_) {
      if (job.state == "COMPLETED") {
        result_.slurm_gpu_hours_in_window += static_cast<double>(job.run_seconds) * o_.gpus / 3600.0;
      }
    }
    // Users who are still waiting give up; the backlog that never started is withdrawn, so the
    // requeued jobs can show whether they run again.
    for (const auto& [name, created] : interactive_created_) {
      if (!interactive_bound_.count(name)) {
        (void)client_->Delete(k8s::ObjectPath(k8s::kPods, ns_, name));
      }
    }
    for (const auto& [id, job] : ShowJobs(*c_.slurm)) {
      if (job.state == "PENDING" && job.restarts == 0) {
        (void)testing::SlurmCommand(*c_.slurm, {"scancel", absl::StrCat(id)});
      }
    }
  }

  void Finish() {
    ScenarioResult& r = result_;
    r.interactive_bound = static_cast<int>(interactive_bound_.size());
    for (const auto& [name, n] : evictions_of_worker_) {
      r.max_evictions_of_one_worker = std::max(r.max_evictions_of_one_worker, n);
      r.workers_evicted_repeatedly += n > 1;
    }
    for (const auto& [id, job] : jobs_) {
      if (job.state == "COMPLETED") {
        ++r.jobs_completed;
        r.slurm_gpu_hours += static_cast<double>(job.run_seconds) * o_.gpus / 3600.0;
      }
      if (job.restarts > 0) {
        ++r.jobs_requeued;
        r.total_requeues += job.restarts;
        r.max_requeues_of_one_job = std::max(r.max_requeues_of_one_job, job.restarts);
        r.requeued_jobs_completed += job.state == "COMPLETED";
      }
    }
    r.requeued_jobs_back_on_reserved_node = static_cast<int>(back_on_reserved_.size());
  }

  void WriteOutput() {
    mkdir(o_.output_dir.c_str(), 0755);
    std::ofstream csv(absl::StrCat(o_.output_dir, "/", result_.way, ".timeline.csv"));
    csv << "seconds,evictions,waiting_interactive,slurm_running\n";
    for (const auto& s : result_.timeline) {
      csv << absl::StrFormat("%.1f,%d,%d,%d\n", s.seconds, s.evictions, s.waiting_interactive, s.slurm_running);
    }
    std::ofstream(absl::StrCat(o_.output_dir, "/", result_.way, ".summary.json")) << result_.SummaryJson() << "\n";
  }

  void TearDown() {
    if (onequeue_) {
      if (onequeue_->Running()) onequeue_->Stop();
      onequeue_.reset();
    }
    if (worker_scheduler_pid_ > 0) {
      testing::StopProcess(worker_scheduler_pid_);
      worker_scheduler_pid_ = -1;
    }
    if (!client_) return;
    (void)testing::Kubectl(*c_.k8s, {"delete", "statefulsets,deployments,pods", "--all", "-n", ns_, "--grace-period=0",
                                     "--force", "--wait=false"});
    (void)testing::SlurmCommand(*c_.slurm, {"scancel", "--full", "-u", c_.slurm->user});
    Eventually(absl::Seconds(30), [&] {
      auto q = testing::SlurmCommand(*c_.slurm, {"squeue", "-h", "-a"});
      return q.ok() && absl::StripAsciiWhitespace(*q).empty();
    });
    (void)testing::SlurmCommand(*c_.slurm, {"scontrol", "update",
                                            absl::StrCat("nodename=", absl::StrJoin(c_.slurm->nodes, ",")),
                                            "state=resume"});
    (void)testing::SlurmCommand(*c_.slurm, {"scontrol", "delete", absl::StrCat("partition=", kPartition)});
    // The pool nodes are cordoned, not deleted: kwok v0.7.0 panics on a node deletion it learns of
    // through a relist (DeletedFinalStateUnknown) and every later node stays NotReady.
    for (int i = 1; i <= o_.nodes; ++i) (void)testing::Kubectl(*c_.k8s, {"cordon", K8sNode(i)});
    client_.reset();
  }

  const Way way_;
  const ScenarioOptions o_;
  const Clusters c_;
  const std::string ns_;
  std::string dir_;
  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<SchedulerProcess> onequeue_;
  pid_t worker_scheduler_pid_ = -1;
  ScenarioResult result_;
  absl::Time window_start_;
  bool ending_ = false;
  std::map<std::string, PodSeen> seen_;  // by UID
  std::map<std::string, absl::Time> interactive_created_;
  std::set<std::string> interactive_bound_;
  std::set<std::string> needed_;  // nodes a worker was evicted from for a waiting interactive pod
  std::map<std::string, int> evictions_of_worker_;  // by worker name (StatefulSet ordinal)
  std::map<int, bool> slurm_up_;
  std::set<uint32_t> submitted_;
  std::map<uint32_t, SlurmJob> jobs_;  // of `submitted_`, as last seen
  std::set<uint32_t> back_on_reserved_;
};

}  // namespace

std::string WayName(Way way) {
  switch (way) {
    case Way::kKubeScheduler: return "kube-scheduler";
    case Way::kTwoSchedulers: return "two-schedulers";
    case Way::kOnequeueWorkers: return "onequeue-workers";
    case Way::kOnequeueLending: return "onequeue-lending";
  }
  return "?";
}

bool HasWorkerPods(Way way) { return way != Way::kOnequeueLending; }

double ScenarioResult::BindPercentile(double p) const {
  if (bind_seconds.empty()) return -1;
  std::vector<double> sorted = bind_seconds;
  std::sort(sorted.begin(), sorted.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string ScenarioResult::Summary() const {
  return absl::StrFormat(
      "%s: interactive bound %d/%d (never %d), bind p50 %.1f s p99 %.1f s; evictions %d (%.2f per interactive pod, "
      "worker evicted most %d times); replacements on needed nodes %d, on reserved nodes %d; overbooked "
      "bindings %d (%d of them an interactive pod onto a worker's node); Slurm jobs "
      "completed %d, requeued %d (requeues %d, most of one job %d), requeued and completed %d; %.3f GPU-hours "
      "(%.3f in the window)",
      way, interactive_bound, interactive_created, interactive_created - interactive_bound, BindPercentile(50),
      BindPercentile(99), Evictions(),
      interactive_created ? static_cast<double>(Evictions()) / interactive_created : 0.0,
      max_evictions_of_one_worker, replacements_on_needed_nodes, replacements_on_reserved_nodes, overbooked_bindings,
      interactive_bound_onto_worker, jobs_completed,
      jobs_requeued, total_requeues, max_requeues_of_one_job, requeued_jobs_completed, slurm_gpu_hours,
      slurm_gpu_hours_in_window);
}

std::string ScenarioResult::SummaryJson() const {
  json j = {{"way", way},
            {"interactive_created", interactive_created},
            {"interactive_bound", interactive_bound},
            {"interactive_never_bound", interactive_created - interactive_bound},
            {"bind_p50_seconds", BindPercentile(50)},
            {"bind_p99_seconds", BindPercentile(99)},
            {"evictions", Evictions()},
            {"evictions_per_interactive_pod",
             interactive_created ? static_cast<double>(Evictions()) / interactive_created : 0.0},
            {"worker_evictions", worker_evictions},
            {"max_evictions_of_one_worker", max_evictions_of_one_worker},
            {"replacements_on_needed_nodes", replacements_on_needed_nodes},
            {"replacements_on_reserved_nodes", replacements_on_reserved_nodes},
            {"overbooked_bindings", overbooked_bindings},
            {"interactive_bound_onto_worker", interactive_bound_onto_worker},
            {"slurm_jobs_submitted", jobs_submitted},
            {"slurm_jobs_completed", jobs_completed},
            {"slurm_jobs_requeued", jobs_requeued},
            {"slurm_requeues", total_requeues},
            {"slurm_max_requeues_of_one_job", max_requeues_of_one_job},
            {"slurm_requeued_jobs_completed", requeued_jobs_completed},
            {"slurm_gpu_hours", slurm_gpu_hours},
            {"slurm_gpu_hours_in_window", slurm_gpu_hours_in_window}};
  return j.dump();
}

absl::StatusOr<ScenarioResult> RunScenario(Way way, const ScenarioOptions& options, const Clusters& clusters) {
  Run run(way, options, clusters);
  return run.Go();
}

}  // namespace onequeue::e2e::stackhpc

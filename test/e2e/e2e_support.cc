#include "e2e/e2e_support.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/process.h"
#include "k8s_client/config.h"

namespace onequeue::e2e {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

void TraceWait(absl::Time since, const std::string& what, std::source_location where) {
  static const bool trace = std::getenv("ONEQUEUE_E2E_TRACE_WAITS") != nullptr;
  const absl::Duration took = absl::Now() - since;
  if (!trace || took < absl::Seconds(1)) return;
  std::string file = where.file_name();
  file = file.substr(file.rfind('/') + 1);
  std::cerr << "[wait] " << file << ":" << where.line() << " " << std::fixed << std::setprecision(1)
            << absl::ToDoubleSeconds(took) << " s " << what << "\n";
}

bool Eventually(absl::Duration timeout, const std::function<bool()>& condition, absl::Duration interval,
                std::source_location where) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + timeout;
  while (true) {
    if (condition()) {
      TraceWait(start, "ok", where);
      return true;
    }
    if (absl::Now() > deadline) {
      TraceWait(start, "timeout", where);
      return false;
    }
    absl::SleepFor(interval);
  }
}

absl::StatusOr<std::unique_ptr<k8s::RestClient>> AdminClient(const testing::K8sClusterInfo& info) {
  auto config = k8s::LoadKubeconfig(info.kubeconfig);
  if (!config.ok()) return config.status();
  config->qps = 200;
  config->burst = 400;
  config->user_agent = "onequeue-e2e";
  return k8s::RestClient::Create(*config);
}

CommandResult RunCommand(const std::vector<std::string>& argv, absl::Duration timeout,
                         const std::vector<std::string>& extra_env) {
  CommandResult result;
  auto r = testing::RunProcess(
      {.argv = argv, .env = extra_env, .merge_stderr = true, .timeout = absl::ToChronoMilliseconds(timeout)});
  if (!r.ok()) {
    result.output = r.status().ToString();
    return result;
  }
  result.exit_code = r->exit_code;
  result.output = std::move(r->out);
  return result;
}

SchedulerProcess::~SchedulerProcess() { Stop(); }

absl::Status SchedulerProcess::Start(const std::string& config_yaml, const std::vector<std::string>& extra_env) {
  if (pid_ > 0) return absl::FailedPreconditionError("already running");
  const std::string config_path = dir_ + "/" + name_ + ".yaml";
  {
    std::ofstream out(config_path);
    out << config_yaml;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", config_path));
  }
  // In the test's process group: whatever kills the test's group kills its daemons too.
  auto pid = testing::SpawnProcess({.argv = {ONEQUEUE_SCHEDULER_BIN, "--config", config_path},
                                    .env = extra_env,
                                    .output_file = log_path(),
                                    .merge_stderr = true,
                                    .new_process_group = false});
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  // A configuration or connection error ends the daemon within a moment: report it with its log.
  if (auto status = testing::WaitPid(pid_, std::chrono::milliseconds(300))) {
    pid_ = -1;
    return absl::InternalError(absl::StrCat("onequeue-scheduler exited at once (status ", *status, "):\n", Log()));
  }
  // A variant on an HTTP client named in the configuration (ONEQUEUE_E2E_HTTP_CLIENT) must really
  // run on it.
  for (const char* client : {"curl", "nghttp2"}) {
    if (absl::StrContains(config_yaml, absl::StrCat("httpClient: ", client)) &&
        !Eventually(absl::Seconds(10),
                    [&] { return absl::StrContains(Log(), absl::StrCat("over HTTP client ", client)); })) {
      return absl::InternalError(absl::StrCat("onequeue-scheduler does not say it runs on ", client, ":\n", Log()));
    }
  }
  return absl::OkStatus();
}

bool SchedulerProcess::WaitForExit(absl::Duration timeout) {
  if (pid_ <= 0) return true;
  if (!testing::WaitPid(pid_, absl::ToChronoMilliseconds(timeout))) return false;
  pid_ = -1;
  return true;
}

void SchedulerProcess::Crash() {
  if (pid_ <= 0) return;
  testing::StopProcess(pid_, SIGKILL);
  pid_ = -1;
}

int SchedulerProcess::Stop() {
  if (pid_ <= 0) return -1;
  const int code = testing::ExitCode(testing::StopProcess(pid_, SIGTERM, std::chrono::seconds(10)));
  pid_ = -1;
  return code;
}

std::string SchedulerProcess::Log() const { return ReadFile(log_path()); }

namespace {
// "127.0.0.1:PORT" from the first log line with `prefix` followed by the port.
std::string PortFromLog(const SchedulerProcess& p, const std::string& prefix) {
  std::string address;
  Eventually(absl::Seconds(10), [&] {
    const std::string log = p.Log();
    const size_t at = log.find(prefix);
    if (at == std::string::npos) return false;
    const size_t from = at + prefix.size();
    const size_t end = log.find_first_not_of("0123456789", from);
    address = absl::StrCat("127.0.0.1:", log.substr(from, end - from));
    return true;
  });
  return address;
}
}  // namespace

std::string SchedulerProcess::GrpcAddress() const { return PortFromLog(*this, "onequeue.v1.QueueService on port "); }
std::string SchedulerProcess::MetricsAddress() const { return PortFromLog(*this, "Prometheus /metrics on port "); }

std::string SchedulerConfigYaml(const testing::K8sClusterInfo& info, const std::string& pool_label,
                                const std::string& leader_election) {
  // ONEQUEUE_E2E_HTTP_CLIENT (auto | curl | nghttp2): the daemon's HTTP client
  // (kubernetes.httpClient); unset, the default (auto: onequeue's own HTTP/2 client here, where no
  // proxy variable is set); the e2e variants *_curl run their scenarios on libcurl.
  const char* client = std::getenv("ONEQUEUE_E2E_HTTP_CLIENT");
  const std::string http_client = client != nullptr && *client != '\0' ? absl::StrCat(", httpClient: ", client) : "";
  return absl::StrCat(R"(apiVersion: onequeue.io/v1alpha1
kind: SchedulerConfiguration
schedulerName: onequeue
poolLabel: ")", pool_label, R"("
kubernetes: {kubeconfig: ")", info.scheduler_kubeconfig, R"(", qps: 100, burst: 200)", http_client, R"(}
queue:
  reservationDepth: 10
  resolutionSeconds: 60
  usageConfigMap: ""
  qos:
    - {name: interactive, priority: 1000, canPreempt: true, preemptible: false}
    - {name: normal, priority: 100}
    - {name: batch, priority: 10}
    - {name: scavenger, priority: 0}
server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0"}
leaderElection: )", leader_election, "\n");
}

json PoolNode(const std::string& name, const std::string& pool, const std::string& cpu) {
  json resources = {{"cpu", cpu}, {"memory", "16Gi"}, {"pods", "110"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels", {{"onequeue.io/pool", pool}, {"kubernetes.io/hostname", name}, {"type", "kwok"}}},
            {"annotations", {{"kwok.x-k8s.io/node", "fake"}}}}},
          {"status", {{"allocatable", resources}, {"capacity", resources}}}};
}

json PodSpec(const PodOptions& o) {
  return {{"schedulerName", o.scheduler_name},
          {"terminationGracePeriodSeconds", o.grace_seconds},
          {"containers",
           json::array({{{"name", "main"},
                         {"image", "busybox"},
                         {"resources", {{"requests", {{"cpu", o.cpu}, {"memory", "100Mi"}}}}}}})}};
}

json PodMetadata(const std::string& name, const std::string& ns, const PodOptions& o) {
  json annotations = o.extra_annotations;
  if (!o.qos.empty()) annotations["onequeue.io/qos"] = o.qos;
  if (!o.time_limit.empty()) annotations["onequeue.io/time-limit"] = o.time_limit;
  if (!o.group.empty()) annotations["onequeue.io/group"] = o.group;
  if (!o.group_size.empty()) annotations["onequeue.io/group-size"] = o.group_size;
  json meta = {{"annotations", annotations}, {"labels", o.labels}};
  if (!name.empty()) meta["name"] = name;
  if (!ns.empty()) meta["namespace"] = ns;
  return meta;
}

json MakePod(const std::string& name, const std::string& ns, const PodOptions& o) {
  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", PodMetadata(name, ns, o)}, {"spec", PodSpec(o)}};
}

absl::Status Create(k8s::RestClient* client, const k8s::ResourceType& type, const std::string& ns,
                    const json& object) {
  auto r = client->Post(k8s::CollectionPath(type, ns), object);
  if (r.ok() || absl::IsAlreadyExists(r.status())) return absl::OkStatus();
  return r.status();
}

absl::Status CreateNamespace(k8s::RestClient* client, const std::string& ns) {
  static const k8s::ResourceType kNamespaces{"/api/v1", "namespaces", false};
  return Create(client, kNamespaces, "", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
}

const k8s::ResourceType& Deployments() {
  static const k8s::ResourceType t{"/apis/apps/v1", "deployments", true};
  return t;
}
const k8s::ResourceType& ReplicaSets() {
  static const k8s::ResourceType t{"/apis/apps/v1", "replicasets", true};
  return t;
}
const k8s::ResourceType& CoreEvents() {
  static const k8s::ResourceType t{"/api/v1", "events", true};
  return t;
}

absl::StatusOr<k8s::Pod> GetPod(k8s::RestClient* client, const std::string& ns, const std::string& name) {
  auto j = client->Get(k8s::ObjectPath(k8s::kPods, ns, name));
  if (!j.ok()) return j.status();
  return k8s::Pod::FromJson(*j);
}

absl::StatusOr<k8s::Node> GetNode(k8s::RestClient* client, const std::string& name) {
  auto j = client->Get(k8s::ObjectPath(k8s::kNodes, "", name));
  if (!j.ok()) return j.status();
  return k8s::Node::FromJson(*j);
}

absl::StatusOr<std::vector<k8s::Pod>> ListPods(k8s::RestClient* client, const std::string& ns,
                                               const std::string& label_selector) {
  k8s::ListOptions options;
  options.label_selector = label_selector;
  auto j = client->Get(k8s::CollectionPath(k8s::kPods, ns) + options.ToQuery());
  if (!j.ok()) return j.status();
  std::vector<k8s::Pod> pods;
  for (const auto& item : j->value("items", json::array())) {
    auto p = k8s::Pod::FromJson(item);
    if (!p.ok()) return p.status();
    pods.push_back(*std::move(p));
  }
  return pods;
}

std::optional<k8s::Condition> PodScheduled(const k8s::Pod& pod) {
  for (const auto& c : pod.conditions) {
    if (c.type == "PodScheduled") return c;
  }
  return std::nullopt;
}

std::vector<SeenEvent> EventsAbout(k8s::RestClient* client, const std::string& ns, const std::string& name) {
  // Namespaces are small in these tests: list them all and filter here.
  std::vector<SeenEvent> out;
  auto j = client->Get(k8s::CollectionPath(k8s::kEvents, ns));
  if (!j.ok()) return out;
  for (const auto& item : j->value("items", json::array())) {
    auto e = k8s::Event::FromJson(item);
    if (!e.ok() || e->regarding.name != name) continue;
    SeenEvent s;
    s.reason = e->reason;
    s.note = e->note;
    s.type = e->type;
    s.reporting_controller = e->reporting_controller;
    s.count = std::max(1, e->series_count);
    out.push_back(std::move(s));
  }
  return out;
}

bool WaitForNodeReady(k8s::RestClient* client, const std::string& name) {
  return Eventually(absl::Seconds(60), [&] {
    auto n = GetNode(client, name);
    if (!n.ok()) return false;
    for (const auto& c : n->conditions) if (c.type == "Ready") return c.status == "True";
    return false;
  });
}

std::vector<SeenEvent> EventsWithReason(k8s::RestClient* client, const std::string& ns,
                                        const std::string& name, const std::string& reason) {
  std::vector<SeenEvent> out;
  for (auto& e : EventsAbout(client, ns, name)) {
    if (e.reason == reason) out.push_back(std::move(e));
  }
  return out;
}

int CountEvents(const std::vector<SeenEvent>& events) {
  int n = 0;
  for (const auto& e : events) n += e.count;
  return n;
}

std::string Describe(const std::vector<SeenEvent>& events) {
  std::vector<std::string> lines;
  for (const auto& e : events) {
    lines.push_back(absl::StrCat(e.type, " ", e.reason, " x", e.count, " (", e.reporting_controller, "): ", e.note));
  }
  return absl::StrJoin(lines, "\n");
}

ClusterWatch::ClusterWatch(k8s::RestClient* client, const std::string& ns, const std::string& pool) {
  k8s::InformerOptions pod_options;
  pod_options.namespace_ = ns;
  pods_ = std::make_unique<k8s::Informer<k8s::Pod>>(
      client, k8s::kPods, pod_options,
      k8s::InformerHandlers<k8s::Pod>{[this](const k8s::Pod& p) { OnPod(nullptr, p); },
                                      [this](const k8s::Pod& o, const k8s::Pod& p) { OnPod(&o, p); },
                                      [this](const k8s::Pod& p) { OnPodDeleted(p); }});
  k8s::InformerOptions node_options;
  node_options.label_selector = "onequeue.io/pool=" + pool;
  nodes_ = std::make_unique<k8s::Informer<k8s::Node>>(
      client, k8s::kNodes, node_options,
      k8s::InformerHandlers<k8s::Node>{[this](const k8s::Node& n) { OnNode(n); },
                                       [this](const k8s::Node&, const k8s::Node& n) { OnNode(n); }, nullptr});
}

bool ClusterWatch::Start(absl::Duration timeout) {
  pods_->Start();
  nodes_->Start();
  return pods_->WaitForSync(timeout) && nodes_->WaitForSync(timeout);
}

void ClusterWatch::Stop() {
  if (pods_) pods_->Stop();
  if (nodes_) nodes_->Stop();
}

void ClusterWatch::OnPod(const k8s::Pod* old_pod, const k8s::Pod& pod) {
  absl::MutexLock l(&mu_);
  if (!pod.node_name.empty() && (old_pod == nullptr || old_pod->node_name.empty())) {
    bindings_.push_back({pod.metadata.name, pod.metadata.uid, pod.node_name, absl::Now()});
  }
  if (!pod.nominated_node_name.empty()) nominated_[pod.metadata.name] = pod.nominated_node_name;
  if (pod.phase == "Running" && !running_at_.count(pod.metadata.name)) running_at_[pod.metadata.name] = absl::Now();
}

void ClusterWatch::OnPodDeleted(const k8s::Pod& pod) {
  absl::MutexLock l(&mu_);
  deleted_.push_back(pod.metadata.name);
}

void ClusterWatch::OnNode(const k8s::Node& node) {
  absl::MutexLock l(&mu_);
  auto it = node.metadata.annotations.find("onequeue.io/owner");
  const std::string value = it == node.metadata.annotations.end() ? "" : it->second;
  auto& history = owners_[node.metadata.name];
  if (history.empty() || history.back() != value) history.push_back(value);
}

std::vector<ClusterWatch::Binding> ClusterWatch::bindings() const {
  absl::MutexLock l(&mu_);
  return bindings_;
}

std::vector<std::string> ClusterWatch::deleted() const {
  absl::MutexLock l(&mu_);
  return deleted_;
}

std::string ClusterWatch::nominated(const std::string& pod) const {
  absl::MutexLock l(&mu_);
  auto it = nominated_.find(pod);
  return it == nominated_.end() ? "" : it->second;
}

std::optional<absl::Time> ClusterWatch::running_at(const std::string& pod) const {
  absl::MutexLock l(&mu_);
  auto it = running_at_.find(pod);
  if (it == running_at_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> ClusterWatch::owners(const std::string& node) const {
  absl::MutexLock l(&mu_);
  auto it = owners_.find(node);
  return it == owners_.end() ? std::vector<std::string>{} : it->second;
}

bool ClusterWatch::AnyReserved() const {
  absl::MutexLock l(&mu_);
  for (const auto& [node, history] : owners_) {
    if (!history.empty() && absl::StartsWith(history.back(), "reserved/")) return true;
  }
  return false;
}

bool ClusterWatch::EverReserved() const {
  absl::MutexLock l(&mu_);
  for (const auto& [node, history] : owners_) {
    for (const auto& v : history) {
      if (absl::StartsWith(v, "reserved/")) return true;
    }
  }
  return false;
}

}  // namespace onequeue::e2e

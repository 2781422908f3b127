#include "scheduler/kube_cluster.h"

#include "scheduler/volume_placement.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "k8s_client/dra.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {
namespace {

std::pair<std::string, std::string> SplitKey(const std::string& key) {
  auto slash = key.find('/');
  return {key.substr(0, slash), key.substr(slash + 1)};
}

}  // namespace

namespace {
// Events written at once at most (k8s::WriteLane): few enough that a burst of bindings or victims'
// deletions is not slowed by them, enough that a burst's events follow within seconds.
constexpr int kEventWritesInFlight = 32;
}  // namespace

KubeClusterActions::KubeClusterActions(k8s::RestClient* client, const k8s::Informer<k8s::Pod>* pods,
                                       std::string instance, const k8s::Informer<k8s::Node>* nodes)
    : client_(client),
      pods_(pods),
      api_(client),
      events_(client, "onequeue", std::move(instance), {}, {.max_in_flight = kEventWritesInFlight}),
      best_effort_(k8s::WriteLane::Create(client, {})),
      nodes_(nodes) {}

KubeClusterActions::~KubeClusterActions() { best_effort_->Close(); }

bool KubeClusterActions::FlushBestEffort(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  const bool events = events_.Flush(timeout);
  return best_effort_->Flush(std::max(deadline - absl::Now(), absl::ZeroDuration())) && events;
}

k8s::ObjectReference KubeClusterActions::PodReference(const std::string& pod_key) const {
  auto [ns, name] = SplitKey(pod_key);
  k8s::ObjectReference ref;
  ref.api_version = "v1";
  ref.kind = "Pod";
  ref.namespace_ = ns;
  ref.name = name;
  if (auto pod = pods_->Get(pod_key)) ref.uid = pod->metadata.uid;
  return ref;
}

void KubeClusterActions::RecordEvent(const std::string& pod_key, const std::string& type,
                                     const std::string& reason, const std::string& action,
                                     const std::string& note) {
  // Events are best effort, never waited for: a lost event must never stop scheduling. Those the
  // spam filter drops are counted (onequeue_events_total{outcome="dropped"}), not logged.
  events_.RecordAsync(PodReference(pod_key), type, reason, action, note, absl::Now(),
                      [pod_key, reason](absl::Status s) {
                        if (!s.ok() && !absl::IsResourceExhausted(s)) spdlog::warn("event {} for {}: {}", reason, pod_key, s.ToString());
                      });
}

std::map<std::string, std::string> KubeClusterActions::FinalWaitAnnotations(const std::string& pod_key,
                                                                             const k8s::Pod* pod) {
  // Issue 26: a pod that waited shows its queue position and estimated start; once bound it must
  // not look as if it still waits. The binding carries the values a bound pod shows (position 0,
  // and the start that is no longer an estimate), which the apiserver sets on the pod in the
  // binding's own write: no PATCH after it. It waited if this process reported it (a report
  // remembered, its write landed or not) or the informer's copy shows the annotations (a
  // predecessor's report).
  auto reported = last_event_.find(pod_key);
  bool waited = reported != last_event_.end();
  if (!waited && pod != nullptr) {
    waited = pod->metadata.annotations.count(kQueuePositionAnnotation) ||
             pod->metadata.annotations.count(kEstimatedStartAnnotation);
  }
  if (!waited) return {};
  last_event_[pod_key].final_annotations_sent = true;
  return {{kQueuePositionAnnotation, "0"}, {kEstimatedStartAnnotation, k8s::FormatRfc3339(absl::Now())}};
}

absl::Status KubeClusterActions::Bind(const std::string& pod_key, const std::string& node,
                                      const std::string& message) {
  auto [ns, name] = SplitKey(pod_key);
  const std::optional<k8s::Pod> pod = pods_->Get(pod_key);
  const std::string uid = pod ? pod->metadata.uid : "";
  absl::Status s = api_.Bind(ns, name, node, uid, FinalWaitAnnotations(pod_key, pod ? &*pod : nullptr));
  if (!s.ok()) {
    spdlog::warn("bind {} to {}: {}", pod_key, node, s.ToString());
    return s;
  }
  RecordEvent(pod_key, "Normal", "Scheduled", "Binding", message);
  last_event_.erase(pod_key);
  return absl::OkStatus();
}

void KubeClusterActions::StartBind(const std::string& pod_key, const std::string& node, const std::string& message,
                                   std::function<void(absl::Status)> done) {
  auto [ns, name] = SplitKey(pod_key);
  const std::optional<k8s::Pod> pod = pods_->Get(pod_key);
  const std::string uid = pod ? pod->metadata.uid : "";
  auto shared_done = std::make_shared<std::function<void(absl::Status)>>(std::move(done));
  auto bind = [api = &api_, ns = std::string(ns), name = std::string(name), node, uid, shared_done,
               annotations = FinalWaitAnnotations(pod_key, pod ? &*pod : nullptr)]() {
    api->BindAsync(
        ns, name, node,
        [shared_done](absl::Status s) {
          if (!s.ok()) spdlog::warn("{}", s.ToString());
          (*shared_done)(std::move(s));
        },
        uid, annotations);
  };
  {
    // A waiting report (PodScheduled=False) that landed after the binding would say the bound
    // pod waits: the binding goes out once the report in flight has answered.
    absl::MutexLock lock(&report_writes_->mu);
    if (report_writes_->in_flight.count(pod_key)) {
      report_writes_->binds_after[pod_key] = {std::move(bind), shared_done};
      return;
    }
  }
  bind();
}

void KubeClusterActions::BindSucceeded(const std::string& pod_key, const std::string& node,
                                       const std::string& message) {
  auto [ns, name] = SplitKey(pod_key);
  // Events are best effort: a lost event must never stop scheduling.
  events_.RecordAsync(PodReference(pod_key), "Normal", "Scheduled", "Binding", message, absl::Now(), [pod_key](absl::Status s) {
    if (!s.ok() && !absl::IsResourceExhausted(s)) spdlog::warn("event Scheduled for {}: {}", pod_key, s.ToString());
  });
  auto reported = last_event_.find(pod_key);
  const bool carried = reported != last_event_.end() && reported->second.final_annotations_sent;
  if (reported != last_event_.end()) last_event_.erase(reported);
  if (carried) return;
  // Wait annotations the binding did not carry (a predecessor's report the informer showed only
  // after the binding was sent): written after it, best effort like the events.
  auto pod = pods_->Get(pod_key);
  if (!pod) return;
  auto position = pod->metadata.annotations.find(kQueuePositionAnnotation);
  if (position == pod->metadata.annotations.end() || position->second == "0") return;
  k8s::HttpRequest req;
  req.method = "PATCH";
  req.path = k8s::ObjectPath(k8s::kPods, ns, name);
  req.content_type = "application/merge-patch+json";
  req.body = nlohmann::json{{"metadata", {{"annotations", FinalWaitAnnotations(pod_key, &*pod)}}}}.dump();
  last_event_.erase(pod_key);
  best_effort_->Submit(std::move(req), [pod_key](absl::StatusOr<std::string> r) {
    if (!r.ok() && !absl::IsCancelled(r.status())) {
      spdlog::warn("writing the final wait annotations of {}: {}", pod_key, r.status().ToString());
    }
  });
}

namespace {

// What a waiting report says in the condition ("Resources: ... (queue position 3)") and in the
// event (without the position, which moves with every arrival and departure).
struct WaitWords {
  std::string note, event_note;
};

WaitWords WordsOf(const WaitReport& report) {
  // The queue's messages may already start with the reason ("Resources: nodes reserved ..."):
  // users read the code once.
  absl::string_view message = report.message;
  absl::ConsumePrefix(&message, absl::StrCat(report.reason, ": "));
  return {absl::StrCat(report.reason, ": ", message, " (queue position ", report.queue_position, ")"),
          absl::StrCat(report.reason, ": ", message)};
}

std::map<std::string, std::optional<std::string>> WaitAnnotations(const WaitReport& report) {
  return {{kQueuePositionAnnotation, std::to_string(report.queue_position)},
          {kEstimatedStartAnnotation, report.estimated_start
                                          ? k8s::FormatRfc3339(absl::FromUnixSeconds(*report.estimated_start))
                                          : std::string("unknown")}};
}

}  // namespace

bool KubeClusterActions::BeginReport(const std::string& pod_key) {
  // Two reports of one pod in flight could land in either order, the older last.
  absl::MutexLock lock(&report_writes_->mu);
  return report_writes_->in_flight.insert(pod_key).second;
}

void KubeClusterActions::ReportLanded(const std::shared_ptr<ReportWrites>& writes, const std::string& pod_key,
                                      bool failed, bool cancelled, bool retry_if_failed) {
  std::optional<ReportWrites::DeferredBind> bind;
  {
    absl::MutexLock lock(&writes->mu);
    writes->in_flight.erase(pod_key);
    if (failed && retry_if_failed) writes->failed.push_back(pod_key);
    if (auto b = writes->binds_after.find(pod_key); b != writes->binds_after.end()) {
      bind = std::move(b->second);
      writes->binds_after.erase(b);
    }
  }
  if (!bind) return;
  if (cancelled) (*bind->done)(absl::CancelledError("the waiting report before the binding was cancelled"));
  else bind->send();
}

void KubeClusterActions::RecordWaitEvent(const std::string& pod_key, const std::string& reason,
                                         std::string event_note, absl::Time now) {
  // The event says why; the position moves with every arrival and departure, so it lives in the
  // annotation and the condition only. A new event when the reason changes at once; when only the
  // words change (estimates move with time) at most once a minute.
  LastEvent& last = last_event_[pod_key];
  if (last.reason != reason || (last.note != event_note && now - last.at >= absl::Minutes(1))) {
    RecordEvent(pod_key, "Warning", "FailedScheduling", "Scheduling", event_note);
    last = {reason, std::move(event_note), now};
  }
}

absl::Status KubeClusterActions::ReportWaiting(const std::string& pod_key, const WaitReport& report) {
  auto [ns, name] = SplitKey(pod_key);
  if (!BeginReport(pod_key)) {
    return absl::UnavailableError(absl::StrCat("the previous report of ", pod_key, " is still in flight"));
  }
  WaitWords words = WordsOf(report);
  const absl::Time now = absl::Now();
  // Strategic merge: conditions merge by "type", so other conditions are kept.
  nlohmann::json condition = {{"type", "PodScheduled"},
                              {"status", "False"},
                              {"reason", "Unschedulable"},
                              {"message", words.note},
                              {"lastTransitionTime", k8s::FormatRfc3339(now)}};
  k8s::HttpRequest status;
  status.method = "PATCH";
  status.path = k8s::ObjectPath(k8s::kPods, ns, name, "status");
  status.content_type = "application/strategic-merge-patch+json";
  status.body = nlohmann::json{{"status", {{"conditions", nlohmann::json::array({condition})}}}}.dump();
  k8s::HttpRequest annotations;
  annotations.method = "PATCH";
  annotations.path = k8s::ObjectPath(k8s::kPods, ns, name);
  annotations.content_type = "application/merge-patch+json";
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [key, value] : WaitAnnotations(report)) values[key] = *value;
  annotations.body = nlohmann::json{{"metadata", {{"annotations", values}}}}.dump();
  // Both patches at once; the report is done when both have answered, failed if either did.
  struct Pending {
    std::atomic<int> left{2};
    std::atomic<bool> failed{false};
    std::atomic<bool> cancelled{false};
  };
  auto pending = std::make_shared<Pending>();
  auto done = [writes = report_writes_, pending, pod_key](absl::StatusOr<std::string> r) {
    if (!r.ok()) {
      pending->failed = true;
      if (absl::IsCancelled(r.status())) pending->cancelled = true;
      spdlog::warn("reporting {} waiting: {}", pod_key, r.status().ToString());
    }
    if (pending->left.fetch_sub(1) != 1) return;
    ReportLanded(writes, pod_key, pending->failed, pending->cancelled, /*retry_if_failed=*/true);
  };
  client_->DoAsync(std::move(status), done);
  client_->DoAsync(std::move(annotations), done);
  RecordWaitEvent(pod_key, report.reason, std::move(words.event_note), now);
  return absl::OkStatus();
}

void KubeClusterActions::StartNominateWithReport(const std::string& pod_key, const std::string& node,
                                                 const WaitReport& report, std::function<void(absl::Status)> done) {
  auto [ns, name] = SplitKey(pod_key);
  if (!BeginReport(pod_key)) {
    // A report of the pod still in flight: the nomination alone; its report is written again by
    // ReportWaiting once that one has landed.
    StartNominate(pod_key, node, [pod_key, done = std::move(done)](absl::Status s) {
      done(s.ok() ? absl::UnavailableError(absl::StrCat("the previous report of ", pod_key, " is still in flight")) : s);
    });
    return;
  }
  WaitWords words = WordsOf(report);
  const absl::Time now = absl::Now();
  // One pods/status write, as kube-scheduler nominates: nominatedNodeName, PodScheduled=False and
  // the wait annotations (which the apiserver takes through pods/status: k8s::SchedulerApi).
  const k8s::Condition condition{"PodScheduled", "False", "Unschedulable", words.note, k8s::FormatRfc3339(now)};
  api_.PatchPodSchedulingAsync(ns, name, condition, node, WaitAnnotations(report), now,
                               [writes = report_writes_, pod_key, done = std::move(done)](absl::Status s) {
                                 if (!s.ok()) spdlog::warn("nominating {} with its report: {}", pod_key, s.ToString());
                                 // Not queued for TakeFailedReports: `done` tells the caller, which
                                 // writes the report again itself.
                                 ReportLanded(writes, pod_key, !s.ok(), absl::IsCancelled(s), /*retry_if_failed=*/false);
                                 done(std::move(s));
                               });
  RecordWaitEvent(pod_key, report.reason, std::move(words.event_note), now);
}

std::vector<std::string> KubeClusterActions::TakeFailedReports() {
  absl::MutexLock lock(&report_writes_->mu);
  return std::exchange(report_writes_->failed, {});
}

namespace {

// SetNodeOwner's merge patch, from the node as just read (`current`).
nlohmann::json OwnerPatch(const nlohmann::json& current, const std::string& value, const std::string& resource_version) {
  // Label: what kubectl get nodes -L onequeue.io/owner shows (a label value has no '/').
  nlohmann::json label = nullptr;
  if (!value.empty()) label = value.substr(0, value.find('/'));
  const bool tainted = !value.empty() && value != "kubernetes";
  nlohmann::json taints = nlohmann::json::array();
  bool had = false;
  if (current.contains("spec") && current["spec"].contains("taints")) {
    for (const auto& t : current["spec"]["taints"]) {
      if (t.value("key", "") == kOwnerTaintKey) {
        had = true;
        continue;
      }
      taints.push_back(t);
    }
  }
  nlohmann::json patch = {{"metadata",
                           {{"annotations", {{kOwnerAnnotation, value.empty() ? nlohmann::json(nullptr) : nlohmann::json(value)}}},
                            {"labels", {{kOwnerLabel, label}}}}}};
  if (tainted || had) {
    if (tainted) taints.push_back({{"key", kOwnerTaintKey}, {"value", label}, {"effect", "NoSchedule"}});
    patch["spec"] = {{"taints", taints}};
  }
  const std::string read_version = current.contains("metadata") ? current["metadata"].value("resourceVersion", "") : "";
  patch["metadata"]["resourceVersion"] = resource_version.empty() ? read_version : resource_version;
  return patch;
}

// A node's taints as the apiserver writes them (v1.Taint: key, value, effect, timeAdded).
nlohmann::json TaintsJson(const std::vector<k8s::Taint>& taints) {
  nlohmann::json out = nlohmann::json::array();
  for (const k8s::Taint& t : taints) {
    nlohmann::json one = {{"key", t.key}, {"effect", t.effect}};
    if (!t.value.empty()) one["value"] = t.value;
    if (!t.time_added.empty()) one["timeAdded"] = t.time_added;
    out.push_back(std::move(one));
  }
  return out;
}

// What OwnerPatch reads of a node: its version and taints.
nlohmann::json NodeAt(const std::string& resource_version, nlohmann::json taints) {
  return {{"metadata", {{"resourceVersion", resource_version}}}, {"spec", {{"taints", std::move(taints)}}}};
}

std::string WrittenVersion(const nlohmann::json& written) {
  return written.contains("metadata") ? written["metadata"].value("resourceVersion", "") : std::string();
}

}  // namespace

absl::StatusOr<std::string> KubeClusterActions::SetNodeOwner(const std::string& node, const std::string& value,
                                                             const std::string& resource_version) {
  // The taint list is replaced whole by a merge patch: write it from the node's taints at the
  // version the write is conditional on (read first when not known), changing only our taint. The
  // resourceVersion precondition makes a concurrent change of another taint fail the write (409)
  // rather than be lost; it is the version the loop decided from when it gives one, so that a
  // write based on an old read (a deposed leader's) fails too (the loop reads again).
  const std::string path = k8s::ObjectPath(k8s::kNodes, "", node);
  nlohmann::json current;
  if (std::optional<nlohmann::json> taints = KnownTaints(node, resource_version)) {
    current = NodeAt(resource_version, *std::move(taints));
  } else {
    absl::StatusOr<nlohmann::json> read = client_->Get(path);
    if (!read.ok()) return read.status();
    current = *std::move(read);
  }
  absl::StatusOr<nlohmann::json> written =
      client_->Patch(path, OwnerPatch(current, value, resource_version), "application/merge-patch+json");
  if (!written.ok()) return written.status();
  RememberTaints(*node_taints_, *written);
  return WrittenVersion(*written);
}

void KubeClusterActions::StartSetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string& resource_version,
                                           std::function<void(absl::StatusOr<std::string>)> done) {
  // SetNodeOwner without waiting: the PATCH at once when the taints at `resource_version` are
  // known (issue 26: one request per mark, as the reservation marks of a cycle's preemptions go
  // out together), else the GET and the PATCH chained on the transport thread.
  const std::string path = k8s::ObjectPath(k8s::kNodes, "", node);
  k8s::RestClient* client = client_;
  auto answer = std::make_shared<std::function<void(absl::StatusOr<std::string>)>>(std::move(done));
  auto patch = [client, path, value, resource_version, known = node_taints_, answer](const nlohmann::json& current) {
    k8s::HttpRequest req;
    req.method = "PATCH";
    req.path = path;
    req.content_type = "application/merge-patch+json";
    req.body = OwnerPatch(current, value, resource_version).dump();
    client->DoAsync(std::move(req), [known, answer](absl::StatusOr<std::string> written) {
      if (!written.ok()) return (*answer)(written.status());
      nlohmann::json j = nlohmann::json::parse(*written, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded()) return (*answer)(std::string());
      RememberTaints(*known, j);
      (*answer)(WrittenVersion(j));
    });
  };
  if (std::optional<nlohmann::json> taints = KnownTaints(node, resource_version)) {
    patch(NodeAt(resource_version, *std::move(taints)));
    return;
  }
  k8s::HttpRequest get;
  get.method = "GET";
  get.path = path;
  client_->DoAsync(std::move(get), [path, patch, answer](absl::StatusOr<std::string> body) {
    if (!body.ok()) return (*answer)(body.status());
    nlohmann::json current = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
    if (current.is_discarded()) return (*answer)(absl::InternalError("node " + path + ": unparsable answer"));
    patch(current);
  });
}

std::optional<nlohmann::json> KubeClusterActions::KnownTaints(const std::string& node,
                                                              const std::string& resource_version) const {
  if (resource_version.empty()) return std::nullopt;  // "whatever it is now": only a read knows
  if (nodes_ != nullptr) {
    if (std::optional<k8s::Node> n = nodes_->Get(node); n && n->metadata.resource_version == resource_version) {
      return TaintsJson(n->taints);
    }
  }
  absl::MutexLock lock(&node_taints_->mu);
  auto it = node_taints_->by_node.find(node);
  if (it == node_taints_->by_node.end() || it->second.version != resource_version) return std::nullopt;
  return it->second.taints;
}

void KubeClusterActions::RememberTaints(NodeTaints& known, const nlohmann::json& node) {
  if (!node.is_object() || !node.contains("metadata")) return;
  const std::string name = node["metadata"].value("name", "");
  const std::string version = node["metadata"].value("resourceVersion", "");
  if (name.empty() || version.empty()) return;
  nlohmann::json taints = nlohmann::json::array();
  if (node.contains("spec") && node["spec"].contains("taints")) taints = node["spec"]["taints"];
  absl::MutexLock lock(&known.mu);
  known.by_node[name] = {version, std::move(taints)};
}

void KubeClusterActions::NodeEvent(const std::string& node, const std::string& reason, const std::string& note) {
  k8s::ObjectReference ref;
  ref.api_version = "v1";
  ref.kind = "Node";
  ref.name = node;
  // kubectl describe node matches events by the node's name as uid (what the kubelet does).
  ref.uid = node;
  events_.RecordAsync(ref, "Normal", reason, "Scheduling", note, absl::Now(), [node, reason](absl::Status s) {
    if (!s.ok() && !absl::IsResourceExhausted(s)) spdlog::warn("event {} for node {}: {}", reason, node, s.ToString());
  });
}

absl::Status KubeClusterActions::PodEvent(const std::string& pod_key, const std::string& reason,
                                          const std::string& note) {
  RecordEvent(pod_key, "Warning", reason, "Scheduling", note);
  return absl::OkStatus();
}

absl::Status KubeClusterActions::AnnotateNode(const std::string& node, const std::string& key,
                                              const std::string& value) {
  nlohmann::json patch = {
      {"metadata", {{"annotations", {{key, value.empty() ? nlohmann::json(nullptr) : nlohmann::json(value)}}}}}};
  return client_->Patch(k8s::ObjectPath(k8s::kNodes, "", node), patch, "application/merge-patch+json").status();
}

absl::Status KubeClusterActions::SelectVolumeNode(const std::string& claim_key, const std::string& node) {
  auto [ns, name] = SplitKey(claim_key);
  nlohmann::json patch = {{"metadata", {{"annotations", {{kSelectedNodeAnnotation, node}}}}}};
  return client_->Patch(k8s::ObjectPath(k8s::kPersistentVolumeClaims, ns, name), patch,
                        "application/merge-patch+json")
      .status();
}

namespace {
bool ReservedFor(const k8s::ResourceClaim& c, const std::string& uid) {
  return std::any_of(c.reserved_for.begin(), c.reserved_for.end(),
                     [&](const k8s::ClaimConsumer& r) { return r.resource == "pods" && r.uid == uid; });
}
}  // namespace

absl::Status KubeClusterActions::AllocateClaim(const std::string& claim_key,
                                               const std::vector<k8s::DeviceAllocationResult>& results,
                                               const std::string& node, const k8s::ClaimConsumer& pod) {
  auto [ns, name] = SplitKey(claim_key);
  absl::StatusOr<nlohmann::json> claim = k8s::GetClaim(*client_, ns, name);
  if (!claim.ok()) return claim.status();
  absl::StatusOr<k8s::ResourceClaim> read = k8s::ResourceClaim::FromJson(*claim);
  if (!read.ok()) return read.status();
  if (read->allocated) {  // the write landed before (a retry), or someone else's
    if (ReservedFor(*read, pod.uid) && read->results == results && read->allocation_node == node) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("ResourceClaim ", claim_key, " is allocated otherwise"));
  }
  // kube-scheduler's order: the finalizer first (so the claim controller releases the allocation
  // when the pod is gone), then the allocation and reservedFor in one status write.
  nlohmann::json with_finalizer = k8s::WithFinalizer(*claim);
  if (with_finalizer != *claim) {
    claim = k8s::PutClaim(*client_, with_finalizer);
    if (!claim.ok()) return claim.status();
  }
  return k8s::PutClaimStatus(*client_, k8s::WithAllocation(*claim, results, node, pod)).status();
}

absl::Status KubeClusterActions::ClearClaim(const std::string& claim_key, const std::string& pod_uid) {
  auto [ns, name] = SplitKey(claim_key);
  absl::StatusOr<nlohmann::json> claim = k8s::GetClaim(*client_, ns, name);
  if (absl::IsNotFound(claim.status())) return absl::OkStatus();
  if (!claim.ok()) return claim.status();
  absl::StatusOr<k8s::ResourceClaim> read = k8s::ResourceClaim::FromJson(*claim);
  if (!read.ok()) return read.status();
  if (!ReservedFor(*read, pod_uid)) return absl::OkStatus();  // not ours: never touched
  const bool alone = read->reserved_for.size() == 1;
  return k8s::PutClaimStatus(*client_, k8s::WithoutConsumer(*claim, pod_uid, /*clear_allocation=*/alone)).status();
}

absl::Status KubeClusterActions::BindVolume(const std::string& volume, const std::string& resource_version,
                                            const std::string& claim_key, const std::string& claim_uid) {
  auto [ns, name] = SplitKey(claim_key);
  // kube-scheduler's bindAPIUpdate: claimRef and bound-by-controller; resourceVersion in the patch
  // makes the apiserver refuse it (409) if the volume changed since it was read.
  nlohmann::json patch = {
      {"metadata", {{"resourceVersion", resource_version}, {"annotations", {{kBoundByControllerAnnotation, "yes"}}}}},
      {"spec",
       {{"claimRef",
         {{"kind", "PersistentVolumeClaim"}, {"apiVersion", "v1"}, {"namespace", ns}, {"name", name}, {"uid", claim_uid}}}}}};
  return client_->Patch(k8s::ObjectPath(k8s::kPersistentVolumes, "", volume), patch, "application/merge-patch+json")
      .status();
}

absl::Status KubeClusterActions::Nominate(const std::string& pod_key, const std::string& node) {
  auto [ns, name] = SplitKey(pod_key);
  // "" clears the nomination (null removes the field in a merge patch).
  nlohmann::json value = node.empty() ? nlohmann::json(nullptr) : nlohmann::json(node);
  auto p = client_->Patch(k8s::ObjectPath(k8s::kPods, ns, name, "status"),
                          {{"status", {{"nominatedNodeName", value}}}}, "application/merge-patch+json");
  return p.status();
}

void KubeClusterActions::StartNominate(const std::string& pod_key, const std::string& node,
                                       std::function<void(absl::Status)> done) {
  auto [ns, name] = SplitKey(pod_key);
  k8s::HttpRequest req;
  req.method = "PATCH";
  req.path = k8s::ObjectPath(k8s::kPods, ns, name, "status");
  req.content_type = "application/merge-patch+json";
  req.body = nlohmann::json{{"status", {{"nominatedNodeName", node.empty() ? nlohmann::json(nullptr) : nlohmann::json(node)}}}}
                 .dump();
  client_->DoAsync(std::move(req), [done = std::move(done)](absl::StatusOr<std::string> r) { done(r.status()); });
}

absl::Status KubeClusterActions::Evict(const std::string& pod_key, const std::string& preemptor,
                                       const std::string& message) {
  auto [ns, name] = SplitKey(pod_key);
  absl::Status s = api_.Evict(ns, name);
  if (s.ok()) RecordEvent(pod_key, "Normal", "Preempted", "Preempting", message);
  return s;
}

void KubeClusterActions::StartEvict(const std::string& pod_key, const std::string& preemptor,
                                    const std::string& message, std::function<void(absl::Status)> done) {
  auto [ns, name] = SplitKey(pod_key);
  api_.EvictAsync(ns, name, std::move(done));
}

void KubeClusterActions::StartDeleteVictim(const std::string& pod_key, const std::string& preemptor,
                                           const std::string& condition_message,
                                           std::function<void(absl::Status)> done) {
  auto [ns, name] = SplitKey(pod_key);
  std::string uid;
  if (auto pod = pods_->Get(pod_key)) uid = pod->metadata.uid;
  api_.PreemptByDeleteAsync(ns, name, uid, condition_message, absl::Now(), std::move(done));
}

void KubeClusterActions::EvictSucceeded(const std::string& pod_key, const std::string& preemptor,
                                        const std::string& message) {
  RecordEvent(pod_key, "Normal", "Preempted", "Preempting", message);
}

absl::Status KubeClusterActions::EvictForTimeLimit(const std::string& pod_key, const std::string& message) {
  auto [ns, name] = SplitKey(pod_key);
  absl::Status s = api_.Evict(ns, name);
  if (s.ok()) RecordEvent(pod_key, "Warning", "TimeLimitExceeded", "Evicting", message);
  return s;
}

}  // namespace onequeue::scheduler

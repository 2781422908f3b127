#include "k8s_client/scheduler_api.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "k8s_client/api_status.h"

namespace onequeue::k8s {
namespace {

using nlohmann::json;

json BindingBody(const std::string& ns, const std::string& pod, const std::string& node,
                 const std::string& uid) {
  json b = {{"apiVersion", "v1"},
            {"kind", "Binding"},
            {"metadata", {{"name", pod}, {"namespace", ns}}},
            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!uid.empty()) b["metadata"]["uid"] = uid;
  return b;
}

absl::Status Annotate(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  absl::Status out(s.code(), absl::StrCat(what, ": ", s.message()));
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace

std::string FormatMicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Status SchedulerApi::Bind(const std::string& ns, const std::string& pod,
                                const std::string& node, const std::string& pod_uid) {
  absl::StatusOr<json> r =
      client_->Post(ObjectPath(kPods, ns, pod, "binding"), BindingBody(ns, pod, node, pod_uid));
  return Annotate(r.status(), absl::StrCat("bind ", ns, "/", pod, " to ", node));
}

void SchedulerApi::BindAsync(const std::string& ns, const std::string& pod, const std::string& node,
                             std::function<void(absl::Status)> done, const std::string& pod_uid) {
  HttpRequest req;
  req.method = "POST";
  req.path = ObjectPath(kPods, ns, pod, "binding");
  req.body = BindingBody(ns, pod, node, pod_uid).dump();
  client_->DoAsync(std::move(req), [done = std::move(done), what = absl::StrCat("bind ", ns, "/", pod, " to ", node)](
                                       absl::StatusOr<std::string> r) { done(Annotate(r.status(), what)); });
}

absl::Status SchedulerApi::Evict(const std::string& ns, const std::string& pod,
                                 std::optional<int64_t> grace_period_seconds) {
  json body = {{"apiVersion", "policy/v1"},
               {"kind", "Eviction"},
               {"metadata", {{"name", pod}, {"namespace", ns}}}};
  if (grace_period_seconds) body["deleteOptions"] = {{"gracePeriodSeconds", *grace_period_seconds}};
  absl::StatusOr<json> r = client_->Post(ObjectPath(kPods, ns, pod, "eviction"), body);
  return Annotate(r.status(), absl::StrCat("evict ", ns, "/", pod));
}

absl::Status SchedulerApi::PatchPodScheduling(const std::string& ns, const std::string& pod,
                                              const Condition& pod_scheduled,
                                              std::optional<std::string> nominated_node_name,
                                              absl::Time now) {
  json cond = {{"type", "PodScheduled"},
               {"status", pod_scheduled.status},
               {"lastTransitionTime", pod_scheduled.last_transition_time.empty()
                                          ? FormatRfc3339(now)
                                          : pod_scheduled.last_transition_time}};
  if (!pod_scheduled.reason.empty()) cond["reason"] = pod_scheduled.reason;
  if (!pod_scheduled.message.empty()) cond["message"] = pod_scheduled.message;
  // Strategic merge: conditions merge by "type", so other conditions are kept.
  json patch = {{"status", {{"conditions", json::array({cond})}}}};
  if (nominated_node_name) {
    patch["status"]["nominatedNodeName"] =
        nominated_node_name->empty() ? json(nullptr) : json(*nominated_node_name);
  }
  absl::StatusOr<json> r = client_->Patch(ObjectPath(kPods, ns, pod, "status"), patch,
                                          "application/strategic-merge-patch+json");
  return Annotate(r.status(), absl::StrCat("patch status of ", ns, "/", pod));
}

absl::StatusOr<Lease> SchedulerApi::GetLease(const std::string& ns, const std::string& name) {
  absl::StatusOr<json> r = client_->Get(ObjectPath(kLeases, ns, name));
  if (!r.ok()) return Annotate(r.status(), absl::StrCat("get lease ", ns, "/", name));
  return Lease::FromJson(*r);
}

absl::StatusOr<Lease> SchedulerApi::CreateLease(const Lease& lease) {
  json body = lease.ToJson();
  body["metadata"].erase("resourceVersion");
  absl::StatusOr<json> r = client_->Post(CollectionPath(kLeases, lease.metadata.namespace_), body);
  if (!r.ok()) {
    return Annotate(r.status(), absl::StrCat("create lease ", lease.metadata.namespace_, "/", lease.metadata.name));
  }
  return Lease::FromJson(*r);
}

absl::StatusOr<Lease> SchedulerApi::UpdateLease(const Lease& lease) {
  if (lease.metadata.resource_version.empty()) {
    return absl::InvalidArgumentError("update lease: resourceVersion is required (optimistic concurrency)");
  }
  absl::StatusOr<json> r =
      client_->Put(ObjectPath(kLeases, lease.metadata.namespace_, lease.metadata.name), lease.ToJson());
  if (!r.ok()) {
    return Annotate(r.status(), absl::StrCat("update lease ", lease.metadata.namespace_, "/", lease.metadata.name));
  }
  return Lease::FromJson(*r);
}

std::string EventSeriesTracker::KeyOf(const Event& e) {
  return absl::StrCat(e.regarding.kind, "\x1f", e.regarding.namespace_, "\x1f", e.regarding.name,
                      "\x1f", e.regarding.uid, "\x1f", e.reason, "\x1f", e.note, "\x1f", e.type,
                      "\x1f", e.action, "\x1f", e.reporting_controller);
}

EventSeriesTracker::Decision EventSeriesTracker::Observe(const Event& event,
                                                         const std::string& proposed_name,
                                                         absl::Time now) {
  absl::MutexLock lock(&mu_);
  const std::string key = KeyOf(event);
  auto it = series_.find(key);
  if (it != series_.end() && now - it->second.last <= window_) {
    ++it->second.count;
    it->second.last = now;
    return {false, it->second.name, it->second.count};
  }
  series_.insert_or_assign(key, Series{proposed_name, 1, now});
  // Keep the map bounded: drop series whose window has passed.
  if (series_.size() > 4096) {
    absl::erase_if(series_, [&](const auto& kv) { return now - kv.second.last > window_; });
  }
  return {true, proposed_name, 0};
}

void EventSeriesTracker::Forget(const Event& event) {
  absl::MutexLock lock(&mu_);
  series_.erase(KeyOf(event));
}

bool EventSpamFilter::Allow(const ObjectReference& regarding, absl::Time now) {
  const std::string key = absl::StrCat(regarding.kind, "\x1f", regarding.namespace_, "\x1f",
                                       regarding.name, "\x1f", regarding.uid);
  absl::MutexLock lock(&mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() > 16384) buckets_.clear();  // bounded memory; forgetting is harmless
    it = buckets_.emplace(key, std::make_unique<TokenBucket>(qps_, burst_, now)).first;
  }
  return it->second->TryTake(now);
}

Event EventRecorder::MakeEvent(const ObjectReference& regarding, const std::string& type,
                               const std::string& reason, const std::string& action, const std::string& note,
                               absl::Time now) const {
  Event e;
  e.metadata.namespace_ = regarding.namespace_.empty() ? "default" : regarding.namespace_;
  e.event_time = FormatMicroTime(now);
  e.reporting_controller = controller_;
  e.reporting_instance = instance_;
  e.action = action;
  e.reason = reason;
  e.note = note.substr(0, 1024);  // the API server refuses notes longer than 1 kB
  e.type = type;
  e.regarding = regarding;
  return e;
}

std::string EventRecorder::NameFor(const ObjectReference& regarding, absl::Time now) {
  // Named like client-go's recorder: <object>.<hex nanoseconds>.
  return absl::StrFormat("%s.%x", regarding.name, static_cast<uint64_t>(absl::ToUnixNanos(now)));
}

absl::Status EventRecorder::Dropped(const ObjectReference& regarding, const std::string& reason) {
  return absl::ResourceExhaustedError(absl::StrCat("event ", reason, " about ", regarding.kind, " ",
                                                   regarding.namespace_, "/", regarding.name,
                                                   " dropped by the per-object spam filter"));
}

absl::StatusOr<Event> EventRecorder::Record(const ObjectReference& regarding, const std::string& type,
                                            const std::string& reason, const std::string& action,
                                            const std::string& note, absl::Time now) {
  if (!filter_->Allow(regarding, now)) return Dropped(regarding, reason);
  Event e = MakeEvent(regarding, type, reason, action, note, now);
  const std::string name = NameFor(regarding, now);
  EventSeriesTracker::Decision d = tracker_.Observe(e, name, now);
  if (!d.create) {
    json patch = {{"series", {{"count", d.series_count}, {"lastObservedTime", FormatMicroTime(now)}}}};
    absl::StatusOr<json> r = client_->Patch(ObjectPath(kEvents, e.metadata.namespace_, d.name), patch,
                                            "application/merge-patch+json");
    if (r.ok()) return Event::FromJson(*r);
    if (r.status().code() != absl::StatusCode::kNotFound) return Annotate(r.status(), "patch event series");
    tracker_.Forget(e);  // the object expired (events have a TTL): start a new series
    d = tracker_.Observe(e, name, now);
  }
  e.metadata.name = d.name;
  absl::StatusOr<json> r = client_->Post(CollectionPath(kEvents, e.metadata.namespace_), e.ToJson());
  if (!r.ok()) return Annotate(r.status(), "create event");
  return Event::FromJson(*r);
}

void EventRecorder::RecordAsync(const ObjectReference& regarding, const std::string& type,
                                const std::string& reason, const std::string& action, const std::string& note,
                                absl::Time now, std::function<void(absl::Status)> done) {
  if (!done) done = [](absl::Status) {};
  if (!filter_->Allow(regarding, now)) {
    done(Dropped(regarding, reason));
    return;
  }
  Event e = MakeEvent(regarding, type, reason, action, note, now);
  EventSeriesTracker::Decision d = tracker_.Observe(e, NameFor(regarding, now), now);
  HttpRequest req;
  if (!d.create) {
    // A repeat: count it on the series. (If the event expired meanwhile the patch is lost; the
    // synchronous Record starts a new series then.)
    req.method = "PATCH";
    req.path = ObjectPath(kEvents, e.metadata.namespace_, d.name);
    req.content_type = "application/merge-patch+json";
    req.body = json{{"series", {{"count", d.series_count}, {"lastObservedTime", FormatMicroTime(now)}}}}.dump();
  } else {
    e.metadata.name = d.name;
    req.method = "POST";
    req.path = CollectionPath(kEvents, e.metadata.namespace_);
    req.body = e.ToJson().dump();
  }
  client_->DoAsync(std::move(req), [done = std::move(done)](absl::StatusOr<std::string> r) {
    done(Annotate(r.status(), "record event"));
  });
}

}  // namespace onequeue::k8s

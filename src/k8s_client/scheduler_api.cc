#include "k8s_client/scheduler_api.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "k8s_client/api_status.h"

namespace onequeue::k8s {
namespace {

using nlohmann::json;

json BindingBody(const std::string& ns, const std::string& pod, const std::string& node,
                 const std::string& uid, const std::map<std::string, std::string>& annotations) {
  json b = {{"apiVersion", "v1"},
            {"kind", "Binding"},
            {"metadata", {{"name", pod}, {"namespace", ns}}},
            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!uid.empty()) b["metadata"]["uid"] = uid;
  if (!annotations.empty()) b["metadata"]["annotations"] = annotations;
  return b;
}

absl::Status Annotate(const absl::Status& s, absl::string_view what) {
  if (s.ok()) return s;
  absl::Status out(s.code(), absl::StrCat(what, ": ", s.message()));
  s.ForEachPayload([&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

// A pods/status strategic merge patch: the PodScheduled condition (merged by "type", so other
// conditions are kept), status.nominatedNodeName when given ("" clears it), and annotations
// (nullopt: removed).
json PodSchedulingPatch(const Condition& pod_scheduled, const std::optional<std::string>& nominated_node_name,
                        const std::map<std::string, std::optional<std::string>>& annotations, absl::Time now) {
  json cond = {{"type", "PodScheduled"},
               {"status", pod_scheduled.status},
               {"lastTransitionTime", pod_scheduled.last_transition_time.empty()
                                          ? FormatRfc3339(now)
                                          : pod_scheduled.last_transition_time}};
  if (!pod_scheduled.reason.empty()) cond["reason"] = pod_scheduled.reason;
  if (!pod_scheduled.message.empty()) cond["message"] = pod_scheduled.message;
  json patch = {{"status", {{"conditions", json::array({cond})}}}};
  if (nominated_node_name) {
    patch["status"]["nominatedNodeName"] =
        nominated_node_name->empty() ? json(nullptr) : json(*nominated_node_name);
  }
  for (const auto& [key, value] : annotations) {
    patch["metadata"]["annotations"][key] = value ? json(*value) : json(nullptr);
  }
  return patch;
}

}  // namespace

std::string FormatMicroTime(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E6SZ", t, absl::UTCTimeZone());
}

std::string FormatRfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Status SchedulerApi::Bind(const std::string& ns, const std::string& pod, const std::string& node,
                                const std::string& pod_uid, const std::map<std::string, std::string>& annotations) {
  absl::StatusOr<json> r =
      client_->Post(ObjectPath(kPods, ns, pod, "binding"), BindingBody(ns, pod, node, pod_uid, annotations));
  return Annotate(r.status(), absl::StrCat("bind ", ns, "/", pod, " to ", node));
}

void SchedulerApi::BindAsync(const std::string& ns, const std::string& pod, const std::string& node,
                             std::function<void(absl::Status)> done, const std::string& pod_uid,
                             const std::map<std::string, std::string>& annotations) {
  HttpRequest req;
  req.method = "POST";
  req.path = ObjectPath(kPods, ns, pod, "binding");
  req.body = BindingBody(ns, pod, node, pod_uid, annotations).dump();
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

void SchedulerApi::EvictAsync(const std::string& ns, const std::string& pod,
                              std::function<void(absl::Status)> done) {
  HttpRequest req;
  req.method = "POST";
  req.path = ObjectPath(kPods, ns, pod, "eviction");
  req.body = json{{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", pod}, {"namespace", ns}}}}
                 .dump();
  client_->DoAsync(std::move(req), [done = std::move(done), what = absl::StrCat("evict ", ns, "/", pod)](
                                       absl::StatusOr<std::string> r) { done(Annotate(r.status(), what)); });
}

void SchedulerApi::PreemptByDeleteAsync(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                                        const std::string& message, absl::Time now,
                                        std::function<void(absl::Status)> done) {
  // kube-scheduler's DisruptionTarget condition (pkg/scheduler/framework/preemption/executor.go):
  // what the pod's controller and kubectl describe read as "preempted by the scheduler".
  json condition = {{"type", "DisruptionTarget"},
                    {"status", "True"},
                    {"reason", "PreemptionByScheduler"},
                    {"message", message},
                    {"lastTransitionTime", FormatRfc3339(now)}};
  HttpRequest status;
  status.method = "PATCH";
  status.path = ObjectPath(kPods, ns, pod, "status");
  status.content_type = "application/strategic-merge-patch+json";
  json status_patch = {{"status", {{"conditions", json::array({condition})}}}};
  // The uid in the patch guards it too: the apiserver refuses another pod's ("metadata.uid: field
  // is immutable", 422).
  if (!pod_uid.empty()) status_patch["metadata"] = {{"uid", pod_uid}};
  status.body = status_patch.dump();
  HttpRequest del;
  del.method = "DELETE";
  del.path = ObjectPath(kPods, ns, pod);
  if (!pod_uid.empty()) {
    del.body = json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"}, {"preconditions", {{"uid", pod_uid}}}}.dump();
  }
  RestClient* client = client_;
  const bool uid_precondition = !pod_uid.empty();
  client_->DoAsync(std::move(status), [client, del = std::move(del), done = std::move(done), uid_precondition,
                                       what = absl::StrCat("preempt ", ns, "/", pod)](
                                          absl::StatusOr<std::string> r) mutable {
    // Refused for its uid: the victim is gone and another pod has its name now.
    if (uid_precondition && absl::IsInvalidArgument(r.status()) && absl::StrContains(r.status().message(), "metadata.uid")) {
      done(absl::NotFoundError(absl::StrCat(what, ": gone, its name taken by another pod: ", r.status().message())));
      return;
    }
    if (!r.ok()) {
      done(Annotate(r.status(), absl::StrCat(what, ": DisruptionTarget condition")));
      return;
    }
    client->DoAsync(std::move(del), [done = std::move(done), what, uid_precondition](absl::StatusOr<std::string> d) {
      // 409 on the uid precondition: likewise (a pod made again between the two writes).
      if (uid_precondition && absl::IsAborted(d.status())) {
        done(absl::NotFoundError(absl::StrCat(what, ": gone, its name taken by another pod: ", d.status().message())));
        return;
      }
      done(Annotate(d.status(), absl::StrCat(what, ": delete")));
    });
  });
}

absl::Status SchedulerApi::PatchPodScheduling(const std::string& ns, const std::string& pod,
                                              const Condition& pod_scheduled,
                                              std::optional<std::string> nominated_node_name,
                                              absl::Time now) {
  absl::StatusOr<json> r = client_->Patch(ObjectPath(kPods, ns, pod, "status"),
                                          PodSchedulingPatch(pod_scheduled, nominated_node_name, {}, now),
                                          "application/strategic-merge-patch+json");
  return Annotate(r.status(), absl::StrCat("patch status of ", ns, "/", pod));
}

void SchedulerApi::PatchPodSchedulingAsync(const std::string& ns, const std::string& pod,
                                           const Condition& pod_scheduled,
                                           std::optional<std::string> nominated_node_name,
                                           const std::map<std::string, std::optional<std::string>>& annotations,
                                           absl::Time now, std::function<void(absl::Status)> done) {
  HttpRequest req;
  req.method = "PATCH";
  req.path = ObjectPath(kPods, ns, pod, "status");
  req.content_type = "application/strategic-merge-patch+json";
  req.body = PodSchedulingPatch(pod_scheduled, nominated_node_name, annotations, now).dump();
  client_->DoAsync(std::move(req), [done = std::move(done), what = absl::StrCat("patch status of ", ns, "/", pod)](
                                       absl::StatusOr<std::string> r) { done(Annotate(r.status(), what)); });
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

namespace {

constexpr absl::string_view kSep = "\x1f";

// Similar events (client-go's EventAggregatorByReasonFunc): everything but the note.
std::string SimilarKeyOf(const Event& e) {
  return absl::StrCat(e.regarding.api_version, kSep, e.regarding.kind, kSep, e.regarding.namespace_, kSep,
                      e.regarding.name, kSep, e.regarding.uid, kSep, e.type, kSep, e.reason, kSep, e.action,
                      kSep, e.reporting_controller, kSep, e.reporting_instance);
}

json SeriesPatchBody(int32_t count, absl::Time last_observed) {
  return json{{"series", {{"count", count}, {"lastObservedTime", FormatMicroTime(last_observed)}}}};
}

}  // namespace

EventCorrelator::Decision EventCorrelator::Correlate(const Event& event, absl::Time now) {
  Decision d;
  d.note = event.note;
  const std::string similar_key = SimilarKeyOf(event);
  absl::MutexLock lock(&mu_);
  // 1. Aggregation: the rolling interval restarts with every similar event.
  SimilarNotes& similar = similar_[similar_key];
  if (now - similar.last > options_.aggregate_interval) similar.notes.clear();
  similar.notes.insert(event.note);
  similar.last = now;
  if (static_cast<int>(similar.notes.size()) >= options_.aggregate_max_notes) {
    similar.notes.erase(similar.notes.begin());  // do not grow past the threshold (PopAny)
    d.aggregated = true;
    d.note = absl::StrCat("(combined from similar events): ", event.note);
    d.series_key = similar_key;  // every combined event counts on one series
    ++counters_.aggregated;
  } else {
    d.series_key = absl::StrCat(similar_key, kSep, event.note);
  }
  // 2. Series.
  auto it = series_.find(d.series_key);
  if (it != series_.end() && now - it->second.last_observed < options_.series_window) {
    Series& s = it->second;
    ++s.count;
    s.last_observed = now;
    d.name = s.name;
    d.series_count = s.count;
    d.last_observed = now;
    const bool write = s.written_count < 2 || now - s.last_written >= options_.series_refresh;
    if (!write) {
      d.write = Write::kNone;
      ++counters_.counted;
      return d;
    }
    // 3. Spam filter, for an occurrence that costs a request.
    if (!filter_.Allow(event.regarding, now)) {
      d.write = Write::kNone;
      d.dropped = true;
      ++counters_.dropped;
      return d;
    }
    s.written_count = s.count;
    s.last_written = now;
    d.write = Write::kPatchSeries;
    ++counters_.patched;
    return d;
  }
  d.name = absl::StrFormat("%s.%x", event.regarding.name, static_cast<uint64_t>(absl::ToUnixNanos(now)));
  d.last_observed = now;
  if (!filter_.Allow(event.regarding, now)) {
    d.write = Write::kNone;
    d.dropped = true;
    ++counters_.dropped;
    return d;
  }
  d.write = Write::kCreate;
  ++counters_.created;
  Series s;
  s.namespace_ = event.metadata.namespace_;
  s.name = d.name;
  s.last_observed = s.last_written = now;
  series_.insert_or_assign(d.series_key, std::move(s));
  // Bounded memory: forget what has ended (a series whose count was not written yet is lost; so
  // does client-go's LRU cache). Scanned when the maps have doubled since the last scan, not at
  // every new Event: 100,000 waiting pods create 100,000 FailedScheduling Events in one cycle.
  if (series_.size() + similar_.size() > prune_at_) {
    absl::erase_if(series_, [&](const auto& kv) { return now - kv.second.last_observed >= options_.series_window; });
    absl::erase_if(similar_, [&](const auto& kv) { return now - kv.second.last > options_.aggregate_interval; });
    prune_at_ = std::max<size_t>(8192, 2 * (series_.size() + similar_.size()));
  }
  return d;
}

std::vector<EventCorrelator::SeriesPatch> EventCorrelator::DueSeriesPatches(absl::Time now) {
  std::vector<SeriesPatch> due;
  absl::MutexLock lock(&mu_);
  if (now - last_scan_ < absl::Minutes(1)) return due;
  last_scan_ = now;
  for (auto it = series_.begin(); it != series_.end();) {
    Series& s = it->second;
    const bool ended = now - s.last_observed >= options_.series_window;
    if (s.count > s.written_count && (ended || now - s.last_written >= options_.series_refresh)) {
      due.push_back(SeriesPatch{s.namespace_, s.name, it->first, s.count, s.last_observed});
      s.written_count = s.count;
      s.last_written = now;
    }
    if (ended) series_.erase(it++);  // finishSeries: the next identical event starts a new Event
    else ++it;
  }
  return due;
}

void EventCorrelator::Forget(const std::string& series_key) {
  absl::MutexLock lock(&mu_);
  series_.erase(series_key);
}

size_t EventCorrelator::tracked() const {
  absl::MutexLock lock(&mu_);
  return series_.size() + similar_.size();
}

EventCorrelator::Counters EventCorrelator::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
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
  e.note = note;
  e.type = type;
  e.regarding = regarding;
  return e;
}

absl::Status EventRecorder::Dropped(const ObjectReference& regarding, const std::string& reason) {
  return absl::ResourceExhaustedError(absl::StrCat("event ", reason, " about ", regarding.kind, " ",
                                                   regarding.namespace_, "/", regarding.name,
                                                   " dropped by the per-object spam filter"));
}

absl::StatusOr<Event> EventRecorder::Record(const ObjectReference& regarding, const std::string& type,
                                            const std::string& reason, const std::string& action,
                                            const std::string& note, absl::Time now) {
  Event e = MakeEvent(regarding, type, reason, action, note, now);
  EventCorrelator::Decision d = correlator_->Correlate(e, now);
  if (d.dropped) return Dropped(regarding, reason);
  e.metadata.name = d.name;
  e.note = d.note.substr(0, 1024);  // the API server refuses notes longer than 1 kB
  if (d.write == EventCorrelator::Write::kNone) {  // counted on its series, written later
    e.series_count = d.series_count;
    e.series_last_observed_time = FormatMicroTime(d.last_observed);
    return e;
  }
  if (d.write == EventCorrelator::Write::kPatchSeries) {
    absl::StatusOr<json> r = client_->Patch(ObjectPath(kEvents, e.metadata.namespace_, d.name),
                                            SeriesPatchBody(d.series_count, d.last_observed),
                                            "application/merge-patch+json");
    if (r.ok()) return Event::FromJson(*r);
    if (r.status().code() != absl::StatusCode::kNotFound) return Annotate(r.status(), "patch event series");
    // The object expired (events have a TTL): start a new series.
    correlator_->Forget(d.series_key);
    d = correlator_->Correlate(e, now);
    if (d.dropped) return Dropped(regarding, reason);
    e.metadata.name = d.name;
  }
  absl::StatusOr<json> r = client_->Post(CollectionPath(kEvents, e.metadata.namespace_), e.ToJson());
  if (!r.ok()) return Annotate(r.status(), "create event");
  return Event::FromJson(*r);
}

void EventRecorder::PatchSeriesAsync(const std::string& ns, const std::string& name, const std::string& series_key,
                                     int32_t count, absl::Time last_observed,
                                     std::function<void(absl::Status)> done) {
  HttpRequest req;
  req.method = "PATCH";
  req.path = ObjectPath(kEvents, ns, name);
  req.content_type = "application/merge-patch+json";
  req.body = SeriesPatchBody(count, last_observed).dump();
  lane_->Submit(std::move(req), [correlator = correlator_, series_key,
                                     done = std::move(done)](absl::StatusOr<std::string> r) {
    // The Event expired: the next occurrence creates a new one.
    if (r.status().code() == absl::StatusCode::kNotFound) correlator->Forget(series_key);
    if (done) done(Annotate(r.status(), "patch event series"));
  });
}

void EventRecorder::RecordAsync(const ObjectReference& regarding, const std::string& type,
                                const std::string& reason, const std::string& action, const std::string& note,
                                absl::Time now, std::function<void(absl::Status)> done) {
  if (!done) done = [](absl::Status) {};
  for (const EventCorrelator::SeriesPatch& p : correlator_->DueSeriesPatches(now)) {
    PatchSeriesAsync(p.namespace_, p.name, p.series_key, p.count, p.last_observed, nullptr);
  }
  Event e = MakeEvent(regarding, type, reason, action, note, now);
  EventCorrelator::Decision d = correlator_->Correlate(e, now);
  if (d.dropped) {
    done(Dropped(regarding, reason));
    return;
  }
  switch (d.write) {
    case EventCorrelator::Write::kNone:
      done(absl::OkStatus());
      return;
    case EventCorrelator::Write::kPatchSeries:
      PatchSeriesAsync(e.metadata.namespace_, d.name, d.series_key, d.series_count, d.last_observed, std::move(done));
      return;
    case EventCorrelator::Write::kCreate: {
      e.metadata.name = d.name;
      e.note = d.note.substr(0, 1024);  // the API server refuses notes longer than 1 kB
      HttpRequest req;
      req.method = "POST";
      req.path = CollectionPath(kEvents, e.metadata.namespace_);
      req.body = e.ToJson().dump();
      lane_->Submit(std::move(req), [done = std::move(done)](absl::StatusOr<std::string> r) {
        done(Annotate(r.status(), "record event"));
      });
      return;
    }
  }
}

}  // namespace onequeue::k8s

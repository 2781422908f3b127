// The writes a scheduler makes, with the outcome of each as an absl::Status that says what to
// do next:
//   Bind          OK | Aborted (already bound / conflict: re-read the pod) | NotFound | ...
//   Evict         OK | FailedPrecondition "blocked by PodDisruptionBudget <name>" (do not retry
//                 until the budget allows) | NotFound (already gone) | ...
//   PreemptByDelete  DisruptionTarget condition, then DELETE (a victim no budget covers, as
//                 kube-scheduler removes its victims): OK | NotFound (already gone) | ...
//   status patch  PodScheduled condition and status.nominatedNodeName (strategic merge patch)
//   Events        events.k8s.io/v1 through an EventCorrelator: repeats become a series (a patch,
//                 not a new object), similar events are combined, a per-object token bucket
//                 drops the excess (client-go's recorder semantics)
//   Leases        get/create/update with resourceVersion: a lost race is Aborted (409 Conflict)
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s_client/models.h"
#include "k8s_client/rate_limit.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/write_lane.h"

namespace onequeue::k8s {

// RFC 3339 with microseconds in UTC, as metav1.MicroTime prints ("2026-11-21T23:59:01.123456Z").
std::string FormatMicroTime(absl::Time t);
// RFC 3339 seconds in UTC, as metav1.Time prints.
std::string FormatRfc3339(absl::Time t);

class SchedulerApi {
 public:
  explicit SchedulerApi(RestClient* client) : client_(client) {}

  // POST pods/{name}/binding. `pod_uid` (optional) makes the server refuse a recreated pod.
  // `annotations` (optional) go in the Binding's metadata: the apiserver sets them on the pod in
  // the same write (BindingREST.setPodNodeAndMetadata copies them over the pod's; it never
  // removes one).
  absl::Status Bind(const std::string& ns, const std::string& pod, const std::string& node,
                    const std::string& pod_uid = "", const std::map<std::string, std::string>& annotations = {});
  // Non-blocking variant for bulk binding (benchmarks, gangs): `done` runs on the transport thread.
  void BindAsync(const std::string& ns, const std::string& pod, const std::string& node,
                 std::function<void(absl::Status)> done, const std::string& pod_uid = "",
                 const std::map<std::string, std::string>& annotations = {});

  // POST pods/{name}/eviction (policy/v1).
  absl::Status Evict(const std::string& ns, const std::string& pod,
                     std::optional<int64_t> grace_period_seconds = std::nullopt);
  // The same without waiting; `done` runs on the transport's thread.
  void EvictAsync(const std::string& ns, const std::string& pod, std::function<void(absl::Status)> done);
  // A preemption victim removed as kube-scheduler v1.37's preemption executor does, without
  // waiting: PATCH pods/{name}/status with the condition DisruptionTarget=True, reason
  // PreemptionByScheduler, `message` (strategic merge: other conditions kept), then, once that
  // landed, DELETE the pod with its own grace period (`pod_uid`, when known, as the delete's
  // precondition: a pod made again under the name is not deleted). `done` (transport thread) gets
  // the first failure (NotFound: gone already; the delete is then not sent) or the delete's OK.
  void PreemptByDeleteAsync(const std::string& ns, const std::string& pod, const std::string& pod_uid,
                            const std::string& message, absl::Time now, std::function<void(absl::Status)> done);

  // Sets the PodScheduled condition (status "False" with reason e.g. "Unschedulable", or "True")
  // and, when given, status.nominatedNodeName ("" clears it).
  absl::Status PatchPodScheduling(const std::string& ns, const std::string& pod,
                                  const Condition& pod_scheduled,
                                  std::optional<std::string> nominated_node_name, absl::Time now);
  // Issue 26: PatchPodScheduling without waiting (`done` on the transport's thread), with the pod's
  // `annotations` in the same pods/status write (a value nullopt removes one). kube-scheduler
  // nominates a preemptor with its PodScheduled=False condition in one status PATCH; onequeue's
  // wait annotations ride along. The apiserver keeps metadata.annotations of a pods/status patch
  // (its pod status strategy resets spec, deletionTimestamp and ownerReferences, not annotations):
  // checked on the real apiserver, integration_test SchedulerWritesUnderItsOwnIdentity.
  void PatchPodSchedulingAsync(const std::string& ns, const std::string& pod, const Condition& pod_scheduled,
                               std::optional<std::string> nominated_node_name,
                               const std::map<std::string, std::optional<std::string>>& annotations,
                               absl::Time now, std::function<void(absl::Status)> done);

  absl::StatusOr<Lease> GetLease(const std::string& ns, const std::string& name);
  absl::StatusOr<Lease> CreateLease(const Lease& lease);
  // PUT with lease.metadata.resource_version: Aborted when someone else updated it first.
  absl::StatusOr<Lease> UpdateLease(const Lease& lease);

 private:
  RestClient* client_;
};

// Rate limit per regarding object, like client-go's EventSourceObjectSpamFilter: a bucket of
// `burst` events refilled at `qps` (default 25, then one per 5 minutes); the rest is dropped.
class EventSpamFilter {
 public:
  explicit EventSpamFilter(double qps = 1.0 / 300, int burst = 25) : qps_(qps), burst_(burst) {}
  bool Allow(const ObjectReference& regarding, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const double qps_;
  const int burst_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<TokenBucket>> buckets_ ABSL_GUARDED_BY(mu_);
};

// Decides what one occurrence of an event costs the API server, as kube-scheduler's client-go
// recorders decide it. Pure: no I/O, time is an argument (thread-safe). What we follow, in the
// order client-go's EventCorrelator.EventCorrelate applies it (tools/record/events_cache.go), with
// the series writes of the events.k8s.io/v1 broadcaster (tools/events/event_broadcaster.go):
//  1. Aggregation (EventAggregator, EventAggregatorByReasonFunc): events about one object with the
//     same type, reason, action and reporting controller/instance that differ only in their note
//     are "similar". Once `aggregate_max_notes` (10) distinct notes were seen, each less than
//     `aggregate_interval` (10 min) after the previous similar one, every further similar event
//     becomes "(combined from similar events): <note>" keyed without its note, so they all count
//     on one Event's series instead of each creating an Event.
//  2. Series (eventLogger; tools/events eventCache): an event identical (same object, reason,
//     note, type, action, controller, instance) to one seen less than `series_window` (6 min,
//     tools/events finishTime) before is the next occurrence of the first one's series: the
//     second occurrence PATCHes series {count: 2, lastObservedTime} onto the Event (no new
//     object); later ones are counted here and written by a patch at most once per
//     `series_refresh`, and by DueSeriesPatches when the series ends (tools/events: the 30-minute
//     refreshExistingEventSeries and the finishSeries pass; the occurrences in between cost
//     nothing, as there).
//  3. Spam filter (EventSourceObjectSpamFilter): per regarding object a token bucket of 25 refilled
//     one per 5 minutes; an occurrence that would cost a request (create or patch) without a token
//     is dropped. (client-go takes a token for every occurrence because each costs a request
//     there; occurrences only counted here cost nothing and take none. The series count still
//     includes dropped repeats, as client-go's eventLogger counts before the filter.)
class EventCorrelator {
 public:
  struct Options {
    int aggregate_max_notes = 10;
    absl::Duration aggregate_interval = absl::Minutes(10);
    absl::Duration series_window = absl::Minutes(6);
    absl::Duration series_refresh = absl::Minutes(30);
    double spam_qps = 1.0 / 300;
    int spam_burst = 25;
  };
  enum class Write { kNone, kCreate, kPatchSeries };
  struct Decision {
    Write write = Write::kCreate;
    bool dropped = false;     // the spam filter dropped it (write is kNone)
    bool aggregated = false;  // combined with similar events (note rewritten)
    std::string name;         // the Event object to create or patch
    std::string note;         // the note to create it with
    int32_t series_count = 0; // the series count so far (0: a new Event)
    absl::Time last_observed;
    std::string series_key;   // for Forget
  };
  struct SeriesPatch {
    std::string namespace_, name, series_key;
    int32_t count = 0;
    absl::Time last_observed;
  };
  struct Counters {
    int64_t created = 0;     // occurrences that create an Event
    int64_t patched = 0;     // occurrences written as a series patch
    int64_t counted = 0;     // occurrences only counted on a series (no request)
    int64_t aggregated = 0;  // occurrences combined with similar events
    int64_t dropped = 0;     // occurrences the spam filter dropped
    // Writes (creations and series patches) EventRecorder's lane refused because its queue was
    // full; filled in by EventRecorder::counters(), never by the correlator.
    int64_t queue_full = 0;
  };

  EventCorrelator() : EventCorrelator(Options{}) {}
  explicit EventCorrelator(Options options)
      : options_(options), filter_(options.spam_qps, options.spam_burst) {}

  // `event.metadata.name` is ignored; a new Event is named like client-go's:
  // <regarding name>.<hex nanoseconds of now>.
  Decision Correlate(const Event& event, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Series with occurrences not written yet whose series ended (nothing for `series_window`) or
  // whose last write is `series_refresh` old: each is marked written. Scans at most once a minute.
  std::vector<SeriesPatch> DueSeriesPatches(absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // The series' Event could not be patched (it expired: events have a TTL): the next occurrence
  // creates a new one.
  void Forget(const std::string& series_key) ABSL_LOCKS_EXCLUDED(mu_);
  Counters counters() const ABSL_LOCKS_EXCLUDED(mu_);
  // Series and similar-event groups held in memory (for tests: it stays bounded).
  size_t tracked() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Series {
    std::string namespace_, name;
    int32_t count = 1;
    int32_t written_count = 1;
    absl::Time last_observed, last_written;
  };
  struct SimilarNotes {
    absl::flat_hash_set<std::string> notes;
    absl::Time last;
  };
  const Options options_;
  EventSpamFilter filter_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Series> series_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, SimilarNotes> similar_ ABSL_GUARDED_BY(mu_);
  absl::Time last_scan_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  size_t prune_at_ ABSL_GUARDED_BY(mu_) = 8192;  // series_ + similar_ entries that trigger a scan
  Counters counters_ ABSL_GUARDED_BY(mu_);
};

// Records events.k8s.io/v1 Events through an EventCorrelator (series, aggregation, spam filter).
class EventRecorder {
 public:
  // The asynchronous writes go through a WriteLane (write_lane.h: a few in flight, the rest
  // queued) so that Events never crowd out the scheduler's own writes.
  EventRecorder(RestClient* client, std::string controller, std::string instance,
                EventCorrelator::Options options = {}, WriteLane::Options lane = {})
      : client_(client), controller_(std::move(controller)), instance_(std::move(instance)),
        correlator_(std::make_shared<EventCorrelator>(options)), lane_(WriteLane::Create(client, lane)) {}
  ~EventRecorder() { lane_->Close(); }
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // type: "Normal" or "Warning". Returns the Event as stored (or, when the occurrence was only
  // counted on its series, as known here), or ResourceExhausted when the spam filter dropped it.
  absl::StatusOr<Event> Record(const ObjectReference& regarding, const std::string& type,
                               const std::string& reason, const std::string& action,
                               const std::string& note, absl::Time now);
  // The same without waiting for the API server (best effort: a failure is only passed to
  // `done`, which may run on the transport thread; null: ignored). Also writes the series that
  // are due (EventCorrelator::DueSeriesPatches).
  void RecordAsync(const ObjectReference& regarding, const std::string& type, const std::string& reason,
                   const std::string& action, const std::string& note, absl::Time now,
                   std::function<void(absl::Status)> done = nullptr);

  // What the correlator decided so far (created, patched, counted, aggregated, dropped).
  EventCorrelator::Counters counters() const {
    EventCorrelator::Counters c = correlator_->counters();
    c.queue_full = lane_->counters().dropped;
    return c;
  }
  // Waits up to `timeout` for the Events still queued or in flight (WriteLane::Flush).
  bool Flush(absl::Duration timeout) { return lane_->Flush(timeout); }
  // The lane's: how many asynchronous writes were sent, refused (queue full) and waited at most.
  WriteLane::Counters lane_counters() const { return lane_->counters(); }

 private:
  Event MakeEvent(const ObjectReference& regarding, const std::string& type, const std::string& reason,
                  const std::string& action, const std::string& note, absl::Time now) const;
  static absl::Status Dropped(const ObjectReference& regarding, const std::string& reason);
  void PatchSeriesAsync(const std::string& ns, const std::string& name, const std::string& series_key,
                        int32_t count, absl::Time last_observed, std::function<void(absl::Status)> done);

  RestClient* client_;
  const std::string controller_, instance_;
  // Shared with the callbacks of writes in flight, which may outlive the recorder.
  std::shared_ptr<EventCorrelator> correlator_;
  std::shared_ptr<WriteLane> lane_;
};

}  // namespace onequeue::k8s

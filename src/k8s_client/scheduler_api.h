// The writes a scheduler makes, with the outcome of each as an absl::Status that says what to
// do next:
//   Bind          OK | Aborted (already bound / conflict: re-read the pod) | NotFound | ...
//   Evict         OK | FailedPrecondition "blocked by PodDisruptionBudget <name>" (do not retry
//                 until the budget allows) | NotFound (already gone) | ...
//   status patch  PodScheduled condition and status.nominatedNodeName (strategic merge patch)
//   Events        events.k8s.io/v1 with series: an event like one recorded within `window`
//                 bumps series.count with a patch instead of creating a new object
//   Leases        get/create/update with resourceVersion: a lost race is Aborted (409 Conflict)
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s_client/models.h"
#include "k8s_client/rate_limit.h"
#include "k8s_client/rest_client.h"

namespace onequeue::k8s {

// RFC 3339 with microseconds in UTC, as metav1.MicroTime prints ("2026-11-21T23:59:01.123456Z").
std::string FormatMicroTime(absl::Time t);
// RFC 3339 seconds in UTC, as metav1.Time prints.
std::string FormatRfc3339(absl::Time t);

class SchedulerApi {
 public:
  explicit SchedulerApi(RestClient* client) : client_(client) {}

  // POST pods/{name}/binding. `pod_uid` (optional) makes the server refuse a recreated pod.
  absl::Status Bind(const std::string& ns, const std::string& pod, const std::string& node,
                    const std::string& pod_uid = "");
  // Non-blocking variant for bulk binding (benchmarks, gangs): `done` runs on the transport thread.
  void BindAsync(const std::string& ns, const std::string& pod, const std::string& node,
                 std::function<void(absl::Status)> done, const std::string& pod_uid = "");

  // POST pods/{name}/eviction (policy/v1).
  absl::Status Evict(const std::string& ns, const std::string& pod,
                     std::optional<int64_t> grace_period_seconds = std::nullopt);

  // Sets the PodScheduled condition (status "False" with reason e.g. "Unschedulable", or "True")
  // and, when given, status.nominatedNodeName ("" clears it).
  absl::Status PatchPodScheduling(const std::string& ns, const std::string& pod,
                                  const Condition& pod_scheduled,
                                  std::optional<std::string> nominated_node_name, absl::Time now);

  absl::StatusOr<Lease> GetLease(const std::string& ns, const std::string& name);
  absl::StatusOr<Lease> CreateLease(const Lease& lease);
  // PUT with lease.metadata.resource_version: Aborted when someone else updated it first.
  absl::StatusOr<Lease> UpdateLease(const Lease& lease);

 private:
  RestClient* client_;
};

// Decides whether an event is new or the next occurrence of a series (pure logic: time is an
// argument). Keyed like client-go's event series: regarding object + reason + note + type +
// action + reporting controller.
class EventSeriesTracker {
 public:
  explicit EventSeriesTracker(absl::Duration window) : window_(window) {}
  struct Decision {
    bool create = true;       // create a new Event object named `name`
    std::string name;         // the Event object to create or patch
    int32_t series_count = 0; // when patching: the new series.count (>= 2)
  };
  // `proposed_name` is used when a new object is needed.
  Decision Observe(const Event& event, const std::string& proposed_name, absl::Time now);
  // Forget a series whose object could not be patched (e.g. it expired): the next one creates.
  void Forget(const Event& event);

 private:
  static std::string KeyOf(const Event& e);
  struct Series {
    std::string name;
    int32_t count = 1;
    absl::Time last;
  };
  const absl::Duration window_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Series> series_ ABSL_GUARDED_BY(mu_);
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

// Records events.k8s.io/v1 Events with series deduplication and a per-object spam filter.
class EventRecorder {
 public:
  EventRecorder(RestClient* client, std::string controller, std::string instance,
                absl::Duration window = absl::Minutes(6), EventSpamFilter* filter = nullptr)
      : client_(client), controller_(std::move(controller)), instance_(std::move(instance)),
        tracker_(window), filter_(filter ? filter : &own_filter_) {}

  // type: "Normal" or "Warning". Returns the Event object as stored, or ResourceExhausted when
  // the spam filter dropped it.
  absl::StatusOr<Event> Record(const ObjectReference& regarding, const std::string& type,
                               const std::string& reason, const std::string& action,
                               const std::string& note, absl::Time now);
  // The same without waiting for the API server (best effort: a failure is only passed to
  // `done`, which may run on the transport thread; null: ignored). Call from one thread, as Record.
  void RecordAsync(const ObjectReference& regarding, const std::string& type, const std::string& reason,
                   const std::string& action, const std::string& note, absl::Time now,
                   std::function<void(absl::Status)> done = nullptr);

 private:
  // The Event both Record and RecordAsync send (name and series left to the tracker).
  Event MakeEvent(const ObjectReference& regarding, const std::string& type, const std::string& reason,
                  const std::string& action, const std::string& note, absl::Time now) const;
  static std::string NameFor(const ObjectReference& regarding, absl::Time now);
  static absl::Status Dropped(const ObjectReference& regarding, const std::string& reason);

  RestClient* client_;
  const std::string controller_, instance_;
  EventSeriesTracker tracker_;
  EventSpamFilter own_filter_;
  EventSpamFilter* filter_;
};

}  // namespace onequeue::k8s

#pragma once
// A lane for best-effort writes (Events): at most `max_in_flight` of its requests are at the API
// server at once, the others wait in FIFO order, at most `max_queued` of them.
//
// Why: a scheduler's critical writes (reservation marks, victims' conditions and deletions,
// bindings) and its Events share one API server. A cycle that preempts for 99 pods asks ~300
// victims to leave and then has ~300 "Preempted" and ~100 "Scheduled" Events to write; sent all at
// once they are answered in 0.1-0.5 s each, as slowly as the deletions and bindings they compete
// with (docs/benchmarks.md, "After preempt3"). client-go's older core/v1 event broadcaster
// (tools/record) writes one Event at a time from one goroutine; the events.k8s.io/v1 one that
// kube-scheduler uses (tools/events) starts a goroutine per Event, bounded only by the client's
// rate limit; both drop Events past a queue of 1,000. This lane keeps a few in flight, so Events
// still reach users within seconds of the decision, and queues the rest behind the writes that
// decide when pods run.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s_client/rest_client.h"

namespace onequeue::k8s {

class WriteLane {
 public:
  using Done = std::function<void(absl::StatusOr<std::string>)>;
  struct Options {
    int max_in_flight = 8;
    size_t max_queued = 10000;
  };
  struct Counters {
    int64_t sent = 0;     // handed to the client
    int64_t dropped = 0;  // refused because the queue was full (done got ResourceExhausted)
    int64_t cancelled = 0;  // still queued when the lane closed (done got Cancelled)
    int peak_in_flight = 0;
    size_t peak_queued = 0;
  };

  // Submits through `client` (which must outlive the lane or its Close()).
  static std::shared_ptr<WriteLane> Create(RestClient* client, Options options);
  // Sent now when fewer than max_in_flight are in flight, queued otherwise; refused (done called
  // at once with ResourceExhausted) when max_queued wait already or the lane is closed.
  // `done` runs on the transport thread (or here, when refused) and must not block.
  void Submit(HttpRequest request, Done done);
  // Waits until nothing is queued or in flight, or `timeout` passes (then false): a stopping
  // daemon sends what it still holds before it closes the lane. Submits meanwhile are sent too.
  bool Flush(absl::Duration timeout);
  // Queued requests end with Cancelled; nothing is handed to the client after Close() returns
  // (it waits for a hand-over in progress on another thread). Requests in flight end as the
  // client ends them.
  void Close();
  Counters counters() const;

 private:
  struct Queued {
    HttpRequest request;
    Done done;
  };
  WriteLane(RestClient* client, Options options) : client_(client), options_(options) {}
  // Hands queued requests to the client while fewer than max_in_flight are in flight. One pump
  // at a time: an answer that arrives synchronously (inside DoAsync, e.g. a refused write) or on
  // another thread while a pump runs leaves the sending to that pump, so a long queue is sent by
  // a loop, never by recursion. Called and returns with mu_ held.
  void Pump() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Finished();

  RestClient* const client_;
  const Options options_;
  std::weak_ptr<WriteLane> self_;
  mutable absl::Mutex mu_;
  std::deque<Queued> queued_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool pumping_ ABSL_GUARDED_BY(mu_) = false;  // a Pump() is handing requests over (mu_ released meanwhile)
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  Counters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace onequeue::k8s

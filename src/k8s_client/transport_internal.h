// What both HttpTransport implementations (libcurl, nghttp2) share beyond the interface: the
// loop's waker, the cancellable stream handle, the queue of calls waiting for room on the wire,
// Retry-After parsing, how a request names its peer in errors, and epoll_wait's timeout.
// Internal to src/k8s_client.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "k8s_client/http_transport.h"

namespace onequeue::k8s::internal {

// Wakes a transport's loop from any thread: an eventfd in the loop's epoll set. Shared with the
// stream handles, so a Cancel() after the transport is gone writes to a still-open descriptor.
class Waker {
 public:
  Waker();
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;
  int fd() const { return fd_; }
  void Wake();
  void Drain();

 private:
  const int fd_;
};

struct StreamState {
  std::atomic<bool> cancelled{false};
};

// The handle OpenStream returns: Cancel() sets the flag and wakes the loop, which ends the stream.
class CancellableStream : public HttpStream {
 public:
  CancellableStream(std::shared_ptr<StreamState> state, std::shared_ptr<Waker> waker)
      : state_(std::move(state)), waker_(std::move(waker)) {}
  void Cancel() override;

 private:
  std::shared_ptr<StreamState> state_;
  std::shared_ptr<Waker> waker_;
};

// The calls other threads hand to a transport's loop: a list under a mutex, and the stop flag
// the destructor sets. `Call` is the transport's call type.
template <typename Call>
class Inbox {
 public:
  // False once Stop() was called: the call then stays with the caller.
  bool Push(std::unique_ptr<Call>& call) {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    calls_.push_back(std::move(call));
    return true;
  }
  void Stop() {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  // Everything pushed so far, into `out` (swapped with it); whether Stop() was called.
  bool Take(std::deque<std::unique_ptr<Call>>* out) {
    absl::MutexLock lock(&mu_);
    out->swap(calls_);
    return stopping_;
  }

 private:
  absl::Mutex mu_;
  std::deque<std::unique_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

// A call of either transport (fields request, on_response, on_chunk, on_done, stream) for
// SendAsync and OpenStream.
template <typename Call>
std::unique_ptr<Call> NewUnaryCall(HttpRequest request, HttpTransport::ResponseCallback done) {
  auto call = std::make_unique<Call>();
  call->request = std::move(request);
  call->on_response = std::move(done);
  return call;
}
template <typename Call>
std::unique_ptr<Call> NewStreamCall(HttpRequest request, HttpTransport::ChunkCallback on_chunk,
                                    HttpTransport::StreamDoneCallback on_done) {
  auto call = std::make_unique<Call>();
  call->request = std::move(request);
  call->on_chunk = std::move(on_chunk);
  call->on_done = std::move(on_done);
  call->stream = std::make_shared<StreamState>();
  return call;
}

// How a stream ends given its outcome: the transport error, OK for a 2xx answer, else the
// answer's status (its body parsed as a Status object).
absl::Status StreamEnd(const absl::StatusOr<HttpResponse>& result);

// Hands a call's outcome to its callback (a stream's through StreamEnd).
template <typename Call>
void Deliver(Call& call, absl::StatusOr<HttpResponse> result) {
  if (call.stream) call.on_done(StreamEnd(result));
  else call.on_response(std::move(result));
}

// The loud warning a transport logs when TLS verification is off.
void WarnIfInsecure(const TransportConfig& config);

// The value of a Retry-After header in its seconds form (an HTTP date is ignored).
std::optional<absl::Duration> ParseRetryAfter(absl::string_view value);

// "<peer_name> at <server><path> (unix socket <path>)", the parts the config has.
std::string Where(const TransportConfig& config, absl::string_view path);

// Milliseconds for epoll_wait until `due`: rounded up (waking early would spin until the
// deadline), -1 for never.
int WaitMillis(absl::Time due, absl::Time now);

// A new epoll set watching `waker` for EPOLLIN, its events carrying `tag`; `who` names the
// client in errors.
absl::StatusOr<int> NewEpollWithWaker(const Waker& waker, epoll_data_t tag, absl::string_view who);

// Unary calls waiting to go on the wire: due ones in FIFO order (urgent ones first), delayed ones
// (HttpRequest::not_before) in a heap by due time. Why a heap: the client's rate limiter delays
// calls, and scanning every delayed call on every turn was quadratic in the backlog. `Call` has
// `HttpRequest request`. Loop thread only.
template <typename Call>
class CallQueue {
 public:
  void Add(std::unique_ptr<Call> c, absl::Time now) {
    if (c->request.not_before > now) {
      delayed_.push(Delayed{c->request.not_before, next_sequence_++, std::move(c)});
    } else if (c->request.urgent) {
      ready_.push_front(std::move(c));
    } else {
      ready_.push_back(std::move(c));
    }
  }
  // Back to the head of the queue: a call that was given a connection but never went out.
  void PushFront(std::unique_ptr<Call> c) { ready_.push_front(std::move(c)); }
  // Moves the delayed calls due by `now` to the ready ones; returns when the next is due.
  absl::Time Promote(absl::Time now) {
    while (!delayed_.empty() && delayed_.top().due <= now) {
      // The heap's top is const; the call moves out before pop (the key fields stay valid).
      ready_.push_back(std::move(const_cast<Delayed&>(delayed_.top()).call));
      delayed_.pop();
    }
    return delayed_.empty() ? absl::InfiniteFuture() : delayed_.top().due;
  }
  bool HasReady() const { return !ready_.empty(); }
  std::unique_ptr<Call> PopReady() {
    std::unique_ptr<Call> c = std::move(ready_.front());
    ready_.pop_front();
    return c;
  }
  // Hands every queued call to `f` (shutdown).
  void DrainAll(const std::function<void(std::unique_ptr<Call>)>& f) {
    while (!ready_.empty()) f(PopReady());
    while (!delayed_.empty()) {
      f(std::move(const_cast<Delayed&>(delayed_.top()).call));
      delayed_.pop();
    }
  }

 private:
  struct Delayed {
    absl::Time due;
    uint64_t sequence;  // ties keep arrival order
    std::unique_ptr<Call> call;
    bool operator>(const Delayed& o) const { return due != o.due ? due > o.due : sequence > o.sequence; }
  };
  std::priority_queue<Delayed, std::vector<Delayed>, std::greater<>> delayed_;
  uint64_t next_sequence_ = 0;
  std::deque<std::unique_ptr<Call>> ready_;
};

}  // namespace onequeue::k8s::internal

#include "k8s_client/write_lane.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace onequeue::k8s {

std::shared_ptr<WriteLane> WriteLane::Create(RestClient* client, Options options) {
  options.max_in_flight = std::max(options.max_in_flight, 1);
  std::shared_ptr<WriteLane> lane(new WriteLane(client, options));
  lane->self_ = lane;
  return lane;
}

void WriteLane::Submit(HttpRequest request, Done done) {
  absl::MutexLock lock(&mu_);
  if (closed_ || queued_.size() >= options_.max_queued) {
    ++counters_.dropped;
    const bool closed = closed_;
    mu_.Unlock();
    done(absl::ResourceExhaustedError(closed ? std::string("write lane closed")
                                             : absl::StrCat("write lane full: ", options_.max_queued,
                                                            " writes wait already")));
    mu_.Lock();
    return;
  }
  queued_.push_back({std::move(request), std::move(done)});
  counters_.peak_queued = std::max(counters_.peak_queued, queued_.size());
  Pump();
}

void WriteLane::Pump() {
  if (pumping_) return;
  pumping_ = true;
  std::shared_ptr<WriteLane> self = self_.lock();
  while (!closed_ && !queued_.empty() && in_flight_ < options_.max_in_flight) {
    Queued q = std::move(queued_.front());
    queued_.pop_front();
    ++in_flight_;
    ++counters_.sent;
    counters_.peak_in_flight = std::max(counters_.peak_in_flight, in_flight_);
    mu_.Unlock();
    client_->DoAsync(std::move(q.request), [self, done = std::move(q.done)](absl::StatusOr<std::string> r) {
      done(std::move(r));
      self->Finished();
    });
    mu_.Lock();
  }
  pumping_ = false;
}

void WriteLane::Finished() {
  absl::MutexLock lock(&mu_);
  --in_flight_;
  Pump();
}

bool WriteLane::Flush(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto drained = [](WriteLane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lane->mu_) {
    return lane->queued_.empty() && lane->in_flight_ == 0;
  };
  return mu_.AwaitWithTimeout(absl::Condition(+drained, this), timeout);
}

void WriteLane::Close() {
  std::deque<Queued> cancelled;
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
    cancelled.swap(queued_);
    counters_.cancelled += static_cast<int64_t>(cancelled.size());
    // A pump on another thread may be inside DoAsync: the client is not used after this returns.
    mu_.Await(absl::Condition(
        +[](bool* pumping) { return !*pumping; }, &pumping_));
  }
  for (Queued& q : cancelled) q.done(absl::CancelledError("write lane closed before the write was sent"));
}

WriteLane::Counters WriteLane::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace onequeue::k8s

#pragma once
// Issue 26: several API requests in flight at once, answered before the caller goes on (the
// reservation marks and nominations of one cycle's preemptions, as its evictions go in waves).
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace onequeue::scheduler {

// Calls start(i, done) for i in [0, n) without waiting in between; Wait() then waits until every
// `done` has run (on any thread) and gives their answers, in the order of i. Issue 26: a cycle's
// nominations stay in flight while its victims are asked (PreemptionExecutor::Start).
template <typename Answer>
class InFlight {
 public:
  InFlight(size_t n, const std::function<void(size_t, std::function<void(Answer)>)>& start)
      : pending_(std::make_shared<Pending>()) {
    {
      absl::MutexLock lock(&pending_->mu);
      pending_->left = n;
      pending_->answers.resize(n, Answer(absl::UnknownError("not answered")));
    }
    for (size_t i = 0; i < n; ++i) {
      start(i, [pending = pending_, i](Answer a) {
        absl::MutexLock lock(&pending->mu);
        pending->answers[i] = std::move(a);
        --pending->left;
      });
    }
  }
  std::vector<Answer> Wait() {
    absl::MutexLock lock(&pending_->mu);
    pending_->mu.Await(absl::Condition(+[](size_t* left) { return *left == 0; }, &pending_->left));
    return std::move(pending_->answers);
  }

 private:
  struct Pending {
    absl::Mutex mu;
    size_t left ABSL_GUARDED_BY(mu) = 0;
    std::vector<Answer> answers ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<Pending> pending_;
};

// Calls start(i, done) for i in [0, n) without waiting in between, then waits until every `done`
// has run (on any thread); their answers, in the order of i.
template <typename Answer>
std::vector<Answer> AllAnswered(size_t n, const std::function<void(size_t, std::function<void(Answer)>)>& start) {
  return InFlight<Answer>(n, start).Wait();
}

}  // namespace onequeue::scheduler

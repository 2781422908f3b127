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

// Calls start(i, done) for i in [0, n) without waiting in between, then waits until every `done`
// has run (on any thread); their answers, in the order of i.
template <typename Answer>
std::vector<Answer> AllAnswered(size_t n, const std::function<void(size_t, std::function<void(Answer)>)>& start) {
  struct Pending {
    absl::Mutex mu;
    size_t left ABSL_GUARDED_BY(mu) = 0;
    std::vector<Answer> answers ABSL_GUARDED_BY(mu);
  };
  auto pending = std::make_shared<Pending>();
  {
    absl::MutexLock lock(&pending->mu);
    pending->left = n;
    pending->answers.resize(n, Answer(absl::UnknownError("not answered")));
  }
  for (size_t i = 0; i < n; ++i) {
    start(i, [pending, i](Answer a) {
      absl::MutexLock lock(&pending->mu);
      pending->answers[i] = std::move(a);
      --pending->left;
    });
  }
  absl::MutexLock lock(&pending->mu);
  pending->mu.Await(absl::Condition(+[](size_t* left) { return *left == 0; }, &pending->left));
  return std::move(pending->answers);
}

}  // namespace onequeue::scheduler

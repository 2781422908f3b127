// PreemptionExecutor's step 2 for pods: the victims of a cycle's preemptions asked to leave, in
// waves (preemption_executor.h).
#include "scheduler/preemption_executor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

// After a refused eviction (PodDisruptionBudget), the same preemption is not tried again for this
// long: the budget changes when pods become ready or leave, rarely within seconds, and every try
// writes the reservation and calls the Eviction API.
constexpr queue::Time kBlockedPreemptionRetrySeconds = 30;

}  // namespace

size_t PreemptionExecutor::WaveOf(const PlannedEvictions& p, size_t k) {
  // Issue 26: a preemption whose victims are all deleted (no budget covers any) asks them all in
  // the first wave, as kube-scheduler deletes a preemption's victims at once: a DELETE is refused
  // only by a failure (no budget to spare the next victim), and one wave per victim made the third
  // victim of every preemption wait for two round trips (condition and DELETE) of the first two.
  for (VictimRemoval r : p.removals) {
    if (r != VictimRemoval::kDelete) return k;
  }
  return 0;
}

std::vector<absl::Status> PreemptionExecutor::SendWave(const std::vector<PlannedEvictions>& evictions,
                                                       const std::vector<std::pair<size_t, size_t>>& members) {
  struct Wave {
    absl::Mutex mu;
    int left ABSL_GUARDED_BY(mu) = 0;
    std::vector<absl::Status> results ABSL_GUARDED_BY(mu);
  };
  auto wave = std::make_shared<Wave>();
  {
    absl::MutexLock lock(&wave->mu);
    wave->left = static_cast<int>(members.size());
    wave->results.resize(members.size());
  }
  for (size_t m = 0; m < members.size(); ++m) {
    const PlannedEvictions& p = evictions[members[m].first];
    const size_t k = members[m].second;
    auto done = [wave, m](absl::Status s) {
      absl::MutexLock lock(&wave->mu);
      wave->results[m] = std::move(s);
      --wave->left;
    };
    if (p.removals[k] == VictimRemoval::kDelete) {
      // kube-scheduler's words, for whoever reads the victim's conditions.
      actions_->StartDeleteVictim(p.pod_keys[k], p.preemptor,
                                  absl::StrCat(config_.scheduler_name, ": preempting to accommodate a higher priority ",
                                               SlurmJobOf(p.preemptor) ? "Slurm job" : "pod"),
                                  std::move(done));
    } else {
      actions_->StartEvict(p.pod_keys[k], p.preemptor, absl::StrCat("Preempted by ", p.preemptor, " (higher priority)"),
                           std::move(done));
    }
  }
  absl::MutexLock lock(&wave->mu);
  wave->mu.Await(absl::Condition(
      +[](int* left) { return *left == 0; }, &wave->left));
  return wave->results;
}

void PreemptionExecutor::EvictInWaves(std::vector<PlannedEvictions>* evictions, const PreemptionCycle& c) {
  // Why waves: an eviction costs the apiserver a PodDisruptionBudget lookup (~90 ms each in the
  // issue-12 preemption benchmark); one after another, 300 victims held a cycle 30 s. Why not
  // every victim at once: a preemption stops at its first refusal, so a budget that refuses B
  // spares C (the planner chooses sets the budgets allow; a refusal is a race with a change).
  // The k-th wave: the k-th victim of every preemption still going (WaveOf).
  for (size_t k = 0;; ++k) {
    std::vector<std::pair<size_t, size_t>> members;  // (index into *evictions, pod index)
    bool later = false;
    for (size_t i = 0; i < evictions->size(); ++i) {
      const PlannedEvictions& p = (*evictions)[i];
      for (size_t j = 0; j < p.pod_keys.size() && !p.refused; ++j) {
        const size_t wave = WaveOf(p, j);
        if (wave == k) members.emplace_back(i, j);
        later = later || wave > k;
      }
    }
    if (members.empty() && !later) break;
    const std::vector<absl::Status> results = SendWave(*evictions, members);
    for (size_t m = 0; m < members.size(); ++m) {
      PlannedEvictions& p = (*evictions)[members[m].first];
      const size_t j = members[m].second;
      const std::string& pod_key = p.pod_keys[j];
      const absl::Status& s = results[m];
      if (!s.ok() && !absl::IsNotFound(s)) {
        if (!p.refused) {  // once, for the first of its victims refused
          RollBack(p.preemptor, c, c.now + kBlockedPreemptionRetrySeconds,
                   absl::StrCat("preemption rolled back, ", p.removals[j] == VictimRemoval::kDelete ? "deletion" : "eviction",
                                " of ", pod_key, " refused: ", s.message(), "; retrying in ",
                                kBlockedPreemptionRetrySeconds, "s"));
        }
        p.refused = true;
        continue;
      }
      if (s.ok()) actions_->EvictSucceeded(pod_key, p.preemptor, absl::StrCat("Preempted by ", p.preemptor, " (higher priority)"));
      evicted_pods_.insert(pod_key);
      ++c.stats->evictions;
      Fail(c.stats->evictions == 1 ? "preempt-after-first-eviction" : "preempt-after-next-eviction");
    }
  }
  for (const PlannedEvictions& planned : *evictions) {
    if (planned.refused) continue;
    Preemption& p = records_.at(planned.preemptor);
    p.victims_asked = true;
    p.blocked_message.clear();
    asked_now_.insert(planned.preemptor);
    if (p.retries.empty()) Move(planned.preemptor, p, PreemptionEvent::kVictimsAsked);
  }
}

}  // namespace onequeue::scheduler

#include "scheduler/usage_accounting.h"

#include <algorithm>

#include "scheduler/slurm_world.h"

namespace onequeue::scheduler {

void UsageAccounting::Charge(const BuiltSnapshot& built, const slurm::SlurmView* slurm_view, queue::Time now) {
  std::set<std::string> seen;
  for (const auto& r : built.snapshot->running) {
    if (r.kind != queue::WorkloadKind::kPodGroup) continue;
    double cores = 0;
    for (const auto& a : r.allocations) cores += static_cast<double>(a.used[queue::kCpu]) / 1000.0;
    running_[r.id] = {r.account, r.start_time, cores};
    seen.insert(r.id);
  }
  for (auto it = running_.begin(); it != running_.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    const double seconds = static_cast<double>(std::max<queue::Time>(0, now - it->second.start));
    if (seconds > 0 && it->second.cores > 0) usage_.records.push_back({it->second.account, now, seconds * it->second.cores});
    it = running_.erase(it);
  }
  if (slurm_view != nullptr) ChargeJobs(*slurm_view);
  const queue::Time horizon = now - 10 * half_life_;
  std::erase_if(usage_.records, [&](const queue::UsageRecord& r) { return r.time < horizon; });
}

void UsageAccounting::ChargeJobs(const slurm::SlurmView& view) {
  std::set<uint32_t> still_listed;
  for (const auto& [id, job] : *view.jobs) {
    if (!slurm::IsFinished(job.state) || job.start_time == absl::InfinitePast() ||
        job.end_time == absl::InfinitePast() || IsPlaceholderJob(job, reclaim_partition_, identity_)) {
      continue;
    }
    still_listed.insert(id);
    if (!charged_jobs_.insert(id).second) continue;
    const double seconds = absl::ToDoubleSeconds(job.end_time - job.start_time);
    if (seconds > 0 && job.cpus > 0) {
      usage_.records.push_back({job.account.empty() ? "slurm" : job.account, absl::ToUnixSeconds(job.end_time),
                                seconds * job.cpus});
    }
  }
  // Slurm forgets finished jobs after MinJobAge: so does the set.
  std::erase_if(charged_jobs_, [&](uint32_t id) { return !still_listed.count(id); });
}

bool UsageAccounting::Learn(const queue::Snapshot& snapshot) {
  bool grew = false;
  auto learn = [&](const std::string& account) {
    if (!account.empty() && learned_.insert(account).second) grew = true;
  };
  for (const auto& w : snapshot.pending) learn(w.account);
  for (const auto& r : snapshot.running) learn(r.account);
  for (const auto& u : usage_.records) learn(u.account);
  return grew;
}

std::vector<queue::Account> UsageAccounting::LearnedAccounts() const {
  std::vector<queue::Account> out;
  for (const std::string& a : learned_) out.push_back({a, "", 1});
  return out;
}

}  // namespace onequeue::scheduler

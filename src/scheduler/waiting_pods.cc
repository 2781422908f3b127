#include "scheduler/waiting_pods.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

std::string JobNumber(std::string_view workload) {
  return std::string(workload.substr(std::string_view(kSlurmIdPrefix).size()));
}

// The Slurm jobs on the nodes the plan holds for `w` (started this cycle, running, or holding a
// reservation of their own).
std::vector<std::string> SlurmJobsAhead(const queue::WaitingStatus& w, const queue::Plan& plan,
                                        const BuiltSnapshot& built) {
  std::set<queue::NodeIndex> nodes;
  for (const auto& r : plan.reservations) {
    if (r.workload == w.workload) nodes.insert(r.member_nodes.begin(), r.member_nodes.end());
  }
  for (const auto& p : plan.preemptions) {
    if (p.preemptor == w.workload) nodes.insert(p.member_nodes.begin(), p.member_nodes.end());
  }
  std::vector<std::string> jobs;
  const auto& snap_nodes = built.snapshot->nodes;
  for (const auto& start : plan.starts) {  // started in this very cycle: not running yet
    if (!SlurmJobOf(start.workload)) continue;
    for (queue::NodeIndex n : start.member_nodes) {
      if (!nodes.count(n)) continue;
      jobs.push_back(absl::StrCat("Slurm job ", JobNumber(start.workload), " on ", snap_nodes[n].name));
      break;
    }
  }
  for (const auto& r : built.snapshot->running) {
    if (r.kind != queue::WorkloadKind::kSlurmJob) continue;
    for (const auto& a : r.allocations) {
      if (!nodes.count(a.node)) continue;
      jobs.push_back(absl::StrCat("Slurm job ", JobNumber(r.id), " on ", snap_nodes[a.node].name));
      // Issue 25: on a same-tenant node the job's tenant may be all that stands in the way.
      if (snap_nodes[a.node].same_tenant) {
        absl::StrAppend(&jobs.back(), " (tenant ", r.tenant, "'s; ", snap_nodes[a.node].name,
                        " is shared only within one tenant)");
      }
      break;
    }
  }
  for (queue::NodeIndex n : nodes) {
    const queue::NodeOwner& owner = snap_nodes[n].owner;
    if (owner.kind == queue::OwnerKind::kReserved && owner.reserved_for != w.workload &&
        SlurmJobOf(owner.reserved_for)) {
      jobs.push_back(absl::StrCat("Slurm job ", JobNumber(owner.reserved_for), " holds ", snap_nodes[n].name));
    }
  }
  return jobs;
}

}  // namespace

WaitReport ExplainWait(const queue::WaitingStatus& w, const queue::Plan& plan, const BuiltSnapshot& built,
                       const SlurmRecords& slurm, const std::string* blocked) {
  WaitReport report{queue::WaitReasonName(w.reason), std::string(w.Message()), w.queue_position,
                    w.estimated_start};
  // A refused preemption: the plan still says "preempting", but what the user must know is
  // that it was refused; the capacity is what is missing.
  if (blocked != nullptr) {
    report.reason = queue::WaitReasonName(queue::WaitReason::kResources);
    report.message = *blocked;
    report.estimated_start.reset();
    return report;
  }
  // A gang some of whose members are bound already (a binding of the group failed, or a member
  // was made again): the planner counts only the pending members, so say what runs.
  if (w.reason == queue::WaitReason::kGangIncomplete) {
    if (auto bound = built.running_pods.find(w.workload); bound != built.running_pods.end()) {
      absl::StrAppend(&report.message, "; ", bound->second.pod_keys.size(),
                      " more already bound: the rest of the group is placed when the missing members exist");
    }
  }
  if (slurm.running.empty() && slurm.pending.empty()) return report;
  // Waiting behind the Slurm world: name the jobs, as users of both worlds ask "behind what?".
  const std::vector<std::string> jobs = SlurmJobsAhead(w, plan, built);
  if (!jobs.empty()) absl::StrAppend(&report.message, "; behind ", absl::StrJoin(jobs, ", "));
  return report;
}

void WaitingPods::Write(const std::vector<std::string>& pod_keys, const WaitReport& report, CycleStats* stats) {
  WaitReport shown = report;
  std::string fingerprint;
  for (const auto& key : pod_keys) {
    ShownWait& last = last_[key];
    const std::optional<queue::Time> estimate =
        StableEstimate(last.estimated_start, report.estimated_start, ShownEstimateStep(resolution_));
    if (fingerprint.empty() || estimate != shown.estimated_start) {
      shown.estimated_start = estimate;
      fingerprint = WaitFingerprint(shown);
    }
    if (last.fingerprint == fingerprint) continue;
    // OK means sent (a write may still be in flight: a failed one comes back from
    // TakeFailedReports and is written again).
    if (actions_->ReportWaiting(key, shown).ok()) {
      last = {fingerprint, shown.estimated_start};
      ++stats->reported;
    }
  }
}

std::optional<WaitReport> WaitingPods::Unshown(const std::string& pod_key, const WaitReport& report) const {
  auto last = last_.find(pod_key);
  WaitReport shown = report;
  shown.estimated_start =
      StableEstimate(last == last_.end() ? std::nullopt : last->second.estimated_start, report.estimated_start,
                     ShownEstimateStep(resolution_));
  if (last != last_.end() && last->second.fingerprint == WaitFingerprint(shown)) return std::nullopt;
  return shown;
}

void WaitingPods::Sent(const std::string& pod_key, const WaitReport& shown, CycleStats* stats) {
  last_[pod_key] = {WaitFingerprint(shown), shown.estimated_start};
  ++stats->reported;
}

void WaitingPods::Forget(const std::string& pod_key) {
  last_.erase(pod_key);
  actions_->ForgetWaiting(pod_key);
}

size_t WaitingPods::RewriteFailed() {
  const std::vector<std::string> failed = actions_->TakeFailedReports();
  for (const std::string& key : failed) last_.erase(key);
  return failed.size();
}

void WaitingPods::KeepOnly(const std::set<std::string_view>& pending) {
  for (auto it = last_.begin(); it != last_.end();) {
    if (pending.count(it->first)) {
      ++it;
      continue;
    }
    actions_->ForgetWaiting(it->first);
    it = last_.erase(it);
  }
}

}  // namespace onequeue::scheduler

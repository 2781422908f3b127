#include "scheduler/scheduling_loop.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace onequeue::scheduler {
namespace {

constexpr const char* kReservedPrefix = "reserved/";
// After a refused eviction (PodDisruptionBudget), the same preemption is not tried again for this
// long: the budget changes when pods become ready or leave, rarely within seconds, and every try
// writes the reservation and calls the Eviction API.
constexpr queue::Time kBlockedPreemptionRetrySeconds = 30;

std::string DescribePriority(const queue::PriorityBreakdown& p) {
  return absl::StrFormat("priority %.1f (age %.2f, fair-share %.2f, size %.2f, partition %.2f, qos %.2f)",
                         p.total, p.age, p.fair_share, p.job_size, p.partition, p.qos);
}

}  // namespace

queue::QueueConfig ToQueueConfig(const Config& config) {
  queue::QueueConfig q;
  const auto& w = config.queue.weights;
  auto weight = [&w](const char* name, double fallback) {
    auto it = w.find(name);
    return it == w.end() ? fallback : it->second;
  };
  q.weights.age = weight("age", q.weights.age);
  q.weights.fair_share = weight("fairShare", q.weights.fair_share);
  q.weights.job_size = weight("size", q.weights.job_size);
  q.weights.partition = weight("partition", q.weights.partition);
  q.weights.qos = weight("qos", q.weights.qos);
  for (const auto& c : config.queue.qos) {
    queue::QosPolicy p;
    p.name = c.name;
    p.priority = c.priority;
    p.preemptible = c.preemptible;
    p.grace_time = c.grace_seconds;
    if (c.can_preempt) {
      // canPreempt: true means "every preemptible QOS of lower priority", like Slurm's Preempt=
      // listing all lower QOS.
      for (const auto& other : config.queue.qos) {
        if (other.name != c.name && other.priority < c.priority && other.preemptible) {
          p.can_preempt.push_back(other.name);
        }
      }
    }
    q.qos.push_back(std::move(p));
  }
  q.reservation_depth = config.queue.reservation_depth;
  q.resolution = config.queue.resolution_seconds;
  q.window = config.queue.window_seconds;
  return q;
}

SchedulingLoop::SchedulingLoop(const Config& config, const ClusterView* view, ClusterActions* actions)
    : config_(config), view_(view), actions_(actions), planner_(ToQueueConfig(config), &preemption_) {}

void SchedulingLoop::ForgetConfirmedAssumptions(const std::vector<k8s::Pod>& pods) {
  std::map<std::string, const k8s::Pod*> by_key;
  for (const auto& p : pods) by_key[p.metadata.Key()] = &p;
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    auto p = by_key.find(it->first);
    // Confirmed (the informer shows the binding) or gone: the assumption has done its job.
    if (p == by_key.end() || !p->second->node_name.empty()) it = assumed_.erase(it);
    else ++it;
  }
  for (auto it = evicted_.begin(); it != evicted_.end();) {
    if (!by_key.count(*it)) it = evicted_.erase(it);
    else ++it;
  }
}

void SchedulingLoop::ReleaseFinishedReservations(const BuiltSnapshot& built, CycleStats* stats) {
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    // The preemptor no longer waits (bound, or deleted): the reservation has done its job.
    if (built.pending_pods.count(it->second)) {
      ++it;
      continue;
    }
    const std::string preemptor = it->second;
    if (actions_->SetNodeOwner(it->first, "").ok()) {
      it = reservations_.erase(it);
      evicting_.erase(preemptor);
    } else {
      ++it;
    }
  }
  for (auto it = blocked_.begin(); it != blocked_.end();) {
    if (built.pending_pods.count(it->first)) ++it;
    else it = blocked_.erase(it);
  }
}

void SchedulingLoop::RollBack(const std::string& preemptor, const BuiltSnapshot& built, CycleStats* stats) {
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (it->second == preemptor) {
      (void)actions_->SetNodeOwner(it->first, "");
      it = reservations_.erase(it);
    } else {
      ++it;
    }
  }
  // The nomination is part of step 1: a rolled-back preemptor is nominated nowhere.
  if (auto pods = built.pending_pods.find(preemptor); pods != built.pending_pods.end()) {
    for (const auto& key : pods->second.pod_keys) (void)actions_->Nominate(key, "");
  }
  evicting_.erase(preemptor);
  ++stats->rollbacks;
}

void SchedulingLoop::StartPreemption(const queue::PreemptDecision& d, const BuiltSnapshot& built,
                                     const std::set<std::string>& terminating, queue::Time now,
                                     CycleStats* stats) {
  if (evicting_.count(d.preemptor)) return;  // already under way: each victim is evicted once
  if (auto b = blocked_.find(d.preemptor); b != blocked_.end() && now < b->second.retry_at) return;
  const auto& nodes = built.snapshot->nodes;
  auto pods = built.pending_pods.find(d.preemptor);
  if (pods == built.pending_pods.end()) return;
  // 1. Reserve, durably, before anything is evicted. Written even when reservations_ already has
  // it (recovered after a restart, or read back from a lagging informer after a rollback): the
  // write is idempotent and the only proof that the mark is on the node.
  std::set<std::string> node_names;
  for (queue::NodeIndex n : d.member_nodes) node_names.insert(nodes[n].name);
  for (const auto& name : node_names) {
    if (!actions_->SetNodeOwner(name, kReservedPrefix + d.preemptor).ok()) {
      RollBack(d.preemptor, built, stats);
      return;
    }
    reservations_[name] = d.preemptor;
  }
  for (size_t i = 0; i < pods->second.pod_keys.size() && i < d.member_nodes.size(); ++i) {
    (void)actions_->Nominate(pods->second.pod_keys[i], nodes[d.member_nodes[i]].name);
  }
  ++stats->preemptions_started;
  // 2. Evict each victim once. A refusal (PDB) aborts the whole step.
  for (const auto& victim : d.victims) {
    auto vp = built.running_pods.find(victim);
    if (vp == built.running_pods.end()) continue;
    for (const auto& pod_key : vp->second.pod_keys) {
      // Already leaving (evicted by a predecessor that crashed, or deleted): not evicted again.
      if (evicted_.count(pod_key) || terminating.count(pod_key)) continue;
      absl::Status s = actions_->Evict(pod_key, d.preemptor,
                                       absl::StrCat("Preempted by ", d.preemptor, " (higher priority)"));
      if (!s.ok() && !absl::IsNotFound(s)) {
        RollBack(d.preemptor, built, stats);
        blocked_[d.preemptor] = {now + kBlockedPreemptionRetrySeconds,
                                 absl::StrCat("preemption rolled back, eviction of ", pod_key, " refused: ",
                                              s.message(), "; retrying in ", kBlockedPreemptionRetrySeconds, "s")};
        return;
      }
      evicted_.insert(pod_key);
      ++stats->evictions;
    }
  }
  evicting_.insert(d.preemptor);
  blocked_.erase(d.preemptor);
  // 3. Bind happens in a later cycle, when the victims are gone and the plan starts P there.
}

WaitReport SchedulingLoop::ReportFor(const queue::WaitingStatus& w) const {
  WaitReport report{queue::WaitReasonName(w.reason), std::string(w.Message()), w.queue_position,
                    w.estimated_start};
  // A refused preemption: the plan still says "preempting", but what the user must know is
  // that a budget refused it; the capacity is what is missing.
  if (auto b = blocked_.find(w.workload); b != blocked_.end()) {
    report.reason = queue::WaitReasonName(queue::WaitReason::kResources);
    report.message = b->second.message;
    report.estimated_start.reset();
  }
  return report;
}

CycleStats SchedulingLoop::RunCycle(queue::Time now) {
  CycleStats stats;
  const std::vector<k8s::Pod> pods = view_->Pods();
  const std::vector<k8s::Node> nodes = view_->Nodes();
  ForgetConfirmedAssumptions(pods);
  std::set<std::string> terminating;
  for (const auto& p : pods) {
    if (!p.metadata.deletion_timestamp.empty()) terminating.insert(p.metadata.Key());
  }
  // Reservations are recovered from what step 1 wrote, so a restarted or newly elected scheduler
  // finishes (or rolls back) what its predecessor began.
  for (const auto& n : nodes) {
    auto it = n.metadata.annotations.find(kOwnerAnnotation);
    if (it != n.metadata.annotations.end() && it->second.rfind(kReservedPrefix, 0) == 0) {
      reservations_[n.metadata.name] = it->second.substr(std::string(kReservedPrefix).size());
    }
  }

  SnapshotOptions options;
  options.scheduler_name = config_.scheduler_name;
  options.pool_label = config_.pool_label;
  for (const auto& q : config_.queue.qos) options.known_qos.push_back(q.name);
  options.assumed_bindings = assumed_;
  BuiltSnapshot built = BuildSnapshot(nodes, pods, options, now);
  stats.pending = static_cast<int>(built.snapshot->pending.size());
  ReleaseFinishedReservations(built, &stats);

  const queue::Plan plan = planner_.PlanCycle(built.snapshot, now);
  std::map<std::string, size_t> pending_index;
  for (size_t i = 0; i < built.snapshot->pending.size(); ++i) pending_index[built.snapshot->pending[i].id] = i;

  for (const auto& start : plan.starts) {
    auto pods_of = built.pending_pods.find(start.workload);
    if (pods_of == built.pending_pods.end()) continue;
    const auto& keys = pods_of->second.pod_keys;
    auto index = pending_index.find(start.workload);
    const std::string why = index == pending_index.end() ? "" : DescribePriority(plan.priorities[index->second]);
    for (size_t i = 0; i < keys.size() && i < start.member_nodes.size(); ++i) {
      const std::string& node = built.snapshot->nodes[start.member_nodes[i]].name;
      absl::Status s = actions_->Bind(keys[i], node,
                                      absl::StrCat("Successfully assigned ", keys[i], " to ", node, " by onequeue; ",
                                                   why, start.backfilled ? "; backfilled" : ""));
      if (s.ok()) {
        assumed_[keys[i]] = node;
        last_report_.erase(keys[i]);
        ++stats.bound;
      } else {
        ++stats.bind_errors;
      }
    }
  }

  for (const auto& p : plan.preemptions) StartPreemption(p, built, terminating, now, &stats);

  for (const auto& w : plan.waiting) {
    auto pods_of = built.pending_pods.find(w.workload);
    if (pods_of == built.pending_pods.end()) continue;
    ++stats.waiting;
    const WaitReport report = ReportFor(w);
    const std::string fingerprint = absl::StrCat(report.reason, "|", report.message, "|", report.queue_position,
                                                 "|", report.estimated_start.value_or(-1));
    for (const auto& key : pods_of->second.pod_keys) {
      auto& last = last_report_[key];
      if (last == fingerprint) continue;
      if (actions_->ReportWaiting(key, report).ok()) {
        last = fingerprint;
        ++stats.reported;
      }
    }
  }
  return stats;
}

}  // namespace onequeue::scheduler

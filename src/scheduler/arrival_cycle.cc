// SchedulingLoop's arrival cycles (issue 12): between full cycles, new single-pod workloads are
// planned alone with QueuePlanner::OnArrival, when nothing else changed or is under way.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "queue/priority.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

bool SameEligibility(const queue::Eligibility& x, const queue::Eligibility& y) {
  if (x.node_selector != y.node_selector || x.allowed_nodes != y.allowed_nodes ||
      x.required_affinity.size() != y.required_affinity.size() || x.tolerations.size() != y.tolerations.size() ||
      x.node_affinity_terms != y.node_affinity_terms) {
    return false;
  }
  for (size_t i = 0; i < x.required_affinity.size(); ++i) {
    const queue::LabelRequirement& r = x.required_affinity[i];
    const queue::LabelRequirement& q = y.required_affinity[i];
    if (r.key != q.key || r.op != q.op || r.values != q.values) return false;
  }
  for (size_t i = 0; i < x.tolerations.size(); ++i) {
    const queue::Toleration& t = x.tolerations[i];
    const queue::Toleration& u = y.tolerations[i];
    if (t.key != u.key || t.op != u.op || t.value != u.value || t.effect != u.effect) return false;
  }
  return true;
}

// True when two records of one pod schedule alike: what changed between them (its status, a
// kubelet's conditions, onequeue's own waiting annotations) is nothing a snapshot reads.
bool SchedulesAlike(const PodRecord& a, const PodRecord& b) {
  if (!SameEligibility(a.eligibility, b.eligibility)) return false;
  return a.key == b.key && a.uid == b.uid && a.node_name == b.node_name && a.scheduler_name == b.scheduler_name &&
         a.terminal == b.terminal && a.deleting == b.deleting && a.daemon == b.daemon && a.qos == b.qos &&
         a.account == b.account && a.time_limit == b.time_limit && a.group == b.group &&
         a.group_size == b.group_size && a.hold == b.hold && a.priority == b.priority && a.created == b.created &&
         a.bound == b.bound && a.active_deadline_seconds == b.active_deadline_seconds && a.requests == b.requests &&
         a.gated == b.gated && a.may_preempt == b.may_preempt && a.labels == b.labels && !HasInterPodRules(a) &&
         !HasInterPodRules(b) && a.unsupported_placement == b.unsupported_placement;
}

}  // namespace

const PodRecord* SchedulingLoop::RecordBefore(const std::string& key) {
  if (auto it = arrival_basis_.since.find(key); it != arrival_basis_.since.end()) return it->second.get();
  if (arrival_basis_.state == nullptr) return nullptr;
  if (arrival_basis_.by_key.empty()) {  // indexed once per full cycle, when a known pod changes
    arrival_basis_.by_key.reserve(arrival_basis_.state->pods.size());
    for (const auto& p : arrival_basis_.state->pods) arrival_basis_.by_key[p->key] = p.get();
  }
  auto it = arrival_basis_.by_key.find(key);
  return it == arrival_basis_.by_key.end() ? nullptr : it->second;
}

bool SchedulingLoop::RunArrivalCycle(queue::Time now, CycleStats* stats) {
  std::optional<KubeChanges> changes;
  if (!ArrivalCycleMayRun(now, stats, &changes)) return false;
  ArrivalChanges sorted;
  if (!SortChanges(*changes, &sorted)) return false;
  std::vector<Arrival> planned;
  if (!RankArrivals(sorted, now, &planned)) return false;
  // Planned all before anything is done: if one needs the full cycle, nothing was acted on.
  std::vector<queue::PlanDelta> deltas;
  if (!PlanArrivals(planned, now, &deltas)) return false;

  stats->incremental = true;
  for (const std::string& identity : sorted.confirmed) bindings_.Confirm(identity);
  for (auto& record : sorted.seen) arrival_basis_.since[record->key] = std::move(record);
  ActOnArrivals(planned, deltas, stats);
  // Whatever has landed already (all of it with synchronous actions) counts in this cycle.
  DrainBindResults(now, stats);
  stats->pending = static_cast<int>(arrival_basis_.snapshot->pending.size()) + arrival_basis_.waiting_arrivals;
  arrival_basis_.generation = changes->generation;
  MarkPhase("snapshot");
  MarkPhase("plan");
  MarkPhase("act");
  return true;
}

bool SchedulingLoop::ArrivalCycleMayRun(queue::Time now, CycleStats* stats, std::optional<KubeChanges>* changes) {
  const queue::Time every = config_.queue.full_cycle_seconds;
  if (every <= 0 || need_full_cycle_ || arrival_basis_.snapshot == nullptr || last_plan_ == nullptr ||
      now < arrival_basis_.at || now - arrival_basis_.at >= every) {
    return false;
  }
  // Under way, and the full cycle's to follow up: a preemption (nodes reserved, victims evicted, a
  // refused one), a node owner write the watch has not shown, a Slurm job onequeue started that
  // the poll has not shown, or any change of Slurm's since that cycle (SlurmUnchangedSinceBasis).
  if (!preemptions_.Idle() || owners_.HasUnshown() || lending_.HasAssumedStarts()) return false;
  if (slurm_ != nullptr && !SlurmUnchangedSinceBasis(now)) return false;
  // A node, a budget or a deletion changed the world the last plan was made in.
  *changes = view_->ChangesSince(arrival_basis_.generation);
  if (!*changes || (*changes)->others) return false;
  // A binding that failed gives its capacity back and its pod to the queue: the planner still
  // counts the pod as started, so only a full plan is right.
  DrainBindResults(now, stats);
  if (stats->bind_errors > 0) return false;
  return waiting_.RewriteFailed() == 0;  // the full cycle writes them again
}

// Issue 26, arrival cycles with Slurm on. The last full cycle planned the lending, the holds, the
// mirrors and the claims from one poll; while the poller's tables are still those (it shares a
// table it did not change), still fresh, and none of those steps is under way, that plan stands
// for Slurm's side and an arrival may be planned against it alone. Any new poll answer, a stale
// view, a mirror or a job claim in flight: the full cycle's.
bool SchedulingLoop::SlurmUnchangedSinceBasis(queue::Time now) const {
  const std::shared_ptr<const slurm::SlurmView>& basis = arrival_basis_.slurm;
  const std::shared_ptr<const slurm::SlurmView> polled = view_->Slurm();
  if (basis == nullptr || polled == nullptr || !lending_.Fresh(*polled, now)) return false;
  if (polled->jobs != basis->jobs || polled->nodes != basis->nodes || polled->partitions != basis->partitions ||
      polled->reservations != basis->reservations) {
    return false;
  }
  if (shares_nodes_ && !mirrors_rebuilt_) return false;
  if (!job_claims_.records().empty()) return false;
  for (const auto& [uid, r] : mirrors_.records()) {
    if (r.state != MirrorState::kBound && r.state != MirrorState::kDone && r.state != MirrorState::kUndone) {
      return false;
    }
  }
  return true;
}

bool SchedulingLoop::SortChanges(const KubeChanges& changes, ArrivalChanges* out) {
  // Every changed pod must be a new pending single-pod workload of this scheduler, a pod of
  // another scheduler that no snapshot counts (unbound), or one of our bindings showing up.
  for (const auto& record : changes.pods) {
    const PodRecord& pod = *record;
    const std::string identity(PodIdentity(pod));
    if (const PodRecord* before = RecordBefore(pod.key); before != nullptr && SchedulesAlike(*before, pod)) {
      continue;  // its status, or onequeue's own report on it
    }
    if (!pod.node_name.empty()) {
      const BindingTracker::Assumed* a = bindings_.Find(identity);
      if (a == nullptr || a->key != pod.key || a->node != pod.node_name || pod.terminal || pod.deleting) {
        return false;  // bound elsewhere, by someone else, or finished
      }
      out->confirmed.push_back(identity);
      out->seen.push_back(record);
      continue;
    }
    if (arrival_basis_.pending.count(pod.key) || bindings_.Find(identity) != nullptr) return false;  // a known pod changed
    // Unbound and not ours, or held back by scheduling gates: in no snapshot.
    if (pod.scheduler_name != config_.scheduler_name || pod.gated) continue;
    // A gang member (its group may be complete now), or a rule that reads the pods bound where.
    if (pod.terminal || pod.deleting || !pod.group.empty() || !pod.group_size.empty() ||
        HasInterPodRules(pod) || !pod.claims.empty()) {  // volumes: read over the whole snapshot
      return false;
    }
    out->arrivals.push_back(&pod);
    out->seen.push_back(record);
  }
  return true;
}

bool SchedulingLoop::RankArrivals(const ArrivalChanges& changes, queue::Time now, std::vector<Arrival>* planned) {
  // Each arrival as the full cycle's snapshot would make it, ranked on the last plan's clock (as
  // OnArrival ranks it).
  const SnapshotOptions options = PolicyOptions();
  const queue::Snapshot& basis = *arrival_basis_.snapshot;
  queue::ResourceNames names = basis.resource_names;
  queue::Resources pool_total;
  for (const queue::Node& n : basis.nodes) pool_total += n.allocatable;
  const queue::PriorityCalculator calculator(queue_config_, basis.usage, pool_total, arrival_basis_.at);
  // Inter-pod rules in play (some pod's anti-affinity, spread or affinity): an arrival may match
  // them or add to their counts, which only the full cycle reads (pod_placement.h).
  if (!basis.topologies.empty()) return false;
  for (const PodRecord* pod : changes.arrivals) {
    queue::PendingWorkload w = BuildPendingWorkload(pod->key, {pod}, options, &names, now);
    // An extended resource the snapshot has no slot for, or an account the planner does not know
    // yet (it is remade with it): the full cycle's.
    if (names.names.size() != basis.resource_names.names.size()) return false;
    if (config_.queue.accounts.empty() && !usage_.Knows(w.account)) return false;
    const queue::PriorityBreakdown priority = calculator.Compute(w);
    planned->push_back({pod, std::move(w), priority});
  }
  // In the order a full cycle visits them: the queue's, and once every reservation is made,
  // backfill candidates shortest first (all arrivals OnArrival answers are behind the last
  // reservation). The order matters when they compete for the same room.
  std::sort(planned->begin(), planned->end(), [](const Arrival& a, const Arrival& b) {
    return queue::ComesBefore({a.priority.total, a.workload.submit_time, &a.workload.id},
                              {b.priority.total, b.workload.submit_time, &b.workload.id});
  });
  if (queue_config_.backfill_shortest_first && queue_config_.backfill == queue::BackfillMode::kBackfill &&
      queue_config_.reservation_depth > 0 &&
      static_cast<int>(last_plan_->reservations.size()) >= queue_config_.reservation_depth) {
    auto duration = [](const Arrival& a) {
      return a.workload.time_limit ? std::max<queue::Duration>(1, *a.workload.time_limit) : queue::kForever;
    };
    std::stable_sort(planned->begin(), planned->end(),
                     [&](const Arrival& a, const Arrival& b) { return duration(a) < duration(b); });
  }
  return true;
}

bool SchedulingLoop::PlanArrivals(const std::vector<Arrival>& planned, queue::Time now,
                                  std::vector<queue::PlanDelta>* deltas) {
  for (const Arrival& a : planned) {
    absl::StatusOr<queue::PlanDelta> delta = planner_->OnArrival(a.workload, now);
    // Ahead of a reservation or a preemptor (needs_full_cycle), a reservation of its own (the next
    // full plan must keep it as a promise), nodes changing hands: the full cycle's.
    if (!delta.ok() || delta->needs_full_cycle || !delta->reservations.empty() || !delta->owner_changes.empty()) {
      return false;
    }
    // With Slurm on, only arrivals that start now on nodes Kubernetes holds whole: a pod on a
    // shared node is mirrored by a placeholder first, and a waiting pod's reason may name Slurm's
    // work (ExplainWait reads the Slurm records), both the full cycle's.
    if (slurm_ != nullptr && (delta->waiting || StartsOnASharedNode(*delta))) return false;
    deltas->push_back(*std::move(delta));
  }
  return true;
}

bool SchedulingLoop::StartsOnASharedNode(const queue::PlanDelta& delta) const {
  const queue::Snapshot& basis = *arrival_basis_.snapshot;
  for (const queue::StartDecision& start : delta.starts) {
    for (const queue::NodeIndex node : start.member_nodes) {
      if (shared_nodes_.count(basis.nodes[node].name)) return true;
    }
  }
  return false;
}

void SchedulingLoop::ActOnArrivals(const std::vector<Arrival>& planned, const std::vector<queue::PlanDelta>& deltas,
                                   CycleStats* stats) {
  const queue::Snapshot& basis = *arrival_basis_.snapshot;
  for (size_t i = 0; i < planned.size(); ++i) {
    const Arrival& a = planned[i];
    const queue::PlanDelta& delta = deltas[i];
    arrival_basis_.pending.insert(a.pod->key);
    for (const queue::StartDecision& start : delta.starts) {
      if (start.member_nodes.empty()) continue;
      const std::string& node = basis.nodes[start.member_nodes[0]].name;
      const std::string id(PodIdentity(*a.pod));
      if (bindings_.InFlight(id)) continue;
      SendBinding(id, a.pod->key, node,
                  absl::StrCat("Successfully assigned ", a.pod->key, " to ", node, " by onequeue; ",
                               DescribePriority(a.priority), start.backfilled ? "; backfilled" : ""));
    }
    if (!delta.waiting) continue;
    ++stats->waiting;
    ++arrival_basis_.waiting_arrivals;
    // What ExplainWait says: no refused preemption, partly bound gang or Slurm job is involved.
    // The position counts the workloads started since the full cycle as still ahead.
    const queue::WaitingStatus& w = *delta.waiting;
    waiting_.Write({a.pod->key},
                   WaitReport{queue::WaitReasonName(w.reason), std::string(w.Message()), w.queue_position,
                              w.estimated_start},
                   stats);
  }
}

}  // namespace onequeue::scheduler

#include "scheduler/scheduling_loop.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "spdlog/spdlog.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "queue/priority.h"
#include "slurm_bridge/ownership.h"

namespace onequeue::scheduler {
namespace {

constexpr const char* kReservedPrefix = "reserved/";
// A binding that succeeded but that the pod informer has not shown this long after is forgotten
// (kube-scheduler expires its assumed pods the same way): the pod is planned again from what the
// informer shows, and a second binding of a pod that is bound after all fails harmlessly (409).
constexpr queue::Time kAssumedBindingSeconds = 60;
// A reservation its preemptor still waiting cannot use (a gang member deleted after the
// evictions, requests that no longer fit there) is released after this long: long enough for a
// controller to make a deleted member again (the mark keeps the node meanwhile), short enough
// that no node stays reserved and idle for ever.
constexpr queue::Time kUnusableReservationSeconds = 60;
// A job onequeue started that Slurm has not shown running after this long is planned again.
constexpr queue::Time kAssumedStartSeconds = 120;
// The same fence is not asked for twice within this long (the poller shows it a poll later).
constexpr queue::Time kFenceRetrySeconds = 10;
bool IsKubernetesOwner(const std::string& v) { return v.empty() || v == kOwnerKubernetes; }
bool IsSlurmOwner(const std::string& v) { return v == kOwnerSlurm || absl::StartsWith(v, "slurm/"); }
// After a refused eviction (PodDisruptionBudget), the same preemption is not tried again for this
// long: the budget changes when pods become ready or leave, rarely within seconds, and every try
// writes the reservation and calls the Eviction API.
constexpr queue::Time kBlockedPreemptionRetrySeconds = 30;
// Issue 24 H2: a requeue or cancel that failed for a reason that passes (slurmrestd down, a
// timeout) is asked again after 5 s, 10 s, 20 s, ... up to a minute.
constexpr queue::Time kVictimRetrySeconds = 5;
constexpr queue::Time kVictimRetryMaxSeconds = 60;
// A preemption given up because Slurm will not requeue its victim (and policy forbids cancelling
// it) is not tried again for this long: the victim runs on, and every try drains its node.
constexpr queue::Time kUnrequeueableRetrySeconds = 300;
// Issue 24 M3: a Slurm view the poller has not refreshed for this long (or ten poll intervals,
// whichever is longer) is stale: nothing is decided from it.
constexpr queue::Time kStaleSlurmViewSeconds = 30;
bool IsTransient(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsAborted(s) || absl::IsResourceExhausted(s);
}

// The identity the loop's assumptions are kept under: the pod's UID, which a pod deleted and made
// again under the same name does not share (the name when there is none: tests' pods).
std::string_view PodIdentity(const PodRecord& pod) { return pod.uid.empty() ? pod.key : pod.uid; }

// True when two records of one pod schedule alike: what changed between them (its status, a
// kubelet's conditions, onequeue's own waiting annotations) is nothing a snapshot reads.
bool SchedulesAlike(const PodRecord& a, const PodRecord& b) {
  const queue::Eligibility& x = a.eligibility;
  const queue::Eligibility& y = b.eligibility;
  if (x.node_selector != y.node_selector || x.allowed_nodes != y.allowed_nodes ||
      x.required_affinity.size() != y.required_affinity.size() || x.tolerations.size() != y.tolerations.size()) {
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
  return a.key == b.key && a.uid == b.uid && a.node_name == b.node_name && a.scheduler_name == b.scheduler_name &&
         a.terminal == b.terminal && a.deleting == b.deleting && a.daemon == b.daemon && a.qos == b.qos &&
         a.account == b.account && a.time_limit == b.time_limit && a.group == b.group &&
         a.group_size == b.group_size && a.hold == b.hold && a.priority == b.priority && a.created == b.created &&
         a.bound == b.bound && a.active_deadline_seconds == b.active_deadline_seconds && a.requests == b.requests &&
         a.node_affinity_terms == b.node_affinity_terms && a.labels == b.labels && a.anti_affinity.empty() &&
         b.anti_affinity.empty() && a.unsupported_pod_affinity == b.unsupported_pod_affinity;
}

std::string DescribePriority(const queue::PriorityBreakdown& p) {
  return absl::StrFormat("priority %.1f (age %.2f, fair-share %.2f, size %.2f, partition %.2f, qos %.2f)",
                         p.total, p.age, p.fair_share, p.job_size, p.partition, p.qos);
}

}  // namespace

queue::QueueConfig ToQueueConfig(const Config& config) {
  queue::QueueConfig q;
  const auto& w = config.queue.weights;
  auto weight = [&w](const char* name) {
    auto it = w.find(name);
    return it == w.end() ? kDefaultWeights.at(name) : it->second;
  };
  q.weights.age = weight("age");
  q.weights.fair_share = weight("fairShare");
  q.weights.job_size = weight("size");
  q.weights.partition = weight("partition");
  q.weights.qos = weight("qos");
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
  for (const auto& a : config.queue.accounts) q.accounts.push_back({a.name, a.parent, a.shares});
  q.usage_half_life = config.queue.usage_half_life_seconds;
  q.reservation_depth = config.queue.reservation_depth;
  q.backfill_shortest_first = config.queue.backfill_shortest_first;
  q.resolution = config.queue.resolution_seconds;
  q.window = config.queue.window_seconds;
  return q;
}

SchedulingLoop::SchedulingLoop(const Config& config, const ClusterView* view, ClusterActions* actions,
                               SlurmActions* slurm, Failpoint failpoint)
    : config_(config),
      queue_config_(ToQueueConfig(config)),
      view_(view),
      actions_(actions),
      slurm_(slurm),
      failpoint_(std::move(failpoint)),
      planner_(std::make_unique<queue::QueuePlanner>(queue_config_, &preemption_)) {}

void SchedulingLoop::ChargeUsage(const BuiltSnapshot& built, const slurm::SlurmView* slurm_view, queue::Time now) {
  // Pods: charged when they stop running (cpu-seconds, like Slurm's TRES billing of cpus).
  std::set<std::string> seen;
  for (const auto& r : built.snapshot->running) {
    if (r.kind != queue::WorkloadKind::kPodGroup) continue;
    double cores = 0;
    for (const auto& a : r.allocations) cores += static_cast<double>(a.used[queue::kCpu]) / 1000.0;
    running_charges_[r.id] = {r.account, r.start_time, cores};
    seen.insert(r.id);
  }
  for (auto it = running_charges_.begin(); it != running_charges_.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    const double seconds = static_cast<double>(std::max<queue::Time>(0, now - it->second.start));
    if (seconds > 0 && it->second.cores > 0) usage_.records.push_back({it->second.account, now, seconds * it->second.cores});
    it = running_charges_.erase(it);
  }
  // Slurm jobs: charged once, when the poll shows them finished (cpus x run time).
  if (slurm_view != nullptr) {
    std::set<uint32_t> still_listed;
    for (const auto& [id, job] : *slurm_view->jobs) {
      if (!slurm::IsFinished(job.state) || job.start_time == absl::InfinitePast() ||
          job.end_time == absl::InfinitePast() || IsPlaceholderJob(job, config_.slurm.reclaim_partition)) {
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
    for (auto it = charged_jobs_.begin(); it != charged_jobs_.end();) {
      if (still_listed.count(*it)) ++it;
      else it = charged_jobs_.erase(it);
    }
  }
  // Records older than ten half-lives weigh less than 0.1 %: dropped.
  const queue::Time horizon = now - 10 * queue_config_.usage_half_life;
  std::erase_if(usage_.records, [&](const queue::UsageRecord& r) { return r.time < horizon; });
}

void SchedulingLoop::LearnAccounts(const queue::Snapshot& snapshot) {
  if (!config_.queue.accounts.empty()) return;
  bool grew = false;
  auto learn = [&](const std::string& account) {
    if (!account.empty() && learned_accounts_.insert(account).second) grew = true;
  };
  for (const auto& w : snapshot.pending) learn(w.account);
  for (const auto& r : snapshot.running) learn(r.account);
  for (const auto& u : usage_.records) learn(u.account);
  if (!grew) return;
  queue_config_.accounts.clear();
  for (const std::string& a : learned_accounts_) queue_config_.accounts.push_back({a, "", 1});
  planner_ = std::make_unique<queue::QueuePlanner>(queue_config_, &preemption_);
}

absl::Status SchedulingLoop::SetOwner(const std::string& node, const std::string& value, queue::Time now) {
  const std::string expected = node_version_[node];
  absl::StatusOr<std::string> written = actions_->SetNodeOwner(node, value, expected);
  if (!written.ok()) {
    if (absl::IsAborted(written.status())) {
      spdlog::info("node {}: changed since version {} was read; the owner ({}) is written from a fresh read next cycle",
                   node, expected, value.empty() ? "none" : value);
    }
    return written.status();
  }
  OwnerWrite& w = owner_written_[node];
  w.value = value;
  if (!expected.empty()) w.earlier_versions.insert(expected);
  w.written_version = *written;
  node_version_[node] = *written;
  node_owner_[node] = value;
  return absl::OkStatus();
}

std::string SchedulingLoop::OwnerValueOf(const std::string& node) const {
  auto it = node_owner_.find(node);
  return it == node_owner_.end() ? std::string() : it->second;
}

void SchedulingLoop::DrainBindResults(queue::Time now, CycleStats* stats) {
  std::vector<std::pair<std::string, absl::Status>> done;
  {
    absl::MutexLock lock(&bind_results_->mu);
    done.swap(bind_results_->done);
  }
  for (auto& [id, status] : done) {
    auto it = binding_.find(id);
    if (it == binding_.end()) continue;
    if (status.ok()) {
      ++stats->bound;
      last_report_.erase(it->second.key);
      actions_->ForgetWaiting(it->second.key);  // also when BindSucceeded is refused (deposed)
      // From now on the assumption waits for the informer, for a bounded time.
      if (auto a = assumed_.find(id); a != assumed_.end()) a->second.bound_at = now;
      actions_->BindSucceeded(it->second.key, it->second.node, it->second.message);
    } else {
      // Unreserve: the capacity is free again and the pod pending; the plan places it anew.
      ++stats->bind_errors;
      assumed_.erase(id);
    }
    binding_.erase(it);
  }
}

void SchedulingLoop::PlaceRestOfPartlyBoundGangs(BuiltSnapshot* built) {
  for (queue::PendingWorkload& w : built->snapshot->pending) {
    if (!w.gang || w.members_present >= w.members) continue;
    auto running = built->running_pods.find(w.id);
    if (running == built->running_pods.end()) continue;
    const auto bound = static_cast<int32_t>(running->second.pod_keys.size());
    if (bound > 0 && bound + w.members_present >= w.members) w.members = w.members_present;
  }
}

bool SchedulingLoop::IsPending(const BuiltSnapshot& built, std::string_view workload) const {
  return built.pending_pods.find(workload) != built.pending_pods.end() ||
         slurm_records_.pending.find(workload) != slurm_records_.pending.end();
}

std::map<std::string, std::string> SchedulingLoop::ForgetConfirmedAssumptions(const KubeState& state,
                                                                              const slurm::SlurmView* slurm_view,
                                                                              queue::Time now) {
  // Indexed only when there is something to look up (most cycles of a quiet cluster have not).
  absl::flat_hash_map<std::string_view, const PodRecord*> by_key, by_identity;
  if (!evicted_.empty()) by_key.reserve(state.pods.size());
  if (!assumed_.empty()) by_identity.reserve(state.pods.size());
  for (const auto& p : state.pods) {
    if (!evicted_.empty()) by_key[p->key] = p.get();
    if (!assumed_.empty()) by_identity[PodIdentity(*p)] = p.get();
  }
  std::map<std::string, std::string> still_assumed;  // pod key -> node, for the snapshot
  for (auto it = assumed_.begin(); it != assumed_.end();) {
    auto p = by_identity.find(it->first);
    const AssumedBinding& a = it->second;
    // Confirmed (the informer shows the binding) or gone (a pod made again under the same name is
    // another pod): the assumption has done its job.
    if (p == by_identity.end() || !p->second->node_name.empty()) {
      it = assumed_.erase(it);
      continue;
    }
    if (a.bound_at != 0 && now - a.bound_at > kAssumedBindingSeconds) {
      spdlog::warn("pod {}: bound to {} {}s ago and the informer still shows it unbound; assumption forgotten",
                   a.key, a.node, now - a.bound_at);
      it = assumed_.erase(it);
      continue;
    }
    still_assumed[a.key] = a.node;
    ++it;
  }
  for (auto it = evicted_.begin(); it != evicted_.end();) {
    // A Slurm victim is forgotten once its preemption is over (see ReleaseFinishedReservations).
    if (!SlurmJobOf(*it) && !by_key.count(*it)) it = evicted_.erase(it);
    else ++it;
  }
  if (slurm_view != nullptr) {
    for (auto it = assumed_jobs_.begin(); it != assumed_jobs_.end();) {
      auto job = slurm_view->jobs->find(it->first);
      // Seen running (or ended, or gone): confirmed. Still pending past its time: Slurm did not
      // start it, and the next plan decides again.
      const bool confirmed = job == slurm_view->jobs->end() || job->second.state != slurm::JobState::kPending ||
                             job->second.restart_count > it->second.restarts;
      if (confirmed || now > it->second.until) it = assumed_jobs_.erase(it);
      else ++it;
    }
  }
  return still_assumed;
}

void SchedulingLoop::ReleaseFinishedReservations(const BuiltSnapshot& built, queue::Time now, CycleStats* stats) {
  // Without Slurm's view a Slurm preemptor looks gone and a node's way back is unknown (H1).
  if (!SlurmKnown()) return;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    // The preemptor no longer waits (bound, started, or deleted): the reservation has done its job.
    if (IsPending(built, it->second)) {
      ++it;
      continue;
    }
    const std::string preemptor = it->second;
    // A start may have moved the node on already (TakeNodeFor, StartSlurmJob).
    if (OwnerValueOf(it->first) != kReservedPrefix + preemptor) {
      owner_before_reserve_.erase(it->first);
      it = reservations_.erase(it);
      evicting_.erase(preemptor);
      continue;
    }
    // A node Slurm shares goes back to Kubernetes (the reconcile pass re-tags its fence); a node
    // Slurm does not know simply loses the mark.
    const std::string back = slurm_records_.nodes.count(it->first) ? kOwnerKubernetes : "";
    if (SetOwner(it->first, back, now).ok()) {
      Fail("release-after-write");
      owner_before_reserve_.erase(it->first);
      it = reservations_.erase(it);
      evicting_.erase(preemptor);
    } else {
      ++it;
    }
  }
  for (auto it = evicted_.begin(); it != evicted_.end();) {
    bool in_use = false;
    for (const auto& [node, p] : reservations_) in_use = in_use || evicting_.count(p);
    if (SlurmJobOf(*it) && !in_use) it = evicted_.erase(it);
    else ++it;
  }
  for (auto it = blocked_.begin(); it != blocked_.end();) {
    if (IsPending(built, it->first)) ++it;
    else it = blocked_.erase(it);
  }
}

void SchedulingLoop::ReleaseUnusableReservations(const queue::Plan& plan, const BuiltSnapshot& built,
                                                 queue::Time now, std::set<std::string>* touched) {
  if (reservations_.empty() || !SlurmKnown()) return;
  // The nodes each workload's decisions of this cycle use.
  std::map<std::string, std::set<std::string>, std::less<>> planned;
  auto add = [&](const std::string& workload, const queue::MemberNodes& nodes) {
    for (queue::NodeIndex n : nodes) planned[workload].insert(built.snapshot->nodes[n].name);
  };
  for (const auto& d : plan.starts) add(d.workload, d.member_nodes);
  for (const auto& d : plan.preemptions) add(d.preemptor, d.member_nodes);
  for (const auto& d : plan.reservations) add(d.workload, d.member_nodes);
  std::erase_if(unusable_since_, [&](const auto& u) { return !reservations_.count(u.first); });
  std::set<std::string> released_for;
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    const std::string preemptor = it->second;
    auto uses = planned.find(preemptor);
    // A preemptor that no longer waits is ReleaseFinishedReservations' (next cycle).
    if (!IsPending(built, preemptor) || (uses != planned.end() && uses->second.count(it->first))) {
      unusable_since_.erase(it->first);
      ++it;
      continue;
    }
    // Still pending, but this cycle's plan puts it elsewhere or nowhere: a gang member deleted
    // after the evictions (GangIncomplete), requests that no longer fit there, a better place.
    // Past the grace the node goes back to the owner it had, or it stays reserved and idle for ever.
    auto [since, first_seen] = unusable_since_.try_emplace(it->first, now);
    if (now - since->second < kUnusableReservationSeconds) {
      ++it;
      continue;
    }
    auto before = owner_before_reserve_.find(it->first);
    std::string value = before == owner_before_reserve_.end() ? "" : before->second;
    if (absl::StartsWith(value, kReservedPrefix)) value = "";
    if (OwnerValueOf(it->first) == kReservedPrefix + preemptor && !SetOwner(it->first, value, now).ok()) {
      ++it;
      continue;
    }
    spdlog::info("node {} released: {} still waits but has not been able to use it for {}s", it->first, preemptor,
                 now - since->second);
    unusable_since_.erase(since);
    Fail("release-after-write");
    touched->insert(it->first);
    owner_before_reserve_.erase(it->first);
    released_for.insert(preemptor);
    it = reservations_.erase(it);
  }
  for (const std::string& preemptor : released_for) {
    const bool holds_more = std::any_of(reservations_.begin(), reservations_.end(),
                                        [&](const auto& r) { return r.second == preemptor; });
    if (holds_more) continue;
    // Its preemption is over: nominated nowhere, and free to preempt again when it fits.
    evicting_.erase(preemptor);
    if (auto pods = built.pending_pods.find(preemptor); pods != built.pending_pods.end()) {
      for (const auto& key : pods->second.pod_keys) (void)actions_->Nominate(key, "");
    }
  }
}

void SchedulingLoop::RollBack(const std::string& preemptor, const BuiltSnapshot& built, queue::Time now,
                              CycleStats* stats) {
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (it->second == preemptor) {
      // Back to the owner it had; the reconcile pass puts the Slurm side right (fence or lend).
      auto before = owner_before_reserve_.find(it->first);
      std::string value = before == owner_before_reserve_.end() ? "" : before->second;
      if (absl::StartsWith(value, kReservedPrefix)) value = "";
      (void)SetOwner(it->first, value, now);
      owner_before_reserve_.erase(it->first);
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
                                     std::set<std::string>* touched, CycleStats* stats,
                                     std::vector<PlannedEvictions>* evictions) {
  if (evicting_.count(d.preemptor)) return;  // already under way: each victim is evicted once
  if (auto b = blocked_.find(d.preemptor); b != blocked_.end() && now < b->second.retry_at) return;
  const auto& nodes = built.snapshot->nodes;
  auto pods = built.pending_pods.find(d.preemptor);
  const bool slurm_preemptor = SlurmJobOf(d.preemptor).has_value();
  if (pods == built.pending_pods.end() && !slurm_preemptor) return;
  if (slurm_preemptor && (slurm_ == nullptr || !slurm_records_.pending.count(d.preemptor))) return;
  // 1. Reserve, durably, before anything is evicted: the node annotation, then (on a node Slurm
  // shares) a fence tagged for the preemptor. Written even when reservations_ already has it
  // (recovered after a restart, or read back from a lagging informer after a rollback): the write
  // is idempotent and the only proof that the mark is on the node.
  std::set<std::string> node_names;
  if (!config_.test_without_reservations) {  // tests only: see Config::test_without_reservations
    for (queue::NodeIndex n : d.member_nodes) node_names.insert(nodes[n].name);
  }
  for (const auto& name : node_names) {
    const std::string before = OwnerValueOf(name);
    if (!absl::StartsWith(before, kReservedPrefix)) owner_before_reserve_[name] = before;
    if (!SetOwner(name, kReservedPrefix + d.preemptor, now).ok()) {
      RollBack(d.preemptor, built, now, stats);
      return;
    }
    reservations_[name] = d.preemptor;
    touched->insert(name);
  }
  if (!node_names.empty()) Fail("preempt-after-reserve");
  if (slurm_ != nullptr) {
    for (const auto& name : node_names) {
      auto joined = slurm_records_.nodes.find(name);
      if (joined == slurm_records_.nodes.end()) continue;
      absl::Status s = slurm_->Fence(joined->second.slurm_name, kReservedPrefix + d.preemptor);
      if (!s.ok()) {
        spdlog::warn("preemption for {}: fencing Slurm node {} failed: {}; rolled back", d.preemptor,
                     joined->second.slurm_name, s.ToString());
        RollBack(d.preemptor, built, now, stats);
        return;
      }
      last_fence_[name] = {kReservedPrefix + d.preemptor, now};
    }
  }
  Fail("reclaim-after-reserve");
  if (pods != built.pending_pods.end()) {
    for (size_t i = 0; i < pods->second.pod_keys.size() && i < d.member_nodes.size(); ++i) {
      (void)actions_->Nominate(pods->second.pod_keys[i], nodes[d.member_nodes[i]].name);
    }
  }
  ++stats->preemptions_started;
  stats->preemption_victims.push_back(static_cast<int>(d.victims.size()));
  // 2. Evict each victim once: Slurm jobs are requeued (or cancelled when they may not be), pods
  // go through the Eviction API. A refused eviction (PDB) aborts the whole step.
  bool slurm_victims = false;
  for (const auto& victim : d.victims) {
    const std::optional<uint32_t> job_id = SlurmJobOf(victim);
    if (!job_id) continue;
    slurm_victims = true;
    if (evicted_.count(victim) || victim_retry_.count(victim) || slurm_ == nullptr) continue;
    // A victim onequeue started a moment ago may still be assumed running: it is leaving now.
    assumed_jobs_.erase(*job_id);
    auto job = slurm_records_.running.find(victim);
    if (job == slurm_records_.running.end()) continue;  // already left
    std::string why;
    const VictimOutcome outcome = EvictSlurmVictim(d.preemptor, victim, *job_id, *job->second, &why);
    NoteVictimOutcome(outcome, d.preemptor, victim, why, built, now, stats);
    if (outcome == VictimOutcome::kGiveUp) return;
  }
  if (slurm_victims) Fail("reclaim-after-requeue");
  PlannedEvictions planned{d.preemptor, {}};
  for (const auto& victim : d.victims) {
    auto vp = built.running_pods.find(victim);
    if (vp == built.running_pods.end()) continue;
    for (const auto& pod_key : vp->second.pod_keys) {
      // Already leaving (evicted by a predecessor that crashed, or deleted): not evicted again.
      if (evicted_.count(pod_key) || terminating.count(pod_key)) continue;
      planned.pod_keys.push_back(pod_key);
    }
  }
  evictions->push_back(std::move(planned));
  // 3. The start happens in a later cycle, when the victims are gone and the plan starts P there.
}

void SchedulingLoop::EvictInWaves(std::vector<PlannedEvictions>* evictions, const BuiltSnapshot& built,
                                  queue::Time now, CycleStats* stats) {
  // Why waves: an eviction costs the apiserver a PodDisruptionBudget lookup (~90 ms each in the
  // issue-12 preemption benchmark); one after another, 300 victims held a cycle 30 s. Why not
  // every victim at once: a preemption stops at its first refusal, so a budget that refuses B
  // spares C (the planner chooses sets the budgets allow; a refusal is a race with a change).
  struct Wave {
    absl::Mutex mu;
    int left ABSL_GUARDED_BY(mu) = 0;
    std::vector<absl::Status> results ABSL_GUARDED_BY(mu);
  };
  for (size_t k = 0;; ++k) {
    std::vector<size_t> members;  // indexes into *evictions with a k-th pod
    for (size_t i = 0; i < evictions->size(); ++i) {
      if (!(*evictions)[i].refused && k < (*evictions)[i].pod_keys.size()) members.push_back(i);
    }
    if (members.empty()) break;
    auto wave = std::make_shared<Wave>();
    {
      absl::MutexLock lock(&wave->mu);
      wave->left = static_cast<int>(members.size());
      wave->results.resize(members.size());
    }
    for (size_t m = 0; m < members.size(); ++m) {
      const PlannedEvictions& p = (*evictions)[members[m]];
      actions_->StartEvict(p.pod_keys[k], p.preemptor, absl::StrCat("Preempted by ", p.preemptor, " (higher priority)"),
                           [wave, m](absl::Status s) {
                             absl::MutexLock lock(&wave->mu);
                             wave->results[m] = std::move(s);
                             --wave->left;
                           });
    }
    std::vector<absl::Status> results;
    {
      absl::MutexLock lock(&wave->mu);
      wave->mu.Await(absl::Condition(
          +[](int* left) { return *left == 0; }, &wave->left));
      results = wave->results;
    }
    for (size_t m = 0; m < members.size(); ++m) {
      PlannedEvictions& p = (*evictions)[members[m]];
      const std::string& pod_key = p.pod_keys[k];
      const absl::Status& s = results[m];
      if (!s.ok() && !absl::IsNotFound(s)) {
        RollBack(p.preemptor, built, now, stats);
        blocked_[p.preemptor] = {now + kBlockedPreemptionRetrySeconds,
                                 absl::StrCat("preemption rolled back, eviction of ", pod_key, " refused: ",
                                              s.message(), "; retrying in ", kBlockedPreemptionRetrySeconds, "s")};
        p.refused = true;
        continue;
      }
      if (s.ok()) actions_->EvictSucceeded(pod_key, p.preemptor, absl::StrCat("Preempted by ", p.preemptor, " (higher priority)"));
      evicted_.insert(pod_key);
      ++stats->evictions;
      Fail(stats->evictions == 1 ? "preempt-after-first-eviction" : "preempt-after-next-eviction");
    }
  }
  for (const PlannedEvictions& p : *evictions) {
    if (p.refused) continue;
    evicting_.insert(p.preemptor);
    blocked_.erase(p.preemptor);
  }
}

SchedulingLoop::VictimOutcome SchedulingLoop::EvictSlurmVictim(const std::string& preemptor, const std::string& victim,
                                                              uint32_t job, const slurm::SlurmJob& record,
                                                              std::string* why) {
  absl::Status s;
  if (record.requeue) {
    if (slurm_->FenceRequeues()) return VictimOutcome::kLeaving;  // the fence requeues it
    s = slurm_->Requeue(job);
    // Not found, or not running any more (completing, pending again): it has left.
    if (s.ok() || absl::IsNotFound(s) || absl::IsFailedPrecondition(s)) return VictimOutcome::kLeaving;
    if (IsTransient(s)) {
      *why = absl::StrCat("requeue of Slurm job ", job, " failed: ", s.message());
      return VictimOutcome::kRetry;
    }
  }
  // Slurm will not requeue it (requeue=false, an srun/salloc allocation, no way to requeue).
  const std::string refusal = record.requeue ? std::string(s.message()) : "requeue disabled for the job";
  if (!config_.slurm.cancel_unrequeueable) {
    *why = absl::StrCat("preemption given up: Slurm will not requeue job ", job, " (", refusal,
                        ") and slurm.cancelUnrequeueable is false; the node stays with Slurm");
    return VictimOutcome::kGiveUp;
  }
  s = slurm_->Cancel(job);
  if (s.ok() || absl::IsNotFound(s)) return VictimOutcome::kLeaving;
  *why = absl::StrCat("Slurm will not requeue job ", job, " (", refusal, ") and cancelling it failed: ", s.message());
  return IsTransient(s) ? VictimOutcome::kRetry : VictimOutcome::kGiveUp;
}

void SchedulingLoop::NoteVictimOutcome(VictimOutcome outcome, const std::string& preemptor, const std::string& victim,
                                       const std::string& why, const BuiltSnapshot& built, queue::Time now,
                                       CycleStats* stats) {
  switch (outcome) {
    case VictimOutcome::kLeaving:
      victim_retry_.erase(victim);
      evicted_.insert(victim);
      ++stats->requeued;
      return;
    case VictimOutcome::kRetry: {
      VictimRetry& r = victim_retry_[victim];
      r.preemptor = preemptor;
      const queue::Time delay = std::min(kVictimRetryMaxSeconds, kVictimRetrySeconds << std::min(r.attempts, 4));
      ++r.attempts;
      r.retry_at = now + delay;
      spdlog::warn("preemption for {}: {}; asked again in {}s", preemptor, why, delay);
      return;
    }
    case VictimOutcome::kGiveUp:
      victim_retry_.erase(victim);
      spdlog::warn("preemption for {}: {}", preemptor, why);
      RollBack(preemptor, built, now, stats);
      blocked_[preemptor] = {now + kUnrequeueableRetrySeconds, why};
      return;
  }
}

void SchedulingLoop::RetrySlurmVictims(const BuiltSnapshot& built, queue::Time now, CycleStats* stats) {
  if (slurm_ == nullptr || !SlurmKnown()) return;  // kept until Slurm can be asked
  for (auto it = victim_retry_.begin(); it != victim_retry_.end();) {
    const std::string victim = it->first;
    const VictimRetry r = it->second;
    const bool holds = std::any_of(reservations_.begin(), reservations_.end(),
                                   [&](const auto& res) { return res.second == r.preemptor; });
    auto job = slurm_records_.running.find(victim);
    if (!holds || job == slurm_records_.running.end()) {  // the preemption is over, or the job left
      it = victim_retry_.erase(it);
      continue;
    }
    ++it;  // NoteVictimOutcome may erase this entry
    if (now < r.retry_at) continue;
    std::string why;
    const VictimOutcome outcome = EvictSlurmVictim(r.preemptor, victim, *SlurmJobOf(victim), *job->second, &why);
    NoteVictimOutcome(outcome, r.preemptor, victim, why, built, now, stats);
  }
}

std::shared_ptr<const slurm::SlurmView> SchedulingLoop::FreshSlurmView(queue::Time now, CycleStats* stats) {
  slurm_known_ = false;
  if (slurm_ == nullptr) return nullptr;
  std::shared_ptr<const slurm::SlurmView> view = view_->Slurm();
  if (view != nullptr && view->refreshed_at != absl::InfinitePast()) {
    const queue::Time age = now - absl::ToUnixSeconds(view->refreshed_at);
    const auto bound = std::max<queue::Time>(kStaleSlurmViewSeconds,
                                             static_cast<queue::Time>(10 * config_.slurm.poll_interval_seconds));
    if (age > bound) {
      spdlog::warn("the Slurm view is {}s old (bound {}s): nothing is decided from it until the poller answers", age,
                   bound);
      view = nullptr;
    }
  }
  slurm_known_ = view != nullptr;
  stats->slurm_unknown = !slurm_known_;
  return view;
}

void SchedulingLoop::FenceUnknownNodes(BuiltSnapshot* built) const {
  // Slurm shares the pool but its view is missing or stale: a node is a pod's only where onequeue
  // fenced it for Kubernetes before, or where the last view showed no Slurm node (issue 24 H1).
  for (queue::Node& n : built->snapshot->nodes) {
    const std::string owner = OwnerValueOf(n.name);
    if (owner == kOwnerKubernetes) continue;
    if (owner.empty() && slurm_seen_ && !last_joined_.count(n.name)) continue;
    n.schedulable = false;
  }
}

SlurmWorldOptions SchedulingLoop::SlurmOptions(const BuiltSnapshot& built, queue::Time now) {
  SlurmWorldOptions o = SlurmWorldOptionsOf(config_);
  for (const auto& [job, a] : assumed_jobs_) o.assumed_starts[job] = a.nodes;
  // Hysteresis: a node pods used lately is not lent, nor is the headroom kept for interactive pods.
  const queue::Snapshot& snap = *built.snapshot;
  const std::vector<char> has_pod = NodesWithPods(snap);
  std::vector<std::string> idle_kubernetes;
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const std::string& name = snap.nodes[i].name;
    auto [seen, first_sight] = last_pod_seen_.try_emplace(name, now);
    if (has_pod[i] || !IsKubernetesOwner(OwnerValueOf(name))) seen->second = now;
    else idle_kubernetes.push_back(name);
    if (now - seen->second < config_.slurm.lend_after_seconds) o.not_lendable.insert(name);
  }
  for (int i = 0; i < config_.slurm.headroom_nodes && i < static_cast<int>(idle_kubernetes.size()); ++i) {
    o.not_lendable.insert(idle_kubernetes[i]);
  }
  return o;
}

bool SchedulingLoop::TakeNodeFor(const std::string& node, const std::string& workload, queue::Time now,
                                 CycleStats* stats) {
  if (!SlurmKnown()) return false;  // what Slurm runs there is not known (issue 24 H1)
  auto joined = slurm_records_.nodes.find(node);
  const std::string owner = OwnerValueOf(node);
  if (slurm_ == nullptr || joined == slurm_records_.nodes.end() || owner == kOwnerKubernetes) return true;
  if (owner.empty() && joined->second.holder.holder != slurm::NodeHolder::kSlurm) return true;
  // Slurm's side first: fenced for Kubernetes and nothing of Slurm's left running there, asked of
  // Slurm itself (the poller's view may be a poll old). Only then the node changes hands.
  const std::string& slurm_name = joined->second.slurm_name;
  absl::Status fenced = slurm_->Fence(slurm_name, kOwnerKubernetes);
  if (!fenced.ok()) {
    spdlog::warn("taking {} for {}: fencing Slurm node {}: {}", node, workload, slurm_name, fenced.ToString());
    return false;
  }
  last_fence_[node] = {kOwnerKubernetes, now};
  absl::StatusOr<bool> ready = slurm_->Ready(slurm_name);
  if (!ready.ok() || !*ready) return false;  // a Slurm job is still leaving: next cycle
  if (!SetOwner(node, kOwnerKubernetes, now).ok()) return false;
  // A reservation taken back this way is released by the write (the fence is re-tagged later).
  if (reservations_.erase(node) > 0) Fail("release-after-write");
  owner_before_reserve_.erase(node);
  actions_->NodeEvent(node, "Reclaimed", absl::StrCat("Reclaimed from Slurm for ", workload));
  ++stats->reclaimed;
  return true;
}

void SchedulingLoop::StartSlurmJob(const queue::StartDecision& start, const BuiltSnapshot& built, queue::Time now,
                                   std::set<std::string>* touched, CycleStats* stats) {
  const std::optional<uint32_t> job = SlurmJobOf(start.workload);
  if (!job || slurm_ == nullptr) return;
  std::vector<std::string> k8s_nodes, slurm_nodes;
  for (queue::NodeIndex n : start.member_nodes) {
    const std::string& name = built.snapshot->nodes[n].name;
    if (std::find(k8s_nodes.begin(), k8s_nodes.end(), name) != k8s_nodes.end()) continue;
    auto joined = slurm_records_.nodes.find(name);
    if (joined == slurm_records_.nodes.end()) return;  // cannot happen: only joined nodes are lendable
    k8s_nodes.push_back(name);
    slurm_nodes.push_back(joined->second.slurm_name);
  }
  // 1. Kubernetes' side first (durable, and the taint keeps other schedulers off). Undone (issue
  // 24 M3) if the lend goes no further, so an outage does not lend node after node.
  std::vector<std::pair<std::string, std::string>> marked;  // node -> owner value before
  auto undo = [&] {
    for (const auto& [name, before] : marked) (void)SetOwner(name, before, now);
  };
  for (const std::string& name : k8s_nodes) {
    const std::string before = OwnerValueOf(name);
    if (IsSlurmOwner(before)) continue;
    if (!SetOwner(name, absl::StrCat(kOwnerSlurm, "/", *job), now).ok()) return undo();
    marked.emplace_back(name, before);
  }
  Fail("lend-after-annotate");
  // 2. The job onequeue chose, and only it, may start there: pinned to the nodes, released with a
  // priority above anything else, then the fence goes.
  absl::Status s = slurm_->StartOn(*job, slurm_nodes,
                                   absl::StrCat(slurm::kOwnerTagPrefix, " started by onequeue on ",
                                                absl::StrJoin(slurm_nodes, ","),
                                                start.backfilled ? " (backfilled)" : ""));
  if (!s.ok()) {
    spdlog::warn("starting Slurm job {}: {}; the nodes marked for it are given back", *job, s.ToString());
    return undo();
  }
  for (const auto& [name, before] : marked) {
    reservations_.erase(name);
    owner_before_reserve_.erase(name);
    actions_->NodeEvent(name, "Lent", absl::StrCat("Lent to Slurm for job ", *job));
    ++stats->lent;
  }
  for (size_t i = 0; i < k8s_nodes.size(); ++i) {
    auto joined = slurm_records_.nodes.find(k8s_nodes[i]);
    if (joined->second.holder.holder == slurm::NodeHolder::kOnequeue ||
        (last_fence_.count(k8s_nodes[i]) && now - last_fence_[k8s_nodes[i]].second < kFenceRetrySeconds)) {
      absl::Status u = slurm_->Unfence(slurm_nodes[i]);
      if (!u.ok()) spdlog::warn("lending {}: {}", slurm_nodes[i], u.ToString());
    }
    last_fence_.erase(k8s_nodes[i]);
    touched->insert(k8s_nodes[i]);
  }
  const auto pending = slurm_records_.pending.find(start.workload);
  assumed_jobs_[*job] = {k8s_nodes, now + kAssumedStartSeconds,
                         pending == slurm_records_.pending.end() ? 0 : pending->second->restart_count};
  last_hold_.erase(*job);
  ++stats->slurm_started;
}

void SchedulingLoop::FenceOnce(const JoinedNode& node, const std::string& owner, queue::Time now) {
  auto last = last_fence_.find(node.k8s_name);
  if (last != last_fence_.end() && last->second.first == owner && now - last->second.second < kFenceRetrySeconds) {
    return;
  }
  absl::Status s = owner.empty() ? slurm_->Unfence(node.slurm_name) : slurm_->Fence(node.slurm_name, owner);
  if (!s.ok()) spdlog::warn("Slurm node {}: {} failed: {}", node.slurm_name, owner.empty() ? "lend" : "fence " + owner,
                            s.ToString());
  last_fence_[node.k8s_name] = {owner, now};
}

void SchedulingLoop::ReconcileSlurmNodes(const std::set<std::string>& touched, queue::Time now, CycleStats* stats) {
  std::set<std::string> assumed_nodes;
  for (const auto& [job, a] : assumed_jobs_) assumed_nodes.insert(a.nodes.begin(), a.nodes.end());
  for (const auto& [name, node] : slurm_records_.nodes) {
    if (touched.count(name)) continue;
    const slurm::NodeHolder holder = node.holder.holder;
    if (holder == slurm::NodeHolder::kAdmin || holder == slurm::NodeHolder::kDown) continue;  // hands off
    const std::string owner = OwnerValueOf(name);
    const bool fenced = holder == slurm::NodeHolder::kOnequeue;
    if (absl::StartsWith(owner, kReservedPrefix)) {
      const std::string want = owner;
      if (!fenced || node.holder.owner != want) FenceOnce(node, want, now);
      continue;
    }
    if (IsSlurmOwner(owner)) {
      if (!node.running_jobs.empty() || assumed_nodes.count(name)) {
        lent_idle_since_.erase(name);
        if (fenced) FenceOnce(node, "", now);
        continue;
      }
      auto [since, inserted] = lent_idle_since_.try_emplace(name, now);
      if (now - since->second >= config_.slurm.return_after_seconds) {
        // No Slurm job has used the node for a while and none is planned there: it comes back,
        // fenced first so nothing of Slurm's starts as it does.
        if (!slurm_->Fence(node.slurm_name, kOwnerKubernetes).ok()) continue;
        last_fence_[name] = {kOwnerKubernetes, now};
        // Issue 24 H3: asked of Slurm now, not of the poll: a job may have started there since.
        absl::StatusOr<bool> ready = slurm_->Ready(node.slurm_name);
        if (!ready.ok() || !*ready) {
          spdlog::info("node {}: not returned, Slurm still runs something there ({})", name,
                       ready.ok() ? "busy" : ready.status().ToString());
          if (!slurm_->FenceRequeues()) {  // a drain would keep Slurm off a node that is still its own
            lent_idle_since_.erase(name);
            (void)slurm_->Unfence(node.slurm_name);
            last_fence_[name] = {"", now};
          }
          continue;
        }
        if (!SetOwner(name, kOwnerKubernetes, now).ok()) continue;
        lent_idle_since_.erase(name);
        actions_->NodeEvent(name, "Returned", absl::StrCat("Returned by Slurm: no Slurm job for ",
                                                            now - since->second, "s"));
        ++stats->returned;
      } else if (fenced) {
        FenceOnce(node, "", now);
      }
      continue;
    }
    lent_idle_since_.erase(name);
    // Kubernetes' node. One Slurm already runs jobs on, never marked by onequeue, was Slurm's
    // before onequeue came: adopt it as lent rather than fence jobs out from under their users.
    if (owner.empty() && !node.running_jobs.empty() && !fenced) {
      if (SetOwner(name, kOwnerSlurm, now).ok()) {
        actions_->NodeEvent(name, "Lent", absl::StrCat("Adopted as lent: Slurm job ", node.running_jobs.front(),
                                                        " runs here"));
        ++stats->lent;
      }
      continue;
    }
    if (!fenced || node.holder.owner != kOwnerKubernetes) FenceOnce(node, kOwnerKubernetes, now);
    if (owner.empty() && fenced && node.holder.owner == kOwnerKubernetes) (void)SetOwner(name, kOwnerKubernetes, now);
  }
}

void SchedulingLoop::HoldWaitingJobs(const queue::Plan& plan, CycleStats* stats) {
  for (const auto& w : plan.waiting) {
    const std::optional<uint32_t> id = SlurmJobOf(w.workload);
    if (!id) continue;
    auto job = slurm_records_.pending.find(w.workload);
    if (job == slurm_records_.pending.end()) continue;
    ++stats->slurm_pending;
    if (w.reason == queue::WaitReason::kHeld) {
      // Slurm's own hold, dependency or begin time (or an admin's oq hold): not onequeue's to
      // write. Once it is lifted the job needs onequeue's hold again, so forget the last one asked.
      last_hold_.erase(*id);
      continue;
    }
    // The position moves with every arrival: the comment carries only the reason, like the pod's event.
    std::string message(w.Message());
    const std::string reason = queue::WaitReasonName(w.reason);
    if (absl::StartsWith(message, reason + ": ")) message = message.substr(reason.size() + 2);
    if (w.reason == queue::WaitReason::kPartitionNodesUnavailable) {
      // The queue sees only lendable nodes for Slurm jobs; say why the partition's pool nodes
      // are not (in use by pods, lately, or kept as headroom) rather than "no node matches".
      const std::string& partition = job->second->partition;
      const bool pool_nodes = std::any_of(slurm_records_.nodes.begin(), slurm_records_.nodes.end(), [&](const auto& n) {
        return std::find(n.second.partitions.begin(), n.second.partitions.end(), partition) != n.second.partitions.end();
      });
      if (pool_nodes) {
        message = absl::StrCat("no pool node of partition ", partition,
                               " can be lent now (pods used them less than ", config_.slurm.lend_after_seconds,
                               "s ago, they are kept as headroom, or they are not ready)");
      }
    }
    const std::string comment = absl::StrCat(slurm::kOwnerTagPrefix, " ", reason, ": ", message);
    if (HeldByOnequeue(*job->second) && job->second->comment == comment) {
      last_hold_[*id] = comment;
      continue;
    }
    auto last = last_hold_.find(*id);
    if (last != last_hold_.end() && last->second == comment) continue;  // asked; the poll lags
    absl::Status s = slurm_->Hold(*id, comment);
    if (s.ok() || absl::IsNotFound(s)) {
      last_hold_[*id] = comment;
      ++stats->slurm_held;
    } else {
      spdlog::warn("holding Slurm job {}: {}", *id, s.ToString());
    }
  }
  for (auto it = last_hold_.begin(); it != last_hold_.end();) {
    if (!slurm_records_.pending.count(SlurmWorkloadId(it->first))) it = last_hold_.erase(it);
    else ++it;
  }
}

WaitReport SchedulingLoop::ReportFor(const queue::WaitingStatus& w, const queue::Plan& plan,
                                     const BuiltSnapshot& built) const {
  WaitReport report{queue::WaitReasonName(w.reason), std::string(w.Message()), w.queue_position,
                    w.estimated_start};
  // A refused preemption: the plan still says "preempting", but what the user must know is
  // that a budget refused it; the capacity is what is missing.
  if (auto b = blocked_.find(w.workload); b != blocked_.end()) {
    report.reason = queue::WaitReasonName(queue::WaitReason::kResources);
    report.message = b->second.message;
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
  if (slurm_records_.running.empty() && slurm_records_.pending.empty()) return report;
  // Waiting behind the Slurm world: name the jobs, as users of both worlds ask "behind what?".
  std::set<queue::NodeIndex> nodes;
  for (const auto& r : plan.reservations) {
    if (r.workload == w.workload) nodes.insert(r.member_nodes.begin(), r.member_nodes.end());
  }
  for (const auto& p : plan.preemptions) {
    if (p.preemptor == w.workload) nodes.insert(p.member_nodes.begin(), p.member_nodes.end());
  }
  std::vector<std::string> jobs;
  for (const auto& start : plan.starts) {  // started in this very cycle: not running yet
    if (!SlurmJobOf(start.workload)) continue;
    for (queue::NodeIndex n : start.member_nodes) {
      if (!nodes.count(n)) continue;
      jobs.push_back(absl::StrCat("Slurm job ", start.workload.substr(std::string_view(kSlurmIdPrefix).size()),
                                  " on ", built.snapshot->nodes[n].name));
      break;
    }
  }
  for (const auto& r : built.snapshot->running) {
    if (r.kind != queue::WorkloadKind::kSlurmJob) continue;
    for (const auto& a : r.allocations) {
      if (!nodes.count(a.node)) continue;
      jobs.push_back(absl::StrCat("Slurm job ", r.id.substr(std::string_view(kSlurmIdPrefix).size()), " on ",
                                  built.snapshot->nodes[a.node].name));
      break;
    }
  }
  for (queue::NodeIndex n : nodes) {
    const queue::NodeOwner& owner = built.snapshot->nodes[n].owner;
    if (owner.kind == queue::OwnerKind::kReserved && owner.reserved_for != w.workload &&
        SlurmJobOf(owner.reserved_for)) {
      jobs.push_back(absl::StrCat("Slurm job ", owner.reserved_for.substr(std::string_view(kSlurmIdPrefix).size()),
                                  " holds ", built.snapshot->nodes[n].name));
    }
  }
  if (!jobs.empty()) absl::StrAppend(&report.message, "; behind ", absl::StrJoin(jobs, ", "));
  return report;
}

void SchedulingLoop::WriteWaitReport(const std::vector<std::string>& pod_keys, const WaitReport& report,
                                     CycleStats* stats) {
  // Written only when what the pod shows changes; the estimate as StableEstimate shows it, so
  // that a waiting pod is not patched every cycle as the planner's estimate moves with now.
  WaitReport shown = report;
  std::string fingerprint;
  for (const auto& key : pod_keys) {
    ShownWait& last = last_report_[key];
    const std::optional<queue::Time> estimate = StableEstimate(
        last.estimated_start, report.estimated_start, ShownEstimateStep(queue_config_.resolution));
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

SnapshotOptions SchedulingLoop::PolicyOptions() const {
  SnapshotOptions options;
  options.scheduler_name = config_.scheduler_name;
  options.pool_label = config_.pool_label;
  for (const auto& q : config_.queue.qos) options.known_qos.push_back(q.name);
  for (const auto& p : config_.queue.namespace_policies) {
    options.namespace_policies[p.namespace_] = {p.allowed_qos, p.default_qos, p.allowed_accounts, p.default_account};
  }
  options.queue_config = &queue_config_;
  return options;
}

void SchedulingLoop::SendBinding(const std::string& id, const std::string& key, const std::string& node,
                                 std::string message) {
  // Assume first: from now on the pod counts on its node, whatever the binding's fate.
  assumed_[id] = {key, node, 0};
  binding_[id] = {key, node, message};
  actions_->StartBind(key, node, message, [results = bind_results_, id](absl::Status s) {
    absl::MutexLock lock(&results->mu);
    results->done.emplace_back(id, std::move(s));
  });
  Fail("bind-after-send");
}

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
  const queue::Time every = config_.queue.full_cycle_seconds;
  if (every <= 0 || need_full_cycle_ || arrival_basis_.snapshot == nullptr || last_plan_ == nullptr ||
      now < arrival_basis_.at || now - arrival_basis_.at >= every) {
    return false;
  }
  // Under way, and the full cycle's to follow up: a preemption (nodes reserved, victims evicted, a
  // refused one), a node owner write the watch has not shown, anything of Slurm's (its poller's
  // view changes on its own; the lending and the holds are planned with the whole queue).
  if (slurm_ != nullptr || !reservations_.empty() || !evicting_.empty() || !evicted_.empty() ||
      !blocked_.empty() || !owner_written_.empty() || !assumed_jobs_.empty()) {
    return false;
  }
  // A node, a budget or a deletion changed the world the last plan was made in.
  const std::optional<KubeChanges> changes = view_->ChangesSince(arrival_basis_.generation);
  if (!changes || changes->others) return false;
  // A binding that failed gives its capacity back and its pod to the queue: the planner still
  // counts the pod as started, so only a full plan is right.
  DrainBindResults(now, stats);
  if (stats->bind_errors > 0) return false;
  const std::vector<std::string> failed_reports = actions_->TakeFailedReports();
  for (const std::string& key : failed_reports) last_report_.erase(key);  // the full cycle writes them again
  if (!failed_reports.empty()) return false;

  // Every changed pod must be a new pending single-pod workload of this scheduler, a pod of
  // another scheduler that no snapshot counts (unbound), or one of our bindings showing up.
  const SnapshotOptions options = PolicyOptions();
  std::vector<const PodRecord*> arrivals;
  std::vector<std::string> confirmed;  // assumptions the informer now shows bound
  std::vector<std::shared_ptr<const PodRecord>> seen;  // records of the arrivals and confirmed bindings
  for (const auto& record : changes->pods) {
    const PodRecord& pod = *record;
    const std::string identity(PodIdentity(pod));
    if (const PodRecord* before = RecordBefore(pod.key); before != nullptr && SchedulesAlike(*before, pod)) {
      continue;  // its status, or onequeue's own report on it
    }
    if (!pod.node_name.empty()) {
      auto a = assumed_.find(identity);
      if (a == assumed_.end() || a->second.key != pod.key || a->second.node != pod.node_name || pod.terminal ||
          pod.deleting) {
        return false;  // bound elsewhere, by someone else, or finished
      }
      confirmed.push_back(identity);
      seen.push_back(record);
      continue;
    }
    if (arrival_basis_.pending.count(pod.key) || assumed_.count(identity)) return false;  // a known pod changed
    if (pod.scheduler_name != options.scheduler_name) continue;  // unbound and not ours: in no snapshot
    // A gang member (its group may be complete now), or a rule that reads the pods bound where.
    if (pod.terminal || pod.deleting || !pod.group.empty() || !pod.group_size.empty() ||
        !pod.anti_affinity.empty()) {
      return false;
    }
    arrivals.push_back(&pod);
    seen.push_back(record);
  }

  // Each arrival as the full cycle's snapshot would make it, ranked on the last plan's clock (as
  // OnArrival ranks it).
  const queue::Snapshot& basis = *arrival_basis_.snapshot;
  queue::ResourceNames names = basis.resource_names;
  queue::Resources pool_total;
  for (const queue::Node& n : basis.nodes) pool_total += n.allocatable;
  const queue::PriorityCalculator calculator(queue_config_, basis.usage, pool_total, arrival_basis_.at);
  struct Arrival {
    const PodRecord* pod;
    queue::PendingWorkload workload;
    queue::PriorityBreakdown priority;
  };
  std::vector<Arrival> planned;
  for (const PodRecord* pod : arrivals) {
    queue::PendingWorkload w = BuildPendingWorkload(pod->key, {pod}, options, &names, now,
                                                    [](const PodRecord&) { return std::vector<std::string>(); });
    // An extended resource the snapshot has no slot for, or an account the planner does not know
    // yet (it is remade with it): the full cycle's.
    if (names.names.size() != basis.resource_names.names.size()) return false;
    if (config_.queue.accounts.empty() && !learned_accounts_.count(w.account)) return false;
    const queue::PriorityBreakdown priority = calculator.Compute(w);
    planned.push_back({pod, std::move(w), priority});
  }
  // In the order a full cycle visits them: the queue's, and once every reservation is made,
  // backfill candidates shortest first (all arrivals OnArrival answers are behind the last
  // reservation). The order matters when they compete for the same room.
  std::sort(planned.begin(), planned.end(), [](const Arrival& a, const Arrival& b) {
    return queue::ComesBefore({a.priority.total, a.workload.submit_time, &a.workload.id},
                              {b.priority.total, b.workload.submit_time, &b.workload.id});
  });
  if (queue_config_.backfill_shortest_first && queue_config_.backfill == queue::BackfillMode::kBackfill &&
      queue_config_.reservation_depth > 0 &&
      static_cast<int>(last_plan_->reservations.size()) >= queue_config_.reservation_depth) {
    auto duration = [](const Arrival& a) {
      return a.workload.time_limit ? std::max<queue::Duration>(1, *a.workload.time_limit) : queue::kForever;
    };
    std::stable_sort(planned.begin(), planned.end(),
                     [&](const Arrival& a, const Arrival& b) { return duration(a) < duration(b); });
  }
  // Planned all before anything is done: if one needs the full cycle, nothing was acted on.
  std::vector<queue::PlanDelta> deltas;
  for (const Arrival& a : planned) {
    absl::StatusOr<queue::PlanDelta> delta = planner_->OnArrival(a.workload, now);
    // Ahead of a reservation or a preemptor (needs_full_cycle), a reservation of its own (the next
    // full plan must keep it as a promise), nodes changing hands: the full cycle's.
    if (!delta.ok() || delta->needs_full_cycle || !delta->reservations.empty() || !delta->owner_changes.empty()) {
      return false;
    }
    deltas.push_back(*std::move(delta));
  }

  stats->incremental = true;
  for (const std::string& identity : confirmed) assumed_.erase(identity);
  for (auto& record : seen) arrival_basis_.since[record->key] = std::move(record);
  for (size_t i = 0; i < planned.size(); ++i) {
    const Arrival& a = planned[i];
    const queue::PlanDelta& delta = deltas[i];
    arrival_basis_.pending.insert(a.pod->key);
    for (const queue::StartDecision& start : delta.starts) {
      if (start.member_nodes.empty()) continue;
      const std::string& node = basis.nodes[start.member_nodes[0]].name;
      const std::string id(PodIdentity(*a.pod));
      if (binding_.count(id)) continue;
      SendBinding(id, a.pod->key, node,
                  absl::StrCat("Successfully assigned ", a.pod->key, " to ", node, " by onequeue; ",
                               DescribePriority(a.priority), start.backfilled ? "; backfilled" : ""));
    }
    if (delta.waiting) {
      ++stats->waiting;
      ++arrival_basis_.waiting_arrivals;
      // What ReportFor says: no refused preemption, partly bound gang or Slurm job is involved.
      // The position counts the workloads started since the full cycle as still ahead.
      const queue::WaitingStatus& w = *delta.waiting;
      WriteWaitReport({a.pod->key},
                      WaitReport{queue::WaitReasonName(w.reason), std::string(w.Message()), w.queue_position,
                                 w.estimated_start},
                      stats);
    }
  }
  // Whatever has landed already (all of it with synchronous actions) counts in this cycle.
  DrainBindResults(now, stats);
  stats->pending = static_cast<int>(basis.pending.size()) + arrival_basis_.waiting_arrivals;
  arrival_basis_.generation = changes->generation;
  MarkPhase("snapshot");
  MarkPhase("plan");
  MarkPhase("act");
  return true;
}

CycleStats SchedulingLoop::RunCycle(queue::Time now) {
  CycleStats stats;
  if (RunArrivalCycle(now, &stats)) return stats;
  const std::shared_ptr<const KubeState> state = view_->State();
  const std::shared_ptr<const slurm::SlurmView> slurm_view = FreshSlurmView(now, &stats);
  DrainBindResults(now, &stats);
  std::map<std::string, std::string> assumed_bindings = ForgetConfirmedAssumptions(*state, slurm_view.get(), now);
  std::set<std::string> terminating;
  for (const auto& p : state->pods) {
    if (p->deleting) terminating.insert(p->key);
  }
  // Owners as the informer shows them, except where this process wrote a value the watch has not
  // shown yet (however long it lags: the override lasts until the watch shows the write or a later
  // version). Reservations are recovered from what step 1 wrote, so a restarted or newly elected
  // scheduler finishes (or rolls back) what its predecessor began.
  node_owner_.clear();
  node_version_.clear();
  for (const auto& n : state->nodes) {
    std::string value = n->owner;
    std::string version = n->resource_version;
    if (auto w = owner_written_.find(n->name); w != owner_written_.end()) {
      if (version == w->second.written_version || !w->second.earlier_versions.count(version)) {
        owner_written_.erase(w);
      } else {
        value = w->second.value;
        version = w->second.written_version;
      }
    }
    node_owner_[n->name] = value;
    node_version_[n->name] = std::move(version);
    if (absl::StartsWith(value, kReservedPrefix)) {
      reservations_[n->name] = value.substr(std::string(kReservedPrefix).size());
    }
  }
  // A node deleted takes its marks with it: nothing is written to a node that is gone.
  std::erase_if(owner_written_, [&](const auto& w) { return !node_owner_.count(w.first); });
  for (auto it = reservations_.begin(); it != reservations_.end();) {
    if (node_owner_.count(it->first)) {
      ++it;
      continue;
    }
    spdlog::info("node {} reserved for {} is gone; its reservation is dropped", it->first, it->second);
    owner_before_reserve_.erase(it->first);
    last_fence_.erase(it->first);
    it = reservations_.erase(it);
  }

  SnapshotOptions options = PolicyOptions();
  options.assumed_bindings = std::move(assumed_bindings);
  for (const auto& [node, write] : owner_written_) options.owner_overrides[node] = write.value;
  options.admitted = &admitted_;
  options.usage = &usage_;
  BuiltSnapshot built = BuildSnapshot(*state, options, now);
  PlaceRestOfPartlyBoundGangs(&built);
  admitted_ = std::move(built.admitted);
  std::set<std::string> edits(built.ignored_edits.begin(), built.ignored_edits.end());
  for (const std::string& e : edits) {
    if (!reported_edits_.count(e)) stats.ignored_edits.push_back(e);
  }
  reported_edits_ = std::move(edits);
  ChargeUsage(built, slurm_view.get(), now);
  built.snapshot->usage = usage_;
  slurm_records_ = SlurmRecords{};
  if (slurm_view != nullptr) {
    slurm_records_ = AddSlurmWorld(slurm_view, SlurmOptions(built, now), queue_config_, &built, now);
    last_joined_.clear();
    for (const auto& [name, joined] : slurm_records_.nodes) last_joined_.insert(name);
    slurm_seen_ = true;
  } else if (slurm_ != nullptr) {
    FenceUnknownNodes(&built);
  }
  stats.pending = static_cast<int>(built.snapshot->pending.size());
  ReleaseFinishedReservations(built, now, &stats);
  LearnAccounts(*built.snapshot);

  MarkPhase("snapshot");
  // Shared: the published status keeps it (and its snapshot) after the cycle.
  // With queue.keepReservations (the default), last cycle's reservations are promises: each
  // holder keeps its start or gets an earlier one (docs/queue.md "Promises"), so the estimated
  // start a user reads does not slip.
  const auto planned = std::make_shared<const queue::Plan>(planner_->PlanCycle(
      built.snapshot, now,
      config_.queue.keep_reservations && last_plan_ != nullptr
          ? queue::CarryReservations(*last_plan_, *built.snapshot)
          : std::vector<queue::PromisedReservation>{}));
  last_plan_ = planned;
  const queue::Plan& plan = *planned;
  MarkPhase("plan");
  std::map<std::string, size_t> pending_index;
  for (size_t i = 0; i < built.snapshot->pending.size(); ++i) pending_index[built.snapshot->pending[i].id] = i;
  std::map<std::string, std::vector<std::string>> owner_changes;  // workload -> nodes changing hands
  for (const auto& c : plan.owner_changes) {
    owner_changes[c.for_workload].push_back(built.snapshot->nodes[c.node].name);
  }
  std::set<std::string> touched;
  // The pods started this cycle are assumed under their UID.
  absl::flat_hash_map<std::string_view, std::string_view> identity_of;
  if (!plan.starts.empty()) {
    identity_of.reserve(state->pods.size());
    for (const auto& p : state->pods) {
      if (p->node_name.empty()) identity_of[p->key] = PodIdentity(*p);
    }
  }

  for (const auto& start : plan.starts) {
    if (SlurmJobOf(start.workload)) {
      StartSlurmJob(start, built, now, &touched, &stats);
      continue;
    }
    auto pods_of = built.pending_pods.find(start.workload);
    if (pods_of == built.pending_pods.end()) continue;
    // Nodes taken from Slurm change hands first; if one cannot yet, the pods wait a cycle.
    bool nodes_ready = true;
    if (auto c = owner_changes.find(start.workload); c != owner_changes.end()) {
      for (const std::string& node : c->second) {
        touched.insert(node);
        nodes_ready = TakeNodeFor(node, start.workload, now, &stats) && nodes_ready;
      }
    }
    if (!nodes_ready) continue;
    const auto& keys = pods_of->second.pod_keys;
    auto index = pending_index.find(start.workload);
    const std::string why = index == pending_index.end() ? "" : DescribePriority(plan.priorities[index->second]);
    for (size_t i = 0; i < keys.size() && i < start.member_nodes.size(); ++i) {
      const std::string& node = built.snapshot->nodes[start.member_nodes[i]].name;
      auto identity = identity_of.find(keys[i]);
      const std::string id(identity == identity_of.end() ? std::string_view(keys[i]) : identity->second);
      if (binding_.count(id)) continue;  // cannot happen: an in-flight pod is assumed, not pending
      SendBinding(id, keys[i], node,
                  absl::StrCat("Successfully assigned ", keys[i], " to ", node, " by onequeue; ", why,
                               start.backfilled ? "; backfilled" : ""));
    }
  }
  // Whatever has landed already (all of it with synchronous actions) counts in this cycle.
  DrainBindResults(now, &stats);

  RetrySlurmVictims(built, now, &stats);
  std::vector<PlannedEvictions> evictions;
  for (const auto& p : plan.preemptions) StartPreemption(p, built, terminating, now, &touched, &stats, &evictions);
  EvictInWaves(&evictions, built, now, &stats);
  ReleaseUnusableReservations(plan, built, now, &touched);

  std::map<std::string, WaitReport, std::less<>> reports;  // for the published status
  for (const std::string& key : actions_->TakeFailedReports()) last_report_.erase(key);  // write again
  for (const auto& w : plan.waiting) {
    auto pods_of = built.pending_pods.find(w.workload);
    if (pods_of == built.pending_pods.end()) continue;
    ++stats.waiting;
    const WaitReport report = ReportFor(w, plan, built);
    if (board_ != nullptr) reports.emplace(std::string(w.workload), report);
    WriteWaitReport(pods_of->second.pod_keys, report, &stats);
  }
  // Pods no longer pending (deleted, bound): forget their last reports, here and in the actions.
  std::set<std::string_view> pending_keys;
  for (const auto& [workload, pods] : built.pending_pods) pending_keys.insert(pods.pod_keys.begin(), pods.pod_keys.end());
  for (auto it = last_report_.begin(); it != last_report_.end();) {
    if (pending_keys.count(it->first)) {
      ++it;
      continue;
    }
    actions_->ForgetWaiting(it->first);
    it = last_report_.erase(it);
  }
  if (slurm_ != nullptr && slurm_view != nullptr) {
    HoldWaitingJobs(plan, &stats);
    ReconcileSlurmNodes(touched, now, &stats);
  }
  MarkPhase("act");
  // What the next cycles plan arrivals against (RunArrivalCycle). A start that waited for its
  // nodes to change hands did not happen although the planner counts it: the next cycle is full.
  arrival_basis_.at = now;
  arrival_basis_.generation = state->generation;
  arrival_basis_.snapshot = built.snapshot;
  arrival_basis_.pending.clear();
  arrival_basis_.waiting_arrivals = 0;
  arrival_basis_.state = state;
  arrival_basis_.by_key.clear();
  arrival_basis_.since.clear();
  for (const auto& [workload, pods] : built.pending_pods) {
    arrival_basis_.pending.insert(pods.pod_keys.begin(), pods.pod_keys.end());
  }
  need_full_cycle_ = !plan.owner_changes.empty();
  if (board_ != nullptr) PublishStatus(planned, std::move(built), std::move(reports), now);
  return stats;
}

void SchedulingLoop::PublishStatus(std::shared_ptr<const queue::Plan> plan, BuiltSnapshot built,
                                   std::map<std::string, WaitReport, std::less<>> reports, queue::Time now) {
  auto status = std::make_shared<CycleStatus>();
  status->now = now;
  status->plan = std::move(plan);
  status->pending_pods = std::move(built.pending_pods);
  status->running_pods = std::move(built.running_pods);
  status->slurm = slurm_records_;
  status->reports = std::move(reports);
  status->node_owner = node_owner_;
  status->lent_idle_since = lent_idle_since_;
  status->return_after_seconds = config_.slurm.return_after_seconds;
  board_->Publish(std::move(status));
}

}  // namespace onequeue::scheduler

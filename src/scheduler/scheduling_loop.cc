#include "scheduler/node_split.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/dra_pods.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "queue/priority.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {

std::string DescribePriority(const queue::PriorityBreakdown& p) {
  return absl::StrFormat("priority %.1f (age %.2f, fair-share %.2f, size %.2f, partition %.2f, qos %.2f)",
                         p.total, p.age, p.fair_share, p.job_size, p.partition, p.qos);
}

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
  q.max_age = config.queue.max_age_seconds;
  q.starvation_bound = config.queue.starvation_bound_seconds;
  q.starvation_bound_limits = config.queue.starvation_bound_time_limits;
  q.max_starving_reservations = static_cast<int32_t>(config.queue.starvation_reservations_per_cycle);
  // Validated by the config loader (ParseConfig refuses any other name).
  q.starvation_remedy =
      queue::StarvationRemedyNamed(config.queue.starvation_remedy).value_or(queue::QueueConfig::StarvationRemedy::kFront);
  q.starvation_width_scale = config.queue.starvation_bound_width_scale;
  // Validated by the config loader, like the remedy.
  q.starving_order =
      queue::StarvingOrderNamed(config.queue.starving_order).value_or(queue::QueueConfig::StarvingOrder::kOldest);
  q.reservation_depth = config.queue.reservation_depth;
  q.backfill_shortest_first = config.queue.backfill_shortest_first;
  q.resolution = config.queue.resolution_seconds;
  q.window = config.queue.window_seconds;
  q.topology_labels = config.queue.topology_labels;
  q.preemption.min_candidate_nodes_percentage = config.queue.preemption.min_candidate_nodes_percentage;
  q.preemption.min_candidate_nodes_absolute = config.queue.preemption.min_candidate_nodes_absolute;
  return q;
}

UsageOptions UsageOptionsOf(const Config& config) {
  UsageOptions o;
  o.reclaim_partition = config.slurm.reclaim_partition;
  o.identity = SlurmIdentityOf(config);
  o.half_life = config.queue.usage_half_life_seconds;
  o.charge_interval = config.queue.usage_charge_seconds;
  o.weights = config.queue.tres_billing_weights;
  o.gres_resources = config.slurm.gres_resources;
  o.scheduler_name = config.scheduler_name;
  return o;
}

SchedulingLoop::SchedulingLoop(const Config& config, const ClusterView* view, ClusterActions* actions,
                               SlurmActions* slurm, Failpoint failpoint)
    : config_(config),
      queue_config_(ToQueueConfig(config)),
      view_(view),
      actions_(actions),
      slurm_(slurm),
      failpoint_(std::move(failpoint)),
      planner_(std::make_unique<queue::QueuePlanner>(queue_config_, &preemption_)),
      owners_(actions),
      lending_(config, slurm, actions, &owners_, failpoint_),
      preemptions_(config, actions, slurm, &owners_, &lending_, failpoint_),
      bindings_(actions),
      waiting_(actions, queue_config_.resolution),
      usage_(UsageOptionsOf(config)),
      time_limits_(config.scheduler_name, config.queue.over_time_limit_seconds, actions),
      mirrors_(PodMirrorOptions{.identity = SlurmIdentityOf(config), .failpoint = failpoint_}, slurm),
      shares_nodes_(!SlurmWorldOptionsOf(config).sharing_partitions.empty()),
      job_claims_(JobClaimOptions{}, slurm) {}

CycleStats SchedulingLoop::RunCycle(queue::Time now) {
  CycleStats stats;
  if (RunArrivalCycle(now, &stats)) return stats;
  // Issue 25 DRA: pods' claims as GPUs on gpus: dra nodes (by the last cycle's join with Slurm).
  const std::shared_ptr<const KubeState> state = WithDraGpus(view_->State(), DraNodesOf(config_.slurm, slurm_records_));
  const std::shared_ptr<const slurm::SlurmView> slurm_view =
      lending_.Observe(slurm_ != nullptr ? view_->Slurm() : nullptr, now, &stats);
  DrainBindResults(now, &stats);
  SnapshotOptions options = ReadWorld(*state, now);
  if (slurm_view != nullptr) lending_.ConfirmStarts(*slurm_view, now, &stats);
  BuiltSnapshot built = BuildCycleSnapshot(*state, std::move(options), slurm_view, now, &stats);
  if (slurm_view != nullptr && lending_.known()) {
    const bool reading_back = !mirrors_rebuilt_;
    AdvanceMirrors(*state, *slurm_view, built, now, &stats);
    // The mirrors were just read back from Slurm (the first cycle with its view, a successor's
    // among them): the snapshot above did not count their pods on their nodes, claims included,
    // so this cycle's plan would give a claimed room away (issue 24 G4). Built again, once.
    if (reading_back && mirrors_rebuilt_ && !mirrors_.records().empty()) {
      built = BuildCycleSnapshot(*state, ReadWorld(*state, now), slurm_view, now, &stats);
    }
  }
  std::set<std::string> terminating, touched;
  for (const auto& p : state->pods) {
    if (p->deleting) terminating.insert(p->key);
  }
  const PreemptionCycle cycle{built, slurm_records_, terminating, now, &stats, &touched};
  LearnAccounts(*built.snapshot);
  MarkPhase("snapshot");

  const std::shared_ptr<const queue::Plan> planned = Plan(built, now);
  const queue::Plan& plan = *planned;
  MarkPhase("plan");

  StartWorkloads(plan, built, *state, now, &touched, &stats);
  BindMirrored(*state, now);
  DrainBindResults(now, &stats);  // whatever has landed already counts in this cycle
  // Nothing released without Slurm's view (issue 24 H1); after the bindings (issue 26: none waits
  // for these writes; the plan is the same, its snapshot read before them).
  if (lending_.known()) stats.run_again = preemptions_.ReleaseFinished(cycle);
  if (lending_.known()) preemptions_.RetryVictims(cycle);
  preemptions_.Start(WholeNodePreemptions(plan.preemptions, *built.snapshot), WithNominationReports(plan, cycle));
  if (lending_.known()) StartSubNodePreemptions(plan.preemptions, *state, cycle);
  if (lending_.known()) StartSubNodeJobPreemptions(plan.preemptions, cycle);
  time_limits_.Enforce(*state, admitted_, now, &stats);
  if (lending_.known()) preemptions_.ReleaseUnusable(plan, cycle);
  std::map<std::string, WaitReport, std::less<>> reports = ReportWaiting(plan, built, &stats);
  if (slurm_view != nullptr) {
    lending_.HoldWaitingJobs(plan, slurm_records_, &stats, job_claims_.CommentsOwned(now));
    lending_.Reconcile(slurm_records_, touched, now, &stats);
  }
  if (shares_nodes_) AnnotateSplits(built);
  MarkPhase("act");
  RememberArrivalBasis(state, built, slurm_view, now);
  // A start that waited for its nodes to change hands did not happen although the planner counts
  // it: the next cycle is full.
  need_full_cycle_ = !plan.owner_changes.empty();
  if (board_ != nullptr) PublishStatus(planned, std::move(built), std::move(reports), now);
  return stats;
}

SnapshotOptions SchedulingLoop::ReadWorld(const KubeState& state, queue::Time now) {
  SnapshotOptions options = PolicyOptions();
  options.assumed_bindings = bindings_.Forget(state, now);
  // A pod whose placeholder is under way holds its place on its node until it is bound or undone
  // (its placeholder is not counted: the pod is). Until it is bound it is no victim either (issue
  // 25 G3): its bind may land in the very cycle whose claim would name it (BindMirrored), so a
  // preemptor that needs its room waits for the bind (or the undo) and plans again.
  for (const auto& [uid, r] : mirrors_.records()) {
    if (r.state == MirrorState::kPlanned || r.state == MirrorState::kPlaceholderPending ||
        r.state == MirrorState::kPlaceholderRunning || r.state == MirrorState::kClaimed ||
        r.state == MirrorState::kWaitingForVictims || r.state == MirrorState::kSubmitUnknown ||
        r.state == MirrorState::kClaimWritten) {
      options.assumed_bindings.emplace(r.pod.key, r.node.node);
      options.claims.insert(r.pod.key);  // covers MirrorClaimStands (C1) and the unbound (G3)
    }
  }
  if (preemptions_.HasEvictedPods()) {
    std::set<std::string_view> keys;
    for (const auto& p : state.pods) keys.insert(p->key);
    preemptions_.ForgetGonePods([&](const std::string& key) { return keys.count(key) > 0; });
  }
  // Owners as the informer shows them, except where this process wrote a value the watch has not
  // shown yet. Reservations are recovered from what step 1 wrote, so a restarted or newly elected
  // scheduler finishes (or rolls back) what its predecessor began.
  owners_.Read(state);
  preemptions_.Recover();
  options.owner_overrides = owners_.Unshown();
  options.admitted = &admitted_;
  options.usage = &usage_.usage();
  return options;
}

BuiltSnapshot SchedulingLoop::BuildCycleSnapshot(const KubeState& state, SnapshotOptions options,
                                                 const std::shared_ptr<const slurm::SlurmView>& slurm_view,
                                                 queue::Time now, CycleStats* stats) {
  BuiltSnapshot built = BuildSnapshot(state, options, now);
  PlaceRestOfPartlyBoundGangs(&built);
  admitted_ = std::move(built.admitted);
  std::set<std::string> edits(built.ignored_edits.begin(), built.ignored_edits.end());
  for (const std::string& e : edits) {
    if (!reported_edits_.count(e)) stats->ignored_edits.push_back(e);
  }
  reported_edits_ = std::move(edits);
  usage_.Charge(built, slurm_view.get(), now);
  built.snapshot->usage = usage_.usage();
  slurm_records_ = SlurmRecords{};
  if (slurm_view != nullptr) {
    // Issue 29: Slurm's PriorityTier is the partition factor; the planner keeps its config.
    if (UpdatePartitionTiers(*slurm_view, config_.slurm.shared_partitions, &queue_config_))
      planner_ = std::make_unique<queue::QueuePlanner>(queue_config_, &preemption_);
    // Issue 25 step 4: a job claiming room on a shared node counts there, as a start not yet seen
    // does (job_claim.h); the claims are read back from Slurm on the first cycle with its view.
    if (!job_claims_rebuilt_ && slurm_view->jobs != nullptr) {
      job_claims_.Rebuild(*slurm_view->jobs, now);
      job_claims_rebuilt_ = true;
    }
    SlurmWorldOptions world = lending_.Options(built, now);
    for (auto& [job, nodes] : job_claims_.Holding()) {
      world.claimed_jobs.insert(job);
      world.assumed_starts.emplace(job, std::move(nodes));
    }
    for (auto& [task, nodes] : job_claims_.HoldingTasks()) {  // an array task's claim
      world.claimed_jobs.insert(task.first);
      world.started_tasks[task] = std::move(nodes);
    }
    slurm_records_ = AddSlurmWorld(slurm_view, world, queue_config_, &built, now);
    lending_.Joined(slurm_records_);
  } else if (slurm_ != nullptr) {
    lending_.FenceUnknownNodes(&built);
  }
  stats->pending = static_cast<int>(built.snapshot->pending.size());
  return built;
}

std::shared_ptr<const queue::Plan> SchedulingLoop::Plan(const BuiltSnapshot& built, queue::Time now) {
  // Shared: the published status keeps it (and its snapshot) after the cycle.
  // With queue.keepReservations (off by default), last cycle's reservations are promises: each
  // holder keeps its start or gets an earlier one (docs/queue.md "Promises"), so the estimated
  // start a user reads does not slip.
  last_plan_ = std::make_shared<const queue::Plan>(planner_->PlanCycle(
      built.snapshot, now,
      config_.queue.keep_reservations && last_plan_ != nullptr
          ? queue::CarryReservations(*last_plan_, *built.snapshot)
          : std::vector<queue::PromisedReservation>{}));
  return last_plan_;
}

bool SchedulingLoop::TakeNodes(const queue::Plan& plan, const std::string& workload, const BuiltSnapshot& built,
                               queue::Time now, std::set<std::string>* touched, CycleStats* stats) {
  bool ready = true;
  for (const auto& c : plan.owner_changes) {
    if (c.for_workload != workload) continue;
    const std::string& node = built.snapshot->nodes[c.node].name;
    touched->insert(node);
    const bool was_reserved = owners_.Of(node).reserved();
    const bool taken = lending_.TakeNodeFor(node, workload, slurm_records_, now, stats);
    // A reservation taken back this way is released by the write (the fence is re-tagged later).
    if (taken && was_reserved && owners_.Of(node).kubernetes()) {
      preemptions_.Consumed(node, /*fail_after=*/true);
      retaken_this_cycle_.insert(node);
    }
    ready = taken && ready;
  }
  return ready;
}

void SchedulingLoop::StartWorkloads(const queue::Plan& plan, const BuiltSnapshot& built, const KubeState& state,
                                    queue::Time now, std::set<std::string>* touched, CycleStats* stats) {
  // The pods started this cycle are assumed under their UID.
  absl::flat_hash_map<std::string_view, std::string_view> identity_of;
  absl::flat_hash_map<std::string_view, const PodRecord*> record_of;
  if (!plan.starts.empty()) {
    identity_of.reserve(state.pods.size());
    for (const auto& p : state.pods) {
      if (!p->node_name.empty()) continue;
      identity_of[p->key] = PodIdentity(*p);
      if (!shared_nodes_.empty()) record_of[p->key] = p.get();
    }
  }
  retaken_this_cycle_.clear();
  volumes_chosen_.clear();
  std::map<std::string, size_t, std::less<>> pending_index;
  for (size_t i = 0; i < built.snapshot->pending.size(); ++i) pending_index[built.snapshot->pending[i].id] = i;
  for (const auto& start : plan.starts) {
    if (SlurmJobOf(start.workload)) {
      if (VictimOfAStandingClaim(start.workload)) continue;  // G6: not before that claim runs
      for (const std::string& node : lending_.StartJob(start, built, slurm_records_, now, touched, stats)) {
        preemptions_.Consumed(node, /*fail_after=*/false);
      }
      continue;
    }
    auto pods_of = built.pending_pods.find(start.workload);
    if (pods_of == built.pending_pods.end()) continue;
    // Nodes taken from Slurm change hands first; if one cannot yet, the pods wait a cycle.
    if (!TakeNodes(plan, start.workload, built, now, touched, stats)) continue;
    const auto& keys = pods_of->second.pod_keys;
    auto index = pending_index.find(start.workload);
    const std::string why = index == pending_index.end() ? "" : DescribePriority(plan.priorities[index->second]);
    for (size_t i = 0; i < keys.size() && i < start.member_nodes.size(); ++i) {
      const std::string& node = built.snapshot->nodes[start.member_nodes[i]].name;
      auto identity = identity_of.find(keys[i]);
      const std::string id(identity == identity_of.end() ? std::string_view(keys[i]) : identity->second);
      if (bindings_.InFlight(id)) continue;  // cannot happen: an in-flight pod is assumed, not pending
      // Before the first view of Slurm a daemon does not know which nodes are shared: no pod is
      // bound while the configuration shares any partition (a fresh daemon's first cycles).
      if (!mirrors_rebuilt_ && slurm_ != nullptr && shares_nodes_) continue;
      if (!BindPreMadeVolumes(built, keys[i], node)) continue;  // bound once its volumes name its claims
      if (!SelectVolumeNodes(built, keys[i], node)) continue;  // bound once its claims name the node
      if (shared_nodes_.count(node)) {
        auto record = record_of.find(keys[i]);
        if (MirrorInsteadOfBinding(record == record_of.end() ? nullptr : record->second, node, now)) continue;
      }
      SendBinding(id, keys[i], node,
                  absl::StrCat("Successfully assigned ", keys[i], " to ", node, " by onequeue; ", why,
                               start.backfilled ? "; backfilled" : ""));
    }
  }
}

std::map<std::string, WaitReport, std::less<>> SchedulingLoop::ReportWaiting(const queue::Plan& plan,
                                                                             const BuiltSnapshot& built,
                                                                             CycleStats* stats) {
  std::map<std::string, WaitReport, std::less<>> reports;  // for the published status
  waiting_.RewriteFailed();
  for (const auto& w : plan.waiting) {
    auto pods_of = built.pending_pods.find(w.workload);
    if (pods_of == built.pending_pods.end()) continue;
    ++stats->waiting;
    const std::string* blocked = preemptions_.BlockedMessage(w.workload);
    // A sub-node preemption refused lately (issue 25 step 4) says so likewise.
    if (blocked == nullptr) blocked = RefusedClaim(pods_of->second.pod_keys);
    const WaitReport report = ExplainWait(w, plan, built, slurm_records_, blocked);
    if (board_ != nullptr) reports.emplace(std::string(w.workload), report);
    // Issue 26: a preemptor whose victims were asked in an earlier cycle shows where it goes (its
    // nomination) and why it waits (the report written then); kube-scheduler writes one report for
    // it too. Rewriting it each cycle as its position moves cost two pod writes, and its binding
    // waits for a report in flight.
    if (preemptions_.AskedEarlier(w.workload) && waiting_.Shown(pods_of->second.pod_keys)) continue;
    waiting_.Write(pods_of->second.pod_keys, report, stats);
  }
  // Pods no longer pending (deleted, bound): forget their last reports, here and in the actions.
  std::set<std::string_view> pending_keys;
  for (const auto& [workload, pods] : built.pending_pods) pending_keys.insert(pods.pod_keys.begin(), pods.pod_keys.end());
  waiting_.KeepOnly(pending_keys);
  return reports;
}

PreemptionCycle SchedulingLoop::WithNominationReports(const queue::Plan& plan, const PreemptionCycle& cycle) {
  PreemptionCycle c = cycle;
  if (plan.preemptions.empty()) return c;
  std::map<std::string_view, const queue::WaitingStatus*> waiting;
  for (const auto& w : plan.waiting) waiting.emplace(w.workload, &w);
  // Issue 26: what ReportWaiting would write for the preemptor's pod, now, to go with its
  // nomination. Its preemption goes ahead (a refusal later in the cycle is reported by
  // ReportWaiting, the words having changed).
  c.report_to_show = [this, &plan, &built = cycle.built, waiting = std::move(waiting)](
                         std::string_view preemptor, const std::string& pod_key) -> std::optional<WaitReport> {
    auto w = waiting.find(preemptor);
    if (w == waiting.end()) return std::nullopt;
    auto pods = built.pending_pods.find(preemptor);
    const std::string* blocked = nullptr;
    if (pods != built.pending_pods.end()) blocked = RefusedClaim(pods->second.pod_keys);
    return waiting_.Unshown(pod_key, ExplainWait(*w->second, plan, built, slurm_records_, blocked));
  };
  c.report_shown = [this, stats = cycle.stats](const std::string& pod_key, const WaitReport& shown) {
    waiting_.Sent(pod_key, shown, stats);
  };
  return c;
}

void SchedulingLoop::RememberArrivalBasis(const std::shared_ptr<const KubeState>& state, const BuiltSnapshot& built,
                                          const std::shared_ptr<const slurm::SlurmView>& slurm_view,
                                          queue::Time now) {
  // What the next cycles plan arrivals against (RunArrivalCycle).
  arrival_basis_.at = now;
  arrival_basis_.generation = state->generation;
  arrival_basis_.snapshot = built.snapshot;
  arrival_basis_.pending.clear();
  arrival_basis_.waiting_arrivals = 0;
  arrival_basis_.state = state;
  arrival_basis_.by_key.clear();
  arrival_basis_.since.clear();
  arrival_basis_.slurm = lending_.known() ? slurm_view : nullptr;
  for (const auto& [workload, pods] : built.pending_pods) {
    arrival_basis_.pending.insert(pods.pod_keys.begin(), pods.pod_keys.end());
  }
}

void SchedulingLoop::LearnAccounts(const queue::Snapshot& snapshot) {
  if (!config_.queue.accounts.empty()) return;
  if (!usage_.Learn(snapshot)) return;
  queue_config_.accounts = usage_.LearnedAccounts();
  planner_ = std::make_unique<queue::QueuePlanner>(queue_config_, &preemption_);
}

void SchedulingLoop::DrainBindResults(queue::Time now, CycleStats* stats) {
  bindings_.Drain(now, stats, [this](const std::string& key) { waiting_.Forget(key); });
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

SnapshotOptions SchedulingLoop::PolicyOptions() const {
  SnapshotOptions options;
  options.scheduler_name = config_.scheduler_name;
  options.pool_label = config_.pool_label;
  for (const auto& q : config_.queue.qos) options.known_qos.push_back(q.name);
  for (const auto& p : config_.queue.namespace_policies) {
    options.namespace_policies[p.namespace_] = {p.allowed_qos, p.default_qos, p.allowed_accounts, p.default_account};
  }
  options.queue_config = &queue_config_;
  for (const auto& [partition, sharing] : config_.slurm.partition_sharing)
    if (sharing == "shared-same-tenant") options.tenancy = &config_.sharing;
  return options;
}

void SchedulingLoop::AdvanceMirrors(const KubeState& state, const slurm::SlurmView& view, const BuiltSnapshot& built,
                                    queue::Time now, CycleStats* stats) {
  shared_nodes_.clear();
  for (const queue::Node& n : built.snapshot->nodes) {
    if (n.sharing != queue::NodeSharing::kShared) continue;
    auto joined = slurm_records_.nodes.find(n.name);
    if (joined == slurm_records_.nodes.end()) continue;
    MirrorNode m{n.name, joined->second.slurm_name, ""};
    for (const std::string& p : joined->second.partitions) {
      auto s = config_.slurm.partition_sharing.find(p);
      if (s != config_.slurm.partition_sharing.end() && (s->second == "shared" || s->second == "shared-same-tenant")) {
        m.partition = p;
        break;
      }
    }
    if (!m.partition.empty()) shared_nodes_.emplace(n.name, std::move(m));
  }
  if (mirrors_rebuilt_ && shared_nodes_.empty() && mirrors_.records().empty()) return;
  // The two listings: onequeue's pod placeholders, and this scheduler's pods that have a record or
  // are bound on a shared node.
  std::vector<slurm::SlurmJob> placeholders;
  if (view.jobs != nullptr) {
    for (const auto& [id, job] : *view.jobs) {
      if (MirroredUid(job, SlurmIdentityOf(config_))) placeholders.push_back(job);
    }
  }
  std::map<std::string, MirroredPod> pods;
  for (const auto& p : state.pods) {
    if (p->terminal || p->daemon || p->scheduler_name != config_.scheduler_name) continue;
    const std::string uid(PodIdentity(*p));
    if (!mirrors_.Find(uid) && !shared_nodes_.count(p->node_name) && mirrors_rebuilt_) continue;
    pods.emplace(uid, MirroredPodOf(*p));
  }
  if (!mirrors_rebuilt_) {
    mirrors_.Rebuild(placeholders, pods, shared_nodes_, now);
    mirrors_rebuilt_ = true;
  } else {
    mirrors_.AdoptUnmirrored(pods, shared_nodes_, now);
  }
  mirrors_.Advance(placeholders, pods, now,
                   view.refreshed_at == absl::InfinitePast() ? now : absl::ToUnixSeconds(view.refreshed_at));
  ReportLostMirrors(now, stats);
}

void SchedulingLoop::AnnotateSplits(const BuiltSnapshot& built) {
  for (const NodeSplit& split : SharedNodeSplits(*built.snapshot, slurm_records_)) {
    const std::string value = DescribeSplit(split, built.snapshot->resource_names);
    auto& written = split_written_[split.node];
    if (written == value) continue;
    if (absl::Status s = actions_->AnnotateNode(split.node, kSplitAnnotation, value); !s.ok()) {
      spdlog::warn("node {}: {} not written: {}", split.node, kSplitAnnotation, std::string(s.message()));
      continue;
    }
    written = value;
  }
}

void SchedulingLoop::ReportLostMirrors(queue::Time now, CycleStats* stats) {
  for (const PodMirrorRecord* r : mirrors_.Lost(now)) {
    if (r->lost_reported) continue;
    const std::string note = absl::StrCat(
        "the Slurm placeholder that mirrors this pod on shared node ", r->node.node,
        " was lost (cancelled, timed out or forgotten by slurmctld) and a new one has not started in ",
        now - r->since, " s: Slurm may have given the pod's CPUs, memory or GPUs to its own jobs", r->why.empty() ? "" : "; ",
        r->why);
    const bool evict = config_.sharing.on_lost_mirror == "evict";
    if (evict) {
      absl::Status s = actions_->Evict(r->pod.key, "sharing.onLostMirror",
                                       absl::StrCat("Evicted by onequeue (sharing.onLostMirror: evict): ", note));
      if (!s.ok() && !absl::IsNotFound(s)) {
        spdlog::warn("pod {}: not evicted after losing its placeholder: {}", r->pod.key, std::string(s.message()));
        continue;  // evicted and reported by a later cycle
      }
    }
    if (absl::Status s = actions_->PodEvent(r->pod.key, kMirrorLostReason,
                                            evict ? absl::StrCat(note, "; evicted (sharing.onLostMirror: evict)") : note);
        !s.ok()) {
      spdlog::warn("pod {}: {} not reported: {}", r->pod.key, kMirrorLostReason, std::string(s.message()));
      continue;  // reported by a later cycle
    }
    spdlog::warn("pod {}: {}", r->pod.key, note);
    stats->mirrors_lost.push_back(r->node.node);
    mirrors_.MarkReported(r->pod.uid);
  }
}

bool SchedulingLoop::MirrorInsteadOfBinding(const PodRecord* pod, const std::string& node, queue::Time now) {
  if (pod == nullptr || slurm_ == nullptr) return false;
  const MirroredPod m = MirroredPodOf(*pod);
  if (mirrors_.Find(m.uid) != nullptr) return true;  // under way (or being undone): it waits
  // Issue 25 G8: Slurm's books do not hold a standing claim's room (its placeholder pends behind
  // the victims); a placeholder submitted beside it could be started by Slurm first, into that
  // room (a job Slurm started meanwhile leaving room for one of them). It waits until the claim
  // runs or is undone.
  for (const auto& [uid, r] : mirrors_.records()) {
    if (MirrorClaimStands(r) && r.node.node == node) return true;
  }
  if (absl::Status s = mirrors_.Plan(m, shared_nodes_.at(node), now); !s.ok()) {
    spdlog::warn("pod {}: not started on shared node {}: {}", pod->key, node, std::string(s.message()));
    return true;
  }
  Fail("mirror-after-submit");
  return true;
}

void SchedulingLoop::BindMirrored(const KubeState& state, queue::Time now) {
  const std::set<std::string> claiming = StepClaims(state, now);
  const std::vector<const PodMirrorRecord*> ready = mirrors_.ReadyToBind();
  if (ready.empty()) return;
  std::set<std::string_view> pending;
  for (const auto& p : state.pods) {
    if (p->node_name.empty() && !p->terminal && !p->deleting) pending.insert(PodIdentity(*p));
  }
  for (const PodMirrorRecord* r : ready) {
    if (!pending.count(r->pod.uid) || bindings_.Find(r->pod.uid) != nullptr) continue;
    if (claiming.count(r->pod.uid) && r->state != MirrorState::kClaimWritten) continue;  // its claims first
    SendBinding(r->pod.uid, r->pod.key, r->node.node,
                absl::StrCat("Successfully assigned ", r->pod.key, " to ", r->node.node,
                             " by onequeue; mirrored in Slurm by placeholder job ", r->job.value_or(0),
                             " (shared node)"));
  }
}

bool SchedulingLoop::SelectVolumeNodes(const BuiltSnapshot& built, const std::string& pod_key, const std::string& node) {
  auto claims = built.claims_to_select.find(pod_key);
  if (claims == built.claims_to_select.end()) return true;
  for (const std::string& claim : claims->second) {
    if (absl::Status s = actions_->SelectVolumeNode(claim, node); !s.ok()) {
      spdlog::warn("annotating claim {} with node {} for pod {}: {}", claim, node, pod_key, s.ToString());
      return false;  // planned again next cycle
    }
  }
  return true;
}

bool SchedulingLoop::BindPreMadeVolumes(const BuiltSnapshot& built, const std::string& pod_key,
                                        const std::string& node) {
  auto claims = built.volumes_to_bind.find(pod_key);
  if (claims == built.volumes_to_bind.end()) return true;
  for (const VolumeToBind& claim : claims->second) {
    const PreMadeVolume* chosen = nullptr;
    if (auto on_node = claim.candidates.find(node); on_node != claim.candidates.end()) {
      for (const PreMadeVolume& pv : on_node->second) {
        if (!volumes_chosen_.contains(pv.name)) {
          chosen = &pv;
          break;
        }
      }
    }
    if (chosen == nullptr) {
      if (claim.provisions) {  // no volume left here: the class provisions one
        if (absl::Status s = actions_->SelectVolumeNode(claim.claim_key, node); !s.ok()) {
          spdlog::warn("annotating claim {} with node {} for pod {}: {}", claim.claim_key, node, pod_key, s.ToString());
          return false;
        }
        continue;
      }
      spdlog::warn("pod {}: every PersistentVolume on node {} that claim {} could be bound to was taken this cycle; "
                   "planned again next cycle", pod_key, node, claim.claim_key);
      return false;
    }
    volumes_chosen_.insert(chosen->name);  // failed or not: not offered to another claim this cycle
    if (absl::Status s = actions_->BindVolume(chosen->name, chosen->resource_version, claim.claim_key, claim.claim_uid);
        !s.ok()) {
      spdlog::warn("binding persistentvolume {} to claim {} for pod {}: {}", chosen->name, claim.claim_key, pod_key,
                   s.ToString());
      return false;  // planned again next cycle
    }
  }
  return true;
}

void SchedulingLoop::SendBinding(const std::string& id, const std::string& key, const std::string& node,
                                 std::string message) {
  bindings_.Send(id, key, node, std::move(message));
  Fail("bind-after-send");
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
  status->node_owner = owners_.Values();
  status->lent_idle_since = lending_.lent_idle_since();
  status->return_after_seconds = config_.slurm.return_after_seconds;
  // Issue 29: each account's usage and fair-share factor (oq priority, like sshare).
  const auto factors = queue::ComputeFairShare(queue_config_, usage_.usage(), now);
  for (const auto& [account, used] : usage_.UsageAt(now)) status->accounts[account].usage = used;
  for (const auto& [account, factor] : factors) status->accounts[account].fair_share = factor;
  board_->Publish(std::move(status));
}

}  // namespace onequeue::scheduler

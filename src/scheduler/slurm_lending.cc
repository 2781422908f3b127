#include "scheduler/slurm_lending.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/slurm_arrays.h"
#include "scheduler/slurm_dependencies.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {
namespace {

// A job onequeue started that Slurm has not shown running after this long is planned again.
constexpr queue::Time kAssumedStartSeconds = 120;
// The same fence is not asked for twice within this long (the poller shows it a poll later).
constexpr queue::Time kFenceRetrySeconds = 10;
// A view the poller has not refreshed for this long (or ten poll intervals, whichever is longer)
// is stale: nothing is decided from it.
constexpr queue::Time kStaleSlurmViewSeconds = 30;

}  // namespace

std::shared_ptr<const slurm::SlurmView> SlurmLending::Observe(std::shared_ptr<const slurm::SlurmView> view,
                                                              queue::Time now, CycleStats* stats) {
  known_ = false;
  if (slurm_ == nullptr) return nullptr;
  if (view != nullptr && !Fresh(*view, now)) {
    spdlog::warn("the Slurm view is {}s old: nothing is decided from it until the poller answers",
                 now - absl::ToUnixSeconds(view->refreshed_at));
    view = nullptr;
  }
  known_ = view != nullptr;
  stats->slurm_unknown = !known_;
  return view;
}

bool SlurmLending::Fresh(const slurm::SlurmView& view, queue::Time now) const {
  if (view.refreshed_at == absl::InfinitePast()) return true;  // before the first poll: not stale, only empty
  const queue::Time age = now - absl::ToUnixSeconds(view.refreshed_at);
  const auto bound = std::max<queue::Time>(kStaleSlurmViewSeconds,
                                           static_cast<queue::Time>(10 * config_.slurm.poll_interval_seconds));
  return age <= bound;
}

void SlurmLending::FenceUnknownNodes(BuiltSnapshot* built) const {
  for (queue::Node& n : built->snapshot->nodes) {
    const NodeOwner& owner = owners_->Of(n.name);
    if (owner.kubernetes()) continue;  // onequeue fenced Slurm off it before
    if (owner.unmarked() && seen_ && !last_joined_.count(n.name)) continue;  // no Slurm node
    n.schedulable = false;
  }
}

void SlurmLending::Joined(const SlurmRecords& records) {
  last_joined_.clear();
  for (const auto& [name, joined] : records.nodes) last_joined_.insert(name);
  seen_ = true;
}

SlurmWorldOptions SlurmLending::Options(const BuiltSnapshot& built, queue::Time now) {
  SlurmWorldOptions o = SlurmWorldOptionsOf(config_);
  for (const auto& [job, a] : assumed_jobs_) o.assumed_starts[job] = a.nodes;
  o.started_tasks = StartedArrayTasks();
  // Hysteresis: a node pods used lately is not lent, nor is the headroom kept for interactive pods.
  const queue::Snapshot& snap = *built.snapshot;
  const std::vector<char> has_pod = NodesWithPods(snap);
  std::vector<std::string> idle_kubernetes;
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const std::string& name = snap.nodes[i].name;
    auto [seen, first_sight] = last_pod_seen_.try_emplace(name, now);
    if (has_pod[i] || !owners_->Of(name).kubernetes_or_unmarked()) seen->second = now;
    else idle_kubernetes.push_back(name);
    if (now - seen->second < config_.slurm.lend_after_seconds) o.not_lendable.insert(name);
  }
  for (int i = 0; i < config_.slurm.headroom_nodes && i < static_cast<int>(idle_kubernetes.size()); ++i) {
    o.not_lendable.insert(idle_kubernetes[i]);
  }
  return o;
}

SlurmLending::StartFate SlurmLending::FateOf(const AssumedStart& a, const slurm::SlurmView& view, uint32_t id,
                                             queue::Time listed_at, queue::Time now) {
  auto job = view.jobs->find(id);
  if (a.state == StartState::kUnknown) {
    // A view that may predate the landing says nothing (as a placeholder's unknown submit, C1).
    if (a.unknown_after == 0 || listed_at <= a.unknown_after) return StartFate::kWaiting;
    if (job == view.jobs->end() || job->second.state != slurm::JobState::kPending ||
        job->second.restart_count > a.restarts)
      return StartFate::kConfirmed;
    // Pending: released by the start (Slurm has not placed it yet), or never released. Only the
    // latter may be undone: a released job runs wherever it is let in.
    return job->second.admin_comment == a.comment ? StartFate::kReleased : StartFate::kFailed;
  }
  // Seen running (or ended, or gone): confirmed. Still pending past its time: Slurm did not
  // start it, and the next plan decides again.
  bool confirmed = job == view.jobs->end() || job->second.state != slurm::JobState::kPending ||
                   job->second.restart_count > a.restarts;
  // Issue 29: a task split off an array is missing from a view made before the split, which
  // still lists it in the array's record: not gone.
  if (job == view.jobs->end() && a.array_task) {
    auto array = view.jobs->find(a.array_task->first);
    if (array != view.jobs->end() && IsPendingArrayRecord(array->second)) {
      absl::StatusOr<slurm::ArrayTasks> tasks = slurm::ParseArrayTasks(array->second.array_tasks);
      confirmed = !tasks.ok() || std::find(tasks->ids.begin(), tasks->ids.end(), a.array_task->second) ==
                                     tasks->ids.end();
    }
  }
  if (confirmed) return StartFate::kConfirmed;
  return now > a.until ? StartFate::kLapsed : StartFate::kWaiting;
}

void SlurmLending::ConfirmStarts(const slurm::SlurmView& view, queue::Time now, CycleStats* stats) {
  const queue::Time listed_at =
      view.refreshed_at == absl::InfinitePast() ? now : absl::ToUnixSeconds(view.refreshed_at);
  for (auto it = assumed_jobs_.begin(); it != assumed_jobs_.end();) {
    AssumedStart& a = it->second;
    // The first cycle that began after the timed-out call returned: a view listed later is the answer.
    if (a.state == StartState::kUnknown && a.unknown_after == 0 && now > a.asked_at) a.unknown_after = now;
    const StartFate fate = FateOf(a, view, it->first, listed_at, now);
    if (a.state == StartState::kUnknown && (fate == StartFate::kConfirmed || fate == StartFate::kReleased)) {
      spdlog::info("Slurm job {}: its start that timed out landed", it->first);
      ReportLent(it->first, a.marked, stats);
    }
    switch (fate) {
      case StartFate::kWaiting:
        ++it;
        continue;
      case StartFate::kReleased:  // as a start that answered ok: Slurm places it when it may
        a.state = StartState::kReleased;
        a.until = now + kAssumedStartSeconds;
        ++it;
        continue;
      case StartFate::kFailed:
        spdlog::warn("Slurm job {}: its start timed out and did not land; the nodes marked for it are given back",
                     it->first);
        UndoLend(it->first, a.marked);
        break;
      case StartFate::kConfirmed:
      case StartFate::kLapsed:
        break;
    }
    it = assumed_jobs_.erase(it);
  }
}

void SlurmLending::UndoLend(uint32_t job, const LendMarks& marked) {
  for (const auto& [name, before] : marked) {
    if (owners_->Of(name) == NodeOwner::LentTo(job)) (void)owners_->Set(name, before);
  }
}

void SlurmLending::ReportLent(uint32_t job, const LendMarks& marked, CycleStats* stats) {
  for (const auto& [name, before] : marked) {
    actions_->NodeEvent(name, "Lent", absl::StrCat("Lent to Slurm for job ", job));
    ++stats->lent;
  }
}

absl::Status SlurmLending::Fence(const JoinedNode& node, const std::string& owner, queue::Time now) {
  absl::Status s = slurm_->Fence(node.slurm_name, owner);
  if (s.ok()) last_fence_[node.k8s_name] = {owner, now};
  return s;
}

bool SlurmLending::TakeNodeFor(const std::string& node, const std::string& workload, const SlurmRecords& records,
                               queue::Time now, CycleStats* stats) {
  if (!known()) return false;  // what Slurm runs there is not known (issue 24 H1)
  auto joined = records.nodes.find(node);
  const NodeOwner& owner = owners_->Of(node);
  if (slurm_ == nullptr || joined == records.nodes.end() || owner.kubernetes()) return true;
  if (owner.unmarked() && joined->second.holder.holder != slurm::NodeHolder::kSlurm) return true;
  // Slurm's side first: fenced for Kubernetes and nothing of Slurm's left running there, asked of
  // Slurm itself (the poller's view may be a poll old). Only then the node changes hands.
  absl::Status fenced = Fence(joined->second, kOwnerKubernetes, now);
  if (!fenced.ok()) {
    spdlog::warn("taking {} for {}: fencing Slurm node {}: {}", node, workload, joined->second.slurm_name,
                 fenced.ToString());
    return false;
  }
  absl::StatusOr<bool> ready = slurm_->Ready(joined->second.slurm_name);
  if (!ready.ok() || !*ready) return false;  // a Slurm job is still leaving: next cycle
  if (!owners_->Set(node, NodeOwner::Kubernetes()).ok()) return false;
  actions_->NodeEvent(node, "Reclaimed", absl::StrCat("Reclaimed from Slurm for ", workload));
  ++stats->reclaimed;
  return true;
}

StartedTasks SlurmLending::StartedArrayTasks() const {
  scheduler::StartedTasks out;
  for (const auto& [job, a] : assumed_jobs_)
    if (a.array_task) out[*a.array_task] = a.nodes;
  return out;
}

std::vector<ArrayTask> SlurmLending::PendingTasksOf(uint32_t array, const SlurmRecords& records) {
  std::vector<ArrayTask> out;
  const std::string prefix = ArrayTaskWorkloadId(array, 0).substr(0, ArrayTaskWorkloadId(array, 0).size() - 1);
  for (auto it = records.pending.lower_bound(prefix); it != records.pending.end() && absl::StartsWith(it->first, prefix);
       ++it)
    if (std::optional<ArrayTask> t = ArrayTaskOf(it->first); t && t->first == array) out.push_back(*t);
  return out;
}

// An array task's own job id, split off the array's pending record (nullopt: not now, logged).
std::optional<uint32_t> SlurmLending::SplitOffArrayTask(const ArrayTask& task, const std::string& workload,
                                                        const SlurmRecords& records) {
  // The array is held first if it is not yet: a hold of the array's id reaches every record of
  // the array, so once a task is split off and released it must not be written again while
  // that task waits to run (HoldWaitingJobs skips such arrays).
  const auto array = records.pending.find(workload);
  if (array != records.pending.end() && !HeldByOnequeue(*array->second) && !last_hold_.count(task.first)) {
    const std::string comment = absl::StrCat(slurm::kOwnerTagPrefix, " Priority: its tasks are started one by one by onequeue");
    // Slurm answers an error when a record of the array is past holding (finished, running)
    // although it held the pending ones: logged, and the task is started all the same.
    if (absl::Status h = HoldRecord(*array->second, comment); !h.ok())
      spdlog::warn("holding Slurm array {} before starting a task: {}", task.first, h.ToString());
    last_hold_[task.first] = comment;
  }
  absl::StatusOr<uint32_t> own = slurm_->SplitArrayTask(
      task.first, task.second, absl::StrCat(slurm::kOwnerTagPrefix, " starting ", slurm::ArrayTaskId(task.first, task.second)));
  if (!own.ok()) {
    spdlog::warn("starting Slurm array task {}: {}", slurm::ArrayTaskId(task.first, task.second), own.status().ToString());
    return std::nullopt;
  }
  return *own;
}

std::optional<uint32_t> SlurmLending::JobToStart(const queue::StartDecision& start, const SlurmRecords& records,
                                                 std::optional<ArrayTask>* task, bool* split) {
  std::optional<uint32_t> job = SlurmJobOf(start.workload);
  if (!job) return std::nullopt;
  // Issue 29: an array task is split off its array's record first (it stays held, as the array
  // is); from then on it is a job of its own, started like any other. The array's lowest task not
  // started yet takes the slot the plan chose for any of them (slurm_arrays.h LowestTaskToStart).
  *task = ArrayTaskOf(start.workload);
  *split = task->has_value();
  if (*split) {
    **task = LowestTaskToStart(**task, PendingTasksOf((*task)->first, records), StartedArrayTasks());
    return SplitOffArrayTask(**task, ArrayTaskWorkloadId((*task)->first, (*task)->second), records);
  }
  if (auto own = records.pending.find(start.workload); own != records.pending.end())
    *task = ArrayTaskOfRecord(*own->second);  // a task's own record: started by its task id too
  return job;
}

std::vector<std::string> SlurmLending::StartJob(const queue::StartDecision& start, const BuiltSnapshot& built,
                                                const SlurmRecords& records, queue::Time now,
                                                std::set<std::string>* touched, CycleStats* stats) {
  if (slurm_ == nullptr) return {};
  std::optional<ArrayTask> task;
  bool split = false;
  const std::optional<uint32_t> job = JobToStart(start, records, &task, &split);
  if (!job) return {};
  std::vector<std::string> k8s_nodes, slurm_nodes;
  for (queue::NodeIndex n : start.member_nodes) {
    const std::string& name = built.snapshot->nodes[n].name;
    if (std::find(k8s_nodes.begin(), k8s_nodes.end(), name) != k8s_nodes.end()) continue;
    auto joined = records.nodes.find(name);
    if (joined == records.nodes.end()) return {};  // cannot happen: only joined nodes are lendable
    k8s_nodes.push_back(name);
    slurm_nodes.push_back(joined->second.slurm_name);
  }
  // 1. Kubernetes' side first (durable, and the taint keeps other schedulers off). Undone (issue
  // 24 M3) if the lend goes no further, so an outage does not lend node after node.
  LendMarks marked;  // node -> owner before
  for (const std::string& name : k8s_nodes) {
    const NodeOwner before = owners_->Of(name);
    if (before.slurm()) continue;
    if (records.nodes.at(name).shared) continue;  // issue 25: no world owns a shared node whole
    if (!owners_->Set(name, NodeOwner::LentTo(*job)).ok()) {
      UndoLend(*job, marked);
      return {};
    }
    marked.emplace_back(name, before);
  }
  Fail("lend-after-annotate");
  // 2. The job onequeue chose is released with a priority above anything else (the other pending
  // jobs of shared partitions are held), then the fence goes. It is not pinned to these nodes
  // (issue 29): Slurm may start it on any node lent to it, so Reconcile returns no idle lent node
  // until the start is seen (ReconcileLent).
  const std::string started = absl::StrCat(slurm::kOwnerTagPrefix, " started by onequeue on ",
                                           absl::StrJoin(slurm_nodes, ","), start.backfilled ? " (backfilled)" : "");
  // An array task by its task id: by its own job id it may be the array's record itself.
  absl::Status s = task ? slurm_->StartArrayTask(task->first, task->second, slurm_nodes, started)
                        : slurm_->StartOn(*job, slurm_nodes, started);
  if (task && !split && absl::IsUnimplemented(s)) s = slurm_->StartOn(*job, slurm_nodes, started);
  // Issue 24 D5: a call that timed out (slurmrestd hung) may have landed; taken for failed, the
  // node went back to Kubernetes while the job ran there. Its outcome is unknown until a view
  // says (ConfirmStarts): the lend stands, the job counts as running, no fence is lifted.
  const bool unknown = absl::IsDeadlineExceeded(s);
  if (!s.ok() && !unknown) {
    spdlog::warn("starting Slurm job {}: {}; the nodes marked for it are given back", *job, s.ToString());
    UndoLend(*job, marked);
    return {};
  }
  if (unknown) {
    spdlog::warn("starting Slurm job {}: {}; it may have landed: the nodes stay lent until Slurm's view says", *job,
                 s.ToString());
    touched->insert(k8s_nodes.begin(), k8s_nodes.end());
  } else {
    ReportLent(*job, marked, stats);
    LiftFences(k8s_nodes, slurm_nodes, records, now, touched);
  }
  // A job that held a sub-node claim (issue 25) is in `running` already, as assumed; an array
  // task is looked up under the task actually started (issue 29).
  const std::string started_id = split ? ArrayTaskWorkloadId(task->first, task->second) : start.workload;
  const slurm::SlurmJob* record = nullptr;
  if (auto p = records.pending.find(started_id); p != records.pending.end()) record = p->second;
  else if (auto r = records.running.find(started_id); r != records.running.end()) record = r->second;
  AssumedStart& a = assumed_jobs_[*job] = AssumedStart{};
  a.nodes = k8s_nodes;
  a.until = now + kAssumedStartSeconds;
  a.restarts = record == nullptr ? 0 : record->restart_count;
  a.array_task = task;
  if (unknown) {
    a.state = StartState::kUnknown;
    a.asked_at = now;
    a.comment = started;
    a.marked = std::move(marked);
  }
  last_hold_.erase(*job);  // a hold (re)written later is asked afresh; the release may have replaced it
  ++stats->slurm_started;
  return k8s_nodes;
}

void SlurmLending::LiftFences(const std::vector<std::string>& k8s_nodes, const std::vector<std::string>& slurm_nodes,
                              const SlurmRecords& records, queue::Time now, std::set<std::string>* touched) {
  for (size_t i = 0; i < k8s_nodes.size(); ++i) {
    const JoinedNode& joined = records.nodes.at(k8s_nodes[i]);
    auto last = last_fence_.find(k8s_nodes[i]);
    if (joined.holder.holder == slurm::NodeHolder::kOnequeue ||
        (last != last_fence_.end() && now - last->second.second < kFenceRetrySeconds)) {
      absl::Status u = slurm_->Unfence(slurm_nodes[i]);
      if (!u.ok()) spdlog::warn("lending {}: {}", slurm_nodes[i], u.ToString());
    }
    last_fence_.erase(k8s_nodes[i]);
    touched->insert(k8s_nodes[i]);
  }
}

void SlurmLending::FenceOnce(const JoinedNode& node, const std::string& owner, queue::Time now) {
  auto last = last_fence_.find(node.k8s_name);
  if (last != last_fence_.end() && last->second.first == owner && now - last->second.second < kFenceRetrySeconds) {
    return;
  }
  absl::Status s = owner.empty() ? slurm_->Unfence(node.slurm_name) : slurm_->Fence(node.slurm_name, owner);
  if (!s.ok()) spdlog::warn("Slurm node {}: {} failed: {}", node.slurm_name, owner.empty() ? "lend" : "fence " + owner,
                            s.ToString());
  last_fence_[node.k8s_name] = {owner, now};
}

SlurmLending::LiveCheck SlurmLending::FenceForKubernetes(const JoinedNode& node, queue::Time now) {
  // Fenced first, so nothing of Slurm's starts as the node changes hands.
  if (!Fence(node, kOwnerKubernetes, now).ok()) return LiveCheck::kNotFenced;
  // Issue 24 H3: asked of Slurm now, not of the poll: a job may have started there since.
  absl::StatusOr<bool> ready = slurm_->Ready(node.slurm_name);
  if (ready.ok() && *ready) return LiveCheck::kClear;
  spdlog::info("node {}: not given to Kubernetes, Slurm still runs something there ({})", node.k8s_name,
               ready.ok() ? "busy" : ready.status().ToString());
  return ready.ok() ? LiveCheck::kBusy : LiveCheck::kNoAnswer;
}

absl::Status SlurmLending::Unfence(const JoinedNode& node, queue::Time now) {
  last_fence_[node.k8s_name] = {"", now};
  return slurm_->Unfence(node.slurm_name);
}

void SlurmLending::ReturnIdle(const JoinedNode& node, queue::Time now, CycleStats* stats) {
  const std::string& name = node.k8s_name;
  // No Slurm job has used the node for a while and none is planned there: it comes back.
  Fail("return-before-fence");  // tests: a job Slurm starts here meanwhile (issue 24 H3, e2e)
  const LiveCheck check = FenceForKubernetes(node, now);
  if (check == LiveCheck::kNotFenced) return;
  if (check != LiveCheck::kClear) {
    if (!slurm_->FenceRequeues()) {  // a drain would keep Slurm off a node that is still its own
      lent_idle_since_.erase(name);
      (void)Unfence(node, now);
    }
    return;
  }
  const queue::Time idle = now - lent_idle_since_[name];
  if (!owners_->Set(name, NodeOwner::Kubernetes()).ok()) return;
  lent_idle_since_.erase(name);
  actions_->NodeEvent(name, "Returned", absl::StrCat("Returned by Slurm: no Slurm job for ", idle, "s"));
  ++stats->returned;
}

void SlurmLending::ReconcileLent(const JoinedNode& node, bool busy, bool start_unconfirmed, queue::Time now,
                                 CycleStats* stats) {
  const bool fenced = node.holder.holder == slurm::NodeHolder::kOnequeue;
  if (busy) {
    lent_idle_since_.erase(node.k8s_name);
    if (fenced) FenceOnce(node, "", now);
    return;
  }
  auto [since, inserted] = lent_idle_since_.try_emplace(node.k8s_name, now);
  if (now - since->second >= config_.slurm.return_after_seconds && !start_unconfirmed) ReturnIdle(node, now, stats);
  else if (fenced) FenceOnce(node, "", now);
}

void SlurmLending::Reconcile(const SlurmRecords& records, const std::set<std::string>& touched, queue::Time now,
                             CycleStats* stats) {
  std::set<std::string> assumed_nodes, unknown_nodes;
  for (const auto& [job, a] : assumed_jobs_) {
    assumed_nodes.insert(a.nodes.begin(), a.nodes.end());
    if (a.state == StartState::kUnknown) unknown_nodes.insert(a.nodes.begin(), a.nodes.end());
  }
  for (const auto& [name, node] : records.nodes) {
    if (touched.count(name)) continue;
    const slurm::NodeHolder holder = node.holder.holder;
    if (holder == slurm::NodeHolder::kAdmin) continue;  // hands off
    const NodeOwner owner = owners_->Of(name);
    // Issue 24 M6 (c): a node that is down with no fence of ours is left alone unless onequeue
    // holds it; then it is fenced again while down (a drain on a down node, a placeholder that
    // waits for it), so it comes back fenced and Slurm starts nothing there first.
    if (holder == slurm::NodeHolder::kDown && !owner.reserved() && !owner.kubernetes()) continue;
    const bool fenced = holder == slurm::NodeHolder::kOnequeue;
    if (node.shared) {
      // Issue 25: a shared node is never fenced whole (pods there are mirrored one by one); a
      // fence of ours left from before it was shared is lifted.
      if (fenced && !owner.reserved()) (void)slurm_->Unfence(node.slurm_name);
      continue;
    }
    if (owner.reserved()) {
      if (!fenced || node.holder.owner != owner.value()) FenceOnce(node, owner.value(), now);
      continue;
    }
    if (owner.slurm()) {
      // D5: a lend whose start may not have landed keeps its Slurm side as it was (its undo hands
      // the node back without a live check, safe only while nothing could start there).
      if (unknown_nodes.count(name)) continue;
      ReconcileLent(node, !node.running_jobs.empty() || assumed_nodes.count(name), !assumed_jobs_.empty(), now,
                    stats);
      continue;
    }
    lent_idle_since_.erase(name);
    // Kubernetes' node. One Slurm already runs jobs on, never marked by onequeue, was Slurm's
    // before onequeue came: adopt it as lent rather than fence jobs out from under their users.
    if (owner.unmarked() && !node.running_jobs.empty() && !fenced) {
      if (owners_->Set(name, NodeOwner::Parse(kOwnerSlurm)).ok()) {
        actions_->NodeEvent(name, "Lent", absl::StrCat("Adopted as lent: Slurm job ", node.running_jobs.front(),
                                                        " runs here"));
        ++stats->lent;
      }
      continue;
    }
    if (!fenced || node.holder.owner != kOwnerKubernetes) FenceOnce(node, kOwnerKubernetes, now);
    if (owner.unmarked() && fenced && node.holder.owner == kOwnerKubernetes) {
      (void)owners_->Set(name, NodeOwner::Kubernetes());
    }
  }
}

std::string SlurmLending::HoldComment(const queue::WaitingStatus& w, const slurm::SlurmJob& job,
                                      const SlurmRecords& records) const {
  // The position moves with every arrival: the comment carries only the reason, like the pod's event.
  std::string message(w.Message());
  const std::string reason = queue::WaitReasonName(w.reason);
  if (absl::StartsWith(message, reason + ": ")) message = message.substr(reason.size() + 2);
  if (w.reason == queue::WaitReason::kPartitionNodesUnavailable) {
    // The queue sees only lendable nodes for Slurm jobs; say why the partition's pool nodes
    // are not (in use by pods, lately, or kept as headroom) rather than "no node matches".
    const std::string& partition = job.partition;
    const bool pool_nodes = std::any_of(records.nodes.begin(), records.nodes.end(), [&](const auto& n) {
      return std::find(n.second.partitions.begin(), n.second.partitions.end(), partition) != n.second.partitions.end();
    });
    if (pool_nodes) {
      message = absl::StrCat("no pool node of partition ", partition,
                             " can be lent now (pods used them less than ", config_.slurm.lend_after_seconds,
                             "s ago, they are kept as headroom, or they are not ready)");
    }
  }
  return absl::StrCat(slurm::kOwnerTagPrefix, " ", reason, ": ", message);
}

absl::Status SlurmLending::HoldRecord(const slurm::SlurmJob& job, const std::string& comment) {
  std::string tasks;  // the record's tasks, for an array's record
  if (const std::optional<ArrayTask> task = ArrayTaskOfRecord(job)) tasks = absl::StrCat(task->second);
  else if (IsPendingArrayRecord(job)) tasks = job.array_tasks.substr(0, job.array_tasks.find('%'));  // no throttle
  if (tasks.empty()) return slurm_->Hold(job.job_id, comment);
  absl::Status s = slurm_->HoldArrayTasks(job.array_job_id, tasks, comment);
  return absl::IsUnimplemented(s) ? slurm_->Hold(job.job_id, comment) : s;  // no scontrol: the array's id
}

void SlurmLending::HoldWaitingJobs(const queue::Plan& plan, const SlurmRecords& records, CycleStats* stats,
                                   const std::set<uint32_t>& leave) {
  std::set<uint32_t> asked;  // issue 29: an array's tasks share one record, held once
  for (const auto& w : plan.waiting) {
    if (!SlurmJobOf(w.workload)) continue;
    auto job = records.pending.find(w.workload);
    if (job == records.pending.end()) continue;
    ++stats->slurm_pending;
    const std::optional<uint32_t> id = job->second->job_id;
    if (!asked.insert(*id).second || leave.count(*id)) continue;
    // Issue 29: a hold of an array reaches every record of it, tasks onequeue has just released
    // included: not written while one of them waits to run (StartJob held the array before).
    if (IsPendingArrayRecord(*job->second) &&
        std::any_of(assumed_jobs_.begin(), assumed_jobs_.end(),
                    [&](const auto& a) { return a.second.array_task && a.second.array_task->first == *id; }))
      continue;
    // Issue 29: a job waiting for its dependency is Slurm's to release, whatever else the plan
    // says of it (a refused constraint, an unknown QOS): not held by onequeue either.
    if (w.reason == queue::WaitReason::kHeld || w.reason == queue::WaitReason::kDependency ||
        WaitsForDependency(*job->second)) {
      // Slurm's own hold, dependency or begin time (or an admin's oq hold): not onequeue's to
      // write. Once it is lifted the job needs onequeue's hold again, so forget the last one asked.
      last_hold_.erase(*id);
      continue;
    }
    const std::string comment = HoldComment(w, *job->second, records);
    if (HeldByOnequeue(*job->second) && job->second->admin_comment == comment) {
      last_hold_[*id] = comment;
      continue;
    }
    auto last = last_hold_.find(*id);
    if (last != last_hold_.end() && last->second == comment) continue;  // asked; the poll lags
    absl::Status s = HoldRecord(*job->second, comment);
    if (s.ok() || absl::IsNotFound(s)) {
      last_hold_[*id] = comment;
      ++stats->slurm_held;
    } else {
      spdlog::warn("holding Slurm job {}: {}", *id, s.ToString());
    }
  }
  std::set<uint32_t> pending_records;
  for (const auto& [id, job] : records.pending) pending_records.insert(job->job_id);
  for (auto it = last_hold_.begin(); it != last_hold_.end();) {
    if (!pending_records.count(it->first)) it = last_hold_.erase(it);
    else ++it;
  }
}

}  // namespace onequeue::scheduler

// The in-memory cluster of the loop's scenario tests: it behaves like the real one where it
// matters (a bind sets nodeName, an eviction deletes the pod, a "ReplicaSet" recreates evicted
// replicas at once), and an in-memory Slurm whose jobs start, requeue and hold as slurmctld's do
// when the loop asks.
#ifndef ONEQUEUE_TEST_SCHEDULER_FAKE_WORLD_H_
#define ONEQUEUE_TEST_SCHEDULER_FAKE_WORLD_H_

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;

// slurmctld in miniature: what the loop's Slurm actions do to jobs and nodes, and the poller's
// view of the result. Nodes are fenced by drain, or by placeholder (which requeues the shared
// jobs there, as Slurm's partition preemption does).
class FakeSlurm : public SlurmActions {
 public:
  bool placeholder = false;
  bool start_lag = false;  // StartOn only releases the job; the test starts it (Run) when it likes
  std::shared_ptr<const slurm::SlurmView> frozen_view;  // set: the poller lags, View() returns this
  queue::Time now = 0;
  std::vector<std::string> calls;
  std::map<uint32_t, int> requeues;
  std::map<uint32_t, std::vector<std::string>> ran_on;  // every node list a job started on
  // Failure injection (issue 24): the next `n` requeues of a job fail as slurmrestd down would
  // (kUnavailable); jobs Slurm will not requeue at all (srun/salloc allocations); a StartOn error.
  std::map<uint32_t, int> requeue_unavailable;
  std::set<uint32_t> not_requeueable;
  absl::Status start_error = absl::OkStatus();
  // Issue 24 D5: StartOn answers kDeadlineExceeded (slurmrestd hung) after its release landed
  // (with start_error set as well: nothing landed).
  bool start_times_out = false;
  // Issue 24 D6: the next `n` fences of a node land but answer kDeadlineExceeded (slurmrestd hung).
  std::map<std::string, int> fence_times_out;
  // Nodes slurmctld shows DOWN (issue 24 M6).
  std::set<std::string> down;
  // The node's fence ends without onequeue asking (a placeholder that ended at TIMEOUT or
  // NODE_FAIL, a drain an admin lifted).
  void LoseFence(const std::string& node) { fence_.erase(node); }

  // Slurm's partitions as the poller reads them (PriorityTier ...); empty = none polled yet.
  slurm::SlurmView::Partitions partitions;
  slurm::SlurmNode& Node(const std::string& name) { return nodes_[name]; }

  void AddNode(const std::string& name) {
    slurm::SlurmNode n;
    n.name = name;
    n.state = slurm::NodeState::kIdle;
    n.cpus = 8;
    n.partitions = {"pool", "reclaim"};
    nodes_[name] = n;
  }
  slurm::SlurmJob& Submit(uint32_t id, uint32_t cpus = 4) {
    slurm::SlurmJob j;
    j.job_id = id;
    j.state = slurm::JobState::kPending;
    j.partition = "pool";
    j.account = "physics";
    j.qos = "";
    j.priority = 1;
    j.node_count = 1;
    j.cpus = cpus;
    j.requeue = true;
    j.time_limit = absl::Minutes(30);
    j.submit_time = absl::FromUnixSeconds(now - 60);
    return jobs_[id] = j;
  }
  void Run(uint32_t id, const std::string& node) { RunOn(id, {node}); }
  // A job of several nodes (node_count > 1): its CPUs split evenly over them.
  void RunOn(uint32_t id, const std::vector<std::string>& nodes) {
    slurm::SlurmJob& j = jobs_[id];
    j.state = slurm::JobState::kRunning;
    j.nodes = nodes;
    j.start_time = absl::FromUnixSeconds(now);
    j.allocation.nodes.clear();
    for (const std::string& node : nodes) {
      ran_on[id].push_back(node);
      // What Slurm allocated there (issue 25: read on shared nodes): the job's CPUs, memory and GRES.
      slurm::NodeAllocation a;
      a.node = node;
      a.cpus = CpusPerNode(j);
      a.memory_mb = j.memory_per_node_mb;
      a.gres = j.gres_per_node;
      j.allocation.nodes.push_back(a);
    }
    j.allocation.error.clear();
  }
  static uint32_t CpusPerNode(const slurm::SlurmJob& j) { return j.cpus / std::max<uint32_t>(1, j.node_count); }
  static bool On(const slurm::SlurmJob& j, const std::string& node) {
    return std::find(j.nodes.begin(), j.nodes.end(), node) != j.nodes.end();
  }
  // Issue 25: nodes whose Slurm partitions share them: there slurmctld starts a job only where its
  // CPUs fit beside what it has allocated (jobs and pod placeholders); it does not see pods.
  std::set<std::string> shared;
  void SetPartitions(const std::string& node, std::vector<std::string> partitions) {
    nodes_[node].partitions = std::move(partitions);
  }
  // In every dimension the node has: CPUs always; memory where the node has some (memory_mb > 0);
  // each GRES the job asks (a GRES the node lacks: 0 of it).
  bool Fits(uint32_t id, const std::string& node) const {
    if (!shared.count(node)) return true;
    auto j = jobs_.find(id);
    if (j == jobs_.end()) return false;
    const slurm::SlurmNode& n = nodes_.at(node);
    if (AllocatedCpus(node) + CpusPerNode(j->second) > n.cpus) return false;
    if (n.memory_mb > 0 && Allocated(node).memory_mb + j->second.memory_per_node_mb > n.memory_mb) return false;
    const slurm::NodeAllocation used = Allocated(node);
    for (const auto& [gres, count] : j->second.gres_per_node) {
      auto have = n.gres.find(gres);
      auto taken = used.gres.find(gres);
      if ((taken == used.gres.end() ? 0 : taken->second) + count > (have == n.gres.end() ? 0 : have->second)) {
        return false;
      }
    }
    return true;
  }
  // Issue 25: what Slurm has allocated on `node` in every dimension (its running jobs and pod
  // placeholders pinned there; the whole-node fence is not counted).
  slurm::NodeAllocation Allocated(const std::string& node) const {
    slurm::NodeAllocation sum;
    sum.node = node;
    for (const auto& [id, j] : jobs_) {
      if (j.state != slurm::JobState::kRunning || !On(j, node)) continue;
      sum.cpus += CpusPerNode(j);
      sum.memory_mb += j.memory_per_node_mb;
      for (const auto& [gres, count] : j.gres_per_node) sum.gres[gres] += count;
    }
    return sum;
  }
  // slurmctld restarted and lost the job (its state save did not have it): gone from every listing.
  void Forget(uint32_t id) { jobs_.erase(id); }
  const slurm::SlurmNode& Node(const std::string& node) const { return nodes_.at(node); }
  // Issue 25: CPUs Slurm has allocated on `node` (its jobs and onequeue's pod placeholders; the
  // whole-node fence is not counted).
  uint32_t AllocatedCpus(const std::string& node) const {
    uint32_t sum = 0;
    for (const auto& [id, j] : jobs_) {
      if (j.state == slurm::JobState::kRunning && On(j, node)) sum += CpusPerNode(j);
    }
    return sum;
  }
  // Issue 25's pod placeholders: a pending job pinned to its node, submitted by slurm.user.
  std::vector<uint32_t> pod_placeholders;
  std::map<uint32_t, std::string> placeholder_accounts;  // pod placeholder -> JobSubmission::account
  absl::StatusOr<uint32_t> SubmitPodPlaceholder(const slurm::JobSubmission& s) override {
    const uint32_t id = 500000 + static_cast<uint32_t>(pod_placeholders.size());
    calls.push_back("placeholder " + s.name + " on " + s.nodelist);
    slurm::SlurmJob& j = Submit(id, s.cpus);
    j.memory_per_node_mb = s.memory_per_node_mb;
    j.gres_per_node = s.gres_per_node;
    j.name = s.name;
    j.user = "slurm";
    j.partition = s.partition;
    j.comment = s.comment;
    j.required_nodes = {s.nodelist};
    j.time_limit.reset();
    placeholder_accounts[id] = s.account;  // issue 25 tenancy (the job keeps the fake's default)
    pod_placeholders.push_back(id);
    return id;
  }
  slurm::SlurmJob& Job(uint32_t id) { return jobs_[id]; }
  bool Fenced(const std::string& node) const { return !fence_.count(node) ? false : true; }
  std::string FenceOwner(const std::string& node) const {
    auto it = fence_.find(node);
    return it == fence_.end() ? "" : it->second;
  }

  std::shared_ptr<const slurm::SlurmView> View() const {
    if (frozen_view != nullptr) return frozen_view;
    auto v = std::make_shared<slurm::SlurmView>();
    slurm::SlurmView::Nodes nodes = nodes_;
    slurm::SlurmView::Jobs jobs = jobs_;
    for (auto& [name, n] : nodes) {
      const bool busy = std::any_of(jobs_.begin(), jobs_.end(), [&](const auto& j) {
        return j.second.state == slurm::JobState::kRunning &&
               std::find(j.second.nodes.begin(), j.second.nodes.end(), name) != j.second.nodes.end();
      });
      n.state = busy ? slurm::NodeState::kAllocated : slurm::NodeState::kIdle;
      if (down.count(name)) n.state = slurm::NodeState::kDown;
      auto f = fence_.find(name);
      if (f == fence_.end()) continue;
      if (!placeholder) {
        n.state_flags = {"DRAIN"};
        n.reason = "onequeue:" + f->second;
        n.reason_set_by_user = "slurm";  // slurm.user's token drains
      } else {
        slurm::SlurmJob ph;
        ph.job_id = 900000 + static_cast<uint32_t>(jobs.size());
        ph.name = "onequeue-placeholder-" + name;
        ph.partition = "reclaim";
        ph.comment = "onequeue:" + f->second;
        ph.user = "slurm";  // slurm.user's token submits
        ph.state = slurm::JobState::kRunning;
        ph.nodes = {name};
        jobs[ph.job_id] = ph;
      }
    }
    v->nodes = std::make_shared<const slurm::SlurmView::Nodes>(std::move(nodes));
    v->partitions = std::make_shared<const slurm::SlurmView::Partitions>(partitions);
    v->jobs = std::make_shared<const slurm::SlurmView::Jobs>(std::move(jobs));
    v->refreshed_at = absl::FromUnixSeconds(now);
    return v;
  }

  absl::Status Fence(const std::string& node, const std::string& owner) override {
    calls.push_back("fence " + node + " " + owner);
    fence_[node] = owner;
    if (placeholder) {
      for (auto& [id, j] : jobs_) {
        if (j.state == slurm::JobState::kRunning && j.nodes == std::vector<std::string>{node}) Requeue(id);
      }
    }
    if (auto t = fence_times_out.find(node); t != fence_times_out.end() && t->second > 0) {
      --t->second;
      return absl::DeadlineExceededError("slurmrestd: no answer in 60 s");
    }
    return absl::OkStatus();
  }
  absl::Status Unfence(const std::string& node) override {
    calls.push_back("lend " + node);
    fence_.erase(node);
    // slurmctld starts what it may: a released job (onequeue's start) allowed on this node. Issue
    // 29: onequeue no longer pins the job (ReqNodeList is the user's), so any released job of the
    // node's partitions whose own node list allows the node may take it.
    for (auto& [id, j] : jobs_) {
      if (j.state == slurm::JobState::kPending && j.priority >= 4000000000u &&
          (j.required_nodes.empty() || j.required_nodes == std::vector<std::string>{node}) && Fits(id, node)) {
        Run(id, node);
        break;
      }
    }
    return absl::OkStatus();
  }
  absl::Status Hold(uint32_t job, const std::string& comment) override {
    calls.push_back("hold " + std::to_string(job));
    if (absl::Status s = WholeArrayWrite(job); !s.ok()) return s;
    return HoldRecord(job, comment);
  }
  absl::Status StartOn(uint32_t job, const std::vector<std::string>& nodes, const std::string& comment) override {
    calls.push_back("start " + std::to_string(job));
    if (absl::Status s = WholeArrayWrite(job); !s.ok()) return s;
    const absl::Status s = Release(job, nodes, comment);
    return start_times_out ? absl::DeadlineExceededError("slurmrestd: no answer in 60 s") : s;
  }
  // Like slurmctld (seen live on 22.05): a write by an array's job id reaches every record of the
  // array, and tasks that ran answer an error ("<array>_0-8: Job has already finished"); modelled
  // as the error alone.
  absl::Status WholeArrayWrite(uint32_t job) const {
    auto it = jobs_.find(job);
    if (it == jobs_.end() || it->second.array_job_id != job) return absl::OkStatus();
    for (const auto& [id, j] : jobs_)
      if (id != job && j.array_job_id == job && j.state == slurm::JobState::kCompleted)
        return absl::FailedPreconditionError(absl::StrCat("array ", job, ": Job has already finished"));
    return absl::OkStatus();
  }
  absl::Status HoldRecord(uint32_t job, const std::string& comment) {
    jobs_[job].priority = 0;
    jobs_[job].admin_comment = comment;  // issue 29: the user's comment is never written
    jobs_[job].state_reason = "JobHeldAdmin";
    return absl::OkStatus();
  }
  absl::Status Release(uint32_t job, const std::vector<std::string>& nodes, const std::string& comment) {
    if (!start_error.ok()) return start_error;
    slurm::SlurmJob& j = jobs_[job];
    j.priority = 4000000000u;
    j.admin_comment = comment;  // issue 29: neither the comment nor ReqNodeList is written
    if (!start_lag && nodes.size() == std::max<uint32_t>(1, j.node_count) &&
        std::none_of(nodes.begin(), nodes.end(), [&](const std::string& n) { return fence_.count(n) > 0; }) &&
        std::all_of(nodes.begin(), nodes.end(), [&](const std::string& n) { return Fits(job, n); }))
      RunOn(job, nodes);
    return absl::OkStatus();
  }
  // Issue 29: an array of `tasks` (Slurm's task string) as one pending record, as slurmctld lists it.
  slurm::SlurmJob& SubmitArray(uint32_t id, const std::string& tasks, uint32_t cpus = 8) {
    slurm::SlurmJob& j = Submit(id, cpus);
    j.array_job_id = id;
    j.array_tasks = tasks;
    return j;
  }
  // Like slurmctld: the task leaves the array's record for one of its own (the next job id). The
  // last pending task stays in the array's record, which becomes that task's (array_task_id set,
  // the task string gone), as a one-task array is listed; splitting it answers the array's id.
  absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job, uint32_t task, const std::string& comment) override {
    calls.push_back("split " + slurm::ArrayTaskId(array_job, task));
    slurm::SlurmJob& a = jobs_[array_job];
    if (a.array_task_id == task && a.array_tasks.empty()) {
      a.admin_comment = comment;
      return array_job;
    }
    absl::StatusOr<slurm::ArrayTasks> ids = slurm::ParseArrayTasks(a.array_tasks);
    if (!ids.ok()) return ids.status();
    std::vector<std::string> left;
    for (uint32_t t : ids->ids)
      if (t != task) left.push_back(std::to_string(t));
    if (left.size() == ids->ids.size()) return absl::NotFoundError("no such pending task");
    slurm::SlurmJob own = a;
    own.job_id = jobs_.rbegin()->first + 1;
    own.array_task_id = task;
    own.array_tasks.clear();
    own.admin_comment = comment;
    a.array_tasks = absl::StrJoin(left, ",");
    if (left.size() == 1) {
      a.array_task_id = static_cast<uint32_t>(std::stoul(left[0]));
      a.array_tasks.clear();
    }
    jobs_[own.job_id] = own;
    return own.job_id;
  }
  absl::Status StartArrayTask(uint32_t array_job, uint32_t task, const std::vector<std::string>& nodes,
                              const std::string& comment) override {
    calls.push_back("start " + slurm::ArrayTaskId(array_job, task));
    for (auto& [id, j] : jobs_)
      if (j.array_job_id == array_job && j.array_task_id == task) return Release(id, nodes, comment);
    return absl::NotFoundError("no record of that task");
  }
  absl::Status HoldArrayTasks(uint32_t array_job, const std::string& tasks, const std::string& comment) override {
    calls.push_back(absl::StrCat("hold ", array_job, "_", tasks));
    absl::StatusOr<slurm::ArrayTasks> ids = slurm::ParseArrayTasks(tasks);
    if (!ids.ok()) return ids.status();
    auto listed = [&](uint32_t t) { return std::find(ids->ids.begin(), ids->ids.end(), t) != ids->ids.end(); };
    bool held = false;
    for (auto& [id, j] : jobs_) {
      if (j.array_job_id != array_job || j.state != slurm::JobState::kPending) continue;
      bool reached = j.array_task_id && listed(*j.array_task_id);
      if (absl::StatusOr<slurm::ArrayTasks> own = slurm::ParseArrayTasks(j.array_tasks); !j.array_task_id && own.ok())
        reached = std::any_of(own->ids.begin(), own->ids.end(), listed);
      if (reached) held = HoldRecord(id, comment).ok();
    }
    return held ? absl::OkStatus() : absl::NotFoundError("no pending record of those tasks");
  }
  // Like slurmctld: a requeue by an array's id requeues every record of the array, tasks that
  // ran included (seen live on 22.05); by a task id only that task.
  absl::Status RequeueArrayTask(uint32_t array_job, uint32_t task) override {
    calls.push_back("requeue " + slurm::ArrayTaskId(array_job, task));
    for (auto& [id, j] : jobs_)
      if (j.array_job_id == array_job && j.array_task_id == task) return RequeueRecord(id);
    return absl::NotFoundError("no record of that task");
  }
  absl::Status Requeue(uint32_t job) override {
    calls.push_back("requeue " + std::to_string(job));
    if (auto it = jobs_.find(job); it != jobs_.end() && it->second.array_job_id == job) {
      for (auto& [id, j] : jobs_)
        if (id != job && j.array_job_id == job && j.state == slurm::JobState::kCompleted) {
          j.state = slurm::JobState::kPending;
          ++requeues[id];
        }
    }
    return RequeueRecord(job);
  }
  absl::Status RequeueRecord(uint32_t job) {
    if (auto u = requeue_unavailable.find(job); u != requeue_unavailable.end() && u->second > 0) {
      --u->second;
      return absl::UnavailableError("slurmrestd: connection refused");
    }
    if (not_requeueable.count(job)) {
      return absl::UnknownError("scontrol requeue: Only batch jobs are accepted or processed");
    }
    slurm::SlurmJob& j = jobs_[job];
    if (j.state != slurm::JobState::kRunning) return absl::FailedPreconditionError("not running");
    j.state = slurm::JobState::kPending;
    j.state_reason = "BeginTime";
    j.nodes.clear();
    ++j.restart_count;
    ++requeues[job];
    return absl::OkStatus();
  }
  absl::Status Cancel(uint32_t job) override {
    calls.push_back("cancel " + std::to_string(job));
    jobs_[job].state = slurm::JobState::kCancelled;
    return absl::OkStatus();
  }
  bool FenceRequeues() const override { return placeholder; }
  absl::StatusOr<bool> Ready(const std::string& node) override {
    if (!fence_.count(node)) return false;
    for (const auto& [id, j] : jobs_) {
      if (j.state == slurm::JobState::kRunning &&
          std::find(j.nodes.begin(), j.nodes.end(), node) != j.nodes.end()) return false;
    }
    return true;
  }

 private:
  slurm::SlurmView::Nodes nodes_;
  slurm::SlurmView::Jobs jobs_;
  std::map<std::string, std::string> fence_;  // node -> owner tag
};

class World : public ClusterView, public ClusterActions {
 public:
  // frozen_nodes set: the node informer lags and shows this copy, whatever has been written since.
  std::optional<std::vector<k8s::Node>> frozen_nodes;
  void FreezeNodes() { frozen_nodes = nodes_; }
  std::vector<k8s::Node> Nodes() const override { return frozen_nodes ? *frozen_nodes : nodes_; }
  // frozen_pods set: the pod informer lags likewise.
  std::optional<std::vector<k8s::Pod>> frozen_pods;
  void FreezePods() { frozen_pods = pods_; }
  std::vector<k8s::Pod> Pods() const override { return frozen_pods ? *frozen_pods : pods_; }
  // slurm_unpolled: the poller has not answered yet (a restart before the first poll).
  bool slurm_unpolled = false;
  std::shared_ptr<const slurm::SlurmView> Slurm() const override {
    return slurm == nullptr || slurm_unpolled ? nullptr : slurm->View();
  }
  void NodeEvent(const std::string& node, const std::string& reason, const std::string& note) override {
    node_events.push_back(node + " " + reason);
  }
  void DeletePod(const std::string& key) {
    if (k8s::Pod* p = Find(key)) pods_.erase(pods_.begin() + (p - pods_.data()));
  }
  std::string OwnerOf(const std::string& node) const {
    for (const auto& n : nodes_) {
      if (n.metadata.name != node) continue;
      auto it = n.metadata.annotations.find(kOwnerAnnotation);
      return it == n.metadata.annotations.end() ? "" : it->second;
    }
    return "<no node>";
  }
  FakeSlurm* slurm = nullptr;
  std::vector<std::string> node_events;

  absl::Status Bind(const std::string& key, const std::string& node, const std::string& message) override {
    k8s::Pod* p = Find(key);
    if (!p) return absl::NotFoundError(key);
    if (!p->node_name.empty()) return absl::AlreadyExistsError(key + " is already bound");
    p->node_name = node;
    p->phase = "Running";
    binds.push_back(key + "->" + node);
    dra_log.push_back("bind " + key);
    bind_messages.push_back(message);
    return absl::OkStatus();
  }
  absl::Status ReportWaiting(const std::string& key, const WaitReport& r) override {
    reports[key].push_back(r);
    return absl::OkStatus();
  }
  // As the API server: refused with a conflict when the node is no longer at `version` (a
  // non-empty precondition), and every write makes a new resourceVersion.
  absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string& version = "") override {
    ++owner_writes[node];
    for (auto& n : nodes_) {
      if (n.metadata.name != node) continue;
      if (!version.empty() && version != n.metadata.resource_version) {
        conflicts.push_back(node + "=" + value);
        return absl::AbortedError("Operation cannot be fulfilled on nodes \"" + node +
                                  "\": the object has been modified");
      }
      if (value.empty()) n.metadata.annotations.erase(kOwnerAnnotation);
      else n.metadata.annotations[kOwnerAnnotation] = value;
      n.metadata.resource_version = std::to_string(++last_version_);
      owner_changes.push_back(node + "=" + value);
      return n.metadata.resource_version;
    }
    return absl::NotFoundError("node " + node);
  }
  // Another writer (a kubelet, an administrator) changes the node: a new resourceVersion.
  void TouchNode(const std::string& node) {
    for (auto& n : nodes_) {
      if (n.metadata.name == node) n.metadata.resource_version = std::to_string(++last_version_);
    }
  }
  void DeleteNode(const std::string& node) {
    std::erase_if(nodes_, [&](const k8s::Node& n) { return n.metadata.name == node; });
  }
  absl::Status Nominate(const std::string& key, const std::string& node) override {
    if (k8s::Pod* p = Find(key)) p->nominated_node_name = node;
    return absl::OkStatus();
  }
  // Issue 24 M4: pods ended at their time limit (then evicted as any other).
  std::vector<std::string> time_limit_evictions;
  absl::Status EvictForTimeLimit(const std::string& key, const std::string& message) override {
    absl::Status s = Evict(key, "", message);
    if (s.ok()) time_limit_evictions.push_back(key);
    return s;
  }
  // Issue 25: node annotations onequeue writes besides its owner mark (onequeue.io/split).
  std::map<std::string, std::map<std::string, std::string>> node_annotations;
  absl::Status AnnotateNode(const std::string& node, const std::string& key, const std::string& value) override {
    node_annotations[node][key] = value;
    return absl::OkStatus();
  }
  // Issue 25: pod events, "<reason> <pod key>: <note>".
  std::vector<std::string> pod_events;
  absl::Status PodEvent(const std::string& key, const std::string& reason, const std::string& note) override {
    pod_events.push_back(reason + " " + key + ": " + note);
    return absl::OkStatus();
  }
  // Issue 26: victims no budget covers, deleted after a DisruptionTarget condition (never refused
  // by a budget): "<key>: <condition message>". They are in `evictions` too (every victim removed).
  std::vector<std::string> victim_deletions;
  void StartDeleteVictim(const std::string& key, const std::string& preemptor, const std::string& condition_message,
                         std::function<void(absl::Status)> done) override {
    if (!Find(key)) return done(absl::NotFoundError(key));
    victim_deletions.push_back(key + ": " + condition_message);
    std::set<std::string> blocked = std::exchange(pdb_blocks, {});  // a DELETE no budget refuses
    absl::Status s = Evict(key, preemptor, condition_message);
    pdb_blocks = std::move(blocked);
    done(std::move(s));
  }
  // PodDisruptionBudgets the budget informer shows (BudgetRecord: State()).
  std::vector<k8s::PodDisruptionBudget> budgets;
  std::shared_ptr<const KubeState> State() const override {
    auto state = std::make_shared<KubeState>(ToKubeState(Nodes(), Pods(), budgets));
    for (const auto& [key, c] : resource_claims) state->resource_claims.push_back(std::make_shared<const k8s::ResourceClaim>(c));
    for (const auto& s : resource_slices) state->resource_slices.push_back(std::make_shared<const k8s::ResourceSlice>(s));
    return state;
  }
  // Issue 25 DRA: the ResourceClaims (by namespace/name) and ResourceSlices the informers show, and
  // the claim writes as the apiserver takes them: "allocate <key>" / "clear <key>" (writes only),
  // with the binds ("bind <pod key>") in the order they came.
  std::map<std::string, k8s::ResourceClaim> resource_claims;
  std::vector<k8s::ResourceSlice> resource_slices;
  std::vector<std::string> dra_log;
  int claim_conflicts = 0;  // the next N allocations refused as a 409 (someone wrote the claim since the read)
  static bool ReservedFor(const k8s::ResourceClaim& c, const std::string& uid) {
    return std::any_of(c.reserved_for.begin(), c.reserved_for.end(), [&](const auto& r) { return r.uid == uid; });
  }
  absl::Status AllocateClaim(const std::string& key, const std::vector<k8s::DeviceAllocationResult>& results,
                             const std::string& node, const k8s::ClaimConsumer& pod) override {
    auto it = resource_claims.find(key);
    if (it == resource_claims.end()) return absl::NotFoundError(key);
    if (claim_conflicts > 0) {
      --claim_conflicts;
      return absl::AbortedError(key + ": the object has been modified");
    }
    k8s::ResourceClaim& c = it->second;
    if (c.allocated) {
      if (ReservedFor(c, pod.uid) && c.results == results && c.allocation_node == node) return absl::OkStatus();
      return absl::FailedPreconditionError(key + " is allocated otherwise");
    }
    dra_log.push_back("allocate " + key);
    c.allocated = true;
    c.results = results;
    c.allocation_node = node;
    c.reserved_for.push_back(pod);
    return absl::OkStatus();
  }
  absl::Status ClearClaim(const std::string& key, const std::string& uid) override {
    auto it = resource_claims.find(key);
    if (it == resource_claims.end() || !ReservedFor(it->second, uid)) return absl::OkStatus();
    dra_log.push_back("clear " + key);
    k8s::ResourceClaim& c = it->second;
    std::erase_if(c.reserved_for, [&](const auto& r) { return r.uid == uid; });
    if (c.reserved_for.empty()) {
      c.allocated = false;
      c.results.clear();
      c.allocation_node.clear();
    }
    return absl::OkStatus();
  }
  // A pending pod whose spec.resourceClaims name the ResourceClaims `claims` (resourceClaimName).
  void AddClaimPod(const std::string& name, const std::string& cpu, const std::vector<std::string>& claims) {
    AddPod(name, cpu, "batch");
    k8s::Pod& p = pods_.back();  // as k8s::Pod::FromJson reads spec.resourceClaims[].resourceClaimName
    for (const std::string& c : claims) {
      p.resource_claims.push_back(c);
      p.resource_claim_objects.push_back(c);
    }
  }
  // A budget of its own over the pod `key` (a label budget=<its name>), `allowed` disruptions in
  // its (current) status. With pdb_blocks: the budget changed after the snapshot, so the Eviction
  // API refuses what the planner chose.
  void CoverByBudget(const std::string& key, int allowed) {
    k8s::Pod* p = Find(key);
    if (!p) return;
    const std::string name = p->metadata.name;
    p->metadata.labels["budget"] = name;
    json b = {{"metadata", {{"name", "pdb-" + name}, {"namespace", p->metadata.namespace_}, {"generation", 1}}},
              {"spec", {{"minAvailable", 1}, {"selector", {{"matchLabels", {{"budget", name}}}}}}},
              {"status", {{"observedGeneration", 1}, {"disruptionsAllowed", allowed}}}};
    budgets.push_back(*k8s::PodDisruptionBudget::FromJson(b));
  }
  absl::Status Evict(const std::string& key, const std::string& preemptor, const std::string&) override {
    k8s::Pod* p = Find(key);
    if (!p) return absl::NotFoundError(key);
    ++evict_attempts;
    if (pdb_blocks.count(key)) return absl::FailedPreconditionError("blocked by PodDisruptionBudget");
    evictions.push_back(key);
    k8s::Pod gone = *p;
    if (linger_evicted) p->metadata.deletion_timestamp = "2026-11-21T11:00:00Z";
    else pods_.erase(pods_.begin() + (p - pods_.data()));
    if (recreate_evicted) {  // the ReplicaSet makes a replacement at once, same spec, unbound
      gone.metadata.name += "-r";
      gone.metadata.uid += "-r";
      gone.node_name.clear();
      gone.phase = "Pending";
      pods_.push_back(gone);
    }
    return absl::OkStatus();
  }

  // `extra`: more allocatable resources ("nvidia.com/gpu" -> "4"), issue 25's shared nodes.
  void AddNode(const std::string& name, const std::string& cpu = "4",
               const std::map<std::string, std::string>& extra = {}) {
    json j = {{"metadata", {{"name", name}, {"resourceVersion", std::to_string(++last_version_)},
                            {"labels", {{"onequeue.io/pool", "a"}}}}},
              {"status", {{"allocatable", {{"cpu", cpu}, {"memory", "32Gi"}, {"pods", "110"}}},
                          {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
    for (const auto& [resource, amount] : extra) j["status"]["allocatable"][resource] = amount;
    nodes_.push_back(*k8s::Node::FromJson(j));
  }
  // A pod with more requests than CPUs (issue 25: memory, GPUs): `requests` replaces {"cpu": cpu}.
  void AddSizedPod(const std::string& name, const std::map<std::string, std::string>& requests,
                   const std::string& qos) {
    json r = json::object();
    for (const auto& [resource, amount] : requests) r[resource] = amount;
    json j = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"creationTimestamp", "2026-11-21T10:00:00Z"},
                            {"uid", "uid-" + name + "-" + std::to_string(++last_version_)},
                            {"annotations", {{"onequeue.io/qos", qos}}}}},
              {"spec", {{"schedulerName", "onequeue"},
                        {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", r}}}}})}}},
              {"status", {{"phase", "Pending"}}}};
    pods_.push_back(*k8s::Pod::FromJson(j));
  }
  void AddPod(const std::string& name, const std::string& cpu, const std::string& qos,
              const std::string& node = "", const std::string& created = "2026-11-21T10:00:00Z") {
    // Every pod made is a new object: a uid of its own, even under a name used before.
    json j = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"creationTimestamp", created},
                            {"uid", "uid-" + name + "-" + std::to_string(++last_version_)},
                            {"annotations", {{"onequeue.io/qos", qos}}}}},
              {"spec", {{"schedulerName", "onequeue"},
                        {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", cpu}}}}}}})}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
    if (!node.empty()) j["spec"]["nodeName"] = node;
    pods_.push_back(*k8s::Pod::FromJson(j));
  }
  k8s::Pod* Find(const std::string& key) {
    for (auto& p : pods_) if (p.metadata.Key() == key) return &p;
    return nullptr;
  }
  std::string NodeOf(const std::string& key) { k8s::Pod* p = Find(key); return p ? p->node_name : "<gone>"; }
  std::string UidOf(const std::string& key) { k8s::Pod* p = Find(key); return p ? p->metadata.uid : "<gone>"; }

  // Asynchronous bindings (async_binds): StartBind only queues the request, as a binding in flight
  // over the API server's connection; CompleteBinds answers every queued one (refusing the pods
  // in fail_binds), calling their callbacks as the transport thread would.
  bool async_binds = false;
  std::set<std::string> fail_binds;
  struct QueuedBind {
    std::string key, node, message;
    std::function<void(absl::Status)> done;
  };
  std::vector<QueuedBind> in_flight;
  std::vector<std::string> bind_succeeded;  // BindSucceeded calls, in order
  void StartBind(const std::string& key, const std::string& node, const std::string& message,
                 std::function<void(absl::Status)> done) override {
    if (!async_binds) {
      done(Bind(key, node, message));
      return;
    }
    in_flight.push_back({key, node, message, std::move(done)});
  }
  void BindSucceeded(const std::string& key, const std::string& node, const std::string&) override {
    bind_succeeded.push_back(key + "->" + node);
  }
  void CompleteBinds() {
    std::vector<QueuedBind> answering = std::move(in_flight);
    in_flight.clear();
    for (auto& b : answering) {
      b.done(fail_binds.count(b.key) ? absl::UnavailableError("bind " + b.key + ": connection reset")
                                     : Bind(b.key, b.node, b.message));
    }
  }

  std::vector<std::string> binds, bind_messages, evictions, owner_changes, conflicts;
  std::map<std::string, int> owner_writes;  // node -> SetNodeOwner calls (refused ones too)
  std::map<std::string, std::vector<WaitReport>> reports;
  std::set<std::string> pdb_blocks;
  bool recreate_evicted = true;
  // Evicted pods stay, terminating (deletionTimestamp set), until FinishDeletions: as a kubelet
  // honouring a grace period, or a watch that has not shown the deletion yet.
  bool linger_evicted = false;
  void FinishDeletions() {
    std::erase_if(pods_, [](const k8s::Pod& p) { return !p.metadata.deletion_timestamp.empty(); });
  }
  int evict_attempts = 0;

 private:
  std::vector<k8s::Node> nodes_;
  std::vector<k8s::Pod> pods_;
  int last_version_ = 0;
};

Config TestConfig() {
  Config c;
  c.queue.reservation_depth = 1;
  c.queue.qos = {{"interactive", 1000, false, true, 0}, {"scavenger", 0, true, false, 0}};
  return c;
}

constexpr queue::Time kNow = 1763722800;  // 2025-11-21T11:00:00Z


// The Slurm scenario tests' set-up (slurm_loop_test, loop_defects_test): a pool of N 8-CPU nodes
// that are also Slurm nodes n1..nN, the QOS table interactive > normal > batch, lending to the
// shared partition "pool" by `mechanism` after 60 s, returned after 600 s.
inline constexpr queue::Time kSlurmLoopT0 = 1763722800;  // 2025-11-21T11:00:00Z

inline Config SlurmLoopConfig(const std::string& mechanism = "drain") {
  Config c;
  c.queue.reservation_depth = 10;
  c.queue.qos = {{"interactive", 1000, false, true, 0},
                 {"normal", 100, true, false, 0},
                 {"batch", 10, true, false, 0}};
  c.slurm.enabled = true;
  c.slurm.shared_partitions = {"pool"};
  c.slurm.lend_mechanism = mechanism;
  c.slurm.lend_after_seconds = 60;
  c.slurm.return_after_seconds = 600;
  c.slurm.default_qos = "batch";
  return c;
}

struct SlurmLoopCluster {
  World k8s;
  FakeSlurm slurm;
  explicit SlurmLoopCluster(int nodes) {
    k8s.slurm = &slurm;
    slurm.now = kSlurmLoopT0;
    for (int i = 1; i <= nodes; ++i) {
      k8s.AddNode("n" + std::to_string(i), "8");
      slurm.AddNode("n" + std::to_string(i));
    }
  }
  CycleStats Cycle(SchedulingLoop& loop, queue::Time t) {
    slurm.now = t;
    return loop.RunCycle(t);
  }
  int Calls(const std::string& call) const {
    return static_cast<int>(std::count(slurm.calls.begin(), slurm.calls.end(), call));
  }
};

}  // namespace
}  // namespace onequeue::scheduler

#endif  // ONEQUEUE_TEST_SCHEDULER_FAKE_WORLD_H_

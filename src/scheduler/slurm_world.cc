#include "scheduler/slurm_world.h"

#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "queue/eligibility.h"
#include "queue/priority.h"
#include "scheduler/pod_mirror.h"
#include "scheduler/slurm_arrays.h"
#include "scheduler/slurm_dependencies.h"
#include "scheduler/slurm_partitions.h"
#include "scheduler/slurm_reservations.h"

namespace onequeue::scheduler {
namespace {

using queue::Resources;

constexpr int64_t kMiB = 1024 * 1024;

// The shared partition a job is queued in ("batch" or, for a job submitted to several
// partitions, the first of its list that is shared); empty when none is.
std::string SharedPartitionOf(const slurm::SlurmJob& job, const std::vector<std::string>& shared) {
  for (absl::string_view p : absl::StrSplit(job.partition, ',')) {
    if (std::find(shared.begin(), shared.end(), p) != shared.end()) return std::string(p);
  }
  return "";
}

int SlotOf(queue::ResourceNames* names, const std::string& resource) {
  int i = names->IndexOf(resource);
  if (i >= 0) return i;
  if (static_cast<int>(names->names.size()) >= queue::kMaxResourceKinds) return -1;
  names->names.push_back(resource);
  return static_cast<int>(names->names.size()) - 1;
}

uint32_t NodeCount(const slurm::SlurmJob& job) {
  if (job.node_count > 0) return job.node_count;
  if (auto it = job.tres_requested.find("node"); it != job.tres_requested.end() && it->second > 0)
    return static_cast<uint32_t>(it->second);
  if (!job.nodes.empty()) return static_cast<uint32_t>(job.nodes.size());
  return 1;
}

// What the job asks of each of its nodes, in the queue's units (millicores, bytes, GPUs).
Resources PerNodeRequest(const slurm::SlurmJob& job, const SlurmWorldOptions& options, queue::ResourceNames* names) {
  Resources r;
  const int64_t nodes = NodeCount(job);
  int64_t cpus = job.cpus;
  if (cpus == 0) {
    if (auto it = job.tres_requested.find("cpu"); it != job.tres_requested.end()) cpus = it->second;
  }
  const int64_t cpus_per_node = std::max<int64_t>(1, (cpus + nodes - 1) / nodes);
  r[queue::kCpu] = cpus_per_node * 1000;
  int64_t mem_mb = job.memory_per_node_mb;
  if (mem_mb == 0 && job.memory_per_cpu_mb > 0) mem_mb = job.memory_per_cpu_mb * cpus_per_node;
  if (mem_mb == 0) {
    if (auto it = job.tres_requested.find("mem"); it != job.tres_requested.end()) mem_mb = (it->second + nodes - 1) / nodes;
  }
  r[queue::kMemory] = mem_mb * kMiB;
  for (const auto& [gres, resource] : options.gres_resources) {
    auto it = job.gres_per_node.find(gres);
    if (it == job.gres_per_node.end() || it->second <= 0) continue;
    const int slot = SlotOf(names, resource);
    if (slot >= 0) r[slot] = it->second;
  }
  return r;
}

std::string MappedQos(const slurm::SlurmJob& job, const SlurmWorldOptions& options) {
  if (auto it = options.qos_map.find(job.qos); it != options.qos_map.end()) return it->second;
  if (!job.qos.empty() &&
      std::find(options.known_qos.begin(), options.known_qos.end(), job.qos) != options.known_qos.end())
    return job.qos;
  return options.default_qos;
}

bool IsRunning(const slurm::SlurmJob& job) {
  return job.state == slurm::JobState::kRunning || job.state == slurm::JobState::kSuspended;
}

bool SlurmNodeUsable(const slurm::SlurmNode& n, const slurm::OwnershipStatus& holder) {
  if (holder.holder == slurm::NodeHolder::kAdmin || holder.holder == slurm::NodeHolder::kDown) return false;
  switch (n.state) {
    case slurm::NodeState::kDown:
    case slurm::NodeState::kError:
    case slurm::NodeState::kFuture:
    case slurm::NodeState::kInvalid:
    case slurm::NodeState::kUnknown:
      return false;
    default:
      break;
  }
  return n.state_flags.count("NOT_RESPONDING") == 0;
}

// Why a job waits for something other than capacity (Slurm keeps it pending on its own):
// a user's or an admin's hold, a dependency, a begin time the user asked for.
bool WaitsForSlurmReason(const slurm::SlurmJob& job) {
  if (job.priority == 0 && !HeldByOnequeue(job)) return true;
  // A dependency is read on its own (slurm_dependencies.h, AddPending).
  static const char* const kReasons[] = {"JobHeldUser", "JobHeldAdmin"};
  for (const char* r : kReasons) {
    if (job.state_reason == r && !HeldByOnequeue(job)) return true;
  }
  // A requeued job waits out a BeginTime Slurm set; onequeue lets it go when it starts it. A
  // begin time the user asked for (never started) is the user's.
  return job.state_reason == "BeginTime" && job.restart_count == 0;
}

}  // namespace

std::optional<uint32_t> SlurmJobOf(std::string_view workload_id) {
  const absl::string_view w(workload_id.data(), workload_id.size());
  if (!absl::StartsWith(w, kSlurmIdPrefix)) return std::nullopt;
  uint32_t id = 0;
  if (!absl::SimpleAtoi(w.substr(absl::string_view(kSlurmIdPrefix).size()), &id)) {
    if (auto task = ArrayTaskOf(workload_id)) return task->first;  // issue 29: the array's record
    return std::nullopt;
  }
  return id;
}

std::string SlurmWorkloadId(uint32_t job_id) { return absl::StrCat(kSlurmIdPrefix, job_id); }

std::vector<char> NodesWithPods(const queue::Snapshot& snapshot) {
  std::vector<char> has_pod(snapshot.nodes.size(), 0);
  for (const auto& r : snapshot.running) {
    if (r.kind != queue::WorkloadKind::kPodGroup) continue;
    for (const auto& a : r.allocations) has_pod[a.node] = 1;
  }
  return has_pod;
}

SlurmWorldOptions SlurmWorldOptionsOf(const Config& config) {
  SlurmWorldOptions o;
  o.shared_partitions = config.slurm.shared_partitions;
  o.node_label = config.slurm.node_label;
  o.mechanism = config.slurm.lend_mechanism;
  o.reclaim_partition = config.slurm.reclaim_partition;
  o.qos_map = config.slurm.qos_map;
  o.default_qos = config.slurm.default_qos;
  for (const auto& q : config.queue.qos) {
    o.known_qos.push_back(q.name);
    if (q.preemptible) o.preemptible_qos.insert(q.name);
  }
  o.gres_resources = config.slurm.gres_resources;
  o.identity = SlurmIdentityOf(config);
  for (const auto& [partition, sharing] : config.slurm.partition_sharing)
    if (sharing == "shared" || sharing == "shared-same-tenant") o.sharing_partitions.insert(partition);
  for (const auto& [partition, sharing] : config.slurm.partition_sharing)
    if (sharing == "shared-same-tenant") o.same_tenant_partitions.insert(partition);
  o.tenants = config.sharing;
  return o;
}

slurm::SlurmIdentity SlurmIdentityOf(const Config& config) {
  return {config.slurm.user, config.slurm.scontrol_user};
}

bool IsPlaceholderJob(const slurm::SlurmJob& job, const std::string& reclaim_partition,
                      const slurm::SlurmIdentity& identity) {
  return job.partition == reclaim_partition && slurm::OwnerFromTag(job.comment).has_value() &&
         absl::StartsWith(job.name, "onequeue-placeholder-") && identity.Submitted(job.user);
}

bool HeldByOnequeue(const slurm::SlurmJob& job) {
  return job.state == slurm::JobState::kPending && job.priority == 0 &&
         absl::StartsWith(job.admin_comment, slurm::kOwnerTagPrefix);
}

namespace {

// AddSlurmWorld's steps over one snapshot: join the nodes, then add each job as running or pending.
class WorldBuilder {
 public:
  WorldBuilder(const slurm::SlurmView& view, const SlurmWorldOptions& options, const queue::QueueConfig& queue_config,
               queue::Snapshot& snap, queue::Time now, SlurmRecords* out)
      : view_(view), options_(options), queue_config_(queue_config), snap_(snap), now_(now), out_(out) {}

  // Joins pool nodes to Slurm nodes and labels them (partitions, lendable).
  void JoinNodes() {
    const std::map<std::string, slurm::OwnershipStatus> holders =
        slurm::OwnershipFromView(view_, options_.mechanism, options_.reclaim_partition, options_.identity);
    for (size_t i = 0; i < snap_.nodes.size(); ++i) {
      queue::Node& node = snap_.nodes[i];
      index_of_[node.name] = static_cast<queue::NodeIndex>(i);
      std::string slurm_name = node.name;
      if (!options_.node_label.empty()) {
        auto l = node.labels.find(options_.node_label);
        if (l == node.labels.end()) continue;
        slurm_name = l->second;
      }
      auto sn = view_.nodes->find(slurm_name);
      if (sn == view_.nodes->end()) continue;
      JoinedNode joined;
      joined.k8s_name = node.name;
      joined.slurm_name = slurm_name;
      if (auto h = holders.find(slurm_name); h != holders.end()) joined.holder = h->second;
      joined.slurm_usable = SlurmNodeUsable(sn->second, joined.holder);
      joined.partitions = sn->second.partitions;
      for (const std::string& p : sn->second.partitions) {
        if (std::find(options_.shared_partitions.begin(), options_.shared_partitions.end(), p) !=
            options_.shared_partitions.end()) {
          node.labels[absl::StrCat(kPartitionLabelPrefix, p)] = "true";
        }
      }
      node.sharing = SharingOf(sn->second.partitions);
      joined.shared = node.sharing == queue::NodeSharing::kShared;
      if (joined.shared && !options_.same_tenant_partitions.empty()) {
        for (const std::string& p : sn->second.partitions)
          node.same_tenant = node.same_tenant || options_.same_tenant_partitions.count(p) > 0;
      }
      // Issue 25: a shared node is never lent whole, so the hysteresis and the headroom (which
      // keep whole nodes for pods) do not apply: Slurm jobs fit there beside pods, planned.
      const bool lendable = joined.slurm_usable && (joined.shared || node.owner.kind != queue::OwnerKind::kKubernetes ||
                                                    !options_.not_lendable.count(node.name));
      if (lendable) node.labels[kLendableLabel] = "true";
      out_->k8s_of_slurm[slurm_name] = node.name;
      out_->nodes.emplace(node.name, std::move(joined));
    }
    Resources pool_total;
    for (const queue::Node& n : snap_.nodes) pool_total += n.allocatable;
    priority_.emplace(queue_config_, snap_.usage, pool_total, now_);
  }

  void AddJob(uint32_t id, const slurm::SlurmJob& job) {
    if (IsPlaceholderJob(job, options_.reclaim_partition, options_.identity)) return;
    if (MirroredUid(job, options_.identity)) return;  // a pod's mirror: the pod counts
    const std::string wid = SlurmWorkloadId(id);
    if (IsRunning(job) || job.state_flags.count("COMPLETING")) {
      std::vector<std::string> on_pool;
      for (const std::string& n : job.nodes) {
        if (auto k = out_->k8s_of_slurm.find(n); k != out_->k8s_of_slurm.end()) on_pool.push_back(k->second);
      }
      if (on_pool.empty()) return;  // outside the pool: Slurm's alone, not our capacity
      AddRunning(job, on_pool);
      out_->running[wid] = &job;
      return;
    }
    if (job.state != slurm::JobState::kPending) return;
    const std::string partition = SharedPartitionOf(job, options_.shared_partitions);
    if (partition.empty()) return;
    if (auto a = options_.assumed_starts.find(id); a != options_.assumed_starts.end()) {
      // Started by onequeue, not yet seen running: it holds the nodes it was given.
      AddRunning(job, a->second);
      out_->running[wid] = &job;
      return;
    }
    if (IsPendingArrayRecord(job)) return AddArrayTasks(job, partition);
    AddPending(job, partition);
  }

 private:
  queue::PendingWorkload BaseWorkload(const slurm::SlurmJob& job, const std::string& partition) {
    queue::PendingWorkload w;
    w.id = SlurmWorkloadId(job.job_id);
    w.kind = queue::WorkloadKind::kSlurmJob;
    w.members = static_cast<int32_t>(NodeCount(job));
    w.members_present = w.members;
    w.gang = w.members > 1;
    w.pack_topology = w.gang;  // issue 29: queue.topologyLabels, like Slurm's topology/tree
    w.per_member = PerNodeRequest(job, options_, &snap_.resource_names);
    if (job.time_limit) w.time_limit = absl::ToInt64Seconds(*job.time_limit);
    w.qos = MappedQos(job, options_);
    w.account = job.account.empty() ? "slurm" : job.account;
    w.partition = partition;
    if (!options_.same_tenant_partitions.empty()) w.tenant = TenantOfAccount(options_.tenants, job.account);
    w.submit_time = job.submit_time == absl::InfinitePast() ? now_ : absl::ToUnixSeconds(job.submit_time);
    return w;
  }

  // Issue 25: shared when the node is in a shared partition and every shared partition it is in
  // says sharing: shared (the stricter setting wins).
  queue::NodeSharing SharingOf(const std::vector<std::string>& partitions) const {
    bool any = false;
    for (const std::string& p : partitions) {
      if (std::find(options_.shared_partitions.begin(), options_.shared_partitions.end(), p) ==
          options_.shared_partitions.end())
        continue;
      if (!options_.sharing_partitions.count(p)) return queue::NodeSharing::kExclusive;
      any = true;
    }
    return any ? queue::NodeSharing::kShared : queue::NodeSharing::kExclusive;
  }

  // What a running job holds on a shared node: Slurm's allocation there, in the queue's units; the
  // whole node when Slurm's answer could not be read (the poller logged why).
  Resources AllocatedOn(const slurm::SlurmJob& job, const std::string& slurm_node, const queue::Node& node) {
    const slurm::NodeAllocation* a = job.allocation.readable() ? job.allocation.On(slurm_node) : nullptr;
    if (a == nullptr) return node.allocatable;
    Resources r;
    r[queue::kCpu] = static_cast<int64_t>(a->cpus) * 1000;
    r[queue::kMemory] = a->memory_mb * kMiB;
    for (const auto& [gres, resource] : options_.gres_resources) {
      auto it = a->gres.find(gres);
      if (it == a->gres.end() || it->second <= 0) continue;
      const int slot = SlotOf(&snap_.resource_names, resource);
      if (slot >= 0) r[slot] = it->second;
    }
    return r;
  }

  void AddRunning(const slurm::SlurmJob& job, const std::vector<std::string>& k8s_nodes, const std::string& id = "") {
    const std::string partition = SharedPartitionOf(job, options_.shared_partitions);
    queue::PendingWorkload as_pending = BaseWorkload(job, partition.empty() ? job.partition : partition);
    queue::RunningWorkload r;
    r.id = id.empty() ? as_pending.id : id;
    r.kind = queue::WorkloadKind::kSlurmJob;
    r.qos = as_pending.qos;
    r.account = as_pending.account;
    r.tenant = as_pending.tenant;
    r.priority = priority_->Compute(as_pending).total;
    r.start_time = job.start_time == absl::InfinitePast() ? now_ : absl::ToUnixSeconds(job.start_time);
    if (as_pending.time_limit) r.expected_end = r.start_time + *as_pending.time_limit;
    // Jobs of partitions onequeue does not share are Slurm's alone: load, never victims; nor are
    // jobs of a partition with PreemptMode=OFF, which Slurm never preempts (slurm_partitions.h).
    r.preemptible = !partition.empty() && options_.preemptible_qos.count(r.qos) > 0 &&
                    !NeverPreemptedIn(job.partition, view_.partitions.get());
    // Issue 25 step 4: a job claiming room (held while its victims leave) is never a victim.
    if (options_.claimed_jobs.count(job.job_id)) r.preemptible = false;
    // Issue 25 G3: nor is a job onequeue released on a shared node and not yet seen running: a
    // requeue would miss it (it is pending) and Slurm would start it into the claimed room.
    if (job.state == slurm::JobState::kPending && options_.assumed_starts.count(job.job_id) &&
        options_.sharing_partitions.count(partition))
      r.preemptible = false;
    const bool started = IsRunning(job) || job.state_flags.count("COMPLETING");
    for (const std::string& k : k8s_nodes) {
      const queue::NodeIndex i = index_of_[k];
      Resources used = as_pending.per_member;
      if (snap_.nodes[i].sharing == queue::NodeSharing::kShared && started)
        used = AllocatedOn(job, out_->nodes[k].slurm_name, snap_.nodes[i]);
      r.allocations.push_back({i, used});
      out_->nodes[k].running_jobs.push_back(job.job_id);
    }
    snap_.running.push_back(std::move(r));
  }

  // Issue 29 (slurm_arrays.h): each pending task a workload of its own, in task order: the
  // n-th counts as submitted n seconds after the array, so that at equal priority the queue
  // orders tasks as Slurm does. A task string that cannot be read: the record is one workload.
  void AddArrayTasks(const slurm::SlurmJob& job, const std::string& partition) {
    if (!running_tasks_) running_tasks_ = RunningTasksByArray(view_);
    const auto running = running_tasks_->find(job.array_job_id);
    const TasksToPlan plan =
        PendingTasksToPlan(job, running == running_tasks_->end() ? 0 : running->second, options_.started_tasks);
    if (!plan.error.empty()) return AddPending(job, partition);
    for (uint32_t t : plan.started_listed)  // started, the view not showing it split off yet
      AddRunning(job, options_.started_tasks.at({job.array_job_id, t}), ArrayTaskWorkloadId(job.array_job_id, t));
    for (size_t i = 0; i < plan.tasks.size(); ++i)
      AddPending(job, partition, ArrayTaskWorkloadId(job.array_job_id, plan.tasks[i]), static_cast<queue::Time>(i));
  }

  void AddPending(const slurm::SlurmJob& job, const std::string& partition, const std::string& task_id = "",
                  queue::Time task_offset = 0) {
    // Issue 29 (slurm_partitions.h): each shared partition of the job's list checked against its
    // own state and limits; the job may start on the nodes of those that allow it.
    const JobPartitions checks =
        CheckJobPartitions(job, NodeCount(job), view_.partitions.get(), options_.shared_partitions);
    const std::vector<std::string> allowed = checks.Allowed();
    queue::PendingWorkload w = BaseWorkload(job, allowed.empty() ? partition : allowed.front());
    if (!task_id.empty()) {
      w.id = task_id;
      w.submit_time += task_offset;
    }
    w.held = WaitsForSlurmReason(job);
    // Issue 29: a job waiting for its dependency is Slurm's to release: never held nor started by
    // onequeue; planned from its parents' expected end, or left to Slurm (held, with the reason).
    if (!w.held) {
      if (DependencyPlan dep = PlanDependency(job, view_, now_); dep.waits) {
        if (dep.not_before) w.not_before = *dep.not_before;
        else w.held = true;
        w.admission_message = std::move(dep.message);
      }
    }
    if (allowed.size() <= 1)
      w.eligibility.node_selector[absl::StrCat(kPartitionLabelPrefix, w.partition)] = "true";
    w.eligibility.node_selector[kLendableLabel] = "true";
    // Taints keep pods off a node; a Slurm job is no pod (whether Slurm may run there is the
    // Slurm node's state and the lendable rule).
    w.eligibility.tolerations.push_back({"", queue::Toleration::Operator::kExists, "", std::nullopt});
    RestrictPlacement(job, w, allowed.size() > 1 ? &allowed : nullptr);
    if (allowed.empty()) {
      // Every partition of the job refuses it (Slurm keeps it pending too): refused with the
      // reason, as a placement onequeue cannot plan; it waits held by onequeue, the reason in its
      // AdminComment, until a poll shows a partition that allows it.
      if (w.admission_error == queue::AdmissionError::kNone) {
        w.admission_error = queue::AdmissionError::kInvalidAnnotation;
        w.admission_message = checks.Reason(job.job_id);
      }
    } else if (!job.reservation.empty()) {  // issue 29: left to Slurm (slurm_reservations.h)
      w.held = true;
      if (w.admission_error == queue::AdmissionError::kNone) w.admission_message = LeftToSlurmMessage(job, view_);
    } else if (job.het_job_id != 0) {  // issue 29: left to Slurm (slurm_arrays.h)
      w.held = true;
      if (w.admission_error == queue::AdmissionError::kNone) w.admission_message = HetJobLeftToSlurmMessage(job);
    }
    // No QOS table: no QOS is unknown (the planner's rule too, planner_state.h qos_unknown).
    if (!options_.known_qos.empty() &&
        std::find(options_.known_qos.begin(), options_.known_qos.end(), w.qos) == options_.known_qos.end()) {
      w.admission_error = queue::AdmissionError::kQosNotAllowed;
      w.admission_message = absl::StrCat("Slurm QOS \"", job.qos, "\" maps to \"", w.qos,
                                         "\", which is not in onequeue's QOS table");
    }
    out_->pending[w.id] = &job;
    snap_.pending.push_back(std::move(w));
  }

  // Issue 29: what the job asked of placement (--constraint, --nodelist, --exclude) as the pool
  // nodes it may use (eligibility.allowed_nodes). A request onequeue cannot plan node by node is
  // refused with the reason: the job waits, held, the reason in its AdminComment and in `oq`.
  // `partitions`: a multi-partition job's partitions that allow it (the nodes of any of them),
  // null when the partition label in the node selector says it.
  void RestrictPlacement(const slurm::SlurmJob& job, queue::PendingWorkload& w,
                         const std::vector<std::string>* partitions) {
    if (job.features.empty() && job.required_nodes.empty() && job.excluded_nodes.empty() && partitions == nullptr)
      return;
    auto refuse = [&](const std::string& why) {
      w.admission_error = queue::AdmissionError::kInvalidAnnotation;
      w.admission_message = absl::StrCat("Slurm job ", job.job_id, ": ", why);
    };
    std::optional<queue::FeatureConstraint> constraint;
    if (!job.features.empty()) {
      absl::StatusOr<queue::FeatureConstraint> c = queue::FeatureConstraint::Parse(job.features);
      if (!c.ok()) return refuse(std::string(c.status().message()));
      if (std::string why = c->PerNodeRuleFor(w.members); !why.empty())
        return refuse(absl::StrCat("constraint \"", job.features, "\": ", why));
      constraint = *std::move(c);
    }
    // Slurm's --nodelist: these nodes and, up to the node count, others of its own choosing.
    const std::set<std::string> required(job.required_nodes.begin(), job.required_nodes.end());
    if (!required.empty() && static_cast<int32_t>(required.size()) < w.members)
      return refuse(absl::StrCat("--nodelist names ", required.size(), " of the job's ", w.members,
                                 " nodes; Slurm would add nodes of its own choosing, which onequeue does not plan"));
    const std::set<std::string> excluded(job.excluded_nodes.begin(), job.excluded_nodes.end());
    std::vector<std::string> allowed;
    for (const auto& [k8s_name, joined] : out_->nodes) {
      const std::string& s = joined.slurm_name;
      if ((!required.empty() && !required.count(s)) || excluded.count(s)) continue;
      if (partitions != nullptr &&
          std::none_of(joined.partitions.begin(), joined.partitions.end(), [&](const std::string& p) {
            return std::find(partitions->begin(), partitions->end(), p) != partitions->end();
          }))
        continue;
      if (constraint) {
        auto sn = view_.nodes->find(s);
        if (sn == view_.nodes->end() || !constraint->Matches(sn->second.features)) continue;
      }
      allowed.push_back(k8s_name);
    }
    w.eligibility.allowed_nodes = std::move(allowed);
  }

  const slurm::SlurmView& view_;
  const SlurmWorldOptions& options_;
  const queue::QueueConfig& queue_config_;
  queue::Snapshot& snap_;
  const queue::Time now_;
  SlurmRecords* out_;
  std::map<std::string, queue::NodeIndex> index_of_;  // Kubernetes name -> index
  std::optional<queue::PriorityCalculator> priority_;
  std::optional<std::map<uint32_t, int>> running_tasks_;  // issue 29: by array, built at the first array
};

}  // namespace

bool UpdatePartitionTiers(const slurm::SlurmView& view, const std::vector<std::string>& shared_partitions,
                          queue::QueueConfig* queue_config) {
  if (view.partitions == nullptr || view.partitions->empty()) return false;
  std::vector<queue::Partition> tiers;
  for (const std::string& name : shared_partitions) {
    auto p = view.partitions->find(name);
    if (p != view.partitions->end()) tiers.push_back({name, p->second.priority_tier});
  }
  if (!tiers.empty()) {
    // Workloads of no partition (pods) count as in the lowest tier: with one shared partition the
    // factor is the same for every workload and orders nothing across the worlds.
    const auto lowest = std::min_element(tiers.begin(), tiers.end(),
                                         [](const auto& a, const auto& b) { return a.tier < b.tier; });
    tiers.push_back({"", lowest->tier});
  }
  const std::vector<queue::Partition>& now = queue_config->partitions;
  const bool same = tiers.size() == now.size() &&
                    std::equal(tiers.begin(), tiers.end(), now.begin(), [](const auto& a, const auto& b) {
                      return a.name == b.name && a.tier == b.tier;
                    });
  if (same) return false;
  queue_config->partitions = std::move(tiers);
  return true;
}

SlurmRecords AddSlurmWorld(std::shared_ptr<const slurm::SlurmView> view, const SlurmWorldOptions& options,
                           const queue::QueueConfig& queue_config, BuiltSnapshot* built, queue::Time now) {
  SlurmRecords out;
  out.view = view;
  if (view == nullptr) return out;
  WorldBuilder builder(*view, options, queue_config, *built->snapshot, now, &out);
  builder.JoinNodes();
  ApplyReservations(*view, out, built->snapshot.get(), now);
  for (const auto& [id, job] : *view->jobs) builder.AddJob(id, job);
  return out;
}

}  // namespace onequeue::scheduler

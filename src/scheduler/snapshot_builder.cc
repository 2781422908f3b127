#include "scheduler/snapshot_builder.h"

#include "scheduler/node_owner.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "queue/eligibility.h"
#include "queue/priority.h"
#include "scheduler/volume_placement.h"

namespace onequeue::scheduler {
namespace {

using queue::Resources;

bool IsPoolNode(const NodeRecord& node, const std::string& pool_label) {
  const auto eq = pool_label.find('=');
  const std::string key = pool_label.substr(0, eq);
  auto it = node.labels.find(key);
  if (it == node.labels.end()) return false;
  return eq == std::string::npos || it->second == pool_label.substr(eq + 1);
}

queue::NodeOwner ParseOwner(const std::string& v) { return NodeOwner::Parse(v).ToQueue(); }

bool IsHostPortName(const std::string& name) { return name.rfind(kHostPortResourcePrefix, 0) == 0; }
bool IsInlineDiskName(const std::string& name) { return name.rfind(kInlineDiskResourcePrefix, 0) == 0; }
// Resources of one node's own (host ports, in-tree disks): a slot only where a pending pod asks.
bool IsNodeLocalName(const std::string& name) { return IsHostPortName(name) || IsInlineDiskName(name); }

// Maps Kubernetes resource names onto the queue's fixed slots: every name but cpu, memory and pods
// (ephemeral-storage, hugepages-*, extended resources) takes the next free slot; past
// kMaxResourceKinds a name gets none (UnmappedRequest names it, and the pod asking is refused).
// A host port name (kHostPortResourcePrefix) gets a slot only from a pending pod
// (`creates_host_ports`): a bound pod's port matters only where a pending pod asks for it.
class ResourceMapper {
 public:
  explicit ResourceMapper(queue::ResourceNames* names, bool creates_host_ports = false)
      : names_(names), creates_host_ports_(creates_host_ports) {}

  Resources Map(const k8s::ResourceList& list) {
    Resources r;
    for (const auto& [name, q] : list) {
      int slot = Slot(name);
      if (slot < 0) continue;
      r[slot] = slot == queue::kCpu ? q.MilliValue() : q.Value();
    }
    return r;
  }

 private:
  int Slot(const std::string& name) {
    if (name == "cpu") return queue::kCpu;
    if (name == "memory") return queue::kMemory;
    if (name == "pods") return queue::kPods;
    int i = names_->IndexOf(name);
    if (i >= 0) return i;
    if (IsNodeLocalName(name) && !creates_host_ports_) return -1;
    if (static_cast<int>(names_->names.size()) >= queue::kMaxResourceKinds) return -1;
    names_->names.push_back(name);
    return static_cast<int>(names_->names.size()) - 1;
  }
  queue::ResourceNames* names_;
  bool creates_host_ports_;
};

// The first resource a pending pod asks for (a non-zero amount) that has no slot, or "".
std::string UnmappedRequest(const k8s::ResourceList& requests, const queue::ResourceNames& names) {
  for (const auto& [name, q] : requests) {
    if (name == "cpu" || name == "memory" || name == "pods" || q.MilliValue() == 0) continue;
    if (names.IndexOf(name) < 0) return name;
  }
  return "";
}

// A pod this scheduler places: unbound (nor assumed bound), ours, not finished, not being
// deleted, and not held back by scheduling gates (SchedulingGates: never planned while gated).
bool IsPendingForUs(const PodRecord& pod, const SnapshotOptions& options) {
  return pod.node_name.empty() && !options.assumed_bindings.contains(pod.key) &&
         pod.scheduler_name == options.scheduler_name && !pod.terminal && !pod.deleting && !pod.gated;
}

// The pods bound (or assumed bound) to each pool node, by node index, not finished.
std::vector<std::vector<const PodRecord*>> BoundPodsByNode(
    const KubeState& state, const std::map<std::string, queue::NodeIndex>& node_index,
    const std::map<std::string, std::string>& assumed_bindings) {
  std::vector<std::vector<const PodRecord*>> out(node_index.size());
  for (const auto& record : state.pods) {
    if (record->terminal) continue;
    const std::string* node = &record->node_name;
    if (node->empty()) {
      auto a = assumed_bindings.find(record->key);
      if (a == assumed_bindings.end()) continue;
      node = &a->second;
    }
    if (auto ni = node_index.find(*node); ni != node_index.end()) out[ni->second].push_back(record.get());
  }
  return out;
}

std::string WorkloadId(const PodRecord& pod, const std::string& group) {
  if (!group.empty()) return pod.namespace_ + "/group/" + group;
  // "slurm/<n>" names Slurm job n: a pod of namespace "slurm" gets "slurm/pod/<name>" (issue 24 M5).
  if (pod.namespace_ == kSlurmPodNamespace) return absl::StrCat(kSlurmPodNamespace, "/pod/", pod.name);
  return pod.key;
}

const NamespacePolicy* PolicyFor(const SnapshotOptions& options, const std::string& namespace_) {
  auto it = options.namespace_policies.find(namespace_);
  if (it == options.namespace_policies.end()) it = options.namespace_policies.find(kAnyNamespace);
  return it == options.namespace_policies.end() ? nullptr : &it->second;
}

// The QOS a workload refused its QOS or account ranks with: its namespace's default, else the
// table's lowest ("" without a table). Never what it asked for: it is never placed, but its
// queue position and priority (oq explain) must not put it ahead of workloads that may run.
std::string QosOfRefused(const NamespacePolicy* policy, const SnapshotOptions& options) {
  if (policy != nullptr && !policy->default_qos.empty()) return policy->default_qos;
  if (options.queue_config == nullptr || options.queue_config->qos.empty()) return "";
  return std::min_element(options.queue_config->qos.begin(), options.queue_config->qos.end(),
                          [](const queue::QosPolicy& a, const queue::QosPolicy& b) { return a.priority < b.priority; })
      ->name;
}

bool Contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// The budgets of each namespace, to find the ones that cover a running pod.
class BudgetIndex {
 public:
  explicit BudgetIndex(const KubeState& state) {
    for (const auto& b : state.budgets) by_namespace_[b->namespace_].push_back(b.get());
  }
  bool empty() const { return by_namespace_.empty(); }

  // The budget group of one pod: "" (no budget), "<namespace>/<budget>", or, under several
  // budgets, their names joined with "+" (a group no budget's status names: it allows nothing,
  // as the Eviction API refuses a pod that more than one budget covers).
  std::string GroupOf(const PodRecord& pod) const {
    auto it = by_namespace_.find(pod.namespace_);
    if (it == by_namespace_.end()) return "";
    std::string group;
    for (const BudgetRecord* b : it->second) {
      if (!b->selector || !k8s::SelectorMatches(*b->selector, pod.labels)) continue;
      absl::StrAppend(&group, group.empty() ? "" : "+", b->key);
    }
    return group;
  }

  void FillAllowed(std::map<std::string, int32_t>* allowed) const {
    for (const auto& [ns, budgets] : by_namespace_) {
      for (const BudgetRecord* b : budgets) (*allowed)[b->key] = b->disruptions_allowed;
    }
  }

 private:
  std::map<std::string, std::vector<const BudgetRecord*>> by_namespace_;
};

// Pods are remembered by UID (a pod deleted and made again under its name is a new pod).
const std::string& AdmissionKey(const PodRecord& pod) { return pod.uid.empty() ? pod.key : pod.uid; }


std::string Describe(const AdmittedAs& a) {
  return absl::StrCat("qos \"", a.qos, "\", account \"", a.account, "\", group \"", a.group, "\"/", a.group_size,
                      ", time limit \"", a.time_limit, "\"",
                      a.active_deadline_seconds ? absl::StrCat("/", *a.active_deadline_seconds, "s") : "");
}

// A pending pod's record with the time limit (annotation and activeDeadlineSeconds) it had when
// first seen (issue 24): later edits are ignored, so a tenant cannot be backfilled on a short
// limit and lengthen it. An unparsable first limit is not kept: the tenant may correct it.
std::shared_ptr<const PodRecord> WithFirstTimeLimit(const std::shared_ptr<const PodRecord>& record,
                                                    const AdmittedPods* admitted) {
  if (admitted == nullptr) return record;
  auto a = admitted->find(std::string_view(AdmissionKey(*record)));
  if (a == admitted->end() || a->second == record) return record;
  const PodRecord& first = *a->second;
  if (!first.time_limit.empty() && !ParseTimeLimit(first.time_limit).ok()) return record;
  if (first.time_limit == record->time_limit && first.active_deadline_seconds == record->active_deadline_seconds) {
    return record;
  }
  auto kept = std::make_shared<PodRecord>(*record);
  kept->time_limit = first.time_limit;
  kept->active_deadline_seconds = first.active_deadline_seconds;
  return kept;
}

// A running pod workload, with its inputs to the multifactor priority it had when it started.
struct RunningGroup {
  queue::RunningWorkload workload;
  std::optional<int32_t> priority_class;
  queue::Time submit = queue::kForever;
  Resources per_member;
  std::set<std::string> budget_groups;  // of its pods, those under some budget
  // No QOS asked and no namespace default (issue 24 M4): a victim as the table's lowest QOS, but
  // ranked as before, by its PriorityClass.
  bool ranks_without_qos = false;
};

}  // namespace

BuiltSnapshot BuildSnapshot(const std::vector<k8s::Node>& nodes, const std::vector<k8s::Pod>& pods,
                            const SnapshotOptions& options, queue::Time now,
                            const std::vector<k8s::PodDisruptionBudget>& budgets) {
  return BuildSnapshot(ToKubeState(nodes, pods, budgets), options, now);
}

namespace {
// A group's members: held if any is, the largest request per member slot by slot, and submitted
// when its first member was created.
void AddMembers(const std::vector<const PodRecord*>& members, queue::ResourceNames* resource_names, queue::Time now,
                queue::PendingWorkload& w) {
  ResourceMapper mapper(resource_names, /*creates_host_ports=*/true);
  for (const PodRecord* p : members) w.held = w.held || !p->hold.empty();
  for (const PodRecord* p : members) w.may_preempt = w.may_preempt && p->may_preempt;
  queue::Time submit = queue::kForever;
  for (const PodRecord* p : members) {
    Resources r = mapper.Map(p->requests);
    r[queue::kPods] = 1;
    for (int i = 0; i < queue::kMaxResourceKinds; ++i) w.per_member[i] = std::max(w.per_member[i], r[i]);
    submit = std::min(submit, p->created);
  }
  w.submit_time = submit == queue::kForever ? now : submit;
}
}  // namespace

queue::PendingWorkload BuildPendingWorkload(const std::string& id, const std::vector<const PodRecord*>& members,
                                            const SnapshotOptions& options, queue::ResourceNames* resource_names,
                                            queue::Time now) {
  const PodRecord& first = *members.front();
  queue::PendingWorkload w;
  w.id = id;
  w.kind = queue::WorkloadKind::kPodGroup;
  w.members_present = static_cast<int32_t>(members.size());
  w.members = w.members_present;
  w.gang = true;
  const NamespacePolicy* policy = PolicyFor(options, first.namespace_);
  w.qos = first.qos.empty() && policy != nullptr ? policy->default_qos : first.qos;
  w.account = !first.account.empty() ? first.account
              : policy != nullptr && !policy->default_account.empty() ? policy->default_account
                                                                      : first.namespace_;
  w.priority_class_value = first.priority;
  w.eligibility = first.eligibility;
  if (options.tenancy != nullptr) w.tenant = TenantOfNamespace(*options.tenancy, first.namespace_);
  AddMembers(members, resource_names, now, w);

  // Annotations are user input: anything wrong leaves the workload pending with the reason.
  auto fail = [&w](queue::AdmissionError e, std::string message) {
    if (w.admission_error != queue::AdmissionError::kNone) return;
    w.admission_error = e;
    w.admission_message = std::move(message);
  };
  const std::string& group_size = first.group_size;
  if (!group_size.empty()) {
    int32_t size = 0;
    if (!absl::SimpleAtoi(group_size, &size) || size < 1 || size > 100000) {
      fail(queue::AdmissionError::kInvalidAnnotation,
           absl::StrCat(kGroupSizeAnnotation, "=\"", group_size, "\" is not a pod count from 1 to 100000"));
    } else {
      w.members = size;
    }
  }
  // Issue 29: a gang packs into the fewest topology domains (queue.topologyLabels).
  w.pack_topology = w.members > 1;
  const std::string& tl = first.time_limit;
  if (!tl.empty()) {
    auto d = ParseTimeLimit(tl);
    if (d.ok()) w.time_limit = *d;
    else fail(queue::AdmissionError::kInvalidAnnotation, absl::StrCat(kTimeLimitAnnotation, ": ", d.status().message()));
  } else if (first.active_deadline_seconds) {
    w.time_limit = std::min(*first.active_deadline_seconds, kMaxTimeLimitSeconds);
  }
  if (!w.qos.empty() &&
      std::find(options.known_qos.begin(), options.known_qos.end(), w.qos) == options.known_qos.end()) {
    fail(queue::AdmissionError::kQosNotAllowed,
         absl::StrCat("QOS \"", w.qos, "\" is not defined in onequeue's configuration"));
  }
  if (policy != nullptr && !w.qos.empty() && !policy->allowed_qos.empty() && !Contains(policy->allowed_qos, w.qos)) {
    fail(queue::AdmissionError::kQosNotAllowed,
         absl::StrCat("namespace \"", first.namespace_, "\" may not use QOS \"", w.qos,
                      "\" (allowed: ", absl::StrJoin(policy->allowed_qos, ", "), ")"));
  }
  if (policy != nullptr && !policy->allowed_accounts.empty() && !Contains(policy->allowed_accounts, w.account)) {
    fail(queue::AdmissionError::kAccountNotAllowed,
         absl::StrCat("namespace \"", first.namespace_, "\" may not charge account \"", w.account,
                      "\" (allowed: ", absl::StrJoin(policy->allowed_accounts, ", "), ")"));
  }
  if (w.admission_error == queue::AdmissionError::kQosNotAllowed ||
      w.admission_error == queue::AdmissionError::kAccountNotAllowed) {
    // Ranked as the namespace's defaults would be (the message keeps what was asked for).
    w.qos = QosOfRefused(policy, options);
    w.account = policy != nullptr && !policy->default_account.empty() ? policy->default_account : first.namespace_;
  }
  for (const PodRecord* p : members) {
    if (!p->unsupported_placement.empty()) fail(queue::AdmissionError::kInvalidAnnotation, p->unsupported_placement);
  }
  for (const PodRecord* p : members) {
    if (std::string name = UnmappedRequest(p->requests, *resource_names); !name.empty()) {
      fail(queue::AdmissionError::kInvalidAnnotation,
           absl::StrCat("asks for ", name, ", beyond the ", queue::kMaxResourceKinds,
                        " resource names onequeue plans at once (cpu, memory, pods and the first names seen)"));
    }
  }
  return w;
}

std::string WorkloadIdOf(const PodRecord& pod) { return WorkloadId(pod, pod.group); }

namespace {

// BuildSnapshot's steps over one KubeState: the pool nodes, then every pod (a daemon pod's
// requests off its node's capacity, a bound pod into its running workload, an unbound one of this
// scheduler into its pending group), then the running workloads ranked, then the pending ones.
class SnapshotAssembler {
 public:
  SnapshotAssembler(const KubeState& state, const SnapshotOptions& options, queue::Time now)
      : state_(state), options_(options), now_(now), budgets_(state) {
    out_.snapshot = std::make_shared<queue::Snapshot>();
  }

  void AddPoolNodes() {
    queue::Snapshot& snap = *out_.snapshot;
    ResourceMapper mapper(&snap.resource_names);
    for (const auto& record : state_.nodes) {
      const NodeRecord& n = *record;
      if (!IsPoolNode(n, options_.pool_label)) continue;
      queue::Node qn;
      qn.name = n.name;
      qn.allocatable = mapper.Map(n.allocatable);
      qn.labels = n.labels;
      qn.taints = n.taints;
      std::string owner_value = n.owner;
      if (auto o = options_.owner_overrides.find(n.name); o != options_.owner_overrides.end()) owner_value = o->second;
      qn.owner = ParseOwner(owner_value);
      qn.schedulable = n.schedulable;
      node_index_[qn.name] = static_cast<queue::NodeIndex>(snap.nodes.size());
      snap.nodes.push_back(std::move(qn));
    }
  }

  // Running: every non-terminal pod on a pool node (whoever scheduled it), grouped by gang.
  // Pending: this scheduler's unbound pods, grouped by gang.
  void AddPods() {
    budgets_.FillAllowed(&out_.snapshot->disruptions_allowed);
    out_.admitted.reserve(state_.pods.size());
    for (const auto& record : state_.pods) {
      const PodRecord& pod = *record;
      std::string node = pod.node_name;
      if (node.empty()) {
        auto a = options_.assumed_bindings.find(pod.key);
        if (a != options_.assumed_bindings.end()) node = a->second;
      }
      if (!node.empty()) {
        if (pod.terminal) continue;
        auto ni = node_index_.find(node);
        if (ni == node_index_.end()) continue;  // not a pool node: not ours to count
        if (pod.daemon) {
          TakeDaemonPodsShare(pod, ni->second);
        } else {
          AddBoundPod(record, ni->second);
        }
        continue;
      }
      if (!IsPendingForUs(pod, options_)) continue;
      AddPendingPod(record);
    }
  }

  // Like with like: a running workload's priority is the multifactor total it had when it started
  // (age = how long it waited then), on the scale of the pending workloads' (the preemptor's),
  // never a PriorityClass value (issue 13).
  void RankRunning() {
    queue::Snapshot& snap = *out_.snapshot;
    const queue::QueueConfig default_config;
    const queue::UsageHistory no_usage;
    Resources pool_total;
    for (const queue::Node& n : snap.nodes) pool_total += n.allocatable;
    const queue::PriorityCalculator calculator(options_.queue_config != nullptr ? *options_.queue_config : default_config,
                                               options_.usage != nullptr ? *options_.usage : no_usage, pool_total, now_);
    queue::PendingWorkload as_pending;  // one, reused: its strings keep their capacity
    for (auto& [id, group] : running_) {
      queue::RunningWorkload& rw = group.workload;
      as_pending.qos = group.ranks_without_qos ? "" : rw.qos;
      as_pending.account = rw.account;
      as_pending.priority_class_value = group.priority_class;
      as_pending.members = static_cast<int32_t>(rw.allocations.size());
      as_pending.per_member = group.per_member;
      const queue::Time waited = group.submit == queue::kForever ? 0 : std::max<queue::Time>(0, rw.start_time - group.submit);
      as_pending.submit_time = now_ - waited;
      rw.priority = calculator.Compute(as_pending).total;
      // Issue 28: without QOS, pods preempt each other by PriorityClass (kube-scheduler's rule).
      if (group.ranks_without_qos) rw.class_priority = group.priority_class.value_or(0);
      // One budget group per workload (the planner's model). A gang whose pods fall under
      // different budgets is in a group that allows nothing; one whose pods are partly under one
      // budget counts all its pods against that budget (over-counting refuses, never evicts).
      if (group.budget_groups.size() == 1) {
        rw.disruption_budget_group = *group.budget_groups.begin();
      } else if (group.budget_groups.size() > 1) {
        rw.disruption_budget_group = absl::StrCat(id, "/", absl::StrJoin(group.budget_groups, "+"));
      }
    }
    snap.running.reserve(running_.size());
    for (auto& [id, group] : running_) snap.running.push_back(std::move(group.workload));
  }

  void AddPendingWorkloads() {
    queue::Snapshot& snap = *out_.snapshot;
    std::vector<std::vector<const PodRecord*>> members_of;  // by snap.pending index
    for (auto& [id, members] : pending_groups_) {
      std::sort(members.begin(), members.end(),
                [](const PodRecord* a, const PodRecord* b) { return a->name < b->name; });
      for (const PodRecord* p : members) out_.pending_pods[id].pod_keys.push_back(p->key);
      snap.pending.push_back(BuildPendingWorkload(id, members, options_, &snap.resource_names, now_));
      members_of.push_back(members);
    }
    AddNodePreferences(members_of);
    if (AnyPodUsesClaims(state_)) AddVolumeRules(members_of);
    if (!state_.csi_nodes.empty() && AnyPodUsesClaims(state_)) AddVolumeLimits(members_of);
    const auto has_rules = [](const auto& record) { return HasInterPodRules(*record); };
    if (std::any_of(state_.pods.begin(), state_.pods.end(), has_rules)) {  // else spare the walk below
      AddInterPodRules(BoundPodsByNode(state_, node_index_, options_.assumed_bindings), members_of, snap);
    }
  }

  // Issue 28: node preference scores (queue::PendingWorkload::node_preference), from the first
  // pod of each workload, as kube-scheduler's default score plugins weigh them: NodeAffinity
  // (weight 2; the sum of the weights of the preferred terms a node matches, scaled to 0..100 by
  // the highest), TaintToleration (weight 3; 100 less the node's intolerable PreferNoSchedule
  // taints scaled by the most any node has), PodTopologySpread and InterPodAffinity (weight 2
  // each; ScheduleAnyway constraints and preferred pod (anti-)affinity terms, pod_preferences.h).
  // Scaled over the pool's nodes (kube-scheduler: over the nodes that pass its filters). All
  // equal: none (the planner's usual order).
  void AddNodePreferences(const std::vector<std::vector<const PodRecord*>>& members_of) {
    queue::Snapshot& snap = *out_.snapshot;
    bool prefer_no_schedule = false;
    for (const queue::Node& n : snap.nodes) {
      for (const queue::Taint& t : n.taints) prefer_no_schedule |= t.effect == queue::TaintEffect::kPreferNoSchedule;
    }
    // Inter-pod preferences: a pending pod's own, or a bound pod's preferred terms (symmetric).
    const auto has_terms = [](const auto& r) { return !r->preferred_affinity.empty() || !r->preferred_anti_affinity.empty(); };
    const bool inter_pod = std::any_of(state_.pods.begin(), state_.pods.end(), [&](const auto& r) {
      return (r->node_name.empty() && HasPodPreferences(*r)) || (!r->node_name.empty() && has_terms(r));
    });
    std::vector<std::vector<const PodRecord*>> bound;
    if (inter_pod) bound = BoundPodsByNode(state_, node_index_, options_.assumed_bindings);
    const PodPreferenceScorer scorer(bound, snap.nodes);
    const size_t count = snap.nodes.size();
    for (size_t i = 0; i < snap.pending.size() && i < members_of.size(); ++i) {
      const PodRecord& pod = *members_of[i].front();
      std::vector<int64_t> spread, inter;
      if (inter_pod) {
        spread = scorer.SpreadScores(pod);
        inter = scorer.AffinityScores(pod);
      }
      if (pod.preferred_node_affinity.empty() && !prefer_no_schedule && spread.empty() && inter.empty()) continue;
      std::vector<int64_t> affinity(count, 0), taints(count, 0);
      int64_t max_affinity = 0, max_taints = 0;
      for (size_t n = 0; n < count; ++n) {
        for (const auto& [weight, term] : pod.preferred_node_affinity) {
          if (queue::MatchesNodeSelectorTerm(snap.nodes[n], term)) affinity[n] += weight;
        }
        if (prefer_no_schedule) taints[n] = queue::IntolerablePreferNoScheduleTaints(snap.nodes[n], pod.eligibility.tolerations);
        max_affinity = std::max(max_affinity, affinity[n]);
        max_taints = std::max(max_taints, taints[n]);
      }
      auto scores = std::make_shared<std::vector<int32_t>>(count, 0);
      for (size_t n = 0; n < count; ++n) {
        const int64_t a = max_affinity > 0 ? affinity[n] * 100 / max_affinity : 0;
        const int64_t t = max_taints > 0 ? 100 - taints[n] * 100 / max_taints : 100;
        const int64_t s = spread.empty() ? 0 : spread[n];
        const int64_t p = inter.empty() ? 0 : inter[n];
        (*scores)[n] = static_cast<int32_t>(2 * a + 3 * t + 2 * s + 2 * p);
      }
      if (std::adjacent_find(scores->begin(), scores->end(), std::not_equal_to<>()) == scores->end()) continue;
      snap.pending[i].node_preference = std::move(scores);
    }
  }

  // NodePorts: one slot per host port a pending pod asks for, one unit of it on every pool node,
  // before any pod is counted (a bound pod's or a daemon's port then takes its node's unit). Ports
  // no pending pod asks for take no slot. In-tree disks (VolumeRestrictions) likewise, with
  // kInlineDiskShares units per node.
  void AddHostPortSlots() {
    queue::Snapshot& snap = *out_.snapshot;
    for (const auto& record : state_.pods) {
      if (!IsPendingForUs(*record, options_)) continue;
      for (const auto& [name, q] : record->requests) {
        if (!IsNodeLocalName(name) || snap.resource_names.IndexOf(name) >= 0) continue;
        if (static_cast<int>(snap.resource_names.names.size()) >= queue::kMaxResourceKinds) break;  // refused later
        snap.resource_names.names.push_back(name);
        const int slot = static_cast<int>(snap.resource_names.names.size()) - 1;
        const int64_t per_node = IsInlineDiskName(name) ? kInlineDiskShares : 1;
        for (queue::Node& n : snap.nodes) n.allocatable[slot] = per_node;
      }
    }
  }

  BuiltSnapshot Take() { return std::move(out_); }

  // The slot of kPreMadeVolumeResourcePrefix + `storage_class`, made with its units on every pool
  // node the first time; -1 when no slot is left (the loop's binding step still keeps volumes apart).
  int PreMadeVolumeSlot(const VolumeIndex& index, const std::string& storage_class) {
    queue::Snapshot& snap = *out_.snapshot;
    const std::string name = absl::StrCat(kPreMadeVolumeResourcePrefix, storage_class);
    if (const int i = snap.resource_names.IndexOf(name); i >= 0) return i;
    if (static_cast<int>(snap.resource_names.names.size()) >= queue::kMaxResourceKinds) return -1;
    snap.resource_names.names.push_back(name);
    const int slot = static_cast<int>(snap.resource_names.names.size()) - 1;
    for (queue::Node& n : snap.nodes) n.allocatable[slot] = index.CountAvailable(storage_class, n);
    return slot;
  }

  // Volumes (volume_placement.h): each pending workload whose pods use claims is refused with the
  // reason, or kept to the nodes its volumes allow; its unbound WaitForFirstConsumer claims are
  // noted for the loop to annotate before binding.
  void AddVolumeRules(const std::vector<std::vector<const PodRecord*>>& members_of) {
    queue::Snapshot& snap = *out_.snapshot;
    const VolumeIndex index(state_, options_.assumed_bindings);
    for (size_t i = 0; i < snap.pending.size() && i < members_of.size(); ++i) {
      queue::PendingWorkload& w = snap.pending[i];
      const auto& members = members_of[i];
      if (std::none_of(members.begin(), members.end(), [](const PodRecord* p) { return !p->claims.empty(); })) continue;
      std::vector<VolumeVerdict> verdicts;
      std::string refusal;
      for (const PodRecord* p : members) {
        verdicts.push_back(index.Check(*p, snap.nodes));
        if (refusal.empty()) refusal = verdicts.back().refusal;
      }
      if (refusal.empty() && members.size() > 1) {
        for (const VolumeVerdict& v : verdicts) {
          if (v.allowed_nodes != verdicts.front().allowed_nodes) {
            refusal = "VolumeBinding: a group whose pods' volumes allow different nodes is not supported yet";
          }
        }
      }
      if (!refusal.empty()) {
        if (w.admission_error == queue::AdmissionError::kNone) {
          w.admission_error = queue::AdmissionError::kInvalidAnnotation;
          w.admission_message = std::move(refusal);
        }
        continue;
      }
      if (const auto& allowed = verdicts.front().allowed_nodes; allowed.has_value()) {
        if (!w.eligibility.allowed_nodes) {
          w.eligibility.allowed_nodes = *allowed;
        } else {
          std::vector<std::string> both;
          for (const std::string& n : *w.eligibility.allowed_nodes) {
            if (std::find(allowed->begin(), allowed->end(), n) != allowed->end()) both.push_back(n);
          }
          w.eligibility.allowed_nodes = std::move(both);
        }
      }
      // Pre-made volumes of a class without a provisioner: one unit of its node-local resource
      // per claim (kPreMadeVolumeResourcePrefix), so one cycle plans no two claims on one volume.
      if (members.size() == 1) {
        for (const VolumeToBind& b : verdicts[0].volumes_to_bind) {
          if (b.provisions) continue;
          if (const int slot = PreMadeVolumeSlot(index, b.storage_class); slot >= 0) w.per_member[slot] += 1;
        }
      }
      for (size_t m = 0; m < members.size(); ++m) {
        if (!verdicts[m].claims_to_select.empty()) out_.claims_to_select[members[m]->key] = verdicts[m].claims_to_select;
        if (!verdicts[m].volumes_to_bind.empty()) out_.volumes_to_bind[members[m]->key] = verdicts[m].volumes_to_bind;
      }
    }
  }

  // NodeVolumeLimits (VolumeLimits, volume_placement.h): each pending workload whose pods use CSI
  // volumes is kept off the nodes where they would exceed a driver's attach limit (refused with
  // the reason when no node is left), and asks one slot of the driver's node-local resource
  // (kCsiVolumesResourcePrefix) per volume attached nowhere yet, so that the pods the planner
  // places earlier in the same cycle count.
  void AddVolumeLimits(const std::vector<std::vector<const PodRecord*>>& members_of) {
    queue::Snapshot& snap = *out_.snapshot;
    const VolumeLimits limits(state_, options_.assumed_bindings, snap.nodes);
    if (limits.empty()) return;
    std::map<std::string, int> slot_of;  // driver -> resource slot (-1: none left)
    const auto slot_for = [&](const std::string& driver) {
      auto [it, added] = slot_of.emplace(driver, -1);
      if (!added) return it->second;
      const std::string name = absl::StrCat(kCsiVolumesResourcePrefix, driver);
      int slot = snap.resource_names.IndexOf(name);
      if (slot < 0 && static_cast<int>(snap.resource_names.names.size()) < queue::kMaxResourceKinds) {
        snap.resource_names.names.push_back(name);
        slot = static_cast<int>(snap.resource_names.names.size()) - 1;
        for (size_t n = 0; n < snap.nodes.size(); ++n) snap.nodes[n].allocatable[slot] = limits.SlotsLeft(n, driver);
      }
      return it->second = slot;
    };
    for (size_t i = 0; i < snap.pending.size() && i < members_of.size(); ++i) {
      queue::PendingWorkload& w = snap.pending[i];
      if (w.admission_error != queue::AdmissionError::kNone) continue;
      const auto& members = members_of[i];
      if (std::none_of(members.begin(), members.end(), [](const PodRecord* p) { return !p->claims.empty(); })) continue;
      std::optional<std::vector<std::string>> allowed = w.eligibility.allowed_nodes;
      std::string example;
      for (const PodRecord* p : members) {
        VolumeLimitVerdict v = limits.Check(*p);
        if (v.allowed_nodes) {
          if (example.empty()) example = v.example;
          if (!allowed) {
            allowed = std::move(v.allowed_nodes);
          } else {
            std::erase_if(*allowed, [&](const std::string& n) {
              return std::find(v.allowed_nodes->begin(), v.allowed_nodes->end(), n) == v.allowed_nodes->end();
            });
          }
        }
        for (const auto& [driver, count] : v.new_volumes) {
          if (const int slot = slot_for(driver); slot >= 0) w.per_member[slot] = std::max(w.per_member[slot], count);
        }
      }
      if (example.empty()) continue;  // no node refused
      if (allowed->empty()) {
        w.admission_error = queue::AdmissionError::kInvalidAnnotation;
        w.admission_message = absl::StrCat("NodeVolumeLimits: node(s) exceed max volume count (", example, ")");
        continue;
      }
      w.eligibility.allowed_nodes = std::move(allowed);
    }
  }

 private:
  // A daemon pod's requests are not the pool's to plan: they come off its node's capacity.
  void TakeDaemonPodsShare(const PodRecord& pod, queue::NodeIndex node) {
    ResourceMapper mapper(&out_.snapshot->resource_names);
    Resources used = mapper.Map(pod.requests);
    used[queue::kPods] = 1;
    queue::Resources& capacity = out_.snapshot->nodes[node].allocatable;
    for (int i = 0; i < queue::kMaxResourceKinds; ++i) capacity[i] = std::max<int64_t>(0, capacity[i] - used[i]);
  }

  // A bound pod is scheduled as it was admitted: edits of its QOS, account or gang since are
  // ignored (and reported), so re-annotating a running pod cannot make it un-preemptible.
  std::shared_ptr<const PodRecord> AdmittedRecord(const std::shared_ptr<const PodRecord>& record) {
    const PodRecord& pod = *record;
    if (options_.admitted == nullptr) return record;
    auto a = options_.admitted->find(std::string_view(AdmissionKey(pod)));
    if (a == options_.admitted->end()) return record;
    const PodRecord* admitted = a->second.get();
    if (admitted != &pod && !(AdmittedValues(*admitted) == AdmittedValues(pod))) {
      out_.ignored_edits.push_back(absl::StrCat("pod ", pod.key, ": annotations changed after admission (now ",
                                                Describe(AdmittedValues(pod)), "); ignored, scheduled as admitted (",
                                                Describe(AdmittedValues(*admitted)), ")"));
    }
    return a->second;
  }

  // Bound by someone else, or before the policy changed: what the namespace may not ask for is
  // replaced by its defaults here too.
  void ApplyNamespacePolicy(const PodRecord& pod, std::string& qos, std::string& account) {
    const NamespacePolicy* policy = PolicyFor(options_, pod.namespace_);
    if (policy == nullptr) return;
    if (qos.empty()) qos = policy->default_qos;
    if (account.empty()) account = policy->default_account;
    if (!qos.empty() && !policy->allowed_qos.empty() && !Contains(policy->allowed_qos, qos)) {
      out_.ignored_edits.push_back(absl::StrCat("pod ", pod.key, ": QOS \"", qos, "\" is not allowed in namespace \"",
                                                pod.namespace_, "\"; scheduled as \"", policy->default_qos, "\""));
      qos = policy->default_qos;
    }
    if (!account.empty() && !policy->allowed_accounts.empty() && !Contains(policy->allowed_accounts, account)) {
      out_.ignored_edits.push_back(absl::StrCat("pod ", pod.key, ": account \"", account,
                                                "\" is not allowed in namespace \"", pod.namespace_,
                                                "\"; charged to \"", policy->default_account, "\""));
      account = policy->default_account;
    }
  }

  void AddBoundPod(const std::shared_ptr<const PodRecord>& record, queue::NodeIndex node) {
    const PodRecord& pod = *record;
    std::shared_ptr<const PodRecord> admitted_record = AdmittedRecord(record);
    const PodRecord& as = *admitted_record;
    std::string qos = as.qos, account = as.account;
    const std::string id = WorkloadId(pod, as.group);
    out_.admitted.emplace(std::string_view(AdmissionKey(as)), std::move(admitted_record));
    ApplyNamespacePolicy(pod, qos, account);
    RunningGroup& group = running_[id];
    queue::RunningWorkload& rw = group.workload;
    rw.id = id;
    if (qos.empty()) {  // issue 24 M4: never "no QOS", which no preemptor may take
      qos = QosOfRefused(nullptr, options_);
      group.ranks_without_qos = true;
    }
    rw.qos = qos;
    rw.account = account.empty() ? pod.namespace_ : account;
    if (options_.tenancy != nullptr) rw.tenant = TenantOfNamespace(*options_.tenancy, pod.namespace_);
    rw.gang_id = as.group.empty() ? "" : id;
    const queue::Time start = pod.bound;
    rw.start_time = rw.start_time == 0 ? start : std::min(rw.start_time, start);
    ResourceMapper mapper(&out_.snapshot->resource_names);
    Resources used = mapper.Map(pod.requests);
    used[queue::kPods] = 1;
    rw.allocations.push_back({node, used});
    // Issue 25 step 4: a pod claiming room (not bound yet, its victims leaving) is never a victim.
    if (pod.node_name.empty() && options_.claims.contains(pod.key)) {
      rw.preemptible = false;
      out_.running_pods[id].never_victims.insert(pod.key);
    }
    if (pod.priority && (!group.priority_class || *pod.priority > *group.priority_class)) {
      group.priority_class = pod.priority;
    }
    group.submit = std::min(group.submit, pod.created);
    for (int i = 0; i < queue::kMaxResourceKinds; ++i) group.per_member[i] = std::max(group.per_member[i], used[i]);
    // The time limit it was admitted with (fixed when first seen), not today's annotation.
    if (auto tl = ParseTimeLimit(as.time_limit); tl.ok()) {
      rw.expected_end = rw.start_time + *tl;
    } else if (as.active_deadline_seconds) {
      // Kubernetes accepts any positive int64 here; past a century it means "no end we plan for".
      rw.expected_end = rw.start_time + std::min(*as.active_deadline_seconds, kMaxTimeLimitSeconds);
    }
    if (!budgets_.empty()) {
      if (std::string g = budgets_.GroupOf(pod); !g.empty()) group.budget_groups.insert(std::move(g));
    }
    out_.running_pods[id].pod_keys.push_back(pod.key);
  }

  // Pending: admitted as it is now, but with the time limit it was first seen with.
  void AddPendingPod(const std::shared_ptr<const PodRecord>& record) {
    std::shared_ptr<const PodRecord> as_record = WithFirstTimeLimit(record, options_.admitted);
    if (as_record != record) first_limits_.push_back(as_record);  // kept alive for pending_groups_
    out_.admitted.emplace(std::string_view(AdmissionKey(*as_record)), as_record);
    pending_groups_[WorkloadId(*record, record->group)].push_back(as_record.get());
  }

  const KubeState& state_;
  const SnapshotOptions& options_;
  const queue::Time now_;
  BuiltSnapshot out_;
  std::map<std::string, queue::NodeIndex> node_index_;
  const BudgetIndex budgets_;
  std::map<std::string, RunningGroup> running_;
  std::map<std::string, std::vector<const PodRecord*>> pending_groups_;
  std::vector<std::shared_ptr<const PodRecord>> first_limits_;  // pending records given their first time limit
};

}  // namespace

BuiltSnapshot BuildSnapshot(const KubeState& state, const SnapshotOptions& options, queue::Time now) {
  SnapshotAssembler assembler(state, options, now);
  assembler.AddPoolNodes();
  assembler.AddHostPortSlots();
  assembler.AddPods();
  assembler.RankRunning();
  assembler.AddPendingWorkloads();
  return assembler.Take();
}

}  // namespace onequeue::scheduler

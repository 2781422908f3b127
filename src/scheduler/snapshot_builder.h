#pragma once
// Turns what the informers hold (Kubernetes Nodes and Pods) into the queue's immutable Snapshot,
// and remembers which pods make up each workload so the executor can act on the plan. Pure: no
// I/O, time is an argument.
//
// Pod annotations read here (the user-facing contract, docs/user-guide.md):
//   onequeue.io/qos          QOS name from the configured table (else the namespace policy's default,
//                            else the PriorityClass maps onto QOS)
//   onequeue.io/account      fair-share account (default: the namespace policy's, else the namespace)
// QOS, account and gang are read while a pod is pending; a bound pod keeps what it was admitted
// with (SnapshotOptions::admitted).
//   onequeue.io/time-limit   "90s", "30m", "2h", "1h30m" or seconds; else activeDeadlineSeconds;
//                            none: a service. Fixed when the pod is first seen (a valid or absent
//                            limit; an unparsable one may be corrected): later edits are ignored.
//   onequeue.io/group        gang name (per namespace); onequeue.io/group-size: its pod count
// PodDisruptionBudgets: a running workload whose pods one budget covers is in that budget's group
// (Snapshot::disruptions_allowed = its status.disruptionsAllowed), so the preemption planner only
// chooses victim sets every budget allows; a pod under two budgets (the Eviction API refuses it),
// or a gang whose pods fall under different budgets, is in a group that allows no disruption.
// Node annotation written by onequeue: onequeue.io/owner = kubernetes | slurm | free | reserved/<workload>
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "k8s_client/dra.h"
#include "k8s_client/models.h"
#include "scheduler/config.h"
#include "scheduler/pod_placement.h"
#include "scheduler/pod_preferences.h"
#include "scheduler/volume_to_bind.h"
#include "queue/model.h"

namespace onequeue::scheduler {

inline constexpr const char* kQosAnnotation = "onequeue.io/qos";
inline constexpr const char* kAccountAnnotation = "onequeue.io/account";
inline constexpr const char* kTimeLimitAnnotation = "onequeue.io/time-limit";
inline constexpr const char* kGroupAnnotation = "onequeue.io/group";
inline constexpr const char* kGroupSizeAnnotation = "onequeue.io/group-size";
inline constexpr const char* kOwnerAnnotation = "onequeue.io/owner";
// Written by `oq hold` to the pod's status (status "True", the reason in its message; `oq release`
// sets "False"): the workload waits, reason Held. In the status, not an annotation, because the
// pod's owner cannot write a pod's status (the edit and admin roles have no pods/status), so a
// tenant cannot lift an administrator's hold (issue 24). The annotation onequeue.io/hold of
// earlier versions is ignored.
inline constexpr const char* kHeldCondition = "onequeue.io/Held";
// Label (kubernetes | slurm | reserved) and NoSchedule taint onequeue sets on the pool nodes it
// manages; the taint keeps other schedulers off nodes lent to Slurm or reserved, and onequeue's
// own placement ignores it.
inline constexpr const char* kOwnerLabel = "onequeue.io/owner";
inline constexpr const char* kOwnerTaintKey = "onequeue.io/owner";
// Resource names standing for host ports in PodRecord::requests ("hostPort:TCP/8080"): one unit
// per pool node, so two pods asking one port/protocol never share a node (NodePorts).
inline constexpr const char* kHostPortResourcePrefix = "hostPort:";
// Resource names standing for in-tree disks in PodRecord::requests (VolumeRestrictions), e.g.
// "inlineDisk:gce/<pdName>": kInlineDiskShares units per pool node; a pod mounting the disk
// read-write takes them all, read-only one, so read-only users share a node and nothing shares
// it with a writer (an awsElasticBlockStore volume is always a writer: upstream ignores readOnly
// there). An rbd image asks for one name per monitor, so images with overlapping monitors meet.
inline constexpr const char* kInlineDiskResourcePrefix = "inlineDisk:";
inline constexpr int64_t kInlineDiskShares = 1000;
inline constexpr const char* kEstimatedStartAnnotation = "onequeue.io/estimated-start";
inline constexpr const char* kQueuePositionAnnotation = "onequeue.io/queue-position";

// What the pods of one namespace may ask for (config: queue.namespacePolicies). Empty lists allow
// anything; empty defaults keep the built-in ones (no QOS; the namespace as account).
struct NamespacePolicy {
  std::vector<std::string> allowed_qos;
  std::string default_qos;
  std::vector<std::string> allowed_accounts;
  std::string default_account;
};
// Namespace key of the policy for every namespace without its own.
inline constexpr const char* kAnyNamespace = "*";

// What a pod was admitted with: its QOS, account and gang as they were while it was pending (or,
// for a pod first seen bound, when first seen), and its time limit as it was when first seen.
// Later edits of a bound pod's annotations do not change how it is scheduled (a running pod
// re-annotated "interactive" stays preemptible; one given a longer limit still ends when it would).
struct AdmittedAs {
  std::string qos, account, group, group_size;
  std::string time_limit;
  std::optional<int64_t> active_deadline_seconds;
  friend bool operator==(const AdmittedAs&, const AdmittedAs&) = default;
};
struct PodRecord;
// Pod UID (else "namespace/name") -> the pod's record as it was admitted. The key views the uid
// (or key) inside the record the value keeps alive: remembering a pod costs a reference count,
// not a copy of its strings.
using AdmittedPods = absl::flat_hash_map<std::string_view, std::shared_ptr<const PodRecord>>;

struct SnapshotOptions {
  std::string scheduler_name = "onequeue";
  // "key" (any value) or "key=value": which Kubernetes nodes form the pool.
  std::string pool_label = "onequeue.io/pool";
  // QOS names pods may ask for; empty QOS in the pod: none asked.
  std::vector<std::string> known_qos;
  // Pods bound by this scheduler whose binding the informer has not shown yet (assumed), by
  // "namespace/name" -> node name: counted as running there.
  std::map<std::string, std::string> assumed_bindings;
  // Issue 25 step 4: pods ("namespace/name") holding a sub-node preemption claim, or whose
  // placeholder is under way and not yet bound (G3) (their nodes are in assumed_bindings). Counted
  // there as running but never a victim: the claim, or the bind, is committed.
  std::set<std::string, std::less<>> claims;
  // Owner values this scheduler wrote that the informer does not show yet: node -> value.
  std::map<std::string, std::string> owner_overrides;
  // Namespace -> policy (kAnyNamespace: the rest). Empty: every pod may ask for anything.
  std::map<std::string, NamespacePolicy> namespace_policies;
  // What each pod was admitted with (last cycle's BuiltSnapshot::admitted). Null: nothing
  // remembered (every bound pod is at first sight).
  const AdmittedPods* admitted = nullptr;
  // The queue's configuration and usage, to give each running pod workload the multifactor
  // priority it had when it started (the scale the preemptor's priority is on). Null: the queue's
  // default weights, no QOS table, no usage.
  const queue::QueueConfig* queue_config = nullptr;
  const queue::UsageHistory* usage = nullptr;
  // Issue 25 tenancy: set when some partition is shared-same-tenant; every pod workload then carries
  // the tenant of its namespace (TenantOfNamespace). Null: no tenants.
  const SharingConfig* tenancy = nullptr;
};

// What the snapshot needs of one pod, parsed once when the informer delivers it (not every
// cycle): annotations, requests, eligibility, times. `generation` moves with every change.
struct PodRecord {
  std::string key, namespace_, name, uid;
  std::string node_name;  // bound to
  std::string scheduler_name;
  bool terminal = false;   // Succeeded or Failed
  bool deleting = false;   // deletionTimestamp set
  // Run by a DaemonSet: one on every node, part of the node rather than a tenant's workload. Its
  // requests reduce the node's capacity; it never makes a node Kubernetes' (nor blocks lending).
  bool daemon = false;
  // Annotations as written (onequeue.io/qos, account, time-limit, group, group-size).
  std::string qos, account, time_limit, group, group_size;
  std::string hold;  // condition onequeue.io/Held (its message): held by an administrator when non-empty
  std::optional<int32_t> priority;
  queue::Time created = 0;
  // When it was bound (PodScheduled=True's transition), else `created`: a running pod's time limit
  // counts from here, not from when it was made (it may have waited days).
  queue::Time bound = 0;
  std::optional<int64_t> active_deadline_seconds;
  k8s::ResourceList requests;  // ComputePodRequests
  queue::Eligibility eligibility;
  // Issue 28: preferred node affinity terms (weight, term), for the node preference scores.
  std::vector<std::pair<int32_t, queue::NodeSelectorTerm>> preferred_node_affinity;
  // spec.schedulingGates is not empty: never planned until they are removed (SchedulingGates).
  bool gated = false;
  bool may_preempt = true;  // false: spec.preemptionPolicy Never
  // Inter-pod rules (pod_placement.h): hard topology spread constraints, required pod affinity and
  // anti-affinity terms. What onequeue cannot honour (those rules' unsupported forms, DRA claims)
  // keeps the pod pending with the reason in `unsupported_placement` rather than being ignored.
  k8s::StringMap labels;
  std::vector<SpreadRule> spread;
  std::vector<InterPodTerm> affinity, anti_affinity;
  std::string unsupported_placement;
  // Inter-pod preferences (pod_preferences.h): ScheduleAnyway spread constraints and preferred pod
  // (anti-)affinity terms, for the node preference scores.
  std::vector<SpreadRule> soft_spread;
  std::vector<WeightedInterPodTerm> preferred_affinity, preferred_anti_affinity;
  // The PersistentVolumeClaims its volumes use (names in its namespace; volume_placement.h).
  std::vector<std::string> claims;
  // Issue 25 DRA (dra_pods.h): its ResourceClaims by namespace/name, in spec order; "" for one not
  // made yet. Refused (unsupported_placement) unless dra_pods.h takes it on a gpus: dra node.
  std::vector<std::string> resource_claims;
  uint64_t generation = 0;

  static PodRecord From(const k8s::Pod& pod);
};

// What the snapshot needs of one node.
struct NodeRecord {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<queue::Taint> taints;  // without onequeue's own owner taint
  k8s::ResourceList allocatable;
  std::string owner;  // the onequeue.io/owner annotation
  std::string resource_version;  // the precondition of the loop's owner writes
  bool schedulable = false;  // Ready, not cordoned, not being deleted
  uint64_t generation = 0;

  static NodeRecord From(const k8s::Node& node);
};

// What the snapshot needs of one PodDisruptionBudget (policy/v1).
struct BudgetRecord {
  std::string key, namespace_, name;
  // None: the budget selects no pod (policy/v1); an empty selector selects every pod of its
  // namespace.
  std::optional<k8s::LabelSelector> selector;
  // status.disruptionsAllowed, or 0 while the status is older than the spec (the Eviction API
  // refuses every eviction under such a budget).
  int32_t disruptions_allowed = 0;
  uint64_t generation = 0;

  static BudgetRecord From(const k8s::PodDisruptionBudget& pdb);
};

// The Kubernetes world as records, immutable: a cycle reads one of these.
struct KubeState {
  std::vector<std::shared_ptr<const NodeRecord>> nodes;
  std::vector<std::shared_ptr<const PodRecord>> pods;
  std::vector<std::shared_ptr<const BudgetRecord>> budgets;
  // Volumes (volume_placement.h): claims, persistent volumes and storage classes as the informers
  // hold them. Read only for pods that use claims.
  std::vector<std::shared_ptr<const k8s::PersistentVolumeClaim>> claims;
  std::vector<std::shared_ptr<const k8s::PersistentVolume>> volumes;
  std::vector<std::shared_ptr<const k8s::StorageClass>> classes;
  // NodeVolumeLimits: the CSINode objects (each CSI driver's attach limit on a node).
  std::vector<std::shared_ptr<const k8s::CsiNode>> csi_nodes;
  // VolumeBinding's storage capacity check: CSIDriver and CSIStorageCapacity objects.
  std::vector<std::shared_ptr<const k8s::CsiDriver>> csi_drivers;
  std::vector<std::shared_ptr<const k8s::CsiStorageCapacity>> csi_capacities;
  // Issue 25 DRA (dra_pods.h): ResourceClaims and ResourceSlices, read only with gpus: dra.
  std::vector<std::shared_ptr<const k8s::ResourceClaim>> resource_claims;
  std::vector<std::shared_ptr<const k8s::ResourceSlice>> resource_slices;
  uint64_t generation = 0;  // the highest record generation in it
};

// What changed in the Kubernetes world since a generation (KubeSource::ChangesSince): the pods
// whose records were added or updated, as they are now, and whether anything else changed (a node,
// a budget, a deletion of anything), which only a full snapshot answers.
struct KubeChanges {
  uint64_t generation = 0;  // the world's generation these changes bring one up to
  std::vector<std::shared_ptr<const PodRecord>> pods;  // in the order they changed
  bool others = false;
};

// One workload's pods, in member order.
struct WorkloadPods {
  std::vector<std::string> pod_keys;  // "namespace/name"
  // Issue 25 G7: those of pod_keys holding a claim or whose placeholder is under way, not bound
  // yet (SnapshotOptions::claims): counted as running, but never asked to leave. A preemption
  // names its victims by workload, and a gang's pods made again after an eviction are the same
  // workload: a claim read back after a restart names the gang that left, not its replacements.
  std::set<std::string, std::less<>> never_victims;
  // The pods a preemptor of this workload asks to leave: pod_keys but never_victims.
  std::vector<std::string> VictimPodKeys() const {
    std::vector<std::string> out;
    for (const std::string& key : pod_keys) {
      if (!never_victims.contains(key)) out.push_back(key);
    }
    return out;
  }
};

struct BuiltSnapshot {
  std::shared_ptr<queue::Snapshot> snapshot;
  std::map<std::string, WorkloadPods, std::less<>> pending_pods;  // pending workload id -> its pods
  std::map<std::string, WorkloadPods, std::less<>> running_pods;  // running workload id -> its pods
  // What every non-terminal pod is admitted with as of this cycle: pass it back as
  // SnapshotOptions::admitted next cycle (pods gone are dropped with it).
  AdmittedPods admitted;
  // One line per bound pod whose annotations differ from what it was admitted with, or whose QOS
  // or account its namespace does not allow: the values used instead (for the daemon's log).
  std::vector<std::string> ignored_edits;
  // VolumeBinding: pod key -> its unbound WaitForFirstConsumer claims ("namespace/name"). Before
  // such a pod is bound the loop annotates each with volume.kubernetes.io/selected-node.
  std::map<std::string, std::vector<std::string>, std::less<>> claims_to_select;
  // VolumeBinding with pre-made volumes: pod key -> its claims to bind to a PersistentVolume
  // (VolumeToBind, volume_placement.h) before the pod is bound.
  std::map<std::string, std::vector<VolumeToBind>, std::less<>> volumes_to_bind;
};

BuiltSnapshot BuildSnapshot(const KubeState& state, const SnapshotOptions& options, queue::Time now);
// The same from Kubernetes objects (parsed here): for tests and one-off callers.
BuiltSnapshot BuildSnapshot(const std::vector<k8s::Node>& nodes, const std::vector<k8s::Pod>& pods,
                            const SnapshotOptions& options, queue::Time now,
                            const std::vector<k8s::PodDisruptionBudget>& budgets = {});
KubeState ToKubeState(const std::vector<k8s::Node>& nodes, const std::vector<k8s::Pod>& pods,
                      const std::vector<k8s::PodDisruptionBudget>& budgets = {});

// The pending workload `id` made of `members` (one pod, or a gang's pods sorted by name), exactly as
// BuildSnapshot makes it: requests, QOS, account and namespace policy, time limit, admission
// errors. Extended resources not in `resource_names` yet are added to it. Inter-pod rules are not
// read here (AddInterPodRules reads them over the whole snapshot).
queue::PendingWorkload BuildPendingWorkload(const std::string& id, const std::vector<const PodRecord*>& members,
                                            const SnapshotOptions& options, queue::ResourceNames* resource_names,
                                            queue::Time now);
// The workload id of a pod: its key, or its gang's "<namespace>/group/<group>". Slurm jobs are
// "slurm/<job id>" (slurm_world.h), so a pod of namespace "slurm" is "slurm/pod/<name>": no pod id
// ever reads as a Slurm job's, whose decisions would start, requeue or cancel that job.
inline constexpr const char* kSlurmPodNamespace = "slurm";
std::string WorkloadIdOf(const PodRecord& pod);

// The QOS, account and gang annotations of a pod's record.
AdmittedAs AdmittedValues(const PodRecord& record);

// The longest time limit a workload may give: a century. queue::Time is int64 seconds, and the
// planner adds limits to start times; 2^63 seconds would overflow (undefined behaviour).
inline constexpr queue::Duration kMaxTimeLimitSeconds = queue::Duration{100} * 365 * 86400;

// "90s", "30m", "2h", "1h30m", "3600" -> seconds; error message on anything else, including a
// limit longer than kMaxTimeLimitSeconds.
absl::StatusOr<queue::Duration> ParseTimeLimit(const std::string& text);

// Node selector terms (required node affinity, a PersistentVolume's node affinity) as the queue's.
std::vector<queue::NodeSelectorTerm> NodeAffinityTermsOf(const std::vector<k8s::NodeSelectorTerm>& terms);

// RFC 3339 ("2026-11-21T23:40:00Z") -> Unix seconds; 0 when absent or unparsable.
queue::Time ParseTimestamp(const std::string& rfc3339);

}  // namespace onequeue::scheduler

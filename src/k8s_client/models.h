// Typed models of the Kubernetes objects a scheduler reads and writes, parsed with nlohmann_json;
// Pod and Node, what the informers receive by the thousand, also from simdjson's DOM
// (FromSimdjson: the same decoder, the same model, at a fraction of the cost; issue 26,
// docs/k8s_client.md "Decoding watch events").
// Only the fields the scheduler needs are kept; unknown fields are ignored, so newer API servers
// keep working. A known field of the wrong JSON type, or a malformed quantity, is an
// InvalidArgument error (never an exception or a crash).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "k8s_client/quantity.h"
#include "nlohmann/json_fwd.hpp"

namespace simdjson::dom {
class element;  // <simdjson.h>, included only where a document is parsed
}  // namespace simdjson::dom

namespace onequeue::k8s {

using ResourceList = std::map<std::string, Quantity>;  // "cpu" -> 100m, "memory" -> 500Mi, ...
using StringMap = std::map<std::string, std::string>;

struct OwnerReference {
  std::string api_version, kind, name, uid;
  bool controller = false;
  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name, namespace_, uid, resource_version, generate_name;
  std::string creation_timestamp, deletion_timestamp;  // RFC 3339, "" when absent
  int64_t generation = 0;
  StringMap labels, annotations;
  std::vector<OwnerReference> owner_references;
  // "namespace/name", or "name" for cluster-scoped objects: the informer's store key.
  std::string Key() const { return namespace_.empty() ? name : namespace_ + "/" + name; }
  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

struct LabelSelectorRequirement {
  std::string key, op;  // op: In, NotIn, Exists, DoesNotExist (Gt, Lt for node selectors)
  std::vector<std::string> values;
  friend bool operator==(const LabelSelectorRequirement&, const LabelSelectorRequirement&) = default;
};

struct LabelSelector {
  StringMap match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// LabelSelector semantics (metav1.LabelSelectorAsSelector): every matchLabels pair and every
// requirement (In, NotIn, Exists, DoesNotExist) holds. An unknown operator matches nothing.
bool SelectorMatches(const LabelSelector& selector, const StringMap& labels);

// One required inter-pod (anti-)affinity term (PodAffinityTerm): pods matched by `selector` in
// `namespaces` (empty: the pod's own) on the same `topology_key` domain.
struct PodAffinityTerm {
  LabelSelector selector;
  bool has_selector = false;            // no labelSelector matches no pod
  std::vector<std::string> namespaces;
  bool has_namespace_selector = false;
  LabelSelector namespace_selector;  // when has_namespace_selector; empty: every namespace
  std::string topology_key;
  friend bool operator==(const PodAffinityTerm&, const PodAffinityTerm&) = default;
};

// One preferredDuringSchedulingIgnoredDuringExecution entry of podAffinity / podAntiAffinity.
struct WeightedPodAffinityTerm {
  int32_t weight = 0;  // 1-100
  PodAffinityTerm term;
  friend bool operator==(const WeightedPodAffinityTerm&, const WeightedPodAffinityTerm&) = default;
};

// One spec.topologySpreadConstraints entry (PodTopologySpread).
struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  std::string when_unsatisfiable;  // DoNotSchedule or ScheduleAnyway
  std::optional<LabelSelector> selector;  // none: matches no pod
  std::optional<int32_t> min_domains;
  std::string node_affinity_policy, node_taints_policy;  // Honor or Ignore; "" = the default
  std::vector<std::string> match_label_keys;
  friend bool operator==(const TopologySpreadConstraint&, const TopologySpreadConstraint&) = default;
};

struct NodeSelectorTerm {
  std::vector<LabelSelectorRequirement> match_expressions;
  std::vector<LabelSelectorRequirement> match_fields;
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

// One preferredDuringSchedulingIgnoredDuringExecution entry of a pod's node affinity.
struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;
  friend bool operator==(const PreferredSchedulingTerm&, const PreferredSchedulingTerm&) = default;
};

struct Toleration {
  std::string key, op, value, effect;  // op: Equal (default) or Exists
  std::optional<int64_t> toleration_seconds;
  friend bool operator==(const Toleration&, const Toleration&) = default;
};

struct Taint {
  std::string key, value, effect;
  // Set by the node lifecycle controller on NoExecute taints (what tolerationSeconds counts from).
  // Kept so that a copy of the node's taints can be written back whole (issue 26: the owner mark
  // from the informer's copy, kube_cluster.cc).
  std::string time_added;
  friend bool operator==(const Taint&, const Taint&) = default;
};

struct Condition {
  std::string type, status, reason, message, last_transition_time;
  friend bool operator==(const Condition&, const Condition&) = default;
};

// A container port that takes a port on the node (hostPort > 0); ports without one are not kept.
struct HostPort {
  int32_t port = 0;
  std::string protocol = "TCP";  // TCP (default), UDP, SCTP
  std::string host_ip;           // "" = every address (0.0.0.0)
  friend bool operator==(const HostPort&, const HostPort&) = default;
};

struct Container {
  std::string name;
  ResourceList requests, limits;
  std::string restart_policy;  // "Always" on an init container makes it a sidecar
  std::vector<HostPort> host_ports;
  friend bool operator==(const Container&, const Container&) = default;
};

// An in-tree volume kube-scheduler's VolumeRestrictions keeps apart on one node: gcePersistentDisk
// (pdName), awsElasticBlockStore (volumeID), iscsi (iqn), rbd (pool/image, with its monitors).
struct InlineDisk {
  enum class Kind : uint8_t { kGcePersistentDisk, kAwsElasticBlockStore, kIscsi, kRbd };
  Kind kind = Kind::kGcePersistentDisk;
  std::string id;                       // pdName, volumeID, iqn, or "<pool>/<image>" (pool "rbd" when unset)
  std::vector<std::string> monitors;    // rbd: cephMonitors
  bool read_only = false;
  friend bool operator==(const InlineDisk&, const InlineDisk&) = default;
};

struct Pod {
  ObjectMeta metadata;
  // spec
  std::string node_name, scheduler_name, priority_class_name, preemption_policy;
  std::optional<int32_t> priority;
  StringMap node_selector;
  std::vector<NodeSelectorTerm> required_node_affinity;  // ORed terms
  std::vector<PreferredSchedulingTerm> preferred_node_affinity;
  std::vector<Toleration> tolerations;
  // requiredDuringSchedulingIgnoredDuringExecution of podAffinity / podAntiAffinity.
  std::vector<PodAffinityTerm> required_pod_affinity, required_pod_anti_affinity;
  // preferredDuringSchedulingIgnoredDuringExecution of podAffinity / podAntiAffinity.
  std::vector<WeightedPodAffinityTerm> preferred_pod_affinity, preferred_pod_anti_affinity;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<Container> containers, init_containers;
  ResourceList overhead;
  ResourceList pod_level_requests;  // spec.resources.requests (PodLevelResources)
  std::optional<int64_t> active_deadline_seconds;
  std::vector<std::string> scheduling_gates;  // spec.schedulingGates[].name
  std::vector<std::string> resource_claims;   // spec.resourceClaims[].name (DynamicResources)
  // Issue 25 DRA: the ResourceClaim object each entry names, in its namespace (resourceClaimName,
  // or a template's claim from status.resourceClaimStatuses); "" while it is not made yet.
  std::vector<std::string> resource_claim_objects;
  // The PersistentVolumeClaims its volumes use, by name in its namespace: each
  // persistentVolumeClaim.claimName, and for a generic ephemeral volume "<pod>-<volume>" (the
  // claim the ephemeral controller makes). Sorted, without repeats.
  std::vector<std::string> volume_claims;
  std::vector<InlineDisk> inline_disks;  // spec.volumes of the four in-tree kinds above
  // status
  std::string phase, nominated_node_name;
  std::vector<Condition> conditions;
  // What the scheduler must reserve, summed as Kubernetes does (see ComputePodRequests).
  ResourceList requests;

  static absl::StatusOr<Pod> FromJson(const nlohmann::json& j);
  // The same decoder over simdjson's DOM: an equal Pod, or an error where FromJson gives one.
  static absl::StatusOr<Pod> FromSimdjson(const simdjson::dom::element& j);
  friend bool operator==(const Pod&, const Pod&) = default;
};

// resourcehelper.PodRequests: max(sum(containers) + sum(sidecars), each init container plus the
// sidecars started before it) + overhead; pod-level requests, when set, replace the aggregate
// for the resources they name.
ResourceList ComputePodRequests(const Pod& pod);

struct Node {
  ObjectMeta metadata;
  ResourceList capacity, allocatable;
  std::vector<Taint> taints;
  bool unschedulable = false;
  std::vector<Condition> conditions;

  static absl::StatusOr<Node> FromJson(const nlohmann::json& j);
  static absl::StatusOr<Node> FromSimdjson(const simdjson::dom::element& j);  // as Pod's
  friend bool operator==(const Node&, const Node&) = default;
};

struct PriorityClass {
  ObjectMeta metadata;
  int32_t value = 0;
  bool global_default = false;
  std::string preemption_policy;

  static absl::StatusOr<PriorityClass> FromJson(const nlohmann::json& j);
};

// An int or a percentage string ("50%"), as intstr.IntOrString.
struct IntOrString {
  bool is_string = false;
  int32_t int_value = 0;
  std::string string_value;
};

struct PodDisruptionBudget {
  ObjectMeta metadata;
  std::optional<IntOrString> min_available, max_unavailable;
  std::optional<LabelSelector> selector;
  int32_t disruptions_allowed = 0, current_healthy = 0, desired_healthy = 0, expected_pods = 0;
  // status.observedGeneration: the Eviction API refuses every eviction under a budget whose
  // status is older than its spec (metadata.generation).
  int64_t observed_generation = 0;

  static absl::StatusOr<PodDisruptionBudget> FromJson(const nlohmann::json& j);
};

struct Lease {
  ObjectMeta metadata;
  std::string holder_identity;
  std::optional<int32_t> lease_duration_seconds;
  std::string acquire_time, renew_time;  // RFC 3339 with microseconds (MicroTime)
  int32_t lease_transitions = 0;

  static absl::StatusOr<Lease> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;
};

struct ObjectReference {
  std::string api_version, kind, namespace_, name, uid, resource_version, field_path;
};

// events.k8s.io/v1 Event.
struct Event {
  ObjectMeta metadata;
  std::string event_time, reporting_controller, reporting_instance, action, reason, note, type;
  ObjectReference regarding;
  std::optional<ObjectReference> related;
  int32_t series_count = 0;  // 0 when there is no series
  std::string series_last_observed_time;

  static absl::StatusOr<Event> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;
};

// core/v1 PersistentVolumeClaim: what VolumeBinding, VolumeZone and VolumeRestrictions read.
struct PersistentVolumeClaim {
  ObjectMeta metadata;
  std::optional<std::string> storage_class_name;  // spec.storageClassName; none: no class asked
  std::string volume_name;                        // spec.volumeName: the PV it is bound to
  std::vector<std::string> access_modes;          // spec.accessModes
  std::string phase;                              // status.phase: Pending, Bound, Lost
  // What a pre-made PersistentVolume must offer to be bound to it (VolumeBinding).
  std::optional<Quantity> storage_request;  // spec.resources.requests.storage
  std::string volume_mode;                  // spec.volumeMode; "" = Filesystem
  std::optional<LabelSelector> selector;    // spec.selector

  static absl::StatusOr<PersistentVolumeClaim> FromJson(const nlohmann::json& j);
};

// core/v1 PersistentVolume.
struct PersistentVolume {
  ObjectMeta metadata;  // labels: topology.kubernetes.io/zone and region (VolumeZone)
  std::string storage_class_name;
  std::vector<std::string> access_modes;
  // spec.nodeAffinity.required.nodeSelectorTerms (ORed); empty: any node.
  std::vector<NodeSelectorTerm> node_affinity;
  std::string claim_namespace, claim_name;  // spec.claimRef
  std::string claim_uid;                    // spec.claimRef.uid
  std::string phase;                        // status.phase: Available, Bound, Released, Failed
  // spec.csi.driver and spec.csi.volumeHandle (NodeVolumeLimits); empty: not a CSI volume.
  std::string csi_driver, csi_volume_handle;
  std::optional<Quantity> capacity;         // spec.capacity.storage
  std::string volume_mode;                  // spec.volumeMode; "" = Filesystem

  static absl::StatusOr<PersistentVolume> FromJson(const nlohmann::json& j);
};

// storage.k8s.io/v1 StorageClass.
struct StorageClass {
  ObjectMeta metadata;
  std::string provisioner;
  std::string volume_binding_mode;  // Immediate (default) or WaitForFirstConsumer
  // allowedTopologies[].matchLabelExpressions as node selector terms (ORed); empty: anywhere.
  std::vector<NodeSelectorTerm> allowed_topologies;

  static absl::StatusOr<StorageClass> FromJson(const nlohmann::json& j);
};

// storage.k8s.io/v1 CSINode (name = the node's): the attach limit of each CSI driver on the node
// (NodeVolumeLimits).
struct CsiNode {
  ObjectMeta metadata;
  struct Driver {
    std::string name;
    std::optional<int64_t> allocatable_count;  // spec.drivers[].allocatable.count; none: no limit
    friend bool operator==(const Driver&, const Driver&) = default;
  };
  std::vector<Driver> drivers;

  static absl::StatusOr<CsiNode> FromJson(const nlohmann::json& j);
};

// storage.k8s.io/v1 CSIDriver (name = the driver's, as in a StorageClass's provisioner).
struct CsiDriver {
  ObjectMeta metadata;
  // spec.storageCapacity: VolumeBinding checks CSIStorageCapacity for volumes it provisions.
  bool storage_capacity = false;

  static absl::StatusOr<CsiDriver> FromJson(const nlohmann::json& j);
};

// storage.k8s.io/v1 CSIStorageCapacity: the room one storage class has left for new volumes on
// the nodes its nodeTopology selects (VolumeBinding).
struct CsiStorageCapacity {
  ObjectMeta metadata;
  std::string storage_class_name;
  std::optional<LabelSelector> node_topology;  // none: no node has access
  std::optional<Quantity> capacity, maximum_volume_size;

  static absl::StatusOr<CsiStorageCapacity> FromJson(const nlohmann::json& j);
};

// ObjectMeta parsing shared by the models (and by the informer for unknown kinds).
absl::StatusOr<ObjectMeta> ParseObjectMeta(const nlohmann::json& j);

}  // namespace onequeue::k8s

#pragma once
// Volumes (issue 28): kube-scheduler v1.37's VolumeBinding, VolumeZone, VolumeRestrictions and
// NodeVolumeLimits filters, computed from the snapshot into per-node eligibility (the queue's
// Eligibility::allowed_nodes) or a refusal with the reason, so src/queue stays pure. Pure: no I/O.
//
// For each PersistentVolumeClaim a pending pod's volumes use (persistentVolumeClaim and generic
// ephemeral volumes), as kube-scheduler's plugins decide:
// - VolumeBinding: a claim missing or being deleted, or unbound with no class or an Immediate
//   class, keeps the pod pending with the claim named. A bound claim's PersistentVolume restricts
//   the nodes to those its spec.nodeAffinity matches (a missing volume: no node). An unbound claim
//   of a WaitForFirstConsumer class is provisioned where the pod goes: the nodes its class's
//   allowedTopologies allow, and before binding the pod the loop annotates the claim
//   volume.kubernetes.io/selected-node (kube-scheduler's PreBind). Such a claim several pods
//   use: the oldest pending one chooses the node, the others wait; once a pod using it is placed,
//   they go to the node the annotation names. A WaitForFirstConsumer claim a pre-made
//   PersistentVolume could satisfy (a class with no provisioner, or an Available volume of its
//   class) goes to the nodes where an Available, unclaimed volume matches it (class, access modes,
//   capacity, volumeMode, selector, node affinity; pvutil.FindMatchingVolume); before binding the
//   pod the loop writes the smallest such volume's claimRef (VolumeToBind). No volume matches and
//   the class has no provisioner: pending with the claim named. A volume whose claimRef already
//   names the claim (the PV controller has yet to bind it) restricts the nodes as a bound one.
//   Storage capacity (kube-scheduler's hasEnoughCapacity): a claim that would be provisioned on a
//   node (no pre-made volume chosen there), with a storage request, of a class whose provisioner
//   is a CSI driver whose CSIDriver says spec.storageCapacity: true, may go to the node only if a
//   CSIStorageCapacity of the class whose nodeTopology selects the node has maximumVolumeSize (if
//   set, else capacity) >= the request; no node left: pending with the claim and class named and
//   kube-scheduler's "node(s) did not have enough free storage". No CSIDriver, or storageCapacity
//   unset or false: no check. As in kube-scheduler, the capacities are the ones last reported:
//   claims placed earlier (in this cycle or not yet provisioned) do not decrement them. Unlike it,
//   a claim already selected for a node (being provisioned for a placed pod) is not checked again.
// - VolumeZone: a bound volume's zone and region labels (topology.kubernetes.io/* and the beta
//   failure-domain keys) must match the node's; a node with none of these labels passes.
// - VolumeRestrictions: a ReadWriteOncePod claim a bound (or assumed) pod uses keeps the pod
//   pending; of pending pods sharing one, only the oldest is planned.
// - NodeVolumeLimits (VolumeLimits below, kube-scheduler's CSILimits): a node's CSINode gives each
//   CSI driver's attach limit (spec.drivers[].allocatable.count). A pod's CSI volumes are its
//   claims bound to a PersistentVolume with spec.csi (driver/volumeHandle), or unbound (or bound to
//   a missing volume) with a storage class whose provisioner is the driver (one volume per claim).
//   A node is refused when, for some driver, the unique volumes the pods bound (or assumed bound)
//   there use plus the pod's volumes not among them exceed the limit ("node(s) exceed max volume
//   count"): a volume shared with a pod on the node counts once, a pod adding no new volume always
//   passes. No CSINode, or a driver without allocatable.count: no limit. Pods placed earlier in the
//   same cycle count through a node-local resource per driver (kCsiVolumesResourcePrefix). Not
//   counted, unlike kube-scheduler: in-tree volumes migrated to CSI, the deprecated
//   attachable-volumes-csi-* node allocatable.
// A gang whose members' volumes allow different nodes is refused.
// In-tree inline disk conflicts are node-local resources (kInlineDiskResourcePrefix,
// snapshot_builder.h), not here.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "k8s_client/models.h"
#include "queue/model.h"
#include "scheduler/snapshot_builder.h"
#include "scheduler/volume_to_bind.h"

namespace onequeue::scheduler {

inline constexpr const char* kSelectedNodeAnnotation = "volume.kubernetes.io/selected-node";
inline constexpr const char* kBoundByControllerAnnotation = "pv.kubernetes.io/bound-by-controller";

// What the volume filters say about one pending pod.
struct VolumeVerdict {
  std::string refusal;  // non-empty: never placed, this is why
  // The pool nodes its volumes allow (names); nullopt: any.
  std::optional<std::vector<std::string>> allowed_nodes;
  std::vector<std::string> claims_to_select;  // "namespace/name", WaitForFirstConsumer and unbound
  std::vector<VolumeToBind> volumes_to_bind;  // WaitForFirstConsumer claims to bind to pre-made volumes
  friend bool operator==(const VolumeVerdict&, const VolumeVerdict&) = default;
};

// The claims, volumes and classes of one KubeState, indexed; and who uses each claim.
class VolumeIndex {
 public:
  // `assumed`: pods bound this cycle but not yet seen bound ("namespace/name" -> node).
  VolumeIndex(const KubeState& state, const std::map<std::string, std::string>& assumed);

  // `pool`: the snapshot's nodes.
  VolumeVerdict Check(const PodRecord& pod, const std::vector<queue::Node>& pool) const;
  // The Available, unclaimed volumes of `storage_class` whose node affinity allows `node`.
  int64_t CountAvailable(const std::string& storage_class, const queue::Node& node) const;

 private:
  std::map<std::string, const k8s::PersistentVolumeClaim*> claims_;
  std::map<std::string, const k8s::PersistentVolume*> volumes_;
  std::map<std::string, const k8s::StorageClass*> classes_;
  std::map<std::string, std::vector<std::string>> available_by_class_;  // Available, unclaimed PVs
  std::map<std::string, std::string> running_user_;  // claim key -> a bound or assumed pod using it
  std::map<std::string, const PodRecord*> first_pending_user_;  // claim key -> oldest pending user
  std::map<std::string, const k8s::PersistentVolume*> prebound_;  // claim key -> volume whose claimRef names it
  std::map<std::string, bool> driver_capacity_;  // CSIDriver name -> spec.storageCapacity
  std::map<std::string, std::vector<const k8s::CsiStorageCapacity*>> capacities_by_class_;

  // Whether provisioning `claim` of `storage_class` is checked against CSIStorageCapacity.
  bool ChecksCapacity(const k8s::StorageClass& storage_class, const k8s::PersistentVolumeClaim& claim) const;
  // Some CSIStorageCapacity of the class that selects `node` has room for the claim's request.
  bool HasEnoughCapacity(const k8s::StorageClass& storage_class, const k8s::PersistentVolumeClaim& claim,
                         const queue::Node& node) const;

  // One claim of `pod`: restricts v.allowed_nodes and adds what to write; returns the refusal, or "".
  std::string CheckClaim(const PodRecord& pod, const std::string& name, const std::vector<queue::Node>& pool,
                         VolumeVerdict& v) const;
  // The storage class of unbound claim `name`, which must exist and be WaitForFirstConsumer; else
  // the refusal as the status message.
  absl::StatusOr<const k8s::StorageClass*> WaitForFirstConsumerClassOf(const std::string& name,
                                                                      const std::string& class_name) const;
  // A claim with no volume yet (`key` is "namespace/name"): its class, pre-made and pre-bound volumes.
  std::string CheckUnboundClaim(const PodRecord& pod, const std::string& key, const std::string& name,
                                const k8s::PersistentVolumeClaim& claim, const std::vector<queue::Node>& pool,
                                VolumeVerdict& v) const;
  // The Available volumes of the claim's class that match it, per pool node, smallest first.
  VolumeToBind MatchPreMadeVolumes(const std::string& key, const k8s::PersistentVolumeClaim& claim,
                                   const std::vector<queue::Node>& pool) const;
};

// Resource names standing for one CSI driver's attach slots ("csiVolumes:<driver>"): per pool
// node the slots its CSINode limit leaves after the volumes already attached there (no limit: a
// great many); a pending pod asks one per volume of the driver attached on no pool node, so the
// planner counts the pods it places earlier in the same cycle.
inline constexpr const char* kCsiVolumesResourcePrefix = "csiVolumes:";
inline constexpr int64_t kUnlimitedCsiVolumes = int64_t{1} << 30;

// What NodeVolumeLimits says about one pending pod.
struct VolumeLimitVerdict {
  // The pool nodes (names) it may go to; nullopt: no node refused.
  std::optional<std::vector<std::string>> allowed_nodes;
  std::string example;  // one refused node and why, for the reason
  int32_t refused = 0;  // how many pool nodes are refused
  // Driver -> how many of its volumes are attached on no pool node (the same-cycle slots it takes).
  std::map<std::string, int64_t> new_volumes;
};

// NodeVolumeLimits over one KubeState and the snapshot's pool nodes.
class VolumeLimits {
 public:
  // `assumed`: pods bound this cycle but not yet seen bound ("namespace/name" -> node).
  VolumeLimits(const KubeState& state, const std::map<std::string, std::string>& assumed,
               const std::vector<queue::Node>& pool);
  bool empty() const { return !any_limit_; }  // no pool node has a limit
  VolumeLimitVerdict Check(const PodRecord& pod) const;
  // The slots `driver` has left on pool node `node` (index): kUnlimitedCsiVolumes without a limit.
  int64_t SlotsLeft(size_t node, const std::string& driver) const;

 private:
  // The CSI volumes a pod uses: unique name ("<driver>/<handle>") -> driver.
  std::map<std::string, std::string> VolumesOf(const PodRecord& pod) const;

  std::map<std::string, const k8s::PersistentVolumeClaim*> claims_;
  std::map<std::string, const k8s::PersistentVolume*> volumes_;
  std::map<std::string, const k8s::StorageClass*> classes_;
  std::vector<std::string> names_;                         // pool node names
  std::vector<std::map<std::string, int64_t>> limits_;      // by pool node: driver -> limit
  std::vector<std::map<std::string, std::set<std::string>>> attached_;  // by pool node: driver -> volumes
  std::set<std::string> attached_anywhere_;
  bool any_limit_ = false;
};

// True when some pending pod uses a claim (else the builder skips the index altogether).
bool AnyPodUsesClaims(const KubeState& state);

}  // namespace onequeue::scheduler

#pragma once
// Volumes (issue 28): kube-scheduler v1.37's VolumeBinding, VolumeZone and VolumeRestrictions
// filters, computed from the snapshot into per-node eligibility (the queue's
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
// - VolumeZone: a bound volume's zone and region labels (topology.kubernetes.io/* and the beta
//   failure-domain keys) must match the node's; a node with none of these labels passes.
// - VolumeRestrictions: a ReadWriteOncePod claim a bound (or assumed) pod uses keeps the pod
//   pending; of pending pods sharing one, only the oldest is planned.
// A gang whose members' volumes allow different nodes is refused. Not read: NodeVolumeLimits
// (CSINode attach limits), CSIStorageCapacity. In-tree inline disk conflicts are node-local
// resources (kInlineDiskResourcePrefix, snapshot_builder.h), not here.
#include <map>
#include <optional>
#include <string>
#include <vector>

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

  // The Available volumes of the claim's class that match it, per pool node, smallest first.
  VolumeToBind MatchPreMadeVolumes(const std::string& key, const k8s::PersistentVolumeClaim& claim,
                                   const std::vector<queue::Node>& pool) const;
};

// True when some pending pod uses a claim (else the builder skips the index altogether).
bool AnyPodUsesClaims(const KubeState& state);

}  // namespace onequeue::scheduler

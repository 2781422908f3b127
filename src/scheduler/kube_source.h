#pragma once
// The Kubernetes world's source of records: fed by the pod, node and PodDisruptionBudget
// informers' handlers, it parses each object once, when it changes, into a PodRecord / NodeRecord /
// BudgetRecord with a generation number. A cycle takes State(): an immutable KubeState that is
// rebuilt only when some record's generation moved since the last one handed out, and shares every
// unchanged record with it (the model: kube-scheduler's Cache.UpdateSnapshot). So a cycle neither
// copies Kubernetes objects out of the informers nor parses them again.
#include <map>
#include <optional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "k8s_client/models.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {

class KubeSource {
 public:
  // Informer handlers (any thread).
  void UpsertPod(const k8s::Pod& pod);
  void DeletePod(const k8s::Pod& pod);
  void UpsertNode(const k8s::Node& node);
  void DeleteNode(const k8s::Node& node);
  void UpsertBudget(const k8s::PodDisruptionBudget& pdb);
  void DeleteBudget(const k8s::PodDisruptionBudget& pdb);
  // Volumes (volume_placement.h): claims, persistent volumes, storage classes.
  void UpsertClaim(const k8s::PersistentVolumeClaim& claim);
  void DeleteClaim(const k8s::PersistentVolumeClaim& claim);
  void UpsertVolume(const k8s::PersistentVolume& volume);
  void DeleteVolume(const k8s::PersistentVolume& volume);
  void UpsertClass(const k8s::StorageClass& storage_class);
  void DeleteClass(const k8s::StorageClass& storage_class);
  // NodeVolumeLimits: CSINode objects (volume_placement.h).
  void UpsertCsiNode(const k8s::CsiNode& csi_node);
  void DeleteCsiNode(const k8s::CsiNode& csi_node);
  // VolumeBinding's storage capacity check: CSIDriver and CSIStorageCapacity objects.
  void UpsertCsiDriver(const k8s::CsiDriver& driver);
  void DeleteCsiDriver(const k8s::CsiDriver& driver);
  void UpsertCsiCapacity(const k8s::CsiStorageCapacity& capacity);
  void DeleteCsiCapacity(const k8s::CsiStorageCapacity& capacity);
  // Issue 25 DRA (dra_pods.h): ResourceClaims and ResourceSlices (gpus: dra only).
  void UpsertResourceClaim(const k8s::ResourceClaim& claim);
  void DeleteResourceClaim(const k8s::ResourceClaim& claim);
  void UpsertResourceSlice(const k8s::ResourceSlice& slice);
  void DeleteResourceSlice(const k8s::ResourceSlice& slice);

  // The current state; the same object as last time when nothing changed.
  std::shared_ptr<const KubeState> State() const;
  uint64_t generation() const;
  // The pods upserted since `generation`, and whether a node, a budget or a deletion came too;
  // nullopt when that is no longer known (older than the log of recent changes kept here).
  // Costs what changed, not the size of the world.
  std::optional<KubeChanges> ChangesSince(uint64_t generation) const;

 private:
  mutable absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<const PodRecord>> pods_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const NodeRecord>> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const BudgetRecord>> budgets_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::PersistentVolumeClaim>> claims_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::PersistentVolume>> volumes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::StorageClass>> classes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::CsiNode>> csi_nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::CsiDriver>> csi_drivers_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::CsiStorageCapacity>> csi_capacities_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::ResourceClaim>> resource_claims_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const k8s::ResourceSlice>> resource_slices_ ABSL_GUARDED_BY(mu_);
  mutable std::shared_ptr<const KubeState> state_ ABSL_GUARDED_BY(mu_);
  // The recent pod upserts (generation -> pod key), at most kChangeLogSize of them; the changes
  // since a generation older than `log_starts_after_` are no longer known.
  static constexpr size_t kChangeLogSize = 1 << 16;
  std::map<uint64_t, std::string> pod_changes_ ABSL_GUARDED_BY(mu_);
  uint64_t log_starts_after_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_other_change_ ABSL_GUARDED_BY(mu_) = 0;  // node, budget or deletion
  void LogPodChange(uint64_t generation, const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace onequeue::scheduler

#pragma once
// The Kubernetes world's source of records: fed by the pod, node and PodDisruptionBudget
// informers' handlers, it parses each object once, when it changes, into a PodRecord / NodeRecord /
// BudgetRecord with a generation number. A cycle takes State(): an immutable KubeState that is
// rebuilt only when some record's generation moved since the last one handed out, and shares every
// unchanged record with it (the model: kube-scheduler's Cache.UpdateSnapshot). So a cycle neither
// copies Kubernetes objects out of the informers nor parses them again.
#include <map>
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

  // The current state; the same object as last time when nothing changed.
  std::shared_ptr<const KubeState> State() const;
  uint64_t generation() const;

 private:
  mutable absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<const PodRecord>> pods_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const NodeRecord>> nodes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<const BudgetRecord>> budgets_ ABSL_GUARDED_BY(mu_);
  mutable std::shared_ptr<const KubeState> state_ ABSL_GUARDED_BY(mu_);
};

}  // namespace onequeue::scheduler

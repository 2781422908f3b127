#include "scheduler/kube_source.h"

#include <set>
#include <string_view>

namespace onequeue::scheduler {

void KubeSource::UpsertPod(const k8s::Pod& pod) {
  auto record = std::make_shared<PodRecord>(PodRecord::From(pod));  // parsed outside the lock
  absl::MutexLock lock(&mu_);
  record->generation = ++generation_;
  LogPodChange(generation_, record->key);
  pods_[record->key] = std::move(record);
}

void KubeSource::DeletePod(const k8s::Pod& pod) {
  absl::MutexLock lock(&mu_);
  if (pods_.erase(pod.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertNode(const k8s::Node& node) {
  auto record = std::make_shared<NodeRecord>(NodeRecord::From(node));
  absl::MutexLock lock(&mu_);
  last_other_change_ = record->generation = ++generation_;
  nodes_[record->name] = std::move(record);
}

void KubeSource::DeleteNode(const k8s::Node& node) {
  absl::MutexLock lock(&mu_);
  if (nodes_.erase(node.metadata.name) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertBudget(const k8s::PodDisruptionBudget& pdb) {
  auto record = std::make_shared<BudgetRecord>(BudgetRecord::From(pdb));
  absl::MutexLock lock(&mu_);
  last_other_change_ = record->generation = ++generation_;
  budgets_[record->key] = std::move(record);
}

void KubeSource::DeleteBudget(const k8s::PodDisruptionBudget& pdb) {
  absl::MutexLock lock(&mu_);
  if (budgets_.erase(pdb.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

namespace {
// A volume object changed: no pod's record moves, so it is an "other" change (a full cycle).
template <typename T>
void Upsert(std::map<std::string, std::shared_ptr<const T>>& into, const T& object) {
  into[object.metadata.Key()] = std::make_shared<const T>(object);
}
}  // namespace

void KubeSource::UpsertClaim(const k8s::PersistentVolumeClaim& claim) {
  absl::MutexLock lock(&mu_);
  Upsert(claims_, claim);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteClaim(const k8s::PersistentVolumeClaim& claim) {
  absl::MutexLock lock(&mu_);
  if (claims_.erase(claim.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertVolume(const k8s::PersistentVolume& volume) {
  absl::MutexLock lock(&mu_);
  Upsert(volumes_, volume);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteVolume(const k8s::PersistentVolume& volume) {
  absl::MutexLock lock(&mu_);
  if (volumes_.erase(volume.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertClass(const k8s::StorageClass& storage_class) {
  absl::MutexLock lock(&mu_);
  Upsert(classes_, storage_class);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteClass(const k8s::StorageClass& storage_class) {
  absl::MutexLock lock(&mu_);
  if (classes_.erase(storage_class.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertCsiNode(const k8s::CsiNode& csi_node) {
  absl::MutexLock lock(&mu_);
  Upsert(csi_nodes_, csi_node);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteCsiNode(const k8s::CsiNode& csi_node) {
  absl::MutexLock lock(&mu_);
  if (csi_nodes_.erase(csi_node.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertCsiDriver(const k8s::CsiDriver& driver) {
  absl::MutexLock lock(&mu_);
  Upsert(csi_drivers_, driver);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteCsiDriver(const k8s::CsiDriver& driver) {
  absl::MutexLock lock(&mu_);
  if (csi_drivers_.erase(driver.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertCsiCapacity(const k8s::CsiStorageCapacity& capacity) {
  absl::MutexLock lock(&mu_);
  Upsert(csi_capacities_, capacity);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteCsiCapacity(const k8s::CsiStorageCapacity& capacity) {
  absl::MutexLock lock(&mu_);
  if (csi_capacities_.erase(capacity.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertResourceClaim(const k8s::ResourceClaim& claim) {
  absl::MutexLock lock(&mu_);
  Upsert(resource_claims_, claim);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteResourceClaim(const k8s::ResourceClaim& claim) {
  absl::MutexLock lock(&mu_);
  if (resource_claims_.erase(claim.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

void KubeSource::UpsertResourceSlice(const k8s::ResourceSlice& slice) {
  absl::MutexLock lock(&mu_);
  Upsert(resource_slices_, slice);
  last_other_change_ = ++generation_;
}

void KubeSource::DeleteResourceSlice(const k8s::ResourceSlice& slice) {
  absl::MutexLock lock(&mu_);
  if (resource_slices_.erase(slice.metadata.Key()) > 0) last_other_change_ = ++generation_;
}

std::shared_ptr<const KubeState> KubeSource::State() const {
  absl::MutexLock lock(&mu_);
  if (state_ != nullptr && state_->generation == generation_) return state_;
  auto state = std::make_shared<KubeState>();
  state->generation = generation_;
  state->nodes.reserve(nodes_.size());
  for (const auto& [name, n] : nodes_) state->nodes.push_back(n);
  state->pods.reserve(pods_.size());
  for (const auto& [key, p] : pods_) state->pods.push_back(p);
  state->budgets.reserve(budgets_.size());
  for (const auto& [key, b] : budgets_) state->budgets.push_back(b);
  for (const auto& [key, c] : claims_) state->claims.push_back(c);
  for (const auto& [key, v] : volumes_) state->volumes.push_back(v);
  for (const auto& [key, c] : classes_) state->classes.push_back(c);
  for (const auto& [key, n] : csi_nodes_) state->csi_nodes.push_back(n);
  for (const auto& [key, d] : csi_drivers_) state->csi_drivers.push_back(d);
  for (const auto& [key, c] : csi_capacities_) state->csi_capacities.push_back(c);
  for (const auto& [key, c] : resource_claims_) state->resource_claims.push_back(c);
  for (const auto& [key, s] : resource_slices_) state->resource_slices.push_back(s);
  state_ = std::move(state);
  return state_;
}

void KubeSource::LogPodChange(uint64_t generation, const std::string& key) {
  pod_changes_.emplace_hint(pod_changes_.end(), generation, key);
  if (pod_changes_.size() > kChangeLogSize) {
    log_starts_after_ = pod_changes_.begin()->first;
    pod_changes_.erase(pod_changes_.begin());
  }
}

std::optional<KubeChanges> KubeSource::ChangesSince(uint64_t generation) const {
  absl::MutexLock lock(&mu_);
  if (generation < log_starts_after_ || generation > generation_) return std::nullopt;
  KubeChanges changes;
  changes.generation = generation_;
  changes.others = last_other_change_ > generation;
  std::set<std::string_view> listed;  // a pod changed twice is listed once, as it is now
  for (auto it = pod_changes_.upper_bound(generation); it != pod_changes_.end(); ++it) {
    auto pod = pods_.find(it->second);
    if (pod == pods_.end()) continue;  // deleted since: `others` says so
    if (listed.insert(pod->first).second) changes.pods.push_back(pod->second);
  }
  return changes;
}

uint64_t KubeSource::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

}  // namespace onequeue::scheduler

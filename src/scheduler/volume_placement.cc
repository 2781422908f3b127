#include "scheduler/volume_placement.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "queue/eligibility.h"

namespace onequeue::scheduler {
namespace {

constexpr const char* kWaitForFirstConsumer = "WaitForFirstConsumer";
constexpr const char* kNoProvisioner = "kubernetes.io/no-provisioner";
constexpr const char* kReadWriteOncePod = "ReadWriteOncePod";

// VolumeZone's labels, each with its other name (GA <-> beta): a volume labelled with one matches
// a node labelled with either.
struct ZoneKey {
  const char* key;
  const char* other;
};
constexpr ZoneKey kZoneKeys[] = {
    {"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"},
    {"failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"},
    {"topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"},
    {"failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"},
};

bool Has(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// VolumeZone for one node: every zone/region label of the volume (values joined by "__" mean
// several) holds on the node, unless the node has none of these labels.
bool ZoneAllows(const k8s::PersistentVolume& pv, const queue::Node& node) {
  bool node_has_any = false;
  for (const ZoneKey& z : kZoneKeys) node_has_any = node_has_any || node.labels.contains(z.key);
  if (!node_has_any) return true;
  for (const ZoneKey& z : kZoneKeys) {
    auto v = pv.metadata.labels.find(z.key);
    if (v == pv.metadata.labels.end()) continue;
    auto n = node.labels.find(z.key);
    if (n == node.labels.end()) n = node.labels.find(z.other);
    if (n == node.labels.end()) return false;
    const std::vector<std::string> values = absl::StrSplit(v->second, "__");
    if (!Has(values, n->second)) return false;
  }
  return true;
}

bool Deleting(const k8s::ObjectMeta& m) { return !m.deletion_timestamp.empty(); }

// pvutil.FindMatchingVolume's test of one Available, unclaimed volume against a claim: same
// volumeMode, every access mode the claim asks, at least the storage it requests, its selector.
bool VolumeMatchesClaim(const k8s::PersistentVolume& pv, const k8s::PersistentVolumeClaim& claim) {
  if (Deleting(pv.metadata)) return false;
  const auto mode = [](const std::string& m) { return m.empty() ? std::string("Filesystem") : m; };
  if (mode(pv.volume_mode) != mode(claim.volume_mode)) return false;
  for (const std::string& m : claim.access_modes) {
    if (!Has(pv.access_modes, m)) return false;
  }
  if (claim.storage_request && (!pv.capacity || *pv.capacity < *claim.storage_request)) return false;
  if (claim.selector && !k8s::SelectorMatches(*claim.selector, pv.metadata.labels)) return false;
  return true;
}

// The nodes of `pool` for which `allows` holds, intersected into `allowed`.
template <typename F>
void Restrict(const std::vector<queue::Node>& pool, std::optional<std::vector<std::string>>& allowed, F allows) {
  std::vector<std::string> out;
  for (const queue::Node& n : pool) {
    if (!allows(n)) continue;
    if (allowed && !Has(*allowed, n.name)) continue;
    out.push_back(n.name);
  }
  allowed = std::move(out);
}

}  // namespace

bool AnyPodUsesClaims(const KubeState& state) {
  return std::any_of(state.pods.begin(), state.pods.end(), [](const auto& p) { return !p->claims.empty(); });
}

VolumeIndex::VolumeIndex(const KubeState& state, const std::map<std::string, std::string>& assumed) {
  for (const auto& c : state.claims) claims_[c->metadata.Key()] = c.get();
  for (const auto& v : state.volumes) {
    volumes_[v->metadata.name] = v.get();
    if (v->phase == "Available" && v->claim_name.empty()) available_by_class_[v->storage_class_name].push_back(v->metadata.name);
    if (!v->claim_name.empty() && v->phase != "Released" && v->phase != "Failed") {
      prebound_[absl::StrCat(v->claim_namespace, "/", v->claim_name)] = v.get();
    }
  }
  for (const auto& c : state.classes) classes_[c->metadata.name] = c.get();
  for (const auto& d : state.csi_drivers) driver_capacity_[d->metadata.name] = d->storage_capacity;
  for (const auto& c : state.csi_capacities) capacities_by_class_[c->storage_class_name].push_back(c.get());
  for (const auto& record : state.pods) {
    const PodRecord& pod = *record;
    if (pod.claims.empty() || pod.terminal) continue;
    const bool placed = !pod.node_name.empty() || assumed.contains(pod.key);
    for (const std::string& name : pod.claims) {
      const std::string key = absl::StrCat(pod.namespace_, "/", name);
      if (placed) {
        running_user_.emplace(key, pod.key);
      } else if (!pod.deleting && !pod.gated) {
        const PodRecord*& first = first_pending_user_[key];
        if (first == nullptr || std::tie(pod.created, pod.key) < std::tie(first->created, first->key)) first = &pod;
      }
    }
  }
}

VolumeVerdict VolumeIndex::Check(const PodRecord& pod, const std::vector<queue::Node>& pool) const {
  VolumeVerdict v;
  for (const std::string& name : pod.claims) {
    // Every claim restricts the nodes; the first refusal is the one reported.
    std::string refusal = CheckClaim(pod, name, pool, v);
    if (!refusal.empty() && v.refusal.empty()) v.refusal = std::move(refusal);
  }
  if (!v.refusal.empty()) {
    v.allowed_nodes.reset();
    v.claims_to_select.clear();
    v.volumes_to_bind.clear();
  }
  return v;
}

std::string VolumeIndex::CheckClaim(const PodRecord& pod, const std::string& name, const std::vector<queue::Node>& pool,
                                    VolumeVerdict& v) const {
  const std::string key = absl::StrCat(pod.namespace_, "/", name);
  auto c = claims_.find(key);
  if (c == claims_.end()) return absl::StrCat("VolumeBinding: persistentvolumeclaim \"", name, "\" not found");
  const k8s::PersistentVolumeClaim& claim = *c->second;
  if (Deleting(claim.metadata)) {
    return absl::StrCat("VolumeBinding: persistentvolumeclaim \"", name, "\" is being deleted");
  }
  // VolumeRestrictions: one pod at a time uses a ReadWriteOncePod claim.
  if (Has(claim.access_modes, kReadWriteOncePod)) {
    if (auto user = running_user_.find(key); user != running_user_.end()) {
      return absl::StrCat("VolumeRestrictions: pod ", user->second, " uses PersistentVolumeClaim \"", name,
                          "\" with the ReadWriteOncePod access mode");
    }
    if (auto first = first_pending_user_.find(key);
        first != first_pending_user_.end() && first->second != &pod && first->second->key != pod.key) {
      return absl::StrCat("VolumeRestrictions: PersistentVolumeClaim \"", name,
                          "\" (ReadWriteOncePod) goes to pending pod ", first->second->key, " first");
    }
  }
  if (claim.volume_name.empty()) return CheckUnboundClaim(pod, key, name, claim, pool, v);
  // Bound (or being bound) to a volume: its node affinity and zone.
  auto pv = volumes_.find(claim.volume_name);
  if (pv == volumes_.end()) {
    return absl::StrCat("VolumeBinding: persistentvolumeclaim \"", name, "\" is bound to persistentvolume \"",
                        claim.volume_name, "\", which does not exist");
  }
  const k8s::PersistentVolume& volume = *pv->second;
  const std::vector<queue::NodeSelectorTerm> terms = NodeAffinityTermsOf(volume.node_affinity);
  Restrict(pool, v.allowed_nodes,
           [&](const queue::Node& n) { return queue::MatchesNodeAffinityTerms(n, terms) && ZoneAllows(volume, n); });
  if (!v.allowed_nodes->empty()) return "";
  return absl::StrCat("VolumeBinding/VolumeZone: no node matches the node affinity and zone of persistentvolume \"",
                      volume.metadata.name, "\" (claim \"", name, "\")");
}

absl::StatusOr<const k8s::StorageClass*> VolumeIndex::WaitForFirstConsumerClassOf(const std::string& name,
                                                                         const std::string& class_name) const {
  if (class_name.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "VolumeBinding: pod has unbound immediate PersistentVolumeClaims (\"", name, "\", no storage class)"));
  }
  auto sc = classes_.find(class_name);
  if (sc == classes_.end()) {
    return absl::NotFoundError(absl::StrCat("VolumeBinding: storageclass.storage.k8s.io \"", class_name,
                                            "\" not found (claim \"", name, "\")"));
  }
  if (sc->second->volume_binding_mode != kWaitForFirstConsumer) {
    return absl::FailedPreconditionError(
        absl::StrCat("VolumeBinding: pod has unbound immediate PersistentVolumeClaims (\"", name, "\")"));
  }
  return sc->second;
}

std::string VolumeIndex::CheckUnboundClaim(const PodRecord& pod, const std::string& key, const std::string& name,
                                           const k8s::PersistentVolumeClaim& claim,
                                           const std::vector<queue::Node>& pool, VolumeVerdict& v) const {
  const std::string class_name = claim.storage_class_name.value_or("");
  absl::StatusOr<const k8s::StorageClass*> sc = WaitForFirstConsumerClassOf(name, class_name);
  if (!sc.ok()) return std::string(sc.status().message());
  const k8s::StorageClass& storage_class = **sc;
  const bool provisions = storage_class.provisioner != kNoProvisioner;
  // Pre-bound: a volume's claimRef names this claim (written by the loop or an admin), the PV
  // controller has yet to bind the claim: the volume's nodes, as for a bound claim.
  if (auto pre = prebound_.find(key);
      pre != prebound_.end() && (pre->second->claim_uid.empty() || pre->second->claim_uid == claim.metadata.uid)) {
    const k8s::PersistentVolume& volume = *pre->second;
    const std::vector<queue::NodeSelectorTerm> terms = NodeAffinityTermsOf(volume.node_affinity);
    Restrict(pool, v.allowed_nodes, [&](const queue::Node& n) { return queue::MatchesNodeAffinityTerms(n, terms); });
    if (!v.allowed_nodes->empty()) return "";
    return absl::StrCat("VolumeBinding: no node matches the node affinity of persistentvolume \"",
                        volume.metadata.name, "\", pre-bound to claim \"", name, "\"");
  }
  // Being provisioned for a pod already placed: the node it selected, nothing to annotate.
  if (auto user = running_user_.find(key); user != running_user_.end()) {
    auto selected = claim.metadata.annotations.find(kSelectedNodeAnnotation);
    if (selected == claim.metadata.annotations.end()) {
      return absl::StrCat("VolumeBinding: claim \"", name, "\" is used by pod ", user->second,
                          ", which no node was selected for");
    }
    Restrict(pool, v.allowed_nodes, [&](const queue::Node& n) { return n.name == selected->second; });
    if (!v.allowed_nodes->empty()) return "";
    return absl::StrCat("VolumeBinding: claim \"", name, "\" is being provisioned on node ", selected->second,
                        ", which this pod cannot use");
  }
  // One node per claim: of pending pods sharing an unbound claim, the oldest chooses it.
  if (auto first = first_pending_user_.find(key); first != first_pending_user_.end() && first->second->key != pod.key) {
    return absl::StrCat("VolumeBinding: claim \"", name, "\" waits for pending pod ", first->second->key,
                        " to choose its node first");
  }
  const std::vector<queue::NodeSelectorTerm> topology = NodeAffinityTermsOf(storage_class.allowed_topologies);
  // Pre-made volumes (kube-scheduler's FindPodVolumes): the nodes where one matches, and, if the
  // class provisions, the nodes it can provision on (allowedTopologies).
  if (!provisions || available_by_class_.contains(class_name)) {
    VolumeToBind bind = MatchPreMadeVolumes(key, claim, pool);
    if (!provisions && bind.candidates.empty()) {
      return absl::StrCat("VolumeBinding: no PersistentVolume of storage class \"", class_name, "\" matches claim \"",
                          name, "\" (node(s) didn't find available persistent volumes to bind)");
    }
    if (!bind.candidates.empty()) {
      // A node with a matching volume needs no capacity; the others are provisioned on.
      const bool capacity = provisions && ChecksCapacity(storage_class, claim);
      Restrict(pool, v.allowed_nodes, [&](const queue::Node& n) {
        return bind.candidates.contains(n.name) ||
               (provisions && (topology.empty() || queue::MatchesNodeAffinityTerms(n, topology)) &&
                (!capacity || HasEnoughCapacity(storage_class, claim, n)));
      });
      bind.provisions = provisions;
      v.volumes_to_bind.push_back(std::move(bind));
      if (!v.allowed_nodes->empty()) return "";
      return absl::StrCat("VolumeBinding: no node this pod can use has a PersistentVolume matching claim \"", name,
                          "\"",
                          capacity ? absl::StrCat(" or enough CSIStorageCapacity of storage class \"", class_name,
                                                  "\" to provision it (node(s) did not have enough free storage)")
                                   : "");
    }
  }
  // Provisioned where the pod goes: the class's allowedTopologies, the driver's reported capacity,
  // and the claim to annotate.
  v.claims_to_select.push_back(key);
  if (!topology.empty()) {
    Restrict(pool, v.allowed_nodes, [&](const queue::Node& n) { return queue::MatchesNodeAffinityTerms(n, topology); });
    if (v.allowed_nodes->empty()) {
      return absl::StrCat("VolumeBinding: no node is in the allowedTopologies of storage class \"", class_name,
                          "\" (claim \"", name, "\")");
    }
  }
  if (!ChecksCapacity(storage_class, claim)) return "";
  Restrict(pool, v.allowed_nodes, [&](const queue::Node& n) { return HasEnoughCapacity(storage_class, claim, n); });
  if (!v.allowed_nodes->empty()) return "";
  return absl::StrCat("VolumeBinding: no node this pod can use has enough CSIStorageCapacity of storage class \"",
                      class_name, "\" for claim \"", name, "\" (node(s) did not have enough free storage)");
}

bool VolumeIndex::ChecksCapacity(const k8s::StorageClass& storage_class,
                                 const k8s::PersistentVolumeClaim& claim) const {
  if (!claim.storage_request) return false;  // no size to check
  auto driver = driver_capacity_.find(storage_class.provisioner);
  return driver != driver_capacity_.end() && driver->second;
}

bool VolumeIndex::HasEnoughCapacity(const k8s::StorageClass& storage_class, const k8s::PersistentVolumeClaim& claim,
                                    const queue::Node& node) const {
  auto capacities = capacities_by_class_.find(storage_class.metadata.name);
  if (capacities == capacities_by_class_.end()) return false;
  for (const k8s::CsiStorageCapacity* c : capacities->second) {
    // maximumVolumeSize when set (the more precise), else capacity (capacitySufficient).
    const std::optional<k8s::Quantity>& limit = c->maximum_volume_size ? c->maximum_volume_size : c->capacity;
    if (!limit || limit->Value() < claim.storage_request->Value()) continue;
    // nodeHasAccess: no nodeTopology, no node.
    if (c->node_topology && k8s::SelectorMatches(*c->node_topology, node.labels)) return true;
  }
  return false;
}

VolumeToBind VolumeIndex::MatchPreMadeVolumes(const std::string& key, const k8s::PersistentVolumeClaim& claim,
                                              const std::vector<queue::Node>& pool) const {
  VolumeToBind out;
  out.claim_key = key;
  out.claim_uid = claim.metadata.uid;
  out.storage_class = claim.storage_class_name.value_or("");
  auto available = available_by_class_.find(claim.storage_class_name.value_or(""));
  if (available == available_by_class_.end()) return out;
  std::vector<const k8s::PersistentVolume*> matching;
  for (const std::string& pv_name : available->second) {
    const k8s::PersistentVolume& pv = *volumes_.at(pv_name);
    if (VolumeMatchesClaim(pv, claim)) matching.push_back(&pv);
  }
  // Smallest first (pvutil.FindMatchingVolume keeps the smallest that fits), then by name.
  std::sort(matching.begin(), matching.end(), [](const k8s::PersistentVolume* a, const k8s::PersistentVolume* b) {
    const k8s::Quantity zero;
    return std::forward_as_tuple(a->capacity.value_or(zero), a->metadata.name) <
           std::forward_as_tuple(b->capacity.value_or(zero), b->metadata.name);
  });
  for (const k8s::PersistentVolume* pv : matching) {
    const std::vector<queue::NodeSelectorTerm> terms = NodeAffinityTermsOf(pv->node_affinity);
    for (const queue::Node& n : pool) {
      if (queue::MatchesNodeAffinityTerms(n, terms)) {
        out.candidates[n.name].push_back({pv->metadata.name, pv->metadata.resource_version});
      }
    }
  }
  return out;
}

int64_t VolumeIndex::CountAvailable(const std::string& storage_class, const queue::Node& node) const {
  auto available = available_by_class_.find(storage_class);
  if (available == available_by_class_.end()) return 0;
  int64_t count = 0;
  for (const std::string& pv_name : available->second) {
    const k8s::PersistentVolume& pv = *volumes_.at(pv_name);
    if (!Deleting(pv.metadata) && queue::MatchesNodeAffinityTerms(node, NodeAffinityTermsOf(pv.node_affinity))) ++count;
  }
  return count;
}

VolumeLimits::VolumeLimits(const KubeState& state, const std::map<std::string, std::string>& assumed,
                           const std::vector<queue::Node>& pool) {
  std::map<std::string, size_t> index;
  for (const queue::Node& n : pool) {
    index[n.name] = names_.size();
    names_.push_back(n.name);
  }
  limits_.resize(pool.size());
  attached_.resize(pool.size());
  for (const auto& csi_node : state.csi_nodes) {
    auto i = index.find(csi_node->metadata.name);
    if (i == index.end()) continue;
    for (const k8s::CsiNode::Driver& d : csi_node->drivers) {
      if (!d.allocatable_count) continue;
      limits_[i->second][d.name] = *d.allocatable_count;
      any_limit_ = true;
    }
  }
  if (!any_limit_) return;
  for (const auto& c : state.claims) claims_[c->metadata.Key()] = c.get();
  for (const auto& v : state.volumes) volumes_[v->metadata.name] = v.get();
  for (const auto& c : state.classes) classes_[c->metadata.name] = c.get();
  // The volumes of the pods on each node: bound or assumed, not finished (being deleted still
  // counts: its volumes stay attached until it is gone).
  for (const auto& record : state.pods) {
    const PodRecord& pod = *record;
    if (pod.claims.empty() || pod.terminal) continue;
    const std::string* node = &pod.node_name;
    if (node->empty()) {
      auto a = assumed.find(pod.key);
      if (a == assumed.end()) continue;
      node = &a->second;
    }
    auto i = index.find(*node);
    if (i == index.end()) continue;
    for (auto& [name, driver] : VolumesOf(pod)) {
      attached_[i->second][driver].insert(name);
      attached_anywhere_.insert(std::move(name));
    }
  }
}

std::map<std::string, std::string> VolumeLimits::VolumesOf(const PodRecord& pod) const {
  std::map<std::string, std::string> out;
  for (const std::string& name : pod.claims) {
    const std::string key = absl::StrCat(pod.namespace_, "/", name);
    auto c = claims_.find(key);
    if (c == claims_.end()) continue;  // a missing claim: VolumeBinding's to refuse, nothing to count
    const k8s::PersistentVolumeClaim& claim = *c->second;
    if (!claim.volume_name.empty()) {
      if (auto pv = volumes_.find(claim.volume_name); pv != volumes_.end()) {
        const k8s::PersistentVolume& v = *pv->second;
        if (!v.csi_driver.empty() && !v.csi_volume_handle.empty()) {
          out[absl::StrCat(v.csi_driver, "/", v.csi_volume_handle)] = v.csi_driver;
        }
        continue;  // not a CSI volume (in-tree migration is not counted)
      }
    }
    // Unbound, or bound to a volume not seen: the driver its class provisions with, one volume
    // per claim (kube-scheduler's getCSIDriverInfoFromSC).
    const std::string class_name = claim.storage_class_name.value_or("");
    if (class_name.empty()) continue;
    auto sc = classes_.find(class_name);
    if (sc == classes_.end() || sc->second->provisioner.empty()) continue;
    const std::string& driver = sc->second->provisioner;
    out[absl::StrCat(driver, "/claim:", key)] = driver;
  }
  return out;
}

int64_t VolumeLimits::SlotsLeft(size_t node, const std::string& driver) const {
  auto l = limits_[node].find(driver);
  if (l == limits_[node].end()) return kUnlimitedCsiVolumes;
  auto a = attached_[node].find(driver);
  const int64_t used = a == attached_[node].end() ? 0 : static_cast<int64_t>(a->second.size());
  return std::max<int64_t>(0, l->second - used);
}

VolumeLimitVerdict VolumeLimits::Check(const PodRecord& pod) const {
  VolumeLimitVerdict v;
  const std::map<std::string, std::string> volumes = VolumesOf(pod);
  if (volumes.empty()) return v;
  for (const auto& [name, driver] : volumes) {
    if (!attached_anywhere_.contains(name)) ++v.new_volumes[driver];
  }
  std::vector<std::string> allowed;
  for (size_t n = 0; n < names_.size(); ++n) {
    // Per driver, the pod's volumes not attached on the node yet.
    std::map<std::string, int64_t> added;
    for (const auto& [name, driver] : volumes) {
      auto a = attached_[n].find(driver);
      if (a == attached_[n].end() || !a->second.contains(name)) ++added[driver];
    }
    bool fits = true;
    for (const auto& [driver, count] : added) {
      auto l = limits_[n].find(driver);
      if (l == limits_[n].end()) continue;
      auto a = attached_[n].find(driver);
      const int64_t attached = a == attached_[n].end() ? 0 : static_cast<int64_t>(a->second.size());
      if (attached + count <= l->second) continue;
      fits = false;
      if (v.example.empty()) {
        v.example = absl::StrCat("node ", names_[n], ": CSI driver ", driver, " has ", attached, " of its ", l->second,
                                 " volumes attached, the pod adds ", count);
      }
      break;
    }
    if (fits) allowed.push_back(names_[n]);
    else ++v.refused;
  }
  if (v.refused > 0) v.allowed_nodes = std::move(allowed);
  return v;
}

}  // namespace onequeue::scheduler

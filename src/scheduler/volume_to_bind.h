#pragma once
// What the loop writes before binding a pod whose WaitForFirstConsumer claims go to pre-made
// PersistentVolumes (issue 28, VolumeBinding; computed in volume_placement.cc). Apart from
// volume_placement.h so that snapshot_builder.h can hold it.
#include <map>
#include <string>
#include <vector>

namespace onequeue::scheduler {

// VolumeBinding with pre-made volumes: one unbound WaitForFirstConsumer claim of a pending pod and
// the volumes it could be bound to on each node. Before the pod is bound the loop writes the
// claimRef of the first one on the pod's node not chosen for another claim this cycle (guarded by
// its resourceVersion); none left: with `provisions`, the selected-node annotation instead, else
// the pod waits.
// Resource names standing for the Available volumes of one class without a provisioner
// ("persistentVolumes:<class>"): per pool node one unit per such volume its node affinity allows,
// one unit asked per claim of the class a pending pod binds, so the queue plans no more claims on
// a node than it has volumes (a pod whose volume another took this cycle still waits at binding).
inline constexpr const char* kPreMadeVolumeResourcePrefix = "persistentVolumes:";

struct PreMadeVolume {
  std::string name, resource_version;
  friend bool operator==(const PreMadeVolume&, const PreMadeVolume&) = default;
};
struct VolumeToBind {
  std::string claim_key, claim_uid;  // "namespace/name"
  std::string storage_class;
  bool provisions = false;           // the class has a provisioner
  std::map<std::string, std::vector<PreMadeVolume>> candidates;  // node -> volumes, smallest first
  friend bool operator==(const VolumeToBind&, const VolumeToBind&) = default;
};

}  // namespace onequeue::scheduler

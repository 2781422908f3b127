// resource.k8s.io/v1 (DynamicResourceAllocation, GA in 1.34) objects, as far as onequeue reads and
// writes them (issue 25, docs/sharing.md section 5): the devices a driver publishes per node
// (ResourceSlice) and a pod's claim on them (ResourceClaim), whose allocation the scheduler writes.
// Parsed like models.h: unknown fields ignored, a known field of the wrong JSON type an
// InvalidArgument error naming it (never an exception).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "k8s_client/models.h"
#include "k8s_client/rest_client.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s {

inline const ResourceType kResourceSlices{"/apis/resource.k8s.io/v1", "resourceslices", false};
inline const ResourceType kResourceClaims{"/apis/resource.k8s.io/v1", "resourceclaims", true};
inline const ResourceType kDeviceClasses{"/apis/resource.k8s.io/v1", "deviceclasses", false};

// One DeviceAttribute: exactly one of int, string, bool or version is set.
struct DeviceAttribute {
  enum class Kind : uint8_t { kInt, kString, kBool, kVersion };
  Kind kind = Kind::kInt;
  int64_t int_value = 0;
  std::string string_value;  // the string or the version
  bool bool_value = false;
  friend bool operator==(const DeviceAttribute&, const DeviceAttribute&) = default;
};

struct Device {
  std::string name;
  // Keyed as the driver writes them: "index" or a qualified "gpu.example.com/index".
  std::map<std::string, DeviceAttribute> attributes;
};

struct ResourceSlice {
  ObjectMeta metadata;
  std::string driver;
  std::string pool_name;
  int64_t pool_generation = 0;
  int64_t pool_slice_count = 0;  // spec.pool.resourceSliceCount
  std::string node_name;         // spec.nodeName; "" for slices of several nodes
  std::vector<Device> devices;

  static absl::StatusOr<ResourceSlice> FromJson(const nlohmann::json& j);
};

// spec.devices.requests[]: only `exactly` is read; a request with firstAvailable (prioritized
// list) keeps first_available true and no class, so the caller can refuse it by name.
struct DeviceRequest {
  std::string name;
  std::string device_class_name;
  std::string allocation_mode = "ExactCount";  // ExactCount (default) or All
  int64_t count = 1;                           // ExactCount: default 1
  bool has_selectors = false;                  // exactly.selectors (CEL): not evaluated by onequeue
  bool first_available = false;
};

struct DeviceAllocationResult {
  std::string request, driver, pool, device;
  friend bool operator==(const DeviceAllocationResult&, const DeviceAllocationResult&) = default;
};

// status.reservedFor[]: who uses the claim (a pod: resource "pods", its name and uid).
struct ClaimConsumer {
  std::string api_group, resource, name, uid;
  friend bool operator==(const ClaimConsumer&, const ClaimConsumer&) = default;
};

struct ResourceClaim {
  ObjectMeta metadata;
  std::vector<DeviceRequest> requests;
  bool allocated = false;  // status.allocation present
  std::vector<DeviceAllocationResult> results;  // status.allocation.devices.results
  // The node a node-local allocation is pinned to: status.allocation.nodeSelector's one term
  // matchFields metadata.name In [<node>], as the scheduler writes it; "" otherwise.
  std::string allocation_node;
  std::vector<ClaimConsumer> reserved_for;

  static absl::StatusOr<ResourceClaim> FromJson(const nlohmann::json& j);
};

// A pod's spec.resourceClaims entry: exactly one of the two names is set.
struct PodResourceClaimRef {
  std::string name, resource_claim_name, resource_claim_template_name;
};
// status.resourceClaimStatuses[]: the claim the resourceclaim controller made from a template.
struct PodResourceClaimStatus {
  std::string name, resource_claim_name;  // "" when no claim is needed
};
// The parts of a pod's JSON about its claims (models.h's Pod keeps only the names).
struct PodClaims {
  std::vector<PodResourceClaimRef> refs;
  std::vector<PodResourceClaimStatus> statuses;
  static absl::StatusOr<PodClaims> FromJson(const nlohmann::json& pod);
};
// The ResourceClaim object a pod's entry names: resourceClaimName, or for a template the name in
// status.resourceClaimStatuses; nullopt while the controller has not made it yet.
std::optional<std::string> ClaimObjectName(const PodClaims& claims, const std::string& entry);

// What the scheduler writes into a claim's status (kube-scheduler's DRA plugin, PreBind): the
// allocation (results, and a node selector pinning it to `node`) and the pod in reservedFor.
// `claim` is the object as read (its resourceVersion kept: the PUT is a compare-and-swap).
nlohmann::json WithAllocation(nlohmann::json claim, const std::vector<DeviceAllocationResult>& results,
                              const std::string& node, const ClaimConsumer& pod);
// `claim` without `pod` in reservedFor and, when `clear_allocation`, without its allocation.
nlohmann::json WithoutConsumer(nlohmann::json claim, const std::string& pod_uid, bool clear_allocation);


// The finalizer kube-scheduler's DRA plugin adds (a normal update, before the status write) to a
// claim it allocates: with it, the resourceclaim controller clears the allocation once the last
// pod in reservedFor is done or gone (and lifts the finalizer), so a claim onequeue allocated is
// released at the pod's end exactly as one kube-scheduler allocated.
inline constexpr char kClaimFinalizer[] = "resource.kubernetes.io/delete-protection";
// `claim` with kClaimFinalizer in metadata.finalizers (once).
nlohmann::json WithFinalizer(nlohmann::json claim);

// GET the claim as JSON (what WithAllocation / WithoutConsumer take).
absl::StatusOr<nlohmann::json> GetClaim(RestClient& client, const std::string& ns, const std::string& name);
// PUT resourceclaims/<name> (the finalizer), the same compare-and-swap as PutClaimStatus.
absl::StatusOr<nlohmann::json> PutClaim(RestClient& client, const nlohmann::json& claim);
// PUT resourceclaims/<name>/status with the claim's metadata.resourceVersion (required: a
// compare-and-swap). Aborted (409 Conflict) means someone wrote the claim since it was read: the
// caller re-reads it and decides again, never overwrites. Returns the claim as stored.
absl::StatusOr<nlohmann::json> PutClaimStatus(RestClient& client, const nlohmann::json& claim);

}  // namespace onequeue::k8s

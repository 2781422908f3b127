#include "k8s_client/dra.h"
#include "k8s_client/json_fields.h"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

#include "absl/strings/str_cat.h"

namespace onequeue::k8s {
namespace {

using nlohmann::json;

// Thrown only inside k8s_client's parsers and turned into InvalidArgument at the FromJson edge.
using DraError = json_fields::JsonFieldError;
using json_fields::Field;
using json_fields::Str;

const json& Object(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (!v.is_null() && !v.is_object()) throw DraError(absl::StrCat("field ", key, " is not an object"));
  return v;
}

std::optional<int64_t> Int(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
    throw DraError(absl::StrCat("field ", key, " is not an integer"));
  return v.get<int64_t>();
}

const json& Array(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = Field(j, key);
  if (v.is_null()) return kEmpty;
  if (!v.is_array()) throw DraError(absl::StrCat("field ", key, " is not an array"));
  return v;
}

// A DeviceAttribute: exactly one of int, string, bool, version.
DeviceAttribute Attribute(const std::string& name, const json& v) {
  if (!v.is_object()) throw DraError(absl::StrCat("attribute ", name, " is not an object"));
  std::vector<DeviceAttribute> set;  // one per kind present
  if (std::optional<int64_t> i = Int(v, "int")) set.push_back({DeviceAttribute::Kind::kInt, *i, "", false});
  if (!Field(v, "string").is_null()) set.push_back({DeviceAttribute::Kind::kString, 0, Str(v, "string"), false});
  if (!Field(v, "version").is_null()) set.push_back({DeviceAttribute::Kind::kVersion, 0, Str(v, "version"), false});
  if (const json& b = Field(v, "bool"); !b.is_null()) {
    if (!b.is_boolean()) throw DraError(absl::StrCat("attribute ", name, ".bool is not a boolean"));
    set.push_back({DeviceAttribute::Kind::kBool, 0, "", b.get<bool>()});
  }
  if (set.size() != 1) throw DraError(absl::StrCat("attribute ", name, " must have exactly one of int, string, bool, version"));
  return set.front();
}

Device ParseDevice(const json& d) {
  Device out;
  out.name = Str(d, "name");
  if (out.name.empty()) throw DraError("a device has no name");
  const json& attrs = Object(d, "attributes");
  if (attrs.is_null()) return out;
  for (auto it = attrs.begin(); it != attrs.end(); ++it) {
    try {
      out.attributes.emplace(it.key(), Attribute(it.key(), it.value()));
    } catch (const DraError& e) {
      throw DraError(absl::StrCat("device ", out.name, ": ", e.what()));
    }
  }
  return out;
}

DeviceRequest ParseRequest(const json& r) {
  DeviceRequest out;
  out.name = Str(r, "name");
  out.first_available = !Array(r, "firstAvailable").empty();
  const json& exactly = Object(r, "exactly");
  if (exactly.is_null()) return out;
  out.device_class_name = Str(exactly, "deviceClassName");
  if (std::string mode = Str(exactly, "allocationMode"); !mode.empty()) out.allocation_mode = mode;
  out.count = Int(exactly, "count").value_or(1);
  out.has_selectors = !Array(exactly, "selectors").empty();
  return out;
}

// metadata.name In [<node>] in the allocation's node selector (the one form the scheduler writes
// for devices of one node).
std::string AllocationNode(const json& selector) {
  const json& terms = Array(selector, "nodeSelectorTerms");
  if (terms.size() != 1) return "";
  const json& fields = Array(terms[0], "matchFields");
  if (fields.size() != 1 || Str(fields[0], "key") != "metadata.name" || Str(fields[0], "operator") != "In") return "";
  const json& values = Array(fields[0], "values");
  return values.size() == 1 && values[0].is_string() ? values[0].get<std::string>() : "";
}

void ParseClaimStatus(const json& status, ResourceClaim& c) {
  const json& allocation = Object(status, "allocation");
  c.allocated = !allocation.is_null();
  if (c.allocated) {
    for (const json& r : Array(Object(allocation, "devices"), "results")) {
      c.results.push_back({Str(r, "request"), Str(r, "driver"), Str(r, "pool"), Str(r, "device")});
    }
    c.allocation_node = AllocationNode(Object(allocation, "nodeSelector"));
  }
  for (const json& r : Array(status, "reservedFor")) {
    c.reserved_for.push_back({Str(r, "apiGroup"), Str(r, "resource"), Str(r, "name"), Str(r, "uid")});
  }
}

// Runs `parse`, turning a DraError or a json exception into InvalidArgument naming `what`.
template <typename T, typename F>
absl::StatusOr<T> Guarded(const char* what, const json& j, F parse) {
  try {
    return parse(j);
  } catch (const DraError& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.what()));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.what()));
  }
}

}  // namespace

absl::StatusOr<ResourceSlice> ResourceSlice::FromJson(const json& j) {
  absl::StatusOr<ObjectMeta> meta = ParseObjectMeta(j);
  if (!meta.ok()) return meta.status();
  return Guarded<ResourceSlice>("ResourceSlice", j, [&](const json& j) {
    ResourceSlice s;
    s.metadata = *meta;
    const json& spec = Object(j, "spec");
    s.driver = Str(spec, "driver");
    const json& pool = Object(spec, "pool");
    s.pool_name = Str(pool, "name");
    s.pool_generation = Int(pool, "generation").value_or(0);
    s.pool_slice_count = Int(pool, "resourceSliceCount").value_or(0);
    s.node_name = Str(spec, "nodeName");
    for (const json& d : Array(spec, "devices")) s.devices.push_back(ParseDevice(d));
    return s;
  });
}

absl::StatusOr<ResourceClaim> ResourceClaim::FromJson(const json& j) {
  absl::StatusOr<ObjectMeta> meta = ParseObjectMeta(j);
  if (!meta.ok()) return meta.status();
  return Guarded<ResourceClaim>("ResourceClaim", j, [&](const json& j) {
    ResourceClaim c;
    c.metadata = *meta;
    for (const json& r : Array(Object(Object(j, "spec"), "devices"), "requests")) c.requests.push_back(ParseRequest(r));
    ParseClaimStatus(Object(j, "status"), c);
    return c;
  });
}

absl::StatusOr<PodClaims> PodClaims::FromJson(const json& pod) {
  return Guarded<PodClaims>("Pod", pod, [&](const json& j) {
    PodClaims out;
    for (const json& c : Array(Object(j, "spec"), "resourceClaims")) {
      out.refs.push_back({Str(c, "name"), Str(c, "resourceClaimName"), Str(c, "resourceClaimTemplateName")});
    }
    for (const json& s : Array(Object(j, "status"), "resourceClaimStatuses")) {
      out.statuses.push_back({Str(s, "name"), Str(s, "resourceClaimName")});
    }
    return out;
  });
}

std::optional<std::string> ClaimObjectName(const PodClaims& claims, const std::string& entry) {
  for (const PodResourceClaimRef& r : claims.refs) {
    if (r.name != entry) continue;
    if (!r.resource_claim_name.empty()) return r.resource_claim_name;
    for (const PodResourceClaimStatus& s : claims.statuses) {
      if (s.name == entry && !s.resource_claim_name.empty()) return s.resource_claim_name;
    }
  }
  return std::nullopt;
}

json WithAllocation(json claim, const std::vector<DeviceAllocationResult>& results, const std::string& node,
                    const ClaimConsumer& pod) {
  json devices = json::array();
  for (const DeviceAllocationResult& r : results) {
    devices.push_back({{"request", r.request}, {"driver", r.driver}, {"pool", r.pool}, {"device", r.device}});
  }
  json& status = claim["status"];
  status["allocation"] = {
      {"devices", {{"results", devices}}},
      {"nodeSelector",
       {{"nodeSelectorTerms",
         json::array({{{"matchFields", json::array({{{"key", "metadata.name"}, {"operator", "In"},
                                                      {"values", json::array({node})}}})}}})}}}};
  json consumer = {{"resource", pod.resource.empty() ? "pods" : pod.resource}, {"name", pod.name}, {"uid", pod.uid}};
  if (!pod.api_group.empty()) consumer["apiGroup"] = pod.api_group;
  json& reserved = status["reservedFor"];
  if (!reserved.is_array()) reserved = json::array();
  for (const json& r : reserved) {
    if (r.is_object() && r.value("uid", "") == pod.uid) return claim;
  }
  reserved.push_back(consumer);
  return claim;
}

json WithoutConsumer(json claim, const std::string& pod_uid, bool clear_allocation) {
  json& status = claim["status"];
  if (json& reserved = status["reservedFor"]; reserved.is_array()) {
    json kept = json::array();
    for (const json& r : reserved) {
      if (!r.is_object() || r.value("uid", "") != pod_uid) kept.push_back(r);
    }
    if (kept.empty()) status.erase("reservedFor");
    else reserved = kept;
  } else {
    status.erase("reservedFor");
  }
  if (clear_allocation) status.erase("allocation");
  return claim;
}

absl::StatusOr<json> GetClaim(RestClient& client, const std::string& ns, const std::string& name) {
  return client.Get(ObjectPath(kResourceClaims, ns, name));
}

json WithFinalizer(json claim) {
  json& finalizers = claim["metadata"]["finalizers"];
  if (!finalizers.is_array()) finalizers = json::array();
  for (const json& f : finalizers) {
    if (f == kClaimFinalizer) return claim;
  }
  finalizers.push_back(kClaimFinalizer);
  return claim;
}

namespace {

// PUT the claim (or its status): a compare-and-swap on metadata.resourceVersion.
absl::StatusOr<json> PutClaimAt(RestClient& client, const json& claim, const std::string& subresource) {
  std::string ns, name, version;
  try {
    const json& meta = Object(claim, "metadata");
    ns = Str(meta, "namespace"), name = Str(meta, "name"), version = Str(meta, "resourceVersion");
  } catch (const DraError& e) {
    return absl::InvalidArgumentError(absl::StrCat("resourceclaim: ", e.what()));
  }
  const std::string what = absl::StrCat("resourceclaim ", ns, "/", name, subresource.empty() ? "" : " status");
  if (version.empty())
    return absl::InvalidArgumentError(absl::StrCat(what, ": resourceVersion is required (optimistic concurrency)"));
  absl::StatusOr<json> r = client.Put(ObjectPath(kResourceClaims, ns, name, subresource), claim);
  if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat(what, ": ", r.status().message()));
  return r;
}

}  // namespace

absl::StatusOr<json> PutClaim(RestClient& client, const json& claim) { return PutClaimAt(client, claim, ""); }

absl::StatusOr<json> PutClaimStatus(RestClient& client, const json& claim) {
  return PutClaimAt(client, claim, "status");
}

}  // namespace onequeue::k8s

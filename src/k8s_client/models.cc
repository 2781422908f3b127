#include "k8s_client/models.h"
#include "k8s_client/json_fields.h"
#include "k8s_client/simdjson_fields.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s {
namespace {

using nlohmann::json;

// Thrown only inside k8s_client's parsers and turned into InvalidArgument at the FromJson edge.
using ModelError = json_fields::JsonFieldError;
using namespace json_fields;  // Field, Str, IsNull, ... over nlohmann::json and simdjson's DOM

// The readers below are templates over the JSON value type J: nlohmann::json, or
// simdjson::dom::element (issue 26: one decoder per model, two parsers; json_fields.h and
// simdjson_fields.h give the primitives the same meaning).

template <typename Int, typename J>
std::optional<Int> OptInt(const J& j, const char* key) {
  const auto& v = Field(j, key);
  if (IsNull(v)) return std::nullopt;
  if (!IsInteger(v)) throw ModelError(absl::StrCat("field ", key, " is not an integer"));
  const Integer n = GetInteger(v);
  const bool fits = n.is_unsigned ? n.u <= static_cast<uint64_t>(std::numeric_limits<Int>::max())
                                  : n.i >= std::numeric_limits<Int>::min() && n.i <= std::numeric_limits<Int>::max();
  if (!fits) throw ModelError(absl::StrCat("field ", key, " is out of range"));
  return n.is_unsigned ? static_cast<Int>(n.u) : static_cast<Int>(n.i);
}

template <typename J>
bool Bool(const J& j, const char* key) {
  const auto& v = Field(j, key);
  if (IsNull(v)) return false;
  if (!IsBool(v)) throw ModelError(absl::StrCat("field ", key, " is not a boolean"));
  return GetBool(v);
}

// Iterates an optional array field.
template <typename J>
decltype(auto) Array(const J& j, const char* key) {
  const auto& v = Field(j, key);
  if (IsNull(v)) return Elements(EmptyArray(j));
  if (!IsArray(v)) throw ModelError(absl::StrCat("field ", key, " is not an array"));
  return Elements(v);
}

// A string element of an array; `what` names the array in the error.
template <typename J>
std::string StrElement(const J& v, const char* what) {
  if (!IsString(v)) throw ModelError(what);
  return GetString(v);
}

template <typename J>
StringMap StrMap(const J& j, const char* key) {
  StringMap out;
  const auto& v = Field(j, key);
  if (IsNull(v)) return out;
  if (!IsObject(v)) throw ModelError(absl::StrCat("field ", key, " is not an object"));
  ForEachMember(v, [&](std::string_view k, const auto& value) {
    if (!IsString(value)) throw ModelError(absl::StrCat(key, ".", absl::string_view(k.data(), k.size()), " is not a string"));
    out.emplace(k, GetString(value));
  });
  return out;
}

template <typename J>
Quantity ParseQuantityValue(const J& v, const std::string& where) {
  std::string text;
  if (IsString(v)) {
    text = GetString(v);
    // Quantity.UnmarshalJSON trims surrounding whitespace of a quoted value.
    const size_t b = text.find_first_not_of(" \t\r\n");
    const size_t e = text.find_last_not_of(" \t\r\n");
    text = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  } else if (IsNumber(v)) {
    text = NumberText(v);
  } else {
    throw ModelError(absl::StrCat(where, " is not a quantity"));
  }
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) throw ModelError(absl::StrCat(where, ": ", q.status().message()));
  return *q;
}

template <typename J>
ResourceList Resources(const J& j, const char* key) {
  ResourceList out;
  const auto& v = Field(j, key);
  if (IsNull(v)) return out;
  if (!IsObject(v)) throw ModelError(absl::StrCat("field ", key, " is not an object"));
  ForEachMember(v, [&](std::string_view k, const auto& value) {
    out.emplace(k, ParseQuantityValue(value, absl::StrCat(key, ".", absl::string_view(k.data(), k.size()))));
  });
  return out;
}

template <typename J>
ObjectMeta Meta(const J& j) {
  const auto& m = Field(j, "metadata");
  ObjectMeta meta;
  meta.name = Str(m, "name");
  meta.namespace_ = Str(m, "namespace");
  meta.uid = Str(m, "uid");
  meta.resource_version = Str(m, "resourceVersion");
  meta.generate_name = Str(m, "generateName");
  meta.creation_timestamp = Str(m, "creationTimestamp");
  meta.deletion_timestamp = Str(m, "deletionTimestamp");
  meta.generation = OptInt<int64_t>(m, "generation").value_or(0);
  meta.labels = StrMap(m, "labels");
  meta.annotations = StrMap(m, "annotations");
  for (const auto& o : Array(m, "ownerReferences")) {
    meta.owner_references.push_back({Str(o, "apiVersion"), Str(o, "kind"), Str(o, "name"),
                                     Str(o, "uid"), Bool(o, "controller")});
  }
  return meta;
}

template <typename J>
std::vector<LabelSelectorRequirement> Requirements(const J& j, const char* key) {
  std::vector<LabelSelectorRequirement> out;
  for (const auto& r : Array(j, key)) {
    LabelSelectorRequirement req{Str(r, "key"), Str(r, "operator"), {}};
    for (const auto& v : Array(r, "values")) req.values.push_back(StrElement(v, "selector value is not a string"));
    out.push_back(std::move(req));
  }
  return out;
}

template <typename J>
LabelSelector Selector(const J& sel) {
  return LabelSelector{StrMap(sel, "matchLabels"), Requirements(sel, "matchExpressions")};
}

template <typename J>
NodeSelectorTerm SelectorTerm(const J& term) {
  return {Requirements(term, "matchExpressions"), Requirements(term, "matchFields")};
}

template <typename J>
PodAffinityTerm ReadPodAffinityTerm(const J& t) {
  PodAffinityTerm term;
  const auto& sel = Field(t, "labelSelector");
  term.has_selector = IsObject(sel);
  term.selector = Selector(sel);
  for (const auto& n : Array(t, "namespaces")) term.namespaces.push_back(StrElement(n, "namespaces entry is not a string"));
  const auto& ns_sel = Field(t, "namespaceSelector");
  term.has_namespace_selector = IsObject(ns_sel);
  term.namespace_selector = Selector(ns_sel);
  term.topology_key = Str(t, "topologyKey");
  return term;
}

template <typename J>
std::vector<PodAffinityTerm> PodAffinityTerms(const J& affinity) {
  std::vector<PodAffinityTerm> out;
  for (const auto& t : Array(affinity, "requiredDuringSchedulingIgnoredDuringExecution")) out.push_back(ReadPodAffinityTerm(t));
  return out;
}

template <typename J>
std::vector<WeightedPodAffinityTerm> WeightedPodAffinityTerms(const J& affinity) {
  std::vector<WeightedPodAffinityTerm> out;
  for (const auto& t : Array(affinity, "preferredDuringSchedulingIgnoredDuringExecution")) {
    out.push_back({OptInt<int32_t>(t, "weight").value_or(0), ReadPodAffinityTerm(Field(t, "podAffinityTerm"))});
  }
  return out;
}

template <typename J>
std::vector<TopologySpreadConstraint> SpreadConstraints(const J& spec) {
  std::vector<TopologySpreadConstraint> out;
  for (const auto& c : Array(spec, "topologySpreadConstraints")) {
    TopologySpreadConstraint t;
    t.max_skew = OptInt<int32_t>(c, "maxSkew").value_or(1);
    t.topology_key = Str(c, "topologyKey");
    t.when_unsatisfiable = Str(c, "whenUnsatisfiable");
    const auto& sel = Field(c, "labelSelector");
    if (IsObject(sel)) t.selector = Selector(sel);
    t.min_domains = OptInt<int32_t>(c, "minDomains");
    t.node_affinity_policy = Str(c, "nodeAffinityPolicy");
    t.node_taints_policy = Str(c, "nodeTaintsPolicy");
    for (const auto& k : Array(c, "matchLabelKeys")) {
      t.match_label_keys.push_back(StrElement(k, "matchLabelKeys entry is not a string"));
    }
    out.push_back(std::move(t));
  }
  return out;
}

template <typename J>
std::vector<Condition> Conditions(const J& status) {
  std::vector<Condition> out;
  for (const auto& c : Array(status, "conditions")) {
    out.push_back({Str(c, "type"), Str(c, "status"), Str(c, "reason"), Str(c, "message"),
                   Str(c, "lastTransitionTime")});
  }
  return out;
}

template <typename J>
std::vector<HostPort> HostPorts(const J& c) {
  std::vector<HostPort> out;
  for (const auto& p : Array(c, "ports")) {
    const std::optional<int32_t> port = OptInt<int32_t>(p, "hostPort");
    if (!port || *port <= 0) continue;
    HostPort h;
    h.port = *port;
    if (std::string protocol = Str(p, "protocol"); !protocol.empty()) h.protocol = std::move(protocol);
    h.host_ip = Str(p, "hostIP");
    out.push_back(std::move(h));
  }
  return out;
}

template <typename J>
Container ParseContainer(const J& c) {
  const auto& res = Field(c, "resources");
  return Container{Str(c, "name"), Resources(res, "requests"), Resources(res, "limits"),
                   Str(c, "restartPolicy"), HostPorts(c)};
}

ObjectReference ParseReference(const json& r) {
  return {Str(r, "apiVersion"), Str(r, "kind"),          Str(r, "namespace"), Str(r, "name"),
          Str(r, "uid"),        Str(r, "resourceVersion"), Str(r, "fieldPath")};
}

json ReferenceToJson(const ObjectReference& r) {
  json j = json::object();
  auto put = [&](const char* k, const std::string& v) {
    if (!v.empty()) j[k] = v;
  };
  put("apiVersion", r.api_version);
  put("kind", r.kind);
  put("namespace", r.namespace_);
  put("name", r.name);
  put("uid", r.uid);
  put("resourceVersion", r.resource_version);
  put("fieldPath", r.field_path);
  return j;
}

std::optional<IntOrString> ParseIntOrString(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (v.is_null()) return std::nullopt;
  IntOrString out;
  if (v.is_number_integer()) {
    out.int_value = static_cast<int32_t>(v.get<int64_t>());
  } else if (v.is_string()) {
    out.is_string = true;
    out.string_value = v.get<std::string>();
  } else {
    throw ModelError(absl::StrCat("field ", key, " is neither an int nor a string"));
  }
  return out;
}

void AddInto(ResourceList& into, const ResourceList& add) {
  for (const auto& [name, q] : add) into[name] += q;
}

void MaxInto(ResourceList& into, const ResourceList& other) {
  for (const auto& [name, q] : other) {
    auto it = into.find(name);
    if (it == into.end()) {
      into.emplace(name, q);
    } else if (q > it->second) {
      it->second = q;
    }
  }
}

// Runs `parse` and turns any parse error into InvalidArgument naming the kind.
template <typename T, typename J, typename F>
absl::StatusOr<T> Guarded(const char* kind, const J& j, F parse) {
  if (!IsObject(j)) return absl::InvalidArgumentError(absl::StrCat(kind, ": not a JSON object"));
  try {
    return parse();
  } catch (const ModelError& e) {
    return absl::InvalidArgumentError(absl::StrCat(kind, ": ", e.what()));
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(kind, ": ", e.what()));
  } catch (const simdjson::simdjson_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(kind, ": ", e.what()));
  }
}

}  // namespace

absl::StatusOr<ObjectMeta> ParseObjectMeta(const json& j) {
  return Guarded<ObjectMeta>("object", j, [&] { return Meta(j); });
}

ResourceList ComputePodRequests(const Pod& pod) {
  ResourceList reqs;
  for (const Container& c : pod.containers) AddInto(reqs, c.requests);
  ResourceList sidecars;     // restartable init containers started so far
  ResourceList init_peak;    // the largest need while init containers run
  for (const Container& c : pod.init_containers) {
    if (c.restart_policy == "Always") {
      AddInto(reqs, c.requests);  // a sidecar keeps running next to the main containers
      AddInto(sidecars, c.requests);
      MaxInto(init_peak, sidecars);
    } else {
      ResourceList during = c.requests;
      AddInto(during, sidecars);
      MaxInto(init_peak, during);
    }
  }
  MaxInto(reqs, init_peak);
  for (const auto& [name, q] : pod.pod_level_requests) reqs[name] = q;
  AddInto(reqs, pod.overhead);
  return reqs;
}

bool SelectorMatches(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const auto& r : selector.match_expressions) {
    auto it = labels.find(r.key);
    const bool has = it != labels.end();
    const bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    if (r.op == "In" && !in) return false;
    if (r.op == "NotIn" && in) return false;
    if (r.op == "Exists" && !has) return false;
    if (r.op == "DoesNotExist" && has) return false;
    if (r.op != "In" && r.op != "NotIn" && r.op != "Exists" && r.op != "DoesNotExist") return false;
  }
  return true;
}


namespace {

template <typename J>
void ReadNodeAffinity(const J& affinity, Pod& p) {
  const auto& node_affinity = Field(affinity, "nodeAffinity");
  const auto& required = Field(node_affinity, "requiredDuringSchedulingIgnoredDuringExecution");
  for (const auto& term : Array(required, "nodeSelectorTerms")) p.required_node_affinity.push_back(SelectorTerm(term));
  for (const auto& t : Array(node_affinity, "preferredDuringSchedulingIgnoredDuringExecution")) {
    p.preferred_node_affinity.push_back({OptInt<int32_t>(t, "weight").value_or(0), SelectorTerm(Field(t, "preference"))});
  }
}

template <typename J>
void ReadVolumes(const J& spec, Pod& p) {
  for (const auto& v : Array(spec, "volumes")) {
    if (const auto& pvc = Field(v, "persistentVolumeClaim"); IsObject(pvc)) {
      p.volume_claims.push_back(Str(pvc, "claimName"));
    } else if (IsObject(Field(v, "ephemeral"))) {
      p.volume_claims.push_back(absl::StrCat(p.metadata.name, "-", Str(v, "name")));
    } else if (const auto& gce = Field(v, "gcePersistentDisk"); IsObject(gce)) {
      p.inline_disks.push_back({InlineDisk::Kind::kGcePersistentDisk, Str(gce, "pdName"), {}, Bool(gce, "readOnly")});
    } else if (const auto& aws = Field(v, "awsElasticBlockStore"); IsObject(aws)) {
      p.inline_disks.push_back({InlineDisk::Kind::kAwsElasticBlockStore, Str(aws, "volumeID"), {}, Bool(aws, "readOnly")});
    } else if (const auto& iscsi = Field(v, "iscsi"); IsObject(iscsi)) {
      p.inline_disks.push_back({InlineDisk::Kind::kIscsi, Str(iscsi, "iqn"), {}, Bool(iscsi, "readOnly")});
    } else if (const auto& rbd = Field(v, "rbd"); IsObject(rbd)) {
      InlineDisk d{InlineDisk::Kind::kRbd, "", {}, Bool(rbd, "readOnly")};
      const std::string pool = Str(rbd, "pool");
      d.id = absl::StrCat(pool.empty() ? "rbd" : pool, "/", Str(rbd, "image"));
      for (const auto& m : Array(rbd, "monitors")) {
        if (IsString(m)) d.monitors.push_back(GetString(m));
      }
      p.inline_disks.push_back(std::move(d));
    }
  }
  std::sort(p.volume_claims.begin(), p.volume_claims.end());
  p.volume_claims.erase(std::unique(p.volume_claims.begin(), p.volume_claims.end()), p.volume_claims.end());
}

template <typename J>
void ReadPodSpec(const J& spec, Pod& p) {
  p.node_name = Str(spec, "nodeName");
  p.scheduler_name = Str(spec, "schedulerName");
  p.priority_class_name = Str(spec, "priorityClassName");
  p.preemption_policy = Str(spec, "preemptionPolicy");
  p.priority = OptInt<int32_t>(spec, "priority");
  p.active_deadline_seconds = OptInt<int64_t>(spec, "activeDeadlineSeconds");
  p.node_selector = StrMap(spec, "nodeSelector");
  const auto& affinity = Field(spec, "affinity");
  ReadNodeAffinity(affinity, p);
  p.required_pod_affinity = PodAffinityTerms(Field(affinity, "podAffinity"));
  p.required_pod_anti_affinity = PodAffinityTerms(Field(affinity, "podAntiAffinity"));
  p.preferred_pod_affinity = WeightedPodAffinityTerms(Field(affinity, "podAffinity"));
  p.preferred_pod_anti_affinity = WeightedPodAffinityTerms(Field(affinity, "podAntiAffinity"));
  p.topology_spread_constraints = SpreadConstraints(spec);
  for (const auto& t : Array(spec, "tolerations")) {
    p.tolerations.push_back({Str(t, "key"), Str(t, "operator"), Str(t, "value"), Str(t, "effect"),
                             OptInt<int64_t>(t, "tolerationSeconds")});
  }
  for (const auto& c : Array(spec, "containers")) p.containers.push_back(ParseContainer(c));
  for (const auto& c : Array(spec, "initContainers")) p.init_containers.push_back(ParseContainer(c));
  for (const auto& g : Array(spec, "schedulingGates")) p.scheduling_gates.push_back(Str(g, "name"));
  for (const auto& c : Array(spec, "resourceClaims")) {
    p.resource_claims.push_back(Str(c, "name"));
    p.resource_claim_objects.push_back(Str(c, "resourceClaimName"));
  }
  ReadVolumes(spec, p);
  p.overhead = Resources(spec, "overhead");
  p.pod_level_requests = Resources(Field(spec, "resources"), "requests");
}

template <typename J>
Pod ReadPod(const J& j) {
  Pod p;
  p.metadata = Meta(j);
  ReadPodSpec(Field(j, "spec"), p);
  const auto& status = Field(j, "status");
  p.phase = Str(status, "phase");
  p.nominated_node_name = Str(status, "nominatedNodeName");
  p.conditions = Conditions(status);
  for (const auto& c : Array(status, "resourceClaimStatuses")) {  // a template's claim, once made
    for (size_t i = 0; i < p.resource_claims.size(); ++i) {
      if (p.resource_claims[i] == Str(c, "name") && p.resource_claim_objects[i].empty())
        p.resource_claim_objects[i] = Str(c, "resourceClaimName");
    }
  }
  p.requests = ComputePodRequests(p);
  return p;
}

template <typename J>
Node ReadNode(const J& j) {
  Node n;
  n.metadata = Meta(j);
  const auto& spec = Field(j, "spec");
  n.unschedulable = Bool(spec, "unschedulable");
  for (const auto& t : Array(spec, "taints")) {
    n.taints.push_back({Str(t, "key"), Str(t, "value"), Str(t, "effect"), Str(t, "timeAdded")});
  }
  const auto& status = Field(j, "status");
  n.capacity = Resources(status, "capacity");
  n.allocatable = Resources(status, "allocatable");
  n.conditions = Conditions(status);
  return n;
}

}  // namespace

absl::StatusOr<Pod> Pod::FromJson(const json& j) {
  return Guarded<Pod>("Pod", j, [&] { return ReadPod(j); });
}

absl::StatusOr<Pod> Pod::FromSimdjson(const simdjson::dom::element& j) {
  return Guarded<Pod>("Pod", j, [&] { return ReadPod(j); });
}

absl::StatusOr<Node> Node::FromJson(const json& j) {
  return Guarded<Node>("Node", j, [&] { return ReadNode(j); });
}

absl::StatusOr<Node> Node::FromSimdjson(const simdjson::dom::element& j) {
  return Guarded<Node>("Node", j, [&] { return ReadNode(j); });
}

namespace {
std::vector<std::string> StrList(const json& j, const char* key) {
  std::vector<std::string> out;
  for (const json& v : Array(j, key)) {
    if (!v.is_string()) throw ModelError(absl::StrCat(key, " holds a non-string"));
    out.push_back(v.get<std::string>());
  }
  return out;
}
}  // namespace

absl::StatusOr<PersistentVolumeClaim> PersistentVolumeClaim::FromJson(const json& j) {
  return Guarded<PersistentVolumeClaim>("PersistentVolumeClaim", j, [&] {
    PersistentVolumeClaim c;
    c.metadata = Meta(j);
    const json& spec = Field(j, "spec");
    if (!Field(spec, "storageClassName").is_null()) c.storage_class_name = Str(spec, "storageClassName");
    c.volume_name = Str(spec, "volumeName");
    c.access_modes = StrList(spec, "accessModes");
    c.phase = Str(Field(j, "status"), "phase");
    const ResourceList requests = Resources(Field(spec, "resources"), "requests");
    if (auto r = requests.find("storage"); r != requests.end()) c.storage_request = r->second;
    c.volume_mode = Str(spec, "volumeMode");
    if (const json& sel = Field(spec, "selector"); sel.is_object()) {
      c.selector = LabelSelector{StrMap(sel, "matchLabels"), Requirements(sel, "matchExpressions")};
    }
    return c;
  });
}

absl::StatusOr<PersistentVolume> PersistentVolume::FromJson(const json& j) {
  return Guarded<PersistentVolume>("PersistentVolume", j, [&] {
    PersistentVolume v;
    v.metadata = Meta(j);
    const json& spec = Field(j, "spec");
    v.storage_class_name = Str(spec, "storageClassName");
    v.access_modes = StrList(spec, "accessModes");
    for (const json& term : Array(Field(Field(spec, "nodeAffinity"), "required"), "nodeSelectorTerms")) {
      v.node_affinity.push_back({Requirements(term, "matchExpressions"), Requirements(term, "matchFields")});
    }
    const json& ref = Field(spec, "claimRef");
    v.claim_namespace = Str(ref, "namespace");
    v.claim_name = Str(ref, "name");
    v.claim_uid = Str(ref, "uid");
    v.phase = Str(Field(j, "status"), "phase");
    const json& csi = Field(spec, "csi");
    v.csi_driver = Str(csi, "driver");
    v.csi_volume_handle = Str(csi, "volumeHandle");
    const ResourceList capacity = Resources(spec, "capacity");
    if (auto c = capacity.find("storage"); c != capacity.end()) v.capacity = c->second;
    v.volume_mode = Str(spec, "volumeMode");
    return v;
  });
}

absl::StatusOr<CsiNode> CsiNode::FromJson(const json& j) {
  return Guarded<CsiNode>("CSINode", j, [&] {
    CsiNode n;
    n.metadata = Meta(j);
    for (const json& d : Array(Field(j, "spec"), "drivers")) {
      n.drivers.push_back({Str(d, "name"), OptInt<int64_t>(Field(d, "allocatable"), "count")});
    }
    return n;
  });
}

absl::StatusOr<CsiDriver> CsiDriver::FromJson(const json& j) {
  return Guarded<CsiDriver>("CSIDriver", j, [&] {
    CsiDriver d;
    d.metadata = Meta(j);
    d.storage_capacity = Bool(Field(j, "spec"), "storageCapacity");
    return d;
  });
}

absl::StatusOr<CsiStorageCapacity> CsiStorageCapacity::FromJson(const json& j) {
  return Guarded<CsiStorageCapacity>("CSIStorageCapacity", j, [&] {
    CsiStorageCapacity c;
    c.metadata = Meta(j);
    c.storage_class_name = Str(j, "storageClassName");
    if (const json& sel = Field(j, "nodeTopology"); sel.is_object()) {
      c.node_topology = LabelSelector{StrMap(sel, "matchLabels"), Requirements(sel, "matchExpressions")};
    }
    if (const json& v = Field(j, "capacity"); !v.is_null()) c.capacity = ParseQuantityValue(v, "capacity");
    if (const json& v = Field(j, "maximumVolumeSize"); !v.is_null()) {
      c.maximum_volume_size = ParseQuantityValue(v, "maximumVolumeSize");
    }
    return c;
  });
}

absl::StatusOr<StorageClass> StorageClass::FromJson(const json& j) {
  return Guarded<StorageClass>("StorageClass", j, [&] {
    StorageClass sc;
    sc.metadata = Meta(j);
    sc.provisioner = Str(j, "provisioner");
    sc.volume_binding_mode = Str(j, "volumeBindingMode");
    for (const json& t : Array(j, "allowedTopologies")) {
      NodeSelectorTerm term;
      for (const json& e : Array(t, "matchLabelExpressions")) {
        term.match_expressions.push_back({Str(e, "key"), "In", StrList(e, "values")});
      }
      sc.allowed_topologies.push_back(std::move(term));
    }
    return sc;
  });
}

absl::StatusOr<PriorityClass> PriorityClass::FromJson(const json& j) {
  return Guarded<PriorityClass>("PriorityClass", j, [&] {
    PriorityClass pc;
    pc.metadata = Meta(j);
    pc.value = OptInt<int32_t>(j, "value").value_or(0);
    pc.global_default = Bool(j, "globalDefault");
    pc.preemption_policy = Str(j, "preemptionPolicy");
    return pc;
  });
}

absl::StatusOr<PodDisruptionBudget> PodDisruptionBudget::FromJson(const json& j) {
  return Guarded<PodDisruptionBudget>("PodDisruptionBudget", j, [&] {
    PodDisruptionBudget pdb;
    pdb.metadata = Meta(j);
    const json& spec = Field(j, "spec");
    pdb.min_available = ParseIntOrString(spec, "minAvailable");
    pdb.max_unavailable = ParseIntOrString(spec, "maxUnavailable");
    const json& sel = Field(spec, "selector");
    if (sel.is_object()) {
      pdb.selector = LabelSelector{StrMap(sel, "matchLabels"), Requirements(sel, "matchExpressions")};
    }
    const json& status = Field(j, "status");
    pdb.disruptions_allowed = OptInt<int32_t>(status, "disruptionsAllowed").value_or(0);
    pdb.current_healthy = OptInt<int32_t>(status, "currentHealthy").value_or(0);
    pdb.desired_healthy = OptInt<int32_t>(status, "desiredHealthy").value_or(0);
    pdb.expected_pods = OptInt<int32_t>(status, "expectedPods").value_or(0);
    pdb.observed_generation = OptInt<int64_t>(status, "observedGeneration").value_or(0);
    return pdb;
  });
}

absl::StatusOr<Lease> Lease::FromJson(const json& j) {
  return Guarded<Lease>("Lease", j, [&] {
    Lease l;
    l.metadata = Meta(j);
    const json& spec = Field(j, "spec");
    l.holder_identity = Str(spec, "holderIdentity");
    l.lease_duration_seconds = OptInt<int32_t>(spec, "leaseDurationSeconds");
    l.acquire_time = Str(spec, "acquireTime");
    l.renew_time = Str(spec, "renewTime");
    l.lease_transitions = OptInt<int32_t>(spec, "leaseTransitions").value_or(0);
    return l;
  });
}

json Lease::ToJson() const {
  json j = {{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"}};
  j["metadata"]["name"] = metadata.name;
  if (!metadata.namespace_.empty()) j["metadata"]["namespace"] = metadata.namespace_;
  if (!metadata.resource_version.empty()) j["metadata"]["resourceVersion"] = metadata.resource_version;
  json spec = json::object();
  if (!holder_identity.empty()) spec["holderIdentity"] = holder_identity;
  if (lease_duration_seconds) spec["leaseDurationSeconds"] = *lease_duration_seconds;
  if (!acquire_time.empty()) spec["acquireTime"] = acquire_time;
  if (!renew_time.empty()) spec["renewTime"] = renew_time;
  spec["leaseTransitions"] = lease_transitions;
  j["spec"] = spec;
  return j;
}

absl::StatusOr<Event> Event::FromJson(const json& j) {
  return Guarded<Event>("Event", j, [&] {
    Event e;
    e.metadata = Meta(j);
    e.event_time = Str(j, "eventTime");
    e.reporting_controller = Str(j, "reportingController");
    e.reporting_instance = Str(j, "reportingInstance");
    e.action = Str(j, "action");
    e.reason = Str(j, "reason");
    e.note = Str(j, "note");
    e.type = Str(j, "type");
    e.regarding = ParseReference(Field(j, "regarding"));
    if (Field(j, "related").is_object()) e.related = ParseReference(Field(j, "related"));
    const json& series = Field(j, "series");
    e.series_count = OptInt<int32_t>(series, "count").value_or(0);
    e.series_last_observed_time = Str(series, "lastObservedTime");
    return e;
  });
}

json Event::ToJson() const {
  json j = {{"apiVersion", "events.k8s.io/v1"}, {"kind", "Event"}};
  if (!metadata.name.empty()) j["metadata"]["name"] = metadata.name;
  if (!metadata.generate_name.empty()) j["metadata"]["generateName"] = metadata.generate_name;
  j["metadata"]["namespace"] = metadata.namespace_;
  j["eventTime"] = event_time;
  j["reportingController"] = reporting_controller;
  j["reportingInstance"] = reporting_instance;
  j["action"] = action;
  j["reason"] = reason;
  j["note"] = note;
  j["type"] = type;
  j["regarding"] = ReferenceToJson(regarding);
  if (related) j["related"] = ReferenceToJson(*related);
  if (series_count > 0) {
    j["series"] = {{"count", series_count}, {"lastObservedTime", series_last_observed_time}};
  }
  return j;
}

}  // namespace onequeue::k8s

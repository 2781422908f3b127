#include "k8s_client/models.h"
#include "k8s_client/json_fields.h"

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
using json_fields::Field;
using json_fields::Str;

template <typename Int>
std::optional<Int> OptInt(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (v.is_null()) return std::nullopt;
  if (!v.is_number_integer()) throw ModelError(absl::StrCat("field ", key, " is not an integer"));
  const bool fits = v.is_number_unsigned()
                        ? v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<Int>::max())
                        : v.get<int64_t>() >= std::numeric_limits<Int>::min() &&
                              v.get<int64_t>() <= std::numeric_limits<Int>::max();
  if (!fits) throw ModelError(absl::StrCat("field ", key, " is out of range"));
  return v.get<Int>();
}

bool Bool(const json& j, const char* key) {
  const json& v = Field(j, key);
  if (v.is_null()) return false;
  if (!v.is_boolean()) throw ModelError(absl::StrCat("field ", key, " is not a boolean"));
  return v.get<bool>();
}

// Iterates an optional array field.
const json& Array(const json& j, const char* key) {
  static const json kEmpty = json::array();
  const json& v = Field(j, key);
  if (v.is_null()) return kEmpty;
  if (!v.is_array()) throw ModelError(absl::StrCat("field ", key, " is not an array"));
  return v;
}

StringMap StrMap(const json& j, const char* key) {
  StringMap out;
  const json& v = Field(j, key);
  if (v.is_null()) return out;
  if (!v.is_object()) throw ModelError(absl::StrCat("field ", key, " is not an object"));
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_string()) throw ModelError(absl::StrCat(key, ".", it.key(), " is not a string"));
    out.emplace(it.key(), it.value().get<std::string>());
  }
  return out;
}

Quantity ParseQuantityValue(const json& v, const std::string& where) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
    // Quantity.UnmarshalJSON trims surrounding whitespace of a quoted value.
    const size_t b = text.find_first_not_of(" \t\r\n");
    const size_t e = text.find_last_not_of(" \t\r\n");
    text = b == std::string::npos ? "" : text.substr(b, e - b + 1);
  } else if (v.is_number()) {
    text = v.dump();
  } else {
    throw ModelError(absl::StrCat(where, " is not a quantity"));
  }
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) throw ModelError(absl::StrCat(where, ": ", q.status().message()));
  return *q;
}

ResourceList Resources(const json& j, const char* key) {
  ResourceList out;
  const json& v = Field(j, key);
  if (v.is_null()) return out;
  if (!v.is_object()) throw ModelError(absl::StrCat("field ", key, " is not an object"));
  for (auto it = v.begin(); it != v.end(); ++it) {
    out.emplace(it.key(), ParseQuantityValue(it.value(), absl::StrCat(key, ".", it.key())));
  }
  return out;
}

ObjectMeta Meta(const json& j) {
  const json& m = Field(j, "metadata");
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
  for (const json& o : Array(m, "ownerReferences")) {
    meta.owner_references.push_back({Str(o, "apiVersion"), Str(o, "kind"), Str(o, "name"),
                                     Str(o, "uid"), Bool(o, "controller")});
  }
  return meta;
}

std::vector<LabelSelectorRequirement> Requirements(const json& j, const char* key) {
  std::vector<LabelSelectorRequirement> out;
  for (const json& r : Array(j, key)) {
    LabelSelectorRequirement req{Str(r, "key"), Str(r, "operator"), {}};
    for (const json& v : Array(r, "values")) {
      if (!v.is_string()) throw ModelError("selector value is not a string");
      req.values.push_back(v.get<std::string>());
    }
    out.push_back(std::move(req));
  }
  return out;
}

PodAffinityTerm ReadPodAffinityTerm(const json& t) {
  PodAffinityTerm term;
  const json& sel = Field(t, "labelSelector");
  term.has_selector = sel.is_object();
  term.selector = LabelSelector{StrMap(sel, "matchLabels"), Requirements(sel, "matchExpressions")};
  for (const json& n : Array(t, "namespaces")) {
    if (!n.is_string()) throw ModelError("namespaces entry is not a string");
    term.namespaces.push_back(n.get<std::string>());
  }
  const json& ns_sel = Field(t, "namespaceSelector");
  term.has_namespace_selector = ns_sel.is_object();
  term.namespace_selector = LabelSelector{StrMap(ns_sel, "matchLabels"), Requirements(ns_sel, "matchExpressions")};
  term.topology_key = Str(t, "topologyKey");
  return term;
}

std::vector<PodAffinityTerm> PodAffinityTerms(const json& affinity) {
  std::vector<PodAffinityTerm> out;
  for (const json& t : Array(affinity, "requiredDuringSchedulingIgnoredDuringExecution")) out.push_back(ReadPodAffinityTerm(t));
  return out;
}

std::vector<WeightedPodAffinityTerm> WeightedPodAffinityTerms(const json& affinity) {
  std::vector<WeightedPodAffinityTerm> out;
  for (const json& t : Array(affinity, "preferredDuringSchedulingIgnoredDuringExecution")) {
    out.push_back({OptInt<int32_t>(t, "weight").value_or(0), ReadPodAffinityTerm(Field(t, "podAffinityTerm"))});
  }
  return out;
}

std::vector<TopologySpreadConstraint> SpreadConstraints(const json& spec) {
  std::vector<TopologySpreadConstraint> out;
  for (const json& c : Array(spec, "topologySpreadConstraints")) {
    TopologySpreadConstraint t;
    t.max_skew = OptInt<int32_t>(c, "maxSkew").value_or(1);
    t.topology_key = Str(c, "topologyKey");
    t.when_unsatisfiable = Str(c, "whenUnsatisfiable");
    const json& sel = Field(c, "labelSelector");
    if (sel.is_object()) t.selector = LabelSelector{StrMap(sel, "matchLabels"), Requirements(sel, "matchExpressions")};
    t.min_domains = OptInt<int32_t>(c, "minDomains");
    t.node_affinity_policy = Str(c, "nodeAffinityPolicy");
    t.node_taints_policy = Str(c, "nodeTaintsPolicy");
    for (const json& k : Array(c, "matchLabelKeys")) {
      if (!k.is_string()) throw ModelError("matchLabelKeys entry is not a string");
      t.match_label_keys.push_back(k.get<std::string>());
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Condition> Conditions(const json& status) {
  std::vector<Condition> out;
  for (const json& c : Array(status, "conditions")) {
    out.push_back({Str(c, "type"), Str(c, "status"), Str(c, "reason"), Str(c, "message"),
                   Str(c, "lastTransitionTime")});
  }
  return out;
}

std::vector<HostPort> HostPorts(const json& c) {
  std::vector<HostPort> out;
  for (const json& p : Array(c, "ports")) {
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

Container ParseContainer(const json& c) {
  const json& res = Field(c, "resources");
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
template <typename T, typename F>
absl::StatusOr<T> Guarded(const char* kind, const json& j, F parse) {
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(kind, ": not a JSON object"));
  try {
    return parse();
  } catch (const ModelError& e) {
    return absl::InvalidArgumentError(absl::StrCat(kind, ": ", e.what()));
  } catch (const json::exception& e) {
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

absl::StatusOr<Pod> Pod::FromJson(const json& j) {
  return Guarded<Pod>("Pod", j, [&] {
    Pod p;
    p.metadata = Meta(j);
    const json& spec = Field(j, "spec");
    p.node_name = Str(spec, "nodeName");
    p.scheduler_name = Str(spec, "schedulerName");
    p.priority_class_name = Str(spec, "priorityClassName");
    p.preemption_policy = Str(spec, "preemptionPolicy");
    p.priority = OptInt<int32_t>(spec, "priority");
    p.active_deadline_seconds = OptInt<int64_t>(spec, "activeDeadlineSeconds");
    p.node_selector = StrMap(spec, "nodeSelector");
    const json& required = Field(Field(Field(spec, "affinity"), "nodeAffinity"),
                                 "requiredDuringSchedulingIgnoredDuringExecution");
    for (const json& term : Array(required, "nodeSelectorTerms")) {
      p.required_node_affinity.push_back(
          {Requirements(term, "matchExpressions"), Requirements(term, "matchFields")});
    }
    const json& affinity = Field(spec, "affinity");
    for (const json& t : Array(Field(affinity, "nodeAffinity"), "preferredDuringSchedulingIgnoredDuringExecution")) {
      const json& pref = Field(t, "preference");
      p.preferred_node_affinity.push_back({OptInt<int32_t>(t, "weight").value_or(0),
                                           {Requirements(pref, "matchExpressions"), Requirements(pref, "matchFields")}});
    }
    p.required_pod_affinity = PodAffinityTerms(Field(affinity, "podAffinity"));
    p.required_pod_anti_affinity = PodAffinityTerms(Field(affinity, "podAntiAffinity"));
    p.preferred_pod_affinity = WeightedPodAffinityTerms(Field(affinity, "podAffinity"));
    p.preferred_pod_anti_affinity = WeightedPodAffinityTerms(Field(affinity, "podAntiAffinity"));
    p.topology_spread_constraints = SpreadConstraints(spec);
    for (const json& t : Array(spec, "tolerations")) {
      p.tolerations.push_back({Str(t, "key"), Str(t, "operator"), Str(t, "value"), Str(t, "effect"),
                               OptInt<int64_t>(t, "tolerationSeconds")});
    }
    for (const json& c : Array(spec, "containers")) p.containers.push_back(ParseContainer(c));
    for (const json& c : Array(spec, "initContainers")) p.init_containers.push_back(ParseContainer(c));
    for (const json& g : Array(spec, "schedulingGates")) p.scheduling_gates.push_back(Str(g, "name"));
    for (const json& c : Array(spec, "resourceClaims")) {
      p.resource_claims.push_back(Str(c, "name"));
      p.resource_claim_objects.push_back(Str(c, "resourceClaimName"));
    }
    for (const json& v : Array(spec, "volumes")) {
      if (const json& pvc = Field(v, "persistentVolumeClaim"); pvc.is_object()) {
        p.volume_claims.push_back(Str(pvc, "claimName"));
      } else if (Field(v, "ephemeral").is_object()) {
        p.volume_claims.push_back(absl::StrCat(p.metadata.name, "-", Str(v, "name")));
      } else if (const json& gce = Field(v, "gcePersistentDisk"); gce.is_object()) {
        p.inline_disks.push_back({InlineDisk::Kind::kGcePersistentDisk, Str(gce, "pdName"), {}, Bool(gce, "readOnly")});
      } else if (const json& aws = Field(v, "awsElasticBlockStore"); aws.is_object()) {
        p.inline_disks.push_back({InlineDisk::Kind::kAwsElasticBlockStore, Str(aws, "volumeID"), {}, Bool(aws, "readOnly")});
      } else if (const json& iscsi = Field(v, "iscsi"); iscsi.is_object()) {
        p.inline_disks.push_back({InlineDisk::Kind::kIscsi, Str(iscsi, "iqn"), {}, Bool(iscsi, "readOnly")});
      } else if (const json& rbd = Field(v, "rbd"); rbd.is_object()) {
        InlineDisk d{InlineDisk::Kind::kRbd, "", {}, Bool(rbd, "readOnly")};
        const std::string pool = Str(rbd, "pool");
        d.id = absl::StrCat(pool.empty() ? "rbd" : pool, "/", Str(rbd, "image"));
        for (const json& m : Array(rbd, "monitors")) {
          if (m.is_string()) d.monitors.push_back(m.get<std::string>());
        }
        p.inline_disks.push_back(std::move(d));
      }
    }
    std::sort(p.volume_claims.begin(), p.volume_claims.end());
    p.volume_claims.erase(std::unique(p.volume_claims.begin(), p.volume_claims.end()), p.volume_claims.end());
    p.overhead = Resources(spec, "overhead");
    p.pod_level_requests = Resources(Field(spec, "resources"), "requests");
    const json& status = Field(j, "status");
    p.phase = Str(status, "phase");
    p.nominated_node_name = Str(status, "nominatedNodeName");
    p.conditions = Conditions(status);
    for (const json& c : Array(status, "resourceClaimStatuses")) {  // a template's claim, once made
      for (size_t i = 0; i < p.resource_claims.size(); ++i) {
        if (p.resource_claims[i] == Str(c, "name") && p.resource_claim_objects[i].empty())
          p.resource_claim_objects[i] = Str(c, "resourceClaimName");
      }
    }
    p.requests = ComputePodRequests(p);
    return p;
  });
}

absl::StatusOr<Node> Node::FromJson(const json& j) {
  return Guarded<Node>("Node", j, [&] {
    Node n;
    n.metadata = Meta(j);
    const json& spec = Field(j, "spec");
    n.unschedulable = Bool(spec, "unschedulable");
    for (const json& t : Array(spec, "taints")) {
      n.taints.push_back({Str(t, "key"), Str(t, "value"), Str(t, "effect"), Str(t, "timeAdded")});
    }
    const json& status = Field(j, "status");
    n.capacity = Resources(status, "capacity");
    n.allocatable = Resources(status, "allocatable");
    n.conditions = Conditions(status);
    return n;
  });
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

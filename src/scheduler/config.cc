#include "scheduler/config.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "queue/model.h"
#include "yaml-cpp/yaml.h"

namespace onequeue::scheduler {
namespace {

// Walks one YAML mapping, reading known keys and refusing unknown ones. Errors collect so that a
// user sees every problem of a file at once, each with its key path and line.
class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, std::vector<std::string>* errors)
      : node_(node), path_(std::move(path)), errors_(errors) {
    if (node_ && !node_.IsNull() && !node_.IsMap()) {
      Error(node_, "must be a mapping");
      ok_ = false;
    }
  }

  template <typename T>
  void Read(const std::string& key, T* out) {
    seen_.insert(key);
    if (!ok_ || !node_ || node_.IsNull()) return;
    const YAML::Node v = Get(key);
    if (!v || v.IsNull()) return;
    T value;
    try {
      value = v.as<T>();
    } catch (const YAML::Exception&) {
      KeyError(key, absl::StrCat("has the wrong type: expected ", TypeName<T>(), ", found ", KindName(v)));
      return;
    }
    // .nan and .inf are numbers to YAML; no setting of ours means them, and NaN passes every
    // range check written as "x < min" (each comparison is false).
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(value)) {
        KeyError(key, "must be a finite number (not .nan or .inf)");
        return;
      }
    }
    if constexpr (std::is_same_v<T, std::map<std::string, double>>) {
      for (const auto& [name, number] : value) {
        if (!std::isfinite(number)) {
          KeyError(key, absl::StrCat("\"", name, "\" must be a finite number (not .nan or .inf)"));
          return;
        }
      }
    }
    *out = std::move(value);
  }

  MapReader Child(const std::string& key) {
    seen_.insert(key);
    return MapReader(Get(key), Join(key), errors_);
  }

  YAML::Node Raw(const std::string& key) {
    seen_.insert(key);
    return Get(key);
  }

  std::string Join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  // Call after all reads: every key not read is a mistake.
  void RefuseUnknown() {
    if (!ok_ || !node_ || !node_.IsMap()) return;
    for (const auto& kv : node_) {
      // A key that is itself a list or a mapping (`? [a, b]`) names no setting.
      if (!kv.first.IsScalar()) {
        errors_->push_back(absl::StrCat(Where(kv.first), path_.empty() ? "document" : path_,
                                        ": a key must be a plain name, not ", KindName(kv.first)));
        continue;
      }
      const std::string k = kv.first.Scalar();
      if (!seen_.count(k)) {
        std::vector<std::string> known(seen_.begin(), seen_.end());
        errors_->push_back(absl::StrCat(Where(kv.first), Join(k), ": unknown key (known keys here: ",
                                        absl::StrJoin(known, ", "), ")"));
      }
    }
  }

  void Error(const YAML::Node& at, const std::string& what) {
    errors_->push_back(absl::StrCat(Where(at), path_.empty() ? "document" : path_, " ", what));
  }
  void KeyError(const std::string& key, const std::string& what) {
    const YAML::Node at = Get(key);
    errors_->push_back(absl::StrCat(Where(at ? at : node_), Join(key), ": ", what));
  }

 private:
  // Const access: operator[] on a non-const YAML::Node inserts the key, which would turn every
  // absent optional section into a present null one.
  YAML::Node Get(const std::string& key) const {
    const YAML::Node& n = node_;
    if (!ok_ || !n || !n.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    return n[key];
  }
  static std::string Where(const YAML::Node& n) {
    if (!n || n.Mark().is_null()) return "";
    return absl::StrCat("line ", n.Mark().line + 1, ": ");
  }
  static const char* KindName(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Map: return "a mapping";
      case YAML::NodeType::Sequence: return "a list";
      case YAML::NodeType::Scalar: return "a scalar";
      default: return "nothing";
    }
  }
  template <typename T>
  static const char* TypeName() {
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_integral_v<T>) return "an integer";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_same_v<T, std::vector<std::string>>) return "a list of strings";
    if constexpr (std::is_same_v<T, std::map<std::string, double>>) return "a mapping of names to numbers";
    if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) return "a mapping of names to names";
    return "another type";
  }

  YAML::Node node_;
  std::string path_;
  std::vector<std::string>* errors_;
  std::set<std::string> seen_;
  bool ok_ = true;
};

const std::set<std::string> kWeightNames = {"age", "fairShare", "size", "partition", "qos"};

// The longest span any *Seconds key may give: a century. Times are int64 seconds (queue::Time), so
// a bound this far below 2^62 keeps "now + span" from overflowing wherever a span is added.
constexpr int64_t kMaxSeconds = int64_t{100} * 365 * 86400;

void RefuseLongerThanACentury(MapReader& r, const std::string& key, int64_t seconds) {
  if (seconds > kMaxSeconds)
    r.KeyError(key, absl::StrCat("is ", seconds, "; at most ", kMaxSeconds, " (100 years)"));
}

// The host of an http(s):// URL, without brackets or port ("" when there is none).
std::string UrlHost(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  std::string rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != std::string::npos) rest = rest.substr(at + 1);
  if (!rest.empty() && rest[0] == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.find(':'));
}

// The host of a gRPC listening address "host:port" / "[v6]:port", without brackets.
std::string AddressHost(const std::string& address) {
  if (!address.empty() && address[0] == '[') return address.substr(1, address.find(']') - 1);
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

// Loopback only: traffic to it never leaves the machine, so a JWT sent in clear stays there.
bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  // 127.0.0.0/8, written as a dotted address ("127.0.0.1.example.com" is a name, not loopback).
  return host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos;
}

}  // namespace

namespace {
// ParseConfigMayThrow's sections, each reading its keys, checking them and refusing unknown ones.
// Errors collect in file order: top-level keys, kubernetes, slurm, queue, server, leaderElection.

void ParseKubernetes(MapReader k8s, KubernetesConfig& c) {
  k8s.Read("enabled", &c.enabled);
  k8s.Read("kubeconfig", &c.kubeconfig);
  k8s.Read("qps", &c.qps);
  k8s.Read("burst", &c.burst);
  if (c.qps <= 0) k8s.KeyError("qps", "must be greater than 0");
  if (c.burst < 1) k8s.KeyError("burst", "must be at least 1");
  k8s.Read("maxResponseBytes", &c.max_response_bytes);
  // A list page of 500 pods is a few MiB; past 64 GiB the bound bounds nothing.
  if (c.max_response_bytes < (int64_t{1} << 20) || c.max_response_bytes > (int64_t{64} << 30)) {
    k8s.KeyError("maxResponseBytes", "must be from 1048576 (1 MiB) to 68719476736 (64 GiB)");
  }
  k8s.Read("httpClient", &c.http_client);
  if (c.http_client != "auto" && c.http_client != "curl" && c.http_client != "nghttp2") {
    k8s.KeyError("httpClient", absl::StrCat("is \"", c.http_client, "\"; must be auto, curl or nghttp2"));
  }
  k8s.RefuseUnknown();
}

void ReadSlurmKeys(MapReader& slurm, SlurmConfig& c) {
  slurm.Read("enabled", &c.enabled);
  slurm.Read("url", &c.url);
  slurm.Read("allowInsecureHttp", &c.allow_insecure_http);
  slurm.Read("tokenFile", &c.token_file);
  slurm.Read("user", &c.user);
  slurm.Read("apiVersion", &c.api_version);
  slurm.Read("lendMechanism", &c.lend_mechanism);
  slurm.Read("sharedPartitions", &c.shared_partitions);
  slurm.Read("nodeLabel", &c.node_label);
  slurm.Read("lendAfterSeconds", &c.lend_after_seconds);
  slurm.Read("returnAfterSeconds", &c.return_after_seconds);
  slurm.Read("headroomNodes", &c.headroom_nodes);
  slurm.Read("pollIntervalSeconds", &c.poll_interval_seconds);
  slurm.Read("firstPollWaitSeconds", &c.first_poll_wait_seconds);
  slurm.Read("cancelUnrequeueable", &c.cancel_unrequeueable);
  slurm.Read("qosMap", &c.qos_map);
  slurm.Read("defaultQos", &c.default_qos);
  slurm.Read("gresResources", &c.gres_resources);
  slurm.Read("reclaimPartition", &c.reclaim_partition);
  slurm.Read("scontrolPath", &c.scontrol_path);
  slurm.Read("slurmConf", &c.slurm_conf);
}

// What slurm.enabled: true needs on top of valid values.
void CheckEnabledSlurm(MapReader& slurm, const SlurmConfig& c) {
  if (c.url.empty()) slurm.KeyError("url", "is required when slurm.enabled is true");
  else if (c.url.rfind("http://", 0) != 0 && c.url.rfind("https://", 0) != 0 && c.url.rfind("unix://", 0) != 0)
    slurm.KeyError("url", absl::StrCat("is \"", c.url, "\"; expected http://, https:// or unix://"));
  if (c.token_file.empty()) slurm.KeyError("tokenFile", "is required when slurm.enabled is true");
  if (c.shared_partitions.empty())
    slurm.KeyError("sharedPartitions", "must name at least one partition when slurm.enabled is true");
  if (c.lend_mechanism == "slurmd-pod")
    slurm.KeyError("lendMechanism", "slurmd-pod is not implemented by the daemon yet; use drain or placeholder");
  if (c.lend_mechanism == "drain" && c.scontrol_path.empty())
    slurm.KeyError("scontrolPath", "is required with lendMechanism drain (no slurmrestd version can requeue a "
                                   "job, and v0.0.38 cannot drain a node)");
}

// slurm.partitions.<name>.gpus: device-plugin (default) | dra, with gpuDeviceClasses (required
// with dra) and gpuIndexAttribute (default index); dra only on a shared partition, the only place
// where pods and Slurm jobs hold GPUs of one node at once (docs/sharing.md section 5).
void ReadPartitionGpus(MapReader& p, const std::string& name, const std::string& sharing, SlurmConfig& c) {
  std::string gpus = "device-plugin";
  SlurmConfig::DraGpus dra;
  p.Read("gpus", &gpus);
  p.Read("gpuDeviceClasses", &dra.device_classes);
  p.Read("gpuIndexAttribute", &dra.index_attribute);
  if (gpus != "device-plugin" && gpus != "dra") {
    p.KeyError("gpus", absl::StrCat("is \"", gpus, "\"; expected device-plugin or dra"));
    return;
  }
  if (gpus == "device-plugin") {
    if (!dra.device_classes.empty()) p.KeyError("gpuDeviceClasses", "is only read with gpus: dra");
    if (dra.index_attribute != "index") p.KeyError("gpuIndexAttribute", "is only read with gpus: dra");
    return;
  }
  if (sharing == "exclusive")
    p.KeyError("gpus", "dra is only for a shared partition (sharing: shared or shared-same-tenant): on an "
                       "exclusive node a pod's GPUs are all the node's, with no Slurm index to match");
  bool bad_class = dra.device_classes.empty();
  for (const std::string& d : dra.device_classes) bad_class = bad_class || d.empty();
  if (bad_class)
    p.KeyError("gpuDeviceClasses", "must name at least one DeviceClass (the class pods ask for Slurm's gpu GRES) "
                                   "with gpus: dra, none empty");
  if (dra.index_attribute.empty()) p.KeyError("gpuIndexAttribute", "must not be empty");
  c.partition_dra_gpus[name] = std::move(dra);
}

// slurm.partitions: {<name>: {sharing: exclusive | shared}} (issue 25).
void ReadPartitionSharing(MapReader& slurm, SlurmConfig& c) {
  const YAML::Node raw = slurm.Raw("partitions");
  MapReader partitions = slurm.Child("partitions");
  if (!raw || !raw.IsMap()) return;
  for (const auto& kv : raw) {
    if (!kv.first.IsScalar()) continue;  // RefuseUnknown names it
    const std::string name = kv.first.Scalar();
    MapReader p = partitions.Child(name);
    std::string sharing = "exclusive";
    p.Read("sharing", &sharing);
    if (sharing != "exclusive" && sharing != "shared" && sharing != "shared-same-tenant")
      p.KeyError("sharing",
                 absl::StrCat("is \"", sharing, "\"; expected exclusive, shared or shared-same-tenant"));
    else if (std::find(c.shared_partitions.begin(), c.shared_partitions.end(), name) == c.shared_partitions.end())
      partitions.KeyError(name, "is not in slurm.sharedPartitions: only a partition onequeue shares can set sharing");
    else
      // shared: each pod placed on such a node is mirrored in Slurm by a pod placeholder before it
      // is bound (docs/sharing.md step 3, pod_mirror.h).
      c.partition_sharing[name] = sharing;
    ReadPartitionGpus(p, name, sharing, c);
    p.RefuseUnknown();
  }
  partitions.RefuseUnknown();
}

void ParseSlurm(MapReader slurm, SlurmConfig& c) {
  ReadSlurmKeys(slurm, c);
  ReadPartitionSharing(slurm, c);
  if (c.url.rfind("http://", 0) == 0 && !IsLoopbackHost(UrlHost(c.url)) && !c.allow_insecure_http) {
    slurm.KeyError("url", absl::StrCat("is \"", c.url, "\": plain http to a host other than loopback would send "
                                       "the Slurm JWT in clear; use https:// or unix://, or set "
                                       "slurm.allowInsecureHttp: true if the network path is trusted"));
  }
  RefuseLongerThanACentury(slurm, "lendAfterSeconds", c.lend_after_seconds);
  RefuseLongerThanACentury(slurm, "returnAfterSeconds", c.return_after_seconds);
  if (c.lend_after_seconds < 0) slurm.KeyError("lendAfterSeconds", "must be 0 or more");
  if (c.return_after_seconds < 0) slurm.KeyError("returnAfterSeconds", "must be 0 or more");
  if (c.headroom_nodes < 0) slurm.KeyError("headroomNodes", "must be 0 or more");
  if (c.poll_interval_seconds < 0.1 || c.poll_interval_seconds > 3600)
    slurm.KeyError("pollIntervalSeconds", "must be from 0.1 to 3600");
  if (c.first_poll_wait_seconds < 0 || c.first_poll_wait_seconds > 3600)
    slurm.KeyError("firstPollWaitSeconds", "must be from 0 to 3600");
  static const std::set<std::string> kApiVersions = {"auto", "v0.0.38", "v0.0.39", "v0.0.40",
                                                     "v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44",
                                                     "v0.0.45"};
  if (!kApiVersions.count(c.api_version))
    slurm.KeyError("apiVersion", absl::StrCat("is \"", c.api_version,
                                              "\"; expected auto or one of v0.0.38 .. v0.0.45"));
  static const std::set<std::string> kMechanisms = {"drain", "placeholder", "slurmd-pod"};
  if (!kMechanisms.count(c.lend_mechanism))
    slurm.KeyError("lendMechanism", absl::StrCat("is \"", c.lend_mechanism,
                                                 "\"; expected drain, placeholder or slurmd-pod"));
  if (c.enabled) CheckEnabledSlurm(slurm, c);
  slurm.RefuseUnknown();
}

// With Slurm on and a QOS table, slurm.defaultQos and slurm.qosMap's targets must be in it: a Slurm
// job mapped to a QOS the table lacks is held (QOSNotAllowed), so a defaultQos outside the table
// would hold every job whose Slurm QOS the table does not list, with no word at start. With no
// table, QOS names are checked nowhere. (ParseQueue's namespace policies build the same name set.)
void CheckSlurmQosNames(MapReader slurm, const SlurmConfig& c, const std::vector<QosConfig>& table) {
  if (!c.enabled || table.empty()) return;
  std::set<std::string> names;
  for (const QosConfig& q : table) names.insert(q.name);
  const std::string known = absl::StrCat(" (queue.qos has ", absl::StrJoin(names, ", "), ")");
  if (!names.count(c.default_qos)) {
    slurm.KeyError("defaultQos", absl::StrCat("is \"", c.default_qos, "\", which is not in queue.qos", known,
                                              "; it is the QOS of every Slurm job whose own QOS is neither "
                                              "in qosMap nor in queue.qos"));
  }
  for (const auto& [slurm_qos, qos] : c.qos_map) {
    if (!names.count(qos)) {
      slurm.KeyError("qosMap", absl::StrCat("maps Slurm QOS \"", slurm_qos, "\" to \"", qos,
                                            "\", which is not in queue.qos", known));
    }
  }
}

// The scalar keys of queue: and its weights.
void ParseQueueScalars(MapReader& queue, QueueConfig& c) {
  queue.Read("reservationDepth", &c.reservation_depth);
  queue.Read("resolutionSeconds", &c.resolution_seconds);
  queue.Read("windowSeconds", &c.window_seconds);
  queue.Read("backfillShortestFirst", &c.backfill_shortest_first);
  queue.Read("keepReservations", &c.keep_reservations);
  queue.Read("fullCycleSeconds", &c.full_cycle_seconds);
  queue.Read("weights", &c.weights);
  if (c.reservation_depth < 0) queue.KeyError("reservationDepth", "must be 0 (unlimited) or more");
  if (c.resolution_seconds < 1) queue.KeyError("resolutionSeconds", "must be at least 1");
  if (c.full_cycle_seconds < 0) queue.KeyError("fullCycleSeconds", "must be 0 (every cycle full) or more");
  RefuseLongerThanACentury(queue, "fullCycleSeconds", c.full_cycle_seconds);
  RefuseLongerThanACentury(queue, "resolutionSeconds", c.resolution_seconds);
  RefuseLongerThanACentury(queue, "windowSeconds", c.window_seconds);
  if (c.window_seconds < c.resolution_seconds) queue.KeyError("windowSeconds", "must be at least resolutionSeconds");
  for (const auto& [name, w] : c.weights) {
    if (!kWeightNames.count(name))
      queue.KeyError("weights", absl::StrCat("has unknown factor \"", name,
                                             "\" (known: age, fairShare, size, partition, qos)"));
    else if (w < 0)
      queue.KeyError("weights", absl::StrCat("factor \"", name, "\" must not be negative"));
  }
}

// queue.<key>: absent, or a list whose entries `entry` reads (with a reader for "queue.<key>[i]").
// False when absent or not a list (the error already recorded).
bool ForEachListEntry(MapReader& queue, const std::string& key, std::vector<std::string>* errors,
                      const std::function<void(MapReader&)>& entry) {
  YAML::Node list = queue.Raw(key);
  if (!list) return false;
  if (!list.IsSequence()) {
    queue.KeyError(key, "must be a list");
    return false;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    MapReader r(list[i], absl::StrCat(queue.Join(key), "[", i, "]"), errors);
    entry(r);
  }
  return true;
}

void ParseQosList(MapReader& queue, std::vector<std::string>* errors, std::vector<QosConfig>& out) {
  std::set<std::string> names;
  ForEachListEntry(queue, "qos", errors, [&](MapReader& q) {
    QosConfig qc;
    q.Read("name", &qc.name);
    q.Read("priority", &qc.priority);
    q.Read("preemptible", &qc.preemptible);
    q.Read("canPreempt", &qc.can_preempt);
    q.Read("graceSeconds", &qc.grace_seconds);
    if (qc.name.empty()) q.KeyError("name", "is required");
    else if (!names.insert(qc.name).second) q.KeyError("name", absl::StrCat("\"", qc.name, "\" is defined twice"));
    if (qc.grace_seconds < 0) q.KeyError("graceSeconds", "must not be negative");
    RefuseLongerThanACentury(q, "graceSeconds", qc.grace_seconds);
    q.RefuseUnknown();
    out.push_back(qc);
  });
}

void ParseAccounts(MapReader& queue, std::vector<std::string>* errors, std::vector<AccountConfig>& out) {
  std::set<std::string> names;
  const bool listed = ForEachListEntry(queue, "accounts", errors, [&](MapReader& a) {
    AccountConfig ac;
    a.Read("name", &ac.name);
    a.Read("parent", &ac.parent);
    a.Read("shares", &ac.shares);
    if (ac.name.empty()) a.KeyError("name", "is required");
    else if (!names.insert(ac.name).second) a.KeyError("name", absl::StrCat("\"", ac.name, "\" is defined twice"));
    if (ac.shares < 0) a.KeyError("shares", "must not be negative");
    a.RefuseUnknown();
    out.push_back(ac);
  });
  if (!listed) return;
  for (const AccountConfig& ac : out) {
    if (!ac.parent.empty() && !names.count(ac.parent))
      queue.KeyError("accounts", absl::StrCat("account \"", ac.name, "\" has parent \"", ac.parent,
                                              "\", which is not in the list"));
  }
}

// One entry of queue.namespacePolicies, checked against queue.qos.
NamespacePolicyConfig ParseNamespacePolicy(MapReader& p, const std::set<std::string>& qos_names,
                                           std::set<std::string>& namespaces) {
  NamespacePolicyConfig pc;
  p.Read("namespace", &pc.namespace_);
  p.Read("allowedQos", &pc.allowed_qos);
  p.Read("defaultQos", &pc.default_qos);
  p.Read("allowedAccounts", &pc.allowed_accounts);
  p.Read("defaultAccount", &pc.default_account);
  if (pc.namespace_.empty()) p.KeyError("namespace", "is required (a namespace name, or \"*\" for the rest)");
  else if (!namespaces.insert(pc.namespace_).second)
    p.KeyError("namespace", absl::StrCat("\"", pc.namespace_, "\" has two policies"));
  for (const std::string& q : pc.allowed_qos) {
    if (!qos_names.count(q)) p.KeyError("allowedQos", absl::StrCat("names QOS \"", q, "\", which is not in queue.qos"));
  }
  if (!pc.default_qos.empty()) {
    if (!qos_names.count(pc.default_qos))
      p.KeyError("defaultQos", absl::StrCat("is \"", pc.default_qos, "\", which is not in queue.qos"));
    else if (!pc.allowed_qos.empty() &&
             std::find(pc.allowed_qos.begin(), pc.allowed_qos.end(), pc.default_qos) == pc.allowed_qos.end())
      p.KeyError("defaultQos", absl::StrCat("is \"", pc.default_qos, "\", which is not in allowedQos"));
  }
  if (!pc.default_account.empty() && !pc.allowed_accounts.empty() &&
      std::find(pc.allowed_accounts.begin(), pc.allowed_accounts.end(), pc.default_account) ==
          pc.allowed_accounts.end())
    p.KeyError("defaultAccount", absl::StrCat("is \"", pc.default_account, "\", which is not in allowedAccounts"));
  p.RefuseUnknown();
  return pc;
}

// queue.preemption (issue 26): how many candidate nodes one preemption decision examines, and how
// long a reservation its preemptor cannot use is kept.
void ParseQueuePreemption(MapReader preemption, QueueConfig::Preemption& c) {
  preemption.Read("minCandidateNodesPercentage", &c.min_candidate_nodes_percentage);
  preemption.Read("minCandidateNodesAbsolute", &c.min_candidate_nodes_absolute);
  preemption.Read("unusableReservationSeconds", &c.unusable_reservation_seconds);
  if (c.unusable_reservation_seconds < 1) preemption.KeyError("unusableReservationSeconds", "must be at least 1");
  RefuseLongerThanACentury(preemption, "unusableReservationSeconds", c.unusable_reservation_seconds);
  if (c.min_candidate_nodes_percentage < 0 || c.min_candidate_nodes_percentage > 100) {
    preemption.KeyError("minCandidateNodesPercentage", "must be between 0 and 100");
  }
  if (c.min_candidate_nodes_absolute < 0) preemption.KeyError("minCandidateNodesAbsolute", "must be 0 or more");
  if (c.min_candidate_nodes_percentage == 0 && c.min_candidate_nodes_absolute == 0) {
    preemption.KeyError("minCandidateNodesAbsolute", "must be more than 0 when minCandidateNodesPercentage is 0");
  }
  preemption.RefuseUnknown();
}

// queue.tresBillingWeights (issue 29): Slurm's TRESBillingWeights, as Slurm writes it
// ("CPU=1.0,Mem=0.25G,GRES/gpu=2.0") or as a mapping ({cpu: 1.0, mem: 0.25G, gres/gpu: 4.0}).
// queue.usageChargeSeconds and queue.usageConfigMap: when usage is charged and where it is kept.
void ParseUsage(MapReader& queue, QueueConfig& c) {
  const YAML::Node weights = queue.Raw("tresBillingWeights");
  if (weights && !weights.IsNull()) {
    absl::StatusOr<TresBillingWeights> parsed = absl::InvalidArgumentError(
        "must be a mapping of TRES to weights ({cpu: 1.0, mem: 0.25G, gres/gpu: 4.0}) or Slurm's "
        "string (\"CPU=1.0,Mem=0.25G,GRES/gpu=4.0\")");
    if (weights.IsScalar()) {
      parsed = ParseTresBillingWeights(weights.Scalar());
    } else if (weights.IsMap()) {
      std::map<std::string, std::string> entries;
      bool scalars = true;
      for (const auto& kv : weights) scalars = scalars && kv.first.IsScalar() && kv.second.IsScalar();
      if (scalars) {
        for (const auto& kv : weights) entries[kv.first.Scalar()] = kv.second.Scalar();
        parsed = ParseTresBillingWeights(entries);
      }
    }
    if (parsed.ok()) c.tres_billing_weights = *parsed;
    else queue.KeyError("tresBillingWeights", std::string(parsed.status().message()));
  }
  queue.Read("usageChargeSeconds", &c.usage_charge_seconds);
  if (c.usage_charge_seconds < 1 || c.usage_charge_seconds > 86400) {
    queue.KeyError("usageChargeSeconds", "must be 1 to 86400 (seconds between two charges of running work)");
  }
  queue.Read("usageConfigMap", &c.usage_config_map);
  // A ConfigMap's name is a DNS subdomain.
  if (c.usage_config_map.size() > 253 ||
      c.usage_config_map.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") != std::string::npos) {
    queue.KeyError("usageConfigMap", absl::StrCat("\"", c.usage_config_map,
                                                  "\" is not a ConfigMap name (lower-case letters, digits, '-', '.'; "
                                                  "\"\" keeps usage in memory only)"));
  }
}

void ParseQueue(MapReader queue, std::vector<std::string>* errors, QueueConfig& c) {
  ParseQueueScalars(queue, c);
  ParseQosList(queue, errors, c.qos);
  queue.Read("usageHalfLifeSeconds", &c.usage_half_life_seconds);
  ParseUsage(queue, c);
  // Issue 24 M4: Slurm's OverTimeLimit for pods.
  queue.Read("overTimeLimitSeconds", &c.over_time_limit_seconds);
  queue.Read("topologyLabels", &c.topology_labels);
  for (const std::string& label : c.topology_labels) {
    if (label.empty() || label.size() > 317 || label.find_first_of(" =,\t") != std::string::npos)
      queue.KeyError("topologyLabels", absl::StrCat("\"", label, "\" is not a node label key"));
  }
  if (c.over_time_limit_seconds < 0) queue.KeyError("overTimeLimitSeconds", "must be 0 or more");
  RefuseLongerThanACentury(queue, "overTimeLimitSeconds", c.over_time_limit_seconds);
  if (c.usage_half_life_seconds < 1) queue.KeyError("usageHalfLifeSeconds", "must be at least 1");
  RefuseLongerThanACentury(queue, "usageHalfLifeSeconds", c.usage_half_life_seconds);
  queue.Read("maxAgeSeconds", &c.max_age_seconds);
  queue.Read("starvationBoundSeconds", &c.starvation_bound_seconds);
  queue.Read("starvationBoundTimeLimits", &c.starvation_bound_time_limits);
  queue.Read("starvationReservationsPerCycle", &c.starvation_reservations_per_cycle);
  queue.Read("starvationRemedy", &c.starvation_remedy);
  if (!queue::StarvationRemedyNamed(c.starvation_remedy).has_value()) {
    queue.KeyError("starvationRemedy",
                   absl::StrCat("is \"", c.starvation_remedy, "\"; expected reserve, front or front-reserve"));
  }
  queue.Read("starvationBoundWidthScale", &c.starvation_bound_width_scale);
  queue.Read("starvingOrder", &c.starving_order);
  if (!(c.starvation_bound_width_scale >= 0 && c.starvation_bound_width_scale <= 1)) {
    queue.KeyError("starvationBoundWidthScale", "must be 0 (off) to 1 (the fraction of the bounds taken off per share of the pool asked)");
  }
  if (!queue::StarvingOrderNamed(c.starving_order).has_value()) {
    queue.KeyError("starvingOrder", absl::StrCat("is \"", c.starving_order, "\"; expected oldest or first-starved"));
  }
  if (c.starvation_remedy == "reserve" && (c.starvation_bound_width_scale > 0 || c.starving_order != "oldest")) {
    queue.KeyError(c.starvation_bound_width_scale > 0 ? "starvationBoundWidthScale" : "starvingOrder",
                   "acts on the front of the queue: needs starvationRemedy front or front-reserve");
  }
  if (c.starvation_reservations_per_cycle < 1 || c.starvation_reservations_per_cycle > 1'000'000) {
    queue.KeyError("starvationReservationsPerCycle", "must be 1 to 1000000");
  }
  if (c.starvation_bound_time_limits < 0 || c.starvation_bound_time_limits > 1e6) {
    queue.KeyError("starvationBoundTimeLimits", "must be 0 (off) to 1000000 (multiples of a workload's time limit)");
  }
  if (c.max_age_seconds < 1) queue.KeyError("maxAgeSeconds", "must be at least 1 (the age factor reaches 1 after this long)");
  if (c.starvation_bound_seconds < 1) {
    queue.KeyError("starvationBoundSeconds", "must be at least 1 (a workload pending this long gets a reservation; "
                                             "the bound cannot be switched off)");
  }
  RefuseLongerThanACentury(queue, "maxAgeSeconds", c.max_age_seconds);
  RefuseLongerThanACentury(queue, "starvationBoundSeconds", c.starvation_bound_seconds);
  ParseAccounts(queue, errors, c.accounts);
  ParseQueuePreemption(queue.Child("preemption"), c.preemption);
  std::set<std::string> qos_names, namespaces;
  for (const QosConfig& q : c.qos) qos_names.insert(q.name);
  ForEachListEntry(queue, "namespacePolicies", errors, [&](MapReader& p) {
    c.namespace_policies.push_back(ParseNamespacePolicy(p, qos_names, namespaces));
  });
  queue.RefuseUnknown();
}

void ParseServer(MapReader server, ServerConfig& c) {
  server.Read("grpcAddress", &c.grpc_address);
  server.Read("metricsAddress", &c.metrics_address);
  server.Read("adminTokenFile", &c.admin_token_file);
  server.Read("healthCycleAgeSeconds", &c.health_cycle_age_seconds);
  server.Read("tlsCertFile", &c.tls_cert_file);
  server.Read("tlsKeyFile", &c.tls_key_file);
  server.Read("allowInsecureAdminToken", &c.allow_insecure_admin_token);
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) {
    server.KeyError(c.tls_cert_file.empty() ? "tlsKeyFile" : "tlsCertFile",
                    "is set without its pair: TLS needs both server.tlsCertFile and server.tlsKeyFile");
  }
  // The loop wakes at least every 5 s; below 10 s a slow but healthy cycle would look stuck.
  if (c.health_cycle_age_seconds < 10) server.KeyError("healthCycleAgeSeconds", "must be at least 10");
  RefuseLongerThanACentury(server, "healthCycleAgeSeconds", c.health_cycle_age_seconds);
  if (absl::Status s = CheckGrpcExposure(c); !s.ok()) server.KeyError("grpcAddress", std::string(s.message()));
  if (absl::Status s = CheckAdminTokenTransport(c); !s.ok()) {
    server.KeyError("adminTokenFile", std::string(s.message()));
  }
  server.RefuseUnknown();
}

void ParseSharing(MapReader sharing, std::vector<std::string>* errors, SharingConfig& c) {
  sharing.Read("onLostMirror", &c.on_lost_mirror);
  if (c.on_lost_mirror != "remake" && c.on_lost_mirror != "evict")
    sharing.KeyError("onLostMirror", absl::StrCat("is \"", c.on_lost_mirror, "\"; expected remake or evict"));
  // Issue 25 tenancy: each tenant named once, each namespace and account in one tenant.
  std::set<std::string> names;
  std::map<std::string, std::string> namespace_of, account_of;
  ForEachListEntry(sharing, "tenants", errors, [&](MapReader& t) {
    TenantConfig tc;
    t.Read("name", &tc.name);
    t.Read("namespaces", &tc.namespaces);
    t.Read("accounts", &tc.accounts);
    if (tc.name.empty()) t.KeyError("name", "is required");
    else if (!names.insert(tc.name).second) t.KeyError("name", absl::StrCat("\"", tc.name, "\" is defined twice"));
    for (const std::string& ns : tc.namespaces) {
      auto [it, added] = namespace_of.emplace(ns, tc.name);
      if (!added) t.KeyError("namespaces", absl::StrCat("\"", ns, "\" is already in tenant \"", it->second, "\""));
    }
    for (const std::string& a : tc.accounts) {
      auto [it, added] = account_of.emplace(a, tc.name);
      if (!added) t.KeyError("accounts", absl::StrCat("\"", a, "\" is already in tenant \"", it->second, "\""));
    }
    t.RefuseUnknown();
    c.tenants.push_back(std::move(tc));
  });
  sharing.RefuseUnknown();
}

void ParseLeaderElection(MapReader le, LeaderElectionConfig& c) {
  le.Read("enabled", &c.enabled);
  le.Read("namespace", &c.namespace_);
  le.Read("leaseName", &c.lease_name);
  le.Read("leaseDurationSeconds", &c.lease_duration_seconds);
  if (c.lease_duration_seconds < 2) le.KeyError("leaseDurationSeconds", "must be at least 2");
  RefuseLongerThanACentury(le, "leaseDurationSeconds", c.lease_duration_seconds);
  le.RefuseUnknown();
}

// apiVersion and kind first: a file of another version or kind is not read further.
void ParseHeader(MapReader& top, const std::vector<std::string>& errors) {
  std::string api_version, kind;
  top.Read("apiVersion", &api_version);
  top.Read("kind", &kind);
  if (errors.empty() && api_version != kConfigApiVersion) {
    top.KeyError("apiVersion", absl::StrCat("is \"", api_version, "\"; this build reads \"",
                                            kConfigApiVersion, "\""));
  }
  if (errors.empty() && kind != kConfigKind) {
    top.KeyError("kind", absl::StrCat("is \"", kind, "\"; expected \"", kConfigKind, "\""));
  }
}

absl::StatusOr<Config> ParseConfigMayThrow(const std::string& yaml_text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": line ", e.mark.line + 1, ", column ", e.mark.column + 1,
                     ": not valid YAML: ", e.msg));
  }
  if (!root || root.IsNull()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": the file is empty; expected apiVersion: ",
                                                   kConfigApiVersion, " and kind: ", kConfigKind));
  }
  std::vector<std::string> errors;
  Config c;
  MapReader top(root, "", &errors);
  ParseHeader(top, errors);
  top.Read("schedulerName", &c.scheduler_name);
  top.Read("poolLabel", &c.pool_label);
  ParseKubernetes(top.Child("kubernetes"), c.kubernetes);
  ParseSlurm(top.Child("slurm"), c.slurm);
  ParseQueue(top.Child("queue"), &errors, c.queue);
  CheckSlurmQosNames(top.Child("slurm"), c.slurm, c.queue.qos);
  ParseServer(top.Child("server"), c.server);
  ParseLeaderElection(top.Child("leaderElection"), c.leader_election);
  ParseSharing(top.Child("sharing"), &errors, c.sharing);
  top.RefuseUnknown();
  if (c.scheduler_name.empty()) errors.push_back("schedulerName: must not be empty");
  if (!errors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": invalid configuration:\n  ", absl::StrJoin(errors, "\n  ")));
  }
  return c;
}
}  // namespace

absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source) {
  // Every conversion above is checked; this is the edge where a yaml-cpp exception we did not
  // foresee becomes an error instead of terminating the daemon.
  try {
    return ParseConfigMayThrow(yaml_text, source);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": line ", e.mark.line + 1, ": invalid configuration: ", e.msg));
  }
}

absl::Status CheckGrpcExposure(const ServerConfig& server) {
  // Beyond loopback, anyone on the network reaches the API: only with admin calls behind a token
  // (the chart listens on 0.0.0.0 only when admin.tokenSecret is set).
  if (!server.admin_token_file.empty() || server.grpc_address.rfind("unix:", 0) == 0 ||
      IsLoopbackHost(AddressHost(server.grpc_address))) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("is \"", server.grpc_address,
                                                 "\": listening beyond loopback needs server.adminTokenFile "
                                                 "(admin calls then require its bearer token)"));
}

absl::Status CheckAdminTokenTransport(const ServerConfig& server) {
  if (server.admin_token_file.empty() || !server.tls_cert_file.empty() || server.allow_insecure_admin_token ||
      server.grpc_address.rfind("unix:", 0) == 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      "is set but the gRPC API has no TLS: the admin token would cross the network in clear; set "
      "server.tlsCertFile and server.tlsKeyFile (the chart: tls.secretName), listen on a unix: socket, or, "
      "for a local test only, server.allowInsecureAdminToken: true");
}

absl::StatusOr<Config> LoadConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot read the configuration file: ",
                                            std::strerror(errno)));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseConfig(ss.str(), path);
}

// Issue 25 tenancy.
std::string TenantOfNamespace(const SharingConfig& sharing, const std::string& namespace_) {
  for (const TenantConfig& t : sharing.tenants) {
    if (std::find(t.namespaces.begin(), t.namespaces.end(), namespace_) != t.namespaces.end()) return t.name;
  }
  return absl::StrCat("namespace/", namespace_);
}

std::string TenantOfAccount(const SharingConfig& sharing, const std::string& account) {
  for (const TenantConfig& t : sharing.tenants) {
    if (std::find(t.accounts.begin(), t.accounts.end(), account) != t.accounts.end()) return t.name;
  }
  return absl::StrCat("account/", account);
}

std::string PlaceholderAccountOf(const SharingConfig& sharing, const std::string& namespace_) {
  for (const TenantConfig& t : sharing.tenants) {
    if (std::find(t.namespaces.begin(), t.namespaces.end(), namespace_) != t.namespaces.end())
      return t.accounts.empty() ? "" : t.accounts.front();
  }
  return "";
}

}  // namespace onequeue::scheduler

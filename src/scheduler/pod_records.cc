// The records the scheduler keeps of Kubernetes objects (pods, nodes, budgets), read once per
// object version by the informer side, and the parsing of the values users write on them (time
// limits, timestamps). Split from snapshot_builder.cc, which turns these records into a snapshot.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "scheduler/pod_placement.h"
#include "scheduler/pod_preferences.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {
namespace {
bool IsReady(const k8s::Node& node) {
  for (const auto& c : node.conditions) {
    if (c.type == "Ready") return c.status == "True";
  }
  return false;  // a node that never reported Ready runs nothing new
}

queue::TaintEffect ToEffect(const std::string& effect) {
  if (effect == "NoExecute") return queue::TaintEffect::kNoExecute;
  if (effect == "PreferNoSchedule") return queue::TaintEffect::kPreferNoSchedule;
  return queue::TaintEffect::kNoSchedule;
}

// kube-scheduler's NodePorts: the ports of the containers and of the sidecars (restartable init
// containers), which run for the pod's whole life. One name per protocol and port, whatever the
// hostIP: pods on one port but different specific addresses are kept apart too (stricter than
// kube-scheduler, never looser).
std::vector<std::string> HostPortNames(const k8s::Pod& pod) {
  std::vector<std::string> out;
  auto add = [&out](const k8s::Container& c) {
    for (const k8s::HostPort& h : c.host_ports) out.push_back(absl::StrCat(kHostPortResourcePrefix, h.protocol, "/", h.port));
  };
  for (const auto& c : pod.init_containers) {
    if (c.restart_policy == "Always") add(c);
  }
  for (const auto& c : pod.containers) add(c);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// kube-scheduler's VolumeRestrictions for in-tree disks (kInlineDiskResourcePrefix): per disk
// name the largest share any of the pod's volumes takes (a pod never conflicts with itself).
std::map<std::string, int64_t> InlineDiskShares(const k8s::Pod& pod) {
  using Kind = k8s::InlineDisk::Kind;
  std::map<std::string, int64_t> out;
  for (const k8s::InlineDisk& d : pod.inline_disks) {
    const bool writer = !d.read_only || d.kind == Kind::kAwsElasticBlockStore;
    const int64_t share = writer ? kInlineDiskShares : 1;
    std::vector<std::string> names;
    switch (d.kind) {
      case Kind::kGcePersistentDisk: names.push_back(absl::StrCat("gce/", d.id)); break;
      case Kind::kAwsElasticBlockStore: names.push_back(absl::StrCat("aws/", d.id)); break;
      case Kind::kIscsi: names.push_back(absl::StrCat("iscsi/", d.id)); break;
      case Kind::kRbd:
        for (const std::string& m : d.monitors) names.push_back(absl::StrCat("rbd/", m, "/", d.id));
        break;
    }
    for (const std::string& n : names) {
      int64_t& s = out[absl::StrCat(kInlineDiskResourcePrefix, n)];
      s = std::max(s, share);
    }
  }
  return out;
}

queue::LabelRequirement ToRequirement(const k8s::LabelSelectorRequirement& req) {
  using Op = queue::LabelRequirement::Operator;
  queue::LabelRequirement r;
  r.key = req.key;
  r.values = req.values;
  if (req.op == "In") r.op = Op::kIn;
  else if (req.op == "NotIn") r.op = Op::kNotIn;
  else if (req.op == "Exists") r.op = Op::kExists;
  else if (req.op == "DoesNotExist") r.op = Op::kDoesNotExist;
  else if (req.op == "Gt") r.op = Op::kGt;
  else if (req.op == "Lt") r.op = Op::kLt;
  else {
    // The API server admits no other operator; should one appear, it matches no node.
    r.op = Op::kIn;
    r.values.clear();
  }
  return r;
}

// Required node affinity: every nodeSelectorTerm, ORed (kube-scheduler's NodeAffinity).
std::vector<queue::NodeSelectorTerm> ToNodeAffinityTerms(const std::vector<k8s::NodeSelectorTerm>& terms) {
  std::vector<queue::NodeSelectorTerm> out;
  out.reserve(terms.size());
  for (const auto& t : terms) {
    queue::NodeSelectorTerm& q = out.emplace_back();
    for (const auto& r : t.match_expressions) q.match_expressions.push_back(ToRequirement(r));
    for (const auto& r : t.match_fields) q.match_fields.push_back(ToRequirement(r));
  }
  return out;
}

queue::Eligibility ToEligibility(const k8s::Pod& pod) {
  queue::Eligibility e;
  e.node_selector.insert(pod.node_selector.begin(), pod.node_selector.end());
  e.node_affinity_terms = ToNodeAffinityTerms(pod.required_node_affinity);
  for (const auto& t : pod.tolerations) {
    queue::Toleration q;
    q.key = t.key;
    q.value = t.value;
    q.op = t.op == "Exists" ? queue::Toleration::Operator::kExists : queue::Toleration::Operator::kEqual;
    if (!t.effect.empty()) q.effect = ToEffect(t.effect);
    e.tolerations.push_back(std::move(q));
  }
  return e;
}

std::string Annotation(const k8s::Pod& pod, const char* key) {
  auto it = pod.metadata.annotations.find(key);
  return it == pod.metadata.annotations.end() ? std::string() : it->second;
}

}  // namespace

std::vector<queue::NodeSelectorTerm> NodeAffinityTermsOf(const std::vector<k8s::NodeSelectorTerm>& terms) {
  return ToNodeAffinityTerms(terms);
}

AdmittedAs AdmittedValues(const PodRecord& pod) {
  return {pod.qos, pod.account, pod.group, pod.group_size, pod.time_limit, pod.active_deadline_seconds};
}

absl::StatusOr<queue::Duration> ParseTimeLimit(const std::string& text) {
  const auto too_long = [&text] {
    return absl::InvalidArgumentError(absl::StrCat("time limit \"", text, "\" is longer than 100 years (",
                                                   kMaxTimeLimitSeconds, " s)"));
  };
  int64_t seconds = 0;
  if (absl::SimpleAtoi(text, &seconds)) {
    if (seconds <= 0) return absl::InvalidArgumentError(absl::StrCat("time limit \"", text, "\" must be positive"));
    if (seconds > kMaxTimeLimitSeconds) return too_long();
    return seconds;
  }
  // All digits but too big for int64 ("9223372036854775808"): ParseDuration would say no too,
  // but the reason is the size, not the form.
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) return too_long();
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "time limit \"", text, "\" is not a positive duration like 90s, 30m, 2h or 1h30m"));
  }
  // An overflowing duration ("9223372036854775808s") parses as infinite.
  if (d == absl::InfiniteDuration() || d > absl::Seconds(kMaxTimeLimitSeconds)) return too_long();
  return absl::ToInt64Seconds(d);
}

queue::Time ParseTimestamp(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  if (rfc3339.empty() || !absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) return 0;
  return absl::ToUnixSeconds(t);
}

PodRecord PodRecord::From(const k8s::Pod& pod) {
  PodRecord r;
  r.key = pod.metadata.Key();
  r.namespace_ = pod.metadata.namespace_;
  r.name = pod.metadata.name;
  r.uid = pod.metadata.uid;
  r.node_name = pod.node_name;
  r.scheduler_name = pod.scheduler_name;
  r.terminal = pod.phase == "Succeeded" || pod.phase == "Failed";
  r.deleting = !pod.metadata.deletion_timestamp.empty();
  for (const auto& o : pod.metadata.owner_references) r.daemon = r.daemon || (o.controller && o.kind == "DaemonSet");
  r.qos = Annotation(pod, kQosAnnotation);
  r.account = Annotation(pod, kAccountAnnotation);
  r.time_limit = Annotation(pod, kTimeLimitAnnotation);
  r.group = Annotation(pod, kGroupAnnotation);
  r.group_size = Annotation(pod, kGroupSizeAnnotation);
  r.priority = pod.priority;
  r.created = ParseTimestamp(pod.metadata.creation_timestamp);
  r.bound = r.created;
  for (const auto& c : pod.conditions) {
    if (c.type == "PodScheduled" && c.status == "True") {
      if (const queue::Time t = ParseTimestamp(c.last_transition_time); t > 0) r.bound = t;
    }
    // `oq hold` writes it to the pod's status, which the pod's owner cannot edit (issue 24).
    if (c.type == kHeldCondition && c.status == "True") r.hold = c.message.empty() ? "held" : c.message;
  }
  r.active_deadline_seconds = pod.active_deadline_seconds;
  r.requests = k8s::ComputePodRequests(pod);
  // Host ports as resources of one unit per node (NodePorts), so the planner keeps two pods
  // asking one port apart within a cycle and over time as it does for any other resource.
  for (std::string& port : HostPortNames(pod)) r.requests[std::move(port)] = k8s::Quantity::FromInt(1);
  for (const auto& [disk, share] : InlineDiskShares(pod)) r.requests[disk] = k8s::Quantity::FromInt(share);
  r.gated = !pod.scheduling_gates.empty();
  r.may_preempt = pod.preemption_policy != "Never";
  r.eligibility = ToEligibility(pod);
  for (const auto& t : pod.preferred_node_affinity) {
    if (t.weight != 0) r.preferred_node_affinity.emplace_back(t.weight, ToNodeAffinityTerms({t.preference}).front());
  }
  r.labels = pod.metadata.labels;
  ReadInterPodRules(pod, r);
  ReadPodPreferences(pod, r);
  r.claims = pod.volume_claims;
  for (size_t i = 0; i < pod.resource_claim_objects.size(); ++i) {
    const std::string& object = pod.resource_claim_objects[i];
    r.resource_claims.push_back(object.empty() ? "" : absl::StrCat(pod.metadata.namespace_, "/", object));
  }
  if (!pod.resource_claims.empty()) {  // DynamicResources: nothing would be allocated (dra_pods.h lifts it)
    r.unsupported_placement = absl::StrCat("spec.resourceClaims (", absl::StrJoin(pod.resource_claims, ", "),
                                           "): DynamicResources claim allocation is not supported yet");
  }
  return r;
}

NodeRecord NodeRecord::From(const k8s::Node& n) {
  NodeRecord r;
  r.name = n.metadata.name;
  r.labels.insert(n.metadata.labels.begin(), n.metadata.labels.end());
  for (const auto& t : n.taints) {
    if (t.key == kOwnerTaintKey) continue;  // onequeue's own mark, for other schedulers
    r.taints.push_back({t.key, t.value, ToEffect(t.effect)});
  }
  r.allocatable = n.allocatable;
  auto owner = n.metadata.annotations.find(kOwnerAnnotation);
  r.owner = owner == n.metadata.annotations.end() ? "" : owner->second;
  r.resource_version = n.metadata.resource_version;
  r.schedulable = !n.unschedulable && IsReady(n) && n.metadata.deletion_timestamp.empty();
  return r;
}

BudgetRecord BudgetRecord::From(const k8s::PodDisruptionBudget& pdb) {
  BudgetRecord r;
  r.key = pdb.metadata.Key();
  r.namespace_ = pdb.metadata.namespace_;
  r.name = pdb.metadata.name;
  r.selector = pdb.selector;
  const bool status_current = pdb.observed_generation >= pdb.metadata.generation;
  r.disruptions_allowed = status_current ? std::max(0, pdb.disruptions_allowed) : 0;
  return r;
}

KubeState ToKubeState(const std::vector<k8s::Node>& nodes, const std::vector<k8s::Pod>& pods,
                      const std::vector<k8s::PodDisruptionBudget>& budgets) {
  KubeState state;
  for (const auto& n : nodes) state.nodes.push_back(std::make_shared<const NodeRecord>(NodeRecord::From(n)));
  for (const auto& p : pods) state.pods.push_back(std::make_shared<const PodRecord>(PodRecord::From(p)));
  for (const auto& b : budgets) state.budgets.push_back(std::make_shared<const BudgetRecord>(BudgetRecord::From(b)));
  return state;
}

}  // namespace onequeue::scheduler

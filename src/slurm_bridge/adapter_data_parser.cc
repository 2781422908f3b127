// v0.0.39 .. v0.0.45 (Slurm 23.02 .. 26.05, the data_parser plugins). Differences handled here:
//  - partitions are nested objects (nodes.configured, priority.tier, partition.state[], ...);
//  - numbers in requests are {"set","infinite","number"} objects;
//  - from v0.0.40 states, "exclusive"/"shared" and csv lists are arrays; v0.0.39 (23.02) is the
//    one version whose spec is a runtime template: its request shapes follow v0.0.40 except where
//    noted, and were not verified against a live 23.02 (docs/slurm_bridge.md).
//  - node updates exist (POST node/{name}) in every version here;
//  - v0.0.45 (26.05, spec: fixtures/v0.0.45/openapi-v3.json, from the live server) adds GET
//    job/{id}/requeue; its job, node and partition objects keep every field read here (it drops
//    `power`, adds e.g. container_type, memory_update_*, partition flags/preempt_mode).
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "slurm_bridge/adapter_internal.h"
#include "slurm_bridge/json_fields.h"

namespace onequeue::slurm::internal {
namespace {
namespace jf = json_fields;
using Json = nlohmann::json;

const Json& Child(const Json& obj, const char* key) {
  static const Json* const kEmpty = new Json(Json::object());  // immutable, never freed
  const Json* v = jf::Member(obj, key);
  return (v != nullptr && v->is_object()) ? *v : *kEmpty;
}

bool ReadPartitionDataParser(const Json& p, SlurmPartition& out) {
  out.name = jf::String(p, "name");
  if (out.name.empty()) return false;
  const Json& nodes = Child(p, "nodes");
  out.nodes = ExpandOrEmpty(jf::String(nodes, "configured"));
  out.total_nodes = static_cast<uint32_t>(std::max<int64_t>(0, jf::Number(nodes, "total").value_or(0)));
  out.total_cpus = static_cast<uint32_t>(std::max<int64_t>(0, jf::Number(Child(p, "cpus"), "total").value_or(0)));
  const Json& priority = Child(p, "priority");
  out.priority_tier = static_cast<int>(jf::Number(priority, "tier").value_or(0));
  out.priority_job_factor = static_cast<int>(jf::Number(priority, "job_factor").value_or(0));
  std::vector<std::string> state = jf::StateTokens(Child(p, "partition"), "state");
  out.state = state.empty() ? "" : state.front();
  const jf::SlurmNumber max_time = jf::Number(Child(p, "maximums"), "time");
  if (max_time.has_value() && max_time.value >= 0) out.max_time = absl::Minutes(max_time.value);
  const jf::SlurmNumber def_time = jf::Number(Child(p, "defaults"), "time");
  if (def_time.has_value() && def_time.value >= 0) out.default_time = absl::Minutes(def_time.value);
  // Issue 29: node limits per job (maximums.nodes unset or infinite: UNLIMITED), and PreemptMode,
  // which only v0.0.45 reports ("DISABLED" is slurm.conf's OFF; [] the cluster's PreemptMode).
  const jf::SlurmNumber max_nodes = jf::Number(Child(p, "maximums"), "nodes");
  if (max_nodes.has_value() && max_nodes.value >= 0) out.max_nodes = static_cast<uint32_t>(max_nodes.value);
  const jf::SlurmNumber min_nodes = jf::Number(Child(p, "minimums"), "nodes");
  if (min_nodes.has_value() && min_nodes.value > 0) out.min_nodes = static_cast<uint32_t>(min_nodes.value);
  for (const std::string& m : jf::StringList(p, "preempt_mode")) {
    std::string mode = absl::AsciiStrToUpper(m);
    out.preempt_mode.push_back(mode == "DISABLED" ? "OFF" : mode);
  }
  return true;
}

Json SetNumber(int64_t n) { return Json{{"set", true}, {"infinite", false}, {"number", n}}; }

class DataParserAdapter : public VersionAdapter {
 public:
  explicit DataParserAdapter(ApiVersion v) : version_(v) {}
  ApiVersion version() const override { return version_; }

  absl::StatusOr<JobListing> ParseJobs(const Json& body) const override {
    return ReadListing<SlurmJob>(body, "jobs", ReadJob);
  }
  absl::StatusOr<NodeListing> ParseNodes(const Json& body) const override {
    return ReadListing<SlurmNode>(body, "nodes", ReadNode);
  }
  absl::StatusOr<PartitionListing> ParsePartitions(const Json& body) const override {
    return ReadListing<SlurmPartition>(body, "partitions", ReadPartitionDataParser);
  }

  Json SubmitBody(const JobSubmission& s) const override {
    const bool arrays = version_ >= ApiVersion::kV0040;
    Json job = {{"name", s.name},
                {"current_working_directory", s.working_directory},
                {"standard_output", s.standard_output},
                {"requeue", s.requeue},
                {"script", s.script}};
    Json env = Json::array();
    for (const auto& [k, v] : s.environment) env.push_back(absl::StrCat(k, "=", v));
    job["environment"] = env;
    if (!s.partition.empty()) job["partition"] = s.partition;
    if (!s.nodelist.empty()) job["required_nodes"] = arrays ? Json::array({s.nodelist}) : Json(s.nodelist);
    // Whole-node allocation: "shared": ["none"] is what --exclusive sets in every data_parser
    // version; "exclusive" was deprecated in v0.0.41 and removed in v0.0.42.
    if (s.exclusive) job["shared"] = arrays ? Json::array({"none"}) : Json("none");
    if (!s.comment.empty()) job["comment"] = s.comment;
    if (!s.account.empty()) job["account"] = s.account;
    if (s.time_limit_minutes == kTimeLimitUnlimited) {
      job["time_limit"] = Json{{"set", true}, {"infinite", true}, {"number", 0}};
    } else if (s.time_limit_minutes > 0) {
      job["time_limit"] = SetNumber(s.time_limit_minutes);
    }
    if (s.node_count > 0) job["minimum_nodes"] = s.node_count;
    if (s.cpus > 0) job["tasks"] = s.cpus;
    if (s.memory_per_node_mb > 0) job["memory_per_node"] = SetNumber(s.memory_per_node_mb);
    if (!s.gres_per_node.empty()) {
      std::vector<std::string> tres;
      for (const auto& [name, count] : s.gres_per_node) tres.push_back(absl::StrCat("gres/", name, ":", count));
      job["tres_per_node"] = absl::StrJoin(tres, ",");
    }
    if (s.hold) job["hold"] = true;
    Json body = {{"job", job}};
    if (version_ <= ApiVersion::kV0040) body["script"] = s.script;  // top-level script until v0.0.40
    return body;
  }
  Json BeginAtBody(absl::Time at, absl::Time now) const override {
    return Json{{"begin_time", SetNumber(absl::ToUnixSeconds(std::max(at, now)))}};
  }
  Json HoldBody(bool hold) const override { return Json{{"hold", hold}}; }
  // job_desc_msg, as for a submit: priority is a uint32 no-val object, required_nodes a csv
  // string (an array from v0.0.40, a plain string in 23.02's v0.0.39).
  Json JobUpdateBody(const JobUpdate& u, absl::Time now) const override {
    Json body = Json::object();
    if (u.comment) body["comment"] = *u.comment;
    if (u.admin_comment) body["admin_comment"] = *u.admin_comment;
    if (u.hold) body["hold"] = *u.hold;
    if (u.priority) body["priority"] = SetNumber(*u.priority);
    if (u.required_nodes) {
      body["required_nodes"] = version_ >= ApiVersion::kV0040 ? Json(*u.required_nodes)
                                                               : Json(absl::StrJoin(*u.required_nodes, ","));
    }
    if (u.begin_now) body.update(BeginAtBody(now, now));
    return body;
  }
  bool SupportsNodeUpdate() const override { return true; }
  bool SupportsRequeue() const override { return version_ >= ApiVersion::kV0045; }
  Json NodeUpdateBody(const NodeUpdate& u) const override {
    const bool arrays = version_ >= ApiVersion::kV0040;
    const char* state = u.kind == NodeUpdate::Kind::kDrain ? "DRAIN" : "RESUME";
    Json body = {{"state", arrays ? Json::array({state}) : Json(state)}};
    if (!u.reason.empty()) body["reason"] = u.reason;
    return body;
  }

 private:
  ApiVersion version_;
};
}  // namespace

std::unique_ptr<VersionAdapter> MakeDataParserAdapter(ApiVersion v) {
  return std::make_unique<DataParserAdapter>(v);
}

}  // namespace onequeue::slurm::internal

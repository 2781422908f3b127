// v0.0.38 (Slurm 22.05, the openapi/v0.0.38 plugin): flat JSON, plain numbers with 32-bit
// sentinels, string states, no node update call. The request keys below were verified against a
// live 22.05.8 slurmrestd (see shared/reference/slurm-local-cluster.md): the parser refuses
// "required_nodes" (use "nodelist"), accepts "exclusive":"exclusive" but not "true", and wants
// begin_time as a time string ("now"), not an epoch number. Job updates (POST job/{id}) take the
// same keys: "nodelist" sets ReqNodeList ("" clears it), "priority" a plain number.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "slurm_bridge/adapter_internal.h"
#include "slurm_bridge/json_fields.h"

namespace onequeue::slurm::internal {
namespace {
namespace jf = json_fields;
using Json = nlohmann::json;

bool ReadPartition38(const Json& p, SlurmPartition& out) {
  out.name = jf::String(p, "name");
  if (out.name.empty()) return false;
  out.nodes = ExpandOrEmpty(jf::String(p, "nodes"));
  out.total_nodes = static_cast<uint32_t>(std::max<int64_t>(0, jf::Number(p, "total_nodes").value_or(0)));
  out.total_cpus = static_cast<uint32_t>(std::max<int64_t>(0, jf::Number(p, "total_cpus").value_or(0)));
  out.priority_tier = static_cast<int>(jf::Number(p, "priority_tier").value_or(0));
  out.priority_job_factor = static_cast<int>(jf::Number(p, "priority_job_factor").value_or(0));
  out.state = jf::String(p, "state");
  const jf::SlurmNumber max_time = jf::Number(p, "max_time_limit", true);
  if (max_time.has_value() && max_time.value >= 0) out.max_time = absl::Minutes(max_time.value);
  const jf::SlurmNumber def_time = jf::Number(p, "default_time_limit", true);
  if (def_time.has_value() && def_time.value >= 0) out.default_time = absl::Minutes(def_time.value);
  // Issue 29: node limits per job (-1 / 0xFFFFFFFF: UNLIMITED). preemption_mode is not read: on
  // 22.05 it is not the partition's PreemptMode (docs/lending.md "Partition limits").
  const jf::SlurmNumber max_nodes = jf::Number(p, "maximum_nodes_per_job", true);
  if (max_nodes.has_value() && max_nodes.value >= 0) out.max_nodes = static_cast<uint32_t>(max_nodes.value);
  const jf::SlurmNumber min_nodes = jf::Number(p, "min_nodes_per_job", true);
  if (min_nodes.has_value() && min_nodes.value > 0) out.min_nodes = static_cast<uint32_t>(min_nodes.value);
  return true;
}

class V0038Adapter : public VersionAdapter {
 public:
  ApiVersion version() const override { return ApiVersion::kV0038; }

  absl::StatusOr<JobListing> ParseJobs(const Json& body) const override {
    return ReadListing<SlurmJob>(body, "jobs", ReadJob);
  }
  absl::StatusOr<NodeListing> ParseNodes(const Json& body) const override {
    return ReadListing<SlurmNode>(body, "nodes", ReadNode);
  }
  absl::StatusOr<PartitionListing> ParsePartitions(const Json& body) const override {
    return ReadListing<SlurmPartition>(body, "partitions", ReadPartition38);
  }

  Json SubmitBody(const JobSubmission& s) const override {
    Json job = {{"name", s.name},
                {"current_working_directory", s.working_directory},
                {"standard_output", s.standard_output},
                {"requeue", s.requeue}};
    Json env = Json::object();
    for (const auto& [k, v] : s.environment) env[k] = v;
    job["environment"] = env;
    if (!s.partition.empty()) job["partition"] = s.partition;
    if (!s.nodelist.empty()) job["nodelist"] = s.nodelist;
    if (s.exclusive) job["exclusive"] = "exclusive";
    if (!s.comment.empty()) job["comment"] = s.comment;
    if (!s.account.empty()) job["account"] = s.account;
    // kTimeLimitUnlimited is Slurm's INFINITE (0xFFFFFFFF), as 22.05 reads this uint32.
    if (s.time_limit_minutes > 0) job["time_limit"] = s.time_limit_minutes;
    if (s.node_count > 0) job["nodes"] = Json::array({s.node_count, s.node_count});
    if (s.cpus > 0) job["tasks"] = s.cpus;
    if (s.memory_per_node_mb > 0) job["memory_per_node"] = s.memory_per_node_mb;
    if (!s.gres_per_node.empty()) {
      std::vector<std::string> gres;
      for (const auto& [name, count] : s.gres_per_node) gres.push_back(absl::StrCat(name, ":", count));
      job["gres"] = absl::StrJoin(gres, ",");
    }
    if (s.hold) job["hold"] = true;
    return Json{{"script", s.script}, {"job", job}};
  }
  // 22.05 refuses epoch numbers here; Slurm's time syntax "now+N" (seconds) is accepted.
  Json BeginAtBody(absl::Time at, absl::Time now) const override {
    const int64_t delay = absl::ToInt64Seconds(absl::Ceil(at - now, absl::Seconds(1)));
    return Json{{"begin_time", delay > 0 ? absl::StrCat("now+", delay) : std::string("now")}};
  }
  Json HoldBody(bool hold) const override { return Json{{"hold", hold}}; }
  Json JobUpdateBody(const JobUpdate& u, absl::Time now) const override {
    Json body = Json::object();
    if (u.comment) body["comment"] = *u.comment;
    if (u.hold) body["hold"] = *u.hold;
    if (u.priority) body["priority"] = *u.priority;
    if (u.required_nodes) body["nodelist"] = absl::StrJoin(*u.required_nodes, ",");
    if (u.begin_now) body.update(BeginAtBody(now, now));
    return body;
  }
  bool SupportsNodeUpdate() const override { return false; }
  bool SupportsAdminComment() const override { return false; }
  Json NodeUpdateBody(const NodeUpdate&) const override { return Json::object(); }
};
}  // namespace

std::unique_ptr<VersionAdapter> MakeV0038Adapter() { return std::make_unique<V0038Adapter>(); }

}  // namespace onequeue::slurm::internal

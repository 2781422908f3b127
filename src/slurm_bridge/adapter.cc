#include "slurm_bridge/adapter.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "slurm_bridge/adapter_internal.h"
#include "slurm_bridge/hostlist.h"
#include "slurm_bridge/json_fields.h"

namespace onequeue::slurm {
namespace jf = json_fields;
namespace {
constexpr char kErrnoPayload[] = "onequeue.slurm/errno";

// An entry's Slurm error number: "error_number" in most answers, "error_code" in 22.05 submit
// answers, "errno" in older ones, {"error":{"code":N}} in the `status` entries of a v0.0.40+
// cancel. 0 when there is none (22.05 uses -1 for "no number").
int ErrorNumberOf(const nlohmann::json& e) {
  int64_t n = jf::Number(e, "error_number")
                  .value_or(jf::Number(e, "error_code").value_or(jf::Number(e, "errno").value_or(0)));
  if (n == 0) {
    const nlohmann::json* inner = jf::Member(e, "error");
    if (inner != nullptr && inner->is_object()) n = jf::Number(*inner, "code").value_or(0);
  }
  return n > 0 && n < (1 << 30) ? static_cast<int>(n) : 0;
}

bool AnyErrorNumber(const nlohmann::json& body, const char* array, int number) {
  for (const nlohmann::json& e : jf::Array(body, array))
    if (ErrorNumberOf(e) == number) return true;
  return false;
}
}  // namespace

std::string VersionString(ApiVersion v) { return absl::StrCat("v0.0.", static_cast<int>(v)); }

absl::StatusOr<ApiVersion> ParseApiVersion(const std::string& s) {
  absl::string_view rest = s;
  absl::ConsumePrefix(&rest, "v");
  int minor = 0;
  if (absl::ConsumePrefix(&rest, "0.0.") && absl::SimpleAtoi(rest, &minor) && minor >= 38 && minor <= 45)
    return static_cast<ApiVersion>(minor);
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported slurmrestd API version \"", s, "\": supported are v0.0.38 to v0.0.45"));
}

std::vector<ApiVersion> SupportedVersions() {
  std::vector<ApiVersion> out;
  for (int v = 45; v >= 38; --v) out.push_back(static_cast<ApiVersion>(v));
  return out;
}

std::string VersionAdapter::Prefix() const { return absl::StrCat("/slurm/", VersionString(version()), "/"); }
std::string VersionAdapter::JobsPath(std::optional<int64_t> update_time) const {
  if (!update_time) return Prefix() + "jobs/";
  return absl::StrCat(Prefix(), "jobs/?update_time=", *update_time);
}
std::string VersionAdapter::JobPath(uint32_t job_id) const { return absl::StrCat(Prefix(), "job/", job_id); }
std::string VersionAdapter::NodesPath(std::optional<int64_t> update_time) const {
  if (!update_time) return Prefix() + "nodes/";
  return absl::StrCat(Prefix(), "nodes/?update_time=", *update_time);
}
std::string VersionAdapter::NodePath(const std::string& node) const { return Prefix() + "node/" + node; }
std::string VersionAdapter::PartitionsPath() const { return Prefix() + "partitions/"; }
std::string VersionAdapter::ReservationsPath() const { return Prefix() + "reservations/"; }
std::string VersionAdapter::SubmitPath() const { return Prefix() + "job/submit"; }
std::string VersionAdapter::PingPath() const { return Prefix() + "ping/"; }
std::string VersionAdapter::JobStatesPath() const { return Prefix() + "jobs/state/"; }
std::string VersionAdapter::RequeuePath(uint32_t job_id) const {
  return absl::StrCat(Prefix(), "job/", job_id, "/requeue");
}

bool VersionAdapter::IsUnchangedAnswer(long http_status, const nlohmann::json& body, const char* list_key,
                                       bool carried_update_time) const {
  if (http_status == 304) return true;
  if (AnyErrorNumber(body, "errors", kSlurmErrorNoChangeInData) ||
      AnyErrorNumber(body, "warnings", kSlurmErrorNoChangeInData))
    return true;
  if (!carried_update_time || version() < ApiVersion::kV0039) return false;
  if (http_status < 200 || http_status >= 300 || !jf::Array(body, "errors").empty()) return false;
  const nlohmann::json* list = jf::Member(body, list_key);
  if (list == nullptr || !list->is_array() || !list->empty()) return false;
  for (const nlohmann::json& w : jf::Array(body, "warnings")) {
    const std::string text = jf::String(w, "description");
    if (absl::StrContains(text, "changes since update_time")) return true;
  }
  // A real listing carries the time slurmctld made it; the "unchanged" answer carries 0.
  const nlohmann::json* last_update = jf::Member(body, "last_update");
  return last_update == nullptr || jf::NumberValue(*last_update).value_or(0) <= 0;
}

absl::StatusOr<SubmitResult> VersionAdapter::ParseSubmit(const nlohmann::json& body) const {
  const jf::SlurmNumber id = jf::Number(body, "job_id");
  if (!id.has_value() || id.value <= 0 || id.value > 0xFFFFFFFFll)
    return absl::InternalError("job submit answer carries no job_id");
  return SubmitResult{static_cast<uint32_t>(id.value)};
}

absl::StatusOr<ReservationListing> VersionAdapter::ParseReservations(const nlohmann::json& body) const {
  return internal::ReadListing<SlurmReservation>(body, "reservations", internal::ReadReservation);
}

absl::StatusOr<JobStateListing> VersionAdapter::ParseJobStates(const nlohmann::json& body) const {
  const nlohmann::json* jobs = jf::Member(body, "jobs");
  if (jobs == nullptr || !jobs->is_array()) return absl::InternalError("slurmrestd answer has no \"jobs\" array");
  JobStateListing out;
  std::map<uint32_t, size_t> index;  // record id -> its item
  for (const nlohmann::json& e : *jobs) {
    // "7" or "7_3" (a number too, should a version send one).
    const nlohmann::json* id = jf::Member(e, "job_id");
    std::string text = id == nullptr ? "" : id->is_string() ? id->get<std::string>() : id->is_number() ? id->dump() : "";
    uint32_t record = 0;
    std::string task;
    if (!ParseStateRecordId(text, record, task))
      return absl::InternalError(absl::StrCat("jobs/state/ lists a job without a usable job_id: ", e.dump()));
    auto [it, fresh] = index.emplace(record, out.items.size());
    if (fresh) {
      SlurmJobState s;
      s.job_id = record;
      internal::SplitJobState(jf::StateTokens(e, "state"), s.state, s.state_flags);
      s.tasks = task;
      out.items.push_back(std::move(s));
    } else if (!task.empty()) {
      absl::StrAppend(&out.items[it->second].tasks, ",", task);
    }
  }
  return out;
}

std::unique_ptr<VersionAdapter> MakeAdapter(ApiVersion v) {
  if (v == ApiVersion::kV0038) return internal::MakeV0038Adapter();
  return internal::MakeDataParserAdapter(v);
}

std::optional<int> SlurmErrorNumber(const absl::Status& s) {
  absl::optional<absl::Cord> p = s.GetPayload(kErrnoPayload);
  int n = 0;
  if (!p || !absl::SimpleAtoi(std::string(*p), &n)) return std::nullopt;
  return n;
}

bool IsBatchOnlyRefusal(const absl::Status& s) {
  if (!absl::IsFailedPrecondition(s)) return false;
  return SlurmErrorNumber(s) == kSlurmErrorBatchOnly || absl::StrContains(s.message(), "Only batch jobs are accepted");
}

absl::Status ResponseStatus(long http_status, const nlohmann::json& body, const std::string& what) {
  // The first error of the array decides the code; all of them go into the message.
  int first_errno = 0;
  std::vector<std::string> messages;
  auto add = [&](int number, std::string msg, const nlohmann::json& e) {
    if (first_errno == 0) first_errno = number;
    const std::string desc = jf::String(e, "description");
    const std::string source = jf::String(e, "source");
    if (!desc.empty()) msg = msg.empty() ? desc : absl::StrCat(msg, ": ", desc);
    if (!source.empty()) absl::StrAppend(&msg, " (", source, ")");
    if (number != 0) absl::StrAppend(&msg, " [slurm error ", number, "]");
    messages.push_back(msg.empty() ? "unspecified error" : msg);
  };
  for (const nlohmann::json& e : jf::Array(body, "errors")) add(ErrorNumberOf(e), jf::String(e, "error"), e);
  // v0.0.40+ cancels answer HTTP 200 with one `status` entry per job; a failed one carries
  // {"error":{"code":2017,"string":"Invalid job id specified",...}} (25.11, job-delete-unknown.json).
  for (const nlohmann::json& e : jf::Array(body, "status")) {
    const int number = ErrorNumberOf(e);
    const nlohmann::json* inner = jf::Member(e, "error");
    if (number != 0 && inner != nullptr) add(number, jf::String(*inner, "string"), nlohmann::json::object());
  }
  const bool http_ok = http_status >= 200 && http_status < 300;
  if (http_ok && messages.empty()) return absl::OkStatus();
  const std::string detail = messages.empty() ? "" : absl::StrCat(": ", absl::StrJoin(messages, "; "));
  const std::string prefix = absl::StrCat(what, " failed (HTTP ", http_status, ")");
  absl::Status st;
  if (http_status == 401 || http_status == 511 || first_errno == kSlurmErrorProtocolAuth) {
    // 401: no credentials (every version). 511 with 1007 "Protocol authentication error": a token
    // slurmctld rejected (25.11; 22.05 says HTTP 500 "Unspecified error" instead, see below).
    st = absl::UnauthenticatedError(absl::StrCat(
        prefix, ": the token was rejected by slurmrestd; check the user name and the token file (expired? ",
        "signed with another key?)", detail));
  } else if (http_status == 403 || first_errno == kSlurmErrorAccessDenied || first_errno == kSlurmErrorUserIdMissing) {
    st = absl::PermissionDeniedError(absl::StrCat(
        prefix, detail, ": the token's user may not do this (admin calls need a token of root or SlurmUser)"));
  } else if (first_errno == kSlurmErrorInvalidJobId || first_errno == kSlurmErrorInvalidNodeName ||
             (http_status == 404 && first_errno == 0)) {
    st = absl::NotFoundError(absl::StrCat(prefix, detail));
  } else if (first_errno == kSlurmErrorAlreadyDone || first_errno == kSlurmErrorJobNotPending ||
             first_errno == kSlurmErrorJobFinished || first_errno == kSlurmErrorBatchOnly) {
    // 2039 "Only batch jobs are accepted or processed": a requeue of an interactive allocation
    // (26.05's GET job/{id}/requeue answers HTTP 422 with it, seen live).
    st = absl::FailedPreconditionError(absl::StrCat(prefix, detail));
  } else if ((first_errno >= 1000 && first_errno < 1100) || http_status == 502 || http_status == 503 ||
             http_status == 504) {
    // SLURM_COMMUNICATIONS_*: slurmrestd is up but cannot reach slurmctld. Retry later.
    st = absl::UnavailableError(absl::StrCat(prefix, ": slurmctld unreachable", detail));
  } else if (http_status == 405 || http_status == 501) {
    st = absl::UnimplementedError(absl::StrCat(prefix, ": this slurmrestd version has no such call", detail));
  } else if (http_status == 500 && first_errno == 0 && absl::StrContains(detail, "Unspecified error")) {
    // Slurm 22.05 gives exactly this answer both when slurmctld is down and when slurmctld rejects
    // the JWT (checked live). Expired and malformed tokens are caught before sending (token_source);
    // what is left is retryable from here: say both causes.
    st = absl::UnavailableError(absl::StrCat(
        prefix, detail, ": slurmrestd got no answer from slurmctld: either slurmctld is down or it rejected ",
        "the token (Slurm 22.05 reports both the same way; check the token file and `scontrol ping`)"));
  } else if (first_errno >= 9000 && first_errno < 9200) {
    // ESLURM_DATA_* / REST parser errors: the request body was refused.
    st = absl::InvalidArgumentError(absl::StrCat(prefix, ": slurmrestd refused the request", detail));
  } else if (http_status >= 400 && http_status < 500) {
    st = absl::InvalidArgumentError(absl::StrCat(prefix, detail));
  } else {
    st = absl::UnknownError(absl::StrCat(prefix, detail));
  }
  if (first_errno != 0) st.SetPayload(kErrnoPayload, absl::Cord(std::to_string(first_errno)));
  return st;
}

namespace internal {

std::map<std::string, int64_t> ParseTres(const std::string& s) {
  std::map<std::string, int64_t> out;
  for (absl::string_view item : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    std::string value(kv.second);
    // Memory carries a unit; store MB.
    double scale = 1;
    if (!value.empty() && std::isalpha(static_cast<unsigned char>(value.back()))) {
      switch (std::toupper(static_cast<unsigned char>(value.back()))) {
        case 'K': scale = 1.0 / 1024; break;
        case 'M': scale = 1; break;
        case 'G': scale = 1024; break;
        case 'T': scale = 1024.0 * 1024; break;
        default: scale = 1;
      }
      value.pop_back();
    }
    double number = 0;
    if (!absl::SimpleAtod(value, &number) || !(number >= 0 && number < 1e15)) continue;
    out[std::string(kv.first)] = static_cast<int64_t>(number * scale + 0.5);
  }
  return out;
}

GresMap ParseGres(const std::string& s) {
  GresMap out;
  // Commas inside "(S:0-1)" or "(IDX:0,1)" are not separators: drop parenthesised parts first.
  std::string flat;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (depth == 0) flat.push_back(c);
    if (c == ')' && depth > 0) --depth;
  }
  for (absl::string_view item : absl::StrSplit(flat, ',', absl::SkipEmpty())) {
    absl::ConsumePrefix(&item, "gres:");
    absl::ConsumePrefix(&item, "gres/");
    std::vector<std::string> parts = absl::StrSplit(item, absl::ByAnyChar(":="), absl::SkipEmpty());
    if (parts.empty() || parts[0] == "(null)") continue;
    int64_t count = 1;  // "gpu" alone means one
    if (parts.size() >= 2 && absl::SimpleAtoi(parts.back(), &count)) parts.pop_back();
    if (count < 0) continue;
    out[parts[0]] += count;
    if (parts.size() >= 2) out[absl::StrCat(parts[0], ":", parts[1])] += count;
  }
  return out;
}

void SplitJobState(const std::vector<std::string>& tokens, JobState& state, std::set<std::string>& flags) {
  state = JobState::kUnknown;
  for (const std::string& t : tokens) {
    JobState s = ParseJobState(t);
    if (s != JobState::kUnknown && state == JobState::kUnknown)
      state = s;
    else
      flags.insert(t);
  }
}

void SplitNodeState(const std::vector<std::string>& tokens, NodeState& state, std::set<std::string>& flags) {
  state = NodeState::kUnknown;
  for (const std::string& t : tokens) {
    NodeState s = ParseNodeState(t);
    if (s != NodeState::kUnknown && state == NodeState::kUnknown)
      state = s;
    else if (t != "UNKNOWN")
      flags.insert(t);
  }
}

absl::Time EpochOrPast(int64_t seconds) {
  if (seconds <= 0) return absl::InfinitePast();
  return absl::FromUnixSeconds(seconds);
}

std::vector<std::string> ExpandOrEmpty(const std::string& hostlist) {
  absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(hostlist, 1 << 16);
  if (!names.ok()) return {};
  return *std::move(names);
}

}  // namespace internal
}  // namespace onequeue::slurm

namespace onequeue::slurm::internal {


// --- Per-node allocations (issue 25) -------------------------------------------------------------
namespace {

// Cores marked allocated in one node entry of job_resources: v0.0.41+ "sockets": [{"cores":
// [{"status": ["ALLOCATED"]}]}]; 22.05 "sockets": {"0": {"cores": {"0": "allocated"}}}.
int64_t AllocatedCores(const nlohmann::json& node) {
  const nlohmann::json* sockets = jf::Member(node, "sockets");
  if (sockets == nullptr || !(sockets->is_array() || sockets->is_object())) return -1;
  int64_t n = 0;
  for (const nlohmann::json& socket : *sockets) {
    const nlohmann::json* cores = jf::Member(socket, "cores");
    if (cores == nullptr) continue;
    for (const nlohmann::json& core : *cores) {
      std::vector<std::string> status =
          core.is_string() ? std::vector<std::string>{core.get<std::string>()} : jf::StateTokens(core, "status");
      for (std::string& t : status) t = absl::AsciiStrToUpper(t);
      if (std::any_of(status.begin(), status.end(),
                      [](const std::string& t) { return t == "ALLOCATED" || t == "IN_USE" || t == "IN USE"; }))
        ++n;
    }
  }
  return n;
}

// One entry of the job's node list: its name, CPUs and memory, in either layout:
//   v0.0.41+ (24.11, 25.11, 26.05): {"name", "cpus": {"count"}, "memory": {"allocated"}, "sockets"}
//   v0.0.38 (22.05.8, seen live; the spec's "cpus"/"memory" are not sent): {"nodename",
//   "memory_allocated", "sockets"}, the CPUs being the allocated cores times the job's CPUs per core.
absl::StatusOr<NodeAllocation> ReadNodeAllocation(const nlohmann::json& e, double cpus_per_core) {
  if (!e.is_object()) return absl::InvalidArgumentError("an allocation entry is not an object");
  NodeAllocation a;
  a.node = jf::String(e, "name");
  if (a.node.empty()) a.node = jf::String(e, "nodename");
  if (a.node.empty()) return absl::InvalidArgumentError("an allocation entry has no node name");
  const nlohmann::json* cpus = jf::Member(e, "cpus");
  jf::SlurmNumber count = (cpus != nullptr && cpus->is_object() && jf::Member(*cpus, "count") != nullptr)
                              ? jf::Number(*cpus, "count")
                              : jf::Number(e, "cpus");
  if (!count.has_value() || count.value <= 0) {
    const int64_t cores = AllocatedCores(e);
    if (cores > 0) count = {jf::SlurmNumber::Kind::kValue, static_cast<int64_t>(cores * cpus_per_core + 0.5)};
  }
  if (!count.has_value() || count.value <= 0 || count.value > 0xFFFFFFFFll)
    return absl::InvalidArgumentError(absl::StrCat("no CPU count for node ", a.node));
  a.cpus = static_cast<uint32_t>(count.value);
  const nlohmann::json* memory = jf::Member(e, "memory");
  jf::SlurmNumber mem = (memory != nullptr && memory->is_object()) ? jf::Number(*memory, "allocated")
                                                                   : jf::Number(e, "memory_allocated");
  if (!mem.has_value() && memory != nullptr && !memory->is_object()) mem = jf::Number(e, "memory");
  if (!mem.has_value() || mem.value < 0) return absl::InvalidArgumentError(absl::StrCat("no memory for node ", a.node));
  a.memory_mb = mem.value;
  return a;
}

absl::StatusOr<std::vector<NodeAllocation>> ReadNodeAllocations(const nlohmann::json& j, const SlurmJob& job) {
  const nlohmann::json* res = jf::Member(j, "job_resources");
  if (res == nullptr || !res->is_object()) return absl::InvalidArgumentError("no job_resources");
  const nlohmann::json* list = nullptr;
  if (const nlohmann::json* nodes = jf::Member(*res, "nodes"); nodes != nullptr && nodes->is_object())
    list = jf::Member(*nodes, "allocation");
  if (list == nullptr) list = jf::Member(*res, "allocated_nodes");
  // An array in every answer seen (22.05.8 included); an object keyed by node index is read the same.
  if (list == nullptr || !(list->is_array() || list->is_object()) || list->empty())
    return absl::InvalidArgumentError("job_resources has no nodes.allocation or allocated_nodes list");
  // CPUs per allocated core, for 22.05's entries that carry cores only.
  int64_t cores = 0;
  for (const nlohmann::json& e : *list) cores += std::max<int64_t>(0, AllocatedCores(e));
  const double cpus_per_core = cores > 0 && job.cpus > 0 ? static_cast<double>(job.cpus) / cores : 1.0;
  std::vector<NodeAllocation> out;
  for (const nlohmann::json& e : *list) {
    absl::StatusOr<NodeAllocation> a = ReadNodeAllocation(e, cpus_per_core);
    if (!a.ok()) return a.status();
    out.push_back(*std::move(a));
  }
  // gres_detail: one string per node of the job, in the job's node order (empty: no GRES).
  const std::vector<std::string> detail = jf::StringList(j, "gres_detail");
  if (!detail.empty() && detail.size() != out.size())
    return absl::InvalidArgumentError(
        absl::StrCat("gres_detail has ", detail.size(), " entries for ", out.size(), " nodes"));
  for (size_t i = 0; i < detail.size(); ++i) {
    absl::Status st = ParseGresWithIndices(detail[i], &out[i].gres, &out[i].gres_indices);
    if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat("gres_detail[", i, "]: ", st.message()));
  }
  return out;
}

}  // namespace

JobAllocation ReadJobAllocation(const nlohmann::json& j, const SlurmJob& job) {
  JobAllocation out;
  absl::StatusOr<std::vector<NodeAllocation>> nodes = ReadNodeAllocations(j, job);
  if (nodes.ok()) {
    out.nodes = *std::move(nodes);
  } else {
    out.error = absl::StrCat("job ", job.job_id, ": cannot read its allocation per node (",
                             nodes.status().message(), "); counted as taking its whole nodes");
  }
  return out;
}

// A node list field: one hostlist string ("n[1-3,5],m2": split only by the hostlist parser, whose
// brackets may hold commas) or an array of them (csv_string from v0.0.40).
std::vector<std::string> HostlistField(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  const std::string whole = jf::String(j, key);
  for (const std::string& part : whole.empty() ? jf::StringList(j, key) : std::vector<std::string>{whole})
    for (std::string& n : ExpandOrEmpty(part)) out.push_back(std::move(n));
  return out;
}

bool ReadJob(const nlohmann::json& j, SlurmJob& out) {
  const jf::SlurmNumber id = jf::Number(j, "job_id");
  if (!j.is_object() || !id.has_value() || id.value <= 0 || id.value > 0xFFFFFFFFll) return false;
  out.job_id = static_cast<uint32_t>(id.value);
  out.array_job_id = static_cast<uint32_t>(jf::Number(j, "array_job_id", true).value_or(0) & 0xFFFFFFFF);
  const jf::SlurmNumber task = jf::Number(j, "array_task_id", true);
  if (task.has_value() && task.value >= 0 && out.array_job_id != 0)
    out.array_task_id = static_cast<uint32_t>(task.value & 0xFFFFFFFF);
  if (out.array_job_id != 0 && !out.array_task_id) out.array_tasks = jf::String(j, "array_task_string");
  out.het_job_id = static_cast<uint32_t>(jf::Number(j, "het_job_id", true).value_or(0) & 0xFFFFFFFF);
  if (out.het_job_id != 0)
    out.het_job_offset = static_cast<uint32_t>(jf::Number(j, "het_job_offset", true).value_or(0) & 0xFFFFFFFF);
  const jf::SlurmNumber max_tasks = jf::Number(j, "array_max_tasks", true);
  if (max_tasks.has_value() && max_tasks.value > 0) out.array_max_tasks = static_cast<uint32_t>(max_tasks.value & 0xFFFFFFFF);
  out.name = jf::String(j, "name");
  out.user = jf::String(j, "user_name");
  out.account = jf::String(j, "account");
  out.partition = jf::String(j, "partition");
  out.qos = jf::String(j, "qos");
  SplitJobState(jf::StateTokens(j, "job_state"), out.state, out.state_flags);
  out.state_reason = jf::String(j, "state_reason");
  out.priority = jf::Number(j, "priority").value_or(0);
  out.submit_time = EpochOrPast(jf::Number(j, "submit_time").value_or(0));
  const int64_t start = jf::Number(j, "start_time").value_or(0);
  out.start_time = EpochOrPast(start);
  out.end_time = EpochOrPast(jf::Number(j, "end_time").value_or(0));
  if (out.state == JobState::kPending && start > 0) out.estimated_start = absl::FromUnixSeconds(start);
  const jf::SlurmNumber limit = jf::Number(j, "time_limit", true);
  if (limit.has_value() && limit.value >= 0) out.time_limit = absl::Minutes(limit.value);
  out.node_count = static_cast<uint32_t>(jf::Number(j, "node_count", true).value_or(0) & 0xFFFFFFFF);
  out.cpus = static_cast<uint32_t>(jf::Number(j, "cpus", true).value_or(0) & 0xFFFFFFFF);
  out.memory_per_node_mb = std::max<int64_t>(0, jf::Number(j, "memory_per_node", true).value_or(0));
  out.memory_per_cpu_mb = std::max<int64_t>(0, jf::Number(j, "memory_per_cpu", true).value_or(0));
  out.gres_per_node = ParseGres(jf::String(j, "tres_per_node"));
  out.tres_requested = ParseTres(jf::String(j, "tres_req_str"));
  out.tres_allocated = ParseTres(jf::String(j, "tres_alloc_str"));
  out.nodes = ExpandOrEmpty(jf::String(j, "nodes"));
  out.required_nodes = HostlistField(j, "required_nodes");
  // Slurm requeues batch jobs only: an srun/salloc allocation carries requeue=true (JobRequeue=1)
  // but a requeue of it is refused (2039), so it counts as not requeueable (cancelled instead).
  out.requeue = jf::Bool(j, "requeue") && jf::Bool(j, "batch_flag", /*fallback=*/true);
  out.restart_count = static_cast<int>(std::clamp<int64_t>(jf::Number(j, "restart_cnt").value_or(0), 0, 1 << 30));
  out.comment = jf::String(j, "comment");
  // Issue 29: every version reports these under the same keys, as strings.
  out.features = jf::String(j, "features");
  out.excluded_nodes = HostlistField(j, "excluded_nodes");
  out.admin_comment = jf::String(j, "admin_comment");
  out.reservation = jf::String(j, "resv_name");
  out.dependency = jf::String(j, "dependency");
  if (out.state == JobState::kRunning || out.state == JobState::kSuspended) out.allocation = ReadJobAllocation(j, out);
  return true;
}

bool ReadNode(const nlohmann::json& j, SlurmNode& out) {
  out.name = jf::String(j, "name");
  if (out.name.empty()) return false;
  std::vector<std::string> tokens = jf::StateTokens(j, "state");
  for (std::string& f : jf::StateTokens(j, "state_flags")) tokens.push_back(std::move(f));
  SplitNodeState(tokens, out.state, out.state_flags);
  auto u32 = [&](const char* key) {
    return static_cast<uint32_t>(std::clamp<int64_t>(jf::Number(j, key).value_or(0), 0, 0xFFFFFFFF));
  };
  out.cpus = u32("cpus");
  out.alloc_cpus = u32("alloc_cpus");
  out.memory_mb = std::max<int64_t>(0, jf::Number(j, "real_memory").value_or(0));
  out.alloc_memory_mb = std::max<int64_t>(0, jf::Number(j, "alloc_memory").value_or(0));
  out.gres = ParseGres(jf::String(j, "gres"));
  out.gres_used = ParseGres(jf::String(j, "gres_used"));
  {  // indices only: the counts above stay as they were read before issue 25
    GresMap counts;
    if (!ParseGresWithIndices(jf::String(j, "gres_used"), &counts, &out.gres_used_indices).ok())
      out.gres_used_indices.clear();
  }
  out.features = jf::StringList(j, "features");
  out.partitions = jf::StringList(j, "partitions");
  out.reason = jf::String(j, "reason");
  out.reason_set_by_user = jf::String(j, "reason_set_by_user");
  out.comment = jf::String(j, "comment");
  return true;
}

bool ReadReservation(const nlohmann::json& j, SlurmReservation& out) {
  out.name = jf::String(j, "name");
  if (out.name.empty()) return false;
  out.nodes = HostlistField(j, "node_list");
  // 22.05 plain epoch seconds; v0.0.40+ {"set","infinite","number"}. An infinite or unset end is
  // a reservation without end (Duration=UNLIMITED); an unset start is one already active.
  const jf::SlurmNumber start = jf::Number(j, "start_time", true);
  if (start.has_value() && start.value > 0) out.start = absl::FromUnixSeconds(start.value);
  const jf::SlurmNumber end = jf::Number(j, "end_time", true);
  if (end.has_value() && end.value > 0) out.end = absl::FromUnixSeconds(end.value);
  for (std::string& f : jf::StateTokens(j, "flags")) out.flags.insert(std::move(f));
  out.partition = jf::String(j, "partition");
  return true;
}

}  // namespace onequeue::slurm::internal

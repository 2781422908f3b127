#include "slurm_bridge/slurm_api.h"

#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "slurm_bridge/json_fields.h"

namespace onequeue::slurm {
namespace {

// 0 is a hold and 0xFFFFFFFE/0xFFFFFFFF are Slurm's NO_VAL/INFINITE; 22.05 refuses them as a
// priority ("Priority must be >0", "Priority too large").
constexpr uint32_t kMaxExplicitPriority = 0xFFFFFFFD;
// How far UpdateJob moves a job's begin time while it releases it before giving it its priority.
// If the second request never comes, the job still starts after this, on the nodes it was given.
constexpr absl::Duration kStartGate = absl::Minutes(1);

class RestSlurmApi : public SlurmApi {
 public:
  RestSlurmApi(std::shared_ptr<RestClient> client, ApiVersion v, std::unique_ptr<Scontrol> scontrol)
      : client_(std::move(client)), adapter_(MakeAdapter(v)), scontrol_(std::move(scontrol)) {}

  ApiVersion version() const override { return adapter_->version(); }

  absl::StatusOr<JobListing> ListJobs(std::optional<int64_t> update_time) override {
    return List<SlurmJob>(adapter_->JobsPath(update_time), [&](const nlohmann::json& b) { return adapter_->ParseJobs(b); },
                          "jobs", update_time.has_value());
  }
  absl::StatusOr<NodeListing> ListNodes(std::optional<int64_t> update_time) override {
    auto parse = [&](const nlohmann::json& b) { return adapter_->ParseNodes(b); };
    absl::StatusOr<NodeListing> l =
        List<SlurmNode>(adapter_->NodesPath(update_time), parse, "nodes", update_time.has_value());
    // slurmrestd loads nodes and partitions with the same update_time: when the nodes changed and
    // the partitions did not, it fails with HTTP 500 "Unspecified error" (22.05, seen live under
    // the 10,000-job benchmark; 24.11 says "Unable to query partitions" (_dump_nodes), seen live
    // after any node change, fixtures/slurm-24.11/; 26.05 answers the listing). Fall back to a
    // full node list, which is small.
    if (update_time && absl::IsUnavailable(l.status()) &&
        (version() == ApiVersion::kV0038 || absl::StrContains(l.status().message(), "Unable to query partitions")))
      return List<SlurmNode>(adapter_->NodesPath(std::nullopt), parse);
    return l;
  }
  absl::StatusOr<PartitionListing> ListPartitions() override {
    return List<SlurmPartition>(adapter_->PartitionsPath(),
                                [&](const nlohmann::json& b) { return adapter_->ParsePartitions(b); });
  }

  absl::StatusOr<ReservationListing> ListReservations() override {
    return List<SlurmReservation>(adapter_->ReservationsPath(),
                                  [&](const nlohmann::json& b) { return adapter_->ParseReservations(b); });
  }

  absl::StatusOr<JobStateListing> ListJobStates() override {
    if (adapter_->SupportsJobStates())
      return List<SlurmJobState>(adapter_->JobStatesPath(),
                                 [&](const nlohmann::json& b) { return adapter_->ParseJobStates(b); });
    if (scontrol_ != nullptr) return scontrol_->ListJobStates();
    return absl::UnimplementedError(absl::StrCat("slurmrestd ", VersionString(version()),
                                                 " has no jobs/state/ (v0.0.41+) and no scontrol (squeue) is configured"));
  }

  absl::StatusOr<JobListing> GetJobRecords(uint32_t job_id) override {
    return List<SlurmJob>(adapter_->JobPath(job_id), [&](const nlohmann::json& b) { return adapter_->ParseJobs(b); });
  }
  absl::StatusOr<SlurmJob> GetJob(uint32_t job_id) override {
    absl::StatusOr<JobListing> l = GetJobRecords(job_id);
    if (!l.ok()) return l.status();
    for (SlurmJob& j : l->items)
      if (j.job_id == job_id) return std::move(j);
    return absl::NotFoundError(absl::StrCat("Slurm has no job ", job_id));
  }

  absl::StatusOr<SlurmNode> GetNode(const std::string& node) override {
    absl::StatusOr<NodeListing> l =
        List<SlurmNode>(adapter_->NodePath(node), [&](const nlohmann::json& b) { return adapter_->ParseNodes(b); });
    if (!l.ok()) return l.status();
    for (SlurmNode& n : l->items)
      if (n.name == node) return std::move(n);
    return absl::NotFoundError(absl::StrCat("Slurm has no node ", node));
  }

  absl::StatusOr<SubmitResult> Submit(const JobSubmission& job) override {
    const nlohmann::json body = adapter_->SubmitBody(job);
    const std::string path = adapter_->SubmitPath();
    absl::StatusOr<RestResponse> r = client_->Call("POST", path, &body);
    if (!r.ok()) return r.status();
    // A job id means the job exists; "errors" beside it are notes such as 2042 "Job is in held
    // state" (22.05 puts those in the errors array).
    absl::StatusOr<SubmitResult> result = adapter_->ParseSubmit(r->body);
    if (result.ok()) return result;
    absl::Status st = ResponseStatus(r->http_status, r->body, "POST " + path);
    return st.ok() ? result.status() : st;
  }

  absl::Status CancelJob(uint32_t job_id) override {
    absl::Status st = Simple("DELETE", adapter_->JobPath(job_id), nullptr);
    const std::optional<int> number = SlurmErrorNumber(st);
    if (absl::IsNotFound(st) || (number && *number == kSlurmErrorAlreadyDone)) return absl::OkStatus();
    return st;
  }
  absl::Status SignalJob(uint32_t job_id, const std::string& signal) override {
    return Simple("DELETE", absl::StrCat(adapter_->JobPath(job_id), "?signal=", signal), nullptr);
  }
  absl::Status HoldJob(uint32_t job_id) override {
    const nlohmann::json body = adapter_->HoldBody(true);
    return Simple("POST", adapter_->JobPath(job_id), &body);
  }
  absl::Status ReleaseJob(uint32_t job_id) override {
    const nlohmann::json body = adapter_->HoldBody(false);
    return Simple("POST", adapter_->JobPath(job_id), &body);
  }
  absl::Status UpdateJob(uint32_t job_id, const JobUpdate& update) override {
    if (update.priority && (*update.priority == 0 || *update.priority > kMaxExplicitPriority))
      return absl::InvalidArgumentError(absl::StrCat("job ", job_id, ": priority ", *update.priority,
                                                     " is not an explicit priority (1 to ", kMaxExplicitPriority, ")"));
    if (update.priority && update.hold.value_or(false))
      return absl::InvalidArgumentError(
          absl::StrCat("job ", job_id, ": hold and priority exclude each other (a hold is priority 0 in Slurm)"));
    if (update.admin_comment && !adapter_->SupportsAdminComment()) {
      // v0.0.38: the mark first (scontrol), then the rest over REST. In this order a failure
      // between them leaves a marked job that is not held (asked again next cycle), never a
      // hold that reads as an administrator's.
      if (scontrol_ == nullptr)
        return absl::UnimplementedError(absl::StrCat("job ", job_id, ": ", VersionString(version()),
                                                     " cannot set an AdminComment over REST and no scontrol is configured"));
      if (absl::Status st = scontrol_->SetJobAdminComment(absl::StrCat(job_id), *update.admin_comment); !st.ok()) return st;
      JobUpdate rest = update;
      rest.admin_comment.reset();
      return UpdateJob(job_id, rest);
    }
    // Only for begin_time on v0.0.39+, which takes an epoch: slurmctld raises a past begin time to
    // its own now, so only a local clock ahead of slurmctld's delays the job (by the skew).
    const absl::Time now = absl::Now();
    const std::string path = adapter_->JobPath(job_id);
    // begin_now on a job this bridge just requeued: not before the relaunch gate.
    const absl::Time begin = RelaunchGate(job_id, now);
    auto gated = [&](nlohmann::json body, const JobUpdate& u) {
      if (u.begin_now && begin > now) body.update(adapter_->BeginAtBody(begin, now));
      return body;
    };
    if (!update.priority) {
      const nlohmann::json body = gated(adapter_->JobUpdateBody(update, now), update);
      return body.empty() ? absl::OkStatus() : Simple("POST", path, &body);
    }
    // Slurm keeps a hold as priority 0 in the one priority field: an explicit priority on a held
    // job is refused (2042 "Job is in held state"), and a body with both hold:false and a
    // priority releases the job with its computed priority (both seen live on 22.05). So release
    // and apply the rest first, then the priority. With begin_now the first request also moves the
    // begin time ahead, so the released job cannot start before the second request gives it its
    // priority and lets it begin at once: no other job can overtake it in between.
    JobUpdate rest = update;
    rest.priority.reset();
    rest.hold = false;
    rest.begin_now = false;
    nlohmann::json body = adapter_->JobUpdateBody(rest, now);
    if (update.begin_now) body.update(adapter_->BeginAtBody(std::max(begin, now + kStartGate), now));
    if (absl::Status st = Simple("POST", path, &body); !st.ok()) return st;
    JobUpdate priority;
    priority.priority = update.priority;
    priority.begin_now = update.begin_now;
    body = gated(adapter_->JobUpdateBody(priority, now), priority);
    return Simple("POST", path, &body);
  }
  absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job_id, uint32_t task_id,
                                          const std::string& admin_comment) override {
    const std::string id = ArrayTaskId(array_job_id, task_id);
    const std::string path = adapter_->Prefix() + "job/" + id;
    // scontrol first: slurmrestd v0.0.40+ refuses an update by task id (HTTP 422, 9000 "Submit
    // job update against Array Job's JobID instead of array task id", seen live on 24.11 and
    // 26.05) and v0.0.38 would apply it to the whole array (slurm_xlate_job_id). REST is tried only
    // without scontrol (v0.0.39).
    absl::Status st;
    if (scontrol_ != nullptr) {
      st = scontrol_->SetJobAdminComment(id, admin_comment);
    } else if (adapter_->SupportsAdminComment()) {
      JobUpdate mark;
      mark.admin_comment = admin_comment;
      const nlohmann::json body = adapter_->JobUpdateBody(mark, absl::Now());
      st = Simple("POST", path, &body);
    } else {
      return absl::UnimplementedError(absl::StrCat("job ", id, ": ", VersionString(version()),
                                                   " cannot update one array task over REST and no scontrol is configured"));
    }
    if (!st.ok()) return st;
    if (scontrol_ != nullptr) {
      // The task's own record: the line whose ArrayTaskId is exactly this task (a line of the
      // array's record shows a range). GET job/<array>_<task> did not list it on 26.05 (seen live).
      absl::StatusOr<std::string> out = scontrol_->ShowJob(id);
      if (!out.ok()) return out.status();
      for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipWhitespace())) {
        std::map<std::string, std::string> f;
        for (absl::string_view kv : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
          const size_t eq = kv.find('=');
          if (eq != absl::string_view::npos) f[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
        }
        uint32_t job = 0;
        if (f["ArrayTaskId"] == absl::StrCat(task_id) && f["ArrayJobId"] == absl::StrCat(array_job_id) &&
            absl::SimpleAtoi(f["JobId"], &job))
          return job;
      }
      return absl::NotFoundError(absl::StrCat("scontrol shows no record of array task ", id, " after updating it"));
    }
    absl::StatusOr<JobListing> l =
        List<SlurmJob>(path, [&](const nlohmann::json& b) { return adapter_->ParseJobs(b); });
    if (!l.ok()) return l.status();
    for (const SlurmJob& j : l->items)
      if (j.array_job_id == array_job_id && j.array_task_id == task_id) return j.job_id;
    return absl::NotFoundError(absl::StrCat("Slurm lists no record of array task ", id, " after updating it"));
  }
  absl::Status UpdateArrayTasks(uint32_t array_job_id, const std::string& tasks, const JobUpdate& update) override {
    if (tasks.empty() || tasks.find_first_not_of("0123456789,-") != std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat("array ", array_job_id, ": \"", tasks, "\" is no task list"));
    const std::string id = tasks.find_first_of(",-") == std::string::npos
                               ? absl::StrCat(array_job_id, "_", tasks)
                               : absl::StrCat(array_job_id, "_[", tasks, "]");
    if (scontrol_ == nullptr)
      return absl::UnimplementedError(absl::StrCat("job ", id, ": updating one array task needs scontrol"));
    if (update.priority && update.hold.value_or(false))
      return absl::InvalidArgumentError(absl::StrCat("job ", id, ": hold and priority exclude each other"));
    std::vector<std::string> first;
    if (update.admin_comment) first.push_back(absl::StrCat("AdminComment=", *update.admin_comment));
    if (update.comment) first.push_back(absl::StrCat("Comment=", *update.comment));
    if (update.priority && update.begin_now)
      first.push_back(absl::StrCat("StartTime=now+", absl::ToInt64Seconds(kStartGate)));
    if (!first.empty())
      if (absl::Status st = scontrol_->UpdateJobFields(id, first); !st.ok()) return st;
    if (update.hold && *update.hold) return scontrol_->UpdateJobFields(id, {"Priority=0"});
    if (!update.priority && !update.hold) {
      return update.begin_now ? scontrol_->UpdateJobFields(id, {"StartTime=now"}) : absl::OkStatus();
    }
    // Released first (Slurm refuses an explicit priority on a held job), then the priority.
    if (absl::Status st = scontrol_->ReleaseJob(id); !st.ok()) return st;
    if (!update.priority) return update.begin_now ? scontrol_->UpdateJobFields(id, {"StartTime=now"}) : absl::OkStatus();
    std::vector<std::string> last = {absl::StrCat("Priority=", *update.priority)};
    if (update.begin_now) last.push_back("StartTime=now");
    return scontrol_->UpdateJobFields(id, last);
  }
  absl::Status StartAt(uint32_t job_id, absl::Time at, absl::Time now) override {
    const nlohmann::json body = adapter_->BeginAtBody(std::max(at, RelaunchGate(job_id, now)), now);
    return Simple("POST", adapter_->JobPath(job_id), &body);
  }
  absl::Status RequeueArrayTask(uint32_t array_job_id, uint32_t task_id) override {
    if (scontrol_ == nullptr)
      return absl::UnimplementedError(absl::StrCat("requeue of array task ", ArrayTaskId(array_job_id, task_id),
                                                   " needs scontrol (by the array's id Slurm requeues every task)"));
    absl::Status st = scontrol_->RequeueTask(ArrayTaskId(array_job_id, task_id));
    if (st.ok()) {
      absl::MutexLock lock(&mu_);
      relaunch_gates_[array_job_id] = absl::Now() + kRelaunchMargin;  // the record's job id
    }
    return st;
  }
  absl::Status RequeueJob(uint32_t job_id) override {
    absl::Status st;
    if (adapter_->SupportsRequeue()) {
      st = Simple("GET", adapter_->RequeuePath(job_id), nullptr);
    } else if (scontrol_ == nullptr) {
      return absl::UnimplementedError(absl::StrCat("requeue needs scontrol (slurmrestd ", VersionString(version()),
                                                   " cannot requeue a job; v0.0.45, Slurm 26.05, can)"));
    } else {
      st = scontrol_->RequeueJob(job_id);
    }
    if (st.ok()) {
      absl::MutexLock lock(&mu_);
      relaunch_gates_[job_id] = absl::Now() + kRelaunchMargin;
    }
    return st;
  }
  absl::Status UpdateNode(const std::string& node, const NodeUpdate& update) override {
    if (adapter_->SupportsNodeUpdate()) {
      const nlohmann::json body = adapter_->NodeUpdateBody(update);
      return Simple("POST", adapter_->NodePath(node), &body);
    }
    if (scontrol_ == nullptr)
      return absl::UnimplementedError(absl::StrCat("slurmrestd ", VersionString(version()),
                                                   " cannot update nodes and no scontrol is configured"));
    return update.kind == NodeUpdate::Kind::kDrain ? scontrol_->DrainNode(node, update.reason)
                                                   : scontrol_->ResumeNode(node);
  }

 private:
  // `list_key` and `since` only for the calls that may answer "unchanged" (jobs and nodes with
  // ?update_time=): see VersionAdapter::IsUnchangedAnswer.
  template <typename T, typename Parse>
  absl::StatusOr<Listing<T>> List(const std::string& path, Parse parse, const char* list_key = "",
                                  bool since = false) {
    absl::StatusOr<RestResponse> r = client_->Call("GET", path);
    if (!r.ok()) return r.status();
    if (adapter_->IsUnchangedAnswer(r->http_status, r->body, list_key, since)) {
      Listing<T> unchanged;
      unchanged.unchanged = true;
      return unchanged;
    }
    absl::Status st = ResponseStatus(r->http_status, r->body, "GET " + path);
    if (!st.ok()) return st;
    return parse(r->body);
  }

  absl::Status Simple(const std::string& method, const std::string& path, const nlohmann::json* body) {
    absl::StatusOr<RestResponse> r = client_->Call(method, path, body);
    if (!r.ok()) return r.status();
    return ResponseStatus(r->http_status, r->body, method + " " + path);
  }

  // The earliest begin time for `job_id`: `now`, or later while the job's relaunch gate (set by
  // RequeueJob) is ahead. Gates that have passed are dropped.
  absl::Time RelaunchGate(uint32_t job_id, absl::Time now) {
    absl::MutexLock lock(&mu_);
    const absl::Time wall = absl::Now();
    for (auto it = relaunch_gates_.begin(); it != relaunch_gates_.end();)
      it = it->second < wall ? relaunch_gates_.erase(it) : std::next(it);
    auto it = relaunch_gates_.find(job_id);
    return it == relaunch_gates_.end() ? now : std::max(now, it->second);
  }

  std::shared_ptr<RestClient> client_;
  std::unique_ptr<VersionAdapter> adapter_;
  std::unique_ptr<Scontrol> scontrol_;
  absl::Mutex mu_;
  std::map<uint32_t, absl::Time> relaunch_gates_ ABSL_GUARDED_BY(mu_);
};

// NotifyJobWrites' wrapper: every call forwarded; job writes that succeeded reported.
class JobWriteNotifier : public SlurmApi {
 public:
  JobWriteNotifier(std::unique_ptr<SlurmApi> inner, std::function<void(uint32_t)> written)
      : inner_(std::move(inner)), written_(std::move(written)) {}
  ApiVersion version() const override { return inner_->version(); }
  absl::StatusOr<JobListing> ListJobs(std::optional<int64_t> t) override { return inner_->ListJobs(t); }
  absl::StatusOr<NodeListing> ListNodes(std::optional<int64_t> t) override { return inner_->ListNodes(t); }
  absl::StatusOr<PartitionListing> ListPartitions() override { return inner_->ListPartitions(); }
  absl::StatusOr<ReservationListing> ListReservations() override { return inner_->ListReservations(); }
  absl::StatusOr<JobStateListing> ListJobStates() override { return inner_->ListJobStates(); }
  absl::StatusOr<SlurmJob> GetJob(uint32_t id) override { return inner_->GetJob(id); }
  absl::StatusOr<JobListing> GetJobRecords(uint32_t id) override { return inner_->GetJobRecords(id); }
  absl::StatusOr<SlurmNode> GetNode(const std::string& node) override { return inner_->GetNode(node); }
  absl::StatusOr<SubmitResult> Submit(const JobSubmission& job) override {
    absl::StatusOr<SubmitResult> r = inner_->Submit(job);
    if (r.ok()) written_(r->job_id);
    return r;
  }
  absl::Status CancelJob(uint32_t id) override { return Told(id, inner_->CancelJob(id)); }
  absl::Status SignalJob(uint32_t id, const std::string& s) override { return Told(id, inner_->SignalJob(id, s)); }
  absl::Status HoldJob(uint32_t id) override { return Told(id, inner_->HoldJob(id)); }
  absl::Status ReleaseJob(uint32_t id) override { return Told(id, inner_->ReleaseJob(id)); }
  absl::Status UpdateJob(uint32_t id, const JobUpdate& u) override { return Told(id, inner_->UpdateJob(id, u)); }
  absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array, uint32_t task, const std::string& comment) override {
    absl::StatusOr<uint32_t> own = inner_->SplitArrayTask(array, task, comment);
    if (own.ok()) {
      written_(array);
      written_(*own);
    }
    return own;
  }
  absl::Status UpdateArrayTasks(uint32_t array, const std::string& tasks, const JobUpdate& u) override {
    return Told(array, inner_->UpdateArrayTasks(array, tasks, u));
  }
  absl::Status StartAt(uint32_t id, absl::Time at, absl::Time now) override { return Told(id, inner_->StartAt(id, at, now)); }
  absl::Status RequeueJob(uint32_t id) override { return Told(id, inner_->RequeueJob(id)); }
  absl::Status RequeueArrayTask(uint32_t array, uint32_t task) override {
    return Told(array, inner_->RequeueArrayTask(array, task));
  }
  absl::Status UpdateNode(const std::string& node, const NodeUpdate& u) override { return inner_->UpdateNode(node, u); }

 private:
  absl::Status Told(uint32_t id, absl::Status st) {
    if (st.ok()) written_(id);
    return st;
  }
  std::unique_ptr<SlurmApi> inner_;
  std::function<void(uint32_t)> written_;
};

}  // namespace

std::unique_ptr<SlurmApi> MakeRestSlurmApi(std::shared_ptr<RestClient> client, ApiVersion version,
                                           std::unique_ptr<Scontrol> scontrol) {
  return std::make_unique<RestSlurmApi>(std::move(client), version, std::move(scontrol));
}

std::unique_ptr<SlurmApi> NotifyJobWrites(std::unique_ptr<SlurmApi> inner, std::function<void(uint32_t)> written) {
  return std::make_unique<JobWriteNotifier>(std::move(inner), std::move(written));
}

absl::StatusOr<ApiVersion> DetectVersion(RestClient& client) {
  absl::StatusOr<RestResponse> spec = client.Call("GET", "/openapi/v3");
  if (!spec.ok()) return spec.status();
  if (spec->http_status == 401) return ResponseStatus(401, spec->body, "GET /openapi/v3");
  if (spec->http_status == 200 && json_fields::Member(spec->body, "paths") != nullptr) {
    const nlohmann::json& paths = spec->body["paths"];
    if (paths.is_object()) {
      for (ApiVersion v : SupportedVersions()) {  // highest first
        const std::string prefix = absl::StrCat("/slurm/", VersionString(v), "/");
        for (auto it = paths.begin(); it != paths.end(); ++it)
          if (it.key().rfind(prefix, 0) == 0) return v;
      }
    }
  }
  // No usable spec: probe. Any answer other than 404 means the version is served.
  for (ApiVersion v : SupportedVersions()) {
    absl::StatusOr<RestResponse> r = client.Call("GET", absl::StrCat("/slurm/", VersionString(v), "/ping/"));
    if (!r.ok()) return r.status();
    if (r->http_status != 404 && r->http_status != 401) return v;
  }
  return absl::FailedPreconditionError(
      "slurmrestd serves none of the supported API versions (v0.0.38 to v0.0.45); start it with "
      "-s openapi/v0.0.38 (22.05) or a newer openapi plugin");
}

absl::StatusOr<std::unique_ptr<SlurmApi>> ConnectSlurmApi(const SlurmApiOptions& options) {
  if (options.token_file.empty())
    return absl::InvalidArgumentError("slurmrestd: token_file is required (JWT of the SlurmUser or root)");
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport = NewSlurmTransport(options.transport);
  if (!transport.ok()) return transport.status();
  auto client = std::make_shared<RestClient>(*std::move(transport),
                                             MakeTokenFileSource(options.user, options.token_file), options.retry);
  if (options.write_time_left) client->BoundWrites(options.write_time_left, options.transport.request_timeout);
  ApiVersion version;
  if (options.pinned_version) {
    version = *options.pinned_version;
  } else {
    absl::StatusOr<ApiVersion> v = DetectVersion(*client);
    if (!v.ok()) return v.status();
    version = *v;
  }
  std::unique_ptr<Scontrol> scontrol;
  if (!options.scontrol_path.empty()) {
    ProcessRunnerOptions ro;
    if (!options.slurm_conf.empty()) ro.extra_env["SLURM_CONF"] = options.slurm_conf;
    ro.time_left = options.write_time_left;
    scontrol = MakeScontrol(options.scontrol_path, MakeProcessRunner(ro));
  }
  return MakeRestSlurmApi(std::move(client), version, std::move(scontrol));
}

}  // namespace onequeue::slurm

// SlurmApi: what onequeue asks of Slurm, in the internal model, whatever the REST version.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "slurm_bridge/adapter.h"
#include "slurm_bridge/model.h"
#include "slurm_bridge/rest_client.h"
#include "slurm_bridge/scontrol.h"

namespace onequeue::slurm {

// Error contract of every call: kUnavailable = slurmrestd or slurmctld unreachable, retry later;
// kUnauthenticated / kPermissionDenied = fix the token first; kNotFound = no such job or node;
// kFailedPrecondition = the object is not in a state that allows the action; kUnimplemented =
// this deployment cannot do it (e.g. drain on 22.05 without scontrol).
class SlurmApi {
 public:
  virtual ~SlurmApi() = default;
  virtual ApiVersion version() const = 0;

  // `update_time` (Slurm's clock, epoch s): when nothing changed since, the listing comes back
  // with unchanged = true. Slurm answers all or nothing: any change returns the full table.
  virtual absl::StatusOr<JobListing> ListJobs(std::optional<int64_t> update_time = std::nullopt) = 0;
  virtual absl::StatusOr<NodeListing> ListNodes(std::optional<int64_t> update_time = std::nullopt) = 0;
  virtual absl::StatusOr<PartitionListing> ListPartitions() = 0;
  // Issue 29: advance reservations (GET reservations/, every version). kUnimplemented where an
  // implementation cannot list them (test fakes that do not model them): read as none.
  virtual absl::StatusOr<ReservationListing> ListReservations() {
    return absl::UnimplementedError("this SlurmApi lists no reservations");
  }
  // Issue 26: the state of every job record, complete (a record it lacks is gone), without the
  // rest of each job: GET jobs/state/ on v0.0.41+, else squeue beside scontrol. kUnimplemented
  // where neither is there (v0.0.38-40 without scontrol): the poller then lists jobs by
  // update_time as before.
  virtual absl::StatusOr<JobStateListing> ListJobStates() {
    return absl::UnimplementedError("this SlurmApi lists no job states");
  }
  virtual absl::StatusOr<SlurmJob> GetJob(uint32_t job_id) = 0;
  // Issue 26: every record Slurm answers for one job id, as of one moment: the job's own record
  // and, for an array's id, every record of the array (the tasks split off it too), for a het
  // leader every component (slurmctld's job info RPC, which GET job/<id> and `scontrol show job`
  // share, answers so on every version). The poller takes them all: a task split off between its
  // state listing and this fetch is then not missing from the view (the array's record no longer
  // lists it, its own record was not listed yet). This default answers the one record.
  virtual absl::StatusOr<JobListing> GetJobRecords(uint32_t job_id) {
    absl::StatusOr<SlurmJob> job = GetJob(job_id);
    if (!job.ok()) return job.status();
    JobListing out;
    out.items.push_back(*std::move(job));
    return out;
  }
  virtual absl::StatusOr<SlurmNode> GetNode(const std::string& node) = 0;

  virtual absl::StatusOr<SubmitResult> Submit(const JobSubmission& job) = 0;
  // Idempotent: cancelling a job that is gone or already finished is OK.
  virtual absl::Status CancelJob(uint32_t job_id) = 0;
  virtual absl::Status SignalJob(uint32_t job_id, const std::string& signal) = 0;  // "SIGUSR1" / "10"
  virtual absl::Status HoldJob(uint32_t job_id) = 0;
  virtual absl::Status ReleaseJob(uint32_t job_id) = 0;
  // Applies every set field of `update` to a pending job over REST (every version carries every
  // field; v0.0.38 as "nodelist", checked live). One request, or two when a priority is set: Slurm
  // refuses a priority on a held job, so the job is released first (see slurm_api.cc).
  // kNotFound: no such job; kFailedPrecondition: the job finished or no longer pends;
  // kInvalidArgument: hold together with priority, or priority 0 / a sentinel. A failed request
  // may have applied part of its body (22.05 applies the fields it processed before the error).
  virtual absl::Status UpdateJob(uint32_t job_id, const JobUpdate& update) = 0;
  // Issue 29: one pending task of an array. Slurm keeps pending tasks in the array's one record
  // until one is updated by its own id "<array>_<task>": then it splits the task off into a record
  // of its own. Writes `admin_comment` to the task that way (scontrol: REST v0.0.40+ refuses an
  // update by task id, v0.0.38 would update the whole array; REST only without scontrol) and
  // returns the task's own job id, which every other call then takes.
  virtual absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job_id, uint32_t task_id,
                                                  const std::string& admin_comment) {
    (void)array_job_id, (void)task_id, (void)admin_comment;
    return absl::UnimplementedError("this SlurmApi cannot split array tasks");
  }
  // Issue 29: UpdateJob for tasks of an array by their ids: `tasks` is Slurm's task list ("9",
  // "3-9", "3,5-7"), written "<array>_<task>" or "<array>_[<list>]" (after SplitArrayTask: by its
  // own job id a task may be the array's record itself, which every update by that id reaches
  // whole, and v0.0.38 refuses a REST update of an array's id once a task was split off:
  // "_parse_job_list", seen live on 22.05). Through scontrol on every version (REST v0.0.40+
  // refuses task ids); with a priority: released with its begin time a minute ahead, then the
  // priority and begin now, as UpdateJob does. kUnimplemented without scontrol.
  virtual absl::Status UpdateArrayTasks(uint32_t array_job_id, const std::string& tasks, const JobUpdate& update) {
    (void)array_job_id, (void)tasks, (void)update;
    return absl::UnimplementedError("this SlurmApi cannot update array tasks");
  }
  // Lets a requeued job start at `at` instead of waiting out the BeginTime Slurm gave it (not
  // sooner than kRelaunchMargin after a RequeueJob of the job).
  virtual absl::Status StartAt(uint32_t job_id, absl::Time at, absl::Time now) = 0;
  // REST from v0.0.45 (GET job/{id}/requeue), scontrol before.
  virtual absl::Status RequeueJob(uint32_t job_id) = 0;
  // RequeueJob for the array's last task, which runs in the array's own record (its job id is the
  // array's): by its task id, through scontrol on every version. By the array's id Slurm requeues
  // every task of the array, those that ran too (seen live on 22.05: `scontrol requeue 1` set
  // the COMPLETED tasks 1_0 and 1_1 PENDING again; `scontrol requeue 4_2` only that task).
  virtual absl::Status RequeueArrayTask(uint32_t array_job_id, uint32_t task_id) {
    (void)array_job_id, (void)task_id;
    return absl::UnimplementedError("this SlurmApi cannot requeue array tasks");
  }
  // Drain / resume: REST from v0.0.39, scontrol on v0.0.38.
  virtual absl::Status UpdateNode(const std::string& node, const NodeUpdate& update) = 0;
};

// How long after a requeue Slurm may be asked to start the job again. slurmd revokes the old
// launch credential with a one-second resolution and refuses a launch in that second ("Job
// credential revoked": the job FAILS on 22.05, seen live; JobActions stayed pending on 25.11).
// The bridge keeps every begin time it sets (StartAt, UpdateJob's begin_now) at least this long
// after a requeue it made itself (RequeueJob), so callers need no margin of their own; for jobs
// Slurm requeued (a placeholder's preemption) NodeOwnership::Lend uses it from the placeholder's
// start.
inline constexpr absl::Duration kRelaunchMargin = absl::Seconds(2);

struct SlurmApiOptions {
  CurlTransportOptions transport;
  std::string user = "slurm";
  std::string token_file;
  std::optional<ApiVersion> pinned_version;  // skip detection
  RetryPolicy retry = kSlurmRetryPolicy;
  // scontrol binary and SLURM_CONF for the calls REST lacks; empty = REST only.
  std::string scontrol_path;
  std::string slurm_conf;
  // Issue 24 M1: how long from now a write may still take (the writer's lease); every REST
  // write and scontrol call is bounded by it (RestClient::BoundWrites). Null: unbounded.
  std::function<absl::Duration()> write_time_left;
};

// Builds the client and detects the version: GET /openapi/v3 and pick the highest supported
// version it lists; if that is refused, probe ping/ highest first.
absl::StatusOr<std::unique_ptr<SlurmApi>> ConnectSlurmApi(const SlurmApiOptions& options);

// For tests and for callers that bring their own pieces. `scontrol` may be null.
std::unique_ptr<SlurmApi> MakeRestSlurmApi(std::shared_ptr<RestClient> client, ApiVersion version,
                                           std::unique_ptr<Scontrol> scontrol);
absl::StatusOr<ApiVersion> DetectVersion(RestClient& client);

// Issue 26: `inner`, calling `written(job_id)` after every call that wrote to a job and did not
// fail: UpdateJob, HoldJob, ReleaseJob, StartAt, RequeueJob, CancelJob, SignalJob, Submit (the new
// id), SplitArrayTask (the array's record and the task's new one), UpdateArrayTasks and
// RequeueArrayTask (the array's record; a task already in a record of its own is not named by
// the call, so not reported). For the daemon's write client: `written` = SlurmPoller::Refetch, so
// the poller's state mode fetches what onequeue changed on the next poll, not at the next full
// listing. Reads are passed through unchanged.
std::unique_ptr<SlurmApi> NotifyJobWrites(std::unique_ptr<SlurmApi> inner, std::function<void(uint32_t)> written);

}  // namespace onequeue::slurm

// One interface over the slurmrestd REST API versions v0.0.38 (Slurm 22.05) .. v0.0.45 (26.05):
// each adapter knows its paths, how to read its responses into the internal model, and how to
// write the request bodies onequeue sends. Nothing above this layer sees a version difference.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "slurm_bridge/model.h"

namespace onequeue::slurm {

enum class ApiVersion { kV0038 = 38, kV0039, kV0040, kV0041, kV0042, kV0043, kV0044, kV0045 };

std::string VersionString(ApiVersion v);  // "v0.0.38"
absl::StatusOr<ApiVersion> ParseApiVersion(const std::string& s);  // "v0.0.41" or "0.0.41"
// Every supported version, highest first (the order version detection tries them in).
std::vector<ApiVersion> SupportedVersions();

class VersionAdapter {
 public:
  virtual ~VersionAdapter() = default;
  virtual ApiVersion version() const = 0;

  // Paths, relative to the server root, with the version prefix.
  std::string Prefix() const;  // "/slurm/v0.0.38/"
  std::string JobsPath(std::optional<int64_t> update_time) const;
  std::string JobPath(uint32_t job_id) const;
  std::string NodesPath(std::optional<int64_t> update_time) const;
  std::string NodePath(const std::string& node) const;
  std::string PartitionsPath() const;
  std::string ReservationsPath() const;  // issue 29: every version, same keys
  std::string SubmitPath() const;
  std::string PingPath() const;
  // Issue 26: GET jobs/state/ (v0.0.41 and later; 24.11's v0.0.40 answers 404, seen live).
  std::string JobStatesPath() const;
  // GET job/{id}/requeue: v0.0.45 (Slurm 26.05) is the first version that can requeue a job.
  std::string RequeuePath(uint32_t job_id) const;

  // Whether a list answer (`list_key`: "jobs", "nodes") means "nothing changed since the
  // update_time the request carried" rather than a listing. Every version: HTTP 304 (22.05's jobs,
  // 25.11's nodes) or error number 1900 (SLURM_NO_CHANGE_IN_DATA) in `errors` or `warnings`.
  // Data-parser versions (v0.0.39+) also answer a 2xx without errors whose list is empty and
  // which either warns "No job changes since update_time[T]" or carries no last_update (0, unset):
  // what 25.11.7 does for jobs (fixtures/slurm-25.11/jobs-unchanged.json). Read as a listing, that
  // answer would say every job is gone. Without `carried_update_time` only 304 and 1900 count.
  bool IsUnchangedAnswer(long http_status, const nlohmann::json& body, const char* list_key,
                         bool carried_update_time) const;

  virtual absl::StatusOr<JobListing> ParseJobs(const nlohmann::json& body) const = 0;
  virtual absl::StatusOr<NodeListing> ParseNodes(const nlohmann::json& body) const = 0;
  virtual absl::StatusOr<PartitionListing> ParsePartitions(const nlohmann::json& body) const = 0;
  absl::StatusOr<SubmitResult> ParseSubmit(const nlohmann::json& body) const;
  // Issue 26: the `jobs` array of GET jobs/state/, one entry per job, array tasks one by one:
  // {"job_id": "7", "state": ["PENDING"]}, "<record id>_<task>" for an array task, and the
  // pending record of an array once per task ("3_0", "3_1", ...: seen live on 24.11 and 26.05).
  // Entries of one record are merged (their tasks joined in order). An entry without a usable id
  // is an error: the listing must be complete, since a record it lacks is taken as gone.
  absl::StatusOr<JobStateListing> ParseJobStates(const nlohmann::json& body) const;
  // The `reservations` array: name, node_list, start_time, end_time, flags, partition. v0.0.38
  // gives plain numbers, v0.0.40+ {"set","infinite","number"} objects; the reader takes both.
  absl::StatusOr<ReservationListing> ParseReservations(const nlohmann::json& body) const;

  virtual nlohmann::json SubmitBody(const JobSubmission& job) const = 0;
  // Job update that lets a requeued job start at `at` (at or after `now`) instead of waiting out
  // the BeginTime Slurm gave it.
  virtual nlohmann::json BeginAtBody(absl::Time at, absl::Time now) const = 0;
  virtual nlohmann::json HoldBody(bool hold) const = 0;
  // One job update request carrying every set field of `update` in this version's names and
  // shapes; begin_now is begin_time `now`. Slurm keeps a hold as priority 0 in the job's one
  // priority field, so a body with both hold and priority means whatever the server parses last:
  // RestSlurmApi::UpdateJob never asks for both in one body.
  virtual nlohmann::json JobUpdateBody(const JobUpdate& update, absl::Time now) const = 0;
  // Whether POST node/{name} exists (v0.0.39 and later); v0.0.38 needs scontrol.
  virtual bool SupportsNodeUpdate() const = 0;
  // Whether GET jobs/state/ exists (v0.0.41 and later).
  bool SupportsJobStates() const { return version() >= ApiVersion::kV0041; }
  // Whether GET job/{id}/requeue exists (v0.0.45 and later); older versions need scontrol.
  virtual bool SupportsRequeue() const { return false; }
  // Whether a job update may carry "admin_comment" (v0.0.39 and later); v0.0.38 needs scontrol.
  virtual bool SupportsAdminComment() const { return true; }
  virtual nlohmann::json NodeUpdateBody(const NodeUpdate& update) const = 0;
};

std::unique_ptr<VersionAdapter> MakeAdapter(ApiVersion v);

// Maps a slurmrestd answer to a status: HTTP status and the `errors` array together. `what`
// names the call for the message ("GET /slurm/v0.0.38/jobs/"). 2xx without errors is OK.
absl::Status ResponseStatus(long http_status, const nlohmann::json& body, const std::string& what);

// Slurm error numbers onequeue reacts to (slurm_errno.h).
inline constexpr int kSlurmErrorInvalidJobId = 2017;
inline constexpr int kSlurmErrorInvalidNodeName = 2018;
inline constexpr int kSlurmErrorAlreadyDone = 2021;
inline constexpr int kSlurmErrorJobNotPending = 2073;  // e.g. begin_time on a running job
inline constexpr int kSlurmErrorJobFinished = 2084;    // updating a finished job
inline constexpr int kSlurmErrorBatchOnly = 2039;      // requeue of an srun/salloc allocation
inline constexpr int kSlurmErrorAccessDenied = 2002;
inline constexpr int kSlurmErrorProtocolAuth = 1007;     // 25.11: rejected token (HTTP 511)
inline constexpr int kSlurmErrorNoChangeInData = 1900;   // SLURM_NO_CHANGE_IN_DATA
inline constexpr int kSlurmErrorUserIdMissing = 2010;  // "Invalid user id"

// The Slurm error number carried in a status produced by ResponseStatus, if any.
std::optional<int> SlurmErrorNumber(const absl::Status& s);

// Slurm refused to requeue the job because it is not a batch job (an srun/salloc allocation,
// error 2039), over REST (the error number) or scontrol (its message). Unlike the other
// kFailedPrecondition answers of a requeue (the job is pending again, completing, finished: it
// has left), the job still runs: the caller must cancel it or give up, not wait for it to go.
bool IsBatchOnlyRefusal(const absl::Status& s);

}  // namespace onequeue::slurm

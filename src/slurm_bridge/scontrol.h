// The few actions no REST version offers (requeue) or that v0.0.38 lacks (node drain/resume) go
// through `scontrol`. Behind an interface so the REST-only deployments simply have none.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "slurm_bridge/model.h"

namespace onequeue::slurm {

// Runs a command and returns its stdout; non-zero exit is an error carrying stderr.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual absl::StatusOr<std::string> Run(const std::vector<std::string>& argv) = 0;
};

struct ProcessRunnerOptions {
  std::map<std::string, std::string> extra_env;  // e.g. SLURM_CONF
  absl::Duration timeout = absl::Seconds(30);
  // Issue 24 M1 (scontrol's calls are writes, but for issue 26's squeue of ListJobStates, which
  // the poller's client runs, with no lease): when set, how long from now a command may
  // still take (the writer's lease, as RestClient::BoundWrites): none is started without time
  // left, and one still running when it is up is killed (kDeadlineExceeded).
  std::function<absl::Duration()> time_left;
};
std::unique_ptr<CommandRunner> MakeProcessRunner(ProcessRunnerOptions options);

class Scontrol {
 public:
  virtual ~Scontrol() = default;
  virtual absl::Status DrainNode(const std::string& node, const std::string& reason) = 0;
  virtual absl::Status ResumeNode(const std::string& node) = 0;
  virtual absl::Status RequeueJob(uint32_t job_id) = 0;
  // Issue 29: the job's AdminComment (onequeue's marks), which v0.0.38's REST parser cannot write.
  // `job_id`: "123", or "<array>_<task>" for one task of an array (issue 29).
  virtual absl::Status SetJobAdminComment(const std::string& job_id, const std::string& text) = 0;
  // Issue 29: `scontrol update JobId=<job_id> <fields...>` ("Priority=5", "StartTime=now"), and
  // `scontrol release <job_id>`: for one task of an array by its id "<array>_<task>", which no
  // REST version updates alone.
  virtual absl::Status UpdateJobFields(const std::string& job_id, const std::vector<std::string>& fields) {
    (void)job_id, (void)fields;
    return absl::UnimplementedError("this scontrol cannot update jobs");
  }
  // `scontrol show job -o <job_id>`: one line per record.
  virtual absl::StatusOr<std::string> ShowJob(const std::string& job_id) {
    (void)job_id;
    return absl::UnimplementedError("this scontrol cannot show jobs");
  }
  virtual absl::Status ReleaseJob(const std::string& job_id) {
    (void)job_id;
    return absl::UnimplementedError("this scontrol cannot release jobs");
  }
  // `scontrol requeue <job_id>` for one task of an array by its id "<array>_<task>".
  virtual absl::Status RequeueTask(const std::string& job_id) {
    (void)job_id;
    return absl::UnimplementedError("this scontrol cannot requeue array tasks");
  }
  // Issue 26: every job record's state through the `squeue` beside scontrol (REST v0.0.38-40
  // has no jobs/state/): `squeue --noheader --all --states=all -O JobID:|,ArrayTaskID:|,State:|`.
  virtual absl::StatusOr<JobStateListing> ListJobStates() {
    return absl::UnimplementedError("this scontrol cannot list job states");
  }
};

// Issue 26: ListJobStates' reading of squeue's lines "<record id>|<task or N/A>|<STATE>|" (the
// pending record of an array once, its tasks as "2-5%2"; seen on 22.05, 24.11 and 26.05). A line
// that is not that is an error, not skipped: the listing must be complete.
absl::StatusOr<JobStateListing> ParseSqueueStates(const std::string& text);

// `scontrol_path` is the binary (e.g. /usr/bin/scontrol); its messages are mapped to codes:
// "Invalid job id"/"Invalid node name" -> kNotFound, "Unable to contact" -> kUnavailable,
// "Access/Permission denied" -> kPermissionDenied.
std::unique_ptr<Scontrol> MakeScontrol(std::string scontrol_path, std::unique_ptr<CommandRunner> runner);

}  // namespace onequeue::slurm

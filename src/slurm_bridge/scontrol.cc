#include "slurm_bridge/scontrol.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

extern char** environ;

namespace onequeue::slurm {
namespace {

class ProcessRunner : public CommandRunner {
 public:
  explicit ProcessRunner(ProcessRunnerOptions o) : options_(std::move(o)) {}

  absl::StatusOr<std::string> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return absl::InvalidArgumentError("empty command");
    const absl::Duration left = options_.time_left ? options_.time_left() : absl::InfiniteDuration();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat(absl::StrJoin(argv, " "), " abandoned: the writer's lease ends before it was started"));
    }
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      absl::string_view kv(*e);
      const std::string key(kv.substr(0, kv.find('=')));
      if (options_.extra_env.count(key) == 0) env_strings.emplace_back(kv);
    }
    for (const auto& [k, v] : options_.extra_env) env_strings.push_back(absl::StrCat(k, "=", v));
    std::vector<char*> envp, args;
    for (std::string& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (std::string& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);

    int out_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 2);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(out_pipe[1]);
    if (rc != 0) {
      close(out_pipe[0]);
      return absl::FailedPreconditionError(absl::StrCat("cannot run ", argv[0], ": ", strerror(rc)));
    }
    std::string output;
    const absl::Time deadline = absl::Now() + std::min(options_.timeout, left);
    bool timed_out = false;
    char buf[4096];
    for (;;) {
      const int64_t left_ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (left_ms <= 0) {
        timed_out = true;
        break;
      }
      pollfd p{out_pipe[0], POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000))) <= 0) continue;
      const ssize_t n = read(out_pipe[0], buf, sizeof buf);
      if (n <= 0) break;
      output.append(buf, static_cast<size_t>(n));
    }
    close(out_pipe[0]);
    if (timed_out) kill(pid, SIGKILL);  // only the child we started
    int status = 0;
    waitpid(pid, &status, 0);
    if (timed_out)
      return absl::DeadlineExceededError(absl::StrCat(absl::StrJoin(argv, " "), " did not finish in time"));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      return absl::UnknownError(absl::StrCat(absl::StrJoin(argv, " "), " failed: ", output));
    return output;
  }

 private:
  ProcessRunnerOptions options_;
};

class ScontrolImpl : public Scontrol {
 public:
  ScontrolImpl(std::string path, std::unique_ptr<CommandRunner> runner)
      : path_(std::move(path)), runner_(std::move(runner)) {}

  absl::Status DrainNode(const std::string& node, const std::string& reason) override {
    return Call({path_, "update", absl::StrCat("nodename=", node), "state=drain", absl::StrCat("reason=", reason)});
  }
  absl::Status ResumeNode(const std::string& node) override {
    return Call({path_, "update", absl::StrCat("nodename=", node), "state=resume"});
  }
  absl::Status RequeueJob(uint32_t job_id) override {
    return Call({path_, "requeue", std::to_string(job_id)});
  }
  absl::Status SetJobAdminComment(const std::string& job_id, const std::string& text) override {
    return Call({path_, "update", absl::StrCat("JobId=", job_id), absl::StrCat("AdminComment=", text)});
  }
  absl::Status UpdateJobFields(const std::string& job_id, const std::vector<std::string>& fields) override {
    std::vector<std::string> argv = {path_, "update", absl::StrCat("JobId=", job_id)};
    argv.insert(argv.end(), fields.begin(), fields.end());
    return Call(argv);
  }
  absl::Status ReleaseJob(const std::string& job_id) override { return Call({path_, "release", job_id}); }
  absl::Status RequeueTask(const std::string& job_id) override { return Call({path_, "requeue", job_id}); }
  absl::StatusOr<JobStateListing> ListJobStates() override {
    // Whatever follows the last '/' is scontrol's name: squeue sits beside it.
    const size_t slash = path_.rfind('/');
    const std::string squeue = slash == std::string::npos ? "squeue" : path_.substr(0, slash + 1) + "squeue";
    absl::StatusOr<std::string> out =
        runner_->Run({squeue, "--noheader", "--all", "--array", "--states=all", "-O", "JobID:|,ArrayTaskID:|,State:|"});
    if (!out.ok()) {
      const std::string msg(out.status().message());
      if (absl::StrContains(msg, "Unable to contact") || absl::StrContains(msg, "Socket timed out"))
        return absl::UnavailableError(msg);
      return out.status();
    }
    return ParseSqueueStates(*out);
  }
  absl::StatusOr<std::string> ShowJob(const std::string& job_id) override {
    absl::StatusOr<std::string> out = runner_->Run({path_, "show", "job", "-o", job_id});
    if (!out.ok() && absl::StrContains(out.status().message(), "Invalid job id"))
      return absl::NotFoundError(out.status().message());
    return out;
  }

 private:
  absl::Status Call(const std::vector<std::string>& argv) {
    absl::StatusOr<std::string> out = runner_->Run(argv);
    if (out.ok()) return absl::OkStatus();
    const std::string msg(out.status().message());
    if (absl::StrContains(msg, "Invalid job id") || absl::StrContains(msg, "Invalid node name"))
      return absl::NotFoundError(msg);
    if (absl::StrContains(msg, "Unable to contact") || absl::StrContains(msg, "Socket timed out"))
      return absl::UnavailableError(msg);
    if (absl::StrContains(msg, "Access/permission denied") || absl::StrContains(msg, "Access denied"))
      return absl::PermissionDeniedError(msg);
    if (absl::StrContains(msg, "already completing or completed") || absl::StrContains(msg, "Job is pending") ||
        absl::StrContains(msg, "Only batch jobs are accepted"))
      return absl::FailedPreconditionError(msg);
    return out.status();
  }

  const std::string path_;
  std::unique_ptr<CommandRunner> runner_;
};

}  // namespace

absl::StatusOr<JobStateListing> ParseSqueueStates(const std::string& text) {
  // --array: one line per task. Without it squeue merges every pending record of an array into
  // one line under the array's id, a task split off it (held, or started by onequeue and not yet
  // running) included, so that record looked gone (seen live on 22.05; recorded in the fixtures).
  // A record's lines are merged back here: its tasks in task order.
  std::map<uint32_t, SlurmJobState> records;
  std::map<uint32_t, std::vector<std::pair<int64_t, std::string>>> tasks;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, '|');
    SlurmJobState s;
    const std::string state = f.size() >= 3 ? std::string(absl::StripAsciiWhitespace(f[2])) : "";
    std::string own_tasks;  // "12+1" for a het job's component; never tasks in this column
    if (f.size() < 3 || !ParseStateRecordId(std::string(absl::StripAsciiWhitespace(f[0])), s.job_id, own_tasks) ||
        !own_tasks.empty() || state.empty())
      return absl::InternalError(absl::StrCat("squeue printed a line that is no job state: \"", line, "\""));
    const absl::string_view task = absl::StripAsciiWhitespace(f[1]);
    if (task != "N/A") {
      int64_t order = 0;
      if (!absl::SimpleAtoi(task, &order)) order = -1;  // a range, should a squeue print one
      tasks[s.job_id].emplace_back(order, std::string(task));
    }
    if (ParseJobState(state) != JobState::kUnknown) s.state = ParseJobState(state);
    else s.state_flags.insert(absl::AsciiStrToUpper(state));  // e.g. COMPLETING: compared as it is
    records.try_emplace(s.job_id, std::move(s));
  }
  JobStateListing out;
  for (auto& [id, s] : records) {
    std::vector<std::pair<int64_t, std::string>>& t = tasks[id];
    std::sort(t.begin(), t.end());
    s.tasks = absl::StrJoin(t, ",", [](std::string* o, const auto& p) { absl::StrAppend(o, p.second); });
    out.items.push_back(std::move(s));
  }
  return out;
}

std::unique_ptr<CommandRunner> MakeProcessRunner(ProcessRunnerOptions options) {
  return std::make_unique<ProcessRunner>(std::move(options));
}

std::unique_ptr<Scontrol> MakeScontrol(std::string scontrol_path, std::unique_ptr<CommandRunner> runner) {
  return std::make_unique<ScontrolImpl>(std::move(scontrol_path), std::move(runner));
}

}  // namespace onequeue::slurm

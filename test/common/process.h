// The one way the tests start child processes: run a command to its end (output captured or in a
// file, a timeout that kills its whole process group), or spawn a daemon and keep its PID (WaitPid,
// StopProcess). No shell: argv[0] is a path. Everything the child needs is prepared before fork(),
// so it is safe in a test process that runs threads (informers, gRPC).
//
//   auto r = RunProcess({.argv = {"/usr/bin/ss", "-Hltn"}, .timeout = std::chrono::seconds(10)});
//   auto pid = SpawnProcess({.argv = {bin, "--config", path}, .output_file = log, .merge_stderr = true});
//   ... StopProcess(*pid);
#ifndef ONEQUEUE_TEST_COMMON_PROCESS_H_
#define ONEQUEUE_TEST_COMMON_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace onequeue::testing {

struct ProcessOptions {
  std::vector<std::string> argv = {};  // argv[0]: the program's path (no PATH search, no shell)
  // NAME=value entries placed before the inherited environment; an inherited entry of the same
  // NAME is left out, so these win for every reader of the environment.
  std::vector<std::string> env = {};
  bool inherit_env = true;  // false: the child's environment is `env` alone
  std::string cwd = {};     // empty: ours
  // Run as this Unix user (its uid, primary gid and supplementary groups); needs root. Empty: us.
  std::string user = {};
  // RunProcess only: the child's stdin (empty: /dev/null). SpawnProcess: always /dev/null.
  std::string stdin_text = {};
  // Non-empty: stdout is appended to this file (created 0644). Empty: RunProcess captures it in
  // ProcessResult::out, SpawnProcess leaves it on ours.
  std::string output_file = {};
  bool merge_stderr = false;  // stderr goes where stdout goes; otherwise captured in err (Run) or ours (Spawn)
  // The child leads a process group of its own, so a timeout kills everything it started. false:
  // it stays in ours (a daemon then dies with the test's process group); the timeout kills it alone.
  bool new_process_group = true;
  std::chrono::milliseconds timeout = std::chrono::seconds(60);  // RunProcess only
};

struct ProcessResult {
  int exit_code = -1;  // -1: killed by a signal or by the timeout
  bool timed_out = false;
  std::string out;  // stdout (and stderr if merged), unless it went to output_file
  std::string err;  // stderr, unless merged
};

// Runs the command until it exits; after options.timeout kills its process group (SIGKILL) and
// sets timed_out. Stops reading once the child has exited, not at EOF: a daemon the child started
// must never keep the caller waiting on an inherited pipe. An error only if the command could not
// be started (fork failed, no such program, cwd or user unusable).
absl::StatusOr<ProcessResult> RunProcess(const ProcessOptions& options);

// Starts the command and returns its PID at once (the caller reaps it with WaitPid/StopProcess).
// An error if it could not be started.
absl::StatusOr<pid_t> SpawnProcess(const ProcessOptions& options);

// Waits up to `timeout` for our child `pid` to end; its wait status, nullopt if it still runs, 0 if
// it is not (or no longer) our child.
std::optional<int> WaitPid(pid_t pid, std::chrono::milliseconds timeout);

// Sends `signal` to pid, waits up to `grace`, then SIGKILL and up to 10 s more. The wait status,
// nullopt if it still did not end.
std::optional<int> StopProcess(pid_t pid, int signal = SIGTERM,
                               std::chrono::milliseconds grace = std::chrono::seconds(10));

// The exit code of a wait status, -1 if it ended by a signal (or is nullopt).
int ExitCode(std::optional<int> wait_status);

// For signal handlers and atexit hooks: fork, execve(argv[0], argv, environ), wait for it. Only
// async-signal-safe calls; argv must be prepared beforehand. Output goes to ours.
void RunFromSignalHandler(char* const argv[]);

// True if `pid` no longer runs (gone, or a zombie waiting to be reaped).
bool ProcessGone(int pid);

}  // namespace onequeue::testing

#endif  // ONEQUEUE_TEST_COMMON_PROCESS_H_

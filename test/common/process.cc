#include "common/process.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

extern char** environ;

namespace onequeue::testing {
namespace {

using Clock = std::chrono::steady_clock;

// An owned file descriptor (-1: none).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

absl::Status ErrnoError(const std::string& what) { return absl::ErrnoToStatus(errno, what); }

// The environment of the child: options.env first, then (unless inherit_env is false) ours,
// without the names options.env sets.
std::vector<std::string> ChildEnvironment(const ProcessOptions& options) {
  std::vector<std::string> env = options.env;
  if (!options.inherit_env) return env;
  std::set<std::string> names;
  for (const auto& kv : options.env) names.insert(kv.substr(0, kv.find('=')));
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (names.count(kv.substr(0, kv.find('='))) == 0) env.push_back(std::move(kv));
  }
  return env;
}

struct Identity {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
};

absl::StatusOr<Identity> LookUpUser(const std::string& user) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  const int rc = getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("no user ", user, rc != 0 ? absl::StrCat(": ", std::strerror(rc)) : ""));
  }
  Identity id{pw.pw_uid, pw.pw_gid, {}};
  int n = 0;
  getgrouplist(user.c_str(), id.gid, nullptr, &n);
  id.groups.resize(static_cast<size_t>(n));
  if (getgrouplist(user.c_str(), id.gid, id.groups.data(), &n) < 0) {
    return absl::InternalError(absl::StrCat("getgrouplist ", user));
  }
  id.groups.resize(static_cast<size_t>(n));
  return id;
}

// Where the child's standard descriptors come from; -1: it keeps ours.
struct Stdio {
  int in = -1, out = -1, err = -1;
};

// What the child reports through the CLOEXEC pipe when it cannot exec.
enum Stage : int { kStdio = 1, kGroup, kCwd, kUser, kExec };
struct ChildError {
  int stage;
  int error;
};

[[noreturn]] void ChildFail(int report_fd, Stage stage) {
  const ChildError e{stage, errno};
  (void)!write(report_fd, &e, sizeof e);
  _exit(127);
}

// fork + execve. Returns once the child has exec'd (or failed to: then the error, and the child
// is reaped). The child gets only async-signal-safe calls.
absl::StatusOr<pid_t> Start(const ProcessOptions& options, Stdio io) {
  if (options.argv.empty()) return absl::InvalidArgumentError("RunProcess/SpawnProcess: empty argv");
  std::vector<char*> c_argv;
  for (const auto& a : options.argv) c_argv.push_back(const_cast<char*>(a.c_str()));
  c_argv.push_back(nullptr);
  std::vector<std::string> env = ChildEnvironment(options);
  std::vector<char*> c_env;
  for (auto& kv : env) c_env.push_back(kv.data());
  c_env.push_back(nullptr);
  std::optional<Identity> id;
  if (!options.user.empty()) {
    auto looked_up = LookUpUser(options.user);
    if (!looked_up.ok()) return looked_up.status();
    id = *std::move(looked_up);
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return ErrnoError("pipe");
  Fd report_read(report[0]), report_write(report[1]);

  const pid_t pid = fork();
  if (pid < 0) return ErrnoError("fork");
  if (pid == 0) {
    int fd = report[1];
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    if (options.new_process_group && setpgid(0, 0) != 0) ChildFail(fd, kGroup);
    const int sources[3] = {io.in, io.out, io.err};
    for (int target = 0; target < 3; ++target) {
      if (sources[target] < 0) continue;
      const int rc = sources[target] == target ? fcntl(target, F_SETFD, 0) : dup2(sources[target], target);
      if (rc < 0) ChildFail(fd, kStdio);
    }
    // Nothing else of ours reaches the program (nor the daemons it may start), but the report pipe
    // (CLOEXEC), moved to 3.
    if (fd != 3) {
      if (dup3(fd, 3, O_CLOEXEC) < 0) ChildFail(fd, kStdio);
      fd = 3;
    }
    close_range(4, ~0U, 0);
    if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) ChildFail(fd, kCwd);
    if (id.has_value() && (setgroups(id->groups.size(), id->groups.data()) != 0 ||
                           setresgid(id->gid, id->gid, id->gid) != 0 || setresuid(id->uid, id->uid, id->uid) != 0)) {
      ChildFail(fd, kUser);
    }
    execve(c_argv[0], c_argv.data(), c_env.data());
    ChildFail(fd, kExec);
  }
  report_write.Reset();
  ChildError e{};
  ssize_t n;
  while ((n = read(report_read.get(), &e, sizeof e)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(sizeof e)) return pid;  // EOF: execve closed the pipe
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string what;
  switch (e.stage) {
    case kStdio: what = "redirect stdio"; break;
    case kGroup: what = "setpgid"; break;
    case kCwd: what = "chdir " + options.cwd; break;
    case kUser: what = "become user " + options.user; break;
    default: what = "execve"; break;
  }
  return absl::ErrnoToStatus(e.error, absl::StrCat("cannot start ", options.argv[0], ": ", what));
}

// Reads what is there; at EOF (or an error) closes the fd and sets it to -1, which poll() then
// ignores (a closed pipe would otherwise report POLLHUP at once, forever).
void Drain(Fd& fd, std::string& sink) {
  char buf[65536];
  while (fd.get() >= 0) {
    const ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      sink.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) fd.Reset();
    return;
  }
}

// The child's stdin: /dev/null, or a memory file holding `text` (no pipe to feed, so no SIGPIPE
// and no deadlock with a child that does not read it).
absl::Status OpenStdin(const std::string& text, Fd& fd) {
  if (text.empty()) {
    fd.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    return fd.get() < 0 ? ErrnoError("open /dev/null") : absl::OkStatus();
  }
  fd.Reset(memfd_create("onequeue-stdin", MFD_CLOEXEC));
  if (fd.get() < 0) return ErrnoError("memfd_create");
  for (size_t written = 0; written < text.size();) {
    const ssize_t n = write(fd.get(), text.data() + written, text.size() - written);
    if (n < 0 && errno != EINTR) return ErrnoError("write stdin");
    if (n > 0) written += static_cast<size_t>(n);
  }
  return lseek(fd.get(), 0, SEEK_SET) == 0 ? absl::OkStatus() : ErrnoError("lseek stdin");
}

absl::Status OpenOutputFile(const std::string& path, Fd& fd) {
  fd.Reset(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  return fd.get() < 0 ? ErrnoError("open " + path) : absl::OkStatus();
}

absl::Status OpenPipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ProcessResult> RunProcess(const ProcessOptions& options) {
  Fd in, out_file, out_read, out_write, err_read, err_write;
  if (auto s = OpenStdin(options.stdin_text, in); !s.ok()) return s;
  if (auto s = options.output_file.empty() ? OpenPipe(out_read, out_write)
                                           : OpenOutputFile(options.output_file, out_write);
      !s.ok()) {
    return s;
  }
  if (!options.merge_stderr) {
    if (auto s = OpenPipe(err_read, err_write); !s.ok()) return s;
  }
  auto pid = Start(options, {in.get(), out_write.get(), options.merge_stderr ? out_write.get() : err_write.get()});
  if (!pid.ok()) return pid.status();
  in.Reset();
  out_write.Reset();
  err_write.Reset();

  ProcessResult result;
  const auto deadline = Clock::now() + options.timeout;
  // Readable when the child ends, so poll() wakes at once (without it: every 50 ms).
  Fd exited(static_cast<int>(syscall(SYS_pidfd_open, *pid, 0)));
  int status = 0;
  while (true) {
    pollfd fds[3] = {{out_read.get(), POLLIN, 0}, {err_read.get(), POLLIN, 0}, {exited.get(), POLLIN, 0}};
    poll(fds, 3, 50);
    Drain(out_read, result.out);
    Drain(err_read, result.err);
    if (waitpid(*pid, &status, WNOHANG) == *pid) break;
    if (Clock::now() > deadline) {
      result.timed_out = true;
      if (options.new_process_group) kill(-*pid, SIGKILL);
      kill(*pid, SIGKILL);
      while (waitpid(*pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
  }
  Drain(out_read, result.out);
  Drain(err_read, result.err);
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

absl::StatusOr<pid_t> SpawnProcess(const ProcessOptions& options) {
  if (!options.stdin_text.empty()) return absl::InvalidArgumentError("SpawnProcess: stdin_text is for RunProcess");
  Fd in, out;
  if (auto s = OpenStdin("", in); !s.ok()) return s;
  if (!options.output_file.empty()) {
    if (auto s = OpenOutputFile(options.output_file, out); !s.ok()) return s;
  }
  return Start(options, {in.get(), out.get(), options.merge_stderr ? out.get() : -1});
}

std::optional<int> WaitPid(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return 0;  // not our child (any more)
    if (Clock::now() > deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<int> StopProcess(pid_t pid, int signal, std::chrono::milliseconds grace) {
  kill(pid, signal);
  if (auto status = WaitPid(pid, grace)) return status;
  kill(pid, SIGKILL);
  return WaitPid(pid, std::chrono::seconds(10));
}

int ExitCode(std::optional<int> wait_status) {
  return wait_status.has_value() && WIFEXITED(*wait_status) ? WEXITSTATUS(*wait_status) : -1;
}

void RunFromSignalHandler(char* const argv[]) {
  const pid_t pid = fork();
  if (pid == 0) {
    execve(argv[0], argv, environ);
    _exit(127);
  }
  if (pid > 0) {
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

bool ProcessGone(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // The comm field may hold spaces ("slurmstepd: [1.batch]"): the state follows the last ')'.
  // read(2), not a stream: a process that exits between kill() and the read makes read() fail
  // with ESRCH, which libstdc++'s filebuf throws as an exception (seen in a teardown of
  // stackhpc_e2e_test); a failed read means the process is gone.
  const int fd = open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  std::string all(4096, '\0');
  const ssize_t n = read(fd, all.data(), all.size());
  close(fd);
  if (n <= 0) return true;
  all.resize(static_cast<size_t>(n));
  const auto paren = all.rfind(')');
  return paren != std::string::npos && paren + 2 < all.size() && all[paren + 2] == 'Z';
}

}  // namespace onequeue::testing

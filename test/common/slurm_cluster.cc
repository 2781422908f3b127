#include "common/slurm_cluster.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/process.h"

namespace onequeue::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string SourceDir() {
  if (const char* env = std::getenv("ONEQUEUE_SOURCE_DIR"); env != nullptr && *env != '\0') return env;
  return ONEQUEUE_SOURCE_DIR;
}

std::string ClusterScript(const std::string& name) { return SourceDir() + "/test/cluster/" + name; }

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    env[line.substr(0, eq)] = value;
  }
  return env;
}

// The one running cluster of this process. Process-wide on purpose: the signal handler and the
// atexit hook, which cannot take arguments, must find the folder to stop.
struct SlurmClusterState {
  SlurmClusterInfo info;
  bool running = false;
  std::vector<int> ports;  // every TCP port of the cluster, checked closed after TearDown
  // slurm-down.sh's argv, prepared before any signal can arrive (a handler may not allocate).
  std::string bash = "/bin/bash";
  std::string down_script;
  std::string dir;
};
SlurmClusterState& State() {
  static SlurmClusterState* state = new SlurmClusterState();  // never destroyed: used from atexit/signals
  return *state;
}
volatile sig_atomic_t g_slurm_stopping = 0;
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS};
struct sigaction g_previous_actions[NSIG];

// Runs slurm-down.sh with async-signal-safe calls only.
void StopClusterFromSignal() {
  SlurmClusterState& s = State();
  char* argv[] = {s.bash.data(), s.down_script.data(), s.dir.data(), nullptr};
  RunFromSignalHandler(argv);
}

// Stops the cluster, then lets the handler that was there before ours (another test environment's,
// or the default action) deal with the signal.
void OnFatalSignal(int sig) {
  if (g_slurm_stopping == 0 && State().running) {
    g_slurm_stopping = 1;
    static const char msg[] = "\nslurm cluster: signal received, stopping the local Slurm (slurm-down.sh)\n";
    (void)!write(2, msg, sizeof msg - 1);
    StopClusterFromSignal();
  }
  sigaction(sig, &g_previous_actions[sig], nullptr);
  raise(sig);
}

void OnExit() {
  if (State().running && g_slurm_stopping == 0) {
    g_slurm_stopping = 1;
    std::cerr << "slurm cluster: process exiting without TearDown, stopping " << State().dir << "\n";
    StopClusterFromSignal();
  }
}

void InstallCleanupHooks() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  std::atexit(OnExit);
  for (int sig : kStopSignals) {
    struct sigaction sa {};
    sa.sa_handler = OnFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(sig, &sa, &g_previous_actions[sig]);
  }
}

absl::Status RunClusterScript(const SlurmClusterInfo& info, const std::vector<std::string>& args,
                              std::chrono::seconds timeout) {
  std::vector<std::string> argv = {"/bin/bash"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunProcess({.argv = argv, .merge_stderr = true, .timeout = timeout});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(absl::StrJoin(args, " "),
                                               r->timed_out ? " timed out" : " failed", ":\n", r->out));
  }
  return absl::OkStatus();
}

// A clean environment: sbatch hands the submitter's whole environment to the job (--export=ALL),
// and ours (TMPDIR, SLURM_* of an enclosing job, ...) has no business there.
std::vector<std::string> SlurmChildEnv(const SlurmClusterInfo& info) {
  std::vector<std::string> env = {absl::StrCat("SLURM_CONF=", info.slurm_conf), "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                  "LANG=C.UTF-8", absl::StrCat("HOME=", info.jobs_dir),
                                  absl::StrCat("USER=", info.user)};
  // A root filesystem's wrappers need root (nsenter, chroot) and switch to the user inside it.
  if (!info.root.empty() && geteuid() == 0) env.push_back(absl::StrCat("ONEQUEUE_SLURM_RUN_AS=", info.user));
  return env;
}

// Where the cluster folder goes: $TMPDIR if the daemons' users (munge, slurm, nobody) can reach it
// and its paths stay short enough for unix sockets, /tmp otherwise.
std::string ClusterParentDir() {
  const char* tmp = std::getenv("TMPDIR");
  if (tmp == nullptr || *tmp == '\0' || std::string(tmp).size() > 36) return "/tmp";
  std::error_code ec;
  for (fs::path p = fs::absolute(tmp, ec); !ec && !p.empty(); p = p.parent_path()) {
    auto perms = fs::status(p, ec).permissions();
    if (ec || (perms & fs::perms::others_exec) == fs::perms::none) return "/tmp";
    if (p == p.root_path()) break;
  }
  return ec ? "/tmp" : std::string(tmp);
}

}  // namespace

SlurmClusterEnvironment::SlurmClusterEnvironment(SlurmClusterOptions options) : options_(options) {}

const SlurmClusterInfo& SlurmClusterEnvironment::Info() { return State().info; }

void SlurmClusterEnvironment::SetUp() {
  SlurmClusterState& s = State();
  ASSERT_FALSE(s.running) << "one SlurmClusterEnvironment per process";
  std::string templ = ClusterParentDir() + "/onequeue-slurm-XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr) << "mkdtemp " << templ << ": " << std::strerror(errno);
  s.dir = templ;
  s.down_script = ClusterScript("slurm-down.sh");
  s.info = SlurmClusterInfo{};
  s.info.dir = s.dir;
  // Hooks first: an interrupted slurm-up.sh has already started processes that must be stopped.
  s.running = true;
  InstallCleanupHooks();

  std::vector<std::string> argv = {"/bin/bash", ClusterScript("slurm-up.sh"), s.dir, "--nodes",
                                   std::to_string(options_.nodes), "--gpus", std::to_string(options_.gpus),
                                   "--owner-pid", std::to_string(getpid())};
  if (options_.requeue_delay_seconds > 0) {
    argv.insert(argv.end(), {"--requeue-delay", std::to_string(options_.requeue_delay_seconds)});
  }
  const auto started = Clock::now();
  // slurm-up.sh's own waits are bounded (about 1 minute for 64 nodes); this is the last resort.
  auto r = RunProcess({.argv = argv, .merge_stderr = true, .timeout = std::chrono::seconds(180)});
  ASSERT_TRUE(r.ok()) << r.status();
  if (r->exit_code != 0) {
    StopClusterFromSignal();  // whatever a timed-out slurm-up.sh left behind
    s.running = false;
    GTEST_FAIL() << "local Slurm did not start: " << absl::StrJoin(argv, " ")
                 << (r->timed_out ? " timed out" : absl::StrCat(" exited ", r->exit_code))
                 << " (logs kept in " << s.dir << "/logs). Output:\n"
                 << r->out;
  }
  auto env = ReadEnvFile(s.dir + "/slurm.env");
  SlurmClusterInfo& i = s.info;
  i.rest_url = env["SLURMRESTD_URL"];
  i.rest_socket = env["SLURMRESTD_SOCKET"];
  i.token_file = env["SLURM_JWT_FILE"];
  i.user = env["SLURM_USER"];
  i.slurm_conf = env["SLURM_CONF"];
  i.bin_dir = env["SLURM_BIN"];
  i.shared_partition = env["SLURM_SHARED_PARTITION"];
  i.reclaim_partition = env["SLURM_RECLAIM_PARTITION"];
  i.nodes = absl::StrSplit(env["SLURM_NODES"], ' ', absl::SkipEmpty());
  i.jobs_dir = env["SLURM_JOBS_DIR"];
  i.cluster_name = env["SLURM_CLUSTER_NAME"];
  i.version = env["SLURM_VERSION"];
  i.release = env["SLURM_RELEASE"];
  i.rest_api = env["SLURMRESTD_API"];
  i.root = env["SLURM_ROOT"];
  ASSERT_FALSE(i.rest_url.empty() || i.slurm_conf.empty() || i.nodes.empty())
      << s.dir << "/slurm.env is incomplete; slurm-up.sh said:\n"
      << r->out;

  auto ports = ReadEnvFile(s.dir + "/ports.env");
  int ctld = 0, rest = 0, first_slurmd = 0;
  if (absl::SimpleAtoi(ports["CTLD_PORT"], &ctld) && absl::SimpleAtoi(ports["REST_PORT"], &rest) &&
      absl::SimpleAtoi(ports["FIRST_SLURMD_PORT"], &first_slurmd)) {
    s.ports = {ctld, rest};
    for (size_t k = 0; k < i.nodes.size(); ++k) s.ports.push_back(first_slurmd + static_cast<int>(k));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::cerr << "slurm cluster: Slurm " << i.release << " (ONEQUEUE_SLURM=" << i.version << "), REST " << i.rest_api
            << (i.root.empty() ? "" : ", under chroot " + i.root) << ": " << i.nodes.size() << " nodes up in "
            << seconds << " s, slurmrestd at " << i.rest_url << " (" << s.dir << ")\n";
}

void SlurmClusterEnvironment::TearDown() {
  SlurmClusterState& s = State();
  if (!s.running) return;
  const auto pids = SlurmClusterPids(s.info);
  absl::Status down = RunClusterScript(s.info, {s.down_script, s.dir}, std::chrono::seconds(120));
  s.running = false;
  EXPECT_TRUE(down.ok()) << down;
  std::vector<std::string> left;
  for (const auto& [name, pid] : pids) {
    if (!ProcessGone(pid)) left.push_back(absl::StrCat(name, " (pid ", pid, ")"));
  }
  EXPECT_TRUE(left.empty()) << "still running after slurm-down.sh: " << absl::StrJoin(left, ", ");
  // slurm-down.sh fails if a port of the cluster still listens (checked before it releases them).
  std::cerr << "slurm cluster: stopped; " << (pids.size() - left.size()) << "/" << pids.size()
            << " started processes verified gone, " << s.ports.size() << " ports "
            << (down.ok() ? "verified closed" : "NOT verified") << "\n";
  const char* keep = std::getenv("ONEQUEUE_KEEP_CLUSTER");
  const bool passed = ::testing::UnitTest::GetInstance()->Passed() && down.ok() && left.empty();
  if (passed && (keep == nullptr || std::string(keep) != "1")) {
    std::error_code ec;
    fs::remove_all(s.dir, ec);
  } else {
    std::cerr << "slurm cluster: logs kept in " << s.dir << "/logs\n";
  }
}

std::vector<std::pair<std::string, int>> SlurmClusterPids(const SlurmClusterInfo& info) {
  std::vector<std::pair<std::string, int>> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(info.dir + "/pids", ec)) {
    // Only our own records (NAME.pid), not the daemons' own pid files (NAME.daemon.pid).
    const std::string file = entry.path().filename().string();
    if (!absl::EndsWith(file, ".pid") || absl::EndsWith(file, ".daemon.pid")) continue;
    std::ifstream in(entry.path());
    int pid = 0;
    if (in >> pid && pid > 0) pids.emplace_back(entry.path().stem().string(), pid);
  }
  return pids;
}

absl::StatusOr<std::string> SlurmCommand(const SlurmClusterInfo& info, const std::vector<std::string>& argv) {
  if (argv.empty()) return absl::InvalidArgumentError("SlurmCommand: empty argv");
  std::vector<std::string> command = argv;
  if (command[0].find('/') == std::string::npos) command[0] = info.bin_dir + "/" + command[0];
  // As info.user when we are root: sbatch'ed jobs run as their submitter, and slurmd (running as
  // slurm) can only start jobs of slurm.
  auto r = RunProcess({.argv = command,
                       .env = SlurmChildEnv(info),
                       .inherit_env = false,
                       .cwd = info.jobs_dir,
                       .user = geteuid() == 0 && info.root.empty() ? info.user : "",
                       .timeout = std::chrono::seconds(60)});
  if (!r.ok()) return r.status();
  if (r->timed_out) {
    return absl::DeadlineExceededError(absl::StrCat(absl::StrJoin(argv, " "), " ran longer than 60 s: ", r->err));
  }
  if (r->exit_code != 0) {
    return absl::UnavailableError(
        absl::StrCat(absl::StrJoin(argv, " "), " exited ", r->exit_code, ": ", absl::StripAsciiWhitespace(r->err)));
  }
  return r->out;
}

absl::Status StopDaemon(const SlurmClusterInfo& info, const std::string& name) {
  return RunClusterScript(info, {ClusterScript("slurm-daemon.sh"), info.dir, "stop", name}, std::chrono::seconds(60));
}

absl::Status StartDaemon(const SlurmClusterInfo& info, const std::string& name) {
  return RunClusterScript(info, {ClusterScript("slurm-daemon.sh"), info.dir, "start", name}, std::chrono::seconds(90));
}

absl::StatusOr<std::string> MintToken(const SlurmClusterInfo& info, const std::string& user, int lifespan_seconds) {
  auto out = SlurmCommand(info, {"scontrol", "token", absl::StrCat("username=", user),
                                 absl::StrCat("lifespan=", lifespan_seconds)});
  if (!out.ok()) return out.status();
  absl::string_view token = absl::StripAsciiWhitespace(*out);
  if (!absl::ConsumePrefix(&token, "SLURM_JWT=") || token.empty()) {
    return absl::InternalError(absl::StrCat("scontrol token printed no SLURM_JWT=: ", *out));
  }
  return std::string(token);
}

absl::StatusOr<SlurmRestResponse> SlurmRest(const SlurmClusterInfo& info, const SlurmRestRequest& request) {
  std::string token;
  if (request.token.has_value()) {
    token = *request.token;
  } else {
    std::ifstream in(info.token_file);
    if (!(in >> token)) return absl::FailedPreconditionError(absl::StrCat("cannot read ", info.token_file));
  }
  // The status code goes last on stdout, after a marker line, so the body may be anything.
  static constexpr char kMarker[] = "\n@@oq-http-status@@";
  std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--max-time", "30", "-X", request.method,
                                   "-w", absl::StrCat(kMarker, "%{http_code}")};
  if (request.token.has_value() && request.token->empty()) {
    // no authentication headers: the unauthenticated case
  } else {
    argv.insert(argv.end(), {"-H", absl::StrCat("X-SLURM-USER-NAME: ",
                                                request.user_name.empty() ? info.user : request.user_name),
                             "-H", absl::StrCat("X-SLURM-USER-TOKEN: ", token)});
  }
  if (!request.body.empty()) {
    argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data-binary", request.body});
  }
  if (request.via_socket) {
    argv.insert(argv.end(), {"--unix-socket", info.rest_socket, absl::StrCat("http://localhost", request.path)});
  } else {
    argv.push_back(info.rest_url + request.path);
  }
  auto r = RunProcess({.argv = argv, .timeout = std::chrono::seconds(40)});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat("curl ", request.method, " ", request.path, " exited ", r->exit_code,
                                               ": ", absl::StripAsciiWhitespace(r->err)));
  }
  auto marker = r->out.rfind(kMarker);
  if (marker == std::string::npos) return absl::InternalError("curl printed no status code");
  SlurmRestResponse response;
  response.body = r->out.substr(0, marker);
  if (!absl::SimpleAtoi(r->out.substr(marker + sizeof kMarker - 1), &response.http_status)) {
    return absl::InternalError(absl::StrCat("curl printed a bad status code: ", r->out.substr(marker)));
  }
  return response;
}

}  // namespace onequeue::testing

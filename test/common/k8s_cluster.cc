#include "common/k8s_cluster.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// Maps kubectl's "Error from server (Reason)" to the status a test can check without parsing text.
absl::Status KubectlError(const std::vector<std::string>& argv, const ProcessResult& r) {
  std::string message = absl::StrCat(absl::StrJoin(argv.begin() + 2, argv.end(), " "),
                                     r.timed_out ? " timed out" : absl::StrCat(" exited ", r.exit_code), ": ",
                                     absl::StripAsciiWhitespace(r.err));
  if (r.timed_out) return absl::DeadlineExceededError(message);
  if (absl::StrContains(r.err, "(Forbidden)")) return absl::PermissionDeniedError(message);
  if (absl::StrContains(r.err, "(NotFound)")) return absl::NotFoundError(message);
  if (absl::StrContains(r.err, "(AlreadyExists)")) return absl::AlreadyExistsError(message);
  if (absl::StrContains(r.err, "(Unauthorized)")) return absl::UnauthenticatedError(message);
  return absl::UnknownError(message);
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> env;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto eq = line.find('=');
    if (eq == std::string::npos || line[0] == '#') continue;
    env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

// The one running cluster of this process. It is process-wide on purpose: the signal handler and
// the atexit hook, which cannot take arguments, must find the folder to stop.
struct ClusterState {
  K8sClusterInfo info;
  bool running = false;
  // down.sh's argv, prepared before any signal can arrive (a handler may not allocate).
  std::string bash = "/bin/bash";
  std::string down_script;
  std::string dir;
  // The process that started the cluster: a forked child (a gtest death test) that exits or dies
  // must not stop its parent's cluster.
  pid_t owner = 0;
};
ClusterState& State() {
  static ClusterState* state = new ClusterState();  // never destroyed: used from atexit/signals
  return *state;
}
volatile sig_atomic_t g_stopping = 0;
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGABRT, SIGSEGV, SIGBUS, SIGHUP};

// Runs down.sh with async-signal-safe calls only.
void StopClusterFromSignal() {
  ClusterState& s = State();
  char* argv[] = {s.bash.data(), s.down_script.data(), s.dir.data(), nullptr};
  RunFromSignalHandler(argv);
}

void OnFatalSignal(int sig) {
  if (g_stopping == 0 && State().running && getpid() == State().owner) {
    g_stopping = 1;
    static const char msg[] = "\nk8s cluster: signal received, stopping the local cluster (down.sh)\n";
    (void)!write(2, msg, sizeof msg - 1);
    StopClusterFromSignal();
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void OnExit() {
  if (State().running && g_stopping == 0 && getpid() == State().owner) {
    g_stopping = 1;
    std::cerr << "k8s cluster: process exiting without TearDown, stopping " << State().dir << "\n";
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
    sigaction(sig, &sa, nullptr);
  }
}

absl::Status RunClusterScript(const std::string& script, const K8sClusterInfo& info,
                              std::chrono::seconds timeout) {
  auto r = RunProcess({.argv = {"/bin/bash", ClusterScript(script), info.dir}, .merge_stderr = true, .timeout = timeout});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(script, " ", info.dir,
                                               r->timed_out ? " timed out" : " failed", ":\n", r->out));
  }
  return absl::OkStatus();
}

}  // namespace

K8sClusterEnvironment::K8sClusterEnvironment(K8sClusterOptions options) : options_(options) {}

const K8sClusterInfo& K8sClusterEnvironment::Info() { return State().info; }

void K8sClusterEnvironment::SetUp() {
  ClusterState& s = State();
  ASSERT_FALSE(s.running) << "one K8sClusterEnvironment per process";
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/onequeue-k8s-XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr) << "mkdtemp " << templ << ": " << std::strerror(errno);
  s.dir = templ;
  s.down_script = ClusterScript("down.sh");
  s.info = K8sClusterInfo{};
  s.info.dir = s.dir;
  // Hooks first: an interrupted up.sh has already started processes that must be stopped.
  s.owner = getpid();
  s.running = true;
  InstallCleanupHooks();

  std::vector<std::string> argv = {"/bin/bash", ClusterScript("up.sh"), s.dir};
  if (options_.controller_manager) argv.push_back("--controller-manager");
  if (options_.kwok) argv.push_back(options_.kwok_graceful ? "--kwok-graceful" : "--kwok");
  if (options_.kube_scheduler) argv.push_back("--scheduler");
  if (options_.bench) argv.push_back("--bench");
  for (const std::string& a : options_.apiserver_args) argv.push_back("--apiserver-arg=" + a);
  // Generous: on a fresh machine up.sh may first wait for the upstream build's lock.
  const auto timeout = std::chrono::seconds(600);
  const auto started = Clock::now();
  auto r = RunProcess({.argv = argv,
                       .env = {absl::StrCat("ONEQUEUE_CLUSTER_OWNER_PID=", getpid())},
                       .merge_stderr = true,
                       .timeout = timeout});
  ASSERT_TRUE(r.ok()) << r.status();
  if (r->exit_code != 0) {
    StopClusterFromSignal();  // whatever a timed-out up.sh left behind
    s.running = false;
    GTEST_FAIL() << "local Kubernetes cluster did not start: " << absl::StrJoin(argv, " ")
                 << (r->timed_out ? " timed out" : absl::StrCat(" exited ", r->exit_code))
                 << " (logs kept in " << s.dir << "/logs). Output:\n"
                 << r->out;
  }
  auto env = ReadEnvFile(s.dir + "/env");
  K8sClusterInfo& i = s.info;
  i.server = env["ONEQUEUE_K8S_SERVER"];
  i.ca_file = env["ONEQUEUE_K8S_CA"];
  i.kubeconfig = env["ONEQUEUE_KUBECONFIG"];
  i.scheduler_kubeconfig = env["ONEQUEUE_SCHEDULER_KUBECONFIG"];
  i.nobody_kubeconfig = env["ONEQUEUE_NOBODY_KUBECONFIG"];
  i.admin_token = env["ONEQUEUE_ADMIN_TOKEN"];
  i.scheduler_token = env["ONEQUEUE_SCHEDULER_TOKEN"];
  i.etcd_url = env["ONEQUEUE_ETCD_URL"];
  i.upstream_bin = env["ONEQUEUE_UPSTREAM_BIN"];
  i.version = env["ONEQUEUE_K8S_VERSION"];
  i.kubectl = env["KUBECTL"];
  ASSERT_FALSE(i.server.empty() || i.kubectl.empty()) << s.dir << "/env is incomplete; up.sh said:\n" << r->out;
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::cerr << "k8s cluster: kube-apiserver " << i.version << " up in " << seconds << " s at " << i.server << " (" << s.dir << ")\n";
}

void K8sClusterEnvironment::TearDown() {
  ClusterState& s = State();
  if (!s.running) return;
  const auto pids = ClusterPids(s.info);
  absl::Status down = RunClusterScript("down.sh", s.info, std::chrono::seconds(180));
  s.running = false;
  EXPECT_TRUE(down.ok()) << down;
  std::vector<std::string> left;
  for (const auto& [name, pid] : pids) {
    if (!ProcessGone(pid)) left.push_back(absl::StrCat(name, " (pid ", pid, ")"));
  }
  EXPECT_TRUE(left.empty()) << "still running after down.sh: " << absl::StrJoin(left, ", ");
  std::vector<std::string> stopped;
  for (const auto& [name, pid] : pids) stopped.push_back(absl::StrCat(name, "=", pid));
  std::cerr << "k8s cluster: stopped; " << (pids.size() - left.size()) << "/" << pids.size()
            << " started processes verified gone: " << absl::StrJoin(stopped, " ") << "\n";
  const char* keep = std::getenv("ONEQUEUE_KEEP_CLUSTER");
  const bool passed = ::testing::UnitTest::GetInstance()->Passed() && down.ok() && left.empty();
  if (passed && (keep == nullptr || std::string(keep) != "1")) {
    std::error_code ec;
    fs::remove_all(s.dir, ec);
  } else {
    std::cerr << "k8s cluster: logs kept in " << s.dir << "/logs\n";
  }
}

std::vector<std::pair<std::string, int>> ClusterPids(const K8sClusterInfo& info) {
  std::vector<std::pair<std::string, int>> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(info.dir + "/pids", ec)) {
    if (entry.path().extension() != ".pid") continue;
    std::ifstream in(entry.path());
    int pid = 0;
    if (in >> pid && pid > 0) pids.emplace_back(entry.path().stem().string(), pid);
  }
  return pids;
}

absl::Status RestartApiserver(const K8sClusterInfo& info) {
  return RunClusterScript("restart-apiserver.sh", info, std::chrono::seconds(180));
}

absl::Status CompactEtcd(const K8sClusterInfo& info) {
  return RunClusterScript("etcd-compact.sh", info, std::chrono::seconds(60));
}

absl::StatusOr<std::string> KubectlAs(const K8sClusterInfo& info, const std::string& kubeconfig,
                                      const std::vector<std::string>& args, const std::string& stdin_text) {
  if (info.kubectl.empty()) return absl::FailedPreconditionError("the local cluster is not running");
  std::vector<std::string> argv = {info.kubectl, "--kubeconfig=" + kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunProcess({.argv = argv, .stdin_text = stdin_text, .timeout = std::chrono::seconds(120)});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return KubectlError(argv, *r);
  return std::move(r->out);
}

absl::StatusOr<std::string> Kubectl(const K8sClusterInfo& info, const std::vector<std::string>& args,
                                    const std::string& stdin_text) {
  return KubectlAs(info, info.kubeconfig, args, stdin_text);
}

}  // namespace onequeue::testing

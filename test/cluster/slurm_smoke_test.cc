// Smoke test of the local Slurm cluster (test/cluster/slurm-up.sh): the real munged, slurmctld,
// slurmd's and slurmrestd answer, a job runs and is read back over REST with the JWT, the
// placeholder ownership cycle of the design works with this configuration, and the restart
// scripts the slurm_bridge tests need do what they say. TearDown (in the environment) checks that
// nothing started remains. Runs on the Slurm ONEQUEUE_SLURM names (22.05, 24.11, 26.05) through the
// highest REST version it serves; the JSON shapes that differ (v0.0.38 against the data parsers of
// v0.0.40+) are read and written per version, everything else is asserted the same.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/slurm_cluster.h"

namespace onequeue::testing {
namespace {

using nlohmann::json;

constexpr int kNodes = 8;

const SlurmClusterInfo& Cluster() { return SlurmClusterEnvironment::Info(); }

// Bounded polling: true as soon as `done` holds, false after `timeout`.
bool WaitFor(const std::function<bool()>& done, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

SlurmRestRequest Request(const std::string& method, const std::string& path, const std::string& body = "") {
  SlurmRestRequest request;
  request.method = method;
  request.path = path;
  request.body = body;
  return request;
}

SlurmRestRequest WithToken(SlurmRestRequest request, const std::string& token) {
  request.token = token;
  return request;
}

std::string Path(const std::string& rest) { return Cluster().RestPath(rest); }

// The job as slurmrestd shows it ({} if it cannot be read).
json RestJob(int64_t id) {
  auto r = SlurmRest(Cluster(), Request("GET", Path(absl::StrCat("job/", id))));
  if (!r.ok() || r->http_status != 200) return json::object();
  json doc = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("jobs") || doc["jobs"].empty()) return json::object();
  return doc["jobs"][0];
}

// v0.0.38: "RUNNING"; v0.0.40+: ["RUNNING"] (flags follow the base state).
std::string JobState(const json& job) {
  auto it = job.find("job_state");
  if (it == job.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array() && !it->empty() && (*it)[0].is_string()) return (*it)[0].get<std::string>();
  return "";
}

// v0.0.38: 0; v0.0.40+: {"status":["SUCCESS"],"return_code":{"set":true,"number":0}}.
int64_t ExitCode(const json& job) {
  auto it = job.find("exit_code");
  if (it == job.end()) return -1;
  if (it->is_number()) return it->get<int64_t>();
  if (it->is_object() && it->contains("return_code")) {
    const json& rc = (*it)["return_code"];
    if (rc.is_number()) return rc.get<int64_t>();
    if (rc.is_object()) return rc.value("number", int64_t{-1});
  }
  return -1;
}

// The REST versions each Slurm serves (GET /openapi/v3), besides the one the cluster is checked on.
std::set<std::string> ExpectedRestVersions(const std::string& slurm) {
  if (slurm == "22.05") return {"v0.0.37", "v0.0.38"};
  if (slurm == "24.11") return {"v0.0.40", "v0.0.41", "v0.0.42"};
  if (slurm == "26.05") return {"v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"};
  return {};
}

int64_t Sbatch(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto out = SlurmCommand(Cluster(), argv);
  EXPECT_TRUE(out.ok()) << out.status();
  int64_t id = 0;
  if (out.ok()) {
    std::string first = std::string(absl::StripAsciiWhitespace(*out));
    EXPECT_TRUE(absl::SimpleAtoi(first.substr(0, first.find(';')), &id)) << *out;
  }
  return id;
}

TEST(SlurmSmokeTest, RunsTheSlurmItWasAskedForWithItsRestVersions) {
  const char* asked = std::getenv("ONEQUEUE_SLURM");
  const std::string version = asked != nullptr && *asked != '\0' ? asked : "22.05";
  std::cerr << "Slurm " << Cluster().release << " (ONEQUEUE_SLURM=" << version << "), REST " << Cluster().rest_api
            << "\n";
  EXPECT_EQ(Cluster().version, version);
  EXPECT_TRUE(absl::StartsWith(Cluster().release, version + ".")) << Cluster().release;
  EXPECT_EQ(Cluster().root.empty(), version == "22.05") << Cluster().root;
  auto out = SlurmCommand(Cluster(), {"scontrol", "--version"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(*out), "slurm-wlm " + Cluster().release);

  auto spec = SlurmRest(Cluster(), Request("GET", "/openapi/v3"));
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->http_status, 200);
  json doc = json::parse(spec->body, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(doc.is_object() && doc.contains("paths")) << spec->body.substr(0, 300);
  std::set<std::string> served;
  for (const auto& [path, ops] : doc["paths"].items()) {
    absl::string_view p = path;
    if (!absl::ConsumePrefix(&p, "/slurm/")) continue;
    served.insert(std::string(p.substr(0, p.find('/'))));
  }
  EXPECT_EQ(served, ExpectedRestVersions(version));
  EXPECT_EQ(*served.rbegin(), Cluster().rest_api);
}

TEST(SlurmSmokeTest, EveryNodeIsIdleWithTwoGpus) {
  auto out = SlurmCommand(Cluster(), {"sinfo", "-h", "-N", "-p", Cluster().shared_partition, "-o", "%N %T %G %f"});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<std::string> lines = absl::StrSplit(absl::StripAsciiWhitespace(*out), '\n');
  ASSERT_EQ(lines.size(), static_cast<size_t>(kNodes)) << *out;
  for (const auto& line : lines) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    ASSERT_EQ(f.size(), 4u) << line;
    EXPECT_EQ(f[1], "idle") << line;
    EXPECT_EQ(f[2], "gpu:2") << line;
    EXPECT_NE(f[3].find("fast,ib,rack"), std::string::npos) << line;
  }
  EXPECT_EQ(Cluster().nodes.size(), static_cast<size_t>(kNodes));
  auto parts = SlurmCommand(Cluster(), {"scontrol", "show", "partition", Cluster().reclaim_partition});
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_NE(parts->find("PriorityTier=10"), std::string::npos) << *parts;
  EXPECT_NE(parts->find("PreemptMode=OFF"), std::string::npos) << *parts;
}

TEST(SlurmSmokeTest, BatchJobRunsOnASlurmdAndIsReadBackOverRestWithTheJwt) {
  const std::string out_file = Cluster().jobs_dir + "/smoke-%j.out";
  const int64_t id = Sbatch({"-J", "smoke", "-o", out_file, "--wrap", "echo ran on $SLURMD_NODENAME"});
  ASSERT_GT(id, 0);
  json job;
  ASSERT_TRUE(WaitFor(
      [&] {
        job = RestJob(id);
        return JobState(job) == "COMPLETED";
      },
      std::chrono::seconds(60)))
      << "job " << id << " over REST: " << job.dump();
  EXPECT_EQ(job.value("name", ""), "smoke");
  EXPECT_EQ(job.value("partition", ""), Cluster().shared_partition);
  EXPECT_EQ(ExitCode(job), 0);
  const std::string node = job.value("nodes", "");
  EXPECT_NE(std::find(Cluster().nodes.begin(), Cluster().nodes.end(), node), Cluster().nodes.end()) << node;

  std::ifstream in(Cluster().jobs_dir + "/smoke-" + std::to_string(id) + ".out");
  std::string printed((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(printed, "ran on " + node + "\n");

  // The same slurmrestd on its unix socket.
  auto via_socket = SlurmRest(Cluster(), [&] {
    auto request = Request("GET", Path(absl::StrCat("job/", id)));
    request.via_socket = true;
    return request;
  }());
  ASSERT_TRUE(via_socket.ok()) << via_socket.status();
  EXPECT_EQ(via_socket->http_status, 200) << via_socket->body;
  EXPECT_NE(via_socket->body.find("\"COMPLETED\""), std::string::npos);
}

TEST(SlurmSmokeTest, RestRefusesMissingAndWrongTokens) {
  auto none = SlurmRest(Cluster(), WithToken(Request("GET", Path("diag")), ""));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->http_status, 401) << none->body;

  // slurmrestd passes the token through; slurmctld refuses it (22.05 answers 500 with an error).
  auto wrong = SlurmRest(Cluster(), WithToken(Request("GET", Path("jobs")), "not-a-jwt"));
  ASSERT_TRUE(wrong.ok()) << wrong.status();
  EXPECT_NE(wrong->http_status, 200) << wrong->body;

  auto fresh = MintToken(Cluster(), Cluster().user, 60);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto with_fresh = SlurmRest(Cluster(), WithToken(Request("GET", Path("diag")), *fresh));
  ASSERT_TRUE(with_fresh.ok()) << with_fresh.status();
  EXPECT_EQ(with_fresh->http_status, 200) << with_fresh->body;

  // slurmrestd also answers on the older versions it serves (22.05: v0.0.37).
  for (const std::string& v : ExpectedRestVersions(Cluster().version)) {
    auto older = SlurmRest(Cluster(), Request("GET", "/slurm/" + v + "/diag"));
    ASSERT_TRUE(older.ok()) << older.status();
    EXPECT_EQ(older->http_status, 200) << v << ": " << older->body;
  }
}

// The "placeholder" ownership mechanism of the design, on the partitions slurm-up.sh configures:
// a job of the reclaim partition pinned to a node requeues the batch job running there; once it is
// cancelled and the requeued job released (begin_time now), the batch job runs there again.
TEST(SlurmSmokeTest, ReclaimPlaceholderRequeuesTheBatchJobAndGivesTheNodeBack) {
  const std::string node = Cluster().nodes.at(2);
  const int64_t victim = Sbatch({"-J", "victim", "-p", Cluster().shared_partition, "-w", node, "-o", "/dev/null",
                                 "--wrap", "exec sleep 600"});
  ASSERT_GT(victim, 0);
  ASSERT_TRUE(WaitFor([&] { return JobState(RestJob(victim)) == "RUNNING"; }, std::chrono::seconds(60)))
      << RestJob(victim).dump();

  // v0.0.38: "nodelist" (it refuses "required_nodes"), "exclusive", plain numbers, an environment
  // object, the script beside the job; v0.0.41+: the script inside the job, arrays, no-val numbers.
  json placeholder_request =
      Cluster().data_parser()
          ? json{{"job",
                  {{"script", "#!/bin/sh\nexec sleep 100000\n"},
                   {"name", "oq-placeholder"},
                   {"partition", Cluster().reclaim_partition},
                   {"required_nodes", {node}},
                   {"shared", {"none"}},
                   {"comment", "onequeue:smoke"},
                   {"time_limit", {{"set", true}, {"infinite", false}, {"number", 10}}},
                   {"current_working_directory", Cluster().jobs_dir},
                   {"environment", {"PATH=/bin:/usr/bin"}},
                   {"standard_output", "/dev/null"}}}}
          : json{{"script", "#!/bin/sh\nexec sleep 100000\n"},
                 {"job",
                  {{"name", "oq-placeholder"},
                   {"partition", Cluster().reclaim_partition},
                   {"nodelist", node},
                   {"exclusive", "exclusive"},
                   {"comment", "onequeue:smoke"},
                   {"time_limit", 10},
                   {"current_working_directory", Cluster().jobs_dir},
                   {"environment", {{"PATH", "/bin:/usr/bin"}}},
                   {"standard_output", "/dev/null"}}}};
  auto submitted = SlurmRest(Cluster(), Request("POST", Path("job/submit"), placeholder_request.dump()));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  ASSERT_EQ(submitted->http_status, 200) << submitted->body;
  const int64_t placeholder = json::parse(submitted->body).value("job_id", int64_t{0});
  ASSERT_GT(placeholder, 0) << submitted->body;

  json victim_job;
  ASSERT_TRUE(WaitFor(
      [&] {
        victim_job = RestJob(victim);
        json p = RestJob(placeholder);
        return JobState(victim_job) == "PENDING" && victim_job.value("restart_cnt", 0) == 1 &&
               JobState(p) == "RUNNING" && p.value("nodes", "") == node;
      },
      std::chrono::seconds(60)))
      << "victim: " << victim_job.dump() << "\nplaceholder: " << RestJob(placeholder).dump();
  const auto requeue_seen = std::chrono::system_clock::now();

  // slurmd revoked the victim's credential when it was preempted, with a resolution of one second:
  // a relaunch within the same second is refused ("Job credential revoked") and the job FAILS
  // instead of running. Slurm's own BeginTime (+120 s) covers this; releasing it early must not
  // happen within that second. (A placeholder holds a node far longer in real use.)
  std::this_thread::sleep_until(requeue_seen + std::chrono::seconds(2));
  auto cancelled = SlurmRest(Cluster(), Request("DELETE", Path(absl::StrCat("job/", placeholder))));
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->http_status, 200) << cancelled->body;
  // v0.0.38 takes "now" (it refuses an epoch); the data parsers take a no-val epoch.
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const json begin = Cluster().data_parser()
                         ? json{{"begin_time", {{"set", true}, {"infinite", false}, {"number", now}}}}
                         : json{{"begin_time", "now"}};
  auto released = SlurmRest(Cluster(), Request("POST", Path(absl::StrCat("job/", victim)), begin.dump()));
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(released->http_status, 200) << released->body;

  ASSERT_TRUE(WaitFor(
      [&] {
        victim_job = RestJob(victim);
        return JobState(victim_job) == "RUNNING" && victim_job.value("nodes", "") == node;
      },
      std::chrono::seconds(60)))
      << victim_job.dump();
  EXPECT_EQ(victim_job.value("restart_cnt", 0), 1);
  EXPECT_TRUE(SlurmCommand(Cluster(), {"scancel", std::to_string(victim)}).ok());
}

TEST(SlurmSmokeTest, SlurmrestdStopsAndComesBackOnTheSamePort) {
  ASSERT_TRUE(StopDaemon(Cluster(), "slurmrestd").ok());
  auto down = SlurmRest(Cluster(), Request("GET", Path("diag")));
  EXPECT_FALSE(down.ok()) << "slurmrestd still answers: " << down->http_status;
  auto started = StartDaemon(Cluster(), "slurmrestd");
  ASSERT_TRUE(started.ok()) << started;
  auto up = SlurmRest(Cluster(), Request("GET", Path("diag")));
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(up->http_status, 200);
}

TEST(SlurmSmokeTest, SlurmctldRestartKeepsTheQueue) {
  const int64_t held = Sbatch({"-J", "held", "-H", "-o", "/dev/null", "--wrap", "true"});
  ASSERT_GT(held, 0);
  ASSERT_TRUE(StopDaemon(Cluster(), "slurmctld").ok());
  // (not squeue: a client retries an absent slurmctld for about 10 s)
  for (const auto& [name, pid] : SlurmClusterPids(Cluster())) EXPECT_NE(name, "slurmctld") << "pid " << pid;
  auto started = StartDaemon(Cluster(), "slurmctld");
  ASSERT_TRUE(started.ok()) << started;
  auto out = SlurmCommand(Cluster(), {"squeue", "-h", "-j", std::to_string(held), "-o", "%i %T %r"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(*out), absl::StrCat(held, " PENDING JobHeldUser"));
  EXPECT_TRUE(SlurmCommand(Cluster(), {"scancel", std::to_string(held)}).ok());
  // slurmrestd reaches the restarted slurmctld with the same token.
  ASSERT_TRUE(WaitFor(
      [] {
        auto r = SlurmRest(Cluster(), Request("GET", Path("jobs")));
        return r.ok() && r->http_status == 200;
      },
      std::chrono::seconds(30)));
}

// Socket inodes of the listening TCP sockets in /proc/net/<table>, by local address "IP:PORT" (hex).
std::map<std::string, std::string> ListeningSockets(const std::string& table) {
  std::map<std::string, std::string> by_inode;
  std::ifstream in("/proc/net/" + table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() > 9 && f[3] == "0A") by_inode[f[9]] = f[1];
  }
  return by_inode;
}

std::set<std::string> SocketInodesOf(int pid) {
  std::set<std::string> inodes;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(fd_dir.c_str());
  if (dir == nullptr) return inodes;
  while (dirent* e = readdir(dir)) {
    char target[256];
    ssize_t n = readlink((fd_dir + "/" + e->d_name).c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    absl::string_view t(target, static_cast<size_t>(n));
    if (absl::ConsumePrefix(&t, "socket:[") && absl::ConsumeSuffix(&t, "]")) inodes.insert(std::string(t));
  }
  closedir(dir);
  return inodes;
}

TEST(SlurmSmokeTest, NothingListensOutsideLoopback) {
  const auto v4 = ListeningSockets("tcp");
  const auto v6 = ListeningSockets("tcp6");
  int loopback_listeners = 0;
  for (const auto& [name, pid] : SlurmClusterPids(Cluster())) {
    for (const auto& inode : SocketInodesOf(pid)) {
      if (auto it = v4.find(inode); it != v4.end()) {
        EXPECT_TRUE(absl::StartsWith(it->second, "0100007F:")) << name << " listens on " << it->second;
        ++loopback_listeners;
      }
      EXPECT_EQ(v6.count(inode), 0u) << name << " listens on IPv6 " << v6.at(inode);
    }
  }
  // slurmctld, slurmrestd and one slurmd per node.
  EXPECT_EQ(loopback_listeners, kNodes + 2);
}

}  // namespace
}  // namespace onequeue::testing

ONEQUEUE_SLURM_CLUSTER_TEST_MAIN({.nodes = onequeue::testing::kNodes})

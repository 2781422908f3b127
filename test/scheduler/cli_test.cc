// The daemon and oq as a user runs them: --help, --version, a refused config, and the gRPC
// Version/Health round trip between them on a loopback port.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "scheduler/oq_status.h"

namespace {

using ::testing::HasSubstr;

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr together
};

Result RunCommand(const std::string& cmd) {
  Result r{-1, ""};
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string TempFile(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << content;
  return path;
}

const std::string kScheduler = ONEQUEUE_SCHEDULER_BIN;
const std::string kOq = OQ_BIN;

TEST(CliTest, HelpAndVersion) {
  Result r = RunCommand(kScheduler + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("Usage: onequeue-scheduler --config FILE"));
  r = RunCommand(kScheduler + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("onequeue-scheduler 0."));
  r = RunCommand(kOq + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("Usage: oq"));
  r = RunCommand(kOq + " --version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("oq 0."));
}

TEST(CliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCommand(kScheduler).exit_code, 2);
  EXPECT_EQ(RunCommand(kScheduler + " --bogus").exit_code, 2);
  EXPECT_EQ(RunCommand(kOq).exit_code, 2);
  EXPECT_EQ(RunCommand(kOq + " frobnicate").exit_code, 2);
}

TEST(CliTest, InvalidOrUnreadableConfigIsRefusedPrecisely) {
  Result r = RunCommand(kScheduler + " --config /nonexistent/x.yaml");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.output, HasSubstr("/nonexistent/x.yaml: cannot read the configuration file"));
  const std::string bad = TempFile("bad.yaml",
      "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\nqueue:\n  reservationDepth: -2\n");
  r = RunCommand(kScheduler + " --config " + bad);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.output, HasSubstr("line 4: queue.reservationDepth: must be 0 (unlimited) or more"));
}

// Issue 25: gpus: dra is acted on by the daemon (its claims allocated to Slurm's indices,
// docs/sharing.md section 5): the configuration is accepted, no longer refused at start.
TEST(CliTest, GpusDraIsAcceptedNowThatTheDaemonAllocatesClaims) {
  const std::string dra = TempFile("dra.yaml",
      "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\nslurm:\n  enabled: true\n"
      "  url: http://127.0.0.1:6820\n  tokenFile: /t\n  sharedPartitions: [pool]\n"
      "  partitions: {pool: {sharing: shared, gpus: dra, gpuDeviceClasses: [gpu.example.com]}}\n");
  Result r = RunCommand(kScheduler + " --check-config --config " + dra);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("not acted on")));
}

TEST(CliTest, CheckConfigAcceptsAValidFile) {
  const std::string good = TempFile("good.yaml", "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n");
  Result r = RunCommand(kScheduler + " --check-config --config " + good);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("valid"));
}

TEST(CliTest, OqTalksToTheDaemonOverGrpc) {
  // Port 0 would hide the port from oq; pick one from the ephemeral range that is free now.
  const int port = 20000 + (getpid() % 20000);
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  const std::string cfg = TempFile("run.yaml",
      "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\nkubernetes: {enabled: false}\n"
      "server: {grpcAddress: \"" + addr + "\"}\n");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(kScheduler.c_str(), kScheduler.c_str(), "--config", cfg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  Result r;
  for (int i = 0; i < 100; ++i) {  // bounded: 10 s
    r = RunCommand(kOq + " --server " + addr + " version");
    if (r.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("onequeue-scheduler 0."));
  r = RunCommand(kOq + " --server " + addr + " health");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("SERVING"));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "daemon did not stop cleanly on SIGTERM";
  // Once stopped, oq says so clearly.
  r = RunCommand(kOq + " --server " + addr + " health");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("cannot reach onequeue-scheduler"));
}

// Issue 13 defect 9: server.tlsCertFile/tlsKeyFile. A self-signed certificate made now (openssl);
// oq with --tls-ca trusting it talks to the daemon; oq in plaintext, or trusting another
// certificate, does not.
TEST(CliTest, OqSpeaksTlsToADaemonWithACertificateAndPlaintextFails) {
  const std::string dir = ::testing::TempDir();
  const std::string make_cert =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=onequeue "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost";
  Result gen = RunCommand(make_cert + " -keyout " + dir + "/tls.key -out " + dir + "/tls.crt");
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  gen = RunCommand(make_cert + " -keyout " + dir + "/other.key -out " + dir + "/other.crt");
  ASSERT_EQ(gen.exit_code, 0) << gen.output;
  const int port = 20000 + ((getpid() + 7919) % 20000);
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  const std::string cfg = TempFile("tls.yaml",
      "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\nkubernetes: {enabled: false}\n"
      "server: {grpcAddress: \"" + addr + "\", tlsCertFile: \"" + dir + "/tls.crt\", tlsKeyFile: \"" + dir +
      "/tls.key\"}\n");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(kScheduler.c_str(), kScheduler.c_str(), "--config", cfg.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string tls = " --server " + addr + " --tls-ca " + dir + "/tls.crt";
  Result r;
  for (int i = 0; i < 100; ++i) {  // bounded: 10 s
    r = RunCommand(kOq + tls + " version");
    if (r.exit_code == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("onequeue-scheduler 0."));
  r = RunCommand(kOq + tls + " health");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("SERVING"));
  // Plaintext to a TLS port: no answer.
  r = RunCommand(kOq + " --server " + addr + " health");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot reach onequeue-scheduler"));
  // TLS trusting another certificate: verification fails.
  r = RunCommand(kOq + " --server " + addr + " --tls-ca " + dir + "/other.crt health");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot reach onequeue-scheduler"));
  // The CA as the environment says; a CA file that is not PEM is a usage error.
  r = RunCommand("ONEQUEUE_TLS_CA=" + dir + "/tls.crt " + kOq + " --server " + addr + " queue");
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("cannot reach"))) << r.output;
  r = RunCommand(kOq + " --server " + addr + " --tls-ca " + cfg + " health");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("cannot read a PEM certificate"));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  // A key file that is not there: the daemon refuses to start, naming the key and the file.
  const std::string bad = TempFile("tls-bad.yaml",
      "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\nkubernetes: {enabled: false}\n"
      "server: {grpcAddress: \"" + addr + "\", tlsCertFile: \"" + dir + "/tls.crt\", tlsKeyFile: \"" + dir +
      "/missing.key\"}\n");
  r = RunCommand(kScheduler + " --config " + bad);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("server.tlsKeyFile \"" + dir + "/missing.key\": cannot read a PEM file"));
}

}  // namespace

namespace {

std::string Trace() { return std::string(std::getenv("ONEQUEUE_SOURCE_DIR")) + "/test/queue/traces/backfill32.swf"; }

TEST(CliTest, OqSimulateReplaysATraceUnderEachPolicy) {
  for (const std::string policy : {"fcfs", "easy", "conservative"}) {
    Result r = RunCommand(kOq + " simulate " + Trace() + " --policy " + policy);
    EXPECT_EQ(r.exit_code, 0) << policy << ": " << r.output;
    EXPECT_THAT(r.output, ::testing::HasSubstr("utilisation")) << policy;
  }
}

TEST(CliTest, OqSimulateRefusesBadInputClearly) {
  const std::string bad = TempFile("bad.swf", "1 0 0 10 4 -1 -1 4 20 -1 1 1 1 1 1 1 -1 -1\n2 5 0 ten 4\n");
  Result r = RunCommand(kOq + " simulate " + bad + " --policy easy");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("line 2"));
  r = RunCommand(kOq + " simulate " + Trace() + " --policy sjf");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunCommand(kOq + " simulate /nonexistent.swf --policy easy");
  EXPECT_NE(r.exit_code, 0);
}

// Issue 15 part 3: the daemon's own configuration file drives the replay.
TEST(CliTest, OqSimulateReplaysWithTheDaemonsConfiguration) {
  const std::string header = "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n";
  const std::string config = TempFile("onequeue.yaml", header + "queue:\n  reservationDepth: 3\n  qos:\n"
                                                                "    - {name: batch, priority: 10}\n");
  Result r = RunCommand(kOq + " simulate " + Trace() + " --config " + config + " --qos batch");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("reservation depth 3, resolution 1 s, QOS batch"));
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + config + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"policy\":\"config\""));
  // Wrong combinations and files are refused clearly.
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + config + " --policy easy");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + config + " --qos gold");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("not in"));
  const std::string broken = TempFile("broken.yaml", header + "queue:\n  reservationDepht: 3\n");
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + broken);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("reservationDepht"));
}

// Issue 27: `oq simulate --config` honours the file's starvation controls, and the what-if
// options replace them.
TEST(CliTest, OqSimulateHonoursTheStarvationKeysOfTheConfiguration) {
  const std::string header = "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n";
  const std::string config = TempFile("starve.yaml", header + "queue: {maxAgeSeconds: 3600, starvationBoundSeconds: 600}\n");
  Result r = RunCommand(kOq + " simulate " + Trace() + " --config " + config);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("max age 3600 s, starvation bound 600 s or 3 x the time limit, starving workloads to the front)"));
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + config + " --starvation-bound 900");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("max age 3600 s, starvation bound 900 s or 3 x the time limit, starving workloads to the front)"));
  r = RunCommand(kOq + " simulate " + Trace());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("max age 86400 s, starvation bound 172800 s or 3 x the time limit, starving workloads to the front)"));
  // The front remedy is the default (docs/queue.md "The default's remedy"); reserve, from the file
  // or as a what-if, reserves past the depth instead.
  const std::string reserve = TempFile("reserve.yaml", header + "queue: {starvationRemedy: reserve}\n");
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + reserve);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("3 x the time limit)"));
  r = RunCommand(kOq + " simulate " + Trace() + " --starvation-remedy reserve");
  EXPECT_THAT(r.output, HasSubstr("3 x the time limit)"));
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + reserve + " --starvation-remedy front");
  EXPECT_THAT(r.output, HasSubstr("3 x the time limit, starving workloads to the front)"));
  r = RunCommand(kOq + " simulate " + Trace() + " --starvation-remedy first");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--starvation-remedy needs reserve, front or front-reserve"));
  r = RunCommand(kOq + " simulate " + Trace() + " --starvation-remedy front-reserve");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("starving workloads to the front, the next oldest reserved past the depth)"));
  const std::string zero = TempFile("zero.yaml", header + "queue: {starvationBoundSeconds: 0}\n");
  r = RunCommand(kOq + " simulate " + Trace() + " --config " + zero);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("queue.starvationBoundSeconds: must be at least 1"));
}

// Issue 27 part 1: the default policy and EASY side by side on one trace, in one run.
TEST(CliTest, OqSimulateComparesTheDefaultPolicyWithEasy) {
  Result r = RunCommand(kOq + " simulate " + Trace() + " --compare easy");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the daemon's defaults"));
  EXPECT_THAT(r.output, HasSubstr("default/easy"));
  EXPECT_THAT(r.output, HasSubstr("wait p99 (s)"));
  EXPECT_THAT(r.output, HasSubstr("bounded slowdown, 1 procs"));
  EXPECT_THAT(r.output, HasSubstr("users with the largest share of the summed wait"));
  r = RunCommand(kOq + " simulate " + Trace() + " --policy fcfs --compare easy --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"compare\":{\"policy\":\"easy\""));
  EXPECT_THAT(r.output, HasSubstr("\"p99_wait\":"));
  r = RunCommand(kOq + " simulate " + Trace() + " --compare sjf");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// oq priority's PRIORITY column: a weighted total as a number; a workload starving under the
// front remedy (kStarvingFront plus the seconds waited) as "starving" and how long it waited.
TEST(CliTest, APriorityTotalOfAStarvingWorkloadReadsAsStarvingAndItsWait) {
  EXPECT_EQ(onequeue::cli::PriorityTotalText(31234.6), "31235");
  EXPECT_EQ(onequeue::cli::PriorityTotalText(0), "0");
  EXPECT_EQ(onequeue::cli::PriorityTotalText(onequeue::queue::kStarvingFront + 2 * 86400 + 3600), "starving 49h");
  EXPECT_EQ(onequeue::cli::PriorityTotalText(onequeue::queue::kStarvingFront), "starving 0");
}

}  // namespace

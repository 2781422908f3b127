// A real local Slurm cluster (private munged, slurmctld, N x slurmd, slurmrestd with JWT, all on free
// 127.0.0.1 ports) for integration tests, started once per test binary through
// test/cluster/slurm-up.sh and stopped through test/cluster/slurm-down.sh. See docs/local-slurm.md.
// Which Slurm comes from the environment: ONEQUEUE_SLURM=22.05 (default, Debian bookworm's
// packages), 24.11 or 26.05 (a Debian root filesystem run under chroot; ctest registers each
// Slurm-facing test once per version with that variable set). The environment prints it.
//
//   int main(int argc, char** argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     ::testing::AddGlobalTestEnvironment(new onequeue::testing::SlurmClusterEnvironment({.nodes = 8}));
//     return RUN_ALL_TESTS();
//   }
// or simply ONEQUEUE_SLURM_CLUSTER_TEST_MAIN({.nodes = 8}) at file scope.
//
// Daemons and jobs run as the Unix user "slurm" (SlurmUser = SlurmdUser = slurm), which is also a
// Slurm admin; the token in token_file belongs to it. The tests themselves run as root.
#ifndef ONEQUEUE_TEST_COMMON_SLURM_CLUSTER_H_
#define ONEQUEUE_TEST_COMMON_SLURM_CLUSTER_H_

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onequeue::testing {

// What slurm-up.sh wrote to DIR/slurm.env.
struct SlurmClusterInfo {
  std::string dir;                // the cluster folder (slurm.conf, logs/, pids/, state/, jobs/)
  std::string rest_url;           // http://127.0.0.1:PORT (slurmrestd, every REST version it has)
  std::string rest_socket;        // DIR/slurmrestd.socket: the same slurmrestd on a unix socket
  std::string token_file;         // DIR/slurm.jwt: JWT of `user`, mode 600, no trailing data but '\n'
  std::string user;               // "slurm": SlurmUser, runs the daemons and the jobs, Slurm admin
  std::string slurm_conf;         // DIR/slurm.conf (set SLURM_CONF to it for the client commands)
  std::string bin_dir;            // scontrol, squeue, sinfo, sbatch, scancel, ... (need SLURM_CONF)
  std::string shared_partition;   // "batch": the default partition, PriorityTier=1
  std::string reclaim_partition;  // "reclaim": same nodes, PriorityTier=10, PreemptMode=OFF
  std::vector<std::string> nodes;  // n1 .. nN
  std::string jobs_dir;            // DIR/jobs: writable by `user`; a good cwd/output folder for jobs
  std::string cluster_name;        // ClusterName (jobs see it as SLURM_CLUSTER_NAME)
  std::string version;             // ONEQUEUE_SLURM: "22.05", "24.11", "26.05"
  std::string release;             // slurmctld -V: "22.05.8", "24.11.5", "26.05.5"
  std::string rest_api;            // the highest REST version it serves: "v0.0.38", "v0.0.42", "v0.0.45"
  // The root filesystem the daemons run in under chroot ("" for the host's Slurm); bin_dir's
  // commands are then wrappers that enter it (they need root).
  std::string root;
  // "/slurm/<rest_api>/" + rest: a path of the version the cluster is checked on.
  std::string RestPath(const std::string& rest) const { return "/slurm/" + rest_api + "/" + rest; }
  bool data_parser() const { return rest_api != "v0.0.38"; }  // v0.0.39+ (23.02 and later)
};

struct SlurmClusterOptions {
  int nodes = 8;
  int gpus = 2;  // per node: Gres=gpu:<gpus>
  // slurm-up.sh --requeue-delay: how long a job Slurm requeued waits before it may start again
  // (5..120 s); 0: Slurm's default, 120 s.
  int requeue_delay_seconds = 0;
};

// Runs slurm-up.sh into a fresh temporary folder ($TMPDIR/onequeue-slurm-XXXXXX if the daemons' users
// can reach $TMPDIR and it is short, else /tmp/onequeue-slurm-XXXXXX) in SetUp and slurm-down.sh in TearDown. If
// slurm-up.sh fails, SetUp fails fatally with its output (it is bounded: never hangs), so no test
// runs against a missing cluster. The cluster is also stopped if the process ends another way: at
// exit() (atexit), on SIGINT/SIGTERM/SIGHUP/SIGABRT/SIGSEGV/SIGBUS (a handler runs slurm-down.sh,
// then hands the signal to the handler installed before it, or the default action), and on SIGKILL
// (slurm-up.sh's watchdog notices that this process is gone and runs slurm-down.sh). TearDown checks
// that every recorded process is gone; slurm-down.sh fails if a port of the cluster still listens.
// The folder is removed after a fully passing run and kept otherwise (or always with
// ONEQUEUE_KEEP_CLUSTER=1), for its logs.
class SlurmClusterEnvironment : public ::testing::Environment {
 public:
  explicit SlurmClusterEnvironment(SlurmClusterOptions options = {});
  void SetUp() override;
  void TearDown() override;
  // The running cluster; valid between SetUp and TearDown.
  static const SlurmClusterInfo& Info();

 private:
  SlurmClusterOptions options_;
};

// Runs a Slurm client command (scontrol, squeue, sinfo, sbatch, scancel, ...; a bare name is taken
// from info.bin_dir) with SLURM_CONF set, as info.user (so sbatch'ed jobs can run; with a root
// filesystem the wrapper switches to info.user inside it, ONEQUEUE_SLURM_RUN_AS), in
// info.jobs_dir, with a clean environment (SLURM_CONF, PATH, LANG, HOME, USER: sbatch would hand
// ours to the job). Returns stdout, or an error carrying stderr: kUnavailable on a non-zero exit,
// kDeadlineExceeded after 60 s.
absl::StatusOr<std::string> SlurmCommand(const SlurmClusterInfo& info, const std::vector<std::string>& argv);

// Stops / starts one daemon with the same configuration and port (test/cluster/slurm-daemon.sh):
// "slurmrestd" | "slurmctld" (also "slurmd:nK"). StartDaemon returns once the daemon answers.
absl::Status StopDaemon(const SlurmClusterInfo& info, const std::string& name);
absl::Status StartDaemon(const SlurmClusterInfo& info, const std::string& name);

// A fresh JWT for `user` valid for lifespan_seconds (`scontrol token`, run as SlurmUser, which may
// mint tokens for anyone). For wrong-user and expired-token tests.
absl::StatusOr<std::string> MintToken(const SlurmClusterInfo& info, const std::string& user, int lifespan_seconds);

// One HTTP exchange with slurmrestd through the curl command (tests only; the product has its own
// client). path: "/slurm/v0.0.38/diag". token: nullopt = the cluster's token file as info.user;
// "" = no authentication headers at all. via_socket: use info.rest_socket instead of TCP.
struct SlurmRestResponse {
  int http_status = 0;
  std::string body;
};
struct SlurmRestRequest {
  std::string method = "GET";
  std::string path;
  std::string body;  // sent as application/json when not empty
  std::optional<std::string> token;
  std::string user_name;  // X-SLURM-USER-NAME; empty = info.user
  bool via_socket = false;
};
absl::StatusOr<SlurmRestResponse> SlurmRest(const SlurmClusterInfo& info, const SlurmRestRequest& request);

// PIDs of the processes the cluster runs now (DIR/pids), by name (munged, slurmctld, slurmd-n1, ...).
std::vector<std::pair<std::string, int>> SlurmClusterPids(const SlurmClusterInfo& info);

}  // namespace onequeue::testing

// A main() that registers the Slurm environment with the given options.
#define ONEQUEUE_SLURM_CLUSTER_TEST_MAIN(...)                                                      \
  int main(int argc, char** argv) {                                                                \
    ::testing::InitGoogleTest(&argc, argv);                                                        \
    ::testing::AddGlobalTestEnvironment(new ::onequeue::testing::SlurmClusterEnvironment(          \
        ::onequeue::testing::SlurmClusterOptions __VA_ARGS__));                                    \
    return RUN_ALL_TESTS();                                                                        \
  }

#endif  // ONEQUEUE_TEST_COMMON_SLURM_CLUSTER_H_

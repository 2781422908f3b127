// A real local Kubernetes control plane (etcd + kube-apiserver, optionally kube-controller-manager,
// kwok and kube-scheduler) for integration tests, started once per test binary through
// test/cluster/up.sh and stopped through test/cluster/down.sh. See docs/local-cluster.md.
//
//   int main(int argc, char** argv) {
//     ::testing::InitGoogleTest(&argc, argv);
//     ::testing::AddGlobalTestEnvironment(
//         new onequeue::testing::K8sClusterEnvironment({.kwok = true}));
//     return RUN_ALL_TESTS();
//   }
// or simply ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.kwok = true}) at file scope.
#ifndef ONEQUEUE_TEST_COMMON_K8S_CLUSTER_H_
#define ONEQUEUE_TEST_COMMON_K8S_CLUSTER_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace onequeue::testing {

// What up.sh wrote to DIR/env: where the cluster is and how to reach it as each identity.
struct K8sClusterInfo {
  std::string dir;                   // the cluster folder (logs/, pids/, args/, pki/)
  std::string server;                // https://127.0.0.1:PORT
  std::string ca_file;               // PEM CA that signed the apiserver's serving certificate
  std::string kubeconfig;            // admin (system:masters)
  std::string scheduler_kubeconfig;  // system:serviceaccount:onequeue-system:onequeue
  std::string nobody_kubeconfig;     // authenticated, no roles: gets 403 Forbidden
  std::string admin_token;
  std::string scheduler_token;
  std::string etcd_url;      // http://127.0.0.1:PORT
  std::string upstream_bin;  // folder of kube-apiserver, kubectl, kwok, helm, ...
  std::string version;       // kube-apiserver's own (e.g. v1.37.2; ONEQUEUE_K8S=oldest: v1.35.4)
  std::string kubectl;       // the kubectl matching the server (not /usr/bin/kubectl)
};

struct K8sClusterOptions {
  bool controller_manager = false;
  bool kwok = false;
  bool kwok_graceful = false;  // with kwok: a deleted pod keeps its node for its grace period
  bool kube_scheduler = false;  // the peer scheduler, for pods with schedulerName default-scheduler
  bool bench = false;           // no max-inflight limits, no API priority and fairness
  // Appended to kube-apiserver's flags (up.sh --apiserver-arg), e.g. "--goaway-chance=0.02".
  std::vector<std::string> apiserver_args;
};

// Runs up.sh into a fresh temporary folder in SetUp and down.sh in TearDown. If up.sh fails, SetUp
// fails fatally with its output, so no test runs against a missing cluster. The cluster is also
// stopped if the process ends another way: at exit() (atexit), on SIGINT/SIGTERM/SIGABRT/SIGSEGV
// (a handler runs down.sh, then re-raises the signal), and on SIGKILL (up.sh's watchdog notices
// that this process is gone). The folder is removed after a fully passing run and kept otherwise
// (or always with ONEQUEUE_KEEP_CLUSTER=1), for its logs.
class K8sClusterEnvironment : public ::testing::Environment {
 public:
  explicit K8sClusterEnvironment(K8sClusterOptions options = {});
  void SetUp() override;
  void TearDown() override;
  // The running cluster; valid between SetUp and TearDown.
  static const K8sClusterInfo& Info();

 private:
  K8sClusterOptions options_;
};

// kills kube-apiserver and starts it again on the same port with the same flags (restart-apiserver.sh).
absl::Status RestartApiserver(const K8sClusterInfo& info);
// Compacts etcd at its current revision (etcd-compact.sh): older resourceVersions become 410 Gone
// once the apiserver's watch cache no longer holds them.
absl::Status CompactEtcd(const K8sClusterInfo& info);

// Runs the built kubectl with the admin kubeconfig; returns stdout, or an error carrying stderr on
// a non-zero exit (kDeadlineExceeded if it ran longer than 120 s).
absl::StatusOr<std::string> Kubectl(const K8sClusterInfo& info, const std::vector<std::string>& args,
                                    const std::string& stdin_text = "");
// Same, as the identity of another kubeconfig (info.scheduler_kubeconfig, info.nobody_kubeconfig).
absl::StatusOr<std::string> KubectlAs(const K8sClusterInfo& info, const std::string& kubeconfig,
                                      const std::vector<std::string>& args,
                                      const std::string& stdin_text = "");

// PIDs of the processes the cluster runs now (DIR/pids), by component name.
std::vector<std::pair<std::string, int>> ClusterPids(const K8sClusterInfo& info);

}  // namespace onequeue::testing

// A main() that registers the cluster environment with the given options.
#define ONEQUEUE_K8S_CLUSTER_TEST_MAIN(...)                                               \
  int main(int argc, char** argv) {                                                       \
    ::testing::InitGoogleTest(&argc, argv);                                               \
    ::testing::AddGlobalTestEnvironment(                                                  \
        new ::onequeue::testing::K8sClusterEnvironment(::onequeue::testing::K8sClusterOptions __VA_ARGS__)); \
    return RUN_ALL_TESTS();                                                               \
  }

#endif  // ONEQUEUE_TEST_COMMON_K8S_CLUSTER_H_

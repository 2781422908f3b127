// Where the API server is and how to authenticate: from a kubeconfig file or from the in-cluster
// service-account mount. TLS verification is always on unless the config explicitly says
// insecure-skip-tls-verify (then a loud warning is logged on every transport creation).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "k8s_client/http_transport.h"

namespace onequeue::k8s {

// The transport's part (server, TLS, credentials, timeouts) is shared with slurm_bridge.
struct ClientConfig : TransportConfig {
  std::string default_namespace = "default";
  // Client-side limits (kube-scheduler's defaults are QPS 50, burst 100).
  double qps = 50;
  int burst = 100;
};

// Parses kubeconfig YAML. Relative file paths are resolved against `base_dir`. `context` empty
// means current-context. Errors are InvalidArgument naming the missing/invalid entry.
absl::StatusOr<ClientConfig> ParseKubeconfig(absl::string_view yaml, absl::string_view base_dir,
                                             absl::string_view context = "");
absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, absl::string_view context = "");

// In-cluster config: KUBERNETES_SERVICE_HOST/PORT, the service-account token (as a token file so
// rotation is picked up), ca.crt and namespace under `sa_dir`. `getenv` is injected for tests.
absl::StatusOr<ClientConfig> InClusterConfig(
    std::function<std::optional<std::string>(const char*)> getenv = nullptr,
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

}  // namespace onequeue::k8s

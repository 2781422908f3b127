#include "k8s_client/config.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace onequeue::k8s {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Resolve(absl::string_view base_dir, const std::string& path) {
  if (path.empty() || path[0] == '/' || base_dir.empty()) return path;
  return (std::filesystem::path(std::string(base_dir)) / path).string();
}

// Finds the entry named `name` in a kubeconfig list (clusters, users, contexts).
YAML::Node FindNamed(const YAML::Node& list, absl::string_view name, absl::string_view what) {
  if (list && list.IsSequence()) {
    for (const auto& item : list) {
      if (item["name"] && item["name"].as<std::string>() == name) return item[std::string(what)];
    }
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Scalar(const YAML::Node& n, const char* key) {
  if (!n || !n[key] || !n[key].IsScalar()) return "";
  return n[key].as<std::string>();
}

absl::StatusOr<std::string> Base64Field(const YAML::Node& n, const char* key) {
  std::string text = Scalar(n, key);
  if (text.empty()) return std::string();
  std::string out;
  if (!absl::Base64Unescape(text, &out)) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", key, " is not valid base64"));
  }
  return out;
}

absl::StatusOr<ClientConfig> ParseKubeconfigNode(const YAML::Node& root, absl::string_view base_dir,
                                                 absl::string_view context_name) {
  std::string ctx_name(context_name);
  if (ctx_name.empty()) ctx_name = Scalar(root, "current-context");
  if (ctx_name.empty()) return absl::InvalidArgumentError("kubeconfig: no context given and no current-context");
  YAML::Node ctx = FindNamed(root["contexts"], ctx_name, "context");
  if (!ctx) return absl::InvalidArgumentError(absl::StrCat("kubeconfig: context \"", ctx_name, "\" not found"));
  const std::string cluster_name = Scalar(ctx, "cluster");
  const std::string user_name = Scalar(ctx, "user");
  YAML::Node cluster = FindNamed(root["clusters"], cluster_name, "cluster");
  if (!cluster) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: cluster \"", cluster_name, "\" not found"));
  }
  ClientConfig cfg;
  cfg.server = Scalar(cluster, "server");
  if (cfg.server.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: cluster \"", cluster_name, "\" has no server"));
  }
  while (!cfg.server.empty() && cfg.server.back() == '/') cfg.server.pop_back();
  absl::StatusOr<std::string> ca = Base64Field(cluster, "certificate-authority-data");
  if (!ca.ok()) return ca.status();
  cfg.ca_pem = *ca;
  cfg.ca_file = Resolve(base_dir, Scalar(cluster, "certificate-authority"));
  cfg.insecure_skip_tls_verify = Scalar(cluster, "insecure-skip-tls-verify") == "true";
  cfg.tls_server_name = Scalar(cluster, "tls-server-name");
  if (const std::string ns = Scalar(ctx, "namespace"); !ns.empty()) cfg.default_namespace = ns;

  if (!user_name.empty()) {
    YAML::Node user = FindNamed(root["users"], user_name, "user");
    if (!user) return absl::InvalidArgumentError(absl::StrCat("kubeconfig: user \"", user_name, "\" not found"));
    cfg.bearer_token = Scalar(user, "token");
    cfg.token_file = Resolve(base_dir, Scalar(user, "tokenFile"));
    absl::StatusOr<std::string> cert = Base64Field(user, "client-certificate-data");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = Base64Field(user, "client-key-data");
    if (!key.ok()) return key.status();
    cfg.client_cert_pem = *cert;
    cfg.client_key_pem = *key;
    cfg.client_cert_file = Resolve(base_dir, Scalar(user, "client-certificate"));
    cfg.client_key_file = Resolve(base_dir, Scalar(user, "client-key"));
    if (user["exec"] || user["auth-provider"]) {
      return absl::UnimplementedError(absl::StrCat(
          "kubeconfig: user \"", user_name, "\" uses exec/auth-provider credentials, which are not supported"));
    }
  }
  return cfg;
}

}  // namespace

absl::StatusOr<ClientConfig> ParseKubeconfig(absl::string_view yaml, absl::string_view base_dir,
                                             absl::string_view context) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (!root.IsMap()) return absl::InvalidArgumentError("kubeconfig: not a YAML mapping");
    return ParseKubeconfigNode(root, base_dir, context);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("kubeconfig: ", e.what()));
  }
}

absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, absl::string_view context) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<ClientConfig> cfg =
      ParseKubeconfig(*text, std::filesystem::path(path).parent_path().string(), context);
  if (!cfg.ok()) {
    return absl::Status(cfg.status().code(), absl::StrCat(path, ": ", cfg.status().message()));
  }
  return cfg;
}

absl::StatusOr<ClientConfig> InClusterConfig(
    std::function<std::optional<std::string>(const char*)> getenv, const std::string& sa_dir) {
  if (!getenv) {
    getenv = [](const char* name) -> std::optional<std::string> {
      const char* v = std::getenv(name);
      return v ? std::optional<std::string>(v) : std::nullopt;
    };
  }
  std::optional<std::string> host = getenv("KUBERNETES_SERVICE_HOST");
  std::optional<std::string> port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty()) {
    return absl::FailedPreconditionError(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  }
  ClientConfig cfg;
  const bool ipv6 = host->find(':') != std::string::npos;
  cfg.server = absl::StrCat("https://", ipv6 ? "[" : "", *host, ipv6 ? "]" : "", ":", *port);
  cfg.token_file = sa_dir + "/token";
  cfg.ca_file = sa_dir + "/ca.crt";
  if (!std::filesystem::exists(cfg.token_file)) {
    return absl::FailedPreconditionError(absl::StrCat("in-cluster config: ", cfg.token_file, " does not exist"));
  }
  if (absl::StatusOr<std::string> ns = ReadFile(sa_dir + "/namespace"); ns.ok()) {
    absl::string_view v = absl::StripAsciiWhitespace(*ns);
    if (!v.empty()) cfg.default_namespace = std::string(v);
  }
  return cfg;
}

}  // namespace onequeue::k8s

// End to end, the Helm chart (deploy/helm/onequeue) as an admin uses it: helm lint, helm template
// (least-privilege RBAC: no wildcard, the verbs the daemon needs and no more), and helm install
// against the local cluster with kube-controller-manager (the Deployment's ReplicaSet),
// kube-scheduler (binds the daemon's own pods) and kwok (runs them): 2 replicas created and
// Running, every object of the chart present, the ConfigMap's config.yaml accepted by
// onequeue-scheduler --check-config, kubectl auth can-i as the chart's ServiceAccount, and helm
// uninstall removing it all. A slurm.enabled=true install without slurm.url fails clearly.
#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_support.h"
#include "yaml-cpp/yaml.h"

namespace onequeue::e2e {
namespace {

using ::testing::HasSubstr;
using testing::K8sClusterEnvironment;

constexpr const char* kNamespace = "onequeue-system";
constexpr const char* kServiceAccount = "system:serviceaccount:onequeue-system:onequeue";

std::string Chart() { return std::string(ONEQUEUE_SOURCE_DIR) + "/deploy/helm/onequeue"; }

class HelmE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {}

  void SetUp() override {
    const auto& info = K8sClusterEnvironment::Info();
    helm_ = info.upstream_bin + "/helm";
    ASSERT_EQ(access(helm_.c_str(), X_OK), 0)
        << helm_ << " is missing: test/cluster/build-upstream.sh builds it (the last of the upstream tools)";
    home_ = info.dir + "/helm";
    mkdir(home_.c_str(), 0755);
    auto client = AdminClient(info);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
  }

  // helm with its own cache/config/data folders and the cluster's admin kubeconfig.
  CommandResult Helm(std::vector<std::string> args) {
    args.insert(args.begin(), helm_);
    return RunCommand(args, absl::Seconds(180),
                      {"HELM_CACHE_HOME=" + home_ + "/cache", "HELM_CONFIG_HOME=" + home_ + "/config",
                       "HELM_DATA_HOME=" + home_ + "/data",
                       "KUBECONFIG=" + K8sClusterEnvironment::Info().kubeconfig});
  }

  // kubectl auth can-i as the chart's ServiceAccount (impersonated by the admin).
  bool CanI(std::vector<std::string> args) {
    args.insert(args.begin(), {"auth", "can-i"});
    args.push_back(absl::StrCat("--as=", kServiceAccount));
    return testing::Kubectl(K8sClusterEnvironment::Info(), args).ok();  // "no" exits 1
  }

  bool Exists(const std::vector<std::string>& kind_and_name, bool namespaced = true) {
    std::vector<std::string> args = {"get"};
    args.insert(args.end(), kind_and_name.begin(), kind_and_name.end());
    if (namespaced) args.insert(args.end(), {"-n", kNamespace});
    args.insert(args.end(), {"-o", "name"});
    return testing::Kubectl(K8sClusterEnvironment::Info(), args).ok();
  }

  std::string helm_, home_;
  std::unique_ptr<k8s::RestClient> client_;
};

// "group/resource" -> verbs, from a ClusterRole's rules.
std::map<std::string, std::set<std::string>> Grants(const YAML::Node& role) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& rule : role["rules"]) {
    for (const auto& g : rule["apiGroups"]) {
      for (const auto& r : rule["resources"]) {
        for (const auto& v : rule["verbs"]) {
          out[g.as<std::string>() + "/" + r.as<std::string>()].insert(v.as<std::string>());
        }
      }
    }
  }
  return out;
}

TEST_F(HelmE2E, LintAndTemplateGrantExactlyWhatTheDaemonNeeds) {
  const CommandResult lint = Helm({"lint", Chart()});
  EXPECT_EQ(lint.exit_code, 0) << lint.output;

  const CommandResult rendered = Helm({"template", "onequeue", Chart(), "-n", kNamespace});
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  std::map<std::string, YAML::Node> by_kind;
  for (const YAML::Node& doc : YAML::LoadAll(rendered.output)) {
    if (doc && doc["kind"]) by_kind[doc["kind"].as<std::string>()] = doc;
  }
  for (const char* kind : {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap",
                           "Service", "Deployment", "PodDisruptionBudget"}) {
    EXPECT_TRUE(by_kind.count(kind)) << kind << " missing from helm template";
  }
  ASSERT_TRUE(by_kind.count("ClusterRole"));
  const auto grants = Grants(by_kind["ClusterRole"]);
  for (const auto& [resource, verbs] : grants) {
    EXPECT_FALSE(absl::StrContains(resource, "*")) << "wildcard in " << resource;
    EXPECT_FALSE(verbs.count("*")) << "wildcard verb on " << resource;
  }
  // Exactly what onequeue-scheduler calls, no more (issue 13 defect 9): the pod and node informers
  // (list, watch; main.cc), bind and evict (k8s_client/scheduler_api.cc), PodScheduled and
  // nominatedNodeName (pods/status patch), the wait and hold annotations (pods patch; kube_cluster.cc,
  // admin_actions.cc), node ownership and reservations (nodes get + patch with resourceVersion),
  // events.k8s.io/v1 events (create, patch of a series), the PodDisruptionBudget informer (list,
  // watch; preemption picks victims the budgets allow, issue 13 defect 7). No core events,
  // namespaces or priority classes: nothing reads them today.
  const std::map<std::string, std::set<std::string>> exact = {
      {"/pods", {"list", "watch", "patch", "delete"}},  // delete: victims no budget covers (issue 26)
      {"/pods/binding", {"create"}},
      {"/pods/eviction", {"create"}},
      {"/pods/status", {"patch"}},
      {"/nodes", {"get", "list", "watch", "patch"}},
      {"events.k8s.io/events", {"create", "patch"}},
      {"policy/poddisruptionbudgets", {"list", "watch"}},
      {"/persistentvolumeclaims", {"list", "watch", "patch"}},
      {"/persistentvolumes", {"list", "watch", "patch"}},  // a pre-made volume's claimRef
      {"storage.k8s.io/storageclasses", {"list", "watch"}},
      {"storage.k8s.io/csinodes", {"list", "watch"}},
      {"storage.k8s.io/csidrivers", {"list", "watch"}},
      {"storage.k8s.io/csistoragecapacities", {"list", "watch"}},
      // GPUs on shared nodes by index (issue 25, DRA): the claim's allocation is the scheduler's write.
      {"resource.k8s.io/resourceslices", {"get", "list", "watch"}},
      {"resource.k8s.io/resourceclaims", {"get", "list", "watch", "update"}},  // the finalizer
      {"resource.k8s.io/deviceclasses", {"get", "list", "watch"}},
      {"resource.k8s.io/resourceclaims/status", {"update"}},
      {"resource.k8s.io/resourceclaims/binding", {"update"}},  // asked for allocation / reservedFor writes
  };
  EXPECT_EQ(grants, exact);
  // The Lease: create, and get/update of this release's Lease only; the fair-share usage (issue
  // 29): create, and get/update of the ConfigMap queue.usageConfigMap only.
  ASSERT_TRUE(by_kind.count("Role"));
  const YAML::Node lease_rules = by_kind["Role"]["rules"];
  ASSERT_EQ(lease_rules.size(), 4u);
  EXPECT_EQ(Grants(by_kind["Role"]), (std::map<std::string, std::set<std::string>>{
                                         {"coordination.k8s.io/leases", {"create", "get", "update"}},
                                         {"/configmaps", {"create", "get", "update"}}}));
  for (int i : {0, 2}) {
    EXPECT_FALSE(lease_rules[i]["resourceNames"]);
    EXPECT_EQ(lease_rules[i]["verbs"].size(), 1u);
  }
  ASSERT_TRUE(lease_rules[1]["resourceNames"]);
  EXPECT_EQ(lease_rules[1]["resourceNames"][0].as<std::string>(), "onequeue");
  ASSERT_TRUE(lease_rules[3]["resourceNames"]);
  EXPECT_EQ(lease_rules[3]["resourceNames"][0].as<std::string>(), "onequeue-usage");

  // Liveness and readiness probe /healthz on the metrics port (issue 13 defect 8), which listens on
  // the pod's IP where the kubelet reaches it.
  const YAML::Node container = by_kind["Deployment"]["spec"]["template"]["spec"]["containers"][0];
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    SCOPED_TRACE(probe);
    ASSERT_TRUE(container[probe]);
    EXPECT_EQ(container[probe]["httpGet"]["path"].as<std::string>(), "/healthz");
    EXPECT_EQ(container[probe]["httpGet"]["port"].as<std::string>(), "metrics");
  }
  const YAML::Node rendered_config = YAML::Load(by_kind["ConfigMap"]["data"]["config.yaml"].as<std::string>());
  EXPECT_EQ(rendered_config["server"]["metricsAddress"].as<std::string>(), "0.0.0.0:9090");
  EXPECT_EQ(rendered_config["server"]["healthCycleAgeSeconds"].as<int>(), 60);

  // Two replicas with leader election: a RollingUpdate is safe (the new pod waits for the Lease).
  // The gRPC API on loopback: no admin token is configured.
  EXPECT_FALSE(by_kind["Deployment"]["spec"]["strategy"]);
  const std::string default_config = by_kind["ConfigMap"]["data"]["config.yaml"].as<std::string>();
  EXPECT_EQ(YAML::Load(default_config)["server"]["grpcAddress"].as<std::string>(), "127.0.0.1:50051");
  // Issue 24, secure defaults: namespacePolicies [] is no "anything goes". Namespaces without an
  // entry ("*") may use only the QOS that cannot preempt and are preemptible: not interactive.
  const YAML::Node policies = YAML::Load(default_config)["queue"]["namespacePolicies"];
  ASSERT_EQ(policies.size(), 1u) << default_config;
  EXPECT_EQ(policies[0]["namespace"].as<std::string>(), "*");
  std::vector<std::string> allowed;
  for (const auto& q : policies[0]["allowedQos"]) allowed.push_back(q.as<std::string>());
  EXPECT_EQ(allowed, (std::vector<std::string>{"normal", "scavenger"}));
  // A "*" entry of the user's own is kept as it is.
  const CommandResult own_any = Helm({"template", "onequeue", Chart(), "-n", kNamespace, "--set-json",
                                      R"(queue.namespacePolicies=[{"namespace":"*","allowedQos":["interactive"]}])"});
  ASSERT_EQ(own_any.exit_code, 0) << own_any.output;
  EXPECT_THAT(own_any.output, HasSubstr(R"(namespacePolicies: [{"allowedQos":["interactive"],"namespace":"*"}])"));

  // The chart's config.yaml is one the daemon accepts.
  const std::string config = by_kind["ConfigMap"]["data"]["config.yaml"].as<std::string>();
  const std::string path = home_ + "/config.yaml";
  std::ofstream(path) << config;
  const CommandResult check = RunCommand({ONEQUEUE_SCHEDULER_BIN, "--check-config", "--config", path});
  EXPECT_EQ(check.exit_code, 0) << check.output << "\n" << config;

  // slurm.enabled=true without slurm.url: the chart's own message, nothing rendered.
  const CommandResult no_url = Helm({"template", "onequeue", Chart(), "--set", "slurm.enabled=true"});
  EXPECT_NE(no_url.exit_code, 0);
  EXPECT_THAT(no_url.output, HasSubstr("slurm.url is empty"));

  // Slurm on with a slurm.defaultQos or a qosMap target outside queue.qos: the chart's own message
  // (the daemon would refuse the config: ConfigTest.SlurmQosNamesMustBeInTheQosTable).
  const CommandResult bad_default = Helm({"template", "onequeue", Chart(), "--set", "slurm.enabled=true", "--set",
                                          "slurm.url=https://slurmrestd:6820", "--set", "slurm.defaultQos=batch"});
  EXPECT_NE(bad_default.exit_code, 0);
  EXPECT_THAT(bad_default.output, HasSubstr("slurm.defaultQos is \"batch\", which is not in queue.qos (interactive, normal, scavenger)"));
  const CommandResult bad_map = Helm({"template", "onequeue", Chart(), "--set", "slurm.enabled=true", "--set",
                                      "slurm.url=https://slurmrestd:6820", "--set", "slurm.qosMap.high=gold"});
  EXPECT_NE(bad_map.exit_code, 0);
  EXPECT_THAT(bad_map.output, HasSubstr("slurm.qosMap maps Slurm QOS \"high\" to \"gold\", which is not in queue.qos"));
  const CommandResult good_map = Helm({"template", "onequeue", Chart(), "--set", "slurm.enabled=true", "--set",
                                       "slurm.url=https://slurmrestd:6820", "--set", "slurm.qosMap.high=interactive"});
  EXPECT_EQ(good_map.exit_code, 0) << good_map.output;

  // One replica without leader election: Recreate, so an upgrade never runs two schedulers.
  const CommandResult single = Helm({"template", "onequeue", Chart(), "-n", kNamespace, "--set", "replicaCount=1",
                                     "--set", "leaderElection.enabled=false"});
  ASSERT_EQ(single.exit_code, 0) << single.output;
  bool saw_deployment = false;
  for (const YAML::Node& doc : YAML::LoadAll(single.output)) {
    if (!doc || !doc["kind"] || doc["kind"].as<std::string>() != "Deployment") continue;
    saw_deployment = true;
    ASSERT_TRUE(doc["spec"]["strategy"]) << single.output;
    EXPECT_EQ(doc["spec"]["strategy"]["type"].as<std::string>(), "Recreate");
  }
  EXPECT_TRUE(saw_deployment);

  // Issue 24: an admin token without TLS is refused (it would cross the network in clear).
  const CommandResult token_in_clear = Helm({"template", "onequeue", Chart(), "-n", kNamespace, "--set",
                                             "admin.tokenSecret.name=onequeue-admin-token"});
  EXPECT_NE(token_in_clear.exit_code, 0);
  EXPECT_THAT(token_in_clear.output, HasSubstr("admin.tokenSecret.name needs tls.secretName"));
  // With an admin token and TLS the API listens on the pod's IP (for the Service), and the daemon accepts it.
  const CommandResult with_token = Helm({"template", "onequeue", Chart(), "-n", kNamespace, "--set",
                                         "admin.tokenSecret.name=onequeue-admin-token", "--set",
                                         "tls.secretName=onequeue-grpc-tls"});
  ASSERT_EQ(with_token.exit_code, 0) << with_token.output;
  for (const YAML::Node& doc : YAML::LoadAll(with_token.output)) {
    if (!doc || !doc["kind"] || doc["kind"].as<std::string>() != "ConfigMap") continue;
    const std::string text = doc["data"]["config.yaml"].as<std::string>();
    EXPECT_EQ(YAML::Load(text)["server"]["grpcAddress"].as<std::string>(), "0.0.0.0:50051");
    std::ofstream(path) << text;
    const CommandResult ok = RunCommand({ONEQUEUE_SCHEDULER_BIN, "--check-config", "--config", path});
    EXPECT_EQ(ok.exit_code, 0) << ok.output;
    // The same address without the token: the daemon refuses it.
    YAML::Node edited = YAML::Load(text);
    edited["server"].remove("adminTokenFile");
    std::ofstream(path) << YAML::Dump(edited);
    const CommandResult refused = RunCommand({ONEQUEUE_SCHEDULER_BIN, "--check-config", "--config", path});
    EXPECT_NE(refused.exit_code, 0);
    EXPECT_THAT(refused.output, HasSubstr("listening beyond loopback needs server.adminTokenFile"));
  }

  // TLS for the gRPC API (issue 13 defect 9): off by default; tls.secretName mounts the Secret's
  // tls.crt and tls.key and the daemon reads them (server.tlsCertFile / tlsKeyFile).
  EXPECT_FALSE(rendered_config["server"]["tlsCertFile"]);
  EXPECT_EQ(rendered_config["kubernetes"]["maxResponseBytes"].as<int64_t>(), int64_t{256} << 20);
  const CommandResult with_tls =
      Helm({"template", "onequeue", Chart(), "-n", kNamespace, "--set", "tls.secretName=onequeue-grpc-tls"});
  ASSERT_EQ(with_tls.exit_code, 0) << with_tls.output;
  bool mounted = false;
  for (const YAML::Node& doc : YAML::LoadAll(with_tls.output)) {
    if (!doc || !doc["kind"]) continue;
    if (doc["kind"].as<std::string>() == "ConfigMap") {
      const YAML::Node tls_config = YAML::Load(doc["data"]["config.yaml"].as<std::string>());
      EXPECT_EQ(tls_config["server"]["tlsCertFile"].as<std::string>(), "/var/run/onequeue/tls/tls.crt");
      EXPECT_EQ(tls_config["server"]["tlsKeyFile"].as<std::string>(), "/var/run/onequeue/tls/tls.key");
    }
    if (doc["kind"].as<std::string>() != "Deployment") continue;
    for (const YAML::Node& v : doc["spec"]["template"]["spec"]["volumes"]) {
      if (v["secret"] && v["secret"]["secretName"].as<std::string>() == "onequeue-grpc-tls") mounted = true;
    }
  }
  EXPECT_TRUE(mounted) << "the TLS Secret is not mounted";
}

// Every value in values.yaml reaches the daemon: for each leaf, helm template with a different
// value, the rendered config.yaml passes --check-config and holds the new value at the same key
// (or, for what is not configuration, the manifests carry it). A value added to values.yaml without
// a rule here fails the test: say where it goes.
void Leaves(const YAML::Node& node, const std::string& prefix, std::vector<std::pair<std::string, YAML::Node>>* out) {
  if (node.IsMap() && node.size() > 0) {
    for (const auto& kv : node) {
      const std::string key = kv.first.as<std::string>();
      Leaves(kv.second, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  out->push_back({prefix, node});
}

// YAML as JSON with every scalar a string (helm's toJson and YAML differ in number and bool forms).
json Normal(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (const auto& kv : n) o[kv.first.as<std::string>()] = Normal(kv.second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& e : n) a.push_back(Normal(e));
    return a;
  }
  if (n.IsNull()) return "";
  return n.as<std::string>();
}
json Normal(const json& j) {
  if (j.is_object()) {
    json o = json::object();
    for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = Normal(it.value());
    return o;
  }
  if (j.is_array()) {
    json a = json::array();
    for (const auto& e : j) a.push_back(Normal(e));
    return a;
  }
  if (j.is_string()) return j;
  if (j.is_null()) return "";
  return j.dump();
}

TEST_F(HelmE2E, EveryValueInValuesYamlReachesTheDaemon) {
  const YAML::Node values = YAML::LoadFile(Chart() + "/values.yaml");
  std::vector<std::pair<std::string, YAML::Node>> leaves;
  Leaves(values, "", &leaves);
  ASSERT_GT(leaves.size(), 40u);
  // Values that are not the daemon's configuration: where the manifests show them.
  const std::set<std::string> manifest_only = {
      "replicaCount", "image.repository", "image.tag", "image.pullPolicy", "resources.requests.cpu",
      "resources.requests.memory", "resources.limits.memory", "nodeSelector", "tolerations", "affinity",
      "priorityClassName", "slurm.tokenSecret.name", "admin.tokenSecret.name", "tls.secretName"};
  // Values whose key in config.yaml differs, and what it holds for a value v.
  const std::map<std::string, std::pair<std::string, std::function<std::string(const std::string&)>>> renamed = {
      // On loopback unless admin.tokenSecret is set (LintAndTemplate... checks that case).
      {"service.grpcPort", {"server.grpcAddress", [](const std::string& v) { return "127.0.0.1:" + v; }}},
      {"service.metricsPort", {"server.metricsAddress", [](const std::string& v) { return "0.0.0.0:" + v; }}},
      {"slurm.tokenSecret.key", {"slurm.tokenFile", [](const std::string& v) { return "/var/run/onequeue/slurm/" + v; }}},
      {"admin.tokenSecret.key", {"server.adminTokenFile", [](const std::string& v) { return "/var/run/onequeue/admin/" + v; }}},
      {"health.cycleAgeSeconds", {"server.healthCycleAgeSeconds", [](const std::string& v) { return v; }}},
      {"admin.allowInsecureWithoutTls", {"server.allowInsecureAdminToken", [](const std::string& v) { return v; }}},
  };
  // Settings a changed value needs to render at all.
  const std::map<std::string, std::vector<std::string>> needs = {
      {"slurm.enabled", {"slurm.url=http://127.0.0.1:6820"}},
      {"slurm.tokenSecret.name", {"slurm.enabled=true", "slurm.url=http://127.0.0.1:6820"}},
      {"admin.tokenSecret.key", {"admin.tokenSecret.name=onequeue-admin-token", "tls.secretName=onequeue-grpc-tls"}},
      {"admin.tokenSecret.name", {"tls.secretName=onequeue-grpc-tls"}},  // a token needs TLS (issue 24)
      {"leaderElection.enabled", {"replicaCount=1"}},
  };
  // A different, valid value for each kind of leaf.
  const std::map<std::string, json> chosen = {
      {"slurm.url", "http://127.0.0.1:6999"},   {"slurm.apiVersion", "v0.0.40"},
      {"slurm.lendMechanism", "drain"},         {"image.pullPolicy", "Always"},
      {"queue.starvationRemedy", "reserve"},   {"kubernetes.httpClient", "nghttp2"},
      {"queue.starvationBoundWidthScale", 0.5}, {"queue.starvingOrder", "first-starved"},  // valid with front
      {"resources.requests.cpu", "321m"},       {"resources.requests.memory", "321Mi"},
      {"resources.limits.memory", "3210Mi"},    {"slurm.qosMap", {{"x-slurm-qos", "normal"}}},
      {"nodeSelector", {{"x-test-label", "yes"}}},
      {"tolerations", json::array({{{"key", "x-test-taint"}, {"operator", "Exists"}}})},
      {"affinity", {{"nodeAffinity", {{"requiredDuringSchedulingIgnoredDuringExecution",
                                       {{"nodeSelectorTerms", json::array({{{"matchExpressions",
                                         json::array({{{"key", "x-test-affinity"}, {"operator", "Exists"}}})}}})}}}}}}},
      {"queue.accounts", json::array({{{"name", "x-test"}, {"parent", ""}, {"shares", 2}}})},
      {"queue.namespacePolicies", json::array({{{"namespace", "x-test"}, {"allowedQos", json::array({"normal"})},
                                                {"defaultQos", "normal"}, {"allowedAccounts", json::array({"x-test"})},
                                                {"defaultAccount", "x-test"}}})},
  };
  const std::string dir = home_ + "/values-walk";
  mkdir(dir.c_str(), 0755);
  int checked = 0;
  for (const auto& [path, original] : leaves) {
    SCOPED_TRACE(path);
    json v;
    if (auto c = chosen.find(path); c != chosen.end()) {
      v = c->second;
    } else if (original.IsSequence()) {
      v = Normal(original);
      if (path == "queue.qos") v.push_back({{"name", "x-test"}, {"priority", 5}});
      else v.push_back("x-test");
    } else if (original.IsScalar() && (original.Scalar() == "true" || original.Scalar() == "false")) {
      v = original.Scalar() != "true";
    } else if (original.IsScalar() && !original.Scalar().empty() &&
               original.Scalar().find_first_not_of("0123456789.") == std::string::npos) {
      v = std::stod(original.Scalar()) + 7;
      if (v.get<double>() == std::floor(v.get<double>())) v = static_cast<int64_t>(v.get<double>());
    } else if (original.IsScalar() || original.IsNull()) {
      const std::string s = original.IsNull() ? "" : original.Scalar();
      v = s.empty() ? std::string("x-test") : s + "-x";
    } else {
      ADD_FAILURE() << path << ": no rule for this kind of value";
      continue;
    }
    std::vector<std::string> args = {"template", "onequeue", Chart(), "-n", kNamespace, "--set-json",
                                     path + "=" + v.dump()};
    if (auto n = needs.find(path); n != needs.end()) {
      for (const auto& extra : n->second) args.insert(args.end(), {"--set", extra});
    }
    const CommandResult rendered = Helm(args);
    ASSERT_EQ(rendered.exit_code, 0) << absl::StrJoin(args, " ") << "\n" << rendered.output;
    YAML::Node configmap;
    for (const YAML::Node& doc : YAML::LoadAll(rendered.output)) {
      if (doc && doc["kind"] && doc["kind"].as<std::string>() == "ConfigMap") configmap = doc;
    }
    ASSERT_TRUE(configmap) << rendered.output;
    const std::string config_text = configmap["data"]["config.yaml"].as<std::string>();
    const std::string config_path = dir + "/config.yaml";
    std::ofstream(config_path) << config_text;
    const CommandResult check = RunCommand({ONEQUEUE_SCHEDULER_BIN, "--check-config", "--config", config_path});
    EXPECT_EQ(check.exit_code, 0) << check.output << "\n" << config_text;

    const std::string plain = v.is_string() ? v.get<std::string>() : v.dump();
    if (manifest_only.count(path)) {
      // The value's text (or, for a map or list, its first key's) appears in the manifests.
      std::string needle = plain;
      if (v.is_object() || v.is_array()) needle = "x-test";
      EXPECT_THAT(rendered.output, HasSubstr(needle)) << path;
      ++checked;
      continue;
    }
    std::string config_key = path;
    json expected = Normal(v);
    // Without a "*" entry of its own the chart adds one: only the QOS that cannot preempt (issue 24).
    if (path == "queue.namespacePolicies") {
      expected.push_back(Normal(json{{"allowedQos", json::array({"normal", "scavenger"})}, {"namespace", "*"}}));
    }
    if (auto r = renamed.find(path); r != renamed.end()) {
      config_key = r->second.first;
      expected = r->second.second(plain);
    }
    YAML::Node at = YAML::Load(config_text);
    for (absl::string_view part : absl::StrSplit(config_key, '.')) {
      ASSERT_TRUE(at.IsMap() && at[std::string(part)]) << config_key << " not in config.yaml:\n" << config_text;
      at = at[std::string(part)];
    }
    EXPECT_EQ(Normal(at), expected) << config_key << " in config.yaml:\n" << config_text;
    ++checked;
  }
  std::cout << "[ measure ] values.yaml leaves checked: " << checked << "\n";
}

TEST_F(HelmE2E, InstallRunsTwoReplicasWithLeastPrivilegeAndUninstallRemovesIt) {
  const auto& info = K8sClusterEnvironment::Info();
  // up.sh applied test/cluster/scheduler-rbac.yaml, whose ServiceAccount onequeue-system/onequeue
  // has the chart's name: remove those objects so the chart creates (and owns) its own, and so
  // can-i below checks the chart's rules alone.
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"delete", "clusterrolebinding", "onequeue-scheduler", "--ignore-not-found"},
           {"delete", "clusterrole", "onequeue-scheduler", "--ignore-not-found"},
           {"delete", "-n", kNamespace, "rolebinding,role", "onequeue-scheduler", "--ignore-not-found"},
           {"delete", "-n", kNamespace, "serviceaccount", "onequeue", "--ignore-not-found"}}) {
    auto r = testing::Kubectl(info, args);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  // A node for the daemon's own pods (kube-scheduler binds them, kwok runs them).
  json node = PoolNode("helm-node", "none", "8");
  node["metadata"]["labels"].erase("onequeue.io/pool");
  ASSERT_TRUE(Create(client_.get(), k8s::kNodes, "", node).ok());

  // The daemon's slurm.enabled=true without slurm.url is refused before anything is created.
  const CommandResult refused =
      Helm({"install", "onequeue-slurm", Chart(), "-n", kNamespace, "--create-namespace", "--set", "slurm.enabled=true"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.output, HasSubstr("slurm.url is empty"));

  const CommandResult install = Helm({"install", "onequeue", Chart(), "-n", kNamespace, "--create-namespace"});
  ASSERT_EQ(install.exit_code, 0) << install.output;

  // Two replicas created, bound by kube-scheduler and Running under kwok.
  std::vector<k8s::Pod> pods;
  EXPECT_TRUE(Eventually(absl::Seconds(120), [&] {
    auto listed = ListPods(client_.get(), kNamespace, "app.kubernetes.io/name=onequeue");
    if (!listed.ok()) return false;
    pods = *listed;
    int running = 0;
    for (const auto& p : pods) running += p.phase == "Running" ? 1 : 0;
    return running == 2;
  })) << pods.size() << " pods; "
      << (testing::Kubectl(info, {"get", "pods,rs,deploy", "-n", kNamespace, "-o", "wide"}).value_or("?"));
  for (const auto& p : pods) EXPECT_EQ(p.node_name, "helm-node");

  for (const auto& kind_and_name : std::vector<std::vector<std::string>>{{"serviceaccount", "onequeue"},
                                                                         {"role", "onequeue-leader-election"},
                                                                         {"rolebinding", "onequeue-leader-election"},
                                                                         {"configmap", "onequeue-config"},
                                                                         {"service", "onequeue"},
                                                                         {"poddisruptionbudget", "onequeue"},
                                                                         {"deployment", "onequeue"}}) {
    EXPECT_TRUE(Exists(kind_and_name)) << absl::StrJoin(kind_and_name, " ");
  }
  EXPECT_TRUE(Exists({"clusterrole", "onequeue"}, false));
  EXPECT_TRUE(Exists({"clusterrolebinding", "onequeue"}, false));

  // The installed configuration passes the daemon's own check.
  auto config = testing::Kubectl(info, {"get", "configmap", "onequeue-config", "-n", kNamespace, "-o",
                                        "jsonpath={.data.config\\.yaml}"});
  ASSERT_TRUE(config.ok()) << config.status();
  const std::string path = home_ + "/installed-config.yaml";
  std::ofstream(path) << *config;
  const CommandResult check = RunCommand({ONEQUEUE_SCHEDULER_BIN, "--check-config", "--config", path});
  EXPECT_EQ(check.exit_code, 0) << check.output;

  // Least privilege, as the chart's ServiceAccount.
  EXPECT_TRUE(CanI({"create", "pods", "--subresource=binding", "-n", "default"}));
  EXPECT_TRUE(CanI({"create", "pods", "--subresource=eviction", "-n", "default"}));
  EXPECT_TRUE(CanI({"patch", "pods", "--subresource=status", "-n", "default"}));
  EXPECT_TRUE(CanI({"patch", "pods", "-n", "default"}));
  EXPECT_TRUE(CanI({"patch", "nodes"}));
  EXPECT_TRUE(CanI({"watch", "pods", "--all-namespaces"}));
  EXPECT_TRUE(CanI({"watch", "poddisruptionbudgets.policy", "--all-namespaces"}));  // victims the budgets allow
  EXPECT_FALSE(CanI({"update", "poddisruptionbudgets.policy", "-n", "default"}));
  EXPECT_TRUE(CanI({"patch", "persistentvolumeclaims", "-n", "default"}));  // selected-node (VolumeBinding)
  EXPECT_TRUE(CanI({"patch", "persistentvolumes"}));  // claimRef (VolumeBinding, pre-made volumes)
  EXPECT_FALSE(CanI({"update", "persistentvolumes"}));
  EXPECT_TRUE(CanI({"create", "events.events.k8s.io", "-n", "default"}));
  EXPECT_TRUE(CanI({"create", "leases.coordination.k8s.io", "-n", kNamespace}));
  EXPECT_TRUE(CanI({"update", "leases.coordination.k8s.io/onequeue", "-n", kNamespace}));
  EXPECT_FALSE(CanI({"update", "leases.coordination.k8s.io/other", "-n", kNamespace}));
  EXPECT_TRUE(CanI({"update", "configmaps/onequeue-usage", "-n", kNamespace}));  // fair-share usage
  EXPECT_FALSE(CanI({"update", "configmaps/onequeue-config", "-n", kNamespace}));
  EXPECT_FALSE(CanI({"create", "pods", "-n", "default"}));
  EXPECT_TRUE(CanI({"delete", "pods", "-n", "default"}));  // victims no budget covers (issue 26)
  EXPECT_FALSE(CanI({"get", "secrets", "-n", kNamespace}));
  EXPECT_FALSE(CanI({"update", "deployments.apps", "-n", "default"}));
  EXPECT_FALSE(CanI({"delete", "nodes"}));
  EXPECT_FALSE(CanI({"create", "events", "-n", "default"}));  // core events: not used
  EXPECT_FALSE(CanI({"list", "namespaces"}));
  EXPECT_FALSE(CanI({"get", "pods", "-n", "default"}));       // the informer lists and watches

  const CommandResult uninstall = Helm({"uninstall", "onequeue", "-n", kNamespace, "--wait", "--timeout", "120s"});
  EXPECT_EQ(uninstall.exit_code, 0) << uninstall.output;
  EXPECT_TRUE(Eventually(absl::Seconds(60), [&] {
    return !Exists({"deployment", "onequeue"}) && !Exists({"configmap", "onequeue-config"}) &&
           !Exists({"serviceaccount", "onequeue"}) && !Exists({"clusterrole", "onequeue"}, false) &&
           !Exists({"clusterrolebinding", "onequeue"}, false);
  }));
  EXPECT_FALSE(CanI({"create", "pods", "--subresource=binding", "-n", "default"}));
  const CommandResult list = Helm({"list", "-n", kNamespace, "-q"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_THAT(list.output, ::testing::Not(HasSubstr("onequeue")));
}

}  // namespace
}  // namespace onequeue::e2e

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.controller_manager = true, .kwok = true, .kube_scheduler = true})

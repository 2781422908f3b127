#pragma once
// The daemon's configuration: a versioned YAML document, validated strictly. Every error names
// the file, the key path and the line, and unknown keys are errors (a misspelt key that silently
// falls back to a default is the habit we avoid).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/tres_billing.h"

namespace onequeue::scheduler {

inline constexpr const char* kConfigApiVersion = "onequeue.io/v1alpha1";
inline constexpr const char* kConfigKind = "SchedulerConfiguration";

struct KubernetesConfig {
  // false: no Kubernetes connection (gRPC only; for tests and Slurm-only trials).
  bool enabled = true;
  std::string kubeconfig;  // empty: in-cluster config
  double qps = 50;
  int burst = 100;
  // The largest answer of the API server held in memory (a list page, any response body), and
  // the most bytes of a watch received and not handled yet (past it the watch ends and the
  // informer relists): a broken or hostile server cannot make the daemon grow without bound.
  int64_t max_response_bytes = int64_t{256} << 20;
  // The HTTP client under the Kubernetes client (kubernetes.httpClient): "auto" (onequeue's own
  // HTTP/2 client, or libcurl when a proxy variable is set: k8s::ChooseHttpClient), "curl"
  // (libcurl) or "nghttp2" (onequeue's own HTTP/2 client; issue 26, docs/k8s_client.md).
  std::string http_client = "auto";
};

struct SlurmConfig {
  bool enabled = false;
  std::string url;          // http://127.0.0.1:6820 or unix:///path/to/socket
  // http:// to a host other than loopback sends the JWT in clear: refused unless this says the
  // network path is trusted (slurm.allowInsecureHttp).
  bool allow_insecure_http = false;
  std::string token_file;   // JWT, re-read when it changes
  std::string user = "slurm";
  std::string api_version = "auto";  // auto | v0.0.38 .. v0.0.45
  std::string lend_mechanism = "placeholder";  // drain | placeholder | slurmd-pod
  std::vector<std::string> shared_partitions;
  // Pool node <-> Slurm node: the Kubernetes node label whose value is the Slurm node's name;
  // empty: the same name on both sides.
  std::string node_label;
  // A Kubernetes-owned pool node is lent only after this long without a pod (hysteresis), and a
  // lent node with no Slurm job is given back (Returned) after return_after_seconds.
  int64_t lend_after_seconds = 60;
  int64_t return_after_seconds = 60;
  // Idle Kubernetes-owned pool nodes never lent, kept warm for interactive pods.
  int headroom_nodes = 0;
  double poll_interval_seconds = 2;
  // At start the loop waits this long for a first Slurm poll before it schedules pods with Slurm
  // unknown (then keeping them off lent nodes): a cycle without the poll would not know which lent
  // nodes run Slurm jobs.
  double first_poll_wait_seconds = 30;
  // A Slurm victim that Slurm will not requeue (requeue=false, or an srun/salloc allocation) is
  // cancelled when this is true; when false its preemption is given up instead: the reservation is
  // released, the node goes back to Slurm, and the preemptor's waiting report says why.
  bool cancel_unrequeueable = true;
  // Slurm QOS name -> onequeue QOS name; a Slurm QOS not listed keeps its name if onequeue's
  // table has it, else default_qos.
  std::map<std::string, std::string> qos_map;
  std::string default_qos = "batch";
  // Slurm GRES name -> Kubernetes extended resource (gres "gpu:4" asks nvidia.com/gpu: 4).
  std::map<std::string, std::string> gres_resources = {{"gpu", "nvidia.com/gpu"}};
  // placeholder mechanism: the partition of higher PriorityTier over the same nodes.
  std::string reclaim_partition = "reclaim";
  // scontrol for what slurmrestd cannot do (requeue; drain/resume on v0.0.38); empty: REST only.
  std::string scontrol_path;
  std::string slurm_conf;  // SLURM_CONF for scontrol
  // Never read from the YAML: the daemon's own Unix user, set by main.cc when scontrol_path is
  // set. scontrol drains as this user, so a tagged drain it set is onequeue's (issue 24 M2).
  std::string scontrol_user;
  // Issue 25 (docs/sharing.md): slurm.partitions.<name>.sharing, exclusive (the default),
  // shared-same-tenant (shared, one tenant at a time: SharingConfig::tenants) or
  // shared, for partitions of sharedPartitions. A pool node is shared when every shared partition
  // it is in says shared: pods and that node's Slurm jobs are then planned side by side.
  std::map<std::string, std::string> partition_sharing;
  // Issue 25, docs/sharing.md section 5: slurm.partitions.<name>.gpus: dra on a shared partition
  // (by name): pods there get GPUs only through ResourceClaims of these DeviceClasses, allocated by
  // onequeue to the devices whose `index_attribute` (an int attribute of the ResourceSlice's
  // device) equals the GPU indices Slurm gave the pod's placeholder. A partition not listed gets
  // GPUs from the device plugin (gpus: device-plugin, the default: kept apart by count only).
  struct DraGpus {
    std::vector<std::string> device_classes;  // gpuDeviceClasses: Slurm's `gpu` GRES
    std::string index_attribute = "index";    // gpuIndexAttribute
    friend bool operator==(const DraGpus&, const DraGpus&) = default;
  };
  std::map<std::string, DraGpus> partition_dra_gpus;
};

struct QosConfig {
  std::string name;
  int64_t priority = 0;
  bool preemptible = true;
  bool can_preempt = false;
  int64_t grace_seconds = 0;
};

// One account of the fair-share tree (Slurm's associations): a namespace or a Slurm account.
struct AccountConfig {
  std::string name;
  std::string parent;  // empty: under the root
  double shares = 1;
};

// What the pods of one namespace may ask for (Slurm's associations for Kubernetes tenants). A pod
// that asks for a QOS or account outside its namespace's lists waits with QOSNotAllowed or
// AccountNotAllowed and nothing else happens. Namespace "*" applies to every namespace without an
// entry of its own; a namespace matched by neither may ask for anything (as before policies).
struct NamespacePolicyConfig {
  std::string namespace_;
  std::vector<std::string> allowed_qos;       // empty: any QOS of the table
  std::string default_qos;                    // a pod without onequeue.io/qos gets it ("": none)
  std::vector<std::string> allowed_accounts;  // empty: any account
  std::string default_account;                // a pod without onequeue.io/account ("": the namespace)
};

// The daemon's default priority weights (docs/simulate.md "The default policy"; age 20000 since
// issue 27, docs/queue.md "Starvation": twice fair-share's, so age saturating at
// queue.maxAgeSeconds, one day, overtakes any usage). No size factor
// (the planner library's own default is 1000, queue::PriorityWeights): it favoured big requests
// enough to outweigh a QOS step, which sites expect to decide between otherwise equal workloads.
inline const std::map<std::string, double> kDefaultWeights = {
    {"age", 20000}, {"fairShare", 10000}, {"size", 0}, {"partition", 1000}, {"qos", 10000}};

struct QueueConfig {
  // The defaults are the default policy chosen in docs/simulate.md "The default policy" (issue 15):
  // EASY (one reservation, kept from cycle to cycle), shortest backfill candidates first, exact
  // reservation times, a week's window, and fair-share over a 12-hour half-life with the weights
  // below; it beat EASY's average bounded slowdown by 24-86 % on the four generated workloads.
  int reservation_depth = 1;  // 1 = EASY, 0 = unlimited (conservative)
  int64_t resolution_seconds = 1;
  int64_t window_seconds = 7 * 86400;
  // Backfill candidates (the workloads after the last reservation) try to start shortest time
  // limit first (SJBF), not in queue order.
  bool backfill_shortest_first = true;
  // true: last cycle's reservations are promises the next plan keeps (PlanCycle's `promised`): a
  // reservation, and so the estimated start a user reads, never moves later unless its holder
  // changed itself (docs/queue.md "Promises"). false (the default since issue 27): every cycle
  // plans from scratch, like Slurm; kept promises pile up behind starving workloads on a saturated
  // pool (docs/queue.md "The default's remedy").
  bool keep_reservations = false;
  // Event-driven cycles between full ones plan only what arrived (QueuePlanner::OnArrival) when
  // the only changes are new single-pod workloads; a full cycle runs at least this often, and
  // whenever an incremental one cannot decide. 0: every cycle is full.
  int64_t full_cycle_seconds = 5;
  // age, fairShare, size, partition, qos; a factor not given takes its default (kDefaultWeights).
  std::map<std::string, double> weights;
  std::vector<QosConfig> qos;
  // The fair-share tree. Empty: every account the daemon sees (a namespace, a Slurm account) is
  // one leaf under the root with one share, so usage alone orders them. Listed: only these
  // accounts have shares (an unlisted account's fair-share factor is 0, like a Slurm user
  // without an association).
  std::vector<AccountConfig> accounts;
  int64_t usage_half_life_seconds = 12 * 3600;  // PriorityDecayHalfLife (Slurm's default: 7 days)
  // Issue 29 (docs/lending.md "Fair-share from real usage"): usage is charged in TRES billing
  // units (queue.tresBillingWeights, Slurm's TRESBillingWeights; default CPU 1 only), every
  // usageChargeSeconds while a workload runs, and saved by the leader every usageChargeSeconds to
  // the ConfigMap usageConfigMap in leaderElection.namespace ("": kept in memory only).
  TresBillingWeights tres_billing_weights;
  int64_t usage_charge_seconds = 60;
  std::string usage_config_map = "onequeue-usage";
  // Issue 27 (docs/queue.md "Starvation"): the age factor reaches 1 after this long pending
  // (Slurm's PriorityMaxAge; queue::QueueConfig::max_age), and a blocked workload pending this
  // long gets a reservation past the depth (queue::QueueConfig::starvation_bound). Both at least
  // 1 s: the bound is the guarantee that no wait is unbounded, so it cannot be switched off.
  int64_t max_age_seconds = 86400;
  int64_t starvation_bound_seconds = 2 * 86400;
  // ... or this many times its own time limit (queue::QueueConfig::starvation_bound_limits;
  // 0 = only the bound above).
  double starvation_bound_time_limits = 3;
  // At most this many starving workloads get a reservation past the depth per cycle, the
  // first ones the walk meets (queue::QueueConfig::max_starving_reservations).
  int64_t starvation_reservations_per_cycle = 100;
  // What a starving workload gets (queue::QueueConfig::starvation_remedy): "front" (the default
  // since issue 27's long draws), the head of the queue oldest first and no reservation past the
  // depth, "reserve", a reservation past the depth, or "front-reserve", both: the front, and the
  // next oldest starving workloads a reservation past the depth each, at most
  // starvation_reservations_per_cycle a cycle (docs/queue.md "Starvation").
  std::string starvation_remedy = "front";
  // Issue 27's long draws (docs/queue.md "Beyond the family"), for the front remedies only: both
  // starvation bounds of a workload shrink with the share of the pool it asks for, multiplied by
  // (1 - starvationBoundWidthScale x that share; 0 = off, at most 1;
  // queue::QueueConfig::starvation_width_scale), and the starving go to the front "oldest" first
  // (submit time) or "first-starved" first (the time each reached its bound;
  // queue::QueueConfig::starving_order).
  double starvation_bound_width_scale = 0;
  std::string starving_order = "oldest";
  std::vector<NamespacePolicyConfig> namespace_policies;
  // Issue 24 M4: a bound pod is evicted this long after its time limit (Slurm's OverTimeLimit;
  // 0, Slurm's default: at the limit).
  int64_t over_time_limit_seconds = 0;
  // Issue 29: node label keys of the topology, finest first (queue::QueueConfig::topology_labels):
  // a gang (pods of a group, a multi-node Slurm job) is packed into the fewest domains. A key no
  // pool node has is ignored; [] turns packing off.
  std::vector<std::string> topology_labels = {"topology.kubernetes.io/zone"};
  // queue.preemption (issue 26): candidate nodes per preemption decision, like kube-scheduler's
  // DefaultPreemption arguments; queue::PreemptionConfig, docs/queue.md "Preemption".
  struct Preemption {
    int min_candidate_nodes_percentage = 10;  // 0..100
    int min_candidate_nodes_absolute = 100;   // >= 0
    // A reservation its preemptor has not been able to use (a gang member deleted and not made
    // again, its victims never asked) is released after this long: long enough for a controller
    // to make a deleted member again, short enough that no node stays reserved and idle for ever.
    int64_t unusable_reservation_seconds = 60;  // >= 1
  } preemption;
};

struct ServerConfig {
  std::string grpc_address = "127.0.0.1:50051";
  std::string metrics_address = "127.0.0.1:9090";
  // A file holding the bearer token that admin calls (oq hold/release/drain/resume) must present;
  // re-read on every call (a rotated Secret takes effect at once). Empty: admin calls are refused.
  std::string admin_token_file;
  // Health (gRPC Health, GET /healthz on the metrics address): NOT_SERVING / 503 once the
  // scheduling loop has not completed a pass for this long (it is stuck); the chart's liveness
  // probe then restarts the pod, and its Lease passes to a replica that schedules.
  int64_t health_cycle_age_seconds = 60;
  // TLS for the gRPC API (PEM files, read at start): both set, or neither (plaintext).
  std::string tls_cert_file, tls_key_file;
  // An admin token is never sent in clear: admin_token_file needs TLS (or a unix socket), else the
  // daemon refuses to start, unless this says so (server.allowInsecureAdminToken: local tests).
  bool allow_insecure_admin_token = false;
};

// Issue 25 tenancy (docs/sharing.md section 6): who a tenant is, for the nodes of partitions marked
// `sharing: shared-same-tenant`. A pod's tenant is the one listing its namespace; a Slurm job's the
// one listing its account; work no tenant lists is a tenant of its own (its namespace, or its
// account). A pod's placeholder in Slurm is submitted under the first of its tenant's accounts.
struct TenantConfig {
  std::string name;
  std::vector<std::string> namespaces;
  std::vector<std::string> accounts;
};

// Issue 25, shared nodes (docs/sharing.md).
struct SharingConfig {
  // What happens to a pod on a shared node whose Slurm placeholder was lost (cancelled by an admin,
  // TIMEOUT, forgotten by a slurmctld restart) and whose new placeholder has not started within
  // 60 s: "remake" (default) reports it (the MirrorLost event, onequeue_shared_mirror_lost_total)
  // and keeps trying to make the placeholder again while the pod runs; "evict" reports it and
  // evicts the pod (its space may be Slurm's now), whose controller makes it again elsewhere.
  std::string on_lost_mirror = "remake";
  // sharing.tenants: [{name, namespaces, accounts}] (each namespace and account in one tenant).
  std::vector<TenantConfig> tenants;
};

// Issue 25 tenancy: the tenant of a pod's namespace / a Slurm account (TenantConfig).
std::string TenantOfNamespace(const SharingConfig& sharing, const std::string& namespace_);
std::string TenantOfAccount(const SharingConfig& sharing, const std::string& account);
// The Slurm account a pod placeholder of that namespace is submitted under: the first account of
// its tenant, else "" (onequeue's user's default account).
std::string PlaceholderAccountOf(const SharingConfig& sharing, const std::string& namespace_);

struct LeaderElectionConfig {
  bool enabled = true;
  std::string namespace_ = "onequeue-system";
  std::string lease_name = "onequeue";
  int64_t lease_duration_seconds = 15;
};

struct Config {
  std::string scheduler_name = "onequeue";
  std::string pool_label = "onequeue.io/pool";
  KubernetesConfig kubernetes;
  SlurmConfig slurm;
  QueueConfig queue;
  ServerConfig server;
  LeaderElectionConfig leader_election;
  SharingConfig sharing;
  // Tests only, never read from the YAML: set by ONEQUEUE_TEST_WITHOUT_RESERVATIONS=1 (main.cc).
  // A preemption then evicts without writing the reservation (no reserved/<P> mark on the node,
  // no reservation-tagged Slurm fence), so a test can show that the mark, not luck, keeps the
  // victims' replacements off the node (the control runs of test/scheduler/scheduling_loop_test.cc
  // and test/e2e/preemption_e2e_test.cc).
  bool test_without_reservations = false;
  // Tests only, never read from the YAML: ONEQUEUE_TEST_WITHOUT_BUDGETS=1 (main.cc). The
  // PodDisruptionBudget informer runs but the snapshot gets no budget, as before issue 13 defect 7,
  // so preemption_e2e_test's control run shows what reading them prevents.
  bool test_without_budgets = false;
};

// Parses and validates a configuration document. `source` names it in error messages.
absl::StatusOr<Config> ParseConfig(const std::string& yaml_text, const std::string& source);
// server.grpcAddress beyond loopback (0.0.0.0, a pod IP) needs server.adminTokenFile; the error
// says why. ParseConfig applies it; main applies it again after --grpc-address.
absl::Status CheckGrpcExposure(const ServerConfig& server);
// server.adminTokenFile needs TLS (server.tlsCertFile/tlsKeyFile) unless the API is a unix socket
// or server.allowInsecureAdminToken is set; the error says why. ParseConfig applies it; main
// applies it again after --grpc-address.
absl::Status CheckAdminTokenTransport(const ServerConfig& server);
// Reads the file and parses it; an unreadable file is an error that names the path and errno.
absl::StatusOr<Config> LoadConfigFile(const std::string& path);

}  // namespace onequeue::scheduler

// One daemon cycle with Slurm jobs and pods in ONE queue (issue 10): 10,000 pending Slurm jobs and
// 10,000 pending pods on a pool of 5,000 nodes, timed as the phases SchedulingLoop::RunCycle runs:
//   (a) BuildSnapshot of the Kubernetes side (k8s::Node / k8s::Pod objects, parsed once, outside
//       the timed loop, with FromJson as the informers do),
//   (b) AddSlurmWorld from a slurm::SlurmView (the pending jobs, the running ones on lent pool
//       nodes, 5,000 Slurm nodes joined by name in the shared partition "pool"), with the
//       SlurmWorldOptions the daemon computes each cycle (the lend hysteresis set),
//   (c) queue::QueuePlanner::PlanCycle on the joined snapshot (the daemon's config through
//       ToQueueConfig, reservation depth 100, the daemon's CheapestVictimsPlanner),
//   and the three together, for two cycles of one deterministic world (seed kSeed):
//   burst   the pool partly busy (~6,000 running pods on 70% of Kubernetes' 3,000 nodes, 1,000
//           Slurm jobs on the 2,000 lent nodes) and the full queue: a restart or a burst;
//   steady  the next cycle, 60 s later: the burst's starts carried out and the queue topped up to
//           10,000 + 10,000 by new submissions; the pool is nearly full.
// Each with both lend mechanisms (drain, placeholder: the view of the latter holds a placeholder
// job per Kubernetes node). A benchmark, not a test: nothing is asserted.
// Run: build/test/bench/scheduler/one_queue_bench (docs/benchmarks.md, "One queue: a full cycle
// with Slurm jobs and pods (issue 10)").
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "queue/planner.h"
#include "queue/preemption.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/slurm_world.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {
namespace {

using nlohmann::json;

constexpr int kPoolNodes = 5'000;
constexpr int kPendingPods = 10'000;
constexpr int kPendingJobs = 10'000;
constexpr int kRunningJobs = 1'000;
constexpr queue::Time kNow = 1763722800;  // 2025-11-21T11:00:00Z: the burst cycle
constexpr queue::Time kSteadyNow = kNow + 60;  // the next cycle
constexpr uint64_t kSeed = 10;            // issue 10; change it only together with the figures
constexpr int64_t kNodeCpus = 64;
constexpr int kMechanisms = 2;
const char* const kMechanismNames[kMechanisms] = {"drain", "placeholder"};

// Three fifths of the pool is Kubernetes' (fenced for Slurm), two fifths is lent to Slurm.
bool KubernetesOwned(int i) { return i % 5 < 3; }
bool GpuNode(int i) { return i % 8 == 0; }
std::string NodeName(int i) { return absl::StrFormat("pool-%04d", i); }

std::string Rfc3339(queue::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(t), absl::UTCTimeZone());
}

// The daemon's configuration, as test/scheduler/slurm_loop_test.cc's SlurmConfig, at depth 100.
Config BenchConfig(const std::string& mechanism) {
  Config c;
  c.queue.reservation_depth = 100;
  c.queue.qos = {{"interactive", 1000, false, true, 0}, {"normal", 100, true, false, 0}, {"batch", 10, true, false, 0}};
  c.slurm.enabled = true;
  c.slurm.shared_partitions = {"pool"};
  c.slurm.lend_mechanism = mechanism;
  c.slurm.lend_after_seconds = 60;
  c.slurm.return_after_seconds = 600;
  c.slurm.headroom_nodes = 20;
  c.slurm.default_qos = "batch";
  c.slurm.qos_map = {{"low", "batch"}, {"high", "normal"}};
  return c;
}

SnapshotOptions SnapshotOptionsOf(const Config& c) {
  SnapshotOptions o;
  o.scheduler_name = c.scheduler_name;
  o.pool_label = c.pool_label;
  for (const auto& q : c.queue.qos) o.known_qos.push_back(q.name);
  return o;
}

// What SchedulingLoop::SlurmOptions computes every cycle (it is private), in the steady state:
// every idle Kubernetes node has been idle for longer than lendAfterSeconds. Same containers and
// same inserts, so the cost is the daemon's.
SlurmWorldOptions OptionsLikeTheDaemon(const Config& c, const BuiltSnapshot& built) {
  SlurmWorldOptions o = SlurmWorldOptionsOf(c);
  const queue::Snapshot& snap = *built.snapshot;
  const std::vector<char> has_pod = NodesWithPods(snap);
  std::vector<std::string> idle_kubernetes;
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const std::string& name = snap.nodes[i].name;
    if (has_pod[i] || snap.nodes[i].owner.kind != queue::OwnerKind::kKubernetes) o.not_lendable.insert(name);
    else idle_kubernetes.push_back(name);
  }
  for (int i = 0; i < c.slurm.headroom_nodes && i < static_cast<int>(idle_kubernetes.size()); ++i) {
    o.not_lendable.insert(idle_kubernetes[i]);
  }
  return o;
}

// ---------------------------------------------------------------------------------------------
// The world: deterministic (one seeded generator), built once.
// ---------------------------------------------------------------------------------------------

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}
  int64_t Pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  // True with probability percent / 100.
  bool Percent(int percent) { return Pick(0, 99) < percent; }
  template <typename T, size_t N>
  const T& OneOf(const T (&items)[N]) { return items[Pick(0, N - 1)]; }

 private:
  std::mt19937_64 rng_;
};

// What the informers and the poller hold. The Slurm view of each mechanism is made from the
// jobs, the CPUs allocated per node and the Kubernetes owner annotations (a node whose owner is
// "kubernetes" is fenced: drained, or held by a placeholder job).
struct World {
  std::vector<k8s::Node> nodes;
  std::vector<k8s::Pod> pods;
  slurm::SlurmView::Jobs jobs;        // no placeholders
  std::vector<int64_t> slurm_alloc;   // CPUs Slurm jobs hold, per pool node
  int pending_pods = 0, pending_jobs = 0;
  int next_pod = 0, next_gang = 0;
  uint32_t next_job = 200'000;
  std::shared_ptr<const slurm::SlurmView> views[kMechanisms];  // drain, placeholder
  int RunningPods() const { return static_cast<int>(pods.size()) - pending_pods; }
  int RunningJobs() const { return static_cast<int>(jobs.size()) - pending_jobs; }
};

k8s::Pod ParsePod(const json& j) {
  auto p = k8s::Pod::FromJson(j);
  if (!p.ok()) {
    std::fprintf(stderr, "pod: %s\n", std::string(p.status().message()).c_str());
    std::abort();
  }
  return *std::move(p);
}

json PodJson(const std::string& ns, const std::string& name, const std::string& cpu, int64_t mem_gib, int64_t gpus,
             json annotations, queue::Time created) {
  json requests = {{"cpu", cpu}, {"memory", absl::StrCat(mem_gib, "Gi")}};
  if (gpus > 0) requests["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"metadata", {{"name", name}, {"namespace", ns}, {"uid", absl::StrCat(ns, "-", name)},
                        {"creationTimestamp", Rfc3339(created)}, {"annotations", std::move(annotations)}}},
          {"spec", {{"schedulerName", "onequeue"},
                    {"containers", json::array({{{"name", "main"}, {"resources", {{"requests", requests}}}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

k8s::Node NodeObject(int i, const std::string& owner) {
  const bool k8s_owned = owner == "kubernetes";
  json allocatable = {{"cpu", std::to_string(kNodeCpus)}, {"memory", "256Gi"}, {"pods", "110"}};
  if (GpuNode(i)) allocatable["nvidia.com/gpu"] = "8";
  json j = {{"metadata", {{"name", NodeName(i)}, {"uid", NodeName(i)},
                          {"labels", {{"onequeue.io/pool", "a"},
                                      {"topology.kubernetes.io/zone", i % 2 ? "zone-a" : "zone-b"},
                                      {"kubernetes.io/hostname", NodeName(i)},
                                      {"onequeue.io/owner", k8s_owned ? "kubernetes" : "slurm"}}},
                          {"annotations", {{"onequeue.io/owner", owner}}}}},
            {"spec", json::object()},
            {"status", {{"allocatable", allocatable}, {"capacity", allocatable},
                        {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  if (!k8s_owned) {
    j["spec"]["taints"] = json::array({{{"key", "onequeue.io/owner"}, {"value", "slurm"}, {"effect", "NoSchedule"}}});
  }
  auto n = k8s::Node::FromJson(j);
  if (!n.ok()) {
    std::fprintf(stderr, "node: %s\n", std::string(n.status().message()).c_str());
    std::abort();
  }
  return *std::move(n);
}

constexpr const char* kSlurmQos[] = {"normal", "normal", "low", "high", ""};
constexpr int64_t kGpuCounts[] = {1, 2, 4, 8};

// One pending pod workload: a single pod (99 draws in 100) or a gang of 4-16 pods (so about 9% of
// the pods are in gangs); 0.5-16 CPUs, 4 GiB per CPU, 8% with GPUs, QOS interactive 5% / normal
// 45% / batch 40% / none 10%, 85% with a time limit, 5% pinned to a zone.
void AddPendingPods(Generator& g, World& w, int max_pods, queue::Time created_lo, queue::Time created_hi) {
  static constexpr const char* kPodCpus[] = {"500m", "1", "1", "2", "2", "4", "4", "8", "16"};
  static constexpr const char* kPodLimits[] = {"10m", "30m", "1h", "2h", "4h", "12h"};
  const bool gang = g.Percent(1);
  const int size = gang ? static_cast<int>(std::min<int64_t>(g.Pick(4, 16), max_pods)) : 1;
  const std::string cpu = g.OneOf(kPodCpus);
  const int64_t mem_gib = cpu == "500m" ? 2 : 4 * std::stoll(cpu);
  const int64_t gpus = g.Percent(8) ? g.OneOf(kGpuCounts) : 0;
  const int64_t q = g.Pick(0, 99);
  json annotations = json::object();
  if (q < 5) annotations["onequeue.io/qos"] = "interactive";
  else if (q < 50) annotations["onequeue.io/qos"] = "normal";
  else if (q < 90) annotations["onequeue.io/qos"] = "batch";
  if (g.Percent(85)) annotations["onequeue.io/time-limit"] = g.OneOf(kPodLimits);
  const int gang_no = gang ? w.next_gang++ : -1;
  if (gang) {
    annotations["onequeue.io/group"] = absl::StrCat("g", gang_no);
    annotations["onequeue.io/group-size"] = std::to_string(size);
  }
  const std::string ns = absl::StrCat("team-", g.Pick(0, 19));
  const bool zone = g.Percent(5);
  const std::string zone_value = g.Percent(50) ? "zone-a" : "zone-b";
  const queue::Time created = g.Pick(created_lo, created_hi);
  for (int m = 0; m < size; ++m) {
    const std::string name = gang ? absl::StrCat("g", gang_no, "-", m) : absl::StrCat("pend-", w.next_pod++);
    json j = PodJson(ns, name, cpu, mem_gib, gpus, annotations, created);
    if (zone) j["spec"]["nodeSelector"] = {{"topology.kubernetes.io/zone", zone_value}};
    w.pods.push_back(ParsePod(j));
    ++w.pending_pods;
  }
}

// One pending Slurm job in "pool": 1-4 nodes, 4-64 CPUs per node, 10% with GPUs, time limits
// 30 min to 24 h. `fresh`: submitted since the last cycle; else as in the steady state: mostly
// held by onequeue with its reason in the comment, some new, a few waiting for Slurm's own reasons.
void AddPendingJob(Generator& g, World& w, queue::Time submit_lo, queue::Time submit_hi, bool fresh) {
  static constexpr int64_t kJobCpn[] = {4, 8, 16, 16, 32, 64};
  static constexpr int64_t kJobLimitsMin[] = {30, 60, 120, 240, 720, 1440};
  slurm::SlurmJob j;
  j.job_id = w.next_job++;
  j.name = absl::StrCat("job-", j.job_id);
  j.user = absl::StrCat("user", g.Pick(0, 99));
  j.account = absl::StrCat("proj-", g.Pick(0, 19));
  j.partition = "pool";
  j.qos = g.OneOf(kSlurmQos);
  j.state = slurm::JobState::kPending;
  const int64_t r = g.Pick(0, 99);
  j.node_count = r < 50 ? 1 : r < 75 ? 2 : r < 88 ? 3 : 4;
  j.cpus = static_cast<uint32_t>(g.OneOf(kJobCpn) * j.node_count);
  j.memory_per_cpu_mb = 4096;
  if (g.Percent(10)) j.gres_per_node = {{"gpu", g.OneOf(kGpuCounts)}};
  j.time_limit = absl::Minutes(g.OneOf(kJobLimitsMin));
  j.submit_time = absl::FromUnixSeconds(g.Pick(submit_lo, submit_hi));
  j.requeue = true;
  const int64_t s = fresh ? 90 : g.Pick(0, 99);
  if (s < 85) {  // held by onequeue
    j.priority = 0;
    j.state_reason = "JobHeldAdmin";
    j.comment = "onequeue: Priority: higher-priority workloads come first";
  } else if (s < 98) {  // submitted since the last cycle
    j.priority = g.Pick(1000, 100000);
    j.state_reason = "Priority";
  } else if (s < 99) {  // a user's hold
    j.priority = 0;
    j.state_reason = "JobHeldUser";
  } else {
    j.priority = g.Pick(1000, 100000);
    j.state_reason = "Dependency";
  }
  w.jobs.emplace(j.job_id, std::move(j));
  ++w.pending_jobs;
}

std::string OwnerOf(const k8s::Node& n) {
  auto it = n.metadata.annotations.find("onequeue.io/owner");
  return it == n.metadata.annotations.end() ? "" : it->second;
}

// The poller's view of each mechanism, from the world's jobs, allocations and owners.
void MakeViews(World& w, queue::Time now) {
  for (int m = 0; m < kMechanisms; ++m) {
    const bool placeholder = std::string(kMechanismNames[m]) == "placeholder";
    slurm::SlurmView::Nodes nodes;
    slurm::SlurmView::Jobs jobs = w.jobs;
    uint32_t ph_id = 900'000;
    for (int i = 0; i < kPoolNodes; ++i) {
      slurm::SlurmNode n;
      n.name = NodeName(i);
      n.cpus = static_cast<uint32_t>(kNodeCpus);
      n.memory_mb = 256 * 1024;
      if (GpuNode(i)) n.gres = {{"gpu", 8}};
      n.partitions = {"pool", "reclaim"};
      n.alloc_cpus = static_cast<uint32_t>(w.slurm_alloc[i]);
      n.alloc_memory_mb = n.alloc_cpus * 4096;
      n.state = n.alloc_cpus == 0 ? slurm::NodeState::kIdle
                : n.alloc_cpus >= n.cpus ? slurm::NodeState::kAllocated
                                         : slurm::NodeState::kMixed;
      if (OwnerOf(w.nodes[i]) == "kubernetes") {
        if (placeholder) {
          n.state = slurm::NodeState::kAllocated;
          n.alloc_cpus = n.cpus;
          slurm::SlurmJob ph;
          ph.job_id = ph_id++;
          ph.name = "onequeue-placeholder-" + n.name;
          ph.partition = "reclaim";
          ph.comment = "onequeue:kubernetes";
          ph.user = "slurm";  // submitted by slurm.user (issue 24 M2)
          ph.state = slurm::JobState::kRunning;
          ph.node_count = 1;
          ph.cpus = n.cpus;
          ph.nodes = {n.name};
          ph.start_time = absl::FromUnixSeconds(now - 86400);
          jobs.emplace(ph.job_id, std::move(ph));
        } else {
          n.state_flags = {"DRAIN"};
          n.reason = "onequeue:kubernetes";
          n.reason_set_by_user = "slurm";
        }
      }
      nodes.emplace(n.name, std::move(n));
    }
    slurm::SlurmView::Partitions partitions;
    for (const char* p : {"pool", "reclaim"}) {
      slurm::SlurmPartition part;
      part.name = p;
      part.state = "UP";
      part.priority_tier = std::string(p) == "reclaim" ? 10 : 1;
      for (int i = 0; i < kPoolNodes; ++i) part.nodes.push_back(NodeName(i));
      part.total_nodes = kPoolNodes;
      part.total_cpus = static_cast<uint32_t>(kPoolNodes * kNodeCpus);
      partitions.emplace(p, std::move(part));
    }
    auto view = std::make_shared<slurm::SlurmView>();
    view->jobs = std::make_shared<const slurm::SlurmView::Jobs>(std::move(jobs));
    view->nodes = std::make_shared<const slurm::SlurmView::Nodes>(std::move(nodes));
    view->partitions = std::make_shared<const slurm::SlurmView::Partitions>(std::move(partitions));
    view->refreshed_at = absl::FromUnixSeconds(now);
    w.views[m] = std::move(view);
  }
}

// The burst: a pool partly busy (three fifths Kubernetes', 70% of those running 8-32-CPU pods on
// 32-64 of their 64 CPUs; two fifths lent to Slurm, 1,000 jobs running there) and a queue of
// 10,000 pods and 10,000 jobs: what the daemon sees after a restart or a burst of submissions.
World BuildBurstWorld(Generator& g) {
  World w;
  w.slurm_alloc.assign(kPoolNodes, 0);

  // Running Slurm jobs on the lent nodes: 1-4 nodes, 16/32/64 CPUs per node, first fit from a
  // random place (Slurm packs them; a node may hold several).
  std::vector<int> lent;
  for (int i = 0; i < kPoolNodes; ++i)
    if (!KubernetesOwned(i)) lent.push_back(i);
  std::vector<std::vector<uint32_t>> jobs_on(kPoolNodes);
  static constexpr int64_t kLimitsH[] = {1, 4, 12, 24};
  uint32_t next_id = 100'000;
  for (int k = 0; k < kRunningJobs; ++k) {
    const int64_t r = g.Pick(0, 99);
    const int count = r < 50 ? 1 : r < 75 ? 2 : r < 90 ? 3 : 4;
    static constexpr int64_t kCpn[] = {16, 32, 64};
    int64_t cpn = g.OneOf(kCpn);
    std::vector<int> chosen;
    for (int attempt = 0; attempt < 2 && static_cast<int>(chosen.size()) < count; ++attempt) {
      chosen.clear();
      const size_t start = static_cast<size_t>(g.Pick(0, static_cast<int64_t>(lent.size()) - 1));
      for (size_t s = 0; s < lent.size() && static_cast<int>(chosen.size()) < count; ++s) {
        const int n = lent[(start + s) % lent.size()];
        if (kNodeCpus - w.slurm_alloc[n] >= cpn) chosen.push_back(n);
      }
      if (static_cast<int>(chosen.size()) < count) cpn = 16;
    }
    if (static_cast<int>(chosen.size()) < count) continue;
    slurm::SlurmJob j;
    j.job_id = next_id++;
    j.name = absl::StrCat("sim-", j.job_id);
    j.user = absl::StrCat("user", g.Pick(0, 99));
    j.account = absl::StrCat("proj-", g.Pick(0, 19));
    j.partition = "pool";
    j.qos = g.OneOf(kSlurmQos);
    j.state = slurm::JobState::kRunning;
    j.state_reason = "None";
    j.priority = 4000000000u;
    j.node_count = count;
    j.cpus = static_cast<uint32_t>(cpn * count);
    j.memory_per_cpu_mb = 4096;
    j.time_limit = absl::Hours(g.OneOf(kLimitsH));
    j.start_time = absl::FromUnixSeconds(kNow - g.Pick(0, absl::ToInt64Seconds(*j.time_limit) - 60));
    j.submit_time = j.start_time - absl::Seconds(g.Pick(0, 86400));
    j.requeue = true;
    for (int n : chosen) {
      w.slurm_alloc[n] += cpn;
      jobs_on[n].push_back(j.job_id);
      j.nodes.push_back(NodeName(n));
    }
    w.jobs.emplace(j.job_id, std::move(j));
  }

  for (int i = 0; i < kPoolNodes; ++i) {
    w.nodes.push_back(NodeObject(i, KubernetesOwned(i)  ? "kubernetes"
                                    : jobs_on[i].empty() ? "slurm"
                                                         : absl::StrCat("slurm/", jobs_on[i].front())));
  }

  // Running pods.
  static constexpr const char* kRunningQos[] = {"normal", "normal", "batch", "batch", "interactive"};
  static constexpr const char* kRunningLimits[] = {"1h", "4h", "12h", "24h"};
  static constexpr int64_t kRunningLimitS[] = {3600, 4 * 3600, 12 * 3600, 24 * 3600};
  int pod_no = 0;
  for (int i = 0; i < kPoolNodes; ++i) {
    if (!KubernetesOwned(i) || !g.Percent(70)) continue;
    int64_t budget = g.Pick(32, kNodeCpus);
    int64_t gpus_left = GpuNode(i) ? 8 : 0;
    while (budget >= 8) {
      static constexpr int64_t kCpus[] = {8, 16, 32};
      const int64_t cpus = std::min(budget, g.OneOf(kCpus));
      budget -= cpus;
      const int64_t gpus = gpus_left > 0 && g.Percent(50) ? std::min<int64_t>(gpus_left, g.Pick(1, 4)) : 0;
      gpus_left -= gpus;
      json annotations = {{"onequeue.io/qos", g.OneOf(kRunningQos)}};
      queue::Time created;
      if (g.Percent(80)) {
        const int64_t l = g.Pick(0, 3);
        annotations["onequeue.io/time-limit"] = kRunningLimits[l];
        created = kNow - g.Pick(0, kRunningLimitS[l] - 60);
      } else {
        created = kNow - g.Pick(0, 7 * 86400);  // a service
      }
      json j = PodJson(absl::StrCat("team-", g.Pick(0, 19)), absl::StrCat("run-", pod_no++), std::to_string(cpus),
                       cpus * 4, gpus, std::move(annotations), created);
      j["spec"]["nodeName"] = NodeName(i);
      j["status"]["phase"] = "Running";
      w.pods.push_back(ParsePod(j));
    }
  }

  while (w.pending_pods < kPendingPods) {
    AddPendingPods(g, w, kPendingPods - w.pending_pods, kNow - 2 * 86400, kNow);
  }
  while (w.pending_jobs < kPendingJobs) AddPendingJob(g, w, kNow - 3 * 86400, kNow, /*fresh=*/false);
  MakeViews(w, kNow);
  return w;
}

// The next cycle, kSteadyNow: the burst cycle's plan carried out (pods bound as the binding API
// does, jobs running where onequeue started them, lent and reclaimed nodes re-marked) and the
// queue topped up to 10,000 pods and 10,000 jobs by new submissions. The pool is nearly full: the
// cycle the daemon runs over and over.
World BuildSteadyWorld(Generator& g, const World& burst, const BuiltSnapshot& built, const queue::Plan& plan) {
  World w = burst;
  const queue::Snapshot& snap = *built.snapshot;
  std::map<std::string, size_t> pod_index;
  for (size_t i = 0; i < w.pods.size(); ++i) pod_index[w.pods[i].metadata.Key()] = i;
  std::map<std::string, int> node_index;
  for (int i = 0; i < kPoolNodes; ++i) node_index[NodeName(i)] = i;
  std::map<int, std::string> new_owner;
  for (const auto& c : plan.owner_changes) {
    new_owner[node_index.at(snap.nodes[c.node].name)] =
        c.to == queue::OwnerKind::kSlurm ? absl::StrCat("slurm/", c.for_workload.substr(6)) : "kubernetes";
  }
  for (const auto& start : plan.starts) {
    std::vector<std::string> names;
    for (queue::NodeIndex n : start.member_nodes) names.push_back(snap.nodes[n].name);
    if (std::optional<uint32_t> id = SlurmJobOf(start.workload)) {
      slurm::SlurmJob& j = w.jobs.at(*id);
      j.state = slurm::JobState::kRunning;
      j.state_reason = "None";
      j.priority = 4000000000u;
      j.required_nodes = names;
      j.nodes = names;
      j.start_time = absl::FromUnixSeconds(kNow);
      j.comment = "onequeue: started";
      const int64_t cpn = std::max<int64_t>(1, (j.cpus + j.node_count - 1) / j.node_count);
      for (const std::string& name : names) w.slurm_alloc[node_index.at(name)] += cpn;
      --w.pending_jobs;
      continue;
    }
    const auto& keys = built.pending_pods.at(start.workload).pod_keys;
    for (size_t i = 0; i < keys.size() && i < names.size(); ++i) {
      k8s::Pod& p = w.pods[pod_index.at(keys[i])];
      p.node_name = names[i];
      p.phase = "Running";
      --w.pending_pods;
    }
  }
  for (const auto& [i, owner] : new_owner) w.nodes[i] = NodeObject(i, owner);
  while (w.pending_pods < kPendingPods) {
    AddPendingPods(g, w, kPendingPods - w.pending_pods, kNow + 1, kSteadyNow);
  }
  while (w.pending_jobs < kPendingJobs) AddPendingJob(g, w, kNow + 1, kSteadyNow, /*fresh=*/true);
  MakeViews(w, kSteadyNow);
  return w;
}

const World& TheWorld(int steady);

// The joined snapshot of one world and mechanism (phases a and b done once), for phase c alone.
const BuiltSnapshot& Joined(int steady, int mechanism) {
  static BuiltSnapshot* joined[2][kMechanisms] = {};
  if (joined[steady][mechanism] == nullptr) {
    const World& w = TheWorld(steady);
    const Config c = BenchConfig(kMechanismNames[mechanism]);
    const queue::Time now = steady ? kSteadyNow : kNow;
    auto* b = new BuiltSnapshot(BuildSnapshot(w.nodes, w.pods, SnapshotOptionsOf(c), now));
    AddSlurmWorld(w.views[mechanism], OptionsLikeTheDaemon(c, *b), ToQueueConfig(c), b, now);
    joined[steady][mechanism] = b;
  }
  return *joined[steady][mechanism];
}

const World& TheWorld(int steady) {
  static Generator* g = new Generator(kSeed);
  static const World* burst = new World(BuildBurstWorld(*g));
  if (!steady) return *burst;
  static const World* next = [] {
    // The burst cycle's plan with the default mechanism (both mechanisms plan alike here: the
    // fingerprints agree).
    const BuiltSnapshot& b = Joined(0, 1);
    const queue::CheapestVictimsPlanner preemption;
    queue::QueuePlanner planner(ToQueueConfig(BenchConfig("placeholder")), &preemption);
    const queue::Plan plan = planner.PlanCycle(b.snapshot, kNow);
    return new World(BuildSteadyWorld(*g, *burst, b, plan));
  }();
  return *next;
}

// ---------------------------------------------------------------------------------------------
// Reporting
// ---------------------------------------------------------------------------------------------

// A fingerprint of the decisions (as queue_bench's): equal across builds means the same plan.
double PlanFingerprint(const queue::Plan& p) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  auto mix_str = [&](std::string_view s) { for (char c : s) mix(static_cast<unsigned char>(c)); };
  for (const auto& d : p.starts) { mix_str(d.workload); for (auto n : d.member_nodes) mix(n); }
  for (const auto& r : p.reservations) { mix_str(r.workload); mix(r.start); for (auto n : r.member_nodes) mix(n); }
  for (const auto& d : p.preemptions) { mix_str(d.preemptor); for (const auto& v : d.victims) mix_str(v); }
  for (const auto& c : p.owner_changes) { mix(c.node); mix(static_cast<uint64_t>(c.to)); }
  for (const auto& w : p.waiting) {
    mix_str(w.workload);
    mix(static_cast<uint64_t>(w.reason));
    mix(static_cast<uint64_t>(w.queue_position));
    mix(static_cast<uint64_t>(w.estimated_start.value_or(-1)));
  }
  return static_cast<double>(h % 1'000'000'007ull);
}

void ReportSnapshot(benchmark::State& state, const queue::Snapshot& s) {
  int64_t jobs = 0;
  for (const auto& w : s.pending) jobs += w.kind == queue::WorkloadKind::kSlurmJob;
  state.counters["pending"] = static_cast<double>(s.pending.size());
  state.counters["pending_jobs"] = static_cast<double>(jobs);
  state.counters["pending_pod_groups"] = static_cast<double>(static_cast<int64_t>(s.pending.size()) - jobs);
  state.counters["running"] = static_cast<double>(s.running.size());
  state.counters["nodes"] = static_cast<double>(s.nodes.size());
}

void ReportPlan(benchmark::State& state, const queue::Plan& p) {
  int64_t job_starts = 0, lends = 0, estimated = 0;
  for (const auto& d : p.starts) job_starts += SlurmJobOf(d.workload).has_value();
  for (const auto& c : p.owner_changes) lends += c.to == queue::OwnerKind::kSlurm;
  for (const auto& w : p.waiting) estimated += w.estimated_start.has_value();
  state.counters["starts"] = static_cast<double>(p.starts.size());
  state.counters["job_starts"] = static_cast<double>(job_starts);
  state.counters["pod_starts"] = static_cast<double>(static_cast<int64_t>(p.starts.size()) - job_starts);
  state.counters["reservations"] = static_cast<double>(p.reservations.size());
  state.counters["preemptions"] = static_cast<double>(p.preemptions.size());
  state.counters["lends"] = static_cast<double>(lends);
  state.counters["reclaims"] = static_cast<double>(static_cast<int64_t>(p.owner_changes.size()) - lends);
  state.counters["waiting"] = static_cast<double>(p.waiting.size());
  state.counters["estimated"] = static_cast<double>(estimated);
  state.counters["fingerprint"] = PlanFingerprint(p);
}

double PeakRssBytes() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) * 1024;  // Linux: KiB
}

// Heap in use: small blocks plus mmapped large ones (as queue_bench's BM_MemoryPerPending).
double HeapInUse() {
  struct mallinfo2 m = mallinfo2();
  return static_cast<double>(m.uordblks) + static_cast<double>(m.hblkhd);
}

// ---------------------------------------------------------------------------------------------
// The phases. Arguments: placeholder (0: the drain mechanism, 1: placeholder, the default) and
// steady (0: the burst cycle, 1: the next one, the pool nearly full).
// ---------------------------------------------------------------------------------------------

struct Case {
  int mechanism;
  int steady;
  queue::Time now;
  const World& world;
  Config config;
  explicit Case(const benchmark::State& state)
      : mechanism(static_cast<int>(state.range(0))),
        steady(static_cast<int>(state.range(1))),
        now(steady ? kSteadyNow : kNow),
        world(TheWorld(steady)),
        config(BenchConfig(kMechanismNames[mechanism])) {}
  std::string Label() const { return absl::StrCat(kMechanismNames[mechanism], steady ? ", steady" : ", burst"); }
};

void Cases(benchmark::internal::Benchmark* b) {
  b->ArgNames({"placeholder", "steady"});
  for (int steady : {0, 1})
    for (int m : {1, 0}) b->Args({m, steady});
  b->Unit(benchmark::kMillisecond);
}

void ReportWorld(benchmark::State& state, const World& w) {
  state.counters["pending_pods"] = w.pending_pods;
  state.counters["running_pods"] = w.RunningPods();
  state.counters["running_jobs"] = w.RunningJobs();
}

// Not one of the three phases, for context: RunCycle starts by copying the informers' stores
// (ClusterView::Nodes() and Pods() return vectors by value).
void BM_InformerCopy(benchmark::State& state) {
  const World& w = TheWorld(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    std::vector<k8s::Node> nodes = w.nodes;
    std::vector<k8s::Pod> pods = w.pods;
    benchmark::DoNotOptimize(nodes.data());
    benchmark::DoNotOptimize(pods.data());
    state.PauseTiming();
    nodes = {};
    pods = {};
    state.ResumeTiming();
  }
  state.counters["k8s_nodes"] = static_cast<double>(w.nodes.size());
  state.counters["k8s_pods"] = static_cast<double>(w.pods.size());
}
BENCHMARK(BM_InformerCopy)->ArgNames({"steady"})->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// (a) The Kubernetes side.
void BM_BuildSnapshot(benchmark::State& state) {
  const Case k(state);
  const SnapshotOptions options = SnapshotOptionsOf(k.config);
  BuiltSnapshot last;
  for (auto _ : state) {
    BuiltSnapshot b = BuildSnapshot(k.world.nodes, k.world.pods, options, k.now);
    benchmark::DoNotOptimize(b.snapshot.get());
    state.PauseTiming();
    last = std::move(b);
    state.ResumeTiming();
  }
  ReportSnapshot(state, *last.snapshot);
  ReportWorld(state, k.world);
  state.SetLabel(k.steady ? "steady" : "burst");
}
BENCHMARK(BM_BuildSnapshot)->ArgNames({"placeholder", "steady"})->Args({1, 0})->Args({1, 1})->Unit(benchmark::kMillisecond);

// (b) The Slurm side joined to the pool: the daemon's options, then AddSlurmWorld. Each iteration
// starts from a copy of phase (a)'s result, made untimed.
void BM_AddSlurmWorld(benchmark::State& state) {
  const Case k(state);
  const queue::QueueConfig qc = ToQueueConfig(k.config);
  const BuiltSnapshot k8s_only = BuildSnapshot(k.world.nodes, k.world.pods, SnapshotOptionsOf(k.config), k.now);
  const auto& view = k.world.views[k.mechanism];
  BuiltSnapshot last;
  SlurmRecords last_records;
  for (auto _ : state) {
    state.PauseTiming();
    BuiltSnapshot b = k8s_only;
    b.snapshot = std::make_shared<queue::Snapshot>(*k8s_only.snapshot);
    state.ResumeTiming();
    SlurmRecords records = AddSlurmWorld(view, OptionsLikeTheDaemon(k.config, b), qc, &b, k.now);
    benchmark::DoNotOptimize(records.nodes.size());
    state.PauseTiming();
    last = std::move(b);
    last_records = std::move(records);
    state.ResumeTiming();
  }
  ReportSnapshot(state, *last.snapshot);
  ReportWorld(state, k.world);
  state.counters["joined_nodes"] = static_cast<double>(last_records.nodes.size());
  state.counters["slurm_jobs_in_view"] = static_cast<double>(view->jobs->size());
  state.SetLabel(k.Label());
}
BENCHMARK(BM_AddSlurmWorld)->Apply(Cases);

// (c) The plan, by one planner kept across cycles as the daemon keeps it, with or without a
// preemption planner.
// `uncapped`: the preemption candidate cap at 100 % (every usable node searched, the decisions of
// the search before the cap: the fingerprint must equal the one recorded before issue 26).
void TimePlanCycles(benchmark::State& state, const queue::PreemptionPlanner* preemption, bool uncapped = false) {
  const Case k(state);
  const BuiltSnapshot& joined = Joined(k.steady, k.mechanism);
  queue::QueueConfig qc = ToQueueConfig(k.config);
  if (uncapped) qc.preemption.min_candidate_nodes_percentage = 100;
  queue::QueuePlanner planner(qc, preemption);
  queue::Plan last;
  for (auto _ : state) {
    queue::Plan p = planner.PlanCycle(joined.snapshot, k.now);
    benchmark::DoNotOptimize(p.starts.data());
    state.PauseTiming();
    last = std::move(p);
    state.ResumeTiming();
  }
  ReportSnapshot(state, *joined.snapshot);
  ReportPlan(state, last);
  state.SetLabel(k.Label());
}

void BM_PlanCycle(benchmark::State& state) {
  const queue::CheapestVictimsPlanner preemption;
  TimePlanCycles(state, &preemption);
}
BENCHMARK(BM_PlanCycle)->Apply(Cases);

// (c) with the preemption candidate cap at 100 % (issue 26): the victim index without the cap,
// and the decisions of the search before it (compare the fingerprint).
void BM_PlanCycleUncappedPreemption(benchmark::State& state) {
  const queue::CheapestVictimsPlanner preemption;
  TimePlanCycles(state, &preemption, /*uncapped=*/true);
}
BENCHMARK(BM_PlanCycleUncappedPreemption)
    ->ArgNames({"placeholder", "steady"})->Args({1, 0})->Args({1, 1})->Unit(benchmark::kMillisecond);

// (c) without the preemption planner (QueuePlanner's preemption argument null), to tell the
// queue's own cost from the victim searches': not what the daemon runs.
void BM_PlanCycleWithoutPreemption(benchmark::State& state) { TimePlanCycles(state, nullptr); }
BENCHMARK(BM_PlanCycleWithoutPreemption)
    ->ArgNames({"placeholder", "steady"})->Args({1, 0})->Args({1, 1})->Unit(benchmark::kMillisecond);

// (a) + (b) + (c): one cycle's computation from the informers' objects and the poller's view to
// the plan (what RunCycle does before it acts on the plan). Freeing the previous cycle's
// snapshot, records and plan is not timed.
void BM_FullCycle(benchmark::State& state) {
  const Case k(state);
  const SnapshotOptions so = SnapshotOptionsOf(k.config);
  const queue::QueueConfig qc = ToQueueConfig(k.config);
  const auto& view = k.world.views[k.mechanism];
  const queue::CheapestVictimsPlanner preemption;
  queue::QueuePlanner planner(qc, &preemption);
  BuiltSnapshot last;
  SlurmRecords last_records;
  queue::Plan last_plan;
  for (auto _ : state) {
    BuiltSnapshot b = BuildSnapshot(k.world.nodes, k.world.pods, so, k.now);
    SlurmRecords records = AddSlurmWorld(view, OptionsLikeTheDaemon(k.config, b), qc, &b, k.now);
    queue::Plan p = planner.PlanCycle(b.snapshot, k.now);
    benchmark::DoNotOptimize(p.starts.data());
    state.PauseTiming();
    last_plan = std::move(p);
    last_records = std::move(records);
    last = std::move(b);
    state.ResumeTiming();
  }
  ReportSnapshot(state, *last.snapshot);
  ReportPlan(state, last_plan);
  state.counters["peak_rss_MB"] = PeakRssBytes() / 1e6;
  state.SetLabel(k.Label());
}
BENCHMARK(BM_FullCycle)->Apply(Cases);

// Memory of one cycle (placeholder mechanism), from mallinfo2 deltas, per pending workload: the
// joined snapshot with the Slurm records (its nodes and running workloads included), and the
// planner's state plus the plan. Also the informers' objects, per object, for scale.
void BM_Memory(benchmark::State& state) {
  const Case k(state);
  for (auto _ : state) {
    const double h0 = HeapInUse();
    auto nodes = std::make_unique<std::vector<k8s::Node>>(k.world.nodes);
    auto pods = std::make_unique<std::vector<k8s::Pod>>(k.world.pods);
    const double h1 = HeapInUse();
    BuiltSnapshot b = BuildSnapshot(*nodes, *pods, SnapshotOptionsOf(k.config), k.now);
    SlurmRecords records =
        AddSlurmWorld(k.world.views[k.mechanism], OptionsLikeTheDaemon(k.config, b), ToQueueConfig(k.config), &b, k.now);
    const double h2 = HeapInUse();
    const queue::CheapestVictimsPlanner preemption;
    auto planner = std::make_unique<queue::QueuePlanner>(ToQueueConfig(k.config), &preemption);
    queue::Plan p = planner->PlanCycle(b.snapshot, k.now);
    const double h3 = HeapInUse();
    const double pending = static_cast<double>(b.snapshot->pending.size());
    state.counters["informer_bytes_per_k8s_object"] =
        (h1 - h0) / static_cast<double>(k.world.nodes.size() + k.world.pods.size());
    state.counters["snapshot_bytes_per_pending"] = (h2 - h1) / pending;
    state.counters["planner_and_plan_bytes_per_pending"] = (h3 - h2) / pending;
    state.counters["pending"] = pending;
    state.counters["informer_objects_MB"] = (h1 - h0) / 1e6;
    state.counters["snapshot_MB"] = (h2 - h1) / 1e6;
    state.counters["planner_and_plan_MB"] = (h3 - h2) / 1e6;
    // The whole process (both generated worlds, their JSON and every benchmark before this one).
    state.counters["peak_rss_MB"] = PeakRssBytes() / 1e6;
    benchmark::DoNotOptimize(p.starts.data());
    benchmark::DoNotOptimize(records.nodes.size());
  }
  state.SetLabel(k.Label());
}
BENCHMARK(BM_Memory)->ArgNames({"placeholder", "steady"})->Args({1, 1})->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace onequeue::scheduler

BENCHMARK_MAIN();

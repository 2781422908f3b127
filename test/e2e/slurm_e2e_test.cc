// The one queue, end to end: the real kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok AND the local Slurm 22.05, with the daemon lending pool nodes to Slurm and taking them back.
// Every test runs once per lending mechanism (drain, placeholder).
//
// Each test makes a Slurm partition "pool" over the Slurm nodes its kwok nodes stand for (label
// onequeue.io/slurm-node=nK), so its jobs can run only there; TearDown cancels every job and
// resumes every node, so tests share the Slurm cluster without seeing each other.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/slurm_cluster.h"
#include "e2e/e2e_support.h"
#include "k8s_client/dra.h"

namespace onequeue::e2e {
namespace {

using testing::K8sClusterEnvironment;
using testing::SlurmClusterEnvironment;
using testing::SlurmCommand;

constexpr const char* kSlurmNodeLabel = "onequeue.io/slurm-node";
constexpr absl::Duration kSlurmTimeout = absl::Seconds(120);

int CountSubstr(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// `scontrol show job -o` as key -> value.
std::map<std::string, std::string> ShowJob(uint32_t id) {
  std::map<std::string, std::string> fields;
  auto out = SlurmCommand(SlurmClusterEnvironment::Info(), {"scontrol", "show", "job", "-o", absl::StrCat(id)});
  if (!out.ok()) return fields;
  for (absl::string_view kv : absl::StrSplit(absl::StripAsciiWhitespace(*out), ' ', absl::SkipEmpty())) {
    const size_t eq = kv.find('=');
    if (eq != absl::string_view::npos) fields[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  return fields;
}

// The job's AdminComment (onequeue's marks, issue 29) whole: `scontrol show job` prints it on a
// line of its own ("   AdminComment=<text> "), spaces kept. "" when none.
std::string AdminCommentOf(uint32_t id) {
  auto out = SlurmCommand(SlurmClusterEnvironment::Info(), {"scontrol", "show", "job", absl::StrCat(id)});
  if (!out.ok()) return "";
  for (absl::string_view line : absl::StrSplit(*out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "AdminComment=")) return std::string(line);
  }
  return "";
}

class SlurmE2ETest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = absl::AsciiStrToLower(absl::StrCat(GetParam(), "-", test->name()));
    name = name.substr(0, name.find('/'));
    if (name.size() > 40) name.resize(40);
    std::replace(name.begin(), name.end(), '_', '-');  // a namespace name is a DNS label
    ns_ = "s-" + name;
    dir_ = absl::StrCat(K8sClusterEnvironment::Info().dir, "/", ns_);
    mkdir(dir_.c_str(), 0755);
    auto client = AdminClient(K8sClusterEnvironment::Info());
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(*client);
    ASSERT_TRUE(CreateNamespace(client_.get(), ns_).ok());
    namespaces_ = {ns_};
  }
  // Another namespace of this test, its pods deleted in TearDown.
  std::string AddNamespace(const std::string& suffix) {
    const std::string ns = absl::StrCat(ns_, "-", suffix);
    EXPECT_TRUE(CreateNamespace(client_.get(), ns).ok()) << ns;
    namespaces_.push_back(ns);
    return ns;
  }

  void TearDown() override {
    const absl::Time teardown = absl::Now();
    if (scheduler_ && HasFailure()) std::cerr << "--- scheduler log ---\n" << scheduler_->Log();
    if (HasFailure()) {
      auto q = SlurmCommand(Slurm(), {"squeue", "-a", "-o", "%i %P %T %r %N %k"});
      auto s = SlurmCommand(Slurm(), {"sinfo", "-N", "-o", "%N %P %T %E"});
      std::cerr << "--- squeue ---\n" << q.value_or("?") << "--- sinfo ---\n" << s.value_or("?");
    }
    if (scheduler_ && scheduler_->Running()) kill(scheduler_->pid(), SIGCONT);  // stopped at a failpoint
    scheduler_.reset();
    if (restd_stopped_) (void)testing::StartDaemon(Slurm(), "slurmrestd");
    // Leave Slurm as the next test expects it: no job, every node up, no pool partition.
    (void)SlurmCommand(Slurm(), {"scancel", "--full", "-u", Slurm().user});
    Eventually(absl::Seconds(30), [&] {
      auto q = SlurmCommand(Slurm(), {"squeue", "-h", "-a"});
      return q.ok() && absl::StripAsciiWhitespace(*q).empty();
    });
    (void)SlurmCommand(Slurm(), {"scontrol", "update", absl::StrCat("nodename=", absl::StrJoin(Slurm().nodes, ",")),
                                 "state=resume"});
    (void)SlurmCommand(Slurm(), {"scontrol", "delete", "partition=pool"});
    for (const std::string& ns : namespaces_) {
      (void)testing::Kubectl(K8sClusterEnvironment::Info(),
                             {"delete", "pods", "--all", "-n", ns, "--grace-period=0", "--force", "--wait=false"});
    }
    TraceWait(teardown, "TearDown");
  }

  static const testing::SlurmClusterInfo& Slurm() { return SlurmClusterEnvironment::Info(); }

  // Kubernetes pool nodes <ns>-1..N standing for Slurm nodes n1..nN, and the partition "pool"
  // over those Slurm nodes only.
  void AddPool(int count) {
    std::vector<int> first;
    for (int i = 1; i <= count; ++i) first.push_back(i);
    AddPool(first);
  }
  // The same over chosen Slurm nodes: pool node <ns>-i stands for Slurm node n<slurm_index[i-1]>.
  void AddPool(const std::vector<int>& slurm_index) {
    const absl::Time start = absl::Now();
    std::vector<std::string> slurm_nodes;
    for (int i = 1; i <= static_cast<int>(slurm_index.size()); ++i) {
      const std::string name = absl::StrCat(ns_, "-", i);
      const std::string slurm_node = Slurm().nodes[slurm_index[i - 1] - 1];
      slurm_nodes.push_back(slurm_node);
      json node = PoolNode(name, ns_, "8");
      node["metadata"]["labels"][kSlurmNodeLabel] = slurm_node;
      ASSERT_TRUE(Create(client_.get(), k8s::kNodes, "", node).ok());
      ASSERT_TRUE(WaitForNodeReady(client_.get(), name)) << name << " never became Ready (is kwok running?)";
    }
    // The previous test's TearDown resumed the nodes (a drain fence) and cancelled its jobs (a
    // placeholder fence); slurmctld may still report the old state for a moment, and a daemon
    // whose first cycle sees it takes the node for still fenced (seen once: the held job then
    // reserved behind the pod). Start from idle nodes.
    Eventually(absl::Seconds(30), [&] {
      auto states = SlurmCommand(Slurm(), {"sinfo", "-h", "-N", "-n", absl::StrJoin(slurm_nodes, ","), "-o", "%T"});
      if (!states.ok()) return false;
      for (absl::string_view st : absl::StrSplit(*states, '\n', absl::SkipWhitespace())) {
        if (absl::StripAsciiWhitespace(st) != "idle") return false;
      }
      return true;
    });
    auto made = SlurmCommand(Slurm(), {"scontrol", "create", "PartitionName=pool",
                                       absl::StrCat("Nodes=", absl::StrJoin(slurm_nodes, ",")), "PriorityTier=1",
                                       "MaxTime=INFINITE", "State=UP"});
    ASSERT_TRUE(made.ok()) << made.status();
    TraceWait(start, "AddPool");
  }

  std::string K8sNode(int i) const { return absl::StrCat(ns_, "-", i); }

  void StartScheduler(int64_t lend_after, const std::string& default_qos = "batch",
                      const std::vector<std::string>& env = {}) {
    if (!scheduler_) scheduler_ = std::make_unique<SchedulerProcess>(dir_, "onequeue-scheduler");
    std::string base = SchedulerConfigYaml(K8sClusterEnvironment::Info(), "onequeue.io/pool=" + ns_);
    // A full cycle every second, not every 5 (queue.fullCycleSeconds, the daemon's default): what
    // becomes due with time and no event (a node free of pods for lendAfterSeconds, a lent node
    // idle for returnAfterSeconds, the first fence after the first poll) is acted on within a
    // second instead of up to five. Cycles events trigger in between still plan arrivals only.
    base.replace(base.find("queue:\n"), 7, "queue:\n  fullCycleSeconds: 1\n");
    if (!admin_token_file_.empty()) {  // oq's admin calls accepted with this file's token
      const std::string server_end = "metricsAddress: \"127.0.0.1:0\"}";
      base.replace(base.find(server_end), server_end.size(),
                   absl::StrCat("metricsAddress: \"127.0.0.1:0\", adminTokenFile: \"", admin_token_file_,
                                "\", allowInsecureAdminToken: true}"));  // loopback, a local test
    }
    const std::string yaml = absl::StrCat(
        base, "slurm:\n",
        "  enabled: true\n", "  url: \"", Slurm().rest_url, "\"\n", "  tokenFile: \"", Slurm().token_file, "\"\n",
        "  user: ", Slurm().user, "\n", "  apiVersion: ", Slurm().rest_api, "\n", "  lendMechanism: ", GetParam(), "\n",
        "  sharedPartitions: [pool]\n", "  nodeLabel: ", kSlurmNodeLabel, "\n", "  lendAfterSeconds: ", lend_after,
        "\n", "  returnAfterSeconds: ", return_after_, "\n",
        cancel_unrequeueable_ ? "" : "  cancelUnrequeueable: false\n",
        shared_pool_ ? absl::StrCat("  partitions: {pool: {sharing: ", pool_sharing_, "}}\n") : "",
        "  pollIntervalSeconds: 0.5\n",
        "  firstPollWaitSeconds: ", first_poll_wait_, "\n", "  defaultQos: ", default_qos, "\n",
        "  reclaimPartition: ", Slurm().reclaim_partition, "\n", "  scontrolPath: \"", Slurm().bin_dir,
        "/scontrol\"\n", "  slurmConf: \"", Slurm().slurm_conf, "\"\n", extra_yaml_);
    auto stops = [&] { return CountSubstr(scheduler_->Log(), "stopping dead"); };
    const int stops_before = stops();
    auto s = scheduler_->Start(yaml, env);
    // A daemon armed with a failpoint may reach it within moments of starting (a successor
    // resumes the step at once): that is the stop the test asked for, not a start failure.
    const bool stopped_at_failpoint = !env.empty() && stops() > stops_before;
    ASSERT_TRUE(s.ok() || stopped_at_failpoint) << s;
  }

  // sbatch into the pool partition; returns the job id.
  uint32_t Submit(const std::vector<std::string>& extra, const std::string& seconds = "20") {
    std::vector<std::string> argv = {"sbatch", "--parsable", "-p", "pool", "-N1", "-c8", "-t", "5", "--requeue",
                                     "-o", "/dev/null"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(absl::StrCat("--wrap=sleep ", seconds));
    auto out = SlurmCommand(Slurm(), argv);
    EXPECT_TRUE(out.ok()) << out.status();
    uint32_t id = 0;
    EXPECT_TRUE(out.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*out), &id)) << out.value_or("");
    return id;
  }

  std::string NodeLabel(const std::string& node, const std::string& key) {
    auto n = GetNode(client_.get(), node);
    if (!n.ok()) return "";
    auto it = n->metadata.labels.find(key);
    return it == n->metadata.labels.end() ? "" : it->second;
  }
  bool HasOwnerTaint(const std::string& node) {
    auto n = GetNode(client_.get(), node);
    if (!n.ok()) return false;
    for (const auto& t : n->taints) if (t.key == "onequeue.io/owner") return true;
    return false;
  }
  // Every pool node marked, Kubernetes' nodes fenced on the Slurm side.
  bool PoolFenced(int count) {
    for (int i = 1; i <= count; ++i) {
      if (NodeLabel(K8sNode(i), "onequeue.io/owner") != "kubernetes") return false;
    }
    return true;
  }
  void CreatePod(const std::string& name, const PodOptions& o) {
    auto s = Create(client_.get(), k8s::kPods, ns_, MakePod(name, ns_, o));
    ASSERT_TRUE(s.ok()) << name << ": " << s;
  }
  std::string PodNode(const std::string& name) {
    auto p = GetPod(client_.get(), ns_, name);
    return p.ok() ? p->node_name : "";
  }

  // A reclaim under way: a job running `job_seconds` on one of the two lent pool nodes (`lent`, 1 or
  // 2), the other node taken by a non-preemptible 8-CPU pod ("filler"), then the 4-CPU interactive
  // pod "jupyter", which only the lent node can take.
  void StartReclaim(const std::string& job_seconds, uint32_t* job, int* lent) {
    *job = Submit({}, job_seconds);
    const uint32_t id = *job;
    ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(id)["JobState"] == "RUNNING"; }));
    *lent = ShowJob(id)["NodeList"] == Slurm().nodes[0] ? 1 : 2;
    ASSERT_NO_FATAL_FAILURE(FillTheOtherNode(*lent));
    CreateJupyter();
  }
  // The pool node beside `lent` taken by the non-preemptible 8-CPU pod "filler".
  void FillTheOtherNode(int lent) {
    const int other = 3 - lent;
    PodOptions filler;
    filler.cpu = "8";
    filler.qos = "interactive";  // not preemptible: the lent node is the only way
    CreatePod("filler", filler);
    ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("filler") == K8sNode(other); }))
        << "filler on " << PodNode("filler");
  }
  void CreateJupyter() {
    PodOptions interactive;
    interactive.cpu = "4";
    interactive.qos = "interactive";
    CreatePod("jupyter", interactive);
  }

  // An interactive allocation (`salloc --no-shell`: not a batch job, so Slurm refuses its requeue
  // with error 2039) in the pool partition, granted on a node the daemon lends for it. salloc
  // waits until the grant, so it runs beside the test. Returns the job id (0 if it never ran).
  uint32_t Allocate(const std::string& name) {
    std::thread salloc([&] {
      auto out = SlurmCommand(Slurm(), {"salloc", "--no-shell", "-p", "pool", "-N1", "-c8", "-t", "5", "-J", name});
      EXPECT_TRUE(out.ok()) << out.status();
    });
    uint32_t id = 0;
    Eventually(kSlurmTimeout, [&] {
      auto q = SlurmCommand(Slurm(), {"squeue", "-h", "-n", name, "-t", "R", "-o", "%i"});
      return q.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*q), &id);
    });
    salloc.join();
    return id;
  }

  // The Slurm side's fence on pool node i: the drain reason, or the placeholder job's comment; "" if
  // none. And whether Slurm's node is drained or draining at all.
  std::string SlurmFence(int i) {
    const std::string& node = Slurm().nodes[i - 1];
    if (GetParam() == "drain" && !SlurmDrained(i)) return "";  // 24.11+ keep a resumed node's reason
    auto out = GetParam() == "drain"
                   ? SlurmCommand(Slurm(), {"sinfo", "-h", "-N", "-n", node, "-o", "%E"})
                   : SlurmCommand(Slurm(), {"squeue", "-h", "-w", node, "-p", Slurm().reclaim_partition, "-o", "%k"});
    if (!out.ok()) return "?";
    // sinfo -N: a line per partition of the node, all alike.
    const std::string fence(absl::StripAsciiWhitespace(out->substr(0, out->find('\n'))));
    return fence == "none" ? "" : fence;
  }
  bool SlurmDrained(int i) {
    auto out = SlurmCommand(Slurm(), {"sinfo", "-h", "-N", "-n", Slurm().nodes[i - 1], "-o", "%T"});
    return !out.ok() || absl::StrContains(*out, "drain");
  }
  std::string DescribePod(const std::string& pod) {
    return testing::Kubectl(K8sClusterEnvironment::Info(), {"describe", "pod", pod, "-n", ns_}).value_or("");
  }

  // No reservation left anywhere: no reserved/ annotation or label, no Slurm fence tagged for a
  // reservation, no node fenced while lent, no taint on a node Kubernetes owns.
  void ExpectNothingLeftOfTheStep(int count) {
    for (int i = 1; i <= count; ++i) {
      auto n = GetNode(client_.get(), K8sNode(i));
      ASSERT_TRUE(n.ok());
      const std::string owner = n->metadata.annotations.count("onequeue.io/owner")
                                    ? n->metadata.annotations.at("onequeue.io/owner")
                                    : "";
      EXPECT_FALSE(absl::StartsWith(owner, "reserved/")) << K8sNode(i) << " " << owner;
      if (owner == "kubernetes") EXPECT_FALSE(HasOwnerTaint(K8sNode(i))) << K8sNode(i);
    }
    // Drain reasons of drained nodes only: Slurm 24.11 and 26.05 keep a resumed node's last
    // reason (sinfo shows "allocated onequeue:reserved/..." after the drain is lifted).
    auto drains = SlurmCommand(Slurm(), {"sinfo", "-h", "-N", "-t", "drain,draining,drained", "-o", "%N %E"});
    ASSERT_TRUE(drains.ok());
    EXPECT_FALSE(absl::StrContains(*drains, "onequeue:reserved/")) << *drains;
    auto jobs = SlurmCommand(Slurm(), {"squeue", "-h", "-a", "-o", "%i %k"});
    ASSERT_TRUE(jobs.ok());
    EXPECT_FALSE(absl::StrContains(*jobs, "onequeue:reserved/")) << *jobs;
  }

  // Issue 25: one pool node <ns>-1 for Slurm node n1, 4 GPUs on both sides, and the partition
  // "pool" over n1 marked `sharing: shared` in the next StartScheduler.
  // `count` nodes (Slurm's first ones) in partition pool; the k8s nodes <ns>-1 .. <ns>-count.
  void AddSharedGpuNode(int count = 1) {
    shared_pool_ = true;
    std::vector<std::string> slurm_nodes;
    for (int i = 1; i <= count; ++i) {
      json pool_node = PoolNode(K8sNode(i), ns_, "8");
      pool_node["metadata"]["labels"][kSlurmNodeLabel] = Slurm().nodes[i - 1];
      pool_node["status"]["allocatable"]["nvidia.com/gpu"] = "4";
      pool_node["status"]["capacity"]["nvidia.com/gpu"] = "4";
      ASSERT_TRUE(Create(client_.get(), k8s::kNodes, "", pool_node).ok());
      ASSERT_TRUE(WaitForNodeReady(client_.get(), K8sNode(i)));
      slurm_nodes.push_back(Slurm().nodes[i - 1]);
    }
    auto made = SlurmCommand(Slurm(), {"scontrol", "create", "PartitionName=pool",
                                       absl::StrCat("Nodes=", absl::StrJoin(slurm_nodes, ",")), "PriorityTier=1",
                                       "MaxTime=INFINITE", "State=UP"});
    ASSERT_TRUE(made.ok()) << made.status();
  }
  // sbatch of a 1-CPU, 100 MB job asking `gpus` GPUs in the pool partition; returns its id.
  // `extra`: more sbatch options (e.g. -A <account>).
  uint32_t SubmitGpus(const std::string& gpus, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {"sbatch", "--parsable", "-p", "pool", "-N1", "-c1", "--mem=100", "-t", "10",
                                     absl::StrCat("--gres=gpu:", gpus), "-o", "/dev/null", "--wrap=sleep 600"};
    argv.insert(argv.end() - 1, extra.begin(), extra.end());
    auto out = SlurmCommand(Slurm(), argv);
    uint32_t id = 0;
    EXPECT_TRUE(out.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*out), &id)) << out.status();
    return id;
  }
  // A pod asking 1 CPU, 100Mi and `gpus` GPUs, in QOS `qos` (in namespace `ns`, this test's if empty).
  void CreateGpuPod(const std::string& name, const std::string& gpus, const std::string& qos,
                    const std::string& ns = "", const std::string& group = "", const std::string& group_size = "") {
    const std::string& in = ns.empty() ? ns_ : ns;
    PodOptions o;
    o.qos = qos;
    o.group = group;
    o.group_size = group_size;
    json pod = MakePod(name, in, o);
    pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = gpus;
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus;
    ASSERT_TRUE(Create(client_.get(), k8s::kPods, in, pod).ok()) << name;
  }
  // The scene of the gang preemptors on shared nodes: two 4-GPU shared nodes, on each a 2-GPU
  // interactive Slurm job (a, b; never victims) and a 2-GPU batch pod (low1, low2, one per node),
  // the scheduler running with Slurm jobs interactive.
  void TwoSharedNodesWithLowPods(uint32_t* a, uint32_t* b, std::string* uid1, std::string* uid2) {
    ASSERT_NO_FATAL_FAILURE(AddSharedGpuNode(2));
    *a = SubmitGpus("2", {"-w", Slurm().nodes[0]});
    *b = SubmitGpus("2", {"-w", Slurm().nodes[1]});
    ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
      return ShowJob(*a)["JobState"] == "RUNNING" && ShowJob(*b)["JobState"] == "RUNNING";
    }));
    ASSERT_NO_FATAL_FAILURE(StartScheduler(/*lend_after=*/1, "interactive"));
    ASSERT_NO_FATAL_FAILURE(CreateGpuPod("low1", "2", "batch"));
    ASSERT_NO_FATAL_FAILURE(CreateGpuPod("low2", "2", "batch"));
    ASSERT_TRUE(Eventually(kBindTimeout, [&] { return !PodNode("low1").empty() && !PodNode("low2").empty(); }))
        << PodNode("low1") << " " << PodNode("low2");
    ASSERT_NE(PodNode("low1"), PodNode("low2"));
    *uid1 = GetPod(client_.get(), ns_, "low1")->metadata.uid;
    *uid2 = GetPod(client_.get(), ns_, "low2")->metadata.uid;
  }
  // The end of that scene: the interactive jobs a and b run on (Restarts=0), neither node fenced
  // or drained.
  void ExpectTheJobsBesideUntouched(uint32_t a, uint32_t b) {
    for (uint32_t j : {a, b}) {
      EXPECT_EQ(ShowJob(j)["JobState"], "RUNNING") << j;
      EXPECT_EQ(ShowJob(j)["Restarts"], "0") << j;
    }
    for (int i : {1, 2}) {
      EXPECT_EQ(SlurmFence(i), "") << i;
      EXPECT_FALSE(SlurmDrained(i)) << i;
    }
  }
  // squeue's line for the pod's placeholder: id, state, node, CPUs, partition (and `more` squeue
  // fields after them); empty if none.
  std::vector<std::string> PodPlaceholder(const std::string& pod, const std::string& more = "") {
    auto p = GetPod(client_.get(), ns_, pod);
    if (!p.ok()) return {};
    auto q = SlurmCommand(Slurm(), {"squeue", "-h", "-n", absl::StrCat("onequeue-pod-", p->metadata.uid), "-o",
                                    absl::StrCat("%i %T %N %C %P", more)});
    if (!q.ok()) return {};
    return absl::StrSplit(absl::StripAsciiWhitespace(*q), ' ', absl::SkipEmpty());
  }

  std::string ns_, dir_;
  std::string admin_token_file_;  // non-empty: the daemon accepts admin calls with this token
  int64_t return_after_ = 600;      // slurm.returnAfterSeconds of the next StartScheduler
  bool cancel_unrequeueable_ = true;  // slurm.cancelUnrequeueable of the next StartScheduler
  double first_poll_wait_ = 30;       // slurm.firstPollWaitSeconds of the next StartScheduler
  bool shared_pool_ = false;          // slurm.partitions.pool.sharing: pool_sharing_ (issue 25)
  std::string pool_sharing_ = "shared";
  std::string extra_yaml_;            // appended to the next StartScheduler's configuration
  std::vector<std::string> namespaces_;  // this test's namespaces: ns_ and AddNamespace's
  bool restd_stopped_ = false;      // slurmrestd stopped by the test: TearDown starts it again
  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<SchedulerProcess> scheduler_;
};

// 1. An idle pool: Slurm batch jobs start on lent nodes (squeue shows them RUNNING there); the
// Kubernetes nodes say owner slurm and carry the taint; kube-scheduler's pod never lands there.
TEST_P(SlurmE2ETest, IdlePoolIsLentToSlurmJobs) {
  AddPool(2);
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); })) << "the pool was never fenced for Kubernetes";
  const uint32_t a = Submit({}, "60"), b = Submit({}, "60");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    return ShowJob(a)["JobState"] == "RUNNING" && ShowJob(b)["JobState"] == "RUNNING";
  })) << "jobs " << a << ", " << b << " never ran";
  std::set<std::string> ran_on = {ShowJob(a)["NodeList"], ShowJob(b)["NodeList"]};
  EXPECT_EQ(ran_on, (std::set<std::string>{Slurm().nodes[0], Slurm().nodes[1]}));
  auto squeue = SlurmCommand(Slurm(), {"squeue", "-h", "-p", "pool", "-t", "R", "-o", "%i %N"});
  ASSERT_TRUE(squeue.ok());
  EXPECT_TRUE(absl::StrContains(*squeue, absl::StrCat(a))) << *squeue;
  for (int i = 1; i <= 2; ++i) {
    EXPECT_TRUE(Eventually(absl::Seconds(30), [&] { return NodeLabel(K8sNode(i), "onequeue.io/owner") == "slurm"; }));
    EXPECT_TRUE(HasOwnerTaint(K8sNode(i)));
    EXPECT_FALSE(EventsWithReason(client_.get(), "default", K8sNode(i), "Lent").empty()) << K8sNode(i);
  }
  // kube-scheduler's pod may only go to this pool: it must stay Pending while the pool is lent.
  PodOptions peer;
  peer.scheduler_name = "default-scheduler";
  json pod = MakePod("peer", ns_, peer);
  pod["spec"]["nodeSelector"] = {{"onequeue.io/pool", ns_}};
  ASSERT_TRUE(Create(client_.get(), k8s::kPods, ns_, pod).ok());
  // Until kube-scheduler has tried the pod and refused it (its FailedScheduling event; it retries
  // an unschedulable pod only after a cluster event, backing off 1 s, then 2 s), and 3 s after:
  // never bound meanwhile.
  auto refused = [&] { return !EventsWithReason(client_.get(), ns_, "peer", "FailedScheduling").empty(); };
  Eventually(absl::Seconds(10), [&] { return !PodNode("peer").empty() || refused(); });
  EXPECT_EQ(PodNode("peer"), "") << "kube-scheduler bound a pod to a lent node";
  EXPECT_TRUE(refused()) << "kube-scheduler never reported the pod unschedulable";
  EXPECT_FALSE(Eventually(absl::Seconds(3), [&] { return !PodNode("peer").empty(); }))
      << "kube-scheduler bound a pod to a lent node: " << PodNode("peer");
}

// 2. An interactive pod needs a lent node: the job there is requeued exactly once, the pod is
// bound there, the job runs again elsewhere and COMPLETES, never back on the reserved node.
TEST_P(SlurmE2ETest, InteractivePodReclaimsALentNodeAndTheJobRunsAgainElsewhere) {
  AddPool(2);
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  uint32_t job = 0;
  int lent = 0;
  // 15 s on its first run, so the reclaim finds it running; 3 s once requeued (Slurm sets
  // SLURM_RESTART_COUNT then): its completion, not its length, is what is checked.
  ASSERT_NO_FATAL_FAILURE(StartReclaim("$((${SLURM_RESTART_COUNT:-0} > 0 ? 3 : 15))", &job, &lent));
  const std::string first_node = Slurm().nodes[lent - 1];
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("jupyter") == K8sNode(lent); }))
      << "jupyter on '" << PodNode("jupyter") << "'";
  EXPECT_EQ(ShowJob(job)["Restarts"], "1");
  EXPECT_FALSE(EventsWithReason(client_.get(), "default", K8sNode(lent), "Reclaimed").empty());
  // Free the other node: the requeued job runs there, to completion, never on the pod's node.
  ASSERT_TRUE(testing::Kubectl(K8sClusterEnvironment::Info(),
                               {"delete", "pod", "filler", "-n", ns_, "--grace-period=0", "--force"})
                  .ok());
  bool completed = Eventually(absl::Seconds(180), [&] {
    auto j = ShowJob(job);
    if (j["JobState"] == "RUNNING") {
      EXPECT_NE(j["NodeList"], first_node) << "the requeued job came back onto the reserved node";
    }
    return j["JobState"] == "COMPLETED";
  }, absl::Milliseconds(500));
  EXPECT_TRUE(completed) << "job " << job << ": " << ShowJob(job)["JobState"];
  EXPECT_EQ(ShowJob(job)["Restarts"], "1");
  EXPECT_NE(ShowJob(job)["NodeList"], first_node) << "the requeued job ran on the reserved node";
  EXPECT_EQ(PodNode("jupyter"), K8sNode(lent));
  ExpectNothingLeftOfTheStep(2);
}

// 3 and 6. One free node, a pending pod and a pending Slurm job: the higher onequeue priority gets
// it, whichever world it is from; the pod left behind says which Slurm job it waits for.
TEST_P(SlurmE2ETest, HigherPriorityGetsTheNodeWhicheverWorld) {
  AddPool(1);
  // The job is submitted held with onequeue's tag, as the daemon holds pending jobs, so neither
  // world can take the node before the daemon sees both. It is charged to the pod's account (the
  // namespace): fair-share then weighs both alike, and the QOS decides (the earlier tests' jobs
  // are usage of other accounts).
  const std::string account = "--account=" + ns_;
  // Held as onequeue holds a job (priority 0, its tag in the AdminComment): the daemon takes it as
  // its own. The user's comment is the user's: it survives the hold and the start (issue 29).
  auto held_as_onequeue = [&](uint32_t id) {
    ASSERT_TRUE(SlurmCommand(Slurm(), {"scontrol", "update", absl::StrCat("JobId=", id),
                                       "AdminComment=onequeue: held by the test"})
                    .ok());
  };
  const uint32_t job = Submit({"--hold", "--comment=user-note-round1", account}, "60");
  held_as_onequeue(job);
  PodOptions pod;
  pod.cpu = "4";
  pod.qos = "batch";
  CreatePod("web", pod);
  // Round 1: the Slurm job's QOS (normal) is above the pod's (batch).
  StartScheduler(/*lend_after=*/0, /*default_qos=*/"normal");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }))
      << "job " << ShowJob(job)["JobState"] << " " << ShowJob(job)["Reason"];
  EXPECT_EQ(ShowJob(job)["NodeList"], Slurm().nodes[0]);
  EXPECT_EQ(ShowJob(job)["Comment"], "user-note-round1");
  EXPECT_TRUE(absl::StartsWith(AdminCommentOf(job), "onequeue: started by onequeue")) << AdminCommentOf(job);
  EXPECT_EQ(PodNode("web"), "");
  // 6. kubectl describe names the job.
  const std::string id = absl::StrCat(job);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    auto d = testing::Kubectl(K8sClusterEnvironment::Info(), {"describe", "pod", "web", "-n", ns_});
    return d.ok() && absl::StrContains(*d, "Slurm job " + id);
  })) << testing::Kubectl(K8sClusterEnvironment::Info(), {"describe", "pod", "web", "-n", ns_}).value_or("");
  scheduler_->Stop();
  (void)SlurmCommand(Slurm(), {"scancel", id});

  // Round 2, swapped: the pod's QOS (normal) is above the job's (batch).
  const uint32_t job2 = Submit({"--hold", "--comment=user-note-round2", account}, "60");
  held_as_onequeue(job2);
  PodOptions pod2;
  pod2.cpu = "4";
  pod2.qos = "normal";
  ASSERT_TRUE(testing::Kubectl(K8sClusterEnvironment::Info(),
                               {"delete", "pod", "web", "-n", ns_, "--grace-period=0", "--force"})
                  .ok());
  CreatePod("web2", pod2);
  StartScheduler(/*lend_after=*/0, /*default_qos=*/"batch");
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("web2") == K8sNode(1); }));
  // The job waits, held by onequeue with its reason in the AdminComment; its comment is its user's.
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    const std::string mark = AdminCommentOf(job2);
    return ShowJob(job2)["JobState"] == "PENDING" && absl::StartsWith(mark, "onequeue:") &&
           !absl::StrContains(mark, "held by the test");
  })) << AdminCommentOf(job2);
  EXPECT_EQ(ShowJob(job2)["Comment"], "user-note-round2");
}

// 4. kill -9 after the reclaim is reserved but before the requeue, then after the requeue but
// before the bind: each new daemon finishes the step; nothing of it is left afterwards.
TEST_P(SlurmE2ETest, ACrashedReclaimIsFinishedBySuccessors) {
  AddPool(2);
  StartScheduler(/*lend_after=*/2, "batch", {"ONEQUEUE_FAILPOINTS=reclaim-after-reserve"});
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  uint32_t job = 0;
  int lent = 0;
  ASSERT_NO_FATAL_FAILURE(StartReclaim("15", &job, &lent));
  ASSERT_TRUE(scheduler_->WaitForExit(kBindTimeout)) << "failpoint reclaim-after-reserve never fired";
  EXPECT_TRUE(absl::StrContains(scheduler_->Log(), "failpoint reclaim-after-reserve"));
  {
    auto n = GetNode(client_.get(), K8sNode(lent));
    ASSERT_TRUE(n.ok());
    EXPECT_TRUE(absl::StartsWith(n->metadata.annotations["onequeue.io/owner"], "reserved/"));
  }
  // The second daemon resumes the step and dies right after the requeue. (With placeholders the
  // fence itself made Slurm requeue the job before the first crash: then there is no requeue
  // step left, and the second daemon binds the pod.)
  StartScheduler(/*lend_after=*/2, "batch", {"ONEQUEUE_FAILPOINTS=reclaim-after-requeue"});
  if (GetParam() == "drain") {
    ASSERT_TRUE(scheduler_->WaitForExit(kBindTimeout)) << "failpoint reclaim-after-requeue never fired";
    EXPECT_EQ(PodNode("jupyter"), "");
  } else {
    Eventually(absl::Seconds(30),
               [&] { return scheduler_->WaitForExit(absl::ZeroDuration()) || !PodNode("jupyter").empty(); });
    scheduler_->Stop();
  }
  // The third finishes it.
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("jupyter") == K8sNode(lent); }));
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] { return ShowJob(job)["Restarts"] == "1"; }))
      << "restarts " << ShowJob(job)["Restarts"];
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] {
    return NodeLabel(K8sNode(lent), "onequeue.io/owner") == "kubernetes";
  }));
  ExpectNothingLeftOfTheStep(2);
  EXPECT_EQ(ShowJob(job)["Restarts"], "1");
}

// 4a. kill -9 right after the reservation of a reclaim is released (the node written back to
// kubernetes, the Slurm fence still tagged for the reservation, the pod maybe not bound yet): the
// successor binds the pod there, re-tags the fence, and nothing of the step is left (issue 13's
// fault suite: the Slurm "after release" failpoint).
TEST_P(SlurmE2ETest, AKillRightAfterTheReclaimIsReleasedLeavesNothingOfTheStep) {
  AddPool(2);
  StartScheduler(/*lend_after=*/2, "batch", {"ONEQUEUE_FAILPOINTS=release-after-write"});
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  uint32_t job = 0;
  int lent = 0;
  ASSERT_NO_FATAL_FAILURE(StartReclaim("15", &job, &lent));
  ASSERT_TRUE(scheduler_->WaitForExit(kBindTimeout)) << "failpoint release-after-write never fired";
  EXPECT_TRUE(absl::StrContains(scheduler_->Log(), "failpoint release-after-write"));
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("jupyter") == K8sNode(lent); }));
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] {
    return NodeLabel(K8sNode(lent), "onequeue.io/owner") == "kubernetes";
  }));
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] {
    auto drains = SlurmCommand(Slurm(), {"sinfo", "-h", "-N", "-o", "%N %E"});
    auto jobs = SlurmCommand(Slurm(), {"squeue", "-h", "-a", "-o", "%i %k"});
    return drains.ok() && jobs.ok() && !absl::StrContains(*drains, "onequeue:reserved/") &&
           !absl::StrContains(*jobs, "onequeue:reserved/");
  })) << "the fence still names the reservation";
  ExpectNothingLeftOfTheStep(2);
  EXPECT_EQ(ShowJob(job)["Restarts"], "1");
}

// 4a'. kill -9 right after a lend is written on the Kubernetes side (owner slurm/<job>, the taint)
// and before the job is started and the fence lifted: the successor starts that job there and
// lifts the fence; the other node stays Kubernetes' and fenced; nothing is left half-lent.
TEST_P(SlurmE2ETest, AKillRightAfterTheLendIsWrittenTheSuccessorStartsTheJob) {
  AddPool(2);
  StartScheduler(/*lend_after=*/2, "batch", {"ONEQUEUE_FAILPOINTS=lend-after-annotate"});
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t job = Submit({}, "15");
  ASSERT_TRUE(scheduler_->WaitForExit(kBindTimeout)) << "failpoint lend-after-annotate never fired";
  EXPECT_TRUE(absl::StrContains(scheduler_->Log(), "failpoint lend-after-annotate"));
  EXPECT_EQ(ShowJob(job)["JobState"], "PENDING");
  int lent = 0;
  for (int i = 1; i <= 2; ++i) {
    auto n = GetNode(client_.get(), K8sNode(i));
    ASSERT_TRUE(n.ok());
    if (n->metadata.annotations["onequeue.io/owner"] == absl::StrCat("slurm/", job)) lent = i;
  }
  ASSERT_NE(lent, 0) << "no node was written lent to job " << job;
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }))
      << ShowJob(job)["JobState"] << " " << ShowJob(job)["Reason"];
  EXPECT_EQ(ShowJob(job)["NodeList"], Slurm().nodes[lent - 1]);
  EXPECT_EQ(NodeLabel(K8sNode(lent), "onequeue.io/owner"), "slurm");
  EXPECT_TRUE(HasOwnerTaint(K8sNode(lent)));
  EXPECT_EQ(NodeLabel(K8sNode(3 - lent), "onequeue.io/owner"), "kubernetes");
  ExpectNothingLeftOfTheStep(2);
}

// 4b. slurmrestd goes down and slurmctld restarts in the middle of a reclaim (the lent node is
// reserved for the pod, the job on it not yet gone): the daemon keeps running, binds nothing to a
// node Slurm may still use, and once Slurm answers again the step finishes: the pod on the lent
// node, the job requeued exactly once, nothing of the step left.
TEST_P(SlurmE2ETest, SlurmDownMidReclaimTheStepFinishesWhenItIsBack) {
  AddPool(2);
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  uint32_t job = 0;
  int lent = 0;
  ASSERT_NO_FATAL_FAILURE(StartReclaim("30", &job, &lent));
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    auto n = GetNode(client_.get(), K8sNode(lent));
    return n.ok() && absl::StartsWith(n->metadata.annotations["onequeue.io/owner"], "reserved/");
  }, absl::Milliseconds(20))) << "the lent node was never reserved";
  ASSERT_TRUE(testing::StopDaemon(Slurm(), "slurmrestd").ok());
  ASSERT_TRUE(testing::StopDaemon(Slurm(), "slurmctld").ok());
  absl::SleepFor(absl::Seconds(5));  // the daemon runs cycles against a Slurm that does not answer
  ASSERT_TRUE(testing::StartDaemon(Slurm(), "slurmctld").ok());
  ASSERT_TRUE(testing::StartDaemon(Slurm(), "slurmrestd").ok());

  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("jupyter") == K8sNode(lent); }))
      << "jupyter on '" << PodNode("jupyter") << "'";
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] { return ShowJob(job)["Restarts"] == "1"; }))
      << "restarts " << ShowJob(job)["Restarts"];
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] {
    return NodeLabel(K8sNode(lent), "onequeue.io/owner") == "kubernetes";
  }));
  ExpectNothingLeftOfTheStep(2);
  EXPECT_EQ(ShowJob(job)["Restarts"], "1");
  EXPECT_FALSE(scheduler_->WaitForExit(absl::ZeroDuration())) << "the daemon exited while Slurm was away";
}

// 5. A node returns to Slurm lendAfterSeconds after its last pod ends, and a waiting job starts.
TEST_P(SlurmE2ETest, ANodeIsLentAgainAfterItsLastPodEnds) {
  AddPool(1);
  StartScheduler(/*lend_after=*/5);
  PodOptions pod;
  pod.cpu = "4";
  pod.qos = "normal";
  CreatePod("web", pod);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("web") == K8sNode(1); }));
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(1); }));
  const uint32_t job = Submit({}, "20");
  // Held by onequeue, its reason in the AdminComment, while the pod runs.
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    return ShowJob(job)["JobState"] == "PENDING" && absl::StartsWith(AdminCommentOf(job), "onequeue:");
  })) << AdminCommentOf(job);
  absl::SleepFor(absl::Seconds(3));
  EXPECT_EQ(ShowJob(job)["JobState"], "PENDING");
  const absl::Time deleted = absl::Now();
  ASSERT_TRUE(testing::Kubectl(K8sClusterEnvironment::Info(),
                               {"delete", "pod", "web", "-n", ns_, "--grace-period=0", "--force"})
                  .ok());
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }));
  // Not lent at once: the node waits lendAfterSeconds (5) from the last cycle that saw the pod,
  // which may have run a moment before the deletion.
  EXPECT_GE(absl::Now() - deleted, absl::Seconds(3)) << "lent before lendAfterSeconds";
  EXPECT_EQ(ShowJob(job)["NodeList"], Slurm().nodes[0]);
  EXPECT_EQ(NodeLabel(K8sNode(1), "onequeue.io/owner"), "slurm");
}

// Issue 29: a Slurm job keeps its meaning. Pool nodes n1 (feature rack1) and n5 (rack2): a job
// with --constraint=rack2 runs on n5 only, --nodelist=n1 on n1, --exclude=n1 on n5; a job behind
// the --nodelist one waits held by onequeue, then starts. Afterwards every job's ReqNodeList,
// ExcNodeList and Comment are what its user asked; onequeue's marks are in the AdminComment. A
// constraint onequeue cannot plan node by node is refused with the reason.
TEST_P(SlurmE2ETest, ConstraintNodeListExcludeAndTheUsersCommentAreKept) {
  ASSERT_GE(Slurm().nodes.size(), 5u);
  AddPool({1, 5});
  StartScheduler(/*lend_after=*/1);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const std::string n1 = Slurm().nodes[0], n5 = Slurm().nodes[4];
  const std::vector<std::string> half = {"-c4", "--mem=1000"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), half.begin(), half.end());
    return extra;
  };
  const uint32_t on_rack2 = Submit(with({"--constraint=rack2", "--comment=user-note-a"}), "30");
  const uint32_t listed = Submit(with({"--nodelist=" + n1, "--comment=user-note-b"}), "6");
  const uint32_t excluded = Submit(with({"--exclude=" + n1, "--comment=user-note-c"}), "30");
  // Two nodes, one of each rack: a mix across nodes, which onequeue refuses with the reason.
  const uint32_t mixed = Submit({"-N2", "-c1", "--constraint=[rack1*1&rack2*1]", "--comment=user-note-e"}, "2");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    return ShowJob(on_rack2)["JobState"] == "RUNNING" && ShowJob(listed)["JobState"] == "RUNNING" &&
           ShowJob(excluded)["JobState"] == "RUNNING";
  })) << "jobs " << on_rack2 << ", " << listed << ", " << excluded << " never all ran";
  EXPECT_EQ(ShowJob(on_rack2)["NodeList"], n5);
  EXPECT_EQ(ShowJob(listed)["NodeList"], n1);
  EXPECT_EQ(ShowJob(excluded)["NodeList"], n5);
  // Behind `listed` on n1 (n1 has 4 CPUs left, this one asks 8): held by onequeue until it ends.
  const uint32_t behind = Submit({"--nodelist=" + n1, "--comment=user-note-d"}, "2");
  // While `listed` runs, `behind` waits, held by onequeue: its comment is still its user's.
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    auto j = ShowJob(behind);
    return j["JobState"] == "PENDING" && j["Priority"] == "0" && absl::StartsWith(j["AdminComment"], "onequeue:");
  })) << "job " << behind << " was not held by onequeue";
  EXPECT_EQ(ShowJob(behind)["Comment"], "user-note-d");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    const std::string st = ShowJob(behind)["JobState"];
    return st == "RUNNING" || st == "COMPLETED";
  })) << "job " << behind << " never ran after " << listed;
  const std::map<uint32_t, std::pair<std::string, std::string>> asked = {
      {on_rack2, {"a", ""}}, {listed, {"b", n1}}, {excluded, {"c", ""}}, {behind, {"d", n1}}};
  for (const auto& [id, want] : asked) {
    auto j = ShowJob(id);
    EXPECT_EQ(j["Comment"], "user-note-" + want.first) << id;
    EXPECT_EQ(j["ReqNodeList"] == "(null)" ? "" : j["ReqNodeList"], want.second) << id;
    EXPECT_TRUE(absl::StartsWith(j["AdminComment"], "onequeue:")) << id << " " << j["AdminComment"];
  }
  EXPECT_EQ(ShowJob(behind)["NodeList"], n1);
  EXPECT_EQ(ShowJob(excluded)["ExcNodeList"], n1);
  EXPECT_EQ(ShowJob(on_rack2)["Features"], "rack2");
  // The refused one: held, its reason in the AdminComment (spaces: read from the plain output).
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    auto out = SlurmCommand(Slurm(), {"scontrol", "show", "job", absl::StrCat(mixed)});
    return out.ok() && absl::StrContains(*out, "brackets") && absl::StrContains(*out, "Comment=user-note-e");
  })) << SlurmCommand(Slurm(), {"scontrol", "show", "job", absl::StrCat(mixed)}).value_or("?");
  EXPECT_EQ(ShowJob(mixed)["JobState"], "PENDING");
}

// 6b. Issue 29: a maintenance reservation (`scontrol create reservation flags=maint`) keeps
// onequeue from lending or starting anything on its node: of two whole-node jobs one runs on the
// other pool node and the second waits, held by onequeue; a pod only that node could take waits
// too; the node stays Kubernetes' and fenced. Once the reservation is deleted the node is used
// again. One mechanism: the reservation is read the same whatever fences the pool.
TEST_P(SlurmE2ETest, AMaintenanceReservationKeepsOnequeueOffItsNodes) {
  if (GetParam() != "drain") GTEST_SKIP() << "reservations do not depend on the fence: one mechanism is enough";
  AddPool(2);
  const std::string n1 = Slurm().nodes[0], n2 = Slurm().nodes[1];
  auto made = SlurmCommand(Slurm(), {"scontrol", "create", "reservation", "ReservationName=oq_maint", "StartTime=now",
                                     "Duration=UNLIMITED", "Flags=MAINT,IGNORE_JOBS", "Users=" + Slurm().user,
                                     "Nodes=" + n1});
  ASSERT_TRUE(made.ok()) << made.status();
  bool dropped = false;
  auto drop = [&] {
    if (!dropped) (void)SlurmCommand(Slurm(), {"scontrol", "delete", "ReservationName=oq_maint"});
    dropped = true;
  };
  struct Guard {
    std::function<void()> f;
    ~Guard() { f(); }
  } guard{drop};
  StartScheduler(/*lend_after=*/1);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t a = Submit({}, "60"), b = Submit({}, "60");
  uint32_t ran = 0, waits = 0;
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    auto ja = ShowJob(a), jb = ShowJob(b);
    if (ja["JobState"] == "RUNNING") ran = a, waits = b;
    else if (jb["JobState"] == "RUNNING") ran = b, waits = a;
    else return false;
    auto w = ShowJob(waits);
    return w["JobState"] == "PENDING" && w["Priority"] == "0" && absl::StartsWith(w["AdminComment"], "onequeue:");
  })) << "one job never ran beside the reservation, the other held";
  EXPECT_EQ(ShowJob(ran)["NodeList"], n2);
  PodOptions big;
  big.cpu = "8";
  big.qos = "batch";
  CreatePod("big", big);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    return !EventsWithReason(client_.get(), ns_, "big", "FailedScheduling").empty();
  })) << "the pod was never reported waiting";
  EXPECT_EQ(PodNode("big"), "");
  EXPECT_EQ(ShowJob(waits)["JobState"], "PENDING");
  EXPECT_EQ(NodeLabel(K8sNode(1), "onequeue.io/owner"), "kubernetes");
  EXPECT_TRUE(SlurmDrained(1));  // still fenced for Kubernetes
  // The reservation gone, node 1 is used again (by the job or the pod, whichever the queue orders first).
  drop();
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    return ShowJob(waits)["JobState"] == "RUNNING" || PodNode("big") == K8sNode(1);
  })) << "node 1 was never used after the reservation was deleted";
}

// 6c. Issue 29: a 10-task array (one whole node each, two pool nodes) runs as 10 tasks, each
// started by onequeue (its mark in the task's AdminComment) in task order: no task started before
// a lower one. One mechanism: arrays do not depend on the fence.
// It failed on every Slurm (tasks 6 and 7 started before 4 and 5) until onequeue (a) counted a
// started task its lagging view still lists in the array's record on the node lent for it, and
// (b) started the array's lowest task not started yet whenever the plan started any of its tasks.
TEST_P(SlurmE2ETest, ATenTaskArrayRunsAsTenTasksInOrder) {
  if (GetParam() != "drain") GTEST_SKIP() << "arrays do not depend on the fence: one mechanism is enough";
  AddPool(2);
  StartScheduler(/*lend_after=*/1);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t array = Submit({"--array=0-9"}, "1");
  // `scontrol show job -o <array>`: a line per record of the array (tasks that ran, and the
  // pending rest while there is one).
  std::map<int, std::map<std::string, std::string>> tasks;
  // The tasks waiting in the array's record are held by onequeue (Priority 0), at least once seen:
  // on 22.05 a REST hold of the array's id failed ("_parse_job_list") and nothing was held.
  bool seen_held = false;
  auto read = [&] {
    tasks.clear();
    auto out = SlurmCommand(Slurm(), {"scontrol", "show", "job", "-o", absl::StrCat(array)});
    if (!out.ok()) return;
    for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipWhitespace())) {
      std::map<std::string, std::string> f;
      for (absl::string_view kv : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
        const size_t eq = kv.find('=');
        if (eq != absl::string_view::npos) f[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
      }
      int task = 0;
      if (absl::SimpleAtoi(f["ArrayTaskId"], &task)) tasks[task] = f;
      if (f["JobState"] == "PENDING" && f["Priority"] == "0" && absl::StartsWith(f["AdminComment"], "onequeue:"))
        seen_held = true;
    }
  };
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    read();
    if (tasks.size() != 10) return false;
    for (auto& [t, f] : tasks)
      if (f["JobState"] != "COMPLETED") return false;
    return true;
  })) << "the array's tasks never all completed: " << SlurmCommand(Slurm(), {"squeue", "-a", "-r"}).value_or("?");
  EXPECT_TRUE(seen_held) << "no waiting task of the array was ever seen held by onequeue";
  // onequeue started them in task order: it splits each task off the array (a new job id) as it
  // starts it, so the tasks' own job ids rise with the task id (the last task may stay the
  // array's record itself). Two nodes: no task started before a task two below it (the wave
  // before); within a wave Slurm may start the second a moment before the first (seen live).
  uint32_t previous_id = 0;
  for (auto& [t, f] : tasks) {
    EXPECT_TRUE(absl::StartsWith(f["AdminComment"], "onequeue:")) << "task " << t << ": " << f["AdminComment"];
    uint32_t id = 0;
    ASSERT_TRUE(absl::SimpleAtoi(f["JobId"], &id)) << f["JobId"];
    if (id == array) {
      EXPECT_EQ(t, 9) << "task " << t << " was never split off the array";
      continue;
    }
    EXPECT_GT(id, previous_id) << "task " << t << " was started before task " << t - 1;
    previous_id = id;
    if (t >= 2) EXPECT_LE(tasks[t - 2]["StartTime"], f["StartTime"]) << "task " << t << " ran before task " << t - 2;
  }
}

// 6d. Issue 29: a job submitted with --dependency=afterok:<parent> is Slurm's to release: while
// its parent runs onequeue neither holds it (its Priority stays Slurm's, no onequeue mark in its
// AdminComment) nor starts it, though the second pool node is free; it runs after its parent
// ended. One mechanism: dependencies do not depend on the fence.
TEST_P(SlurmE2ETest, AJobWaitingOnADependencyIsNeitherHeldNorStartedAndRunsAfterItsParent) {
  if (GetParam() != "drain") GTEST_SKIP() << "dependencies do not depend on the fence: one mechanism is enough";
  AddPool(2);
  StartScheduler(/*lend_after=*/1);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t parent = Submit({}, "8");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(parent)["JobState"] == "RUNNING"; }))
      << "the parent never ran";
  const uint32_t child = Submit({absl::StrCat("--dependency=afterok:", parent)}, "1");
  // While the parent runs (8 s), sampled every second after the daemon's next cycles.
  int samples = 0;
  std::string explained;  // `oq explain slurm/<child>` while the parent runs
  for (int i = 0; i < 5 && ShowJob(parent)["JobState"] == "RUNNING"; ++i) {
    absl::SleepFor(absl::Seconds(1));
    auto c = ShowJob(child);
    if (ShowJob(parent)["JobState"] != "RUNNING") break;
    ++samples;
    EXPECT_EQ(c["JobState"], "PENDING") << "the child ran while its parent ran";
    EXPECT_EQ(c["Reason"], "Dependency");
    EXPECT_NE(c["Priority"], "0") << "onequeue held the child: " << c["AdminComment"];
    EXPECT_FALSE(absl::StartsWith(c["AdminComment"], "onequeue:")) << c["AdminComment"];
    if (samples == 2)
      explained = RunCommand({OQ_BIN, "--server", scheduler_->GrpcAddress(), "explain", absl::StrCat("slurm/", child)},
                             absl::Seconds(10))
                      .output;
  }
  EXPECT_GE(samples, 2) << "the parent ended too soon to see the child wait";
  // The plan's reason for it while it waited (before: Held, its start not planned).
  EXPECT_THAT(explained, ::testing::HasSubstr("Dependency")) << explained;
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(child)["JobState"] == "COMPLETED"; }))
      << "the child never ran after its parent: " << SlurmCommand(Slurm(), {"squeue", "-a"}).value_or("?");
  EXPECT_EQ(ShowJob(parent)["JobState"], "COMPLETED");
  EXPECT_LE(ShowJob(parent)["EndTime"], ShowJob(child)["StartTime"]);
}

// 6e. Issue 29 (slurm_partitions.h): the pool partition's MaxTime is 2 minutes. A job asking 5
// (Slurm accepts it, EnforcePartLimits=NO, and keeps it pending: PartitionTimeLimit) is never
// started by onequeue though it is the oldest: it stays held with the partition's reason in its
// AdminComment, while a younger job asking 1 minute is started on the one pool node and ends.
// One mechanism: partition limits do not depend on the fence.
TEST_P(SlurmE2ETest, AJobOverItsPartitionsMaxTimeStaysPendingAndOnequeueDoesNotStartIt) {
  if (GetParam() != "drain") GTEST_SKIP() << "partition limits do not depend on the fence: one mechanism is enough";
  AddPool(1);
  auto limited = SlurmCommand(Slurm(), {"scontrol", "update", "PartitionName=pool", "MaxTime=2"});
  ASSERT_TRUE(limited.ok()) << limited.status();
  StartScheduler(/*lend_after=*/1);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(1); }));
  const uint32_t over = Submit({}, "30");              // -t 5: over MaxTime 2
  const uint32_t within = Submit({"-t", "1"}, "1");    // the last -t wins
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    const std::string st = ShowJob(within)["JobState"];
    return st == "RUNNING" || st == "COMPLETED";
  })) << "job " << within << " within MaxTime never ran";
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    return absl::StrContains(AdminCommentOf(over), "over its MaxTime 2 min (PartitionTimeLimit)");
  })) << "job " << over << ": " << AdminCommentOf(over);
  // The pool node idle again after `within`: `over` still waits, never released by onequeue.
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(within)["JobState"] == "COMPLETED"; }));
  absl::SleepFor(absl::Seconds(2));
  auto j = ShowJob(over);
  EXPECT_EQ(j["JobState"], "PENDING");
  EXPECT_EQ(j["Priority"], "0");
  EXPECT_FALSE(absl::StrContains(AdminCommentOf(over), "started by onequeue on")) << AdminCommentOf(over);
}

// 7. oq shows both worlds from the daemon's last cycle: Slurm jobs running on lent nodes and one
// waiting beside a waiting pod in `oq queue`, the lent nodes in `oq nodes`, and why the waiting job
// fits nowhere in `oq explain slurm/<id>`; --format json parses.
TEST_P(SlurmE2ETest, OqShowsSlurmJobsAndPodsInOneQueue) {
  AddPool(2);
  admin_token_file_ = dir_ + "/admin-token";
  std::ofstream(admin_token_file_) << "slurm-e2e-admin\n";
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t a = Submit({}, "120"), b = Submit({}, "120");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    return ShowJob(a)["JobState"] == "RUNNING" && ShowJob(b)["JobState"] == "RUNNING";
  }));
  const uint32_t waiting = Submit({}, "60");
  PodOptions web;
  web.cpu = "1";
  web.qos = "batch";
  CreatePod("web", web);
  const std::string server = scheduler_->GrpcAddress();
  ASSERT_FALSE(server.empty());
  auto oq = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {OQ_BIN, "--server", server};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = RunCommand(argv, absl::Seconds(30));
    std::cout << "$ oq " << absl::StrJoin(args, " ") << "\n" << r.output << std::flush;
    return r;
  };
  auto line_with = [](const std::string& out, const std::string& what) {
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (absl::StrContains(line, what)) return std::string(line);
    }
    return std::string();
  };
  const std::string wid = absl::StrCat("slurm/", waiting);
  CommandResult queue;
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    queue = oq({"queue"});
    return absl::StrContains(line_with(queue.output, absl::StrCat("slurm/", a, " ")), "RUNNING") &&
           absl::StrContains(line_with(queue.output, absl::StrCat("slurm/", b, " ")), "RUNNING") &&
           absl::StrContains(line_with(queue.output, wid + " "), "PENDING") &&
           absl::StrContains(line_with(queue.output, ns_ + "/web "), "PENDING");
  })) << queue.output;
  const std::string running_a = line_with(queue.output, absl::StrCat("slurm/", a, " "));
  EXPECT_THAT(running_a, ::testing::StartsWith("slurm "));
  EXPECT_THAT(running_a, ::testing::ContainsRegex(ns_ + "-[12]"));
  EXPECT_THAT(line_with(queue.output, ns_ + "/web "), ::testing::StartsWith("kubernetes "));

  json q = json::parse(oq({"queue", "--world", "slurm", "--format", "json"}).output, nullptr, false);
  ASSERT_TRUE(q.is_object());
  int slurm_jobs = 0;
  for (const auto& w : q["workloads"]) {
    EXPECT_EQ(w["world"], "slurm");
    const std::string id = w["id"];
    if (id != absl::StrCat("slurm/", a) && id != absl::StrCat("slurm/", b) && id != wid) continue;
    ++slurm_jobs;
    EXPECT_EQ(w["user"], Slurm().user);
    EXPECT_EQ(w["partition"], "pool");
    EXPECT_EQ(w["state"], id == wid ? "PENDING" : "RUNNING") << w.dump();
  }
  EXPECT_EQ(slurm_jobs, 3);

  // The lent nodes: owner slurm, the Slurm node beside them, the job running there.
  CommandResult nodes = oq({"nodes"});
  for (int i = 1; i <= 2; ++i) {
    const std::string line = line_with(nodes.output, K8sNode(i) + " ");
    EXPECT_THAT(line, ::testing::HasSubstr("slurm")) << nodes.output;
    EXPECT_THAT(line, ::testing::HasSubstr(Slurm().nodes[i - 1])) << line;
    EXPECT_THAT(line, ::testing::HasSubstr("lent to Slurm: job ")) << line;
    EXPECT_THAT(line, ::testing::HasSubstr("8/8")) << line;
  }
  // Why the waiting job runs nowhere: each node is full.
  CommandResult explain = oq({"explain", wid});
  EXPECT_EQ(explain.exit_code, 0);
  EXPECT_THAT(explain.output, ::testing::HasSubstr(wid + " (slurm): PENDING"));
  for (int i = 1; i <= 2; ++i) {
    EXPECT_THAT(line_with(explain.output, "  " + K8sNode(i) + " "),
                ::testing::HasSubstr("insufficient cpu: needs 8, 0 free of 8"))
        << explain.output;
  }
  CommandResult prio = oq({"priority"});
  EXPECT_THAT(prio.output, ::testing::HasSubstr(wid));
  EXPECT_THAT(prio.output, ::testing::HasSubstr(ns_ + "/web"));
  // Issue 29: the PARTITION column (like sprio's): the pool partition's PriorityTier (1) over the
  // largest tier of the shared partitions (the reclaim partition's 10 does not count), times
  // queue.weights.partition (1000 by default); the pod counts as in the lowest shared tier.
  json pj = json::parse(oq({"priority", "--format", "json"}).output, nullptr, false);
  ASSERT_TRUE(pj.is_object()) << prio.output;
  std::map<std::string, double> partition_factor;
  for (const auto& w : pj["workloads"]) partition_factor[w.value("id", "")] = w.value("partition", -1.0);
  EXPECT_DOUBLE_EQ(partition_factor[wid], 1000.0) << pj.dump();
  EXPECT_DOUBLE_EQ(partition_factor[ns_ + "/web"], 1000.0) << pj.dump();

  // oq hold on a Slurm job: an admin hold (priority 0, the reason in the AdminComment, no onequeue
  // tag); the queue says Held. oq release: the hold goes and onequeue takes the job back: held
  // again with its own reason while it waits for a node, or started by onequeue once one frees.
  CommandResult hold = oq({"hold", wid, "--reason", "license server down", "--token-file", admin_token_file_});
  ASSERT_EQ(hold.exit_code, 0) << hold.output;
  auto comment = [&] { return AdminCommentOf(waiting); };
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    return ShowJob(waiting)["Priority"] == "0" &&
           comment() == "held by an administrator (oq hold): license server down";
  })) << comment();
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    return absl::StrContains(line_with(oq({"queue"}).output, wid + " "), "(Held)");
  }));
  CommandResult release = oq({"release", wid, "--token-file", admin_token_file_});
  ASSERT_EQ(release.exit_code, 0) << release.output;
  EXPECT_TRUE(Eventually(kSlurmTimeout, [&] {
    const std::string line = line_with(oq({"queue"}).output, wid + " ");
    return !line.empty() && !absl::StrContains(line, "(Held)") && absl::StartsWith(comment(), "onequeue");
  })) << comment();

  // Issue 13's fault suite: no secret this daemon holds (the Slurm JWT, the admin token, the
  // cluster's bearer tokens) in its log, its metrics, the events of the cluster or any pod's or
  // node's annotations, after it lent, held, released and reported through all of them.
  auto read_all = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  std::vector<std::string> secrets = {std::string(absl::StripAsciiWhitespace(read_all(Slurm().token_file))),
                                      "slurm-e2e-admin"};
  for (absl::string_view line :
       absl::StrSplit(read_all(K8sClusterEnvironment::Info().dir + "/pki/tokens.csv"), '\n', absl::SkipEmpty())) {
    secrets.emplace_back(line.substr(0, line.find(',')));
  }
  const std::string metrics_address = scheduler_->MetricsAddress();
  ASSERT_FALSE(metrics_address.empty());
  CommandResult metrics =
      RunCommand({"/usr/bin/curl", "-s", "--max-time", "10", "http://" + metrics_address + "/metrics"});
  ASSERT_THAT(metrics.output, ::testing::HasSubstr("onequeue_cycles_total"));
  auto objects = testing::Kubectl(K8sClusterEnvironment::Info(),
                                  {"get", "events,pods,nodes", "--all-namespaces", "-o", "json"});
  ASSERT_TRUE(objects.ok()) << objects.status();
  const std::vector<std::pair<std::string, std::string>> places = {
      {"the daemon's log", scheduler_->Log()}, {"its /metrics", metrics.output}, {"events, pods, nodes", *objects}};
  for (const auto& secret : secrets) {
    ASSERT_GE(secret.size(), 15u);
    for (const auto& [where, text] : places) EXPECT_FALSE(absl::StrContains(text, secret)) << where << " holds a secret";
  }
}

// Issue 24 H2 (and issue 23): the lent node runs an interactive allocation (salloc), which Slurm
// will not requeue; an interactive pod needs that node. With slurm.cancelUnrequeueable (the
// default) the allocation is cancelled, never requeued, the pod is bound there, and nothing of the
// step is left: the node is Kubernetes', fenced for Kubernetes and not for the reservation.
TEST_P(SlurmE2ETest, H2_AnAllocationSlurmWillNotRequeueIsCancelledAndThePodBound) {
  AddPool(2);
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t job = Allocate("alloc");
  ASSERT_NE(job, 0u) << "the allocation was never granted on a lent node";
  EXPECT_EQ(ShowJob(job)["BatchFlag"], "0");
  const int lent = ShowJob(job)["NodeList"] == Slurm().nodes[0] ? 1 : 2;
  ASSERT_NO_FATAL_FAILURE(FillTheOtherNode(lent));
  CreateJupyter();
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("jupyter") == K8sNode(lent); }))
      << "jupyter on '" << PodNode("jupyter") << "'; allocation " << ShowJob(job)["JobState"];
  std::cout << "[ measure ] allocation " << job << " ended " << ShowJob(job)["JobState"] << "\n";
  EXPECT_NE(ShowJob(job)["JobState"], "RUNNING");
  EXPECT_EQ(ShowJob(job)["Restarts"], "0");
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] {
    return NodeLabel(K8sNode(lent), "onequeue.io/owner") == "kubernetes";
  }));
  ExpectNothingLeftOfTheStep(2);
  // Fenced for Kubernetes, which owns it now: drained (or a placeholder) only for that reason.
  EXPECT_EQ(SlurmFence(lent), "onequeue:kubernetes");
  EXPECT_EQ(CountSubstr(scheduler_->Log(), absl::StrCat("Slurm job ", job, " failed")), 0) << "a cancel was retried";
}

// Issue 24 H2, the other policy (slurm.cancelUnrequeueable: false): the preemption is given up,
// the reservation released, the node goes back to Slurm with no fence left (never drained for
// nothing), the allocation keeps running, and the pod's report says why.
TEST_P(SlurmE2ETest, H2_WithoutCancelThePreemptionIsGivenUpAndTheNodeGoesBackToSlurm) {
  if (GetParam() == "placeholder") {
    // The placeholder fence is Slurm's partition preemption (PreemptMode=REQUEUE), and Slurm kills
    // a job it cannot requeue ("preempted JobId had to be killed", slurm_job_preempt): whether the
    // allocation survives depends on the give-up cancelling the placeholder before Slurm starts it.
    GTEST_SKIP() << "drain only: with placeholder Slurm itself may kill the allocation when the fence starts";
  }
  AddPool(2);
  cancel_unrequeueable_ = false;
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t job = Allocate("alloc");
  ASSERT_NE(job, 0u) << "the allocation was never granted on a lent node";
  const int lent = ShowJob(job)["NodeList"] == Slurm().nodes[0] ? 1 : 2;
  ASSERT_NO_FATAL_FAILURE(FillTheOtherNode(lent));
  CreateJupyter();
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return absl::StrContains(DescribePod("jupyter"), "will not requeue"); }))
      << DescribePod("jupyter");
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] { return SlurmFence(lent).empty() && !SlurmDrained(lent); }))
      << "Slurm node " << Slurm().nodes[lent - 1] << " left fenced: " << SlurmFence(lent);
  EXPECT_EQ(NodeLabel(K8sNode(lent), "onequeue.io/owner"), "slurm");
  EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");
  EXPECT_EQ(ShowJob(job)["Restarts"], "0");
  EXPECT_EQ(PodNode("jupyter"), "");
  ExpectNothingLeftOfTheStep(2);
}

// Issue 24 H1: a daemon (re)started while a Slurm job runs on a lent node and before its first
// Slurm poll succeeds (slurmrestd down). While Slurm is unknown, it binds nothing beside the job,
// though an interactive pod waits that only the lent node can take; once slurmrestd answers, the
// normal reclaim: the job requeued once, the pod bound there, nothing of the step left.
TEST_P(SlurmE2ETest, H1_ADaemonStartedBeforeSlurmAnswersBindsNothingBesideASlurmJob) {
  if (GetParam() == "placeholder") {
    // What it checks comes before any mechanism acts (the placeholder's reclaim after an outage:
    // SlurmDownMidReclaimTheStepFinishesWhenItIsBack/placeholder).
    GTEST_SKIP() << "drain only: Slurm unknown is decided before any lending mechanism acts";
  }
  AddPool(2);
  StartScheduler(/*lend_after=*/2);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(2); }));
  const uint32_t job = Submit({}, "120");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }));
  const int lent = ShowJob(job)["NodeList"] == Slurm().nodes[0] ? 1 : 2;
  ASSERT_NO_FATAL_FAILURE(FillTheOtherNode(lent));
  scheduler_->Stop();
  ASSERT_TRUE(testing::StopDaemon(Slurm(), "slurmrestd").ok());
  restd_stopped_ = true;
  CreateJupyter();
  first_poll_wait_ = 5;  // the daemon's default is 30 s; the wait's length is not what is checked
  StartScheduler(/*lend_after=*/2);
  // It waits 5 s for a first poll, then runs its cycles with Slurm unknown; one of them reports
  // jupyter waiting (the first daemon was gone before jupyter existed).
  ASSERT_TRUE(Eventually(absl::Seconds(60), [&] {
    return absl::StrContains(scheduler_->Log(), "no successful poll after 5 s");
  })) << scheduler_->Log();
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    return !EventsWithReason(client_.get(), ns_, "jupyter", "FailedScheduling").empty();
  })) << DescribePod("jupyter");
  EXPECT_EQ(PodNode("jupyter"), "") << "bound beside Slurm job " << job << " before Slurm answered";
  EXPECT_EQ(NodeLabel(K8sNode(lent), "onequeue.io/owner"), "slurm");
  EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");
  EXPECT_EQ(ShowJob(job)["Restarts"], "0");
  ASSERT_TRUE(testing::StartDaemon(Slurm(), "slurmrestd").ok());
  restd_stopped_ = false;
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("jupyter") == K8sNode(lent); }))
      << "jupyter on '" << PodNode("jupyter") << "'";
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] { return ShowJob(job)["Restarts"] == "1"; }))
      << "restarts " << ShowJob(job)["Restarts"];
  EXPECT_TRUE(Eventually(absl::Seconds(30), [&] {
    return NodeLabel(K8sNode(lent), "onequeue.io/owner") == "kubernetes";
  }));
  ExpectNothingLeftOfTheStep(2);
}

// Issue 24 H3: a lent node idle for returnAfterSeconds is being returned to Kubernetes; the daemon
// is stopped (SIGSTOP, failpoint return-before-fence=stop) after it decided so on its last poll
// and before its fence, and Slurm starts a new submission on the node meanwhile. Continued, the
// daemon's live check sees the job: the node is not returned while it runs there.
TEST_P(SlurmE2ETest, H3_AJobSlurmStartsWhileTheNodeIsReturnedIsNotSharedWithPods) {
  AddPool(1);
  return_after_ = 2;
  StartScheduler(/*lend_after=*/1, "batch", {"ONEQUEUE_FAILPOINTS=return-before-fence=stop"});
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PoolFenced(1); }));
  const uint32_t first = Submit({}, "1");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(first)["JobState"] == "COMPLETED"; }))
      << ShowJob(first)["JobState"];
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] {
    return absl::StrContains(scheduler_->Log(), "failpoint return-before-fence: stopping");
  })) << "the idle lent node was never returned";
  const uint32_t job = Submit({}, "120");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }))
      << "Slurm did not start job " << job << " on the idle lent node: " << ShowJob(job)["Reason"];
  ASSERT_EQ(ShowJob(job)["NodeList"], Slurm().nodes[0]);
  ASSERT_EQ(kill(scheduler_->pid(), SIGCONT), 0);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    return absl::StrContains(scheduler_->Log(), "not given to Kubernetes, Slurm still runs something there");
  })) << scheduler_->Log();
  if (GetParam() == "drain") {
    // The drain is lifted again: the node stays Slurm's and its job runs on.
    EXPECT_EQ(NodeLabel(K8sNode(1), "onequeue.io/owner"), "slurm");
    EXPECT_TRUE(Eventually(absl::Seconds(30), [&] { return SlurmFence(1).empty() && !SlurmDrained(1); }))
        << SlurmFence(1);
    EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");
    EXPECT_EQ(ShowJob(job)["Restarts"], "0");
    EXPECT_TRUE(EventsWithReason(client_.get(), "default", K8sNode(1), "Returned").empty());
  } else {
    // The placeholder is the fence: on 22.05 and 24.11 Slurm preempted (requeued) the job at once;
    // on 26.05 it ran on to its end in the one run seen. Either way it is not lost, and while it
    // runs there the node is not Kubernetes'.
    EXPECT_TRUE(Eventually(kSlurmTimeout, [&] {
      auto j = ShowJob(job);
      return j["Restarts"] == "1" || j["JobState"] == "RUNNING";
    })) << ShowJob(job)["JobState"] << " restarts " << ShowJob(job)["Restarts"];
    if (ShowJob(job)["JobState"] == "RUNNING") EXPECT_EQ(NodeLabel(K8sNode(1), "onequeue.io/owner"), "slurm");
  }
}

// Issue 25 step 3: on a node of a shared partition (4 GPUs) a pod asking 1 GPU binds beside a
// running 2-GPU Slurm job, mirrored in Slurm by a placeholder of its size that squeue shows; Slurm's
// own accounting then keeps a 2-GPU job off the node (2 + 1 + 2 > 4) until the placeholder goes,
// and the pod's end cancels it. Shared nodes are never fenced whole, so the lend mechanism does not
// matter: run with one of them.
TEST_P(SlurmE2ETest, SharedNodeAPodBindsBesideASlurmJobMirroredByAPlaceholder) {
  if (GetParam() != "placeholder") GTEST_SKIP() << "a shared node is never fenced: one mechanism is enough";
  ASSERT_NO_FATAL_FAILURE(AddSharedGpuNode());
  const std::string node = K8sNode(1);
  // A 2-GPU Slurm job runs there before the daemon starts.
  auto sbatch = [&](const std::string& gpus) { return SubmitGpus(gpus); };
  const uint32_t job = sbatch("2");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }));
  ASSERT_NO_FATAL_FAILURE(StartScheduler(/*lend_after=*/1));
  // The pod asks 1 CPU, 100Mi and 1 GPU.
  json pod = MakePod("gpu-pod", ns_, PodOptions{});
  pod["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1";
  pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  ASSERT_TRUE(Create(client_.get(), k8s::kPods, ns_, pod).ok());
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("gpu-pod") == node; })) << "on " << PodNode("gpu-pod");
  auto p = GetPod(client_.get(), ns_, "gpu-pod");
  ASSERT_TRUE(p.ok());
  const std::string name = absl::StrCat("onequeue-pod-", p->metadata.uid);
  // squeue shows the placeholder, running on the node, the pod's size.
  auto q = SlurmCommand(Slurm(), {"squeue", "-h", "-n", name, "-o", "%i %T %N %C %P"});
  ASSERT_TRUE(q.ok());
  std::vector<std::string> cols = absl::StrSplit(absl::StripAsciiWhitespace(*q), ' ', absl::SkipEmpty());
  ASSERT_EQ(cols.size(), 5u) << *q;
  EXPECT_EQ(cols[1], "RUNNING") << *q;
  EXPECT_EQ(cols[2], Slurm().nodes[0]) << *q;
  EXPECT_EQ(cols[3], "1") << *q;
  EXPECT_EQ(cols[4], "pool") << *q;
  uint32_t placeholder = 0;
  ASSERT_TRUE(absl::SimpleAtoi(cols[0], &placeholder));
  std::map<std::string, std::string> ph = ShowJob(placeholder);
  EXPECT_TRUE(absl::StrContains(ph["TresPerNode"], "gpu:1")) << ph["TresPerNode"];
  EXPECT_TRUE(absl::StrContains(ph["Comment"], "onequeue:")) << ph["Comment"];
  EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");  // the job beside is untouched
  EXPECT_EQ(SlurmFence(1), "");                      // the node is not fenced whole
  // Slurm's own accounting, without onequeue (stopped: it would hold a waiting job of the pool):
  // a 2-GPU job does not start while the placeholder holds the pod's GPU (2 + 1 + 2 > 4) ...
  scheduler_.reset();
  const uint32_t second = sbatch("2");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(second)["Reason"] == "Resources"; }))
      << ShowJob(second)["JobState"] << " " << ShowJob(second)["Reason"];
  EXPECT_EQ(ShowJob(second)["JobState"], "PENDING");
  // ... and starts once it is gone (what onequeue does at the pod's end, by hand here).
  ASSERT_TRUE(SlurmCommand(Slurm(), {"scancel", absl::StrCat(placeholder)}).ok());
  EXPECT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(second)["JobState"] == "RUNNING"; }));
  // The pod's end cancels its placeholder: a new daemon (rebuilt from the listings) sees the pod
  // gone. First give it a placeholder again: a successor re-makes a bound pod's lost one.
  ASSERT_TRUE(SlurmCommand(Slurm(), {"scancel", absl::StrCat(second)}).ok());
  ASSERT_NO_FATAL_FAILURE(StartScheduler(/*lend_after=*/1));
  auto running_placeholder = [&] {
    auto r = SlurmCommand(Slurm(), {"squeue", "-h", "-n", name, "-t", "R", "-o", "%i"});
    return r.ok() ? std::string(absl::StripAsciiWhitespace(*r)) : std::string();
  };
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return !running_placeholder().empty(); }));
  ASSERT_TRUE(testing::Kubectl(K8sClusterEnvironment::Info(),
                               {"delete", "pod", "gpu-pod", "-n", ns_, "--grace-period=0", "--force"})
                  .ok());
  EXPECT_TRUE(Eventually(kSlurmTimeout, [&] {
    auto r = SlurmCommand(Slurm(), {"squeue", "-h", "-n", name, "-o", "%i"});
    return r.ok() && absl::StripAsciiWhitespace(*r).empty();
  }));
}

// Issue 25 step 4, the issue's scene on one 4-GPU shared node: a 2-GPU Slurm job and a 2-GPU pod
// run side by side (squeue shows the pod's placeholder at the pod's size); a 3-GPU Slurm job is not
// started there (onequeue holds it: it does not fit); a 3-GPU pod waits with its reason; then an
// interactive 2-GPU pod requeues only the Slurm job (its own placeholder, pending and pinned, is
// the claim that Slurm gives the freed GPUs to), is bound after the job's exit, and the other pod
// and its placeholder are untouched; the requeued job is not started back into the room. Shared
// nodes are never fenced whole: one mechanism is enough.
TEST_P(SlurmE2ETest, SharedNodeAnInteractivePodRequeuesOnlyTheSlurmJobBesideAnotherPod) {
  if (GetParam() != "placeholder") GTEST_SKIP() << "a shared node is never fenced: one mechanism is enough";
  const absl::Time began = absl::Now();
  ASSERT_NO_FATAL_FAILURE(AddSharedGpuNode());
  const std::string node = K8sNode(1);
  const uint32_t job = SubmitGpus("2");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }));
  ASSERT_NO_FATAL_FAILURE(StartScheduler(/*lend_after=*/1));
  // A 2-GPU pod beside the 2-GPU job (interactive: not preemptible, so it is never the victim).
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("notebook", "2", "interactive"));
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("notebook") == node; })) << PodNode("notebook");
  const std::vector<std::string> notebook = PodPlaceholder("notebook");
  ASSERT_EQ(notebook.size(), 5u);
  EXPECT_EQ(notebook[1], "RUNNING");
  EXPECT_EQ(notebook[2], Slurm().nodes[0]);
  uint32_t notebook_placeholder = 0;
  ASSERT_TRUE(absl::SimpleAtoi(notebook[0], &notebook_placeholder));
  EXPECT_TRUE(absl::StrContains(ShowJob(notebook_placeholder)["TresPerNode"], "gpu:2"))
      << ShowJob(notebook_placeholder)["TresPerNode"];
  EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");
  const std::string notebook_uid = GetPod(client_.get(), ns_, "notebook")->metadata.uid;
  // What a site sees of the split (docs/sharing.md section 5): the node's onequeue.io/split
  // annotation (kubectl describe node) and `oq nodes` name the pod (its placeholder counts as the
  // pod) and the Slurm job, 2 GPUs each, the job's GPU indices as Slurm gave them, none free.
  std::string split;
  EXPECT_TRUE(Eventually(kBindTimeout, [&] {
    auto n = GetNode(client_.get(), node);
    if (!n.ok() || !n->metadata.annotations.count("onequeue.io/split")) return false;
    split = n->metadata.annotations.at("onequeue.io/split");
    return absl::StrContains(split, absl::StrCat("(", ns_, "/notebook)")) &&
           absl::StrContains(split, absl::StrCat("(slurm/", job, ")"));
  })) << split;
  std::cout << "[scene] onequeue.io/split: " << split << "\n";
  const std::vector<std::string> sides = absl::StrSplit(split, "; ");
  ASSERT_EQ(sides.size(), 3u) << split;
  EXPECT_TRUE(absl::StartsWith(sides[0], "pods ")) << split;
  EXPECT_TRUE(absl::StrContains(sides[0], absl::StrCat("nvidia.com/gpu=2 (", ns_, "/notebook)"))) << split;
  EXPECT_TRUE(absl::StartsWith(sides[1], "slurm ")) << split;
  EXPECT_TRUE(absl::StrContains(sides[1], "nvidia.com/gpu=2 [gpu ")) << split;  // [gpu i,j]
  EXPECT_TRUE(absl::StrContains(sides[1], absl::StrCat("(slurm/", job, ")"))) << split;
  EXPECT_TRUE(absl::StartsWith(sides[2], "free ") && absl::StrContains(sides[2], "nvidia.com/gpu=0")) << split;
  CommandResult nodes = RunCommand({OQ_BIN, "--server", scheduler_->GrpcAddress(), "nodes"}, absl::Seconds(30));
  std::cout << "$ oq nodes\n" << nodes.output << std::flush;
  EXPECT_TRUE(absl::StrContains(nodes.output, absl::StrCat("  ", node, ": ", split))) << nodes.output;
  // A 3-GPU Slurm job does not fit (2 + 2 + 3 > 4): onequeue holds it, Slurm does not start it.
  const uint32_t three = SubmitGpus("3");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return absl::StrContains(AdminCommentOf(three), "onequeue"); }))
      << AdminCommentOf(three);
  EXPECT_EQ(ShowJob(three)["JobState"], "PENDING");
  // A 3-GPU pod that cannot preempt waits with its reason.
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("big", "3", "batch"));
  std::string big_reason;
  EXPECT_TRUE(Eventually(kBindTimeout, [&] {
    for (const auto& e : EventsWithReason(client_.get(), ns_, "big", "FailedScheduling")) big_reason = e.note;
    return !big_reason.empty();
  }));
  std::cout << "[scene] 3-GPU pod waits: " << big_reason << "\n";
  EXPECT_EQ(PodNode("big"), "");
  EXPECT_EQ(ShowJob(three)["JobState"], "PENDING");
  ASSERT_TRUE(SlurmCommand(Slurm(), {"scancel", absl::StrCat(three)}).ok());
  ASSERT_TRUE(testing::Kubectl(K8sClusterEnvironment::Info(),
                               {"delete", "pod", "big", "-n", ns_, "--grace-period=0", "--force"})
                  .ok());
  // The interactive 2-GPU pod: only the Slurm job is requeued.
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("jupyter", "2", "interactive"));
  absl::Time left = absl::InfinitePast(), bound = absl::InfinitePast();
  ASSERT_TRUE(Eventually(
      kBindTimeout,
      [&] {
        if (left == absl::InfinitePast() && ShowJob(job)["JobState"] != "RUNNING") left = absl::Now();
        if (PodNode("jupyter") != node) return false;
        bound = absl::Now();
        return true;
      },
      absl::Milliseconds(50)))
      << "jupyter on " << PodNode("jupyter") << "; job " << ShowJob(job)["JobState"];
  std::cout << "[measured] Slurm job " << job << " seen leaving -> jupyter seen bound: "
            << absl::FormatDuration(bound - left) << "\n";
  const std::vector<std::string> claim = PodPlaceholder("jupyter");
  ASSERT_EQ(claim.size(), 5u);
  EXPECT_EQ(claim[1], "RUNNING");
  uint32_t claim_id = 0;
  ASSERT_TRUE(absl::SimpleAtoi(claim[0], &claim_id));
  std::map<std::string, std::string> c = ShowJob(claim_id);
  EXPECT_TRUE(absl::StrContains(c["TresPerNode"], "gpu:2")) << c["TresPerNode"];
  // The placeholder the pod is bound with is its claim, made before the requeue: it names the victim.
  auto comment = SlurmCommand(Slurm(), {"squeue", "-h", "-j", claim[0], "-o", "%k"});
  ASSERT_TRUE(comment.ok());
  EXPECT_TRUE(absl::StrContains(*comment, absl::StrCat("preempting slurm/", job))) << *comment;
  EXPECT_EQ(ShowJob(job)["Restarts"], "1");
  EXPECT_EQ(ShowJob(job)["JobState"], "PENDING");  // not started back into the room
  // The other pod and its placeholder untouched; the node never fenced or drained.
  auto nb = GetPod(client_.get(), ns_, "notebook");
  ASSERT_TRUE(nb.ok());
  EXPECT_EQ(nb->metadata.uid, notebook_uid);
  EXPECT_EQ(nb->node_name, node);
  EXPECT_TRUE(nb->metadata.deletion_timestamp.empty());
  EXPECT_EQ(ShowJob(notebook_placeholder)["JobState"], "RUNNING");
  EXPECT_EQ(SlurmFence(1), "");
  EXPECT_FALSE(SlurmDrained(1));
  std::cout << "[measured] scene took " << absl::FormatDuration(absl::Now() - began) << "\n";
}

// The GPU indices Slurm gave the job on its node (`scontrol show job -d`: "GRES=gpu:2(IDX:2-3)"),
// ranges expanded; empty when Slurm gives none.
std::set<int> SlurmGpuIndices(uint32_t id) {
  std::set<int> out;
  auto text = SlurmCommand(SlurmClusterEnvironment::Info(), {"scontrol", "show", "job", "-d", absl::StrCat(id)});
  if (!text.ok()) return out;
  const size_t at = text->find("IDX:");
  if (at == std::string::npos) return out;
  const std::string list = text->substr(at + 4, text->find(')', at) - at - 4);
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    std::vector<std::string> range = absl::StrSplit(part, '-');
    int lo = 0, hi = 0;
    if (!absl::SimpleAtoi(range[0], &lo)) continue;
    hi = lo;
    if (range.size() == 2 && !absl::SimpleAtoi(range[1], &hi)) continue;
    for (int i = lo; i <= hi; ++i) out.insert(i);
  }
  return out;
}

// Issue 25 DRA, docs/sharing.md section 5 (placeholder mechanism only): the shared partition says
// gpus: dra; a DRA driver's ResourceSlice publishes the node's 4 GPUs as devices gpu-0..gpu-3 of
// index 0..3 and a pod claims 2 of them by a ResourceClaim. A 2-GPU Slurm job runs there; the pod
// is bound, its claim allocated (pinned to the node, reserved for the pod) to exactly the devices
// of the GPU indices Slurm gave the pod's placeholder, none of the job's.
TEST_P(SlurmE2ETest, SharedNodeADraPodsClaimGetsItsPlaceholdersGpuIndicesNotTheJobs) {
  if (GetParam() != "placeholder") GTEST_SKIP() << "a shared node is never fenced: one mechanism is enough";
  pool_sharing_ = "shared, gpus: dra, gpuDeviceClasses: [gpu.example.com]";
  ASSERT_NO_FATAL_FAILURE(AddSharedGpuNode());
  const std::string node = K8sNode(1);
  json devices = json::array();
  for (int i = 0; i < 4; ++i)
    devices.push_back({{"name", absl::StrCat("gpu-", i)}, {"attributes", {{"index", {{"int", i}}}}}});
  const std::string slice = node + "-gpus";
  absl::Status created = Create(client_.get(), k8s::kResourceSlices, "",
                     json{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"}, {"metadata", {{"name", slice}}},
                          {"spec", {{"driver", "gpu.example.com"}, {"nodeName", node},
                                    {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
                                    {"devices", devices}}}});
  ASSERT_TRUE(created.ok()) << created;
  created = Create(client_.get(), k8s::kResourceClaims, ns_,
                json{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
                     {"metadata", {{"name", "train-gpus"}, {"namespace", ns_}}},
                     {"spec", {{"devices", {{"requests", json::array({{{"name", "gpus"},
                        {"exactly", {{"deviceClassName", "gpu.example.com"}, {"count", 2}}}}})}}}}}});
  ASSERT_TRUE(created.ok()) << created;
  const uint32_t job = SubmitGpus("2");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }));
  ASSERT_NO_FATAL_FAILURE(StartScheduler(/*lend_after=*/1));
  PodOptions o;
  o.qos = "interactive";
  json pod = MakePod("train", ns_, o);
  pod["spec"]["resourceClaims"] = json::array({{{"name", "gpus"}, {"resourceClaimName", "train-gpus"}}});
  ASSERT_TRUE(Create(client_.get(), k8s::kPods, ns_, pod).ok());
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("train") == node; })) << PodNode("train");
  const std::vector<std::string> placeholder = PodPlaceholder("train");
  ASSERT_EQ(placeholder.size(), 5u);
  EXPECT_EQ(placeholder[1], "RUNNING");
  uint32_t placeholder_id = 0;
  ASSERT_TRUE(absl::SimpleAtoi(placeholder[0], &placeholder_id));
  EXPECT_TRUE(absl::StrContains(ShowJob(placeholder_id)["TresPerNode"], "gpu:2")) << ShowJob(placeholder_id)["TresPerNode"];
  const std::set<int> ours = SlurmGpuIndices(placeholder_id), theirs = SlurmGpuIndices(job);
  ASSERT_EQ(ours.size(), 2u);
  ASSERT_EQ(theirs.size(), 2u);
  auto claim_json = k8s::GetClaim(*client_, ns_, "train-gpus");
  ASSERT_TRUE(claim_json.ok()) << claim_json.status();
  auto claim = k8s::ResourceClaim::FromJson(*claim_json);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_TRUE(claim->allocated);
  EXPECT_EQ(claim->allocation_node, node);
  ASSERT_EQ(claim->reserved_for.size(), 1u);
  EXPECT_EQ(claim->reserved_for[0].uid, GetPod(client_.get(), ns_, "train")->metadata.uid);
  std::set<int> devices_of_claim;
  for (const k8s::DeviceAllocationResult& r : claim->results) {
    EXPECT_EQ(r.driver, "gpu.example.com");
    EXPECT_EQ(r.pool, node);
    int index = -1;
    EXPECT_TRUE(absl::SimpleAtoi(absl::StripPrefix(r.device, "gpu-"), &index)) << r.device;
    devices_of_claim.insert(index);
  }
  std::cout << "[scene] job " << job << " on gpu " << absl::StrJoin(theirs, ",") << "; placeholder " << placeholder_id
            << " on gpu " << absl::StrJoin(ours, ",") << "; claim devices " << absl::StrJoin(devices_of_claim, ",")
            << "\n";
  EXPECT_EQ(devices_of_claim, ours);
  for (int i : theirs) EXPECT_FALSE(devices_of_claim.count(i)) << i;
  EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");
  (void)testing::Kubectl(K8sClusterEnvironment::Info(), {"delete", "resourceslice", slice, "--wait=false"});
}

// Issue 25 step 4 with a Slurm job as the preemptor, on the same 4-GPU shared node: a 2-GPU Slurm
// job (interactive: not preemptible) and a low-priority 2-GPU pod run side by side; a 2-GPU
// interactive Slurm job claims the pod's room (held, its AdminComment naming the node and the pod),
// the pod alone is evicted, its placeholder cancelled, and the job is started and runs on that
// node; the other job is untouched, the node never fenced.
TEST_P(SlurmE2ETest, SharedNodeASlurmJobEvictsOnlyThePodBesideAnotherJob) {
  if (GetParam() != "placeholder") GTEST_SKIP() << "a shared node is never fenced: one mechanism is enough";
  const absl::Time began = absl::Now();
  ASSERT_NO_FATAL_FAILURE(AddSharedGpuNode());
  const std::string node = K8sNode(1);
  const uint32_t job = SubmitGpus("2");
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }));
  // Slurm jobs are interactive here (slurm.defaultQos): the running one is never a victim.
  ASSERT_NO_FATAL_FAILURE(StartScheduler(/*lend_after=*/1, "interactive"));
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("low", "2", "batch"));
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("low") == node; })) << PodNode("low");
  const std::vector<std::string> low = PodPlaceholder("low");
  ASSERT_EQ(low.size(), 5u);
  uint32_t low_placeholder = 0;
  ASSERT_TRUE(absl::SimpleAtoi(low[0], &low_placeholder));
  const std::string low_uid = GetPod(client_.get(), ns_, "low")->metadata.uid;
  const uint32_t preemptor = SubmitGpus("2");
  std::string claim;
  ASSERT_TRUE(Eventually(
      kSlurmTimeout,
      [&] {
        const std::string c = AdminCommentOf(preemptor);
        if (absl::StrContains(c, "Preempting on shared node")) claim = c;
        return ShowJob(preemptor)["JobState"] == "RUNNING";
      },
      absl::Milliseconds(100)))
      << ShowJob(preemptor)["JobState"] << " " << ShowJob(preemptor)["Reason"] << " " << AdminCommentOf(preemptor);
  // The claim is in the AdminComment only until the start (then "started by onequeue"): shown if
  // a poll caught it, not asserted.
  std::cout << "[scene] the claim, as Slurm showed it: " << (claim.empty() ? "(not caught)" : claim) << "\n";
  if (!claim.empty()) EXPECT_EQ(claim, absl::StrCat("onequeue: Preempting on shared node ", node, ": ", ns_, "/low"));
  EXPECT_EQ(ShowJob(preemptor)["NodeList"], Slurm().nodes[0]);
  // Only the pod left: evicted (gone, or another pod by now), its placeholder cancelled.
  auto gone = GetPod(client_.get(), ns_, "low");
  EXPECT_TRUE(!gone.ok() || gone->metadata.uid != low_uid || !gone->metadata.deletion_timestamp.empty());
  EXPECT_NE(ShowJob(low_placeholder)["JobState"], "RUNNING");
  std::string preempted;
  for (const auto& e : EventsWithReason(client_.get(), ns_, "low", "Preempted")) preempted = e.note;
  EXPECT_TRUE(absl::StrContains(preempted, absl::StrCat("slurm/", preemptor))) << preempted;
  // The other job untouched; the node never fenced or drained.
  EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");
  EXPECT_EQ(ShowJob(job)["Restarts"], "0");
  EXPECT_EQ(SlurmFence(1), "");
  EXPECT_FALSE(SlurmDrained(1));
  std::cout << "[measured] scene took " << absl::FormatDuration(absl::Now() - began) << "\n";
}

// Issue 25 step 4, a Slurm job of two nodes as the preemptor (docs/sharing.md, "A job of several
// nodes"), on two 4-GPU shared nodes: on each a 2-GPU Slurm job (interactive: never a victim) and
// a low-priority 2-GPU pod; a 2-node job asking 2 GPUs per node claims on both nodes with one hold,
// both pods are evicted, and the job runs on the two nodes; the jobs beside it untouched.
TEST_P(SlurmE2ETest, SharedNodesASlurmJobOfTwoNodesEvictsOnlyThePodOnEachNode) {
  if (GetParam() != "placeholder") GTEST_SKIP() << "a shared node is never fenced: one mechanism is enough";
  const absl::Time began = absl::Now();
  uint32_t a = 0, b = 0;
  std::string uid1, uid2;
  ASSERT_NO_FATAL_FAILURE(TwoSharedNodesWithLowPods(&a, &b, &uid1, &uid2));
  auto out = SlurmCommand(Slurm(), {"sbatch", "--parsable", "-p", "pool", "-N2", "-c1", "--mem=100", "-t", "10",
                                    "--gres=gpu:2", "-o", "/dev/null", "--wrap=sleep 600"});
  uint32_t gang = 0;
  ASSERT_TRUE(out.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*out), &gang)) << out.status();
  std::string claim;
  ASSERT_TRUE(Eventually(
      kSlurmTimeout,
      [&] {
        const std::string c = AdminCommentOf(gang);
        if (absl::StrContains(c, "Preempting on shared nodes")) claim = c;
        return ShowJob(gang)["JobState"] == "RUNNING";
      },
      absl::Milliseconds(100)))
      << ShowJob(gang)["JobState"] << " " << ShowJob(gang)["Reason"] << " " << AdminCommentOf(gang);
  std::cout << "[scene] the claim, as Slurm showed it: " << (claim.empty() ? "(not caught)" : claim) << "\n";
  if (!claim.empty()) {
    EXPECT_TRUE(absl::StrContains(claim, absl::StrCat(K8sNode(1), ",", K8sNode(2), ": "))) << claim;
    EXPECT_TRUE(absl::StrContains(claim, absl::StrCat(ns_, "/low1"))) << claim;
    EXPECT_TRUE(absl::StrContains(claim, absl::StrCat(ns_, "/low2"))) << claim;
  }
  EXPECT_TRUE(absl::StartsWith(ShowJob(gang)["NumNodes"], "2")) << ShowJob(gang)["NumNodes"];
  // Both pods left: evicted (gone, or another pod by now), each Preempted by the gang.
  for (const auto& [pod, uid] : {std::pair{std::string("low1"), uid1}, {std::string("low2"), uid2}}) {
    auto gone = GetPod(client_.get(), ns_, pod);
    EXPECT_TRUE(!gone.ok() || gone->metadata.uid != uid || !gone->metadata.deletion_timestamp.empty()) << pod;
    std::string preempted;
    for (const auto& e : EventsWithReason(client_.get(), ns_, pod, "Preempted")) preempted = e.note;
    EXPECT_TRUE(absl::StrContains(preempted, absl::StrCat("slurm/", gang))) << pod << ": " << preempted;
  }
  ExpectTheJobsBesideUntouched(a, b);
  std::cout << "[measured] scene took " << absl::FormatDuration(absl::Now() - began) << "\n";
}

// Issue 25 step 4, a gang of pods as the preemptor (docs/sharing.md, "A gang of pods"), on two
// 4-GPU shared nodes: on each a 2-GPU Slurm job (interactive: never a victim) and a low-priority
// 2-GPU pod; a gang of two interactive 2-GPU pods claims on both nodes, each member's placeholder
// naming only the pod on its own node; both low pods are evicted, the members bound one per node,
// the jobs untouched, neither node fenced.
TEST_P(SlurmE2ETest, SharedNodesAGangOfPodsEvictsOnlyThePodOnEachMembersNode) {
  if (GetParam() != "placeholder") GTEST_SKIP() << "a shared node is never fenced: one mechanism is enough";
  const absl::Time began = absl::Now();
  uint32_t a = 0, b = 0;
  std::string uid1, uid2;
  ASSERT_NO_FATAL_FAILURE(TwoSharedNodesWithLowPods(&a, &b, &uid1, &uid2));
  const std::map<std::string, std::string> low_on = {{PodNode("low1"), "low1"}, {PodNode("low2"), "low2"}};
  for (const char* member : {"train-0", "train-1"}) {
    ASSERT_NO_FATAL_FAILURE(CreateGpuPod(member, "2", "interactive", "", "train", "2"));
  }
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return !PodNode("train-0").empty() && !PodNode("train-1").empty(); }))
      << PodNode("train-0") << " " << PodNode("train-1");
  EXPECT_NE(PodNode("train-0"), PodNode("train-1"));
  // Each member's placeholder is its claim: it names the low pod of its own node only.
  for (const char* member : {"train-0", "train-1"}) {
    const std::vector<std::string> claim = PodPlaceholder(member);
    ASSERT_EQ(claim.size(), 5u) << member;
    EXPECT_EQ(claim[1], "RUNNING") << member;
    auto comment = SlurmCommand(Slurm(), {"squeue", "-h", "-j", claim[0], "-o", "%k"});
    ASSERT_TRUE(comment.ok());
    const std::string victim = low_on.at(PodNode(member));
    EXPECT_TRUE(absl::StrContains(*comment, absl::StrCat("preempting ", ns_, "/", victim))) << member << ": " << *comment;
    EXPECT_EQ(absl::StrContains(*comment, "low1") + absl::StrContains(*comment, "low2"), 1) << *comment;
  }
  for (const auto& [pod, uid] : {std::pair{std::string("low1"), uid1}, {std::string("low2"), uid2}}) {
    auto gone = GetPod(client_.get(), ns_, pod);
    EXPECT_TRUE(!gone.ok() || gone->metadata.uid != uid || !gone->metadata.deletion_timestamp.empty()) << pod;
  }
  ExpectTheJobsBesideUntouched(a, b);
  std::cout << "[measured] scene took " << absl::FormatDuration(absl::Now() - began) << "\n";
}

// Issue 25 tenancy (docs/sharing.md section 6), on the 4-GPU node of a partition marked
// `sharing: shared-same-tenant`, tenant a = this test's namespace + account acct-a, tenant b =
// namespace <ns>-b + account acct-b: beside a running 2-GPU Slurm job of account acct-a, a 1-GPU
// pod of tenant a binds, its placeholder in squeue under acct-a; a 1-GPU pod of tenant b, which
// would fit by size (2 + 1 + 1 <= 4), waits with its reason naming the job. The local Slurm keeps
// no accounting (accounting_storage/none): any account string is taken. One mechanism is enough.
TEST_P(SlurmE2ETest, SharedSameTenantNodeTakesAPodOfTheJobsTenantAndKeepsAnotherTenantsPodWaiting) {
  if (GetParam() != "placeholder") GTEST_SKIP() << "a shared node is never fenced: one mechanism is enough";
  const absl::Time began = absl::Now();
  const std::string ns_b = AddNamespace("b");
  ASSERT_NO_FATAL_FAILURE(AddSharedGpuNode());
  pool_sharing_ = "shared-same-tenant";
  extra_yaml_ = absl::StrCat("sharing:\n  tenants:\n  - {name: a, namespaces: [", ns_,
                             "], accounts: [acct-a]}\n  - {name: b, namespaces: [", ns_b, "], accounts: [acct-b]}\n");
  const std::string node = K8sNode(1);
  const uint32_t job = SubmitGpus("2", {"-A", "acct-a"});
  ASSERT_TRUE(Eventually(kSlurmTimeout, [&] { return ShowJob(job)["JobState"] == "RUNNING"; }));
  EXPECT_EQ(ShowJob(job)["Account"], "acct-a");
  ASSERT_NO_FATAL_FAILURE(StartScheduler(/*lend_after=*/1));
  // Tenant a's pod binds beside the job, mirrored under acct-a.
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("mine", "1", "batch"));
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return PodNode("mine") == node; })) << PodNode("mine");
  const std::vector<std::string> mine = PodPlaceholder("mine", " %a");
  ASSERT_EQ(mine.size(), 6u);
  EXPECT_EQ(mine[1], "RUNNING");
  EXPECT_EQ(mine[2], Slurm().nodes[0]);
  EXPECT_EQ(mine[5], "acct-a");
  // Tenant b's pod would fit by size but waits, with the reason kubectl describe shows.
  ASSERT_NO_FATAL_FAILURE(CreateGpuPod("theirs", "1", "batch", ns_b));
  std::string reason;
  EXPECT_TRUE(Eventually(kBindTimeout, [&] {
    for (const auto& e : EventsWithReason(client_.get(), ns_b, "theirs", "FailedScheduling")) reason = e.note;
    return !reason.empty();
  }));
  std::cout << "[scene] tenant b's pod waits: " << reason << "\n";
  EXPECT_TRUE(absl::StrContains(reason, absl::StrCat("Slurm job ", job))) << reason;
  EXPECT_TRUE(absl::StrContains(reason, "tenant a")) << reason;
  absl::SleepFor(absl::Seconds(2));  // a few more cycles: still not bound
  auto theirs = GetPod(client_.get(), ns_b, "theirs");
  ASSERT_TRUE(theirs.ok());
  EXPECT_EQ(theirs->node_name, "");
  EXPECT_EQ(ShowJob(job)["JobState"], "RUNNING");
  EXPECT_EQ(ShowJob(job)["Restarts"], "0");
  EXPECT_EQ(SlurmFence(1), "");
  std::cout << "[measured] scene took " << absl::FormatDuration(absl::Now() - began) << "\n";
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, SlurmE2ETest, ::testing::Values("drain", "placeholder"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace onequeue::e2e

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new onequeue::testing::K8sClusterEnvironment(
      {.controller_manager = true, .kwok = true, .kube_scheduler = true}));
  // Five nodes: n1..n4 carry the feature rack1 and n5 rack2 (racks of 4, test/cluster/slurm-up.sh),
  // which the issue 29 case needs.
  ::testing::AddGlobalTestEnvironment(new onequeue::testing::SlurmClusterEnvironment({.nodes = 5, .gpus = 4}));
  return RUN_ALL_TESTS();
}

// End to end, the oq CLI against the daemon: `oq queue`, `oq queue --start`, `oq nodes`,
// `oq priority` and `oq explain` over onequeue.v1.QueueService, with the real daemon scheduling a
// kwok pool. Each command's output is asserted as a user reads it, and --format json parses with
// the values the table shows. The outputs are printed, so the log shows what users see.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "e2e/e2e_support.h"

namespace onequeue::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class OqE2E : public E2ETest {
 protected:
  CommandResult Oq(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {OQ_BIN, "--server", server_};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = RunCommand(argv, absl::Seconds(30));
    std::cout << "$ oq " << absl::StrJoin(args, " ") << "\n" << r.output << std::flush;
    return r;
  }

  json OqJson(std::vector<std::string> args) {
    args.push_back("--format");
    args.push_back("json");
    CommandResult r = Oq(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  }

  // The output line that mentions `what` (empty if none).
  static std::string LineWith(const std::string& output, const std::string& what) {
    for (absl::string_view line : absl::StrSplit(output, '\n')) {
      if (absl::StrContains(line, what)) return std::string(line);
    }
    return "";
  }

  std::string server_;
};

// The value of the first series of `name` whose labels include every `labels` entry, from a
// Prometheus text exposition; nullopt when there is none.
std::optional<double> Metric(const std::string& text, const std::string& name,
                             const std::vector<std::string>& labels = {}) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, name)) continue;
    const absl::string_view rest = line.substr(name.size());
    if (rest.empty() || (rest[0] != ' ' && rest[0] != '{')) continue;  // a longer name
    bool all = true;
    for (const auto& l : labels) all = all && absl::StrContains(rest, l);
    if (!all) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) return v;
  }
  return std::nullopt;
}

// /metrics during a scenario: four pods bound, one preemption of one victim for an interactive
// pod, one pod left waiting. The counters and gauges say exactly that.
TEST_F(OqE2E, MetricsCountWhatHappened) {
  AddPool(2, "4");
  for (const std::string name : {"s1", "s2", "s3", "s4"}) {
    PodOptions o;
    o.cpu = "2";
    o.qos = "scavenger";
    CreatePod(name, o);
  }
  StartScheduler();
  const std::string metrics_address = scheduler_->MetricsAddress();
  ASSERT_FALSE(metrics_address.empty()) << scheduler_->Log();
  auto scrape = [&] {
    CommandResult r = RunCommand({"/usr/bin/curl", "-s", "--max-time", "10", "http://" + metrics_address + "/metrics"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  };
  for (const std::string name : {"s1", "s2", "s3", "s4"}) {
    ASSERT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool(name); })) << name;
  }
  std::string text = scrape();
  EXPECT_EQ(Metric(text, "scheduler_schedule_attempts_total", {"result=\"scheduled\""}), 4) << text;
  EXPECT_EQ(Metric(text, "onequeue_leader"), 1);
  EXPECT_EQ(Metric(text, "scheduler_framework_extension_point_duration_seconds_count",
                   {"extension_point=\"Bind\"", "status=\"Success\""}),
            4);

  PodOptions interactive;
  interactive.cpu = "2";
  interactive.qos = "interactive";
  CreatePod("jupyter", interactive);
  ASSERT_TRUE(Eventually(kBindTimeout, [&] { return IsBoundToPool("jupyter"); })) << scheduler_->Log();
  PodOptions late;
  late.cpu = "4";
  late.qos = "batch";
  CreatePod("late", late);
  ASSERT_TRUE(WaitForFailedSchedulingAny("late", {"Priority", "Resources"}));

  // The gauges follow the cycle after the report; counters only grow.
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    text = scrape();
    return Metric(text, "scheduler_pending_pods", {"queue=\"unschedulable\""}) == 1 &&
           Metric(text, "onequeue_nodes", {"owner=\"reserved\""}) == 0;
  })) << text;
  std::cout << text.substr(text.find("# HELP scheduler_pending_pods")) << "\n";
  EXPECT_EQ(Metric(text, "scheduler_schedule_attempts_total", {"result=\"scheduled\""}), 5);
  EXPECT_EQ(Metric(text, "scheduler_schedule_attempts_total", {"result=\"error\""}), 0);
  EXPECT_GE(Metric(text, "scheduler_schedule_attempts_total", {"result=\"unschedulable\""}).value_or(0), 1);
  EXPECT_EQ(Metric(text, "scheduler_preemption_attempts_total"), 1);
  EXPECT_EQ(Metric(text, "scheduler_preemption_victims_count"), 1);
  EXPECT_EQ(Metric(text, "scheduler_preemption_victims_sum"), 1) << "one 2-CPU victim frees room for 2 CPUs";
  EXPECT_EQ(Metric(text, "scheduler_pending_pods", {"queue=\"active\""}), 0);
  EXPECT_EQ(Metric(text, "scheduler_pending_pods", {"queue=\"gated\""}), 0);
  EXPECT_EQ(Metric(text, "onequeue_pending_workloads", {"world=\"kubernetes\""}), 1);
  EXPECT_EQ(Metric(text, "onequeue_pending_workloads", {"world=\"slurm\""}), 0);
  double pool_nodes = 0;
  for (const char* owner : {"kubernetes", "slurm", "reserved", "free"}) {
    pool_nodes += Metric(text, "onequeue_nodes", {absl::StrCat("owner=\"", owner, "\"")}).value_or(0);
  }
  EXPECT_EQ(pool_nodes, 2);
  EXPECT_GT(Metric(text, "onequeue_cycles_total").value_or(0), 2);
  for (const char* phase : {"snapshot", "plan", "act", "total"}) {
    EXPECT_EQ(Metric(text, "onequeue_cycle_duration_seconds_count", {absl::StrCat("phase=\"", phase, "\"")}),
              Metric(text, "onequeue_cycles_total"))
        << phase;
  }
  EXPECT_EQ(Metric(text, "onequeue_slurm_polls_total", {"result=\"success\""}), 0) << "no Slurm here";
}

// Issue 12, cycles proportional to what changed: pods created one by one after the first full
// cycle are planned by arrival cycles (onequeue_arrival_cycles_total moves; the informers' records
// say only they changed) and bound as by a full cycle.
TEST_F(OqE2E, PodsArrivingOneByOneAreBoundByArrivalCycles) {
  AddPool(2, "4");
  PodOptions o;
  o.cpu = "1";
  o.qos = "scavenger";
  CreatePod("first", o);
  StartScheduler();
  const std::string metrics_address = scheduler_->MetricsAddress();
  ASSERT_FALSE(metrics_address.empty()) << scheduler_->Log();
  ASSERT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool("first"); }));
  for (const std::string name : {"a1", "a2", "a3", "a4", "a5"}) {
    CreatePod(name, o);
    ASSERT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool(name); })) << name;
  }
  CommandResult r = RunCommand({"/usr/bin/curl", "-s", "--max-time", "10", "http://" + metrics_address + "/metrics"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_GE(Metric(r.output, "onequeue_arrival_cycles_total").value_or(0), 1) << scheduler_->Log();
  EXPECT_EQ(Metric(r.output, "scheduler_schedule_attempts_total", {"result=\"scheduled\""}), 6);
}

TEST_F(OqE2E, QueueNodesPriorityAndExplainShowWhatTheDaemonDecided) {
  AddPool(2, "4");
  // Four 2-CPU pods fill the two 4-CPU nodes; two more wait: a 4-CPU batch pod and a 1-CPU normal one.
  for (const std::string name : {"a", "b", "c", "d"}) {
    PodOptions o;
    o.cpu = "2";
    o.qos = "normal";
    CreatePod(name, o);
  }
  StartScheduler();
  server_ = scheduler_->GrpcAddress();
  ASSERT_FALSE(server_.empty()) << scheduler_->Log();
  for (const std::string name : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool(name); })) << name;
  }
  PodOptions big;
  big.cpu = "4";
  big.qos = "batch";
  CreatePod("big", big);
  PodOptions small;
  small.cpu = "1";
  small.qos = "normal";
  CreatePod("small", small);
  ASSERT_TRUE(WaitForFailedSchedulingAny("big", {"Priority", "Resources"}));
  ASSERT_TRUE(WaitForFailedSchedulingAny("small", {"Resources", "Priority"}));

  // oq queue: the running pods with their nodes, the waiting ones with position and reason.
  CommandResult queue;
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    queue = Oq({"queue", "-n", ns_});
    return queue.exit_code == 0 && absl::StrContains(LineWith(queue.output, ns_ + "/a "), "RUNNING") &&
           absl::StrContains(LineWith(queue.output, ns_ + "/d "), "RUNNING") &&
           absl::StrContains(LineWith(queue.output, ns_ + "/big "), "PENDING");
  })) << queue.output;
  EXPECT_THAT(queue.output, HasSubstr("WORLD"));
  EXPECT_THAT(queue.output, HasSubstr("NODELIST(REASON)"));
  for (const std::string name : {"a", "b", "c", "d"}) {
    const std::string line = LineWith(queue.output, ns_ + "/" + name + " ");
    EXPECT_THAT(line, HasSubstr("kubernetes")) << line;
    EXPECT_THAT(line, HasSubstr("normal")) << line;
    EXPECT_THAT(line, HasSubstr(Pod(name).node_name)) << line;
  }
  // Both wait for a running pod's 1 h time limit; the normal pod is ahead of the batch one.
  const std::string small_line = LineWith(queue.output, ns_ + "/small ");
  const std::string big_line = LineWith(queue.output, ns_ + "/big ");
  EXPECT_THAT(small_line, HasSubstr("PENDING"));
  EXPECT_THAT(big_line, HasSubstr("batch"));
  EXPECT_THAT(big_line, ::testing::ContainsRegex("\\((Priority|Resources)\\)"));

  // --start: pending only, each with an estimated start.
  CommandResult start = Oq({"queue", "--start", "-n", ns_});
  ASSERT_EQ(start.exit_code, 0) << start.output;
  EXPECT_THAT(start.output, HasSubstr("START_TIME"));
  EXPECT_THAT(start.output, Not(HasSubstr(ns_ + "/a ")));
  EXPECT_THAT(LineWith(start.output, ns_ + "/big "), ::testing::ContainsRegex("20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T"));

  // --format json parses, and says the same.
  json q = OqJson({"queue", "-n", ns_});
  ASSERT_TRUE(q.is_object()) << "not JSON";
  ASSERT_EQ(q["workloads"].size(), 6u) << q.dump(2);
  int running = 0, pending = 0;
  int small_pos = 0, big_pos = 0;
  for (const auto& w : q["workloads"]) {
    EXPECT_EQ(w["namespace"], ns_);
    EXPECT_EQ(w["world"], "kubernetes");
    if (w["state"] == "RUNNING") {
      ++running;
      EXPECT_EQ(w["nodes"].size(), 1u);
      EXPECT_EQ(w["cpus"], "2");
    }
    if (w["state"] == "PENDING") {
      ++pending;
      EXPECT_GT(std::stoll(w["estimated_start"].get<std::string>()), 0) << w.dump();
      if (w["name"] == "small") small_pos = w["position"];
      if (w["name"] == "big") big_pos = w["position"];
    }
  }
  EXPECT_EQ(running, 4);
  EXPECT_EQ(pending, 2);
  EXPECT_GT(small_pos, 0);
  EXPECT_LT(small_pos, big_pos) << "normal QOS is ahead of batch";
  // -u matches a pod's namespace (its account by default); another user sees none of them.
  EXPECT_EQ(OqJson({"queue", "-u", ns_})["workloads"].size(), 6u);
  EXPECT_EQ(OqJson({"queue", "-u", "nobody-here"})["workloads"].size(), 0u);

  // oq nodes: both pool nodes full (4/4 CPUs), Kubernetes', with the pods running there.
  CommandResult nodes = Oq({"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.output;
  for (int i = 1; i <= 2; ++i) {
    const std::string line = LineWith(nodes.output, absl::StrCat(ns_, "-", i, " "));
    EXPECT_THAT(line, HasSubstr("4/4")) << line;
    EXPECT_THAT(line, HasSubstr("up")) << line;
    EXPECT_THAT(line, HasSubstr("not a Slurm node")) << line;
  }
  json n = OqJson({"nodes"});
  ASSERT_TRUE(n.is_object());
  int pool_nodes = 0;
  for (const auto& node : n["nodes"]) {
    if (!absl::StartsWith(node["name"].get<std::string>(), ns_ + "-")) continue;
    ++pool_nodes;
    EXPECT_EQ(node["workloads"].size(), 2u) << node.dump();
    for (const auto& r : node["resources"]) {
      if (r["name"] == "cpu") {
        EXPECT_EQ(r["allocatable"], "4000");
        EXPECT_EQ(r["used"], "4000");
      }
    }
  }
  EXPECT_EQ(pool_nodes, 2);

  // oq priority: the weights and each pending workload's factors, summing to its total.
  CommandResult prio = Oq({"priority", "-n", ns_});
  ASSERT_EQ(prio.exit_code, 0) << prio.output;
  EXPECT_THAT(prio.output, HasSubstr("Weights"));
  EXPECT_THAT(prio.output, HasSubstr(ns_ + "/small"));
  EXPECT_THAT(prio.output, HasSubstr(ns_ + "/big"));
  json p = OqJson({"priority", "-n", ns_});
  ASSERT_TRUE(p.is_object());
  ASSERT_EQ(p["workloads"].size(), 2u) << p.dump(2);
  for (const auto& w : p["workloads"]) {
    const double sum = w["age"].get<double>() + w["fair_share"].get<double>() + w["job_size"].get<double>() +
                       w["partition"].get<double>() + w["qos_factor"].get<double>();
    EXPECT_NEAR(sum, w["total"].get<double>(), 1e-6 * std::max(1.0, sum)) << w.dump();
  }
  EXPECT_GT(p["weights"]["qos"].get<double>(), 0);

  // oq explain: per node, the capacity that fails; the workload ahead of it.
  CommandResult explain = Oq({"explain", ns_ + "/big"});
  ASSERT_EQ(explain.exit_code, 0) << explain.output;
  EXPECT_THAT(explain.output, HasSubstr(ns_ + "/big (kubernetes): PENDING"));
  EXPECT_THAT(explain.output, HasSubstr("Nodes:"));
  EXPECT_THAT(LineWith(explain.output, "  " + ns_ + "-1 "), HasSubstr("insufficient cpu: needs 4, 0 free of 4"));
  EXPECT_THAT(LineWith(explain.output, "  " + ns_ + "-2 "), HasSubstr("insufficient cpu: needs 4, 0 free of 4"));
  EXPECT_THAT(explain.output, HasSubstr("Ahead of it:"));
  EXPECT_THAT(explain.output, HasSubstr(ns_ + "/small"));
  json e = OqJson({"explain", ns_ + "/big"});
  ASSERT_TRUE(e.is_object());
  EXPECT_EQ(e["workload"]["state"], "PENDING");
  int pool_verdicts = 0;
  for (const auto& v : e["nodes"]) {
    if (!absl::StartsWith(v["node"].get<std::string>(), ns_ + "-")) continue;
    ++pool_verdicts;
    EXPECT_FALSE(v["fits"].get<bool>());
  }
  EXPECT_EQ(pool_verdicts, 2);
  bool small_ahead = false;
  for (const auto& a : e["ahead"]) small_ahead = small_ahead || a["id"] == ns_ + "/small";
  EXPECT_TRUE(small_ahead) << e.dump(2);
  // A running pod: where and since when. An unknown one: exit 1 and what ids look like.
  CommandResult ran = Oq({"explain", ns_ + "/a"});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_THAT(ran.output, HasSubstr("RUNNING"));
  EXPECT_THAT(ran.output, HasSubstr(Pod("a").node_name));
  // This daemon has no adminTokenFile: admin calls are refused whatever the token.
  const std::string any_token = dir_ + "/any-token";
  std::ofstream(any_token) << "whatever\n";
  CommandResult refused = Oq({"hold", ns_ + "/big", "--token-file", any_token});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_THAT(refused.output, HasSubstr("admin calls are disabled"));
  CommandResult unknown = Oq({"explain", ns_ + "/nope"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.output, HasSubstr("neither pending nor running"));
}

// Admin calls: refused without the token or with a wrong one, then drain (cordon: a new pod
// waits, explain says why), hold (the pod waits Held even on an open node), resume and release
// (it binds). Read calls need no token.
TEST_F(OqE2E, AdminCallsNeedTheTokenThenDrainHoldResumeAndReleaseWork) {
  AddPool(1, "4");
  const std::string token_file = dir_ + "/admin-token", wrong_file = dir_ + "/wrong-token";
  std::ofstream(token_file) << "s3cret-admin-token\n";
  std::ofstream(wrong_file) << "guess\n";
  scheduler_ = std::make_unique<SchedulerProcess>(dir_, "onequeue-scheduler");
  std::string yaml = SchedulerConfigYaml(testing::K8sClusterEnvironment::Info(), "onequeue.io/pool=" + ns_);
  const std::string server_line = "metricsAddress: \"127.0.0.1:0\"}";
  ASSERT_NE(yaml.find(server_line), std::string::npos);
  yaml.replace(yaml.find(server_line), server_line.size(),
               absl::StrCat("metricsAddress: \"127.0.0.1:0\", adminTokenFile: \"", token_file,
                            "\", allowInsecureAdminToken: true}"));  // loopback, a local test
  ASSERT_TRUE(scheduler_->Start(yaml).ok());
  server_ = scheduler_->GrpcAddress();
  ASSERT_FALSE(server_.empty());
  const std::string node = ns_ + "-1";

  CommandResult no_token = Oq({"drain", node});
  EXPECT_EQ(no_token.exit_code, 2);
  EXPECT_THAT(no_token.output, HasSubstr("--token-file"));
  CommandResult wrong = Oq({"drain", node, "--token-file", wrong_file});
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_THAT(wrong.output, HasSubstr("not accepted"));
  auto unschedulable = [&] {
    auto n = GetNode(client_.get(), node);
    return n.ok() && n->unschedulable;
  };
  EXPECT_FALSE(unschedulable());

  CommandResult drain = Oq({"drain", node, "--reason", "disk swap", "--token-file", token_file});
  ASSERT_EQ(drain.exit_code, 0) << drain.output;
  EXPECT_THAT(drain.output, HasSubstr("drained"));
  ASSERT_TRUE(Eventually(absl::Seconds(10), unschedulable));
  PodOptions o;
  o.cpu = "1";
  CreatePod("p1", o);
  CommandResult explain;
  ASSERT_TRUE(Eventually(kBindTimeout, [&] {
    explain = Oq({"explain", ns_ + "/p1"});
    return absl::StrContains(LineWith(explain.output, "  " + node + " "), "not schedulable");
  })) << explain.output;

  CommandResult hold = Oq({"hold", ns_ + "/p1", "--reason", "maintenance", "--token-file", token_file});
  ASSERT_EQ(hold.exit_code, 0) << hold.output;
  ASSERT_TRUE(Eventually(absl::Seconds(10), [&] {
    auto p = GetPod(client_.get(), ns_, "p1");
    if (!p.ok()) return false;
    // In the pod's status (issue 24), which the pod's owner cannot write.
    for (const auto& c : p->conditions) {
      if (c.type == "onequeue.io/Held" && c.status == "True" && c.message == "maintenance") return true;
    }
    return false;
  }));
  CommandResult resume = Oq({"resume", node, "--token-file", token_file});
  ASSERT_EQ(resume.exit_code, 0) << resume.output;
  ASSERT_TRUE(Eventually(absl::Seconds(10), [&] { return !unschedulable(); }));
  CommandResult queue;
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    queue = Oq({"queue", "-n", ns_});  // a read call: no token
    return absl::StrContains(LineWith(queue.output, ns_ + "/p1 "), "(Held)");
  })) << queue.output;
  EXPECT_FALSE(IsBoundToPool("p1")) << "a held pod was bound";

  CommandResult release = Oq({"release", ns_ + "/p1", "--token-file", token_file});
  ASSERT_EQ(release.exit_code, 0) << release.output;
  EXPECT_TRUE(Eventually(kBindTimeout, [&] { return IsBoundToPool("p1"); })) << scheduler_->Log();
}

// Issue 13 defect 8: health tells the truth. With healthCycleAgeSeconds 10, a daemon that
// schedules answers /healthz 200 and `oq health` SERVING well past the bound; a daemon whose loop
// hangs in its first cycle (failpoint cycle-start=hang) turns /healthz to 503 and Health to
// NOT_SERVING with the reason, and schedules nothing.
TEST_F(OqE2E, HealthzAndHealthTurnNotServingWhenTheLoopIsStuck) {
  AddPool(1, "4");
  PodOptions o;
  o.cpu = "1";
  CreatePod("h1", o);
  std::string config = SchedulerConfigYaml(testing::K8sClusterEnvironment::Info(), "onequeue.io/pool=" + ns_);
  const std::string server_line = R"(server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0"})";
  ASSERT_TRUE(absl::StrContains(config, server_line));
  config = absl::StrReplaceAll(config, {{server_line, R"(server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0", healthCycleAgeSeconds: 10})"}});
  // code and body of GET /healthz
  auto healthz = [](const std::string& metrics_address) {
    CommandResult r = RunCommand({"/usr/bin/curl", "-s", "--max-time", "5", "-w", "\n%{http_code}",
                                  "http://" + metrics_address + "/healthz"});
    const size_t nl = r.output.rfind('\n');
    return std::make_pair(nl == std::string::npos ? "" : r.output.substr(nl + 1), r.output.substr(0, nl));
  };

  {
    SchedulerProcess healthy(dir_, "healthy-scheduler");
    ASSERT_TRUE(healthy.Start(config).ok());
    const std::string metrics = healthy.MetricsAddress();
    server_ = healthy.GrpcAddress();
    ASSERT_FALSE(metrics.empty() || server_.empty()) << healthy.Log();
    ASSERT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool("h1"); }));
    absl::SleepFor(absl::Seconds(12));  // past the bound: the idle loop's passes keep it healthy
    auto [code, body] = healthz(metrics);
    EXPECT_EQ(code, "200") << body;
    EXPECT_THAT(body, HasSubstr("ok: last scheduling loop pass"));
    CommandResult h = Oq({"health"});
    EXPECT_EQ(h.exit_code, 0);
    EXPECT_THAT(h.output, HasSubstr("SERVING"));
    EXPECT_EQ(healthy.Stop(), 0);
  }

  CreatePod("h2", o);
  SchedulerProcess stuck(dir_, "stuck-scheduler");
  ASSERT_TRUE(stuck.Start(config, {"ONEQUEUE_FAILPOINTS=cycle-start=hang"}).ok());
  const std::string metrics = stuck.MetricsAddress();
  server_ = stuck.GrpcAddress();
  ASSERT_FALSE(metrics.empty() || server_.empty()) << stuck.Log();
  std::pair<std::string, std::string> last;
  EXPECT_TRUE(Eventually(absl::Seconds(40), [&] {
    last = healthz(metrics);
    return last.first == "503";
  })) << last.first << " " << last.second << "\n" << stuck.Log();
  EXPECT_THAT(last.second, HasSubstr("not serving: the scheduling loop has not completed a pass for"));
  EXPECT_THAT(stuck.Log(), HasSubstr("failpoint cycle-start: hanging for ever"));
  CommandResult h = Oq({"health"});
  EXPECT_EQ(h.exit_code, 1);
  EXPECT_THAT(h.output, HasSubstr("NOT_SERVING"));
  EXPECT_FALSE(IsRunningOnPool("h2"));
  stuck.Crash();  // a hung loop does not stop on SIGTERM (it never returns to be joined)
}

// Issue 13 defect 8: a leader whose loop is stuck gives up its Lease: it stops renewing and exits
// once the loop's last pass is older than healthCycleAgeSeconds, and a standby that schedules
// takes over and starts the pod the stuck leader never would.
TEST_F(OqE2E, AStuckLeaderExitsAndTheStandbyTakesOver) {
  AddPool(1, "4");
  const std::string election =
      absl::StrCat("{enabled: true, namespace: onequeue-system, leaseName: ", ns_, ", leaseDurationSeconds: 6}");
  std::string config =
      SchedulerConfigYaml(testing::K8sClusterEnvironment::Info(), "onequeue.io/pool=" + ns_, election);
  const std::string server_line = R"(server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0"})";
  ASSERT_TRUE(absl::StrContains(config, server_line));
  config = absl::StrReplaceAll(config, {{server_line, R"(server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0", healthCycleAgeSeconds: 10})"}});

  SchedulerProcess stuck(dir_, "stuck-leader");
  ASSERT_TRUE(stuck.Start(config, {"ONEQUEUE_FAILPOINTS=cycle-start=hang"}).ok());
  ASSERT_TRUE(Eventually(absl::Seconds(60), [&] {
    return absl::StrContains(stuck.Log(), "failpoint cycle-start: hanging for ever");
  })) << stuck.Log();
  const absl::Time stuck_at = absl::Now();
  SchedulerProcess standby(dir_, "standby");
  ASSERT_TRUE(standby.Start(config).ok());
  PodOptions o;
  o.cpu = "1";
  CreatePod("after", o);

  EXPECT_TRUE(stuck.WaitForExit(absl::Seconds(40))) << stuck.Log();
  std::cout << "[ measure ] stuck leader exited " << absl::FormatDuration(absl::Now() - stuck_at)
            << " after its loop hung (bound 10 s)\n";
  EXPECT_THAT(stuck.Log(), HasSubstr("giving up the Lease (not renewing it) and exiting"));
  EXPECT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool("after"); })) << standby.Log();
  EXPECT_THAT(standby.Log(), HasSubstr("leader election: leading"));
}

// Issue 29: fair-share usage in TRES billing units (Slurm's TRESBillingWeights line), charged
// while pods run, saved by the daemon to a ConfigMap and read back by the next daemon: after a
// restart in the middle, `oq priority` shows every account's usage as it was (within one charging
// interval), the finished pod's account included, which a daemon starting from nothing would not
// know.
TEST_F(OqE2E, FairShareUsageSurvivesARestart) {
  AddPool(1, "4");
  const std::string map_name = "usage-" + ns_;
  const k8s::ResourceType configmaps{"/api/v1", "configmaps", true};
  const std::string map_path = k8s::ObjectPath(configmaps, "onequeue-system", map_name);
  (void)client_->Delete(map_path);  // a re-run against a kept cluster starts from nothing
  std::string config = SchedulerConfigYaml(testing::K8sClusterEnvironment::Info(), "onequeue.io/pool=" + ns_);
  ASSERT_TRUE(absl::StrContains(config, "  usageConfigMap: \"\"\n"));
  config = absl::StrReplaceAll(config, {{"  usageConfigMap: \"\"\n",
                                         absl::StrCat("  usageConfigMap: ", map_name, "\n  usageChargeSeconds: 1\n",
                                                      "  tresBillingWeights: \"CPU=1.0,Mem=1G\"\n")}});
  auto pod = [&](const std::string& name, const std::string& cpu, const std::string& account) {
    PodOptions o;
    o.cpu = cpu;
    o.extra_annotations = {{"onequeue.io/account", account}};
    CreatePod(name, o);
  };
  pod("a", "2", "team-a");
  pod("b", "1", "team-b");
  pod("done", "1", "team-done");
  // usage per account, and the cycle's time, from `oq priority --format json`
  auto usage = [&](int64_t* at = nullptr) {
    std::map<std::string, double> out;
    const json j = OqJson({"priority"});
    if (!j.is_object()) return out;
    if (at != nullptr) *at = std::stoll(j["cycle"].value("cycle_time", "0"));
    for (const auto& a : j.value("accounts", json::array())) out[a.value("account", "")] = a.value("usage", 0.0);
    return out;
  };
  std::map<std::string, double> seen;
  {
    SchedulerProcess first(dir_, "first-scheduler");
    ASSERT_TRUE(first.Start(config).ok());
    server_ = first.GrpcAddress();
    ASSERT_FALSE(server_.empty()) << first.Log();
    for (const std::string name : {"a", "b", "done"}) {
      ASSERT_TRUE(Eventually(kRunningTimeout, [&] { return IsRunningOnPool(name); })) << name << first.Log();
    }
    // Charged while running: every account has usage before anything ends.
    ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
      seen = usage();
      return seen["team-a"] > 0 && seen["team-b"] > 0 && seen["team-done"] > 0;
    })) << first.Log();
    ASSERT_TRUE(client_->Delete(k8s::ObjectPath(k8s::kPods, ns_, "done"), 0).ok());
    // The finished pod's account stops growing once the daemon saw it go.
    double last = -1;
    ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
      seen = usage();
      const bool gone = !GetPod(client_.get(), ns_, "done").ok() && seen["team-done"] == last;
      last = seen["team-done"];
      return gone;
    }));
    EXPECT_EQ(first.Stop(), 0);
  }
  // What the first daemon saved last.
  absl::StatusOr<json> saved_map = client_->Get(map_path);
  ASSERT_TRUE(saved_map.ok()) << saved_map.status();
  const json saved = json::parse((*saved_map)["data"].value("usage.json", "{}"));
  std::cout << "saved: " << saved.dump() << "\n";
  EXPECT_EQ(saved.value("tresBillingWeights", ""), "cpu=1,mem=1G");
  const int64_t saved_at = saved.value("savedAt", int64_t{0});
  ASSERT_GT(saved_at, 0);

  SchedulerProcess second(dir_, "second-scheduler");
  ASSERT_TRUE(second.Start(config).ok());
  server_ = second.GrpcAddress();
  ASSERT_FALSE(server_.empty()) << second.Log();
  int64_t now = 0;
  std::map<std::string, double> after;
  ASSERT_TRUE(Eventually(absl::Seconds(30), [&] {
    after = usage(&now);
    return after.count("team-a") && after.count("team-done");
  })) << second.Log();
  EXPECT_THAT(second.Log(), HasSubstr("usage: restored 3 accounts"));
  // Billing per second: CPUs + 100Mi x 1 per GB.
  const std::map<std::string, double> rate = {{"team-a", 2 + 100.0 / 1024}, {"team-b", 1 + 100.0 / 1024}};
  for (const std::string account : {"team-a", "team-b", "team-done"}) {
    SCOPED_TRACE(account);
    const double before = saved["accounts"][account].value("usage", 0.0);
    ASSERT_GT(before, 0);
    EXPECT_GE(after[account], before * 0.999) << "nothing lost (the half-life is 12 h)";
    const double r = rate.count(account) ? rate.at(account) : 0;
    // What ran since the save, up to the last charge (at most one charging interval, 1 s, and the
    // cycle's rounding to whole seconds before `now`).
    EXPECT_LE(after[account], before + r * static_cast<double>(now - saved_at) + 0.01);
    EXPECT_GE(after[account], before * 0.999 + r * static_cast<double>(now - saved_at - 2));
  }
  std::cout << "[ measure ] usage across the restart: team-a " << saved["accounts"]["team-a"].value("usage", 0.0)
            << " -> " << after["team-a"] << ", team-done " << saved["accounts"]["team-done"].value("usage", 0.0)
            << " -> " << after["team-done"] << " (" << now - saved_at << " s after the save)\n";
  Oq({"priority"});  // the table as users read it
  EXPECT_EQ(second.Stop(), 0);
  (void)client_->Delete(map_path);
}

TEST_F(OqE2E, WithoutADaemonOqSaysWhereItLooked) {
  server_ = "127.0.0.1:1";
  CommandResult r = Oq({"queue"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("127.0.0.1:1"));
}

}  // namespace
}  // namespace onequeue::e2e

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({.kwok = true})

// Issue 29: fair-share usage in TRES billing units, charged while work runs, saved and restored
// (src/scheduler/usage_accounting.h, tres_billing.h). Pure logic: in-memory snapshots, views and
// store (the live test on the apiserver is OqE2E.FairShareUsageSurvivesARestart).
#include "scheduler/usage_accounting.h"

#include <iostream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "queue/priority.h"
#include "scheduler/tres_billing.h"

namespace onequeue::scheduler {
namespace {

using ::testing::HasSubstr;

constexpr queue::Time kT0 = 1'800'000'000;
constexpr int kGpuSlot = 3;

// A snapshot whose running pods are (account, cpus, gpus, start).
struct Pod {
  std::string id, account;
  int64_t cpus = 0, gpus = 0;
  queue::Time start = kT0;
};
BuiltSnapshot Running(const std::vector<Pod>& pods) {
  BuiltSnapshot b;
  b.snapshot = std::make_shared<queue::Snapshot>();
  b.snapshot->resource_names.names.push_back("nvidia.com/gpu");  // slot 3
  for (const Pod& p : pods) {
    queue::RunningWorkload r;
    r.id = p.id;
    r.account = p.account;
    r.start_time = p.start;
    queue::Allocation a;
    a.used[queue::kCpu] = p.cpus * 1000;
    a.used[queue::kMemory] = int64_t{4} << 30;
    a.used[kGpuSlot] = p.gpus;
    r.allocations.push_back(a);
    b.snapshot->running.push_back(std::move(r));
  }
  return b;
}

UsageOptions Options(TresBillingWeights w = {}) {
  UsageOptions o;
  o.half_life = 3600;
  o.charge_interval = 60;
  o.weights = std::move(w);
  return o;
}

TresBillingWeights GpuWeighted() {
  absl::StatusOr<TresBillingWeights> w = ParseTresBillingWeights("CPU=1.0,Mem=0.25G,GRES/gpu=4.0");
  EXPECT_TRUE(w.ok()) << w.status();
  return *w;
}

queue::QueueConfig TwoAccounts() {
  queue::QueueConfig q;
  q.usage_half_life = 3600;
  q.accounts = {{"cpu-team", "", 1}, {"gpu-team", "", 1}, {"history", "", 1}};
  return q;
}

TEST(TresBillingTest, APodAndASlurmJobAreBilledTheWeightedSumOfWhatTheyHold) {
  const TresBillingWeights w = GpuWeighted();
  queue::Resources used;
  used[queue::kCpu] = 4000;
  used[queue::kMemory] = int64_t{8} << 30;  // 8 GB
  used[kGpuSlot] = 2;
  queue::ResourceNames names;
  names.names.push_back("nvidia.com/gpu");
  EXPECT_DOUBLE_EQ(PodBillingRate(used, names, w, {{"gpu", "nvidia.com/gpu"}}), 4 + 0.25 * 8 + 4 * 2);
  EXPECT_DOUBLE_EQ(PodBillingRate(used, names, TresBillingWeights{}, {}), 4);  // the default: CPUs
  slurm::SlurmJob job;
  job.cpus = 4;
  job.tres_allocated = {{"cpu", 4}, {"mem", 8192}, {"node", 1}, {"billing", 4}, {"gres/gpu", 2}};
  EXPECT_DOUBLE_EQ(JobBillingRate(job, w), 4 + 0.25 * 8 + 4 * 2);
  EXPECT_DOUBLE_EQ(JobBillingRate(job, TresBillingWeights{}), 4);
  job.tres_allocated.clear();  // no TRES from Slurm: what the job asked
  job.node_count = 1;
  job.memory_per_node_mb = 8192;
  job.gres_per_node = {{"gpu", 2}};
  EXPECT_DOUBLE_EQ(JobBillingRate(job, w), 4 + 0.25 * 8 + 4 * 2);
  EXPECT_EQ(FormatTresBillingWeights(w), "cpu=1,mem=0.25G,gres/gpu=4");
}

// The issue's test: with the same CPU usage, the account whose pods also hold GPUs sees its
// fair-share factor fall faster than the CPU-only account's.
TEST(UsageAccountingTest, AGpuHeavyAccountsFairShareFallsFasterThanACpuOnlyAccountsWithTheSameCpuUsage) {
  UsageAccounting usage(Options(GpuWeighted()));
  // A third account's earlier work: the two teams start from factors near 1.
  usage.Charge(Running({{"old/sim", "history", 64, 0, kT0 - 36000}}), nullptr, kT0 - 60);
  const BuiltSnapshot built = Running({{"cpu-team/train", "cpu-team", 8, 0, kT0 - 60},
                                       {"gpu-team/train", "gpu-team", 8, 4, kT0 - 60}});
  std::vector<double> cpu_factor, gpu_factor;
  for (queue::Time t = kT0; t <= kT0 + 1800; t += 60) {
    usage.Charge(built, nullptr, t);
    const auto f = queue::ComputeFairShare(TwoAccounts(), usage.usage(), t);
    cpu_factor.push_back(f.at("cpu-team"));
    gpu_factor.push_back(f.at("gpu-team"));
  }
  // Billing per second: cpu-team 8 + 0.25*4 = 9, gpu-team 9 + 4*4 = 25.
  const auto used = usage.UsageAt(kT0 + 1800);
  EXPECT_NEAR(used.at("gpu-team") / used.at("cpu-team"), 25.0 / 9.0, 1e-9);
  for (size_t i = 1; i < cpu_factor.size(); ++i) {
    EXPECT_LT(gpu_factor[i], cpu_factor[i]) << "at charge " << i;
    EXPECT_LT(gpu_factor[i], gpu_factor[i - 1]);
    EXPECT_LT(cpu_factor[i], cpu_factor[i - 1]);
    EXPECT_GT(gpu_factor[i - 1] - gpu_factor[i], cpu_factor[i - 1] - cpu_factor[i]) << "falls faster, at charge " << i;
  }
  EXPECT_GT(gpu_factor.front() - gpu_factor.back(), cpu_factor.front() - cpu_factor.back())
      << "the GPU account's factor falls further";
  // With the default weights (CPU only) the two accounts are charged alike.
  UsageAccounting cpu_only(Options());
  for (queue::Time t = kT0; t <= kT0 + 1800; t += 60) cpu_only.Charge(built, nullptr, t);
  std::cout << "[ measure ] fair-share factor after 30 min: gpu-team " << gpu_factor.back() << ", cpu-team "
            << cpu_factor.back() << " (from " << gpu_factor.front() << ", " << cpu_factor.front() << ")\n";
  const auto f = queue::ComputeFairShare(TwoAccounts(), cpu_only.usage(), kT0 + 1800);
  EXPECT_DOUBLE_EQ(f.at("cpu-team"), f.at("gpu-team"));
}

// Charged while running: every charge interval adds what ran since the last; when the pod stops,
// only the remainder, so the total is exactly rate x run time.
TEST(UsageAccountingTest, RunningWorkIsChargedEveryIntervalAndTheRemainderWhenItStops) {
  UsageOptions o = Options();
  o.half_life = 1'000'000'000;  // no decay to speak of: the sums are exact
  UsageAccounting usage(o);
  const BuiltSnapshot running = Running({{"ns/job", "ns", 2, 0, kT0}});
  usage.Charge(running, nullptr, kT0 + 10);  // first charge: from its start
  EXPECT_NEAR(usage.UsageAt(kT0 + 10).at("ns"), 2 * 10, 1e-6);
  usage.Charge(running, nullptr, kT0 + 40);  // before the interval: nothing more
  EXPECT_NEAR(usage.UsageAt(kT0 + 40).at("ns"), 2 * 10, 1e-6);
  usage.Charge(running, nullptr, kT0 + 70);  // the interval: up to now
  EXPECT_NEAR(usage.UsageAt(kT0 + 70).at("ns"), 2 * 70, 1e-6);
  usage.Charge(Running({}), nullptr, kT0 + 95);  // it stopped: the remainder only
  EXPECT_NEAR(usage.UsageAt(kT0 + 95).at("ns"), 2 * 95, 1e-3);
  usage.Charge(Running({}), nullptr, kT0 + 200);
  EXPECT_NEAR(usage.UsageAt(kT0 + 200).at("ns"), 2 * 95, 1e-3);
}

// Slurm jobs: a running job is charged its TRES while it runs; a finished one up to its end,
// once, however many polls still list it.
TEST(UsageAccountingTest, SlurmJobsAreChargedTheirTresWhileRunningAndUpToTheirEndOnce) {
  UsageOptions o = Options(GpuWeighted());
  o.half_life = 1'000'000'000;
  UsageAccounting usage(o);
  auto jobs = std::make_shared<slurm::SlurmView::Jobs>();
  slurm::SlurmJob& j = (*jobs)[7];
  j.job_id = 7;
  j.account = "physics";
  j.state = slurm::JobState::kRunning;
  j.start_time = absl::FromUnixSeconds(kT0);
  j.tres_allocated = {{"cpu", 2}, {"gres/gpu", 1}};  // 2 + 4 = 6 per second
  slurm::SlurmView view;
  view.jobs = jobs;
  usage.Charge(Running({}), &view, kT0 + 60);
  EXPECT_NEAR(usage.UsageAt(kT0 + 60).at("physics"), 6 * 60, 1e-6);
  j.state = slurm::JobState::kCompleted;
  j.end_time = absl::FromUnixSeconds(kT0 + 90);
  for (queue::Time t : {kT0 + 100, kT0 + 200, kT0 + 300}) usage.Charge(Running({}), &view, t);
  EXPECT_NEAR(usage.UsageAt(kT0 + 300).at("physics"), 6 * 90, 1e-3);
}

class MemoryStore : public UsageStore {
 public:
  absl::StatusOr<std::string> Load() override {
    ++loads;
    if (!text) return absl::NotFoundError("none");
    return *text;
  }
  absl::Status Save(const std::string& t) override {
    text = t;
    ++saves;
    return absl::OkStatus();
  }
  std::string Describe() const override { return "memory"; }
  std::optional<std::string> text;
  int loads = 0, saves = 0;
};

// A restart (or a new leader) in the middle continues from the saved numbers: each account's
// usage afterwards is what one uninterrupted daemon has, within one charge interval, and no
// second is charged twice (not the running pod's, not the finished job's).
TEST(UsageAccountingTest, ARestartInTheMiddleLeavesEveryAccountsUsageAsItWas) {
  MemoryStore store;
  auto jobs = std::make_shared<slurm::SlurmView::Jobs>();
  slurm::SlurmJob& j = (*jobs)[9];
  j.account = "physics";
  j.state = slurm::JobState::kCompleted;
  j.start_time = absl::FromUnixSeconds(kT0 - 600);
  j.end_time = absl::FromUnixSeconds(kT0);
  j.tres_allocated = {{"cpu", 4}};
  slurm::SlurmView view;
  view.jobs = jobs;
  const BuiltSnapshot built = Running({{"gpu-team/a", "gpu-team", 4, 2, kT0 - 300}, {"cpu-team/b", "cpu-team", 4, 0, kT0}});
  UsageAccounting whole(Options(GpuWeighted()));  // never restarted
  auto first = std::make_unique<UsageAccounting>(Options(GpuWeighted()));
  first->PersistTo(&store);
  queue::Time t = kT0;
  for (; t <= kT0 + 600; t += 30) {
    whole.Charge(built, &view, t);
    first->Charge(built, &view, t);
  }
  EXPECT_GE(store.saves, 10);
  const auto before = first->UsageAt(t);
  first.reset();  // the daemon stops; the next starts 45 s later
  t += 45;
  UsageAccounting second(Options(GpuWeighted()));
  second.PersistTo(&store);
  for (; t <= kT0 + 1200; t += 30) {
    whole.Charge(built, &view, t);
    second.Charge(built, &view, t);
  }
  EXPECT_EQ(store.loads, 2) << "each daemon read it once, when it began";
  const auto expected = whole.UsageAt(t), got = second.UsageAt(t);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& [account, amount] : expected) {
    SCOPED_TRACE(account);
    ASSERT_TRUE(got.count(account));
    // Within one charge interval of the account's billing rate (gpu-team: 4 + 1 + 8 = 13/s).
    EXPECT_NEAR(got.at(account), amount, 13 * 60) << "before the restart: " << before.at(account);
    EXPECT_GE(got.at(account), before.at(account) * 0.5);
  }
  // The finished job was charged once: its 600 s x 4, decayed.
  EXPECT_NEAR(got.at("physics"), expected.at("physics"), 1e-6);
}

// Bad or foreign content: a clear error, nothing restored, nothing else lost; the next save
// replaces it.
TEST(UsageAccountingTest, BadOrForeignSavedUsageStartsEmptyAndIsReplaced) {
  UsageAccounting usage(Options());
  usage.Charge(Running({{"ns/p", "ns", 1, 0, kT0}}), nullptr, kT0 + 60);
  const std::string good = usage.Save(kT0 + 60);
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"{not json", "not valid"},
           {R"({"apiVersion":"v1","kind":"Other"})", "not onequeue's usage"},
           {R"({"apiVersion":"onequeue.io/v1","kind":"FairShareUsage","scheduler":"other","accounts":{},"charged":{}})",
            "the usage of scheduler \"other\""},
           {R"({"apiVersion":"onequeue.io/v1","kind":"FairShareUsage","scheduler":"onequeue","accounts":{"a":{"usage":-1,"at":0}},"charged":{}})",
            "usage must be a number >= 0"},
           {R"({"apiVersion":"onequeue.io/v1","kind":"FairShareUsage","scheduler":"onequeue","accounts":{},"charged":{"x":{"until":1}}})",
            "neither pod/... nor slurm/..."}}) {
    SCOPED_TRACE(text);
    const absl::Status s = usage.Restore(text);
    EXPECT_THAT(s.message(), HasSubstr(why));
    EXPECT_EQ(usage.Save(kT0 + 60), good) << "a refused restore changes nothing";
  }
  MemoryStore store;
  store.text = "garbage";
  UsageAccounting fresh(Options());
  fresh.PersistTo(&store);
  fresh.Charge(Running({{"ns/p", "ns", 1, 0, kT0}}), nullptr, kT0 + 60);
  EXPECT_NEAR(fresh.UsageAt(kT0 + 60).at("ns"), 60, 1);
  EXPECT_THAT(*store.text, HasSubstr("FairShareUsage")) << "replaced at the first save";
}

}  // namespace
}  // namespace onequeue::scheduler

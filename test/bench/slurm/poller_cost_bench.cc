// What polling costs Slurm with N queued jobs: requests and bytes per minute, poll latency, and
// the CPU time slurmctld and slurmrestd spend, for (a) a full /jobs fetch every cycle, (b) the
// incremental poller by update_time (Slurm answers 304 when the job table did not change) and
// (c) issue 26's state mode (a job-state listing every poll, changed jobs fetched alone). Runs
// against its own local Slurm (8 slurmd) started through the test environment: --slurm 22.05
// (default), 24.11 or 26.05 (ONEQUEUE_SLURM), through the highest REST version it serves. The jobs
// are held (sbatch --hold), so the queue stays at N. The churn runs change one job every
// --churn-ms from a thread of their own: held jobs submitted and, after the first five, the
// oldest of those cancelled (a finish) in turn, so the queue stays near N.
#include <unistd.h>

#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/slurm_cluster.h"
#include "slurm_bridge/poller.h"
#include "slurm_bridge/slurm_api.h"

namespace {
using namespace onequeue::slurm;
using onequeue::testing::SlurmClusterEnvironment;
using onequeue::testing::SlurmClusterInfo;

// utime + stime of a process, in seconds.
double CpuSeconds(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::vector<std::string> f = absl::StrSplit(text.substr(paren + 2), ' ');
  double ut = 0, st = 0;
  if (f.size() < 13 || !absl::SimpleAtod(f[11], &ut) || !absl::SimpleAtod(f[12], &st)) return 0;
  return (ut + st) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int Pid(const SlurmClusterInfo& info, const std::string& name) {
  for (const auto& [n, pid] : onequeue::testing::SlurmClusterPids(info))
    if (n == name) return pid;
  return 0;
}

// CPU time of this process's finished children (squeue in state mode on 22.05; sbatch/scancel
// of the churn too), in seconds.
double ChildCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

struct Result {
  std::string mode;
  double requests_per_min = 0, mbytes_per_min = 0, ctld_cpu_per_min = 0, restd_cpu_per_min = 0;
  double child_cpu_per_min = 0;
  double mean_poll_ms = 0, max_poll_ms = 0, minutes = 0;
  uint64_t full = 0, unchanged = 0, failed = 0, state_listings = 0, single_fetches = 0, changes_made = 0;
  size_t jobs_in_view = 0;
};

enum class Mode { kFullEveryCycle, kUpdateTime, kStates };

// One job changed every `every` until `stop`: held jobs submitted, and once kBacklog of them are
// queued, submissions and cancels of the oldest (a finish) in turn, so that a job lives about
// 2 x kBacklog changes, several polls: each change is a change of its own for the poller, not a
// submit and a cancel that fall between the same two polls. Counts the changes made.
void Churn(const SlurmClusterInfo& info, absl::Duration every, const std::atomic<bool>& stop,
           std::atomic<uint64_t>& made) {
  constexpr size_t kBacklog = 5;
  std::deque<std::string> mine;
  absl::Time next = absl::Now() + every;
  for (bool submit = true; !stop.load(); submit = !submit || mine.size() < kBacklog) {
    absl::SleepFor(std::max(absl::ZeroDuration(), next - absl::Now()));
    next += every;
    if (stop.load()) break;
    if (submit) {
      absl::StatusOr<std::string> out = onequeue::testing::SlurmCommand(
          info, {"sbatch", "--parsable", "--hold", "-o", "/dev/null", "--wrap=sleep 1"});
      if (out.ok()) mine.push_back(std::string(absl::StripAsciiWhitespace(*out)));
    } else {
      (void)onequeue::testing::SlurmCommand(info, {"scancel", mine.front()});
      mine.pop_front();
    }
    ++made;
  }
  for (const std::string& id : mine) (void)onequeue::testing::SlurmCommand(info, {"scancel", id});
}

Result Measure(const SlurmClusterInfo& info, const std::string& mode_name, Mode mode, absl::Duration length,
               absl::Duration interval, absl::Duration churn) {
  SlurmApiOptions o;
  o.transport.base_url = info.rest_url;
  o.user = info.user;
  o.token_file = info.token_file;
  const ApiVersion version = ParseApiVersion(info.rest_api).value_or(ApiVersion::kV0038);
  // Separate client to count exactly the poller's traffic; the squeue beside scontrol for the
  // state listing where REST has none (v0.0.38).
  auto client = std::make_shared<RestClient>(MakeCurlTransport(o.transport),
                                             MakeTokenFileSource(o.user, o.token_file));
  ProcessRunnerOptions ro;
  ro.extra_env["SLURM_CONF"] = info.slurm_conf;
  std::unique_ptr<SlurmApi> counted =
      MakeRestSlurmApi(client, version, MakeScontrol(info.bin_dir + "/scontrol", MakeProcessRunner(ro)));
  PollerOptions po;
  po.incremental = mode != Mode::kFullEveryCycle;
  po.job_states = mode == Mode::kStates;
  po.full_refresh_interval = absl::Minutes(5);
  SlurmPoller poller(*counted, po);
  // Warm, not counted: the first (full) poll, and one more a poll interval later, since a poll
  // within the second of the last change answers the whole table again (update_time's one-second
  // resolution): the quiet rows measure a quiet queue, not the end of the submissions.
  if (!poller.PollOnce(absl::Now()).ok()) std::exit(1);
  absl::SleepFor(interval);
  if (!poller.PollOnce(absl::Now()).ok()) std::exit(1);
  const uint64_t req0 = client->counters().requests, bytes0 = client->counters().bytes_received;
  const int ctld = Pid(info, "slurmctld"), restd = Pid(info, "slurmrestd");
  const double ctld0 = CpuSeconds(ctld), restd0 = CpuSeconds(restd), child0 = ChildCpuSeconds();
  const PollerStats s0 = poller.stats();
  const absl::Time start = absl::Now();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> made{0};
  std::thread churner;
  if (churn > absl::ZeroDuration()) churner = std::thread([&] { Churn(info, churn, stop, made); });
  double total_ms = 0, max_ms = 0;
  int polls = 0;
  while (absl::Now() - start < length) {
    const absl::Time t = absl::Now();
    absl::StatusOr<PollChanges> c = poller.PollOnce(t);
    if (!c.ok()) std::fprintf(stderr, "poll: %s\n", std::string(c.status().message()).c_str());
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - t);
    total_ms += ms;
    max_ms = std::max(max_ms, ms);
    ++polls;
    absl::SleepFor(std::max(absl::ZeroDuration(), interval - (absl::Now() - t)));
  }
  const double minutes = absl::ToDoubleMinutes(absl::Now() - start);
  const uint64_t requests = client->counters().requests - req0, bytes = client->counters().bytes_received - bytes0;
  const double ctld1 = CpuSeconds(ctld), restd1 = CpuSeconds(restd);
  stop = true;
  if (churner.joinable()) churner.join();
  Result r;
  r.mode = mode_name;
  r.minutes = minutes;
  r.changes_made = made.load();
  r.child_cpu_per_min = (ChildCpuSeconds() - child0) / minutes;
  r.state_listings = poller.stats().job_state_listings - s0.job_state_listings;
  r.single_fetches = poller.stats().single_job_fetches - s0.single_job_fetches;
  r.requests_per_min = requests / minutes;
  r.mbytes_per_min = bytes / minutes / 1e6;
  r.ctld_cpu_per_min = (ctld1 - ctld0) / minutes;
  r.restd_cpu_per_min = (restd1 - restd0) / minutes;
  r.mean_poll_ms = total_ms / polls;
  r.max_poll_ms = max_ms;
  r.full = poller.stats().full_job_fetches - s0.full_job_fetches;
  r.failed = poller.stats().failures - s0.failures;
  r.unchanged = poller.stats().unchanged_job_answers - s0.unchanged_job_answers;
  r.jobs_in_view = poller.View()->jobs->size();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = 10000, seconds = 60, interval_ms = 2000, churn_ms = 10000;
  bool with_full = true;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--slurm") setenv("ONEQUEUE_SLURM", argv[i + 1], 1);  // read by the environment
    if (flag == "--full-every-cycle") with_full = std::string(argv[i + 1]) != "0";
    int v = 0;
    if (!absl::SimpleAtoi(argv[i + 1], &v)) continue;
    if (flag == "--jobs") jobs = v;
    if (flag == "--seconds") seconds = v;
    if (flag == "--interval-ms") interval_ms = v;
    if (flag == "--churn-seconds") churn_ms = v * 1000;
    if (flag == "--churn-ms") churn_ms = v;
  }
  SlurmClusterEnvironment env({.nodes = 8});
  env.SetUp();
  const SlurmClusterInfo& info = SlurmClusterEnvironment::Info();
  const absl::Time t0 = absl::Now();
  // Held jobs, one record each, submitted in batches of 500 by one shell per batch.
  for (int done = 0; done < jobs;) {
    const int n = std::min(1000, jobs - done) / 2 * 2;
    if (n == 0) break;
    // Two submitters in parallel (2 cores): the rate is bound by slurmctld and munged.
    const std::string one = absl::StrCat("for i in $(seq ", n / 2, "); do ", info.bin_dir,
                                         "/sbatch --hold -o /dev/null --wrap='sleep 1' >/dev/null || exit 1; done");
    const std::string loop = absl::StrCat("(", one, ") & (", one, ") & wait");
    absl::StatusOr<std::string> out = onequeue::testing::SlurmCommand(info, {"/bin/bash", "-c", loop});
    if (!out.ok()) {
      std::fprintf(stderr, "submit: %s\n", std::string(out.status().message()).c_str());
      env.TearDown();
      return 1;
    }
    done += n;
  }
  std::printf("submitted %d held jobs in %.1f s\n", jobs, absl::ToDoubleSeconds(absl::Now() - t0));
  std::vector<Result> results;
  const absl::Duration len = absl::Seconds(seconds), iv = absl::Milliseconds(interval_ms);
  const absl::Duration churn = absl::Milliseconds(churn_ms);
  const std::string rate = churn_ms % 1000 == 0 ? absl::StrCat("1 change/", churn_ms / 1000, " s")
                                                : absl::StrCat("1 change/", churn_ms, " ms");
  if (with_full) results.push_back(Measure(info, "full fetch every cycle", Mode::kFullEveryCycle, len, iv, absl::ZeroDuration()));
  results.push_back(Measure(info, "update_time, quiet queue", Mode::kUpdateTime, len, iv, absl::ZeroDuration()));
  results.push_back(Measure(info, "state mode, quiet queue", Mode::kStates, len, iv, absl::ZeroDuration()));
  results.push_back(Measure(info, absl::StrCat("update_time, ", rate), Mode::kUpdateTime, len, iv, churn));
  results.push_back(Measure(info, absl::StrCat("state mode, ", rate), Mode::kStates, len, iv, churn));
  std::printf("\n%d queued jobs, poll every %d ms, %d s per run, 8 slurmd, Slurm %s, slurmrestd %s, %ld cores\n", jobs,
              interval_ms, seconds, info.release.c_str(), info.rest_api.c_str(), sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("| mode | changes made | full job listings/min | state listings/min | single fetches/min | requests/min | "
              "MB/min received | 304/unchanged answers | failed polls | mean / max poll ms | slurmctld CPU s/min | "
              "slurmrestd CPU s/min | child CPU s/min | jobs in view |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Result& r : results)
    std::printf("| %s | %lu | %.1f | %.1f | %.1f | %.1f | %.2f | %lu | %lu | %.1f / %.1f | %.2f | %.2f | %.2f | %zu |\n",
                r.mode.c_str(), r.changes_made, r.full / r.minutes, r.state_listings / r.minutes,
                r.single_fetches / r.minutes, r.requests_per_min, r.mbytes_per_min, r.unchanged, r.failed,
                r.mean_poll_ms, r.max_poll_ms, r.ctld_cpu_per_min, r.restd_cpu_per_min, r.child_cpu_per_min,
                r.jobs_in_view);
  (void)onequeue::testing::SlurmCommand(info, {"scancel", "--user", info.user});
  env.TearDown();
  return 0;
}

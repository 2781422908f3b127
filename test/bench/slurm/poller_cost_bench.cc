// What polling costs Slurm with N queued jobs: requests and bytes per minute, poll latency, and
// the CPU time slurmctld and slurmrestd spend, for (a) a full /jobs fetch every cycle and (b) the
// incremental poller (update_time; Slurm answers 304 when the job table did not change). Runs
// against its own local Slurm 22.05 (8 slurmd) started through the test environment. The jobs are
// held (sbatch --hold), so the queue stays at N for the whole measurement. A second pair of runs
// adds churn: one job submitted and one cancelled every `churn` seconds.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
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

struct Result {
  std::string mode;
  double requests_per_min = 0, mbytes_per_min = 0, ctld_cpu_per_min = 0, restd_cpu_per_min = 0;
  double mean_poll_ms = 0, max_poll_ms = 0;
  uint64_t full = 0, unchanged = 0, failed = 0;
  size_t jobs_in_view = 0;
};

Result Measure(const SlurmClusterInfo& info, const std::string& mode, bool incremental, absl::Duration length,
               absl::Duration interval, absl::Duration churn) {
  SlurmApiOptions o;
  o.transport.base_url = info.rest_url;
  o.user = info.user;
  o.token_file = info.token_file;
  o.pinned_version = ApiVersion::kV0038;
  absl::StatusOr<std::unique_ptr<SlurmApi>> api = ConnectSlurmApi(o);
  if (!api.ok()) {
    std::fprintf(stderr, "connect: %s\n", std::string(api.status().message()).c_str());
    std::exit(1);
  }
  // Separate client to count exactly the poller's traffic.
  auto client = std::make_shared<RestClient>(MakeCurlTransport(o.transport),
                                             MakeTokenFileSource(o.user, o.token_file));
  std::unique_ptr<SlurmApi> counted = MakeRestSlurmApi(client, ApiVersion::kV0038, nullptr);
  PollerOptions po;
  po.incremental = incremental;
  po.full_refresh_interval = absl::Minutes(5);
  SlurmPoller poller(*counted, po);
  if (!poller.PollOnce(absl::Now()).ok()) std::exit(1);  // warm: first full fetch not counted
  const uint64_t req0 = client->counters().requests, bytes0 = client->counters().bytes_received;
  const int ctld = Pid(info, "slurmctld"), restd = Pid(info, "slurmrestd");
  const double ctld0 = CpuSeconds(ctld), restd0 = CpuSeconds(restd);
  const PollerStats s0 = poller.stats();
  const absl::Time start = absl::Now();
  absl::Time next_churn = start + churn;
  double total_ms = 0, max_ms = 0;
  int polls = 0;
  while (absl::Now() - start < length) {
    const absl::Time t = absl::Now();
    if (churn > absl::ZeroDuration() && t >= next_churn) {
      (void)onequeue::testing::SlurmCommand(info, {"sbatch", "--hold", "-o", "/dev/null", "--wrap=sleep 1"});
      next_churn += churn;
    }
    absl::StatusOr<PollChanges> c = poller.PollOnce(t);
    if (!c.ok()) std::fprintf(stderr, "poll: %s\n", std::string(c.status().message()).c_str());
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - t);
    total_ms += ms;
    max_ms = std::max(max_ms, ms);
    ++polls;
    absl::SleepFor(std::max(absl::ZeroDuration(), interval - (absl::Now() - t)));
  }
  const double minutes = absl::ToDoubleMinutes(absl::Now() - start);
  Result r;
  r.mode = mode;
  r.requests_per_min = (client->counters().requests - req0) / minutes;
  r.mbytes_per_min = (client->counters().bytes_received - bytes0) / minutes / 1e6;
  r.ctld_cpu_per_min = (CpuSeconds(ctld) - ctld0) / minutes;
  r.restd_cpu_per_min = (CpuSeconds(restd) - restd0) / minutes;
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
  int jobs = 10000, seconds = 60, interval_ms = 2000, churn_s = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    int v = 0;
    if (!absl::SimpleAtoi(argv[i + 1], &v)) continue;
    if (flag == "--jobs") jobs = v;
    if (flag == "--seconds") seconds = v;
    if (flag == "--interval-ms") interval_ms = v;
    if (flag == "--churn-seconds") churn_s = v;
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
  results.push_back(Measure(info, "full fetch every cycle", false, len, iv, absl::ZeroDuration()));
  results.push_back(Measure(info, "incremental (update_time)", true, len, iv, absl::ZeroDuration()));
  results.push_back(Measure(info, absl::StrCat("full, 1 submit/", churn_s, "s"), false, len, iv, absl::Seconds(churn_s)));
  results.push_back(Measure(info, absl::StrCat("incremental, 1 submit/", churn_s, "s"), true, len, iv,
                            absl::Seconds(churn_s)));
  std::printf("\n%d queued jobs, poll every %d ms, %d s per run, 8 slurmd, slurmrestd v0.0.38, %ld cores\n", jobs,
              interval_ms, seconds, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("| mode | requests/min | MB/min received | full job answers | 304 job answers | failed polls | mean poll ms | "
              "max poll ms | slurmctld CPU s/min | slurmrestd CPU s/min | jobs in view |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Result& r : results)
    std::printf("| %s | %.1f | %.2f | %lu | %lu | %lu | %.1f | %.1f | %.2f | %.2f | %zu |\n", r.mode.c_str(),
                r.requests_per_min, r.mbytes_per_min, r.full, r.unchanged, r.failed, r.mean_poll_ms, r.max_poll_ms,
                r.ctld_cpu_per_min, r.restd_cpu_per_min, r.jobs_in_view);
  (void)onequeue::testing::SlurmCommand(info, {"scancel", "--user", info.user});
  env.TearDown();
  return 0;
}

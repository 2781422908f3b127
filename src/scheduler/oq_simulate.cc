// `oq simulate TRACE.swf [--policy fcfs|easy|conservative | --config onequeue.yaml [--qos NAME]]
// [--compare POLICY] [--per-job] [--json] [--processors N] [--tau SECONDS] [--keep-reservations]`: replays a Standard Workload Format trace through the
// queue planner in simulated time and prints the summary (docs/simulate.md). Exit codes: 0 done,
// 1 the trace is malformed or cannot be replayed, 2 bad arguments.
#include "scheduler/oq_simulate.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "queue/replay.h"
#include "queue/swf.h"
#include "scheduler/config.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::cli {
namespace {

constexpr const char* kSimulateUsage =
    "Usage: oq simulate TRACE.swf [--policy fcfs|easy|conservative | --config FILE [--qos NAME]]\n"
    "                   [--compare fcfs|easy|conservative] [--per-job] [--json] [--processors N]\n"
    "                   [--tau SECONDS] [--keep-reservations] [--starvation-bound SECONDS]\n"
    "                   [--starvation-limits K] [--max-age SECONDS] [--starvation-remedy reserve|front|front-reserve]\n"
    "                   [--predict-runtimes]\n"
    "  --policy       fcfs (strict order), easy (backfill, 1 reservation) or conservative\n"
    "                 (backfill, every waiting job reserved)\n"
    "  --config       the daemon's configuration file (onequeue.yaml): replay with its policy\n"
    "                 (priority weights, QOS, accounts, reservation depth, resolution, window),\n"
    "                 reservations kept as the daemon keeps them; SWF user -> account user-N,\n"
    "                 queue -> partition queue-N\n"
    "  --qos          every job's QOS with --config (default: slurm.defaultQos when the QOS\n"
    "                 table has it, else none)\n"
    "  --per-job      also print one line per job (submit, start, end, wait, bounded slowdown)\n"
    "  --json         print JSON instead of text\n"
    "  --processors   machine size (default: the header's MaxProcs, else MaxNodes, else the\n"
    "                 widest job); one node per processor\n"
    "  --tau          bounded slowdown threshold in seconds (default 10)\n"
    "  --keep-reservations\n"
    "                 classic conservative backfilling: a reservation never moves later (the\n"
    "                 default replays the daemon's planner, which re-plans from scratch)\n"
    "  --compare POLICY\n"
    "                 also replay the same trace under fcfs, easy or conservative and print both\n"
    "                 side by side (wait percentiles, bounded slowdown by job size, users' wait\n"
    "                 shares)\n"
    "  --starvation-remedy reserve|front|front-reserve\n"
    "                 what-if: a starving job gets a reservation past the depth (reserve), the\n"
    "                 head of the queue, oldest first (front), or both (front-reserve: the next\n"
    "                 oldest after the head, up to queue.starvationReservationsPerCycle a cycle;\n"
    "                 docs/queue.md \"Starvation\")\n"
    "  --starvation-bound SECONDS, --starvation-limits K, --max-age SECONDS\n"
    "                 what-if: replay with this starvation bound (0 = off), this bound in\n"
    "                 multiples of a job's time limit (0 = off) or age saturation\n"
    "                 (PriorityMaxAge) instead of the policy's (docs/queue.md \"Starvation\")\n"
    "  --predict-runtimes\n"
    "                 EASY++: plan each job with the average of its user's two last run times\n"
    "                 (capped by its time limit) instead of the limit (docs/simulate.md)\n"
    "  Without --policy and --config the daemon's default configuration is replayed.\n";

struct SimulateArgs {
  std::string trace_path;
  std::string config_path;
  std::optional<std::string> qos;
  queue::ReplayOptions options;
  bool per_job = false;
  bool json = false;
  bool defaults = false;  // neither --policy nor --config: the daemon's default configuration
  std::optional<queue::ReplayPolicy> compare;
};

bool IsStarvationWhatIf(const std::string& a) {
  return a == "--starvation-bound" || a == "--max-age" || a == "--starvation-limits" || a == "--starvation-remedy";
}

// One of the starvation what-ifs (IsStarvationWhatIf) with its value `v`; on failure the message.
std::optional<std::string> ParseStarvationWhatIf(const std::string& a, const std::optional<std::string>& v,
                                                 queue::ReplayOptions* options) {
  if (a == "--starvation-limits") {  // multiples of a job's time limit
    double k = 0;
    if (!v || !absl::SimpleAtod(*v, &k) || !(k >= 0) || !std::isfinite(k)) return a + " needs a number (0 or more)";
    options->starvation_bound_limits = k;
  } else if (a == "--starvation-remedy") {
    const auto remedy = v ? queue::StarvationRemedyNamed(*v) : std::nullopt;
    if (!remedy) return a + " needs reserve, front or front-reserve";
    options->starvation_remedy = *remedy;
  } else {
    int64_t n = 0;
    if (!v || !absl::SimpleAtoi(*v, &n) || n < 0) {
      return a + " needs a number of seconds (0 or more)" + (v ? ", got '" + *v + "'" : std::string());
    }
    (a == "--max-age" ? options->max_age : options->starvation_bound) = n;
  }
  return std::nullopt;
}

// Parses the arguments; on failure returns the message to print (then the usage).
std::optional<std::string> ParseArgs(const std::vector<std::string>& args, SimulateArgs* out) {
  bool policy_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {  // the option's argument
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "--policy") {
      auto v = value();
      if (!v) return "--policy needs a value: fcfs, easy or conservative";
      auto p = queue::ParseReplayPolicy(*v);
      if (!p.ok()) return "--policy: " + std::string(p.status().message());
      out->options.policy = *p;
      policy_given = true;
    } else if (a == "--config") {
      auto v = value();
      if (!v) return "--config needs a file";
      out->config_path = *v;
    } else if (a == "--qos") {
      auto v = value();
      if (!v) return "--qos needs a QOS name";
      out->qos = *v;
    } else if (a == "--compare") {
      auto v = value();
      if (!v) return "--compare needs a policy: fcfs, easy or conservative";
      auto p = queue::ParseReplayPolicy(*v);
      if (!p.ok()) return "--compare: " + std::string(p.status().message());
      out->compare = *p;
    } else if (IsStarvationWhatIf(a)) {
      if (auto error = ParseStarvationWhatIf(a, value(), &out->options)) return error;
    } else if (a == "--predict-runtimes") {
      out->options.runtime_prediction = queue::RuntimePrediction::kUserHistory;
    } else if (a == "--per-job") {
      out->per_job = true;
    } else if (a == "--keep-reservations") {
      out->options.keep_reservations = true;
    } else if (a == "--json") {
      out->json = true;
    } else if (a == "--processors") {
      auto v = value();
      int64_t n = 0;
      if (!v || !absl::SimpleAtoi(*v, &n) || n <= 0) {
        return "--processors needs a positive integer" + (v ? ", got '" + *v + "'" : std::string());
      }
      out->options.processors = n;
    } else if (a == "--tau") {
      auto v = value();
      double tau = 0;
      if (!v || !absl::SimpleAtod(*v, &tau) || !(tau > 0) || !std::isfinite(tau)) {
        return "--tau needs a positive number of seconds" + (v ? ", got '" + *v + "'" : std::string());
      }
      out->options.tau = tau;
    } else if (a.size() > 1 && a[0] == '-') {
      return "unknown option " + a;
    } else if (out->trace_path.empty()) {
      out->trace_path = a;
    } else {
      return "only one trace may be given (got '" + out->trace_path + "' and '" + a + "')";
    }
  }
  if (out->trace_path.empty()) return "no trace given";
  if (policy_given && !out->config_path.empty()) {
    return "give --policy or --config, not both (--config replays the configuration's own policy)";
  }
  out->defaults = !policy_given && out->config_path.empty();
  if (out->qos.has_value() && out->config_path.empty()) return "--qos needs --config";
  return std::nullopt;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// What the replayed policy is called in a table's column.
std::string PolicyLabel(const SimulateArgs& a, const queue::ReplayResult& r) {
  if (a.defaults) return "default";
  if (a.options.config.has_value()) return "config";
  return queue::ReplayPolicyName(r.policy);
}

// The metrics a person reads, one column per replay (the first is the policy asked for, the
// second the --compare one), and a ratio column when there are two.
void PrintTable(const SimulateArgs& a, const std::vector<std::pair<std::string, const queue::ReplayResult*>>& runs) {
  const bool two = runs.size() == 2;
  std::printf("\n%-44s", "");
  for (const auto& [name, r] : runs) std::printf(" %14s", name.c_str());
  if (two) std::printf(" %14s", (runs[0].first + "/" + runs[1].first).c_str());
  std::printf("\n");
  auto row = [&](const std::string& label, auto get, const char* format) {
    std::printf("%-44s", label.c_str());
    std::vector<double> v;
    for (const auto& run : runs) {
      v.push_back(get(*run.second));
      std::printf(format, v.back());
    }
    if (two) {
      if (v[1] != 0) {
        std::printf(" %14.2f", v[0] / v[1]);
      } else {
        std::printf(" %14s", "-");
      }
    }
    std::printf("\n");
  };
  using R = const queue::ReplayResult&;
  const char* secs = " %14.0f";
  row("avg bounded slowdown (tau " + Number(a.options.tau) + " s)",
      [](R r) { return r.summary.average_bounded_slowdown; }, " %14.2f");
  row("wait avg (s)", [](R r) { return r.summary.average_wait; }, secs);
  row("wait p50 (s)", [](R r) { return r.summary.p50_wait; }, secs);
  row("wait p95 (s)", [](R r) { return r.summary.p95_wait; }, secs);
  row("wait p99 (s)", [](R r) { return r.summary.p99_wait; }, secs);
  row("wait max (s)", [](R r) { return r.summary.max_wait; }, secs);
  row("utilisation (%)", [](R r) { return 100 * r.summary.utilisation; }, " %14.2f");
  const auto& classes = runs[0].second->summary.size_classes;
  for (size_t c = 0; c < classes.size(); ++c) {
    const std::string name = classes[c].name + " procs (" + std::to_string(classes[c].jobs) + " jobs)";
    row("bounded slowdown, " + name, [c](R r) { return r.summary.size_classes[c].average_bounded_slowdown; },
        " %14.2f");
  }
  for (size_t c = 0; c < classes.size(); ++c) {
    row("wait p99 (s), " + classes[c].name + " procs",
        [c](R r) { return r.summary.size_classes[c].p99_wait; }, secs);
  }
  for (size_t c = 0; c < classes.size(); ++c) {
    row("wait max (s), " + classes[c].name + " procs",
        [c](R r) { return r.summary.size_classes[c].max_wait; }, secs);
  }
  // The users who bear most of the wait under the first policy.
  const auto& users = runs[0].second->summary.users;
  const size_t shown = std::min<size_t>(5, users.size());
  if (shown == 0) return;
  std::printf("\nusers with the largest share of the summed wait under %s (of %zu users):\n",
              runs[0].first.c_str(), users.size());
  std::printf("%8s %6s %8s", "user", "jobs", "work %");
  for (const auto& [name, r] : runs) std::printf(" %14s", ("wait % " + name).c_str());
  for (const auto& [name, r] : runs) std::printf(" %14s", ("max wait " + name).c_str());
  std::printf("\n");
  for (size_t i = 0; i < shown; ++i) {
    const queue::UserSummary& u = users[i];
    std::printf("%8" PRId64 " %6" PRId64 " %8.1f", u.user, u.jobs, 100 * u.work_share);
    std::vector<const queue::UserSummary*> of;
    for (const auto& run : runs) {
      const queue::UserSummary* found = nullptr;
      for (const queue::UserSummary& x : run.second->summary.users) {
        if (x.user == u.user) found = &x;
      }
      of.push_back(found);
      std::printf(" %14.1f", found ? 100 * found->wait_share : 0.0);
    }
    for (const queue::UserSummary* x : of) std::printf(" %14.0f", x ? x->max_wait : 0.0);
    std::printf("\n");
  }
}

void PrintText(const SimulateArgs& a, const queue::ReplayResult& r, const queue::ReplayResult* compared) {
  const queue::ReplaySummary& s = r.summary;
  std::printf("trace:        %s\n", a.trace_path.c_str());
  if (a.options.config.has_value()) {
    const queue::QueueConfig& c = *a.options.config;
    // The starvation controls in effect: the file's (queue.maxAgeSeconds,
    // queue.starvationBoundSeconds) unless --max-age / --starvation-bound replace them.
    const long long max_age = a.options.max_age.value_or(c.max_age);
    const long long bound = a.options.starvation_bound.value_or(c.starvation_bound);
    const double limits = a.options.starvation_bound_limits.value_or(c.starvation_bound_limits);
    const queue::QueueConfig::StarvationRemedy remedy = a.options.starvation_remedy.value_or(c.starvation_remedy);
    const char* remedy_text = !queue::StarvingToFront(remedy) ? ""
                              : queue::StarvingReservedPastDepth(remedy)
                                  ? ", starving workloads to the front, the next oldest reserved past the depth"
                                  : ", starving workloads to the front";
    // Issue 27's front options (docs/queue.md "Beyond the family"), named when set.
    const std::string front_options =
        absl::StrCat(c.starvation_width_scale > 0 ? absl::StrCat(", bounds x (1 - ", c.starvation_width_scale, " x pool share)") : "",
                     c.starving_order == queue::QueueConfig::StarvingOrder::kFirstStarved ? ", first starved first" : "");
    std::printf("policy:       %s (reservation depth %d, resolution %lld s, QOS %s, max age %lld s, "
                "starvation bound %lld s or %g x the time limit%s%s)\n",
                a.defaults ? "the daemon's defaults" : a.config_path.c_str(), c.reservation_depth,
                static_cast<long long>(c.resolution), a.options.qos.empty() ? "none" : a.options.qos.c_str(),
                max_age, bound, limits, remedy_text, front_options.c_str());
  } else {
    std::printf("policy:       %s%s\n", queue::ReplayPolicyName(r.policy),
                a.options.keep_reservations ? " (reservations kept)" : "");
  }
  std::printf("machine:      %" PRId64 " processors (%s), one node per processor\n", s.processors,
              r.machine_source.c_str());
  std::printf("jobs:         %" PRId64 " replayed, %" PRId64 " skipped, %" PRId64
              " backfilled, %" PRId64 " stopped at their time limit\n",
              s.jobs, s.skipped, s.backfilled, s.cut_at_limit);
  std::printf("wait:         average %.1f s, max %.0f s\n", s.average_wait, s.max_wait);
  std::printf("slowdown:     average bounded slowdown %.3f (tau %g s), max %.3f\n",
              s.average_bounded_slowdown, a.options.tau, s.max_bounded_slowdown);
  std::printf("utilisation:  %.2f %% over a makespan of %" PRId64 " s\n", 100.0 * s.utilisation,
              s.makespan);
  std::printf("cycles:       %" PRId64 " planner cycles\n", s.cycles);
  std::printf("wait:         p50 %.0f s, p95 %.0f s, p99 %.0f s\n", s.p50_wait, s.p95_wait, s.p99_wait);
  if (compared != nullptr) {
    PrintTable(a, {{PolicyLabel(a, r), &r}, {queue::ReplayPolicyName(compared->policy), compared}});
  } else {
    PrintTable(a, {{PolicyLabel(a, r), &r}});
  }
  if (!a.per_job) return;
  std::printf("\n%8s %10s %10s %10s %8s %8s %6s %9s %s\n", "job", "submit", "start", "end", "wait",
              "run", "procs", "bsld", "notes");
  for (const queue::JobOutcome& j : r.jobs) {
    std::string notes;
    if (j.backfilled) notes += "backfilled ";
    if (j.cut_at_limit) notes += "cut-at-limit";
    std::printf("%8" PRId64 " %10" PRId64 " %10" PRId64 " %10" PRId64 " %8" PRId64 " %8" PRId64
                " %6" PRId64 " %9.3f %s\n",
                j.job_number, j.submit, j.start, j.end, j.Wait(), j.run, j.processors,
                j.BoundedSlowdown(a.options.tau), notes.c_str());
  }
}

std::string SummaryJson(const SimulateArgs& a, const queue::ReplaySummary& s) {
  std::string out = "{\"jobs\":" + std::to_string(s.jobs) + ",\"skipped\":" + std::to_string(s.skipped) +
         ",\"backfilled\":" + std::to_string(s.backfilled) +
         ",\"cut_at_limit\":" + std::to_string(s.cut_at_limit) +
         ",\"average_wait\":" + Number(s.average_wait) + ",\"max_wait\":" + Number(s.max_wait) +
         ",\"p50_wait\":" + Number(s.p50_wait) + ",\"p95_wait\":" + Number(s.p95_wait) +
         ",\"p99_wait\":" + Number(s.p99_wait) +
         ",\"average_bounded_slowdown\":" + Number(s.average_bounded_slowdown) +
         ",\"max_bounded_slowdown\":" + Number(s.max_bounded_slowdown) +
         ",\"tau\":" + Number(a.options.tau) + ",\"utilisation\":" + Number(s.utilisation) +
         ",\"makespan\":" + std::to_string(s.makespan) + ",\"cycles\":" + std::to_string(s.cycles);
  out += ",\"size_classes\":[";
  for (size_t i = 0; i < s.size_classes.size(); ++i) {
    const queue::SizeClassSummary& c = s.size_classes[i];
    if (i) out += ",";
    out += "{\"name\":" + JsonString(c.name) + ",\"min_processors\":" + std::to_string(c.min_processors) +
           ",\"max_processors\":" + std::to_string(c.max_processors) + ",\"jobs\":" + std::to_string(c.jobs) +
           ",\"average_bounded_slowdown\":" + Number(c.average_bounded_slowdown) +
           ",\"average_wait\":" + Number(c.average_wait) + ",\"p99_wait\":" + Number(c.p99_wait) +
           ",\"max_wait\":" + Number(c.max_wait) + "}";
  }
  out += "],\"users\":[";
  for (size_t i = 0; i < s.users.size(); ++i) {
    const queue::UserSummary& u = s.users[i];
    if (i) out += ",";
    out += "{\"user\":" + std::to_string(u.user) + ",\"jobs\":" + std::to_string(u.jobs) +
           ",\"work_share\":" + Number(u.work_share) + ",\"wait_share\":" + Number(u.wait_share) +
           ",\"average_wait\":" + Number(u.average_wait) + ",\"max_wait\":" + Number(u.max_wait) + "}";
  }
  return out + "]}";
}

void PrintJson(const SimulateArgs& a, const queue::ReplayResult& r, const queue::ReplayResult* compared) {
  const queue::ReplaySummary& s = r.summary;
  std::string out = "{";
  out += "\"trace\":" + JsonString(a.trace_path);
  out += ",\"policy\":" + JsonString(PolicyLabel(a, r));
  if (a.options.config.has_value() && !a.defaults) out += ",\"config\":" + JsonString(a.config_path);
  out += std::string(",\"keep_reservations\":") + (a.options.keep_reservations ? "true" : "false");
  out += ",\"machine\":{\"processors\":" + std::to_string(s.processors) +
         ",\"source\":" + JsonString(r.machine_source) + ",\"nodes_per_processor\":1}";
  out += ",\"summary\":" + SummaryJson(a, s);
  if (compared != nullptr) {
    out += ",\"compare\":{\"policy\":" + JsonString(queue::ReplayPolicyName(compared->policy)) +
           ",\"summary\":" + SummaryJson(a, compared->summary) + "}";
  }
  out += ",\"skipped\":[";
  for (size_t i = 0; i < r.skipped.size(); ++i) {
    const queue::SkippedJob& k = r.skipped[i];
    if (i) out += ",";
    out += "{\"job\":" + std::to_string(k.job_number) + ",\"line\":" + std::to_string(k.line) +
           ",\"why\":" + JsonString(k.why) + "}";
  }
  out += "]";
  if (a.per_job) {
    out += ",\"jobs\":[";
    for (size_t i = 0; i < r.jobs.size(); ++i) {
      const queue::JobOutcome& j = r.jobs[i];
      if (i) out += ",";
      out += "{\"job\":" + std::to_string(j.job_number) + ",\"submit\":" + std::to_string(j.submit) +
             ",\"start\":" + std::to_string(j.start) + ",\"end\":" + std::to_string(j.end) +
             ",\"wait\":" + std::to_string(j.Wait()) + ",\"run\":" + std::to_string(j.run) +
             ",\"processors\":" + std::to_string(j.processors) +
             ",\"bounded_slowdown\":" + Number(j.BoundedSlowdown(a.options.tau)) +
             ",\"backfilled\":" + (j.backfilled ? "true" : "false") +
             ",\"cut_at_limit\":" + (j.cut_at_limit ? "true" : "false") + "}";
    }
    out += "]";
  }
  out += "}\n";
  std::fputs(out.c_str(), stdout);
}

// --config FILE or the daemon's defaults: replay with the daemon's planner configuration, its
// promises and its Slurm default QOS. 0, or the exit code of a configuration problem.
int UseDaemonConfig(SimulateArgs& a) {
  auto config = a.defaults ? scheduler::ParseConfig(
                                 "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n", "defaults")
                           : scheduler::LoadConfigFile(a.config_path);
  if (!config.ok()) {
    std::fprintf(stderr, "oq simulate: %s\n", std::string(config.status().message()).c_str());
    return 1;
  }
  a.options.config = scheduler::ToQueueConfig(*config);
  // Promises when the daemon keeps them (queue.keepReservations, off by default since issue 27).
  a.options.keep_reservations = a.options.keep_reservations || config->queue.keep_reservations;
  if (a.qos.has_value()) {
    a.options.qos = *a.qos;
  } else {
    for (const queue::QosPolicy& q : a.options.config->qos) {
      if (q.name == config->slurm.default_qos) a.options.qos = q.name;
    }
  }
  if (!a.options.qos.empty() && !a.options.config->qos.empty()) {
    bool known = false;
    for (const queue::QosPolicy& q : a.options.config->qos) known = known || q.name == a.options.qos;
    if (!known) {
      std::fprintf(stderr, "oq simulate: --qos %s is not in %s's QOS table\n", a.options.qos.c_str(),
                   a.config_path.c_str());
      return 2;
    }
  }
  return 0;
}

}  // namespace

int RunSimulate(const std::vector<std::string>& args) {
  SimulateArgs a;
  if (auto problem = ParseArgs(args, &a)) {
    std::fprintf(stderr, "oq simulate: %s\n\n%s", problem->c_str(), kSimulateUsage);
    return 2;
  }
  if (!a.config_path.empty() || a.defaults) {
    if (int rc = UseDaemonConfig(a); rc != 0) return rc;
  }
  std::ifstream in(a.trace_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "oq simulate: cannot read %s\n", a.trace_path.c_str());
    return 1;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto trace = queue::ParseSwfStrict(text.str(), /*max_listed=*/50);
  if (!trace.ok()) {
    std::fprintf(stderr, "oq simulate: %s: %s\n", a.trace_path.c_str(),
                 std::string(trace.status().message()).c_str());
    return 1;
  }
  auto result = queue::ReplayTrace(*trace, a.options);
  if (!result.ok()) {
    std::fprintf(stderr, "oq simulate: %s: %s\n", a.trace_path.c_str(),
                 std::string(result.status().message()).c_str());
    return 1;
  }
  if (!result->skipped.empty()) {
    std::fprintf(stderr, "oq simulate: skipped %zu job(s) that cannot be replayed:\n", result->skipped.size());
    for (size_t i = 0; i < result->skipped.size() && i < 10; ++i) {
      const queue::SkippedJob& k = result->skipped[i];
      std::fprintf(stderr, "  line %d: job %" PRId64 ": %s\n", k.line, k.job_number, k.why.c_str());
    }
    if (result->skipped.size() > 10) std::fprintf(stderr, "  ... and %zu more\n", result->skipped.size() - 10);
  }
  std::optional<queue::ReplayResult> compared;
  if (a.compare.has_value()) {
    queue::ReplayOptions other;
    other.policy = *a.compare;
    other.processors = a.options.processors;
    other.tau = a.options.tau;  // the textbook policy: planned with time limits, no what-ifs
    auto c = queue::ReplayTrace(*trace, other);
    if (!c.ok()) {
      std::fprintf(stderr, "oq simulate: %s (--compare %s): %s\n", a.trace_path.c_str(),
                   queue::ReplayPolicyName(*a.compare), std::string(c.status().message()).c_str());
      return 1;
    }
    compared = std::move(*c);
  }
  if (a.json) {
    PrintJson(a, *result, compared.has_value() ? &*compared : nullptr);
  } else {
    PrintText(a, *result, compared.has_value() ? &*compared : nullptr);
  }
  return 0;
}

}  // namespace onequeue::cli

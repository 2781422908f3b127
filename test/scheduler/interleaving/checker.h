// The randomized interleaving checker (issue 24, item 3): a seed makes a world (2-4 nodes, a few
// pods and Slurm jobs, drain or placeholder) and a list of steps (daemon cycles, polls, faults,
// workload changes); the steps run against world.h's CheckedWorld and the invariants of
// src/scheduler/invariants.h are checked after every step. A failing list is shrunk by delta
// debugging (ddmin) to a short one that fails the same invariant, and printed as a numbered story.
//
// Steps carry only abstract parameters (which pod, which failpoint, as indexes taken modulo what
// exists when the step runs), so any sub-list of a run is a run: that is what lets the shrinker
// drop steps. Same seed, same steps, same run (std::mt19937_64 is specified exactly; no
// distribution objects, whose output the standard leaves to the library).
#ifndef ONEQUEUE_TEST_SCHEDULER_INTERLEAVING_CHECKER_H_
#define ONEQUEUE_TEST_SCHEDULER_INTERLEAVING_CHECKER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "spdlog/spdlog.h"
#include "world.h"

namespace onequeue::scheduler {
namespace {

enum class StepKind {
  kCycle, kPoll, kZombieCycle, kZombieExits,
  kPodCreated, kInteractivePod, kPodDeleted, kJobSubmitted, kSrunJobSubmitted, kJobFinishes, kSlurmSchedules,
  kCrash, kCrashAt, kRestart, kLoseLease, kSuccessor, kSlurmDown, kSlurmHang, kSlurmUp, kFailWrites,
  // Issue 25: only in worlds with a shared node.
  kSharedJobSubmitted, kSharedPodCreated, kPlaceholderLost, kSharedCrashAt,
  // Issue 25 step 4: only in worlds with a second shared node.
  kSharedPodGangCreated, kSharedGangJobSubmitted,
};

struct Step {
  StepKind kind = StepKind::kCycle;
  uint32_t a = 0;  // which one / how many / a flag, taken modulo what exists when it runs
};

// How a run starts.
struct Setup {
  std::string mechanism = "drain";
  std::vector<int> nodes;  // per node: 0 kubernetes idle, 1 kubernetes with a pod, 2 lent with a job
  int pending_pods = 0;
  int pending_jobs = 0;
  // Issue 25: a shared node s1 (partition "shared", sharing: shared) besides the others.
  bool shared_node = false;
  // Issue 25: sharing.onLostMirror: evict (else remake), in half the shared worlds.
  bool evict_lost_mirror = false;
  // Issue 25 step 4: a second shared node s2, in half the shared worlds, where gangs of pods
  // (kSharedPodGangCreated) claim one member per node.
  bool second_shared_node = false;
};

struct Scenario {
  uint64_t seed = 0;
  Setup setup;
  std::vector<Step> steps;
};

// Issue 25 step 4: what the runs did with sub-node preemption (for the test that shows they do).
struct ClaimStats {
  int pod_claims = 0;       // distinct pods seen holding a claim
  int job_claims = 0;       // distinct Slurm jobs seen holding a claim
  int started = 0;          // claimants later seen placed on the node they claimed
  int victims_asked = 0;    // evictions, requeues and cancels that landed
  int steps_with_claim = 0; // steps after which a claim stood
  int gang_pod_claims = 0;  // of pod_claims, members of a gang (ns/gang<N>-<i>)
  int gang_job_claims = 0;  // of job_claims, claims of a job of several nodes
};

struct Failure {
  size_t step = 0;  // index into the steps
  invariants::Violation violation;
};

class Checker {
 public:
  // The loop's warnings (every injected failure) would cost more than the steps.
  explicit Checker(KnownOpenDefects off) : off_(off) { spdlog::set_level(spdlog::level::off); }

  Scenario Generate(uint64_t seed, size_t length) const {
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return static_cast<uint32_t>(rng() % n); };
    Scenario s;
    s.seed = seed;
    s.setup.mechanism = pick(2) ? "placeholder" : "drain";
    const int nodes = 2 + static_cast<int>(pick(3));
    for (int i = 0; i < nodes; ++i) s.setup.nodes.push_back(static_cast<int>(pick(3)));
    s.setup.pending_pods = static_cast<int>(pick(2));
    s.setup.pending_jobs = static_cast<int>(pick(3));
    // Drawn from a generator of its own, so every seed without a shared node makes the run it made
    // before issue 25.
    s.setup.shared_node = std::mt19937_64(seed ^ 0x25250025)() % 2 == 0;
    s.setup.evict_lost_mirror = s.setup.shared_node && std::mt19937_64(seed ^ 0x25250026)() % 2 == 0;
    s.setup.second_shared_node = s.setup.shared_node && std::mt19937_64(seed ^ 0x25250027)() % 2 == 0;
    struct Weighted {
      StepKind kind;
      int weight;
      bool allowed;
    };
    const std::vector<Weighted> table = {
        {StepKind::kCycle, 30, true},          {StepKind::kPoll, 12, true},
        {StepKind::kZombieCycle, 4, true},     {StepKind::kZombieExits, 1, true},
        {StepKind::kPodCreated, 6, true},      {StepKind::kInteractivePod, 4, true},
        {StepKind::kPodDeleted, 4, true},      {StepKind::kJobSubmitted, 5, true},
        {StepKind::kSrunJobSubmitted, 2, !off_.h2}, {StepKind::kJobFinishes, 4, true},
        {StepKind::kSlurmSchedules, 3, !off_.h3},   {StepKind::kCrash, 1, true},
        {StepKind::kCrashAt, 2, true},         {StepKind::kRestart, 3, true},
        {StepKind::kLoseLease, 1, true},       {StepKind::kSuccessor, 2, true},
        {StepKind::kSlurmDown, 1, true},       {StepKind::kSlurmHang, 1, true},
        {StepKind::kSlurmUp, 4, true},         {StepKind::kFailWrites, 2, true},
        {StepKind::kSharedJobSubmitted, 5, s.setup.shared_node},
        {StepKind::kSharedPodCreated, 5, s.setup.shared_node},
        {StepKind::kPlaceholderLost, 3, s.setup.shared_node},
        {StepKind::kSharedCrashAt, 2, s.setup.shared_node},
        {StepKind::kSharedPodGangCreated, 3, s.setup.second_shared_node},
        {StepKind::kSharedGangJobSubmitted, 3, s.setup.second_shared_node},
    };
    int total = 0;
    for (const auto& w : table) total += w.allowed ? w.weight : 0;
    while (s.steps.size() < length) {
      int r = static_cast<int>(pick(total));
      StepKind kind = StepKind::kCycle;
      for (const auto& w : table) {
        if (!w.allowed) continue;
        if (r < w.weight) {
          kind = w.kind;
          break;
        }
        r -= w.weight;
      }
      // Most cycles follow a fresh poll, as the poller runs beside the loop.
      // With D1 switched off, always (KnownOpenDefects).
      if (kind == StepKind::kCycle && (pick(10) < 8 || off_.d1)) s.steps.push_back({StepKind::kPoll, 0});
      // A crash's draw keeps bit 16 (world.h ArmCrash: which half of Reserve it stops in); the
      // low 16 bits are what every step drew before that split, so seeds make the runs they made.
      s.steps.push_back({kind, static_cast<uint32_t>(rng() & (kind == StepKind::kCrashAt ? 0x1ffff : 0xffff))});
    }
    s.steps.resize(length);
    return s;
  }

  // Runs the steps; the first violation, if any. `story`: filled with one line per step.
  std::optional<Failure> Run(const Scenario& s, std::vector<std::string>* story = nullptr,
                             int64_t* steps_run = nullptr, ClaimStats* claims = nullptr,
                             int64_t* arrival_cycles = nullptr) const {
    std::map<std::string, std::string> claimed;  // claimant -> node, for `claims`
    Config config = CheckerConfig(s.setup.mechanism, s.setup.shared_node);
    if (s.setup.evict_lost_mirror) config.sharing.on_lost_mirror = "evict";
    CheckedWorld w(config, off_, story != nullptr);
    if (s.setup.shared_node) w.AddSharedNode("s1");
    if (s.setup.second_shared_node) w.AddSharedNode("s2");
    for (size_t i = 0; i < s.setup.nodes.size(); ++i) {
      const std::string name = "n" + std::to_string(i + 1);
      if (s.setup.nodes[i] == 2) w.AddLentNode(name);
      else w.AddKubernetesNode(name, s.setup.nodes[i] == 1);
    }
    for (int i = 0; i < s.setup.pending_pods; ++i) w.PodCreated(false, false);
    for (int i = 0; i < s.setup.pending_jobs; ++i) w.JobSubmitted(i % 2 == 0, false);
    w.StartFirstDaemon();
    w.Observe(-1);
    for (size_t i = 0; i < s.steps.size(); ++i) {
      std::string line = Apply(w, s.steps[i]);
      if (steps_run) ++*steps_run;
      const invariants::WorldFacts facts = w.Observe(static_cast<int>(i));
      if (claims) Count(facts, &claimed, claims);
      std::vector<invariants::Violation> v = invariants::CheckAll(facts);
      if (story) {
        std::string text = absl::StrCat(story->size() + 1, ". ", line);
        if (!v.empty()) absl::StrAppend(&text, " -> VIOLATION (", std::string(1, v.front().invariant), "): ",
                                        v.front().message);
        story->push_back(std::move(text));
      }
      if (arrival_cycles && i + 1 == s.steps.size()) *arrival_cycles += w.arrival_cycles();
      if (!v.empty()) return Failure{i, v.front()};
    }
    return std::nullopt;
  }

  // Delta debugging: the shortest sub-list found that still breaks the same invariant.
  Scenario Shrink(Scenario s, char invariant) const {
    auto fails = [&](const Scenario& c) {
      std::optional<Failure> f = Run(c);
      return f.has_value() && f->violation.invariant == invariant;
    };
    if (auto f = Run(s)) s.steps.resize(f->step + 1);
    size_t n = 2;
    while (s.steps.size() >= 2) {
      const size_t chunk = (s.steps.size() + n - 1) / n;
      bool reduced = false;
      for (size_t start = 0; start < s.steps.size(); start += chunk) {
        Scenario c = s;
        c.steps.erase(c.steps.begin() + start, c.steps.begin() + std::min(start + chunk, c.steps.size()));
        if (fails(c)) {
          if (auto f = Run(c)) c.steps.resize(f->step + 1);
          s = std::move(c);
          n = std::max<size_t>(n - 1, 2);
          reduced = true;
          break;
        }
      }
      if (reduced) continue;
      if (n >= s.steps.size()) break;
      n = std::min(n * 2, s.steps.size());
    }
    return s;
  }

  // The scenario as C++ (a Scenario initializer), for a fixed-seed regression test.
  static std::string AsCode(const Scenario& s) {
    static const char* names[] = {"kCycle", "kPoll", "kZombieCycle", "kZombieExits", "kPodCreated",
                                  "kInteractivePod", "kPodDeleted", "kJobSubmitted", "kSrunJobSubmitted",
                                  "kJobFinishes", "kSlurmSchedules", "kCrash", "kCrashAt", "kRestart",
                                  "kLoseLease", "kSuccessor", "kSlurmDown", "kSlurmHang", "kSlurmUp", "kFailWrites",
                                  "kSharedJobSubmitted", "kSharedPodCreated", "kPlaceholderLost",
                                  "kSharedCrashAt", "kSharedPodGangCreated",
                                  "kSharedGangJobSubmitted"};
    std::string out = absl::StrCat("{", s.seed, ", {\"", s.setup.mechanism, "\", {", absl::StrJoin(s.setup.nodes, ", "),
                                   "}, ", s.setup.pending_pods, ", ", s.setup.pending_jobs,
                                   s.setup.shared_node ? ", true" : "",
                                   s.setup.evict_lost_mirror || s.setup.second_shared_node
                                       ? (s.setup.evict_lost_mirror ? ", true" : ", false")
                                       : "",
                                   s.setup.second_shared_node ? ", true" : "", "}, {");
    for (size_t i = 0; i < s.steps.size(); ++i) {
      absl::StrAppend(&out, i ? ", " : "", "{S::", names[static_cast<int>(s.steps[i].kind)], ", ", s.steps[i].a, "}");
    }
    return out + "}}";
  }

  // The setup and the numbered story of a run.
  std::string Story(const Scenario& s) const {
    std::vector<std::string> lines;
    Run(s, &lines);
    std::string out = absl::StrCat("seed ", s.seed, ", ", s.setup.mechanism, ", nodes:");
    for (size_t i = 0; i < s.setup.nodes.size(); ++i) {
      static const char* kinds[] = {"kubernetes, idle", "kubernetes, a pod", "lent, a Slurm job"};
      absl::StrAppend(&out, " n", i + 1, " (", kinds[s.setup.nodes[i]], ")");
    }
    if (s.setup.shared_node) {
      absl::StrAppend(&out, " s1 (shared, idle", s.setup.evict_lost_mirror ? ", onLostMirror: evict" : "", ")");
      if (s.setup.second_shared_node) absl::StrAppend(&out, " s2 (shared, idle)");
    }
    absl::StrAppend(&out, "; pending: ", s.setup.pending_pods, " pod(s), ", s.setup.pending_jobs, " job(s)\n");
    for (const auto& l : lines) absl::StrAppend(&out, "  ", l, "\n");
    return out;
  }

 private:
  static void Count(const invariants::WorldFacts& w, std::map<std::string, std::string>* claimed, ClaimStats* c) {
    c->victims_asked += static_cast<int>(w.victims.size());
    c->steps_with_claim += !w.claims.empty();
    for (const invariants::ClaimFacts& f : w.claims) {
      if (claimed->emplace(f.claimant, f.node).second) {
        ++(SlurmJobOf(f.claimant) ? c->job_claims : c->pod_claims);
        c->gang_pod_claims += absl::StartsWith(f.claimant, "ns/gang");
        const int nodes = static_cast<int>(std::count_if(w.claims.begin(), w.claims.end(),
                                                         [&](const auto& x) { return x.claimant == f.claimant; }));
        c->gang_job_claims += SlurmJobOf(f.claimant) && nodes > 1;
      }
    }
    for (auto it = claimed->begin(); it != claimed->end();) {
      bool placed = false;
      for (const invariants::PodFacts& p : w.pods) placed = placed || (p.key == it->first && p.node == it->second);
      for (const invariants::NodeFacts& n : w.nodes) {
        for (uint32_t id : n.slurm_jobs) placed = placed || (SlurmWorkloadId(id) == it->first && n.name == it->second);
      }
      if (placed) {
        ++c->started;
        it = claimed->erase(it);
      } else {
        ++it;
      }
    }
  }
  std::string Apply(CheckedWorld& w, const Step& step) const {
    switch (step.kind) {
      case StepKind::kCycle: return w.Cycle(false);
      case StepKind::kPoll: return w.Poll();
      case StepKind::kZombieCycle: return w.Cycle(true);
      case StepKind::kZombieExits: return w.ZombieExits();
      case StepKind::kPodCreated: return w.PodCreated(step.a % 2, false);
      case StepKind::kInteractivePod: return w.PodCreated(step.a % 2, true);
      case StepKind::kPodDeleted: return w.PodDeleted(step.a);
      case StepKind::kJobSubmitted: return w.JobSubmitted(step.a % 2, false);
      case StepKind::kSrunJobSubmitted: return w.JobSubmitted(step.a % 2, true);
      case StepKind::kJobFinishes: return w.JobFinishes(step.a);
      case StepKind::kSlurmSchedules: return w.SlurmSchedules();
      case StepKind::kCrash: return w.Crash();
      case StepKind::kCrashAt: return w.ArmCrash(step.a);
      case StepKind::kRestart: return w.Restart(step.a % 2);
      case StepKind::kLoseLease: return w.LoseLease();
      case StepKind::kSuccessor: return w.Successor();
      case StepKind::kSlurmDown: return w.SlurmDown();
      case StepKind::kSlurmHang: return w.SlurmHang();
      case StepKind::kSlurmUp: return w.SlurmUp();
      case StepKind::kFailWrites: return w.FailWrites(1 + static_cast<int>(step.a % 3));
      case StepKind::kSharedJobSubmitted: return w.SharedJobSubmitted(step.a);
      case StepKind::kSharedPodCreated: return w.SharedPodCreated(step.a);
      case StepKind::kPlaceholderLost: return w.PlaceholderLost(step.a);
      case StepKind::kSharedCrashAt: return w.ArmSharedCrash(step.a);
      case StepKind::kSharedPodGangCreated: return w.SharedPodGangCreated(step.a);
      case StepKind::kSharedGangJobSubmitted: return w.SharedGangJobSubmitted(step.a);
    }
    return "?";
  }

  KnownOpenDefects off_;
};

}  // namespace
}  // namespace onequeue::scheduler

#endif  // ONEQUEUE_TEST_SCHEDULER_INTERLEAVING_CHECKER_H_

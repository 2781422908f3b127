// Issue 24, items 2 and 3: the cross-world invariants (unit tests of the pure functions) and the
// randomized interleaving checker over the real SchedulingLoop (checker.h, world.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "checker.h"
#include "scheduler/invariants.h"

namespace onequeue::scheduler {
namespace {

using invariants::NodeFacts;
using invariants::Violation;
using invariants::WorldFacts;

std::string Letters(const std::vector<Violation>& v) {
  std::string out;
  for (const auto& x : v) out += x.invariant;
  return out;
}

// ---- the invariants, one table per function ------------------------------------------------

TEST(InvariantsTest, RunsOnItsOwnersNodes) {
  struct Case {
    const char* name;
    NodeFacts node;
    size_t violations;
  };
  const std::vector<Case> cases = {
      {"pod on a kubernetes node", {"n1", "kubernetes", "kubernetes", {"ns/a"}, {}}, 0},
      {"job on a lent node", {"n1", "slurm/7", "", {}, {7}}, 0},
      {"victim job on a reserved node", {"n1", "reserved/ns/p", "reserved/ns/p", {}, {7}}, 0},
      {"pod on a lent node", {"n1", "slurm/7", "", {"ns/a"}, {}}, 1},
      {"job on a kubernetes node", {"n1", "kubernetes", "kubernetes", {}, {7}}, 1},
      {"pod beside a job on a reserved node", {"n1", "reserved/ns/p", "", {"ns/p"}, {7}}, 1},
  };
  for (const Case& c : cases) {
    WorldFacts w;
    w.nodes = {c.node};
    EXPECT_EQ(invariants::RunsOnItsOwnersNodes(w).size(), c.violations) << c.name;
  }
}

TEST(InvariantsTest, ReservationsEndExactlyOnce) {
  WorldFacts w;
  w.nodes = {{"n1", "reserved/ns/p", "reserved/ns/p", {}, {}, 8}};
  invariants::ReservationFacts r;
  r.node = "n1";
  r.preemptor = "ns/p";
  w.reservations = {r};
  EXPECT_TRUE(invariants::ReservationsEndExactlyOnce(w).empty()) << "the preemptor still waits";
  w.reservations[0].preemptor_waits = false;
  EXPECT_EQ(Letters(invariants::ReservationsEndExactlyOnce(w)), "b") << "outlives its preemptor, settled";
  w.nodes[0].settled_cycles = 2;
  EXPECT_TRUE(invariants::ReservationsEndExactlyOnce(w).empty()) << "not settled yet";
  w.reservations[0].taken_by = {"ns/replacement"};
  EXPECT_EQ(Letters(invariants::ReservationsEndExactlyOnce(w)), "b") << "another workload on the reserved node";
}

TEST(InvariantsTest, NothingIsLost) {
  WorldFacts w;
  invariants::JobFacts j;
  j.id = 7;
  j.phase = invariants::JobPhase::kCancelled;
  j.cancelled_by_onequeue = true;
  j.requeueable = false;
  w.jobs = {j};
  EXPECT_TRUE(invariants::NothingIsLost(w).empty()) << "an srun job may only be cancelled";
  w.jobs[0].requeueable = true;
  EXPECT_EQ(Letters(invariants::NothingIsLost(w)), "c");
  w.jobs.clear();
  w.nodes = {{"n1", "reserved/ns/p", "reserved/ns/p", {}, {7}, 8}};
  EXPECT_EQ(Letters(invariants::NothingIsLost(w)), "c") << "a victim that never leaves";
  w.nodes[0].settled_cycles = 1;
  EXPECT_TRUE(invariants::NothingIsLost(w).empty()) << "leaving, not settled";
}

TEST(InvariantsTest, FencesAndHoldsHaveAReason) {
  WorldFacts w;
  w.nodes = {{"n1", "slurm/7", "kubernetes", {}, {}, 8}};
  EXPECT_EQ(Letters(invariants::FencesAndHoldsHaveAReason(w)), "d");
  w.nodes[0].owner = "kubernetes";
  EXPECT_TRUE(invariants::FencesAndHoldsHaveAReason(w).empty());
  w.nodes[0].fence = "reserved/ns/p";
  EXPECT_EQ(Letters(invariants::FencesAndHoldsHaveAReason(w)), "d");
  invariants::JobFacts held;
  held.held = true;
  w.nodes.clear();
  w.jobs = {held};
  EXPECT_EQ(Letters(invariants::FencesAndHoldsHaveAReason(w)), "d");
}

TEST(InvariantsTest, NoWriteAfterTheLease) {
  WorldFacts w;
  w.writes = {{"daemon #1", "fence n1 for kubernetes", true}};
  EXPECT_TRUE(invariants::NoWriteAfterTheLease(w).empty());
  w.writes.push_back({"daemon #1", "requeue job 7", false});
  EXPECT_EQ(Letters(invariants::NoWriteAfterTheLease(w)), "e");
}

TEST(InvariantsTest, SharedNodesNeverOverAllocated) {
  using Pod = NodeFacts::SharedPod;
  // s1: 8 CPUs, 32 GiB (in MiB), 4 GPUs; Slurm's own job holds 4 CPUs, 8 GiB, 2 GPUs.
  auto shared = [](std::vector<Pod> pods, NodeFacts::Amounts slurm = {{"cpu", 4}, {"memory", 8192}, {"gpu", 2}}) {
    NodeFacts n;
    n.name = "s1";
    n.shared = true;
    n.capacity = {{"cpu", 8}, {"memory", 32768}, {"gpu", 4}};
    n.slurm_jobs_allocated = std::move(slurm);
    n.shared_pods = std::move(pods);
    for (const auto& p : n.shared_pods) n.pods.push_back(p.key);
    n.slurm_jobs = {7};
    WorldFacts w;
    w.nodes = {n};
    return w;
  };
  auto pod = [](int64_t cpu, int64_t mem, int64_t gpu, bool mirrored) {
    Pod p;
    p.key = "ns/a";
    p.size = {{"cpu", cpu}, {"memory", mem}, {"gpu", gpu}};
    p.mirrored = mirrored;
    return p;
  };
  // A mirrored pod beside the job, filling the node: fine, and (a) does not apply to a shared node.
  EXPECT_EQ(Letters(invariants::CheckAll(shared({pod(4, 8192, 2, true)}))), "");
  // Bound without a running placeholder: (f1), even where it fits.
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({pod(1, 1024, 1, false)}))), "f");
  // Over the capacity in each dimension alone (the others fit): (f2), though mirrored.
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({pod(5, 1024, 1, true)}))), "f") << "cpu";
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({pod(1, 30000, 1, true)}))), "f") << "memory";
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({pod(1, 1024, 3, true)}))), "f") << "gpu";
  // A dimension the node does not offer counts as capacity 0.
  Pod fpga = pod(1, 1024, 1, true);
  fpga.size["fpga"] = 1;
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({fpga}))), "f");
  // The placeholder lost by an admin and Slurm started a 2-GPU job into its space (4 GPUs held by
  // Slurm + the pod's 2): excused up to the lost pod's size, not beyond; reported in time or not.
  Pod lost = pod(2, 4096, 2, false);
  lost.mirror_lost = true;
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({lost}, {{"cpu", 4}, {"gpu", 4}}))), "");
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({lost}, {{"cpu", 4}, {"gpu", 5}}))), "f")
      << "beyond what the lost pod frees";
  lost.lost_cycles = 16;
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({lost}, {{"cpu", 4}, {"gpu", 4}}))), "f")
      << "(f3): neither made again nor reported";
  lost.reported = true;
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({lost}, {{"cpu", 4}, {"gpu", 4}}))), "");
  lost.reported = false;
  lost.mirrored = true;  // made again (the lost flag clears in the world once it runs)
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(shared({lost}))), "");
  // An exclusive node is (a)'s.
  WorldFacts w = shared({pod(8, 1024, 1, false)});
  w.nodes[0].shared = false;
  EXPECT_EQ(Letters(invariants::SharedNodesNeverOverAllocated(w)), "");
}

TEST(InvariantsTest, ClaimsAreNeverVictims) {
  WorldFacts w;
  w.claims = {{"ns/urgent", "s1", {"ns/low"}, true, {}}, {"slurm/8", "s1", {"ns/batch"}, true, {}}};
  EXPECT_TRUE(invariants::ClaimsAreNeverVictims(w).empty()) << "two claims, neither names the other";
  w.claims[0].victims.push_back("slurm/8");
  EXPECT_EQ(Letters(invariants::ClaimsAreNeverVictims(w)), "g") << "(g1) a claim made naming a claimant";
  w.claims[0].made_now = false;
  EXPECT_TRUE(invariants::ClaimsAreNeverVictims(w).empty()) << "its victim left, then claimed room of its own";
  w.claims[0].victims.pop_back();
  w.claims[1].taken_back = {"ns/batch-r"};
  EXPECT_EQ(Letters(invariants::ClaimsAreNeverVictims(w)), "g") << "(g3) a victim's replacement took the room back";
  w.claims[1].taken_back.clear();
  w.victims = {{"slurm/9", "daemon #1", false}};
  EXPECT_TRUE(invariants::ClaimsAreNeverVictims(w).empty()) << "a victim holding no claim";
  w.victims.push_back({"slurm/8", "daemon #1", true});
  EXPECT_EQ(Letters(invariants::CheckAll(w)), "g") << "(g2) a claimant requeued";
}

// ---- the checker ----------------------------------------------------------------------------

// What CI runs with: every fault kind on, the sub-node preemptors among them, and (g3) computed
// (C1 and G3 are fixed: known_defects_test.cc's C1_ and G3_).
KnownOpenDefects CiDefects() {
  KnownOpenDefects off = KnownOpenDefects::None();
  return off;
}

// Issue 25: the worlds with a shared node do what (f) is about (else the million steps would
// check (f) of empty nodes): pods mirrored by placeholders run beside Slurm jobs there, GPU pods
// among them; placeholders are lost (scancel, TIMEOUT, slurmctld restart) and either made again or
// reported; daemons crash inside a mirror.
TEST(InterleavingCheckerTest, SharedNodesRunPodsBesideSlurmJobs) {
  const Checker checker(CiDefects());
  int shared_worlds = 0, with_pod_beside_job = 0, with_gpu_pod = 0, losses = 0, reported = 0, evicted = 0,
      crashes = 0;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    const Scenario s = checker.Generate(seed, 250);
    if (!s.setup.shared_node) continue;
    ++shared_worlds;
    std::vector<std::string> story;
    EXPECT_FALSE(checker.Run(s, &story).has_value()) << "seed " << seed;
    bool seen = false, gpu = false;
    for (const std::string& line : story) {
      seen = seen || absl::StrContains(line, "-> s1");
      gpu = gpu || (absl::StrContains(line, "bind ns/gpu") && absl::StrContains(line, "-> s1"));
      losses += absl::StrContains(line, ". pod placeholder ");
      reported += absl::StrContains(line, "event MirrorLost");
      evicted += absl::StrContains(line, "for sharing.onLostMirror");
      crashes += absl::StrContains(line, "CRASH at mirror-");
    }
    with_pod_beside_job += seen;
    with_gpu_pod += gpu;
  }
  std::printf("shared worlds: %d of 600 seeds; a pod bound on s1 in %d, a GPU pod in %d; %d placeholders lost, "
              "%d reported, %d of them evicted (onLostMirror: evict); %d crashes inside a mirror\n",
              shared_worlds, with_pod_beside_job, with_gpu_pod, losses, reported, evicted, crashes);
  EXPECT_GT(shared_worlds, 50);
  EXPECT_GT(with_pod_beside_job, 10);
  EXPECT_GT(with_gpu_pod, 10);
  EXPECT_GT(losses, 50);
  EXPECT_GT(reported, 0);
  EXPECT_GT(evicted, 0);
  EXPECT_GT(crashes, 0);
}

// Issue 25 step 4: the shared worlds plan sub-node preemptions (else (g) would check nothing):
// interactive and high pods and Slurm jobs of s1 claim room held by lower work of the other world,
// the claims stand through crashes (claim-after-submit, job-claim-after-hold among them), poll
// delay and placeholder loss, and claimants start where they claimed.
TEST(InterleavingCheckerTest, SharedNodesPlanSubNodePreemptionsOfBothWorlds) {
  KnownOpenDefects off = CiDefects();
  off.c1 = false;  // the preemptors (as in CiDefects since C1 is fixed)
  const Checker checker(off);
  ClaimStats c;
  int crashes = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const Scenario s = checker.Generate(seed, 250);
    if (!s.setup.shared_node) continue;
    std::vector<std::string> story;
    EXPECT_FALSE(checker.Run(s, &story, nullptr, &c).has_value()) << "seed " << seed;
    for (const std::string& line : story) {
      crashes += absl::StrContains(line, "CRASH at claim-after-") || absl::StrContains(line, "CRASH at job-claim-after-");
    }
  }
  std::printf("seeds 1-200: %d pod claims (%d by members of a gang of pods), %d job claims (%d on two nodes), %d "
              "claimants started where they claimed, %d victims asked, %d steps with a standing claim, %d crashes at "
              "a claim failpoint\n",
              c.pod_claims, c.gang_pod_claims, c.job_claims, c.gang_job_claims, c.started, c.victims_asked,
              c.steps_with_claim, crashes);
  EXPECT_GT(c.pod_claims, 5);
  EXPECT_GT(c.gang_pod_claims, 2);  // the worlds with s2: gangs claim one member per shared node
  EXPECT_GT(c.gang_job_claims, 0);  // and jobs of two nodes claim on both
  EXPECT_GT(c.job_claims, 5);
  EXPECT_GT(c.started, 5);
  EXPECT_GT(crashes, 0);
}

TEST(InterleavingCheckerTest, TheSameSeedMakesTheSameRun) {
  const Checker checker(KnownOpenDefects::None());
  for (uint64_t seed : {1u, 2u, 3u}) {
    const Scenario s = checker.Generate(seed, 200);
    EXPECT_EQ(checker.Story(s), checker.Story(checker.Generate(seed, 200))) << "seed " << seed;
  }
}

// The CI run: many seeds, at least 1,000,000 steps, invariants after every step, with the fault
// kinds that trigger the defects still open switched off by name (KnownOpenDefects). A violation
// is shrunk and printed as a story.
TEST(InterleavingCheckerTest, AMillionStepsKeepEveryInvariant) {
  // H1, H2, H3, D1, D3, M1, C1 and G3 are fixed (known_defects_test.cc's H1_, H2_, H3_, D1_, D3_,
  // M1_, C1_, G3_ pass): every fault kind is on, s1's interactive and high preemptors among them,
  // and (g3) is computed.
  const Checker checker(CiDefects());
  const int64_t target = std::getenv("ONEQUEUE_CHECKER_STEPS") ? std::atoll(std::getenv("ONEQUEUE_CHECKER_STEPS"))
                                                               : 1000000;
  constexpr size_t kLength = 250;
  int64_t steps = 0, arrival_cycles = 0;
  int failures = 0;
  const auto start = std::chrono::steady_clock::now();
  // Seeds that hit an open defect no fault-kind switch isolates, each with the defect (and its
  // DISABLED_ test in known_defects_test.cc): skipped, and counted apart.
  const std::map<uint64_t, const char*> kSeedsHittingOpenDefects = {};  // D2 (seed 3063) is fixed
  uint64_t seed = 1;
  for (; steps < target; ++seed) {
    if (kSeedsHittingOpenDefects.count(seed)) continue;
    const Scenario s = checker.Generate(seed, kLength);
    std::optional<Failure> f = checker.Run(s, nullptr, &steps, nullptr, &arrival_cycles);
    if (!f) continue;
    ++failures;
    const Scenario small = checker.Shrink(s, f->violation.invariant);
    ADD_FAILURE() << "invariant (" << f->violation.invariant << ") broken, seed " << seed << ", shrunk from "
                  << f->step + 1 << " to " << small.steps.size() << " steps:\n"
                  << checker.Story(small);
    if (failures >= 3) break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("interleaving checker: %lld steps over %llu seeds in %.1f s (%.0f steps/s), %d violation(s), "
              "%lld arrival cycles\n",
              static_cast<long long>(steps), static_cast<unsigned long long>(seed - 1), seconds, steps / seconds,
              failures, static_cast<long long>(arrival_cycles));
  EXPECT_GT(arrival_cycles, 0) << "the cycles between polls plan arrivals alone too (issue 26)";
  EXPECT_GE(steps, target);
}

// Not a test: a search. With ONEQUEUE_CHECKER_HUNT=h1|h2|h3|m1|d1|d3|g3|c1|all, runs seeds with every fault
// kind on except the known defects not named, and prints the first violation's shrunk story.
// Run: interleaving_checker_test --gtest_also_run_disabled_tests --gtest_filter='*Hunt*'
TEST(InterleavingCheckerTest, DISABLED_HuntForADefect) {
  const char* which = std::getenv("ONEQUEUE_CHECKER_HUNT");
  const std::string name = which ? which : "all";
  KnownOpenDefects off = KnownOpenDefects::All();
  if (name == "h1" || name == "all") off.h1 = false;
  if (name == "h2" || name == "all") off.h2 = false;
  if (name == "h3" || name == "all") off.h3 = false;
  if (name == "m1" || name == "all") off.m1 = false;
  if (name == "d1" || name == "all") off.d1 = false;
  if (name == "d3" || name == "all") off.d3 = false;
  if (name == "g3" || name == "all") off.g3 = false;
  if (name == "c1" || name == "all") off.c1 = false;
  const Checker checker(off);
  const uint64_t first = std::getenv("ONEQUEUE_CHECKER_SEED") ? std::atoll(std::getenv("ONEQUEUE_CHECKER_SEED")) : 1;
  for (uint64_t seed = first; seed < first + 20000; ++seed) {
    const Scenario s = checker.Generate(seed, 250);
    std::optional<Failure> f = checker.Run(s);
    if (!f) continue;
    const Scenario small = checker.Shrink(s, f->violation.invariant);
    std::printf("hunting %s: seed %llu breaks (%c) at step %zu; shrunk to %zu steps:\n%s", name.c_str(),
                static_cast<unsigned long long>(seed), f->violation.invariant, f->step + 1, small.steps.size(),
                checker.Story(small).c_str());
    std::printf("as code: %s\n", Checker::AsCode(small).c_str());
    return;
  }
  std::printf("hunting %s: nothing found\n", name.c_str());
}

// Not a test: prints the story of the generated runs of ONEQUEUE_CHECKER_SEEDS (comma separated),
// every fault kind on, as the CI run makes them. Run: interleaving_checker_test
// --gtest_also_run_disabled_tests --gtest_filter='*PrintStories*'
TEST(InterleavingCheckerTest, DISABLED_PrintStories) {
  const char* seeds = std::getenv("ONEQUEUE_CHECKER_SEEDS");
  const Checker checker(KnownOpenDefects::None());
  for (const std::string& seed : std::vector<std::string>(absl::StrSplit(seeds ? seeds : "1", ','))) {
    const Scenario s = checker.Generate(std::stoull(seed), 250);
    std::optional<Failure> f = checker.Run(s);
    std::printf("%s%s\n", checker.Story(s).c_str(),
                f ? absl::StrCat("VIOLATION (", std::string(1, f->violation.invariant), ") at step ", f->step + 1).c_str()
                  : "no violation");
  }
}

}  // namespace
}  // namespace onequeue::scheduler

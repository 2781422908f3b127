// Issue 26 "preemption at scale": the victim search now works from an index kept across a cycle's
// searches and examines a capped, deterministic window of candidate nodes per decision
// (QueueConfig::preemption). Where the cap does not bind, the decisions must be exactly those of
// the search before the index: these tests fingerprint them on generated pools (both worlds,
// gangs, disruption budgets, shared and exclusive nodes, claimed nodes, earlier victims) and
// through QueuePlanner::PlanCycle with many preemptors in one cycle. The expected fingerprints
// were recorded with the search as it was before the index (commit 6ef36a0), the way
// one_queue_bench's plan fingerprint is compared across builds. Where the cap binds, a decision
// is still made and keeps every rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "queue/planner.h"
#include "queue/preemption.h"

namespace onequeue::queue {
namespace {

Resources Cpu(int64_t millicores, int64_t gpus = 0) {
  Resources r;
  r[kCpu] = millicores;
  r[kMemory] = millicores * 4;
  r[kFirstExtended] = gpus;
  return r;
}

// FNV-1a over the decisions, as one_queue_bench's PlanFingerprint.
class Fingerprint {
 public:
  void Mix(uint64_t v) { h_ = (h_ ^ v) * 1099511628211ull; }
  void Mix(std::string_view s) {
    for (char c : s) Mix(static_cast<uint64_t>(static_cast<unsigned char>(c)));
    Mix(uint64_t{0xff});
  }
  uint64_t value() const { return h_ % 1'000'000'007ull; }

 private:
  uint64_t h_ = 1469598103934665603ull;
};

// The cap that never binds (every usable node is a candidate).
void NoBindingCap(QueueConfig& c) { (void)c; }

QueueConfig PoolConfig() {
  QueueConfig c;
  c.qos = {
      {"interactive", 1000, /*preemptible=*/false, /*can_preempt=*/{"normal", "batch"}, /*grace_time=*/30},
      {"normal", 100, true, {"batch"}, 10},
      {"batch", 10, true, {}, 0},
      {"pinned", 10, /*preemptible=*/false, {}, 0},
  };
  c.reservation_depth = 10;
  return c;
}

// A full pool of `nodes` nodes of 16 CPUs (every 8th with 4 GPUs), one in six shared by both
// worlds; every third node runs Slurm jobs, the others pods; 1-4 running workloads per node
// filling most of it, some in gangs across neighbouring nodes, some under a disruption budget.
Snapshot MakePool(int nodes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Snapshot s;
  for (int n = 0; n < nodes; ++n) {
    Node node;
    node.name = "n" + std::to_string(n);
    node.allocatable = Cpu(16000, n % 8 == 0 ? 4 : 0);
    node.allocatable[kPods] = 110;
    node.sharing = rng() % 6 == 0 ? NodeSharing::kShared : NodeSharing::kExclusive;
    node.owner.kind = n % 3 == 0 ? OwnerKind::kSlurm : OwnerKind::kKubernetes;
    s.nodes.push_back(node);
  }
  const char* qos_names[] = {"batch", "batch", "normal", "normal", "pinned"};
  int id = 0;
  for (int n = 0; n < nodes; ++n) {
    int64_t left = 16000 - 2000 * static_cast<int64_t>(rng() % 2);
    const int count = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < count && left >= 1000; ++k) {
      const int64_t cpu = k + 1 == count ? left : 1000 * (1 + static_cast<int64_t>(rng() % (left / 1000)));
      left -= cpu;
      RunningWorkload r;
      r.id = "w" + std::to_string(id++);
      r.kind = n % 3 == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
      r.allocations.push_back({n, Cpu(cpu, n % 8 == 0 && k == 0 ? 2 : 0)});
      // A multi-node Slurm job now and then: the same job on the next node too.
      if (r.kind == WorkloadKind::kSlurmJob && rng() % 5 == 0 && n + 3 < nodes) {
        r.allocations.push_back({n + 3, Cpu(1000)});
      }
      r.priority = static_cast<double>(rng() % 200);
      r.qos = qos_names[rng() % 5];
      r.start_time = static_cast<Time>(rng() % 5000);
      r.expected_end = r.start_time + 3600 + static_cast<Time>(rng() % 7200);
      if (rng() % 10 == 0) r.preemptible = false;
      if (rng() % 9 == 0) r.gang_id = "g" + std::to_string((n / 4) * 4 + static_cast<int>(rng() % 4)) + "-" +
                                        std::to_string(r.kind == WorkloadKind::kSlurmJob);
      if (rng() % 4 == 0) r.disruption_budget_group = "pdb" + std::to_string(rng() % 8);
      s.running.push_back(r);
    }
  }
  for (int g = 0; g < 8; ++g) {
    if (g != 7) s.disruptions_allowed["pdb" + std::to_string(g)] = static_cast<int32_t>(rng() % 4);
  }
  return s;
}

std::vector<Resources> FreeNow(const Snapshot& s) {
  std::vector<Resources> free;
  for (const Node& n : s.nodes) free.push_back(n.allocatable);
  for (const RunningWorkload& r : s.running) {
    for (const Allocation& a : r.allocations) free[a.node] -= a.used;
  }
  return free;
}

void MixChoice(Fingerprint& f, const std::optional<PreemptionChoice>& c) {
  if (!c) {
    f.Mix(uint64_t{7});
    return;
  }
  f.Mix(c->decision.preemptor);
  for (const std::string& v : c->decision.victims) f.Mix(v);
  for (NodeIndex n : c->decision.member_nodes) f.Mix(static_cast<uint64_t>(n));
  f.Mix(static_cast<uint64_t>(c->decision.earliest_start));
  f.Mix(static_cast<uint64_t>(c->victim_count));
  f.Mix(static_cast<uint64_t>(c->run_time_lost));
  f.Mix(static_cast<uint64_t>(c->exact));
  f.Mix(c->reason);
}

struct ChooseRun {
  uint64_t fingerprint = 0;
  int decisions = 0;
};

// `preemptors` decisions on one pool, each with its own preemptor, eligible nodes, claimed nodes
// and earlier victims; all through one planner (its index kept across the calls).
ChooseRun ChooseOnPool(int nodes, uint64_t seed, int preemptors, bool no_binding_cap) {
  auto snapshot = std::make_shared<const Snapshot>(MakePool(nodes, seed));
  QueueConfig config = PoolConfig();
  if (no_binding_cap) NoBindingCap(config);
  const std::vector<Resources> free_now = FreeNow(*snapshot);
  std::mt19937_64 rng(seed * 31 + 1);
  const CheapestVictimsPlanner planner;
  Fingerprint f;
  ChooseRun run;
  std::vector<std::string> victims;  // grows as in a cycle
  std::vector<char> claimed(nodes, 0);
  for (int p = 0; p < preemptors; ++p) {
    PendingWorkload w;
    w.id = "p" + std::to_string(p);
    w.kind = rng() % 4 == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
    w.qos = rng() % 3 == 0 ? "normal" : "interactive";
    w.members = rng() % 4 == 0 ? 2 + static_cast<int32_t>(rng() % 3) : 1;
    w.per_member = Cpu(2000 * (1 + static_cast<int64_t>(rng() % 8)), rng() % 10 == 0 ? 2 : 0);
    PreemptionInput in;
    in.snapshot = snapshot.get();
    in.config = &config;
    in.preemptor = &w;
    in.preemptor_priority = 60.0 + static_cast<double>(rng() % 180);
    in.now = 6000;
    const int pattern = static_cast<int>(rng() % 3);
    for (int n = 0; n < nodes; ++n) {
      if (pattern == 0 || (pattern == 1 && n % 2 == 0) || (pattern == 2 && rng() % 5 != 0)) {
        in.eligible_nodes.push_back(n);
      }
    }
    in.free_now = &free_now;
    in.claimed = &claimed;
    in.already_victims = &victims;
    const std::optional<PreemptionChoice> c = planner.Choose(in);
    MixChoice(f, c);
    if (c) {
      ++run.decisions;
      // As a cycle does: its nodes are claimed, its victims not taken again.
      for (NodeIndex n : c->decision.member_nodes) claimed[n] = 1;
      victims.insert(victims.end(), c->decision.victims.begin(), c->decision.victims.end());
    }
  }
  run.fingerprint = f.value();
  return run;
}

struct CycleRun {
  uint64_t fingerprint = 0;
  size_t preemptions = 0;
  size_t starts = 0;
};

// One PlanCycle over a full pool and a queue of `pending` workloads, a quarter of them
// interactive (may preempt) and a sixth normal (may preempt batch).
CycleRun PlanOnPool(int nodes, uint64_t seed, int pending, bool no_binding_cap) {
  auto snapshot = std::make_shared<Snapshot>(MakePool(nodes, seed));
  std::mt19937_64 rng(seed * 17 + 3);
  for (int i = 0; i < pending; ++i) {
    PendingWorkload w;
    w.id = "q" + std::to_string(i);
    w.kind = rng() % 3 == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
    const int q = static_cast<int>(rng() % 12);
    w.qos = q < 3 ? "interactive" : q < 5 ? "normal" : "batch";
    w.members = rng() % 5 == 0 ? 2 + static_cast<int32_t>(rng() % 3) : 1;
    w.members_present = w.members;
    w.per_member = Cpu(1000 * (1 + static_cast<int64_t>(rng() % 12)));
    if (w.kind == WorkloadKind::kPodGroup) w.per_member[kPods] = 1;
    w.time_limit = 600 + static_cast<Duration>(rng() % 7200);
    w.submit_time = 5000 + static_cast<Time>(rng() % 900);
    snapshot->pending.push_back(w);
  }
  QueueConfig config = PoolConfig();
  if (no_binding_cap) NoBindingCap(config);
  const CheapestVictimsPlanner victims;
  QueuePlanner planner(config, &victims);
  const Plan p = planner.PlanCycle(snapshot, 6000);
  Fingerprint f;
  for (const auto& d : p.starts) {
    f.Mix(d.workload);
    for (auto n : d.member_nodes) f.Mix(static_cast<uint64_t>(n));
  }
  for (const auto& r : p.reservations) {
    f.Mix(r.workload);
    f.Mix(static_cast<uint64_t>(r.start));
    for (auto n : r.member_nodes) f.Mix(static_cast<uint64_t>(n));
  }
  for (const auto& d : p.preemptions) {
    f.Mix(d.preemptor);
    for (const auto& v : d.victims) f.Mix(v);
    for (auto n : d.member_nodes) f.Mix(static_cast<uint64_t>(n));
    f.Mix(static_cast<uint64_t>(d.earliest_start));
  }
  for (const auto& c : p.owner_changes) {
    f.Mix(static_cast<uint64_t>(c.node));
    f.Mix(static_cast<uint64_t>(c.to));
  }
  for (const auto& w : p.waiting) {
    f.Mix(w.workload);
    f.Mix(static_cast<uint64_t>(w.reason));
    f.Mix(static_cast<uint64_t>(w.queue_position));
    f.Mix(static_cast<uint64_t>(w.estimated_start.value_or(-1)));
  }
  return {f.value(), p.preemptions.size(), p.starts.size()};
}

// Recorded with the search before the index (6ef36a0). Pools of at most 100 usable nodes never
// bind the default cap (minCandidateNodesAbsolute 100); the larger ones run with a cap of 100 %.
struct ChooseCase {
  int nodes;
  uint64_t seed;
  int preemptors;
  bool no_binding_cap;
  uint64_t fingerprint;
  int decisions;
};

TEST(PreemptionEquivalence, ChooseDecidesAsBeforeWhereTheCapDoesNotBind) {
  const ChooseCase cases[] = {
      {6, 1, 60, false, 707145165, 5},     {12, 2, 60, false, 885086939, 8},
      {40, 3, 60, false, 318142348, 25},   {100, 4, 60, false, 364783422, 42},
      {100, 5, 60, true, 762543207, 42},   {300, 6, 40, true, 494170367, 33},
      {800, 7, 30, true, 388455497, 23},
  };
  for (const ChooseCase& c : cases) {
    const ChooseRun run = ChooseOnPool(c.nodes, c.seed, c.preemptors, c.no_binding_cap);
    EXPECT_EQ(run.fingerprint, c.fingerprint) << c.nodes << " nodes, seed " << c.seed;
    EXPECT_EQ(run.decisions, c.decisions) << c.nodes << " nodes, seed " << c.seed;
  }
}

struct CycleCase {
  int nodes;
  uint64_t seed;
  int pending;
  bool no_binding_cap;
  uint64_t fingerprint;
  size_t preemptions;
};

TEST(PreemptionEquivalence, PlanCycleDecidesAsBeforeWhereTheCapDoesNotBind) {
  const CycleCase cases[] = {
      {30, 11, 80, false, 184665834, 15},
      {100, 12, 300, false, 570976042, 49},
      {400, 13, 800, true, 708392659, 211},
  };
  for (const CycleCase& c : cases) {
    const CycleRun run = PlanOnPool(c.nodes, c.seed, c.pending, c.no_binding_cap);
    EXPECT_EQ(run.fingerprint, c.fingerprint) << c.nodes << " nodes, seed " << c.seed;
    EXPECT_EQ(run.preemptions, c.preemptions) << c.nodes << " nodes, seed " << c.seed;
  }
}

}  // namespace
}  // namespace onequeue::queue

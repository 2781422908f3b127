// Tenancy on shared nodes (issue 25, docs/sharing.md section 6): a node marked same-tenant
// (Node::same_tenant, the daemon's `sharing: shared-same-tenant`) is shared between pods and Slurm
// jobs, each at its size, but only between work of one tenant at a time (Slurm's exclusive=user /
// MCS idea). Scenario tests on one or two 4-GPU nodes: workloads in -> decisions out, every plan
// also passing the independent checker (CheckPlanInvariants), which checks the tenancy rule on its
// own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "queue/profile.h"

#include "queue/planner.h"
#include "queue/preemption.h"
#include "testing_builders.h"

namespace onequeue::queue {
namespace {

using namespace ::onequeue::queue::testing;  // NOLINT
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr auto kPod = WorkloadKind::kPodGroup;
constexpr auto kJob = WorkloadKind::kSlurmJob;

Node TenantNode(std::string name, bool same_tenant = true) {
  Node n = MakeNode(std::move(name), 32000, 256 * kGiB, 4);
  n.sharing = NodeSharing::kShared;
  n.same_tenant = same_tenant;
  return n;
}

RunningWorkload RunningOf(std::string tenant, std::string id, WorkloadKind kind, NodeIndex node, int64_t gpus,
                          Time end, double priority = 1, std::string qos = "") {
  RunningWorkload r = MakeRunning(std::move(id), node, Cpu(8000, 32 * kGiB, gpus), 0, end, priority);
  r.kind = kind;
  r.qos = std::move(qos);
  r.tenant = std::move(tenant);
  return r;
}

PendingWorkload WantsOf(std::string tenant, std::string id, WorkloadKind kind, int64_t gpus, Time submit = 1,
                        Duration limit = 100) {
  PendingWorkload w =
      PendingBuilder(std::move(id), 8000).Kind(kind).Memory(32 * kGiB).Gpus(gpus).Limit(limit).Submit(submit);
  w.tenant = std::move(tenant);
  return w;
}

Plan PlanOnce(const Snapshot& s, QueueConfig c = SubmitOrderConfig(), PreemptionPlanner* victims = nullptr) {
  auto snap = std::make_shared<Snapshot>(s);
  QueuePlanner planner(c, victims);
  Plan p = planner.PlanCycle(snap, 10);
  if (victims == nullptr) CheckPlanInvariants(*snap, c, p);
  return p;
}

// A same-tenant node holding a physics Slurm job takes a physics pod beside it at once; a chemistry
// pod that would fit as well waits for the node to hold no physics work (the job's end at 1000),
// although it was submitted first. On a plain shared node both start.
TEST(Tenancy, ASameTenantNodeTakesOnlyWorkOfTheTenantItHolds) {
  Snapshot s;
  s.nodes = {TenantNode("gpu-0")};
  s.running = {RunningOf("physics", "slurm/17", kJob, 0, 2, 1000)};
  s.pending = {WantsOf("chemistry", "chem/train", kPod, 1, 1), WantsOf("physics", "phys/notebook", kPod, 1, 2)};
  Plan p = PlanOnce(s);
  EXPECT_THAT(StartedIds(p), ElementsAre("phys/notebook"));
  const ReserveDecision* r = FindReservation(p, "chem/train");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, 1000);  // the physics job's end; the notebook ends at 110

  s.nodes[0].same_tenant = false;
  Plan shared = PlanOnce(s);
  EXPECT_THAT(StartedIds(shared), UnorderedElementsAre("chem/train", "phys/notebook"));
}

// One tenant's pods and Slurm jobs share the node at the size each asks for, as on any shared node.
TEST(Tenancy, PodsAndJobsOfOneTenantShareTheNode) {
  Snapshot s;
  s.nodes = {TenantNode("gpu-0")};
  s.running = {RunningOf("physics", "phys/serve", kPod, 0, 1, 1000)};
  s.pending = {WantsOf("physics", "slurm/18", kJob, 2, 1), WantsOf("physics", "phys/train", kPod, 1, 2)};
  Plan p = PlanOnce(s);
  EXPECT_THAT(StartedIds(p), ElementsAre("slurm/18", "phys/train"));
  EXPECT_THAT(p.owner_changes, IsEmpty());
}

// An empty same-tenant node goes to the first tenant that starts there: the second tenant's
// workload takes the other node, and with one node only it waits for the first one's end.
TEST(Tenancy, TheFirstTenantToStartOnAnEmptyNodeHoldsItUntilItsWorkEnds) {
  Snapshot s;
  s.nodes = {TenantNode("gpu-0"), TenantNode("gpu-1")};
  s.pending = {WantsOf("physics", "slurm/1", kJob, 1, 1), WantsOf("chemistry", "chem/a", kPod, 1, 2),
               WantsOf("physics", "phys/b", kPod, 1, 3)};
  Plan p = PlanOnce(s);
  ASSERT_THAT(StartedIds(p), ElementsAre("slurm/1", "chem/a", "phys/b"));
  const StartDecision* job = FindStart(p, "slurm/1");
  const StartDecision* chem = FindStart(p, "chem/a");
  const StartDecision* phys = FindStart(p, "phys/b");
  EXPECT_NE(chem->member_nodes, job->member_nodes);
  EXPECT_EQ(phys->member_nodes, job->member_nodes);

  s.nodes = {TenantNode("gpu-0")};
  Plan one = PlanOnce(s);
  EXPECT_THAT(StartedIds(one), ElementsAre("slurm/1", "phys/b"));
  const ReserveDecision* r = FindReservation(one, "chem/a");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->start, 110);  // once both physics workloads have ended (10 + 100)
}

// A reservation holds the node for its tenant too: on a node whose GPUs physics holds until 500
// and has reserved for another job over [500, 600), CPU-only chemistry pods that would fit beside
// start neither now nor in that window: they are planned from 600 on.
TEST(Tenancy, AReservationKeepsAnotherTenantOffTheNodeToo) {
  Snapshot s;
  s.nodes = {TenantNode("gpu-0")};
  s.running = {RunningOf("physics", "slurm/17", kJob, 0, 4, 500)};
  s.pending = {WantsOf("physics", "slurm/18", kJob, 4, 1), WantsOf("chemistry", "chem/long", kPod, 0, 2, 1000),
               WantsOf("chemistry", "chem/short", kPod, 0, 3, 50)};
  Plan p = PlanOnce(s);
  EXPECT_THAT(StartedIds(p), IsEmpty());
  const ReserveDecision* job = FindReservation(p, "slurm/18");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->start, 500);
  for (const char* id : {"chem/long", "chem/short"}) {  // past the reservation depth: estimates
    const WaitingStatus* w = FindWaiting(p, id);
    ASSERT_NE(w, nullptr) << id;
    ASSERT_TRUE(w->estimated_start.has_value()) << id;
    EXPECT_GE(*w->estimated_start, 600) << id;
  }
  // Without tenancy both would start now beside the job (8 CPUs each of 32, no GPU).
  s.nodes[0].same_tenant = false;
  EXPECT_THAT(StartedIds(PlanOnce(s)), UnorderedElementsAre("chem/long", "chem/short"));
}

// Preemption never crosses tenants on a same-tenant node (not built: the victims would have to be
// all of the other tenant's work there): an urgent chemistry pod waits on a node that physics
// holds, while on a plain shared node it preempts the physics job.
TEST(Tenancy, APreemptorDoesNotTakeANodeAnotherTenantHolds) {
  Snapshot s;
  s.nodes = {TenantNode("gpu-0")};
  s.running = {RunningOf("physics", "slurm/17", kJob, 0, 4, 100000, 5, "low")};
  PendingWorkload urgent = WantsOf("chemistry", "chem/jupyter", kPod, 2);
  urgent.qos = "interactive";
  s.pending = {urgent};
  QueueConfig c = SubmitOrderConfig();
  c.weights.qos = 10000;
  c.qos = {{"interactive", 100, false, {"low"}, 0}, {"low", 1, true, {}, 0}};
  CheapestVictimsPlanner victims;
  Plan p = PlanOnce(s, c, &victims);
  EXPECT_THAT(p.preemptions, IsEmpty());
  EXPECT_THAT(StartedIds(p), IsEmpty());

  s.nodes[0].same_tenant = false;
  Plan shared = PlanOnce(s, c, &victims);
  ASSERT_EQ(shared.preemptions.size(), 1u);
  EXPECT_THAT(shared.preemptions[0].victims, ElementsAre("slurm/17"));

  // Within one tenant sub-node preemption works as on any shared node.
  s.nodes[0].same_tenant = true;
  s.pending[0].tenant = "physics";
  Plan same = PlanOnce(s, c, &victims);
  ASSERT_EQ(same.preemptions.size(), 1u);
  EXPECT_THAT(same.preemptions[0].victims, ElementsAre("slurm/17"));
}

// The profile's answer against brute force on random same-tenant nodes: the minimum free capacity
// over every second of [start, end), and none at all while a block of another tenant overlaps it
// (kNoTenant blocks are anyone's). Shared and exclusive nodes, reservations ignored or not.
TEST(Tenancy, TheProfileMatchesBruteForceOnRandomSameTenantNodes) {
  std::mt19937_64 rng(25);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  constexpr Time kNow = 1000;
  using Block = AvailabilityProfile::Block;
  for (int trial = 0; trial < 3'000; ++trial) {
    const bool shared = pick(0, 1) == 0;
    const bool same_tenant = pick(0, 3) != 0;
    Resources capacity;
    capacity[kCpu] = 16'000;
    capacity[kMemory] = 64;
    AvailabilityProfile profile({capacity}, kNow, /*window=*/200, /*resolution=*/1, shared);
    profile.SetSameTenant({static_cast<uint8_t>(same_tenant ? 1 : 0)});
    std::vector<Block> blocks;
    const int n = static_cast<int>(pick(0, 5));
    for (int i = 0; i < n; ++i) {
      Block b;
      b.reservation = pick(0, 2) == 0;
      b.start = b.reservation ? kNow + pick(0, 60) : kNow - pick(0, 50);
      b.end = pick(0, 9) == 0 ? kForever : std::max(b.start, kNow) + pick(1, 80);
      b.kind = pick(0, 3) == 0 ? WorkloadKind::kSlurmJob : WorkloadKind::kPodGroup;
      b.tenant = static_cast<int16_t>(pick(-1, 2));
      b.used[kCpu] = pick(0, 4) * 1000;
      b.used[kMemory] = pick(0, 16);
      Resources peak = b.used;
      for (const auto& o : blocks) peak += o.used;
      if (!capacity.Covers(peak)) continue;
      blocks.push_back(b);
      profile.Add(0, b);
    }
    profile.SealBase();
    for (int q = 0; q < 20; ++q) {
      Resources request;
      request[kCpu] = pick(0, 8) * 500;
      request[kMemory] = pick(0, 8);
      const Time start = pick(0, 2) == 0 ? kNow : kNow + pick(0, 100);
      const Time end = start + pick(1, 120);
      const WorkloadKind kind = pick(0, 1) ? WorkloadKind::kPodGroup : WorkloadKind::kSlurmJob;
      const int16_t tenant = static_cast<int16_t>(pick(0, 2));
      const int64_t cap = pick(1, 8);
      const bool ignore = pick(0, 1) == 0;
      int64_t brute = cap;
      for (Time t = start; t < end && brute > 0; ++t) {
        Resources used;
        for (const Block& b : blocks) {
          if (ignore && b.reservation) continue;
          if (b.start <= t && t < b.end) {
            if ((!shared && b.kind != kind) ||
                (same_tenant && b.tenant != AvailabilityProfile::kNoTenant && b.tenant != tenant)) {
              brute = 0;
              break;
            }
            used += b.used;
          }
        }
        if (brute > 0) brute = std::min(brute, (capacity - used).CopiesOf(request, cap));
      }
      ASSERT_EQ(profile.Copies(0, start, end, request, kind, cap, ignore, tenant), brute)
          << "trial " << trial << " query " << q << " start " << start << " end " << end << " tenant " << tenant
          << " ignore_reservations " << ignore << " same_tenant " << same_tenant;
      if (!ignore && same_tenant) {
        // AvailTimeFirst: the first grid time at which one copy fits, by the same rule.
        const Time first = profile.AvailTimeFirst(0, start, end - start, request, kind, tenant);
        if (first < kForever) {
          EXPECT_GT(profile.Copies(0, first, first + (end - start), request, kind, 1, false, tenant), 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace onequeue::queue

#pragma once
// The cross-world invariants of issue 24, written once, as pure functions over a description of
// both worlds' state (what the Kubernetes API and slurmctld hold, plus the few facts about the
// past that an invariant needs: the reservation ledger, the writes that landed since the last
// check, how long each node has stood still). No I/O, no clock, no threads.
//
// Two kinds of rule:
//   * safety, checked at every state: a pod beside a Slurm job, a requeueable job cancelled, a
//     workload placed on a node reserved for another, a write landing after its writer's lease;
//   * settling, checked once a node has stood still (owner, fence, what runs there) through
//     `settle_cycles` healthy cycles (the daemon leads, slurmrestd answers, the poll is fresh, no
//     write is failed on purpose): a transition may pass through an odd state for a cycle or two,
//     but it must not stay there while nothing stops the daemon from finishing it.
//
// Owner values are the node annotation onequeue.io/owner: "kubernetes", "slurm[/<job>]",
// "reserved/<workload>", or "" (free). A fence is onequeue's drain or placeholder on the Slurm
// node, named by the owner it was made for ("kubernetes", "reserved/<workload>"); "" = none.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace onequeue::scheduler::invariants {

struct NodeFacts {
  std::string name;
  std::string owner;  // the Kubernetes annotation
  std::string fence;  // onequeue's fence on the Slurm side, "" when the node is not fenced
  std::vector<std::string> pods;       // pod keys bound there and running
  std::vector<uint32_t> slurm_jobs;    // Slurm jobs running there (not onequeue's placeholders)
  int settled_cycles = 0;              // healthy cycles through which all of the above held still
  // Issue 25: a shared node (slurm.partitions.<p>.sharing: shared): pods and Slurm jobs side by
  // side, each pod mirrored in Slurm by a pod placeholder of its size. Amounts are per dimension,
  // in the queue's names and units ("cpu" in millicores or CPUs, "memory" in bytes or MiB,
  // "nvidia.com/gpu", ...): whatever the world uses, the same for the capacity, pods and jobs.
  using Amounts = std::map<std::string, int64_t>;
  bool shared = false;
  Amounts capacity;
  Amounts slurm_jobs_allocated;  // Slurm's own jobs running there (not onequeue's pod placeholders)
  struct SharedPod {
    std::string key;
    Amounts size;
    // A running pod placeholder of this pod on this node, of at least its size in every dimension.
    bool mirrored = false;
    // Something other than onequeue (an admin's scancel, TIMEOUT, a slurmctld restart that forgot
    // it) ended a placeholder of this pod, and no placeholder of it has run since: Slurm's books
    // no longer hold the pod, and Slurm may start its own work into that space.
    bool mirror_lost = false;
    // Onequeue reported the loss on the pod (the MirrorLost event) since it was lost.
    bool reported = false;
    // Healthy cycles of one leader since the loss (a new leader starts again from 0).
    int lost_cycles = 0;
  };
  std::vector<SharedPod> shared_pods;  // the pods bound there
};

struct PodFacts {
  std::string key;
  std::string workload;  // the queue's workload id ("ns/name", or the gang's)
  std::string node;      // "" while pending
};

enum class JobPhase { kPending, kRunning, kFinished, kCancelled };

struct JobFacts {
  uint32_t id = 0;
  JobPhase phase = JobPhase::kPending;
  bool held = false;        // pending with priority 0
  std::string comment;      // the job's comment (onequeue's hold reason starts with "onequeue:")
  bool requeueable = true;  // Slurm would requeue it (a batch job with requeue=true); srun/salloc: false
  bool cancelled_by_onequeue = false;
};

enum class ReservationOutcome { kOpen, kConsumed, kReleased };

// One reservation: node N annotated reserved/<preemptor> from `opened_step` until it closed.
struct ReservationFacts {
  std::string node, preemptor;
  int opened_step = 0;
  ReservationOutcome outcome = ReservationOutcome::kOpen;
  // Other workloads placed on the node while it stood for a preemptor that waits (once the
  // preemptor no longer waits the mark holds nothing: its release may come later, issue 26).
  std::vector<std::string> taken_by;
  std::vector<std::string> evicted_again;  // victims evicted (requeued, cancelled) more than once for it
  bool preemptor_waits = true;        // the preemptor is still pending (exists, not placed)
};

// A write that reached the Kubernetes API or slurmctld.
struct WriteFacts {
  std::string writer;  // "daemon #2"
  std::string what;    // "fence n1 kubernetes"
  bool writer_leads = true;  // the writer's lease was valid when the write landed
};

// Issue 25 step 4: a sub-node preemption's claim standing now: a pod's pending placeholder pinned
// to a shared node that names victims, or a Slurm job held by onequeue with the claim in its
// AdminComment ("onequeue: Preempting on shared node N: victims").
struct ClaimFacts {
  std::string claimant;  // the preemptor's workload id ("ns/name", "slurm/<id>")
  std::string node;
  std::vector<std::string> victims;
  bool made_now = false;  // not standing at the last check (a new claim, or one written again)
  // Victims of this claim, or their replacements (a requeued job, an evicted pod's recreated
  // twin), placed back on the node since the last check while the claim stood, where the node's
  // allocations of both worlds plus the claimant's request no longer fit its capacity.
  std::vector<std::string> taken_back;
};

// A victim asked to leave (evicted, requeued, cancelled) whose request landed since the last check.
struct VictimFacts {
  std::string victim;  // workload id
  std::string by;      // the writer ("daemon #2")
  bool held_claim = false;  // the victim held a claim of its own when the request landed
};

struct WorldFacts {
  std::vector<NodeFacts> nodes;
  std::vector<ClaimFacts> claims;
  std::vector<VictimFacts> victims;  // asked since the last check
  std::vector<PodFacts> pods;
  std::vector<JobFacts> jobs;
  std::vector<ReservationFacts> reservations;
  std::vector<WriteFacts> writes;  // landed since the last check
  int settle_cycles = 8;
  // (f): healthy cycles within which a lost pod placeholder is made again or its pod reported (the
  // daemon waits PodMirrorOptions::pending_timeout, 60 s, for a re-made one to start).
  int lost_mirror_cycles = 16;
};

struct Violation {
  char invariant = '?';  // 'a' .. 'g'
  std::string message;
};

// (a) Every running pod and every running Slurm job is on a node owned by its world: no pod on a
// node lent to Slurm, no Slurm job on a Kubernetes node, never both on one node (nodes are
// exclusive). A reserved node may still hold its victims while they leave. Shared nodes: (f).
std::vector<Violation> RunsOnItsOwnersNodes(const WorldFacts& w);
// (b) Every reservation is consumed (its preemptor placed there) or released exactly once: no
// other workload is placed on a reserved node (it would be consumed twice), each victim is
// evicted once for it, and a reservation whose preemptor no longer waits does not stay once the
// node has settled (never ended).
std::vector<Violation> ReservationsEndExactlyOnce(const WorldFacts& w);
// (c) No pod and no Slurm job is lost: a job is cancelled by onequeue only where Slurm cannot
// requeue it; a Slurm victim on a node reserved for a pod does not keep running once the node
// has settled (it is requeued, or cancelled where it cannot be).
std::vector<Violation> NothingIsLost(const WorldFacts& w);
// (d) A node is fenced, and a job held, only while onequeue records why: a fence made for
// kubernetes stands only on a node annotated kubernetes (or free), one made for reserved/P only
// while the node is reserved for P and P waits (once settled); a held job carries onequeue's reason.
std::vector<Violation> FencesAndHoldsHaveAReason(const WorldFacts& w);
// (e) No write lands after its writer's lease ended.
std::vector<Violation> NoWriteAfterTheLease(const WorldFacts& w);
// (f) Issue 25, on every shared node at every step:
//   f1. every pod bound there is mirrored (a running placeholder of at least its size in every
//       dimension), unless its placeholder was lost by something other than onequeue and no
//       placeholder of it has run since (mirror_lost);
//   f2. in every dimension, the pods bound there plus Slurm's own jobs there never exceed the
//       node's capacity, except by at most the sizes of the pods whose mirror is lost: while a
//       mirror is lost Slurm does not hold the pod's space and may start its work there, which
//       onequeue cannot prevent, only report;
//   f3. a lost mirror does not stay unreported: within lost_mirror_cycles healthy cycles of one
//       leader the pod is mirrored again, gone, or reported (the MirrorLost event on the pod).
std::vector<Violation> SharedNodesNeverOverAllocated(const WorldFacts& w);
// (g) Issue 25 step 4, at every step: work holding a claim is never another preemptor's victim.
//   g1. no claim is made naming as a victim a workload that holds a standing claim itself (its
//       room is promised to it while its own victims leave). Only claims made since the last
//       check: a victim that has left (a requeued job, pending again) may claim room of its own
//       while the claim that named it still stands;
//   g2. no eviction, requeue or cancel lands on a workload that held a claim when it landed;
//   g3. the no-loop guarantee at sub-node size: while a claim stands, no victim of it (nor its
//       replacement) takes the claimed room back before the claimant starts (taken_back).
// (Once the claimed job starts or the claiming pod is bound, its claim is gone: it is ordinary
// running work again, preemptible by its QOS.)
std::vector<Violation> ClaimsAreNeverVictims(const WorldFacts& w);

std::vector<Violation> CheckAll(const WorldFacts& w);

}  // namespace onequeue::scheduler::invariants

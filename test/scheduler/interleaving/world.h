// The interleaving checker's world (issue 24, item 3): the in-memory Kubernetes and Slurm of
// fake_world.h, one or two daemons (the leader, and a deposed one still running) each made of the
// REAL SchedulingLoop behind the REAL write gate (FencedClusterActions / FencedSlurmActions) whose
// WritePermit is the lease this world keeps, and the faults: crashes at any step (between cycles
// or at a named step inside one), restarts with and without a successor, a lost lease, polls
// delayed or lost, slurmrestd down (kUnavailable) or hanging (each call takes 60 s, or the time
// its writer has left if less, and ends in kDeadlineExceeded after it landed), a requeue refused (srun-like jobs), Slurm's own scheduler
// starting a job on an unfenced node between polls, and any write failing.
//
// After every step the world describes itself as invariants::WorldFacts for the invariants of
// src/scheduler/invariants.h. Everything is deterministic: no clock, no threads, no randomness
// (the steps come from checker.h's generator).
#ifndef ONEQUEUE_TEST_SCHEDULER_INTERLEAVING_WORLD_H_
#define ONEQUEUE_TEST_SCHEDULER_INTERLEAVING_WORLD_H_

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../fake_world.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/fenced_actions.h"
#include "scheduler/invariants.h"
#include "scheduler/job_claim.h"
#include "scheduler/kube_source.h"
#include "scheduler/pod_mirror.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {
namespace {

// The fault kinds that triggered the defects of issue 24, each switch named after its defect
// (the hunt and the known-defect tests switch them one by one; all are fixed and on in CI).
struct KnownOpenDefects {
  // H1: a daemon's cycle before its first Slurm poll. Off: a (re)started daemon polls first (and
  // slurmrestd answers that poll).
  bool h1 = false;
  // H2: a refused or failed requeue/cancel is never retried. Off: no srun-like jobs, and
  // Requeue/Cancel are spared by slurmrestd outages and failed writes.
  bool h2 = false;
  // H3: a node returned to Kubernetes without a live Ready check. Off: Slurm's own scheduler never
  // starts a job between polls.
  bool h3 = false;
  // M1: Slurm writes are fenced only when they start. Off: the lease is not lost while slurmrestd
  // hangs (and slurmrestd does not start hanging without a lease).
  bool m1 = false;
  // D1 (found by this checker): a reservation whose preemptor no longer waits is released to
  // kubernetes (ReleaseFinishedReservations) with no live check, while a Slurm victim it never
  // requeued (a crash between reserve and requeue, a start the poll had not shown) still runs.
  // Off: no crash between reserve and requeue (failpoints preempt-after-fence,
  // preempt-after-reserve, reclaim-after-reserve), and every cycle follows a fresh poll (no lost or delayed polls).
  bool d1 = false;
  // D3 (found by this checker once D1 and M1 were fixed; fixed): Reserve wrote the owner
  // reserved(P) before the Slurm fence; a crash between the two left a lent node unfenced while
  // it was reserved, and Slurm's own scheduler started a job there -> (b). Now the fence comes
  // first (a crash between them: preempt-after-fence) and the mark second (preempt-after-reserve).
  // Off: no crash at preempt-after-fence, preempt-after-reserve or reclaim-after-reserve.
  bool d3 = false;
  // G3 (found by this checker with issue 25 step 4's preemptors; fixed, known_defects_test.cc's
  // G3_): a claimed room on a shared node was taken back before its claimant started: a pod bound
  // there in the cycle of a claim naming it (seed 252), a requeued victim job Slurm started again
  // there after its BeginTime while a Slurm claimant was held (seed 483), a job a successor started
  // there (seed 523), a released job not yet running named as a victim (seed 5086).
  // Off: (g3) is not computed (taken_back stays empty); g1 and g2 are checked.
  bool g3 = false;
  // C1 (found by this checker with issue 25 step 4's preemptors; fixed, known_defects_test.cc C1_):
  // with interactive and high pods and jobs on s1, (b) broke (a node a higher-priority pod took
  // from a high pod's reservation was reserved again in the same cycle) and (g2) broke (a pod whose
  // claim placeholder landed while slurmrestd hung, the daemon saw kDeadlineExceeded, was evicted
  // as another preemptor's victim while that claim stood). Off: s1's pods and jobs are batch or
  // normal only (no sub-node preemptor); CI runs with it on.
  bool c1 = false;
  static KnownOpenDefects All() { return {true, true, true, true, true, true, true, true}; }
  static KnownOpenDefects None() { return {}; }
};

struct CrashSignal {
  std::string at;
};

constexpr queue::Time kStart = 1763722800;
constexpr int kHangSeconds = 60;
constexpr int kLeaseSeconds = 15;
constexpr int kRenewDeadlineSeconds = 10;
constexpr int kNodeCpus = 8;
constexpr int kRequeueBeginSeconds = 121;
// Issue 25: the shared node s1 has 8 CPUs, 32 GiB and 4 GPUs; its pods and jobs ask all three.
constexpr int64_t kSharedNodeMemoryMb = 32768;
constexpr int64_t kSharedNodeGpus = 4;
using Amounts = invariants::NodeFacts::Amounts;  // "cpu" (CPUs), "memory" (MiB), "gpu"
// Where each running Slurm job runs (a job of several nodes, issue 25 step 4, on each of them).
using JobNodes = std::map<uint32_t, std::set<std::string>>;
inline bool RunsOn(const JobNodes& jobs, uint32_t id, const std::string& node) {
  auto it = jobs.find(id);
  return it != jobs.end() && it->second.count(node) > 0;
}

inline const std::vector<std::string>& FailpointNames() {
  static const std::vector<std::string> names = {"preempt-after-reserve", "reclaim-after-reserve",
                                                 "reclaim-after-requeue", "release-after-write",
                                                 "lend-after-annotate", "bind-after-send"};
  return names;
}
// Issue 25: where a daemon may crash in a pod's mirror (only in worlds with a shared node, picked
// by a step of their own so that the crashes of every other world stay where they were).
inline const std::vector<std::string>& SharedFailpointNames() {
  // Step 4: a pod's claim submitted, its victims not yet asked (claim-after-submit); a Slurm job
  // held with its claim, its victims not yet asked (job-claim-after-hold).
  static const std::vector<std::string> names = {"mirror-after-submit", "mirror-after-pod-end", "bind-after-send",
                                                 "claim-after-submit", "job-claim-after-hold"};
  return names;
}

// `shared`: the world has a shared node (issue 25) in partition "shared", which says sharing: shared.
Config CheckerConfig(const std::string& mechanism, bool shared = false) {
  Config c;
  c.queue.reservation_depth = 10;
  c.queue.qos = {{"interactive", 1000, false, true, 0}, {"normal", 100, true, false, 0}, {"batch", 10, true, false, 0}};
  c.slurm.enabled = true;
  c.slurm.shared_partitions = {"pool"};
  c.slurm.lend_mechanism = mechanism;
  c.slurm.lend_after_seconds = 20;
  c.slurm.return_after_seconds = 40;
  c.slurm.default_qos = "batch";
  // A step's cycle comes 5 s after the last: with the default 5 s every cycle would be full. At 30
  // the cycles between two polls may plan arrivals alone (issue 26), Slurm on, and are checked.
  c.queue.full_cycle_seconds = 30;
  if (shared) {
    // Issue 25 step 4: "high" claims room on s1 from batch and normal work and is itself the victim
    // of an interactive claim (while it holds no claim); only s1's pods and jobs ask it.
    c.queue.qos.push_back({"high", 500, true, true, 0});
    c.slurm.shared_partitions.push_back("shared");
    c.slurm.partition_sharing = {{"shared", "shared"}};
  }
  return c;
}

class CheckedWorld;

// One daemon process: its poller's view, the gate over its lease, the real loop.
struct Daemon {
  int incarnation = 0;
  std::shared_ptr<const slurm::SlurmView> polled;  // null before its first poll
  bool polled_since_cycle = false;
  std::string armed_failpoint;
  std::unique_ptr<ClusterView> view;
  std::unique_ptr<ClusterActions> kube;
  std::unique_ptr<SlurmActions> slurm;
  std::unique_ptr<WritePermit> permit;
  std::unique_ptr<FencedClusterActions> fenced_kube;
  std::unique_ptr<FencedSlurmActions> fenced_slurm;
  std::unique_ptr<SchedulingLoop> loop;
};

class CheckedWorld {
 public:
  CheckedWorld(const Config& config, KnownOpenDefects off, bool verbose)
      : config_(config), off_(off), verbose_(verbose) {
    k8s_.slurm = &slurm_;
    k8s_.recreate_evicted = true;
    slurm_.placeholder = config.slurm.lend_mechanism == "placeholder";
    slurm_.now = now_;
  }

  // ---- the world as it starts -------------------------------------------------------------
  void AddKubernetesNode(const std::string& name, bool with_pod) {
    AddNode(name);
    (void)k8s_.SetNodeOwner(name, kOwnerKubernetes, "");
    (void)slurm_.Fence(name, kOwnerKubernetes);
    if (with_pod) AddPod("batch", "8", name);
  }
  void AddLentNode(const std::string& name) {
    AddNode(name);
    const uint32_t id = SubmitJob(kNodeCpus, false);
    (void)k8s_.SetNodeOwner(name, absl::StrCat(kOwnerSlurm, "/", id), "");
    slurm_.Run(id, name);
  }
  // Issue 25: a node of partition "shared" only, shared by pods and Slurm jobs, never fenced.
  void AddSharedNode(const std::string& name) {
    k8s_.AddNode(name, std::to_string(kNodeCpus), {{"nvidia.com/gpu", std::to_string(kSharedNodeGpus)}});
    slurm_.AddNode(name);
    slurm_.Node(name).memory_mb = kSharedNodeMemoryMb;
    slurm_.Node(name).gres = {{"gpu", kSharedNodeGpus}};
    node_names_.push_back(name);
    slurm_.SetPartitions(name, {"shared"});
    slurm_.shared.insert(name);
  }
  void StartFirstDaemon() {
    NewLeader();
    if (off_.h1) Poll();
  }

  // ---- steps (each returns what a reader of the story needs) ------------------------------
  std::string Cycle(bool zombie) {
    Daemon* d = zombie ? zombie_.get() : leader_.get();
    if (d == nullptr) return zombie ? "(no deposed daemon runs)" : "(no daemon runs)";
    const bool leads = LeaseValid(d->incarnation);
    const bool healthy = !zombie && leads && slurm_mode_ == kUp && d->polled_since_cycle && poll_fresh_ &&
                         fail_writes_ == 0;
    failed_in_step_ = false;
    step_log_.clear();
    const queue::Time t = now_;
    slurm_.now = now_;
    std::string crash;
    try {
      if (d->loop->RunCycle(t).incremental) ++arrival_cycles_;
    } catch (const CrashSignal& c) {
      crash = c.at;
    }
    d->polled_since_cycle = false;
    d->armed_failpoint.clear();
    now_ += 5;
    std::string story = absl::StrCat("cycle of daemon #", d->incarnation, zombie ? " (deposed)" : "", " at t+",
                                     t - kStart, "s");
    if (!step_log_.empty()) absl::StrAppend(&story, ": ", absl::StrJoin(step_log_, "; "));
    if (!crash.empty()) {
      absl::StrAppend(&story, " -> CRASH at ", crash);
      if (zombie) zombie_.reset();
      else leader_.reset();
    }
    healthy_cycle_ = healthy && crash.empty() && !failed_in_step_ && LeaseValid(d->incarnation);
    return story;
  }
  std::string Poll() {
    if (slurm_mode_ != kUp) return absl::StrCat("Slurm poll fails (slurmrestd ", ModeName(), "): the view lags");
    auto view = slurm_.View();
    for (Daemon* d : {leader_.get(), zombie_.get()}) {
      if (d == nullptr) continue;
      d->polled = view;
      d->polled_since_cycle = true;
    }
    poll_fresh_ = true;
    return "Slurm poll";
  }
  std::string Crash() {
    if (!leader_) return "(no daemon to crash)";
    const int inc = leader_->incarnation;
    leader_.reset();
    return absl::StrCat("daemon #", inc, " crashes");
  }
  // `which`: its low 16 bits pick a failpoint of FailpointNames(); bit 16 splits Reserve's crash in
  // two (issue 24 D3's fix: preempt-after-fence, between the Slurm fence and the mark, when set;
  // preempt-after-reserve, after the mark, when clear), so every scenario written before the split
  // crashes where it did.
  std::string ArmCrash(uint32_t which) {
    if (!leader_) return "(no daemon to crash)";
    std::string name = FailpointNames()[(which & 0xffff) % FailpointNames().size()];
    if (name == "preempt-after-reserve" && (which & 0x10000)) name = "preempt-after-fence";
    if ((off_.d1 || off_.d3) &&
        (name == "preempt-after-fence" || name == "preempt-after-reserve" || name == "reclaim-after-reserve")) {
      return absl::StrCat("(no crash at ", name, off_.d3 ? ": D3 switched off)" : ": D1 switched off)");
    }
    leader_->armed_failpoint = name;
    return absl::StrCat("daemon #", leader_->incarnation, " will crash at ", leader_->armed_failpoint,
                        " in its next cycle");
  }
  std::string Restart(bool successor) {
    if (leader_) return "(the daemon runs)";
    if (successor) now_ += kLeaseSeconds;  // a standby waits out the lease
    NewLeader();
    std::string s = absl::StrCat(successor ? "a standby becomes leader: daemon #" : "the daemon restarts as #",
                                 leader_->incarnation);
    if (off_.h1) {  // H1 switched off: slurmrestd answers the new daemon's first poll before it plans
      slurm_mode_ = kUp;
      Poll();
      absl::StrAppend(&s, " (and polls Slurm first)");
    }
    return s;
  }
  std::string LoseLease() {
    if (!leader_ || !renewing_) return "(no lease to lose)";
    if (off_.m1 && slurm_mode_ == kHang) return "(lease kept: M1 switched off)";
    renewing_ = false;
    lease_expires_ = now_ + kRenewDeadlineSeconds;
    return absl::StrCat("daemon #", leader_->incarnation, " can no longer renew its lease (ends at t+",
                        lease_expires_ - kStart, "s)");
  }
  std::string Successor() {
    if (!leader_) return Restart(/*successor=*/true);
    if (renewing_) return "(the leader renews its lease)";
    now_ = std::max(now_, lease_expires_ + kLeaseSeconds - kRenewDeadlineSeconds);
    const int old = leader_ ? leader_->incarnation : 0;
    if (leader_) zombie_ = std::move(leader_);
    NewLeader();
    std::string s = absl::StrCat("daemon #", leader_->incarnation, " takes the lease over",
                                 old ? absl::StrCat("; #", old, " still runs, deposed") : "");
    if (off_.h1) {
      slurm_mode_ = kUp;
      Poll();
    }
    return s;
  }
  std::string ZombieExits() {
    if (!zombie_) return "(no deposed daemon)";
    const int inc = zombie_->incarnation;
    zombie_.reset();
    return absl::StrCat("deposed daemon #", inc, " exits");
  }
  std::string SlurmDown() {
    slurm_mode_ = kDown;
    return "slurmrestd goes down (calls fail: kUnavailable)";
  }
  std::string SlurmHang() {
    if (off_.m1 && !renewing_) return "(slurmrestd answers: M1 switched off)";
    slurm_mode_ = kHang;
    return "slurmrestd hangs (each call takes 60 s, then kDeadlineExceeded)";
  }
  std::string SlurmUp() {
    slurm_mode_ = kUp;
    return "slurmrestd answers again";
  }
  std::string FailWrites(int n) {
    fail_writes_ = n;
    return absl::StrCat("the next ", n, " write(s) fail");
  }
  std::string PodCreated(bool big, bool interactive) {
    const std::string key = AddPod(interactive ? "interactive" : (big ? "normal" : "batch"), big ? "8" : "4", "");
    return absl::StrCat(interactive ? "interactive pod " : "pod ", key, " (", big ? 8 : 4, " CPU) arrives");
  }
  std::string PodDeleted(size_t which) {
    std::vector<k8s::Pod> pods = k8s_.Pods();
    if (pods.empty()) return "(no pod to delete)";
    const k8s::Pod& p = pods[which % pods.size()];
    const std::string key = p.metadata.Key();
    k8s_.DeletePod(key);
    return absl::StrCat("pod ", key, p.node_name.empty() ? " (pending)" : " on " + p.node_name, " is deleted");
  }
  std::string JobSubmitted(bool big, bool srun) {
    const uint32_t id = SubmitJob(big ? kNodeCpus : kNodeCpus / 2, srun);
    poll_fresh_ = false;
    return absl::StrCat(srun ? "srun job " : "Slurm job ", id, " (", big ? kNodeCpus : kNodeCpus / 2,
                        " CPU) is submitted", srun ? " (Slurm will not requeue it)" : "");
  }
  // Issue 25: a job of the shared partition, which only the shared node can run, of one of three
  // sizes: 2 CPUs 4 GiB 1 GPU; 4 CPUs 8 GiB 2 GPUs; 2 CPUs 24 GiB no GPU (memory binds). Step 4:
  // one in four is interactive and one in four high, preemptors of a part of s1 (else batch).
  std::string SharedJobSubmitted(uint32_t which) {
    static const Amounts kSizes[] = {{{"cpu", 2}, {"memory", 4096}, {"gpu", 1}},
                                     {{"cpu", 4}, {"memory", 8192}, {"gpu", 2}},
                                     {{"cpu", 2}, {"memory", 24576}, {"gpu", 0}}};
    const Amounts& size = kSizes[which % 3];
    const uint32_t id = SubmitJob(static_cast<uint32_t>(size.at("cpu")), false);
    slurm::SlurmJob& j = slurm_.Job(id);
    j.partition = "shared";
    j.memory_per_node_mb = size.at("memory");
    if (size.at("gpu") > 0) j.gres_per_node = {{"gpu", size.at("gpu")}};
    static const char* kQos[] = {"interactive", "high", "", ""};
    j.qos = off_.c1 ? "" : kQos[(which / 3) % 4];
    poll_fresh_ = false;
    return absl::StrCat("Slurm job ", id, " (", Shown(size), ", partition shared", j.qos.empty() ? "" : ", QOS ",
                        j.qos, ") is submitted");
  }
  // Issue 25 step 4 (worlds with s1 and s2): a job of two nodes of the shared partition, per node
  // 2 CPUs 4 GiB 1 GPU or 4 CPUs 8 GiB 2 GPUs; one in two is interactive and one in four high
  // (else batch): preemptors that claim on both shared nodes at once (job_claim.h).
  std::string SharedGangJobSubmitted(uint32_t which) {
    static const Amounts kSizes[] = {{{"cpu", 2}, {"memory", 4096}, {"gpu", 1}},
                                     {{"cpu", 4}, {"memory", 8192}, {"gpu", 2}}};
    const Amounts& size = kSizes[which % 2];
    const uint32_t id = SubmitJob(static_cast<uint32_t>(2 * size.at("cpu")), false);
    slurm::SlurmJob& j = slurm_.Job(id);
    j.node_count = 2;
    j.partition = "shared";
    j.memory_per_node_mb = size.at("memory");
    j.gres_per_node = {{"gpu", size.at("gpu")}};
    static const char* kQos[] = {"interactive", "interactive", "high", ""};
    j.qos = kQos[(which / 2) % 4];
    poll_fresh_ = false;
    return absl::StrCat("Slurm job ", id, " (2 nodes of ", Shown(size), ", partition shared",
                        j.qos.empty() ? "" : ", QOS ", j.qos, ") is submitted");
  }
  // Issue 25: a pod asking GPUs (so only s1 can take it) or much memory: 1 CPU 2 GiB 1 GPU; 2 CPUs
  // 8 GiB 2 GPUs; 1 CPU 16 GiB no GPU. Step 4: one in four is interactive and one in four high
  // (else normal or batch).
  std::string SharedPodCreated(uint32_t which) {
    static const Amounts kSizes[] = {{{"cpu", 1}, {"memory", 2048}, {"gpu", 1}},
                                     {{"cpu", 2}, {"memory", 8192}, {"gpu", 2}},
                                     {{"cpu", 1}, {"memory", 16384}, {"gpu", 0}}};
    const Amounts& size = kSizes[which % 3];
    const std::string name = absl::StrCat("gpu", ++pods_made_);
    std::map<std::string, std::string> requests = {{"cpu", std::to_string(size.at("cpu"))},
                                                   {"memory", absl::StrCat(size.at("memory"), "Mi")}};
    if (size.at("gpu") > 0) requests["nvidia.com/gpu"] = std::to_string(size.at("gpu"));
    const uint32_t q = off_.c1 ? 2 : (which / 6) % 4;
    const std::string qos = q == 0 ? "interactive" : q == 1 ? "high" : which % 2 ? "normal" : "batch";
    k8s_.AddSizedPod(name, requests, qos);
    pod_size_["ns/" + name] = size;
    return absl::StrCat(qos == "interactive" || qos == "high" ? qos + " pod ns/" : "pod ns/", name, " (",
                        Shown(size), ") arrives");
  }
  // Issue 25 step 4 (worlds with s1 and s2): a gang of two pods (onequeue.io/group), each of one
  // of SharedPodCreated's GPU sizes, so only the shared nodes can take them; one in two gangs is
  // interactive and one in four high (else batch): preemptors whose members claim on both nodes.
  std::string SharedPodGangCreated(uint32_t which) {
    static const Amounts kSizes[] = {{{"cpu", 1}, {"memory", 2048}, {"gpu", 1}},
                                     {{"cpu", 2}, {"memory", 8192}, {"gpu", 2}}};
    const Amounts& size = kSizes[which % 2];
    const uint32_t q = (which / 2) % 4;
    const std::string qos = q < 2 ? "interactive" : q == 2 ? "high" : "batch";
    const std::string group = absl::StrCat("gang", ++pods_made_);
    for (int i = 0; i < 2; ++i) {
      const std::string name = absl::StrCat(group, "-", i);
      k8s_.AddSizedPod(name,
                       {{"cpu", std::to_string(size.at("cpu"))},
                        {"memory", absl::StrCat(size.at("memory"), "Mi")},
                        {"nvidia.com/gpu", std::to_string(size.at("gpu"))}},
                       qos);
      k8s::Pod* p = k8s_.Find("ns/" + name);
      p->metadata.annotations[kGroupAnnotation] = group;
      p->metadata.annotations[kGroupSizeAnnotation] = "2";
      pod_size_["ns/" + name] = size;
    }
    return absl::StrCat(qos, " gang ", group, " (2 pods of ", Shown(size), ") arrives");
  }
  // Issue 25: a pod placeholder ends without onequeue: an admin's scancel, its TIMEOUT, or a
  // slurmctld restart that lost it (gone from the listings). Its pod's mirror is lost (for (f)).
  std::string PlaceholderLost(uint32_t which) {
    std::vector<uint32_t> live;
    for (uint32_t id : slurm_.pod_placeholders) {
      const slurm::SlurmJob& j = slurm_.Job(id);
      if (j.state == slurm::JobState::kRunning || j.state == slurm::JobState::kPending) live.push_back(id);
    }
    if (live.empty()) return "(no pod placeholder to lose)";
    const uint32_t id = live[which % live.size()];
    const std::string name = slurm_.Job(id).name;
    static const char* kHow[] = {"is cancelled by an admin (scancel)", "reaches its time limit (TIMEOUT)",
                                 "is lost by a slurmctld restart"};
    const uint32_t how = (which / 7) % 3;
    if (how == 0) slurm_.Job(id).state = slurm::JobState::kCancelled;
    if (how == 1) slurm_.Job(id).state = slurm::JobState::kTimeout;
    if (how == 2) slurm_.Forget(id);
    for (const k8s::Pod& p : k8s_.Pods()) {
      if (PodPlaceholderName(p.metadata.uid) == name) mirror_lost_[p.metadata.uid] = LostMirror{};
    }
    poll_fresh_ = false;
    return absl::StrCat("pod placeholder ", id, " (", name, ") ", kHow[how]);
  }
  std::string ArmSharedCrash(uint32_t which) {
    if (!leader_) return "(no daemon to crash)";
    leader_->armed_failpoint = SharedFailpointNames()[which % SharedFailpointNames().size()];
    return absl::StrCat("daemon #", leader_->incarnation, " will crash at ", leader_->armed_failpoint,
                        " in its next cycle");
  }
  static std::string Shown(const Amounts& size) {
    return absl::StrCat(size.at("cpu"), " CPU ", size.at("memory") / 1024, " GiB ", size.at("gpu"), " GPU");
  }
  std::string JobFinishes(size_t which) {
    std::vector<uint32_t> running;
    for (uint32_t id : job_ids_) {
      if (slurm_.Job(id).state == slurm::JobState::kRunning) running.push_back(id);
    }
    if (running.empty()) return "(no Slurm job runs)";
    const uint32_t id = running[which % running.size()];
    slurm::SlurmJob& j = slurm_.Job(id);
    const std::string node = j.nodes.empty() ? "?" : absl::StrJoin(j.nodes, ",");
    j.state = slurm::JobState::kCompleted;
    j.end_time = absl::FromUnixSeconds(now_);
    poll_fresh_ = false;
    return absl::StrCat("Slurm job ", id, " on ", node, " completes");
  }
  // Slurm's own scheduler: a pending job it may start (not held) goes to an unfenced idle node.
  // On a shared node it starts what fits beside what it has allocated there (issue 25), including
  // onequeue's pod placeholders pinned there.
  std::string SlurmSchedules() {
    std::vector<uint32_t> candidates = job_ids_;
    candidates.insert(candidates.end(), slurm_.pod_placeholders.begin(), slurm_.pod_placeholders.end());
    for (uint32_t id : candidates) {
      slurm::SlurmJob& j = slurm_.Job(id);
      if (j.state != slurm::JobState::kPending || j.priority == 0) continue;
      // Slurm gives a requeued batch job a BeginTime (now + CredExpire + 1, 121 s by default)
      // before it may start again; modelled for the shared partition (issue 25 step 4), so that the
      // worlds without a shared node make the runs they made.
      if (auto r = requeued_at_.find(id); r != requeued_at_.end() && j.partition == "shared" &&
                                          now_ < r->second + kRequeueBeginSeconds)
        continue;
      // A job of several nodes (issue 25 step 4) starts on the first nodes it fits on, all at once.
      const size_t need = std::max<uint32_t>(1, j.node_count);
      std::vector<std::string> fit;
      for (const std::string& node : node_names_) {
        const std::vector<std::string>& parts = slurm_.Node(node).partitions;
        if (std::find(parts.begin(), parts.end(), j.partition) == parts.end()) continue;
        if (slurm_.shared.count(node) ? !slurm_.Fits(id, node) : (slurm_.Fenced(node) || !JobsOn(node).empty())) continue;
        if (!j.required_nodes.empty() && need == 1 && j.required_nodes != std::vector<std::string>{node}) continue;
        if (fit.size() < need) fit.push_back(node);
      }
      if (fit.size() == need) {
        slurm_.RunOn(id, fit);
        poll_fresh_ = false;
        return absl::StrCat("Slurm starts job ", id, " on ", absl::StrJoin(fit, ","), " (its own scheduler, between polls)");
      }
    }
    return "(Slurm has nothing to start)";
  }

  // ---- what the invariants read -------------------------------------------------------------
  // Called after every step: updates the ledger and settling counters, returns the facts.
  invariants::WorldFacts Observe(int step) {
    invariants::WorldFacts w;
    w.settle_cycles = kSettleCycles;
    const std::vector<k8s::Pod> pods = k8s_.Pods();
    AgeLostMirrors(pods);
    std::map<std::string, std::string> pod_node;
    std::set<std::string> pending_pods;
    for (const k8s::Pod& p : pods) {
      const std::string key = p.metadata.Key();
      pod_node[key] = p.node_name;
      if (p.node_name.empty()) pending_pods.insert(key);
      w.pods.push_back({key, key, p.node_name});
    }
    JobNodes job_node;
    std::set<std::string> pending_jobs;
    for (uint32_t id : job_ids_) {
      const slurm::SlurmJob& j = slurm_.Job(id);
      invariants::JobFacts f;
      f.id = id;
      f.comment = j.admin_comment;  // onequeue's reason (issue 29: never the user's comment)
      f.requeueable = j.requeue && !srun_.count(id);
      f.cancelled_by_onequeue = cancelled_by_onequeue_.count(id) > 0;
      switch (j.state) {
        case slurm::JobState::kRunning:
          f.phase = invariants::JobPhase::kRunning;
          for (const std::string& node : j.nodes) job_node[id].insert(node);
          break;
        case slurm::JobState::kPending:
          f.phase = invariants::JobPhase::kPending;
          f.held = j.priority == 0;
          pending_jobs.insert(SlurmWorkloadId(id));
          break;
        case slurm::JobState::kCancelled: f.phase = invariants::JobPhase::kCancelled; break;
        default: f.phase = invariants::JobPhase::kFinished;
      }
      w.jobs.push_back(std::move(f));
    }
    auto waits = [&](const std::string& workload) {
      return pending_pods.count(workload) > 0 || pending_jobs.count(workload) > 0;
    };
    auto placed_on = [&](const std::string& workload, const std::string& node) {
      if (auto job = SlurmJobOf(workload)) {
        return RunsOn(job_node, *job, node);
      }
      auto it = pod_node.find(workload);
      return it != pod_node.end() && it->second == node;
    };
    for (const std::string& name : node_names_) {
      invariants::NodeFacts n;
      n.name = name;
      n.owner = k8s_.OwnerOf(name);
      n.fence = slurm_.FenceOwner(name);
      for (const auto& [key, node] : pod_node) {
        if (node == name) n.pods.push_back(key);
      }
      for (const auto& [id, nodes] : job_node) {
        if (nodes.count(name)) n.slurm_jobs.push_back(id);
      }
      if (slurm_.shared.count(name)) ObserveShared(pods, &n);
      // The ledger: a reservation opens when the owner becomes reserved/P, closes when it leaves.
      auto open = open_reservations_.find(name);
      const bool reserved = absl::StartsWith(n.owner, "reserved/");
      const std::string preemptor = reserved ? n.owner.substr(9) : "";
      if (open != open_reservations_.end() && (!reserved || open->second.preemptor != preemptor)) {
        open->second.outcome = placed_on(open->second.preemptor, name) ? invariants::ReservationOutcome::kConsumed
                                                                       : invariants::ReservationOutcome::kReleased;
        w.reservations.push_back(open->second);
        open_reservations_.erase(open);
        open = open_reservations_.end();
      }
      bool opened_now = false;
      if (reserved && open == open_reservations_.end()) {
        opened_now = true;
        OpenReservation r;
        r.node = name;
        r.preemptor = preemptor;
        r.opened_step = step;
        open = open_reservations_.emplace(name, std::move(r)).first;
      }
      if (open != open_reservations_.end()) {
        OpenReservation& r = open->second;
        r.preemptor_waits = waits(r.preemptor);
        // Placed there this step by someone other than the preemptor, while it stood (a record
        // opened this step may follow a binding the same cycle made before it reserved) for a
        // preemptor that still waits: once it no longer does the mark holds nothing (issue 26:
        // its release may be written later) and the room left beside it is anyone's.
        const bool holds = !opened_now && r.preemptor_waits;
        for (const std::string& key : !holds ? std::vector<std::string>{} : n.pods) {
          if (key != r.preemptor && last_pod_node_[key] != name) r.taken_by.push_back(key);
        }
        for (uint32_t id : !holds ? std::vector<uint32_t>{} : n.slurm_jobs) {
          if (SlurmWorkloadId(id) != r.preemptor && !RunsOn(last_job_node_, id, name)) {
            r.taken_by.push_back(SlurmWorkloadId(id));
          }
        }
        for (const std::string& victim : evicted_from_[name]) {
          if (++r.evictions[victim] > 1) r.evicted_again.push_back(victim);
        }
        w.reservations.push_back(r);
        r.taken_by.clear();
        r.evicted_again.clear();
      }
      evicted_from_[name].clear();
      // Settling: healthy cycles through which nothing about the node moved.
      std::string signature = absl::StrCat(n.owner, "|", n.fence, "|", absl::StrJoin(n.pods, ","), "|",
                                           absl::StrJoin(n.slurm_jobs, ","), "|",
                                           reserved ? (waits(preemptor) ? "waits" : "done") : "");
      int& settled = settled_[name];
      std::string& last = last_signature_[name];
      if (signature != last) settled = 0;
      else if (healthy_cycle_) ++settled;
      last = std::move(signature);
      n.settled_cycles = settled;
      w.nodes.push_back(std::move(n));
    }
    w.claims = Claims(pods);
    std::set<std::string> standing;
    for (invariants::ClaimFacts& c : w.claims) {
      const std::string id = absl::StrCat(c.claimant, "@", c.node, ":", absl::StrJoin(c.victims, ","));
      c.made_now = !last_claims_.count(id);
      standing.insert(id);
    }
    last_claims_ = std::move(standing);
    if (!off_.g3) TakenBack(pod_node, job_node, w);
    w.victims = std::move(victims_);
    victims_.clear();
    last_pod_node_ = std::move(pod_node);
    last_job_node_ = std::move(job_node);
    w.writes = std::move(writes_);
    writes_.clear();
    healthy_cycle_ = false;
    return w;
  }

  // Issue 25, for (f): per dimension, the node's capacity, what Slurm's own jobs hold there, and
  // each pod bound there: its size, whether a running placeholder of its size mirrors it, whether
  // its mirror was lost (PlaceholderLost) and not made again, and whether the loss was reported.
  void ObserveShared(const std::vector<k8s::Pod>& pods, invariants::NodeFacts* n) {
    n->shared = true;
    n->capacity = {{"cpu", kNodeCpus}, {"memory", kSharedNodeMemoryMb}, {"gpu", kSharedNodeGpus}};
    const std::set<uint32_t> placeholders(slurm_.pod_placeholders.begin(), slurm_.pod_placeholders.end());
    for (uint32_t id : job_ids_) {
      const slurm::SlurmJob& j = slurm_.Job(id);
      if (j.state != slurm::JobState::kRunning || !FakeSlurm::On(j, n->name)) continue;
      n->slurm_jobs_allocated["cpu"] += FakeSlurm::CpusPerNode(j);
      n->slurm_jobs_allocated["memory"] += j.memory_per_node_mb;
      if (auto g = j.gres_per_node.find("gpu"); g != j.gres_per_node.end()) n->slurm_jobs_allocated["gpu"] += g->second;
    }
    for (const k8s::Pod& p : pods) {
      if (p.node_name != n->name) continue;
      invariants::NodeFacts::SharedPod sp;
      sp.key = p.metadata.Key();
      sp.size = SizeOf(sp.key);
      for (uint32_t id : slurm_.pod_placeholders) {
        const slurm::SlurmJob& j = slurm_.Job(id);
        if (j.name != PodPlaceholderName(p.metadata.uid) || j.state != slurm::JobState::kRunning ||
            j.nodes != std::vector<std::string>{n->name})
          continue;
        auto gpus = j.gres_per_node.find("gpu");
        if (j.cpus >= sp.size["cpu"] && j.memory_per_node_mb >= sp.size["memory"] &&
            (gpus == j.gres_per_node.end() ? 0 : gpus->second) >= sp.size["gpu"])
          sp.mirrored = true;
      }
      if (auto lost = mirror_lost_.find(p.metadata.uid); lost != mirror_lost_.end()) {
        sp.mirror_lost = true;
        sp.reported = lost->second.reported;
        sp.lost_cycles = lost->second.cycles;
      }
      n->shared_pods.push_back(std::move(sp));
    }
  }
  // The pod's requests as the world made them (a recreated victim is named <name>-r).
  Amounts SizeOf(const std::string& key) const {
    std::string made = key;
    while (!pod_size_.count(made) && absl::EndsWith(made, "-r")) made.resize(made.size() - 2);
    auto it = pod_size_.find(made);
    return it == pod_size_.end() ? Amounts{} : it->second;
  }
  // After every step: a lost mirror ends once a placeholder of the pod runs on the pod's node, or
  // the pod is gone, or it is pending after a healthy cycle (the daemon saw the loss before any
  // bind: it undid the record); a healthy cycle counts towards (f3).
  void AgeLostMirrors(const std::vector<k8s::Pod>& pods) {
    std::map<std::string, const k8s::Pod*> by_uid;
    for (const k8s::Pod& p : pods) by_uid[p.metadata.uid] = &p;
    for (auto it = mirror_lost_.begin(); it != mirror_lost_.end();) {
      auto pod = by_uid.find(it->first);
      bool ended = pod == by_uid.end() || (pod->second->node_name.empty() && healthy_cycle_);
      for (uint32_t id : slurm_.pod_placeholders) {
        const slurm::SlurmJob& j = slurm_.Job(id);
        ended = ended || (pod != by_uid.end() && j.name == PodPlaceholderName(it->first) &&
                          j.state == slurm::JobState::kRunning && !pod->second->node_name.empty() &&
                          j.nodes == std::vector<std::string>{pod->second->node_name});
      }
      if (ended) {
        it = mirror_lost_.erase(it);
        continue;
      }
      if (healthy_cycle_) ++it->second.cycles;
      ++it;
    }
  }
  // Issue 25 step 4, for (g): the claims standing in Slurm now. A pod's: its placeholder pending,
  // pinned, naming victims; a job's: pending, held, its AdminComment a claim.
  std::vector<invariants::ClaimFacts> Claims(const std::vector<k8s::Pod>& pods) {
    std::vector<invariants::ClaimFacts> out;
    for (uint32_t id : slurm_.pod_placeholders) {
      const slurm::SlurmJob& j = slurm_.Job(id);
      if (j.state != slurm::JobState::kPending) continue;
      std::vector<std::string> victims = ClaimVictims(j.comment);
      if (victims.empty()) continue;
      for (const k8s::Pod& p : pods) {
        if (PodPlaceholderName(p.metadata.uid) != j.name) continue;
        out.push_back({p.metadata.Key(), j.required_nodes.empty() ? "" : j.required_nodes.front(), victims, false, {}});
      }
    }
    for (uint32_t id : job_ids_) {
      const slurm::SlurmJob& j = slurm_.Job(id);
      if (j.state != slurm::JobState::kPending || j.priority != 0) continue;
      if (std::optional<ParsedJobClaim> c = ParseJobClaim(j.admin_comment)) {
        // A claim of several nodes stands on each of them (one fact per node, for (g)).
        for (const std::string& node : c->nodes) out.push_back({SlurmWorkloadId(id), node, c->victims, false, {}});
      }
    }
    return out;
  }
  // (g3): per claim standing now, its victims or their replacements placed back on its node this
  // step (not there at the last Observe) where the node's allocations plus the claimant's request
  // exceed its capacity in some dimension.
  void TakenBack(const std::map<std::string, std::string>& pod_node, const JobNodes& job_node,
                 invariants::WorldFacts& w) {
    for (invariants::ClaimFacts& c : w.claims) {
      const invariants::NodeFacts* n = nullptr;
      for (const invariants::NodeFacts& x : w.nodes) n = x.name == c.node && x.shared ? &x : n;
      if (n == nullptr) continue;
      std::vector<std::string> back;
      for (const std::string& v : c.victims) {
        if (std::optional<uint32_t> job = SlurmJobOf(v)) {
          if (RunsOn(job_node, *job, c.node) && !RunsOn(last_job_node_, *job, c.node)) back.push_back(v);
          continue;
        }
        for (const std::string& key : {v, v + "-r"}) {
          auto now = pod_node.find(key);
          auto before = last_pod_node_.find(key);
          if (now != pod_node.end() && now->second == c.node && (before == last_pod_node_.end() || before->second != c.node))
            back.push_back(key);
        }
      }
      if (back.empty()) continue;
      Amounts used = n->slurm_jobs_allocated;
      for (const auto& p : n->shared_pods) {
        for (const auto& [dim, amount] : p.size) used[dim] += amount;
      }
      Amounts want;
      if (std::optional<uint32_t> job = SlurmJobOf(c.claimant)) {
        const slurm::SlurmJob& j = slurm_.Job(*job);
        auto g = j.gres_per_node.find("gpu");
        want = {{"cpu", FakeSlurm::CpusPerNode(j)},
                {"memory", j.memory_per_node_mb},
                {"gpu", g == j.gres_per_node.end() ? 0 : g->second}};
      } else {
        want = SizeOf(c.claimant);
      }
      bool fits = true;
      for (const auto& [dim, amount] : want) {
        auto cap = n->capacity.find(dim);
        fits = fits && used[dim] + amount <= (cap == n->capacity.end() ? 0 : cap->second);
      }
      if (!fits) c.taken_back = std::move(back);
    }
  }
  // Whether the workload holds a claim in Slurm now (for (g2), asked as a victim's request lands).
  bool HoldsClaim(const std::string& workload) {
    for (const invariants::ClaimFacts& c : Claims(k8s_.Pods())) {
      if (c.claimant == workload) return true;
    }
    return false;
  }
  void Requeued(uint32_t id) { requeued_at_[id] = now_; }
  void VictimAsked(int incarnation, const std::string& victim, bool held_claim) {
    victims_.push_back({victim, absl::StrCat("daemon #", incarnation), held_claim});
  }
  void MirrorLostReported(const std::string& pod_key) {
    for (const k8s::Pod& p : k8s_.Pods()) {
      if (p.metadata.Key() != pod_key) continue;
      if (auto lost = mirror_lost_.find(p.metadata.uid); lost != mirror_lost_.end()) lost->second.reported = true;
    }
  }

  // ---- for the daemons' actions ---------------------------------------------------------------
  bool LeaseValid(int incarnation) const {
    return incarnation == holder_ && (renewing_ || now_ < lease_expires_);
  }
  // A write is about to be sent: false (and it fails) when a failure was injected for it.
  bool InjectFailure(const std::string& what) {
    if (fail_writes_ == 0) return false;
    --fail_writes_;
    failed_in_step_ = true;
    if (verbose_) step_log_.push_back(what + " FAILS (injected)");
    return true;
  }
  void Landed(int incarnation, const std::string& what, bool in_story = true) {
    writes_.push_back({absl::StrCat("daemon #", incarnation), what, LeaseValid(incarnation)});
    if (!writes_.back().writer_leads) writes_.back().what = what;
    else if (!verbose_) writes_.back().what.clear();
    if (verbose_ && in_story) step_log_.push_back(what);
  }
  void Note(const std::string& what) {
    failed_in_step_ = true;
    if (verbose_) step_log_.push_back(what);
  }
  void Evicted(const std::string& node, const std::string& victim) { evicted_from_[node].push_back(victim); }
  void CancelledByOnequeue(uint32_t id) { cancelled_by_onequeue_.insert(id); }
  enum Mode { kUp, kDown, kHang };
  Mode slurm_mode() const { return slurm_mode_; }
  std::string ModeName() const { return slurm_mode_ == kDown ? "down" : slurm_mode_ == kHang ? "hangs" : "up"; }
  void Hang(int seconds = kHangSeconds) {
    now_ += seconds;
    failed_in_step_ = true;
  }
  // How long from now a write of daemon `incarnation` may still take (WritePermit::WriteTimeLeft):
  // the renew deadline while it renews, the rest of its lease once it cannot.
  int WriteTimeLeft(int incarnation) const {
    if (!LeaseValid(incarnation)) return 0;
    return renewing_ ? kRenewDeadlineSeconds : static_cast<int>(lease_expires_ - now_);
  }
  bool IsSrun(uint32_t id) const { return srun_.count(id) > 0; }
  const KnownOpenDefects& off() const { return off_; }
  World& k8s() { return k8s_; }
  FakeSlurm& slurm() { return slurm_; }
  Daemon* leader() { return leader_.get(); }

  static constexpr int kSettleCycles = 8;

 private:
  void AddNode(const std::string& name) {
    k8s_.AddNode(name, std::to_string(kNodeCpus));
    slurm_.AddNode(name);
    node_names_.push_back(name);
  }
  std::string AddPod(const std::string& qos, const std::string& cpu, const std::string& node) {
    const std::string name = absl::StrCat(qos == "interactive" ? "jupyter" : "web", ++pods_made_);
    k8s_.AddPod(name, cpu, qos, node);
    pod_size_["ns/" + name] = {{"cpu", std::stoi(cpu)}, {"memory", 0}, {"gpu", 0}};
    return "ns/" + name;
  }
  uint32_t SubmitJob(uint32_t cpus, bool srun) {
    const uint32_t id = ++jobs_made_;
    slurm_.now = now_;
    slurm_.Submit(id, cpus);
    job_ids_.push_back(id);
    if (srun) srun_.insert(id);
    return id;
  }
  std::vector<uint32_t> JobsOn(const std::string& node) {
    std::vector<uint32_t> out;
    for (uint32_t id : job_ids_) {
      const slurm::SlurmJob& j = slurm_.Job(id);
      if (j.state == slurm::JobState::kRunning && FakeSlurm::On(j, node)) out.push_back(id);
    }
    return out;
  }
  void NewLeader();

  const Config& config_;
  const KnownOpenDefects off_;
  const bool verbose_;
  World k8s_;
  FakeSlurm slurm_;
  queue::Time now_ = kStart;
  std::vector<std::string> node_names_;
  std::vector<uint32_t> job_ids_;
  std::set<uint32_t> srun_, cancelled_by_onequeue_;
  int pods_made_ = 0;
  uint32_t jobs_made_ = 0;
  int incarnations_ = 0;
  std::unique_ptr<Daemon> leader_, zombie_;
  int holder_ = 0;
  bool renewing_ = true;
  queue::Time lease_expires_ = 0;
  Mode slurm_mode_ = kUp;
  int fail_writes_ = 0;
  bool failed_in_step_ = false;
  bool healthy_cycle_ = false;
  bool poll_fresh_ = false;
  std::vector<std::string> step_log_;
  std::vector<invariants::WriteFacts> writes_;
  std::map<std::string, std::vector<std::string>> evicted_from_;
  std::vector<invariants::VictimFacts> victims_;  // (g2): since the last Observe
  std::map<uint32_t, queue::Time> requeued_at_;  // a requeue's landing, for Slurm's BeginTime
  std::set<std::string> last_claims_;  // (g1): the claims standing at the last Observe
  // The ledger and the settling counters (Observe).
  struct OpenReservation : invariants::ReservationFacts {
    std::map<std::string, int> evictions;  // victim -> evictions while it stood
  };
  std::map<std::string, OpenReservation> open_reservations_;
  std::map<std::string, int> settled_;
  std::map<std::string, std::string> last_signature_;
  std::map<std::string, std::string> last_pod_node_;
  JobNodes last_job_node_;
  std::map<std::string, Amounts> pod_size_;  // pod key -> its requests
  // Issue 25: pods (by UID) whose placeholder was lost by a fault, until mirrored again or gone.
  struct LostMirror {
    bool reported = false;
    int cycles = 0;  // healthy cycles of the current leader since the loss
  };
  std::map<std::string, LostMirror> mirror_lost_;
  int64_t arrival_cycles_ = 0;  // cycles that planned only arrivals (issue 26)

 public:
  int64_t arrival_cycles() const { return arrival_cycles_; }
};

// ---- a daemon's view and actions, over the checked world ------------------------------------

// The daemon's informers, as a KubeSource (issue 26): the loop asks what changed since its last
// full cycle and plans arrivals alone when it may, with Slurm on too. Every pod is upserted on
// each look (the arrival cycle compares each changed pod with the record it planned from, so an
// unchanged pod is no change); nodes when their resourceVersion moved; what is gone, deleted.
class DaemonView : public ClusterView {
 public:
  DaemonView(CheckedWorld* w, Daemon* d) : w_(w), d_(d) {}
  std::vector<k8s::Node> Nodes() const override { return w_->k8s().Nodes(); }
  std::vector<k8s::Pod> Pods() const override { return w_->k8s().Pods(); }
  std::shared_ptr<const slurm::SlurmView> Slurm() const override { return d_->polled; }
  std::shared_ptr<const KubeState> State() const override {
    Sync();
    return source_.State();
  }
  std::optional<KubeChanges> ChangesSince(uint64_t generation) const override {
    Sync();
    return source_.ChangesSince(generation);
  }

 private:
  void Sync() const {
    std::map<std::string, std::string> versions;
    for (const k8s::Node& n : Nodes()) {
      versions[n.metadata.name] = n.metadata.resource_version;
      auto seen = node_versions_.find(n.metadata.name);
      if (seen == node_versions_.end() || seen->second != n.metadata.resource_version) source_.UpsertNode(n);
    }
    for (const auto& [name, version] : node_versions_) {
      if (!versions.count(name)) source_.DeleteNode(k8s::Node{.metadata = {.name = name}});
    }
    node_versions_ = std::move(versions);
    std::map<std::string, k8s::Pod> pods;
    for (k8s::Pod& p : Pods()) {
      source_.UpsertPod(p);
      pods.emplace(p.metadata.Key(), std::move(p));
    }
    for (const auto& [key, pod] : pods_) {
      if (!pods.count(key)) source_.DeletePod(pod);
    }
    pods_ = std::move(pods);
  }
  CheckedWorld* w_;
  Daemon* d_;
  mutable KubeSource source_;
  mutable std::map<std::string, std::string> node_versions_;
  mutable std::map<std::string, k8s::Pod> pods_;
};

class DaemonKube : public ClusterActions {
 public:
  DaemonKube(CheckedWorld* w, int inc) : w_(w), inc_(inc) {}
  absl::Status Bind(const std::string& key, const std::string& node, const std::string& message) override {
    const std::string what = absl::StrCat("bind ", key, " -> ", node);
    if (w_->InjectFailure(what)) return absl::UnavailableError("injected");
    absl::Status s = w_->k8s().Bind(key, node, message);
    if (s.ok()) w_->Landed(inc_, what);
    return s;
  }
  absl::Status ReportWaiting(const std::string& key, const WaitReport& report) override {
    if (w_->InjectFailure("report " + key)) return absl::UnavailableError("injected");
    w_->Landed(inc_, "report " + key, /*in_story=*/false);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string& version) override {
    const std::string what = absl::StrCat("owner ", node, "=", value.empty() ? "(none)" : value);
    if (w_->InjectFailure(what)) return absl::UnavailableError("injected");
    absl::StatusOr<std::string> s = w_->k8s().SetNodeOwner(node, value, version);
    if (s.ok()) w_->Landed(inc_, what);
    else w_->Note(what + " refused: conflict");
    return s;
  }
  void NodeEvent(const std::string& node, const std::string& reason, const std::string& note) override {
    if (w_->InjectFailure("event " + node)) return;
    w_->Landed(inc_, absl::StrCat("event ", reason, " on ", node), /*in_story=*/false);
  }
  absl::Status PodEvent(const std::string& key, const std::string& reason, const std::string& note) override {
    if (w_->InjectFailure(absl::StrCat("event ", reason, " on ", key))) return absl::UnavailableError("injected");
    w_->Landed(inc_, absl::StrCat("event ", reason, " on ", key));
    if (reason == kMirrorLostReason) w_->MirrorLostReported(key);
    return absl::OkStatus();
  }
  absl::Status Nominate(const std::string& key, const std::string& node) override {
    if (w_->InjectFailure("nominate " + key)) return absl::UnavailableError("injected");
    (void)w_->k8s().Nominate(key, node);
    w_->Landed(inc_, absl::StrCat("nominate ", key, " on ", node.empty() ? "(none)" : node), /*in_story=*/false);
    return absl::OkStatus();
  }
  absl::Status Evict(const std::string& key, const std::string& preemptor, const std::string& message) override {
    const std::string what = absl::StrCat("evict ", key, " for ", preemptor);
    if (w_->InjectFailure(what)) return absl::UnavailableError("injected");
    const std::string node = w_->k8s().NodeOf(key);
    const bool held_claim = w_->HoldsClaim(key);
    absl::Status s = w_->k8s().Evict(key, preemptor, message);
    if (s.ok()) {
      w_->Landed(inc_, what);
      w_->Evicted(node, key);
      w_->VictimAsked(inc_, key, held_claim);
    }
    return s;
  }

 private:
  CheckedWorld* w_;
  int inc_;
};

class DaemonSlurm : public SlurmActions {
 public:
  DaemonSlurm(CheckedWorld* w, int inc, const WritePermit* permit) : w_(w), inc_(inc), permit_(permit) {}
  absl::Status Fence(const std::string& node, const std::string& owner) override {
    return Write(absl::StrCat("fence ", node, " for ", owner), false, [&] { return fake().Fence(node, owner); });
  }
  absl::Status Unfence(const std::string& node) override {
    return Write("unfence (lend) " + node, false, [&] { return fake().Unfence(node); });
  }
  absl::Status Hold(uint32_t job, const std::string& comment) override {
    return Write(absl::StrCat("hold job ", job), false, [&] { return fake().Hold(job, comment); }, false);
  }
  absl::Status StartOn(uint32_t job, const std::vector<std::string>& nodes, const std::string& comment) override {
    return Write(absl::StrCat("start job ", job, " on ", absl::StrJoin(nodes, ",")), false,
                 [&] { return fake().StartOn(job, nodes, comment); });
  }
  absl::Status Requeue(uint32_t job) override {
    const std::vector<std::string> nodes = fake().Job(job).nodes;
    if (w_->IsSrun(job) && w_->slurm_mode() == CheckedWorld::kUp) {
      w_->Note(absl::StrCat("requeue job ", job, " REFUSED (not a batch job)"));
      return absl::FailedPreconditionError(
          absl::StrCat("Requeue of JobId=", job, " returned an error: Only batch jobs are accepted or processed"));
    }
    bool landed = false;
    const bool held_claim = w_->HoldsClaim(SlurmWorkloadId(job));
    absl::Status s = Write(absl::StrCat("requeue job ", job), true, [&] { return fake().Requeue(job); }, true, &landed);
    for (const std::string& node : landed ? nodes : std::vector<std::string>{}) w_->Evicted(node, SlurmWorkloadId(job));
    if (landed) {
      w_->Requeued(job);
      w_->VictimAsked(inc_, SlurmWorkloadId(job), held_claim);
    }
    return s;
  }
  absl::Status Cancel(uint32_t job) override {
    const std::vector<std::string> nodes = fake().Job(job).nodes;
    bool landed = false;
    const bool held_claim = w_->HoldsClaim(SlurmWorkloadId(job));
    absl::Status s = Write(
        absl::StrCat("cancel job ", job), true,
        [&] {
          w_->CancelledByOnequeue(job);
          return fake().Cancel(job);
        },
        true, &landed);
    for (const std::string& node : landed ? nodes : std::vector<std::string>{}) w_->Evicted(node, SlurmWorkloadId(job));
    const std::vector<uint32_t>& placeholders = w_->slurm().pod_placeholders;  // a mirror's cancel: no victim
    if (landed && std::find(placeholders.begin(), placeholders.end(), job) == placeholders.end()) {
      w_->VictimAsked(inc_, SlurmWorkloadId(job), held_claim);
    }
    return s;
  }
  // Issue 25: a pod placeholder, one REST write like the others.
  absl::StatusOr<uint32_t> SubmitPodPlaceholder(const slurm::JobSubmission& job) override {
    uint32_t id = 0;
    absl::Status s = Write(absl::StrCat("submit placeholder ", job.name, " on ", job.nodelist), false, [&] {
      absl::StatusOr<uint32_t> r = fake().SubmitPodPlaceholder(job);
      if (r.ok()) id = *r;
      return r.status();
    });
    if (!s.ok()) return s;
    return id;
  }
  bool FenceRequeues() const override { return w_->slurm().placeholder; }
  absl::StatusOr<bool> Ready(const std::string& node) override {
    if (w_->slurm_mode() == CheckedWorld::kDown) return absl::UnavailableError("slurmrestd: connection refused");
    if (w_->slurm_mode() == CheckedWorld::kHang) {
      w_->Hang();
      return absl::DeadlineExceededError("slurmrestd: no answer in 60 s");
    }
    return fake().Ready(node);
  }

 private:
  FakeSlurm& fake() { return w_->slurm(); }
  // One REST write, as the daemon's slurmrestd client sends it: refused while slurmrestd is down.
  // While it hangs the call takes 60 s, lands at its end and the caller sees kDeadlineExceeded;
  // unless the writer's time runs out first (issue 24 M1, the client's bound by the permit's
  // WriteTimeLeft: slurm::RestClient::BoundWrites): then the worst case, it lands just before
  // that deadline and the caller sees kDeadlineExceeded at it; with no time left nothing is sent.
  // `victim`: a requeue or cancel (spared when H2 is switched off). Returns whether it landed.
  template <typename F>
  absl::Status Write(const std::string& what, bool victim, F apply, bool in_story = true, bool* landed = nullptr) {
    const bool spared = victim && w_->off().h2;
    if (!spared && w_->slurm_mode() == CheckedWorld::kDown) {
      w_->Note(what + " FAILS (slurmrestd down)");
      return absl::UnavailableError("slurmrestd: connection refused");
    }
    if (!spared && w_->InjectFailure(what)) return absl::UnavailableError("injected");
    const bool hang = !spared && w_->slurm_mode() == CheckedWorld::kHang;
    const int left = permit_->WriteTimeLeft() == absl::InfiniteDuration()
                         ? kHangSeconds
                         : static_cast<int>(absl::ToInt64Seconds(permit_->WriteTimeLeft()));
    if (left <= 0) {  // the client sends nothing
      w_->Note(what + " abandoned: the lease has ended");
      return absl::DeadlineExceededError("slurmrestd: write abandoned: the writer's lease ends");
    }
    const int takes = hang ? std::min(left, kHangSeconds) : 0;
    if (hang) w_->Hang(takes - 1);
    absl::Status s = apply();
    if (landed != nullptr) *landed = s.ok();
    if (s.ok()) {
      w_->Landed(inc_, hang ? absl::StrCat(what, " (landed after ", takes - 1, " s)") : what, in_story || hang);
    }
    if (hang) {
      w_->Hang(1);
      w_->Note(what + ": kDeadlineExceeded");
      return absl::DeadlineExceededError(absl::StrCat("slurmrestd: no answer in ", takes, " s"));
    }
    return s;
  }
  CheckedWorld* w_;
  int inc_;
  const WritePermit* permit_;
};

class LeasePermit : public WritePermit {
 public:
  LeasePermit(const CheckedWorld* w, int inc) : w_(w), inc_(inc) {}
  absl::Status MayWrite() const override {
    return w_->LeaseValid(inc_) ? absl::OkStatus() : absl::FailedPreconditionError("the lease has ended");
  }
  absl::Duration WriteTimeLeft() const override { return absl::Seconds(w_->WriteTimeLeft(inc_)); }

 private:
  const CheckedWorld* w_;
  int inc_;
};

void CheckedWorld::NewLeader() {
  auto d = std::make_unique<Daemon>();
  d->incarnation = ++incarnations_;
  d->view = std::make_unique<DaemonView>(this, d.get());
  d->kube = std::make_unique<DaemonKube>(this, d->incarnation);
  d->permit = std::make_unique<LeasePermit>(this, d->incarnation);
  d->slurm = std::make_unique<DaemonSlurm>(this, d->incarnation, d->permit.get());
  d->fenced_kube = std::make_unique<FencedClusterActions>(d->kube.get(), d->permit.get());
  d->fenced_slurm = std::make_unique<FencedSlurmActions>(d->slurm.get(), d->permit.get());
  Daemon* raw = d.get();
  d->loop = std::make_unique<SchedulingLoop>(config_, d->view.get(), d->fenced_kube.get(), d->fenced_slurm.get(),
                                             [raw](const char* name) {
                                               if (raw->armed_failpoint == name) throw CrashSignal{name};
                                             });
  holder_ = d->incarnation;
  renewing_ = true;
  for (auto& [uid, lost] : mirror_lost_) lost.cycles = 0;  // (f3) counts one leader's cycles
  leader_ = std::move(d);
}

}  // namespace
}  // namespace onequeue::scheduler

#endif  // ONEQUEUE_TEST_SCHEDULER_INTERLEAVING_WORLD_H_

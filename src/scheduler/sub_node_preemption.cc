// Issue 25 step 4: preemption on shared nodes. A preemptor whose victims are on shared nodes
// claims its room there (a pod: its pending placeholder, pod_mirror.h; a Slurm job: its hold with
// the claim, job_claim.h), then the victims are asked to leave; nothing whole-node is touched.
// Whole-node preemptions (reservations, fences) are PreemptionExecutor's.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduling_loop.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {

std::vector<queue::PreemptDecision> SchedulingLoop::WholeNodePreemptions(
    const std::vector<queue::PreemptDecision>& decisions, const queue::Snapshot& snapshot) const {
  // Issue 25: a reservation is a whole node: fencing a shared node would requeue the placeholders
  // of the pods there. A preemption that needs a shared node is claimed there instead
  // (StartSubNodePreemptions, StartSubNodeJobPreemptions), or its preemptor waits.
  // C1: nor is one that needs a node a higher-priority start took from a reservation this cycle
  // (its pods are being bound there): it is planned again next cycle with them on the node, so a
  // reservation never stands while a bind it did not see lands (b), and the fence is not flipped
  // back within one cycle.
  if (shared_nodes_.empty() && retaken_this_cycle_.empty()) return decisions;
  std::vector<queue::PreemptDecision> out;
  for (const queue::PreemptDecision& d : decisions) {
    bool skip = false;
    for (queue::NodeIndex n : d.member_nodes) {
      skip = skip || snapshot.nodes[n].sharing == queue::NodeSharing::kShared ||
             retaken_this_cycle_.count(snapshot.nodes[n].name) > 0;
    }
    if (!skip) out.push_back(d);
  }
  return out;
}

namespace {

// Member i of a pod preemptor claims the room on its own node, so it names the victims that run
// there (a victim over several member nodes is named by each; one seen on none, by the first).
std::vector<std::vector<std::string>> VictimsByMember(const queue::PreemptDecision& d, const queue::Snapshot& s) {
  std::vector<std::vector<std::string>> out(d.member_nodes.size());
  if (out.empty()) return out;
  for (const std::string& victim : d.victims) {
    auto r = std::find_if(s.running.begin(), s.running.end(), [&](const queue::RunningWorkload& w) { return w.id == victim; });
    bool named = false;
    for (size_t i = 0; i < d.member_nodes.size(); ++i) {
      const bool there = r != s.running.end() &&
                         std::any_of(r->allocations.begin(), r->allocations.end(),
                                     [&](const queue::Allocation& a) { return a.node == d.member_nodes[i]; });
      if (there) out[i].push_back(victim);
      named = named || there;
    }
    if (!named) out[0].push_back(victim);
  }
  return out;
}

// Whether everything the snapshot counts on node `n` fits its capacity together (a claimed job
// counts there already, as do pods whose placeholders are pending). Slurm's books do not hold the
// pending placeholders of pods' claims: a job started into a room another claim waits for, once
// a job Slurm started between cycles has taken part of it, would be run by Slurm ahead of that
// claim (issue 24 G5).
bool HoldsWhatItCounts(const queue::Snapshot& s, queue::NodeIndex n) {
  queue::Resources used{};
  for (const queue::RunningWorkload& r : s.running) {
    for (const queue::Allocation& a : r.allocations) {
      if (a.node == n) used += a.used;
    }
  }
  return s.nodes[n].allocatable.Covers(used);
}

}  // namespace

std::vector<std::string> SchedulingLoop::ClaimForPods(const queue::PreemptDecision& d,
                                                      const std::vector<std::string>& keys, const KubeState& state,
                                                      const PreemptionCycle& c) {
  // A member blocked after a refusal blocks the gang before anything is submitted for it.
  if (keys.size() != d.member_nodes.size() || RefusedClaim(keys) != nullptr) return {};
  std::vector<std::pair<const PodRecord*, const MirrorNode*>> members;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto node = shared_nodes_.find(c.built.snapshot->nodes[d.member_nodes[i]].name);
    auto pod = std::find_if(state.pods.begin(), state.pods.end(), [&](const auto& p) { return p->key == keys[i]; });
    // A member on an exclusive node (a whole-node reservation is not mixed with claims), bound,
    // or going: the preemptor waits.
    if (node == shared_nodes_.end() || pod == state.pods.end() || !(*pod)->node_name.empty() || (*pod)->deleting) return {};
    members.emplace_back(pod->get(), &node->second);
  }
  const std::vector<std::vector<std::string>> victims = VictimsByMember(d, *c.built.snapshot);
  std::vector<std::string> claimed;  // uids
  for (size_t i = 0; i < members.size(); ++i) {
    const MirroredPod pod = MirroredPodOf(*members[i].first);
    // A gang member with no victim on its node needs no claim: a placeholder as any pod there.
    const absl::Status s = victims[i].empty() ? mirrors_.Plan(pod, *members[i].second, c.now)
                                              : mirrors_.Claim(pod, *members[i].second, victims[i], c.now);
    if (!s.ok()) {
      spdlog::info("pod {}: no preemption on shared node {}: {}", pod.key, members[i].second->node,
                   std::string(s.message()));
      for (const std::string& uid : claimed) {
        (void)mirrors_.Undo(uid, absl::StrCat("gang member ", pod.key, " could not claim: ", s.message()), c.now);
      }
      return {};
    }
    claimed.push_back(pod.uid);
  }
  return claimed;
}

bool SchedulingLoop::VictimOfAStandingClaim(const std::string& workload) const {
  const auto named = [&](const std::vector<std::string>& victims) {
    return std::find(victims.begin(), victims.end(), workload) != victims.end();
  };
  for (const auto& [uid, r] : mirrors_.records()) {
    if (MirrorClaimStands(r) && named(r.victims)) return true;
  }
  for (const auto& [claimant, r] : job_claims_.records()) {
    const bool stands = r.state == JobClaimState::kClaimed || r.state == JobClaimState::kWaitingForVictims;
    if (stands && named(r.victims)) return true;
  }
  return false;
}

const std::string* SchedulingLoop::RefusedClaim(const std::vector<std::string>& pod_keys) const {
  for (const std::string& key : pod_keys) {
    if (const std::string* why = mirrors_.RefusedPod(key)) return why;
  }
  return nullptr;
}

void SchedulingLoop::StartSubNodePreemptions(const std::vector<queue::PreemptDecision>& decisions,
                                             const KubeState& state, const PreemptionCycle& c) {
  if (shared_nodes_.empty() || slurm_ == nullptr || !mirrors_rebuilt_) return;
  std::map<std::string, std::string> gang_of;                 // uid -> its gang's workload (claimed now)
  std::map<std::string, std::vector<std::string>> gangs;      // workload -> every member's uid
  for (const queue::PreemptDecision& d : decisions) {
    auto pods = c.built.pending_pods.find(d.preemptor);
    if (d.victims.empty() || pods == c.built.pending_pods.end()) continue;  // a Slurm preemptor: below
    const std::vector<std::string> claimed = ClaimForPods(d, pods->second.pod_keys, state, c);
    if (claimed.empty()) continue;
    if (claimed.size() > 1) {
      for (const std::string& uid : claimed) gang_of[uid] = d.preemptor;
      gangs[d.preemptor] = claimed;
    }
    Fail("claim-after-submit");
  }
  // Each preemptor's victims are asked once: a gang's claims of this cycle together (pods first,
  // across all its members, so a budget refusal stops it before any job is requeued), every other
  // claim (one pod, or one rebuilt after a restart) alone.
  std::map<std::string, std::vector<std::string>> to_ask;  // preemptor -> uids
  for (const PodMirrorRecord* r : mirrors_.ToAskVictims()) {
    auto gang = gang_of.find(r->pod.uid);
    to_ask[gang == gang_of.end() ? r->pod.key : gang->second].push_back(r->pod.uid);
  }
  for (const auto& [preemptor, uids] : to_ask) {
    std::vector<std::string> victims;
    std::vector<std::string> nodes;
    for (const std::string& uid : uids) {
      const PodMirrorRecord* r = mirrors_.Find(uid);
      for (const std::string& v : r->victims) {
        if (std::find(victims.begin(), victims.end(), v) == victims.end()) victims.push_back(v);
      }
      if (std::find(nodes.begin(), nodes.end(), r->node.node) == nodes.end()) nodes.push_back(r->node.node);
    }
    const absl::Status asked = preemptions_.AskSubNodeVictims(preemptor, victims, nodes, c);
    if (!asked.ok()) spdlog::warn("{}: {}", preemptor, std::string(asked.message()));
    for (const std::string& uid : uids) (void)mirrors_.VictimsAsked(uid, asked, c.now);
    if (asked.ok() || !gangs.count(preemptor)) continue;
    // A refusal undoes the whole gang: its members that needed no claim too.
    for (const std::string& uid : gangs[preemptor]) {
      if (mirrors_.Find(uid) != nullptr)
        (void)mirrors_.Undo(uid, absl::StrCat("preemption for gang ", preemptor, " undone: ", asked.message()), c.now);
    }
  }
}

void SchedulingLoop::StartSubNodeJobPreemptions(const std::vector<queue::PreemptDecision>& decisions,
                                                const PreemptionCycle& c) {
  if (slurm_ == nullptr || !job_claims_rebuilt_ || c.slurm.view == nullptr || c.slurm.view->jobs == nullptr) return;
  std::set<std::string> shared;
  for (const auto& [name, node] : shared_nodes_) shared.insert(name);
  job_claims_.Advance(*c.slurm.view->jobs, shared, c.now);
  for (const queue::PreemptDecision& d : decisions) {
    const std::optional<uint32_t> job = SlurmJobOf(d.preemptor);
    // One node, or a job of several (a gang): claimed on all its member nodes at once, when every
    // one of them is shared (one also exclusive: a whole-node reservation is not mixed with a
    // claim; the job waits). An array task claims by its array's record (job_claim.h).
    if (!job || d.member_nodes.empty() || d.victims.empty()) continue;
    std::vector<std::string> nodes;
    bool all_shared = true;
    for (queue::NodeIndex n : d.member_nodes) {
      const std::string& node = c.built.snapshot->nodes[n].name;
      all_shared = all_shared && shared.count(node) > 0;
      if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
    }
    if (!all_shared || !c.slurm.pending.count(d.preemptor)) continue;
    if (absl::Status s = job_claims_.Claim(d.preemptor, *job, nodes, d.victims, c.now); !s.ok()) {
      spdlog::info("{}: no preemption on shared nodes {}: {}", d.preemptor, absl::StrJoin(nodes, ","),
                   std::string(s.message()));
      continue;
    }
    Fail("job-claim-after-hold");
  }
  std::vector<std::string> to_ask;
  for (const JobClaimRecord* r : job_claims_.ToAskVictims()) to_ask.push_back(r->workload);
  for (const std::string& workload : to_ask) {
    const JobClaimRecord* r = job_claims_.Find(workload);
    const absl::Status asked = preemptions_.AskSubNodeVictims(workload, r->victims, r->nodes, c);
    if (!asked.ok()) spdlog::warn("{}: {}", workload, std::string(asked.message()));
    (void)job_claims_.VictimsAsked(workload, asked, c.now);
  }
  // Every victim gone from the claimed nodes (a requeued job no longer holds its allocation, an
  // evicted pod has left; one whose workload was made again or started again on another node holds
  // nothing there): the job is started there the way every Slurm job is.
  const auto holds_room = [&](const JobClaimRecord& r, const std::string& victim) {
    const bool running =
        SlurmJobOf(victim) ? c.slurm.running.count(victim) > 0 : c.built.running_pods.count(victim) > 0;
    return running && !VictimsHoldingRoomOn({victim}, r.nodes, *c.built.snapshot).empty();
  };
  std::vector<std::pair<std::string, std::vector<std::string>>> ready;  // workload, nodes
  for (const JobClaimRecord* r : job_claims_.ReadyToStart(holds_room)) ready.emplace_back(r->workload, r->nodes);
  for (const auto& [workload, nodes] : ready) {
    queue::StartDecision start{workload, {}, false};
    for (const std::string& node : nodes) {
      for (size_t i = 0; i < c.built.snapshot->nodes.size(); ++i) {
        if (c.built.snapshot->nodes[i].name == node) start.member_nodes.push_back(static_cast<queue::NodeIndex>(i));
      }
    }
    if (start.member_nodes.size() != nodes.size()) continue;  // a node is gone: Advance undoes the claim
    if (VictimOfAStandingClaim(workload)) continue;  // G6: not before the claim it left for runs
    const auto room = [&](queue::NodeIndex n) { return HoldsWhatItCounts(*c.built.snapshot, n); };
    if (!std::all_of(start.member_nodes.begin(), start.member_nodes.end(), room)) {
      spdlog::info("{}: its victims have left, but its room on {} is taken meanwhile: not started yet", workload,
                   absl::StrJoin(nodes, ","));
      continue;  // waits, held with its claim (its timeout undoes it if the room does not come back)
    }
    if (lending_.StartJob(start, c.built, c.slurm, c.now, c.touched, c.stats).empty()) continue;  // next cycle
    (void)job_claims_.Started(workload, c.now);
  }
}

MirroredPod SchedulingLoop::MirroredPodOf(const PodRecord& pod) const {
  MirroredPod m;
  m.uid = std::string(PodIdentity(pod));
  m.key = pod.key;
  m.node = pod.node_name;
  m.account = PlaceholderAccountOf(config_.sharing, pod.namespace_);
  constexpr int64_t kMiB = 1024 * 1024;
  if (auto cpu = pod.requests.find("cpu"); cpu != pod.requests.end()) {
    m.size.cpus = static_cast<uint32_t>(std::max<int64_t>(1, (cpu->second.MilliValue() + 999) / 1000));
  }
  if (auto mem = pod.requests.find("memory"); mem != pod.requests.end()) {
    m.size.memory_mb = (mem->second.Value() + kMiB - 1) / kMiB;
  }
  for (const auto& [gres, resource] : config_.slurm.gres_resources) {
    auto r = pod.requests.find(resource);
    if (r != pod.requests.end() && r->second.Value() > 0) m.size.gres[gres] = r->second.Value();
  }
  return m;
}

}  // namespace onequeue::scheduler

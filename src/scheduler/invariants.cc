#include "scheduler/invariants.h"

#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onequeue::scheduler::invariants {
namespace {

constexpr char kReserved[] = "reserved/";
constexpr size_t kReservedLength = sizeof(kReserved) - 1;

bool IsReserved(const std::string& owner) { return absl::StartsWith(owner, kReserved); }
bool IsSlurm(const std::string& owner) { return owner == "slurm" || absl::StartsWith(owner, "slurm/"); }
std::string Preemptor(const std::string& owner) { return owner.substr(kReservedLength); }
std::string Shown(const std::string& owner) { return owner.empty() ? "free" : owner; }
std::string JobList(const std::vector<uint32_t>& jobs) {
  return absl::StrJoin(jobs, ", ", [](std::string* out, uint32_t id) { absl::StrAppend(out, "Slurm job ", id); });
}
bool Settled(const NodeFacts& n, const WorldFacts& w) { return n.settled_cycles >= w.settle_cycles; }

}  // namespace

std::vector<Violation> RunsOnItsOwnersNodes(const WorldFacts& w) {
  std::vector<Violation> out;
  for (const NodeFacts& n : w.nodes) {
    if (n.shared) continue;  // (f)
    if (!n.pods.empty() && !n.slurm_jobs.empty()) {
      out.push_back({'a', absl::StrCat("pod ", absl::StrJoin(n.pods, ", "), " runs beside ", JobList(n.slurm_jobs),
                                       " on ", n.name, " (owner ", Shown(n.owner), ")")});
      continue;
    }
    if (!n.pods.empty() && IsSlurm(n.owner)) {
      out.push_back({'a', absl::StrCat("pod ", absl::StrJoin(n.pods, ", "), " runs on ", n.name,
                                       ", a node lent to Slurm (owner ", n.owner, ")")});
    }
    if (!n.slurm_jobs.empty() && n.owner == "kubernetes") {
      out.push_back({'a', absl::StrCat(JobList(n.slurm_jobs), " runs on ", n.name,
                                       ", a node owned by kubernetes (fence: ", Shown(n.fence), ")")});
    }
  }
  return out;
}

std::vector<Violation> ReservationsEndExactlyOnce(const WorldFacts& w) {
  std::vector<Violation> out;
  std::map<std::string, const NodeFacts*> nodes;
  for (const NodeFacts& n : w.nodes) nodes[n.name] = &n;
  for (const ReservationFacts& r : w.reservations) {
    for (const std::string& other : r.taken_by) {
      out.push_back({'b', absl::StrCat(other, " was placed on ", r.node, " while it was reserved for ", r.preemptor)});
    }
    for (const std::string& victim : r.evicted_again) {
      out.push_back({'b', absl::StrCat(victim, " was evicted again for the same reservation of ", r.node, " for ",
                                       r.preemptor)});
    }
    if (r.outcome != ReservationOutcome::kOpen || r.preemptor_waits) continue;
    auto n = nodes.find(r.node);
    if (n != nodes.end() && Settled(*n->second, w)) {
      out.push_back({'b', absl::StrCat("the reservation of ", r.node, " for ", r.preemptor,
                                       " outlives its preemptor (no longer waiting) through ",
                                       n->second->settled_cycles, " healthy cycles: never released")});
    }
  }
  return out;
}

std::vector<Violation> NothingIsLost(const WorldFacts& w) {
  std::vector<Violation> out;
  for (const JobFacts& j : w.jobs) {
    if (j.phase == JobPhase::kCancelled && j.cancelled_by_onequeue && j.requeueable) {
      out.push_back({'c', absl::StrCat("Slurm job ", j.id, " was cancelled although Slurm could requeue it")});
    }
  }
  for (const NodeFacts& n : w.nodes) {
    if (!IsReserved(n.owner) || n.slurm_jobs.empty() || !Settled(n, w)) continue;
    const std::string preemptor = Preemptor(n.owner);
    if (absl::StartsWith(preemptor, "slurm/")) continue;  // a Slurm preemptor's victims are pods
    out.push_back({'c', absl::StrCat(JobList(n.slurm_jobs), " still runs on ", n.name, " reserved for ", preemptor,
                                     " after ", n.settled_cycles,
                                     " healthy cycles: the victim is neither requeued nor cancelled")});
  }
  return out;
}

std::vector<Violation> FencesAndHoldsHaveAReason(const WorldFacts& w) {
  std::vector<Violation> out;
  std::set<std::string> waiting;
  for (const ReservationFacts& r : w.reservations) {
    if (r.outcome == ReservationOutcome::kOpen && r.preemptor_waits) waiting.insert(r.preemptor);
  }
  for (const NodeFacts& n : w.nodes) {
    if (n.fence.empty() || !Settled(n, w)) continue;
    if (n.fence == "kubernetes" && (IsSlurm(n.owner) || IsReserved(n.owner))) {
      out.push_back({'d', absl::StrCat(n.name, " is fenced for kubernetes while onequeue records it as ", n.owner,
                                       " (", n.settled_cycles, " healthy cycles)")});
    } else if (IsReserved(n.fence) && (n.fence != n.owner || !waiting.count(Preemptor(n.fence)))) {
      out.push_back({'d', absl::StrCat(n.name, " is fenced for ", n.fence, " while onequeue records it as ",
                                       Shown(n.owner), n.fence == n.owner ? " and its preemptor no longer waits" : "",
                                       " (", n.settled_cycles, " healthy cycles)")});
    }
  }
  for (const JobFacts& j : w.jobs) {
    if (j.phase == JobPhase::kPending && j.held && j.comment.empty()) {
      out.push_back({'d', absl::StrCat("Slurm job ", j.id, " is held with no reason recorded")});
    }
  }
  return out;
}

std::vector<Violation> NoWriteAfterTheLease(const WorldFacts& w) {
  std::vector<Violation> out;
  for (const WriteFacts& write : w.writes) {
    if (!write.writer_leads) {
      out.push_back({'e', absl::StrCat(write.writer, " wrote \"", write.what, "\" after its lease ended")});
    }
  }
  return out;
}

std::vector<Violation> SharedNodesNeverOverAllocated(const WorldFacts& w) {
  std::vector<Violation> out;
  for (const NodeFacts& n : w.nodes) {
    if (!n.shared) continue;
    NodeFacts::Amounts used = n.slurm_jobs_allocated, lost;
    for (const NodeFacts::SharedPod& p : n.shared_pods) {
      for (const auto& [dim, amount] : p.size) {
        used[dim] += amount;
        if (p.mirror_lost && !p.mirrored) lost[dim] += amount;
      }
      if (!p.mirrored && !p.mirror_lost) {
        out.push_back({'f', absl::StrCat("pod ", p.key, " is bound on shared node ", n.name,
                                         " without a running placeholder of its size")});
      }
      if (!p.mirrored && p.mirror_lost && !p.reported && p.lost_cycles >= w.lost_mirror_cycles) {
        out.push_back({'f', absl::StrCat("pod ", p.key, " on shared node ", n.name, " lost its placeholder ",
                                         p.lost_cycles, " healthy cycles ago: neither made again nor reported")});
      }
    }
    for (const auto& [dim, amount] : used) {
      auto cap = n.capacity.find(dim);
      const int64_t capacity = cap == n.capacity.end() ? 0 : cap->second;
      auto l = lost.find(dim);
      const int64_t excused = l == lost.end() ? 0 : l->second;
      if (amount - excused > capacity) {
        out.push_back({'f', absl::StrCat("shared node ", n.name, " is over-allocated in ", dim, ": pods and Slurm's jobs hold ",
                                         amount, " of ", capacity,
                                         excused ? absl::StrCat(" (", excused, " of it pods whose placeholder was lost)")
                                                 : "")});
      }
    }
  }
  return out;
}

std::vector<Violation> ClaimsAreNeverVictims(const WorldFacts& w) {
  std::vector<Violation> out;
  std::map<std::string, const ClaimFacts*> claimants;
  for (const ClaimFacts& c : w.claims) claimants[c.claimant] = &c;
  for (const ClaimFacts& c : w.claims) {
    if (!c.made_now) continue;
    for (const std::string& victim : c.victims) {
      auto other = claimants.find(victim);
      if (other == claimants.end() || victim == c.claimant) continue;
      out.push_back({'g', absl::StrCat("the claim of ", c.claimant, " on shared node ", c.node, " names ", victim,
                                       " as a victim, which holds a claim of its own on ", other->second->node)});
    }
  }
  for (const ClaimFacts& c : w.claims) {
    for (const std::string& back : c.taken_back) {
      out.push_back({'g', absl::StrCat(back, " took the room on shared node ", c.node, " claimed by ", c.claimant,
                                       " back before the claimant started")});
    }
  }
  for (const VictimFacts& v : w.victims) {
    if (v.held_claim) {
      out.push_back({'g', absl::StrCat(v.by, " evicted/requeued ", v.victim, " while it held a claim")});
    }
  }
  return out;
}

std::vector<Violation> CheckAll(const WorldFacts& w) {
  std::vector<Violation> out;
  for (auto check : {RunsOnItsOwnersNodes, ReservationsEndExactlyOnce, NothingIsLost, FencesAndHoldsHaveAReason,
                     NoWriteAfterTheLease, SharedNodesNeverOverAllocated, ClaimsAreNeverVictims}) {
    std::vector<Violation> v = check(w);
    out.insert(out.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  }
  return out;
}

}  // namespace onequeue::scheduler::invariants

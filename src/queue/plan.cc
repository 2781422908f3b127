#include "queue/plan.h"

#include <algorithm>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace onequeue::queue {

const char* WaitReasonName(WaitReason reason) {
  switch (reason) {
    case WaitReason::kPriority: return "Priority";
    case WaitReason::kResources: return "Resources";
    case WaitReason::kReservedForHigherPriority: return "ReservedForHigherPriority";
    case WaitReason::kGangIncomplete: return "GangIncomplete";
    case WaitReason::kQosNotAllowed: return "QOSNotAllowed";
    case WaitReason::kAccountNotAllowed: return "AccountNotAllowed";
    case WaitReason::kInvalidAnnotation: return "InvalidAnnotation";
    case WaitReason::kPartitionNodesUnavailable: return "PartitionNodesUnavailable";
    case WaitReason::kHeld: return "Held";
    case WaitReason::kPreempting: return "Preempting";
    case WaitReason::kBeyondWindow: return "BeyondWindow";
    case WaitReason::kDependency: return "Dependency";
  }
  return "Unknown";
}

std::vector<PromisedReservation> CarryReservations(const Plan& previous, const Snapshot& next) {
  std::vector<PromisedReservation> carried;
  if (previous.reservations.empty() || previous.snapshot == nullptr) return carried;
  const Snapshot& before = *previous.snapshot;
  // The request each holder was promised with (the few holders among many pending workloads).
  absl::flat_hash_map<std::string_view, const PendingWorkload*> holder;
  for (const ReserveDecision& r : previous.reservations) holder.emplace(r.workload, nullptr);
  for (const PendingWorkload& w : before.pending) {
    auto it = holder.find(std::string_view(w.id));
    if (it != holder.end()) it->second = &w;
  }
  // Most cycles see the same pool: then every index stays.
  bool same_pool = before.nodes.size() == next.nodes.size();
  for (size_t i = 0; same_pool && i < before.nodes.size(); ++i) {
    same_pool = before.nodes[i].name == next.nodes[i].name;
  }
  absl::flat_hash_map<std::string, NodeIndex> index_of;
  if (!same_pool) {
    for (size_t i = 0; i < next.nodes.size(); ++i) index_of.emplace(next.nodes[i].name, static_cast<NodeIndex>(i));
  }
  // A start the previous plan made that has not happened (the workload is still pending: e.g. a
  // node that first had to change hands) is a plan the world did not follow, like a running
  // workload past its expected end: reservations placed after it on its nodes assumed it would
  // run from then, and keeping them would hold the starter off its own nodes. They are dropped.
  absl::flat_hash_set<std::string_view> still_pending;
  if (!previous.starts.empty()) {
    for (const PendingWorkload& w : next.pending) still_pending.insert(std::string_view(w.id));
  }
  std::vector<char> start_missed(before.nodes.size(), 0);
  for (const StartDecision& d : previous.starts) {
    if (!still_pending.contains(std::string_view(d.workload))) continue;
    for (NodeIndex n : d.member_nodes) {
      if (n >= 0 && static_cast<size_t>(n) < start_missed.size()) start_missed[n] = 1;
    }
  }
  for (const ReserveDecision& r : previous.reservations) {
    const PendingWorkload* w = holder.at(std::string_view(r.workload));
    if (w == nullptr) continue;
    if (std::any_of(r.member_nodes.begin(), r.member_nodes.end(), [&](NodeIndex n) {
          return n >= 0 && static_cast<size_t>(n) < start_missed.size() && start_missed[n];
        })) {
      continue;
    }
    PromisedReservation c;
    c.workload = r.workload;
    c.start = r.start;
    const Duration limit = w->time_limit.has_value() ? std::max<Duration>(1, *w->time_limit) : kForever;
    c.end = limit >= kForever - r.start ? kForever : r.start + limit;
    c.per_member = w->per_member;
    c.member_nodes.reserve(r.member_nodes.size());
    bool kept = true;
    for (NodeIndex n : r.member_nodes) {
      if (n < 0 || static_cast<size_t>(n) >= before.nodes.size()) {
        kept = false;
        break;
      }
      if (same_pool) {
        c.member_nodes.push_back(n);
        continue;
      }
      auto it = index_of.find(before.nodes[n].name);
      if (it == index_of.end()) {
        kept = false;
        break;
      }
      c.member_nodes.push_back(it->second);
    }
    if (kept) carried.push_back(std::move(c));
  }
  return carried;
}
}  // namespace onequeue::queue

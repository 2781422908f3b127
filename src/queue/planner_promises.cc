// Last cycle's reservations (docs/queue.md "Promises"), as the cycle pass holds them: a
// placeholder block in the profile from the start of the walk until the holder's own turn, and
// the check that the promised slot still fits the holder then. See planner_pass.h.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "queue/planner_pass.h"
#include "queue/profile.h"

namespace onequeue::queue::internal {

namespace {
// Calls visit(node, members on it) for each distinct node of `nodes`, in node order; `scratch`
// holds the sorted copy when `nodes` is not strictly ascending already.
template <typename Visit>
void ForEachNodeCount(const MemberNodes& nodes, MemberNodes& scratch, Visit visit) {
  const MemberNodes* sorted = &nodes;
  if (!std::is_sorted(nodes.begin(), nodes.end())) {
    scratch.assign(nodes.begin(), nodes.end());
    std::sort(scratch.begin(), scratch.end());
    sorted = &scratch;
  }
  const MemberNodes& sorted_nodes = *sorted;
  for (size_t i = 0; i < sorted_nodes.size();) {
    size_t j = i;
    while (j < sorted_nodes.size() && sorted_nodes[j] == sorted_nodes[i]) ++j;
    visit(sorted_nodes[i], static_cast<int64_t>(j - i));
    i = j;
  }
}
}  // namespace

bool CyclePass::SlotFits(const PendingWorkload& w, Duration duration, double priority,
                         const std::vector<char>& eligible, const MemberNodes& nodes, Time start) {
  if (static_cast<int32_t>(nodes.size()) != std::max<int32_t>(1, w.members)) return false;
  const AvailabilityProfile& p = *s_.profile;
  bool fits = true;
  ForEachNodeCount(nodes, s_.scratch_member_nodes, [&](NodeIndex n, int64_t count) {
    fits = fits && n >= 0 && n < static_cast<NodeIndex>(p.size()) && Usable(n, w, priority, eligible) &&
           p.Copies(n, start, SaturatingAdd(start, duration), w.per_member, w.kind, count, false,
                    s_.TenantId(w.tenant)) >= count;
  });
  return fits;
}

bool CyclePass::AddPlaceholder(const PendingWorkload& w, const QueuePlanner::State::Facts& facts,
                               double priority, const Promise& promise) {
  if (!facts.placeable || facts.qos_unknown || promise.end <= promise.start) return false;
  const std::vector<char>& eligible = StaticEligible(w, facts.eligibility).bits;
  AvailabilityProfile& p = *s_.profile;
  bool fits = !promise.nodes.empty();
  ForEachNodeCount(promise.nodes, s_.scratch_member_nodes, [&](NodeIndex n, int64_t count) {
    if (!fits) return;
    fits = n >= 0 && n < static_cast<NodeIndex>(p.size()) && Usable(n, w, priority, eligible) &&
           p.Copies(n, promise.start, promise.end, promise.per_member, w.kind, count, false,
                    s_.TenantId(w.tenant)) >= count;
  });
  if (!fits) return false;
  ForEachNodeCount(promise.nodes, s_.scratch_member_nodes, [&](NodeIndex n, int64_t count) {
    p.Add(n, AvailabilityProfile::Block{promise.start, promise.end, count == 1 ? promise.per_member : promise.per_member.Times(count), w.kind, true,
                                        s_.TenantId(w.tenant)});
    if (promise.start <= p.now()) {
      for (const auto& index : s_.free_index) {
        if (index != nullptr) index->Update(n, p);
      }
    }
  });
  return true;
}

void CyclePass::RemovePlaceholder(const PendingWorkload& w, const Promise& promise) {
  AvailabilityProfile& p = *s_.profile;
  ForEachNodeCount(promise.nodes, s_.scratch_member_nodes, [&](NodeIndex n, int64_t count) {
    p.Remove(n, AvailabilityProfile::Block{promise.start, promise.end, count == 1 ? promise.per_member : promise.per_member.Times(count), w.kind, true,
                                           s_.TenantId(w.tenant)});
    if (promise.start <= p.now()) {
      for (const auto& index : s_.free_index) {
        if (index != nullptr) index->Update(n, p);
      }
    }
  });
}

}  // namespace onequeue::queue::internal

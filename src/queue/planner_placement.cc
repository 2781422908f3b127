// Where and when a workload fits: the cycle pass's node searches over the free index and the
// availability profile, the node choice (topology packing) and Commit, which writes a start or a
// reservation into the profile. See planner_pass.h; docs/queue.md "Backfill".
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "queue/eligibility.h"
#include "queue/placement_rules.h"
#include "queue/planner_pass.h"
#include "queue/profile.h"

namespace onequeue::queue::internal {
namespace {

// A reservation's candidate nodes (node, copies), best first: the node whose last block ended
// latest before the reservation's start first (ties by node), the nodes free since the search
// began last. The reservation then leaves the nodes that are free now, and the nodes that free
// early, to backfilled starts: with one node per processor its spare nodes are exactly textbook
// EASY's extra processors (test/queue/easy_reference_test.cc), where taking the free ones first
// let a shorter job behind start instead of the one that fitted beside it.
// The workload's node scores, or null without any (or with a vector of the wrong length).
const std::vector<int32_t>* PreferenceOf(const PendingWorkload& w, size_t nodes) {
  const std::vector<int32_t>* preference = w.node_preference.get();
  return preference != nullptr && preference->size() == nodes ? preference : nullptr;
}

// With a node preference (PendingWorkload::node_preference), a higher score comes first and
// this order breaks the ties.
// Fills `best_first` (`ranked`: its scratch; both kept by the caller across searches). Only its
// first `needed` entries are in order (the rest follow in no order): a caller that takes at most
// `needed` nodes (each holds a copy or more) reads the same nodes as after a full sort, as the
// order is total (nodes are distinct).
// ChooseNodes takes at most `members` of them in the given order, unless it packs a gang into
// topology domains (`domains`: the cycle has some; then it reads every candidate).
void PreferLatestFreed(const PlacementScratch& feasible, const PendingWorkload& w, bool domains,
                       std::vector<std::tuple<Time, NodeIndex, int64_t>>& ranked,
                       std::vector<std::pair<NodeIndex, int64_t>>& best_first) {
  const std::vector<int32_t>* preference = PreferenceOf(w, feasible.mark.size());
  const int32_t members = std::max<int32_t>(1, w.members);
  const bool packs = w.pack_topology && domains && members > 1;
  const size_t needed = packs ? feasible.nodes.size() : static_cast<size_t>(members);
  ranked.clear();
  for (NodeIndex n : feasible.nodes) ranked.emplace_back(feasible.freed[n], n, feasible.copies[n]);
  const auto middle = ranked.begin() + static_cast<std::ptrdiff_t>(std::min(needed, ranked.size()));
  // The first `needed` selected (linear), then sorted: partial_sort's heap was slower than a
  // full sort for the wide jobs (half the nodes and more).
  auto order = [&](auto before) {
    // A start's feasible nodes come ascending, all freed then (EarliestPlacement): in order already.
    if (std::is_sorted(ranked.begin(), ranked.end(), before)) return;
    if (middle != ranked.end()) std::nth_element(ranked.begin(), middle, ranked.end(), before);
    std::sort(ranked.begin(), middle, before);
  };
  if (preference != nullptr) {
    order([preference](const auto& a, const auto& b) {
      const int32_t pa = (*preference)[std::get<1>(a)], pb = (*preference)[std::get<1>(b)];
      if (pa != pb) return pa > pb;
      if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
      return std::get<1>(a) < std::get<1>(b);
    });
  } else {
    order([](const auto& a, const auto& b) {
      if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
      return std::get<1>(a) < std::get<1>(b);
    });
  }
  best_first.clear();
  for (const auto& [freed, n, copies] : ranked) best_first.emplace_back(n, copies);
}
// Visits a batch of (block end, node), gathered in ForEachEndAfter's ascending order, by latest
// end first and, among equal ends, by node number, each node once at its latest end (marked in
// `stamps` with `stamp`); stops when `visit` returns false.
template <typename Visit>
void LatestEndFirst(const std::vector<std::pair<Time, NodeIndex>>& batch, std::vector<uint32_t>& stamps,
                    uint32_t stamp, Visit visit) {
  size_t group_end = batch.size();
  while (group_end > 0) {
    size_t group_start = group_end - 1;
    while (group_start > 0 && batch[group_start - 1].first == batch[group_end - 1].first) --group_start;
    for (size_t i = group_start; i < group_end; ++i) {
      const NodeIndex n = batch[i].second;
      if (stamps[n] == stamp) continue;
      stamps[n] = stamp;
      if (!visit(batch[i].first, n)) return;
    }
    group_end = group_start;
  }
}

// Copies of w's member on node n over [t, t + duration), 0 when `memo` knows the node has no room
// then; a 0 found is remembered with the span the profile names for it (NoRoomMemo).
[[gnu::always_inline]] inline int64_t CopiesUnlessKnownNoRoom(const AvailabilityProfile& p, NoRoomMemo& memo,
                                                              const PendingWorkload& w, NodeIndex n, Time t,
                                                              Duration duration, int64_t cap, int16_t tenant,
                                                              int slots) {
  const uint32_t version = p.NodeVersion(n);
  if (memo.KnownNoRoom(n, t, duration, version)) return 0;
  NoRoomSpan blocked;
  const int64_t c =
      p.Copies(n, t, SaturatingAdd(t, duration), w.per_member, w.kind, cap, false, tenant, slots, &blocked);
  if (c <= 0) memo.NoRoomAt(n, blocked, version);
  return c;
}
}  // namespace

// A template used only by this file's searches, so defined here.
template <typename Visit>
void CyclePass::ForEachNodeWithRoomAt(const PendingWorkload& w, Time t, Visit visit) {
  const AvailabilityProfile& p = *s_.profile;
  // Walk the index that lists the fewest nodes with enough of what the request asks for (the GPU
  // index for a GPU request when GPUs are scarce, the cpu index when cpu is).
  // Counting is skipped when a single index applies (most requests ask for no GPU).
  std::array<int, kMaxResourceKinds> indexed;
  int candidates = 0;
  for (int r = 0; r < kMaxResourceKinds; ++r) {
    if (w.per_member[r] > 0 && s_.free_index[r] != nullptr) indexed[candidates++] = r;
  }
  int slot = candidates > 0 ? indexed[0] : -1;
  if (candidates > 1) {
    int64_t shortest = s_.free_index[slot]->CountWithAtLeast(w.kind, w.per_member[slot]);
    for (int i = 1; i < candidates; ++i) {
      const int r = indexed[i];
      const int64_t count = s_.free_index[r]->CountWithAtLeast(w.kind, w.per_member[r]);
      if (count < shortest) {
        slot = r;
        shortest = count;
      }
    }
  }
  if (slot < 0) {
    for (NodeIndex n = 0; n < static_cast<NodeIndex>(p.size()); ++n) {
      if (!visit(n)) return;
    }
    return;
  }
  // Nodes with a block ending in (now, t], each once: marked with this call's stamp rather than
  // sorted (late times gather thousands of them).
  std::vector<NodeIndex> freed;
  const uint32_t stamp = ++s_.stamp;
  if (t > p.now()) {
    p.ForEachFirstEndAfterNow([&](Time end, NodeIndex n) {
      if (end > t) return false;
      if (s_.node_stamp[n] != stamp) {
        s_.node_stamp[n] = stamp;
        freed.push_back(n);
      }
      return true;
    });
  }
  bool go_on = true;
  s_.free_index[slot]->ForEachWithAtLeast(w.kind, w.per_member[slot], [&](NodeIndex n) {
    if (s_.node_stamp[n] == stamp) return true;  // visited below
    go_on = visit(n);
    return go_on;
  });
  for (size_t i = 0; go_on && i < freed.size(); ++i) go_on = visit(freed[i]);
}

template <typename Visit>
void CyclePass::ForEachStartCandidate(const PendingWorkload& w, Time t, int scarce, Visit visit) {
  // A superset of the nodes with room for a member at t (profile.h, FirstEndAfterNow; the caller
  // checks that no block is negative): among the nodes with the scarce resource (the others never
  // have room), those with a block end in (now, t] or whose free now holds the request's amount.
  const AvailabilityProfile& p = *s_.profile;
  const int64_t amount = w.per_member[scarce];
  for (NodeIndex n : s_.nodes_with[scarce]) {
    if ((p.FirstEndAfterNow(n) <= t || p.FreeNow(n)[scarce] >= amount) && !visit(n)) return;
  }
}

const QueuePlanner::State::EligibleSet& CyclePass::StaticEligible(const PendingWorkload& w,
                                                                  int32_t eclass) {
  std::unique_ptr<QueuePlanner::State::EligibleSet>& slot = s_.eligible_by_class[eclass];
  const bool has_rules = static_cast<size_t>(eclass) < s_.class_has_rules.size() && s_.class_has_rules[eclass];
  if (slot != nullptr && !has_rules) return *slot;
  const Snapshot& snap = *s_.snapshot;
  slot = std::make_unique<QueuePlanner::State::EligibleSet>();
  QueuePlanner::State::EligibleSet& set = *slot;
  std::vector<char>& bits = set.bits;
  bits.assign(snap.nodes.size(), 0);
  absl::flat_hash_set<std::string> allowed;
  if (w.eligibility.allowed_nodes.has_value()) {
    allowed.insert(w.eligibility.allowed_nodes->begin(), w.eligibility.allowed_nodes->end());
  }
  for (size_t i = 0; i < snap.nodes.size(); ++i) {
    const Node& node = snap.nodes[i];
    bits[i] = node.schedulable && MatchesSelectorAndAffinity(node, w.eligibility) &&
              ToleratesTaints(node, w.eligibility.tolerations) &&
              (!w.eligibility.allowed_nodes.has_value() || allowed.contains(node.name));
  }
  if (has_rules) {
    if (w.placement->carriers != nullptr) {  // anti-affinity lifted by evicting: the preemption search's nodes
      const std::vector<char> by_rules =
          NodesAllowedByRules(snap.nodes, snap.topologies, s_.pod_counts, *w.placement, &snap.pod_counts);
      set.preempt_bits.assign(bits.size(), 0);
      for (size_t i = 0; i < bits.size(); ++i) {
        set.preempt_bits[i] = bits[i] && by_rules[i];
        set.preempt_count += set.preempt_bits[i];
      }
    }
    const std::vector<char> by_rules = NodesAllowedByRules(snap.nodes, snap.topologies, s_.pod_counts, *w.placement);
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = bits[i] && by_rules[i];
  }
  for (char b : bits) set.count += b;
  return set;
}

void CyclePass::CountPlaced(const PendingWorkload& w, const MemberNodes& nodes) {
  for (int32_t counter : w.placement->counts_toward) {
    PodCounts& counts = s_.pod_counts[counter];
    for (NodeIndex n : nodes) ++counts[n];
  }
}
MemberNodes CyclePass::ChooseNodes(
    const PendingWorkload& w, const std::vector<std::pair<NodeIndex, int64_t>>& candidates,
    bool preference_order) {
  // candidates: (node, copies) with sum(copies) >= members. Without packing: in the given order.
  MemberNodes out;
  const int32_t members = std::max<int32_t>(1, w.members);
  out.reserve(static_cast<size_t>(members));
  auto take = [&](const std::vector<std::pair<NodeIndex, int64_t>>& from) {
    for (const auto& [n, copies] : from) {
      for (int64_t c = 0; c < copies && static_cast<int32_t>(out.size()) < members; ++c) {
        out.push_back(n);
      }
      if (static_cast<int32_t>(out.size()) == members) break;
    }
  };
  if (!w.pack_topology || s_.domains.empty() || members == 1) {
    take(candidates);
    return out;
  }
  // Fewest domains: at each level, finest first, the smallest single domain that holds the whole
  // gang (best fit keeps big domains for big gangs; ties to the lowest domain id, i.e. the first
  // seen in node order); if no domain at any level holds it, fill the finest domains largest
  // first (greedy, like Slurm's topology/tree fallback). Domain ids are precomputed per cycle.
  // Capacities per domain in a vector indexed by domain id (ids are dense per level): a gang
  // that packs looks at every node with room, thousands of them.
  std::vector<int64_t>& capacity = s_.scratch_capacity;
  for (size_t level = 0; level < s_.domains.size(); ++level) {
    const std::vector<int32_t>& domain_of = s_.domains[level];
    capacity.assign(s_.domain_count[level], 0);
    for (const auto& [n, copies] : candidates) {
      if (domain_of[n] >= 0) capacity[domain_of[n]] += copies;
    }
    int32_t best = -1;
    for (int32_t d = 0; d < static_cast<int32_t>(capacity.size()); ++d) {
      if (capacity[d] >= members && (best < 0 || capacity[d] < capacity[best])) best = d;
    }
    if (best >= 0) {
      std::vector<std::pair<NodeIndex, int64_t>>& inside = s_.scratch_inside;
      inside.clear();
      for (const auto& c : candidates) {
        if (domain_of[c.first] == best) inside.push_back(c);
      }
      if (!preference_order) {
        // take() reads at most `members` of them (each holds a copy or more): only those are put
        // in order, the same as after a full sort (distinct nodes: a total order). Issue 26: a
        // packing gang's zone holds hundreds to thousands of nodes. (With a negative block, as
        // the searches, the full sort: test/queue/start_candidates_test.cc compares the two.)
        const auto taken = s_.profile->AnyNegativeBlock()
                               ? inside.end()
                               : inside.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(inside.size(), members));
        if (taken != inside.end()) std::nth_element(inside.begin(), taken, inside.end());
        std::sort(inside.begin(), taken);
      }
      take(inside);
      return out;
    }
  }
  const std::vector<int32_t>& finest = s_.domains.front();
  capacity.assign(s_.domain_count.front(), 0);
  for (const auto& [n, copies] : candidates) {
    if (finest[n] >= 0) capacity[finest[n]] += copies;
  }
  auto cap_of = [&](NodeIndex n) { return finest[n] >= 0 ? capacity[finest[n]] : 0; };
  std::vector<std::pair<NodeIndex, int64_t>> sorted = candidates;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const auto& a, const auto& b) {
    const int64_t ca = cap_of(a.first), cb = cap_of(b.first);
    if (ca != cb) return ca > cb;
    if (finest[a.first] != finest[b.first]) return finest[a.first] < finest[b.first];
    return !preference_order && a.first < b.first;
  });
  take(sorted);
  return out;
}

int64_t CyclePass::CopiesNowWithBlockAhead(const PendingWorkload& w, NodeIndex n, Time now, Duration duration,
                                           int64_t cap, int16_t tenant, int slots) {
  const AvailabilityProfile& p = *s_.profile;
  return CopiesUnlessKnownNoRoom(p, s_.no_room_now, w, n, now, duration, cap, tenant, slots);
}

std::optional<MemberNodes> CyclePass::TryStartNow(const PendingWorkload& w, Duration duration,
                                                  double priority,
                                                  const std::vector<char>& eligible, Time now) {
  const int32_t members = std::max<int32_t>(1, w.members);
  const Time end = SaturatingAdd(now, duration);
  const bool pack = w.pack_topology && !s_.domains.empty() && members > 1;
  // A node preference, like packing, needs every node with room to choose from.
  const std::vector<int32_t>* preference = PreferenceOf(w, s_.profile->size());
  const bool every_node = pack || preference != nullptr;
  std::vector<std::pair<NodeIndex, int64_t>>& candidates = s_.scratch_candidates;
  int64_t found = 0;
  const AvailabilityProfile& p = *s_.profile;
  const int16_t tenant = s_.TenantId(w.tenant);
  const int slots = p.SlotsFor(w.per_member);
  // A node whose block ahead leaves no room now is asked again by every start of the request
  // walking past it (the reservations sit where the walks look first): remembered until it changes.
  s_.no_room_now.Begin(w.per_member, w.kind, tenant, p.size());
  auto consider = [&](NodeIndex n) {
    if (!Usable(n, w, priority, eligible)) return;
    const int64_t cap = every_node ? members : members - found;
    // Only the slow question (a block ahead before the end) is worth the memo, out of line.
    const int64_t copies = end > p.FirstFutureStart(n)
                               ? CopiesNowWithBlockAhead(w, n, now, duration, cap, tenant, slots)
                               : p.Copies(n, now, end, w.per_member, w.kind, cap, false, tenant, slots);
    if (copies <= 0) return;
    candidates.emplace_back(n, copies);
    found += copies;
  };
  // A holder of reserved(W) nodes starts on its own when they hold it (issue 26: the walk below, in
  // index order, may meet a node reserved for a lower holder first and displace it).
  if (!every_node && !s_.reserved_nodes_of.empty()) {  // no id hashed where no node is reserved
    if (auto own = s_.reserved_nodes_of.find(w.id); own != s_.reserved_nodes_of.end()) {
      candidates.clear();
      for (NodeIndex n : own->second) {
        if (found >= members) break;
        consider(n);
      }
      if (found >= members) {
        std::sort(candidates.begin(), candidates.end());
        return ChooseNodes(w, candidates);
      }
      found = 0;
    }
  }
  // Packing looks at every node with room (for the topology choice); otherwise the walk stops
  // once the members are placed. (A packing gang that does not fit walks every node either way,
  // so a first pass that stops early only added work to those that fit.)
  candidates.clear();
  ForEachNodeWithRoomAt(w, now, [&](NodeIndex n) {
    consider(n);
    return every_node || found < members;
  });
  if (found < members) return std::nullopt;
  if (preference != nullptr) {  // higher score first, equal scores in the walk's (best-fit) order
    std::stable_sort(candidates.begin(), candidates.end(), [preference](const auto& a, const auto& b) {
      return (*preference)[a.first] > (*preference)[b.first];
    });
    return ChooseNodes(w, candidates, /*preference_order=*/true);
  }
  if (!pack) std::sort(candidates.begin(), candidates.end());  // packing sorts what it takes
  return ChooseNodes(w, candidates);
}

int CyclePass::ScarceSlot(const PendingWorkload& w) const {
  if (s_.profile->AnyNegativeBlock()) return -1;
  int scarce = -1;
  for (int r = kFirstExtended; r < kMaxResourceKinds; ++r) {
    if (w.per_member[r] > 0 && (scarce < 0 || s_.nodes_with[r].size() < s_.nodes_with[scarce].size())) scarce = r;
  }
  return scarce >= 0 && s_.nodes_with[scarce].size() * 4 <= s_.profile->size() ? scarce : -1;
}

bool CyclePass::NoNodeEverHasRoom(const PendingWorkload& w, Duration duration, double priority,
                                  const std::vector<char>& eligible, Time start, int16_t tenant, int slots,
                                  int scarce) const {
  if (scarce < 0) return false;
  const AvailabilityProfile& p = *s_.profile;
  for (NodeIndex n : s_.nodes_with[scarce]) {
    if (Usable(n, w, priority, eligible) && p.FitsSometime(n, start, duration, w.per_member, w.kind, tenant, slots)) {
      return false;
    }
  }
  return true;
}

template <typename CopiesAt>
void CyclePass::NoteAtStart(const PendingWorkload& w, Time start, int scarce, Duration duration, bool lowest_wins,
                            int64_t enough, CopiesAt copies_at) {
  PlacementScratch& feasible = s_.placement;
  const bool as_before = s_.profile->AnyNegativeBlock() || duration <= 0;  // the tests' reference
  if (scarce >= 0 && !as_before) {
    // The nodes with the scarce resource that may have room, ascending (ForEachStartCandidate,
    // instead of every node freed by `start`, nearly none with it): the lowest one with room ends
    // a one-member search's start, and the feasible nodes come in PreferLatestFreed's order (all
    // freed at the start); a search for the start alone ends once they hold `enough` members.
    ForEachStartCandidate(w, start, scarce, [&](NodeIndex n) {
      const int64_t c = copies_at(n, start);
      feasible.Note(n, c, start, start);
      return !(lowest_wins && c > 0) && feasible.total < enough;
    });
    return;
  }
  // Every node with room at the start ties on freed (the start): with one member and no
  // preference the lowest-numbered one is chosen, so a node numbered above one found needs no look.
  if (as_before) enough = kForever;
  NodeIndex lowest = -1;
  ForEachNodeWithRoomAt(w, start, [&](NodeIndex n) {
    if (lowest_wins && lowest >= 0 && n > lowest) return true;
    const int64_t c = copies_at(n, start);
    if (c > 0 && (lowest < 0 || n < lowest)) lowest = n;
    feasible.Note(n, c, start, start);
    return feasible.total < enough;  // a search for the start alone: found once they hold the members
  });
}

std::optional<CyclePass::Placement> CyclePass::EarliestPlacement(const PendingWorkload& w, Duration duration,
                                                                 double priority, const std::vector<char>& eligible,
                                                                 Time on_or_after, bool any_nodes) {
  // How it searches and chooses: planner_pass.h.
  AvailabilityProfile& p = *s_.profile;
  const int32_t members = std::max<int32_t>(1, w.members);
  const Time start = p.RoundUp(std::max(on_or_after, p.now()));
  if (start > p.horizon()) return std::nullopt;
  // The nodes seen feasible, in no order that matters (PreferLatestFreed sorts by a total order).
  PlacementScratch& feasible = s_.placement;
  feasible.Begin(p.size());
  const int16_t tenant = s_.TenantId(w.tenant);
  const int slots = p.SlotsFor(w.per_member);
  const int scarce = ScarceSlot(w);  // only the nodes that have it may have room (`has`; null: any)
  if (NoNodeEverHasRoom(w, duration, priority, eligible, start, tenant, slots, scarce)) return std::nullopt;
  const char* has = scarce >= 0 ? s_.has_resource[scarce].data() : nullptr;
  s_.no_room.Begin(w.per_member, w.kind, tenant, p.size());
  auto copies_at = [&](NodeIndex n, Time t) -> int64_t {
    if ((has != nullptr && !has[n]) || !Usable(n, w, priority, eligible)) return 0;
    return CopiesUnlessKnownNoRoom(p, s_.no_room, w, n, t, duration, members, tenant, slots);
  };
  any_nodes = any_nodes && !p.AnyNegativeBlock();  // with a negative block, as before (the tests' reference)
  auto try_finish = [&](Time t) -> std::optional<Placement> {
    if (feasible.total < members) return std::nullopt;
    feasible.Reverify(t, copies_at);
    if (feasible.total < members) return std::nullopt;
    if (any_nodes) return Placement{t, feasible.AnyMembers(members)};
    PreferLatestFreed(feasible, w, !s_.domains.empty(), s_.scratch_ranked, s_.scratch_best_first);
    return Placement{t, ChooseNodes(w, s_.scratch_best_first, /*preference_order=*/true)};
  };
  const bool lowest_wins = members == 1 && PreferenceOf(w, p.size()) == nullptr;
  NoteAtStart(w, start, scarce, duration, lowest_wins, any_nodes ? members : kForever, copies_at);
  std::optional<Placement> result = try_finish(start);
  if (result.has_value()) return result;
  // With one member and no preference a batch's winner is its first node with room by latest
  // end, then lowest number (PreferLatestFreed): the batch is gathered and asked in that order.
  std::vector<std::pair<Time, NodeIndex>>& gathered = s_.scratch_batch;
  gathered.clear();
  Time batch = -1;
  auto close_batch = [&] {
    LatestEndFirst(gathered, s_.node_stamp, ++s_.stamp, [&](Time end, NodeIndex n) {
      const int64_t c = copies_at(n, batch);
      feasible.Note(n, c, end, batch);
      return c <= 0;
    });
    gathered.clear();
    return try_finish(batch);
  };
  // Ends ascend: one not after G = RoundUp(the end before) rounds up to G too, without RoundUp's
  // division (issue 26: ~800,000 ends a steady cycle). `start` is a grid time no end reaches.
  Time rounded = start;
  p.ForEachEndAfter(start, [&](Time end, NodeIndex n) {
    if (end > rounded) rounded = p.RoundUp(end);
    const Time t = rounded;
    if (t > p.horizon()) return false;
    if (batch >= 0 && t != batch) {
      result = close_batch();
      if (result.has_value()) return false;
    }
    batch = t;
    if (has != nullptr && !has[n]) return true;  // never room: asking it would note nothing
    if (lowest_wins) {
      gathered.emplace_back(end, n);
    } else {
      feasible.Note(n, copies_at(n, t), end, t);
    }
    return true;
  });
  if (!result.has_value() && batch >= 0) result = close_batch();
  return result;
}

bool CyclePass::FitsIgnoringReservations(const PendingWorkload& w, Duration duration,
                                         double priority,
                                         const std::vector<char>& eligible, Time now,
                                         std::vector<NodeIndex>* witnesses) {
  const int32_t members = std::max<int32_t>(1, w.members);
  const Time end = SaturatingAdd(now, duration);
  int64_t found = 0;
  const AvailabilityProfile& p = *s_.profile;
  const int16_t tenant = s_.TenantId(w.tenant);
  auto consider = [&](NodeIndex n) {
    if (Usable(n, w, priority, eligible)) {
      const int64_t copies = p.Copies(n, now, end, w.per_member, w.kind, members - found, true, tenant);
      if (copies > 0) witnesses->push_back(n);
      found += copies;
    }
  };
  // Reservations start at or after the profile's now, so the nodes with room then (reservations
  // included only when they start exactly then) bound the nodes worth looking at.
  ForEachNodeWithRoomAt(w, now, [&](NodeIndex n) {
    consider(n);
    return found < members;
  });
  return found >= members;
}

bool CyclePass::FitsNowButForReservedNodes(const PendingWorkload& w, Duration duration,
                                           double priority, const std::vector<char>& eligible,
                                           Time now) {
  const int32_t members = std::max<int32_t>(1, w.members);
  const Time end = SaturatingAdd(now, duration);
  int64_t found = 0;
  bool needs_a_reserved_node = false;
  const AvailabilityProfile& p = *s_.profile;
  const int16_t tenant = s_.TenantId(w.tenant);
  ForEachNodeWithRoomAt(w, now, [&](NodeIndex n) {
    if (!eligible[n] || s_.claimed[n]) return true;
    const int64_t copies = p.Copies(n, now, end, w.per_member, w.kind, members - found, false, tenant);
    if (copies > 0 && !Usable(n, w, priority, eligible)) needs_a_reserved_node = true;
    found += copies;
    return found < members;
  });
  return found >= members && needs_a_reserved_node;
}

void CyclePass::Commit(const PendingWorkload& w, Duration duration, const MemberNodes& nodes,
                       Time start,
                       bool reservation) {
  const Time end = SaturatingAdd(start, duration);
  // One block per node with the sum of the members placed there (runs of a sorted copy; one
  // member, the common case, needs no copy).
  MemberNodes copy;
  if (nodes.size() > 1) {
    copy = nodes;
    std::sort(copy.begin(), copy.end());
  }
  const MemberNodes& sorted_nodes = nodes.size() > 1 ? copy : nodes;
  for (size_t i = 0; i < sorted_nodes.size();) {
    const NodeIndex n = sorted_nodes[i];
    size_t j = i;
    while (j < sorted_nodes.size() && sorted_nodes[j] == n) ++j;
    const int64_t count = static_cast<int64_t>(j - i);
    i = j;
    AvailabilityProfile::Block b;
    b.start = start;
    b.end = end;
    b.used = count == 1 ? w.per_member : w.per_member.Times(count);
    b.kind = w.kind;
    b.reservation = reservation;
    b.tenant = s_.TenantId(w.tenant);
    s_.profile->Add(n, b);
    if (!reservation) s_.node_seq[n] = ++s_.seq;
    if (start <= s_.profile->now()) {
      for (const auto& index : s_.free_index) {
        if (index != nullptr) index->Update(n, *s_.profile);
      }
    }
  }
}

}  // namespace onequeue::queue::internal

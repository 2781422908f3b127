#pragma once
// One victim search of CheapestVictimsPlanner (preemption.h; docs/queue.md "Preemption"): for one
// preemptor, the candidate nodes (the cap's window, or every usable node), the victim units on
// them, and the cheapest set of those units that makes room for every member. Split out of
// preemption.cc, which keeps the planner (the index per snapshot, the lock, the entry points);
// internal to the two (the search itself: victim_search_core.h, victim_search.cc, victim_search_exact.cc).
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "queue/preemption.h"
#include "queue/preemption_index.h"

namespace onequeue::queue::internal {

// The QOS named `name` in `config`, or null.
const QosPolicy* FindQos(const QueueConfig& config, std::string_view name);

// A preemption candidate of one search: an index unit with its frees and blockers restricted to
// the search's node slots.
struct SearchUnit {
  int unit = 0;  // in the index
  Span frees;    // Scratch::frees: (slot, its entry in VictimIndex::frees)
  // Steps an Apply counts in the exact search: frees.size(), or, in a search over ScarceNodes'
  // kept nodes (VictimSearch::UseScarceNodes), the unit's frees on every node (never fewer than
  // the search over every usable node counts).
  uint32_t steps = 0;
  Span blockers; // Scratch::blockers: slots where it removes a workload of the other world
  // blockers from here on: slots where it is a required victim (VictimSearch::required_)
  uint32_t required_begin = 0;
  Span disruptions;  // VictimIndex::disruptions
};

// Buffers one search fills, kept across the searches of a planner so the hot path does not
// allocate once they have grown (per node and per unit arrays stamped by search, not cleared).
struct Scratch {
  uint32_t search = 0;  // one per search
  uint32_t stamp = 0;   // one per walk over nodes (several per search)
  std::vector<uint32_t> node_stamp;  // per node: == stamp when slot_of is valid
  std::vector<int> slot_of;          // per node: slot in this search
  std::vector<uint32_t> unit_stamp;  // per index unit: == stamp when seen in this walk
  std::vector<uint64_t> unit_bits;   // a bit per index unit, all 0 between uses (CollectCandidateUnits)
  std::vector<uint32_t> excluded;    // per index unit: == search when an earlier victim's unit
  std::vector<int> excluded_units;   // those units, each once
  ViableMemo::Key key;               // the search's candidate key (its storage kept)
  std::vector<char> allowed_qos;     // per QOS id of the index
  std::vector<NodeIndex> usable;     // eligible, unclaimed nodes, ascending
  std::vector<char> viable;          // per examined position of `usable`
  std::vector<int64_t> kept_positions;  // positions of `usable` not ScarceNodes::kSkip (ascending)
  std::vector<char> kept_viable;        // per entry of kept_positions: examined and viable
  std::vector<NodeIndex> nodes;      // the search's node slots, ascending
  // Per slot of `nodes`: 1 when this search found the node viable (ViableCopies > 0: a member fits
  // there with every candidate gone), 0 when not or not asked (UseNodes over every usable node).
  std::vector<char> slot_viable;
  std::vector<int> candidate_units;  // index units, cheapest first
  std::vector<SearchUnit> units;
  std::vector<std::pair<int, uint32_t>> frees;  // (slot, entry of VictimIndex::frees): no copy
  std::vector<int> blockers;
  // The fit state, per slot and per budget group.
  std::vector<Resources> capacity;
  std::vector<int> slot_blockers;
  std::vector<int64_t> copies;
  std::vector<int> budget_left;
  // The search.
  std::vector<int> taken, chosen, best, all, by_slot_begin, by_slot;
  // The nodes a lean search left out (VictimSearch::UseLeanNodes), in the usable nodes' order:
  // the slot each would precede among the nodes kept, its candidate units' count and the lowest
  // weight among them.
  struct LeftOut {
    size_t before = 0;
    int32_t units = 0;
    double cheapest = 0;
  };
  std::vector<LeftOut> left_out;

  // Every stamped entry becomes stale.
  void Bump() {
    if (++stamp == 0) {  // wrapped: clear once every 4 billion bumps
      std::fill(node_stamp.begin(), node_stamp.end(), 0);
      std::fill(unit_stamp.begin(), unit_stamp.end(), 0);
      stamp = 1;
    }
  }
  // Starts a new search over a snapshot of `nodes` nodes and an index of `units` units.
  void Next(size_t nodes, size_t units) {
    if (++search == 0) {
      std::fill(excluded.begin(), excluded.end(), 0);
      search = 1;
    }
    Bump();
    if (node_stamp.size() < nodes) {
      node_stamp.resize(nodes, 0);
      slot_of.resize(nodes, -1);
    }
    if (unit_stamp.size() < units) {
      unit_stamp.resize(units, 0);
      unit_bits.resize((units + 63) / 64, 0);
      excluded.resize(units, 0);
    }
  }
};

// Runs one search for `in.preemptor` (whose QOS is `preemptor_qos`) over `index`, with the
// cycle's memo and the planner's buffers. `no_room` (may be null): set, when there is no
// decision, to whether the members cannot fit on the usable nodes even with every candidate gone
// (PreemptionPlanner::PlanOrRuleOut). `scarce_nodes`, `slot_shortcuts`: as CheapestVictimsPlanner's.
std::optional<PreemptionChoice> RunVictimSearch(const PreemptionInput& in, const VictimIndex& index,
                                                ViableMemo& memo, Scratch& scratch, int64_t work_budget,
                                                bool with_reason, const QosPolicy& preemptor_qos, bool* no_room,
                                                bool scarce_nodes = true, bool slot_shortcuts = true);

}  // namespace onequeue::queue::internal

#pragma once
// The preemption planner: for a pending workload whose QOS may preempt and that cannot start now,
// the cheapest set of running workloads to evict so that all of its members fit, as ONE atomic
// decision (docs/queue.md, "Preemption"; architecture.md, "The atomic preemption protocol").
//
// Rules, each enforced here and checked by test/queue/preemption_test.cc:
//   * a preemptor with may_preempt false (a pod's preemptionPolicy: Never) never preempts
//     (test/scheduler/placement_parity_test.cc);
//   * a victim has strictly lower priority than the preemptor (never equal or higher);
//   * a victim is preemptible (RunningWorkload::preemptible), its QOS exists in the QOS table,
//     is preemptible there, and is named in the preemptor's QOS `can_preempt` list;
//   * gangs go whole: running workloads sharing a gang_id are evicted together or not at all
//     (if one of them may not be preempted, none of the gang is a candidate);
//   * disruption budgets: a victim set never takes more pods out of a budget group than
//     Snapshot::disruptions_allowed allows (one pod per Allocation of a victim; a group missing
//     from the map allows none);
//   * exclusive nodes (not SharesWorlds, model.h): a pod group may only use a node once every
//     Slurm job on it is a victim, and the other way round; on a shared node only what the
//     preemptor's size needs goes, of either world;
//   * pod anti-affinity (PlacementRules::carriers): a node that running workloads' anti-affinity
//     keeps the preemptor off (symmetric), or that running workloads matching the preemptor's own
//     anti-affinity terms keep it off, is usable only if every such carrier there may be a
//     victim, and then each of them is one, whatever the resources need (never reprieved);
//   * the preemptor's members (identical, `per_member` each) all fit on eligible, unclaimed nodes
//     in what is free now plus what the victims free; if they already fit without victims, or
//     cannot fit even with every candidate evicted, there is no decision.
//
// Cost, compared in this order: fewest victims (running workloads evicted, a gang counts all of
// its workloads), then the lowest highest-victim priority, then the least run time lost (the sum
// over victims of now - start_time, in seconds); equal costs go to the set found first in a fixed
// order (units sorted by priority, run time lost, size, smallest id), so the choice is
// deterministic. The search is exact (branch and bound over victim units) while it stays within
// a work budget, which covers every realistic single node or small gang case; past the budget it
// returns the best set found so far, which is never worse than a greedy pass (lowest priority
// first, then drop every victim that is not needed).
//
// Scale (issue 26): the victim units (gangs whole, their frees per node, budgets, QOS) are indexed
// once per snapshot and kept across the searches of a cycle when the input shares the snapshot
// (PreemptionInput::shared_snapshot); a search reuses the planner's buffers. With the index, a
// memo (internal::ViableMemo) keeps across those searches, per set of candidates (the
// preemptor's priority band, QOS and world), whether each unit is a candidate and what each node's
// candidates free there; a node's entries go when a unit on it becomes an earlier victim, all of
// them when the earlier victims are not the last ones grown (a new cycle). Candidate cap
// (QueueConfig::preemption): when the preemptor has more usable nodes than
// max(min_candidate_nodes_percentage % of them, min_candidate_nodes_absolute), the search walks
// them from an offset derived from the preemptor's id, wrapping around, and keeps the first nodes
// that could hold a member once their candidates are gone, until it has that many and they hold
// every member; the cheapest set is then exact over those nodes (PreemptionChoice::capped). If
// they cannot make room (a gang, budgets), it searches every usable node. Where the cap does not
// bind, the decision is the one the uncapped search makes (test/queue/preemption_equivalence_test.cc).
// "It fits already, nothing to preempt" is always judged over every usable node.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "queue/planner.h"

namespace onequeue::queue {

// What the planner chose and why; `decision` is what goes into the Plan.
struct PreemptionChoice {
  PreemptDecision decision;
  // One sentence for events and `oq explain`, e.g. "preempts 2 workloads (a, b) of lower
  // priority (highest 120.0 < 500.0) on nodes n1, n2; 300 s of run time lost".
  std::string reason;
  int32_t victim_count = 0;
  double max_victim_priority = 0;
  int64_t run_time_lost = 0;  // seconds, summed over victims
  bool exact = true;          // false when the work budget ran out (best found so far)
  bool capped = false;        // true when the candidate cap bound: searched on part of the nodes
};

class CheapestVictimsPlanner : public PreemptionPlanner {
 public:
  // `work_budget`: how many search steps (a candidate looked at, plus the nodes it touches when
  // applied) one call may take before it settles for the best set found so far; the default
  // bounds a call to a few milliseconds (docs/simulate.md has the measurements).
  // One search at a time per planner (calls are serialised: they share the index and buffers).
  // `scarce_nodes` (tests compare against false): a one-member search of a preemptor asking an
  // extended resource that few nodes have passes over the nodes that cannot matter (docs/queue.md
  // "Preemption", the eleventh pass); the decisions are the same either way. `slot_shortcuts`
  // (tests compare against false): the thirteenth pass's shortcuts in the node-by-node search (a
  // slot found viable is not asked CannotMakeRoom; a one-member set of one victim is tried without
  // applying it); the decisions are the same either way.
  explicit CheapestVictimsPlanner(int64_t work_budget = 1000000, bool scarce_nodes = true, bool slot_shortcuts = true);
  ~CheapestVictimsPlanner() override;
  CheapestVictimsPlanner(const CheapestVictimsPlanner&) = delete;
  CheapestVictimsPlanner& operator=(const CheapestVictimsPlanner&) = delete;

  std::optional<PreemptDecision> Plan(const PreemptionInput& input) const override;
  std::optional<PreemptDecision> PlanOrRuleOut(const PreemptionInput& input, bool* no_room) const override;

  // The same, with the reason and the cost.
  std::optional<PreemptionChoice> Choose(const PreemptionInput& input) const;

 private:
  struct Cache;  // the victim index of the last shared snapshot, and the search buffers
  // no_room: may be null (PreemptionPlanner::PlanOrRuleOut).
  std::optional<PreemptionChoice> Search(const PreemptionInput& input, bool with_reason, bool* no_room) const;

  int64_t work_budget_;
  bool scarce_nodes_;
  bool slot_shortcuts_;
  mutable std::mutex mu_;
  std::unique_ptr<Cache> cache_;  // guarded by mu_
};

}  // namespace onequeue::queue

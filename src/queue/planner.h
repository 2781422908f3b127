#pragma once
// The queue planner: one cycle turns a Snapshot into a Plan. Pure: no I/O, threads or clock.
//
// Algorithm (docs/queue.md "Backfill"): pending workloads are sorted by multifactor priority;
// each in turn starts now if it fits on eligible nodes without delaying any reservation already
// made; otherwise, while fewer than `reservation_depth` reservations exist (0 = unlimited), it
// gets one at the earliest time the availability profile allows (EASY = 1, hybrid = N,
// conservative = unlimited: one implementation). A workload whose QOS may preempt and that
// cannot start now asks the PreemptionPlanner first.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "queue/model.h"
#include "queue/plan.h"

namespace onequeue::queue {

class FairShareTree;  // priority.h

// ---------------------------------------------------------------------------------------------
// Preemption hook (implemented in preemption.h/.cc)
// ---------------------------------------------------------------------------------------------

struct PreemptionInput {
  const Snapshot* snapshot = nullptr;
  // The same snapshot, shared (optional): a planner may then keep what it derives from the
  // snapshot (CheapestVictimsPlanner: its victim index) across calls naming it. A snapshot is
  // immutable while shared.
  std::shared_ptr<const Snapshot> shared_snapshot;
  const QueueConfig* config = nullptr;
  const PendingWorkload* preemptor = nullptr;
  double preemptor_priority = 0;
  Time now = 0;
  // Nodes the preemptor may use at all (selector, affinity, taints, partition, owner), ascending.
  std::vector<NodeIndex> eligible_nodes;
  // The same nodes kept by the caller (optional): when set, read instead of eligible_nodes (no
  // copy per preemptor; issue 26, the steady cycle's twelfth pass).
  const std::vector<NodeIndex>* eligible_list = nullptr;
  const std::vector<NodeIndex>& Eligible() const { return eligible_list != nullptr ? *eligible_list : eligible_nodes; }
  // Free capacity of every node now (indexed by NodeIndex), after this cycle's earlier starts.
  const std::vector<Resources>* free_now = nullptr;
  // Per node (indexed by NodeIndex): 1 when this cycle already promised it to a workload of
  // higher priority (a start, a reservation or another preemption): do not use it.
  const std::vector<char>* claimed = nullptr;
  // Running workloads that an earlier preemption of this cycle already chose: not victims again.
  const std::vector<std::string>* already_victims = nullptr;
  // The same workloads by index into snapshot->running (optional; the cycle pass sets it): when
  // set, a planner may read it instead of already_victims and skip looking the ids up.
  const std::vector<int32_t>* already_victim_indices = nullptr;
  // Guarantees the caller may give (the cycle pass does; issue 26, the steady cycle's twelfth
  // pass), each sparing a search a walk over every eligible node. False: nothing assumed.
  // eligible_nodes is strictly ascending, each node in range, and none of them claimed.
  bool eligible_sorted_unclaimed = false;
  // (*free_now)[n][k] <= snapshot->nodes[n].allocatable[k] for every node and kind: nothing
  // subtracted from a node's capacity was negative (AvailabilityProfile::AnyNegativeBlock false).
  bool free_now_within_allocatable = false;
};

class PreemptionPlanner {
 public:
  virtual ~PreemptionPlanner() = default;
  // The cheapest victim set that lets the preemptor run (fewest victims, then lowest priority,
  // then least run time lost), gangs whole, disruption budgets respected, never a victim of equal
  // or higher priority or of a QOS the preemptor's QOS may not preempt; nullopt if none exists.
  virtual std::optional<PreemptDecision> Plan(const PreemptionInput& input) const = 0;
  // Plan; when it returns nullopt, *no_room tells whether that is because the preemptor's
  // members cannot fit on its usable nodes even with every candidate victim gone (or it has no
  // usable node). That answer holds for any preemptor of the same kind and QOS that asks at
  // least as much, has no higher priority, and sees no more usable nodes, free capacity or
  // candidates: the cycle pass memoises it (planner_pass.cc). Not for "it fits already".
  // The default says false (nothing is ruled out).
  virtual std::optional<PreemptDecision> PlanOrRuleOut(const PreemptionInput& input, bool* no_room) const {
    *no_room = false;
    return Plan(input);
  }
};

// ---------------------------------------------------------------------------------------------
// The planner
// ---------------------------------------------------------------------------------------------

// Says what is wrong with a config (reservation depth < 0, resolution <= 0, unknown parent
// account, duplicate QOS...). kInvalidArgument with the field named.
absl::Status ValidateConfig(const QueueConfig& config);

// What an incremental call changed, relative to the last full plan.
struct PlanDelta {
  std::vector<StartDecision> starts;
  std::vector<ReserveDecision> reservations;
  std::vector<OwnerChange> owner_changes;
  std::optional<WaitingStatus> waiting;  // the arrival's status when it waits
  // Workloads at or after this 1-based position moved down by one (the arrival took its place).
  int32_t positions_shifted_from = 0;
  // True when the arrival landed among the reservations: the caller must run a full cycle
  // (PlanCycle) to get a correct plan; nothing else in this delta is meaningful.
  bool needs_full_cycle = false;
};

class QueuePlanner {
 public:
  // `preemption` may be null (no preemption); it must outlive the planner.
  QueuePlanner(QueueConfig config, const PreemptionPlanner* preemption);
  ~QueuePlanner();
  QueuePlanner(const QueuePlanner&) = delete;
  QueuePlanner& operator=(const QueuePlanner&) = delete;

  // A full cycle. Keeps the sorted queue and the availability profile for OnArrival.
  Plan PlanCycle(std::shared_ptr<const Snapshot> snapshot, Time now);
  // A full cycle that keeps last cycle's reservations (`promised`, see CarryReservations). The
  // queue keeps its order; each promised slot is held until its holder's turn, so every still
  // pending holder starts now or gets a reservation no later than max(promised start, now),
  // unless its own request, time limit, eligibility or hold changed, a promised node is gone or
  // still busy (a running workload past its expected end), or a higher-priority preemptor claimed
  // the node. A holder never starts ahead of a higher-priority workload that can start now. The
  // estimated start a user reads then becomes a promise. docs/queue.md "Promises".
  Plan PlanCycle(std::shared_ptr<const Snapshot> snapshot, Time now,
                 const std::vector<PromisedReservation>& promised);

  // One new pending workload since the last PlanCycle (same nodes and running workloads;
  // now >= the cycle's now). Costs one profile query when the arrival sorts after the last
  // reservation. kFailedPrecondition without a previous cycle.
  absl::StatusOr<PlanDelta> OnArrival(const PendingWorkload& workload, Time now);

  const QueueConfig& config() const { return config_; }

  // Opaque: what a cycle keeps for OnArrival (defined in planner.cc).
  struct State;

 private:
  QueueConfig config_;
  const PreemptionPlanner* preemption_;
  // The account tree's part of fair-share, from config_ (which never changes): built once, not
  // every cycle. Nothing else is kept across cycles.
  std::unique_ptr<const FairShareTree> fair_share_tree_;
  std::unique_ptr<State> state_;
};

}  // namespace onequeue::queue

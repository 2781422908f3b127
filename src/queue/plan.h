#pragma once
// The queue's output: what one cycle decides, and why every other workload waits.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "queue/model.h"

namespace onequeue::queue {

// Node chosen for each member: member_nodes[i] is where member i runs (several members may share
// a node when it has room).
using MemberNodes = std::vector<NodeIndex>;

// Start now: bind the pods / start the Slurm job on these nodes.
struct StartDecision {
  std::string workload;
  MemberNodes member_nodes;
  bool backfilled = false;  // started ahead of a higher-priority blocked workload
};

// Hold these nodes from `start` for the workload (it is blocked now). Lower-priority workloads
// may only use them where they end before `start` (and fit beside it).
struct ReserveDecision {
  std::string workload;
  MemberNodes member_nodes;
  Time start = 0;
};

// Evict/requeue `victims` so the preemptor can run on `member_nodes` once they are gone. One
// atomic step: the executor reserves the nodes for the preemptor first (reserved(P)).
struct PreemptDecision {
  std::string preemptor;
  std::vector<std::string> victims;  // running workload ids
  MemberNodes member_nodes;
  Time earliest_start = 0;  // now + the largest grace time among the victims' QOS
};

// Move a node between worlds (exclusive nodes): a Slurm job is placed on a node Kubernetes owns
// (lend) or a pod group on a node Slurm owns (reclaim). Emitted beside the StartDecision that
// needs it.
struct OwnerChange {
  NodeIndex node = 0;
  OwnerKind to = OwnerKind::kFree;
  std::string for_workload;
};

enum class WaitReason {
  kPriority,                   // higher-priority workloads come first (they hold reservations)
  kResources,                  // not enough eligible capacity now (no reservation taken)
  kReservedForHigherPriority,  // would fit, but the capacity is reserved for a higher priority
  kGangIncomplete,             // not all pods of the group exist yet
  kQosNotAllowed,
  kInvalidAnnotation,
  kPartitionNodesUnavailable,  // no node of its partition / selector is eligible at all
  kHeld,
  kPreempting,                 // victims are being evicted for it
  kBeyondWindow,               // cannot start within the planning window
  kAccountNotAllowed,          // its namespace may not charge the account it asked for
  kDependency,                 // may not start before PendingWorkload::not_before (issue 29)
};

const char* WaitReasonName(WaitReason reason);

// Per-factor breakdown, like `sprio`: each factor in [0, 1] and the weighted sum.
struct PriorityBreakdown {
  double age = 0;
  double fair_share = 0;
  double job_size = 0;
  double partition = 0;
  double qos = 0;
  // With StarvationRemedy::kFront or kFrontReserve, a starving workload's total is kStarvingFront
  // plus the seconds waited (ahead of every weighted total, oldest first), not the weighted sum.
  double total = 0;
};

// The base of a starving workload's priority under kFront and kFrontReserve: above any weighted
// sum (weights are 32-bit, factors at most 1, five factors), exact in a double with the seconds
// waited added.
inline constexpr double kStarvingFront = 1e13;

struct WaitingStatus {
  // The workload's id: a view of the id in Plan::snapshot, which the plan keeps alive (no copy:
  // a plan lists 100,000 of these). In a PlanDelta, of the planner's copy of the arrival, valid
  // until its next PlanCycle. Copy it to keep it longer.
  std::string_view workload;
  WaitReason reason = WaitReason::kPriority;
  // Why it waits, in words: read it with Message(). The common texts are constants, so 100,000
  // waiting workloads cost no allocation for them; a text made for this workload is in `message`.
  const char* fixed_message = "";
  std::string message;
  int32_t queue_position = 0;  // 1-based position among pending workloads, by priority
  std::optional<Time> estimated_start;  // empty: unknown (beyond the window or not estimated)
  bool has_reservation = false;

  std::string_view Message() const {
    return message.empty() ? std::string_view(fixed_message) : std::string_view(message);
  }
};

struct Plan {
  Time now = 0;
  std::vector<StartDecision> starts;
  std::vector<ReserveDecision> reservations;
  std::vector<PreemptDecision> preemptions;
  std::vector<OwnerChange> owner_changes;
  std::vector<WaitingStatus> waiting;
  // The snapshot the plan was made from: node and pending indices below refer to it.
  std::shared_ptr<const Snapshot> snapshot;
  // Queue order: indices into snapshot->pending, highest priority first (position i + 1).
  // Indices, not ids: copying 100,000 ids out of randomly placed workloads costs a cache miss each.
  std::vector<int32_t> order;
  // Priority of every pending workload, indexed like snapshot->pending (not by position).
  std::vector<PriorityBreakdown> priorities;

  // Id of the workload at 0-based queue index i, and its priority.
  const std::string& IdAt(size_t i) const { return snapshot->pending[order[i]].id; }
  const PriorityBreakdown& PriorityAt(size_t i) const { return priorities[order[i]]; }
  // The ids in queue order (a copy: for tests and small queues).
  std::vector<std::string> OrderIds() const {
    std::vector<std::string> ids;
    ids.reserve(order.size());
    for (size_t i = 0; i < order.size(); ++i) ids.push_back(IdAt(i));
    return ids;
  }
};

// A reservation an earlier cycle made, handed to the next one (QueuePlanner::PlanCycle's
// `promised`): the slot exactly as it was promised, so that a holder which changed its own request
// since cannot take more than it was promised from the others.
struct PromisedReservation {
  std::string workload;
  MemberNodes member_nodes;  // indices into the snapshot of the cycle it is handed to
  Time start = 0;
  Time end = 0;              // start + the time limit it was promised with
  Resources per_member;      // the request it was promised with
};

// The reservations of `previous` as promises for the next cycle's
// QueuePlanner::PlanCycle(next, now, promised): node indices of `previous`'s snapshot become
// indices into `next` (matched by node name: the pool may have changed in between). A reservation
// with a node no longer in the pool is dropped (its promise cannot be kept), and so is one on a
// node where `previous` started a workload that `next` still shows pending (the start did not
// happen: the reservation assumed it).
std::vector<PromisedReservation> CarryReservations(const Plan& previous, const Snapshot& next);

}  // namespace onequeue::queue

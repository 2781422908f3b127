#include "queue/preemption.h"

#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "queue/planner_state.h"
#include "queue/preemption_index.h"
#include "queue/victim_search.h"

namespace onequeue::queue {

using internal::ByClass;
using internal::FindQos;
using internal::RunVictimSearch;
using internal::Scratch;
using internal::VictimIndex;
using internal::ViableMemo;

struct CheapestVictimsPlanner::Cache {
  std::weak_ptr<const Snapshot> snapshot;
  VictimIndex index;
  ViableMemo memo;  // for `index`: reset with it
  Scratch scratch;

  void Build(const Snapshot& snap, const QueueConfig& config, Time now) {
    index.Build(snap, config, now);
    memo.Reset(snap.nodes.size(), index.unit_count());
  }
};

CheapestVictimsPlanner::CheapestVictimsPlanner(int64_t work_budget, bool scarce_nodes, bool slot_shortcuts)
    : work_budget_(work_budget),
      scarce_nodes_(scarce_nodes),
      slot_shortcuts_(slot_shortcuts),
      cache_(std::make_unique<Cache>()) {}

CheapestVictimsPlanner::~CheapestVictimsPlanner() = default;

std::optional<PreemptionChoice> CheapestVictimsPlanner::Search(const PreemptionInput& in, bool with_reason,
                                                               bool* no_room) const {
  if (in.snapshot == nullptr || in.config == nullptr || in.preemptor == nullptr) return std::nullopt;
  const PendingWorkload& p = *in.preemptor;
  if (p.members <= 0 || !p.may_preempt) return std::nullopt;  // preemptionPolicy: Never
  static const QosPolicy kByClass;  // issue 28: no QOS; Candidate compares PriorityClass values
  const QosPolicy* qos = ByClass(p) ? &kByClass : FindQos(*in.config, p.qos);
  if (qos == nullptr || (qos->can_preempt.empty() && !ByClass(p))) return std::nullopt;
  if (in.shared_snapshot != nullptr && in.shared_snapshot.get() == in.snapshot) {
    // One index per snapshot, kept across the searches of its cycles; one search at a time.
    std::lock_guard<std::mutex> lock(mu_);
    Cache& c = *cache_;
    const bool same = !c.snapshot.owner_before(in.shared_snapshot) && !in.shared_snapshot.owner_before(c.snapshot) &&
                      !c.snapshot.expired();
    if (!same || !c.index.BuiltFor(in.snapshot, in.now, in.config->shared_nodes)) {
      c.snapshot = in.shared_snapshot;
      c.Build(*in.snapshot, *in.config, in.now);
    }
    if (ByClass(p) && !(c.index.min_class_priority() < p.priority_class_value.value_or(0))) return std::nullopt;
    return RunVictimSearch(in, c.index, c.memo, c.scratch, work_budget_, with_reason, *qos, no_room, scarce_nodes_,
                           slot_shortcuts_);
  }
  Cache local;  // a caller without a shared snapshot: an index for this search alone
  local.Build(*in.snapshot, *in.config, in.now);
  if (ByClass(p) && !(local.index.min_class_priority() < p.priority_class_value.value_or(0))) return std::nullopt;
  return RunVictimSearch(in, local.index, local.memo, local.scratch, work_budget_, with_reason, *qos, no_room,
                         scarce_nodes_, slot_shortcuts_);
}

std::optional<PreemptionChoice> CheapestVictimsPlanner::Choose(const PreemptionInput& input) const {
  return Search(input, /*with_reason=*/true, /*no_room=*/nullptr);
}

std::optional<PreemptDecision> CheapestVictimsPlanner::Plan(const PreemptionInput& input) const {
  bool no_room = false;
  return PlanOrRuleOut(input, &no_room);
}

std::optional<PreemptDecision> CheapestVictimsPlanner::PlanOrRuleOut(const PreemptionInput& input,
                                                                     bool* no_room) const {
  *no_room = false;
  std::optional<PreemptionChoice> choice = Search(input, /*with_reason=*/false, no_room);
  if (!choice) return std::nullopt;
  return std::move(choice->decision);
}

}  // namespace onequeue::queue

#pragma once
// The queue's input model: what one planning cycle sees. Everything here is plain data, built by
// the scheduler from its cache (or by tests and trace replay) and never mutated by the queue.
//
// Time: the queue never reads a clock. Every time is a `Time` (seconds on any fixed epoch; the
// daemon uses Unix seconds, trace replay uses the trace's own clock) passed in by the caller.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queue/placement_rules.h"
#include "queue/resources.h"

namespace onequeue::queue {

using Time = int64_t;      // seconds
using Duration = int64_t;  // seconds
inline constexpr Time kForever = std::numeric_limits<Time>::max() / 4;

// Index of a node in Snapshot::nodes. Decisions name nodes by index (cheap); the node's name is
// Snapshot::nodes[i].name.
using NodeIndex = int32_t;

// ---------------------------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------------------------

enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
};

struct Toleration {
  enum class Operator { kEqual, kExists };
  std::string key;  // empty key with kExists tolerates every taint
  Operator op = Operator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;  // empty: every effect
};

// Which world may use a pool node right now. Changed only by onequeue (the executor); the queue
// proposes changes as Lend/Reclaim decisions.
enum class OwnerKind {
  kKubernetes,  // pods may be bound here
  kSlurm,       // lent to Slurm: Slurm jobs may run here
  kFree,        // nobody: either world may take it
  kReserved,    // held for `reserved_for` while a preemption is under way
};

struct NodeOwner {
  OwnerKind kind = OwnerKind::kFree;
  std::string reserved_for;  // workload id when kind == kReserved
};

// Whether pods and Slurm jobs may run on a node at the same time (issue 25, docs/sharing.md).
enum class NodeSharing : uint8_t {
  kExclusive,  // one world at a time: the node is lent and taken back whole
  kShared,     // both worlds side by side, each workload at the size it asks for
};

// A time during which nothing onequeue plans may run on a node (issue 29: a Slurm advance
// reservation, maintenance included): the planner counts the node's whole capacity as used over
// [start, end). `end` may be kForever.
struct Unavailability {
  Time start = 0;
  Time end = kForever;
  std::string reason;  // e.g. "Slurm reservation maint1 (MAINT)"
  friend bool operator==(const Unavailability&, const Unavailability&) = default;
};

struct Node {
  std::string name;
  Resources allocatable;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  NodeOwner owner;
  // False when the node is down, drained by an admin, or not ready: nothing new starts here.
  bool schedulable = true;
  NodeSharing sharing = NodeSharing::kExclusive;
  // Issue 25 tenancy (docs/sharing.md section 6, `sharing: shared-same-tenant`): work of one tenant
  // at a time. A workload is placed here only over a time when every other block on the node
  // (running, started, reserved) is of its own tenant (Workload::tenant); the worlds still share it
  // as `sharing` says.
  bool same_tenant = false;
  std::vector<Unavailability> unavailable;  // windows, any order (issue 29)
};

// ---------------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------------

enum class WorkloadKind : uint8_t { kPodGroup, kSlurmJob };

// What a running workload holds on one node.
struct Allocation {
  NodeIndex node = 0;
  Resources used;
};

struct RunningWorkload {
  std::string id;
  WorkloadKind kind = WorkloadKind::kPodGroup;
  std::vector<Allocation> allocations;
  double priority = 0;  // the multifactor priority it had when it started (see priority.h)
  std::string qos;
  std::string account;
  Time start_time = 0;
  // start + time limit; empty for services (no time limit): they hold their nodes for the whole
  // planning window.
  std::optional<Time> expected_end;
  std::string gang_id;  // members of one gang are preempted together (empty: no gang)
  bool preemptible = true;
  // Issue 25: whose work it is, for same-tenant nodes (Node::same_tenant). Empty is a tenant too.
  std::string tenant;
  // Pods covered by one PodDisruptionBudget share a group; Snapshot::disruptions_allowed says
  // how many of them may be disrupted now. Empty: not covered.
  std::string disruption_budget_group;
  // Issue 28: a pod group without an explicit QOS: its PriorityClass value (spec.priority, the
  // highest of its pods; 0 without one). Pod groups without QOS preempt each other by this value,
  // like kube-scheduler's DefaultPreemption (preemption.h). Empty: QOS rules only.
  std::optional<int32_t> class_priority;
};

// A node label requirement (a nodeSelector entry is kIn with one value). kGt / kLt: the label's
// value read as an integer is greater / less than values[0] (no label, or no integer: no match).
struct LabelRequirement {
  enum class Operator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  std::string key;
  Operator op = Operator::kIn;
  std::vector<std::string> values;
  friend bool operator==(const LabelRequirement&, const LabelRequirement&) = default;
};

// One nodeSelectorTerm of a required node affinity: every requirement holds. `match_fields`
// name node fields (only "metadata.name", as Kubernetes allows). A term without any requirement
// matches no node (as Kubernetes reads it).
struct NodeSelectorTerm {
  std::vector<LabelRequirement> match_expressions;
  std::vector<LabelRequirement> match_fields;
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

struct Eligibility {
  std::map<std::string, std::string> node_selector;
  // Required label requirements, ANDed (Slurm features, tests).
  std::vector<LabelRequirement> required_affinity;
  // A pod's requiredDuringSchedulingIgnoredDuringExecution node affinity: the node must match
  // at least one term (ORed). Empty: no such rule.
  std::vector<NodeSelectorTerm> node_affinity_terms;
  std::vector<Toleration> tolerations;
  // The Slurm partition's node set (node names). Empty optional: any pool node.
  std::optional<std::vector<std::string>> allowed_nodes;
};

// Set by the scheduler when it could not turn a pod's annotations into a valid workload; the
// queue then reports the reason and never starts the workload.
enum class AdmissionError { kNone, kInvalidAnnotation, kQosNotAllowed, kAccountNotAllowed };

struct PendingWorkload {
  // Field order matters for speed: the planner's priority pass reads every field once, in
  // order; the planning pass then works from a compact copy of what it needs (planner.cc, Facts)
  // and reads a workload itself only to start it or search a placement for it: id .. per_member,
  // the first two cache lines. Keep those fields first.
  std::string id;
  WorkloadKind kind = WorkloadKind::kPodGroup;
  int32_t members = 1;          // pods in the group, or 1 for a Slurm job (see per-member request)
  int32_t members_present = 1;  // pods of the group that exist so far (< members: GangIncomplete)
  AdmissionError admission_error = AdmissionError::kNone;
  // All-or-nothing: every member starts at the same time or none does. Pod groups are gangs;
  // a multi-node Slurm job (members = node count) is a gang too.
  bool gang = true;
  // Pack the members into the fewest topology domains (QueueConfig::topology_labels).
  bool pack_topology = false;
  bool held = false;            // held by an admin (oq hold)
  // False for a pod with preemptionPolicy: Never: it waits for room and never preempts.
  bool may_preempt = true;
  Resources per_member;         // request of each member
  // Requested run time. Empty: a service (runs until stopped).
  std::optional<Duration> time_limit;
  std::string qos;
  Eligibility eligibility;
  // Kubernetes PriorityClass value, for pods without an explicit QOS (maps onto the QOS factor).
  std::optional<int32_t> priority_class_value;
  std::string account;
  std::string partition;
  // Issue 25: whose work it is, for same-tenant nodes (Node::same_tenant). Empty is a tenant too.
  std::string tenant;
  Time submit_time = 0;
  // Inter-pod rules (topology spread, pod affinity and anti-affinity) over Snapshot::pod_counts,
  // and the counts its members add to. Null: none (most workloads). Beside submit_time: the
  // priority pass reads both (FactsOf), one cache line.
  std::shared_ptr<const PlacementRules> placement;
  std::string admission_message;  // the plain message for admission_error
  // Issue 29: the earliest time it may start (0: none), e.g. a Slurm job's dependency on a
  // running parent (its expected end). While now < not_before the queue neither starts nor
  // preempts for it; it is reserved from not_before on (docs/queue.md "Not before"), waiting
  // with WaitReason::kDependency and admission_message, if given, as the message. Aggregate
  // initialisers elsewhere list the fields up to it.
  Time not_before = 0;
  // Issue 28: how much the workload prefers each node (by NodeIndex, higher is better), e.g.
  // kube-scheduler's NodeAffinity and TaintToleration scores (the scheduler computes them). Among
  // the nodes where it may start now, and among those a reservation may take, a higher score is
  // taken first; equal scores keep the usual order. Null: no preference (most workloads; the
  // planner then does no extra work).
  std::shared_ptr<const std::vector<int32_t>> node_preference;
};

// ---------------------------------------------------------------------------------------------
// Usage history (fair-share input)
// ---------------------------------------------------------------------------------------------

// One usage record: `amount` (TRES billing-unit seconds, like Slurm's; the daemon keeps one
// record per account, its decayed total as of `time`) charged to `account` at `time`. Decayed
// with the half-life from `time` to `now`.
struct UsageRecord {
  std::string account;
  Time time = 0;
  double amount = 0;
};

struct UsageHistory {
  std::vector<UsageRecord> records;
};

// ---------------------------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------------------------

// Weights of the multifactor priority (like Slurm's PriorityWeight*). Each factor is in [0, 1];
// priority = sum(weight * factor).
struct PriorityWeights {
  double age = 1000;
  double fair_share = 10000;
  double job_size = 1000;
  double partition = 1000;
  double qos = 10000;
};

struct QosPolicy {
  std::string name;
  int64_t priority = 0;         // normalised by the largest QOS priority in the table
  bool preemptible = true;      // may workloads of this QOS be preempted at all
  std::vector<std::string> can_preempt;  // QOS names this QOS may preempt (Slurm's Preempt=)
  Duration grace_time = 0;      // victims get this long to stop (Slurm's GraceTime)
};

struct Account {
  std::string name;
  std::string parent;  // empty: child of the root
  double shares = 1;   // raw shares among its siblings
};

struct Partition {
  std::string name;
  int64_t tier = 0;  // PriorityTier; normalised by the largest tier
};

enum class BackfillMode {
  kNone,      // strict priority order (FCFS by priority): the first blocked workload stops the pass
  kBackfill,  // reservations up to reservation_depth, everyone else may backfill
};

// How many candidate nodes one preemption decision examines (issue 26, docs/queue.md
// "Preemption"), like kube-scheduler's DefaultPreemption arguments of the same names: the victim
// search walks the preemptor's usable nodes from an offset derived from its id (deterministic)
// until max(percentage % of them, absolute) nodes could hold a member once their candidate
// victims are gone, and searches those. 100 (or an absolute at least the node count) examines
// every node: the cap never binds.
struct PreemptionConfig {
  int32_t min_candidate_nodes_percentage = 10;  // 0..100
  int32_t min_candidate_nodes_absolute = 100;   // >= 0
};

struct QueueConfig {
  PriorityWeights weights;
  // The age factor reaches 1 here (Slurm's PriorityMaxAge). One day: with the daemon's age weight
  // (20000, twice fair-share's) a job that waited half a day outranks any fresh one of its QOS and
  // partition whatever the users' usage (docs/queue.md "Starvation").
  Duration max_age = 24 * 3600;
  int32_t priority_class_max = 1000000000;  // a PriorityClass value this high maps to QOS factor 1
  std::vector<QosPolicy> qos;
  std::vector<Account> accounts;
  Duration usage_half_life = 7 * 24 * 3600;  // PriorityDecayHalfLife
  std::vector<Partition> partitions;

  BackfillMode backfill = BackfillMode::kBackfill;
  // How many blocked workloads get a reservation: 1 = EASY, N = hybrid, 0 = unlimited
  // (conservative). With BackfillMode::kNone the first blocked workload gets one and the pass
  // stops.
  int32_t reservation_depth = 1;
  // Shortest-job-backfilled-first (Tsafrir, Etsion and Feitelson 2007, "SJBF"): once
  // `reservation_depth` reservations are made, the workloads after the last one try to start now
  // shortest time limit first, instead of in queue order. Reservations still go by priority, and
  // no start delays one, so only the choice among backfill candidates changes.
  bool backfill_shortest_first = false;
  // The starvation bound (issue 27, docs/queue.md "Starvation"): a blocked workload pending for
  // at least this long gets a reservation even past `reservation_depth`, i.e. conservative
  // backfill for the starving few and the depth's policy for the rest; with
  // backfill_shortest_first such workloads are planned before the other backfill candidates.
  // Such reservations do not count against the depth. 0 = off.
  Duration starvation_bound = 2 * 24 * 3600;
  // The relative bound (issue 27): a blocked workload pending for at least this many times its
  // own time limit is starving too (with 3, the daemon's default, a 10-minute job is reserved
  // after 30 minutes, a day-long one only at starvation_bound). 0 = off (the library's default;
  // the daemon sets queue.starvationBoundTimeLimits).
  double starvation_bound_limits = 0;
  // At most this many reservations past the depth for starving workloads per cycle, the first
  // in the walk's order (priority order; oldest first with backfill_shortest_first, which plans
  // starving workloads first): each is a placement search over the window, so a backlog
  // where thousands starve at once (a restart after an outage, a queue the pool cannot drain)
  // would make every cycle conservative backfill over all of them (5,110 reservations, seconds
  // per cycle in one_queue_bench). The rest wait with an estimate, and are reserved as the
  // older ones start. Must be at least 1.
  int32_t max_starving_reservations = 100;
  // What a starving workload (StarvingAt below) gets. kReserve: a reservation past the depth,
  // as above (conservative backfill for the starving few, EASY for the rest). kFront: the head
  // of the queue, oldest first, ahead of every workload that is not starving, and no
  // reservation past the depth: the depth's reservations go to the oldest starving workloads
  // (EASY for the starving). Issue 27's replays (docs/queue.md "How much six traces say"): a
  // pile of reservations over over-estimated limits stops backfill on a saturated pool; a front
  // does not add reservations. kFrontReserve: both, the front as kFront, and the next
  // starving workloads (oldest first, after the one the depth reserved) a reservation past the
  // depth each, up to max_starving_reservations a cycle (a few oldest, not every starving one:
  // the cap is the K of "front plus K", issue 27's long draws).
  enum class StarvationRemedy { kReserve, kFront, kFrontReserve };
  StarvationRemedy starvation_remedy = StarvationRemedy::kReserve;
  // Issue 27's long draws (docs/queue.md "Beyond the family"), both for the front remedies
  // (kFront, kFrontReserve) only. The width scale: both starvation bounds of a workload are
  // multiplied by (1 - starvation_width_scale x its share of the pool), the share being its
  // job-size factor (the dominant share of the whole workload, 0..1), so a wide workload, whose
  // wait is the longest, starves sooner and a narrow one's bounds barely move. 0 = off, at most 1
  // (then a workload asking for the whole pool starves at once).
  double starvation_width_scale = 0;
  // The order of the starving at the front. kOldest: oldest submit first. kFirstStarved: the one
  // that reached its bound first (submit time + its bound), so a short job that passed its short
  // bound hours ago goes before a long one that has just reached a long bound.
  enum class StarvingOrder { kOldest, kFirstStarved };
  StarvingOrder starving_order = StarvingOrder::kOldest;
  Duration resolution = 60;         // bf_resolution: reservation start times are rounded up to it
  Duration window = 24 * 3600;      // bf_window: nothing is planned beyond now + window
  // Node label keys of the topology, finest first, e.g. {"topology.onequeue.io/rack",
  // "topology.onequeue.io/block"}.
  std::vector<std::string> topology_labels;
  // Every node shared, whatever its Node::sharing says (the replay's and tests' switch). A node
  // never runs pods and Slurm jobs at once unless this or its own sharing says so.
  bool shared_nodes = false;
  // Estimated starts for workloads without a reservation cost one profile query each; 0 means
  // estimate every workload, N caps the queries per cycle (the rest report "unknown").
  int32_t max_estimates_per_cycle = 0;
  // False: no estimate at all for a workload without a reservation (none searched; it reports
  // "unknown"), whatever max_estimates_per_cycle says. The trace replay's setting: it reads only
  // the starts and the reservations' starts, and an estimate decides nothing (issue 27).
  bool estimate_unreserved = true;
  PreemptionConfig preemption;
};

// True when a starving workload goes to the head of the queue (kFront, kFrontReserve).
inline bool StarvingToFront(QueueConfig::StarvationRemedy remedy) {
  return remedy != QueueConfig::StarvationRemedy::kReserve;
}

// True when a starving workload gets a reservation past the depth (kReserve, kFrontReserve).
inline bool StarvingReservedPastDepth(QueueConfig::StarvationRemedy remedy) {
  return remedy != QueueConfig::StarvationRemedy::kFront;
}

// The remedy a configuration names ("reserve", "front", "front-reserve": queue.starvationRemedy,
// oq simulate --starvation-remedy); nullopt for any other name.
inline std::optional<QueueConfig::StarvationRemedy> StarvationRemedyNamed(std::string_view name) {
  if (name == "reserve") return QueueConfig::StarvationRemedy::kReserve;
  if (name == "front") return QueueConfig::StarvationRemedy::kFront;
  if (name == "front-reserve") return QueueConfig::StarvationRemedy::kFrontReserve;
  return std::nullopt;
}

// The starving order a configuration names ("oldest", "first-starved": queue.starvingOrder);
// nullopt for any other name.
inline std::optional<QueueConfig::StarvingOrder> StarvingOrderNamed(std::string_view name) {
  if (name == "oldest") return QueueConfig::StarvingOrder::kOldest;
  if (name == "first-starved") return QueueConfig::StarvingOrder::kFirstStarved;
  return std::nullopt;
}

// How long a workload planned with `duration` (its time limit, kForever without one) and asking
// for `pool_share` of the pool (its job-size factor) may wait before it starves: the smaller of
// starvation_bound and starvation_bound_limits times its duration (each when set), times
// (1 - starvation_width_scale x pool_share); infinity when neither bound is set.
inline double StarvationBoundOf(const QueueConfig& config, Duration duration, double pool_share = 0) {
  double bound = std::numeric_limits<double>::infinity();
  if (config.starvation_bound > 0) bound = static_cast<double>(config.starvation_bound);
  if (config.starvation_bound_limits > 0) {
    bound = std::min(bound, config.starvation_bound_limits * static_cast<double>(duration));
  }
  if (config.starvation_width_scale <= 0 || std::isinf(bound)) return bound;
  return bound * (1.0 - config.starvation_width_scale * std::clamp(pool_share, 0.0, 1.0));
}

// True when a workload submitted at `submit` is starving at `now` (docs/queue.md "Starvation"):
// pending for its StarvationBoundOf or longer.
inline bool StarvingAt(const QueueConfig& config, Time submit, Duration duration, Time now,
                       double pool_share = 0) {
  return static_cast<double>(now - submit) >= StarvationBoundOf(config, duration, pool_share);
}

// ---------------------------------------------------------------------------------------------
// Snapshot
// ---------------------------------------------------------------------------------------------

// One immutable view of the pool, built by the scheduler's cache for one cycle.
struct Snapshot {
  ResourceNames resource_names;
  std::vector<Node> nodes;
  std::vector<RunningWorkload> running;
  std::vector<PendingWorkload> pending;
  UsageHistory usage;
  // PodDisruptionBudget group -> disruptions allowed now.
  std::map<std::string, int32_t> disruptions_allowed;
  // What PendingWorkload::placement rules read: node label domains and per-node pod counts.
  std::vector<TopologyDomains> topologies;
  std::vector<PodCounts> pod_counts;
};

// True when pods and Slurm jobs may run side by side on `node` (see NodeSharing).
inline bool SharesWorlds(const Node& node, const QueueConfig& config) {
  return config.shared_nodes || node.sharing == NodeSharing::kShared;
}

}  // namespace onequeue::queue

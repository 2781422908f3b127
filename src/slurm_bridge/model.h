// The internal model of what Slurm reports, independent of the REST API version that produced it.
// Every versioned adapter (v0.0.38 .. v0.0.45) maps its JSON into these structs, so the poller,
// the queue and the ownership code never see a version difference.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace onequeue::slurm {

// Base job state (the low byte of Slurm's job_state); flags such as COMPLETING or REQUEUED are kept
// apart in SlurmJob::state_flags.
enum class JobState {
  kUnknown,
  kPending,
  kRunning,
  kSuspended,
  kCompleted,
  kCancelled,
  kFailed,
  kTimeout,
  kNodeFail,
  kPreempted,
  kBootFail,
  kDeadline,
  kOutOfMemory,
};
const char* JobStateName(JobState s);
// "RUNNING" / "running" -> kRunning; anything unknown -> kUnknown (never an error: a newer Slurm
// may add states).
JobState ParseJobState(const std::string& s);
bool IsFinished(JobState s);

// Base node state; DRAIN, COMPLETING, NOT_RESPONDING, ... are flags (SlurmNode::state_flags).
enum class NodeState { kUnknown, kIdle, kAllocated, kMixed, kDown, kError, kFuture, kInvalid };
const char* NodeStateName(NodeState s);
NodeState ParseNodeState(const std::string& s);

// Generic resources by name: "gpu" -> 2. Typed GRES ("gpu:a100:2") are counted under their name and
// also under "name:type".
using GresMap = std::map<std::string, int64_t>;

// --- Per-node allocations (issue 25, shared nodes; docs/sharing.md) ------------------------------
// What Slurm allocated to a running job on each of its nodes, read from the job's `job_resources`
// (cores and memory per node) and `gres_detail` (GRES per node with indices), and the GPU indices
// in use on a node (`gres_used`). A shared node subtracts exactly these from what pods may use.

// GRES indices by name: "gpu:2(IDX:0-1)" -> {"gpu": {0, 1}}; a typed GRES ("gpu:a100:2(IDX:0,2)")
// is listed under "gpu" and "gpu:a100". Empty when Slurm gives no indices (no File= in gres.conf).
using GresIndices = std::map<std::string, std::vector<int>>;

// One node of a job's allocation.
struct NodeAllocation {
  std::string node;
  uint32_t cpus = 0;       // CPUs (hardware threads) allocated on this node
  int64_t memory_mb = 0;   // memory allocated on this node, MB
  GresMap gres;            // e.g. "gpu" -> 2, from gres_detail
  GresIndices gres_indices;
  friend bool operator==(const NodeAllocation&, const NodeAllocation&) = default;
};

// A running job's allocation on each of its nodes. `error` is set when Slurm's answer could not
// be read (then `nodes` is empty and the job counts as taking its whole nodes, logged once by the
// poller); a pending job has neither.
struct JobAllocation {
  std::vector<NodeAllocation> nodes;  // in the job's node order
  std::string error;
  bool readable() const { return error.empty() && !nodes.empty(); }
  const NodeAllocation* On(const std::string& node) const {
    for (const NodeAllocation& a : nodes)
      if (a.node == node) return &a;
    return nullptr;
  }
  friend bool operator==(const JobAllocation&, const JobAllocation&) = default;
};

// "gpu:2(IDX:0-1),gpu:a100:1(IDX:3)" -> counts and indices; "IDX:N/A" or no IDX gives no indices.
// An index list that is not numbers and ranges is an error naming it.
absl::Status ParseGresWithIndices(const std::string& s, GresMap* counts, GresIndices* indices);
// --- end of per-node allocations --------------------------------------------------------------

// Issue 29: the tasks a pending array record stands for, from its array_task_string: "0-9",
// "1,3,5-7", "0-15:4" (a step), any of them followed by "%N" (at most N tasks run at once).
struct ArrayTasks {
  std::vector<uint32_t> ids;  // ascending as Slurm lists them
  uint32_t max_running = 0;   // 0: no throttle
};
// Refuses text that is not that syntax, and more than `limit` tasks.
absl::StatusOr<ArrayTasks> ParseArrayTasks(const std::string& s, size_t limit = 1'000'000);
// "<array_job_id>_<task>", the id scontrol and REST accept for one task of an array.
std::string ArrayTaskId(uint32_t array_job_id, uint32_t task_id);

struct SlurmJob {
  uint32_t job_id = 0;
  uint32_t array_job_id = 0;                // 0 when not part of an array
  std::optional<uint32_t> array_task_id;    // set only for array tasks split off their record
  // Tasks a pending array record still stands for ("1-3"); Slurm keeps them in one record until
  // they start.
  std::string array_tasks;
  uint32_t array_max_tasks = 0;  // the array's %N throttle (array_max_tasks); 0 = none
  // Issue 29: a component of a heterogeneous job (`sbatch ... : ...`, `#SBATCH hetjob`): the
  // leader's job id (het_job_id) and this component's offset; 0 and 0 for any other job.
  uint32_t het_job_id = 0;
  uint32_t het_job_offset = 0;
  std::string name;
  std::string user;
  std::string account;
  std::string partition;
  std::string qos;
  JobState state = JobState::kUnknown;
  std::set<std::string> state_flags;        // upper case: "REQUEUED", "COMPLETING", ...
  std::string state_reason;                 // "None", "Resources", "BeginTime", ...
  int64_t priority = 0;
  absl::Time submit_time = absl::InfinitePast();
  absl::Time start_time = absl::InfinitePast();  // real start when running
  absl::Time end_time = absl::InfinitePast();
  // Slurm's own estimate (from backfill) for a pending job; unset until backfill has looked at it.
  std::optional<absl::Time> estimated_start;
  std::optional<absl::Duration> time_limit;  // unset = unlimited
  uint32_t node_count = 0;
  uint32_t cpus = 0;
  int64_t memory_per_node_mb = 0;            // 0 when unset
  int64_t memory_per_cpu_mb = 0;             // 0 when unset
  GresMap gres_per_node;                     // from tres_per_node ("gres:gpu:1" / "gres/gpu:1")
  std::map<std::string, int64_t> tres_requested;  // "cpu" -> 4, "mem" -> MB, "node" -> 2, "gres/gpu" -> n
  std::map<std::string, int64_t> tres_allocated;
  JobAllocation allocation;                  // per node, running jobs only (issue 25)
  std::vector<std::string> nodes;            // allocated nodes, expanded
  std::vector<std::string> required_nodes;   // expanded
  bool requeue = false;                      // may be requeued (a batch job with the requeue flag)
  int restart_count = 0;
  std::string comment;
  // ---- Issue 29 (a Slurm job keeps its meaning): what the user asked of placement, and
  // onequeue's own mark. The user's fields are read only: onequeue never writes them.
  // --constraint as Slurm reports it ("fast&rack1", "a|b", "[a*2&b]"); "" = none.
  std::string features;
  std::vector<std::string> excluded_nodes;  // --exclude, expanded
  // AdminComment: writable by operators only (never by the job's user), so onequeue's hold and
  // start marks go here (REST from v0.0.39, scontrol on v0.0.38), not into the user's comment.
  std::string admin_comment;
  // --reservation (resv_name): the advance reservation the job must run in; "" = none.
  std::string reservation;
  // --dependency as Slurm reports it ("afterok:12(unfulfilled),afterany:13"; "" = none), read
  // by scheduler/slurm_dependencies.h.
  std::string dependency;
  // ---- end of issue 29's block
  bool held() const { return state == JobState::kPending && priority == 0; }
};

struct SlurmNode {
  std::string name;
  NodeState state = NodeState::kUnknown;
  std::set<std::string> state_flags;  // upper case: "DRAIN", "COMPLETING", "NOT_RESPONDING", ...
  uint32_t cpus = 0;
  uint32_t alloc_cpus = 0;
  int64_t memory_mb = 0;
  int64_t alloc_memory_mb = 0;
  GresMap gres;
  GresMap gres_used;
  GresIndices gres_used_indices;  // from gres_used "gpu:2(IDX:0-1)" where Slurm gives indices (issue 25)
  std::vector<std::string> features;
  std::vector<std::string> partitions;
  std::string reason;
  std::string reason_set_by_user;
  std::string comment;
  bool drain() const { return state_flags.count("DRAIN") > 0; }
  // DRAIN with nothing left running: the node is DRAINED, not DRAINING.
  bool drained() const {
    return drain() && (state == NodeState::kIdle || state == NodeState::kDown) &&
           state_flags.count("COMPLETING") == 0;
  }
};

struct SlurmPartition {
  std::string name;
  std::vector<std::string> nodes;  // expanded
  uint32_t total_nodes = 0;
  uint32_t total_cpus = 0;
  int priority_tier = 0;
  int priority_job_factor = 0;
  std::string state;                       // "UP", "DOWN", "DRAIN", "INACTIVE"
  std::optional<absl::Duration> max_time;  // unset = unlimited
  std::optional<absl::Duration> default_time;
  // Issue 29: MaxNodes and MinNodes per job (unset = unlimited; MinNodes 0 or 1 = none).
  std::optional<uint32_t> max_nodes;
  uint32_t min_nodes = 0;
  // PreemptMode of the partition, upper case, "OFF" for Slurm's DISABLED ("OFF", "CANCEL",
  // "REQUEUE", "SUSPEND", "GANG", ...). Empty: the cluster's PreemptMode applies, or the REST
  // version does not say: only v0.0.45 (26.05) reports it as configured; v0.0.39..v0.0.44 have no
  // such field and v0.0.38's preemption_mode is not the partition's (docs/lending.md).
  std::vector<std::string> preempt_mode;
  bool preempt_off() const;
};

// An advance reservation (`scontrol create reservation`; issue 29): its nodes are Slurm's for the
// jobs that name it (--reservation) from start to end; flags such as "MAINT", "IGNORE_JOBS".
struct SlurmReservation {
  std::string name;
  std::vector<std::string> nodes;  // expanded; empty for a reservation of licenses or cores only
  absl::Time start = absl::InfinitePast();
  absl::Time end = absl::InfiniteFuture();  // InfiniteFuture: no end (Duration=UNLIMITED)
  std::set<std::string> flags;              // upper case
  std::string partition;
  bool maint() const { return flags.count("MAINT") > 0; }
  // Active at `now`, or starting before `until`, and not over.
  bool Overlaps(absl::Time from, absl::Time until) const { return start < until && end > from; }
};

// Issue 26: one record of a job-state listing (REST v0.0.41+ `jobs/state/`, slurmctld's
// REQUEST_JOB_STATE; or `squeue` on older versions): enough to see that a record appeared,
// changed state, split or went, for a fraction of a full job's bytes. The poller compares a
// record only with the same record of the previous state listing, never with a full job, so
// the two sources need not spell a state the same way.
struct SlurmJobState {
  uint32_t job_id = 0;  // the record's own id (a task split off an array has one of its own)
  JobState state = JobState::kUnknown;
  std::set<std::string> state_flags;  // upper case, as listed
  // The array tasks the record stands for, as listed: one id for a task in a record of its own
  // ("0"), the pending record's tasks ("0,1,2" from REST, which lists each; "0-9%2" from squeue);
  // empty for a job that is no array task. A task leaving the pending record changes it.
  std::string tasks;
  friend bool operator==(const SlurmJobState&, const SlurmJobState&) = default;
};

// Issue 26: the record a state listing's job id names, and the array tasks it names: "7" (7),
// "7_3" (7, task "3"), "7_[0-3]" (7, "0-3"), and a heterogeneous job's component "7+1" (its own
// record 7, component 1: REST's jobs/state/ listed a het job 6 as "6+0" and "7+1", live on 24.11
// and 26.05), "4_*" (4, "*": a cancelled pending array record, seen live). False for anything else.
bool ParseStateRecordId(const std::string& text, uint32_t& job_id, std::string& tasks);

// What one list call returned, with the server's own clock for the next incremental call.
template <typename T>
struct Listing {
  std::vector<T> items;
  // Slurm's last_update (epoch s), when the response has one; pass it back as ?update_time=.
  std::optional<int64_t> last_update;
  // The server said nothing changed since the update_time asked for (HTTP 304 / "no change"):
  // `items` is empty and the caller's view stays as it is.
  bool unchanged = false;
};
using JobListing = Listing<SlurmJob>;
using NodeListing = Listing<SlurmNode>;
using PartitionListing = Listing<SlurmPartition>;
using ReservationListing = Listing<SlurmReservation>;
using JobStateListing = Listing<SlurmJobState>;

// What a submit returned.
struct SubmitResult {
  uint32_t job_id = 0;
};

// JobSubmission::time_limit_minutes for Slurm's UNLIMITED (INFINITE).
inline constexpr uint32_t kTimeLimitUnlimited = 0xFFFFFFFFu;

// A batch job onequeue submits (placeholders; tests use it for ordinary jobs too).
struct JobSubmission {
  std::string name;
  std::string script = "#!/bin/sh\nexec sleep 100000\n";
  std::string partition;
  std::string nodelist;   // pin to these nodes (placeholders); empty = anywhere
  bool exclusive = false;
  std::string comment;
  uint32_t time_limit_minutes = 0;  // 0 = partition default; kTimeLimitUnlimited = UNLIMITED
  uint32_t node_count = 0;          // 0 = default (1)
  uint32_t cpus = 0;                // tasks; 0 = default
  int64_t memory_per_node_mb = 0;   // 0 = default
  // GRES per node, Slurm's names and counts ("gpu" -> 2; issue 25's pod placeholders): sent as
  // "gres": "gpu:2" on v0.0.38 and "tres_per_node": "gres/gpu:2" from v0.0.39. Empty: none.
  std::map<std::string, int64_t> gres_per_node;
  // The Slurm account (issue 25 tenancy: a pod placeholder under its tenant's account). Empty: the
  // submitting user's default.
  std::string account;
  bool hold = false;
  bool requeue = true;
  std::string working_directory = "/tmp";
  std::string standard_output = "/dev/null";
  std::map<std::string, std::string> environment = {{"PATH", "/bin:/usr/bin"}};
};

// A change to one pending job, as one request where the REST version allows it. Unset fields are
// left as they are. The daemon uses it to keep the shared partitions' pending jobs held with its
// reason in their comment, and to start the job it chose on the nodes it chose.
struct JobUpdate {
  std::optional<std::string> comment;
  // true: hold (priority 0, an admin hold with the SlurmUser's token); false: release.
  std::optional<bool> hold;
  // An explicit priority (admin only); it also releases a hold. onequeue sets a high one on the
  // job it starts so that no job Slurm sees first can take the lent nodes before it.
  std::optional<uint32_t> priority;
  // ReqNodeList: the job may run only on these nodes (expanded names). An empty vector clears it.
  std::optional<std::vector<std::string>> required_nodes;
  // Let a requeued job start now instead of waiting out the BeginTime Slurm gave it.
  bool begin_now = false;
  // Issue 29: the job's AdminComment (onequeue's marks; the user's comment is never written).
  std::optional<std::string> admin_comment;
};

// Drain / resume of one node.
struct NodeUpdate {
  enum class Kind { kDrain, kResume };
  Kind kind = Kind::kDrain;
  std::string reason;  // required by Slurm for a drain
};

}  // namespace onequeue::slurm

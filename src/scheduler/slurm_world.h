#pragma once
// The Slurm world's records in the one queue: joins the poller's view (jobs, nodes, partitions)
// with the Kubernetes pool nodes of a snapshot and adds Slurm's running and pending jobs to it.
// Pure: no I/O, time is an argument.
//
//   * A pool node is joined to the Slurm node of the same name, or of the name in its
//     `node_label` label. Only joined nodes can run Slurm jobs; a joined node carries synthetic
//     labels (never written to the Node) that Slurm workloads select on:
//       slurm.onequeue.io/partition.<p>=true  the node is in shared partition p
//       slurm.onequeue.io/lendable=true       Slurm may use it now (the Slurm node is up, not
//                                             drained by an admin, and the node is lent already
//                                             or has been free of pods for lendAfterSeconds and
//                                             is not part of the headroom)
//   * Running Slurm jobs on pool nodes are running workloads "slurm/<id>" (kind kSlurmJob): their
//     time limit gives their end; jobs of the shared partitions are preemptible per their QOS,
//     jobs of other partitions are Slurm's alone (load, never victims). onequeue's placeholders
//     are its own fence, not workloads; nor are its pod placeholders (issue 25: the pod they
//     mirror is counted instead, bound or assumed on its node).
//   * On a node whose partitions say `sharing: shared` (issue 25) the node is queue-shared and a
//     running job holds what Slurm allocated it there (CPUs, memory, GRES), not its request.
//   * Pending jobs of the shared partitions are pending workloads "slurm/<id>" with the same
//     multifactor priority as pods: age from submit time, fair-share from the Slurm account,
//     size, partition, QOS mapped from the Slurm QOS.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "queue/model.h"
#include "scheduler/config.h"
#include "scheduler/snapshot_builder.h"
#include "slurm_bridge/ownership.h"
#include "slurm_bridge/poller.h"

namespace onequeue::scheduler {

inline constexpr const char* kSlurmIdPrefix = "slurm/";
inline constexpr const char* kLendableLabel = "slurm.onequeue.io/lendable";
inline constexpr const char* kPartitionLabelPrefix = "slurm.onequeue.io/partition.";

// "slurm/123" -> 123; nullopt for a pod workload id. An array task "slurm/100_3" (issue 29,
// slurm_arrays.h) -> 100, the record that holds the task while it is pending.
std::optional<uint32_t> SlurmJobOf(std::string_view workload_id);
std::string SlurmWorkloadId(uint32_t job_id);

struct SlurmWorldOptions {
  std::vector<std::string> shared_partitions;
  std::string node_label;          // empty: join by name
  std::string mechanism = "placeholder";
  std::string reclaim_partition = "reclaim";
  std::map<std::string, std::string> qos_map;
  std::string default_qos = "batch";
  std::vector<std::string> known_qos;  // onequeue's QOS table
  std::set<std::string> preemptible_qos;
  std::map<std::string, std::string> gres_resources = {{"gpu", "nvidia.com/gpu"}};
  // Who onequeue is in Slurm: only placeholders and drains these users wrote are onequeue's.
  slurm::SlurmIdentity identity{"slurm", ""};
  // Pool nodes (Kubernetes names) Slurm may not take now although idle: pods left them less than
  // lendAfterSeconds ago, or they are the headroom.
  std::set<std::string> not_lendable;
  // Jobs onequeue started whose start the view does not show yet: job id -> Kubernetes node names.
  // Counted as running there (assume), never as pending.
  std::map<uint32_t, std::vector<std::string>> assumed_starts;
  // Issue 29: array tasks (array id, task id) onequeue split off and started (their own job ids
  // are in assumed_starts) -> the Kubernetes nodes lent for them: not planned again from a view
  // that still lists them in the array, and counted as running on those nodes there.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::string>> started_tasks;
  // Issue 25: shared partitions whose nodes are shared (slurm.partitions.<p>.sharing: shared). A
  // joined node is queue::NodeSharing::kShared when it is in at least one shared partition and
  // every shared partition it is in is listed here; its running Slurm jobs then hold exactly what
  // Slurm allocated them there (SlurmJob::allocation), or the whole node when that is unreadable.
  std::set<std::string> sharing_partitions;
  // Issue 25 tenancy: the sharing partitions marked shared-same-tenant. A shared node in one of
  // them is queue::Node::same_tenant (the stricter wins); every Slurm workload then carries the
  // tenant of its account (TenantOfAccount over `tenants`).
  std::set<std::string> same_tenant_partitions;
  SharingConfig tenants;
  // Issue 25 step 4: jobs holding a sub-node preemption claim (JobClaims::Holding; their nodes are
  // in assumed_starts). They count on their node as running but are never a victim: a claim is
  // committed (its own victims are leaving for it), so a later preemptor cannot take its room.
  std::set<uint32_t> claimed_jobs;
};

// Per snapshot node: 1 if a pod workload runs there (a Kubernetes tenant's; DaemonSet pods are
// part of the node). Such a node is not lendable.
std::vector<char> NodesWithPods(const queue::Snapshot& snapshot);

// The part of the options the configuration decides (the loop adds what its state knows:
// not_lendable, assumed_starts).
SlurmWorldOptions SlurmWorldOptionsOf(const Config& config);

// One pool node joined to its Slurm node.
struct JoinedNode {
  std::string k8s_name;
  std::string slurm_name;
  slurm::OwnershipStatus holder;  // who holds the Slurm side (from the view)
  bool slurm_usable = false;      // up, not drained by an admin, responding
  std::vector<uint32_t> running_jobs;  // shared-partition and other jobs running there (not placeholders)
  std::vector<std::string> partitions;  // the Slurm node's partitions
  // Issue 25: queue::NodeSharing::kShared: neither world owns it whole; onequeue never fences it
  // and mirrors each pod there by a pod placeholder (pod_mirror.h).
  bool shared = false;
};

struct SlurmRecords {
  std::map<std::string, JoinedNode> nodes;                // by Kubernetes name
  std::map<std::string, std::string> k8s_of_slurm;         // Slurm name -> Kubernetes name
  std::map<std::string, const slurm::SlurmJob*, std::less<>> pending;  // workload id -> job
  std::map<std::string, const slurm::SlurmJob*, std::less<>> running;  // workload id -> job (pool nodes)
  std::shared_ptr<const slurm::SlurmView> view;           // keeps the jobs above alive
};

// Who onequeue is in Slurm, from the configuration (slurm.user, and scontrol's user).
slurm::SlurmIdentity SlurmIdentityOf(const Config& config);
// True when the job is one of onequeue's placeholders (the fence of the placeholder mechanism):
// its name, partition and tag, and submitted by onequeue's Slurm user (issue 24 M2).
bool IsPlaceholderJob(const slurm::SlurmJob& job, const std::string& reclaim_partition,
                      const slurm::SlurmIdentity& identity);
// onequeue's own hold: priority 0 with onequeue's tag in the AdminComment, which only operators
// can write (issue 29; a tag in the user's comment proves nothing): else an admin's or user's.
bool HeldByOnequeue(const slurm::SlurmJob& job);

// Issue 29: the partition factor from Slurm's PriorityTier. Sets `queue_config->partitions` to
// the polled tiers of the shared partitions (the ones whose jobs onequeue orders; the factor is a
// tier over the largest of theirs, as Slurm normalises) and says whether they changed. Workloads
// of no partition (pods) get the lowest of those tiers (the entry named ""), so a Slurm job gains
// on a pod only by a higher tier than another shared partition's. A view without partitions (not
// polled yet) changes nothing.
bool UpdatePartitionTiers(const slurm::SlurmView& view, const std::vector<std::string>& shared_partitions,
                          queue::QueueConfig* queue_config);

// Adds Slurm's records to `built` (whose nodes are the pool). `view` may be null (no poll yet):
// then nothing is added and no node is joined. `queue_config` gives running jobs their
// multifactor priority (the scale preemptors are compared on).
SlurmRecords AddSlurmWorld(std::shared_ptr<const slurm::SlurmView> view, const SlurmWorldOptions& options,
                           const queue::QueueConfig& queue_config, BuiltSnapshot* built, queue::Time now);

}  // namespace onequeue::scheduler

// Moving a pool node between Slurm and onequeue, behind ONE interface with two mechanisms:
//  - drain: Slurm drain with reason "onequeue:<owner>" (REST from v0.0.39, scontrol on 22.05);
//    running jobs finish (or are requeued/cancelled by the preemption protocol), none start.
//  - placeholder: REST only, every version: an exclusive job pinned to the node in a partition of
//    a higher PriorityTier, comment "onequeue:<owner>". Slurm's own preemption
//    (preempt/partition_prio, PreemptMode=REQUEUE) requeues the shared partition's jobs there.
//    Lend cancels it and lets the requeued jobs start at once (begin_time now).
// Every action is idempotent and tagged, so a restarted daemon finds its own drains and
// placeholders from Slurm alone; a drain whose reason lacks the tag is an admin's and is never
// changed: Lend and Reclaim refuse with kFailedPrecondition and say why.
// A tag proves nothing by itself (issue 24 M2): any user may name a job
// "onequeue-placeholder-<node>" and write "onequeue:..." in its comment, and any operator may
// drain a node with such a reason. So a tag counts only on what onequeue's own Slurm identity
// wrote, as Slurm records it: a placeholder's job user (user_name) is slurm.user, whose token
// submits it; a drain's reason_set_by_user is slurm.user (REST) or the daemon's own Unix user
// (scontrol, v0.0.38). Anything else tagged is someone else's: a forged placeholder is that user's
// job, a drain by another user an admin's (hands off).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "slurm_bridge/poller.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::slurm {

inline constexpr char kOwnerTagPrefix[] = "onequeue:";
std::string OwnerTag(const std::string& owner);  // "onequeue:<owner>"
// The owner named by a tag at the start of `text`, if it is one of onequeue's.
std::optional<std::string> OwnerFromTag(const std::string& text);

// Who onequeue is in Slurm: only what these users wrote can be onequeue's.
struct SlurmIdentity {
  std::string rest_user;      // slurm.user: the token's user, which submits placeholders and drains over REST
  std::string scontrol_user;  // the daemon's Unix user, when scontrol drains (v0.0.38); "" = none
  bool WroteReason(const std::string& user) const {
    return !user.empty() && (user == rest_user || user == scontrol_user);
  }
  bool Submitted(const std::string& job_user) const { return !job_user.empty() && job_user == rest_user; }
};

enum class NodeHolder {
  kSlurm,      // lent: Slurm may run jobs there
  kOnequeue,   // held by onequeue for `owner`
  kAdmin,      // drained by someone else: hands off
  kDown,       // down without a drain of ours; nothing to move
};
const char* NodeHolderName(NodeHolder h);

struct OwnershipStatus {
  NodeHolder holder = NodeHolder::kSlurm;
  std::string owner;       // for kOnequeue
  bool ready = false;      // kOnequeue and no Slurm job of the shared partitions runs there
  std::string detail;      // human readable: reason, placeholder job id, ...
  std::optional<uint32_t> placeholder_job;  // placeholder mechanism
};

class NodeOwnership {
 public:
  virtual ~NodeOwnership() = default;
  virtual const char* mechanism() const = 0;
  // Gives the node to Slurm. OK if it already is Slurm's.
  virtual absl::Status Lend(const std::string& node) = 0;
  // Takes the node from Slurm for `owner` (e.g. the preemptor's name). OK if already held for the
  // same owner; kFailedPrecondition if held for another owner or drained by an admin.
  virtual absl::Status Reclaim(const std::string& node, const std::string& owner) = 0;
  virtual absl::StatusOr<OwnershipStatus> Status(const std::string& node) = 0;
  // The node stays held by onequeue, now for `owner` (e.g. "reserved/<P>" -> "kubernetes" once P
  // is bound): drain -> the drain reason is rewritten, placeholder -> its comment is; the node is
  // never given back to Slurm in between. Not held yet: same as Reclaim. An admin's drain:
  // kFailedPrecondition.
  virtual absl::Status Retag(const std::string& node, const std::string& owner) = 0;
};

// Who holds every node, read from one poll's view alone (no request): the answer Status() gives,
// for all nodes at once, so the daemon can check every pool node every cycle for free. For the
// placeholder mechanism a placeholder is a live (pending or running) job of `reclaim_partition`
// named onequeue-placeholder-<node> with an onequeue tag in its comment, submitted by
// `identity.rest_user`. `mechanism`: "drain" or "placeholder" (anything else reads as "drain").
// Nodes absent from the view are absent from the map.
std::map<std::string, OwnershipStatus> OwnershipFromView(const SlurmView& view, const std::string& mechanism,
                                                         const std::string& reclaim_partition,
                                                         const SlurmIdentity& identity);

std::unique_ptr<NodeOwnership> MakeDrainOwnership(SlurmApi& api, SlurmIdentity identity);

struct PlaceholderOptions {
  std::string reclaim_partition = "reclaim";  // PriorityTier above the shared partitions
  std::string working_directory = "/tmp";     // must exist on the node, writable by the token's user
  // 0: the reclaim partition's MaxTime, UNLIMITED when it has none (issue 24 M6: never its
  // DefaultTime, which ended the fence at TIMEOUT).
  uint32_t time_limit_minutes = 0;
  std::string script = "#!/bin/sh\nexec sleep 100000000\n";
  SlurmIdentity identity;  // who submits the placeholders (rest_user) and drains
  // The partitions onequeue lends nodes to (slurm.sharedPartitions): the only ones whose jobs a
  // placeholder may displace. Empty: every partition but the reclaim partition.
  std::vector<std::string> shared_partitions;
};
// `now` is used for begin_time when releasing the requeued jobs.
std::unique_ptr<NodeOwnership> MakePlaceholderOwnership(SlurmApi& api, PlaceholderOptions options,
                                                        std::function<absl::Time()> now);

// The hook the slurmd-pod mechanism needs: drain the Slurm node of a slurmd pod before the pod is
// evicted. Already drained (by anyone) is fine and left as it is.
absl::Status DrainBeforeEviction(SlurmApi& api, const std::string& node, const std::string& owner);

}  // namespace onequeue::slurm

#include "slurm_bridge/ownership.h"

#include <algorithm>
#include <map>

#include "absl/synchronization/mutex.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace onequeue::slurm {

std::string OwnerTag(const std::string& owner) { return absl::StrCat(kOwnerTagPrefix, owner); }

std::optional<std::string> OwnerFromTag(const std::string& text) {
  absl::string_view t = text;
  if (!absl::ConsumePrefix(&t, kOwnerTagPrefix) || t.empty()) return std::nullopt;
  return std::string(t);
}

const char* NodeHolderName(NodeHolder h) {
  switch (h) {
    case NodeHolder::kSlurm: return "slurm";
    case NodeHolder::kOnequeue: return "onequeue";
    case NodeHolder::kAdmin: return "admin";
    case NodeHolder::kDown: return "down";
  }
  return "?";
}

namespace {

absl::Status AdminRefusal(const std::string& node, const SlurmNode& n, const char* action) {
  return absl::FailedPreconditionError(absl::StrCat(
      "node ", node, " was drained by ", n.reason_set_by_user.empty() ? "an admin" : n.reason_set_by_user,
      " (reason \"", n.reason, "\", not onequeue's): onequeue does not ", action, " it"));
}

// Drain status shared by both mechanisms: a drain is onequeue's when its reason is tagged and
// onequeue's identity set it; any other drain is an admin's.
std::optional<OwnershipStatus> DrainStatus(const SlurmNode& n, const SlurmIdentity& identity) {
  if (!n.drain()) return std::nullopt;
  OwnershipStatus s;
  std::optional<std::string> owner = OwnerFromTag(n.reason);
  if (owner && identity.WroteReason(n.reason_set_by_user)) {
    s.holder = NodeHolder::kOnequeue;
    s.owner = *owner;
    s.ready = n.drained();
  } else {
    s.holder = NodeHolder::kAdmin;
  }
  s.detail = absl::StrCat("drained: ", n.reason);
  return s;
}

bool AdminDrained(const SlurmNode& n, const SlurmIdentity& identity) {
  std::optional<OwnershipStatus> d = DrainStatus(n, identity);
  return d && d->holder == NodeHolder::kAdmin;
}

constexpr char kPlaceholderPrefix[] = "onequeue-placeholder-";
std::string PlaceholderName(const std::string& node) { return kPlaceholderPrefix + node; }

// A live placeholder of `node`: found by name, partition, tag and submitter, so a restarted daemon
// finds it and a user's job of the same name and comment is not taken for it.
bool IsPlaceholder(const SlurmJob& j, const std::string& node, const std::string& reclaim_partition,
                   const SlurmIdentity& identity) {
  return !IsFinished(j.state) && OwnerFromTag(j.comment) && j.partition == reclaim_partition &&
         j.name == PlaceholderName(node) && identity.Submitted(j.user);
}

// The one answer to "who holds this node", for Status() and OwnershipFromView() alike.
// `placeholder`: the node's live placeholder (placeholder mechanism), or null.
OwnershipStatus HolderOf(const SlurmNode& n, const SlurmJob* placeholder, const SlurmIdentity& identity) {
  std::optional<OwnershipStatus> drain = DrainStatus(n, identity);
  if (drain && drain->holder == NodeHolder::kAdmin) return *drain;
  if (placeholder != nullptr) {
    OwnershipStatus s;
    s.holder = NodeHolder::kOnequeue;
    s.owner = OwnerFromTag(placeholder->comment).value_or("");
    s.placeholder_job = placeholder->job_id;
    s.ready = placeholder->state == JobState::kRunning;
    s.detail = absl::StrCat("placeholder job ", placeholder->job_id, " ", JobStateName(placeholder->state), " (",
                            placeholder->state_reason, ")");
    return s;
  }
  if (drain) return *drain;  // ours (e.g. DrainBeforeEviction's under the placeholder mechanism)
  OwnershipStatus s;
  s.holder = n.state == NodeState::kDown ? NodeHolder::kDown : NodeHolder::kSlurm;
  s.detail = NodeStateName(n.state);
  return s;
}

// Reclaim and Retag differ only in what they do with a node held for another owner: Reclaim
// refuses, Retag moves the hold to the new owner.
class TaggingOwnership : public NodeOwnership {
 public:
  absl::Status Reclaim(const std::string& node, const std::string& owner) final {
    return Hold(node, owner, /*retag=*/false);
  }
  absl::Status Retag(const std::string& node, const std::string& owner) final {
    return Hold(node, owner, /*retag=*/true);
  }

 protected:
  virtual absl::Status Hold(const std::string& node, const std::string& owner, bool retag) = 0;
};

class DrainOwnership : public TaggingOwnership {
 public:
  DrainOwnership(SlurmApi& api, SlurmIdentity identity) : api_(api), identity_(std::move(identity)) {}
  const char* mechanism() const override { return "drain"; }

  absl::StatusOr<OwnershipStatus> Status(const std::string& node) override {
    absl::StatusOr<SlurmNode> n = api_.GetNode(node);
    if (!n.ok()) return n.status();
    return HolderOf(*n, nullptr, identity_);
  }

  absl::Status Lend(const std::string& node) override {
    absl::StatusOr<SlurmNode> n = api_.GetNode(node);
    if (!n.ok()) return n.status();
    std::optional<OwnershipStatus> d = DrainStatus(*n, identity_);
    if (!d) return absl::OkStatus();  // already Slurm's
    if (d->holder == NodeHolder::kAdmin) return AdminRefusal(node, *n, "resume");
    return api_.UpdateNode(node, NodeUpdate{NodeUpdate::Kind::kResume, ""});
  }

 private:
  // Drains `node` for `owner`. Held for another owner: kFailedPrecondition, or with `retag` a
  // drain with the new reason: on a drained node that only replaces the reason, DRAIN stays set
  // (checked live on 22.05 through scontrol), so Slurm never gets the node in between.
  absl::Status Hold(const std::string& node, const std::string& owner, bool retag) override {
    absl::StatusOr<SlurmNode> n = api_.GetNode(node);
    if (!n.ok()) return n.status();
    if (std::optional<OwnershipStatus> d = DrainStatus(*n, identity_)) {
      if (d->holder == NodeHolder::kAdmin) return AdminRefusal(node, *n, retag ? "retag" : "take over");
      if (d->owner == owner) return absl::OkStatus();
      if (!retag)
        return absl::FailedPreconditionError(
            absl::StrCat("node ", node, " is already held by onequeue for ", d->owner, "; lend it first"));
    }
    return api_.UpdateNode(node, NodeUpdate{NodeUpdate::Kind::kDrain, OwnerTag(owner)});
  }

  SlurmApi& api_;
  const SlurmIdentity identity_;
};

class PlaceholderOwnership : public TaggingOwnership {
 public:
  PlaceholderOwnership(SlurmApi& api, PlaceholderOptions o, std::function<absl::Time()> now)
      : api_(api), options_(std::move(o)), now_(std::move(now)) {}
  const char* mechanism() const override { return "placeholder"; }

  absl::StatusOr<OwnershipStatus> Status(const std::string& node) override {
    absl::StatusOr<SlurmNode> n = api_.GetNode(node);
    if (!n.ok()) return n.status();
    if (AdminDrained(*n, options_.identity)) return HolderOf(*n, nullptr, options_.identity);  // no job list needed
    absl::StatusOr<std::vector<SlurmJob>> ph = Placeholders(node);
    if (!ph.ok()) return ph.status();
    return HolderOf(*n, ph->empty() ? nullptr : &ph->front(), options_.identity);
  }

  absl::Status Lend(const std::string& node) override {
    absl::StatusOr<SlurmNode> n = api_.GetNode(node);
    if (!n.ok()) return n.status();
    absl::StatusOr<JobListing> jobs = api_.ListJobs();
    if (!jobs.ok()) return jobs.status();
    bool cancelled = false;
    absl::Time requeued_by = absl::InfinitePast();  // when the last placeholder started
    for (const SlurmJob& j : jobs->items) {
      if (!IsPlaceholder(j, node, options_.reclaim_partition, options_.identity)) continue;
      absl::Status st = api_.CancelJob(j.job_id);
      if (!st.ok()) return st;
      Remember(node, std::nullopt);
      cancelled = true;
      requeued_by = std::max(requeued_by, j.start_time);
    }
    if (!cancelled) return absl::OkStatus();
    // Jobs Slurm requeued to make room wait out a BeginTime (about 2 minutes) before they may
    // start again; let the ones of this node's shared partitions go now. Not sooner than
    // kRelaunchMargin after the requeue (Slurm requeued them when the placeholder started, so the
    // bridge's own gate does not know them): slurmd refuses a launch credential issued in the
    // second it revoked the old one ("Job credential revoked", the job then FAILS), seen live on 22.05.
    const absl::Time now = now_();
    const absl::Time at = std::max(now, requeued_by + kRelaunchMargin);
    for (const SlurmJob& j : jobs->items) {
      if (j.state != JobState::kPending || j.restart_count == 0 || j.state_reason != "BeginTime") continue;
      if (j.partition == options_.reclaim_partition ||
          std::find(n->partitions.begin(), n->partitions.end(), j.partition) == n->partitions.end())
        continue;
      absl::Status st = api_.StartAt(j.job_id, at, now);
      if (!st.ok() && !absl::IsNotFound(st)) return st;
    }
    return absl::OkStatus();
  }

 private:
  // Submits a placeholder for `owner` unless the node has one. Held for another owner:
  // kFailedPrecondition, or with `retag` the placeholder's comment is rewritten; the placeholder
  // keeps running, so Slurm never gets the node in between.
  absl::Status Hold(const std::string& node, const std::string& owner, bool retag) override {
    absl::StatusOr<SlurmNode> n = api_.GetNode(node);
    if (!n.ok()) return n.status();
    if (AdminDrained(*n, options_.identity)) return AdminRefusal(node, *n, retag ? "retag" : "take over");
    std::vector<SlurmJob> running_there;  // read with the job list, which an empty answer implies
    absl::StatusOr<std::vector<SlurmJob>> ph = Placeholders(node, &running_there);
    if (!ph.ok()) return ph.status();
    if (ph->empty()) return SubmitPlaceholder(node, owner, running_there);
    for (const SlurmJob& p : *ph) {
      const std::optional<std::string> held_for = OwnerFromTag(p.comment);
      if (held_for == owner) continue;
      if (!retag)
        return absl::FailedPreconditionError(absl::StrCat("node ", node, " is already held by onequeue for ",
                                                          held_for.value_or("?"), " (job ", p.job_id,
                                                          "); lend it first"));
      JobUpdate update;
      update.comment = OwnerTag(owner);
      if (absl::Status st = api_.UpdateJob(p.job_id, update); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

  // Issue 24 M6 (a): Slurm's partition preemption lets the placeholder requeue (or cancel) every
  // job of a lower tier on its node, whatever the partition; onequeue means to displace only the
  // jobs of the partitions it lends to (in its plan the others are load, never victims). Over a
  // job of another partition the node is not fenced; the caller tries again after it ends.
  absl::Status SubmitPlaceholder(const std::string& node, const std::string& owner,
                                 const std::vector<SlurmJob>& running_there) {
    for (const SlurmJob& j : running_there) {
      if (Displaceable(j.partition)) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          "node ", node, " runs Slurm job ", j.job_id, " of partition ", j.partition,
          ", which onequeue does not lend to: a placeholder would preempt it; not fenced until it ends"));
    }
    absl::StatusOr<uint32_t> limit = PlaceholderTimeLimit();
    if (!limit.ok()) return limit.status();
    JobSubmission job;
    job.name = PlaceholderName(node);
    job.script = options_.script;
    job.partition = options_.reclaim_partition;
    job.nodelist = node;
    job.exclusive = true;
    job.comment = OwnerTag(owner);
    // Issue 24 M6 (b): an explicit limit, so the fence does not end at the partition's DefaultTime
    // (TIMEOUT), and requeue, so a NODE_FAIL puts it back in the queue (pending, still the fence)
    // instead of ending it: the node comes back fenced.
    job.time_limit_minutes = *limit;
    job.working_directory = options_.working_directory;
    job.requeue = true;
    absl::StatusOr<SubmitResult> r = api_.Submit(job);
    if (!r.ok()) return r.status();
    Remember(node, r->job_id);
    return absl::OkStatus();
  }

  bool Displaceable(const std::string& partition) const {
    if (partition == options_.reclaim_partition) return false;
    const std::vector<std::string>& shared = options_.shared_partitions;
    return shared.empty() || std::find(shared.begin(), shared.end(), partition) != shared.end();
  }

  // options_.time_limit_minutes if set, else the reclaim partition's MaxTime, else (no MaxTime,
  // or the partition not listed: Slurm refuses the submit anyway) UNLIMITED.
  absl::StatusOr<uint32_t> PlaceholderTimeLimit() {
    if (options_.time_limit_minutes > 0) return options_.time_limit_minutes;
    absl::StatusOr<PartitionListing> parts = api_.ListPartitions();
    if (!parts.ok()) return parts.status();
    for (const SlurmPartition& p : parts->items) {
      if (p.name == options_.reclaim_partition && p.max_time) {
        return static_cast<uint32_t>(std::clamp<int64_t>(absl::ToInt64Minutes(*p.max_time), 1, kTimeLimitUnlimited - 1));
      }
    }
    return kTimeLimitUnlimited;
  }

  // The placeholders for `node`. The id of the last one seen is remembered, so the usual case is
  // one GET job/{id}; the full job list (megabytes with 10,000 jobs) is read only when that id is
  // unknown (first call, restarted daemon) or no longer a live placeholder.
  // When the answer is empty the job list was read, and `running_there` (if given) gets the
  // other jobs running on the node.
  absl::StatusOr<std::vector<SlurmJob>> Placeholders(const std::string& node,
                                                     std::vector<SlurmJob>* running_there = nullptr) {
    std::optional<uint32_t> known;
    {
      absl::MutexLock lock(&mu_);
      if (auto it = known_.find(node); it != known_.end()) known = it->second;
    }
    if (known) {
      absl::StatusOr<SlurmJob> j = api_.GetJob(*known);
      if (j.ok() && IsPlaceholder(*j, node, options_.reclaim_partition, options_.identity)) {
        return std::vector<SlurmJob>{*std::move(j)};
      }
      if (!j.ok() && !absl::IsNotFound(j.status())) return j.status();
    }
    absl::StatusOr<JobListing> jobs = api_.ListJobs();
    if (!jobs.ok()) return jobs.status();
    std::vector<SlurmJob> out;
    for (SlurmJob& j : jobs->items) {
      if (IsPlaceholder(j, node, options_.reclaim_partition, options_.identity)) {
        out.push_back(std::move(j));
      } else if (running_there != nullptr && (j.state == JobState::kRunning || j.state == JobState::kSuspended) &&
                 std::find(j.nodes.begin(), j.nodes.end(), node) != j.nodes.end()) {
        running_there->push_back(std::move(j));
      }
    }
    Remember(node, out.empty() ? std::nullopt : std::optional<uint32_t>(out.front().job_id));
    return out;
  }

  void Remember(const std::string& node, std::optional<uint32_t> job) {
    absl::MutexLock lock(&mu_);
    if (job) known_[node] = *job;
    else known_.erase(node);
  }

  SlurmApi& api_;
  const PlaceholderOptions options_;
  std::function<absl::Time()> now_;
  absl::Mutex mu_;
  std::map<std::string, uint32_t> known_ ABSL_GUARDED_BY(mu_);  // node -> placeholder job id
};

}  // namespace

std::map<std::string, OwnershipStatus> OwnershipFromView(const SlurmView& view, const std::string& mechanism,
                                                         const std::string& reclaim_partition,
                                                         const SlurmIdentity& identity) {
  // The first live placeholder of each node, in job id order (one pass over the jobs).
  std::map<std::string, const SlurmJob*> placeholders;
  if (mechanism == "placeholder") {
    for (const auto& [id, j] : *view.jobs) {
      absl::string_view node = j.name;
      if (!absl::ConsumePrefix(&node, kPlaceholderPrefix)) continue;
      if (IsPlaceholder(j, std::string(node), reclaim_partition, identity)) placeholders.emplace(std::string(node), &j);
    }
  }
  std::map<std::string, OwnershipStatus> out;
  for (const auto& [name, n] : *view.nodes) {
    auto it = placeholders.find(name);
    out.emplace(name, HolderOf(n, it == placeholders.end() ? nullptr : it->second, identity));
  }
  return out;
}

std::unique_ptr<NodeOwnership> MakeDrainOwnership(SlurmApi& api, SlurmIdentity identity) {
  return std::make_unique<DrainOwnership>(api, std::move(identity));
}

std::unique_ptr<NodeOwnership> MakePlaceholderOwnership(SlurmApi& api, PlaceholderOptions options,
                                                        std::function<absl::Time()> now) {
  return std::make_unique<PlaceholderOwnership>(api, std::move(options), std::move(now));
}

absl::Status DrainBeforeEviction(SlurmApi& api, const std::string& node, const std::string& owner) {
  absl::StatusOr<SlurmNode> n = api.GetNode(node);
  if (!n.ok()) return n.status();
  if (n->drain()) return absl::OkStatus();
  return api.UpdateNode(node, NodeUpdate{NodeUpdate::Kind::kDrain, OwnerTag(owner)});
}

}  // namespace onequeue::slurm

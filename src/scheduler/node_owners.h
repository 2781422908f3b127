#pragma once
// The owner of every pool node as this process must act on it, and the one way it is written.
//
// Read at the start of each full cycle from the node informer, except where this process wrote
// a value the watch has not shown yet: such a write overrides the informer's copy (and goes into
// every snapshot) until the watch shows a version of the node other than those the write started
// from, that is the write itself or a later one. Every write carries the version it was decided
// from as its precondition, so no foreign write can fall between those versions and the written
// one (resourceVersions are opaque: only equality is compared). A write from an old read (a
// deposed leader's, a lagging watch's) fails with kAborted (HTTP 409) and is made again from a
// fresh read next cycle.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scheduler/node_owner.h"
#include "scheduler/snapshot_builder.h"

namespace onequeue::scheduler {

class ClusterActions;

class NodeOwners {
 public:
  explicit NodeOwners(ClusterActions* actions) : actions_(actions) {}

  // The informer's nodes, with this process's unshown writes laid over them.
  void Read(const KubeState& state);
  // Unmarked for a node not read.
  const NodeOwner& Of(const std::string& node) const;
  bool Exists(const std::string& node) const { return owner_.count(node) > 0; }
  const std::map<std::string, NodeOwner>& all() const { return owner_; }
  // Writes the node's owner, conditional on the version this cycle read (or this process wrote
  // since), and remembers it.
  absl::Status Set(const std::string& node, const NodeOwner& value);
  // Set for several nodes at once (issue 26: the reservation marks of a cycle's preemptions):
  // every write is sent before the first answer is awaited. The results in the order of `writes`
  // (one write per node).
  std::vector<absl::Status> SetAll(const std::vector<std::pair<std::string, NodeOwner>>& writes);
  // Issue 26: `value` becomes the node's owner for this process at once (Of, Unshown: every
  // snapshot), its write deferred until WriteDeferred. Only for a value the node in effect has
  // already (a finished reservation's release: its preemptor no longer waits). It stands while the
  // node still shows the owner it replaced; a write to the node, or another owner shown, ends it.
  void Defer(const std::string& node, const NodeOwner& value, int64_t now);
  // When the oldest deferred write was deferred, if any.
  std::optional<int64_t> OldestDeferred() const;
  // The deferred writes, for SetAll (conditional on the latest version read), no longer deferred.
  std::vector<std::pair<std::string, NodeOwner>> TakeDeferred();
  // Writes the watch has not shown yet, and deferred ones (node -> annotation value), for the
  // snapshot.
  std::map<std::string, std::string> Unshown() const;
  bool HasUnshown() const { return !written_.empty() || !deferred_.empty(); }
  // node -> annotation value (for the status board).
  std::map<std::string, std::string> Values() const;

 private:
  struct Write {
    NodeOwner value;
    std::string written_version;
    std::set<std::string> earlier_versions;
  };
  // Set's bookkeeping once the write answered.
  absl::Status Written(const std::string& node, const NodeOwner& value, const std::string& expected,
                       const absl::StatusOr<std::string>& written);

  struct Deferred {
    NodeOwner value;
    std::string replaces;  // the owner's annotation value it replaces (what the node still shows)
    int64_t since = 0;
  };

  ClusterActions* actions_;
  const NodeOwner unmarked_;
  std::map<std::string, Deferred> deferred_;
  std::map<std::string, NodeOwner> owner_;
  std::map<std::string, std::string> version_;  // node -> resourceVersion the next write expects
  std::map<std::string, Write> written_;
};

}  // namespace onequeue::scheduler

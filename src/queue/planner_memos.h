#pragma once
// The planner's per-cycle memos (internal to src/queue; used by planner_state.h and the cycle
// pass). Each one remembers an answer of this cycle's node searches so that a later workload
// asking at least as much (or no more) is answered without walking the nodes again. They rely on
// two facts of a full cycle: capacity only shrinks, and the queue is walked by descending
// priority. The cycle pass decides when they may be read or written (CyclePass::PlanOne).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "queue/model.h"
#include "queue/profile.h"
#include "queue/resources.h"

namespace onequeue::queue::internal {

// What makes two workloads interchangeable for "does it fit now": same request, member count,
// kind, topology packing and static eligibility. Capacity only shrinks during a cycle and the
// queue is walked by descending priority, so once a shape failed to start now for a duration d,
// every later workload of that shape with a duration >= d fails too (a Slurm-like "skip").
struct ShapeKey {
  Resources per_member;
  int32_t members;
  WorkloadKind kind;
  bool pack;
  int32_t eligibility;  // eligibility class (kUnconstrained = no constraint)

  friend bool operator==(const ShapeKey&, const ShapeKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ShapeKey& k) {
    return H::combine(std::move(h), k.per_member.amount, k.members, k.kind, k.pack, k.eligibility);
  }
};

// What the memos below compare: how much a request asks. (Comparing requests by number through
// a cached matrix instead of Covers was tried: more instructions, not fewer.)
struct RequestSize {
  Resources per_member;
  int32_t members;
  Duration duration;

  // True when this asks at least as much as `other` per member, for at least as many members
  // and at least as long.
  bool AtLeast(const RequestSize& other) const {
    return members >= other.members && duration >= other.duration &&
           per_member.Covers(other.per_member);
  }
};

// Workloads with the same static eligibility (selector, affinity, tolerations, partition nodes)
// share a class id, numbered per cycle from kUnconstrained = 0 (no constraint, most workloads).
// The id is found once per workload in the priority pass, so the planning pass neither builds
// nor hashes a signature.
constexpr int32_t kUnconstrained = 0;

// Memo groups per workload kind and eligibility class: a vector indexed by class id.
template <typename Group>
class PerEligibility {
 public:
  Group* Find(WorkloadKind kind, int32_t eligibility) {
    const size_t i = Index(kind, eligibility);
    return i < groups_.size() ? &groups_[i] : nullptr;
  }
  Group& FindOrAdd(WorkloadKind kind, int32_t eligibility) {
    const size_t i = Index(kind, eligibility);
    if (i >= groups_.size()) groups_.resize(i + 1);
    return groups_[i];
  }

 private:
  static size_t Index(WorkloadKind kind, int32_t eligibility) {
    return static_cast<size_t>(eligibility) * 2 + static_cast<size_t>(kind);
  }
  std::vector<Group> groups_;
};

// Requests that failed one question of this cycle ("start now?", "fit now if no reservation
// existed?"). Within a cycle capacity only shrinks and the queue is walked by descending
// priority (so the nodes a workload may use only shrink too): a request that asks at least as
// much as one that failed fails too. One check against a few remembered failures then replaces
// a walk over thousands of nodes. Only minimal failures are kept (a Pareto frontier), at most
// kMaxPerGroup per group: it is a memo, and forgetting costs only time.
class FailureMemo {
 public:
  bool KnownToFail(WorkloadKind kind, int32_t eligibility, const RequestSize& r) {
    std::vector<RequestSize>* group = groups_.Find(kind, eligibility);
    if (group == nullptr) return false;
    for (size_t i = 0; i < group->size(); ++i) {
      if (r.AtLeast((*group)[i])) {
        // Neighbours in the queue tend to hit the same failure: move it one step to the front.
        if (i > 0) std::swap((*group)[i], (*group)[i - 1]);
        return true;
      }
    }
    return false;
  }
  void Failed(WorkloadKind kind, int32_t eligibility, const RequestSize& r) {
    std::vector<RequestSize>& group = groups_.FindOrAdd(kind, eligibility);
    // The new failure is minimal (it was not known): drop the ones it dominates.
    std::erase_if(group, [&](const RequestSize& f) { return f.AtLeast(r); });
    if (group.size() < kMaxPerGroup) group.push_back(r);
  }

 private:
  static constexpr size_t kMaxPerGroup = 64;
  PerEligibility<std::vector<RequestSize>> groups_;
};

// The earliest placement of a request only moves later during a cycle (capacity only shrinks):
// after a request found its earliest start at t (or none inside the window: kForever), every
// request asking at least as much cannot start before t. The search for it then starts at t
// instead of now, which skips most of the profile once thousands of reservations exist
// (conservative backfill).
class NotBeforeMemo {
 public:
  // The latest known lower bound on the start of this request; `now` when nothing is known.
  Time NotBefore(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
                 Time now) {
    const std::vector<Bound>* group = groups_.Find(kind, eligibility);
    Time bound = now;
    if (group == nullptr) return bound;
    for (const Bound& b : *group) {
      if (b.not_before > bound && r.AtLeast(b.size)) bound = b.not_before;
    }
    return bound;
  }
  void Found(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
             Time not_before) {
    std::vector<Bound>& group = groups_.FindOrAdd(kind, eligibility);
    // Drop the bounds this one makes useless: they apply to fewer requests and say less.
    std::erase_if(group, [&](const Bound& b) {
      return b.size.AtLeast(r) && b.not_before <= not_before;
    });
    if (group.size() >= kMaxPerGroup) group.erase(group.begin());
    group.push_back(Bound{r, not_before});
  }

 private:
  static constexpr size_t kMaxPerGroup = 64;
  struct Bound {
    RequestSize size;
    Time not_before;
  };
  PerEligibility<std::vector<Bound>> groups_;
};

// The converse for one question, "would it fit now if no reservation existed": a request that
// fitted on some nodes (its witnesses), and every request asking no more, still fits as long as
// nothing started on (or claimed) one of those nodes since: starts and claims are the only
// things that shrink what this question looks at. The caller bumps a node's sequence number at
// each start or claim on it.
class FitsMemo {
 public:
  // `seq`: the current sequence number (the highest in node_seq).
  bool KnownToFit(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
                  const std::vector<int64_t>& node_seq, int64_t seq) {
    std::vector<Fit>* group = groups_.Find(kind, eligibility);
    if (group == nullptr) return false;
    for (size_t i = 0; i < group->size();) {
      Fit& f = (*group)[i];
      if (!f.size.AtLeast(r)) {
        ++i;
        continue;
      }
      // Verified at the current sequence number: nothing started anywhere since.
      const bool intact = f.verified == seq ||
                          std::all_of(f.witnesses.begin(), f.witnesses.end(),
                                      [&](NodeIndex n) { return node_seq[n] <= f.seq; });
      if (intact) {
        f.verified = seq;
        return true;
      }
      group->erase(group->begin() + static_cast<std::ptrdiff_t>(i));
    }
    return false;
  }
  void Fitted(WorkloadKind kind, int32_t eligibility, const RequestSize& r,
              int64_t seq, std::vector<NodeIndex> witnesses) {
    std::vector<Fit>& group = groups_.FindOrAdd(kind, eligibility);
    if (group.size() >= kMaxPerGroup) group.erase(group.begin());
    group.push_back(Fit{r, seq, seq, std::move(witnesses)});
  }

 private:
  static constexpr size_t kMaxPerGroup = 16;
  struct Fit {
    RequestSize size;
    int64_t seq;       // the sequence number when it fitted
    int64_t verified;  // the last sequence number at which its witnesses were checked
    std::vector<NodeIndex> witnesses;
  };
  PerEligibility<std::vector<Fit>> groups_;
};

// Issue 26: nodes known to have no room for one copy of a request. EarliestPlacement asks "does a
// copy of request r (kind k, tenant x) fit on node n over [t, t + d)?" of the same nodes in search
// after search of a request (t: the search's start, the NotBeforeMemo's bound, or a grid time at
// which one of the node's blocks ends), nearly always with the answer no; TryStartNow asks it at
// now of the nodes with a block ahead. A no is kept as the span the profile named for it
// (AvailabilityProfile::Copies' `blocked`: no instant of it has room, so no interval meeting it
// has) with the
// node's profile version (AvailabilityProfile::NodeVersion): an Add or Remove on the node, the
// only changes to its answer, makes it unknown again, and it answers every [t, t + d) that meets
// the span, whatever the search's start or the duration (ninth pass; before, a no answered only
// its own start and durations at least as long, and a search from another start forgot it).
// One span per node and request: the latest no replaces it.
class NoRoomMemo {
 public:
  // Selects the request's set.
  void Begin(const Resources& request, WorkloadKind kind, int16_t tenant, size_t nodes) {
    const int32_t shape = shapes_.Intern(request);
    auto [it, added] = index_.try_emplace(std::make_tuple(shape, kind, tenant), static_cast<int32_t>(sets_.size()));
    if (added) {
      if ((sets_.size() + 1) * nodes > kMaxEntries) {  // a memo: forgetting costs only time
        index_.erase(it);
        current_ = nullptr;
        return;
      }
      sets_.emplace_back();
    }
    current_ = &sets_[static_cast<size_t>(it->second)];
    if (current_->size() != nodes) current_->assign(nodes, Entry{});
  }
  // True when node n, at this node version, is known to have no room at an instant in
  // [t, t + duration).
  bool KnownNoRoom(NodeIndex n, Time t, Duration duration, uint32_t node_version) const {
    if (current_ == nullptr) return false;
    const Entry& e = (*current_)[static_cast<size_t>(n)];
    return e.version == node_version && t < e.span.to && (e.span.from <= t || e.span.from - t < duration);
  }
  // Node n, at this node version, has no room at any instant of `blocked` (Copies' answer with
  // its 0; from = kForever: none known, nothing kept).
  void NoRoomAt(NodeIndex n, const NoRoomSpan& blocked, uint32_t node_version) {
    if (current_ == nullptr || blocked.from >= kForever) return;
    (*current_)[static_cast<size_t>(n)] = Entry{blocked, node_version};
  }

 private:
  static constexpr size_t kMaxEntries = size_t{1} << 21;  // 48 MB of entries at most
  struct Entry {
    NoRoomSpan span{0, 0};  // empty: none
    uint32_t version = 0;
  };
  ResourcesTable shapes_;
  absl::flat_hash_map<std::tuple<int32_t, WorkloadKind, int16_t>, int32_t> index_;
  std::deque<std::vector<Entry>> sets_;  // stable while current_ points in
  std::vector<Entry>* current_ = nullptr;
};

}  // namespace onequeue::queue::internal

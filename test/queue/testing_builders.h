#pragma once
// Small builders and an independent plan checker for the queue tests. The checker does not use
// AvailabilityProfile: it replays the plan in time with its own sweep, so a bug in the profile
// cannot hide itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "queue/eligibility.h"
#include "queue/model.h"
#include "queue/plan.h"
#include "queue/planner.h"
#include "queue/profile.h"

namespace onequeue::queue::testing {

inline Resources Cpu(int64_t millis, int64_t memory = 0, int64_t gpus = 0) {
  Resources r;
  r[kCpu] = millis;
  r[kMemory] = memory;
  r[kFirstExtended] = gpus;
  return r;
}

inline Node MakeNode(std::string name, int64_t cpu_millis, int64_t memory = 1 << 30,
                     int64_t gpus = 0, std::map<std::string, std::string> labels = {}) {
  Node n;
  n.name = std::move(name);
  n.allocatable = Cpu(cpu_millis, memory, gpus);
  n.allocatable[kPods] = 110;
  n.labels = std::move(labels);
  return n;
}

struct PendingBuilder {
  PendingWorkload w;
  PendingBuilder(std::string id, int64_t cpu_millis, int32_t members = 1) {
    w.id = std::move(id);
    w.members = members;
    w.members_present = members;
    w.per_member = Cpu(cpu_millis);
    w.per_member[kPods] = 1;
    w.time_limit = 100;
  }
  PendingBuilder& Limit(std::optional<Duration> d) { w.time_limit = d; return *this; }
  PendingBuilder& Submit(Time t) { w.submit_time = t; return *this; }
  PendingBuilder& Qos(std::string q) { w.qos = std::move(q); return *this; }
  PendingBuilder& Kind(WorkloadKind k) {
    w.kind = k;
    if (k == WorkloadKind::kSlurmJob) w.per_member[kPods] = 0;
    return *this;
  }
  PendingBuilder& Gpus(int64_t g) { w.per_member[kFirstExtended] = g; return *this; }
  PendingBuilder& Memory(int64_t m) { w.per_member[kMemory] = m; return *this; }
  PendingBuilder& Pack() { w.pack_topology = true; return *this; }
  PendingBuilder& Selector(std::string k, std::string v) {
    w.eligibility.node_selector[std::move(k)] = std::move(v);
    return *this;
  }
  PendingBuilder& Partition(std::vector<std::string> nodes) {
    w.eligibility.allowed_nodes = std::move(nodes);
    return *this;
  }
  operator PendingWorkload() const { return w; }  // NOLINT: builder
};

inline RunningWorkload MakeRunning(std::string id, NodeIndex node, Resources used, Time start,
                                   std::optional<Time> end, double priority = 0) {
  RunningWorkload r;
  r.id = std::move(id);
  r.allocations = {Allocation{node, used}};
  r.start_time = start;
  r.expected_end = end;
  r.priority = priority;
  return r;
}

// A queue config where priority is decided by submit time alone (age dominates, no other
// weight), so scenario tests read in submit order.
inline QueueConfig SubmitOrderConfig() {
  QueueConfig c;
  c.weights = PriorityWeights{.age = 1, .fair_share = 0, .job_size = 0, .partition = 0, .qos = 0};
  c.max_age = 1'000'000'000;
  c.resolution = 1;
  c.window = 100'000;
  return c;
}

inline const StartDecision* FindStart(const Plan& p, const std::string& id) {
  for (const auto& s : p.starts) if (s.workload == id) return &s;
  return nullptr;
}
inline const ReserveDecision* FindReservation(const Plan& p, const std::string& id) {
  for (const auto& r : p.reservations) if (r.workload == id) return &r;
  return nullptr;
}
inline const WaitingStatus* FindWaiting(const Plan& p, const std::string& id) {
  for (const auto& w : p.waiting) if (w.workload == id) return &w;
  return nullptr;
}
inline std::vector<std::string> StartedIds(const Plan& p) {
  std::vector<std::string> ids;
  for (const auto& s : p.starts) ids.push_back(s.workload);
  return ids;
}

// Replays the plan in time and checks the invariants every policy must keep:
//  - every start and reservation places all members (gangs never partial) on eligible nodes;
//  - per node and per resource, running + started + reserved never exceed allocatable at any
//    moment (so no backfilled start delays a reservation: the reservation's capacity is there);
//  - pods and Slurm jobs never overlap on a node unless shared_nodes;
//  - no workload is both started and reserved, and nothing with an admission error, held or an
//    incomplete gang starts.
inline void CheckPlanInvariants(const Snapshot& snap, const QueueConfig& config, const Plan& plan) {
  struct Interval {
    Time start, end;
    Resources used;
    WorkloadKind kind;
    std::string who;
  };
  std::vector<std::vector<Interval>> per_node(snap.nodes.size());
  for (const RunningWorkload& r : snap.running) {
    Time end = r.expected_end.has_value() ? std::max(*r.expected_end, plan.now + config.resolution)
                                          : kForever;
    for (const Allocation& a : r.allocations) {
      per_node[a.node].push_back({std::min(r.start_time, plan.now), end, a.used, r.kind, r.id});
    }
  }
  std::map<std::string, const PendingWorkload*> pending;
  for (const PendingWorkload& w : snap.pending) pending[w.id] = &w;
  std::map<std::string, double> priority;
  for (size_t i = 0; i < plan.order.size(); ++i) priority[plan.IdAt(i)] = plan.PriorityAt(i).total;
  EligibilityChecker checker(snap, {});
  auto place = [&](const std::string& id, const MemberNodes& nodes, Time start) {
    ASSERT_TRUE(pending.count(id)) << id;
    const PendingWorkload& w = *pending[id];
    ASSERT_EQ(static_cast<int32_t>(nodes.size()), std::max(1, w.members)) << id << " partial";
    EXPECT_EQ(w.admission_error, AdmissionError::kNone) << id;
    EXPECT_FALSE(w.held) << id;
    EXPECT_GE(w.members_present, w.members) << id;
    Time end = SaturatingAdd(start, w.time_limit.has_value() ? std::max<Duration>(1, *w.time_limit)
                                                            : kForever);
    for (NodeIndex n : nodes) {
      ASSERT_GE(n, 0);
      ASSERT_LT(n, static_cast<NodeIndex>(snap.nodes.size()));
      const Node& node = snap.nodes[n];
      EXPECT_TRUE(node.schedulable) << id;
      EXPECT_TRUE(MatchesSelectorAndAffinity(node, w.eligibility)) << id << " on " << node.name;
      EXPECT_TRUE(ToleratesTaints(node, w.eligibility.tolerations)) << id << " on " << node.name;
      if (w.eligibility.allowed_nodes.has_value()) {
        const auto& a = *w.eligibility.allowed_nodes;
        EXPECT_NE(std::find(a.begin(), a.end(), node.name), a.end()) << id << " on " << node.name;
      }
      if (node.owner.kind == OwnerKind::kReserved && node.owner.reserved_for != id) {
        auto holder = priority.find(node.owner.reserved_for);
        ASSERT_NE(holder, priority.end()) << id << " used a node reserved for an unknown workload";
        EXPECT_GT(priority[id], holder->second) << id << " used " << node.name;
      }
      per_node[n].push_back({start, end, w.per_member, w.kind, id});
    }
  };
  std::map<std::string, int> decided;
  for (const StartDecision& s : plan.starts) {
    place(s.workload, s.member_nodes, plan.now);
    ++decided[s.workload];
  }
  for (const ReserveDecision& r : plan.reservations) {
    EXPECT_GE(r.start, plan.now);
    EXPECT_LE(r.start, plan.now + config.window);
    place(r.workload, r.member_nodes, r.start);
    ++decided[r.workload];
  }
  for (const auto& [id, count] : decided) EXPECT_EQ(count, 1) << id << " decided twice";

  for (size_t n = 0; n < per_node.size(); ++n) {
    const auto& iv = per_node[n];
    for (const Interval& at : iv) {
      Resources used;
      for (const Interval& other : iv) {
        if (other.start <= at.start && at.start < other.end) {
          used += other.used;
          if (!config.shared_nodes) {
            EXPECT_EQ(other.kind, at.kind)
                << "pods and Slurm jobs overlap on " << snap.nodes[n].name << ": " << other.who
                << " and " << at.who;
          }
        }
      }
      ASSERT_TRUE(snap.nodes[n].allocatable.Covers(used))
          << "capacity exceeded on " << snap.nodes[n].name << " at t=" << at.start << " (" << at.who
          << " starts)";
    }
  }
  // Every pending workload is accounted for exactly once: started or waiting.
  EXPECT_EQ(plan.starts.size() + plan.waiting.size(), snap.pending.size());
}

}  // namespace onequeue::queue::testing

#pragma once
// Small builders and an independent plan checker for the queue tests. The checker does not use
// AvailabilityProfile: it replays the plan in time with its own sweep, so a bug in the profile
// cannot hide itself.
#include <cstdlib>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

// Everything a plan decides, as text: starts, reservations and waiting statuses in order (and,
// unless asked not to, which starts were backfilled and the ranking order), so two plans compare
// with one ASSERT_EQ that prints the difference.
inline std::string DescribePlan(const Plan& p, bool with_backfill_and_order = true) {
  std::ostringstream os;
  for (const StartDecision& s : p.starts) {
    os << "start " << s.workload << (with_backfill_and_order && s.backfilled ? " backfilled" : "") << " on";
    for (NodeIndex n : s.member_nodes) os << " " << n;
    os << "\n";
  }
  for (const ReserveDecision& r : p.reservations) {
    os << "reserve " << r.workload << " at " << r.start << " on";
    for (NodeIndex n : r.member_nodes) os << " " << n;
    os << "\n";
  }
  for (const WaitingStatus& w : p.waiting) {
    os << "wait " << w.workload << " " << WaitReasonName(w.reason) << " #" << w.queue_position << " "
       << (w.estimated_start ? std::to_string(*w.estimated_start) : "-") << " " << w.Message() << "\n";
  }
  if (with_backfill_and_order) {
    for (int32_t i : p.order) os << i << " ";
  }
  return os.str();
}

// What each node has free now: allocatable minus every running workload's allocations there.
inline std::vector<Resources> FreeNow(const Snapshot& s) {
  std::vector<Resources> free;
  for (const Node& n : s.nodes) free.push_back(n.allocatable);
  for (const RunningWorkload& r : s.running) {
    for (const Allocation& a : r.allocations) free[a.node] -= a.used;
  }
  return free;
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

// ---------------------------------------------------------------------------------------------
// The plan checker. Independent of the planner: its own label, affinity and taint matching, its
// own priority factors and queue order, its own sweep of capacity in time (no
// AvailabilityProfile, no EligibilityChecker), so a bug in any of them cannot hide itself.
// ---------------------------------------------------------------------------------------------
namespace checker {

// nodeSelector and required node affinity, as Kubernetes defines them.
inline bool NodeMatches(const Node& node, const Eligibility& e) {
  for (const auto& [key, value] : e.node_selector) {
    auto it = node.labels.find(key);
    if (it == node.labels.end() || it->second != value) return false;
  }
  for (const LabelRequirement& r : e.required_affinity) {
    auto it = node.labels.find(r.key);
    const bool present = it != node.labels.end();
    bool listed = false;
    for (const std::string& v : r.values) listed = listed || (present && it->second == v);
    bool ok = false;
    switch (r.op) {
      case LabelRequirement::Operator::kIn: ok = listed; break;
      case LabelRequirement::Operator::kNotIn: ok = !listed; break;  // absent label: matches
      case LabelRequirement::Operator::kExists: ok = present; break;
      case LabelRequirement::Operator::kDoesNotExist: ok = !present; break;
      case LabelRequirement::Operator::kGt:
      case LabelRequirement::Operator::kLt: {
        // Both sides must be integers (Kubernetes); anything else matches nothing.
        char* end = nullptr;
        ok = present && r.values.size() == 1;
        const long long label = ok ? std::strtoll(it->second.c_str(), &end, 10) : 0;
        ok = ok && !it->second.empty() && *end == '\0';
        const long long bound = ok ? std::strtoll(r.values[0].c_str(), &end, 10) : 0;
        ok = ok && !r.values[0].empty() && *end == '\0';
        ok = ok && (r.op == LabelRequirement::Operator::kGt ? label > bound : label < bound);
        break;
      }
    }
    if (!ok) return false;
  }
  if (e.node_affinity_terms.empty()) return true;
  for (const NodeSelectorTerm& t : e.node_affinity_terms) {
    if (t.match_expressions.empty() && t.match_fields.empty()) continue;  // matches nothing
    Eligibility one;
    one.required_affinity = t.match_expressions;
    bool fields = true;
    for (const LabelRequirement& f : t.match_fields) {
      Node as_labels;
      if (f.key == "metadata.name") as_labels.labels[f.key] = node.name;
      Eligibility field;
      field.required_affinity = {f};
      fields = fields && NodeMatches(as_labels, field);
    }
    if (fields && NodeMatches(node, one)) return true;
  }
  return false;
}

// Every NoSchedule / NoExecute taint tolerated (PreferNoSchedule never excludes a node). An
// empty key needs operator Exists and then tolerates every taint (of the effect, if given).
inline bool TaintsTolerated(const Node& node, const std::vector<Toleration>& tolerations) {
  for (const Taint& taint : node.taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    bool tolerated = false;
    for (const Toleration& t : tolerations) {
      if (t.effect.has_value() && *t.effect != taint.effect) continue;
      if (t.key.empty()) {
        tolerated = tolerated || t.op == Toleration::Operator::kExists;
      } else if (t.key == taint.key) {
        tolerated = tolerated || t.op == Toleration::Operator::kExists || t.value == taint.value;
      }
    }
    if (!tolerated) return false;
  }
  return true;
}

inline bool StaticallyEligible(const Node& node, const PendingWorkload& w) {
  if (!node.schedulable || !NodeMatches(node, w.eligibility) ||
      !TaintsTolerated(node, w.eligibility.tolerations)) {
    return false;
  }
  if (!w.eligibility.allowed_nodes.has_value()) return true;
  for (const std::string& name : *w.eligibility.allowed_nodes) {
    if (name == node.name) return true;
  }
  return false;
}

inline Duration RunTime(const PendingWorkload& w) {
  return w.time_limit.has_value() ? std::max<Duration>(1, *w.time_limit) : kForever;
}

}  // namespace checker

// Checks the plan of one cycle made WITHOUT promises (PlanCycle(snapshot, now)):
//  - every pending workload is accounted for exactly once, by id: started or waiting; a
//    reservation's holder waits with has_reservation, a preemptor waits kPreempting; nothing
//    else appears;
//  - the priority factors the checker can compute (age, job size, QOS, partition) are the
//    plan's, every total is the weighted sum of its factors, and the queue order is the order
//    of those totals (then submit time, then id), sorted here;
//  - every start and reservation places all members (gangs never partial) on nodes the workload
//    may use (its own matching; a node reserved(W) only for W or a higher priority);
//  - per node and per resource, running + started + reserved never exceed allocatable at any
//    moment (so no backfilled start delays a reservation); pods and Slurm jobs never overlap on a
//    node unless shared_nodes or the node's own sharing is kShared; on a same-tenant node
//    (Node::same_tenant) work of two tenants never overlaps;
//  - no workload is decided twice, and nothing with an admission error, held or an incomplete
//    gang starts;
//  - backfill modes (in queue order, not shortest-first): whatever fits now starts. A placeable workload that waits does not fit now
//    beside what the workloads ahead of it in the queue were given (starts, reservations,
//    preemption claims): otherwise the plan left it waiting for nothing.
inline void CheckPlanInvariants(const Snapshot& snap, const QueueConfig& config, const Plan& plan) {
  struct Interval {
    Time start, end;
    Resources used;
    WorkloadKind kind;
    std::string who;
    std::string tenant = "";  // issue 25: work of two tenants never overlaps on a same-tenant node
  };
  const size_t pending_count = snap.pending.size();
  std::map<std::string, size_t> index_of;
  for (size_t i = 0; i < pending_count; ++i) {
    EXPECT_TRUE(index_of.emplace(snap.pending[i].id, i).second) << "duplicate pending id " << snap.pending[i].id;
  }

  // 1. Priorities and queue order.
  ASSERT_EQ(plan.priorities.size(), pending_count);
  ASSERT_EQ(plan.order.size(), pending_count);
  Resources pool;
  for (const Node& n : snap.nodes) pool += n.allocatable;
  int64_t max_qos = 0;
  for (const QosPolicy& q : config.qos) max_qos = std::max(max_qos, q.priority);
  int64_t max_tier = 0;
  for (const Partition& p : config.partitions) max_tier = std::max(max_tier, p.tier);
  auto clamp01 = [](double x) { return std::min(1.0, std::max(0.0, x)); };
  auto near = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); };
  const PriorityWeights& wt = config.weights;
  for (size_t i = 0; i < pending_count; ++i) {
    const PendingWorkload& w = snap.pending[i];
    const PriorityBreakdown& b = plan.priorities[i];
    const double age = config.max_age > 0 ? clamp01(static_cast<double>(plan.now - w.submit_time) /
                                                    static_cast<double>(config.max_age))
                                          : 0.0;
    double size = 0;
    for (int r = 0; r < kMaxResourceKinds; ++r) {
      if (r == kPods || pool[r] <= 0) continue;
      size = std::max(size, static_cast<double>(w.per_member[r]) * std::max(1, w.members) / static_cast<double>(pool[r]));
    }
    double qos = 0;
    for (const QosPolicy& q : config.qos) {
      if (q.name == w.qos && !w.qos.empty() && max_qos > 0) qos = clamp01(static_cast<double>(q.priority) / max_qos);
    }
    if (w.qos.empty() && w.priority_class_value.has_value() && config.priority_class_max > 0) {
      qos = clamp01(static_cast<double>(*w.priority_class_value) / config.priority_class_max);
    }
    double partition = 0;
    for (const Partition& p : config.partitions) {
      if (p.name == w.partition && max_tier > 0) partition = clamp01(static_cast<double>(p.tier) / max_tier);
    }
    EXPECT_TRUE(near(b.age, age)) << w.id << " age " << b.age << " != " << age;
    EXPECT_TRUE(near(b.job_size, clamp01(size))) << w.id << " size " << b.job_size << " != " << size;
    EXPECT_TRUE(near(b.qos, qos)) << w.id << " qos " << b.qos << " != " << qos;
    EXPECT_TRUE(near(b.partition, partition)) << w.id << " partition " << b.partition << " != " << partition;
    EXPECT_GE(b.fair_share, 0.0) << w.id;
    EXPECT_LE(b.fair_share, 1.0) << w.id;
    const double sum = wt.age * b.age + wt.fair_share * b.fair_share + wt.job_size * b.job_size +
                       wt.partition * b.partition + wt.qos * b.qos;
    EXPECT_TRUE(near(b.total, sum)) << w.id << " total " << b.total << " != " << sum;
  }
  std::vector<size_t> expected_order(pending_count);
  for (size_t i = 0; i < pending_count; ++i) expected_order[i] = i;
  std::sort(expected_order.begin(), expected_order.end(), [&](size_t a, size_t b) {
    const PendingWorkload& x = snap.pending[a];
    const PendingWorkload& y = snap.pending[b];
    const double px = plan.priorities[a].total, py = plan.priorities[b].total;
    if (px != py) return px > py;
    if (x.submit_time != y.submit_time) return x.submit_time < y.submit_time;
    return x.id < y.id;
  });
  std::vector<size_t> position(pending_count);  // 0-based place in the queue
  for (size_t i = 0; i < pending_count; ++i) {
    EXPECT_EQ(static_cast<size_t>(plan.order[i]), expected_order[i])
        << "queue position " << i + 1 << ": the plan has " << snap.pending[plan.order[i]].id << ", the checker "
        << snap.pending[expected_order[i]].id;
    position[expected_order[i]] = i;
  }
  auto priority_of = [&](const std::string& id) -> double {
    auto it = index_of.find(id);
    return it == index_of.end() ? std::numeric_limits<double>::infinity() : plan.priorities[it->second].total;
  };

  // 2. Every pending workload, by id, exactly once.
  std::map<std::string, int> started, waiting, reserved, preempting;
  for (const StartDecision& d : plan.starts) ++started[d.workload];
  std::map<std::string, const WaitingStatus*> wait_of;
  for (const WaitingStatus& w : plan.waiting) {
    ++waiting[std::string(w.workload)];
    wait_of[std::string(w.workload)] = &w;
  }
  for (const ReserveDecision& r : plan.reservations) ++reserved[r.workload];
  for (const PreemptDecision& p : plan.preemptions) ++preempting[p.preemptor];
  for (const PendingWorkload& w : snap.pending) {
    EXPECT_EQ(started[w.id] + waiting[w.id], 1) << w.id << ": started " << started[w.id] << ", waiting " << waiting[w.id];
    EXPECT_LE(reserved[w.id] + preempting[w.id] + started[w.id], 1) << w.id << " decided twice";
    if (reserved[w.id] > 0) {
      EXPECT_TRUE(wait_of.count(w.id) && wait_of[w.id]->has_reservation) << w.id << " reserved but not waiting with it";
    }
    if (preempting[w.id] > 0) {
      EXPECT_TRUE(wait_of.count(w.id) && wait_of[w.id]->reason == WaitReason::kPreempting) << w.id;
    }
    if (w.not_before > plan.now) {  // issue 29: nothing before its time, and nothing taken for it now
      EXPECT_EQ(started[w.id] + preempting[w.id], 0) << w.id << " started or preempting before its not_before";
    }
  }
  for (const ReserveDecision& r : plan.reservations) {
    auto it = index_of.find(r.workload);
    if (it != index_of.end()) {
      EXPECT_GE(r.start, snap.pending[it->second].not_before) << r.workload << " reserved before its not_before";
    }
  }
  for (const auto& m : {started, waiting, reserved, preempting}) {
    for (const auto& [id, count] : m) EXPECT_TRUE(index_of.count(id)) << id << " is not a pending workload";
  }

  // 3. Placements: whole, on nodes the workload may use.
  std::vector<std::vector<Interval>> per_node(snap.nodes.size());
  for (const RunningWorkload& r : snap.running) {
    Time end = kForever;
    if (r.expected_end.has_value()) end = *r.expected_end > plan.now ? *r.expected_end : plan.now + config.resolution;
    for (const Allocation& a : r.allocations) {
      per_node[a.node].push_back({std::min(r.start_time, plan.now), end, a.used, r.kind, r.id, r.tenant});
    }
  }
  auto may_use = [&](NodeIndex n, const PendingWorkload& w) {
    const Node& node = snap.nodes[n];
    if (!checker::StaticallyEligible(node, w)) return false;
    if (node.owner.kind != OwnerKind::kReserved || node.owner.reserved_for == w.id) return true;
    return priority_of(w.id) > priority_of(node.owner.reserved_for);
  };
  auto place = [&](const std::string& id, const MemberNodes& nodes, Time start) {
    ASSERT_TRUE(index_of.count(id)) << id;
    const PendingWorkload& w = snap.pending[index_of[id]];
    ASSERT_EQ(static_cast<int32_t>(nodes.size()), std::max(1, w.members)) << id << " partial";
    EXPECT_EQ(w.admission_error, AdmissionError::kNone) << id;
    EXPECT_FALSE(w.held) << id;
    EXPECT_GE(w.members_present, w.members) << id;
    const Time end = SaturatingAdd(start, checker::RunTime(w));
    for (NodeIndex n : nodes) {
      ASSERT_GE(n, 0);
      ASSERT_LT(n, static_cast<NodeIndex>(snap.nodes.size()));
      EXPECT_TRUE(may_use(n, w)) << id << " may not use " << snap.nodes[n].name;
      per_node[n].push_back({start, end, w.per_member, w.kind, id, w.tenant});
    }
  };
  for (const StartDecision& s : plan.starts) place(s.workload, s.member_nodes, plan.now);
  for (const ReserveDecision& r : plan.reservations) {
    EXPECT_GE(r.start, plan.now);
    EXPECT_LE(r.start, plan.now + config.window);
    place(r.workload, r.member_nodes, r.start);
  }

  // 4. Capacity in time.
  for (size_t n = 0; n < per_node.size(); ++n) {
    const auto& iv = per_node[n];
    for (const Interval& at : iv) {
      Resources used;
      for (const Interval& other : iv) {
        if (other.start <= at.start && at.start < other.end) {
          used += other.used;
          if (!config.shared_nodes && snap.nodes[n].sharing != NodeSharing::kShared) {
            EXPECT_EQ(other.kind, at.kind)
                << "pods and Slurm jobs overlap on " << snap.nodes[n].name << ": " << other.who
                << " and " << at.who;
          }
          if (snap.nodes[n].same_tenant) {
            EXPECT_EQ(other.tenant, at.tenant) << "two tenants overlap on same-tenant node " << snap.nodes[n].name
                                               << ": " << other.who << " and " << at.who;
          }
        }
      }
      ASSERT_TRUE(snap.nodes[n].allocatable.Covers(used))
          << "capacity exceeded on " << snap.nodes[n].name << " at t=" << at.start << " (" << at.who
          << " starts)";
    }
  }

  // 5. Backfill modes: whatever fits now starts. (Not with backfill_shortest_first: there the
  // backfill candidates are visited shortest first, not in queue order, so "ahead of it" is not
  // the queue position.)
  if (config.backfill == BackfillMode::kNone || config.backfill_shortest_first) return;
  std::map<std::string, std::vector<std::pair<NodeIndex, Interval>>> given;  // workload -> its blocks
  std::map<std::string, std::vector<NodeIndex>> claims;                      // preemptor -> nodes
  auto record = [&](const std::string& id, const MemberNodes& nodes, Time start) {
    const PendingWorkload& w = snap.pending[index_of[id]];
    for (NodeIndex n : nodes) {
      given[id].push_back(
          {n, Interval{start, SaturatingAdd(start, checker::RunTime(w)), w.per_member, w.kind, id, w.tenant}});
    }
  };
  for (const StartDecision& s : plan.starts) record(s.workload, s.member_nodes, plan.now);
  for (const ReserveDecision& r : plan.reservations) record(r.workload, r.member_nodes, r.start);
  for (const PreemptDecision& p : plan.preemptions) claims[p.preemptor] = p.member_nodes;
  for (const WaitingStatus& ws : plan.waiting) {
    const std::string id(ws.workload);
    const PendingWorkload& w = snap.pending[index_of[id]];
    if (w.admission_error != AdmissionError::kNone || w.held || w.members_present < w.members) continue;
    if (w.not_before > plan.now) continue;  // issue 29: may not start now, whatever fits
    bool qos_known = w.qos.empty() || config.qos.empty();
    for (const QosPolicy& q : config.qos) qos_known = qos_known || q.name == w.qos;
    if (!qos_known) continue;
    // What the workloads ahead of it hold, node by node, from now to its end.
    const Time now = plan.now;
    const Time end = SaturatingAdd(now, checker::RunTime(w));
    std::vector<std::vector<Interval>> held(snap.nodes.size());
    for (size_t n = 0; n < per_node.size(); ++n) {
      for (const Interval& i : per_node[n]) {
        if (!index_of.count(i.who)) held[n].push_back(i);  // running
      }
    }
    std::vector<char> claimed(snap.nodes.size(), 0);
    for (const auto& [other, blocks] : given) {
      if (position[index_of[other]] >= position[index_of[id]]) continue;
      for (const auto& [n, i] : blocks) held[n].push_back(i);
    }
    for (const auto& [other, nodes] : claims) {
      if (position[index_of[other]] >= position[index_of[id]]) continue;
      for (NodeIndex n : nodes) claimed[n] = 1;
    }
    int64_t copies = 0;
    const int64_t members = std::max(1, w.members);
    for (NodeIndex n = 0; n < static_cast<NodeIndex>(snap.nodes.size()) && copies < members; ++n) {
      if (claimed[n] || !may_use(n, w)) continue;
      // The tightest moment in [now, end): now, or when a block that overlaps the span starts.
      std::vector<Time> moments = {now};
      bool other_world = false, other_tenant = false;
      for (const Interval& i : held[n]) {
        if (i.start < end && i.end > now) {
          if (i.start > now) moments.push_back(i.start);
          other_world = other_world || i.kind != w.kind;
          other_tenant = other_tenant || i.tenant != w.tenant;
        }
      }
      if (other_world && !config.shared_nodes && snap.nodes[n].sharing != NodeSharing::kShared) continue;
      if (other_tenant && snap.nodes[n].same_tenant) continue;
      int64_t fit = members;
      for (Time t : moments) {
        Resources free = snap.nodes[n].allocatable;
        for (const Interval& i : held[n]) {
          if (i.start <= t && t < i.end) free -= i.used;
        }
        for (int r = 0; r < kMaxResourceKinds; ++r) {
          if (w.per_member[r] <= 0) continue;
          fit = std::min(fit, std::max<int64_t>(0, free[r]) / w.per_member[r]);
        }
      }
      copies += fit;
    }
    EXPECT_LT(copies, members) << id << " waits (" << WaitReasonName(ws.reason) << ": " << ws.Message()
                               << ") although it fits now beside everything ahead of it";
  }
}

}  // namespace onequeue::queue::testing

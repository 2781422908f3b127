#include "scheduler/node_split.h"
#include "scheduler/grpc_service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"
#include "onequeue/v1/queue.grpc.pb.h"
#include "onequeue/version.h"
#include "queue/eligibility.h"
#include "scheduler/slurm_world.h"

namespace onequeue::scheduler {
namespace {

constexpr const char* kWorldKubernetes = "kubernetes";
constexpr const char* kWorldSlurm = "slurm";
constexpr int kMaxAhead = 20;

std::string WorldOf(std::string_view id) { return SlurmJobOf(id) ? kWorldSlurm : kWorldKubernetes; }

// "2", "500m": CPUs as Kubernetes writes them.
std::string Cpus(int64_t millis) {
  if (millis % 1000 == 0) return absl::StrCat(millis / 1000);
  return absl::StrCat(millis, "m");
}

std::string Amount(const queue::ResourceNames& names, int kind, int64_t v) {
  if (kind == queue::kCpu) return Cpus(v);
  if (kind == queue::kMemory) {
    if (v % (1LL << 30) == 0) return absl::StrCat(v >> 30, "Gi");
    if (v % (1LL << 20) == 0) return absl::StrCat(v >> 20, "Mi");
  }
  return absl::StrCat(v);
}


// Name and namespace from a pod workload id: "ns/pod" or "ns/group/name".
void SplitPodId(const std::string& id, std::string* ns, std::string* name) {
  const size_t slash = id.find('/');
  *ns = id.substr(0, slash);
  std::string rest = slash == std::string::npos ? "" : id.substr(slash + 1);
  if (absl::StartsWith(rest, "group/")) rest = rest.substr(6);
  else if (*ns == kSlurmPodNamespace && absl::StartsWith(rest, "pod/")) rest = rest.substr(4);  // "slurm/pod/<name>"
  *name = rest;
}

int64_t UnixSeconds(absl::Time t) { return t == absl::InfinitePast() ? 0 : absl::ToUnixSeconds(t); }

// Index of each pending workload's waiting status.
absl::flat_hash_map<std::string_view, const queue::WaitingStatus*> WaitingById(const queue::Plan& plan) {
  absl::flat_hash_map<std::string_view, const queue::WaitingStatus*> out;
  for (const auto& w : plan.waiting) out[w.workload] = &w;
  return out;
}

// What a node holds now: allocatable minus what runs there.
std::vector<queue::Resources> UsedPerNode(const queue::Snapshot& s) {
  std::vector<queue::Resources> used(s.nodes.size());
  for (const auto& r : s.running) {
    for (const auto& a : r.allocations) used[a.node] += a.used;
  }
  return used;
}

// The parts of a workload both pending and running share.
void FillCommon(const CycleStatus& st, const std::string& id, v1::Workload* out) {
  out->set_world(WorldOf(id));
  out->set_id(id);
  if (auto job = SlurmJobOf(id)) {
    const slurm::SlurmJob* j = nullptr;
    if (auto p = st.slurm.pending.find(id); p != st.slurm.pending.end()) j = p->second;
    if (auto r = st.slurm.running.find(id); r != st.slurm.running.end()) j = r->second;
    if (j != nullptr) {
      out->set_name(j->name);
      out->set_user(j->user);
      out->set_partition(j->partition);
      out->set_submit_time(UnixSeconds(j->submit_time));
    }
    return;
  }
  std::string ns, name;
  SplitPodId(id, &ns, &name);
  out->set_namespace_(ns);
  out->set_name(name);
  const WorkloadPods* pods = nullptr;
  if (auto p = st.pending_pods.find(id); p != st.pending_pods.end()) pods = &p->second;
  if (auto r = st.running_pods.find(id); r != st.running_pods.end()) pods = &r->second;
  if (pods != nullptr) {
    for (const auto& k : pods->pod_keys) out->add_pods(k);
  }
}

v1::Workload PendingWorkload(const CycleStatus& st, int32_t pending_index, int32_t position,
                             const queue::WaitingStatus* waiting) {
  const queue::Plan& plan = *st.plan;
  const queue::PendingWorkload& w = plan.snapshot->pending[pending_index];
  v1::Workload out;
  FillCommon(st, w.id, &out);
  out.set_account(w.account);
  if (out.partition().empty()) out.set_partition(w.partition);
  out.set_qos(w.qos);
  out.set_position(position);
  out.set_priority(plan.priorities[pending_index].total);
  if (out.submit_time() == 0) out.set_submit_time(w.submit_time);
  out.set_time_limit_seconds(w.time_limit.value_or(0));
  out.set_members(w.members);
  out.set_cpus(Cpus(w.per_member[queue::kCpu]));
  if (waiting == nullptr) {
    // Started by this very cycle: not running yet in the snapshot.
    out.set_state("STARTING");
    for (const auto& s : plan.starts) {
      if (s.workload != w.id) continue;
      std::set<std::string> nodes;
      for (auto n : s.member_nodes) nodes.insert(plan.snapshot->nodes[n].name);
      for (const auto& n : nodes) out.add_nodes(n);
    }
    return out;
  }
  out.set_state("PENDING");
  out.set_reason(queue::WaitReasonName(waiting->reason));
  out.set_message(std::string(waiting->Message()));
  if (waiting->estimated_start) out.set_estimated_start(*waiting->estimated_start);
  // A pod's report is what its users read in kubectl describe (refined by the loop).
  if (auto r = st.reports.find(w.id); r != st.reports.end()) {
    out.set_reason(r->second.reason);
    out.set_message(r->second.message);
    out.set_estimated_start(r->second.estimated_start.value_or(0));
  }
  return out;
}

v1::Workload RunningWorkload(const CycleStatus& st, const queue::RunningWorkload& r) {
  const queue::Snapshot& s = *st.plan->snapshot;
  v1::Workload out;
  FillCommon(st, r.id, &out);
  out.set_account(r.account);
  out.set_qos(r.qos);
  out.set_state("RUNNING");
  out.set_start_time(r.start_time);
  out.set_priority(r.priority);
  if (r.expected_end) out.set_time_limit_seconds(*r.expected_end - r.start_time);
  std::set<std::string> nodes;
  int64_t cpus = 0;
  for (const auto& a : r.allocations) {
    nodes.insert(s.nodes[a.node].name);
    cpus += a.used[queue::kCpu];
  }
  for (const auto& n : nodes) out.add_nodes(n);
  out.set_members(static_cast<int32_t>(std::max<size_t>(1, out.pods_size() > 0 ? out.pods_size() : nodes.size())));
  out.set_cpus(Cpus(out.members() > 0 ? cpus / out.members() : cpus));
  return out;
}

bool Selected(const v1::Workload& w, const std::string& ns, const std::string& user, const std::string& world) {
  if (!world.empty() && w.world() != world) return false;
  if (!ns.empty() && w.namespace_() != ns) return false;
  if (!user.empty() && w.user() != user && w.account() != user && w.namespace_() != user) return false;
  return true;
}

// What `w` lacks on node `n` with `free` left: every resource short, and what runs there.
std::string ShortOf(const queue::Snapshot& s, const queue::PendingWorkload& w, queue::NodeIndex n,
                    const queue::Resources& free) {
  const queue::Node& node = s.nodes[n];
  std::vector<std::string> short_of;
  for (size_t k = 0; k < s.resource_names.names.size() && k < queue::kMaxResourceKinds; ++k) {
    const int kind = static_cast<int>(k);
    if (w.per_member[kind] <= free[kind]) continue;
    short_of.push_back(absl::StrCat(s.resource_names.names[k], ": needs ", Amount(s.resource_names, kind, w.per_member[kind]),
                                    ", ", Amount(s.resource_names, kind, std::max<int64_t>(0, free[kind])), " free of ",
                                    Amount(s.resource_names, kind, node.allocatable[kind])));
  }
  std::vector<std::string> running;
  for (const auto& r : s.running) {
    if (std::any_of(r.allocations.begin(), r.allocations.end(), [n](const queue::Allocation& a) { return a.node == n; }))
      running.push_back(r.id);
  }
  return absl::StrCat("insufficient ", absl::StrJoin(short_of, "; "),
                      running.empty() ? "" : absl::StrCat(" (running: ", absl::StrJoin(running, ", "), ")"));
}

// Why `w` cannot start on node `n` now, or "" when it could (eligible, enough free capacity).
std::string NodeVerdict(const CycleStatus& st, const queue::PendingWorkload& w, double priority,
                        const absl::flat_hash_map<std::string, double>& pending_priority, queue::NodeIndex n,
                        const queue::Resources& used) {
  const queue::Snapshot& s = *st.plan->snapshot;
  const queue::Node& node = s.nodes[n];
  const bool slurm_job = w.kind == queue::WorkloadKind::kSlurmJob;
  if (w.eligibility.allowed_nodes.has_value()) {
    const auto& allowed = *w.eligibility.allowed_nodes;
    if (std::find(allowed.begin(), allowed.end(), node.name) == allowed.end()) {
      // A pod's allowed nodes are its volumes' (volume_placement.h), a Slurm job's its partition's.
      if (!slurm_job) return "its volumes cannot be used here (PersistentVolume node affinity, zone or storage class topology)";
      return absl::StrCat("not a node of partition ", w.partition);
    }
  }
  for (const auto& [key, value] : w.eligibility.node_selector) {
    auto it = node.labels.find(key);
    if (it != node.labels.end() && it->second == value) continue;
    if (key == kLendableLabel) {
      return "cannot be lent to Slurm now (pods used it lately, it is headroom, or its Slurm node is not usable)";
    }
    if (absl::StartsWith(key, kPartitionLabelPrefix)) {
      return absl::StrCat("not in Slurm partition ", key.substr(std::string_view(kPartitionLabelPrefix).size()));
    }
    return it == node.labels.end() ? absl::StrCat("node selector ", key, "=", value, ": the node has no ", key)
                                   : absl::StrCat("node selector ", key, "=", value, ": the node has ", key, "=",
                                                  it->second);
  }
  queue::Eligibility affinity_only;
  affinity_only.required_affinity = w.eligibility.required_affinity;
  affinity_only.node_affinity_terms = w.eligibility.node_affinity_terms;
  if (!queue::MatchesSelectorAndAffinity(node, affinity_only)) return "required node affinity not met";
  for (const auto& taint : node.taints) {
    queue::Node one;
    one.taints = {taint};
    if (!queue::ToleratesTaints(one, w.eligibility.tolerations)) {
      return absl::StrCat("taint ", taint.key, taint.value.empty() ? "" : "=", taint.value, " not tolerated");
    }
  }
  if (!node.schedulable && !node.unavailable.empty()) {  // issue 29: in an active Slurm reservation
    std::vector<std::string> why;
    for (const auto& u : node.unavailable) why.push_back(u.reason);
    return absl::StrCat("unavailable: ", absl::StrJoin(why, "; "));
  }
  if (!node.schedulable) {
    return slurm_job ? "not schedulable (not Ready or cordoned, or its Slurm node is down or drained)"
                     : "not schedulable (not Ready, cordoned, or lent to Slurm while Slurm's state is unknown)";
  }
  if (node.owner.kind == queue::OwnerKind::kReserved && node.owner.reserved_for != w.id) {
    auto holder = pending_priority.find(node.owner.reserved_for);
    if (holder == pending_priority.end() || holder->second >= priority) {
      return absl::StrCat("reserved for ", node.owner.reserved_for, " (a preemption under way)");
    }
  }
  const queue::Resources free = node.allocatable - used;
  if (!free.Covers(w.per_member)) return ShortOf(s, w, n, free);
  return "";  // eligible and it fits (a node Slurm owns is reclaimable, one Kubernetes owns lendable)
}


class QueueServiceImpl final : public onequeue::v1::QueueService::Service {
 public:
  explicit QueueServiceImpl(ServiceInfo info) : info_(std::move(info)) {}

  // The loop's verdict (loop_health.h): NOT_SERVING, with the reason, once it is stuck.
  grpc::Status Health(grpc::ServerContext*, const v1::HealthRequest*, v1::HealthResponse* out) override {
    const HealthVerdict v = info_.health != nullptr ? info_.health->Check() : HealthVerdict{};
    out->set_status(v.serving ? v1::HealthResponse::SERVING : v1::HealthResponse::NOT_SERVING);
    if (!v.serving) out->set_message(v.message);
    return grpc::Status::OK;
  }
  grpc::Status Version(grpc::ServerContext*, const v1::VersionRequest*, v1::VersionResponse* out) override {
    out->set_version(kVersion);
    out->set_kubernetes_server_version(info_.kubernetes_server_version);
    out->set_slurm_api_version(info_.slurm_api_version);
    return grpc::Status::OK;
  }

  grpc::Status ListWorkloads(grpc::ServerContext*, const v1::ListWorkloadsRequest* req,
                             v1::ListWorkloadsResponse* out) override {
    std::shared_ptr<const CycleStatus> st;
    if (grpc::Status s = Latest(&st); !s.ok()) return s;
    const queue::Plan& plan = *st->plan;
    out->mutable_cycle()->set_cycle_time(st->now);
    const auto waiting = WaitingById(plan);
    for (size_t i = 0; i < plan.order.size(); ++i) {
      const int32_t index = plan.order[i];
      auto w = waiting.find(std::string_view(plan.snapshot->pending[index].id));
      v1::Workload wl = PendingWorkload(*st, index, static_cast<int32_t>(i + 1), w == waiting.end() ? nullptr : w->second);
      if (req->pending_only() && wl.state() != "PENDING") continue;
      if (Selected(wl, req->namespace_(), req->user(), req->world())) *out->add_workloads() = std::move(wl);
    }
    if (req->pending_only()) return grpc::Status::OK;
    for (const auto& r : plan.snapshot->running) {
      v1::Workload wl = RunningWorkload(*st, r);
      if (Selected(wl, req->namespace_(), req->user(), req->world())) *out->add_workloads() = std::move(wl);
    }
    return grpc::Status::OK;
  }

  grpc::Status ListNodes(grpc::ServerContext*, const v1::ListNodesRequest*, v1::ListNodesResponse* out) override {
    std::shared_ptr<const CycleStatus> st;
    if (grpc::Status s = Latest(&st); !s.ok()) return s;
    const queue::Snapshot& s = *st->plan->snapshot;
    out->mutable_cycle()->set_cycle_time(st->now);
    const std::vector<queue::Resources> used = UsedPerNode(s);
    std::vector<std::vector<std::string>> running(s.nodes.size());
    for (const auto& r : s.running) {
      std::set<queue::NodeIndex> on;
      for (const auto& a : r.allocations) on.insert(a.node);
      for (auto n : on) running[n].push_back(r.id);
    }
    std::map<std::string, std::string> splits;
    for (const NodeSplit& split : SharedNodeSplits(s, st->slurm)) splits[split.node] = DescribeSplit(split, s.resource_names);
    for (size_t i = 0; i < s.nodes.size(); ++i) {
      const queue::Node& node = s.nodes[i];
      v1::NodeInfo* n = out->add_nodes();
      if (auto split = splits.find(node.name); split != splits.end()) n->set_split(split->second);
      n->set_name(node.name);
      n->set_owner(NodeOwnerColumn(node));
      n->set_reserved_for(node.owner.reserved_for);
      n->set_schedulable(node.schedulable);
      for (size_t k = 0; k < s.resource_names.names.size() && k < queue::kMaxResourceKinds; ++k) {
        v1::ResourceUse* r = n->add_resources();
        r->set_name(s.resource_names.names[k]);
        r->set_allocatable(node.allocatable[static_cast<int>(k)]);
        r->set_used(used[i][static_cast<int>(k)]);
      }
      for (const auto& id : running[i]) n->add_workloads(id);
      const JoinedNode* joined = nullptr;
      if (auto j = st->slurm.nodes.find(node.name); j != st->slurm.nodes.end()) {
        joined = &j->second;
        n->set_slurm_node(joined->slurm_name);
        n->set_slurm_holder(slurm::NodeHolderName(joined->holder.holder));
      }
      auto lendable = node.labels.find(kLendableLabel);
      n->set_lendable(lendable != node.labels.end() && lendable->second == "true");
      n->set_lending(NodeLendingColumn(*st, node, joined));
    }
    return grpc::Status::OK;
  }

  grpc::Status ListPriorities(grpc::ServerContext*, const v1::ListPrioritiesRequest* req,
                              v1::ListPrioritiesResponse* out) override {
    std::shared_ptr<const CycleStatus> st;
    if (grpc::Status s = Latest(&st); !s.ok()) return s;
    const queue::Plan& plan = *st->plan;
    const queue::PriorityWeights& wt = info_.weights;
    out->mutable_cycle()->set_cycle_time(st->now);
    (*out->mutable_weights())["age"] = wt.age;
    (*out->mutable_weights())["fairShare"] = wt.fair_share;
    (*out->mutable_weights())["size"] = wt.job_size;
    (*out->mutable_weights())["partition"] = wt.partition;
    (*out->mutable_weights())["qos"] = wt.qos;
    for (size_t i = 0; i < plan.order.size(); ++i) {
      const queue::PendingWorkload& w = plan.snapshot->pending[plan.order[i]];
      v1::Workload sel;
      FillCommon(*st, w.id, &sel);
      sel.set_account(w.account);
      if (!Selected(sel, req->namespace_(), req->user(), "")) continue;
      const queue::PriorityBreakdown& p = plan.priorities[plan.order[i]];
      v1::PriorityFactors* f = out->add_workloads();
      f->set_world(sel.world());
      f->set_id(w.id);
      f->set_position(static_cast<int32_t>(i + 1));
      f->set_account(w.account);
      f->set_qos(w.qos);
      f->set_age(p.age * wt.age);
      f->set_fair_share(p.fair_share * wt.fair_share);
      f->set_job_size(p.job_size * wt.job_size);
      f->set_partition(p.partition * wt.partition);
      f->set_qos_factor(p.qos * wt.qos);
      f->set_total(p.total);
    }
    double all_usage = 0;
    for (const auto& [account, a] : st->accounts) all_usage += a.usage;
    for (const auto& [account, a] : st->accounts) {
      v1::AccountUsage* u = out->add_accounts();
      u->set_account(account);
      u->set_usage(a.usage);
      u->set_usage_share(all_usage > 0 ? a.usage / all_usage : 0);
      u->set_fair_share(a.fair_share);
    }
    return grpc::Status::OK;
  }

  grpc::Status Explain(grpc::ServerContext*, const v1::ExplainRequest* req, v1::ExplainResponse* out) override {
    std::shared_ptr<const CycleStatus> st;
    if (grpc::Status s = Latest(&st); !s.ok()) return s;
    const queue::Plan& plan = *st->plan;
    const queue::Snapshot& s = *plan.snapshot;
    out->mutable_cycle()->set_cycle_time(st->now);
    const std::string& id = req->workload();
    for (const auto& r : s.running) {
      if (r.id == id) {
        *out->mutable_workload() = RunningWorkload(*st, r);
        return grpc::Status::OK;
      }
    }
    int32_t position = -1;
    for (size_t i = 0; i < plan.order.size(); ++i) {
      if (s.pending[plan.order[i]].id == id) position = static_cast<int32_t>(i);
    }
    if (position < 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat(id, " is neither pending nor running in the last cycle (ids: NAMESPACE/POD, "
                                           "NAMESPACE/group/NAME, slurm/JOBID)"));
    }
    const int32_t index = plan.order[position];
    const auto waiting = WaitingById(plan);
    auto w = waiting.find(std::string_view(s.pending[index].id));
    *out->mutable_workload() = PendingWorkload(*st, index, position + 1, w == waiting.end() ? nullptr : w->second);
    const queue::PendingWorkload& pw = s.pending[index];
    absl::flat_hash_map<std::string, double> pending_priority;
    for (size_t i = 0; i < s.pending.size(); ++i) pending_priority[s.pending[i].id] = plan.priorities[i].total;
    const std::vector<queue::Resources> used = UsedPerNode(s);
    for (size_t n = 0; n < s.nodes.size(); ++n) {
      const std::string why = NodeVerdict(*st, pw, plan.priorities[index].total, pending_priority,
                                          static_cast<queue::NodeIndex>(n), used[n]);
      v1::NodeVerdict* v = out->add_nodes();
      v->set_node(s.nodes[n].name);
      v->set_fits(why.empty());
      v->set_why(why.empty() ? "eligible, enough free capacity now" : why);
    }
    for (const auto& r : plan.reservations) {
      if (r.workload != id) continue;
      std::set<std::string> nodes;
      for (auto n : r.member_nodes) nodes.insert(s.nodes[n].name);
      for (const auto& n : nodes) out->add_reserved_nodes(n);
      out->set_reserved_start(r.start);
    }
    for (const auto& p : plan.preemptions) {
      if (p.preemptor != id) continue;
      for (const auto& v : p.victims) out->add_preempting(v);
    }
    out->set_ahead_total(position);
    for (int32_t i = 0; i < position && i < kMaxAhead; ++i) {
      const int32_t ahead = plan.order[i];
      auto aw = waiting.find(std::string_view(s.pending[ahead].id));
      *out->add_ahead() = PendingWorkload(*st, ahead, i + 1, aw == waiting.end() ? nullptr : aw->second);
    }
    return grpc::Status::OK;
  }

  grpc::Status Hold(grpc::ServerContext* ctx, const v1::HoldRequest* req, v1::AdminResponse* out) override {
    return SetHold(ctx, req->workload(), req->reason().empty() ? "held with oq hold" : req->reason(), true, out);
  }
  grpc::Status Release(grpc::ServerContext* ctx, const v1::ReleaseRequest* req, v1::AdminResponse* out) override {
    return SetHold(ctx, req->workload(), "", false, out);
  }
  grpc::Status DrainNode(grpc::ServerContext* ctx, const v1::DrainNodeRequest* req, v1::AdminResponse* out) override {
    return SetDrained(ctx, req->node(), req->reason(), true, out);
  }
  grpc::Status ResumeNode(grpc::ServerContext* ctx, const v1::ResumeNodeRequest* req, v1::AdminResponse* out) override {
    return SetDrained(ctx, req->node(), "", false, out);
  }

 private:
  static grpc::Status FromAbsl(const absl::Status& s) {
    if (s.ok()) return grpc::Status::OK;
    grpc::StatusCode code = grpc::StatusCode::INTERNAL;
    if (absl::IsNotFound(s)) code = grpc::StatusCode::NOT_FOUND;
    else if (absl::IsUnavailable(s)) code = grpc::StatusCode::UNAVAILABLE;
    else if (absl::IsInvalidArgument(s)) code = grpc::StatusCode::INVALID_ARGUMENT;
    else if (absl::IsPermissionDenied(s)) code = grpc::StatusCode::PERMISSION_DENIED;
    return grpc::Status(code, std::string(s.message()));
  }

  // Admin calls present "authorization: Bearer <token>" with the token in server.adminTokenFile,
  // read on every call so that a rotated Secret takes effect at once.
  grpc::Status Authorize(grpc::ServerContext* ctx) const {
    if (info_.admin == nullptr || info_.admin_token_file.empty()) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "admin calls are disabled: the daemon has no server.adminTokenFile");
    }
    std::ifstream in(info_.admin_token_file);
    std::stringstream text;
    text << in.rdbuf();
    const std::string token(absl::StripAsciiWhitespace(text.str()));
    if (!in || token.empty()) {
      spdlog::warn("admin call refused: cannot read a token from {}", info_.admin_token_file);
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the daemon cannot read its admin token file");
    }
    const auto& md = ctx->client_metadata();
    auto it = md.find("authorization");
    const std::string presented = it == md.end() ? "" : std::string(it->second.data(), it->second.size());
    const std::string expected = "Bearer " + token;
    // Compared in constant time: the time taken says nothing about how much of the token matched.
    unsigned diff = presented.size() != expected.size();
    for (size_t i = 0; i < expected.size(); ++i) diff |= expected[i] ^ (i < presented.size() ? presented[i] : 0);
    if (diff != 0) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          it == md.end() ? "admin calls need a bearer token (oq --token-file FILE)"
                                         : "the bearer token was not accepted");
    }
    return grpc::Status::OK;
  }

  grpc::Status SetHold(grpc::ServerContext* ctx, const std::string& id, const std::string& reason, bool hold,
                       v1::AdminResponse* out) {
    if (grpc::Status s = Authorize(ctx); !s.ok()) return s;
    const char* verb = hold ? "held" : "released";
    if (auto job = SlurmJobOf(id)) {
      if (grpc::Status s = FromAbsl(info_.admin->SetSlurmJobHold(*job, reason, hold)); !s.ok()) return s;
      out->set_message(absl::StrCat("Slurm job ", *job, " ", verb));
      spdlog::info("admin: Slurm job {} {}", *job, verb);
      return grpc::Status::OK;
    }
    std::vector<std::string> pods;
    if (std::shared_ptr<const CycleStatus> st = info_.status ? info_.status->Latest() : nullptr) {
      if (auto p = st->pending_pods.find(id); p != st->pending_pods.end()) pods = p->second.pod_keys;
      if (auto r = st->running_pods.find(id); r != st->running_pods.end()) pods = r->second.pod_keys;
    }
    if (pods.empty()) {
      if (id.find('/') == std::string::npos || absl::StrContains(id, "/group/") ||
          absl::StartsWith(id, absl::StrCat(kSlurmPodNamespace, "/"))) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat(id, " is not a workload of the last cycle"));
      }
      pods.push_back(id);  // a single pod the loop has not seen yet
    }
    for (const auto& pod : pods) {
      if (grpc::Status s = FromAbsl(info_.admin->SetPodHold(pod, reason)); !s.ok()) return s;
    }
    out->set_message(absl::StrCat(id, " ", verb, " (", absl::StrJoin(pods, ", "), ")"));
    spdlog::info("admin: {} {}", id, verb);
    return grpc::Status::OK;
  }

  grpc::Status SetDrained(grpc::ServerContext* ctx, const std::string& node, const std::string& reason, bool drained,
                          v1::AdminResponse* out) {
    if (grpc::Status s = Authorize(ctx); !s.ok()) return s;
    if (grpc::Status s = FromAbsl(info_.admin->SetNodeDrained(node, drained, reason)); !s.ok()) return s;
    out->set_message(absl::StrCat("node ", node, drained ? " drained: nothing new starts there"
                                                         : " resumed: open to new work"));
    spdlog::info("admin: node {} {}", node, drained ? "drained" : "resumed");
    return grpc::Status::OK;
  }

  grpc::Status Latest(std::shared_ptr<const CycleStatus>* out) const {
    if (info_.status != nullptr) *out = info_.status->Latest();
    if (*out == nullptr || (*out)->plan == nullptr) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "no scheduling cycle yet (informers syncing, Kubernetes disabled, or a standby replica)");
    }
    return grpc::Status::OK;
  }

  const ServiceInfo info_;
};

// A PEM file's bytes; what `key` names in the configuration, in the error.
absl::Status ReadPem(const std::string& path, const char* key, std::string* out) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  *out = text.str();
  if (!in || out->find("-----BEGIN ") == std::string::npos) {
    return absl::FailedPreconditionError(absl::StrCat(key, " \"", path, "\": cannot read a PEM file from it"));
  }
  return absl::OkStatus();
}

class GrpcQueueServer final : public QueueServer {
 public:
  GrpcQueueServer(std::unique_ptr<QueueServiceImpl> service, std::unique_ptr<grpc::Server> server, int port)
      : service_(std::move(service)), server_(std::move(server)), port_(port) {}
  ~GrpcQueueServer() override { Shutdown(); }
  int port() const override { return port_; }
  void Wait() override { server_->Wait(); }
  void Shutdown() override { server_->Shutdown(); }

 private:
  // Declared first so it is destroyed last: the server holds a raw pointer to the service.
  std::unique_ptr<QueueServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QueueServer>> StartQueueServer(const std::string& address, ServiceInfo info) {
  const std::string cert_file = info.tls_cert_file, key_file = info.tls_key_file;
  auto service = std::make_unique<QueueServiceImpl>(std::move(info));
  int port = 0;
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (!cert_file.empty() || !key_file.empty()) {
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    absl::Status read = ReadPem(cert_file, "server.tlsCertFile", &pair.cert_chain);
    if (read.ok()) read = ReadPem(key_file, "server.tlsKeyFile", &pair.private_key);
    if (!read.ok()) return read;
    grpc::SslServerCredentialsOptions options;  // no client certificates: admin calls carry a token
    options.pem_key_cert_pairs.push_back(std::move(pair));
    credentials = grpc::SslServerCredentials(options);
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, credentials, &port);
  builder.RegisterService(service.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen for gRPC on ", address));
  }
  return std::make_unique<GrpcQueueServer>(std::move(service), std::move(server), port);
}

}  // namespace onequeue::scheduler

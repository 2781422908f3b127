#include "scheduler/job_claim.h"

#include <algorithm>
#include <array>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "scheduler/scheduling_loop.h"
#include "scheduler/slurm_world.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {

const char* JobClaimStateName(JobClaimState s) {
  switch (s) {
    case JobClaimState::kPlanned: return "Planned";
    case JobClaimState::kClaimed: return "Claimed";
    case JobClaimState::kWaitingForVictims: return "WaitingForVictims";
    case JobClaimState::kStarted: return "Started";
    case JobClaimState::kUndoing: return "Undoing";
    case JobClaimState::kUndone: return "Undone";
  }
  return "?";
}

const char* JobClaimEventName(JobClaimEvent e) {
  switch (e) {
    case JobClaimEvent::kHeld: return "held";
    case JobClaimEvent::kVictimsAsked: return "victims-asked";
    case JobClaimEvent::kStarted: return "started";
    case JobClaimEvent::kUndo: return "undo";
    case JobClaimEvent::kRewritten: return "rewritten";
  }
  return "?";
}

namespace {

struct Transition {
  JobClaimState from;
  JobClaimEvent event;
  JobClaimState to;
};

using S = JobClaimState;
using E = JobClaimEvent;
// The machine, whole.
constexpr std::array<Transition, 7> kTransitions = {{
    {S::kPlanned, E::kHeld, S::kClaimed},
    {S::kClaimed, E::kVictimsAsked, S::kWaitingForVictims},
    {S::kWaitingForVictims, E::kStarted, S::kStarted},
    // Undo: every state before the start, one path.
    {S::kPlanned, E::kUndo, S::kUndoing},
    {S::kClaimed, E::kUndo, S::kUndoing},
    {S::kWaitingForVictims, E::kUndo, S::kUndoing},
    {S::kUndoing, E::kRewritten, S::kUndone},
}};

constexpr char kClaimPrefix[] = "onequeue: Preempting on shared node";
constexpr char kUndonePrefix[] = "onequeue: PreemptionUndone: ";

// "node n1" or "nodes n1,n2".
std::string NodesText(const std::vector<std::string>& nodes) {
  return absl::StrCat(nodes.size() == 1 ? "node " : "nodes ", absl::StrJoin(nodes, ","));
}

bool Pending(const slurm::SlurmView::Jobs& jobs, uint32_t id) {
  auto j = jobs.find(id);
  return j != jobs.end() && j->second.state == slurm::JobState::kPending;
}

}  // namespace

absl::StatusOr<JobClaimState> NextJobClaimState(JobClaimState from, JobClaimEvent event) {
  for (const Transition& t : kTransitions) {
    if (t.from == from && t.event == event) return t.to;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("job claim: ", JobClaimStateName(from), " does not take ", JobClaimEventName(event)));
}

bool JobClaimFinal(JobClaimState s) { return s == JobClaimState::kStarted || s == JobClaimState::kUndone; }

std::string JobClaimComment(const std::vector<std::string>& nodes, const std::vector<std::string>& victims) {
  return absl::StrCat(kClaimPrefix, nodes.size() == 1 ? " " : "s ", absl::StrJoin(nodes, ","), ": ",
                      absl::StrJoin(victims, ","));
}

std::optional<ParsedJobClaim> ParseJobClaim(const std::string& admin_comment) {
  if (!absl::StartsWith(admin_comment, kClaimPrefix)) return std::nullopt;
  std::string rest = admin_comment.substr(sizeof(kClaimPrefix) - 1);
  const bool several = absl::StartsWith(rest, "s ");
  if (!several && !absl::StartsWith(rest, " ")) return std::nullopt;
  rest = rest.substr(several ? 2 : 1);
  const size_t colon = rest.find(": ");
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  ParsedJobClaim c;
  if (several) c.nodes = absl::StrSplit(rest.substr(0, colon), ',', absl::SkipEmpty());
  else c.nodes = {rest.substr(0, colon)};
  if (c.nodes.empty()) return std::nullopt;
  c.victims = absl::StrSplit(rest.substr(colon + 2), ',', absl::SkipEmpty());
  if (c.victims.empty()) return std::nullopt;
  return c;
}

absl::Status JobClaims::Move(JobClaimRecord& r, JobClaimEvent event, queue::Time now) {
  absl::StatusOr<JobClaimState> to = NextJobClaimState(r.state, event);
  if (!to.ok()) {
    spdlog::error("{}: {}", r.workload, std::string(to.status().message()));
    return to.status();
  }
  if (*to != r.state) r.since = now;
  r.state = *to;
  return absl::OkStatus();
}

absl::Status JobClaims::Claim(const std::string& workload, uint32_t job, const std::vector<std::string>& nodes,
                              const std::vector<std::string>& victims, queue::Time now) {
  if (nodes.empty()) return absl::InvalidArgumentError(absl::StrCat(workload, ": a claim without a node"));
  if (victims.empty()) return absl::InvalidArgumentError(absl::StrCat(workload, ": a claim without victims"));
  if (const std::string* why = Refused(workload, now)) return absl::FailedPreconditionError(*why);
  if (records_.count(workload)) return absl::AlreadyExistsError(absl::StrCat(workload, " claims already"));
  for (const auto& [w, r] : records_) {  // an array's tasks share one record: one claim at a time
    if (r.job == job) return absl::AlreadyExistsError(absl::StrCat(w, " claims by job ", job, " already"));
  }
  JobClaimRecord r{workload, job, nodes, victims, JobClaimState::kPlanned, now, ""};
  if (absl::Status s = slurm_->Hold(job, JobClaimComment(nodes, victims)); !s.ok()) {
    return absl::UnavailableError(absl::StrCat("the claim's hold of job ", job, " not written: ", s.message()));
  }
  (void)Move(r, JobClaimEvent::kHeld, now);
  records_[workload] = std::move(r);
  return absl::OkStatus();
}

void JobClaims::Rewrite(JobClaimRecord& r, bool pending, queue::Time now) {
  if (pending) {
    absl::Status s = slurm_->Hold(r.job, absl::StrCat(kUndonePrefix, r.why));
    if (!s.ok() && !absl::IsNotFound(s)) {
      spdlog::warn("{}: the undone claim's hold not written yet: {}", r.workload, std::string(s.message()));
      return;  // kUndoing: written again next cycle
    }
  }
  (void)Move(r, JobClaimEvent::kRewritten, now);
}

void JobClaims::UndoRecord(JobClaimRecord& r, const std::string& why, bool pending, queue::Time now) {
  if (!Move(r, JobClaimEvent::kUndo, now).ok()) return;
  r.why = absl::StrCat("preemption on shared ", NodesText(r.nodes), " undone: ", why);
  spdlog::info("{}: {}", r.workload, r.why);
  Rewrite(r, pending, now);
}

absl::Status JobClaims::VictimsAsked(const std::string& workload, const absl::Status& asked, queue::Time now) {
  auto it = records_.find(workload);
  if (it == records_.end()) return absl::NotFoundError(absl::StrCat(workload, " has no claim"));
  JobClaimRecord& r = it->second;
  if (asked.ok()) return Move(r, JobClaimEvent::kVictimsAsked, now);
  UndoRecord(r, std::string(asked.message()), /*pending=*/true, now);
  refused_[workload] = Refusal{now + options_.refused_retry, r.job, r.why};
  if (JobClaimFinal(r.state)) records_.erase(it);
  return absl::OkStatus();
}

absl::Status JobClaims::Started(const std::string& workload, queue::Time now) {
  auto it = records_.find(workload);
  if (it == records_.end()) return absl::NotFoundError(absl::StrCat(workload, " has no claim"));
  absl::Status s = Move(it->second, JobClaimEvent::kStarted, now);
  if (JobClaimFinal(it->second.state)) records_.erase(it);
  return s;
}

void JobClaims::Advance(const slurm::SlurmView::Jobs& jobs, const std::set<std::string>& shared_nodes,
                        queue::Time now) {
  std::erase_if(refused_, [&](const auto& e) { return now >= e.second.until; });
  for (auto it = records_.begin(); it != records_.end();) {
    JobClaimRecord& r = it->second;
    const bool pending = Pending(jobs, r.job);
    if (r.state == JobClaimState::kUndoing) {
      Rewrite(r, pending, now);
    } else if (!pending) {
      UndoRecord(r, "the job is no longer pending", false, now);
    } else if (auto n = std::find_if(r.nodes.begin(), r.nodes.end(),
                                     [&](const std::string& node) { return !shared_nodes.count(node); });
               n != r.nodes.end()) {
      UndoRecord(r, r.nodes.size() == 1 ? "the node is no longer shared" : absl::StrCat(*n, " is no longer shared"),
                 true, now);
    } else if (r.state == JobClaimState::kWaitingForVictims && now - r.since >= options_.victims_timeout) {
      UndoRecord(r, absl::StrCat("the victims have not left in ", options_.victims_timeout, " s"), true, now);
    }
    if (JobClaimFinal(r.state)) it = records_.erase(it);
    else ++it;
  }
}

void JobClaims::Rebuild(const slurm::SlurmView::Jobs& jobs, queue::Time now) {
  records_.clear();
  for (const auto& [id, job] : jobs) {
    if (job.state != slurm::JobState::kPending || !HeldByOnequeue(job)) continue;
    std::optional<ParsedJobClaim> c = ParseJobClaim(job.admin_comment);
    if (!c) continue;
    std::string workload = SlurmWorkloadId(id);
    if (IsPendingArrayRecord(job)) {  // an array task's claim: the array's lowest pending task
      absl::StatusOr<slurm::ArrayTasks> tasks = slurm::ParseArrayTasks(job.array_tasks);
      if (!tasks.ok() || tasks->ids.empty()) continue;
      workload = ArrayTaskWorkloadId(id, tasks->ids.front());
    }
    records_[workload] = JobClaimRecord{workload, id, c->nodes, c->victims, JobClaimState::kClaimed, now, ""};
  }
}

std::vector<const JobClaimRecord*> JobClaims::ToAskVictims() const {
  std::vector<const JobClaimRecord*> out;
  for (const auto& [w, r] : records_) {
    if (r.state == JobClaimState::kClaimed) out.push_back(&r);
  }
  return out;
}

std::vector<const JobClaimRecord*> JobClaims::ReadyToStart(
    const std::function<bool(const JobClaimRecord&, const std::string& victim)>& holds_room) const {
  std::vector<const JobClaimRecord*> out;
  for (const auto& [w, r] : records_) {
    const auto holds = [&](const std::string& victim) { return holds_room(r, victim); };
    if (r.state == JobClaimState::kWaitingForVictims && std::none_of(r.victims.begin(), r.victims.end(), holds))
      out.push_back(&r);
  }
  return out;
}

std::map<uint32_t, std::vector<std::string>> JobClaims::Holding() const {
  std::map<uint32_t, std::vector<std::string>> out;
  for (const auto& [w, r] : records_) {
    if (r.state == JobClaimState::kPlanned || r.state == JobClaimState::kClaimed ||
        r.state == JobClaimState::kWaitingForVictims) {
      if (!ArrayTaskOf(r.workload)) out[r.job] = r.nodes;
    }
  }
  return out;
}

std::map<ArrayTask, std::vector<std::string>> JobClaims::HoldingTasks() const {
  std::map<ArrayTask, std::vector<std::string>> out;
  for (const auto& [w, r] : records_) {
    if (r.state != JobClaimState::kPlanned && r.state != JobClaimState::kClaimed &&
        r.state != JobClaimState::kWaitingForVictims)
      continue;
    if (std::optional<ArrayTask> task = ArrayTaskOf(r.workload)) out[*task] = r.nodes;
  }
  return out;
}

std::set<uint32_t> JobClaims::CommentsOwned(queue::Time now) const {
  std::set<uint32_t> out;
  for (const auto& [w, r] : records_) out.insert(r.job);
  for (const auto& [w, refusal] : refused_) {
    if (now < refusal.until) out.insert(refusal.job);
  }
  return out;
}

const std::string* JobClaims::Refused(const std::string& workload, queue::Time now) const {
  auto it = refused_.find(workload);
  return it == refused_.end() || now >= it->second.until ? nullptr : &it->second.why;
}

const JobClaimRecord* JobClaims::Find(const std::string& workload) const {
  auto it = records_.find(workload);
  return it == records_.end() ? nullptr : &it->second;
}

}  // namespace onequeue::scheduler

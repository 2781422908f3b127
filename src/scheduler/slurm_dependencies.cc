#include "scheduler/slurm_dependencies.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace onequeue::scheduler {
namespace {

using Type = SlurmDependency::Type;
using State = SlurmDependency::State;

const char* TypeName(Type t) {
  switch (t) {
    case Type::kAfter: return "after";
    case Type::kAfterAny: return "afterany";
    case Type::kAfterOk: return "afterok";
    case Type::kAfterNotOk: return "afternotok";
  }
  return "?";
}

absl::Status Refuse(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("dependency \"", text, "\": ", why));
}

// "12", "12_3", "12_*", "12+5" (after only), each with an optional "(state)".
absl::StatusOr<SlurmDependency> ParseJob(Type type, absl::string_view spec, absl::string_view text) {
  SlurmDependency d;
  d.type = type;
  if (absl::EndsWith(spec, ")")) {
    const size_t open = spec.rfind('(');
    if (open == absl::string_view::npos) return Refuse(text, absl::StrCat("unbalanced \")\" in \"", spec, "\""));
    const absl::string_view state = spec.substr(open + 1, spec.size() - open - 2);
    if (state == "unfulfilled") d.state = State::kUnfulfilled;
    else if (state == "fulfilled") d.state = State::kFulfilled;
    else if (state == "failed") d.state = State::kFailed;
    else return Refuse(text, absl::StrCat("unknown state \"", state, "\""));
    spec = spec.substr(0, open);
  }
  if (const size_t plus = spec.find('+'); plus != absl::string_view::npos) {
    if (type != Type::kAfter) return Refuse(text, absl::StrCat("\"+minutes\" is for after only, not ", TypeName(type)));
    if (!absl::SimpleAtoi(spec.substr(plus + 1), &d.minutes) || d.minutes < 0)
      return Refuse(text, absl::StrCat("\"", spec.substr(plus + 1), "\" is no number of minutes"));
    spec = spec.substr(0, plus);
  }
  if (const size_t under = spec.find('_'); under != absl::string_view::npos) {
    const absl::string_view task = spec.substr(under + 1);
    uint32_t t = 0;
    if (task == "*") d.all_tasks = true;
    else if (absl::SimpleAtoi(task, &t)) d.array_task = t;
    else return Refuse(text, absl::StrCat("\"", task, "\" is no array task id"));
    spec = spec.substr(0, under);
  }
  if (spec.empty() || !std::all_of(spec.begin(), spec.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(spec, &d.job_id) || d.job_id == 0)
    return Refuse(text, absl::StrCat("\"", spec, "\" is no job id"));
  return d;
}

bool IsRunning(const slurm::SlurmJob& job) { return job.state == slurm::JobState::kRunning; }

bool HasEnded(const slurm::SlurmJob& job) {
  switch (job.state) {
    case slurm::JobState::kPending:
    case slurm::JobState::kRunning:
    case slurm::JobState::kSuspended:
    case slurm::JobState::kUnknown:
      return false;
    default:
      return true;
  }
}

}  // namespace

bool SlurmDependencies::Unfulfilled() const {
  return singleton || std::any_of(items.begin(), items.end(),
                                  [](const SlurmDependency& d) { return d.state != State::kFulfilled; });
}

absl::StatusOr<SlurmDependencies> ParseSlurmDependencies(absl::string_view text) {
  SlurmDependencies out;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty() || trimmed == "(null)") return out;
  const bool has_and = absl::StrContains(trimmed, ',');
  out.any = absl::StrContains(trimmed, '?');
  if (has_and && out.any) return Refuse(text, "',' (all of) and '?' (any of) mixed, which Slurm does not allow");
  for (absl::string_view item : absl::StrSplit(trimmed, out.any ? '?' : ',')) {
    if (item.empty()) return Refuse(text, "an empty part");
    if (item == "singleton" || absl::StartsWith(item, "singleton(")) {
      out.singleton = true;
      continue;
    }
    const size_t colon = item.find(':');
    if (colon == absl::string_view::npos) return Refuse(text, absl::StrCat("\"", item, "\" names no job"));
    const absl::string_view type_name = item.substr(0, colon);
    Type type;
    if (type_name == "after") type = Type::kAfter;
    else if (type_name == "afterany") type = Type::kAfterAny;
    else if (type_name == "afterok") type = Type::kAfterOk;
    else if (type_name == "afternotok") type = Type::kAfterNotOk;
    else if (type_name == "aftercorr" || type_name == "afterburstbuffer")
      return Refuse(text, absl::StrCat(type_name, " is not planned by onequeue"));
    else return Refuse(text, absl::StrCat("unknown dependency type \"", type_name, "\""));
    for (absl::string_view spec : absl::StrSplit(item.substr(colon + 1), ':')) {
      absl::StatusOr<SlurmDependency> d = ParseJob(type, spec, text);
      if (!d.ok()) return d.status();
      out.items.push_back(*d);
    }
  }
  return out;
}

bool WaitsForDependency(const slurm::SlurmJob& job) {
  if (job.state != slurm::JobState::kPending) return false;
  if (job.state_reason == "Dependency" || job.state_reason == "DependencyNeverSatisfied") return true;
  absl::StatusOr<SlurmDependencies> deps = ParseSlurmDependencies(job.dependency);
  return !deps.ok() || deps->Unfulfilled();
}

DependencyPlan PlanDependency(const slurm::SlurmJob& job, const slurm::SlurmView& view, queue::Time now) {
  DependencyPlan plan;
  if (job.state != slurm::JobState::kPending) return plan;
  const std::string left = absl::StrCat("left to Slurm: job ", job.job_id, ": ");
  if (job.state_reason == "DependencyNeverSatisfied") {
    plan.waits = true;
    plan.message = absl::StrCat(left, "waits for a dependency that can never be met",
                                job.dependency.empty() ? "" : absl::StrCat(" (", job.dependency, ")"));
    return plan;
  }
  absl::StatusOr<SlurmDependencies> deps = ParseSlurmDependencies(job.dependency);
  if (!deps.ok()) {
    // Unreadable: Slurm alone knows whether it is met; onequeue neither holds nor starts the job.
    plan.waits = true;
    plan.message = absl::StrCat(left, deps.status().message());
    return plan;
  }
  const bool by_reason = job.state_reason == "Dependency";
  if (!deps->Unfulfilled() && !by_reason) return plan;  // none, or all met: an ordinary job
  plan.waits = true;
  if (deps->singleton) {
    plan.message = absl::StrCat(left, "waits for its singleton dependency, which onequeue does not plan");
    return plan;
  }
  // Each unmet dependency's earliest time; any that cannot be known leaves the job to Slurm.
  std::optional<queue::Time> latest, earliest;
  std::string unknown;  // why one cannot be planned (the first)
  bool any_unmet = false;
  for (const SlurmDependency& d : deps->items) {
    if (d.state == State::kFulfilled) continue;
    const std::string what = absl::StrCat(TypeName(d.type), ":", d.job_id);
    if (d.state == State::kFailed) {
      if (!deps->any && unknown.empty()) unknown = absl::StrCat("its dependency ", what, " failed");
      continue;
    }
    any_unmet = true;
    if (d.array_task || d.all_tasks) {
      if (unknown.empty()) unknown = absl::StrCat("depends on array job ", d.job_id, ", which onequeue does not plan");
      continue;
    }
    const auto parent = view.jobs->find(d.job_id);
    if (parent == view.jobs->end()) {
      if (unknown.empty()) unknown = absl::StrCat("depends on job ", d.job_id, ", which Slurm no longer lists");
      continue;
    }
    const slurm::SlurmJob& p = parent->second;
    std::optional<queue::Time> at;
    if (p.array_job_id != 0) {
      if (unknown.empty()) unknown = absl::StrCat("depends on array job ", d.job_id, ", which onequeue does not plan");
      continue;
    }
    if (HasEnded(p) || p.state_flags.count("COMPLETING")) {
      at = now;  // Slurm resolves it at its next pass
    } else if (IsRunning(p) && p.start_time != absl::InfinitePast()) {
      const queue::Time start = absl::ToUnixSeconds(p.start_time);
      if (d.type == Type::kAfter) at = start + d.minutes * 60;
      else if (p.time_limit) at = start + absl::ToInt64Seconds(*p.time_limit);
      else if (unknown.empty()) unknown = absl::StrCat("depends on job ", d.job_id, ", which has no time limit");
    } else if (unknown.empty()) {
      unknown = absl::StrCat("depends on job ", d.job_id, ", which has not started");
    }
    if (!at) continue;
    latest = latest ? std::max(*latest, *at) : *at;
    earliest = earliest ? std::min(*earliest, *at) : *at;
  }
  if (!unknown.empty() || !any_unmet) {
    plan.message = absl::StrCat(left, unknown.empty() ? "waits for its dependency (Slurm's reason Dependency)" : unknown,
                                ": not planned");
    return plan;
  }
  plan.not_before = std::max(deps->any ? *earliest : *latest, now + 1);
  plan.message = absl::StrCat("waits for its dependency ", job.dependency,
                              ": planned from its parent's expected end (start + time limit)");
  return plan;
}

}  // namespace onequeue::scheduler

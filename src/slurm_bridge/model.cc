#include "slurm_bridge/model.h"

#include <array>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace onequeue::slurm {
namespace {
constexpr std::array<std::pair<JobState, const char*>, 12> kJobStates = {{
    {JobState::kPending, "PENDING"},
    {JobState::kRunning, "RUNNING"},
    {JobState::kSuspended, "SUSPENDED"},
    {JobState::kCompleted, "COMPLETED"},
    {JobState::kCancelled, "CANCELLED"},
    {JobState::kFailed, "FAILED"},
    {JobState::kTimeout, "TIMEOUT"},
    {JobState::kNodeFail, "NODE_FAIL"},
    {JobState::kPreempted, "PREEMPTED"},
    {JobState::kBootFail, "BOOT_FAIL"},
    {JobState::kDeadline, "DEADLINE"},
    {JobState::kOutOfMemory, "OUT_OF_MEMORY"},
}};
constexpr std::array<std::pair<NodeState, const char*>, 7> kNodeStates = {{
    {NodeState::kIdle, "IDLE"},
    {NodeState::kAllocated, "ALLOCATED"},
    {NodeState::kMixed, "MIXED"},
    {NodeState::kDown, "DOWN"},
    {NodeState::kError, "ERROR"},
    {NodeState::kFuture, "FUTURE"},
    {NodeState::kInvalid, "INVALID"},
}};
}  // namespace

const char* JobStateName(JobState s) {
  for (const auto& [state, name] : kJobStates)
    if (state == s) return name;
  return "UNKNOWN";
}

JobState ParseJobState(const std::string& s) {
  const std::string upper = absl::AsciiStrToUpper(s);
  for (const auto& [state, name] : kJobStates)
    if (upper == name) return state;
  return JobState::kUnknown;
}

bool IsFinished(JobState s) {
  switch (s) {
    case JobState::kPending:
    case JobState::kRunning:
    case JobState::kSuspended:
    case JobState::kUnknown:
      return false;
    default:
      return true;
  }
}

const char* NodeStateName(NodeState s) {
  for (const auto& [state, name] : kNodeStates)
    if (state == s) return name;
  return "UNKNOWN";
}

NodeState ParseNodeState(const std::string& s) {
  const std::string upper = absl::AsciiStrToUpper(s);
  for (const auto& [state, name] : kNodeStates)
    if (upper == name) return state;
  // 22.05 spells some states differently in REST ("allocated" vs "alloc" in sinfo).
  if (upper == "ALLOC") return NodeState::kAllocated;
  if (upper == "MIX") return NodeState::kMixed;
  return NodeState::kUnknown;
}

// --- Per-node allocations (issue 25) -------------------------------------------------------------
namespace {

// Top-level items of a GRES string: commas inside "(IDX:0,2)" do not separate.
std::vector<std::string> GresItems(const std::string& s) {
  std::vector<std::string> items(1);
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (c == ',' && depth == 0) {
      items.emplace_back();
      continue;
    }
    items.back().push_back(c);
  }
  return items;
}

// "0-1,3" -> {0, 1, 3}; "N/A" -> {}.
absl::Status ParseIndexList(absl::string_view list, std::vector<int>* out) {
  if (list == "N/A") return absl::OkStatus();
  for (absl::string_view range : absl::StrSplit(list, ',')) {
    std::pair<absl::string_view, absl::string_view> lo_hi = absl::StrSplit(range, absl::MaxSplits('-', 1));
    const bool is_range = absl::StrContains(range, '-');
    int lo = 0, hi = 0;
    const bool ok = absl::SimpleAtoi(lo_hi.first, &lo) && (is_range ? absl::SimpleAtoi(lo_hi.second, &hi) : true);
    if (!is_range) hi = lo;
    if (!ok || lo < 0 || hi < lo || hi - lo > 4096)
      return absl::InvalidArgumentError(absl::StrCat("GRES index list \"", list, "\" is not numbers and ranges"));
    for (int i = lo; i <= hi; ++i) out->push_back(i);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseGresWithIndices(const std::string& s, GresMap* counts, GresIndices* indices) {
  for (const std::string& raw : GresItems(s)) {
    absl::string_view item = absl::StripAsciiWhitespace(raw);
    if (item.empty() || item == "(null)") continue;
    absl::string_view detail;
    if (const size_t open = item.find('('); open != absl::string_view::npos) {
      if (item.back() != ')')
        return absl::InvalidArgumentError(absl::StrCat("GRES \"", item, "\" has an unclosed \"(\""));
      detail = item.substr(open + 1, item.size() - open - 2);
      item = item.substr(0, open);
    }
    absl::ConsumePrefix(&item, "gres:");
    absl::ConsumePrefix(&item, "gres/");
    std::vector<std::string> parts = absl::StrSplit(item, absl::ByAnyChar(":="), absl::SkipEmpty());
    if (parts.empty()) return absl::InvalidArgumentError(absl::StrCat("GRES \"", raw, "\" has no name"));
    int64_t count = 1;  // "gpu" alone means one
    if (parts.size() >= 2 && absl::SimpleAtoi(parts.back(), &count)) parts.pop_back();
    if (count < 0) return absl::InvalidArgumentError(absl::StrCat("GRES \"", raw, "\" has a negative count"));
    std::vector<std::string> names = {parts[0]};
    if (parts.size() >= 2) names.push_back(absl::StrCat(parts[0], ":", parts[1]));
    std::vector<int> idx;
    if (const size_t at = detail.find("IDX:"); at != absl::string_view::npos) {
      absl::Status st = ParseIndexList(detail.substr(at + 4), &idx);
      if (!st.ok()) return st;
    }
    for (const std::string& n : names) {
      (*counts)[n] += count;
      if (!idx.empty()) {
        std::vector<int>& list = (*indices)[n];
        list.insert(list.end(), idx.begin(), idx.end());
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ArrayTasks> ParseArrayTasks(const std::string& s, size_t limit) {
  ArrayTasks out;
  absl::string_view rest = absl::StripAsciiWhitespace(s);
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("array tasks \"", s, "\": ", why));
  };
  if (const size_t pct = rest.find('%'); pct != absl::string_view::npos) {
    if (!absl::SimpleAtoi(rest.substr(pct + 1), &out.max_running)) return bad("the %N throttle is not a number");
    rest = rest.substr(0, pct);
  }
  if (rest.empty()) return bad("no task");
  for (absl::string_view part : absl::StrSplit(rest, ',')) {
    uint32_t first = 0, last = 0, step = 1;
    absl::string_view range = part;
    if (const size_t colon = range.find(':'); colon != absl::string_view::npos) {
      if (!absl::SimpleAtoi(range.substr(colon + 1), &step) || step == 0) return bad("the step is not a positive number");
      range = range.substr(0, colon);
    }
    if (const size_t dash = range.find('-'); dash != absl::string_view::npos) {
      if (!absl::SimpleAtoi(range.substr(0, dash), &first) || !absl::SimpleAtoi(range.substr(dash + 1), &last))
        return bad("a range is not two numbers");
    } else if (absl::SimpleAtoi(range, &first)) {
      last = first;
    } else {
      return bad("a task is not a number");
    }
    if (last < first) return bad("a range ends before it starts");
    for (uint64_t t = first; t <= last; t += step) {
      if (out.ids.size() >= limit) return bad(absl::StrCat("more than ", limit, " tasks"));
      out.ids.push_back(static_cast<uint32_t>(t));
    }
  }
  return out;
}

bool ParseStateRecordId(const std::string& text, uint32_t& job_id, std::string& tasks) {
  const size_t end = text.find_first_not_of("0123456789");
  uint32_t id = 0;
  if (!absl::SimpleAtoi(text.substr(0, end), &id) || id == 0) return false;
  tasks.clear();
  if (end == std::string::npos) {
    job_id = id;
    return true;
  }
  absl::string_view rest = absl::string_view(text).substr(end + 1);
  if (text[end] == '+') {  // "<own id>+<offset>": the offset names no other record
    uint32_t offset = 0;
    if (!absl::SimpleAtoi(rest, &offset)) return false;
    job_id = id;
    return true;
  }
  if (text[end] != '_') return false;
  if (absl::ConsumePrefix(&rest, "[") && !absl::ConsumeSuffix(&rest, "]")) return false;
  // "*": every task of the record (a cancelled pending array record, "4_*", seen live on 24.11).
  if (rest.empty() || rest.find_first_not_of("0123456789,-:%*") != absl::string_view::npos) return false;
  job_id = id;
  tasks = std::string(rest);
  return true;
}

std::string ArrayTaskId(uint32_t array_job_id, uint32_t task_id) { return absl::StrCat(array_job_id, "_", task_id); }

bool SlurmPartition::preempt_off() const {
  for (const std::string& m : preempt_mode)
    if (m == "OFF") return true;
  return false;
}

}  // namespace onequeue::slurm

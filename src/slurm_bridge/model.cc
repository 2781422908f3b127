#include "slurm_bridge/model.h"

#include <array>
#include <utility>

#include "absl/strings/ascii.h"

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

}  // namespace onequeue::slurm

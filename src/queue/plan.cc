#include "queue/plan.h"

namespace onequeue::queue {

const char* WaitReasonName(WaitReason reason) {
  switch (reason) {
    case WaitReason::kPriority: return "Priority";
    case WaitReason::kResources: return "Resources";
    case WaitReason::kReservedForHigherPriority: return "ReservedForHigherPriority";
    case WaitReason::kGangIncomplete: return "GangIncomplete";
    case WaitReason::kQosNotAllowed: return "QOSNotAllowed";
    case WaitReason::kInvalidAnnotation: return "InvalidAnnotation";
    case WaitReason::kPartitionNodesUnavailable: return "PartitionNodesUnavailable";
    case WaitReason::kHeld: return "Held";
    case WaitReason::kPreempting: return "Preempting";
    case WaitReason::kBeyondWindow: return "BeyondWindow";
  }
  return "Unknown";
}

}  // namespace onequeue::queue

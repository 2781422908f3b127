#include "scheduler/node_owner.h"

#include <string>

namespace onequeue::scheduler {
namespace {
constexpr std::string_view kReserved = "reserved/";
}  // namespace

NodeOwner NodeOwner::Parse(std::string_view annotation) {
  NodeOwner o;
  if (annotation == "kubernetes") {
    o.kind_ = Kind::kKubernetes;
  } else if (annotation == "slurm" || annotation.substr(0, 6) == "slurm/") {
    o.kind_ = Kind::kSlurm;
  } else if (annotation == "free") {
    o.kind_ = Kind::kFree;
  } else if (annotation.substr(0, kReserved.size()) == kReserved && annotation.size() > kReserved.size()) {
    o.kind_ = Kind::kReserved;
    o.reserved_for_ = std::string(annotation.substr(kReserved.size()));
  } else {
    return o;  // unmarked (or a value onequeue never writes)
  }
  o.value_ = std::string(annotation);
  return o;
}

NodeOwner NodeOwner::LentTo(uint32_t job) { return Parse("slurm/" + std::to_string(job)); }

NodeOwner NodeOwner::ReservedFor(std::string_view workload) {
  return Parse(std::string(kReserved) + std::string(workload));
}

queue::NodeOwner NodeOwner::ToQueue() const {
  queue::NodeOwner q;
  switch (kind_) {
    case Kind::kUnmarked:
    case Kind::kKubernetes: q.kind = queue::OwnerKind::kKubernetes; break;
    case Kind::kSlurm: q.kind = queue::OwnerKind::kSlurm; break;
    case Kind::kFree: q.kind = queue::OwnerKind::kFree; break;
    case Kind::kReserved:
      q.kind = queue::OwnerKind::kReserved;
      q.reserved_for = reserved_for_;
      break;
  }
  return q;
}

}  // namespace onequeue::scheduler

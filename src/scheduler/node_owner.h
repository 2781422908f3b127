#pragma once
// The owner of a pool node as onequeue records it in the node annotation onequeue.io/owner,
// parsed once, here (issue 24: it used to be parsed in five places, each a little differently):
//
//   annotation          kind          meaning
//   (none)              kUnmarked     never marked: Kubernetes' once Slurm has said nothing runs
//                                     there (a fresh install), else adopted as lent
//   kubernetes          kKubernetes   pods may be bound there; Slurm is fenced off
//   slurm, slurm/<job>  kSlurm        lent: Slurm may run jobs there (job: the one it was lent for)
//   free                kFree         nobody's: either world may take it
//   reserved/<W>        kReserved     held for workload W while its preemption is under way
//
// Anything else reads as kUnmarked: onequeue writes only the values above.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "queue/model.h"

namespace onequeue::scheduler {

class NodeOwner {
 public:
  enum class Kind { kUnmarked, kKubernetes, kSlurm, kFree, kReserved };

  NodeOwner() = default;
  static NodeOwner Parse(std::string_view annotation);
  static NodeOwner Unmarked() { return NodeOwner(); }
  static NodeOwner Kubernetes() { return Parse("kubernetes"); }
  static NodeOwner LentTo(uint32_t job);
  static NodeOwner ReservedFor(std::string_view workload);

  Kind kind() const { return kind_; }
  bool unmarked() const { return kind_ == Kind::kUnmarked; }
  // Pods may run there as far as the mark says: kubernetes, or unmarked.
  bool kubernetes_or_unmarked() const { return kind_ == Kind::kUnmarked || kind_ == Kind::kKubernetes; }
  bool kubernetes() const { return kind_ == Kind::kKubernetes; }
  bool slurm() const { return kind_ == Kind::kSlurm; }
  bool reserved() const { return kind_ == Kind::kReserved; }
  // The workload a reserved node is held for ("" unless reserved).
  const std::string& reserved_for() const { return reserved_for_; }
  bool IsReservedFor(std::string_view workload) const { return reserved() && reserved_for_ == workload; }
  // The annotation's text ("" for unmarked): what SetNodeOwner writes.
  const std::string& value() const { return value_; }
  // The queue's view: unmarked pool nodes are Kubernetes'.
  queue::NodeOwner ToQueue() const;

  bool operator==(const NodeOwner& o) const { return value_ == o.value_; }

 private:
  Kind kind_ = Kind::kUnmarked;
  std::string value_;
  std::string reserved_for_;
};

}  // namespace onequeue::scheduler

#pragma once
// Why a workload can never start on the pool as it is (not "not now": never, even with every
// eligible node empty), in words an admin can act on. The planner asks this only on its rare
// "nothing within the planning window" path, so that a request no node can hold (issue 23: Slurm
// jobs asking for RealMemory the Kubernetes twins do not offer) is reported as such instead of as
// a wait beyond the window.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "queue/model.h"

namespace onequeue::queue {

// nullopt when the eligible nodes (eligible[n] != 0), all empty, could hold every member of `w`.
// Otherwise e.g. "no eligible node can ever hold it: it asks for memory 16000Mi per member; the
// largest of the 4 eligible nodes offers 15000Mi (n1)", or, for a gang that fits per node but not
// as a whole, "the 4 eligible nodes hold at most 3 of its 6 members even when empty".
std::optional<std::string> WhyItNeverFits(const Snapshot& snapshot, const PendingWorkload& w,
                                          const std::vector<char>& eligible);

// What WhyItNeverFits reads of the pool for one request per member, whatever the member count:
// the planner keeps one per request and eligibility class for a cycle, as a long queue asks the
// question of many workloads of the same request and different sizes.
struct EmptyPoolCapacity {
  int64_t copies = 0;          // members the eligible nodes hold when empty, at most kManyCopies
  int64_t eligible_nodes = 0;
  // Per resource, the largest amount an eligible node offers, and which node.
  std::array<int64_t, kMaxResourceKinds> largest{};
  std::array<const Node*, kMaxResourceKinds> largest_at{};
  // Above any gang's member count: the cap that keeps the sum from overflowing.
  static constexpr int64_t kManyCopies = int64_t{1} << 40;
};
EmptyPoolCapacity CapacityWhenEmpty(const Snapshot& snapshot, const Resources& per_member,
                                    const std::vector<char>& eligible);
// WhyItNeverFits from that summary (the same answer, word for word).
std::optional<std::string> WhyItNeverFits(const Snapshot& snapshot, const PendingWorkload& w,
                                          const EmptyPoolCapacity& pool);

// A resource amount as Kubernetes writes it: cpu in cores or millicores, memory in Mi/Gi, counts.
std::string FormatAmount(const ResourceNames& names, int kind, int64_t amount);

}  // namespace onequeue::queue

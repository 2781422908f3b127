#include "queue/never_fits.h"

#include <algorithm>
#include <array>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace onequeue::queue {

std::string FormatAmount(const ResourceNames& names, int kind, int64_t amount) {
  if (kind == kCpu) return amount % 1000 == 0 ? absl::StrCat(amount / 1000) : absl::StrCat(amount, "m");
  const bool bytes = kind == kMemory || (static_cast<size_t>(kind) < names.names.size() &&
                                         (names.names[kind] == "ephemeral-storage" ||
                                          names.names[kind].rfind("hugepages-", 0) == 0));
  if (bytes) {
    constexpr int64_t kMi = int64_t{1} << 20, kGi = int64_t{1} << 30;
    if (amount % kGi == 0) return absl::StrCat(amount / kGi, "Gi");
    return absl::StrCat((amount + kMi - 1) / kMi, "Mi");
  }
  return absl::StrCat(amount);
}

namespace {

std::string NameOf(const ResourceNames& names, int kind) {
  return static_cast<size_t>(kind) < names.names.size() ? names.names[kind] : absl::StrCat("resource ", kind);
}

}  // namespace

EmptyPoolCapacity CapacityWhenEmpty(const Snapshot& snapshot, const Resources& per_member,
                                    const std::vector<char>& eligible) {
  EmptyPoolCapacity pool;
  for (size_t n = 0; n < snapshot.nodes.size() && n < eligible.size(); ++n) {
    if (!eligible[n]) continue;
    const Node& node = snapshot.nodes[n];
    ++pool.eligible_nodes;
    pool.copies = std::min(EmptyPoolCapacity::kManyCopies,
                           pool.copies + node.allocatable.CopiesOf(per_member, EmptyPoolCapacity::kManyCopies));
    for (int k = 0; k < kMaxResourceKinds; ++k) {
      if (pool.largest_at[k] == nullptr || node.allocatable[k] > pool.largest[k]) {
        pool.largest[k] = node.allocatable[k];
        pool.largest_at[k] = &node;
      }
    }
  }
  return pool;
}

std::optional<std::string> WhyItNeverFits(const Snapshot& snapshot, const PendingWorkload& w,
                                          const std::vector<char>& eligible) {
  return WhyItNeverFits(snapshot, w, CapacityWhenEmpty(snapshot, w.per_member, eligible));
}

std::optional<std::string> WhyItNeverFits(const Snapshot& snapshot, const PendingWorkload& w,
                                          const EmptyPoolCapacity& pool) {
  // Short of the members, no node holds them all, so the sum capped per node at the member
  // count (what the message says) is the uncapped sum.
  const int64_t eligible_nodes = pool.eligible_nodes;
  const int64_t copies = pool.copies;
  if (eligible_nodes == 0 || copies >= w.members) return std::nullopt;
  for (int k = 0; k < kMaxResourceKinds; ++k) {
    if (w.per_member[k] <= pool.largest[k]) continue;
    const ResourceNames& names = snapshot.resource_names;
    return absl::StrCat("no eligible node can ever hold it: it asks for ", NameOf(names, k), " ",
                        FormatAmount(names, k, w.per_member[k]), " per member; the largest of the ",
                        eligible_nodes, " eligible node", eligible_nodes == 1 ? "" : "s", " offers ",
                        FormatAmount(names, k, pool.largest[k]), " (", pool.largest_at[k]->name, ")");
  }
  return absl::StrCat("the ", eligible_nodes, " eligible node", eligible_nodes == 1 ? "" : "s",
                      " hold at most ", copies, " of its ", w.members, " members even when empty");
}

}  // namespace onequeue::queue

#include "queue/placement_rules.h"

#include <algorithm>
#include <limits>

#include "queue/model.h"

namespace onequeue::queue {
namespace {

// Counted pods per domain of one rule's key; `counted` (by domain) says which domains take part.
struct DomainSums {
  std::vector<int64_t> sum;
  std::vector<char> counted;
  int64_t total = 0;
};

DomainSums SumByDomain(const TopologyDomains& topology, const PodCounts& counts, const std::vector<char>& nodes) {
  DomainSums out;
  out.sum.assign(static_cast<size_t>(topology.count), 0);
  out.counted.assign(static_cast<size_t>(topology.count), 0);
  for (size_t n = 0; n < topology.domain_of_node.size(); ++n) {
    const int32_t d = topology.domain_of_node[n];
    if (d < 0 || (!nodes.empty() && !nodes[n])) continue;
    const int64_t c = n < counts.size() ? counts[n] : 0;
    out.sum[d] += c;
    out.counted[d] = 1;
    out.total += c;
  }
  return out;
}

void ApplySpread(const PlacementRule& r, const TopologyDomains& topology, const PodCounts& counts,
                 std::vector<char>& allowed) {
  const DomainSums sums = SumByDomain(topology, counts, r.counted_nodes);
  int64_t min_match = std::numeric_limits<int64_t>::max();
  int32_t domains = 0;
  for (size_t d = 0; d < sums.sum.size(); ++d) {
    if (!sums.counted[d]) continue;
    ++domains;
    min_match = std::min(min_match, sums.sum[d]);
  }
  if (domains < r.min_domains) min_match = 0;  // min_domains >= 1: no domain at all reads 0 too
  for (size_t n = 0; n < allowed.size(); ++n) {
    if (!allowed[n]) continue;
    const int32_t d = topology.domain_of_node[n];
    if (d < 0) {
      allowed[n] = 0;
      continue;
    }
    const int64_t skew = sums.sum[d] + (r.self_match ? 1 : 0) - min_match;
    if (skew > r.max_skew) allowed[n] = 0;
  }
}

void ApplyAntiAffinity(const PlacementRule& r, const TopologyDomains& topology, const PodCounts& counts,
                       std::vector<char>& allowed) {
  const DomainSums sums = SumByDomain(topology, counts, {});
  for (size_t n = 0; n < allowed.size(); ++n) {
    const int32_t d = topology.domain_of_node[n];
    if (d >= 0 && sums.sum[d] > 0) allowed[n] = 0;
  }
}

// Every kAffinity rule together (InterPodAffinity's nodeTopologyMatchesAffinity).
void ApplyAffinity(const std::vector<const PlacementRule*>& terms, const std::vector<TopologyDomains>& topologies,
                   const std::vector<PodCounts>& counts, std::vector<char>& allowed) {
  if (terms.empty()) return;
  std::vector<DomainSums> sums;
  sums.reserve(terms.size());
  bool any_counted = false;
  for (const PlacementRule* r : terms) {
    sums.push_back(SumByDomain(topologies[r->topology], counts[r->counter], {}));
    any_counted = any_counted || sums.back().total > 0;
  }
  const bool self_match = terms.front()->self_match;
  for (size_t n = 0; n < allowed.size(); ++n) {
    if (!allowed[n]) continue;
    bool all_keys = true, all_exist = true;
    for (size_t i = 0; i < terms.size(); ++i) {
      const int32_t d = topologies[terms[i]->topology].domain_of_node[n];
      if (d < 0) {
        all_keys = false;
        break;
      }
      if (sums[i].sum[d] <= 0) all_exist = false;
    }
    // The first pod of a group that matches its own terms may go anywhere while none exists.
    allowed[n] = all_keys && (all_exist || (!any_counted && self_match));
  }
}

}  // namespace

std::vector<char> NodesAllowedByRules(const std::vector<Node>& nodes, const std::vector<TopologyDomains>& topologies,
                                      const std::vector<PodCounts>& counts, const PlacementRules& rules,
                                      const std::vector<PodCounts>* placed_before) {
  std::vector<char> allowed(nodes.size(), 1);
  PodCounts added;
  std::vector<const PlacementRule*> affinity;
  for (const PlacementRule& r : rules.rules) {
    switch (r.kind) {
      case PlacementRule::Kind::kSpread:
        ApplySpread(r, topologies[r.topology], counts[r.counter], allowed);
        break;
      case PlacementRule::Kind::kAntiAffinity:
        if (placed_before != nullptr) {  // own or symmetric: both lifted by evicting (carriers)
          const PodCounts& now = counts[r.counter];
          const PodCounts& before = (*placed_before)[r.counter];
          added.assign(now.size(), 0);
          for (size_t n = 0; n < now.size(); ++n) added[n] = now[n] - (n < before.size() ? before[n] : 0);
          ApplyAntiAffinity(r, topologies[r.topology], added, allowed);
          break;
        }
        ApplyAntiAffinity(r, topologies[r.topology], counts[r.counter], allowed);
        break;
      case PlacementRule::Kind::kAffinity:
        affinity.push_back(&r);
        break;
    }
  }
  ApplyAffinity(affinity, topologies, counts, allowed);
  return allowed;
}

}  // namespace onequeue::queue

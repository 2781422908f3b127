// Shared pieces of the adapters; not part of the public interface.
#pragma once

#include <memory>
#include <string>

#include "nlohmann/json.hpp"
#include "slurm_bridge/adapter.h"
#include "slurm_bridge/json_fields.h"

namespace onequeue::slurm::internal {

std::unique_ptr<VersionAdapter> MakeV0038Adapter();
std::unique_ptr<VersionAdapter> MakeDataParserAdapter(ApiVersion v);

// "cpu=4,mem=2000M,node=2,billing=4,gres/gpu=2" -> {"cpu":4,"mem":2000,...}; memory in MB.
std::map<std::string, int64_t> ParseTres(const std::string& s);
// "gres:gpu:1" / "gres/gpu:1" / "gres/gpu=1" / "gpu:a100:2(S:0-1)" -> {"gpu":.., "gpu:a100":..}.
GresMap ParseGres(const std::string& s);
// Splits state tokens into a base state (first token that is one) and flags.
void SplitJobState(const std::vector<std::string>& tokens, JobState& state, std::set<std::string>& flags);
void SplitNodeState(const std::vector<std::string>& tokens, NodeState& state, std::set<std::string>& flags);
absl::Time EpochOrPast(int64_t seconds);
std::vector<std::string> ExpandOrEmpty(const std::string& hostlist);

}  // namespace onequeue::slurm::internal

namespace onequeue::slurm::internal {
// Job and node objects use the same field names in every version from v0.0.38 to v0.0.45; the
// value encodings differ (plain numbers vs no-val objects, strings vs arrays) and are absorbed by
// the tolerant readers of json_fields. Returns false when the object is not a usable entry.
bool ReadJob(const nlohmann::json& j, SlurmJob& out);
bool ReadNode(const nlohmann::json& j, SlurmNode& out);
bool ReadReservation(const nlohmann::json& j, SlurmReservation& out);
// A running job's allocation on each node (issue 25): job_resources in either layout (v0.0.38's
// allocated_nodes, v0.0.41+'s nodes.allocation) and gres_detail. Never fails: an answer it cannot
// read gives JobAllocation::error, which says why.
JobAllocation ReadJobAllocation(const nlohmann::json& j, const SlurmJob& job);
// Reads `key` as an array of objects through `read`, skipping unusable entries.
template <typename T, typename Reader>
absl::StatusOr<Listing<T>> ReadListing(const nlohmann::json& body, const char* key, Reader read) {
  if (!body.is_object()) return absl::InternalError("slurmrestd answer is not a JSON object");
  auto it = body.find(key);
  if (it == body.end() || !it->is_array())
    return absl::InternalError(std::string("slurmrestd answer has no \"") + key + "\" array");
  Listing<T> out;
  out.items.reserve(it->size());
  for (const nlohmann::json& e : *it) {
    T item;
    if (read(e, item)) out.items.push_back(std::move(item));
  }
  auto lu = body.find("last_update");
  if (lu != body.end()) {
    json_fields::SlurmNumber n = json_fields::NumberValue(*lu);
    if (n.has_value() && n.value > 0) out.last_update = n.value;
  }
  return out;
}
}  // namespace onequeue::slurm::internal

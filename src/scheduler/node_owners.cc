#include "scheduler/node_owners.h"

#include "absl/status/statusor.h"
#include "scheduler/all_answered.h"
#include "scheduler/scheduling_loop.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {

void NodeOwners::Read(const KubeState& state) {
  owner_.clear();
  version_.clear();
  for (const auto& n : state.nodes) {
    NodeOwner value = NodeOwner::Parse(n->owner);
    std::string version = n->resource_version;
    if (auto w = written_.find(n->name); w != written_.end()) {
      if (version == w->second.written_version || !w->second.earlier_versions.count(version)) {
        written_.erase(w);
      } else {
        value = w->second.value;
        version = w->second.written_version;
      }
    }
    if (auto d = deferred_.find(n->name); d != deferred_.end()) {
      // Still showing the owner the deferred value replaces: the deferred value stands, its write
      // conditional on this version. Anything else shown: someone else changed the owner.
      if (value.value() == d->second.replaces) value = d->second.value;
      else deferred_.erase(d);
    }
    owner_[n->name] = std::move(value);
    version_[n->name] = std::move(version);
  }
  // A node deleted takes its marks with it: nothing is written to a node that is gone.
  std::erase_if(written_, [&](const auto& w) { return !owner_.count(w.first); });
  std::erase_if(deferred_, [&](const auto& d) { return !owner_.count(d.first); });
}

void NodeOwners::Defer(const std::string& node, const NodeOwner& value, int64_t now) {
  auto [it, made] = deferred_.try_emplace(node);
  if (made) {
    it->second.replaces = Of(node).value();
    it->second.since = now;
  }
  it->second.value = value;
  owner_[node] = value;
}

std::optional<int64_t> NodeOwners::OldestDeferred() const {
  std::optional<int64_t> oldest;
  for (const auto& [node, d] : deferred_) {
    if (!oldest || d.since < *oldest) oldest = d.since;
  }
  return oldest;
}

std::vector<std::pair<std::string, NodeOwner>> NodeOwners::TakeDeferred() {
  std::vector<std::pair<std::string, NodeOwner>> out;
  for (auto& [node, d] : deferred_) out.emplace_back(node, d.value);
  deferred_.clear();
  return out;
}

const NodeOwner& NodeOwners::Of(const std::string& node) const {
  auto it = owner_.find(node);
  return it == owner_.end() ? unmarked_ : it->second;
}

absl::Status NodeOwners::Set(const std::string& node, const NodeOwner& value) {
  const std::string expected = version_[node];
  return Written(node, value, expected, actions_->SetNodeOwner(node, value.value(), expected));
}

std::vector<absl::Status> NodeOwners::SetAll(const std::vector<std::pair<std::string, NodeOwner>>& writes) {
  std::vector<std::string> expected;
  for (const auto& [node, value] : writes) expected.push_back(version_[node]);
  const std::vector<absl::StatusOr<std::string>> answers = AllAnswered<absl::StatusOr<std::string>>(
      writes.size(), [&](size_t i, std::function<void(absl::StatusOr<std::string>)> done) {
        actions_->StartSetNodeOwner(writes[i].first, writes[i].second.value(), expected[i], std::move(done));
      });
  std::vector<absl::Status> out;
  for (size_t i = 0; i < writes.size(); ++i) out.push_back(Written(writes[i].first, writes[i].second, expected[i], answers[i]));
  return out;
}

absl::Status NodeOwners::Written(const std::string& node, const NodeOwner& value, const std::string& expected,
                                 const absl::StatusOr<std::string>& written) {
  if (!written.ok()) {
    if (absl::IsAborted(written.status())) {
      spdlog::info("node {}: changed since version {} was read; the owner ({}) is written from a fresh read next cycle",
                   node, expected, value.unmarked() ? "none" : value.value());
    }
    return written.status();
  }
  deferred_.erase(node);  // this write supersedes a deferred one
  Write& w = written_[node];
  w.value = value;
  if (!expected.empty()) w.earlier_versions.insert(expected);
  w.written_version = *written;
  version_[node] = *written;
  owner_[node] = value;
  return absl::OkStatus();
}

std::map<std::string, std::string> NodeOwners::Unshown() const {
  std::map<std::string, std::string> out;
  for (const auto& [node, w] : written_) out[node] = w.value.value();
  for (const auto& [node, d] : deferred_) out[node] = d.value.value();
  return out;
}

std::map<std::string, std::string> NodeOwners::Values() const {
  std::map<std::string, std::string> out;
  for (const auto& [node, o] : owner_) out[node] = o.value();
  return out;
}

}  // namespace onequeue::scheduler

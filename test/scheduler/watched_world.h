#ifndef ONEQUEUE_TEST_SCHEDULER_WATCHED_WORLD_H_
#define ONEQUEUE_TEST_SCHEDULER_WATCHED_WORLD_H_
// The in-memory cluster of fake_world.h seen through a KubeSource, as the daemon's informers feed
// it: every change the loop makes (a binding, a node owner write) is an informer event, and so is
// every change a test makes through `source_`, so the loop can ask what changed since a cycle and
// plan arrivals alone (arrival_cycle_test.cc, test/bench/scheduler/arrival_cycle_bench.cc).
#include <memory>
#include <optional>
#include <string>

#include "fake_world.h"
#include "scheduler/kube_source.h"

namespace onequeue::scheduler {
namespace {  // as fake_world.h: one copy per test binary

class WatchedWorld : public World {
 public:
  std::shared_ptr<const KubeState> State() const override { return source_.State(); }
  std::optional<KubeChanges> ChangesSince(uint64_t generation) const override {
    return source_.ChangesSince(generation);
  }
  absl::Status Bind(const std::string& key, const std::string& node, const std::string& message) override {
    absl::Status s = World::Bind(key, node, message);
    if (s.ok()) source_.UpsertPod(*Find(key));
    return s;
  }
  absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string& version) override {
    auto written = World::SetNodeOwner(node, value, version);
    for (const auto& n : Nodes()) {
      if (n.metadata.name == node) source_.UpsertNode(n);
    }
    return written;
  }

 protected:
  KubeSource source_;
};

}  // namespace
}  // namespace onequeue::scheduler

#endif  // ONEQUEUE_TEST_SCHEDULER_WATCHED_WORLD_H_

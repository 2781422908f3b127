#pragma once
// The fair-share usage between daemons (issue 29): a ConfigMap in the daemon's namespace, key
// usage.json, written by the leader every queue.usageChargeSeconds and read when it starts
// leading (docs/lending.md "Fair-share from real usage" says why a ConfigMap and not a custom
// resource's status). Writes go through the loop's Kubernetes client, whose write gate asks the
// leader elector before each request (fenced_actions.h): a deposed leader writes nothing. Each
// write is conditional on the resourceVersion last read or written (optimistic concurrency).
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "k8s_client/rest_client.h"
#include "nlohmann/json.hpp"
#include "scheduler/usage_accounting.h"

namespace onequeue::scheduler {

inline constexpr const char* kUsageKey = "usage.json";

class ConfigMapUsageStore final : public UsageStore {
 public:
  ConfigMapUsageStore(k8s::RestClient* client, std::string namespace_, std::string name)
      : client_(client), namespace_(std::move(namespace_)), name_(std::move(name)) {}
  // The text under usage.json; NotFound without the ConfigMap; DataLoss when the ConfigMap has
  // no usage.json (someone else's ConfigMap of that name: its other keys are kept on save).
  absl::StatusOr<std::string> Load() override;
  absl::Status Save(const std::string& text) override;
  std::string Describe() const override { return "ConfigMap " + namespace_ + "/" + name_; }

 private:
  k8s::RestClient* client_;
  const std::string namespace_, name_;
  // The ConfigMap as last read or written (its other data keys and labels are kept); null: none.
  std::unique_ptr<nlohmann::json> last_;
};

}  // namespace onequeue::scheduler

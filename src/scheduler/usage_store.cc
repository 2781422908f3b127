#include "scheduler/usage_store.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onequeue::scheduler {
namespace {

const k8s::ResourceType kConfigMaps{"/api/v1", "configmaps", true};

}  // namespace

absl::StatusOr<std::string> ConfigMapUsageStore::Load() {
  absl::StatusOr<nlohmann::json> got = client_->Get(k8s::ObjectPath(kConfigMaps, namespace_, name_));
  if (!got.ok()) {
    if (absl::IsNotFound(got.status())) last_.reset();
    return got.status();
  }
  last_ = std::make_unique<nlohmann::json>(std::move(*got));
  const nlohmann::json* data = last_->contains("data") ? &(*last_)["data"] : nullptr;
  if (data == nullptr || !data->is_object() || !data->contains(kUsageKey) || !(*data)[kUsageKey].is_string()) {
    std::vector<std::string> keys;
    if (data != nullptr && data->is_object()) {
      for (const auto& [k, v] : data->items()) keys.push_back(k);
    }
    return absl::DataLossError(absl::StrCat("no key ", kUsageKey, " (keys: ",
                                            keys.empty() ? "none" : absl::StrJoin(keys, ", "), ")"));
  }
  return (*data)[kUsageKey].get<std::string>();
}

absl::Status ConfigMapUsageStore::Save(const std::string& text) {
  absl::StatusOr<nlohmann::json> written;
  if (last_ == nullptr) {
    nlohmann::json body = {{"apiVersion", "v1"},
                           {"kind", "ConfigMap"},
                           {"metadata",
                            {{"name", name_},
                             {"namespace", namespace_},
                             {"labels", {{"app.kubernetes.io/managed-by", "onequeue"}}}}},
                           {"data", {{kUsageKey, text}}}};
    written = client_->Post(k8s::CollectionPath(kConfigMaps, namespace_), body);
    // Created meanwhile by another writer: read it before writing over it.
    if (absl::IsAlreadyExists(written.status())) return absl::AbortedError(written.status().message());
  } else {
    nlohmann::json body = *last_;  // metadata.resourceVersion makes the PUT conditional
    if (!body.contains("data") || !body["data"].is_object()) body["data"] = nlohmann::json::object();
    body["data"][kUsageKey] = text;
    written = client_->Put(k8s::ObjectPath(kConfigMaps, namespace_, name_), body);
    if (absl::IsNotFound(written.status())) last_.reset();  // deleted: created at the next save
  }
  if (!written.ok()) return written.status();
  last_ = std::make_unique<nlohmann::json>(std::move(*written));
  return absl::OkStatus();
}

}  // namespace onequeue::scheduler

// REST client over an HttpTransport: rate limiter (QPS/burst), per-request timeouts, retries
// with exponential backoff and jitter (connection errors, 429, 5xx; Retry-After honoured), and
// non-2xx answers turned into absl::Status (see api_status.h). Plus typed paths and list options.
//
// Retry policy: a request is retried only when the server did not act on it or acting twice is
// harmless to a caller that checks the result: transport Unavailable (connection refused/reset),
// 429, and 5xx other than a PDB refusal. A retried POST may therefore answer AlreadyExists (a
// create that did land) or Conflict (a binding that did land); the writes in scheduler_api.h
// document how they treat those.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "k8s_client/config.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/rate_limit.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s {

// Where a kind lives: "/api/v1" + "pods", namespaced or not.
struct ResourceType {
  std::string api_prefix;  // "/api/v1", "/apis/policy/v1", ...
  std::string resource;    // plural: "pods"
  bool namespaced = true;
};

inline const ResourceType kPods{"/api/v1", "pods", true};
inline const ResourceType kNodes{"/api/v1", "nodes", false};
inline const ResourceType kPriorityClasses{"/apis/scheduling.k8s.io/v1", "priorityclasses", false};
inline const ResourceType kPodDisruptionBudgets{"/apis/policy/v1", "poddisruptionbudgets", true};
inline const ResourceType kLeases{"/apis/coordination.k8s.io/v1", "leases", true};
inline const ResourceType kEvents{"/apis/events.k8s.io/v1", "events", true};
inline const ResourceType kPersistentVolumeClaims{"/api/v1", "persistentvolumeclaims", true};
inline const ResourceType kPersistentVolumes{"/api/v1", "persistentvolumes", false};
inline const ResourceType kStorageClasses{"/apis/storage.k8s.io/v1", "storageclasses", false};
inline const ResourceType kCsiNodes{"/apis/storage.k8s.io/v1", "csinodes", false};
inline const ResourceType kCsiDrivers{"/apis/storage.k8s.io/v1", "csidrivers", false};
inline const ResourceType kCsiStorageCapacities{"/apis/storage.k8s.io/v1", "csistoragecapacities", true};

// Empty namespace on a namespaced type = all namespaces.
std::string CollectionPath(const ResourceType& type, const std::string& ns);
std::string ObjectPath(const ResourceType& type, const std::string& ns, const std::string& name,
                       const std::string& subresource = "");

struct ListOptions {
  std::string label_selector, field_selector;
  int64_t limit = 0;
  std::string continue_token;
  std::string resource_version;
  std::string resource_version_match;
  bool watch = false;
  bool allow_watch_bookmarks = false;
  int64_t timeout_seconds = 0;
  // "?labelSelector=...&limit=500" (empty string when no option is set), values URL-encoded.
  std::string ToQuery() const;
};

std::string UrlEncode(absl::string_view s);

// Time and randomness for the client, injectable for tests.
struct ClientEnv {
  std::function<absl::Time()> now = [] { return absl::Now(); };
  std::function<void(absl::Duration)> sleep = [](absl::Duration d) { absl::SleepFor(d); };
  std::function<double()> rand01 = DefaultRandom();
};

class RestClient {
 public:
  RestClient(ClientConfig config, std::unique_ptr<HttpTransport> transport,
             RetryPolicy retry = {}, ClientEnv env = {});
  // A client over libcurl for `config`.
  static absl::StatusOr<std::unique_ptr<RestClient>> Create(const ClientConfig& config,
                                                            RetryPolicy retry = {});

  // Rate-limited, retried; the body of a 2xx answer, or the error status.
  absl::StatusOr<std::string> Do(HttpRequest request);
  // Same, without blocking: the rate limiter and backoff delay the start instead of sleeping.
  // The callback runs on the transport thread and must not block.
  void DoAsync(HttpRequest request, std::function<void(absl::StatusOr<std::string>)> done);

  absl::StatusOr<nlohmann::json> Get(const std::string& path);
  absl::StatusOr<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);
  absl::StatusOr<nlohmann::json> Put(const std::string& path, const nlohmann::json& body);
  // content_type: application/merge-patch+json, application/strategic-merge-patch+json,
  // application/json-patch+json.
  absl::StatusOr<nlohmann::json> Patch(const std::string& path, const nlohmann::json& body,
                                       const std::string& content_type);
  absl::StatusOr<nlohmann::json> Delete(const std::string& path,
                                        std::optional<int64_t> grace_period_seconds = std::nullopt);

  // A streaming GET (watch): no timeout, no retries (the informer owns reconnects).
  std::unique_ptr<HttpStream> Stream(const std::string& path, HttpTransport::ChunkCallback on_chunk,
                                     HttpTransport::StreamDoneCallback on_done);

  const ClientConfig& config() const { return config_; }
  const ClientEnv& env() const { return env_; }

  // Every request of this client but GETs (and watches) asks `gate` first, before each attempt
  // and again on the transport thread just before it goes on the wire (HttpRequest::admit); a
  // refusal ends the call with the gate's error (not retried), nothing sent. Set before the
  // client is used (not thread-safe against requests in flight).
  void SetWriteGate(std::function<absl::Status()> gate) { write_gate_ = std::move(gate); }

 private:
  static absl::StatusOr<std::string> ToResult(absl::StatusOr<HttpResponse> response);

  const ClientConfig config_;
  std::unique_ptr<HttpTransport> transport_;
  const RetryPolicy retry_;
  const ClientEnv env_;
  TokenBucket limiter_;
  std::function<absl::Status()> write_gate_;
};

}  // namespace onequeue::k8s

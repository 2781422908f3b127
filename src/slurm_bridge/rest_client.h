// HTTP to slurmrestd over the shared HTTP stack of k8s_client (transport, request/response
// types, retry policy, token-file reader): JWT credentials from a token file, and a client that
// adds the auth headers, retries connection failures with backoff and counts the traffic.
// Turning answers into absl::Status (the `errors` array) is adapter.h's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/rate_limit.h"
#include "nlohmann/json.hpp"

namespace onequeue::slurm {

using k8s::HttpRequest;
using k8s::HttpResponse;
using k8s::HttpTransport;
using k8s::RetryPolicy;

// Where slurmrestd listens. Transport errors: kUnavailable when no connection could be made,
// kDeadlineExceeded on a timeout (the server may have acted), kFailedPrecondition when TLS
// verification fails; the messages name slurmrestd.
struct CurlTransportOptions {
  std::string base_url = "http://127.0.0.1:6820";  // https:// for TLS
  std::string unix_socket;  // when set, connect here (base_url still gives the Host header)
  std::string ca_file;      // TLS: the only CA trusted for the server certificate; empty = system CAs
  absl::Duration connect_timeout = absl::Seconds(5);
  absl::Duration request_timeout = absl::Seconds(60);
};
// k8s::NewCurlTransport for slurmrestd. InvalidArgument when base_url is not http(s)://.
absl::StatusOr<std::unique_ptr<HttpTransport>> NewSlurmTransport(const CurlTransportOptions& options);
// The same for callers that cannot take an error here: a refused base_url fails every request.
std::unique_ptr<HttpTransport> MakeCurlTransport(const CurlTransportOptions& options);

struct Credentials {
  std::string user;
  std::string token;  // never logged
};

class CredentialSource {
 public:
  virtual ~CredentialSource() = default;
  virtual absl::StatusOr<Credentials> Get() = 0;
};

// Reads the token from a file (the bare token, or "SLURM_JWT=<token>" as `scontrol token` prints
// it) and re-reads it whenever its modification time or size changes, so a rotated token is
// picked up without a restart. A token that is not a JWT or whose "exp" has passed (by `now`,
// the wall clock by default) is refused here with kUnauthenticated, before anything is sent:
// Slurm 22.05 would answer it like a down slurmctld.
std::unique_ptr<CredentialSource> MakeTokenFileSource(std::string user, std::string token_file,
                                                      std::function<absl::Time()> now = nullptr);
std::unique_ptr<CredentialSource> MakeStaticCredentials(Credentials c);

// slurmrestd's numbers for the shared policy: 4 attempts, 100 ms doubling to 2 s, no jitter (one
// client), and a timed-out write is not retried (a submit or a cancel may have happened).
inline constexpr RetryPolicy kSlurmRetryPolicy{4, absl::Milliseconds(100), absl::Seconds(2), 0.0, false};

// Request/byte counters, for the poller's cost measurement and for metrics.
struct TransportCounters {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> retries{0};
};

struct RestResponse {
  long http_status = 0;
  nlohmann::json body;  // null when the body was empty or not JSON
};

class RestClient {
 public:
  // `sleep` is injected so tests of the retry policy need no wall clock.
  RestClient(std::unique_ptr<HttpTransport> transport, std::unique_ptr<CredentialSource> credentials,
             RetryPolicy retry = kSlurmRetryPolicy, std::function<void(absl::Duration)> sleep = nullptr);

  // Sends the request; the status covers transport and credential errors only. Interpreting the
  // HTTP status and the `errors` array is the caller's (ResponseStatus in adapter.h), because some
  // "errors" mean "nothing changed".
  absl::StatusOr<RestResponse> Call(const std::string& method, const std::string& path,
                                    const nlohmann::json* body = nullptr);

  // Issue 24 M1: every write (any method but GET, and GET .../requeue) is bounded by the
  // writer's lease. `time_left` says how long from now a write may still take (the daemon's
  // WritePermit::WriteTimeLeft). Each attempt asks it at the last moment before the request goes
  // on the wire (the transport's admit) and is not sent when no time is left; the attempt's
  // timeout is the time left, never more than `request_timeout` (the transport's own); a retry
  // whose backoff would end past it is not made. An abandoned write returns kDeadlineExceeded
  // saying it was abandoned. Reads are not bounded (a standby polls too). Set before any Call.
  void BoundWrites(std::function<absl::Duration()> time_left, absl::Duration request_timeout);

  const TransportCounters& counters() const { return counters_; }

 private:
  // The time left for a write to `path` by `method`; infinite when writes are not bounded.
  absl::Duration WriteTimeLeft(const std::string& method, const std::string& path) const;

  std::unique_ptr<HttpTransport> transport_;
  std::unique_ptr<CredentialSource> credentials_;
  RetryPolicy retry_;
  std::function<void(absl::Duration)> sleep_;
  std::function<absl::Duration()> write_time_left_;  // null: writes not bounded
  absl::Duration request_timeout_ = absl::InfiniteDuration();
  const std::function<double()> rand01_ = k8s::DefaultRandom();  // jitter, when the policy has any
  TransportCounters counters_;
};

}  // namespace onequeue::slurm

// HTTP to slurmrestd: a transport interface (libcurl in production), JWT credentials from a token
// file, and a client that adds the auth headers, retries connection failures with backoff and
// turns answers into absl::Status via the `errors` array.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace onequeue::slurm {

struct HttpRequest {
  std::string method;  // GET, POST, DELETE
  std::string path;    // with query, e.g. "/slurm/v0.0.38/jobs/?update_time=1"
  std::string body;    // JSON for POST
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpResponse {
  long status = 0;
  std::string body;
};

// Sends one request. Errors: kUnavailable when no connection could be made (nothing reached the
// server, safe to retry any method), kDeadlineExceeded on a timeout (the server may have acted).
class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual absl::StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
};

struct CurlTransportOptions {
  std::string base_url = "http://127.0.0.1:6820";  // https:// for TLS
  std::string unix_socket;  // when set, connect here (base_url still gives the Host header)
  std::string ca_file;      // TLS: CA bundle for the server certificate; empty = system default
  absl::Duration connect_timeout = absl::Seconds(5);
  absl::Duration request_timeout = absl::Seconds(60);
};
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

struct RetryPolicy {
  int max_attempts = 4;  // 1 = no retry
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(2);
};

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
             RetryPolicy retry = {}, std::function<void(absl::Duration)> sleep = nullptr);

  // Sends the request; the status covers transport and credential errors only. Interpreting the
  // HTTP status and the `errors` array is the caller's (ResponseStatus in adapter.h), because some
  // "errors" mean "nothing changed".
  absl::StatusOr<RestResponse> Call(const std::string& method, const std::string& path,
                                    const nlohmann::json* body = nullptr);

  const TransportCounters& counters() const { return counters_; }

 private:
  std::unique_ptr<HttpTransport> transport_;
  std::unique_ptr<CredentialSource> credentials_;
  RetryPolicy retry_;
  std::function<void(absl::Duration)> sleep_;
  TransportCounters counters_;
};

}  // namespace onequeue::slurm

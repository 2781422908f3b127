// The HTTP layer under both REST clients (Kubernetes and slurmrestd): one small interface, one
// libcurl implementation, one request/response type.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace onequeue::k8s {

inline constexpr size_t kDefaultMaxResponseBytes = size_t{256} << 20;  // 256 MiB

// Whether a body of `have` bytes may take `more` and stay within `max` (no overflow).
inline bool BodyFits(size_t have, size_t more, size_t max) { return have <= max && more <= max - have; }
// ResourceExhausted: "<where>: response body larger than <max> bytes (the configured limit)".
absl::Status ResponseTooLargeError(absl::string_view where, size_t max);

// Where a server is and how to reach it. ClientConfig (config.h) extends it with what only the
// Kubernetes client needs; slurm_bridge fills it from its own options.
// Which HTTP client carries the requests (kubernetes.httpClient in the daemon's configuration).
// kCurl: libcurl (HTTP/1.1 or HTTP/2, TCP or a unix socket; slurmrestd's, and the Kubernetes
// API's behind a proxy). kNghttp2: onequeue's own HTTP/2 client over nghttp2 and OpenSSL
// (https:// with ALPN h2, or http:// with HTTP/2 prior knowledge; the Kubernetes API's default);
// issue 26: libcurl's per-request work on multiplexed connections was the busy daemon's largest
// cost (docs/k8s_client.md).
enum class HttpClient { kCurl, kNghttp2 };

// kubernetes.httpClient ("auto", "curl" or "nghttp2") resolved for `server`. "auto" is the
// HTTP/2 client unless a proxy variable that libcurl would use for that server is set
// (https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY; for http://, http_proxy): the HTTP/2 client
// connects directly and reads none of them, libcurl honours them and NO_PROXY, so a site behind
// a proxy keeps working. `note` says what the environment changed or what is ignored (empty:
// nothing to say). `getenv` is std::getenv in the daemon (a parameter, for the tests).
struct HttpClientChoice {
  HttpClient client = HttpClient::kNghttp2;
  std::string note;
};
absl::StatusOr<HttpClientChoice> ChooseHttpClient(absl::string_view setting, absl::string_view server,
                                                  const std::function<const char*(const char*)>& getenv);

struct TransportConfig {
  HttpClient client = HttpClient::kCurl;
  std::string server;       // "https://127.0.0.1:6443"; with unix_socket it only names the host
  std::string unix_socket;  // when set, connect to this socket instead of TCP (slurmrestd)
  // TLS trust: PEM bytes (from certificate-authority-data) or a file. Both empty = system CAs.
  std::string ca_pem, ca_file;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;
  // Authentication: bearer token (inline or a file re-read when it changes) and/or client cert.
  std::string bearer_token, token_file;
  std::string client_cert_pem, client_cert_file, client_key_pem, client_key_file;
  absl::Duration connect_timeout = absl::Seconds(10);
  // For a request that sets no timeout of its own (streams never time out).
  absl::Duration request_timeout = absl::Seconds(30);
  std::string user_agent = "onequeue";
  // Named in transport errors ("slurmrestd at http://..."); empty: the URL alone.
  std::string peer_name;
  // Unary requests on the wire at once; more wait in a FIFO queue in the client (streams are
  // not counted): about what the connections below carry at once.
  int max_requests_in_flight = 500;
  // HTTP/2 streams per connection, and connections to the server. libcurl 7.88 runs every
  // transfer of a connection whenever its socket is ready (multi_socket walks the socket's
  // transfers), so a wake-up costs the streams of that connection, not what arrived: fewer
  // streams on more connections cost the client less per request (docs/k8s_client.md).
  int streams_per_connection = 64;
  int max_connections = 8;
  // The largest response body kept in memory (a whole unary answer, or a stream's error body); a
  // larger one ends the request with ResponseTooLargeError. A stream's 2xx chunks are handed on,
  // not kept: the informer bounds what it has not handled yet (InformerOptions::max_backlog_bytes).
  size_t max_response_bytes = kDefaultMaxResponseBytes;
};

struct HttpRequest {
  std::string method = "GET";  // GET, POST, PUT, PATCH, DELETE
  std::string path;            // "/api/v1/namespaces/ns/pods?limit=500" (server prefix added)
  std::string body;
  std::string content_type = "application/json";
  absl::Duration timeout = absl::ZeroDuration();  // zero: no limit (watches)
  absl::Time not_before = absl::InfinitePast();    // delayed start (async retries)
  // Goes ahead of calls queued for room on the wire (HttpTransport::Send sets it: a thread
  // blocks on the answer, e.g. a Lease renewal behind thousands of queued bindings).
  bool urgent = false;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers (Slurm's JWT)
  // When set, asked on the transport thread at the last moment before the request goes on the
  // wire: an error ends the call with that error, unsent. A deposed leader's write gate (a call
  // queued or delayed while the lease was valid must not leave once it is not).
  std::function<absl::Status()> admit;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  std::optional<absl::Duration> retry_after = std::nullopt;  // Retry-After header, seconds form
};

// A running streaming request (a watch). Cancel() is thread-safe and prompt: the done callback
// runs soon after with Cancelled.
class HttpStream {
 public:
  virtual ~HttpStream() = default;
  virtual void Cancel() = 0;
};

class HttpTransport {
 public:
  using ResponseCallback = std::function<void(absl::StatusOr<HttpResponse>)>;
  // Called with each body chunk of a 2xx streaming answer, on the transport thread.
  using ChunkCallback = std::function<void(absl::string_view)>;
  // Called once when the stream ends: OK for a clean end, Cancelled, a transport error, or the
  // error status of a non-2xx answer (with its body parsed as a Status object).
  using StreamDoneCallback = std::function<void(absl::Status)>;

  virtual ~HttpTransport() = default;

  // Transport failures are errors: Unavailable (connection refused/reset: retry),
  // DeadlineExceeded (timeout), FailedPrecondition (TLS verification failed: fix the config).
  // Any HTTP answer, 2xx or not, is an HttpResponse. The callback runs on the transport thread
  // and must not block.
  virtual void SendAsync(HttpRequest request, ResponseCallback done) = 0;
  absl::StatusOr<HttpResponse> Send(HttpRequest request);

  virtual std::unique_ptr<HttpStream> OpenStream(HttpRequest request, ChunkCallback on_chunk,
                                                 StreamDoneCallback on_done) = 0;

  // True on the thread that runs the callbacks: Send() from there would wait for itself, so it
  // fails with FailedPrecondition instead of deadlocking.
  virtual bool OnTransportThread() const { return false; }
  // What the transport has done with its connections so far (any thread). The nghttp2 client
  // counts them; libcurl keeps its connections to itself and reports zeros.
  struct Counters {
    uint64_t connections_opened = 0;  // connections started (a connect begun)
    uint64_t goaways_received = 0;    // GOAWAY frames from the server
    uint64_t requeued = 0;            // calls sent again: the server had not processed them
  };
  virtual Counters GetCounters() const { return {}; }
};

// libcurl multi on its own thread; HTTP/2 with multiplexing (many requests in flight over one
// connection), TLS verified against the configured CA, bearer token (token files re-read when
// they change), client certificates, TCP or a unix socket.
absl::StatusOr<std::unique_ptr<HttpTransport>> NewCurlTransport(const TransportConfig& config);

// nghttp2 + OpenSSL on its own thread (epoll); HTTP/2 only: https:// servers that select h2 by
// ALPN, or http:// servers spoken to with HTTP/2 prior knowledge. No unix sockets. Same
// contract as the libcurl transport (the transport conformance tests run over both).
absl::StatusOr<std::unique_ptr<HttpTransport>> NewNghttp2Transport(const TransportConfig& config);

// The transport config.client names.
absl::StatusOr<std::unique_ptr<HttpTransport>> NewHttpTransport(const TransportConfig& config);

}  // namespace onequeue::k8s

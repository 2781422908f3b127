// One HTTP/2 connection of the nghttp2 client: a non-blocking TCP socket, TLS (OpenSSL) or
// cleartext (h2c, prior knowledge), and an nghttp2 client session carrying up to
// streams_per_connection requests. Loop thread only. Internal to src/k8s_client.
#pragma once

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/transport_internal.h"

namespace onequeue::k8s::internal {

// A request of the nghttp2 client, from SendAsync/OpenStream to its callback.
struct H2Call {
  HttpRequest request;
  HttpTransport::ResponseCallback on_response;  // unary calls
  HttpTransport::ChunkCallback on_chunk;        // streams
  HttpTransport::StreamDoneCallback on_done;    // streams
  std::shared_ptr<StreamState> stream;          // set for streams
  HttpResponse response;  // status, retry_after; body: unary, or a stream's non-2xx answer
  size_t body_offset = 0;                       // of request.body handed to nghttp2
  absl::Duration timeout = absl::ZeroDuration();  // zero: none
  int32_t stream_id = 0;
  bool counted = false;         // among the transport's unary calls in flight
  bool sent = false;            // its HEADERS frame went on the wire
  bool ended = false;           // the server's END_STREAM arrived
  bool body_too_large = false;  // more than max_response_bytes: reset
  bool timed_out = false;       // reset by its deadline
  bool cancel_sent = false;     // RST_STREAM submitted for a cancelled stream
  bool Is2xx() const { return response.status >= 200 && response.status < 300; }
};

// Where and how to connect: fixed for the transport's life.
struct H2Endpoint {
  const TransportConfig* config = nullptr;
  bool tls = true;
  std::string scheme;     // "https" or "http"
  std::string host;       // without brackets
  std::string port;       // "6443"
  std::string authority;  // host:port as in the URL
  std::string base_path;  // a path prefix of the server URL, usually empty
  std::string tls_host;   // checked against the certificate: tls_server_name, else host
  SSL_CTX* ssl_ctx = nullptr;
  int epoll_fd = -1;
};

// scheme://host[:port][/base] of config.server (ssl_ctx and epoll_fd left unset); InvalidArgument
// for anything else. IPv6 literals in brackets; the default ports 443 and 80.
absl::StatusOr<H2Endpoint> ParseServer(const TransportConfig& config);

// What a connection hands back to its transport.
class H2Owner {
 public:
  virtual ~H2Owner() = default;
  // The call ended: OK with call->response complete, or the error.
  virtual void Finish(std::unique_ptr<H2Call> call, absl::Status error) = 0;
  // The call never reached the server (not sent, refused stream, GOAWAY): queue it again.
  virtual void Requeue(std::unique_ptr<H2Call> call) = 0;
  // A GOAWAY frame arrived on one of the connections (counted).
  virtual void OnGoaway() = 0;
};

class H2Connection {
 public:
  H2Connection(uint64_t id, const H2Endpoint& endpoint, H2Owner* owner, int max_streams);
  ~H2Connection();
  H2Connection(const H2Connection&) = delete;
  H2Connection& operator=(const H2Connection&) = delete;

  uint64_t id() const { return id_; }
  // Resolves the host and starts a non-blocking connect; a failure leaves the connection dead.
  void Connect(absl::Time now);
  bool dead() const { return dead_; }
  // A GOAWAY came: no new stream goes on it; it lives while its streams (a watch: minutes) run.
  bool draining() const { return goaway_; }
  // Open or connecting, no GOAWAY, fewer streams than min(max_streams, the server's limit).
  bool HasRoom() const;
  int load() const { return static_cast<int>(streams_.size()); }
  bool Has(int32_t stream_id) const { return streams_.contains(stream_id); }
  // While connecting: when the connect timeout ends it. InfiniteFuture once open.
  absl::Time connect_deadline() const { return open_ ? absl::InfiniteFuture() : connect_deadline_; }

  // Submits the request (its HEADERS and body go out with the next Flush); returns the stream
  // id, or 0 when the call was ended instead (a dead connection: its error).
  int32_t Submit(std::unique_ptr<H2Call> call, absl::string_view authorization);
  void OnEvents(uint32_t events);
  // nghttp2's pending frames to the socket, as far as it takes them; updates the epoll interest.
  void Flush();
  // Resets the cancelled streams (watches) of this connection.
  void CheckCancelled();
  // The deadline of `stream_id` passed: reset it (DeadlineExceeded). Unknown ids are ignored.
  void Expire(int32_t stream_id);
  // Ends the connection: every call on it ends with `code` and "<where of the call>: <detail>",
  // except cancelled/expired ones (Cancelled/DeadlineExceeded) and, when `requeue_unsent` and
  // the connection had been open, calls never sent (requeued).
  void Fail(absl::StatusCode code, const std::string& detail, bool requeue_unsent);

 private:
  enum class State { kIdle, kConnecting, kHandshake, kOpen };
  enum class Io { kDone, kBlocked, kEof, kError };

  bool TryNextAddress();
  void OnConnected();
  void Handshake();
  void ReadAll();
  Io ReadSome(char* buf, size_t size, size_t* got, std::string* error);
  Io WriteSome(const char* data, size_t size, size_t* wrote, std::string* error);
  bool FillOutput();
  void UpdateInterest();
  void EndCall(std::unique_ptr<H2Call> call, absl::Status error) { owner_->Finish(std::move(call), std::move(error)); }
  H2Call* Find(int32_t stream_id);
  // "<where of the call>: <detail>", or `detail` with the call's where put in (TLS errors).
  absl::Status ErrorFor(const H2Call& call, absl::StatusCode code, const std::string& detail) const;
  std::string Where(const H2Call& call) const { return internal::Where(*ep_.config, call.request.path); }
  void OnStreamClose(int32_t stream_id, uint32_t error_code);
  void OnData(int32_t stream_id, const uint8_t* data, size_t len);
  void OnHeader(const nghttp2_frame* frame, absl::string_view name, absl::string_view value);

  static int OnHeaderCb(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*,
                        size_t, uint8_t, void*);
  static int OnDataCb(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int OnFrameRecvCb(nghttp2_session*, const nghttp2_frame*, void*);
  static int OnFrameSendCb(nghttp2_session*, const nghttp2_frame*, void*);
  static int OnStreamCloseCb(nghttp2_session*, int32_t, uint32_t, void*);
  static ssize_t ReadBodyCb(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*, void*);

  const uint64_t id_;
  const H2Endpoint& ep_;
  H2Owner* const owner_;
  const int max_streams_;
  State state_ = State::kIdle;
  int fd_ = -1;
  SSL* ssl_ = nullptr;
  nghttp2_session* session_ = nullptr;
  std::vector<sockaddr_storage> addrs_;
  std::vector<socklen_t> addr_lens_;
  size_t next_addr_ = 0;
  std::string connect_error_;
  absl::Time connect_deadline_ = absl::InfiniteFuture();
  bool open_ = false;  // the session was usable once (TCP up, TLS done, h2)
  bool dead_ = false;
  absl::StatusCode fail_code_ = absl::StatusCode::kOk;  // why it died (Submit on a dead one)
  std::string fail_detail_;
  bool goaway_ = false;
  bool want_out_ = false;  // the socket must become writable (connect, TLS, a blocked write)
  uint32_t interest_ = 0;  // what epoll watches now
  std::string out_;        // frames from nghttp2 not yet written, from out_offset_
  size_t out_offset_ = 0;
  absl::flat_hash_map<int32_t, std::unique_ptr<H2Call>> streams_;
  std::vector<int32_t> watches_;  // stream ids of streams_ that are watches (cancel checks)
};

}  // namespace onequeue::k8s::internal

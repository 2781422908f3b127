// nghttp2 + OpenSSL implementation of HttpTransport (issue 26): onequeue's own HTTP/2 client.
//
// Threading: one thread (`oq-h2`) owns an epoll set, every connection (h2_connection.h) and every
// started call. Other threads push work into `inbox_` and wake the loop through an
// eventfd; a stream's cancellation is an atomic flag the loop checks when woken. Callbacks run
// on the loop thread. The loop blocks in epoll_wait until a socket is ready, the next deadline
// (a request's timeout, a connect timeout, a delayed call) or the eventfd: an idle transport with
// a watch open does not wake up.
//
// Calls wait in a FIFO (CallQueue, as the libcurl transport's) until fewer than
// max_requests_in_flight unary calls are on the wire and a connection has room: the least loaded
// open or connecting one under its stream limit, else a new one while there are fewer than
// max_connections. Streams (watches) are not counted against max_requests_in_flight.
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "k8s_client/api_status.h"
#include "k8s_client/h2_connection.h"
#include "k8s_client/h2_tls.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/token_file.h"
#include "k8s_client/transport_internal.h"
#include "spdlog/spdlog.h"

namespace onequeue::k8s {

namespace internal {

absl::StatusOr<H2Endpoint> ParseServer(const TransportConfig& config) {
  H2Endpoint ep;
  ep.config = &config;
  absl::string_view rest = config.server;
  if (absl::ConsumePrefix(&rest, "https://")) {
    ep.tls = true;
    ep.scheme = "https";
  } else if (absl::ConsumePrefix(&rest, "http://")) {
    ep.tls = false;
    ep.scheme = "http";
  } else {
    return absl::InvalidArgumentError(absl::StrCat("server \"", config.server, "\" is not an http(s) URL"));
  }
  const size_t slash = rest.find('/');
  const absl::string_view hostport = rest.substr(0, slash);
  if (slash != absl::string_view::npos) ep.base_path = std::string(absl::StripSuffix(rest.substr(slash), "/"));
  ep.authority = std::string(hostport);
  absl::string_view host = hostport, port;
  if (absl::StartsWith(hostport, "[")) {  // [v6]:port
    const size_t close = hostport.find(']');
    if (close == absl::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("bad server URL ", config.server));
    host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') port = hostport.substr(close + 2);
  } else if (const size_t colon = hostport.rfind(':'); colon != absl::string_view::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  if (host.empty()) return absl::InvalidArgumentError(absl::StrCat("server \"", config.server, "\" names no host"));
  ep.host = std::string(host);
  ep.port = port.empty() ? (ep.tls ? "443" : "80") : std::string(port);
  ep.tls_host = config.tls_server_name.empty() ? ep.host : config.tls_server_name;
  return ep;
}

}  // namespace internal

namespace {

using internal::H2Call;
using internal::H2Connection;
using internal::H2Endpoint;

absl::Status ShuttingDown() { return absl::CancelledError("transport is shutting down"); }

class Nghttp2Transport : public HttpTransport, public internal::H2Owner {
 public:
  // `epoll_fd` (owned from here on) already watches `waker`'s descriptor (data.ptr null).
  // `ssl_ctx` null with `tls_error` set: the TLS configuration is unusable and every https
  // call ends with that error (as libcurl reports it per request).
  Nghttp2Transport(TransportConfig config, internal::SslCtxPtr ssl_ctx, absl::Status tls_error, int epoll_fd,
                   std::shared_ptr<internal::Waker> waker)
      : config_(std::move(config)),
        ssl_ctx_(std::move(ssl_ctx)),
        tls_error_(std::move(tls_error)),
        token_(config_.bearer_token),
        waker_(std::move(waker)) {
    if (!config_.token_file.empty()) token_file_.emplace(config_.token_file);
    endpoint_ = *internal::ParseServer(config_);  // checked by NewNghttp2Transport
    endpoint_.ssl_ctx = ssl_ctx_.get();
    endpoint_.epoll_fd = epoll_fd;
    internal::WarnIfInsecure(config_);
    thread_ = std::thread([this] { Loop(); });
    pthread_setname_np(thread_.native_handle(), "oq-h2");  // for top -H, perf and the tests
  }

  ~Nghttp2Transport() override {
    inbox_.Stop();
    waker_->Wake();
    thread_.join();
    close(endpoint_.epoll_fd);
  }

  void SendAsync(HttpRequest request, ResponseCallback done) override {
    Enqueue(internal::NewUnaryCall<H2Call>(std::move(request), std::move(done)));
  }

  bool OnTransportThread() const override { return std::this_thread::get_id() == thread_.get_id(); }

  Counters GetCounters() const override {
    return Counters{.connections_opened = connections_opened_.load(std::memory_order_relaxed),
                    .goaways_received = goaways_received_.load(std::memory_order_relaxed),
                    .requeued = requeued_.load(std::memory_order_relaxed)};
  }

  std::unique_ptr<HttpStream> OpenStream(HttpRequest request, ChunkCallback on_chunk,
                                         StreamDoneCallback on_done) override {
    auto call = internal::NewStreamCall<H2Call>(std::move(request), std::move(on_chunk), std::move(on_done));
    auto handle = std::make_unique<internal::CancellableStream>(call->stream, waker_);
    Enqueue(std::move(call));
    return handle;
  }

 private:
  void Enqueue(std::unique_ptr<H2Call> call) {
    if (inbox_.Push(call)) waker_->Wake();
    else Finish(std::move(call), ShuttingDown());
  }

  // H2Owner: the call's callback, with the answer or the error.
  void Finish(std::unique_ptr<H2Call> call, absl::Status error) override {
    if (call->counted) --unary_in_flight_;
    call->counted = false;
    if (error.ok()) internal::Deliver(*call, std::move(call->response));
    else internal::Deliver(*call, std::move(error));
  }

  void Requeue(std::unique_ptr<H2Call> call) override {
    requeued_.fetch_add(1, std::memory_order_relaxed);
    if (call->counted) --unary_in_flight_;
    call->counted = false;
    call->response = HttpResponse{};
    call->body_offset = 0;
    call->stream_id = 0;
    call->sent = call->ended = call->body_too_large = call->timed_out = call->cancel_sent = false;
    if (call->stream) waiting_streams_.push_front(std::move(call));
    else queue_.PushFront(std::move(call));
  }

  void OnGoaway() override { goaways_received_.fetch_add(1, std::memory_order_relaxed); }

  // The inline token, or the token file's current content (read at most once per loop turn); a
  // file that cannot be read keeps the last token (the server's 401 then says what is wrong).
  void RefreshAuthorization() {
    if (token_file_) {
      if (absl::StatusOr<std::string> t = token_file_->Read(); t.ok()) token_ = *std::move(t);
    }
    if (token_ != authorization_token_) {
      authorization_token_ = token_;
      authorization_ = token_.empty() ? "" : absl::StrCat("Bearer ", token_);
    }
  }

  // The least loaded connection with room; a new one while fewer than max_connections can take
  // streams; else null (the call waits). A connection draining after a GOAWAY is not counted: it
  // takes no new stream but stays up while a watch on it runs (minutes), so counted, watches on
  // draining connections could hold every slot and every call would wait for them to end
  // (k8s_transport_goaway_test). Draining connections are as many as the streams keeping them.
  H2Connection* PickConnection(absl::Time now) {
    H2Connection* best = nullptr;
    for (auto& c : conns_) {
      if (c->HasRoom() && (!best || c->load() < best->load())) best = c.get();
    }
    if (best || UsableConnections() >= max_connections_) return best;
    conns_.push_back(std::make_unique<H2Connection>(next_conn_id_++, endpoint_, this, config_.streams_per_connection));
    H2Connection* c = conns_.back().get();
    connections_opened_.fetch_add(1, std::memory_order_relaxed);
    c->Connect(now);  // dead at once if it could not start: the call then ends with its error
    return c;
  }

  // Puts `call` on `conn`: asks `admit`, arms its timeout.
  void Submit(H2Connection* conn, std::unique_ptr<H2Call> call, absl::Time now) {
    if (call->request.admit) {
      if (absl::Status s = call->request.admit(); !s.ok()) {
        Finish(std::move(call), s);
        return;
      }
    }
    if (!tls_error_.ok()) {
      const std::string where = internal::Where(config_, call->request.path);
      Finish(std::move(call), absl::Status(tls_error_.code(), absl::StrReplaceAll(tls_error_.message(),
                                                                                  {{internal::kWherePlaceholder, where}})));
      return;
    }
    const absl::Duration timeout = call->request.timeout > absl::ZeroDuration() ? call->request.timeout
                                   : call->stream                              ? absl::ZeroDuration()
                                                                               : config_.request_timeout;
    call->timeout = timeout;
    if (!call->stream) {
      call->counted = true;
      ++unary_in_flight_;
    }
    const int32_t id = conn->Submit(std::move(call), authorization_);
    if (id > 0 && timeout > absl::ZeroDuration()) AddTimer(now + timeout, conn->id(), id);
  }

  // New calls into the queue; returns whether the transport is stopping.
  bool TakeIncoming(absl::Time now) {
    std::deque<std::unique_ptr<H2Call>> incoming;
    const bool stopping = inbox_.Take(&incoming);
    for (auto& c : incoming) {
      if (c->stream) waiting_streams_.push_back(std::move(c));  // never behind unary calls
      else queue_.Add(std::move(c), now);
    }
    return stopping;
  }

  // Streams, then due unary calls while fewer than max_requests_in_flight are on the wire, onto
  // connections with room; then every connection writes what it has.
  void Dispatch(absl::Time now) {
    if (!waiting_streams_.empty() || (queue_.HasReady() && unary_in_flight_ < max_in_flight_)) {
      RefreshAuthorization();
    }
    while (!waiting_streams_.empty()) {
      if (waiting_streams_.front()->stream->cancelled.load()) {
        std::unique_ptr<H2Call> c = std::move(waiting_streams_.front());
        waiting_streams_.pop_front();
        absl::Status cancelled = absl::CancelledError(absl::StrCat(internal::Where(config_, c->request.path), ": cancelled"));
        Finish(std::move(c), std::move(cancelled));
        continue;
      }
      H2Connection* conn = PickConnection(now);
      if (!conn) break;
      std::unique_ptr<H2Call> c = std::move(waiting_streams_.front());
      waiting_streams_.pop_front();
      Submit(conn, std::move(c), now);
    }
    while (queue_.HasReady() && unary_in_flight_ < max_in_flight_) {
      H2Connection* conn = PickConnection(now);
      if (!conn) break;
      Submit(conn, queue_.PopReady(), now);
    }
  }

  // Request deadlines: (due, connection, stream), a min-heap. An entry whose stream already
  // ended is dropped when due (stream ids are never reused on a connection); the heap is rebuilt
  // when such entries outnumber the live ones.
  struct Timer {
    absl::Time due;
    uint64_t conn;
    int32_t stream;
    bool operator>(const Timer& o) const { return due > o.due; }
  };

  void AddTimer(absl::Time due, uint64_t conn, int32_t stream) {
    timers_.push_back(Timer{due, conn, stream});
    std::push_heap(timers_.begin(), timers_.end(), std::greater<>());
    if (timers_.size() > 4096 && timers_.size() > 4 * static_cast<size_t>(unary_in_flight_ + 64)) PruneTimers();
  }

  void PruneTimers() {
    std::vector<Timer> live;
    for (const Timer& t : timers_) {
      if (H2Connection* c = FindConn(t.conn); c && c->Has(t.stream)) live.push_back(t);
    }
    timers_.swap(live);
    std::make_heap(timers_.begin(), timers_.end(), std::greater<>());
  }

  H2Connection* FindConn(uint64_t id) {
    for (auto& c : conns_) {
      if (c->id() == id) return c.get();
    }
    return nullptr;
  }

  // Expires due requests and connects that took too long; returns the next deadline.
  absl::Time ExpireDue(absl::Time now) {
    while (!timers_.empty() && timers_.front().due <= now) {
      const Timer t = timers_.front();
      std::pop_heap(timers_.begin(), timers_.end(), std::greater<>());
      timers_.pop_back();
      if (H2Connection* c = FindConn(t.conn)) c->Expire(t.stream);
    }
    absl::Time next = timers_.empty() ? absl::InfiniteFuture() : timers_.front().due;
    for (auto& c : conns_) {
      if (c->dead()) continue;
      if (c->connect_deadline() <= now) {
        c->Fail(absl::StatusCode::kDeadlineExceeded,
                absl::StrCat("Connection timed out after ", absl::ToInt64Milliseconds(config_.connect_timeout),
                             " milliseconds"),
                false);
      } else {
        next = std::min(next, c->connect_deadline());
      }
    }
    return next;
  }

  void FlushAndReap() {
    for (auto& c : conns_) {
      c->CheckCancelled();
      c->Flush();
    }
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const auto& c) { return c->dead(); }), conns_.end());
  }

  void Loop() {
    // A write to a socket the server closed must fail with EPIPE, not kill the process: OpenSSL
    // writes with write(2), and a blocked SIGPIPE stays pending on this thread, never delivered.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    constexpr int kMaxEvents = 64;
    epoll_event events[kMaxEvents];
    while (true) {
      absl::Time now = absl::Now();
      if (TakeIncoming(now)) break;
      const absl::Time next_delayed = queue_.Promote(now);
      Dispatch(now);
      FlushAndReap();
      const absl::Time due = std::min(next_delayed, ExpireDue(now));
      // A connection that died or got a GOAWAY while calls wait, with nothing else to wake the
      // loop: go round.
      const bool again = (!waiting_streams_.empty() || (queue_.HasReady() && unary_in_flight_ < max_in_flight_)) &&
                         UsableConnections() < max_connections_;
      const int n = epoll_wait(endpoint_.epoll_fd, events, kMaxEvents, again ? 0 : internal::WaitMillis(due, now));
      if (n < 0 && errno != EINTR) {
        spdlog::error("http/2 client: epoll_wait: {}", std::strerror(errno));
        absl::SleepFor(absl::Milliseconds(10));  // never spin on a broken epoll set
      }
      for (int i = 0; i < n; ++i) {
        auto* conn = static_cast<H2Connection*>(events[i].data.ptr);
        if (!conn) {
          waker_->Drain();  // new work or a cancellation: next turn
          continue;
        }
        conn->OnEvents(events[i].events);
        conn->Flush();
      }
      ExpireDue(absl::Now());
    }
    Shutdown();
  }

  // Connections up or coming up that may take new streams (not dead, not draining).
  int UsableConnections() const {
    return static_cast<int>(
        std::count_if(conns_.begin(), conns_.end(), [](const auto& c) { return !c->dead() && !c->draining(); }));
  }

  // Everything still queued or running ends as Cancelled.
  void Shutdown() {
    for (auto& c : conns_) c->Fail(absl::StatusCode::kCancelled, "transport is shutting down", false);
    conns_.clear();
    for (auto& c : waiting_streams_) Finish(std::move(c), ShuttingDown());
    waiting_streams_.clear();
    queue_.DrainAll([this](std::unique_ptr<H2Call> c) { Finish(std::move(c), ShuttingDown()); });
    std::deque<std::unique_ptr<H2Call>> incoming;
    inbox_.Take(&incoming);
    for (auto& c : incoming) Finish(std::move(c), ShuttingDown());
  }

  const TransportConfig config_;
  const internal::SslCtxPtr ssl_ctx_;
  const absl::Status tls_error_;
  H2Endpoint endpoint_;
  std::optional<TokenFile> token_file_;
  std::string token_, authorization_token_, authorization_;  // loop thread only
  const std::shared_ptr<internal::Waker> waker_;
  std::thread thread_;
  internal::Inbox<H2Call> inbox_;
  // Loop thread only:
  internal::CallQueue<H2Call> queue_;                 // unary calls waiting for room
  std::deque<std::unique_ptr<H2Call>> waiting_streams_;  // streams waiting for a connection
  std::vector<std::unique_ptr<H2Connection>> conns_;
  uint64_t next_conn_id_ = 1;
  std::vector<Timer> timers_;
  int unary_in_flight_ = 0;
  const int max_in_flight_ = std::max(1, config_.max_requests_in_flight);
  const int max_connections_ = std::max(1, config_.max_connections);
  // GetCounters(): written on the loop thread, read anywhere.
  std::atomic<uint64_t> connections_opened_{0}, goaways_received_{0}, requeued_{0};
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTransport>> NewNghttp2Transport(const TransportConfig& config) {
  if (!config.unix_socket.empty()) {
    return absl::InvalidArgumentError(
        "the nghttp2 HTTP client does not connect to unix sockets (it is for the Kubernetes API; use curl)");
  }
  absl::StatusOr<H2Endpoint> endpoint = internal::ParseServer(config);
  if (!endpoint.ok()) return endpoint.status();
  internal::SslCtxPtr ctx;
  absl::Status tls_error;
  if (endpoint->tls) {
    absl::StatusOr<internal::SslCtxPtr> c = internal::NewClientSslContext(config, internal::kWherePlaceholder);
    if (c.ok()) ctx = *std::move(c);
    else tls_error = c.status();
  }
  auto waker = std::make_shared<internal::Waker>();
  epoll_data_t tag{};
  tag.ptr = nullptr;
  absl::StatusOr<int> epoll_fd = internal::NewEpollWithWaker(*waker, tag, "http/2 client");
  if (!epoll_fd.ok()) return epoll_fd.status();
  return std::unique_ptr<HttpTransport>(
      new Nghttp2Transport(config, std::move(ctx), std::move(tls_error), *epoll_fd, std::move(waker)));
}

}  // namespace onequeue::k8s

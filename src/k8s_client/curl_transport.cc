// libcurl implementation of HttpTransport.
//
// Threading: one thread owns the CURLM handle and every CURL easy handle. Other threads only
// push work into `inbox_` and wake the loop through an eventfd; stream
// cancellation is an atomic flag the loop checks each turn. Callbacks run on the loop thread.
//
// The loop is event-driven: libcurl tells it which sockets to watch (CURLMOPT_SOCKETFUNCTION)
// and when its next timeout is due (CURLMOPT_TIMERFUNCTION); the loop blocks in epoll_wait until
// a socket is ready, that timeout or the next delayed call is due, or the eventfd says work
// arrived, and hands exactly that to curl_multi_socket_action. An idle watch costs nothing.
#include <curl/curl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <queue>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "k8s_client/api_status.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/token_file.h"
#include "k8s_client/transport_internal.h"
#include "spdlog/spdlog.h"

namespace onequeue::k8s {

namespace {

using internal::CallQueue;
using internal::CancellableStream;
using internal::StreamState;
using internal::Waker;

struct Call {
  HttpRequest request;
  HttpTransport::ResponseCallback on_response;   // unary calls
  HttpTransport::ChunkCallback on_chunk;         // streams
  HttpTransport::StreamDoneCallback on_done;     // streams
  std::shared_ptr<StreamState> stream;           // set for streams
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;  // unary: the whole body; stream: the body of a non-2xx answer
  size_t max_body = kDefaultMaxResponseBytes;
  bool body_too_large = false;  // the write callback refused a chunk past max_body
  std::optional<absl::Duration> retry_after;
  char error[CURL_ERROR_SIZE] = {0};
  // Counts this call among the transport's unsent ones until libcurl is about to send it
  // (PrereqCallback) or it completes; `had_socket`: libcurl asked to watch a socket for it.
  int* unsent = nullptr;
  bool sent = false;
  bool had_socket = false;
  absl::Time added;  // to the multi handle (last time)

  ~Call() {
    if (easy) curl_easy_cleanup(easy);
    if (headers) curl_slist_free_all(headers);
  }
  long ResponseCode() const {
    long code = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }
};

size_t WriteCallback(char* data, size_t size, size_t nmemb, void* user) {
  Call* call = static_cast<Call*>(user);
  const size_t n = size * nmemb;
  if (call->stream) {
    if (call->stream->cancelled.load()) return 0;  // aborts the transfer
    const long code = call->ResponseCode();
    if (code >= 200 && code < 300) {
      call->on_chunk(absl::string_view(data, n));
      return n;
    }
  }
  if (!BodyFits(call->body.size(), n, call->max_body)) {
    call->body_too_large = true;
    call->body.clear();
    call->body.shrink_to_fit();
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  call->body.append(data, n);
  return n;
}

size_t HeaderCallback(char* data, size_t size, size_t nmemb, void* user) {
  Call* call = static_cast<Call*>(user);
  const size_t n = size * nmemb;
  absl::string_view line(data, n);
  if (absl::StartsWithIgnoreCase(line, "retry-after:")) {
    if (auto d = internal::ParseRetryAfter(line.substr(12))) call->retry_after = d;
  }
  return n;
}

// Called by libcurl once the call has a connection, just before the request goes out.
int PrereqCallback(void* user, char*, char*, int, int) {
  Call* call = static_cast<Call*>(user);
  if (!call->sent) {
    call->sent = true;
    --*call->unsent;
  }
  return CURL_PREREQFUNC_OK;
}

// `url` is the request's URL, with the peer's name and the unix socket when the config has them.
absl::Status CurlError(CURLcode code, const Call& call, const std::string& url) {
  const std::string detail =
      absl::StrCat(curl_easy_strerror(code), call.error[0] ? ": " : "", call.error);
  switch (code) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
      return absl::FailedPreconditionError(
          absl::StrCat("TLS verification of ", url, " failed: ", detail,
                       " (check certificate-authority / client certificate in the config)"));
    case CURLE_OPERATION_TIMEDOUT:
      return absl::DeadlineExceededError(absl::StrCat(url, ": ", detail));
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_WRITE_ERROR:
      return absl::CancelledError(absl::StrCat(url, ": cancelled"));
    default:
      return absl::UnavailableError(absl::StrCat(url, ": ", detail));
  }
}

class CurlTransport : public HttpTransport {
 public:
  // `epoll_fd` (owned from here on) already watches `waker`'s descriptor.
  CurlTransport(TransportConfig config, int epoll_fd, std::shared_ptr<Waker> waker)
      : config_(std::move(config)), token_(config_.bearer_token), epoll_fd_(epoll_fd), waker_(std::move(waker)) {
    if (!config_.token_file.empty()) token_file_.emplace(config_.token_file);
    multi_ = curl_multi_init();
    curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlTransport::OnSocket);
    curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlTransport::OnTimer);
    curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
    curl_multi_setopt(multi_, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    // Beyond this many streams per connection curl opens another connection, up to the limit.
    curl_multi_setopt(multi_, CURLMOPT_MAX_CONCURRENT_STREAMS, static_cast<long>(std::max(1, config_.streams_per_connection)));
    curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(std::max(1, config_.max_connections)));
    internal::WarnIfInsecure(config_);
    thread_ = std::thread([this] { Loop(); });
    pthread_setname_np(thread_.native_handle(), "oq-http");  // for top -H, perf and the tests
  }

  ~CurlTransport() override {
    inbox_.Stop();
    waker_->Wake();
    thread_.join();
    curl_multi_cleanup(multi_);  // may still call OnSocket(REMOVE): the epoll set stays open
    close(epoll_fd_);
  }

  void SendAsync(HttpRequest request, ResponseCallback done) override {
    Enqueue(internal::NewUnaryCall<Call>(std::move(request), std::move(done)));
  }

  bool OnTransportThread() const override { return std::this_thread::get_id() == thread_.get_id(); }

  std::unique_ptr<HttpStream> OpenStream(HttpRequest request, ChunkCallback on_chunk,
                                         StreamDoneCallback on_done) override {
    auto call = internal::NewStreamCall<Call>(std::move(request), std::move(on_chunk), std::move(on_done));
    auto handle = std::make_unique<CancellableStream>(call->stream, waker_);
    Enqueue(std::move(call));
    return handle;
  }

 private:
  void Enqueue(std::unique_ptr<Call> call) {
    if (inbox_.Push(call)) waker_->Wake();
    else Finish(std::move(call), absl::CancelledError("transport is shutting down"));
  }

  void SetUp(Call& call) {
    CURL* e = curl_easy_init();
    call.easy = e;
    call.max_body = config_.max_response_bytes;
    const std::string url = config_.server + call.request.path;
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_PRIVATE, &call);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, call.error);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);  // wait to multiplex rather than open connections
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(config_.connect_timeout)));
    if (!config_.unix_socket.empty()) curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, config_.unix_socket.c_str());
    curl_easy_setopt(e, CURLOPT_USERAGENT, config_.user_agent.c_str());
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, WriteCallback);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &call);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, HeaderCallback);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &call);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, PrereqCallback);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, &call);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");  // gzip for large lists
    const absl::Duration timeout = call.request.timeout > absl::ZeroDuration() ? call.request.timeout
                                   : call.stream                              ? absl::ZeroDuration()
                                                                              : config_.request_timeout;
    if (timeout > absl::ZeroDuration()) {
      curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(absl::ToInt64Milliseconds(timeout)));
    }
    if (call.stream) {
      // A dead peer on an idle watch: TCP keepalive notices it.
      curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    }
    const std::string& m = call.request.method;
    if (m == "GET") {
      curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m.c_str());
      if (m != "DELETE" || !call.request.body.empty()) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.request.body.size()));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, call.request.body.data());
      }
    }
    // TLS: trust only the configured CA when one is given, like client-go.
    if (config_.insecure_skip_tls_verify) {
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (!config_.ca_pem.empty() || !config_.ca_file.empty()) {
      curl_easy_setopt(e, CURLOPT_CAPATH, nullptr);
      if (!config_.ca_pem.empty()) {
        curl_blob blob{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &blob);
      } else {
        curl_easy_setopt(e, CURLOPT_CAINFO, config_.ca_file.c_str());
      }
    }
    if (!config_.client_cert_pem.empty()) {
      curl_blob blob{const_cast<char*>(config_.client_cert_pem.data()), config_.client_cert_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &blob);
      curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (!config_.client_cert_file.empty()) {
      curl_easy_setopt(e, CURLOPT_SSLCERT, config_.client_cert_file.c_str());
    }
    if (!config_.client_key_pem.empty()) {
      curl_blob blob{const_cast<char*>(config_.client_key_pem.data()), config_.client_key_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &blob);
      curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (!config_.client_key_file.empty()) {
      curl_easy_setopt(e, CURLOPT_SSLKEY, config_.client_key_file.c_str());
    }
    curl_slist* h = nullptr;
    h = curl_slist_append(h, "Accept: application/json");
    if (!call.request.body.empty() || m == "POST" || m == "PUT" || m == "PATCH") {
      h = curl_slist_append(h, absl::StrCat("Content-Type: ", call.request.content_type).c_str());
    }
    if (const std::string& token = BearerToken(); !token.empty()) {
      h = curl_slist_append(h, absl::StrCat("Authorization: Bearer ", token).c_str());
    }
    for (const auto& [name, value] : call.request.headers) {
      h = curl_slist_append(h, absl::StrCat(name, ": ", value).c_str());
    }
    // No "Expect: 100-continue" on HTTP/1.1 POSTs (slurmrestd): it would cost a round trip.
    h = curl_slist_append(h, "Expect:");
    call.headers = h;
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  }

  // The inline token, or the token file's current content; a file that cannot be read keeps
  // the last token (the server's 401 then says what is wrong).
  const std::string& BearerToken() {
    if (token_file_) {
      if (absl::StatusOr<std::string> t = token_file_->Read(); t.ok()) token_ = *std::move(t);
    }
    return token_;
  }

  void Start(std::unique_ptr<Call> call) {
    if (call->request.admit) {
      if (absl::Status s = call->request.admit(); !s.ok()) {
        Finish(std::move(call), s);
        return;
      }
    }
    SetUp(*call);
    call->unsent = &unsent_;
    ++unsent_;
    call->added = absl::Now();
    CURL* easy = call->easy;
    if (call->stream) streams_.push_back(easy);
    else ++unary_in_flight_;
    curl_multi_add_handle(multi_, easy);
    active_.emplace(easy, std::move(call));
  }

  static void Finish(std::unique_ptr<Call> call, absl::StatusOr<HttpResponse> result) {
    internal::Deliver(*call, std::move(result));
  }

  void Complete(CURL* easy, CURLcode code) {
    curl_multi_remove_handle(multi_, easy);
    auto it = active_.find(easy);
    if (it == active_.end()) return;
    std::unique_ptr<Call> call = std::move(it->second);
    active_.erase(it);
    if (!call->sent) --unsent_;
    if (call->stream) streams_.erase(std::remove(streams_.begin(), streams_.end(), easy), streams_.end());
    else --unary_in_flight_;
    if (call->stream && call->stream->cancelled.load()) {
      Finish(std::move(call), absl::CancelledError("stream cancelled"));
      return;
    }
    if (call->body_too_large) {
      absl::Status s = ResponseTooLargeError(Where(call->request), call->max_body);
      Finish(std::move(call), s);
      return;
    }
    if (code != CURLE_OK) {
      absl::Status s = CurlError(code, *call, Where(call->request));
      Finish(std::move(call), s);
      return;
    }
    HttpResponse r;
    r.status = static_cast<int>(call->ResponseCode());
    r.body = std::move(call->body);
    r.retry_after = call->retry_after;
    Finish(std::move(call), std::move(r));
  }

  std::string Where(const HttpRequest& request) const { return internal::Where(config_, request.path); }

  // Starts streams at once, and due calls in arrival order while fewer than
  // max_requests_in_flight unary calls are running; returns when the next delayed one is due
  // (InfiniteFuture: none). Why a cap: with thousands of easy handles in one multi handle (a backlog of
  // bindings), libcurl's bookkeeping walks them all on every turn (~20 % of the daemon's CPU in
  // the issue-12 profile) while only the connections' streams can move anyway. Why a heap:
  // the client's rate limiter delays calls (not_before), and scanning every delayed call on
  // every turn was quadratic in the backlog.
  absl::Time StartPending(bool* stopping) {
    std::deque<std::unique_ptr<Call>> incoming;
    *stopping = inbox_.Take(&incoming);
    const absl::Time now = absl::Now();
    for (auto& c : incoming) {
      if (c->stream) {
        Start(std::move(c));  // watches are long-lived: never queued behind unary calls
      } else {
        queue_.Add(std::move(c), now);
      }
    }
    const absl::Time next_delayed = queue_.Promote(now);
    while (queue_.HasReady() && unary_in_flight_ < max_in_flight_) Start(queue_.PopReady());
    return next_delayed;
  }

  void CancelStreams() {
    std::vector<CURL*> cancelled;
    for (CURL* e : streams_) {
      if (active_.at(e)->stream->cancelled.load()) cancelled.push_back(e);
    }
    for (CURL* e : cancelled) Complete(e, CURLE_ABORTED_BY_CALLBACK);
  }

  // CURLMOPT_SOCKETFUNCTION: keep the epoll set equal to what libcurl wants watched. A socket
  // in the set carries a non-null socketp (curl_multi_assign); the fallbacks cover a descriptor
  // number reused after a close that epoll already forgot.
  static int OnSocket(CURL* easy, curl_socket_t s, int what, void* userp, void* socketp) {
    auto* self = static_cast<CurlTransport*>(userp);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(self->epoll_fd_, EPOLL_CTL_DEL, s, nullptr);
      curl_multi_assign(self->multi_, s, nullptr);
      return 0;
    }
    Call* call = nullptr;
    if (easy) curl_easy_getinfo(easy, CURLINFO_PRIVATE, &call);  // null: curl's own handle
    if (call) call->had_socket = true;
    epoll_event ev{};
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    ev.data.fd = s;
    int rc = epoll_ctl(self->epoll_fd_, socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s, &ev);
    if (rc != 0 && errno == ENOENT) rc = epoll_ctl(self->epoll_fd_, EPOLL_CTL_ADD, s, &ev);
    if (rc != 0 && errno == EEXIST) rc = epoll_ctl(self->epoll_fd_, EPOLL_CTL_MOD, s, &ev);
    if (rc != 0) spdlog::error("http client: epoll_ctl on socket {}: {}", s, std::strerror(errno));
    curl_multi_assign(self->multi_, s, self);
    return 0;
  }

  // CURLMOPT_TIMERFUNCTION: when libcurl wants CURL_SOCKET_TIMEOUT next (-1: no timer).
  static int OnTimer(CURLM*, long timeout_ms, void* userp) {
    auto* self = static_cast<CurlTransport*>(userp);
    self->timer_due_ = timeout_ms < 0 ? absl::InfiniteFuture() : absl::Now() + absl::Milliseconds(timeout_ms);
    return 0;
  }

  void CompleteFinished() {
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
      if (msg->msg == CURLMSG_DONE) Complete(msg->easy_handle, msg->data.result);
    }
  }

  // libcurl 7.88 parks a transfer that waits for a connection to become multiplexable
  // (CURLOPT_PIPEWAIT) in a pending list, and takes it back only when a later run of *another*
  // transfer sees that a connection changed. curl_multi_socket_action runs only the transfers
  // whose socket or timer fired, so that run may never come: three watches opened at once on an
  // HTTP/1.1 server left one or two parked for good with idle watches
  // (TransportLoopTest.ShutdownWithWatchesOpenEndsThemAndReturns, 2 runs in 3). Such a transfer
  // has nothing on the wire (no socket asked for, request not sent), so taking it out of the
  // multi handle and adding it again is safe: it then finds the connection's state known. The
  // check runs only while some started call is unsent, every kRecheckUnsent.
  static constexpr absl::Duration kRecheckUnsent = absl::Milliseconds(50);

  void RestartParked(absl::Time now) {
    std::vector<Call*> parked;
    for (auto& [easy, call] : active_) {
      if (!call->sent && !call->had_socket && now - call->added >= kRecheckUnsent) parked.push_back(call.get());
    }
    for (Call* call : parked) {
      spdlog::debug("http client: restarting a transfer parked by libcurl: {}", Where(call->request));
      curl_multi_remove_handle(multi_, call->easy);
      call->added = now;
      curl_multi_add_handle(multi_, call->easy);
    }
  }

  void Loop() {
    bool stopping = false;
    constexpr int kMaxEvents = 64;
    epoll_event events[kMaxEvents];
    absl::Time last_check = absl::InfinitePast();
    while (true) {
      const absl::Time next_delayed = StartPending(&stopping);
      if (stopping) break;
      CancelStreams();
      absl::Time due = std::min(timer_due_, next_delayed);
      if (unsent_ > 0) due = std::min(due, last_check + kRecheckUnsent);
      const int n = epoll_wait(epoll_fd_, events, kMaxEvents, internal::WaitMillis(due, absl::Now()));
      if (n < 0 && errno != EINTR) {
        spdlog::error("http client: epoll_wait: {}", std::strerror(errno));
        absl::SleepFor(absl::Milliseconds(10));  // never spin on a broken epoll set
      }
      int running = 0;
      for (int i = 0; i < n; ++i) {
        if (events[i].data.fd == waker_->fd()) {
          waker_->Drain();  // new work or a cancellation: StartPending/CancelStreams next turn
          continue;
        }
        const uint32_t e = events[i].events;
        const int action = (e & (EPOLLIN | EPOLLHUP) ? CURL_CSELECT_IN : 0) |
                           (e & EPOLLOUT ? CURL_CSELECT_OUT : 0) | (e & EPOLLERR ? CURL_CSELECT_ERR : 0);
        curl_multi_socket_action(multi_, events[i].data.fd, action, &running);
      }
      if (timer_due_ <= absl::Now()) {
        timer_due_ = absl::InfiniteFuture();  // OnTimer may set the next one inside the call
        curl_multi_socket_action(multi_, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      if (const absl::Time now = absl::Now(); unsent_ > 0 && now >= last_check + kRecheckUnsent) {
        RestartParked(now);
        last_check = now;
      }
      CompleteFinished();
    }
    // Shut down: everything still pending or running ends as Cancelled.
    std::vector<CURL*> running;
    for (auto& [e, c] : active_) running.push_back(e);
    for (CURL* e : running) {
      curl_multi_remove_handle(multi_, e);
      std::unique_ptr<Call> call = std::move(active_[e]);
      active_.erase(e);
      Finish(std::move(call), absl::CancelledError("transport is shutting down"));
    }
    queue_.DrainAll([](std::unique_ptr<Call> c) {
      Finish(std::move(c), absl::CancelledError("transport is shutting down"));
    });
    std::deque<std::unique_ptr<Call>> incoming;
    inbox_.Take(&incoming);
    for (auto& c : incoming) Finish(std::move(c), absl::CancelledError("transport is shutting down"));
  }

  const TransportConfig config_;
  std::optional<TokenFile> token_file_;
  std::string token_;  // loop thread only
  CURLM* multi_ = nullptr;
  const int epoll_fd_;
  const std::shared_ptr<Waker> waker_;
  absl::Time timer_due_ = absl::InfiniteFuture();  // libcurl's timer (OnTimer); loop thread only
  std::thread thread_;
  internal::Inbox<Call> inbox_;
  // Loop thread only:
  absl::flat_hash_map<CURL*, std::unique_ptr<Call>> active_;
  std::vector<CURL*> streams_;
  CallQueue<Call> queue_;  // waiting for room under the cap
  int unary_in_flight_ = 0;
  int unsent_ = 0;  // started calls libcurl has not sent yet (PrereqCallback)
  const int max_in_flight_ = std::max(1, config_.max_requests_in_flight);
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTransport>> NewCurlTransport(const TransportConfig& config) {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (init != CURLE_OK) return absl::InternalError("curl_global_init failed");
  if (!absl::StartsWith(config.server, "https://") && !absl::StartsWith(config.server, "http://")) {
    return absl::InvalidArgumentError(absl::StrCat("server \"", config.server, "\" is not an http(s) URL"));
  }
  curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  if (!(info->features & CURL_VERSION_HTTP2)) {
    spdlog::warn("http client: libcurl has no HTTP/2; falling back to HTTP/1.1 connections");
  }
  auto waker = std::make_shared<Waker>();
  epoll_data_t tag{};
  tag.fd = waker->fd();
  absl::StatusOr<int> epoll_fd = internal::NewEpollWithWaker(*waker, tag, "http client");
  if (!epoll_fd.ok()) return epoll_fd.status();
  return std::unique_ptr<HttpTransport>(new CurlTransport(config, *epoll_fd, std::move(waker)));
}

}  // namespace onequeue::k8s

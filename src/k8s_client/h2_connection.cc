// The connection of the nghttp2 client: connect, TLS, the session's callbacks, reads and writes.
#include "k8s_client/h2_connection.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "k8s_client/h2_tls.h"
#include "spdlog/spdlog.h"

namespace onequeue::k8s::internal {

namespace {

// Flow control: a large window per stream and for the connection, so list pages and watches
// are not throttled by WINDOW_UPDATE round trips.
constexpr int32_t kStreamWindow = 16 << 20;
constexpr int32_t kConnectionWindow = 1 << 30;
// nghttp2's output is gathered up to this much before one write (fewer TLS records, syscalls).
constexpr size_t kWriteChunk = 64 << 10;
constexpr const char* kWhere = kWherePlaceholder;

nghttp2_session_callbacks* Callbacks(int (*on_header)(nghttp2_session*, const nghttp2_frame*, const uint8_t*,
                                                      size_t, const uint8_t*, size_t, uint8_t, void*),
                                     nghttp2_on_data_chunk_recv_callback on_data,
                                     nghttp2_on_frame_recv_callback on_frame_recv,
                                     nghttp2_on_frame_send_callback on_frame_send,
                                     nghttp2_on_stream_close_callback on_close) {
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
  return cbs;
}

nghttp2_nv Header(absl::string_view name, absl::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                    NGHTTP2_NV_FLAG_NONE};
}

bool HasBody(const HttpRequest& r) {
  return !r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH";
}

}  // namespace

H2Connection::H2Connection(uint64_t id, const H2Endpoint& endpoint, H2Owner* owner, int max_streams)
    : id_(id), ep_(endpoint), owner_(owner), max_streams_(std::max(1, max_streams)) {
  static nghttp2_session_callbacks* const callbacks =
      Callbacks(&OnHeaderCb, &OnDataCb, &OnFrameRecvCb, &OnFrameSendCb, &OnStreamCloseCb);
  nghttp2_option* option = nullptr;
  nghttp2_option_new(&option);
  // Until the server's SETTINGS say otherwise, assume our own stream limit (nghttp2's default
  // guess is 100); nghttp2 holds back what a lower limit does not admit.
  nghttp2_option_set_peer_max_concurrent_streams(option, static_cast<uint32_t>(max_streams_));
  nghttp2_session_client_new2(&session_, callbacks, this, option);
  nghttp2_option_del(option);
  const nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
  };
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
}

H2Connection::~H2Connection() {
  if (!dead_) Fail(absl::StatusCode::kCancelled, "transport is shutting down", false);
  nghttp2_session_del(session_);  // no callbacks: every call has left streams_ already
}

void H2Connection::Connect(absl::Time now) {
  connect_deadline_ = now + ep_.config->connect_timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  if (const int rc = getaddrinfo(ep_.host.c_str(), ep_.port.c_str(), &hints, &list); rc != 0) {
    Fail(absl::StatusCode::kUnavailable,
         absl::StrCat("Couldn't resolve host name: ", ep_.host, ": ", gai_strerror(rc)), false);
    return;
  }
  for (addrinfo* a = list; a; a = a->ai_next) {
    sockaddr_storage ss{};
    std::memcpy(&ss, a->ai_addr, a->ai_addrlen);
    addrs_.push_back(ss);
    addr_lens_.push_back(a->ai_addrlen);
  }
  freeaddrinfo(list);
  state_ = State::kConnecting;
  if (TryNextAddress()) OnConnected();
}

// Starts connecting to the next address: true when connected at once, false while in progress
// or when every address failed (then the connection is dead).
bool H2Connection::TryNextAddress() {
  while (next_addr_ < addrs_.size()) {
    const sockaddr_storage& ss = addrs_[next_addr_];
    const socklen_t len = addr_lens_[next_addr_++];
    fd_ = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      connect_error_ = std::strerror(errno);
      continue;
    }
    const int one = 1, idle = 60;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // A dead peer on an idle watch: TCP keepalive notices it (curl's default timings).
    setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd_, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd_, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof idle);
    epoll_event ev{};
    ev.events = interest_ = EPOLLIN | EPOLLOUT;
    ev.data.ptr = this;
    epoll_ctl(ep_.epoll_fd, EPOLL_CTL_ADD, fd_, &ev);
    if (connect(fd_, reinterpret_cast<const sockaddr*>(&ss), len) == 0) return true;
    if (errno == EINPROGRESS) {
      want_out_ = true;
      return false;
    }
    connect_error_ = std::strerror(errno);
    epoll_ctl(ep_.epoll_fd, EPOLL_CTL_DEL, fd_, nullptr);
    close(fd_);
    fd_ = -1;
  }
  Fail(absl::StatusCode::kUnavailable,
       absl::StrCat("Couldn't connect to server: Failed to connect to ", ep_.host, " port ", ep_.port, ": ",
                    connect_error_.empty() ? "no address" : connect_error_),
       false);
  return false;
}

void H2Connection::OnConnected() {
  want_out_ = false;
  if (!ep_.tls) {
    state_ = State::kOpen;
    open_ = true;
    return;
  }
  absl::StatusOr<SSL*> ssl = NewClientSsl(ep_.ssl_ctx, fd_, ep_.tls_host, !ep_.config->insecure_skip_tls_verify);
  if (!ssl.ok()) {
    Fail(absl::StatusCode::kInternal, std::string(ssl.status().message()), false);
    return;
  }
  ssl_ = *ssl;
  state_ = State::kHandshake;
  Handshake();
}

void H2Connection::Handshake() {
  ERR_clear_error();
  const int rc = SSL_do_handshake(ssl_);
  if (rc == 1) {
    want_out_ = false;
    if (absl::Status s = CheckNegotiatedH2(ssl_, kWhere); !s.ok()) {
      Fail(s.code(), std::string(s.message()), false);
      return;
    }
    state_ = State::kOpen;
    open_ = true;
    return;
  }
  const int err = SSL_get_error(ssl_, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
    want_out_ = err == SSL_ERROR_WANT_WRITE;
    return;
  }
  const absl::Status s = HandshakeError(ssl_, kWhere);
  Fail(s.code(), std::string(s.message()), false);
}

void H2Connection::OnEvents(uint32_t events) {
  if (dead_) return;
  if (state_ == State::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == 0 && !(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
      connect_error_ = std::strerror(err ? err : ECONNREFUSED);
      epoll_ctl(ep_.epoll_fd, EPOLL_CTL_DEL, fd_, nullptr);
      close(fd_);
      fd_ = -1;
      if (TryNextAddress()) OnConnected();
      return;
    }
    OnConnected();
    return;
  }
  if (state_ == State::kHandshake) {
    Handshake();
    return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ReadAll();
}

H2Connection::Io H2Connection::ReadSome(char* buf, size_t size, size_t* got, std::string* error) {
  if (ssl_) {
    ERR_clear_error();
    const int n = SSL_read(ssl_, buf, static_cast<int>(std::min<size_t>(size, INT32_MAX)));
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Io::kDone;
    }
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return Io::kBlocked;
    if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && errno == 0)) return Io::kEof;
    *error = err == SSL_ERROR_SYSCALL ? std::strerror(errno) : SslErrors("TLS error");
    return Io::kError;
  }
  const ssize_t n = read(fd_, buf, size);
  if (n > 0) {
    *got = static_cast<size_t>(n);
    return Io::kDone;
  }
  if (n == 0) return Io::kEof;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Io::kBlocked;
  *error = std::strerror(errno);
  return Io::kError;
}

H2Connection::Io H2Connection::WriteSome(const char* data, size_t size, size_t* wrote, std::string* error) {
  if (ssl_) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, data, static_cast<int>(std::min<size_t>(size, INT32_MAX)));
    if (n > 0) {
      *wrote = static_cast<size_t>(n);
      return Io::kDone;
    }
    const int err = SSL_get_error(ssl_, n);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return Io::kBlocked;
    *error = err == SSL_ERROR_SYSCALL ? std::strerror(errno) : SslErrors("TLS error");
    return Io::kError;
  }
  const ssize_t n = send(fd_, data, size, MSG_NOSIGNAL);
  if (n >= 0) {
    *wrote = static_cast<size_t>(n);
    return Io::kDone;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return Io::kBlocked;
  *error = std::strerror(errno);
  return Io::kError;
}

void H2Connection::ReadAll() {
  char buf[64 << 10];
  while (!dead_) {
    size_t got = 0;
    std::string error;
    switch (ReadSome(buf, sizeof buf, &got, &error)) {
      case Io::kBlocked:
        return;
      case Io::kEof:
        Fail(absl::StatusCode::kUnavailable, "Connection closed by the server", true);
        return;
      case Io::kError:
        Fail(absl::StatusCode::kUnavailable, absl::StrCat("Recv failure: ", error), true);
        return;
      case Io::kDone:
        break;
    }
    const ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const uint8_t*>(buf), got);
    if (rv < 0) {
      Fail(absl::StatusCode::kUnavailable,
           absl::StrCat("HTTP/2 protocol error: ", nghttp2_strerror(static_cast<int>(rv))), true);
      return;
    }
  }
}

// Appends nghttp2's pending frames to out_ up to kWriteChunk; false on a session error.
bool H2Connection::FillOutput() {
  if (out_offset_ == out_.size()) {
    out_.clear();
    out_offset_ = 0;
  }
  while (out_.size() - out_offset_ < kWriteChunk) {
    const uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session_, &data);
    if (n < 0) {
      Fail(absl::StatusCode::kUnavailable,
           absl::StrCat("HTTP/2 session error: ", nghttp2_strerror(static_cast<int>(n))), true);
      return false;
    }
    if (n == 0) break;
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  return true;
}

void H2Connection::Flush() {
  if (dead_) return;
  if (state_ == State::kOpen) {
    want_out_ = false;
    while (FillOutput() && out_offset_ < out_.size()) {
      size_t wrote = 0;
      std::string error;
      const Io io = WriteSome(out_.data() + out_offset_, out_.size() - out_offset_, &wrote, &error);
      if (io == Io::kBlocked) {
        want_out_ = true;
        break;
      }
      if (io == Io::kError) {
        Fail(absl::StatusCode::kUnavailable, absl::StrCat("Send failure: ", error), true);
        return;
      }
      out_offset_ += wrote;
    }
    if (dead_) return;
    if (!want_out_ && !nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) {
      // GOAWAY and every stream done: nothing more will come.
      Fail(absl::StatusCode::kUnavailable, "the server closed the connection (GOAWAY)", true);
      return;
    }
  }
  UpdateInterest();
}

void H2Connection::UpdateInterest() {
  const uint32_t want = EPOLLIN | (want_out_ ? EPOLLOUT : 0u);
  if (fd_ < 0 || want == interest_) return;
  epoll_event ev{};
  ev.events = interest_ = want;
  ev.data.ptr = this;
  epoll_ctl(ep_.epoll_fd, EPOLL_CTL_MOD, fd_, &ev);
}

bool H2Connection::HasRoom() const {
  if (dead_ || goaway_) return false;
  const uint32_t server = nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
  return streams_.size() < std::min<uint32_t>(static_cast<uint32_t>(max_streams_), std::max<uint32_t>(server, 1));
}

int32_t H2Connection::Submit(std::unique_ptr<H2Call> call, absl::string_view authorization) {
  if (dead_) {
    absl::Status error = ErrorFor(*call, fail_code_, fail_detail_);
    EndCall(std::move(call), std::move(error));
    return 0;
  }
  const HttpRequest& r = call->request;
  std::string path_buf;
  absl::string_view path = r.path;
  if (!ep_.base_path.empty()) path = path_buf = absl::StrCat(ep_.base_path, r.path);
  absl::InlinedVector<nghttp2_nv, 12> nv = {
      Header(":method", r.method), Header(":scheme", ep_.scheme), Header(":authority", ep_.authority),
      Header(":path", path), Header("user-agent", ep_.config->user_agent),
      Header("accept", "application/json")};
  const bool has_body = HasBody(r);
  if (has_body) nv.push_back(Header("content-type", r.content_type));
  if (!authorization.empty()) nv.push_back(Header("authorization", authorization));
  std::vector<std::string> lower;  // HTTP/2 header names are lower case
  lower.reserve(r.headers.size());
  for (const auto& [name, value] : r.headers) {
    nv.push_back(Header(lower.emplace_back(absl::AsciiStrToLower(name)), value));
  }
  nghttp2_data_provider body{};
  body.source.ptr = call.get();
  body.read_callback = &ReadBodyCb;
  const int32_t id = nghttp2_submit_request(session_, nullptr, nv.data(), nv.size(), has_body ? &body : nullptr,
                                            call.get());
  if (id < 0) {
    absl::Status error = absl::InternalError(absl::StrCat(Where(*call), ": HTTP/2 request refused: ", nghttp2_strerror(id)));
    EndCall(std::move(call), std::move(error));
    return 0;
  }
  call->stream_id = id;
  if (call->stream) watches_.push_back(id);
  streams_.emplace(id, std::move(call));
  return id;
}

ssize_t H2Connection::ReadBodyCb(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                                 nghttp2_data_source* source, void*) {
  auto* call = static_cast<H2Call*>(source->ptr);
  const std::string& body = call->request.body;
  const size_t n = std::min(length, body.size() - call->body_offset);
  std::memcpy(buf, body.data() + call->body_offset, n);
  call->body_offset += n;
  if (call->body_offset == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

absl::Status H2Connection::ErrorFor(const H2Call& call, absl::StatusCode code, const std::string& detail) const {
  const std::string where = Where(call);
  if (absl::StrContains(detail, kWhere)) return absl::Status(code, absl::StrReplaceAll(detail, {{kWhere, where}}));
  return absl::Status(code, absl::StrCat(where, ": ", detail));
}

H2Call* H2Connection::Find(int32_t stream_id) {
  auto it = streams_.find(stream_id);
  return it == streams_.end() ? nullptr : it->second.get();
}

void H2Connection::OnHeader(const nghttp2_frame* frame, absl::string_view name, absl::string_view value) {
  H2Call* call = Find(frame->hd.stream_id);
  if (!call) return;
  if (name == ":status") {
    int status = 0;
    if (absl::SimpleAtoi(value, &status) && status >= 200) call->response.status = status;  // not 1xx
  } else if (name == "retry-after") {
    if (auto d = ParseRetryAfter(value)) call->response.retry_after = d;
  }
}

void H2Connection::OnData(int32_t stream_id, const uint8_t* data, size_t len) {
  H2Call* call = Find(stream_id);
  if (!call || call->body_too_large || call->timed_out) return;
  const absl::string_view chunk(reinterpret_cast<const char*>(data), len);
  if (call->stream) {
    if (call->stream->cancelled.load(std::memory_order_relaxed)) return;  // reset on the next check
    if (call->Is2xx()) {
      call->on_chunk(chunk);
      return;
    }
  }
  const size_t max = ep_.config->max_response_bytes;
  if (!BodyFits(call->response.body.size(), len, max)) {
    call->body_too_large = true;
    std::string().swap(call->response.body);
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    return;
  }
  call->response.body.append(chunk.data(), chunk.size());
}

void H2Connection::OnStreamClose(int32_t stream_id, uint32_t error_code) {
  auto it = streams_.find(stream_id);
  if (it == streams_.end()) return;
  std::unique_ptr<H2Call> call = std::move(it->second);
  streams_.erase(it);
  if (call->stream) {
    watches_.erase(std::remove(watches_.begin(), watches_.end(), stream_id), watches_.end());
    spdlog::debug("http/2 client: stream {} of connection {} closed: error code {}, HTTP {}, ended {}, GOAWAY {}",
                  stream_id, id_, error_code, call->response.status, call->ended, goaway_);
  }
  if (call->ended && call->response.status != 0 && !call->timed_out && !call->body_too_large &&
      !(call->stream && call->stream->cancelled.load())) {
    EndCall(std::move(call), absl::OkStatus());  // the common case: no text to make
    return;
  }
  if (!call->timed_out && !call->body_too_large && !(call->stream && call->stream->cancelled.load()) &&
      (!call->sent || (error_code == NGHTTP2_REFUSED_STREAM && call->response.status == 0))) {
    owner_->Requeue(std::move(call));  // the server never processed it (GOAWAY, refused)
    return;
  }
  const std::string where = Where(*call);
  absl::Status error;
  if (call->stream && call->stream->cancelled.load()) {
    error = absl::CancelledError(absl::StrCat(where, ": cancelled"));
  } else if (call->timed_out) {
    error = absl::DeadlineExceededError(
        absl::StrCat(where, ": Operation timed out after ", absl::FormatDuration(call->timeout)));
  } else if (call->body_too_large) {
    error = ResponseTooLargeError(where, ep_.config->max_response_bytes);
  } else {
    error = absl::UnavailableError(absl::StrCat(where, ": HTTP/2 stream ended before the answer did: ",
                                                nghttp2_http2_strerror(error_code), " (error code ", error_code, ")"));
  }
  EndCall(std::move(call), std::move(error));
}

int H2Connection::OnHeaderCb(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                             const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  if (frame->hd.type == NGHTTP2_HEADERS) {
    static_cast<H2Connection*>(user)->OnHeader(frame, absl::string_view(reinterpret_cast<const char*>(name), namelen),
                                               absl::string_view(reinterpret_cast<const char*>(value), valuelen));
  }
  return 0;
}

int H2Connection::OnDataCb(nghttp2_session*, uint8_t, int32_t stream_id, const uint8_t* data, size_t len,
                           void* user) {
  static_cast<H2Connection*>(user)->OnData(stream_id, data, len);
  return 0;
}

int H2Connection::OnFrameRecvCb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<H2Connection*>(user);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
      if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) {
        if (H2Call* call = self->Find(frame->hd.stream_id)) call->ended = true;
      }
      break;
    case NGHTTP2_GOAWAY:
      // Streams above last_stream_id were not processed: nghttp2 closes them with
      // REFUSED_STREAM (requeued); no new ones go on this connection.
      self->goaway_ = true;
      self->owner_->OnGoaway();
      spdlog::debug("http/2 client: GOAWAY from {} (last stream {}, error {})", self->ep_.authority,
                    frame->goaway.last_stream_id, frame->goaway.error_code);
      break;
    default:
      break;
  }
  return 0;
}

int H2Connection::OnFrameSendCb(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
    if (H2Call* call = static_cast<H2Connection*>(user)->Find(frame->hd.stream_id)) call->sent = true;
  }
  return 0;
}

int H2Connection::OnStreamCloseCb(nghttp2_session*, int32_t stream_id, uint32_t error_code, void* user) {
  static_cast<H2Connection*>(user)->OnStreamClose(stream_id, error_code);
  return 0;
}

void H2Connection::CheckCancelled() {
  for (size_t i = 0; i < watches_.size();) {
    const int32_t id = watches_[i];
    H2Call* call = Find(id);
    if (!call || call->cancel_sent || !call->stream->cancelled.load()) {
      ++i;
      continue;
    }
    call->cancel_sent = true;
    if (open_) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);  // closes it
      ++i;
    } else {
      OnStreamClose(id, NGHTTP2_CANCEL);  // not on the wire yet: ends it now (and unlists it)
    }
  }
}

void H2Connection::Expire(int32_t stream_id) {
  H2Call* call = Find(stream_id);
  if (!call || call->timed_out) return;
  call->timed_out = true;
  // A queued HEADERS frame is cancelled by the reset; an open stream is closed by it.
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
  if (!open_) OnStreamClose(stream_id, NGHTTP2_CANCEL);
}

void H2Connection::Fail(absl::StatusCode code, const std::string& detail, bool requeue_unsent) {
  if (dead_) return;
  dead_ = true;
  fail_code_ = code;
  fail_detail_ = detail;
  if (fd_ >= 0) {
    epoll_ctl(ep_.epoll_fd, EPOLL_CTL_DEL, fd_, nullptr);
    close(fd_);
    fd_ = -1;
  }
  if (ssl_) {
    SSL_free(ssl_);
    ssl_ = nullptr;
  }
  if (!streams_.empty() && code != absl::StatusCode::kCancelled) {
    spdlog::debug("http/2 client: connection to {} ended with {} streams: {}", ep_.authority, streams_.size(), detail);
  }
  std::vector<std::unique_ptr<H2Call>> calls;
  calls.reserve(streams_.size());
  for (auto& [id, call] : streams_) calls.push_back(std::move(call));
  streams_.clear();
  watches_.clear();
  for (auto& call : calls) {
    const std::string where = Where(*call);
    if (call->stream && call->stream->cancelled.load()) {
      EndCall(std::move(call), absl::CancelledError(absl::StrCat(where, ": cancelled")));
    } else if (call->timed_out) {
      EndCall(std::move(call), absl::DeadlineExceededError(absl::StrCat(where, ": Operation timed out")));
    } else if (requeue_unsent && open_ && !call->sent) {
      owner_->Requeue(std::move(call));
    } else {
      absl::Status error = ErrorFor(*call, code, detail);
      EndCall(std::move(call), std::move(error));
    }
  }
}

}  // namespace onequeue::k8s::internal

// The h2c test server (h2c_test_server.h): one thread polls the listening socket, a wake-up pipe
// and every connection; nghttp2 parses and frames (nghttp2_session_mem_recv / mem_send), this
// file moves the bytes and decides the answers. Everything but the counters is the thread's own.
#include "h2c_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace onequeue::k8s::testing {

namespace {

struct RouteState {
  H2cRoute route;
  std::atomic<int> requests{0}, waiting{0}, peak_waiting{0}, open{0};
};

struct Stream {
  int32_t id = 0;
  H2cRequest request;
  std::shared_ptr<RouteState> route;  // null until the request is complete
  bool complete = false;              // the request ended (END_STREAM): an answer is due
  bool answered = false;              // headers submitted
  bool waiting = false;               // counted in route->waiting
  bool deferred = false;              // the data source said NGHTTP2_ERR_DEFERRED
  std::string out;                    // body bytes not yet framed
  size_t taken = 0;
  absl::Time answer_at = absl::InfiniteFuture();
  absl::Time next_chunk = absl::InfiniteFuture();
};

struct Connection {
  int fd = -1;
  nghttp2_session* session = nullptr;
  std::map<int32_t, std::unique_ptr<Stream>> streams;
  std::string outbuf;  // framed bytes not yet written to the socket
  bool dead = false;
  ~Connection() {
    if (session) nghttp2_session_del(session);
    if (fd >= 0) close(fd);
  }
};

std::string PathOnly(const std::string& path) { return path.substr(0, path.find('?')); }

}  // namespace

class H2cTestServer::Impl {
 public:
  Impl(int listen_fd, int port, int wake_read, int wake_write)
      : listen_fd_(listen_fd), port_(port), wake_read_(wake_read), wake_write_(wake_write) {
    nghttp2_session_callbacks_new(&callbacks_);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks_, OnBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(callbacks_, OnHeader);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks_, OnData);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks_, OnFrame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks_, OnStreamClose);
    thread_ = std::thread([this] { Loop(); });
  }

  ~Impl() {
    stop_.store(true);
    const char b = 1;
    [[maybe_unused]] ssize_t n = write(wake_write_, &b, 1);
    thread_.join();
    connections_.clear();
    contexts_.clear();
    nghttp2_session_callbacks_del(callbacks_);
    close(listen_fd_);
    close(wake_read_);
    close(wake_write_);
  }

  void AddRoute(const std::string& path, H2cRoute route) {
    auto state = std::make_shared<RouteState>();
    state->route = std::move(route);
    absl::MutexLock l(&mu_);
    routes_[path] = std::move(state);
  }

  std::shared_ptr<RouteState> Find(const std::string& path) const {
    absl::MutexLock l(&mu_);
    auto it = routes_.find(PathOnly(path));
    return it == routes_.end() ? nullptr : it->second;
  }

  int port() const { return port_; }
  int connections() const { return accepted_.load(); }

 private:
  // The connection a session belongs to and the server: nghttp2's user_data.
  struct Context {
    Impl* server;
    Connection* conn;
  };

  static Stream* StreamOf(void* user, int32_t id) {
    auto* ctx = static_cast<Context*>(user);
    auto it = ctx->conn->streams.find(id);
    return it == ctx->conn->streams.end() ? nullptr : it->second.get();
  }

  static int OnBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    auto stream = std::make_unique<Stream>();
    stream->id = frame->hd.stream_id;
    static_cast<Context*>(user)->conn->streams[stream->id] = std::move(stream);
    return 0;
  }

  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t, void* user) {
    Stream* s = StreamOf(user, frame->hd.stream_id);
    if (s == nullptr) return 0;
    const std::string n(reinterpret_cast<const char*>(name), namelen);
    const std::string v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":method") s->request.method = v;
    if (n == ":path") s->request.path = v;
    return 0;
  }

  static int OnData(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t len, void* user) {
    if (Stream* s = StreamOf(user, id)) s->request.body.append(reinterpret_cast<const char*>(data), len);
    return 0;
  }

  static int OnFrame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
    const bool request_frame = frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA;
    if (!request_frame || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
    Stream* s = StreamOf(user, frame->hd.stream_id);
    if (s == nullptr || s->complete) return 0;
    s->complete = true;
    s->route = static_cast<Context*>(user)->server->Find(s->request.path);
    if (s->route) {
      RouteState& r = *s->route;
      ++r.requests;
      ++r.open;
      const int now_waiting = ++r.waiting;
      int seen = r.peak_waiting.load();
      while (now_waiting > seen && !r.peak_waiting.compare_exchange_weak(seen, now_waiting)) {
      }
      s->waiting = true;
    }
    s->answer_at = absl::Now() + (s->route ? s->route->route.delay : absl::ZeroDuration());
    return 0;
  }

  static int OnStreamClose(nghttp2_session*, int32_t id, uint32_t, void* user) {
    auto* ctx = static_cast<Context*>(user);
    auto it = ctx->conn->streams.find(id);
    if (it == ctx->conn->streams.end()) return 0;
    Forget(*it->second);
    ctx->conn->streams.erase(it);
    return 0;
  }

  // The stream leaves the route's counters (closed, or its connection went).
  static void Forget(Stream& s) {
    if (!s.route) return;
    if (s.waiting) --s.route->waiting;
    s.waiting = false;
    --s.route->open;
    s.route = nullptr;
  }

  static ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                          nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    const size_t n = std::min(length, s->out.size() - s->taken);
    std::memcpy(buf, s->out.data() + s->taken, n);
    s->taken += n;
    if (s->taken == s->out.size()) {
      s->out.clear();
      s->taken = 0;
      const bool streaming = s->route && s->route->route.streaming;
      if (!streaming) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
      } else if (n == 0) {
        s->deferred = true;
        return NGHTTP2_ERR_DEFERRED;
      }
    }
    return static_cast<ssize_t>(n);
  }

  void Answer(Connection& c, Stream& s, absl::Time now) {
    s.answered = true;
    if (s.waiting) --s.route->waiting;
    s.waiting = false;
    const H2cRoute* route = s.route ? &s.route->route : nullptr;
    const std::string status = std::to_string(route ? route->status : 404);
    const std::string type = route ? route->content_type : "text/plain";
    s.out = route == nullptr ? "no route\n" : route->body ? route->body(s.request) : "";
    if (route && route->streaming && route->chunk_every > absl::ZeroDuration()) {
      s.next_chunk = now + route->chunk_every;
    }
    auto nv = [](const std::string& name, const std::string& value) {
      return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                        reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
                        NGHTTP2_NV_FLAG_NONE};
    };
    const std::string k_status = ":status", k_type = "content-type";
    const nghttp2_nv headers[] = {nv(k_status, status), nv(k_type, type)};
    nghttp2_data_provider provider{};
    provider.source.ptr = &s;
    provider.read_callback = ReadBody;
    nghttp2_submit_response(c.session, s.id, headers, 2, &provider);
  }

  // Due answers and chunks; returns when the next one is due.
  absl::Time RunTimers(absl::Time now) {
    absl::Time next = absl::InfiniteFuture();
    for (auto& c : connections_) {
      for (auto& [id, s] : c->streams) {
        if (s->complete && !s->answered) {
          if (s->answer_at <= now) Answer(*c, *s, now);
          else next = std::min(next, s->answer_at);
        }
        if (s->answered && s->next_chunk <= now && s->route) {
          s->out += s->route->route.chunk;
          s->next_chunk = now + s->route->route.chunk_every;
          if (s->deferred) {
            s->deferred = false;
            nghttp2_session_resume_data(c->session, s->id);
          }
        }
        if (s->answered && s->next_chunk != absl::InfiniteFuture()) next = std::min(next, s->next_chunk);
      }
    }
    return next;
  }

  void Accept() {
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      auto ctx = std::make_unique<Context>(Context{this, c.get()});
      nghttp2_session_server_new(&c->session, callbacks_, ctx.get());
      contexts_[c.get()] = std::move(ctx);
      const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
                                                 {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
      nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 2);
      connections_.push_back(std::move(c));
      ++accepted_;
    }
  }

  void Receive(Connection& c) {
    char buf[64 << 10];
    while (true) {
      const ssize_t n = read(c.fd, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        c.dead = true;
        return;
      }
      if (n < 0) return;
      if (nghttp2_session_mem_recv(c.session, reinterpret_cast<const uint8_t*>(buf), n) < 0) {
        c.dead = true;
        return;
      }
    }
  }

  // Frames what nghttp2 has to send (up to 1 MiB at a time) and writes it until the socket is
  // full; what is left waits for POLLOUT.
  void Flush(Connection& c) {
    while (true) {
      size_t produced = 0;
      while (c.outbuf.size() < (1u << 20)) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(c.session, &data);
        if (n < 0) c.dead = true;
        if (n <= 0) break;
        c.outbuf.append(reinterpret_cast<const char*>(data), n);
        produced += n;
      }
      while (!c.outbuf.empty()) {
        const ssize_t n = send(c.fd, c.outbuf.data(), c.outbuf.size(), MSG_NOSIGNAL);
        if (n < 0) {
          if (errno != EAGAIN && errno != EINTR) c.dead = true;
          break;
        }
        c.outbuf.erase(0, n);
      }
      if (c.dead || !c.outbuf.empty() || produced == 0) break;
    }
    if (c.outbuf.empty() && !nghttp2_session_want_read(c.session) && !nghttp2_session_want_write(c.session)) {
      c.dead = true;
    }
  }

  // Connections that ended: their streams leave the counters; the session goes before its context.
  void Reap() {
    std::vector<std::unique_ptr<Connection>> dead;
    for (auto& c : connections_) {
      if (!c->dead) continue;
      for (auto& [id, s] : c->streams) Forget(*s);
      c->streams.clear();
      dead.push_back(std::move(c));
    }
    connections_.erase(std::remove(connections_.begin(), connections_.end(), nullptr), connections_.end());
    for (auto& c : dead) {
      Connection* key = c.get();
      c.reset();
      contexts_.erase(key);
    }
  }

  void Loop() {
    absl::Time next = absl::InfiniteFuture();
    while (!stop_.load()) {
      std::vector<pollfd> fds = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
      for (auto& c : connections_) {
        fds.push_back({c->fd, static_cast<short>(POLLIN | (c->outbuf.empty() ? 0 : POLLOUT)), 0});
      }
      int timeout = -1;
      if (next != absl::InfiniteFuture()) {
        timeout = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(next - absl::Now()) + 1));
      }
      if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
      if (fds[1].revents) {
        char drain[64];
        [[maybe_unused]] ssize_t n = read(wake_read_, drain, sizeof drain);
      }
      if (fds[0].revents & POLLIN) Accept();
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) Receive(*connections_[i - 2]);
      }
      next = RunTimers(absl::Now());
      for (auto& c : connections_) {
        if (!c->dead) Flush(*c);
      }
      Reap();
    }
  }

  const int listen_fd_, port_, wake_read_, wake_write_;
  nghttp2_session_callbacks* callbacks_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<RouteState>> routes_ ABSL_GUARDED_BY(mu_);
  // The server thread's own:
  std::vector<std::unique_ptr<Connection>> connections_;
  absl::flat_hash_map<Connection*, std::unique_ptr<Context>> contexts_;
  std::thread thread_;
};

absl::StatusOr<std::unique_ptr<H2cTestServer>> H2cTestServer::Start() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, 128) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("listen on 127.0.0.1: ", std::strerror(err)));
  }
  int wake[2];
  if (pipe2(wake, O_NONBLOCK | O_CLOEXEC) != 0) {
    close(fd);
    return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
  }
  auto impl = std::make_unique<Impl>(fd, ntohs(addr.sin_port), wake[0], wake[1]);
  return std::unique_ptr<H2cTestServer>(new H2cTestServer(std::move(impl)));
}

H2cTestServer::H2cTestServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
H2cTestServer::~H2cTestServer() = default;

void H2cTestServer::Route(const std::string& path, H2cRoute route) { impl_->AddRoute(path, std::move(route)); }
std::string H2cTestServer::url() const { return absl::StrCat("http://127.0.0.1:", impl_->port()); }
int H2cTestServer::port() const { return impl_->port(); }
int H2cTestServer::connections() const { return impl_->connections(); }

int H2cTestServer::requests(const std::string& path) const {
  auto r = impl_->Find(path);
  return r ? r->requests.load() : 0;
}
int H2cTestServer::waiting(const std::string& path) const {
  auto r = impl_->Find(path);
  return r ? r->waiting.load() : 0;
}
int H2cTestServer::peak_waiting(const std::string& path) const {
  auto r = impl_->Find(path);
  return r ? r->peak_waiting.load() : 0;
}
int H2cTestServer::open(const std::string& path) const {
  auto r = impl_->Find(path);
  return r ? r->open.load() : 0;
}

}  // namespace onequeue::k8s::testing

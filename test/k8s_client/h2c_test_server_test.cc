// The h2c test server itself, spoken to by libcurl with HTTP/2 prior knowledge (not through
// onequeue's transports, whose tests rely on it): it answers HTTP/2, counts requests waiting for a
// delayed answer at once, streams until the client goes, and sends a large body whole.
#include "h2c_test_server.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace onequeue::k8s::testing {
namespace {

struct Fetched {
  long status = 0;
  long version = 0;
  std::string body;
  CURLcode code = CURLE_OK;
  size_t abort_after = 0;  // > 0: abort the transfer once the body has this many bytes
};

size_t Append(char* data, size_t size, size_t n, void* user) {
  auto* f = static_cast<Fetched*>(user);
  f->body.append(data, size * n);
  if (f->abort_after > 0 && f->body.size() >= f->abort_after) return 0;
  return size * n;
}

CURL* Easy(const std::string& url, Fetched* f) {
  CURL* e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
  curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 20000L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, f);
  if (std::getenv("H2C_TEST_VERBOSE")) curl_easy_setopt(e, CURLOPT_VERBOSE, 1L);
  return e;
}

void Done(CURL* e, Fetched* f) {
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &f->status);
  curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &f->version);
}

Fetched Get(const std::string& url, size_t abort_after = 0) {
  Fetched f;
  f.abort_after = abort_after;
  CURL* e = Easy(url, &f);
  f.code = curl_easy_perform(e);
  Done(e, &f);
  curl_easy_cleanup(e);
  return f;
}

// A minimal HTTP/2 client over nghttp2's client API on one blocking connection: what libcurl
// 7.88.1 cannot do with h2c (many streams on one connection, a stream reset by the client).
class H2Client {
 public:
  struct Answer {
    int status = 0;
    std::string body;
    bool closed = false;
  };
  explicit H2Client(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // window updates go at once
    nghttp2_session_callbacks* cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(
        cb, [](nghttp2_session*, const nghttp2_frame* f, const uint8_t* n, size_t nl, const uint8_t* v, size_t vl,
               uint8_t, void* user) {
          if (std::string(reinterpret_cast<const char*>(n), nl) == ":status") {
            static_cast<H2Client*>(user)->answers_[f->hd.stream_id].status =
                std::stoi(std::string(reinterpret_cast<const char*>(v), vl));
          }
          return 0;
        });
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
        cb, [](nghttp2_session*, uint8_t, int32_t id, const uint8_t* d, size_t n, void* user) {
          static_cast<H2Client*>(user)->answers_[id].body.append(reinterpret_cast<const char*>(d), n);
          return 0;
        });
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, [](nghttp2_session*, int32_t id, uint32_t, void* user) {
      static_cast<H2Client*>(user)->answers_[id].closed = true;
      return 0;
    });
    nghttp2_session_client_new(&session_, cb, this);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
  }
  ~H2Client() {
    nghttp2_session_del(session_);
    close(fd_);
  }
  bool connected() const { return connected_; }
  int32_t Get(const std::string& path) {
    const std::string m = ":method", get = "GET", s = ":scheme", http = "http", a = ":authority",
                      host = "127.0.0.1", p = ":path";
    auto nv = [](const std::string& n, const std::string& v) {
      return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                        reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                        NGHTTP2_NV_FLAG_NONE};
    };
    const nghttp2_nv headers[] = {nv(m, get), nv(s, http), nv(a, host), nv(p, path)};
    return nghttp2_submit_request(session_, nullptr, headers, 4, nullptr, nullptr);
  }
  void Reset(int32_t id) { nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL); }
  // Sends what is pending and reads until `done` holds (false after `timeout`).
  bool RunUntil(const std::function<bool()>& done, absl::Duration timeout = absl::Seconds(10)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (!done()) {
      const uint8_t* data = nullptr;
      for (ssize_t n; (n = nghttp2_session_mem_send(session_, &data)) > 0;) {
        if (send(fd_, data, n, MSG_NOSIGNAL) != n) return false;
      }
      if (done()) break;
      if (absl::Now() > deadline) return false;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      uint8_t buf[16384];
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n <= 0 || nghttp2_session_mem_recv(session_, buf, n) < 0) return false;
    }
    return true;
  }
  Answer& answer(int32_t id) { return answers_[id]; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, Answer> answers_;
};

class H2cTestServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = H2cTestServer::Start();
    ASSERT_TRUE(s.ok()) << s.status();
    server_ = *std::move(s);
    server_->Route("/fast", {.content_type = "text/plain", .body = [](const H2cRequest&) { return "fast"; }});
    server_->Route("/echo", {.body = [](const H2cRequest& r) { return r.method + " " + r.path + " " + r.body; }});
    server_->Route("/slow", {.delay = absl::Milliseconds(200), .body = [](const H2cRequest&) { return "ok"; }});
    server_->Route("/big", {.body = [](const H2cRequest&) { return std::string(3 << 20, 'x'); }});
    server_->Route("/stream", {.body = [](const H2cRequest&) { return "{}\n"; },
                               .streaming = true,
                               .chunk_every = absl::Milliseconds(10)});
  }
  std::unique_ptr<H2cTestServer> server_;
};

TEST_F(H2cTestServerTest, AnswersHttp2WithPriorKnowledge) {
  Fetched f = Get(server_->url() + "/fast");
  ASSERT_EQ(f.code, CURLE_OK) << curl_easy_strerror(f.code);
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.version, CURL_HTTP_VERSION_2_0);
  EXPECT_EQ(f.body, "fast");
  EXPECT_EQ(server_->requests("/fast"), 1);
  EXPECT_EQ(Get(server_->url() + "/nowhere").status, 404);
}

TEST_F(H2cTestServerTest, HandlersSeeTheMethodPathAndBody) {
  Fetched f;
  CURL* e = Easy(server_->url() + "/echo?x=1", &f);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PATCH");
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, "hello");
  f.code = curl_easy_perform(e);
  Done(e, &f);
  curl_easy_cleanup(e);
  ASSERT_EQ(f.code, CURLE_OK) << curl_easy_strerror(f.code);
  EXPECT_EQ(f.body, "PATCH /echo?x=1 hello");
}

// Over nghttp2's client API: libcurl 7.88.1 over h2c now and then stalls 200 ms, once in a while
// for good, in the middle of a large body (not this server's doing: the same body to nghttp2's
// client never stalls, 500 runs).
TEST_F(H2cTestServerTest, SendsALargeBodyWhole) {
  H2Client client(server_->port());
  ASSERT_TRUE(client.connected());
  const absl::Time start = absl::Now();
  const int32_t big = client.Get("/big");
  ASSERT_TRUE(client.RunUntil([&] { return client.answer(big).closed; }));
  EXPECT_EQ(client.answer(big).status, 200);
  EXPECT_EQ(client.answer(big).body, std::string(3 << 20, 'x'));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// Runs `multi` until every transfer is done; each must succeed.
void RunAll(CURLM* multi) {
  int running = 1;
  while (running > 0) {
    curl_multi_perform(multi, &running);
    if (running > 0) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
      if (m->msg == CURLMSG_DONE) EXPECT_EQ(m->data.result, CURLE_OK) << curl_easy_strerror(m->data.result);
    }
  }
}

// 20 requests wait for their delayed answers at the same time. Each on its own connection:
// libcurl 7.88.1 cannot reuse an h2c prior-knowledge connection (curl/curl#10634, fixed by
// curl/curl#10643 after 7.88.1: "Error in the HTTP2 framing layer"), so it cannot multiplex here.
TEST_F(H2cTestServerTest, CountsTheRequestsWaitingForADelayedAnswerAtOnce) {
  CURLM* multi = curl_multi_init();
  std::vector<std::unique_ptr<Fetched>> fetched;
  std::vector<CURL*> easies;
  for (int i = 0; i < 20; ++i) {
    fetched.push_back(std::make_unique<Fetched>());
    easies.push_back(Easy(server_->url() + "/slow", fetched.back().get()));
    curl_easy_setopt(easies.back(), CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(easies.back(), CURLOPT_FORBID_REUSE, 1L);
    curl_multi_add_handle(multi, easies.back());
  }
  RunAll(multi);
  for (size_t i = 0; i < easies.size(); ++i) {
    Done(easies[i], fetched[i].get());
    EXPECT_EQ(fetched[i]->status, 200);
    EXPECT_EQ(fetched[i]->body, "ok");
    curl_multi_remove_handle(multi, easies[i]);
    curl_easy_cleanup(easies[i]);
  }
  curl_multi_cleanup(multi);
  EXPECT_EQ(server_->connections(), 20);
  EXPECT_EQ(server_->requests("/slow"), 20);
  EXPECT_GE(server_->peak_waiting("/slow"), 10) << "the delayed answers were not concurrent";
  EXPECT_LE(server_->peak_waiting("/slow"), 20);
  EXPECT_EQ(server_->waiting("/slow"), 0);
}

TEST_F(H2cTestServerTest, StreamsChunksUntilTheClientGoes) {
  const absl::Time start = absl::Now();
  Fetched f = Get(server_->url() + "/stream", /*abort_after=*/30);  // the first chunk and 9 more
  EXPECT_EQ(f.code, CURLE_WRITE_ERROR);
  EXPECT_GE(f.body.size(), 30u);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(80)) << "the chunks came at once";
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (server_->open("/stream") > 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(server_->open("/stream"), 0) << "the server did not notice that the client went";
  EXPECT_EQ(server_->requests("/stream"), 1);
}

// Many streams on one connection: the way the nghttp2 client uses a server.
TEST_F(H2cTestServerTest, MultiplexesRequestsOnOneConnection) {
  H2Client client(server_->port());
  ASSERT_TRUE(client.connected());
  std::vector<int32_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(client.Get("/slow"));
  ids.push_back(client.Get("/big"));
  ASSERT_TRUE(client.RunUntil([&] {
    for (int32_t id : ids) {
      if (!client.answer(id).closed) return false;
    }
    return true;
  }));
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(client.answer(ids[i]).status, 200);
    EXPECT_EQ(client.answer(ids[i]).body, "ok");
  }
  EXPECT_EQ(client.answer(ids[20]).body.size(), size_t{3} << 20);
  EXPECT_EQ(server_->connections(), 1);
  EXPECT_EQ(server_->peak_waiting("/slow"), 20) << "the 20 delayed answers were not concurrent";
  EXPECT_EQ(server_->waiting("/slow"), 0);
}

// A stream the client resets ends on the server; the connection and its other streams go on.
TEST_F(H2cTestServerTest, AStreamResetByTheClientEndsAndTheConnectionStays) {
  H2Client client(server_->port());
  ASSERT_TRUE(client.connected());
  const int32_t watch = client.Get("/stream");
  ASSERT_TRUE(client.RunUntil([&] { return client.answer(watch).body.size() >= 15; }));
  EXPECT_EQ(client.answer(watch).status, 200);
  EXPECT_EQ(server_->open("/stream"), 1);
  client.Reset(watch);
  ASSERT_TRUE(client.RunUntil([&] { return server_->open("/stream") == 0; }));
  const int32_t fast = client.Get("/fast");
  ASSERT_TRUE(client.RunUntil([&] { return client.answer(fast).closed; }));
  EXPECT_EQ(client.answer(fast).body, "fast");
  EXPECT_EQ(server_->connections(), 1);
}

}  // namespace
}  // namespace onequeue::k8s::testing

// The transports' event loops, against a real server on 127.0.0.1, in process: the loop sleeps
// while nothing happens, and still wakes for new work, a cancellation, timeouts, a delayed call
// and shutdown. Each case runs over both pairs (transport_pair.h): libcurl
// (curl_multi_socket_action on epoll) against civetweb (HTTP/1.1), and the nghttp2 client against
// the h2c test server (HTTP/2). LoopThreadSwitches finds the loop thread by its name: "oq-http"
// (libcurl) or "oq-h2" (nghttp2), so a profile tells the clients apart.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CivetServer.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "h2c_test_server.h"
#include "k8s_client/http_transport.h"
#include "transport_pair.h"

namespace onequeue::k8s {
namespace {

using testing::H2cRequest;
using testing::H2cTestServer;
using testing::ServerPair;

class FastHandler : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nfast");
    return true;
  }
};

// Holds the request until released (or 10 s), then answers.
class HangingHandler : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    release_.WaitForNotificationWithTimeout(absl::Seconds(10));
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nlate");
    return true;
  }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }

 private:
  absl::Notification release_;
};

// A watch: one chunk at once, then nothing until released (or 10 s); the connection stays open.
class WatchHandler : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
    mg_printf(conn, "3\r\n{}\n\r\n");
    release_.WaitForNotificationWithTimeout(absl::Seconds(10));
    mg_printf(conn, "0\r\n\r\n");
    return true;
  }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }

 private:
  absl::Notification release_;
};

// The name each client gives its loop thread.
const char* LoopThreadName(HttpClient client) { return client == HttpClient::kCurl ? "oq-http" : "oq-h2"; }

// Voluntary context switches of the transport's loop thread (named `thread_name`): each time it
// blocks in epoll_wait and wakes counts one. -1 when there is not exactly one such thread.
int64_t LoopThreadSwitches(absl::string_view thread_name) {
  int64_t found = -1;
  int threads = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != thread_name) continue;
    ++threads;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);) {
      if (absl::StartsWith(line, "voluntary_ctxt_switches:")) {
        absl::string_view v = line;
        v.remove_prefix(absl::string_view("voluntary_ctxt_switches:").size());
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
        if (!absl::SimpleAtoi(v, &found)) found = -1;
      }
    }
  }
  return threads == 1 ? found : -1;
}

struct Answer {
  absl::Notification done;
  absl::StatusOr<HttpResponse> response;
  absl::Time at;
};

HttpTransport::ResponseCallback Into(Answer* a) {
  return [a](absl::StatusOr<HttpResponse> r) {
    a->response = std::move(r);
    a->at = absl::Now();
    a->done.Notify();
  };
}

// A stream's first chunk and its end.
struct Watch {
  absl::Notification first_chunk, ended;
  absl::Status status;
  std::unique_ptr<HttpStream> handle;
};

class TransportLoopTest : public ::testing::TestWithParam<ServerPair> {
 protected:
  void SetUp() override {
    if (GetParam() == ServerPair::kCurlCivetweb) {
      server_ = testing::StartCivetweb(16, {{"/fast", &fast_}, {"/hang", &hang_}, {"/watch", &watch_}}, &url_);
      ASSERT_NE(server_, nullptr);
    } else {
      // The same three: an answer at once, one after 10 s, and a watch that sends one chunk
      // and then nothing while it stays open.
      auto h2c = H2cTestServer::Start();
      ASSERT_TRUE(h2c.ok()) << h2c.status();
      h2c_ = *std::move(h2c);
      h2c_->Route("/fast", {.content_type = "text/plain", .body = [](const H2cRequest&) { return "fast"; }});
      h2c_->Route("/hang", {.content_type = "text/plain", .delay = absl::Seconds(10),
                            .body = [](const H2cRequest&) { return "late"; }});
      h2c_->Route("/watch", {.body = [](const H2cRequest&) { return "{}\n"; }, .streaming = true});
      url_ = h2c_->url();
    }
  }
  void TearDown() override {
    hang_.Release();
    watch_.Release();
    server_.reset();
    h2c_.reset();
  }

  std::unique_ptr<HttpTransport> Transport() {
    TransportConfig config;
    config.client = testing::ClientOf(GetParam());
    config.server = url_;
    auto t = NewHttpTransport(config);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }

  void Open(HttpTransport* t, Watch* w) {
    HttpRequest r;
    r.path = "/watch";
    w->handle = t->OpenStream(
        std::move(r),
        [w](absl::string_view) {
          if (!w->first_chunk.HasBeenNotified()) w->first_chunk.Notify();
        },
        [w](absl::Status s) {
          w->status = s;
          w->ended.Notify();
        });
  }

  FastHandler fast_;
  HangingHandler hang_;
  WatchHandler watch_;
  std::unique_ptr<CivetServer> server_;
  std::unique_ptr<H2cTestServer> h2c_;
  std::string url_;
};

TEST_P(TransportLoopTest, AnIdleTransportWithAnOpenWatchDoesNotWakeUp) {
  auto transport = Transport();
  ASSERT_NE(transport, nullptr);
  Watch w;
  Open(transport.get(), &w);
  ASSERT_TRUE(w.first_chunk.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(200));  // let the connection settle
  const char* thread_name = LoopThreadName(testing::ClientOf(GetParam()));
  const int64_t before = LoopThreadSwitches(thread_name);
  ASSERT_GE(before, 0) << "no single thread named " << thread_name;
  absl::SleepFor(absl::Seconds(2));
  const int64_t after = LoopThreadSwitches(thread_name);
  // The polling loop woke every 200 ms (10 times here); the event loop sleeps in epoll_wait.
  EXPECT_LE(after - before, 2) << "the loop woke up with nothing to do";
  EXPECT_FALSE(w.ended.HasBeenNotified());
}

TEST_P(TransportLoopTest, ARequestSubmittedWhileTheLoopSleepsStartsPromptly) {
  auto transport = Transport();
  ASSERT_NE(transport, nullptr);
  absl::SleepFor(absl::Milliseconds(300));  // the loop is blocked in epoll_wait, no timeout
  Answer a;
  const absl::Time sent = absl::Now();
  HttpRequest r;
  r.path = "/fast";
  transport->SendAsync(std::move(r), Into(&a));
  ASSERT_TRUE(a.done.WaitForNotificationWithTimeout(absl::Seconds(5))) << "the loop was not woken";
  ASSERT_TRUE(a.response.ok()) << a.response.status();
  EXPECT_EQ(a.response->body, "fast");
  EXPECT_LT(a.at - sent, absl::Seconds(1));
}

TEST_P(TransportLoopTest, ARequestTimeoutFiresWhileNothingElseHappens) {
  auto transport = Transport();
  ASSERT_NE(transport, nullptr);
  Answer a;
  const absl::Time sent = absl::Now();
  HttpRequest r;
  r.path = "/hang";
  r.timeout = absl::Milliseconds(300);
  transport->SendAsync(std::move(r), Into(&a));
  ASSERT_TRUE(a.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_EQ(a.response.status().code(), absl::StatusCode::kDeadlineExceeded) << a.response.status();
  EXPECT_GE(a.at - sent, absl::Milliseconds(250));
  EXPECT_LT(a.at - sent, absl::Seconds(3)) << "the request's timer did not wake the loop";
}

TEST_P(TransportLoopTest, ADelayedCallStartsWhenDueWithoutOtherTraffic) {
  auto transport = Transport();
  ASSERT_NE(transport, nullptr);
  Answer a;
  const absl::Time sent = absl::Now();
  HttpRequest r;
  r.path = "/fast";
  r.not_before = sent + absl::Milliseconds(300);
  transport->SendAsync(std::move(r), Into(&a));
  ASSERT_TRUE(a.done.WaitForNotificationWithTimeout(absl::Seconds(5))) << "the delayed call never started";
  ASSERT_TRUE(a.response.ok()) << a.response.status();
  EXPECT_GE(a.at - sent, absl::Milliseconds(300));
  EXPECT_LT(a.at - sent, absl::Seconds(3));
}

TEST_P(TransportLoopTest, CancellingAnIdleWatchEndsItPromptly) {
  auto transport = Transport();
  ASSERT_NE(transport, nullptr);
  Watch w;
  Open(transport.get(), &w);
  ASSERT_TRUE(w.first_chunk.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time cancelled = absl::Now();
  w.handle->Cancel();
  ASSERT_TRUE(w.ended.WaitForNotificationWithTimeout(absl::Seconds(5))) << "Cancel() did not wake the loop";
  EXPECT_EQ(w.status.code(), absl::StatusCode::kCancelled) << w.status;
  EXPECT_LT(absl::Now() - cancelled, absl::Seconds(1));
}

// libcurl parks the second and third watch until the first connection's protocol is known
// (CURLOPT_PIPEWAIT) and, driven by socket events alone, may never take them back; the loop
// restarts such parked transfers (CurlTransport::RestartParked). The nghttp2 client: three
// streams opened at once on a connection still being set up all start.
TEST_P(TransportLoopTest, WatchesOpenedAtOnceAllStart) {
  auto transport = Transport();
  ASSERT_NE(transport, nullptr);
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < 3; ++i) {  // at most 4: HTTP/1.1, MAX_HOST_CONNECTIONS
    watches.push_back(std::make_unique<Watch>());
    Open(transport.get(), watches.back().get());
  }
  for (auto& w : watches) {
    EXPECT_TRUE(w->first_chunk.WaitForNotificationWithTimeout(absl::Seconds(5))) << "a watch never started";
  }
}

TEST_P(TransportLoopTest, ShutdownWithWatchesOpenEndsThemAndReturns) {
  auto transport = Transport();
  ASSERT_NE(transport, nullptr);
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < 3; ++i) {  // at most 4: HTTP/1.1, MAX_HOST_CONNECTIONS
    watches.push_back(std::make_unique<Watch>());
    Open(transport.get(), watches.back().get());
  }
  for (auto& w : watches) ASSERT_TRUE(w->first_chunk.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time start = absl::Now();
  transport.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  for (auto& w : watches) {
    ASSERT_TRUE(w->ended.HasBeenNotified());
    EXPECT_EQ(w->status.code(), absl::StatusCode::kCancelled) << w->status;
    w->handle->Cancel();  // after the transport is gone: harmless
  }
}

INSTANTIATE_TEST_SUITE_P(Pairs, TransportLoopTest, testing::AllPairs(), testing::PairName);

}  // namespace
}  // namespace onequeue::k8s

// The transports' queue in front of the wire, against a real server on 127.0.0.1, in process:
// at most max_requests_in_flight unary requests are on the wire at once, the rest wait in arrival
// order, and a synchronous call (a caller blocks on it) goes ahead of the queued ones. Each case
// runs over both pairs (transport_pair.h): libcurl against civetweb (HTTP/1.1), and the nghttp2
// client against the h2c test server (HTTP/2, where every request multiplexes on one connection).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "CivetServer.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "h2c_test_server.h"
#include "k8s_client/http_transport.h"
#include "transport_pair.h"

namespace onequeue::k8s {
namespace {

using testing::H2cRequest;
using testing::H2cTestServer;
using testing::ServerPair;

// Answers every GET after `delay`, counting how many requests it serves at once.
class CountingHandler : public CivetHandler {
 public:
  explicit CountingHandler(std::chrono::milliseconds delay) : delay_(delay) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const int now = ++concurrent_;
    int seen = peak_.load();
    while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(delay_);
    --concurrent_;
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok");
    return true;
  }
  int peak() const { return peak_.load(); }

 private:
  std::chrono::milliseconds delay_;
  std::atomic<int> concurrent_{0}, peak_{0};
};

class FastHandler : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nfast");
    return true;
  }
};

class TransportQueueTest : public ::testing::TestWithParam<ServerPair> {
 protected:
  void SetUp() override {
    if (GetParam() == ServerPair::kCurlCivetweb) {
      server_ = testing::StartCivetweb(16, {{"/slow", &slow_}, {"/fast", &fast_}}, &url_);
      ASSERT_NE(server_, nullptr);
    } else {
      auto h2c = H2cTestServer::Start();
      ASSERT_TRUE(h2c.ok()) << h2c.status();
      h2c_ = *std::move(h2c);
      h2c_->Route("/slow", {.content_type = "text/plain", .delay = absl::Milliseconds(20),
                            .body = [](const H2cRequest&) { return "ok"; }});
      h2c_->Route("/fast", {.content_type = "text/plain", .body = [](const H2cRequest&) { return "fast"; }});
      url_ = h2c_->url();
    }
  }
  void TearDown() override {
    server_.reset();
    h2c_.reset();
  }

  std::unique_ptr<HttpTransport> Transport(int max_in_flight) {
    TransportConfig config;
    config.client = testing::ClientOf(GetParam());
    config.server = url_;
    config.max_requests_in_flight = max_in_flight;
    auto t = NewHttpTransport(config);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::move(*t) : nullptr;
  }
  // The most requests of /slow the server served at once.
  int SlowPeak() const { return h2c_ ? h2c_->peak_waiting("/slow") : slow_.peak(); }

  CountingHandler slow_{std::chrono::milliseconds(20)};
  FastHandler fast_;
  std::unique_ptr<CivetServer> server_;
  std::unique_ptr<H2cTestServer> h2c_;
  std::string url_;
};

// Sends `n` GETs of /slow without waiting; returns once all have answered (each must be 200).
struct Batch {
  absl::Mutex mu;
  int done = 0, ok = 0;
  absl::Notification all;
};

void SendSlow(HttpTransport* t, int n, Batch* batch) {
  for (int i = 0; i < n; ++i) {
    HttpRequest r;
    r.path = "/slow";
    t->SendAsync(std::move(r), [batch, n](absl::StatusOr<HttpResponse> resp) {
      absl::MutexLock l(&batch->mu);
      ++batch->done;
      if (resp.ok() && resp->status == 200) ++batch->ok;
      if (batch->done == n) batch->all.Notify();
    });
  }
}

TEST_P(TransportQueueTest, AtMostMaxRequestsInFlightAreOnTheWireAndAllAnswer) {
  auto transport = Transport(/*max_in_flight=*/2);
  ASSERT_NE(transport, nullptr);
  Batch batch;
  SendSlow(transport.get(), 40, &batch);
  ASSERT_TRUE(batch.all.WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_EQ(batch.ok, 40);
  // Without the cap curl opens its four connections (MAX_HOST_CONNECTIONS) to this HTTP/1.1
  // server and serves four at once; over HTTP/2 all 40 would be on one connection at once.
  EXPECT_LE(SlowPeak(), 2);
  EXPECT_GE(SlowPeak(), 1);
}

TEST_P(TransportQueueTest, ASynchronousCallGoesAheadOfTheQueuedOnes) {
  auto transport = Transport(/*max_in_flight=*/1);
  ASSERT_NE(transport, nullptr);
  Batch batch;
  SendSlow(transport.get(), 100, &batch);  // 100 x 20 ms, one at a time: about 2 s of queue
  HttpRequest fast;
  fast.path = "/fast";
  absl::StatusOr<HttpResponse> r = transport->Send(std::move(fast));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "fast");
  int done_when_answered = 0;
  {
    absl::MutexLock l(&batch.mu);
    done_when_answered = batch.done;
  }
  EXPECT_LT(done_when_answered, 50) << "the synchronous call waited behind the queue";
  ASSERT_TRUE(batch.all.WaitForNotificationWithTimeout(absl::Seconds(60)));
  EXPECT_EQ(batch.ok, 100);
}

INSTANTIATE_TEST_SUITE_P(Pairs, TransportQueueTest, testing::AllPairs(), testing::PairName);

}  // namespace
}  // namespace onequeue::k8s

// The client's bounds on what a server can make it hold (issue 13 defect 9), against a real
// server on 127.0.0.1, in process: a response body past max_response_bytes ends the request with
// a clear error (and is not retried); a watch whose unhandled events pass max_backlog_bytes ends,
// and the informer relists. Each case runs over both pairs (transport_pair.h): libcurl against
// civetweb (HTTP/1.1), and the nghttp2 client against the h2c test server (HTTP/2).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "CivetServer.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "h2c_test_server.h"
#include "k8s_client/api_status.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/informer.h"
#include "k8s_client/models.h"
#include "k8s_client/rest_client.h"
#include "transport_pair.h"

namespace onequeue::k8s {
namespace {

using testing::H2cRequest;
using testing::H2cTestServer;
using testing::ServerPair;

constexpr size_t kMiB = size_t{1} << 20;

// GET /big: 3 MiB of 'x', in 64 KiB writes; counts the requests.
class BigHandler : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    ++requests;
    const std::string chunk(64 << 10, 'x');
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", 3 * kMiB);
    for (size_t sent = 0; sent < 3 * kMiB; sent += chunk.size()) {
      if (mg_write(conn, chunk.data(), chunk.size()) <= 0) break;
    }
    return true;
  }
  std::atomic<int> requests{0};
};

const char kEmptyBudgetList[] = R"({"kind":"PodDisruptionBudgetList","metadata":{"resourceVersion":"1"},"items":[]})";

// The i-th ADDED event of a budget watch: ~1 KiB.
std::string BudgetEvent(int i) {
  static const std::string padding(1000, 'p');
  return absl::StrCat(R"({"type":"ADDED","object":{"metadata":{"name":"b)", i, R"(","namespace":"ns","resourceVersion":")",
                      i + 2, R"(","annotations":{"pad":")", padding,
                      R"("}},"spec":{},"status":{"disruptionsAllowed":1}}})", "\n");
}

// A PodDisruptionBudget collection: the list is empty (resourceVersion 1); a watch streams
// `events` ADDED events of ~1 KiB each as fast as the socket takes them, then ends.
class BudgetsHandler : public CivetHandler {
 public:
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const mg_request_info* info = mg_get_request_info(conn);
    const std::string query = info->query_string ? info->query_string : "";
    if (!absl::StrContains(query, "watch=true")) {
      ++lists;
      const std::string body = kEmptyBudgetList;
      mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                body.size(), body.c_str());
      return true;
    }
    ++watches;
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n");
    for (int i = 0; i < events; ++i) {
      const std::string line = BudgetEvent(i);
      if (mg_write(conn, line.data(), line.size()) <= 0) break;
    }
    return true;
  }
  int events = 20000;  // ~21 MiB
  std::atomic<int> lists{0}, watches{0};
};

class TransportLimitsTest : public ::testing::TestWithParam<ServerPair> {
 protected:
  void SetUp() override {
    if (GetParam() == ServerPair::kCurlCivetweb) {
      server_ = testing::StartCivetweb(8, {{"/big", &big_}, {"/apis/policy/v1/poddisruptionbudgets", &budgets_}}, &url_);
      ASSERT_NE(server_, nullptr);
    } else {
      // The same two routes; the watch's whole body is made up front and sent as the client's
      // flow control lets it.
      auto h2c = H2cTestServer::Start();
      ASSERT_TRUE(h2c.ok()) << h2c.status();
      h2c_ = *std::move(h2c);
      h2c_->Route("/big", {.body = [](const H2cRequest&) { return std::string(3 * kMiB, 'x'); }});
      h2c_->Route("/apis/policy/v1/poddisruptionbudgets", {.body = [this](const H2cRequest& r) {
                    if (!absl::StrContains(r.path, "watch=true")) {
                      ++budgets_.lists;
                      return std::string(kEmptyBudgetList);
                    }
                    ++budgets_.watches;
                    std::string all;
                    for (int i = 0; i < budgets_.events; ++i) all += BudgetEvent(i);
                    return all;
                  }});
      url_ = h2c_->url();
    }
  }
  void TearDown() override {
    server_.reset();
    h2c_.reset();
  }

  ClientConfig Config() const {
    ClientConfig config;
    config.client = testing::ClientOf(GetParam());
    config.server = url_;
    return config;
  }
  int BigRequests() const { return h2c_ ? h2c_->requests("/big") : big_.requests.load(); }

  BigHandler big_;
  BudgetsHandler budgets_;
  std::unique_ptr<CivetServer> server_;
  std::unique_ptr<H2cTestServer> h2c_;
  std::string url_;
};

TEST_P(TransportLimitsTest, ABodyPastTheBoundEndsTheRequestWithAClearErrorAndIsNotRetried) {
  ClientConfig config = Config();
  config.max_response_bytes = 1 * kMiB;
  auto client = RestClient::Create(config);
  ASSERT_TRUE(client.ok()) << client.status();
  HttpRequest req;
  req.path = "/big";
  absl::StatusOr<std::string> body = (*client)->Do(req);
  ASSERT_FALSE(body.ok());
  EXPECT_TRUE(IsLimitExceeded(body.status())) << body.status();
  EXPECT_TRUE(absl::StrContains(body.status().message(), "response body larger than 1048576 bytes")) << body.status();
  EXPECT_TRUE(absl::StrContains(body.status().message(), "/big")) << body.status();
  EXPECT_EQ(BigRequests(), 1) << "a body too large for the client is not retried";

  config.max_response_bytes = 4 * kMiB;  // room for it
  auto roomy = RestClient::Create(config);
  ASSERT_TRUE(roomy.ok());
  absl::StatusOr<std::string> whole = (*roomy)->Do(req);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->size(), 3 * kMiB);
}

TEST_P(TransportLimitsTest, AWatchWhoseUnhandledEventsPassTheBoundEndsAndTheInformerRelists) {
  auto client = RestClient::Create(Config());
  ASSERT_TRUE(client.ok()) << client.status();
  InformerOptions options;
  options.max_backlog_bytes = 256 << 10;  // 256 KiB: ~250 events
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(50);
  std::atomic<int> added{0};
  InformerHandlers<PodDisruptionBudget> handlers;
  handlers.on_add = [&](const PodDisruptionBudget&) {
    // A handler slower than the stream: the backlog grows.
    if (++added % 100 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  Informer<PodDisruptionBudget> informer(client->get(), kPodDisruptionBudgets, options, handlers);
  informer.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (informer.Stats().backlog_overflows < 1 || budgets_.lists.load() < 2) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "overflows " << informer.Stats().backlog_overflows << ", lists " << budgets_.lists.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  informer.Stop();
  EXPECT_GE(informer.Stats().lists, 2);
  EXPECT_LT(added.load(), budgets_.events) << "the watch went on past its backlog";
}

INSTANTIATE_TEST_SUITE_P(Pairs, TransportLimitsTest, testing::AllPairs(), testing::PairName);

}  // namespace
}  // namespace onequeue::k8s

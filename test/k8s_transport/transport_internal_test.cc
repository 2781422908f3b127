#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "k8s_client/h2_connection.h"
#include "k8s_client/transport_internal.h"

namespace onequeue::k8s::internal {
namespace {

TEST(ParseRetryAfter, SecondsOnlyAndNeverNegative) {
  EXPECT_EQ(ParseRetryAfter(" 7 "), absl::Seconds(7));
  EXPECT_EQ(ParseRetryAfter("0"), absl::Seconds(0));
  EXPECT_EQ(ParseRetryAfter("-1"), std::nullopt);
  EXPECT_EQ(ParseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), std::nullopt);
  EXPECT_EQ(ParseRetryAfter(""), std::nullopt);
}

TEST(Where, NamesThePeerTheUrlAndTheUnixSocket) {
  TransportConfig c;
  c.server = "https://10.0.0.1:6443";
  EXPECT_EQ(Where(c, "/api/v1/pods"), "https://10.0.0.1:6443/api/v1/pods");
  c.peer_name = "slurmrestd";
  c.unix_socket = "/run/slurmrestd.sock";
  EXPECT_EQ(Where(c, "/x"), "slurmrestd at https://10.0.0.1:6443/x (unix socket /run/slurmrestd.sock)");
}

TEST(WaitMillis, RoundsUpAndNeverForInfinity) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(WaitMillis(absl::InfiniteFuture(), now), -1);
  EXPECT_EQ(WaitMillis(now - absl::Seconds(1), now), 0);
  EXPECT_EQ(WaitMillis(now + absl::Microseconds(1), now), 1);  // not 0: that would spin
  EXPECT_EQ(WaitMillis(now + absl::Milliseconds(250), now), 250);
  EXPECT_EQ(WaitMillis(now + absl::Hours(5), now), 3'600'000);
}

struct FakeCall {
  HttpRequest request;
  int id = 0;
};

std::unique_ptr<FakeCall> Call(int id, absl::Time not_before = absl::InfinitePast(), bool urgent = false) {
  auto c = std::make_unique<FakeCall>();
  c->id = id;
  c->request.not_before = not_before;
  c->request.urgent = urgent;
  return c;
}

std::vector<int> PopAll(CallQueue<FakeCall>& q) {
  std::vector<int> ids;
  while (q.HasReady()) ids.push_back(q.PopReady()->id);
  return ids;
}

TEST(CallQueue, FifoWithUrgentAheadAndRequeuedAtTheHead) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  CallQueue<FakeCall> q;
  q.Add(Call(1), now);
  q.Add(Call(2), now);
  q.Add(Call(3, absl::InfinitePast(), /*urgent=*/true), now);
  q.PushFront(Call(4));
  EXPECT_EQ(PopAll(q), (std::vector<int>{4, 3, 1, 2}));
}

TEST(CallQueue, DelayedCallsWaitUntilDueInDueThenArrivalOrder) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  CallQueue<FakeCall> q;
  q.Add(Call(1, now + absl::Seconds(2)), now);
  q.Add(Call(2, now + absl::Seconds(1)), now);
  q.Add(Call(3, now + absl::Seconds(1)), now);
  EXPECT_EQ(q.Promote(now), now + absl::Seconds(1));
  EXPECT_FALSE(q.HasReady());
  EXPECT_EQ(q.Promote(now + absl::Seconds(1)), now + absl::Seconds(2));
  EXPECT_EQ(PopAll(q), (std::vector<int>{2, 3}));
  EXPECT_EQ(q.Promote(now + absl::Seconds(3)), absl::InfiniteFuture());
  EXPECT_EQ(PopAll(q), (std::vector<int>{1}));
}

TEST(CallQueue, DrainAllHandsOverReadyAndDelayedCalls) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  CallQueue<FakeCall> q;
  q.Add(Call(1), now);
  q.Add(Call(2, now + absl::Hours(1)), now);
  std::vector<int> drained;
  q.DrainAll([&](std::unique_ptr<FakeCall> c) { drained.push_back(c->id); });
  EXPECT_EQ(drained, (std::vector<int>{1, 2}));
  EXPECT_FALSE(q.HasReady());
  EXPECT_EQ(q.Promote(now + absl::Hours(2)), absl::InfiniteFuture());
}

absl::StatusOr<H2Endpoint> Parse(const std::string& server, const std::string& tls_server_name = "") {
  static TransportConfig c;  // the endpoint points at its config
  c.server = server;
  c.tls_server_name = tls_server_name;
  return ParseServer(c);
}

TEST(ParseServer, HostPortSchemeAndPathPrefix) {
  absl::StatusOr<H2Endpoint> e = Parse("https://127.0.0.1:6443");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->tls);
  EXPECT_EQ(e->scheme, "https");
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, "6443");
  EXPECT_EQ(e->authority, "127.0.0.1:6443");
  EXPECT_EQ(e->base_path, "");
  EXPECT_EQ(e->tls_host, "127.0.0.1");

  e = Parse("http://localhost/prefix/", "api.example");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE(e->tls);
  EXPECT_EQ(e->port, "80");
  EXPECT_EQ(e->authority, "localhost");
  EXPECT_EQ(e->base_path, "/prefix");
  EXPECT_EQ(e->tls_host, "api.example");

  e = Parse("https://[::1]:8443");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, "8443");
  EXPECT_EQ(Parse("https://kubernetes.default.svc")->port, "443");
}

TEST(ParseServer, RefusesWhatIsNoHttpUrl) {
  EXPECT_EQ(Parse("ftp://x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse("https://:6443").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Parse("https://[::1").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NewNghttp2Transport, RefusesAUnixSocket) {
  TransportConfig c;
  c.client = HttpClient::kNghttp2;
  c.server = "http://localhost";
  c.unix_socket = "/run/x.sock";
  EXPECT_EQ(NewHttpTransport(c).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace onequeue::k8s::internal

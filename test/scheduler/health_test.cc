// Issue 13 defect 8: health that tells the truth. The scheduling loop beats after every pass;
// when the beats stop for longer than server.healthCycleAgeSeconds, GET /healthz answers 503 with
// the reason (and gRPC Health NOT_SERVING, from the same verdict), so the kubelet's liveness probe
// restarts a stuck daemon and its Lease passes on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "prometheus/counter.h"
#include "scheduler/config.h"
#include "scheduler/loop_health.h"
#include "scheduler/metrics_server.h"

namespace onequeue::scheduler {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(HealthTest, ALoopPassOlderThanTheBoundIsNotServing) {
  EXPECT_TRUE(DecideHealth(absl::Seconds(0), absl::Seconds(60)).serving);
  EXPECT_TRUE(DecideHealth(absl::Seconds(60), absl::Seconds(60)).serving);
  const HealthVerdict stuck = DecideHealth(absl::Seconds(61), absl::Seconds(60));
  EXPECT_FALSE(stuck.serving);
  EXPECT_EQ(stuck.message, "the scheduling loop has not completed a pass for 61.0 s (bound 60 s): it is stuck");
  EXPECT_EQ(DecideHealth(absl::Milliseconds(3200), absl::Seconds(60)).message,
            "last scheduling loop pass 3.2 s ago (bound 60 s)");
}

// A fake monotonic clock: start-up counts as a beat; serving until the bound passes without one;
// a beat brings it back.
TEST(HealthTest, BeatsKeepItServingAndTheirAbsenceDoesNot) {
  absl::Duration now = absl::Hours(5);
  LoopHealth health(absl::Seconds(60), [&] { return now; });
  EXPECT_TRUE(health.Check().serving);
  now += absl::Seconds(59);
  EXPECT_TRUE(health.Check().serving);
  health.Beat();
  now += absl::Seconds(60);
  EXPECT_TRUE(health.Check().serving);
  now += absl::Seconds(1) + absl::Milliseconds(1);
  EXPECT_FALSE(health.Check().serving);
  health.Beat();
  EXPECT_TRUE(health.Check().serving);
}

struct HttpReply {
  int code = 0;
  std::string text;
};

// GET over a plain socket to 127.0.0.1:port (HTTP/1.0, the server closes).
HttpReply Get(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  HttpReply r;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return r;
  }
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) r.text.append(buf, n);
  close(fd);
  if (r.text.rfind("HTTP/1.", 0) == 0 && r.text.size() > 12) r.code = std::stoi(r.text.substr(9, 3));
  return r;
}

TEST(HealthTest, HealthzAnswers200ThenServiceUnavailableWhenTheLoopIsStuck) {
  absl::Duration now = absl::Hours(1);
  LoopHealth health(absl::Seconds(60), [&] { return now; });
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter().Name("onequeue_test_total").Help("a test series").Register(*registry).Add({}).Increment();
  auto server = StartMetricsServer("127.0.0.1:0", registry, &health);
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);

  HttpReply ok = Get(port, "/healthz");
  EXPECT_EQ(ok.code, 200) << ok.text;
  EXPECT_THAT(ok.text, HasSubstr("ok: last scheduling loop pass 0.0 s ago (bound 60 s)"));

  now += absl::Seconds(90);  // no beat: the loop is stuck
  HttpReply stuck = Get(port, "/healthz");
  EXPECT_EQ(stuck.code, 503) << stuck.text;
  EXPECT_THAT(stuck.text, HasSubstr("not serving: the scheduling loop has not completed a pass for 90.0 s"));

  health.Beat();
  EXPECT_EQ(Get(port, "/healthz").code, 200);

  // /metrics on the same port, in Prometheus' text format.
  HttpReply metrics = Get(port, "/metrics");
  EXPECT_EQ(metrics.code, 200);
  EXPECT_THAT(metrics.text, HasSubstr("onequeue_test_total 1"));
  EXPECT_THAT(metrics.text, HasSubstr("text/plain; version=0.0.4"));
}

TEST(HealthTest, NoLoopIsAlwaysHealthy) {
  auto server = StartMetricsServer("127.0.0.1:0", std::make_shared<prometheus::Registry>(), nullptr);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(Get((*server)->port(), "/healthz").code, 200);
}

TEST(HealthTest, ATakenPortIsAnErrorNotACrash) {
  auto first = StartMetricsServer("127.0.0.1:0", std::make_shared<prometheus::Registry>(), nullptr);
  ASSERT_TRUE(first.ok());
  auto second = StartMetricsServer("127.0.0.1:" + std::to_string((*first)->port()),
                                   std::make_shared<prometheus::Registry>(), nullptr);
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(std::string(second.status().message()), StartsWith("cannot serve /metrics and /healthz on 127.0.0.1:"));
}

TEST(HealthTest, TheBoundIsConfigured) {
  const std::string header = "apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n";
  auto def = ParseConfig(header, "mem");
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def->server.health_cycle_age_seconds, 60);
  auto set = ParseConfig(header + "server: {healthCycleAgeSeconds: 120}\n", "mem");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->server.health_cycle_age_seconds, 120);
  auto low = ParseConfig(header + "server: {healthCycleAgeSeconds: 5}\n", "mem");
  ASSERT_FALSE(low.ok());
  EXPECT_THAT(std::string(low.status().message()), HasSubstr("server.healthCycleAgeSeconds: must be at least 10"));
}

}  // namespace
}  // namespace onequeue::scheduler

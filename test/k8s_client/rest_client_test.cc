// RestClient retry/rate-limit logic over a scripted HttpTransport (pure logic: no network, time
// and randomness injected). The real transport is exercised by the integration tests.
#include "k8s_client/rest_client.h"

#include <gtest/gtest.h>

#include <deque>

#include "absl/strings/match.h"

namespace onequeue::k8s {
namespace {

// Answers requests from a script, synchronously, recording what it was sent.
class ScriptedTransport : public HttpTransport {
 public:
  explicit ScriptedTransport(std::deque<absl::StatusOr<HttpResponse>> script) : script_(std::move(script)) {}
  void SendAsync(HttpRequest request, ResponseCallback done) override {
    sent.push_back(request);
    absl::StatusOr<HttpResponse> r = absl::InternalError("script exhausted");
    if (!script_.empty()) {
      r = script_.front();
      script_.pop_front();
    }
    done(std::move(r));
  }
  std::unique_ptr<HttpStream> OpenStream(HttpRequest, ChunkCallback, StreamDoneCallback done) override {
    done(absl::UnimplementedError("no streams"));
    return nullptr;
  }
  std::vector<HttpRequest> sent;

 private:
  std::deque<absl::StatusOr<HttpResponse>> script_;
};

HttpResponse Answer(int code, std::string body = "{}", std::optional<absl::Duration> retry_after = std::nullopt) {
  return HttpResponse{code, std::move(body), retry_after};
}

struct Harness {
  absl::Time now = absl::UnixEpoch();
  std::vector<absl::Duration> sleeps;
  ClientEnv Env() {
    ClientEnv env;
    env.now = [this] { return now; };
    env.sleep = [this](absl::Duration d) {
      sleeps.push_back(d);
      now += d;
    };
    env.rand01 = [] { return 0.0; };
    return env;
  }
};

TEST(RestClientTest, RetriesUnavailableAndThrottlingHonouringRetryAfter) {
  Harness h;
  auto transport = std::make_unique<ScriptedTransport>(std::deque<absl::StatusOr<HttpResponse>>{
      absl::UnavailableError("connection refused"),
      Answer(503, R"({"kind":"Status","code":503,"reason":"ServiceUnavailable","message":"x"})"),
      Answer(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests","message":"y"})", absl::Seconds(3)),
      Answer(201, R"({"kind":"Pod"})")});
  ScriptedTransport* t = transport.get();
  ClientConfig cfg;
  cfg.qps = 0;
  RestClient client(cfg, std::move(transport), RetryPolicy{5, absl::Milliseconds(100), absl::Seconds(10)}, h.Env());
  absl::StatusOr<nlohmann::json> r = client.Post("/api/v1/namespaces/ns/pods", {{"kind", "Pod"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t->sent.size(), 4u);
  ASSERT_EQ(h.sleeps.size(), 3u);
  EXPECT_EQ(h.sleeps[0], absl::Milliseconds(100));
  EXPECT_EQ(h.sleeps[1], absl::Milliseconds(200));
  EXPECT_EQ(h.sleeps[2], absl::Seconds(3));  // Retry-After beats the 400 ms backoff
  EXPECT_EQ(t->sent[0].timeout, absl::Seconds(30));  // the config's per-request timeout
}

TEST(RestClientTest, DoesNotRetryWhatRetryingCannotFix) {
  for (int code : {400, 403, 404, 409, 410, 422}) {
    Harness h;
    auto transport = std::make_unique<ScriptedTransport>(std::deque<absl::StatusOr<HttpResponse>>{
        Answer(code, R"({"kind":"Status","reason":"R","message":"m"})"), Answer(200)});
    ScriptedTransport* t = transport.get();
    RestClient client(ClientConfig{}, std::move(transport), RetryPolicy{}, h.Env());
    EXPECT_FALSE(client.Get("/x").ok());
    EXPECT_EQ(t->sent.size(), 1u) << code;
  }
  // A PDB refusal is a 429 but must not be retried blindly.
  Harness h;
  auto transport = std::make_unique<ScriptedTransport>(std::deque<absl::StatusOr<HttpResponse>>{
      Answer(429, R"({"kind":"Status","code":429,"reason":"TooManyRequests","message":"Cannot evict",
        "details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget b needs 1 healthy pods and has 1 currently"}]}})"),
      Answer(201)});
  ScriptedTransport* t = transport.get();
  RestClient client(ClientConfig{}, std::move(transport), RetryPolicy{}, h.Env());
  absl::Status s = client.Post("/evict", {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(t->sent.size(), 1u);
}

TEST(RestClientTest, GivesUpAfterMaxAttemptsAndSaysSo) {
  Harness h;
  std::deque<absl::StatusOr<HttpResponse>> script;
  for (int i = 0; i < 10; ++i) script.push_back(absl::UnavailableError("connection refused"));
  auto transport = std::make_unique<ScriptedTransport>(std::move(script));
  ScriptedTransport* t = transport.get();
  RestClient client(ClientConfig{}, std::move(transport), RetryPolicy{3, absl::Milliseconds(10), absl::Seconds(1)}, h.Env());
  absl::Status s = client.Get("/x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(s.message(), "after 3 attempts")) << s;
  EXPECT_EQ(t->sent.size(), 3u);
}

TEST(RestClientTest, RateLimiterDelaysBeyondBurst) {
  Harness h;
  std::deque<absl::StatusOr<HttpResponse>> script;
  for (int i = 0; i < 5; ++i) script.push_back(Answer(200));
  ClientConfig cfg;
  cfg.qps = 10;
  cfg.burst = 2;
  RestClient client(cfg, std::make_unique<ScriptedTransport>(std::move(script)), RetryPolicy{}, h.Env());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(client.Get("/x").ok());
  // Two go at once; the 3rd and 4th wait 100 ms each (the clock advances by what we slept).
  ASSERT_EQ(h.sleeps.size(), 2u);
  EXPECT_EQ(h.sleeps[0], absl::Milliseconds(100));
  EXPECT_EQ(h.sleeps[1], absl::Milliseconds(100));
}

TEST(RestClientTest, AsyncRetriesAreDelayedNotSlept) {
  Harness h;
  auto transport = std::make_unique<ScriptedTransport>(std::deque<absl::StatusOr<HttpResponse>>{
      Answer(503, "{}"), Answer(200, R"({"ok":true})")});
  ScriptedTransport* t = transport.get();
  ClientConfig cfg;
  cfg.qps = 0;
  RestClient client(cfg, std::move(transport), RetryPolicy{5, absl::Milliseconds(100), absl::Seconds(1)}, h.Env());
  absl::StatusOr<std::string> got = absl::UnknownError("not called");
  HttpRequest req;
  req.path = "/x";
  client.DoAsync(req, [&](absl::StatusOr<std::string> r) { got = std::move(r); });
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(h.sleeps.empty());
  ASSERT_EQ(t->sent.size(), 2u);
  EXPECT_EQ(t->sent[1].not_before, h.now + absl::Milliseconds(100));
}

}  // namespace
}  // namespace onequeue::k8s

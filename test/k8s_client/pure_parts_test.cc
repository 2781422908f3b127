// Unit tests of the pure parts: kubeconfig/in-cluster config, watch decoding, rate limiting and
// backoff, Status mapping, event series. No network.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "k8s_client/api_status.h"
#include "k8s_client/config.h"
#include "k8s_client/http_transport.h"
#include "k8s_client/rate_limit.h"
#include "k8s_client/rest_client.h"
#include "k8s_client/scheduler_api.h"
#include "k8s_client/watch_decoder.h"

namespace onequeue::k8s {
namespace {

const char* kKubeconfig = R"(
apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority: pki/ca.crt
- name: other
  cluster:
    server: https://10.0.0.1:443
    certificate-authority-data: %CA%
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: admin-token
- name: sched
  user:
    tokenFile: tokens/sched
    client-certificate-data: %CERT%
    client-key: /abs/key.pem
contexts:
- name: admin
  context: {cluster: local, user: admin}
- name: sched
  context: {cluster: other, user: sched, namespace: onequeue-system}
- name: broken
  context: {cluster: missing, user: admin}
)";

std::string Kubeconfig() {
  std::string s = kKubeconfig;
  s.replace(s.find("%CA%"), 4, absl::Base64Escape("CA PEM"));
  s.replace(s.find("%CERT%"), 6, absl::Base64Escape("CERT PEM"));
  return s;
}

TEST(ConfigTest, KubeconfigCurrentContext) {
  absl::StatusOr<ClientConfig> c = ParseKubeconfig(Kubeconfig(), "/home/u/.kube");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://127.0.0.1:6443");
  EXPECT_EQ(c->ca_file, "/home/u/.kube/pki/ca.crt");
  EXPECT_EQ(c->bearer_token, "admin-token");
  EXPECT_FALSE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->default_namespace, "default");
}

TEST(ConfigTest, KubeconfigNamedContextWithDataFieldsAndFiles) {
  absl::StatusOr<ClientConfig> c = ParseKubeconfig(Kubeconfig(), "/k", "sched");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ca_pem, "CA PEM");
  EXPECT_TRUE(c->insecure_skip_tls_verify);
  EXPECT_EQ(c->token_file, "/k/tokens/sched");
  EXPECT_EQ(c->client_cert_pem, "CERT PEM");
  EXPECT_EQ(c->client_key_file, "/abs/key.pem");
  EXPECT_EQ(c->default_namespace, "onequeue-system");
}

TEST(ConfigTest, KubeconfigErrorsNameTheProblem) {
  auto missing_ctx = ParseKubeconfig(Kubeconfig(), "", "nope");
  EXPECT_EQ(missing_ctx.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing_ctx.status().message().find("context \"nope\" not found"), std::string::npos);
  auto missing_cluster = ParseKubeconfig(Kubeconfig(), "", "broken");
  EXPECT_NE(missing_cluster.status().message().find("cluster \"missing\""), std::string::npos);
  EXPECT_FALSE(ParseKubeconfig("[unclosed", "").ok());
  EXPECT_FALSE(ParseKubeconfig("just a string", "").ok());
  EXPECT_EQ(LoadKubeconfig("/nonexistent/kubeconfig").status().code(), absl::StatusCode::kNotFound);
}

TEST(ConfigTest, InClusterUsesServiceAccountFiles) {
  const std::string dir = ::testing::TempDir() + "/sa";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "tok\n";
  std::ofstream(dir + "/namespace") << "team-a\n";
  std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "fd00::1"},
                                            {"KUBERNETES_SERVICE_PORT", "443"}};
  auto getenv = [&](const char* n) -> std::optional<std::string> {
    auto it = env.find(n);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  absl::StatusOr<ClientConfig> c = InClusterConfig(getenv, dir);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->server, "https://[fd00::1]:443");
  EXPECT_EQ(c->token_file, dir + "/token");
  EXPECT_EQ(c->ca_file, dir + "/ca.crt");
  EXPECT_EQ(c->default_namespace, "team-a");
  env.clear();
  EXPECT_EQ(InClusterConfig(getenv, dir).status().code(), absl::StatusCode::kFailedPrecondition);
}

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"10"}}})" "\n"
    R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"11"},"note":"brace } in \"string\" {"}})" "\n"
    R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}})" "\n"
    R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"13"}}})" "\n"
    R"x({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (13)"}})x" "\n";

// kubernetes.httpClient: "auto" is onequeue's HTTP/2 client unless a proxy variable libcurl would
// use for the server is set; "nghttp2" keeps its choice and says the proxy is not used.
TEST(HttpClientChoiceTest, AutoTakesLibcurlOnlyWhenAProxyVariableAppliesToTheServer) {
  auto env = [](std::map<std::string, std::string> vars) {
    return [vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  };
  const std::string https = "https://10.0.0.1:6443", http = "http://127.0.0.1:8080";
  auto pick = [&](const std::string& setting, const std::string& server, std::map<std::string, std::string> vars) {
    absl::StatusOr<HttpClientChoice> c = ChooseHttpClient(setting, server, env(vars));
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : HttpClientChoice{};
  };
  EXPECT_EQ(pick("auto", https, {}).client, HttpClient::kNghttp2);
  EXPECT_EQ(pick("auto", https, {}).note, "");
  for (const char* var : {"https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
    const HttpClientChoice c = pick("auto", https, {{var, "http://proxy:3128"}});
    EXPECT_EQ(c.client, HttpClient::kCurl) << var;
    EXPECT_NE(c.note.find(std::string("because ") + var + " is set"), std::string::npos) << c.note;
  }
  // Variables that do not apply: empty, another scheme's, NO_PROXY alone, upper-case HTTP_PROXY
  // (libcurl reads only http_proxy).
  EXPECT_EQ(pick("auto", https, {{"HTTPS_PROXY", ""}}).client, HttpClient::kNghttp2);
  EXPECT_EQ(pick("auto", https, {{"http_proxy", "http://p:1"}, {"NO_PROXY", "*"}}).client, HttpClient::kNghttp2);
  EXPECT_EQ(pick("auto", http, {{"HTTPS_PROXY", "http://p:1"}, {"HTTP_PROXY", "http://p:1"}}).client,
            HttpClient::kNghttp2);
  EXPECT_EQ(pick("auto", http, {{"http_proxy", "http://p:1"}}).client, HttpClient::kCurl);
  // Explicit choices stand; nghttp2 says the proxy is not used.
  EXPECT_EQ(pick("curl", https, {}).client, HttpClient::kCurl);
  EXPECT_EQ(pick("curl", https, {{"HTTPS_PROXY", "http://p:1"}}).note, "");
  const HttpClientChoice direct = pick("nghttp2", https, {{"HTTPS_PROXY", "http://p:1"}});
  EXPECT_EQ(direct.client, HttpClient::kNghttp2);
  EXPECT_NE(direct.note.find("HTTPS_PROXY is set and not used"), std::string::npos) << direct.note;
  absl::StatusOr<HttpClientChoice> bad = ChooseHttpClient("h2", https, env({}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("must be auto, curl or nghttp2"), std::string::npos);
}

TEST(WatchDecoderTest, EveryChunkingGivesTheSameEvents) {
  for (size_t split1 = 0; split1 <= kStream.size(); split1 += 7) {
    for (size_t split2 = split1; split2 <= kStream.size(); split2 += 13) {
      std::vector<WatchEvent> got;
      WatchDecoder d([&](WatchEvent e) { got.push_back(std::move(e)); });
      ASSERT_TRUE(d.Feed(absl::string_view(kStream).substr(0, split1)).ok());
      ASSERT_TRUE(d.Feed(absl::string_view(kStream).substr(split1, split2 - split1)).ok());
      ASSERT_TRUE(d.Feed(absl::string_view(kStream).substr(split2)).ok());
      ASSERT_EQ(got.size(), 5u);
      EXPECT_TRUE(d.AtBoundary());
      EXPECT_EQ(got[0].type, WatchEventType::kAdded);
      EXPECT_EQ(got[1].resource_version, "11");
      EXPECT_EQ(got[2].type, WatchEventType::kBookmark);
      EXPECT_EQ(got[2].resource_version, "12");
      EXPECT_EQ(got[3].type, WatchEventType::kDeleted);
      absl::Status err = WatchErrorStatus(got[4]);
      EXPECT_TRUE(IsResourceExpired(err)) << err;
    }
  }
}

TEST(WatchDecoderTest, ByteByByteAndMalformedInput) {
  std::vector<WatchEvent> got;
  WatchDecoder d([&](WatchEvent e) { got.push_back(std::move(e)); });
  for (char c : kStream) ASSERT_TRUE(d.Feed(absl::string_view(&c, 1)).ok());
  EXPECT_EQ(got.size(), 5u);
  for (const char* bad : {"{not json}\n", "[1]\n", R"({"type":"ADDED"})" "\n",
                          R"({"type":"WHAT","object":{"metadata":{}}})" "\n",
                          R"({"type":"ADDED","object":{}})" "\n", R"({"type":1,"object":{}})" "\n"}) {
    WatchDecoder bad_decoder([](WatchEvent) {});
    EXPECT_FALSE(bad_decoder.Feed(bad).ok()) << bad;
  }
  WatchDecoder small([](WatchEvent) {}, 16);
  EXPECT_EQ(small.Feed(std::string(100, 'x')).code(), absl::StatusCode::kResourceExhausted);
}

TEST(WatchDecoderTest, ALineLongerThanItsBoundIsAClientLimitNotAServerThrottle) {
  WatchDecoder d([](WatchEvent) {}, /*max_line_bytes=*/16);
  absl::Status s = d.Feed(std::string(40, 'x'));
  EXPECT_TRUE(IsLimitExceeded(s)) << s;
  EXPECT_FALSE(IsRetryable(s));
  // A server's 429 stays retryable.
  EXPECT_TRUE(IsRetryable(StatusFromHttp(429, "")));
  EXPECT_FALSE(IsLimitExceeded(StatusFromHttp(429, "")));
}

TEST(WatchBacklogTest, KeepsChunksUpToTheBoundThenOverflowsForGood) {
  WatchBacklog b(10);
  EXPECT_TRUE(b.Append("12345"));
  EXPECT_TRUE(b.Append("67890"));  // exactly the bound
  EXPECT_EQ(b.Take(), "1234567890");
  EXPECT_TRUE(b.empty());
  EXPECT_TRUE(b.Append("1234"));
  EXPECT_FALSE(b.Append("1234567"));  // 11 > 10
  EXPECT_TRUE(b.overflowed());
  EXPECT_TRUE(b.empty()) << "what was kept is dropped: the watch must end";
  EXPECT_FALSE(b.Append("1"));  // stays overflowed
  const absl::Status s = b.OverflowError("pods");
  EXPECT_TRUE(IsLimitExceeded(s)) << s;
  EXPECT_NE(s.message().find("watch of pods: more than 10 bytes of events received and not handled yet"),
            std::string::npos)
      << s;
}

TEST(BodyLimitTest, BodyFitsAtTheBoundAndNeverOverflows) {
  EXPECT_TRUE(BodyFits(0, 10, 10));
  EXPECT_TRUE(BodyFits(4, 6, 10));
  EXPECT_FALSE(BodyFits(4, 7, 10));
  EXPECT_FALSE(BodyFits(11, 0, 10));
  EXPECT_FALSE(BodyFits(5, std::numeric_limits<size_t>::max(), 10));  // no wrap-around
  const absl::Status s = ResponseTooLargeError("https://h/api/v1/pods", 1024);
  EXPECT_TRUE(IsLimitExceeded(s));
  EXPECT_NE(s.message().find("https://h/api/v1/pods: response body larger than 1024 bytes"), std::string::npos) << s;
}

TEST(TokenBucketTest, BurstThenQps) {
  absl::Time t = absl::UnixEpoch();
  TokenBucket b(10, 3, t);
  EXPECT_EQ(b.Reserve(t), absl::ZeroDuration());
  EXPECT_EQ(b.Reserve(t), absl::ZeroDuration());
  EXPECT_EQ(b.Reserve(t), absl::ZeroDuration());
  EXPECT_EQ(b.Reserve(t), absl::Milliseconds(100));  // 4th waits one token at 10 QPS
  EXPECT_EQ(b.Reserve(t), absl::Milliseconds(200));  // queued behind it
  t += absl::Seconds(1);                             // refills 10 tokens, capped at burst 3
  EXPECT_EQ(b.Reserve(t), absl::ZeroDuration());
  TokenBucket unlimited(0, 1, t);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.Reserve(t), absl::ZeroDuration());
}

TEST(BackoffTest, ExponentialCappedWithInjectedJitter) {
  double r = 0;
  Backoff b(absl::Milliseconds(100), absl::Seconds(1), [&] { return r; }, 2.0, 0.5);
  EXPECT_EQ(b.Next(), absl::Milliseconds(100));
  EXPECT_EQ(b.Next(), absl::Milliseconds(200));
  EXPECT_EQ(b.Next(), absl::Milliseconds(400));
  EXPECT_EQ(b.Next(), absl::Milliseconds(800));
  EXPECT_EQ(b.Next(), absl::Seconds(1));
  r = 1.0;
  EXPECT_EQ(b.Next(), absl::Milliseconds(1500));  // jitter up to +50%
  b.Reset();
  r = 0.5;
  EXPECT_EQ(b.Next(), absl::Milliseconds(125));
}

TEST(ApiStatusTest, MapsCodesReasonsAndMessages) {
  auto body = [](int code, const char* reason, const char* msg) {
    return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                          {"code", code}, {"reason", reason}, {"message", msg}}.dump();
  };
  struct Case {
    int code;
    const char* reason;
    absl::StatusCode want;
  } cases[] = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {409, "Conflict", absl::StatusCode::kAborted},
      {410, "Expired", absl::StatusCode::kOutOfRange},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
      {429, "TooManyRequests", absl::StatusCode::kResourceExhausted},
      {500, "InternalError", absl::StatusCode::kUnavailable},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
  };
  for (const Case& c : cases) {
    absl::Status s = StatusFromHttp(c.code, body(c.code, c.reason, "the message"));
    EXPECT_EQ(s.code(), c.want) << c.code << " " << c.reason;
    EXPECT_NE(s.message().find(std::to_string(c.code)), std::string::npos) << s;
    EXPECT_NE(s.message().find(c.reason), std::string::npos) << s;
    EXPECT_NE(s.message().find("the message"), std::string::npos) << s;
    EXPECT_EQ(ReasonOf(s), c.reason);
  }
  absl::Status throttled = StatusFromHttp(429, body(429, "TooManyRequests", "slow down"), absl::Seconds(3));
  EXPECT_TRUE(IsRetryable(throttled));
  EXPECT_EQ(RetryAfterOf(throttled), absl::Seconds(3));
  EXPECT_TRUE(IsResourceExpired(StatusFromHttp(410, body(410, "Gone", "gone"))));
  EXPECT_FALSE(IsRetryable(StatusFromHttp(403, body(403, "Forbidden", "no"))));
  // Not a Status object (a proxy's HTML page): the body is the message.
  absl::Status html = StatusFromHttp(502, "<html>bad gateway</html>");
  EXPECT_EQ(html.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(html.message().find("bad gateway"), std::string::npos);
}

TEST(ApiStatusTest, PdbRefusalIsItsOwnStatus) {
  const std::string refusal = R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"Cannot evict pod as it would violate the pod's disruption budget.",
    "reason":"TooManyRequests","code":429,
    "details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web-pdb needs 1 healthy pods and has 1 currently"}]}})";
  absl::Status s = StatusFromHttp(429, refusal);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("blocked by PodDisruptionBudget web-pdb"), std::string::npos) << s;
  EXPECT_FALSE(IsRetryable(s));
  const std::string multiple = R"({"kind":"Status","code":500,"reason":"InternalError",
    "message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support. The disruption budget db-pdb needs 2"})";
  EXPECT_EQ(StatusFromHttp(500, multiple).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ListOptionsTest, BuildsEncodedQuery) {
  ListOptions o;
  o.label_selector = "app in (a,b),tier!=db";
  o.field_selector = "spec.schedulerName=onequeue";
  o.limit = 500;
  o.watch = true;
  o.allow_watch_bookmarks = true;
  o.resource_version = "123";
  EXPECT_EQ(o.ToQuery(),
            "?labelSelector=app%20in%20%28a%2Cb%29%2Ctier%21%3Ddb&fieldSelector=spec.schedulerName%3Donequeue"
            "&limit=500&resourceVersion=123&watch=true&allowWatchBookmarks=true");
  EXPECT_EQ(ListOptions{}.ToQuery(), "");
  EXPECT_EQ(ObjectPath(kPods, "ns", "p", "binding"), "/api/v1/namespaces/ns/pods/p/binding");
  EXPECT_EQ(CollectionPath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(CollectionPath(kNodes, "ignored"), "/api/v1/nodes");
  EXPECT_EQ(ObjectPath(kLeases, "onequeue-system", "l"), "/apis/coordination.k8s.io/v1/namespaces/onequeue-system/leases/l");
}

Event FailedScheduling(const std::string& pod, const std::string& note) {
  Event e;
  e.metadata.namespace_ = "ns";
  e.regarding = ObjectReference{"v1", "Pod", "ns", pod, "uid-" + pod, "", ""};
  e.type = "Warning";
  e.reason = "FailedScheduling";
  e.action = "Scheduling";
  e.reporting_controller = "onequeue";
  e.reporting_instance = "a";
  e.note = note;
  return e;
}

using Write = EventCorrelator::Write;

TEST(EventCorrelatorTest, IdenticalEventsBecomeOneSeriesPatchedOnTheSecondThenAtTheRefresh) {
  EventCorrelator c;  // client-go's defaults: series window 6 min, refresh 30 min
  const Event e = FailedScheduling("p", "0/3 nodes are available");
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  auto d1 = c.Correlate(e, t0);
  EXPECT_EQ(d1.write, Write::kCreate);
  EXPECT_EQ(d1.name, absl::StrFormat("p.%x", absl::ToUnixNanos(t0)));
  EXPECT_EQ(d1.note, e.note);
  auto d2 = c.Correlate(e, t0 + absl::Minutes(1));
  EXPECT_EQ(d2.write, Write::kPatchSeries);  // the second occurrence: a patch, no new Event
  EXPECT_EQ(d2.name, d1.name);
  EXPECT_EQ(d2.series_count, 2);
  EXPECT_EQ(d2.last_observed, t0 + absl::Minutes(1));
  // Later ones are only counted until the refresh (every 5 minutes, so the series never ends).
  absl::Time t = t0 + absl::Minutes(1);
  for (int i = 3; i <= 7; ++i) {
    t += absl::Minutes(5);
    auto d = c.Correlate(e, t);
    EXPECT_EQ(d.series_count, i);
    EXPECT_EQ(d.name, d1.name);
    EXPECT_EQ(d.write, Write::kNone) << i;
  }
  t += absl::Minutes(5);  // 31 min after the last write
  auto refresh = c.Correlate(e, t);
  EXPECT_EQ(refresh.write, Write::kPatchSeries);
  EXPECT_EQ(refresh.series_count, 8);
  const auto counters = c.counters();
  EXPECT_EQ(counters.created, 1);
  EXPECT_EQ(counters.patched, 2);
  EXPECT_EQ(counters.counted, 5);
  EXPECT_EQ(counters.dropped, 0);
}

TEST(EventCorrelatorTest, ASeriesEndsAfterSixQuietMinutesAndItsLastCountIsWritten) {
  EventCorrelator c;
  const Event e = FailedScheduling("p", "0/3 nodes are available");
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  const std::string first = c.Correlate(e, t0).name;
  c.Correlate(e, t0 + absl::Seconds(10));                                            // patch: 2
  EXPECT_EQ(c.Correlate(e, t0 + absl::Seconds(20)).write, Write::kNone);             // 3, counted
  EXPECT_TRUE(c.DueSeriesPatches(t0 + absl::Minutes(2)).empty());                    // still going
  auto due = c.DueSeriesPatches(t0 + absl::Minutes(7));                              // ended
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].name, first);
  EXPECT_EQ(due[0].namespace_, "ns");
  EXPECT_EQ(due[0].count, 3);
  EXPECT_EQ(due[0].last_observed, t0 + absl::Seconds(20));
  EXPECT_TRUE(c.DueSeriesPatches(t0 + absl::Minutes(9)).empty());  // written once
  auto again = c.Correlate(e, t0 + absl::Minutes(10));             // a new series, a new Event
  EXPECT_EQ(again.write, Write::kCreate);
  EXPECT_NE(again.name, first);
  Event other = e;
  other.note = "different";
  EXPECT_EQ(c.Correlate(other, t0 + absl::Minutes(10)).write, Write::kCreate);
}

TEST(EventCorrelatorTest, SimilarEventsBeyondTenDistinctNotesAreCombinedIntoOneSeries) {
  EventCorrelator c;
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  absl::Time t = t0;
  for (int i = 1; i <= 9; ++i) {
    t += absl::Seconds(30);
    auto d = c.Correlate(FailedScheduling("p", absl::StrCat("estimate ", i)), t);
    EXPECT_EQ(d.write, Write::kCreate) << i;
    EXPECT_FALSE(d.aggregated);
  }
  t += absl::Seconds(30);
  auto tenth = c.Correlate(FailedScheduling("p", "estimate 10"), t);
  EXPECT_TRUE(tenth.aggregated);
  EXPECT_EQ(tenth.write, Write::kCreate);
  EXPECT_EQ(tenth.note, "(combined from similar events): estimate 10");
  t += absl::Seconds(30);
  auto eleventh = c.Correlate(FailedScheduling("p", "estimate 11"), t);
  EXPECT_TRUE(eleventh.aggregated);
  EXPECT_EQ(eleventh.write, Write::kPatchSeries);  // counts on the combined Event
  EXPECT_EQ(eleventh.name, tenth.name);
  EXPECT_EQ(eleventh.series_count, 2);
  // Another object, or another reason, is not similar.
  EXPECT_FALSE(c.Correlate(FailedScheduling("q", "estimate 12"), t).aggregated);
  Event preempted = FailedScheduling("p", "estimate 12");
  preempted.reason = "Preempted";
  EXPECT_FALSE(c.Correlate(preempted, t).aggregated);
  // Ten minutes without a similar event: notes count from zero again.
  EXPECT_FALSE(c.Correlate(FailedScheduling("p", "estimate 13"), t + absl::Minutes(11)).aggregated);
  EXPECT_EQ(c.counters().aggregated, 2);
}

TEST(EventCorrelatorTest, PerObjectTokenBucketDropsTheExcessRequests) {
  EventCorrelator c;  // burst 25, then one per 5 minutes
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  // Distinct reasons (not similar, not a series): each costs a create.
  auto event = [](int i) {
    Event e = FailedScheduling("p", "n");
    e.reason = absl::StrCat("Reason", i);
    return e;
  };
  for (int i = 0; i < 25; ++i) EXPECT_EQ(c.Correlate(event(i), t0).write, Write::kCreate) << i;
  auto dropped = c.Correlate(event(25), t0);
  EXPECT_TRUE(dropped.dropped);
  EXPECT_EQ(dropped.write, Write::kNone);
  EXPECT_EQ(c.Correlate(FailedScheduling("other", "n"), t0).write, Write::kCreate);  // its own bucket
  EXPECT_TRUE(c.Correlate(event(26), t0 + absl::Minutes(4)).dropped);
  EXPECT_EQ(c.Correlate(event(27), t0 + absl::Minutes(5) + absl::Seconds(1)).write, Write::kCreate);
  EXPECT_EQ(c.counters().dropped, 2);
  EXPECT_EQ(c.counters().created, 27);
}

// A backlog of waiting pods makes one FailedScheduling Event each in a single cycle: what has
// ended is forgotten (memory stays bounded) without scanning every series at every new Event.
TEST(EventCorrelatorTest, ManyObjectsAtOnceAndWhatEndedIsForgotten) {
  EventCorrelator::Options o;
  o.spam_burst = 1;
  EventCorrelator c(o);
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  for (int i = 0; i < 100000; ++i) {
    ASSERT_EQ(c.Correlate(FailedScheduling(absl::StrCat("p", i), "0/3 nodes are available"), t0).write,
              Write::kCreate);
  }
  EXPECT_EQ(c.tracked(), 200000u);  // a series and a similar-events group per pod, all live
  const absl::Time later = t0 + absl::Minutes(11);
  for (int i = 0; i < 35000; ++i) c.Correlate(FailedScheduling(absl::StrCat("q", i), "n"), later);
  EXPECT_EQ(c.tracked(), 70000u);  // the first 100,000 pods' entries went when the maps had grown enough
  EXPECT_EQ(c.counters().created, 135000);
}

TEST(TimeFormatTest, MicroTime) {
  const absl::Time t = absl::FromUnixMicros(1763769541123456);
  EXPECT_EQ(FormatMicroTime(t), "2025-11-21T23:59:01.123456Z");
  EXPECT_EQ(FormatRfc3339(t), "2025-11-21T23:59:01Z");
}

}  // namespace
}  // namespace onequeue::k8s

namespace onequeue::k8s {
namespace {

TEST(EventSpamFilterTest, BurstPerObjectThenRefill) {
  EventSpamFilter filter(/*qps=*/1.0 / 300, /*burst=*/3);
  ObjectReference a{"v1", "Pod", "ns", "a", "u1", "", ""};
  ObjectReference b{"v1", "Pod", "ns", "b", "u2", "", ""};
  const absl::Time t0 = absl::UnixEpoch();
  EXPECT_TRUE(filter.Allow(a, t0));
  EXPECT_TRUE(filter.Allow(a, t0));
  EXPECT_TRUE(filter.Allow(a, t0));
  EXPECT_FALSE(filter.Allow(a, t0));  // a's burst is spent
  EXPECT_TRUE(filter.Allow(b, t0));   // b has its own bucket
  EXPECT_FALSE(filter.Allow(a, t0 + absl::Minutes(4)));
  EXPECT_TRUE(filter.Allow(a, t0 + absl::Minutes(6)));  // one token per 5 minutes
  EXPECT_FALSE(filter.Allow(a, t0 + absl::Minutes(6)));
}

}  // namespace
}  // namespace onequeue::k8s

// One conformance suite over every HttpTransport implementation (issue 26: "small interfaces, one
// test suite over every implementation"), against the REAL kube-apiserver of the local cluster
// (K8sClusterEnvironment; TLS with its own CA, bearer tokens, HTTP/2). Each case runs once per
// client: libcurl (NewCurlTransport) and onequeue's nghttp2 client (NewNghttp2Transport); a client
// that cannot be made fails every case (nothing skips). Everything is observed through the interface in http_transport.h.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/k8s_cluster.h"
#include "admin_transport.h"
#include "k8s_client/http_transport.h"

namespace onequeue::k8s {

namespace {

using ::onequeue::testing::K8sClusterEnvironment;
using namespace testing_support;  // NOLINT: the shared helpers of admin_transport.h

std::string PodJson(const std::string& name) {
  return absl::StrCat(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")", name,
                      R"("},"spec":{"schedulerName":"onequeue","terminationGracePeriodSeconds":0,)",
                      R"("containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}})");
}

// The metadata.resourceVersion of a list answer (the first one in the body is the list's).
std::string ListResourceVersion(const std::string& body) {
  const std::string key = R"("resourceVersion":")";
  const size_t at = body.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return body.substr(from, body.find('"', from) - from);
}

// One answer of SendAsync, and when it came. Held by a shared_ptr that the callback shares: when
// a test fails before its answer came, the call may end later (the transport's destructor).
struct Answer {
  absl::Notification done;
  absl::StatusOr<HttpResponse> response;
  absl::Time at;
};

HttpTransport::ResponseCallback Into(std::shared_ptr<Answer> a) {
  return [a](absl::StatusOr<HttpResponse> r) {
    a->response = std::move(r);
    a->at = absl::Now();
    a->done.Notify();
  };
}

// What a stream delivered, and how it ended. Shared with the stream's callbacks, like Answer.
struct Watch {
  absl::Mutex mu;
  std::string received ABSL_GUARDED_BY(mu);
  absl::Notification first_chunk, ended;
  absl::Status status;
  std::unique_ptr<HttpStream> handle;

  bool Saw(absl::string_view text, absl::Duration timeout) {
    absl::MutexLock l(&mu);
    auto seen = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return absl::StrContains(received, text); };
    return mu.AwaitWithTimeout(absl::Condition(&seen), timeout);
  }
};

std::shared_ptr<Watch> OpenWatch(HttpTransport& t, HttpRequest r) {
  auto w = std::make_shared<Watch>();
  // The callbacks hold the Watch; the Watch holds only the handle (no cycle).
  w->handle = t.OpenStream(
      std::move(r),
      [w](absl::string_view chunk) {
        absl::MutexLock l(&w->mu);
        w->received.append(chunk.data(), chunk.size());
        if (!w->first_chunk.HasBeenNotified()) w->first_chunk.Notify();
      },
      [w](absl::Status s) {
        w->status = std::move(s);
        w->ended.Notify();
      });
  return w;
}

class TransportConformance : public ::testing::TestWithParam<HttpClient> {
 protected:
  // The client under test, connected as the admin. Each test has its own namespace, created through libcurl (the reference).
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<HttpTransport>> t = NewHttpTransport(AdminConfig(GetParam()));
    ASSERT_TRUE(t.ok()) << t.status();
    transport_ = *std::move(t);
    // "tc-<client>-<test>": the client first, so that cutting to 63 characters keeps them apart.
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string test = info->name();
    std::string name = absl::AsciiStrToLower(
        absl::StrCat("tc-", ClientName(GetParam()), "-", test.substr(0, test.find('/'))));
    for (char& ch : name) {
      if (!absl::ascii_isalnum(ch)) ch = '-';
    }
    ns_ = name.substr(0, 63);
    while (!ns_.empty() && ns_.back() == '-') ns_.pop_back();
    absl::StatusOr<std::unique_ptr<HttpTransport>> reference = NewCurlTransport(AdminConfig(HttpClient::kCurl));
    ASSERT_TRUE(reference.ok()) << reference.status();
    auto created = (*reference)->Send(Request(
        "POST", "/api/v1/namespaces",
        absl::StrCat(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")", ns_, R"("}})")));
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_TRUE(created->status == 201 || created->status == 409) << created->status << " " << created->body;
  }

  // Another transport of the client under test.
  std::unique_ptr<HttpTransport> Make(const TransportConfig& config) {
    absl::StatusOr<std::unique_ptr<HttpTransport>> t = NewHttpTransport(config);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *std::move(t) : nullptr;
  }

  std::string Pods() const { return absl::StrCat("/api/v1/namespaces/", ns_, "/pods"); }
  std::string ConfigMaps() const { return absl::StrCat("/api/v1/namespaces/", ns_, "/configmaps"); }

  std::unique_ptr<HttpTransport> transport_;
  std::string ns_;
};

TEST_P(TransportConformance, UnaryVerbsCarryTheApiserversStatusCodesAndBodies) {
  HttpTransport& t = *transport_;
  const std::string object = ConfigMaps() + "/cm";
  auto created = t.Send(Request("POST", ConfigMaps(), ConfigMapJson("cm", "one")));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->status, 201) << created->body;
  EXPECT_TRUE(absl::StrContains(created->body, R"("k":"one")")) << created->body;

  auto again = t.Send(Request("POST", ConfigMaps(), ConfigMapJson("cm", "one")));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->status, 409) << again->body;
  EXPECT_TRUE(absl::StrContains(again->body, "AlreadyExists")) << again->body;

  auto got = t.Send(Request("GET", object));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_TRUE(absl::StrContains(got->body, R"("name":"cm")")) << got->body;

  auto put = t.Send(Request("PUT", object, ConfigMapJson("cm", "two")));
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->status, 200) << put->body;
  EXPECT_TRUE(absl::StrContains(put->body, R"("k":"two")")) << put->body;

  HttpRequest patch = Request("PATCH", object, R"({"metadata":{"labels":{"patched":"yes"}}})");
  patch.content_type = "application/merge-patch+json";
  auto patched = t.Send(std::move(patch));
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(patched->status, 200) << patched->body;
  EXPECT_TRUE(absl::StrContains(patched->body, R"("patched":"yes")")) << patched->body;
  EXPECT_TRUE(absl::StrContains(patched->body, R"("k":"two")")) << "a merge patch keeps the rest";

  auto deleted = t.Send(Request("DELETE", object));
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(deleted->status, 200) << deleted->body;

  auto gone = t.Send(Request("GET", object));
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_EQ(gone->status, 404) << gone->body;
  EXPECT_TRUE(absl::StrContains(gone->body, "NotFound")) << gone->body;
}

TEST_P(TransportConformance, AWatchReceivesALaterPodAndEndsCancelledPromptlyAfterCancel) {
  auto list = transport_->Send(Request("GET", Pods()));
  ASSERT_TRUE(list.ok() && list->status == 200) << list.status();
  const std::string rv = ListResourceVersion(list->body);
  ASSERT_FALSE(rv.empty()) << list->body;
  std::shared_ptr<Watch> w =
      OpenWatch(*transport_, Request("GET", absl::StrCat(Pods(), "?watch=true&resourceVersion=", rv)));
  auto created = transport_->Send(Request("POST", Pods(), PodJson("watched")));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_EQ(created->status, 201) << created->body;
  EXPECT_TRUE(w->Saw(R"("type":"ADDED")", absl::Seconds(30)));
  EXPECT_TRUE(w->Saw(R"("name":"watched")", absl::Seconds(1)));
  EXPECT_FALSE(w->ended.HasBeenNotified()) << w->status;
  const absl::Time cancelled = absl::Now();
  w->handle->Cancel();
  ASSERT_TRUE(w->ended.WaitForNotificationWithTimeout(absl::Seconds(5))) << "Cancel() did not end the watch";
  EXPECT_EQ(w->status.code(), absl::StatusCode::kCancelled) << w->status;
  EXPECT_LT(absl::Now() - cancelled, absl::Seconds(2));
}

TEST_P(TransportConformance, AStreamAnsweredWithAnErrorEndsWithTheMappedStatus) {
  std::shared_ptr<Watch> w =
      OpenWatch(*transport_, Request("GET", "/apis/conformance.onequeue.io/v1/widgets?watch=true"));
  ASSERT_TRUE(w->ended.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(w->status.code(), absl::StatusCode::kNotFound) << w->status;
  EXPECT_FALSE(w->first_chunk.HasBeenNotified()) << "a non-2xx body is not handed on as chunks";
}

TEST_P(TransportConformance, TwoThousandRequestsAtOnceAllAnswer) {
  TransportConfig config = AdminConfig(GetParam());
  config.max_requests_in_flight = 50;
  auto t = Make(config);
  ASSERT_NE(t, nullptr);
  constexpr int kRequests = 2000;
  struct Tally {
    absl::Mutex mu;
    int done ABSL_GUARDED_BY(mu) = 0;
    int ok ABSL_GUARDED_BY(mu) = 0;
    absl::Status first_error ABSL_GUARDED_BY(mu);
  };
  auto tally = std::make_shared<Tally>();
  for (int i = 0; i < kRequests; ++i) {
    t->SendAsync(Request("GET", "/version"), [tally](absl::StatusOr<HttpResponse> r) {
      absl::MutexLock l(&tally->mu);
      ++tally->done;
      if (r.ok() && r->status == 200) {
        ++tally->ok;
      } else if (tally->first_error.ok()) {
        tally->first_error = r.ok() ? absl::InternalError(absl::StrCat("HTTP ", r->status)) : r.status();
      }
    });
  }
  absl::MutexLock l(&tally->mu);
  auto all = [&]() ABSL_SHARED_LOCKS_REQUIRED(tally->mu) { return tally->done == kRequests; };
  ASSERT_TRUE(tally->mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(180))) << tally->done << " answered";
  EXPECT_EQ(tally->ok, kRequests) << tally->first_error;
}

TEST_P(TransportConformance, AWrongBearerTokenIsAn401Answer) {
  TransportConfig config = AdminConfig(GetParam());
  config.bearer_token = "not-a-token-the-apiserver-knows";
  auto t = Make(config);
  ASSERT_NE(t, nullptr);
  auto r = t->Send(Request("GET", "/api/v1/namespaces"));
  ASSERT_TRUE(r.ok()) << "an HTTP answer is not a transport error: " << r.status();
  EXPECT_EQ(r->status, 401) << r->body;
}

TEST_P(TransportConformance, ACaThatDidNotSignTheServerFailsTlsVerification) {
  const std::string other_ca = "/etc/ssl/certs/ca-certificates.crt";  // the system's bundle
  if (!std::filesystem::exists(other_ca)) GTEST_SKIP() << other_ca << " missing";
  TransportConfig config = AdminConfig(GetParam());
  config.ca_file = other_ca;
  auto t = Make(config);
  ASSERT_NE(t, nullptr);
  auto r = t->Send(Request("GET", "/version"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "TLS verification")) << r.status();
}

// A port bound on 127.0.0.1 without listen(): connecting is refused, and no one else takes it.
TEST_P(TransportConformance, APortNothingListensOnIsUnavailable) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  TransportConfig config = AdminConfig(GetParam());
  config.server = absl::StrCat("https://127.0.0.1:", ntohs(addr.sin_port));
  auto t = Make(config);
  ASSERT_NE(t, nullptr);
  auto r = t->Send(Request("GET", "/version"));
  close(fd);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

// A watch asked for as a unary call never completes: its timeout ends it.
TEST_P(TransportConformance, AUnaryCallThatCannotFinishEndsWithDeadlineExceeded) {
  HttpRequest r = Request("GET", Pods() + "?watch=true");
  r.timeout = absl::Milliseconds(300);
  auto a = std::make_shared<Answer>();
  const absl::Time sent = absl::Now();
  transport_->SendAsync(std::move(r), Into(a));
  ASSERT_TRUE(a->done.WaitForNotificationWithTimeout(absl::Seconds(10))) << "the request's timeout never fired";
  EXPECT_EQ(a->response.status().code(), absl::StatusCode::kDeadlineExceeded) << a->response.status();
  EXPECT_GE(a->at - sent, absl::Milliseconds(250));
  EXPECT_LT(a->at - sent, absl::Seconds(10));
}

TEST_P(TransportConformance, NotBeforeDelaysTheStart) {
  auto a = std::make_shared<Answer>();
  const absl::Time sent = absl::Now();
  HttpRequest r = Request("GET", "/version");
  r.not_before = sent + absl::Milliseconds(500);
  transport_->SendAsync(std::move(r), Into(a));
  ASSERT_TRUE(a->done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(a->response.ok()) << a->response.status();
  EXPECT_EQ(a->response->status, 200);
  EXPECT_GE(a->at - sent, absl::Milliseconds(500)) << "the call started before not_before";
  EXPECT_LT(a->at - sent, absl::Seconds(10));
}

TEST_P(TransportConformance, AnAdmitErrorEndsTheCallUnsent) {
  std::atomic<int> asked{0};
  HttpRequest r = Request("POST", ConfigMaps(), ConfigMapJson("unsent", "x"));
  r.admit = [&] {
    ++asked;
    return absl::FailedPreconditionError("not the leader any more");
  };
  auto answer = transport_->Send(std::move(r));
  EXPECT_EQ(answer.status().code(), absl::StatusCode::kFailedPrecondition) << answer.status();
  EXPECT_EQ(answer.status().message(), "not the leader any more");
  EXPECT_EQ(asked.load(), 1);
  auto got = transport_->Send(Request("GET", ConfigMaps() + "/unsent"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 404) << "the refused call reached the server: " << got->body;
}

TEST_P(TransportConformance, AnAnswerPastMaxResponseBytesIsResourceExhausted) {
  TransportConfig config = AdminConfig(GetParam());
  config.max_response_bytes = 100;  // a namespace list is a few KiB
  auto t = Make(config);
  ASSERT_NE(t, nullptr);
  const std::string path = "/api/v1/namespaces";
  auto r = t->Send(Request("GET", path));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  const std::string expected(ResponseTooLargeError(Cluster().server + path, 100).message());
  EXPECT_TRUE(absl::StrContains(r.status().message(), expected)) << r.status() << "\nwanted: " << expected;
}

// The callback's Send must return at once. Were it to wait for itself, the transport thread would
// hang for good: the test then fails here and leaves the transport (and its thread) behind.
TEST_P(TransportConformance, SendFromACallbackFailsInsteadOfDeadlocking) {
  auto inner = std::make_shared<Answer>();
  HttpTransport* t = transport_.get();
  t->SendAsync(Request("GET", "/version"), [t, inner](absl::StatusOr<HttpResponse>) {
    inner->response = t->Send(Request("GET", "/version"));
    inner->done.Notify();
  });
  if (!inner->done.WaitForNotificationWithTimeout(absl::Seconds(30))) {
    transport_.release();  // NOLINT: its thread is stuck in Send(); destroying it would hang
    FAIL() << "Send() in a callback hung";
  }
  EXPECT_EQ(inner->response.status().code(), absl::StatusCode::kFailedPrecondition) << inner->response.status();
}

TEST_P(TransportConformance, ARewrittenTokenFileIsUsedByLaterRequests) {
  TransportConfig config = AdminConfig(GetParam());
  config.bearer_token.clear();
  config.token_file = absl::StrCat(::testing::TempDir(), "/conformance_token_", ClientName(GetParam()));
  auto write_token = [&](const std::string& token) {
    std::FILE* f = std::fopen(config.token_file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs((token + "\n").c_str(), f);
    std::fclose(f);
  };
  write_token("not-a-token-the-apiserver-knows");
  auto t = Make(config);
  ASSERT_NE(t, nullptr);
  auto wrong = t->Send(Request("GET", "/api/v1/namespaces"));
  ASSERT_TRUE(wrong.ok()) << wrong.status();
  EXPECT_EQ(wrong->status, 401);
  write_token(Cluster().admin_token);
  auto right = t->Send(Request("GET", "/api/v1/namespaces"));
  ASSERT_TRUE(right.ok()) << right.status();
  EXPECT_EQ(right->status, 200) << "the rewritten token file was not read again";
}

TEST_P(TransportConformance, DestroyingTheTransportWithAWatchOpenEndsTheWatchAndReturns) {
  auto t = Make(AdminConfig(GetParam()));
  ASSERT_NE(t, nullptr);
  // Without a resourceVersion the watch starts with an ADDED event per namespace: a first chunk.
  std::shared_ptr<Watch> w = OpenWatch(*t, Request("GET", "/api/v1/namespaces?watch=true"));
  ASSERT_TRUE(w->first_chunk.WaitForNotificationWithTimeout(absl::Seconds(30)));
  const absl::Time start = absl::Now();
  t.reset();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_TRUE(w->ended.HasBeenNotified()) << "the watch outlived its transport";
  EXPECT_EQ(w->status.code(), absl::StatusCode::kCancelled) << w->status;
  w->handle->Cancel();  // after the transport is gone: harmless
}

INSTANTIATE_TEST_SUITE_P(Clients, TransportConformance, ::testing::Values(HttpClient::kCurl, HttpClient::kNghttp2),
                         [](const ::testing::TestParamInfo<HttpClient>& info) { return ClientName(info.param); });

}  // namespace
}  // namespace onequeue::k8s

ONEQUEUE_K8S_CLUSTER_TEST_MAIN({})

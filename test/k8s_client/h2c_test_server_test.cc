// The h2c test server itself, spoken to by libcurl with HTTP/2 prior knowledge (not through
// onequeue's transports, whose tests rely on it): it answers HTTP/2, counts requests waiting for a
// delayed answer at once, streams until the client goes, and sends a large body whole.
#include "h2c_test_server.h"

#include <curl/curl.h>
#include <gtest/gtest.h>

#include <cstdlib>
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

TEST_F(H2cTestServerTest, SendsALargeBodyWhole) {
  Fetched f = Get(server_->url() + "/big");
  ASSERT_EQ(f.code, CURLE_OK) << curl_easy_strerror(f.code);
  EXPECT_EQ(f.body.size(), size_t{3} << 20);
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

}  // namespace
}  // namespace onequeue::k8s::testing

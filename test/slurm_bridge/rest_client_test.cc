#include "slurm_bridge/rest_client.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scripted_transport.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::slurm {
namespace {
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using testing::ScriptedTransport;

std::string Jwt(int64_t exp) {
  return absl::StrCat(absl::WebSafeBase64Escape(R"({"alg":"HS256","typ":"JWT"})"), ".",
                      absl::WebSafeBase64Escape(absl::StrCat(R"({"exp":)", exp, R"(,"sun":"slurm"})")), ".sig");
}

class TempFile {
 public:
  TempFile() : path_(std::filesystem::temp_directory_path() / absl::StrCat("oq-token-", getpid(), "-", counter_++)) {}
  ~TempFile() { std::filesystem::remove(path_); }
  void Write(const std::string& s) {
    std::ofstream(path_) << s;
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(RestClientTest, SendsJwtHeadersAndRetriesConnectionFailures) {
  auto transport = std::make_unique<ScriptedTransport>();
  ScriptedTransport* t = transport.get();
  t->answers = {{0, ""}, {0, ""}, {200, R"({"errors":[],"jobs":[]})"}};
  std::vector<absl::Duration> sleeps;
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}), kSlurmRetryPolicy,
                    [&](absl::Duration d) { sleeps.push_back(d); });
  absl::StatusOr<RestResponse> r = client.Call("GET", "/slurm/v0.0.38/jobs/");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->http_status, 200);
  EXPECT_TRUE(r->body["jobs"].is_array());
  ASSERT_EQ(t->seen.size(), 3u);
  EXPECT_THAT(t->seen[0].headers, Contains(Pair("X-SLURM-USER-NAME", "slurm")));
  EXPECT_THAT(t->seen[0].headers, Contains(Pair("X-SLURM-USER-TOKEN", "tok")));
  EXPECT_EQ(sleeps, (std::vector<absl::Duration>{absl::Milliseconds(100), absl::Milliseconds(200)}));
  EXPECT_EQ(client.counters().retries.load(), 2u);
}

TEST(RestClientTest, GivesUpWithUnavailable) {
  auto transport = std::make_unique<ScriptedTransport>();
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}), RetryPolicy{.max_attempts = 3},
                    [](absl::Duration) {});
  absl::StatusOr<RestResponse> r = client.Call("GET", "/x");
  EXPECT_TRUE(absl::IsUnavailable(r.status()));
  EXPECT_THAT(r.status().message(), HasSubstr("cannot connect to slurmrestd"));
}

TEST(RestClientTest, TimeoutsAreRetriedOnlyForReads) {
  auto transport = std::make_unique<ScriptedTransport>();
  ScriptedTransport* t = transport.get();
  t->answers = {{-1, ""}, {200, "{}"}};
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}), kSlurmRetryPolicy,
                    [](absl::Duration) {});
  const nlohmann::json body = {{"hold", true}};
  EXPECT_TRUE(absl::IsDeadlineExceeded(client.Call("POST", "/x", &body).status()));
  t->answers = {{-1, ""}, {200, "{}"}};
  EXPECT_TRUE(client.Call("GET", "/x").ok());
}

TEST(RestClientTest, NonJsonBodyIsNullNotACrash) {
  auto transport = std::make_unique<ScriptedTransport>();
  transport->answers = {{401, "Authentication failure"}};
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}));
  absl::StatusOr<RestResponse> r = client.Call("GET", "/x");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->http_status, 401);
  EXPECT_TRUE(r->body.is_null());
  EXPECT_TRUE(absl::IsUnauthenticated(ResponseStatus(r->http_status, r->body, "GET /x")));
}

TEST(TokenFileTest, RereadsWhenTheFileChanges) {
  TempFile f;
  const absl::Time now = absl::FromUnixSeconds(1000);
  f.Write("SLURM_JWT=" + Jwt(2000) + "\n");
  auto src = MakeTokenFileSource("slurm", f.path(), [&] { return now; });
  absl::StatusOr<Credentials> c = src->Get();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->token, Jwt(2000));
  EXPECT_EQ(c->user, "slurm");
  f.Write(Jwt(3000) + "\n");  // different size: picked up even within the same mtime tick
  c = src->Get();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->token, Jwt(3000));
}

TEST(TokenFileTest, ExpiredMalformedAndMissingTokensAreClearErrors) {
  TempFile f;
  f.Write(Jwt(500));
  auto src = MakeTokenFileSource("slurm", f.path(), [] { return absl::FromUnixSeconds(1000); });
  absl::StatusOr<Credentials> c = src->Get();
  EXPECT_TRUE(absl::IsUnauthenticated(c.status()));
  EXPECT_THAT(c.status().message(), HasSubstr("expired"));
  EXPECT_THAT(c.status().message(), Not(HasSubstr(Jwt(500))));  // never log the token

  TempFile g;
  g.Write("not-a-token");
  c = MakeTokenFileSource("slurm", g.path())->Get();
  EXPECT_TRUE(absl::IsUnauthenticated(c.status()));
  EXPECT_THAT(c.status().message(), HasSubstr("not a JWT"));

  c = MakeTokenFileSource("slurm", "/nonexistent/oq-token")->Get();
  EXPECT_TRUE(absl::IsFailedPrecondition(c.status()));
}

TEST(DetectVersionTest, PicksTheHighestServedVersion) {
  auto transport = std::make_unique<ScriptedTransport>();
  transport->answers = {{200, R"({"paths":{"/slurm/v0.0.37/jobs/":{},"/slurm/v0.0.38/jobs/":{},"/slurmdb/v0.0.39/x":{}}})"}};
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}));
  absl::StatusOr<ApiVersion> v = DetectVersion(client);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, ApiVersion::kV0038);
}

TEST(DetectVersionTest, ProbesWhenThereIsNoSpec) {
  auto transport = std::make_unique<ScriptedTransport>();
  transport->answers = {{404, ""}, {404, ""}, {404, ""}, {404, ""}, {200, R"({"errors":[]})"}};
  RestClient client(std::move(transport), MakeStaticCredentials({"slurm", "tok"}));
  absl::StatusOr<ApiVersion> v = DetectVersion(client);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, ApiVersion::kV0042);  // 45, 44, 43 -> 404; 42 answers
}

// UpdateJob over a scripted slurmrestd: which requests, in which order, with which bodies.
class UpdateJobTest : public ::testing::Test {
 protected:
  std::unique_ptr<SlurmApi> Api(ApiVersion v) {
    return testing::ScriptedSlurmApi(v, t_, std::make_unique<testing::RecordingScontrol>(&scontrol_calls_));
  }
  std::vector<std::string> scontrol_calls_;
  std::vector<nlohmann::json> Bodies() const {
    std::vector<nlohmann::json> out;
    for (const HttpRequest& r : t_->seen) {
      EXPECT_EQ(r.method, "POST");
      EXPECT_EQ(r.path, "/slurm/v0.0.38/job/42");
      out.push_back(nlohmann::json::parse(r.body));
    }
    return out;
  }
  static JobUpdate Start() {
    JobUpdate u;
    u.comment = "onequeue: started for pod-a";
    u.required_nodes = std::vector<std::string>{"n3"};
    u.priority = 1000000;
    u.begin_now = true;
    return u;
  }
  ScriptedTransport* t_ = nullptr;
  const HttpResponse ok_ = {200, R"({"errors":[]})"};
};

TEST_F(UpdateJobTest, HoldWithCommentIsOneRequest) {
  auto api = Api(ApiVersion::kV0038);
  t_->answers = {ok_};
  JobUpdate u;
  u.hold = true;
  u.comment = "onequeue: waiting for n3";
  ASSERT_TRUE(api->UpdateJob(42, u).ok());
  EXPECT_EQ(Bodies(), (std::vector<nlohmann::json>{{{"hold", true}, {"comment", "onequeue: waiting for n3"}}}));
}

// Slurm refuses a priority on a held job (2042) and ignores it beside hold:false, so the start is
// release + the rest with the begin time held back, then priority + begin now.
TEST_F(UpdateJobTest, StartReleasesFirstThenGivesThePriority) {
  auto api = Api(ApiVersion::kV0038);
  t_->answers = {ok_, ok_};
  ASSERT_TRUE(api->UpdateJob(42, Start()).ok());
  const std::vector<nlohmann::json> bodies = Bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0], (nlohmann::json{{"comment", "onequeue: started for pod-a"},
                                       {"hold", false},
                                       {"nodelist", "n3"},
                                       {"begin_time", "now+60"}}));
  EXPECT_EQ(bodies[1], (nlohmann::json{{"priority", 1000000}, {"begin_time", "now"}}));
}

TEST_F(UpdateJobTest, AFailedFirstRequestStopsThere) {
  auto api = Api(ApiVersion::kV0038);
  t_->answers = {{500, R"({"errors":[{"error":"Job has already finished","error_number":2084}]})"}, ok_};
  absl::Status st = api->UpdateJob(42, Start());
  EXPECT_TRUE(absl::IsFailedPrecondition(st)) << st;
  EXPECT_EQ(t_->seen.size(), 1u);
  t_->answers = {{500, R"({"errors":[{"error":"Invalid job id specified","error_number":2017}]})"}};
  EXPECT_TRUE(absl::IsNotFound(api->UpdateJob(42, JobUpdate{.comment = "x"})));
}

TEST_F(UpdateJobTest, RefusesWhatSlurmCannotMeanWithoutSendingAnything) {
  auto api = Api(ApiVersion::kV0038);
  JobUpdate both = Start();
  both.hold = true;
  EXPECT_TRUE(absl::IsInvalidArgument(api->UpdateJob(42, both)));
  JobUpdate zero;
  zero.priority = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(api->UpdateJob(42, zero)));
  JobUpdate infinite;
  infinite.priority = 0xFFFFFFFF;
  EXPECT_TRUE(absl::IsInvalidArgument(api->UpdateJob(42, infinite)));
  EXPECT_TRUE(api->UpdateJob(42, JobUpdate{}).ok());  // nothing to change
  EXPECT_TRUE(t_->seen.empty());
}

TEST_F(UpdateJobTest, DataParserVersionsUseTheirShapes) {
  auto api = Api(ApiVersion::kV0044);
  t_->answers = {ok_, ok_};
  ASSERT_TRUE(api->UpdateJob(42, Start()).ok());
  ASSERT_EQ(t_->seen.size(), 2u);
  EXPECT_EQ(t_->seen[0].path, "/slurm/v0.0.44/job/42");
  const nlohmann::json first = nlohmann::json::parse(t_->seen[0].body);
  const nlohmann::json second = nlohmann::json::parse(t_->seen[1].body);
  EXPECT_EQ(first["required_nodes"], nlohmann::json::array({"n3"}));
  EXPECT_EQ(first["hold"], false);
  EXPECT_FALSE(first.contains("priority"));
  EXPECT_EQ(second["priority"]["number"], 1000000);
  // The first begin time lies a minute after the second (both epochs from the same clock).
  EXPECT_EQ(first["begin_time"]["number"].get<int64_t>() - second["begin_time"]["number"].get<int64_t>(), 60);
}

// The same-second release race (issue 16): a begin time set right after the bridge requeued the
// job lies kRelaunchMargin after the requeue, whatever the caller asked; other jobs are not held
// back. 22.05 takes "now+N", the data-parser versions an epoch.
TEST_F(UpdateJobTest, BeginTimesRightAfterARequeueWaitTheRelaunchMargin) {
  auto api = Api(ApiVersion::kV0038);
  ASSERT_TRUE(api->RequeueJob(42).ok());
  EXPECT_EQ(scontrol_calls_, std::vector<std::string>{"requeue 42"});
  t_->answers = {ok_, ok_, ok_, ok_};
  ASSERT_TRUE(api->StartAt(42, absl::Now(), absl::Now()).ok());
  JobUpdate go;
  go.comment = "go";
  go.begin_now = true;
  ASSERT_TRUE(api->UpdateJob(42, go).ok());
  const absl::Time now = absl::Now();
  ASSERT_TRUE(api->StartAt(43, now, now).ok());  // not requeued: at once
  std::vector<nlohmann::json> bodies;
  for (const HttpRequest& r : t_->seen) bodies.push_back(nlohmann::json::parse(r.body));
  ASSERT_EQ(bodies.size(), 3u);
  EXPECT_EQ(bodies[0], (nlohmann::json{{"begin_time", "now+2"}}));
  EXPECT_EQ(bodies[1], (nlohmann::json{{"comment", "go"}, {"begin_time", "now+2"}}));
  EXPECT_EQ(bodies[2], (nlohmann::json{{"begin_time", "now"}}));

  auto v44 = Api(ApiVersion::kV0044);
  const absl::Time requeued = absl::Now();
  ASSERT_TRUE(v44->RequeueJob(42).ok());
  t_->answers = {ok_, ok_};
  ASSERT_TRUE(v44->UpdateJob(42, Start()).ok());  // release + gate, then priority + begin
  ASSERT_EQ(t_->seen.size(), 2u);
  const int64_t begin = nlohmann::json::parse(t_->seen[1].body)["begin_time"]["number"].get<int64_t>();
  EXPECT_GE(begin, absl::ToUnixSeconds(requeued + kRelaunchMargin));
  EXPECT_LE(begin, absl::ToUnixSeconds(absl::Now() + kRelaunchMargin));
}

}  // namespace
}  // namespace onequeue::slurm

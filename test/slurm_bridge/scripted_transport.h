// A slurmrestd that answers from a script: for the REST client, version detection, UpdateJob
// sequences and the poller over real recorded answers (fixtures). No sockets.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fixture_util.h"
#include "slurm_bridge/rest_client.h"
#include "slurm_bridge/slurm_api.h"

namespace onequeue::slurm::testing {

// Answers in order; status 0 means "connection refused", -1 a timeout; no answer left = refused.
class ScriptedTransport : public HttpTransport {
 public:
  std::vector<HttpResponse> answers;
  std::vector<HttpRequest> seen;
  void SendAsync(HttpRequest r, ResponseCallback done) override { done(Answer(std::move(r))); }
  std::unique_ptr<k8s::HttpStream> OpenStream(HttpRequest, ChunkCallback, StreamDoneCallback done) override {
    done(absl::UnimplementedError("no streams"));
    return nullptr;
  }

 private:
  absl::StatusOr<HttpResponse> Answer(HttpRequest r) {
    seen.push_back(std::move(r));
    if (answers.empty()) return absl::UnavailableError("cannot connect to slurmrestd (test)");
    HttpResponse a = answers.front();
    answers.erase(answers.begin());
    if (a.status == 0) return absl::UnavailableError("cannot connect to slurmrestd (test)");
    if (a.status == -1) return absl::DeadlineExceededError("timeout (test)");
    return a;
  }
};

// A RestSlurmApi of `version` over a ScriptedTransport (one attempt per call, no sleeping).
inline std::unique_ptr<SlurmApi> ScriptedSlurmApi(ApiVersion version, ScriptedTransport*& transport,
                                                  std::unique_ptr<Scontrol> scontrol = nullptr) {
  auto t = std::make_unique<ScriptedTransport>();
  transport = t.get();
  auto client = std::make_shared<RestClient>(std::move(t), MakeStaticCredentials({"slurm", "tok"}),
                                             RetryPolicy{.max_attempts = 1}, [](absl::Duration) {});
  return MakeRestSlurmApi(std::move(client), version, std::move(scontrol));
}

// scontrol that does what it is told and remembers it.
class RecordingScontrol : public Scontrol {
 public:
  explicit RecordingScontrol(std::vector<std::string>* calls) : calls_(calls) {}
  absl::Status DrainNode(const std::string& node, const std::string&) override { return Record("drain " + node); }
  absl::Status ResumeNode(const std::string& node) override { return Record("resume " + node); }
  absl::Status RequeueJob(uint32_t job_id) override { return Record("requeue " + std::to_string(job_id)); }
  absl::Status SetJobAdminComment(const std::string& job_id, const std::string& text) override {
    return Record("admin_comment " + job_id + " " + text);
  }

 private:
  absl::Status Record(std::string call) {
    calls_->push_back(std::move(call));
    return absl::OkStatus();
  }
  std::vector<std::string>* calls_;
};

// A recorded answer: `status` with the fixture file's text as body ("" for an empty body).
inline HttpResponse Recorded(int status, const std::string& fixture) {
  return HttpResponse{status, fixture.empty() ? std::string() : ReadFixtureText(fixture)};
}

}  // namespace onequeue::slurm::testing

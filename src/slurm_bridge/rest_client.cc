#include "slurm_bridge/rest_client.h"

#include <algorithm>
#include <optional>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace onequeue::slurm {
namespace {

// Answers every request with the error that kept the real transport from being made.
class RefusedTransport : public HttpTransport {
 public:
  explicit RefusedTransport(absl::Status why) : why_(std::move(why)) {}
  void SendAsync(HttpRequest, ResponseCallback done) override { done(why_); }
  std::unique_ptr<k8s::HttpStream> OpenStream(HttpRequest, ChunkCallback, StreamDoneCallback done) override {
    done(why_);
    return nullptr;
  }

 private:
  const absl::Status why_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTransport>> NewSlurmTransport(const CurlTransportOptions& options) {
  k8s::TransportConfig config;
  config.server = options.base_url;
  config.unix_socket = options.unix_socket;
  config.ca_file = options.ca_file;
  config.connect_timeout = options.connect_timeout;
  config.request_timeout = options.request_timeout;
  config.peer_name = "slurmrestd";
  return k8s::NewCurlTransport(config);
}

std::unique_ptr<HttpTransport> MakeCurlTransport(const CurlTransportOptions& options) {
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport = NewSlurmTransport(options);
  if (!transport.ok()) return std::make_unique<RefusedTransport>(transport.status());
  return *std::move(transport);
}

RestClient::RestClient(std::unique_ptr<HttpTransport> transport, std::unique_ptr<CredentialSource> credentials,
                       RetryPolicy retry, std::function<void(absl::Duration)> sleep)
    : transport_(std::move(transport)),
      credentials_(std::move(credentials)),
      retry_(retry),
      sleep_(sleep ? std::move(sleep) : [](absl::Duration d) { absl::SleepFor(d); }) {}

void RestClient::BoundWrites(std::function<absl::Duration()> time_left, absl::Duration request_timeout) {
  write_time_left_ = std::move(time_left);
  request_timeout_ = request_timeout;
}

absl::Duration RestClient::WriteTimeLeft(const std::string& method, const std::string& path) const {
  if (!write_time_left_) return absl::InfiniteDuration();
  const absl::string_view bare = absl::string_view(path).substr(0, path.find('?'));
  if (method == "GET" && !absl::EndsWith(bare, "/requeue") && !absl::EndsWith(bare, "/requeue/")) {
    return absl::InfiniteDuration();
  }
  return write_time_left_();
}

absl::StatusOr<RestResponse> RestClient::Call(const std::string& method, const std::string& path,
                                              const nlohmann::json* body) {
  absl::StatusOr<Credentials> creds = credentials_->Get();
  if (!creds.ok()) return creds.status();
  HttpRequest req;
  req.method = method;
  req.path = path;
  if (body != nullptr) req.body = body->dump();
  req.headers = {{"X-SLURM-USER-NAME", creds->user}, {"X-SLURM-USER-TOKEN", creds->token}};
  const bool bounded = WriteTimeLeft(method, path) != absl::InfiniteDuration();
  auto abandoned = [&](absl::string_view why) {
    return absl::DeadlineExceededError(absl::StrCat("slurmrestd: ", method, " ", path,
                                                    " abandoned: the writer's lease ends ", why));
  };
  if (bounded) {
    // Asked again on the transport's thread at the last moment (a call queued there waits).
    req.admit = [this, method, path, abandoned] {
      return WriteTimeLeft(method, path) >= absl::Milliseconds(1) ? absl::OkStatus() : abandoned("before it was sent");
    };
  }

  // HTTP answers are never retried here: a Slurm 500 may mean "unknown job" (ResponseStatus
  // decides). Only transport errors reach the retry policy.
  k8s::Retrier retrier(retry_, rand01_);
  absl::StatusOr<HttpResponse> resp;
  while (true) {
    if (bounded) {
      const absl::Duration left = WriteTimeLeft(method, path);
      // Under a millisecond is none: the transport's timeout has millisecond steps, 0 = no limit.
      if (left < absl::Milliseconds(1)) return abandoned("before it was sent");
      req.timeout = std::min(left, request_timeout_);
    }
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    counters_.bytes_sent.fetch_add(req.body.size(), std::memory_order_relaxed);
    resp = transport_->Send(req);
    if (resp.ok()) break;
    std::optional<absl::Duration> delay = retrier.NextDelay(resp.status(), method);
    if (!delay) return retrier.GiveUp(resp.status());
    if (bounded && *delay >= WriteTimeLeft(method, path)) {
      return abandoned(absl::StrCat("before its retry (", retrier.attempts(), " attempt(s), last: ",
                                    resp.status().message(), ")"));
    }
    counters_.retries.fetch_add(1, std::memory_order_relaxed);
    sleep_(*delay);
  }
  counters_.bytes_received.fetch_add(resp->body.size(), std::memory_order_relaxed);
  RestResponse out;
  out.http_status = resp->status;
  if (!resp->body.empty()) {
    out.body = nlohmann::json::parse(resp->body, nullptr, /*allow_exceptions=*/false);
    if (out.body.is_discarded()) out.body = nullptr;
  }
  return out;
}

}  // namespace onequeue::slurm

#include "slurm_bridge/rest_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace onequeue::slurm {

RestClient::RestClient(std::unique_ptr<HttpTransport> transport, std::unique_ptr<CredentialSource> credentials,
                       RetryPolicy retry, std::function<void(absl::Duration)> sleep)
    : transport_(std::move(transport)),
      credentials_(std::move(credentials)),
      retry_(retry),
      sleep_(sleep ? std::move(sleep) : [](absl::Duration d) { absl::SleepFor(d); }) {}

absl::StatusOr<RestResponse> RestClient::Call(const std::string& method, const std::string& path,
                                              const nlohmann::json* body) {
  absl::StatusOr<Credentials> creds = credentials_->Get();
  if (!creds.ok()) return creds.status();
  HttpRequest req;
  req.method = method;
  req.path = path;
  if (body != nullptr) req.body = body->dump();
  req.headers = {{"X-SLURM-USER-NAME", creds->user},
                 {"X-SLURM-USER-TOKEN", creds->token},
                 {"Accept", "application/json"}};
  if (body != nullptr) req.headers.emplace_back("Content-Type", "application/json");

  absl::Duration backoff = retry_.initial_backoff;
  absl::StatusOr<HttpResponse> resp;
  for (int attempt = 1;; ++attempt) {
    counters_.requests.fetch_add(1, std::memory_order_relaxed);
    counters_.bytes_sent.fetch_add(req.body.size(), std::memory_order_relaxed);
    resp = transport_->Send(req);
    // Connection failures never reached slurmrestd: safe to retry for every method. A timeout
    // may have reached it: retry only reads.
    const bool retryable = !resp.ok() && (absl::IsUnavailable(resp.status()) ||
                                          (absl::IsDeadlineExceeded(resp.status()) && method == "GET"));
    if (!retryable || attempt >= retry_.max_attempts) break;
    counters_.retries.fetch_add(1, std::memory_order_relaxed);
    sleep_(backoff);
    backoff = std::min(backoff * 2, retry_.max_backoff);
  }
  if (!resp.ok()) return resp.status();
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

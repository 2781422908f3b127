#include "k8s_client/rest_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "k8s_client/api_status.h"

namespace onequeue::k8s {

std::string CollectionPath(const ResourceType& type, const std::string& ns) {
  if (type.namespaced && !ns.empty()) {
    return absl::StrCat(type.api_prefix, "/namespaces/", UrlEncode(ns), "/", type.resource);
  }
  return absl::StrCat(type.api_prefix, "/", type.resource);
}

std::string ObjectPath(const ResourceType& type, const std::string& ns, const std::string& name,
                       const std::string& subresource) {
  std::string path = absl::StrCat(CollectionPath(type, ns), "/", UrlEncode(name));
  if (!subresource.empty()) absl::StrAppend(&path, "/", subresource);
  return path;
}

std::string UrlEncode(absl::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string ListOptions::ToQuery() const {
  std::string q;
  auto add = [&q](absl::string_view key, absl::string_view value) {
    absl::StrAppend(&q, q.empty() ? "?" : "&", key, "=", UrlEncode(value));
  };
  if (!label_selector.empty()) add("labelSelector", label_selector);
  if (!field_selector.empty()) add("fieldSelector", field_selector);
  if (limit > 0) add("limit", absl::StrCat(limit));
  if (!continue_token.empty()) add("continue", continue_token);
  if (!resource_version.empty()) add("resourceVersion", resource_version);
  if (!resource_version_match.empty()) add("resourceVersionMatch", resource_version_match);
  if (watch) add("watch", "true");
  if (allow_watch_bookmarks) add("allowWatchBookmarks", "true");
  if (timeout_seconds > 0) add("timeoutSeconds", absl::StrCat(timeout_seconds));
  return q;
}

RestClient::RestClient(ClientConfig config, std::unique_ptr<HttpTransport> transport,
                       RetryPolicy retry, ClientEnv env)
    : config_(std::move(config)),
      transport_(std::move(transport)),
      retry_(retry),
      env_(std::move(env)),
      limiter_(config_.qps, config_.burst, env_.now()) {}

absl::StatusOr<std::unique_ptr<RestClient>> RestClient::Create(const ClientConfig& config,
                                                               RetryPolicy retry) {
  absl::StatusOr<std::unique_ptr<HttpTransport>> transport = NewHttpTransport(config);
  if (!transport.ok()) return transport.status();
  return std::make_unique<RestClient>(config, *std::move(transport), retry);
}

absl::StatusOr<std::string> RestClient::ToResult(absl::StatusOr<HttpResponse> response) {
  if (!response.ok()) return response.status();
  if (response->status >= 200 && response->status < 300) return std::move(response->body);
  return StatusFromHttp(response->status, response->body, response->retry_after);
}

absl::StatusOr<std::string> RestClient::Do(HttpRequest request) {
  if (request.timeout == absl::ZeroDuration()) request.timeout = config_.request_timeout;
  if (write_gate_ && request.method != "GET") request.admit = write_gate_;
  Retrier retrier(retry_, env_.rand01);
  while (true) {
    if (absl::Duration wait = limiter_.Reserve(env_.now()); wait > absl::ZeroDuration()) env_.sleep(wait);
    if (request.admit) {
      if (absl::Status s = request.admit(); !s.ok()) return s;
    }
    absl::StatusOr<std::string> result = ToResult(transport_->Send(request));
    if (result.ok()) return result;
    std::optional<absl::Duration> delay = retrier.NextDelay(result.status(), request.method);
    if (!delay) return retrier.GiveUp(result.status());
    env_.sleep(*delay);
  }
}

void RestClient::DoAsync(HttpRequest request, std::function<void(absl::StatusOr<std::string>)> done) {
  if (request.timeout == absl::ZeroDuration()) request.timeout = config_.request_timeout;
  if (write_gate_ && request.method != "GET") request.admit = write_gate_;
  struct Attempt {
    RestClient* client;
    HttpRequest request;
    std::function<void(absl::StatusOr<std::string>)> done;
    Retrier retrier;
  };
  auto state = std::make_shared<Attempt>(Attempt{this, std::move(request), std::move(done),
                                                  Retrier(retry_, env_.rand01)});
  // Each attempt re-sends a copy of the request, delayed by the rate limiter (and the backoff).
  auto send = std::make_shared<std::function<void(absl::Duration)>>();
  *send = [state, send_weak = std::weak_ptr<std::function<void(absl::Duration)>>(send)](absl::Duration delay) {
    RestClient* self = state->client;
    HttpRequest req = state->request;
    const absl::Time now = self->env_.now();
    req.not_before = now + delay + self->limiter_.Reserve(now);
    auto again = send_weak.lock();
    self->transport_->SendAsync(std::move(req), [state, again](absl::StatusOr<HttpResponse> r) {
      absl::StatusOr<std::string> result = ToResult(std::move(r));
      if (!result.ok()) {
        std::optional<absl::Duration> delay = state->retrier.NextDelay(result.status(), state->request.method);
        if (delay && again) {
          (*again)(*delay);
          return;
        }
        result = state->retrier.GiveUp(result.status());
      }
      state->done(std::move(result));
    });
  };
  // The lambda captures `send` strongly through each pending callback only, so the chain lives
  // exactly as long as an attempt is in flight.
  auto keep = send;
  (*send)(absl::ZeroDuration());
  (void)keep;
}

static absl::StatusOr<nlohmann::json> ParseBody(absl::StatusOr<std::string> body) {
  if (!body.ok()) return body.status();
  if (body->empty()) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(body->begin(), body->end(), nullptr, false);
  if (j.is_discarded()) return absl::InternalError("API server answered with invalid JSON");
  return j;
}

absl::StatusOr<nlohmann::json> RestClient::Get(const std::string& path) {
  HttpRequest r;
  r.path = path;
  return ParseBody(Do(std::move(r)));
}

absl::StatusOr<nlohmann::json> RestClient::Post(const std::string& path, const nlohmann::json& body) {
  HttpRequest r;
  r.method = "POST";
  r.path = path;
  r.body = body.dump();
  return ParseBody(Do(std::move(r)));
}

absl::StatusOr<nlohmann::json> RestClient::Put(const std::string& path, const nlohmann::json& body) {
  HttpRequest r;
  r.method = "PUT";
  r.path = path;
  r.body = body.dump();
  return ParseBody(Do(std::move(r)));
}

absl::StatusOr<nlohmann::json> RestClient::Patch(const std::string& path, const nlohmann::json& body,
                                                 const std::string& content_type) {
  HttpRequest r;
  r.method = "PATCH";
  r.path = path;
  r.body = body.dump();
  r.content_type = content_type;
  return ParseBody(Do(std::move(r)));
}

absl::StatusOr<nlohmann::json> RestClient::Delete(const std::string& path,
                                                  std::optional<int64_t> grace_period_seconds) {
  HttpRequest r;
  r.method = "DELETE";
  r.path = path;
  if (grace_period_seconds) {
    r.body = nlohmann::json{{"apiVersion", "v1"}, {"kind", "DeleteOptions"},
                            {"gracePeriodSeconds", *grace_period_seconds}}.dump();
  }
  return ParseBody(Do(std::move(r)));
}

std::unique_ptr<HttpStream> RestClient::Stream(const std::string& path,
                                               HttpTransport::ChunkCallback on_chunk,
                                               HttpTransport::StreamDoneCallback on_done) {
  HttpRequest r;
  r.path = path;
  return transport_->OpenStream(std::move(r), std::move(on_chunk), std::move(on_done));
}

}  // namespace onequeue::k8s

// What every HttpTransport shares: the synchronous call, the body-limit error, the choice of
// implementation, and the helpers of transport_internal.h.
#include "k8s_client/http_transport.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "k8s_client/api_status.h"
#include "k8s_client/transport_internal.h"
#include "spdlog/spdlog.h"

namespace onequeue::k8s {

absl::StatusOr<HttpResponse> HttpTransport::Send(HttpRequest request) {
  if (OnTransportThread()) {
    return absl::FailedPreconditionError(
        "synchronous request from a transport callback (it would deadlock): use the async call");
  }
  absl::Notification done;
  absl::StatusOr<HttpResponse> result;
  request.urgent = true;
  SendAsync(std::move(request), [&](absl::StatusOr<HttpResponse> r) {
    result = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  return result;
}

absl::Status ResponseTooLargeError(absl::string_view where, size_t max) {
  return LimitExceededError(absl::StrCat(where, ": response body larger than ", max,
                                                   " bytes, the limit for one response "
                                                   "(kubernetes.maxResponseBytes for the Kubernetes API)"));
}

absl::StatusOr<std::unique_ptr<HttpTransport>> NewHttpTransport(const TransportConfig& config) {
  switch (config.client) {
    case HttpClient::kCurl:
      return NewCurlTransport(config);
    case HttpClient::kNghttp2:
      return NewNghttp2Transport(config);
  }
  return absl::InvalidArgumentError("unknown HTTP client");
}

namespace {
// The first proxy variable libcurl would read for `server` that is set and not empty (libcurl
// reads http_proxy only in lower case: HTTP_PROXY may come from a CGI request's header).
const char* ProxyVariableFor(absl::string_view server, const std::function<const char*(const char*)>& getenv) {
  const bool https = !absl::StartsWithIgnoreCase(server, "http://");
  const std::vector<const char*> names = https ? std::vector<const char*>{"https_proxy", "HTTPS_PROXY", "all_proxy",
                                                                          "ALL_PROXY"}
                                               : std::vector<const char*>{"http_proxy", "all_proxy", "ALL_PROXY"};
  for (const char* name : names) {
    const char* value = getenv(name);
    if (value != nullptr && *value != '\0') return name;
  }
  return nullptr;
}
}  // namespace

absl::StatusOr<HttpClientChoice> ChooseHttpClient(absl::string_view setting, absl::string_view server,
                                                  const std::function<const char*(const char*)>& getenv) {
  const char* proxy = ProxyVariableFor(server, getenv);
  if (setting == "curl") return HttpClientChoice{HttpClient::kCurl, ""};
  if (setting == "nghttp2") {
    if (proxy == nullptr) return HttpClientChoice{HttpClient::kNghttp2, ""};
    return HttpClientChoice{HttpClient::kNghttp2,
                            absl::StrCat(proxy, " is set and not used: kubernetes.httpClient nghttp2 connects to ",
                                         server, " directly (auto or curl would use the proxy)")};
  }
  if (setting == "auto") {
    if (proxy == nullptr) return HttpClientChoice{HttpClient::kNghttp2, ""};
    return HttpClientChoice{HttpClient::kCurl,
                            absl::StrCat("kubernetes.httpClient auto chose curl because ", proxy,
                                         " is set (onequeue's HTTP/2 client uses no proxy; libcurl honours it and "
                                         "NO_PROXY)")};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("kubernetes.httpClient is \"", setting, "\"; must be auto, curl or nghttp2"));
}

namespace internal {

Waker::Waker() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

Waker::~Waker() {
  if (fd_ >= 0) close(fd_);
}

void Waker::Wake() {
  const uint64_t one = 1;
  // EAGAIN (counter saturated) still leaves the descriptor readable: the loop wakes anyway.
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one);
}

void Waker::Drain() {
  uint64_t value = 0;
  [[maybe_unused]] ssize_t n = read(fd_, &value, sizeof value);
}

void CancellableStream::Cancel() {
  state_->cancelled.store(true);
  waker_->Wake();
}

absl::Status StreamEnd(const absl::StatusOr<HttpResponse>& result) {
  if (!result.ok()) return result.status();
  if (result->status >= 200 && result->status < 300) return absl::OkStatus();
  return StatusFromHttp(result->status, result->body, result->retry_after);
}

void WarnIfInsecure(const TransportConfig& config) {
  if (!config.insecure_skip_tls_verify) return;
  spdlog::warn("http client: TLS verification of {} is DISABLED (insecure-skip-tls-verify); "
               "anyone on the path can impersonate the API server",
               config.server);
}

std::optional<absl::Duration> ParseRetryAfter(absl::string_view value) {
  int64_t seconds = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &seconds) && seconds >= 0) {
    return absl::Seconds(seconds);
  }
  return std::nullopt;
}

std::string Where(const TransportConfig& config, absl::string_view path) {
  std::string where = absl::StrCat(config.server, path);
  if (!config.unix_socket.empty()) absl::StrAppend(&where, " (unix socket ", config.unix_socket, ")");
  return config.peer_name.empty() ? where : absl::StrCat(config.peer_name, " at ", where);
}

int WaitMillis(absl::Time due, absl::Time now) {
  if (due == absl::InfiniteFuture()) return -1;
  if (due <= now) return 0;
  const int64_t us = absl::ToInt64Microseconds(due - now);
  return static_cast<int>(std::min<int64_t>((us + 999) / 1000, 3'600'000));
}

absl::StatusOr<int> NewEpollWithWaker(const Waker& waker, epoll_data_t tag, absl::string_view who) {
  if (waker.fd() < 0) return absl::InternalError(absl::StrCat(who, ": eventfd: ", std::strerror(errno)));
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return absl::InternalError(absl::StrCat(who, ": epoll_create1: ", std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data = tag;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, waker.fd(), &ev) != 0) {
    const int err = errno;
    close(epoll_fd);
    return absl::InternalError(absl::StrCat(who, ": epoll_ctl on the eventfd: ", std::strerror(err)));
  }
  return epoll_fd;
}

}  // namespace internal

}  // namespace onequeue::k8s

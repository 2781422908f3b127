// What every HttpTransport shares: the synchronous call, the body-limit error, and the choice of
// implementation.
#include "k8s_client/http_transport.h"

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "k8s_client/api_status.h"

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

}  // namespace onequeue::k8s

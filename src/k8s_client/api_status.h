// Turning an HTTP answer of the Kubernetes API server into an absl::Status that says what happened
// and what the caller should do next.
//
//   HTTP code / Status.reason               absl code            meaning for the caller
//   400 BadRequest, 422 Invalid             InvalidArgument      fix the request
//   401 Unauthorized                        Unauthenticated      credentials are wrong
//   403 Forbidden                           PermissionDenied     RBAC forbids it
//   404 NotFound                            NotFound
//   409 AlreadyExists                       AlreadyExists
//   409 Conflict                            Aborted              re-read, re-apply (optimistic concurrency)
//   410 Gone / Expired                      OutOfRange           resourceVersion too old: relist
//   429 TooManyRequests (+ Retry-After)     ResourceExhausted    back off, then retry
//   429/500 with a DisruptionBudget cause   FailedPrecondition   "blocked by PodDisruptionBudget <name>"
//   500, 502, 503, 504 and other 5xx        Unavailable          retry with backoff
// The message carries the HTTP code, the reason and the server's message.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace onequeue::k8s {

// The parts of a metav1.Status object we use (tolerant: any field may be missing).
struct ApiStatus {
  int code = 0;
  std::string reason;
  std::string message;
  std::string disruption_budget;  // name of a PDB named in details.causes, if any
};

// Parses a metav1.Status body; nullopt if the body is not a Status object.
std::optional<ApiStatus> ParseApiStatus(absl::string_view body);

// The status for a non-2xx answer. `retry_after` is the Retry-After header, if any.
absl::Status StatusFromHttp(int http_code, absl::string_view body,
                            std::optional<absl::Duration> retry_after = std::nullopt);

// Payload key under which StatusFromHttp stores the Status.reason, and the Retry-After seconds.
inline constexpr absl::string_view kReasonPayload = "k8s.io/reason";
inline constexpr absl::string_view kRetryAfterPayload = "k8s.io/retry-after-seconds";

// Reason (e.g. "Conflict", "Expired") of a status made by StatusFromHttp, or "".
std::string ReasonOf(const absl::Status& status);
std::optional<absl::Duration> RetryAfterOf(const absl::Status& status);

// True for the 410 Gone / "too old resource version" family: the informer must relist.
bool IsResourceExpired(const absl::Status& status);

// A bound of this client passed (a response body, a watch's backlog of unhandled events):
// ResourceExhausted with a payload that tells it from a server's 429, so it is not retried as is.
absl::Status LimitExceededError(absl::string_view message);
bool IsLimitExceeded(const absl::Status& status);
inline constexpr absl::string_view kLimitPayload = "onequeue.io/client-limit";

// Whether a request may be retried as is: connection errors, 429 and 5xx (not a PDB refusal, not
// a client limit passed).
bool IsRetryable(const absl::Status& status);

}  // namespace onequeue::k8s

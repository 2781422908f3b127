#include "k8s_client/api_status.h"

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s {
namespace {

std::string StringField(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// Extracts "<name>" from the eviction refusal messages of the API server, e.g.
// "Cannot evict pod as it would violate the pod's disruption budget." (cause message
// "The disruption budget web-pdb needs 2 healthy pods and has 2 currently") .
std::string BudgetNameFromText(absl::string_view text) {
  static constexpr absl::string_view kMarker = "disruption budget ";
  size_t pos = text.find(kMarker);
  if (pos == absl::string_view::npos) return "";
  pos += kMarker.size();
  size_t end = text.find_first_of(" .,", pos);
  absl::string_view name = text.substr(pos, end == absl::string_view::npos ? text.npos : end - pos);
  return std::string(name);
}

}  // namespace

std::optional<ApiStatus> ParseApiStatus(absl::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || StringField(j, "kind") != "Status") return std::nullopt;
  ApiStatus s;
  if (auto it = j.find("code"); it != j.end() && it->is_number_integer()) s.code = it->get<int>();
  s.reason = StringField(j, "reason");
  s.message = StringField(j, "message");
  if (auto d = j.find("details"); d != j.end() && d->is_object()) {
    if (auto causes = d->find("causes"); causes != d->end() && causes->is_array()) {
      for (const auto& c : *causes) {
        if (!c.is_object()) continue;
        if (StringField(c, "reason") == "DisruptionBudget") {
          s.disruption_budget = BudgetNameFromText(StringField(c, "message"));
          if (s.disruption_budget.empty()) s.disruption_budget = "(unnamed)";
        }
      }
    }
  }
  if (s.disruption_budget.empty() && s.code == 500 &&
      absl::StrContains(s.message, "disruption budget") && absl::StrContains(s.message, "needs")) {
    s.disruption_budget = BudgetNameFromText(s.message);
  }
  return s;
}

absl::Status StatusFromHttp(int http_code, absl::string_view body,
                            std::optional<absl::Duration> retry_after) {
  std::optional<ApiStatus> api = ParseApiStatus(body);
  std::string reason = api ? api->reason : "";
  std::string message = api ? api->message : std::string(body.substr(0, 512));
  const std::string text =
      absl::StrCat("HTTP ", http_code, reason.empty() ? "" : " ", reason, ": ", message);

  absl::Status status;
  if (api && !api->disruption_budget.empty() && (http_code == 429 || http_code == 500)) {
    status = absl::FailedPreconditionError(absl::StrCat(
        "blocked by PodDisruptionBudget ", api->disruption_budget, " (", text, ")"));
  } else if (http_code == 400 || http_code == 422) {
    status = absl::InvalidArgumentError(text);
  } else if (http_code == 401) {
    status = absl::UnauthenticatedError(text);
  } else if (http_code == 403) {
    status = absl::PermissionDeniedError(text);
  } else if (http_code == 404) {
    status = absl::NotFoundError(text);
  } else if (http_code == 409) {
    status = reason == "AlreadyExists" ? absl::AlreadyExistsError(text) : absl::AbortedError(text);
  } else if (http_code == 410) {
    status = absl::OutOfRangeError(text);
  } else if (http_code == 429) {
    status = absl::ResourceExhaustedError(text);
  } else if (http_code >= 500) {
    status = absl::UnavailableError(text);
  } else {
    status = absl::UnknownError(text);
  }
  if (!reason.empty()) status.SetPayload(kReasonPayload, absl::Cord(reason));
  if (retry_after) {
    status.SetPayload(kRetryAfterPayload,
                      absl::Cord(absl::StrCat(absl::ToInt64Seconds(*retry_after))));
  }
  return status;
}

std::string ReasonOf(const absl::Status& status) {
  auto p = status.GetPayload(kReasonPayload);
  return p ? std::string(*p) : "";
}

std::optional<absl::Duration> RetryAfterOf(const absl::Status& status) {
  auto p = status.GetPayload(kRetryAfterPayload);
  int64_t s = 0;
  if (!p || !absl::SimpleAtoi(std::string(*p), &s)) return std::nullopt;
  return absl::Seconds(s);
}

bool IsResourceExpired(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kOutOfRange) return false;
  const std::string reason = ReasonOf(status);
  return reason == "Expired" || reason == "Gone" || reason.empty() ||
         absl::StrContains(status.message(), "too old resource version");
}

absl::Status LimitExceededError(absl::string_view message) {
  absl::Status s = absl::ResourceExhaustedError(message);
  s.SetPayload(kLimitPayload, absl::Cord("1"));
  return s;
}

bool IsLimitExceeded(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && status.GetPayload(kLimitPayload).has_value();
}

bool IsRetryable(const absl::Status& status) {
  if (IsLimitExceeded(status)) return false;
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kResourceExhausted ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace onequeue::k8s

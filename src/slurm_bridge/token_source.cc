#include <functional>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "k8s_client/token_file.h"
#include "nlohmann/json.hpp"
#include "slurm_bridge/rest_client.h"

namespace onequeue::slurm {
namespace {

// Reads the "exp" claim of a JWT without verifying it (only slurmctld has the key). Slurm 22.05
// answers an expired token exactly like a down slurmctld, so catching expiry here is what makes
// the error clear.
absl::StatusOr<std::optional<absl::Time>> JwtExpiry(absl::string_view token) {
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  std::string payload;
  if (parts.size() != 3 || !absl::WebSafeBase64Unescape(parts[1], &payload))
    return absl::UnauthenticatedError("the slurmrestd token is not a JWT (expected header.payload.signature)");
  nlohmann::json claims = nlohmann::json::parse(payload, nullptr, false);
  if (!claims.is_object()) return absl::UnauthenticatedError("the slurmrestd token's payload is not JSON");
  auto exp = claims.find("exp");
  if (exp == claims.end() || !exp->is_number()) return std::optional<absl::Time>();
  return std::optional<absl::Time>(absl::FromUnixSeconds(exp->get<int64_t>()));
}

// The shared TokenFile does the reading and the re-reading on change; this adds Slurm's format
// ("SLURM_JWT=" prefix) and the local JWT checks, decoded once per new token.
class TokenFileSource : public CredentialSource {
 public:
  TokenFileSource(std::string user, std::string path, std::function<absl::Time()> now)
      : user_(std::move(user)), file_(std::move(path)), now_(std::move(now)) {}

  absl::StatusOr<Credentials> Get() override {
    absl::StatusOr<std::string> text = file_.Read();
    if (!text.ok()) return absl::FailedPreconditionError(absl::StrCat("slurmrestd ", text.status().message()));
    absl::string_view t = *text;
    absl::ConsumePrefix(&t, "SLURM_JWT=");
    if (t.empty() || absl::StrContains(t, '\n'))
      return absl::FailedPreconditionError(
          absl::StrCat("slurmrestd token file ", file_.path(), " holds no token (expected one line)"));
    absl::MutexLock lock(&mu_);
    if (t != token_) {
      absl::StatusOr<std::optional<absl::Time>> expiry = JwtExpiry(t);
      if (!expiry.ok())
        return absl::UnauthenticatedError(absl::StrCat(expiry.status().message(), " (file ", file_.path(), ")"));
      token_ = std::string(t);
      expiry_ = *expiry;
    }
    if (expiry_ && *expiry_ <= now_())
      return absl::UnauthenticatedError(absl::StrCat("the slurmrestd token in ", file_.path(), " expired at ",
                                                     absl::FormatTime(*expiry_, absl::UTCTimeZone()),
                                                     "; mint a new one (scontrol token) and write it there"));
    return Credentials{user_, token_};
  }

 private:
  const std::string user_;
  k8s::TokenFile file_;
  const std::function<absl::Time()> now_;
  absl::Mutex mu_;
  std::optional<absl::Time> expiry_ ABSL_GUARDED_BY(mu_);
  std::string token_ ABSL_GUARDED_BY(mu_);
};

class StaticCredentials : public CredentialSource {
 public:
  explicit StaticCredentials(Credentials c) : c_(std::move(c)) {}
  absl::StatusOr<Credentials> Get() override { return c_; }

 private:
  Credentials c_;
};

}  // namespace

std::unique_ptr<CredentialSource> MakeTokenFileSource(std::string user, std::string token_file,
                                                      std::function<absl::Time()> now) {
  if (!now) now = [] { return absl::Now(); };
  return std::make_unique<TokenFileSource>(std::move(user), std::move(token_file), std::move(now));
}
std::unique_ptr<CredentialSource> MakeStaticCredentials(Credentials c) {
  return std::make_unique<StaticCredentials>(std::move(c));
}

}  // namespace onequeue::slurm

#include <sys/stat.h>

#include <fstream>
#include <functional>
#include <optional>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
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

class TokenFileSource : public CredentialSource {
 public:
  TokenFileSource(std::string user, std::string path, std::function<absl::Time()> now)
      : user_(std::move(user)), path_(std::move(path)), now_(std::move(now)) {}

  absl::StatusOr<Credentials> Get() override {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
      return absl::FailedPreconditionError(absl::StrCat("slurmrestd token file ", path_, " cannot be read"));
    absl::MutexLock lock(&mu_);
    const bool changed = st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec ||
                         st.st_size != size_ || token_.empty();
    if (changed) {
      std::ifstream in(path_);
      std::stringstream ss;
      ss << in.rdbuf();
      std::string text = ss.str();
      absl::string_view t = absl::StripAsciiWhitespace(text);
      absl::ConsumePrefix(&t, "SLURM_JWT=");
      if (t.empty() || absl::StrContains(t, '\n'))
        return absl::FailedPreconditionError(
            absl::StrCat("slurmrestd token file ", path_, " holds no token (expected one line)"));
      absl::StatusOr<std::optional<absl::Time>> expiry = JwtExpiry(t);
      if (!expiry.ok())
        return absl::UnauthenticatedError(absl::StrCat(expiry.status().message(), " (file ", path_, ")"));
      token_ = std::string(t);
      expiry_ = *expiry;
      mtime_ = st.st_mtim;
      size_ = st.st_size;
    }
    if (expiry_ && *expiry_ <= now_())
      return absl::UnauthenticatedError(absl::StrCat("the slurmrestd token in ", path_, " expired at ",
                                                     absl::FormatTime(*expiry_, absl::UTCTimeZone()),
                                                     "; mint a new one (scontrol token) and write it there"));
    return Credentials{user_, token_};
  }

 private:
  const std::string user_;
  const std::string path_;
  const std::function<absl::Time()> now_;
  absl::Mutex mu_;
  std::optional<absl::Time> expiry_ ABSL_GUARDED_BY(mu_);
  std::string token_ ABSL_GUARDED_BY(mu_);
  timespec mtime_ ABSL_GUARDED_BY(mu_){};
  off_t size_ ABSL_GUARDED_BY(mu_) = -1;
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

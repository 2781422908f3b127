// The one reader of credential files for both clients: a Kubernetes bearer token file and the
// slurmrestd JWT file. Tokens rotate (projected service-account tokens, a new `scontrol token`),
// so the file is read again whenever its modification time or size changes, and a rotated token
// is used without a restart.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace onequeue::k8s {

class TokenFile {
 public:
  explicit TokenFile(std::string path) : path_(std::move(path)) {}

  // The file's content without surrounding whitespace; read again only when the file changed.
  // FailedPrecondition when the file cannot be read (what to do then is the caller's choice:
  // the Kubernetes transport keeps the last token, slurm_bridge refuses to send). Thread-safe.
  absl::StatusOr<std::string> Read() ABSL_LOCKS_EXCLUDED(mu_);
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  absl::Mutex mu_;
  std::string content_ ABSL_GUARDED_BY(mu_);
  timespec mtime_ ABSL_GUARDED_BY(mu_){};
  off_t size_ ABSL_GUARDED_BY(mu_) = -1;
};

}  // namespace onequeue::k8s

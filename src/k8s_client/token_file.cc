#include "k8s_client/token_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace onequeue::k8s {

absl::StatusOr<std::string> TokenFile::Read() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("token file ", path_, " cannot be read: ", std::strerror(errno)));
  }
  absl::MutexLock lock(&mu_);
  if (st.st_mtim.tv_sec != mtime_.tv_sec || st.st_mtim.tv_nsec != mtime_.tv_nsec ||
      st.st_size != size_) {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    // Remember the file's identity only after a good read, so a failed one is retried next time.
    if (!in) return absl::FailedPreconditionError(absl::StrCat("token file ", path_, " cannot be read"));
    content_ = std::string(absl::StripAsciiWhitespace(ss.str()));
    mtime_ = st.st_mtim;
    size_ = st.st_size;
  }
  return content_;
}

}  // namespace onequeue::k8s

#pragma once
// oq's commands over onequeue.v1.QueueService: queue (like squeue), nodes (like sinfo),
// priority (like sprio), explain (why a workload is not running), and the admin calls hold,
// release, drain, resume (with a bearer token). Tables for people, --format json
// (the service's messages as proto JSON) for scripts.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "queue/plan.h"

namespace grpc {
class Channel;
}

namespace onequeue::cli {

// A channel to the daemon: TLS verified against the PEM CA file `tls_ca` (the daemon's
// server.tlsCertFile, or the CA that signed it), else plaintext. Null, after a message on stderr,
// when the CA file cannot be read.
std::shared_ptr<grpc::Channel> OpenChannel(const std::string& server, const std::string& tls_ca);

// `command` is queue, nodes, priority or explain; `args` what follows it. Returns the exit code:
// 0, 1 (the daemon did not answer or refused), 2 (usage).
int RunStatusCommand(const std::string& server, const std::string& command, const std::vector<std::string>& args,
                     const std::string& tls_ca = "");

bool IsStatusCommand(const std::string& command);

// oq priority's PRIORITY column: the total, or, for a workload starving under
// queue.starvationRemedy front (total kStarvingFront plus the seconds it waited), "starving" and
// how long it has waited, which is what that total means (with queue.starvingOrder first-starved:
// how long it has waited past its bound).
inline std::string PriorityTotalText(double total) {
  if (total >= queue::kStarvingFront) {
    return absl::StrCat("starving ", absl::FormatDuration(absl::Seconds(static_cast<int64_t>(total - queue::kStarvingFront))));
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", total);
  return buf;
}
// The commands' lines of oq's help.
const char* StatusUsage();

}  // namespace onequeue::cli

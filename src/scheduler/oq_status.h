#pragma once
// oq's commands over onequeue.v1.QueueService: queue (like squeue), nodes (like sinfo),
// priority (like sprio), explain (why a workload is not running), and the admin calls hold,
// release, drain, resume (with a bearer token). Tables for people, --format json
// (the service's messages as proto JSON) for scripts.
#include <memory>
#include <string>
#include <vector>

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
// The commands' lines of oq's help.
const char* StatusUsage();

}  // namespace onequeue::cli

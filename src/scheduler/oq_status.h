#pragma once
// oq's commands over onequeue.v1.QueueService: queue (like squeue), nodes (like sinfo),
// priority (like sprio), explain (why a workload is not running), and the admin calls hold,
// release, drain, resume (with a bearer token). Tables for people, --format json
// (the service's messages as proto JSON) for scripts.
#include <string>
#include <vector>

namespace onequeue::cli {

// `command` is queue, nodes, priority or explain; `args` what follows it. Returns the exit code:
// 0, 1 (the daemon did not answer or refused), 2 (usage).
int RunStatusCommand(const std::string& server, const std::string& command, const std::vector<std::string>& args);

bool IsStatusCommand(const std::string& command);
// The commands' lines of oq's help.
const char* StatusUsage();

}  // namespace onequeue::cli

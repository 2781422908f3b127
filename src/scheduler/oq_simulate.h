#pragma once
// `oq simulate TRACE.swf --policy fcfs|easy|conservative`: replays a Standard Workload Format
// trace through the queue in simulated time.
#include <string>
#include <vector>

namespace onequeue::cli {

// args: everything after the word "simulate". Returns the process exit code; prints to stdout,
// errors to stderr.
int RunSimulate(const std::vector<std::string>& args);

}  // namespace onequeue::cli

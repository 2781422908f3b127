#pragma once
// Standard Workload Format (SWF), the trace format of the Parallel Workloads Archive
// (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html) and of Slurm's simulator.
//
// A trace is text: header comment lines start with ';' (some carry "; Key: value" fields such as
// MaxNodes and MaxProcs), every other non-blank line is one job of exactly 18 whitespace-separated
// numeric fields, -1 meaning "unknown". The parser is plain and strict: it never guesses, it
// reports every malformed line with its 1-based line number and what is wrong, and it keeps going
// so a user fixes a whole trace in one pass.
//
// Pure: no I/O. The caller reads the file and passes the text in.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace onequeue::queue {

// The 18 fields in file order. Times are seconds; memory is KB per processor; -1 = unknown.
// Fields 6, 7 and 10 are fractional in several archive traces, so they are doubles.
struct SwfJob {
  int64_t job_number = -1;         // 1: unique, positive
  int64_t submit_time = -1;        // 2: seconds from the trace's start
  int64_t wait_time = -1;          // 3: as recorded by the original scheduler
  int64_t run_time = -1;           // 4: wall-clock seconds the job actually ran
  int64_t allocated_procs = -1;    // 5
  double avg_cpu_time = -1;        // 6
  double used_memory = -1;         // 7
  int64_t requested_procs = -1;    // 8
  int64_t requested_time = -1;     // 9: the user's time limit (what a planner may rely on)
  double requested_memory = -1;    // 10
  int64_t status = -1;             // 11: 1 completed, 0 failed, 5 cancelled, ...
  int64_t user_id = -1;            // 12
  int64_t group_id = -1;           // 13
  int64_t executable = -1;         // 14
  int64_t queue = -1;              // 15
  int64_t partition = -1;          // 16
  int64_t preceding_job = -1;      // 17
  int64_t think_time = -1;         // 18
  int line = 0;                    // where the job was read (for messages), 1-based

  // Processors the job needs: the request if known, else what it was allocated; -1 if neither.
  int64_t Processors() const;
};

struct SwfHeader {
  std::optional<int64_t> max_nodes;  // "; MaxNodes: N"
  std::optional<int64_t> max_procs;  // "; MaxProcs: N"
  // Every "; Key: value" header field in order, including the two above (kept for reports).
  std::vector<std::pair<std::string, std::string>> fields;
};

struct SwfError {
  int line = 0;  // 1-based
  std::string message;
  std::string ToString() const;  // "line 12: ..."
};

struct SwfTrace {
  SwfHeader header;
  std::vector<SwfJob> jobs;  // in file order
};

struct SwfParseResult {
  SwfTrace trace;               // every line that parsed; malformed lines are left out
  std::vector<SwfError> errors; // every malformed line, in line order; empty = the trace is clean
};

// Parses the whole text, collecting every error (never stops at the first).
SwfParseResult ParseSwf(std::string_view text);

// ParseSwf, then InvalidArgument listing the errors (at most `max_listed` of them, then a count
// of the rest) if there are any.
absl::StatusOr<SwfTrace> ParseSwfStrict(std::string_view text, int max_listed = 20);

// Writes a trace back in SWF (header fields first); ParseSwf(FormatSwf(t)) gives t back
// except for the line numbers.
std::string FormatSwf(const SwfTrace& trace);

}  // namespace onequeue::queue

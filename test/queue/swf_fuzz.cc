// Fuzz target for the SWF parser: any bytes must give either jobs or line-numbered errors, never
// a crash, and whatever parsed must survive a format/parse round trip unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "queue/swf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onequeue::queue;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  SwfParseResult first = ParseSwf(text);
  int previous_line = 0;
  for (const SwfError& e : first.errors) {
    if (e.line <= 0 || e.line < previous_line || e.message.empty()) std::abort();
    previous_line = e.line;
  }
  for (const SwfJob& j : first.trace.jobs) {
    if (j.job_number <= 0 || j.line <= 0) std::abort();
  }
  // Header values that failed validation are not kept; keep only the jobs for the round trip.
  SwfTrace jobs_only;
  jobs_only.jobs = first.trace.jobs;
  SwfParseResult second = ParseSwf(FormatSwf(jobs_only));
  if (!second.errors.empty() || second.trace.jobs.size() != jobs_only.jobs.size()) std::abort();
  if (FormatSwf(second.trace) != FormatSwf(jobs_only)) std::abort();
  return 0;
}

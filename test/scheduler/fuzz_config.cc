// Fuzz target: the daemon's configuration file (ParseConfig) on arbitrary bytes: a Config or an
// error, never a crash or an escaped exception (issue 13 defect 9: wrong YAML kinds aborted it).
#include <cstdint>
#include <string>

#include "scheduler/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)onequeue::scheduler::ParseConfig(text, "fuzz");
  return 0;
}

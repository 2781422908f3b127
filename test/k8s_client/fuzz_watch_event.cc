// Fuzz target: the incremental watch decoder over arbitrary bytes, fed in two chunks split at a
// position taken from the input; malformed input must be an error, never a crash. With and
// without its simdjson handler (issue 26) it gives the same events, Pods and status
// (decoder_equivalence.h); a difference aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "decoder_equivalence.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t split = size == 0 ? 0 : data[0] % (size + 1);
  if (std::string d = onequeue::k8s::equivalence::WatchDecodersDisagree(all, split); !d.empty()) {
    std::fprintf(stderr, "the watch decoders disagree: %s\n", d.c_str());
    std::abort();
  }
  return 0;
}

// Fuzz target: the incremental watch decoder over arbitrary bytes, fed in two chunks split at a
// position taken from the input; malformed input must be an error, never a crash.
#include <cstdint>
#include <string>

#include "k8s_client/models.h"
#include "k8s_client/watch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t split = size == 0 ? 0 : data[0] % (size + 1);
  onequeue::k8s::WatchDecoder decoder([](onequeue::k8s::WatchEvent ev) {
    if (ev.type == onequeue::k8s::WatchEventType::kError) {
      (void)onequeue::k8s::WatchErrorStatus(ev);
    } else {
      (void)onequeue::k8s::Pod::FromJson(ev.object);
    }
  }, 1 << 16);
  if (decoder.Feed(all.substr(0, split)).ok()) (void)decoder.Feed(all.substr(split));
  return 0;
}

// Fuzz target: Quantity::Parse must return a value or an error for any input, and a parsed value
// must print to a string that parses back to the same value.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "k8s_client/quantity.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<onequeue::k8s::Quantity> q = onequeue::k8s::Quantity::Parse(input);
  if (!q.ok()) return 0;
  const std::string printed = q->ToString();
  absl::StatusOr<onequeue::k8s::Quantity> again = onequeue::k8s::Quantity::Parse(printed);
  if (!again.ok() || !(*again == *q)) std::abort();  // the canonical form must round-trip
  (void)q->MilliValue();
  (void)q->Value();
  return 0;
}

// Fuzz target: any bytes as a slurmrestd answer, through every version's adapter and the error
// mapping. Unknown, missing or mistyped fields must never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"
#include "slurm_bridge/adapter.h"
#include "slurm_bridge/hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onequeue::slurm;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json body = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!body.is_discarded()) {
    for (ApiVersion v : SupportedVersions()) {
      auto adapter = MakeAdapter(v);
      (void)adapter->ParseJobs(body);
      (void)adapter->ParseNodes(body);
      (void)adapter->ParsePartitions(body);
      (void)adapter->ParseSubmit(body);
    }
    (void)ResponseStatus(500, body, "fuzz");
    (void)ResponseStatus(200, body, "fuzz");
  }
  (void)ExpandHostlist(text.substr(0, 256), 4096);
  return 0;
}

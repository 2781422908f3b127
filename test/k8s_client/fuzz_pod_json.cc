// Fuzz target: Pod/Node JSON parsing of arbitrary bytes: an error or a value, never a crash; and
// the two decoders of Pod and Node (nlohmann and simdjson, issue 26) give the same outcome: an
// equal model or the same error (decoder_equivalence.h). A difference aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "decoder_equivalence.h"
#include "k8s_client/models.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (std::string d = onequeue::k8s::equivalence::PodAndNodeDecodersDisagree(text); !d.empty()) {
    std::fprintf(stderr, "the decoders disagree: %s\n", d.c_str());
    std::abort();
  }
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  (void)onequeue::k8s::Pod::FromJson(j);
  (void)onequeue::k8s::Node::FromJson(j);
  (void)onequeue::k8s::PodDisruptionBudget::FromJson(j);
  return 0;
}

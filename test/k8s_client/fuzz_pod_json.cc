// Fuzz target: Pod/Node JSON parsing of arbitrary bytes: an error or a value, never a crash.
#include <cstdint>
#include <string>

#include "k8s_client/models.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  (void)onequeue::k8s::Pod::FromJson(j);
  (void)onequeue::k8s::Node::FromJson(j);
  (void)onequeue::k8s::PodDisruptionBudget::FromJson(j);
  return 0;
}

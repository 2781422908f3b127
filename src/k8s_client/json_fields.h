#pragma once
// Reading one field of a Kubernetes object's JSON, for the parsers of models.cc and dra.cc. A
// field of the wrong type throws JsonFieldError, which each parser turns into InvalidArgument at its
// FromJson edge: exceptions never leave k8s_client.
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s::json_fields {

struct JsonFieldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The field, or null when absent (or when `j` is not an object).
inline const nlohmann::json& Field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// A string field; "" when absent.
inline std::string Str(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = Field(j, key);
  if (v.is_null()) return "";
  if (!v.is_string()) throw JsonFieldError(absl::StrCat("field ", key, " is not a string"));
  return v.get<std::string>();
}

}  // namespace onequeue::k8s::json_fields

#pragma once
// Reading one field of a Kubernetes object's JSON, for the parsers of models.cc and dra.cc. A
// field of the wrong type throws JsonFieldError, which each parser turns into InvalidArgument at its
// FromJson edge: exceptions never leave k8s_client.
//
// The functions below the first two are the primitives models.cc's decoders are written with, as
// templates over the JSON value type: these read nlohmann::json, simdjson_fields.h reads
// simdjson's DOM with the same names and the same meaning (issue 26: one decoder per model, two
// parsers).
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

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

inline bool IsNull(const nlohmann::json& v) { return v.is_null(); }
inline bool IsObject(const nlohmann::json& v) { return v.is_object(); }
inline bool IsArray(const nlohmann::json& v) { return v.is_array(); }
inline bool IsString(const nlohmann::json& v) { return v.is_string(); }
inline bool IsBool(const nlohmann::json& v) { return v.is_boolean(); }
inline bool IsNumber(const nlohmann::json& v) { return v.is_number(); }
inline bool IsInteger(const nlohmann::json& v) { return v.is_number_integer(); }

// An integer value (IsInteger): `u` when it does not fit an int64 or the parser kept it unsigned,
// `i` otherwise (nlohmann keeps every non-negative integer unsigned, simdjson only those past
// INT64_MAX; the value is the same).
struct Integer {
  bool is_unsigned = false;
  uint64_t u = 0;
  int64_t i = 0;
};
inline Integer GetInteger(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return {true, v.get<uint64_t>(), 0};
  return {false, 0, v.get<int64_t>()};
}
inline std::string GetString(const nlohmann::json& v) { return v.get<std::string>(); }
inline bool GetBool(const nlohmann::json& v) { return v.get<bool>(); }
// A number as nlohmann::json prints it ("1000", "1.5", "1e+20"): the text a number-valued
// quantity is parsed from.
inline std::string NumberText(const nlohmann::json& v) { return v.dump(); }

// The elements of an array value, and an empty array to iterate when the field is absent.
inline const nlohmann::json& Elements(const nlohmann::json& v) { return v; }
inline const nlohmann::json& EmptyArray(const nlohmann::json&) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  return kEmpty;
}

// Calls fn(key, value) for every member of an object value, in key order, each key once (its
// last value): what iterating nlohmann's std::map gives.
template <typename F>
void ForEachMember(const nlohmann::json& v, F&& fn) {
  for (auto it = v.begin(); it != v.end(); ++it) fn(std::string_view(it.key()), it.value());
}

}  // namespace onequeue::k8s::json_fields

#pragma once
// json_fields.h's primitives over simdjson's DOM (simdjson::dom::element), with nlohmann's
// meaning wherever the two parsers differ, so that models.cc's decoders, templates over the value
// type, give the same model from either parser (issue 26; the differential test
// test/k8s_client/decoder_equivalence_test.cc and the k8s_pod_json_fuzz target hold them equal):
//   - a key present twice: nlohmann keeps the last value, simdjson's at_key would find the first;
//     Field takes the last;
//   - iterating an object: nlohmann's std::map gives the keys sorted, each once; ForEachMember
//     gives the same order (Go sorts map keys when it writes them, so the apiserver's maps are in
//     order already and take the fast path);
//   - a number: nlohmann prints it back with its own format, which a number-valued quantity is
//     parsed from; NumberText prints simdjson's value the same way.
// Only models.cc includes this (simdjson.h is large); the rest of the client sees
// simdjson::dom::element forward-declared.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "absl/strings/str_cat.h"
#include "k8s_client/json_fields.h"
#include "nlohmann/json.hpp"

namespace onequeue::k8s::json_fields {

using SimdElement = simdjson::dom::element;

namespace simdjson_internal {
// `null` and `[]`, parsed once: what an absent field and an absent array read as.
struct Constants {
  simdjson::dom::parser parser;
  SimdElement null_value, empty_array;
  Constants() {
    simdjson::dom::array both = parser.parse(std::string_view("[null,[]]")).get_array().value_unsafe();
    auto it = both.begin();
    null_value = *it;
    ++it;
    empty_array = *it;
  }
};
inline const Constants& Get() {
  static const Constants constants;
  return constants;
}
}  // namespace simdjson_internal

inline simdjson::dom::element_type TypeOf(const SimdElement& v) { return v.type(); }

inline bool IsNull(const SimdElement& v) { return v.is_null(); }
inline bool IsObject(const SimdElement& v) { return TypeOf(v) == simdjson::dom::element_type::OBJECT; }
inline bool IsArray(const SimdElement& v) { return TypeOf(v) == simdjson::dom::element_type::ARRAY; }
inline bool IsString(const SimdElement& v) { return TypeOf(v) == simdjson::dom::element_type::STRING; }
inline bool IsBool(const SimdElement& v) { return TypeOf(v) == simdjson::dom::element_type::BOOL; }
inline bool IsInteger(const SimdElement& v) {
  const simdjson::dom::element_type t = TypeOf(v);
  return t == simdjson::dom::element_type::INT64 || t == simdjson::dom::element_type::UINT64;
}
inline bool IsNumber(const SimdElement& v) {
  return IsInteger(v) || TypeOf(v) == simdjson::dom::element_type::DOUBLE;
}

// The field (its last value when the key is repeated), or null when absent or when `j` is not an
// object.
inline SimdElement Field(const SimdElement& j, const char* key) {
  SimdElement found = simdjson_internal::Get().null_value;
  simdjson::dom::object object;
  if (j.get(object) != simdjson::SUCCESS) return found;
  const std::string_view k(key);
  for (simdjson::dom::key_value_pair member : object) {
    if (member.key == k) found = member.value;
  }
  return found;
}

inline std::string GetString(const SimdElement& v) { return std::string(v.get_string().value_unsafe()); }
inline bool GetBool(const SimdElement& v) { return v.get_bool().value_unsafe(); }
inline Integer GetInteger(const SimdElement& v) {
  if (TypeOf(v) == simdjson::dom::element_type::UINT64) return {true, v.get_uint64().value_unsafe(), 0};
  return {false, 0, v.get_int64().value_unsafe()};
}

inline std::string NumberText(const SimdElement& v) {
  switch (TypeOf(v)) {
    case simdjson::dom::element_type::INT64: return nlohmann::json(v.get_int64().value_unsafe()).dump();
    case simdjson::dom::element_type::UINT64: return nlohmann::json(v.get_uint64().value_unsafe()).dump();
    default: return nlohmann::json(v.get_double().value_unsafe()).dump();
  }
}

// A string field; "" when absent.
inline std::string Str(const SimdElement& j, const char* key) {
  const SimdElement v = Field(j, key);
  if (IsNull(v)) return "";
  if (!IsString(v)) throw JsonFieldError(absl::StrCat("field ", key, " is not a string"));
  return GetString(v);
}

inline simdjson::dom::array Elements(const SimdElement& v) { return v.get_array().value_unsafe(); }
inline const SimdElement& EmptyArray(const SimdElement&) { return simdjson_internal::Get().empty_array; }

// fn(key, value) for every member, in key order, each key once with its last value.
template <typename F>
void ForEachMember(const SimdElement& v, F&& fn) {
  const simdjson::dom::object object = v.get_object().value_unsafe();
  bool in_order = true;
  std::string_view previous;
  bool first = true;
  for (simdjson::dom::key_value_pair member : object) {
    if (!first && !(previous < member.key)) {
      in_order = false;
      break;
    }
    previous = member.key;
    first = false;
  }
  if (in_order) {
    for (simdjson::dom::key_value_pair member : object) fn(member.key, member.value);
    return;
  }
  std::vector<simdjson::dom::key_value_pair> members;
  for (simdjson::dom::key_value_pair member : object) members.push_back(member);
  std::stable_sort(members.begin(), members.end(),
                   [](const auto& a, const auto& b) { return a.key < b.key; });
  for (size_t i = 0; i < members.size(); ++i) {
    if (i + 1 == members.size() || members[i].key != members[i + 1].key) fn(members[i].key, members[i].value);
  }
}

}  // namespace onequeue::k8s::json_fields

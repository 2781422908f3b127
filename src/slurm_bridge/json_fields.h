// Tolerant readers for slurmrestd JSON. Responses differ between versions (plain numbers vs
// {"set","infinite","number"} objects, strings vs arrays, CSV strings vs arrays) and a newer
// Slurm may add, drop or retype any field: these helpers never throw and never crash on an
// unexpected type; a missing or mistyped field reads as "unset".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"

namespace onequeue::slurm::json_fields {

using Json = nlohmann::json;

// A Slurm number that may be unset (NO_VAL) or infinite (INFINITE).
struct SlurmNumber {
  enum class Kind { kUnset, kInfinite, kValue };
  Kind kind = Kind::kUnset;
  int64_t value = 0;
  bool has_value() const { return kind == Kind::kValue; }
  int64_t value_or(int64_t fallback) const { return has_value() ? value : fallback; }
};

// The member `key` of `obj`, or nullptr if obj is not an object or has no such member.
const Json* Member(const Json& obj, std::string_view key);

std::string String(const Json& obj, std::string_view key);
bool Bool(const Json& obj, std::string_view key, bool fallback = false);

// Reads a plain number, a {"set","infinite","number"} object or a numeric string. With
// `sentinels_32bit`, 22.05-style plain numbers 0xFFFFFFFE (NO_VAL) / 0xFFFFFFFF (INFINITE) and -1
// are mapped to kUnset / kInfinite.
SlurmNumber Number(const Json& obj, std::string_view key, bool sentinels_32bit = false);
SlurmNumber NumberValue(const Json& v, bool sentinels_32bit = false);

// Array of strings, or a comma separated string; empty entries dropped.
std::vector<std::string> StringList(const Json& obj, std::string_view key);

// A state field that is a string ("RUNNING", "idle") in older versions and an array of strings
// (["PENDING","REQUEUED"]) in newer ones: returns the upper-cased tokens, base state first.
std::vector<std::string> StateTokens(const Json& obj, std::string_view key);

// The array member `key`, or an empty array.
const Json& Array(const Json& obj, std::string_view key);

}  // namespace onequeue::slurm::json_fields

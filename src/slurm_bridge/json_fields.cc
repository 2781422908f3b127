#include "slurm_bridge/json_fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace onequeue::slurm::json_fields {

const Json* Member(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end()) return nullptr;
  return &*it;
}

std::string String(const Json& obj, std::string_view key) {
  const Json* v = Member(obj, key);
  if (v == nullptr || !v->is_string()) return "";
  return v->get_ref<const std::string&>();
}

bool Bool(const Json& obj, std::string_view key, bool fallback) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return fallback;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number_integer()) return v->get<int64_t>() != 0;
  return fallback;
}

SlurmNumber NumberValue(const Json& v, bool sentinels_32bit) {
  SlurmNumber n;
  if (v.is_object()) {
    // {"set": bool, "infinite": bool, "number": n}; "set" defaults to true when a number is given.
    if (const Json* inf = Member(v, "infinite"); inf != nullptr && inf->is_boolean() && inf->get<bool>()) {
      n.kind = SlurmNumber::Kind::kInfinite;
      return n;
    }
    const Json* set = Member(v, "set");
    if (set != nullptr && set->is_boolean() && !set->get<bool>()) return n;
    const Json* num = Member(v, "number");
    if (num == nullptr) return n;
    return NumberValue(*num, false);
  }
  if (v.is_number_integer()) {
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        n.kind = SlurmNumber::Kind::kInfinite;
        return n;
      }
      n.value = static_cast<int64_t>(u);
    } else {
      n.value = v.get<int64_t>();
    }
    n.kind = SlurmNumber::Kind::kValue;
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > 9e18) return n;
    n.value = static_cast<int64_t>(d);
    n.kind = SlurmNumber::Kind::kValue;
  } else if (v.is_string()) {
    int64_t parsed = 0;
    if (!absl::SimpleAtoi(v.get_ref<const std::string&>(), &parsed)) return n;
    n.value = parsed;
    n.kind = SlurmNumber::Kind::kValue;
  } else {
    return n;
  }
  if (sentinels_32bit) {
    if (n.value == 0xFFFFFFFE) n.kind = SlurmNumber::Kind::kUnset;
    if (n.value == 0xFFFFFFFF || n.value == -1) n.kind = SlurmNumber::Kind::kInfinite;
  }
  return n;
}

SlurmNumber Number(const Json& obj, std::string_view key, bool sentinels_32bit) {
  const Json* v = Member(obj, key);
  if (v == nullptr) return {};
  return NumberValue(*v, sentinels_32bit);
}

std::vector<std::string> StringList(const Json& obj, std::string_view key) {
  std::vector<std::string> out;
  const Json* v = Member(obj, key);
  if (v == nullptr) return out;
  if (v->is_array()) {
    for (const Json& e : *v)
      if (e.is_string() && !e.get_ref<const std::string&>().empty()) out.push_back(e.get<std::string>());
  } else if (v->is_string()) {
    for (absl::string_view part : absl::StrSplit(v->get_ref<const std::string&>(), ',', absl::SkipEmpty()))
      out.emplace_back(part);
  }
  return out;
}

std::vector<std::string> StateTokens(const Json& obj, std::string_view key) {
  std::vector<std::string> out;
  for (std::string& s : StringList(obj, key)) {
    // Some outputs join flags with '+' ("IDLE+DRAIN"); treat them like array entries.
    for (absl::string_view part : absl::StrSplit(s, '+', absl::SkipEmpty()))
      out.push_back(absl::AsciiStrToUpper(part));
  }
  return out;
}

const Json& Array(const Json& obj, std::string_view key) {
  static const Json* const kEmpty = new Json(Json::array());  // immutable, never freed
  const Json* v = Member(obj, key);
  if (v == nullptr || !v->is_array()) return *kEmpty;
  return *v;
}

}  // namespace onequeue::slurm::json_fields

#include "k8s_client/quantity.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "absl/strings/str_cat.h"

namespace onequeue::k8s {
namespace {

using u128 = unsigned __int128;
constexpr __int128 kNanosPerUnit = 1000000000;
constexpr __int128 kInt128Max = static_cast<__int128>(~u128{0} >> 1);
// BinarySI values are capped at int64 max units, exactly like Kubernetes' maxAllowed.
constexpr __int128 kMaxBinaryNanos =
    static_cast<__int128>(std::numeric_limits<int64_t>::max()) * kNanosPerUnit;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

absl::Status FormatWrong(absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(
      "quantity \"", text,
      "\": quantities must match the regular expression "
      "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
}

// The pieces parseQuantityString returns in Kubernetes.
struct QuantityParts {
  bool positive = true;
  absl::string_view num;    // integer digits, leading zeros stripped, "0" when none
  absl::string_view denom;  // fraction digits, possibly empty
  absl::string_view suffix;
};

// A faithful port of parseQuantityString: same acceptance, including its quirks ("1.", ".",
// "-" and "1.G" are accepted; whitespace is not).
absl::StatusOr<QuantityParts> SplitQuantity(absl::string_view str) {
  QuantityParts p;
  size_t pos = 0;
  const size_t end = str.size();
  if (pos < end && (str[0] == '-' || str[0] == '+')) {
    p.positive = str[0] == '+';
    ++pos;
  }
  while (pos < end && str[pos] == '0') ++pos;
  if (pos >= end) {
    p.num = "0";
    return p;
  }
  size_t i = pos;
  while (i < end && IsDigit(str[i])) ++i;
  p.num = str.substr(pos, i - pos);
  pos = i;
  if (p.num.empty()) p.num = "0";
  if (pos >= end) return p;
  if (str[pos] == '.') {
    ++pos;
    i = pos;
    while (i < end && IsDigit(str[i])) ++i;
    p.denom = str.substr(pos, i - pos);
    pos = i;
    if (pos >= end) return p;
  }
  const size_t suffix_start = pos;
  static constexpr absl::string_view kSuffixChars = "eEinumkKMGTP";
  while (pos < end && kSuffixChars.find(str[pos]) != absl::string_view::npos) ++pos;
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < end && IsDigit(str[pos])) ++pos;
  if (pos < end) return FormatWrong(str);
  p.suffix = str.substr(suffix_start);
  return p;
}

struct Suffix {
  int base = 10;  // 10 or 2
  int32_t exponent = 0;
  Quantity::Format format = Quantity::Format::kDecimalSI;
};

// Go's strconv.ParseInt(s, 10, 64): optional sign, at least one digit, range checked.
bool ParseGoInt64(absl::string_view s, int64_t* out) {
  if (s.empty()) return false;
  bool neg = false;
  if (s[0] == '+' || s[0] == '-') {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  u128 v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > static_cast<u128>(std::numeric_limits<int64_t>::max()) + 1) return false;
  }
  if (!neg && v > static_cast<u128>(std::numeric_limits<int64_t>::max())) return false;
  *out = neg ? static_cast<int64_t>(-static_cast<__int128>(v)) : static_cast<int64_t>(v);
  return true;
}

bool InterpretSuffix(absl::string_view s, Suffix* out) {
  static constexpr std::pair<absl::string_view, int32_t> kDecimal[] = {
      {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
      {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<absl::string_view, int32_t> kBinary[] = {
      {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [name, exp] : kDecimal) {
    if (s == name) {
      *out = {10, exp, Quantity::Format::kDecimalSI};
      return true;
    }
  }
  for (const auto& [name, exp] : kBinary) {
    if (s == name) {
      *out = {2, exp, Quantity::Format::kBinarySI};
      return true;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    int64_t parsed = 0;
    if (!ParseGoInt64(s.substr(1), &parsed)) return false;
    // Kubernetes converts with int32(parsed), which wraps: keep the same behaviour.
    *out = {10, static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(parsed))),
            Quantity::Format::kDecimalExponent};
    return true;
  }
  return false;
}

// Multiplies a decimal digit string (most significant digit first) by 2^bits.
std::string MultiplyByPowerOfTwo(std::string digits, int bits) {
  for (int b = 0; b < bits; ++b) {
    int carry = 0;
    for (size_t i = digits.size(); i-- > 0;) {
      const int d = (digits[i] - '0') * 2 + carry;
      digits[i] = static_cast<char>('0' + d % 10);
      carry = d / 10;
    }
    if (carry) digits.insert(digits.begin(), static_cast<char>('0' + carry));
  }
  return digits;
}

// Parses decimal digits into an unsigned 128-bit value; false on overflow.
bool DigitsToU128(absl::string_view digits, u128* out) {
  u128 v = 0;
  const u128 max = ~u128{0};
  for (char c : digits) {
    const unsigned d = static_cast<unsigned>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// Whether Kubernetes' int64 fast path would keep the input string as the canonical form.
bool KeepsInputString(const QuantityParts& p, const Suffix& s) {
  int32_t precision = 0;
  int32_t scale = 0;
  int64_t mantissa = 1;
  if (s.format == Quantity::Format::kBinarySI) {
    if (s.exponent < 0 || !p.denom.empty()) return false;
    mantissa = int64_t{1} << s.exponent;
    precision = 15 - static_cast<int32_t>(p.num.size()) - s.exponent * 3 / 10 - 1;
  } else {
    scale = s.exponent;
    precision = 18 - static_cast<int32_t>(p.num.size() + p.denom.size());
  }
  if (precision < 0) return false;
  scale -= static_cast<int32_t>(p.denom.size());
  if (scale < -9) return false;
  const std::string shifted = absl::StrCat(p.num, p.denom);
  int64_t value = 0;
  std::from_chars(shifted.data(), shifted.data() + shifted.size(), value);
  if (value != 0 && mantissa != 0 &&
      static_cast<__int128>(value) * mantissa > std::numeric_limits<int64_t>::max()) {
    return false;
  }
  if (s.format == Quantity::Format::kBinarySI) return s.exponent % 10 == 0 && (value & 7) != 0;
  return scale % 3 == 0 && !shifted.ends_with("000") && shifted[0] != '0';
}

std::string Int128ToString(__int128 v) {
  if (v == 0) return "0";
  const bool neg = v < 0;
  u128 u = neg ? static_cast<u128>(-(v + 1)) + 1 : static_cast<u128>(v);
  std::string out;
  while (u > 0) {
    out.push_back(static_cast<char>('0' + static_cast<int>(u % 10)));
    u /= 10;
  }
  if (neg) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

// Rounds nanos / divisor away from zero, saturating at int64.
int64_t DivideRoundingUp(__int128 nanos, __int128 divisor) {
  __int128 q = nanos / divisor;
  if (nanos % divisor != 0) q += nanos > 0 ? 1 : -1;
  if (q > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (q < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(q);
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(absl::string_view text) {
  if (text.empty()) return FormatWrong(text);
  if (text == "0") {
    Quantity q(0, Format::kDecimalSI);
    q.original_ = "0";
    return q;
  }
  absl::StatusOr<QuantityParts> parts = SplitQuantity(text);
  if (!parts.ok()) return parts.status();
  Suffix suffix;
  if (!InterpretSuffix(parts->suffix, &suffix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantity \"", text, "\": unable to parse quantity's suffix"));
  }

  // |value| in nano-units = ceil(digits * 2^binary_bits * 10^shift), as inf.Dec with RoundUp.
  std::string digits = absl::StrCat(parts->num, parts->denom);
  int binary_bits = 0;
  int64_t shift = 9 - static_cast<int64_t>(parts->denom.size());
  if (suffix.base == 2) {
    binary_bits = suffix.exponent;
  } else {
    shift += suffix.exponent;
  }
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  u128 magnitude = 0;
  bool overflow = false;
  if (!digits.empty()) {
    if (binary_bits > 0) digits = MultiplyByPowerOfTwo(std::move(digits), binary_bits);
    absl::string_view integer = digits;
    bool remainder = false;
    if (shift < 0) {
      const uint64_t cut = static_cast<uint64_t>(-shift);
      if (cut >= digits.size()) {
        integer = {};
        remainder = true;  // digits is non-zero
      } else {
        integer = absl::string_view(digits).substr(0, digits.size() - cut);
        remainder = digits.find_first_not_of('0', digits.size() - cut) != std::string::npos;
      }
    }
    overflow = !DigitsToU128(integer, &magnitude);
    if (!overflow && shift > 0) {
      if (shift > 39) {
        overflow = true;
      } else {
        for (int64_t i = 0; i < shift && !overflow; ++i) {
          if (magnitude > ~u128{0} / 10) overflow = true;
          magnitude *= 10;
        }
      }
    }
    if (!overflow && remainder) {
      if (magnitude == ~u128{0}) overflow = true;
      ++magnitude;
    }
    if (!overflow && magnitude > static_cast<u128>(kInt128Max)) overflow = true;
  }

  Format format = suffix.format;
  __int128 nanos = 0;
  if (format == Format::kBinarySI) {
    nanos = overflow || magnitude > static_cast<u128>(kMaxBinaryNanos)
                ? kMaxBinaryNanos
                : static_cast<__int128>(magnitude);
    // Kubernetes prints a BinarySI value strictly between 0 and 1 as DecimalSI.
    if (nanos > 0 && nanos < kNanosPerUnit) format = Format::kDecimalSI;
  } else {
    if (overflow) {
      return absl::OutOfRangeError(
          absl::StrCat("quantity \"", text, "\" is too large (limit is about 1.7e29)"));
    }
    nanos = static_cast<__int128>(magnitude);
  }
  Quantity q(parts->positive ? nanos : -nanos, format);
  if (KeepsInputString(*parts, suffix)) q.original_ = std::string(text);
  return q;
}

Quantity Quantity::FromMilli(int64_t milli, Format format) {
  return Quantity(static_cast<__int128>(milli) * 1000000, format);
}

Quantity Quantity::FromInt(int64_t value, Format format) {
  return Quantity(static_cast<__int128>(value) * kNanosPerUnit, format);
}

std::string Quantity::ToString() const {
  if (nanos_ == 0) return "0";
  if (!original_.empty()) return original_;
  Format format = format_;
  if (format == Format::kBinarySI) {
    const __int128 limit = 1024 * kNanosPerUnit;
    if ((nanos_ > -limit && nanos_ < limit) || nanos_ % kNanosPerUnit != 0) {
      format = Format::kDecimalSI;  // Kubernetes avoids rounding: shows it as DecimalSI
    }
  }
  if (format == Format::kBinarySI) {
    __int128 units = nanos_ / kNanosPerUnit;
    int steps = 0;
    while (steps < 6 && units % 1024 == 0) {
      units /= 1024;
      ++steps;
    }
    static constexpr absl::string_view kBinary[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    return absl::StrCat(Int128ToString(units), kBinary[steps]);
  }
  __int128 mantissa = nanos_;
  int32_t exponent = -9;
  while (mantissa % 10 == 0) {
    mantissa /= 10;
    ++exponent;
  }
  while (exponent % 3 != 0) {
    mantissa *= 10;
    --exponent;
  }
  std::string number = Int128ToString(mantissa);
  if (format == Format::kDecimalSI && exponent >= -9 && exponent <= 18) {
    static constexpr absl::string_view kDecimal[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
    return absl::StrCat(number, kDecimal[(exponent + 9) / 3]);
  }
  // DecimalExponent, or DecimalSI beyond "E" (Kubernetes falls back to exponent notation).
  if (exponent == 0) return number;
  return absl::StrCat(number, "e", exponent);
}

int64_t Quantity::Value() const { return DivideRoundingUp(nanos_, kNanosPerUnit); }
int64_t Quantity::MilliValue() const { return DivideRoundingUp(nanos_, 1000000); }

Quantity& Quantity::operator+=(const Quantity& other) {
  if (nanos_ == 0) format_ = other.format_;
  nanos_ += other.nanos_;
  original_.clear();
  return *this;
}

}  // namespace onequeue::k8s

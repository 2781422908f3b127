// resource.Quantity as Kubernetes parses and prints it (k8s.io/apimachinery/pkg/api/resource).
//
// The value is held exactly in nano-units (10^-9) as a 128-bit integer: Kubernetes rounds every
// parsed value up to nano precision, so this is lossless for every value up to about 1.7e29
// units. Larger values (which Kubernetes would still accept through inf.Dec) are rejected with
// OutOfRange: no resource of a real node comes near that, and the scheduler needs integers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"

namespace onequeue::k8s {

class Quantity {
 public:
  enum class Format { kDecimalSI, kBinarySI, kDecimalExponent };

  Quantity() = default;
  // Parses exactly as resource.ParseQuantity does (same accepted strings, same rounding up to
  // nano-units, BinarySI capped at 2^63-1, same rejects). Errors are InvalidArgument.
  static absl::StatusOr<Quantity> Parse(absl::string_view text);
  static Quantity FromMilli(int64_t milli, Format format = Format::kDecimalSI);
  static Quantity FromInt(int64_t value, Format format = Format::kDecimalSI);

  // Canonical string, as Quantity.String() prints it ("100m", "1Gi", "1e3", "1500m").
  std::string ToString() const;

  // Value rounded up (away from zero) to whole units / milli-units, saturating at int64 bounds.
  int64_t Value() const;
  int64_t MilliValue() const;
  __int128 Nanos() const { return nanos_; }
  Format format() const { return format_; }
  bool IsZero() const { return nanos_ == 0; }

  Quantity& operator+=(const Quantity& other);
  friend Quantity operator+(Quantity a, const Quantity& b) { return a += b; }
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.nanos_ == b.nanos_; }
  friend auto operator<=>(const Quantity& a, const Quantity& b) { return a.nanos_ <=> b.nanos_; }

 private:
  Quantity(__int128 nanos, Format format) : nanos_(nanos), format_(format) {}
  __int128 nanos_ = 0;
  Format format_ = Format::kDecimalSI;
  // The input string when Kubernetes would keep it as the canonical form (its fast path).
  std::string original_;
};

}  // namespace onequeue::k8s

// Table tests for Quantity, taken from upstream's quantity_test.go (TestQuantityParse,
// TestQuantityString, TestQuantityParseEmit, the invalid list).
#include "k8s_client/quantity.h"

#include <gtest/gtest.h>

namespace onequeue::k8s {
namespace {

using F = Quantity::Format;

// decQuantity(i, exponent) of the Go tests, in nano-units.
__int128 Dec(int64_t i, int exponent) {
  __int128 v = i;
  for (int e = exponent + 9; e > 0; --e) v *= 10;
  for (int e = exponent + 9; e < 0; ++e) v /= 10;
  return v;
}
const __int128 kMaxAllowed = Dec(INT64_MAX, 0);

struct ParseCase {
  const char* input;
  __int128 nanos;
  F format;
};

TEST(QuantityTest, ParsesLikeKubernetes) {
  const ParseCase table[] = {
      {"0", 0, F::kDecimalSI}, {"0n", 0, F::kDecimalSI}, {"0u", 0, F::kDecimalSI},
      {"0m", 0, F::kDecimalSI}, {"0Ki", 0, F::kBinarySI}, {"0k", 0, F::kDecimalSI},
      {"0Mi", 0, F::kBinarySI}, {"0M", 0, F::kDecimalSI}, {"0Gi", 0, F::kBinarySI},
      {"0G", 0, F::kDecimalSI}, {"0Ti", 0, F::kBinarySI}, {"0T", 0, F::kDecimalSI},
      {"1", Dec(1, 0), F::kDecimalSI},
      {"1Ki", Dec(1024, 0), F::kBinarySI}, {"8Ki", Dec(8 * 1024, 0), F::kBinarySI},
      {"7Mi", Dec(7 * 1024 * 1024, 0), F::kBinarySI},
      {"6Gi", Dec(6LL * 1024 * 1024 * 1024, 0), F::kBinarySI},
      {"5Ti", Dec(5LL << 40, 0), F::kBinarySI}, {"4Pi", Dec(4LL << 50, 0), F::kBinarySI},
      {"3Ei", Dec(3LL << 60, 0), F::kBinarySI}, {"10Ti", Dec(10LL << 40, 0), F::kBinarySI},
      {"100Ti", Dec(100LL << 40, 0), F::kBinarySI},
      {"5n", Dec(5, -9), F::kDecimalSI}, {"4u", Dec(4, -6), F::kDecimalSI},
      {"3m", Dec(3, -3), F::kDecimalSI}, {"9", Dec(9, 0), F::kDecimalSI},
      {"8k", Dec(8, 3), F::kDecimalSI}, {"50k", Dec(5, 4), F::kDecimalSI},
      {"7M", Dec(7, 6), F::kDecimalSI}, {"6G", Dec(6, 9), F::kDecimalSI},
      {"5T", Dec(5, 12), F::kDecimalSI}, {"40T", Dec(4, 13), F::kDecimalSI},
      {"300T", Dec(3, 14), F::kDecimalSI}, {"2P", Dec(2, 15), F::kDecimalSI},
      {"1E", Dec(1, 18), F::kDecimalSI},
      {"1E-3", Dec(1, -3), F::kDecimalExponent}, {"1e3", Dec(1, 3), F::kDecimalExponent},
      {"1E6", Dec(1, 6), F::kDecimalExponent}, {"1e9", Dec(1, 9), F::kDecimalExponent},
      {"1E12", Dec(1, 12), F::kDecimalExponent}, {"1e15", Dec(1, 15), F::kDecimalExponent},
      {"1E18", Dec(1, 18), F::kDecimalExponent}, {"1e14", Dec(1, 14), F::kDecimalExponent},
      {"1e13", Dec(1, 13), F::kDecimalExponent}, {"100.035k", Dec(100035, 0), F::kDecimalSI},
      {"0.001", Dec(1, -3), F::kDecimalSI}, {"0.0005k", Dec(5, -1), F::kDecimalSI},
      {"0.005", Dec(5, -3), F::kDecimalSI}, {"0.05", Dec(5, -2), F::kDecimalSI},
      {"0.5", Dec(5, -1), F::kDecimalSI}, {"0.00050k", Dec(5, -1), F::kDecimalSI},
      {"0.00500", Dec(5, -3), F::kDecimalSI}, {"0.05000", Dec(5, -2), F::kDecimalSI},
      {"0.50000", Dec(5, -1), F::kDecimalSI}, {"0.5e0", Dec(5, -1), F::kDecimalExponent},
      {"0.5e-1", Dec(5, -2), F::kDecimalExponent}, {"0.5e-2", Dec(5, -3), F::kDecimalExponent},
      {"10.035M", Dec(10035, 3), F::kDecimalSI},
      {"1.2e3", Dec(12, 2), F::kDecimalExponent}, {"1.3E+6", Dec(13, 5), F::kDecimalExponent},
      {"1.40e9", Dec(14, 8), F::kDecimalExponent}, {"1.53E12", Dec(153, 10), F::kDecimalExponent},
      {"1.6e15", Dec(16, 14), F::kDecimalExponent}, {"1.7E18", Dec(17, 17), F::kDecimalExponent},
      {"9.01", Dec(901, -2), F::kDecimalSI}, {"8.1k", Dec(81, 2), F::kDecimalSI},
      {"7.123456M", Dec(7123456, 0), F::kDecimalSI},
      {"6.987654321G", Dec(6987654321, 0), F::kDecimalSI},
      {"5.444T", Dec(5444, 9), F::kDecimalSI}, {"40.1T", Dec(401, 11), F::kDecimalSI},
      {"300.2T", Dec(3002, 11), F::kDecimalSI}, {"2.5P", Dec(25, 14), F::kDecimalSI},
      {"1.01E", Dec(101, 16), F::kDecimalSI},
      // Things that saturate/round
      {"3.001n", Dec(4, -9), F::kDecimalSI}, {"1.1E-9", Dec(2, -9), F::kDecimalExponent},
      {"0.0000000001", Dec(1, -9), F::kDecimalSI}, {"0.0000000005", Dec(1, -9), F::kDecimalSI},
      {"0.00000000050", Dec(1, -9), F::kDecimalSI}, {"0.5e-9", Dec(1, -9), F::kDecimalExponent},
      {"0.9n", Dec(1, -9), F::kDecimalSI}, {"0.00000012345", Dec(124, -9), F::kDecimalSI},
      {"0.00000012354", Dec(124, -9), F::kDecimalSI},
      {"9Ei", kMaxAllowed, F::kBinarySI}, {"9223372036854775807Ki", kMaxAllowed, F::kBinarySI},
      {"12E", Dec(12, 18), F::kDecimalSI},
      // Fractional binary
      {"100.035Ki", Dec(10243584, -2), F::kBinarySI}, {"0.5Mi", Dec(512 * 1024, 0), F::kBinarySI},
      {"0.05Gi", Dec(536870912, -1), F::kBinarySI}, {"0.025Ti", Dec(274877906944, -1), F::kBinarySI},
      // Things written by trolls
      {"0.000000000001Ki", Dec(2, -9), F::kDecimalSI}, {".001", Dec(1, -3), F::kDecimalSI},
      {".0001k", Dec(100, -3), F::kDecimalSI}, {"1.", Dec(1, 0), F::kDecimalSI},
      {"1.G", Dec(1, 9), F::kDecimalSI},
  };
  for (const auto& c : table) {
    for (const std::string prefix : {"", "+", "-"}) {
      const std::string input = prefix + c.input;
      absl::StatusOr<Quantity> q = Quantity::Parse(input);
      ASSERT_TRUE(q.ok()) << input << ": " << q.status();
      const __int128 want = prefix == "-" ? -c.nanos : c.nanos;
      EXPECT_TRUE(q->Nanos() == want) << input << " parsed as " << q->ToString();
      EXPECT_EQ(q->format(), c.format) << input;
    }
  }
}

TEST(QuantityTest, RejectsWhatKubernetesRejects) {
  for (const char* bad : {"", "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i",
                          "-3.01e-", " 1", "1 ", "1K", "1e", "1e+", "1ee5", "Non-Numeric", "1Mi1",
                          "1e99999999999999999999"}) {
    EXPECT_FALSE(Quantity::Parse(bad).ok()) << "\"" << bad << "\" parsed";
  }
}

TEST(QuantityTest, AcceptsKubernetesQuirks) {
  // parseQuantityString accepts these; so must we.
  for (const char* odd : {".", "-.", "-", "+", "1.", "00001"}) {
    EXPECT_TRUE(Quantity::Parse(odd).ok()) << odd;
  }
}

TEST(QuantityTest, PrintsCanonicalForm) {
  const std::pair<const char*, const char*> table[] = {
      // TestQuantityString: canonical input is kept, alternates print canonically.
      {"1Gi", "1Gi"}, {"1024Mi", "1Gi"}, {"300Mi", "300Mi"}, {"307200Ki", "300Mi"},
      {"6Ki", "6Ki"}, {"1001Gi", "1001Gi"}, {"1025024Mi", "1001Gi"}, {"1Ti", "1Ti"},
      {"1024Gi", "1Ti"}, {"5000m", "5"}, {"0.5", "500m"}, {"1G", "1G"}, {"1000M", "1G"},
      {"0.001T", "1G"}, {"1m", "1m"}, {"1000u", "1m"}, {"80m", "80m"}, {"1.08", "1080m"},
      {"1080000000n", "1080m"}, {"300M", "300M"}, {"1T", "1T"}, {"1E", "1E"},
      {"1000E", "1e21"}, {"5000E", "5e21"}, {"1000000E", "1e24"}, {"1234567M", "1234567M"},
      {"3k", "3k"}, {"1025", "1025"}, {"0", "0"}, {"1e9", "1e9"}, {".001e12", "1e9"},
      {"1e-3", "1e-3"}, {"0.001e0", "1e-3"}, {"1e-9", "1e-9"}, {"1000e-12", "1e-9"},
      {"80e-3", "80e-3"}, {"300e6", "300e6"}, {"1e12", "1e12"}, {"1e3", "1e3"},
      {"3e3", "3e3"}, {"00", "0"}, {"1n", "1n"}, {"80n", "80n"}, {"1080n", "1080n"},
      {"1u", "1u"}, {"80u", "80u"}, {"1080u", "1080u"},
      // TestQuantityParseEmit
      {"1Ki", "1Ki"}, {"1Mi", "1Mi"}, {".001Ki", "1024m"}, {".000001Ki", "1024u"},
      {".000000001Ki", "1024n"}, {".000000000001Ki", "2n"},
      // Everyday values
      {"100m", "100m"}, {"500Mi", "500Mi"}, {"0.1", "100m"}, {"1.5", "1500m"}, {"1e3", "1e3"},
      {"500M", "500M"}, {"1.5Gi", "1536Mi"}, {"1.1Ki", "1126400m"},
  };
  for (const auto& [in, want] : table) {
    absl::StatusOr<Quantity> q = Quantity::Parse(in);
    ASSERT_TRUE(q.ok()) << in << ": " << q.status();
    EXPECT_EQ(q->ToString(), want) << in;
    if (std::string(want) != "0") {
      absl::StatusOr<Quantity> neg = Quantity::Parse(std::string("-") + in);
      ASSERT_TRUE(neg.ok());
      EXPECT_EQ(neg->ToString(), std::string("-") + want) << "-" << in;
    }
  }
}

TEST(QuantityTest, ValuesRoundUpLikeKubernetes) {
  EXPECT_EQ(Quantity::Parse("100m")->MilliValue(), 100);
  EXPECT_EQ(Quantity::Parse("100m")->Value(), 1);  // ceil
  EXPECT_EQ(Quantity::Parse("1.5")->MilliValue(), 1500);
  EXPECT_EQ(Quantity::Parse("500Mi")->Value(), 500LL * 1024 * 1024);
  EXPECT_EQ(Quantity::Parse("1n")->MilliValue(), 1);
  EXPECT_EQ(Quantity::Parse("9Ei")->Value(), INT64_MAX);
  EXPECT_EQ(Quantity::Parse("1e25")->Value(), INT64_MAX);  // saturates
}

TEST(QuantityTest, AddKeepsFormatOfFirstNonZero) {
  Quantity sum;
  sum += *Quantity::Parse("100m");
  sum += *Quantity::Parse("200m");
  EXPECT_EQ(sum.ToString(), "300m");
  Quantity mem;
  mem += *Quantity::Parse("1Gi");
  mem += *Quantity::Parse("1Gi");
  EXPECT_EQ(mem.ToString(), "2Gi");
  EXPECT_EQ(Quantity::FromMilli(1500).ToString(), "1500m");
  EXPECT_EQ(Quantity::FromInt(1024, F::kBinarySI).ToString(), "1Ki");
  EXPECT_EQ(Quantity::FromInt(1000000, F::kDecimalExponent).ToString(), "1e6");
}

}  // namespace
}  // namespace onequeue::k8s

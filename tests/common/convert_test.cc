#include "zerodp/common/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace zerodp {
namespace {

// Values that exercise every rounding path: ties, subnormals, overflow, NaN, signed zero.
std::vector<float> tricky_values() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          1e-8f,
                          5.9604645e-8f,
                          2.9802322e-8f,
                          8.940697e-8f,
                          6.1035156e-5f,
                          6.1e-5f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          3.0e38f,
                          1.0009765625f,
                          1.00048828125f,
                          1.00146484375f,
                          0.333333f};
  // Plus a sweep over magnitudes with odd mantissas.
  for (int e = -30; e <= 20; ++e) v.push_back(std::ldexp(1.2345678f, e) * (e % 2 ? -1 : 1));
  return v;
}

TEST(Convert, BulkMatchesScalarBitForBit) {
  for (DType t : {DType::f16, DType::bf16}) {
    std::vector<float> in = tricky_values();
    std::vector<std::uint16_t> half(in.size());
    float_to_half(t, in.data(), half.data(), in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      EXPECT_EQ(half[i], float_to_half(t, in[i])) << dtype_name(t) << " value " << in[i];
    }
    std::vector<float> back(in.size());
    half_to_float(t, half.data(), back.data(), half.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
      const float expect = half_to_float(t, half[i]);
      EXPECT_TRUE(float_bits(back[i]) == float_bits(expect) ||
                  (std::isnan(back[i]) && std::isnan(expect)));
    }
  }
}

TEST(Convert, KnownRoundings) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7c00);        // rounds to inf
  EXPECT_EQ(float_to_f16(5.9604645e-8f), 0x0001);   // smallest subnormal
  EXPECT_EQ(float_to_f16(2.9802322e-8f), 0x0000);   // half of it: tie to even (zero)
  EXPECT_EQ(float_to_f16(1.00048828125f), 0x3c00);  // tie between 1 and 1+2^-10: to even
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(1.00390625f), 0x3f80);  // tie: to even
  EXPECT_EQ(float_to_bf16(1.01171875f), 0x3f82);  // tie: to even (up)
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

TEST(Convert, AccumulateAddsInFp32AndRoundsOnce) {
  std::vector<std::uint16_t> acc(3000, float_to_bf16(1.0f));
  std::vector<float> add(3000, 0.00390625f);  // 2^-8: 1 + 2^-8 is a bf16 tie, rounds to 1
  accumulate_half(DType::bf16, acc.data(), add.data(), acc.size());
  for (auto h : acc) ASSERT_EQ(h, float_to_bf16(1.0f));
  std::vector<float> add2(3000, 0.0078125f);  // 2^-7: exactly representable
  accumulate_half(DType::bf16, acc.data(), add2.data(), acc.size());
  for (auto h : acc) ASSERT_EQ(bf16_to_float(h), 1.0078125f);
}

}  // namespace
}  // namespace zerodp

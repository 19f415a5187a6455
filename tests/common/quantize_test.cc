#include "zerodp/common/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace zerodp {
namespace {

struct Format {
  DType dtype;
  double unit_roundoff;   // half the gap above 1
  double half_subnormal;  // half the least positive subnormal
};
const Format kBf16{DType::bf16, std::ldexp(1.0, -8), std::ldexp(1.0, -134)};
const Format kF16{DType::f16, std::ldexp(1.0, -11), std::ldexp(1.0, -25)};

std::vector<std::uint16_t> to16(DType dtype, const std::vector<float>& xs) {
  std::vector<std::uint16_t> out;
  for (float x : xs) out.push_back(float_to_half(dtype, x));
  return out;
}

std::vector<std::uint16_t> round_trip(DType dtype, const std::vector<std::uint16_t>& in,
                                      std::size_t block) {
  std::vector<std::uint8_t> wire(quantized_bytes(in.size(), block));
  quantize_int8(dtype, in.data(), in.size(), block, wire.data());
  std::vector<std::uint16_t> out(in.size());
  dequantize_int8(dtype, wire.data(), in.size(), block, out.data());
  return out;
}

// The header's bound, block by block: |x̂ - x| <= a/254 + a (u + 2^-23) + η.
void expect_within_bound(const Format& f, const std::vector<std::uint16_t>& in, std::size_t block) {
  const std::vector<std::uint16_t> out = round_trip(f.dtype, in, block);
  for (std::size_t lo = 0; lo < in.size(); lo += block) {
    const std::size_t hi = std::min(in.size(), lo + block);
    double a = 0;
    for (std::size_t i = lo; i < hi; ++i)
      a = std::max(a, std::fabs(double(half_to_float(f.dtype, in[i]))));
    const double bound = a / 254 + a * (f.unit_roundoff + std::ldexp(1.0, -23)) + f.half_subnormal;
    for (std::size_t i = lo; i < hi; ++i) {
      const double x = half_to_float(f.dtype, in[i]), y = half_to_float(f.dtype, out[i]);
      ASSERT_LE(std::fabs(y - x), bound) << "element " << i << " of a block with max " << a;
    }
  }
}

TEST(QuantizeInt8, TheWireFormatIsTheMaximaThenTheCodes) {
  // bf16: 1 is 0x3f80; -0.5 is code round(-63.5) = -64 (ties to even), 0.25 is 31.75 -> 32.
  const std::vector<std::uint16_t> in = to16(DType::bf16, {1.0f, -0.5f, 0.25f});
  ASSERT_EQ(quantized_bytes(3, 4), 5u);
  std::vector<std::uint8_t> wire(5);
  quantize_int8(DType::bf16, in.data(), 3, 4, wire.data());
  EXPECT_EQ(wire, (std::vector<std::uint8_t>{0x80, 0x3f, 127, 0xc0, 32}));
  // Two blocks of two: each its own maximum.
  ASSERT_EQ(quantized_bytes(3, 2), 7u);
  wire.assign(7, 0);
  quantize_int8(DType::bf16, in.data(), 3, 2, wire.data());
  EXPECT_EQ(wire, (std::vector<std::uint8_t>{0x80, 0x3f, 0x80, 0x3e, 127, 0xc0, 127}));
}

TEST(QuantizeInt8, RandomBlocksStayWithinHalfACodeStepOfTheirLargestElement) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-20, 10);
  for (const Format& f : {kBf16, kF16}) {
    for (std::size_t block : {1u, 3u, 64u, 256u}) {
      std::vector<float> xs(1000);
      // Every block at its own scale, so maxima range over 2^-20..2^10 (fp16: 2^-7..2^3).
      int e = 0;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        if (i % block == 0) e = f.dtype == DType::f16 ? exponent(rng) / 3 : exponent(rng);
        xs[i] = std::ldexp(normal(rng), e);
      }
      SCOPED_TRACE(std::string(dtype_name(f.dtype)) + " block " + std::to_string(block));
      expect_within_bound(f, to16(f.dtype, xs), block);
    }
  }
}

TEST(QuantizeInt8, AnOutlierKeepsItsBitsAndTheRestStayWithinTheBound) {
  for (const Format& f : {kBf16, kF16}) {
    std::vector<float> xs(256, 0.001f);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] *= float(i % 17) - 8.0f;
    xs[100] = -3000.0f;
    const std::vector<std::uint16_t> in = to16(f.dtype, xs);
    const std::vector<std::uint16_t> out = round_trip(f.dtype, in, 256);
    EXPECT_EQ(out[100], in[100]);
    expect_within_bound(f, in, 256);
  }
}

TEST(QuantizeInt8, EqualMagnitudesZerosAndBlockOfOneComeBackExactly) {
  for (const Format& f : {kBf16, kF16}) {
    const std::vector<std::uint16_t> equal = to16(f.dtype, {0.3f, -0.3f, 0.3f, 0.3f, -0.3f});
    EXPECT_EQ(round_trip(f.dtype, equal, 4), equal);
    const std::vector<std::uint16_t> zeros = to16(f.dtype, {0.0f, 0.0f, 0.0f});
    EXPECT_EQ(round_trip(f.dtype, zeros, 2), zeros);
    // -0 has magnitude 0: it comes back +0.
    EXPECT_EQ(round_trip(f.dtype, to16(f.dtype, {-0.0f}), 1), std::vector<std::uint16_t>{0});
    // A block of one is its own maximum.
    const std::vector<std::uint16_t> any = to16(f.dtype, {1.7f, -2e-3f, 5e4f, 1e-7f});
    EXPECT_EQ(round_trip(f.dtype, any, 1), any);
  }
}

TEST(QuantizeInt8, SubnormalBlocksStayWithinTheBound) {
  for (const Format& f : {kBf16, kF16}) {
    // The least positive subnormal and a few of its multiples, and a block mixing a normal
    // maximum with subnormals (which round to code 0).
    const double tiny = 2 * f.half_subnormal;
    std::vector<float> xs;
    for (int k = 1; k <= 9; ++k) xs.push_back(float(tiny * k * (k % 2 ? 1 : -1)));
    xs.push_back(float(tiny * 1000));
    xs.push_back(float(tiny));
    const std::vector<std::uint16_t> in = to16(f.dtype, xs);
    expect_within_bound(f, in, 4);
    expect_within_bound(f, in, 11);
  }
}

TEST(QuantizeInt8, ABlockWithInfOrNaNComesBackNaNThroughout) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const Format& f : {kBf16, kF16}) {
    for (float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN()}) {
      const std::vector<std::uint16_t> in = to16(f.dtype, {1.0f, bad, 0.0f, 2.0f, -2.0f});
      const std::vector<std::uint16_t> out = round_trip(f.dtype, in, 3);
      for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(half_to_float(f.dtype, out[i]))) << i;
      // The next block is untouched by its neighbour.
      EXPECT_EQ(out[3], in[3]);
      EXPECT_EQ(out[4], in[4]);
    }
  }
}

}  // namespace
}  // namespace zerodp

// The loops built twice (model/avx512.h) give the same bits in both builds, and the bf16 pack
// gives float_to_bf16's bits in both, on the values that test a rounding: ties, the largest
// values that round up to infinity, subnormals, signed zeros, infinities, quiet and signalling
// NaNs, and random bit patterns. On a CPU without AVX-512 only the baseline runs, and it is
// what the layers call: that is checked instead.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "model/avx512.h"
#include "model/bf16_pack.h"
#include "model/layer_variants.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/rng.h"
#include "zerodp/model/layers.h"

namespace zerodp::model {
namespace {

// Bit patterns that exercise float_to_bf16's cases, then random ones of every exponent.
std::vector<float> rounding_cases() {
  const std::uint32_t special[] = {
      0x00000000, 0x80000000,              // zeros
      0x00000001, 0x00008000, 0x00018000,  // subnormals: the smallest, a tie to even (down, up)
      0x007fffff, 0x807fffff,              // the largest subnormals (round up to normal)
      0x3f808000, 0x3f818000,              // ties between bf16 neighbours, to even down and up
      0x3f808001, 0x3f807fff,              // just above and below a tie
      0x7f7f7fff, 0x7f7f8000, 0x7f7fffff,  // below, at and past the last tie before infinity
      0x7f800000, 0xff800000,              // infinities
      0x7fc00000, 0xffc00001,              // quiet NaNs
      0x7f800001, 0xff80ffff, 0x7fbfffff,  // signalling NaNs (made quiet)
  };
  std::vector<float> values;
  for (std::uint32_t bits : special) values.push_back(std::bit_cast<float>(bits));
  for (std::uint64_t i = 0; i < 4099; ++i) {
    values.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(counter_hash(7, 1, i))));
  }
  return values;
}

TEST(Bf16Pack, EveryVariantRoundsAsFloatToBf16) {
  // A matrix of 61 rows of 67 columns (16-element blocks and a tail) with a row stride of 70,
  // cut from the cases.
  const std::vector<float> cases = rounding_cases();
  const std::size_t rows = 61, cols = 67, ld = 70;
  std::vector<float> from(rows * ld);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = cases[i % cases.size()];
  std::vector<std::uint16_t> want(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) want[r * cols + c] = float_to_bf16(from[r * ld + c]);
  std::vector<std::uint16_t> got(rows * cols, 0xdead);
  pack_bf16(got.data(), from.data(), rows, cols, ld);
  EXPECT_EQ(got, want) << "pack_bf16";
  got.assign(rows * cols, 0xdead);
  pack_bf16_baseline(got.data(), from.data(), rows, cols, ld);
  EXPECT_EQ(got, want) << "baseline";
  if (cpu_runs_avx512()) {
    got.assign(rows * cols, 0xdead);
    pack_bf16_avx512(got.data(), from.data(), rows, cols, ld);
    EXPECT_EQ(got, want) << "AVX-512";
  }
}

TEST(Avx512Variants, GeluKeepSlopeIsTheBaselinesBits) {
  // Inputs over GELU's whole range, the cases above among them (NaNs and infinities too), at
  // a length that leaves a tail past any register width.
  std::vector<float> inp = rounding_cases();
  for (std::uint64_t i = 0; i < 5003; ++i) {
    inp.push_back(static_cast<float>(counter_normal(8, 2, i) * 6.0));
  }
  const std::size_t n = inp.size();
  std::vector<float> out(n), slope(n), base_out(n), base_slope(n);
  gelu_forward_keep_slope_baseline(base_out.data(), base_slope.data(), inp.data(), n);
  auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return i;
    }
    return a.size();
  };
  gelu_forward_keep_slope(out.data(), slope.data(), inp.data(), n);
  EXPECT_EQ(same_bits(out, base_out), n) << "the layer's value differs from the baseline's";
  EXPECT_EQ(same_bits(slope, base_slope), n) << "the layer's slope differs from the baseline's";
  if (cpu_runs_avx512()) {
    gelu_forward_keep_slope_avx512(out.data(), slope.data(), inp.data(), n);
    EXPECT_EQ(same_bits(out, base_out), n) << "AVX-512 value";
    EXPECT_EQ(same_bits(slope, base_slope), n) << "AVX-512 slope";
  }
}

}  // namespace
}  // namespace zerodp::model

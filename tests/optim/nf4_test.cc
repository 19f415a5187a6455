// NF4 weights with double quantization (optim/nf4.h) against the QLoRA paper's table in NumPy
// (scripts/optim_reference.py nf4): the same fp32 operations in the same order, each correctly
// rounded, so the codes, the absmax and the dequantized values agree bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "testing/optim_reference.h"
#include "testing/temp_dir.h"
#include "zerodp/catalog/lora.h"
#include "zerodp/common/rng.h"
#include "zerodp/optim/blockwise8.h"
#include "zerodp/optim/nf4.h"

namespace zerodp::optim {
namespace {

template <typename T>
std::vector<T> read_nf4_file(const std::string& path, std::size_t n) {
  std::vector<T> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(n * sizeof(T)));
  EXPECT_EQ(in.gcount(), std::streamsize(n * sizeof(T))) << path;
  EXPECT_EQ(in.peek(), std::ifstream::traits_type::eof()) << path << " is longer";
  return values;
}

std::uint32_t float_bits(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

// A weight of 300 whole blocks and a tail of 37 (so 301 absmax in two blocks of 256): normal
// values of three scales, a block of zeros, and a block whose values sit on the table's
// midpoints exactly (its absmax 1, so each scales to itself).
std::vector<float> nf4_weight_under_test() {
  constexpr std::size_t n = 300 * kNf4Block + 37;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const float scale = i / kNf4Block % 3 == 0 ? 0.02f : i / kNf4Block % 3 == 1 ? 1.0f : 7e-5f;
    x[i] = scale * counter_normal(11, 4, i);
  }
  std::fill(x.begin() + 5 * kNf4Block, x.begin() + 6 * kNf4Block, 0.0f);
  float* tied = x.data() + 7 * kNf4Block;
  tied[0] = 1.0f;
  for (std::size_t i = 0; i + 1 < kNf4Table.size(); ++i) {
    tied[1 + i] = (kNf4Table[i] + kNf4Table[i + 1]) / 2.0f;
    tied[20 + i] = std::nextafter(tied[1 + i], 2.0f);
  }
  return x;
}

TEST(Nf4, CodesAbsmaxAndValuesAreTheNumPyReferencesBitForBit) {
  const std::vector<float> x = nf4_weight_under_test();
  const std::string dir = testing::fresh_folder("nf4_reference");
  {
    std::ofstream out(dir + "/x.f32", std::ios::binary);
    out.write(reinterpret_cast<const char*>(x.data()), std::streamsize(x.size() * sizeof(float)));
  }
  ASSERT_EQ(testing::run_optim_reference("nf4", dir), "done\n");
  const std::size_t blocks = 301;
  const Nf4Weight w = quantize_nf4(x, true);
  const Nf4Weight plain = quantize_nf4(x, false);
  EXPECT_EQ(w.codes, read_nf4_file<std::uint8_t>(dir + "/codes.u8", (x.size() + 1) / 2));
  EXPECT_EQ(plain.codes, w.codes);
  const auto absmax = read_nf4_file<float>(dir + "/absmax.f32", blocks);
  ASSERT_EQ(plain.absmax.size(), blocks);
  for (std::size_t b = 0; b < blocks; ++b)
    EXPECT_EQ(float_bits(plain.absmax[b]), float_bits(absmax[b]));
  EXPECT_EQ(w.absmax_codes, read_nf4_file<std::uint8_t>(dir + "/absmax_codes.u8", blocks));
  const auto nested = read_nf4_file<float>(dir + "/nested_absmax.f32", 2);
  ASSERT_EQ(w.nested_absmax.size(), 2u);
  EXPECT_EQ(float_bits(w.nested_absmax[0]), float_bits(nested[0]));
  EXPECT_EQ(float_bits(w.nested_absmax[1]), float_bits(nested[1]));
  EXPECT_EQ(float_bits(w.offset), float_bits(read_nf4_file<float>(dir + "/offset.f32", 1)[0]));
  std::vector<float> back(x.size());
  dequantize_nf4(w, back);
  const auto want = read_nf4_file<float>(dir + "/dequantized.f32", x.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); ++i) differ += float_bits(back[i]) != float_bits(want[i]);
  EXPECT_EQ(differ, 0u);
}

TEST(Nf4, EachCodeIsTheTablesNearestWithTiesToTheLowerOne) {
  for (std::size_t c = 0; c < kNf4Table.size(); ++c) EXPECT_EQ(nf4_code(kNf4Table[c]), c);
  for (std::size_t c = 0; c + 1 < kNf4Table.size(); ++c) {
    const float mid = (kNf4Table[c] + kNf4Table[c + 1]) / 2.0f;
    EXPECT_EQ(nf4_code(mid), c) << "on the midpoint: the lower code";
    EXPECT_EQ(nf4_code(std::nextafter(mid, 2.0f)), c + 1);
  }
  EXPECT_EQ(nf4_code(std::numeric_limits<float>::quiet_NaN()), 0u);
  EXPECT_EQ(nf4_code(0.0f), 7u);
  EXPECT_EQ(nf4_code(-0.0f), 7u);
  EXPECT_EQ(nf4_code(1.5f), 15u);
}

TEST(Nf4, AWeightComesBackWithinHalfAStepOfTheTable) {
  // Without double quantization each value returns as t[code]·absmax, the table's value nearest
  // x / absmax: within half the widest gap of the table (0.3038, from -1 to -0.696) times its
  // block's absmax, plus the products' rounding. A block of zeros returns zeros; an odd count
  // pads its last nibble with the code of 0; the bytes are catalog::nf4_tensor_bytes()'.
  const std::vector<float> x = nf4_weight_under_test();
  const Nf4Weight w = quantize_nf4(x, false);
  std::vector<float> back(x.size());
  dequantize_nf4(w, back);
  float widest = 0;
  for (std::size_t c = 0; c + 1 < kNf4Table.size(); ++c) {
    widest = std::max(widest, kNf4Table[c + 1] - kNf4Table[c]);
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float a = w.absmax[i / kNf4Block];
    EXPECT_LE(std::fabs(back[i] - x[i]), (widest / 2) * a * (1 + 4 * 0x1p-24f)) << i;
  }
  for (std::size_t i = 5 * kNf4Block; i < 6 * kNf4Block; ++i) EXPECT_EQ(back[i], 0.0f) << i;
  EXPECT_EQ(w.codes.back() & 0x0f, 7);
  const std::size_t stored = w.codes.size() + 4 * w.absmax.size() + 4 * kNf4Table.size();
  EXPECT_EQ(stored, catalog::nf4_tensor_bytes(x.size(), {.double_quant = false}));
  // Double quantization moves each absmax by at most half the dynamic map's widest step times
  // its block of 256's absmax, plus the rounding of the product and the sum (an ulp or two).
  const Nf4Weight dq = quantize_nf4(x, true);
  const std::vector<float> absmax = nf4_block_absmax(dq);
  float map_widest = 0;
  for (std::size_t c = 0; c + 1 < 256; ++c) {
    map_widest = std::max(map_widest, dynamic_map_signed()[c + 1] - dynamic_map_signed()[c]);
  }
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    const float bound = (map_widest / 2) * dq.nested_absmax[b / 256] * (1 + 0x1p-20f) +
                        4 * 0x1p-24f * std::fabs(w.absmax[b]);
    EXPECT_LE(std::fabs(absmax[b] - w.absmax[b]), bound) << b;
  }
  const std::size_t dq_stored = dq.codes.size() + dq.absmax_codes.size() +
                                4 * dq.nested_absmax.size() + 256 * 4 + 4 + 4 * kNf4Table.size();
  EXPECT_EQ(dq_stored, catalog::nf4_tensor_bytes(x.size(), {}));
}

}  // namespace
}  // namespace zerodp::optim

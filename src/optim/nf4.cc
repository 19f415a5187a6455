#include "zerodp/optim/nf4.h"

#include <algorithm>

#include "zerodp/common/error.h"
#include "zerodp/optim/blockwise8.h"

namespace zerodp::optim {
namespace {

// fl((t[i] + t[i+1]) / 2): the sum rounded to fp32, then halved exactly.
constexpr std::array<float, 15> nf4_midpoints() {
  std::array<float, 15> m{};
  for (std::size_t i = 0; i < m.size(); ++i) m[i] = (kNf4Table[i] + kNf4Table[i + 1]) / 2.0f;
  return m;
}
constexpr std::array<float, 15> kNf4Midpoints = nf4_midpoints();

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace

std::uint8_t nf4_code(float scaled) {
  std::uint8_t code = 0;
  for (const float m : kNf4Midpoints) code += m < scaled ? 1 : 0;
  return code;
}

const std::array<float, 256>& nf4_absmax_map() {
  return dynamic_map_signed();
}

void nf4_quantize_blocks(std::span<const float> x, std::span<std::uint8_t> codes,
                         std::span<float> absmax) {
  ZERODP_CHECK(codes.size() == nf4_code_bytes(x.size()) && absmax.size() == nf4_blocks(x.size()));
  std::fill(codes.begin(), codes.end(), std::uint8_t{0});
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    const std::size_t begin = b * kNf4Block, n = std::min(kNf4Block, x.size() - begin);
    absmax[b] = block_absmax(x.data() + begin, n);
    const float reciprocal = 1.0f / absmax[b];
    for (std::size_t i = begin; i < begin + n; ++i) {
      const std::uint8_t code = nf4_code(x[i] * reciprocal);
      codes[i / 2] |= static_cast<std::uint8_t>(i % 2 == 0 ? code << 4 : code);
    }
  }
  if (x.size() % 2 != 0) codes.back() |= nf4_code(0.0f);
}

float nf4_double_quantize(std::span<float> absmax, std::span<std::uint8_t> absmax_codes,
                          std::span<float> nested_absmax) {
  const std::size_t blocks = absmax.size();
  ZERODP_CHECK(absmax_codes.size() == blocks &&
               nested_absmax.size() == ceil_div(blocks, kNf4NestedBlock));
  float sum = 0.0f;
  for (const float a : absmax) sum += a;
  const float offset = blocks > 0 ? sum / static_cast<float>(blocks) : 0.0f;
  for (float& a : absmax) a -= offset;
  for (std::size_t nb = 0; nb < nested_absmax.size(); ++nb) {
    const std::size_t begin = nb * kNf4NestedBlock, n = std::min(kNf4NestedBlock, blocks - begin);
    nested_absmax[nb] = block_absmax(absmax.data() + begin, n);
    quantize_with(absmax.data() + begin, n, nested_absmax[nb], dynamic_map_signed(),
                  absmax_codes.data() + begin);
  }
  return offset;
}

Nf4Weight quantize_nf4(std::span<const float> x, bool double_quant) {
  Nf4Weight w;
  w.elements = x.size();
  w.double_quant = double_quant;
  std::vector<float> absmax(nf4_blocks(x.size()));
  w.codes.assign(nf4_code_bytes(x.size()), 0);
  nf4_quantize_blocks(x, w.codes, absmax);
  if (!double_quant) {
    w.absmax = std::move(absmax);
    return w;
  }
  w.absmax_codes.assign(absmax.size(), 0);
  w.nested_absmax.assign(nf4_nested_blocks(x.size()), 0.0f);
  w.offset = nf4_double_quantize(absmax, w.absmax_codes, w.nested_absmax);
  return w;
}

std::vector<float> nf4_block_absmax(const Nf4Weight& w) {
  if (!w.double_quant) return w.absmax;
  std::vector<float> absmax(w.absmax_codes.size());
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    absmax[b] = nf4_double_quantized_absmax(w.absmax_codes, w.nested_absmax, w.offset, b);
  }
  return absmax;
}

void dequantize_nf4(const Nf4Weight& w, std::span<float> out) {
  ZERODP_CHECK(out.size() == w.elements);
  const std::vector<float> absmax = nf4_block_absmax(w);
  nf4_dequantize_codes(
      w.codes, w.elements, [&](std::size_t b) { return absmax[b]; }, out.data());
}

}  // namespace zerodp::optim

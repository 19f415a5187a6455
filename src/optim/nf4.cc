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

Nf4Weight quantize_nf4(std::span<const float> x, bool double_quant) {
  Nf4Weight w;
  w.elements = x.size();
  w.double_quant = double_quant;
  const std::size_t blocks = ceil_div(x.size(), kNf4Block);
  std::vector<float> absmax(blocks);
  w.codes.assign(ceil_div(x.size(), 2), 0);
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t begin = b * kNf4Block, n = std::min(kNf4Block, x.size() - begin);
    absmax[b] = block_absmax(x.data() + begin, n);
    const float reciprocal = 1.0f / absmax[b];
    for (std::size_t i = begin; i < begin + n; ++i) {
      const std::uint8_t code = nf4_code(x[i] * reciprocal);
      w.codes[i / 2] |= static_cast<std::uint8_t>(i % 2 == 0 ? code << 4 : code);
    }
  }
  if (x.size() % 2 != 0) w.codes.back() |= nf4_code(0.0f);
  if (!double_quant) {
    w.absmax = std::move(absmax);
    return w;
  }
  float sum = 0.0f;
  for (const float a : absmax) sum += a;
  w.offset = blocks > 0 ? sum / static_cast<float>(blocks) : 0.0f;
  std::vector<float> centered(blocks);
  for (std::size_t b = 0; b < blocks; ++b) centered[b] = absmax[b] - w.offset;
  w.absmax_codes.assign(blocks, 0);
  w.nested_absmax.assign(ceil_div(blocks, kNf4NestedBlock), 0.0f);
  for (std::size_t nb = 0; nb < w.nested_absmax.size(); ++nb) {
    const std::size_t begin = nb * kNf4NestedBlock, n = std::min(kNf4NestedBlock, blocks - begin);
    w.nested_absmax[nb] = block_absmax(centered.data() + begin, n);
    quantize_with(centered.data() + begin, n, w.nested_absmax[nb], dynamic_map_signed(),
                  w.absmax_codes.data() + begin);
  }
  return w;
}

std::vector<float> nf4_block_absmax(const Nf4Weight& w) {
  if (!w.double_quant) return w.absmax;
  std::vector<float> absmax(w.absmax_codes.size());
  for (std::size_t b = 0; b < absmax.size(); ++b) {
    absmax[b] =
        dynamic_map_signed()[w.absmax_codes[b]] * w.nested_absmax[b / kNf4NestedBlock] + w.offset;
  }
  return absmax;
}

void dequantize_nf4(const Nf4Weight& w, std::span<float> out) {
  ZERODP_CHECK(out.size() == w.elements);
  const std::vector<float> absmax = nf4_block_absmax(w);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint8_t code = i % 2 == 0 ? w.codes[i / 2] >> 4 : w.codes[i / 2] & 0x0f;
    out[i] = kNf4Table[code] * absmax[i / kNf4Block];
  }
}

}  // namespace zerodp::optim

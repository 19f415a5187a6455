// A block's maximum, its dequantization and recovery from dequantized values, and the step of a
// piece of a block (optim/blockwise8.h); the maps are dynamic_maps.cc's, the nearest code
// nearest_code.cc's.
#include <algorithm>
#include <bit>
#include <cmath>

#include "zerodp/common/error.h"
#include "zerodp/optim/blockwise8.h"

namespace zerodp::optim {
namespace {

bool identical_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

}  // namespace

float block_absmax(const float* x, std::size_t n) {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (!(a <= m)) m = a;  // NaN wins, as torch.max propagates it
  }
  return m;
}

void dequantize(const std::uint8_t* codes, std::size_t n, float absmax, const DynamicMap& map,
                float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = map[codes[i]] * absmax;
}

bool recover_block(const float* values, std::size_t n, const DynamicMap& map, float* absmax,
                   std::uint8_t* codes) {
  const float top = block_absmax(values, n);
  if (!std::isfinite(top)) return false;
  // Each candidate's codes: the value's code under it, kept only if every element dequantizes
  // back to its own bits.
  auto fits = [&](float a) {
    for (std::size_t i = 0; i < n; ++i) {
      const float scaled = values[i] * (1.0f / a);
      const std::uint8_t c = quantize_scaled(scaled, map);
      if (!identical_bits(map[c] * a, values[i])) return false;
      codes[i] = c;
    }
    *absmax = a;
    return true;
  };
  if (top == 0.0f) {
    // An all-zero block: quantize_block gives every element code 0 (NaN scaled), whose
    // dequantized value is map[0] * 0, a signed zero.
    for (std::size_t i = 0; i < n; ++i) {
      if (!identical_bits(values[i], map[0] * 0.0f)) return false;
      codes[i] = 0;
    }
    *absmax = 0.0f;
    return true;
  }
  if (fits(top)) return true;
  // The largest element was negative and took the map's most negative value, |map[0]| < 1: the
  // absmax is within an ulp or two of top / |map[0]|.
  float a = top / std::fabs(map[0]);
  for (int k = 0; k < 3; ++k) a = std::nextafter(a, 0.0f);
  for (int k = 0; k < 7; ++k, a = std::nextafter(a, INFINITY)) {
    if (fits(a)) return true;
  }
  return false;
}

const DynamicMap& slot_map(const Rule& rule, std::size_t k) {
  return holds_squares(rule.row->slots[k]) ? dynamic_map_unsigned() : dynamic_map_signed();
}

namespace {

constexpr std::size_t kBlockCapacity = 256;

// The slots of a piece, dequantized, and the spans a step takes of them.
struct Dequantized {
  float slot[2][kBlockCapacity];
  Dequantized(const Rule& rule, std::size_t n, const std::uint8_t* const codes[2],
              const float old_absmax[2]) {
    ZERODP_CHECK(n <= kBlockCapacity && rule.row->slots.size() <= 2);
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
      dequantize(codes[k], n, old_absmax[k], slot_map(rule, k), slot[k]);
    }
  }
  StepSpans spans(const Rule& rule, float* param, const float* grad, std::size_t n) {
    StepSpans s{.param = {param, n}, .grad = {grad, n}};
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) s.slot[k] = {slot[k], n};
    return s;
  }
};

}  // namespace

void piece_maxima8(const Rule& rule, const float* param, const float* grad, std::size_t n,
                   const std::uint8_t* const codes[2], const float old_absmax[2], float grad_mul,
                   float lr, std::int64_t t, const Hyper& h, float maxima[2]) {
  Dequantized d(rule, n, codes, old_absmax);
  float p[kBlockCapacity];
  std::copy_n(param, n, p);
  rule.step(d.spans(rule, p, grad, n), grad_mul, lr, t, h);
  maxima[0] = maxima[1] = 0.0f;
  for (std::size_t k = 0; k < rule.row->slots.size(); ++k) maxima[k] = block_absmax(d.slot[k], n);
}

void step_block8(const Rule& rule, float* param, const float* grad, std::size_t n,
                 std::uint8_t* const codes[2], const float old_absmax[2],
                 const float* agreed_absmax, float new_absmax[2], float grad_mul, float lr,
                 std::int64_t t, const Hyper& h) {
  Dequantized d(rule, n, codes, old_absmax);
  rule.step(d.spans(rule, param, grad, n), grad_mul, lr, t, h);
  for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
    new_absmax[k] = agreed_absmax ? agreed_absmax[k] : block_absmax(d.slot[k], n);
    quantize_with(d.slot[k], n, new_absmax[k], slot_map(rule, k), codes[k]);
  }
}

}  // namespace zerodp::optim

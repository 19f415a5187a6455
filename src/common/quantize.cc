#include "zerodp/common/quantize.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace zerodp {

namespace {

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v & 0xffu);
  p[1] = static_cast<std::uint8_t>(v >> 8);
}
std::uint16_t get16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

}  // namespace

void quantize_int8(DType dtype, const std::uint16_t* in, std::size_t n, std::size_t block,
                   std::uint8_t* out) {
  const std::size_t blocks = quantized_blocks(n, block);
  std::uint8_t* codes = out + 2 * blocks;
  for (std::size_t k = 0; k < blocks; ++k) {
    const std::size_t lo = k * block, hi = std::min(n, lo + block);
    float a = 0.0f;
    bool finite = true;
    for (std::size_t i = lo; i < hi; ++i) {
      const float x = half_to_float(dtype, in[i]);
      finite = finite && std::isfinite(x);
      a = std::max(a, std::fabs(x));
    }
    if (!finite) a = std::numeric_limits<float>::quiet_NaN();
    // a is a 16-bit value (the largest of 16-bit values), so it round-trips exactly.
    put16(out + 2 * k, float_to_half(dtype, a));
    if (!finite || a == 0.0f) {
      std::fill(codes + lo, codes + hi, std::uint8_t{0});
      continue;
    }
    // In double, 127/a is finite even for a subnormal a, and x·(127/a) is within 2^-45 of
    // 127 x / a, so rounding picks the nearest code (or, at a tie, one of the two).
    const double step = 127.0 / static_cast<double>(a);
    for (std::size_t i = lo; i < hi; ++i) {
      const double v = static_cast<double>(half_to_float(dtype, in[i])) * step;
      const double q = std::clamp(std::nearbyint(v), -127.0, 127.0);
      codes[i] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
    }
  }
}

void dequantize_int8(DType dtype, const std::uint8_t* in, std::size_t n, std::size_t block,
                     std::uint16_t* out) {
  const std::size_t blocks = quantized_blocks(n, block);
  const std::uint8_t* codes = in + 2 * blocks;
  for (std::size_t k = 0; k < blocks; ++k) {
    const std::size_t lo = k * block, hi = std::min(n, lo + block);
    const double a = static_cast<double>(half_to_float(dtype, get16(in + 2 * k)));
    for (std::size_t i = lo; i < hi; ++i) {
      const double q = static_cast<double>(static_cast<std::int8_t>(codes[i]));
      // q·a is exact in double (8 by 24 bits); only the quotient and the two narrowings round.
      const float x = static_cast<float>(q * a / 127.0);
      out[i] = float_to_half(dtype, x);
    }
  }
}

}  // namespace zerodp

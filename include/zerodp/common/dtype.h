// Element types the engine stores and communicates: fp32, the two 16-bit formats, and u8:
// opaque bytes (qwZ's quantized payloads, zerodp/zero/quantize.h), which are gathered and
// broadcast but never reduced.
//
// Contract: 16-bit values are stored as raw bits (uint16_t). Conversions from fp32 round to
// nearest, ties to even, and keep NaN a NaN and inf an inf; conversions to fp32 are exact.
// These functions are inline because they run once per element on hot paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace zerodp {

enum class DType : std::uint8_t { f32, f16, bf16, u8 };

constexpr std::size_t dtype_size(DType t) {
  return t == DType::f32 ? 4 : t == DType::u8 ? 1 : 2;
}
constexpr std::string_view dtype_name(DType t) {
  return t == DType::f32 ? "fp32" : t == DType::f16 ? "fp16" : t == DType::bf16 ? "bf16" : "u8";
}

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_float(std::uint16_t h) {
  return bits_float(std::uint32_t(h) << 16);
}

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                              // to nearest even
  return std::uint16_t(u >> 16);
}

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // inf or NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
  // Subnormal or zero: man * 2^-24, exact in fp32.
  float v = float(man) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to inf (>= 65520)
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: round abs * 2^24 to an integer, ties to even.
    const float scaled = bits_float(abs) * 16777216.0f;  // exact: a power-of-two scale
    std::uint32_t q = std::uint32_t(scaled);
    const float rest = scaled - float(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1u))) ++q;
    return sign | std::uint16_t(q);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  std::uint32_t v = abs - (112u << 23);
  v += 0xfffu + ((v >> 13) & 1u);
  return sign | std::uint16_t(v >> 13);
}

inline float half_to_float(DType t, std::uint16_t h) {
  return t == DType::bf16 ? bf16_to_float(h) : f16_to_float(h);
}
inline std::uint16_t float_to_half(DType t, float f) {
  return t == DType::bf16 ? float_to_bf16(f) : float_to_f16(f);
}

// Bulk conversions, with the same rounding and bits as the scalar functions above but
// vectorised (src/common/convert.cc).
void half_to_float(DType dtype, const std::uint16_t* in, float* out, std::size_t n);
void float_to_half(DType dtype, const float* in, std::uint16_t* out, std::size_t n);
// out[i] = half(float(out[i]) + add[i]): accumulating fp32 gradients into 16-bit storage.
void accumulate_half(DType dtype, std::uint16_t* out, const float* add, std::size_t n);

}  // namespace zerodp

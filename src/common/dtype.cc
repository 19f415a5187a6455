#include "zerodp/common/dtype.h"

#if defined(__F16C__) && defined(__AVX2__)
#include <immintrin.h>
#endif

namespace zerodp {
namespace {

void f16_to_float_block(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
#if defined(__F16C__) && defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) out[i] = f16_to_float(in[i]);
}

void float_to_f16_block(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
#if defined(__F16C__) && defined(__AVX2__)
  // The hardware conversion rounds to nearest even and handles NaN, inf and subnormals as
  // float_to_f16 does, except that it keeps NaN payload bits: normalise NaN to match.
  for (; i + 8 <= n; i += 8) {
    __m256 f = _mm256_loadu_ps(in + i);
    __m128i h = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 is_nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(is_nan) != 0) {
      for (std::size_t j = 0; j < 8; ++j) out[i + j] = float_to_f16(in[i + j]);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
#endif
  for (; i < n; ++i) out[i] = float_to_f16(in[i]);
}

}  // namespace

void half_to_float(DType dtype, const std::uint16_t* in, float* out, std::size_t n) {
  if (dtype == DType::f16) return f16_to_float_block(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
}

void float_to_half(DType dtype, const float* in, std::uint16_t* out, std::size_t n) {
  if (dtype == DType::f16) return float_to_f16_block(in, out, n);
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
}

void accumulate_half(DType dtype, std::uint16_t* out, const float* add, std::size_t n) {
  constexpr std::size_t kBlock = 1024;
  float sum[kBlock];
  for (std::size_t done = 0; done < n; done += kBlock) {
    const std::size_t len = n - done < kBlock ? n - done : kBlock;
    half_to_float(dtype, out + done, sum, len);
    for (std::size_t i = 0; i < len; ++i) sum[i] += add[done + i];
    float_to_half(dtype, sum, out + done, len);
  }
}

}  // namespace zerodp

#include "model/bf16_pack.h"

#include "model/avx512.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"

#if ZERODP_HAVE_AVX512_VARIANTS
// GCC 12's AVX-512 intrinsics start their results from _mm512_undefined_epi32() and then warn
// that it may be used uninitialised; nothing here reads an undefined value.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#endif

namespace zerodp::model {

void pack_bf16_baseline(std::uint16_t* to, const float* from, std::size_t rows, std::size_t cols,
                        std::size_t ld) {
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = from + r * ld;
    std::uint16_t* out = to + r * cols;
    for (std::size_t i = 0; i < cols; ++i) out[i] = float_to_bf16(row[i]);
  }
}

#if ZERODP_HAVE_AVX512_VARIANTS
// float_to_bf16, lane by lane: u + 0x7fff + (bit 16 of u), the high half; a NaN (|u| above
// infinity's bits) keeps its high half with the quiet bit set.
ZERODP_AVX512 void pack_bf16_avx512(std::uint16_t* to, const float* from, std::size_t rows,
                                    std::size_t cols, std::size_t ld) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
  const __m512i half_ulp = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = from + r * ld;
    std::uint16_t* out = to + r * cols;
    std::size_t i = 0;
    for (; i + 16 <= cols; i += 16) {
      const __m512i u = _mm512_loadu_si512(row + i);
      const __m512i high = _mm512_srli_epi32(u, 16);
      const __m512i even = _mm512_and_si512(high, one);
      __m512i h = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half_ulp, even)), 16);
      const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
      h = _mm512_mask_or_epi32(h, nan, high, quiet);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(h));
    }
    for (; i < cols; ++i) out[i] = float_to_bf16(row[i]);
  }
}
#else
void pack_bf16_avx512(std::uint16_t*, const float*, std::size_t, std::size_t, std::size_t) {
  ZERODP_CHECK_MSG(false, "pack_bf16_avx512: not built for this target");
}
#endif

void pack_bf16(std::uint16_t* to, const float* from, std::size_t rows, std::size_t cols,
               std::size_t ld) {
  if (cpu_runs_avx512()) {
    pack_bf16_avx512(to, from, rows, cols, ld);
  } else {
    pack_bf16_baseline(to, from, rows, cols, ld);
  }
}

}  // namespace zerodp::model

#include "comm/sum.h"

#include "comm/copy.h"

#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define ZERODP_SUM_AVX2 1
#endif

// "No dependence between iterations", although an output may be the same memory as an input.
// The sanitizer builds do not vectorize these loops; there clang would only warn that it could
// not.
#if defined(__clang__)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define ZERODP_IVDEP
#else
#define ZERODP_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#endif
#else
#define ZERODP_IVDEP _Pragma("GCC ivdep")
#endif

namespace zerodp::comm {
namespace {

// Elements per block: the fp32 accumulator (8 KiB) and the block of every input stay in L1/L2
// while the block is summed and written out.
constexpr std::size_t kBlock = 2048;
// An fp32 output of at least kStreamBytes, apart from every input, is written with streaming
// stores: it would not stay in cache anyway, and they spare reading its lines first.

// The order of the additions, for n inputs x_0..x_{n-1} of one block:
//   n == 2:  out = x_0 + x_1
//   n >= 3:  acc = x_0 + x_1; acc += x_2; ...; acc += x_{n-2}; out = acc + x_{n-1}
// The last pass writes the output directly (no copy of the block), which is safe when the
// output is one of the inputs: every input but x_{n-1} is already in acc, and x_{n-1}[i] is
// read before out[i] is written. ZERODP_IVDEP tells the compiler so.

// ---- fp32 ----

void f32_first(float* __restrict acc, const float* a, const float* b, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) acc[i] = a[i] + b[i];
}
void f32_add(float* __restrict acc, const float* b, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) acc[i] += b[i];
}
void f32_last(float* out, const float* a, const float* b, std::size_t len, bool stream) {
  std::size_t i = 0;
#if defined(ZERODP_SUM_AVX2)
  if (stream) {
    for (; i < len && (reinterpret_cast<std::uintptr_t>(out + i) & 31); ++i) out[i] = a[i] + b[i];
    for (; i + 8 <= len; i += 8) {
      _mm256_stream_ps(out + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    }
  }
#endif
  ZERODP_IVDEP
  for (; i < len; ++i) out[i] = a[i] + b[i];
}

void sum_f32(const float* const* x, int n, float* out, std::size_t len, float* acc, bool stream) {
  if (n == 2) return f32_last(out, x[0], x[1], len, stream);
  f32_first(acc, x[0], x[1], len);
  for (int j = 2; j < n - 1; ++j) f32_add(acc, x[j], len);
  f32_last(out, acc, x[n - 1], len, stream);
}

// ---- 16-bit: widened exactly to fp32, summed, rounded once ----

inline float bf16_widen(std::uint16_t h) {
  return bits_float(std::uint32_t(h) << 16);
}

// float_to_bf16 of dtype.h, written without branches so that it vectorises.
inline std::uint16_t bf16_round(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t nearest = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const std::uint32_t quiet_nan = (u >> 16) | 0x40u;
  return std::uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : nearest);
}

void bf16_first(float* __restrict acc, const std::uint16_t* a, const std::uint16_t* b,
                std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) acc[i] = bf16_widen(a[i]) + bf16_widen(b[i]);
}
void bf16_add(float* __restrict acc, const std::uint16_t* b, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) acc[i] += bf16_widen(b[i]);
}
void bf16_last2(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
                std::size_t len) {
  ZERODP_IVDEP
  for (std::size_t i = 0; i < len; ++i) out[i] = bf16_round(bf16_widen(a[i]) + bf16_widen(b[i]));
}
void bf16_last(std::uint16_t* out, const float* acc, const std::uint16_t* b, std::size_t len) {
  ZERODP_IVDEP
  for (std::size_t i = 0; i < len; ++i) out[i] = bf16_round(acc[i] + bf16_widen(b[i]));
}

#if defined(ZERODP_SUM_AVX2)
inline __m256 f16_widen8(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// Rounds 8 sums to fp16 as float_to_f16 does: the hardware rounds to nearest even and handles
// inf and subnormals the same way, but keeps NaN payloads, which dtype.h does not.
inline void f16_store8(std::uint16_t* out, __m256 s) {
  const __m128i h = _mm256_cvtps_ph(s, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (_mm256_movemask_ps(_mm256_cmp_ps(s, s, _CMP_UNORD_Q)) == 0) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), h);
    return;
  }
  alignas(32) float f[8];
  _mm256_store_ps(f, s);
  for (int k = 0; k < 8; ++k) out[k] = float_to_f16(f[k]);
}
#endif

void f16_first(float* __restrict acc, const std::uint16_t* a, const std::uint16_t* b,
               std::size_t len) {
  std::size_t i = 0;
#if defined(ZERODP_SUM_AVX2)
  for (; i + 8 <= len; i += 8)
    _mm256_storeu_ps(acc + i, _mm256_add_ps(f16_widen8(a + i), f16_widen8(b + i)));
#endif
  for (; i < len; ++i) acc[i] = f16_to_float(a[i]) + f16_to_float(b[i]);
}
void f16_add(float* __restrict acc, const std::uint16_t* b, std::size_t len) {
  std::size_t i = 0;
#if defined(ZERODP_SUM_AVX2)
  for (; i + 8 <= len; i += 8) {
    _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), f16_widen8(b + i)));
  }
#endif
  for (; i < len; ++i) acc[i] += f16_to_float(b[i]);
}
void f16_last2(std::uint16_t* out, const std::uint16_t* a, const std::uint16_t* b,
               std::size_t len) {
  std::size_t i = 0;
#if defined(ZERODP_SUM_AVX2)
  for (; i + 8 <= len; i += 8)
    f16_store8(out + i, _mm256_add_ps(f16_widen8(a + i), f16_widen8(b + i)));
#endif
  for (; i < len; ++i) out[i] = float_to_f16(f16_to_float(a[i]) + f16_to_float(b[i]));
}
void f16_last(std::uint16_t* out, const float* acc, const std::uint16_t* b, std::size_t len) {
  std::size_t i = 0;
#if defined(ZERODP_SUM_AVX2)
  for (; i + 8 <= len; i += 8)
    f16_store8(out + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), f16_widen8(b + i)));
#endif
  for (; i < len; ++i) out[i] = float_to_f16(acc[i] + f16_to_float(b[i]));
}

void sum_half(DType dtype, const std::uint16_t* const* x, int n, std::uint16_t* out,
              std::size_t len, float* acc) {
  const bool bf = dtype == DType::bf16;
  if (n == 2) return bf ? bf16_last2(out, x[0], x[1], len) : f16_last2(out, x[0], x[1], len);
  bf ? bf16_first(acc, x[0], x[1], len) : f16_first(acc, x[0], x[1], len);
  for (int j = 2; j < n - 1; ++j) bf ? bf16_add(acc, x[j], len) : f16_add(acc, x[j], len);
  bf ? bf16_last(out, acc, x[n - 1], len) : f16_last(out, acc, x[n - 1], len);
}

bool apart(const void* out, std::size_t bytes, const void* const* inputs, int n) {
  const auto* o = static_cast<const char*>(out);
  for (int j = 0; j < n; ++j) {
    const auto* in = static_cast<const char*>(inputs[j]);
    if (o < in + bytes && in < o + bytes) return false;
  }
  return true;
}

// Per-block input pointers of one element type: on the stack for the usual rank counts.
template <class T>
class BlockInputs {
 public:
  BlockInputs(const void* const* inputs, int n) : inputs_(inputs), n_(n) {
    if (n > kInline) heap_.resize(n);
  }
  // Pointers to element `first` of every input.
  const T* const* at(std::size_t first) {
    T const** p = heap_.empty() ? inline_ : heap_.data();
    for (int j = 0; j < n_; ++j) p[j] = static_cast<const T*>(inputs_[j]) + first;
    return p;
  }

 private:
  static constexpr int kInline = 64;
  const void* const* inputs_;
  int n_;
  const T* inline_[kInline];
  std::vector<const T*> heap_;
};

template <class T, class SumBlock>
void sum_blocks(const void* const* inputs, int n, void* const* outputs, int m, std::size_t count,
                SumBlock&& sum_block) {
  alignas(64) float acc[kBlock];
  BlockInputs<T> x(inputs, n);
  for (std::size_t b = 0; b < count; b += kBlock) {
    const std::size_t len = count - b < kBlock ? count - b : kBlock;
    T* out = static_cast<T*>(outputs[0]) + b;
    sum_block(x.at(b), out, len, acc);
    for (int o = 1; o < m; ++o) std::memcpy(static_cast<T*>(outputs[o]) + b, out, len * sizeof(T));
  }
}

}  // namespace

void sum_in_rank_order(DType dtype, const void* const* inputs, int n, void* const* outputs, int m,
                       std::size_t count) {
  if (count == 0) return;
  const std::size_t elem = dtype_size(dtype);
  if (n == 1) {
    for (int o = 0; o < m; ++o) {
      if (outputs[o] != inputs[0]) copy(outputs[o], inputs[0], count * elem);
    }
    return;
  }
  if (dtype != DType::f32) {
    sum_blocks<std::uint16_t>(
        inputs, n, outputs, m, count,
        [&](const std::uint16_t* const* x, std::uint16_t* out, std::size_t len, float* acc) {
          sum_half(dtype, x, n, out, len, acc);
        });
    return;
  }
  const bool stream =
      m == 1 && count * elem >= kStreamBytes && apart(outputs[0], count * elem, inputs, n);
  sum_blocks<float>(inputs, n, outputs, m, count,
                    [&](const float* const* x, float* out, std::size_t len, float* acc) {
                      sum_f32(x, n, out, len, acc, stream);
                    });
#if defined(ZERODP_SUM_AVX2)
  if (stream) _mm_sfence();  // streaming stores are visible before the caller publishes them
#endif
}

}  // namespace zerodp::comm

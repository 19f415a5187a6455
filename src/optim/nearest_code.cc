// The nearest code of a value in a dynamic map (optim/blockwise8.h's quantize_scaled and
// quantize_with): torch.argmin's rule, found from a table of the codes each float interval can
// take, eight values at a time where the CPU gathers.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "zerodp/optim/blockwise8.h"

namespace zerodp::optim {
namespace {

// fl(|a - b|) in fp32, as torch.abs(scaled - code) computes it.
float distance(float a, float b) {
  return std::fabs(a - b);
}

// The first index of the least fp32 distance to `x` among map[lo, hi).
std::uint8_t nearest_in(float x, const DynamicMap& map, std::size_t lo, std::size_t hi) {
  std::size_t best = lo;
  float best_d = distance(x, map[lo]);
  for (std::size_t i = lo + 1; i < hi; ++i) {
    const float d = distance(x, map[i]);
    if (d < best_d) best = i, best_d = d;
  }
  return std::uint8_t(best);
}

// By binary search, for a clamped value that is not NaN: the map is sorted and the distance is
// monotone on each side of x, so the nearest value is a neighbour of where x would sit; the
// window of four around it keeps argmin's first-index rule where two distances round alike.
std::uint8_t nearest_by_search(float x, const DynamicMap& map) {
  const std::size_t k = std::size_t(std::upper_bound(map.begin(), map.end(), x) - map.begin());
  return nearest_in(x, map, k >= 2 ? k - 2 : 0, std::min<std::size_t>(k + 2, map.size()));
}

// The codes the floats of each interval may take: floats that share their sign, exponent and
// top 7 mantissa bits (an interval 2^-7 wide, relative) have their nearest codes between those
// of the interval's two ends, since the nearest code never falls as the value grows; widened by
// one each side against distances that round alike. Most intervals hold one or two codes, so a
// value is quantized with two or three distances instead of a branchy binary search.
class CodeRanges {
 public:
  static constexpr std::uint32_t kKeys = 0x3F80 + 1;  // |x| <= 1: keys up to 1.0's

  explicit CodeRanges(const DynamicMap& map) {
    for (std::uint32_t sign = 0; sign < 2; ++sign) {
      for (std::uint32_t key = 0; key < kKeys; ++key) {
        const std::uint32_t first = sign << 31 | key << 16;
        const std::uint32_t last = std::min(first | 0xFFFF, sign << 31 | 0x3F800000u);
        const std::size_t a = nearest_by_search(std::bit_cast<float>(first), map);
        const std::size_t b = nearest_by_search(std::bit_cast<float>(last), map);
        const std::size_t lo = std::min(a, b) > 0 ? std::min(a, b) - 1 : 0;
        const std::size_t hi = std::min<std::size_t>(std::max(a, b) + 1, 255);
        packed_[sign * kKeys + key] = std::int32_t(lo | (hi - lo) << 8);
      }
    }
  }

  // codes[i] for x[i] * inverse, i < n: nearest() on each value, eight at a time where the CPU
  // gathers (the same distances and the same first-index choice; NaN and the rare intervals of
  // more than three candidates go one by one).
  void quantize(const float* x, std::size_t n, float inverse, const DynamicMap& map,
                std::uint8_t* codes) const {
    std::size_t i = 0;
#if defined(__AVX2__)
    const __m256 vinv = _mm256_set1_ps(inverse);
    const __m256 one = _mm256_set1_ps(1.0f), minus_one = _mm256_set1_ps(-1.0f);
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 inf = _mm256_set1_ps(INFINITY);
    const __m256i keys = _mm256_set1_epi32(kKeys), low_byte = _mm256_set1_epi32(0xFF);
    const __m256i i1 = _mm256_set1_epi32(1), i2 = _mm256_set1_epi32(2);
    const __m256i last = _mm256_set1_epi32(255);
    for (; i + 8 <= n; i += 8) {
      const __m256 raw = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
      const int nan = _mm256_movemask_ps(_mm256_cmp_ps(raw, raw, _CMP_UNORD_Q));
      const __m256 v = _mm256_min_ps(_mm256_max_ps(raw, minus_one), one);  // clamp, NaN aside
      const __m256i bits = _mm256_castps_si256(v);
      const __m256i index = _mm256_add_epi32(
          _mm256_srli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)), 16),
          _mm256_mullo_epi32(_mm256_srli_epi32(bits, 31), keys));
      const __m256i entry = _mm256_i32gather_epi32(packed_.data(), index, 4);
      const __m256i lo = _mm256_and_si256(entry, low_byte);
      const __m256i width = _mm256_srli_epi32(entry, 8);
      const int wide = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(width, i2)));
      const __m256 d0 =
          _mm256_and_ps(magnitude, _mm256_sub_ps(v, _mm256_i32gather_ps(map.data(), lo, 4)));
      const __m256 d1 = _mm256_and_ps(
          magnitude,
          _mm256_sub_ps(v, _mm256_i32gather_ps(map.data(), _mm256_add_epi32(lo, i1), 4)));
      const __m256i lo2 = _mm256_min_epi32(_mm256_add_epi32(lo, i2), last);
      const __m256 d2 = _mm256_blendv_ps(
          inf, _mm256_and_ps(magnitude, _mm256_sub_ps(v, _mm256_i32gather_ps(map.data(), lo2, 4))),
          _mm256_castsi256_ps(_mm256_cmpeq_epi32(width, i2)));
      const __m256 first = _mm256_cmp_ps(d1, d0, _CMP_LT_OQ);
      const __m256 best = _mm256_blendv_ps(d0, d1, first);
      __m256i code = _mm256_sub_epi32(lo, _mm256_castps_si256(first));  // a true mask is -1
      code =
          _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(code), _mm256_castsi256_ps(lo2),
                                               _mm256_cmp_ps(d2, best, _CMP_LT_OQ)));
      alignas(32) std::int32_t lanes[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), code);
      for (int k = 0; k < 8; ++k) {
        if ((nan | wide) >> k & 1) {
          codes[i + k] = quantize_scaled(x[i + k] * inverse, map);
        } else {
          codes[i + k] = std::uint8_t(lanes[k]);
        }
      }
    }
#endif
    for (; i < n; ++i) {
      const float scaled = x[i] * inverse;
      codes[i] = std::isnan(scaled) ? 0 : nearest(std::clamp(scaled, -1.0f, 1.0f), map);
    }
  }

  std::uint8_t nearest(float x, const DynamicMap& map) const {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = bits >> 31, key = (bits & 0x7FFFFFFFu) >> 16;
    const std::int32_t entry = packed_[sign * kKeys + key];
    const std::size_t lo = std::size_t(entry & 0xFF), hi = lo + std::size_t(entry >> 8);
    if (hi - lo > 2 || hi > 254) return nearest_in(x, map, lo, hi + 1);
    // Three candidates (nearly every interval), chosen without branches: a later one wins only
    // when strictly nearer, argmin's first-index rule.
    const float d0 = distance(x, map[lo]), d1 = distance(x, map[lo + 1]);
    const float d2 = hi - lo == 2 ? distance(x, map[lo + 2]) : INFINITY;
    const bool one = d1 < d0;
    const float best = one ? d1 : d0;
    return std::uint8_t(d2 < best ? lo + 2 : lo + std::size_t(one));
  }

 private:
  // For each interval, at sign * kKeys + key: its lowest code lo and its width hi - lo, as
  // lo | (hi - lo) << 8 (one 32-bit word, which AVX2 gathers).
  std::array<std::int32_t, 2 * kKeys> packed_;
};

// The ranges of the two maps, made on first use (function-local statics: thread-safe).
const CodeRanges* ranges_of(const DynamicMap& map) {
  if (&map == &dynamic_map_signed()) {
    static const CodeRanges ranges(dynamic_map_signed());
    return &ranges;
  }
  if (&map == &dynamic_map_unsigned()) {
    static const CodeRanges ranges(dynamic_map_unsigned());
    return &ranges;
  }
  return nullptr;
}
}  // namespace

std::uint8_t quantize_scaled(float scaled, const DynamicMap& map) {
  if (std::isnan(scaled)) return 0;  // torch.argmin over NaN distances: the first index
  scaled = std::clamp(scaled, -1.0f, 1.0f);
  const CodeRanges* ranges = ranges_of(map);
  return ranges ? ranges->nearest(scaled, map) : nearest_by_search(scaled, map);
}

void quantize_with(const float* x, std::size_t n, float absmax, const DynamicMap& map,
                   std::uint8_t* codes) {
  const float inverse = 1.0f / absmax;
  if (const CodeRanges* ranges = ranges_of(map)) {
    ranges->quantize(x, n, inverse, map, codes);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) codes[i] = quantize_scaled(x[i] * inverse, map);
}

}  // namespace zerodp::optim

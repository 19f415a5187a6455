// Counter-based random numbers: value i of stream s under seed k is a pure function of
// (k, s, i). Initialisation and synthetic data then do not depend on how many ranks draw
// them or in what order — the property that makes runs at different N comparable.
#pragma once

#include <cmath>
#include <cstdint>

namespace zerodp {

// splitmix64's finaliser: a bijective mix with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

constexpr std::uint64_t counter_hash(std::uint64_t seed, std::uint64_t stream,
                                     std::uint64_t index) {
  return mix64(mix64(mix64(seed) ^ stream) ^ index);
}

// Uniform in [0, 1) with 24 random bits: exact in fp32.
inline float counter_uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return float(counter_hash(seed, stream, index) >> 40) * (1.0f / 16777216.0f);
}

// Standard normal by Box-Muller on two 32-bit halves of one hash; computed in double so the
// result does not depend on the libm's float functions' last bits as much.
inline float counter_normal(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const std::uint64_t h = counter_hash(seed, stream, index);
  const double u1 = (double(h >> 32) + 1.0) * (1.0 / 4294967297.0);  // (0, 1)
  const double u2 = double(h & 0xffffffffu) * (1.0 / 4294967296.0);  // [0, 1)
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

}  // namespace zerodp

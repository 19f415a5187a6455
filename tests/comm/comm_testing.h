// Test helpers for the communicator: each rank's deterministic input, and the naive reference
// result (the rank-order fp32 sum, one element at a time with dtype.h's scalar conversions).
// Header-only, shared by the in-process tests and the MPI tests (which compare their results
// with the same reference, so threads and MPI agree bit for bit).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "zerodp/common/dtype.h"
#include "zerodp/common/shard.h"

namespace zerodp::comm::testing {

// Raw elements of one dtype.
struct Buffer {
  DType dtype = DType::f32;
  std::vector<unsigned char> bytes;

  Buffer() = default;
  Buffer(DType t, std::size_t count) : dtype(t), bytes(count * dtype_size(t)) {}
  std::size_t count() const { return bytes.size() / dtype_size(dtype); }
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  void* at(std::size_t element) { return bytes.data() + element * dtype_size(dtype); }
  float get(std::size_t i) const {
    if (dtype == DType::f32) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      return f;
    }
    std::uint16_t h;
    std::memcpy(&h, bytes.data() + 2 * i, 2);
    return half_to_float(dtype, h);
  }
  // Stores f rounded to the dtype.
  void set(std::size_t i, float f) {
    if (dtype == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &f, 4);
    } else {
      const std::uint16_t h = float_to_half(dtype, f);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  // Elements [offset, offset + n) as a new buffer.
  Buffer slice(std::size_t offset, std::size_t n) const {
    Buffer b(dtype, n);
    if (n > 0) std::memcpy(b.data(), bytes.data() + offset * dtype_size(dtype), b.bytes.size());
    return b;
  }
};

inline std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Rank r's input: values of mixed sign and magnitude (2^-8 .. 2^6), so that the order of the
// additions shows in the bits; small enough that a sum of 8 fits fp16.
inline Buffer rank_input(DType dtype, std::size_t count, int rank, std::uint64_t seed = 1) {
  Buffer b(dtype, count);
  std::uint64_t state = seed * 1000003u + static_cast<std::uint64_t>(rank) * 7919u + count;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t u = splitmix(state);
    const float mantissa = 1.0f + static_cast<float>(u & 0xffffff) / 16777216.0f;
    const int exponent = static_cast<int>((u >> 24) % 15) - 8;
    const float v = std::ldexp(mantissa, exponent);
    b.set(i, (u >> 40) & 1 ? -v : v);
  }
  return b;
}

// The reference sum of the ranks' inputs: ((x_0 + x_1) + x_2) + ... in fp32, rounded once.
inline Buffer reference_sum(const std::vector<Buffer>& inputs) {
  const DType dtype = inputs.at(0).dtype;
  const std::size_t count = inputs[0].count();
  Buffer out(dtype, count);
  for (std::size_t i = 0; i < count; ++i) {
    float acc = inputs[0].get(i);
    for (std::size_t r = 1; r < inputs.size(); ++r) acc += inputs[r].get(i);
    if (inputs.size() == 1) {
      std::memcpy(out.at(i), inputs[0].bytes.data() + i * dtype_size(dtype), dtype_size(dtype));
    } else {
      out.set(i, acc);
    }
  }
  return out;
}

// -1 if a and b hold the same bits, else the first element that differs.
inline long first_difference(const void* a, const void* b, std::size_t count, DType dtype) {
  const std::size_t size = dtype_size(dtype);
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(pa + i * size, pb + i * size, size) != 0) return static_cast<long>(i);
  }
  return -1;
}
inline long first_difference(const Buffer& a, const Buffer& b) {
  if (a.count() != b.count()) return 0;
  return first_difference(a.data(), b.data(), a.count(), a.dtype);
}

// The counts every collective is tested at: 0, 1, N-1 and a prime.
inline std::vector<std::size_t> test_counts(int ranks) {
  std::vector<std::size_t> counts = {0, 1};
  if (ranks - 1 > 1) counts.push_back(static_cast<std::size_t>(ranks - 1));
  counts.push_back(100003);
  return counts;
}

}  // namespace zerodp::comm::testing

#include "comm/sum.h"

#include <cstdint>
#include <cstring>

#include "common/convert.h"

namespace zerodp::comm {
namespace {

// Elements per block: the fp32 accumulator (8 KiB) and the block of every input stay in L1/L2
// while the block is summed and written out.
constexpr std::size_t kBlock = 2048;

// acc[i] = a[i] + b[i]. No aliasing (acc is a local buffer), so the loops vectorise.
void add2(float* __restrict acc, const float* a, const float* b, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) acc[i] = a[i] + b[i];
}
void add1(float* __restrict acc, const float* b, std::size_t len) {
  for (std::size_t i = 0; i < len; ++i) acc[i] += b[i];
}

void copy_out(void* const* outputs, int m, std::size_t offset_bytes, const void* block,
              std::size_t bytes) {
  for (int o = 0; o < m; ++o)
    std::memcpy(static_cast<char*>(outputs[o]) + offset_bytes, block, bytes);
}

void sum_f32(const void* const* inputs, int n, void* const* outputs, int m, std::size_t count) {
  alignas(64) float acc[kBlock];
  for (std::size_t b = 0; b < count; b += kBlock) {
    const std::size_t len = count - b < kBlock ? count - b : kBlock;
    auto in = [&](int j) { return static_cast<const float*>(inputs[j]) + b; };
    add2(acc, in(0), in(1), len);
    for (int j = 2; j < n; ++j) add1(acc, in(j), len);
    copy_out(outputs, m, b * sizeof(float), acc, len * sizeof(float));
  }
}

void sum_half(DType dtype, const void* const* inputs, int n, void* const* outputs, int m,
              std::size_t count) {
  alignas(64) float acc[kBlock];
  alignas(64) float widened[kBlock];
  alignas(64) std::uint16_t rounded[kBlock];
  for (std::size_t b = 0; b < count; b += kBlock) {
    const std::size_t len = count - b < kBlock ? count - b : kBlock;
    auto in = [&](int j) { return static_cast<const std::uint16_t*>(inputs[j]) + b; };
    half_to_float(dtype, in(0), acc, len);
    for (int j = 1; j < n; ++j) {
      half_to_float(dtype, in(j), widened, len);
      add1(acc, widened, len);
    }
    float_to_half(dtype, acc, rounded, len);
    copy_out(outputs, m, b * 2, rounded, len * 2);
  }
}

}  // namespace

void sum_in_rank_order(DType dtype, const void* const* inputs, int n, void* const* outputs, int m,
                       std::size_t count) {
  if (count == 0) return;
  if (n == 1) {
    for (int o = 0; o < m; ++o) {
      if (outputs[o] != inputs[0]) std::memcpy(outputs[o], inputs[0], count * dtype_size(dtype));
    }
    return;
  }
  if (dtype == DType::f32) return sum_f32(inputs, n, outputs, m, count);
  sum_half(dtype, inputs, n, outputs, m, count);
}

}  // namespace zerodp::comm

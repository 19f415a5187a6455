// Block quantization of 16-bit values to int8: the wire format of ZeRO++'s quantized weight
// gathers (qwZ, docs/zeropp.md). A rank quantizes its chunk of a bucket before the all-gather
// and every rank dequantizes every chunk after it, its own included, so all ranks compute with
// the same weights.
//
// Format of n values in blocks of `block` (the last block may be short):
//   ceil(n / block) block maxima a_k, each the largest |x| of its block in the run's 16-bit
//   format (2 bytes, little-endian), then n int8 codes q_i = round(127 x_i / a_k) (ties to
//   even), in [-127, 127]. 2 ceil(n / block) + n bytes: quantized_bytes().
// Decoding: x̂_i = fp16/bf16(fp32(q_i a_k / 127)), the products and quotient in double.
//
// Contract (tests/common/quantize_test.cc holds each):
//  - Error: for a block of finite values with largest magnitude a, every element comes back
//    with |x̂_i − x_i| <= a / 254 + a (u + 2^-23) + η, u the 16-bit format's unit roundoff
//    (bf16 2^-8, fp16 2^-11) and η half its least subnormal (bf16 2^-134, fp16 2^-25):
//    half a code step, plus the roundings of the decode.
//  - Exact: the block's largest magnitude (±a), zeros, and a block whose values all have
//    magnitude a come back bit for bit (−0 comes back +0).
//  - A block holding an inf or a NaN comes back NaN throughout (a = NaN): a diverged weight
//    is never turned into a finite one.
//  - Deterministic: the same input gives the same bytes on any machine (no fused or
//    vectorised arithmetic changes a rounding: every step is one IEEE operation in double).
#pragma once

#include <cstddef>
#include <cstdint>

#include "zerodp/common/dtype.h"

namespace zerodp {

// qwZ's default block: 2 bytes of maximum per 256 codes, 0.8 % over the int8 payload.
inline constexpr std::size_t kDefaultQuantBlock = 256;
// The largest block accepted (--qwz-block): past a bucket's chunk a block changes nothing.
inline constexpr std::size_t kMaxQuantBlock = std::size_t{1} << 24;

// Counts are 64-bit whatever the target, as in shard.h: the planner's WebAssembly build asks too.
constexpr std::uint64_t quantized_blocks(std::uint64_t n, std::uint64_t block) {
  return (n + block - 1) / block;
}
// The bytes quantize_int8() writes for n values.
constexpr std::uint64_t quantized_bytes(std::uint64_t n, std::uint64_t block) {
  return 2 * quantized_blocks(n, block) + n;
}

// A quantized all-gather of a bucket of `count` elements over `ranks`: every rank sends one
// payload of quantized_bytes(capacity) (its chunk, zero-padded to the capacity of shard_of(),
// so all payloads are equal), and every rank holds all of them: ranks payloads.
constexpr std::uint64_t quantized_payload(std::uint64_t count, int ranks, std::uint64_t block) {
  return quantized_bytes((count + std::uint64_t(ranks) - 1) / std::uint64_t(ranks), block);
}

// Writes quantized_bytes(n, block) bytes to out. dtype: bf16 or f16. Requires block >= 1.
void quantize_int8(DType dtype, const std::uint16_t* in, std::size_t n, std::size_t block,
                   std::uint8_t* out);
// Reads quantized_bytes(n, block) bytes and writes n 16-bit values.
void dequantize_int8(DType dtype, const std::uint8_t* in, std::size_t n, std::size_t block,
                     std::uint16_t* out);

}  // namespace zerodp

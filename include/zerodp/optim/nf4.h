// QLoRA's 4-bit NormalFloat weights (NF4) with double quantization, as bitsandbytes'
// quantize_4bit computes them in its CUDA kernel (kQuantizeBlockwise, dQuantizeNF4):
//  - The weight is cut into blocks of 64 elements (the last may be shorter); a block's absmax
//    is max |x| over its elements, in fp32.
//  - Each element is scaled by fl(1 / absmax) (a multiplication by the reciprocal, as the
//    kernel does) and coded by the NF4 table: the code is the number of the table's 15
//    midpoints, fl((t[i] + t[i+1]) / 2), strictly below the scaled value, so a value on a
//    midpoint takes the lower code, and NaN (0 · ∞, a block of zeros) takes code 0, which
//    dequantizes to 0.
//  - Two codes a byte, element 2i in the high nibble; with n odd, the last low nibble is the
//    code of 0 (7), as the kernel pads with zeros.
//  - Double quantization: offset = the blocks' absmax summed in order in fp32, over their
//    count; each absmax - offset is quantized with the signed dynamic map in blocks of 256
//    (optim/blockwise8.h's quantize_with: the nearest code, the first on a tie). bitsandbytes'
//    offset is torch.mean's, summed in the order of its reduction, which may differ in the
//    last bit; every other operation is the same correctly rounded fp32 one.
//  - Dequantized: absmax = map[code] · nested absmax + offset (without double quantization
//    the fp32 absmax itself), then t[code] · absmax, each fp32.
// scripts/optim_reference.py writes the same in NumPy from the QLoRA paper's table, and
// tests/optim/nf4_test.cc holds the codes, absmax and dequantized values to it bit for bit.
// The bytes a weight takes are catalog/lora.h's nf4_tensor_bytes() (uint8 storage).
//
// Contract: pure functions; quantize_nf4() takes any finite or non-finite input (a NaN
// propagates into its block's absmax, as torch's max does).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace zerodp::optim {

// bitsandbytes' get_4bit_type("nf4"): the QLoRA paper's NormalFloat4 values.
inline constexpr std::array<float, 16> kNf4Table = {-1.0f,
                                                    -0.6961928009986877f,
                                                    -0.5250730514526367f,
                                                    -0.39491748809814453f,
                                                    -0.28444138169288635f,
                                                    -0.18477343022823334f,
                                                    -0.09105003625154495f,
                                                    0.0f,
                                                    0.07958029955625534f,
                                                    0.16093020141124725f,
                                                    0.24611230194568634f,
                                                    0.33791524171829224f,
                                                    0.44070982933044434f,
                                                    0.5626170039176941f,
                                                    0.7229568362236023f,
                                                    1.0f};
inline constexpr std::size_t kNf4Block = 64;
inline constexpr std::size_t kNf4NestedBlock = 256;

struct Nf4Weight {
  std::size_t elements = 0;
  std::vector<std::uint8_t> codes;  // ceil(elements / 2) bytes
  bool double_quant = true;
  std::vector<float> absmax;               // without double quantization: a block's max |x|
  std::vector<std::uint8_t> absmax_codes;  // with it: a block's absmax - offset, quantized
  std::vector<float> nested_absmax;        // with it: each 256 blocks' max |absmax - offset|
  float offset = 0;                        // with it: the blocks' mean absmax
};

// The NF4 code of a value already scaled by its block's reciprocal absmax.
std::uint8_t nf4_code(float scaled);

// The same steps over storage the caller holds (the engine keeps a frozen base's codes and
// quantization state in its ledger's buffers). For a weight of n elements:
inline std::size_t nf4_blocks(std::size_t n) {
  return (n + kNf4Block - 1) / kNf4Block;
}
inline std::size_t nf4_nested_blocks(std::size_t n) {
  return (nf4_blocks(n) + kNf4NestedBlock - 1) / kNf4NestedBlock;
}
inline std::size_t nf4_code_bytes(std::size_t n) {
  return (n + 1) / 2;
}
// Codes (nf4_code_bytes(n)) and each block's absmax (nf4_blocks(n)) of x.
void nf4_quantize_blocks(std::span<const float> x, std::span<std::uint8_t> codes,
                         std::span<float> absmax);
// Double quantization of the absmax: centres them in place on their mean, which it returns
// (the offset), and writes their codes (one a block) and each 256 blocks' nested absmax.
float nf4_double_quantize(std::span<float> absmax, std::span<std::uint8_t> absmax_codes,
                          std::span<float> nested_absmax);
// A block's absmax as dequantization uses it, with double quantization undone.
inline float nf4_double_quantized_absmax(std::span<const std::uint8_t> absmax_codes,
                                         std::span<const float> nested_absmax, float offset,
                                         std::size_t block);
// The values of codes[elements] given each block's absmax (a function of the block).
template <typename AbsmaxOf>
void nf4_dequantize_codes(std::span<const std::uint8_t> codes, std::size_t elements,
                          const AbsmaxOf& absmax_of, float* out) {
  for (std::size_t b = 0; b * kNf4Block < elements; ++b) {
    const float absmax = absmax_of(b);
    const std::size_t end = std::min(elements, (b + 1) * kNf4Block);
    for (std::size_t i = b * kNf4Block; i < end; ++i) {
      const std::uint8_t code = i % 2 == 0 ? codes[i / 2] >> 4 : codes[i / 2] & 0x0f;
      out[i] = kNf4Table[code] * absmax;
    }
  }
}

Nf4Weight quantize_nf4(std::span<const float> x, bool double_quant);
// Each block's absmax as dequantization uses it (double quantization undone).
std::vector<float> nf4_block_absmax(const Nf4Weight& w);
// The weight's values; out.size() must be w.elements.
void dequantize_nf4(const Nf4Weight& w, std::span<float> out);

const std::array<float, 256>& nf4_absmax_map();  // the signed dynamic map of the absmax codes

inline float nf4_double_quantized_absmax(std::span<const std::uint8_t> absmax_codes,
                                         std::span<const float> nested_absmax, float offset,
                                         std::size_t block) {
  return nf4_absmax_map()[absmax_codes[block]] * nested_absmax[block / kNf4NestedBlock] + offset;
}

}  // namespace zerodp::optim

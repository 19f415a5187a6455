// 8-bit block-wise optimizer states (bitsandbytes' dynamic block-wise quantization), as the
// engine computes them: the two dynamic maps, the quantization of one block, and AdamW's step on
// dequantized states. Where a rank keeps them is zerodp/common/blockwise_layout.h.
//
// Contract:
//  - The maps are bitsandbytes' create_dynamic_map(signed, max_exponent_bits=7, total_bits=8)
//    as its releases since 0.43 build it (7 non-sign bits for the signed and the unsigned map
//    alike), in float32 through torch.linspace: 256 sorted distinct values in [-1, 1] (signed,
//    for first moments: 0 at index 127, 1 at 255, no -1) and in [0, 1] (unsigned, for second
//    moments). scripts/optim_reference.py builds them again with the machine's PyTorch, and a
//    test holds the tables to it bit for bit.
//  - quantize_block: bitsandbytes' quantize_blockwise as its CPU path computes it (its
//    backends/cpu ops): absmax = max |x|; scaled = clamp(x * fl(1 / absmax), -1, 1) in fp32; the
//    code is the index of the map value nearest to scaled, |scaled - map[i]| in fp32, the first
//    index on a tie, and index 0 where scaled is NaN (an all-zero block: 0 * inf).
//    dequantize: map[code] * absmax in fp32.
//  - Every function is pure or writes only what it is given: safe from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "zerodp/optim/rule.h"

namespace zerodp::optim {

using DynamicMap = std::array<float, 256>;
const DynamicMap& dynamic_map_signed();
const DynamicMap& dynamic_map_unsigned();

// The code of one value already scaled by 1 / absmax (clamped here), as quantize_block does.
std::uint8_t quantize_scaled(float scaled, const DynamicMap& map);
// Quantizes x[0, n) into codes with `absmax`: the maximum of |x| over the whole block, which a
// piece of a block shared by several ranks learns from the others.
void quantize_with(const float* x, std::size_t n, float absmax, const DynamicMap& map,
                   std::uint8_t* codes);
// max |x| over x[0, n) (0 for n = 0; NaN propagates).
float block_absmax(const float* x, std::size_t n);
void dequantize(const std::uint8_t* codes, std::size_t n, float absmax, const DynamicMap& map,
                float* out);
// The absmax and codes that dequantize to exactly `values` (a block's dequantized states, as a
// checkpoint stores them), with the map; false if none does (values no quantization produced).
// The block's own absmax is among the candidates tried (max |values|, and the values within a
// few ulps of max |values| / |map[0]| when the largest element sat at the map's negative end),
// so every block the engine wrote is recovered, and its next step is the same bits.
bool recover_block(const float* values, std::size_t n, const DynamicMap& map, float* absmax,
                   std::uint8_t* codes);

// One step of a piece of n <= 256 elements of a block, as the engine takes it: each of the
// rule's slots dequantized from codes[k] with old_absmax[k] (a slot of squares with the unsigned
// map, any other with the signed one), rule.step on the piece, then each slot quantized back
// into codes[k] with its maximum over the whole block: agreed_absmax[k] when other parts of the
// block lie elsewhere (the engine's exchange), else the piece's own. The absmax the codes were
// quantized with goes to new_absmax[k].
void step_block8(const Rule& rule, float* param, const float* grad, std::size_t n,
                 std::uint8_t* const codes[2], const float old_absmax[2],
                 const float* agreed_absmax, float new_absmax[2], float grad_mul, float lr,
                 std::int64_t t, const Hyper& h);
// Each slot's new maximum over such a piece (what it contributes to its block's), with nothing
// written: the step is taken on copies.
void piece_maxima8(const Rule& rule, const float* param, const float* grad, std::size_t n,
                   const std::uint8_t* const codes[2], const float old_absmax[2], float grad_mul,
                   float lr, std::int64_t t, const Hyper& h, float maxima[2]);
// The map of slot k of the rule's row.
const DynamicMap& slot_map(const Rule& rule, std::size_t k);

}  // namespace zerodp::optim

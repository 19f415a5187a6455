// The planner's model of memory: the model-state bytes each rank holds under plain data
// parallelism (stage 0, the seed's M_DP) and ZeRO stages 1-3 (M_1, M_2, M_3), and the floor
// each approaches as N → ∞. Activations are not model state; see plan/activations.h.
//
// Contract:
//  - Bytes are 64-bit integers computed without floating point (128-bit intermediates), so
//    a comparison with a budget is exact at the boundary: an exact equality fits.
//  - A sharded state is cut with shard_of() (zerodp/common/shard.h), and every rank is charged the
//    shard capacity, ceil(Φ/N) elements, which is what the engine allocates on each rank.
//    When N divides Φ this is exactly the seed's KΦ/N; otherwise it is the seed's figure
//    rounded up to whole elements (less than one element's bytes more per sharded state).
//  - The functions here never overflow once check_fits_in_64_bits() has accepted Φ and the
//    bytes per parameter; calling them without that check is a bug (ZERODP_CHECK).
//  - Pure functions of their arguments: safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "zerodp/common/optimizers.h"
#include "zerodp/common/stage.h"

namespace zerodp::plan {

// The seed's stages are the engine's (zerodp/common/stage.h): one type, one answer to what each
// shards.
using zerodp::kStages;
using zerodp::Stage;
using zerodp::stage_name;

// Bytes each parameter costs, in the seed's three blocks: the working params (P), their
// gradients (G) and the optimizer state (K, including an fp32 master copy if any).
//
// An 8-bit optimizer's K is not a whole number of bytes an element: each run of `block`
// elements of a rank's optimizer partition (or part of a run, at its end) adds `block_bytes`
// (its slots' fp32 absmax), and a partition of fewer than `small_below` elements keeps its
// state in 32 bits, `small_optimizer` bytes an element (bitsandbytes' min_8bit_size).
// optimizer_bytes() counts them exactly for a partition of any size.
struct BytesPerParam {
  std::uint32_t params = 2;                  // P: 16-bit working copy
  std::uint32_t grads = 2;                   // G: 16-bit gradients
  std::uint32_t optimizer = 12;              // K: fp32 master + Adam m + Adam v
  std::uint32_t block = 0, block_bytes = 0;  // 0: no block constants
  std::uint64_t small_below = 0;             // 0: no size rule
  std::uint32_t small_optimizer = 0;
  // P + G + K an element, without block constants.
  std::uint64_t total() const { return std::uint64_t(params) + grads + optimizer; }
  // Whether K is a whole number of bytes an element (no block constants, no size rule).
  bool per_element() const { return block == 0 && small_below == 0; }
  // The optimizer state of a partition of `elements` elements: K·elements, or the 32-bit
  // state below small_below, plus the block constants. Exact below 2^64 (saturates).
  std::uint64_t optimizer_bytes(std::uint64_t elements) const;
  bool operator==(const BytesPerParam&) const = default;
};

// The published accounting (ZeRO paper, section 3.1; Megatron/DeepSpeed practice), and the
// optimizers of the table of state slots (zerodp/common/optimizers.h).
enum class Precision { fp16, bf16, fp32 };  // fp16/bf16 mean mixed precision, fp32 master
using zerodp::Optimizer;

//   precision    optimizer       P  G  K   K is made of
//   fp16/bf16    adam            2  2  12  master 4 + m 4 + v 4
//   fp16/bf16    sgd_momentum    2  2  8   master 4 + momentum 4
//   fp16/bf16    sgd             2  2  4   master 4
//   fp16/bf16    adam_8bit       2  2  6   master 4 + m 1 + v 1, and 8 bytes a block of 256
//   bf16         adam_bf16       2  2  4   m 2 + v 2 (pure bf16: no master)
//   fp32         adam            4  4  8   m 4 + v 4 (the params are the master)
//   fp32         sgd_momentum    4  4  4   momentum 4
//   fp32         sgd             4  4  0
// and each other row as its slots say. Throws InvalidArgument naming the optimizer for a
// pure-bf16 row with a precision other than bf16.
BytesPerParam bytes_per_param(Precision precision, Optimizer optimizer);
// "2 params + 2 grads + 12 optimizer = 16"; an 8-bit K adds its block constants and size
// rule: "2 params + 2 grads + 6 optimizer = 10, and 8 bytes a block of 256 optimizer elements
// (12 an element under 4,096)".
std::string bytes_per_param_words(const BytesPerParam& bpp);
std::string_view precision_name(Precision precision);  // "mixed fp16", "mixed bf16", "fp32"
// The same for a run of this optimizer: "pure bf16" for a pure-bf16 row, which keeps no master.
std::string_view precision_name(Precision precision, Optimizer optimizer);
std::string_view optimizer_name(Optimizer optimizer);  // "Adam", "8-bit AdamW (...)", "SGD"

// Which bytes per parameter a stage keeps whole on every rank and which it shards, as
// sharding(stage) says: stage 0: replicated P+G+K; 1: P+G, sharded K; 2: P, sharded G+K;
// 3: sharded P+G+K. Per element: an 8-bit K's block constants and size rule are counted by
// model_state_bytes() and floor_bytes(), not here.
struct StageSplit {
  std::uint64_t replicated = 0;
  std::uint64_t sharded = 0;
};
StageSplit stage_split(Stage stage, const BytesPerParam& bpp);
// The stage's model state in the seed's notation: "4Φ + 12Φ/N" (the figure's legend, measure's
// formula row).
std::string stage_formula(Stage stage, const BytesPerParam& bpp);

// Throws InvalidArgument naming params (and the largest Φ that fits) when a byte count the
// planner derives from Φ would not fit in 64 bits: the whole model state (P+G+K)Φ and the
// seed's two-direction ZeRO-3 volume 2(2P+G)Φ. Also rejects P = 0 or G = 0.
void check_fits_in_64_bits(std::uint64_t params, const BytesPerParam& bpp);

// The seed's M_stage: model-state bytes one rank holds with Φ = `params` over `ranks` ranks,
// replicated·Φ + sharded·ceil(Φ/N), K counted by optimizer_bytes() over the partition it lies
// in (Φ elements replicated, ceil(Φ/N) sharded). Requires ranks >= 1. At N = 1 every stage is
// (P+G+K)Φ.
std::uint64_t model_state_bytes(std::uint64_t params, int ranks, Stage stage,
                                const BytesPerParam& bpp);

// model_state_bytes() when each sharded part holds `shard` elements of Φ (ceil(Φ/N) at N), in
// 128 bits for any Φ and shard below 2^64: what the least-N and largest-Φ searches probe,
// beyond the int range of N and the 64-bit range of the bytes.
unsigned __int128 state_bytes_at_shard(unsigned __int128 params, unsigned __int128 shard,
                                       Stage stage, const BytesPerParam& bpp);

// The limit of M_stage as N → ∞: replicated·Φ (16Φ, 4Φ, 2Φ, 0 by default), a replicated K
// counted by optimizer_bytes(Φ).
std::uint64_t floor_bytes(std::uint64_t params, Stage stage, const BytesPerParam& bpp);

}  // namespace zerodp::plan

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

#include "zerodp/common/stage.h"

namespace zerodp::plan {

// The seed's stages are the engine's (zerodp/common/stage.h): one type, one answer to what each
// shards.
using zerodp::kStages;
using zerodp::Stage;
using zerodp::stage_name;

// Bytes each parameter costs, in the seed's three blocks: the working params (P), their
// gradients (G) and the optimizer state (K, including an fp32 master copy if any).
struct BytesPerParam {
  std::uint32_t params = 2;      // P: 16-bit working copy
  std::uint32_t grads = 2;       // G: 16-bit gradients
  std::uint32_t optimizer = 12;  // K: fp32 master + Adam m + Adam v
  std::uint64_t total() const { return std::uint64_t(params) + grads + optimizer; }
  bool operator==(const BytesPerParam&) const = default;
};

// The published accounting (ZeRO paper, section 3.1; Megatron/DeepSpeed practice).
enum class Precision { fp16, bf16, fp32 };  // fp16/bf16 mean mixed precision, fp32 master
enum class Optimizer { adam, sgd_momentum, sgd };

//   precision    optimizer       P  G  K   K is made of
//   fp16/bf16    adam            2  2  12  master 4 + m 4 + v 4
//   fp16/bf16    sgd_momentum    2  2  8   master 4 + momentum 4
//   fp16/bf16    sgd             2  2  4   master 4
//   fp32         adam            4  4  8   m 4 + v 4 (the params are the master)
//   fp32         sgd_momentum    4  4  4   momentum 4
//   fp32         sgd             4  4  0
BytesPerParam bytes_per_param(Precision precision, Optimizer optimizer);
std::string_view precision_name(Precision precision);  // "mixed fp16", "mixed bf16", "fp32"
std::string_view optimizer_name(Optimizer optimizer);  // "Adam", "SGD with momentum", "SGD"

// Which bytes per parameter a stage keeps whole on every rank and which it shards, as
// sharding(stage) says: stage 0: replicated P+G+K; 1: P+G, sharded K; 2: P, sharded G+K;
// 3: sharded P+G+K.
struct StageSplit {
  std::uint64_t replicated = 0;
  std::uint64_t sharded = 0;
};
StageSplit stage_split(Stage stage, const BytesPerParam& bpp);

// Throws InvalidArgument naming params (and the largest Φ that fits) when a byte count the
// planner derives from Φ would not fit in 64 bits: the whole model state (P+G+K)Φ and the
// seed's two-direction ZeRO-3 volume 2(2P+G)Φ. Also rejects P = 0 or G = 0.
void check_fits_in_64_bits(std::uint64_t params, const BytesPerParam& bpp);

// The seed's M_stage: model-state bytes one rank holds with Φ = `params` over `ranks` ranks,
// replicated·Φ + sharded·ceil(Φ/N). Requires ranks >= 1. At N = 1 every stage is (P+G+K)Φ.
std::uint64_t model_state_bytes(std::uint64_t params, int ranks, Stage stage,
                                const BytesPerParam& bpp);

// The limit of M_stage as N → ∞: replicated·Φ (16Φ, 4Φ, 2Φ, 0 by default).
std::uint64_t floor_bytes(std::uint64_t params, Stage stage, const BytesPerParam& bpp);

}  // namespace zerodp::plan

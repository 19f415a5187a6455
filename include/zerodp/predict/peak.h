// The peak: what one rank of zerodp's own engine holds at the worst moment of a step, by the
// ledger's categories (zerodp/common/ledger.h), predicted from the run's configuration before
// anything is allocated.
//
// Model state is the seed's formula (plan/memory.h); the peak adds what a real step needs on
// top: the model's activations, the fp32 views a unit computes in, stage 3's gathered units,
// the gradient buckets of stages 2 and 3 and the communicator's staging. The prediction
// follows the engine's allocations one by one (docs/memory.md has the table):
//   params16, grads16        2 bytes × (Φ whole, or this rank's shard: the sum of its chunk
//                            of every bucket)
//   master32, optim_m, optim_v 4 bytes × (Φ whole, or the shard), each slot the optimizer has;
//                            8-bit slots: per slot one byte a quantized element, 4 bytes an
//                            element of a small tensor and 4 bytes a block the rank holds part
//                            of (common/blockwise_layout.h), and in scratch32 8 bytes an edge
//                            slot, N times over when blocks straddle ranks; a factored slot
//                            (Adafactor): 4 bytes a held matrix's row and column and a held
//                            vector element (common/factored_layout.h), and in scratch32 4
//                            bytes a factor and a held tensor's divisor and 40 an exact sum,
//                            every rank's part N times over when tensors are split
//   scratch32                4 × (largest unit with the units it reads + largest unit + every
//                            unit that others read) + 4 × largest chunk (grads sharded)
//   buckets                  grads sharded: 2 × (2 × largest bucket + 2 × largest chunk);
//                            qgZ adds, per slot of two, 2 N and 2 K payloads of the largest
//                            bucket and K fp32 chunks, and one 16-bit chunk
//   gathered_params          params sharded: slots × 2 × largest unit, slots being the most
//                            units held at once by the gather order (with prefetch: the next
//                            unit's too); with qwZ each slot adds its staging, N payloads of
//                            quantized_payload() per bucket of the unit with the most;
//                            with hpZ, 2 × this rank's host chunk of every bucket (its
//                            secondary copy, held from setup)
//   comm_buffers             MPI: 2 (N-1) segments of the largest reduction (comm/communicator.h);
//   threads: 0 activations              gpt_activation_bytes() or mlp_activation_bytes()
// A frozen base (a LoRA GPT) adds, in its own layout cut into buckets alike: params16 2 bytes a
// base element held (whole, or the shard at stage 3), scratch32 4 × its largest unit with the
// units it reads, and at stage 3 gathered_params as many slots again of 2 × its largest unit.
// Under NF4 its layout is of stored words (a quarter of a block weight's elements, rounded up),
// params16 adds every weight's quantization state on every rank (double quantization: a byte
// a block of 64, 4 bytes a block of 256 blocks and a 4-byte offset; without, 4 bytes a block),
// and scratch32 holds at least the largest frozen unit and, beside it, the largest weight's
// codes and fp32 absmax (setup quantizes there).
// Everything is allocated once and kept, so the peak is the sum, reached when the last buffer
// is first allocated: in the first step's forward (activations, gathers) or backward (a
// gather the forward did not need at once). Gradient accumulation and precision (bf16 or
// fp16, both 16-bit) do not change it.
//
// Contract: pure functions of their arguments (safe from any thread); byte counts saturate at
// UINT64_MAX instead of wrapping. The prediction equals the engine's Ledger::peak_total()
// exactly for the runs the engine accepts (tests/plan/peak_test.cc runs them).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "zerodp/common/ledger.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/stage.h"
#include "zerodp/common/zeropp.h"

namespace zerodp::predict {

// The byte-level GPT (zerodp/model/gpt.h): vocabulary 256, tied LM head.
struct GptShape {
  std::uint64_t layers = 4, heads = 4, hidden = 256, seq_len = 128, vocab = 256;
  bool checkpoint_activations = false;
  bool bf16_compute = false;  // --compute bf16: each model thread's product scratch
  // LoRA (GptConfig::lora_rank, lora_targets): the adapters are the trained layout and the
  // base is frozen; 0: every parameter trained.
  std::uint64_t lora_rank = 0;
  unsigned lora_targets = 1;  // model::LoraTarget bits: c_attn, PEFT's default
  // QLoRA (EngineOptions::frozen_nf4): the base's block weights held as NF4 codes, their
  // absmax double-quantized or not.
  bool nf4 = false;
  bool double_quant = true;
};
// The MLP (zerodp/model/mlp.h): depth layers of width × width + width.
struct MlpShape {
  std::uint64_t width = 64, depth = 4;
};
using EngineModel = std::variant<GptShape, MlpShape>;

// A run of the engine, as `zerodp train` and `measure` start it.
struct EngineRun {
  EngineModel model = GptShape{};
  Stage stage = Stage::zero3;
  int ranks = 1;
  std::uint64_t micro_batch = 1;         // samples per rank per micro-step
  std::uint64_t grad_accum = 1;          // does not change the peak
  std::uint64_t bucket_bytes = 8 << 20;  // 16-bit bytes one collective moves, >= 2
  bool prefetch = true;                  // stage 3
  // The optimizer's fp32 slots: those counted as optim_m and as optim_v (ledger.h), 0 or 1
  // each (AdamW: 1 and 1; Lion and SGD with momentum: 1 and 0; SGD: 0 and 0).
  int m_slots = 1, v_slots = 1;
  // An optimizer with 8-bit block-wise slots instead (8-bit AdamW, 8-bit Lion): its row, whose
  // block and min_quantized lay out each rank's codes, fp32 states and absmax
  // (common/blockwise_layout.h); m_slots and v_slots are then unused. Null: fp32 slots.
  const OptimizerRow* blockwise = nullptr;
  // An optimizer with a factored slot instead (Adafactor): each rank's states, factors and sums
  // are laid out by common/factored_layout.h from the model's tensors. Null: not factored.
  const OptimizerRow* factored = nullptr;
  std::string_view optimizer = "adamw";  // its word, for what a dry run prints
  int model_threads = 1;                 // GptModel::set_threads
  bool mpi = false;                      // the MPI backend keeps reduction staging
  std::uint64_t mpi_segment_bytes = 4 << 20;
  ZeroPlusPlus zeropp;            // stage 3's ZeRO++ switches (common/zeropp.h)
  std::uint64_t qwz_block = 256;  // elements per quantization block (qwZ, qgZ)
  // The ranks of one host, settled (EngineOptions::ranks_per_host, or the backend's): hpZ's
  // secondary copy and qgZ's first all-to-all span them. Unused without hpZ or qgZ.
  int ranks_per_host = 0;

  // Stage 3 with hpZ: the ranks its secondary copy spans; 0: off.
  int hpz_ranks() const { return zeropp.hpz ? ranks_per_host : 0; }
  // Stage 3 with qgZ: the ranks of its first all-to-all; 0: off.
  int qgz_ranks() const { return zeropp.qgz ? ranks_per_host : 0; }
};

// qgZ's two all-to-alls of a bucket of `count` elements (zero/grad_reducer.h): the bytes rank
// `rank` sends to `peer` (0 to itself), with ranks in hosts of run.qgz_ranks.
std::uint64_t qgz_bytes_to(const EngineRun& run, std::uint64_t count, int rank, int peer);

struct RankPeak {
  std::uint64_t peak_bytes = 0;
  Phase moment = Phase::setup;  // where in the first step the peak is first reached
  std::array<std::uint64_t, kCategoryCount> bytes{};  // by category, at the peak
  std::uint64_t model_state_bytes() const;
  std::uint64_t operator[](Category c) const { return bytes[static_cast<int>(c)]; }
};

// The parameters of each unit in layout order, and which earlier units each reads (the
// GPT's final unit reads the token embedding): the model's layout as the engine sees it.
struct UnitLayout {
  std::vector<std::uint64_t> counts;
  std::vector<std::vector<int>> reads;
  std::vector<std::uint64_t> tensors;      // every tensor's elements, in flat-layout order
  std::vector<std::uint64_t> tensor_cols;  // each one's columns, a matrix's; 0 for a vector
  std::vector<std::uint64_t> frozen;       // each unit's frozen elements (a LoRA base); all 0
  // The 16-bit words each unit's frozen elements are stored in: as many, or under NF4 a
  // quarter of each linear weight's, rounded up (what the partition cuts and stage 3 gathers).
  std::vector<std::uint64_t> frozen_words;
  // Under NF4: the quantization state's bytes, whole on every rank, and the fp32 elements beyond
  // the largest frozen unit the engine's setup quantizes a weight in (0 without).
  std::uint64_t nf4_state_bytes = 0, nf4_spare = 0;
};
UnitLayout unit_layout(const EngineModel& model);
std::uint64_t param_count(const EngineModel& model);

// What GptModel allocates for a micro-batch of B samples (its arena, tokens and targets) plus,
// with P model threads, (P - 1) lanes of private gradients and attention scratch; B T = BT:
//   4 (BT [(L+1) C + S (15 C + 4 + NH T) + (C + 2 V + 3) + (10 C + V)] + T²) + 2 BT
//   + under LoRA 4 BT R (S k + 1), k the adapted projections,
//   + 4 (P - 1) (largest unit view + T²),       S = 1 with checkpointing, L without,
//   + in bf16 compute 4 P (max(R max(4C, V), T²) + max(4C², V C, 4 R C)), R = ceil(B / P) T.
std::uint64_t gpt_activation_bytes(const GptShape& shape, std::uint64_t micro_batch,
                                   int model_threads = 1);
// What the MLP allocates: (2 depth + 4) B width floats.
std::uint64_t mlp_activation_bytes(const MlpShape& shape, std::uint64_t micro_batch);

// Rank r's peak; requires 0 <= rank < run.ranks.
RankPeak predict_rank_peak(const EngineRun& run, int rank);
// Every rank's. Rank 0's is the largest: its chunk of every bucket is the largest.
std::vector<RankPeak> predict_peak(const EngineRun& run);

// The bytes each host sends to other hosts per training step in the step's ZeRO collectives,
// with the MPI backend's algorithm (zerodp/comm/communicator.h: each rank sends each peer its chunk
// of a reduce-scatter, and its own chunk of an all-gather to every peer, directly), ranks filling
// hosts in order, ranks_per_host to a host (run.ranks a multiple of it). Stage 0 all-reduces
// every bucket; stages 1 and 2 reduce-scatter it and all-gather the updated params; stage 3
// gathers the params twice (forward, backward) and reduce-scatters the grads. With qwZ each
// gather sends every peer the rank's quantized payload (common/quantize.h) instead of its
// 16-bit chunk; with hpZ the backward's gather runs inside each hpZ host (run.hpz_ranks
// consecutive ranks), each rank sending its host chunk to the host's other ranks, counted when
// they sit on another host here; a frozen base's buckets are gathered twice at stage 3 too. The
// scalars' all-reduce (12 bytes) is left out. With one rank per
// host this is the ring column whenever N divides every bucket.
std::vector<std::uint64_t> predict_host_send_bytes(const EngineRun& run, int ranks_per_host);

// The bytes of each rank's part of the optimizer's own exchanges in a step. With 8-bit
// block-wise slots (run.blockwise): an all-gather of edge maxima, 8 bytes an edge slot, two slots
// a bucket; 0 when no block straddles two ranks' chunks. With a factored slot (run.factored,
// Adafactor): two all-gathers of 40-byte exact sums, the split matrices' rows and columns and
// every split tensor's Σ u² (common/factored_layout.h's slab_sums + slab_sq); 0 when no tensor
// is split. 0 with fp32 slots. predict_host_send_bytes and predict_rank_ring_bytes count it
// (every rank sends its part to every peer).
std::uint64_t optimizer_exchange_bytes(const EngineRun& run);

// The ring bytes (comm/communicator.h's formulas, counted when a collective is issued) rank
// `rank` sends in one step's ZeRO collectives, bucket by bucket as the engine issues them:
// stage 0 all-reduces each bucket; stages 1 and 2 reduce-scatter it and all-gather it; stage 3
// reduce-scatters it and all-gathers it twice, with qwZ as N payloads of bytes, with hpZ the
// backward's gather over the rank's hpZ host (its host chunks, 16-bit); a frozen base (LoRA)
// adds, at stage 3, two all-gathers of each of its buckets. The scalars' all-reduce is left
// out. Exact for every N, where the planner's flat-buffer ring column (plan/comm.h) is within
// N elements per bucket.
std::uint64_t predict_rank_ring_bytes(const EngineRun& run, int rank);

// The least N in [1, max_ranks] at which the run's peak (rank 0's) fits in budget bytes, or
// nullopt. The peak need not fall with N (MPI staging grows with it): the least is searched.
std::optional<int> least_ranks_that_fit(EngineRun run, std::uint64_t budget, int max_ranks);
// The stage with the least communication (0 before 1, 2, 3) whose peak fits at run.ranks.
std::optional<Stage> cheapest_stage_that_fits(EngineRun run, std::uint64_t budget);

}  // namespace zerodp::predict

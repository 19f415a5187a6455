// The ZeRO engine: trains a Model on one rank of a Communicator's group with stage 0, 1, 2
// or 3, mixed precision (16-bit params and grads, an fp32 master and the optimizer's slots) and
// a sharded optimizer step: AdamW, Lion, SGD with or without momentum, 8-bit AdamW or Lion, or
// any rule of optim/rule.h. See docs/engine.md for one step of each stage.
//
// What each rank holds (Φ parameters, N ranks, K the optimizer's slots: AdamW's m and v, Lion's
// m, SGD's momentum buffer; 2 + 2 + 4 + 4K bytes per parameter, 16 with AdamW; an 8-bit slot
// takes a byte an element and an fp32 absmax a block instead of 4, common/blockwise_layout.h):
//   stage 0: everything                         (8 + 4K)Φ
//   stage 1: master and slots sharded           4Φ + (4 + 4K)Φ/N
//   stage 2: + grads sharded                    2Φ + (6 + 4K)Φ/N
//   stage 3: + 16-bit params sharded            (8 + 4K)Φ/N
// as sharding(stage) says (zerodp/common/stage.h), measured by the Ledger, with gathered params,
// buckets, scratch and activations apart. A model's frozen parameters (Ψ, a LoRA base) add 2Ψ
// to params16, Ψ/N at stage 3 (gathered unit by unit as the others are), and nothing else:
// Φ is then the trained parameters alone. With frozen_nf4 (QLoRA) the linear weights among
// them take a quarter of that (their NF4 codes) and each rank adds their quantization state.
//
// Contract:
//  - Every rank constructs an Engine with the same options and a Model of the same config,
//    and calls the same methods in the same order (they issue collectives).
//  - Determinism: with the same seed and data, stages 0-3 end with bitwise-identical master
//    weights when grad_accum = 1 (every stage sums the same 16-bit gradients in the same
//    order and updates the same fp32 elements). With grad_accum > 1, stages 0 and 1 sum the
//    micro-steps locally and reduce once; stages 2 and 3 hold no full gradient, so they reduce
//    every micro-step and accumulate the reduced shard: 0 == 1 and 2 == 3 bitwise, 0 vs 2 to
//    16-bit rounding.
//  - Stopping: step(lr, stop_requested) asks stop_requested() once per step on each rank, and
//    StepResult::stop_requested is then the same on every rank: true when any rank answered
//    true. A caller that stops when it is true stops every rank after the same step, however
//    the request reached the ranks (a signal to one process, a flag read at different moments
//    by different threads). The answer rides on the step's scalar all-reduce: no collective
//    and no byte more (up to 4095 ranks; beyond, one 4-byte all-reduce of its own).
//  - Memory: every buffer that grows with the model, the batch or N — the engine's, the
//    model's activations, the communicator's staging — is counted in ledger() by category
//    while the engine lives (predict::predict_peak predicts its peak). With rank_memory > 0, an
//    allocation that would take the rank above it throws BudgetExceeded (a zerodp::Error),
//    from the constructor or from step(), before taking the memory; the engine is then
//    unusable, and nothing already written (a checkpoint) is touched.
//  - Failures of the communicator surface as zerodp::Error from step(); the engine is then
//    unusable.
//  - Thread-safety: one engine per rank, used from that rank's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/ledger.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/quantize.h"
#include "zerodp/common/stage.h"
#include "zerodp/common/zeropp.h"
#include "zerodp/data/samples.h"
#include "zerodp/model/model.h"
#include "zerodp/optim/loss_scaler.h"
#include "zerodp/optim/rule.h"

namespace zerodp::zero {

struct EngineOptions {
  Stage stage = Stage::dp;             // --stage: 0 (DP), 1, 2 or 3
  DType precision = DType::bf16;       // --precision: bf16 (no loss scaling) or fp16 (dynamic)
  std::size_t bucket_bytes = 8 << 20;  // --bucket-bytes: 16-bit bytes one collective moves;
                                       // smaller overlaps sooner, larger pays less latency
  bool prefetch = true;                // stage 3: gather the next unit while this one computes
  bool overlap = true;                 // reduce grads during backward, gather params during
                                       // the next forward; off: every collective is waited at once
  int grad_accum = 1;                  // --grad-accum: micro-steps per optimizer step
  std::size_t micro_batch = 1;         // samples per rank per micro-step
  float clip_norm = 0.0f;              // --clip: global gradient-norm clip; 0 disables
  // --optimizer: a row the engine runs (optim::engine_rule: adam, lion, sgd-momentum, sgd).
  Optimizer optimizer = Optimizer::adam;
  std::optional<optim::Hyper> hyper;  // empty: the rule's defaults
  // Tests only: a rule of their own in place of `optimizer`'s (it must outlive the engine).
  const optim::Rule* rule_for_tests = nullptr;
  optim::LossScaleConfig loss_scale;  // fp16 only
  std::uint64_t seed = 1;             // parameter initialisation
  std::size_t rank_memory = 0;        // --rank-memory: each rank's ledger budget in bytes (the
                                      // engine's, the model's and the communicator's buffers);
                                      // 0: none. Above it, an allocation throws BudgetExceeded
  // --zeropp (stage 3, docs/zeropp.md; zerodp/common/zeropp.h), its hpz partition a host's:
  //  - qwz: every gather of 16-bit params moves int8 codes in blocks of qwz_block with one
  //    16-bit maximum each (zerodp/common/quantize.h), and every rank computes with the
  //    dequantized params, its own chunk's included. Off: not a bit changes.
  //  - hpz: after each unit's forward gather, a secondary copy of its 16-bit params partitioned
  //    over the ranks of this rank's host serves the backward's gather, over the host's own
  //    communicator (Communicator::host_group), so it never leaves the host. The backward
  //    computes with the forward's weights, as without: not a bit changes.
  //  - qgz: each bucket's gradient reduce-scatter becomes two quantized all-to-alls, inside the
  //    host and then across hosts (int8 blocks of qwz_block, summed in fp32 in a fixed order):
  //    bitwise repeatable for the same ranks and hosts.
  ZeroPlusPlus zeropp;
  std::size_t qwz_block = kDefaultQuantBlock;  // --qwz-block: elements per block
  int ranks_per_host = 0;  // --ranks-per-host: consecutive ranks per host; 0: the backend's
  // Tests only (no flag or setting reaches it): the run steps (EngineState::run_step, 1-based)
  // at which this rank reports its gradients overflowed whatever their values. Such a step goes
  // as a real overflow does: skipped on every rank, the fp16 loss scale halved. It puts skips
  // where a test needs them (several in a row, the last one before a checkpoint), which a loss
  // scale the gradients overflow places only where their values fall.
  std::vector<std::int64_t> overflow_at_for_tests;
  // QLoRA (--quantize nf4): a model's frozen linear weights (model.h's TensorInfo::linear) are
  // held as bitsandbytes' NF4 codes (optim/nf4.h), packed four to a 16-bit word, so that
  // stage 3 shards and gathers them as 16-bit params, what FSDP does with
  // bnb_4bit_quant_storage=bfloat16; their quantization state (with frozen_double_quant,
  // double-quantized absmax) stays whole on every rank. A layer computes with its weight
  // dequantized and rounded to `precision`, as bitsandbytes' dequantize_4bit hands it to the
  // compute dtype. No effect on a model without frozen parameters.
  bool frozen_nf4 = false;
  bool frozen_double_quant = true;

  // Throws InvalidArgument naming the field (micro_batch, grad_accum, bucket_bytes, clip_norm,
  // precision, zeropp, qwz_block, ranks_per_host, optimizer) when a value is out of range.
  void validate() const;
  // The rule the engine steps with: rule_for_tests, else optimizer's (validate() first).
  const optim::Rule& rule() const;
  // The hyper-parameters it steps with: hyper, else the rule's defaults.
  optim::Hyper step_hyper() const;
};

struct StepResult {
  std::int64_t step = 0;    // the optimizer's t after this step: unchanged by a skipped one
  float loss = 0.0f;        // mean over ranks and micro-steps
  float grad_norm = 0.0f;   // global norm of the unscaled gradient, before clipping
  bool skipped = false;     // fp16 overflow: no update on any rank
  float loss_scale = 1.0f;  // the scale used for this step
  // This step's ZeRO collectives (the loss/norm/flag scalars apart): what the ring algorithms
  // would send for them (a formula, comm/communicator.h), and the bytes the backend counted as it
  // moved them for this rank. Ring bytes count when a collective is issued; counted bytes when its
  // data moves, so those of a gather overlapped across a step boundary fall in either step
  // (over steps and a flush() they add up).
  std::uint64_t ring_bytes = 0;
  std::uint64_t sent_bytes = 0;
  std::uint64_t received_bytes = 0;
  // The one scalar all-reduce: its ring bytes, and the bytes counted for it.
  std::uint64_t scalar_bytes = 0;
  std::uint64_t scalar_sent_bytes = 0;
  std::uint64_t scalar_received_bytes = 0;
  double seconds = 0.0;               // wall clock of the step
  double exposed_comm_seconds = 0.0;  // blocked waiting for collectives
  double compute_seconds = 0.0;       // seconds - exposed_comm_seconds
  // Where the compute went, waits for collectives excluded (what predict/schedule.h replays):
  // each unit's forward and backward (its gathers' bookkeeping, the 16-bit conversions and the
  // issue of its reductions included) over the step's micro-steps, and the optimizer (the
  // gradient norm, the update, the rounding to 16 bits). The rest of compute_seconds is
  // drawing samples and the loss.
  std::vector<double> unit_forward_seconds, unit_backward_seconds;
  double optimizer_seconds = 0.0;
  bool stop_requested = false;  // a rank asked to stop at this step: the same on all
};

// A contiguous range of the flat parameter layout.
struct FlatRange {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

// What a checkpoint must keep besides the weights and moments to resume bitwise.
struct EngineState {
  std::int64_t step = 0;           // optimizer steps taken (the optimizer's t)
  std::uint64_t samples_done = 0;  // the data position: samples consumed by all ranks
  float loss_scale = 1.0f;
  int good_steps = 0;  // steps since the loss scale last changed
  // Steps run, those fp16 skipped for an overflow included: the run's step, which the
  // learning-rate schedule and the steps left count. Equal to `step` until a skip; never less.
  std::int64_t run_step = 0;
};

// The model's view of a batch of drawn samples.
inline model::MicroBatch micro_batch_of(const data::Batch& batch, float grad_scale = 1.0f) {
  return {.samples = batch.samples,
          .tokens = batch.tokens,
          .inputs = batch.inputs,
          .targets = batch.targets,
          .grad_scale = grad_scale};
}

class Engine {
 public:
  // step() draws its samples from `samples` (which must outlive the engine): at the start of
  // optimizer step t with micro-step k, the stream has reached S = samples consumed so far,
  // and rank r takes the train samples [S + r*B, S + (r+1)*B); the stream then advances by
  // N*B. Any N continues a stream where another N left it.
  Engine(model::Model& model, comm::Communicator& comm, const data::SampleSource& samples,
         const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // One optimizer step: grad_accum micro-batches forward and backward, then the update.
  // stop_requested, when given, is asked just before the step's scalar all-reduce (after the
  // backward pass, so a request made during the step's compute counts for this step); the
  // step itself is taken in full either way, and the result says whether any rank asked.
  StepResult step(float lr, const std::function<bool()>& stop_requested = {});

  // Mean loss over ranks of forward passes on the given micro-batch (no gradients); every
  // rank passes its own batch (e.g. drawn from the validation split). Collective at stage 3 (params
  // are gathered).
  float evaluate(const model::MicroBatch& batch);

  // Completes collectives still in flight (param gathers overlapped into the next step).
  void flush();

  // The threads this rank splits its engine's elementwise passes over: the 16-bit params turned
  // into the fp32 views the model reads, the optimizer's step, and the update rounded to 16 bits
  // (the gradient norm stays on the rank's thread: its sum has one order). 1 (the default) uses the
  // rank's thread alone; more, for a rank alone on several cores (with its model's threads,
  // GptModel::set_threads), run those passes on a pool of its own. The bits do not depend on
  // it: each element is computed as on one thread. ZERODP_CHECK threads >= 1.
  void set_threads(int threads);

  // The full fp32 master weights, on every rank (collective). For export and tests: it holds
  // a full copy on every rank.
  std::vector<float> gather_master();
  // SHA-256 (lowercase hex) of the fp32 master weights in flat-layout order, little-endian: the
  // bytes gather_master() returns, hashed, on every rank (collective). It streams: bucket by
  // bucket, the chunks are all-gathered in rank order into the engine's fp32 scratch (held
  // already, counted in the ledger), so no rank ever holds a full copy.
  std::string weights_sha256();

  // Checkpoints. The ranges this rank owns (its chunk of every bucket, in bucket order, empty
  // chunks included, so every rank lists as many): together they tile the layout once,
  // whatever the stage.
  std::vector<FlatRange> owned_ranges() const;
  // The fp32 master weights of the owned ranges, in range order, as views of the engine's own
  // buffers (no copy: a checkpoint streams them to disk), valid until the next step or import.
  struct OwnedChunk {
    std::span<const float> master;
  };
  std::vector<OwnedChunk> owned_chunks();
  // Slot k of owned range `chunk`, its values from element `from` on, as fp32: a copy of the fp32
  // slot, or 8-bit states dequantized (map[code] x absmax, what the step computes with).
  // Requires k below the rule's slot count and from + out.size() within the range.
  void read_slot(std::size_t chunk, std::size_t k, std::size_t from, std::span<float> out);
  // Loads the weights and slots this rank needs — every range at stage 0, its own chunks
  // otherwise — through read(range, master, slot0, slot1), which fills count values of each
  // non-null pointer (the slots beyond the rule's count are null); then
  // rebuilds the 16-bit params (collective at stages 1 and 2) and restores the state. The
  // partition of the run that saved them does not matter: a checkpoint can be read at any
  // N and stage. 8-bit slots are read as the dequantized values read_slot() gave, a whole block
  // at a time, and quantized back to the codes and absmax that give exactly those values
  // (optim::recover_block); values no quantization gives throw Error.
  using RangeReader =
      std::function<void(FlatRange range, float* master, float* slot0, float* slot1)>;
  void import_state(const RangeReader& read, const EngineState& state);
  // A model with frozen parameters (model.h; a LoRA model's base): loads them through
  // read(range, values, nullptr, nullptr) over the frozen layout — every range at stages 0-2,
  // this rank's chunks at stage 3 — rounded to the 16-bit precision, as a run computes with
  // its master. Until then they are the model's init_frozen_unit(). Not collective; the
  // frozen params are never written by a step or a checkpoint.
  void import_frozen(const RangeReader& read);
  EngineState state() const;

  // Updates taken: the optimizer's t (EngineState::step), which a skipped step leaves as it was.
  std::int64_t steps_done() const;
  const Ledger& ledger() const;
  // The stats of the collectives the engine issued: its communicator's and, with hpZ, its
  // host group's (comm::Stats::operator+=).
  comm::Stats comm_stats() const;
  const EngineOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerodp::zero

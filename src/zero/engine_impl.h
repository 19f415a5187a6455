// The engine's state and the steps' parts, shared by the files that implement zero::Engine
// (engine.cc: construction and the step; engine_state.cc: the state as checkpoints, hashes and
// gathers see it). Internal to src/zero/.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "zero/grad_reducer.h"
#include "zero/host_groups.h"
#include "zero/param_gatherer.h"
#include "zerodp/common/blockwise_layout.h"
#include "zerodp/common/factored_layout.h"
#include "zerodp/common/lane_pool.h"
#include "zerodp/common/partition.h"
#include "zerodp/optim/adafactor.h"
#include "zerodp/zero/engine.h"

namespace zerodp::zero {

// What the ranks agree on at each step besides the loss and the norm.
struct Flags {
  bool overflow = false;  // some rank's gradient chunk holds a non-finite value
  bool stop = false;      // some rank asked to stop after this step
};

// Each tensor of the units in flat-layout order, as the optimizers' layouts see them: a unit's
// elements no tensor names count as one more tensor (a unit's tensors need not list every
// element), a tensor of two dimensions of at least 2 x 2 is a matrix (with its columns), any
// other a vector (engine_factored.cc).
std::vector<TensorDims> flat_tensors(const std::vector<model::UnitInfo>& units);

struct Engine::Impl {
  Impl(model::Model& m, comm::Communicator& c, const data::SampleSource& s, const EngineOptions& o);

  // Where this rank keeps the model state (see the table in engine.h): whole, or its chunks.
  bool full_params() const { return !sharding(opt.stage).parameters; }
  bool full_grads() const { return !sharding(opt.stage).gradients; }
  bool full_optimizer() const { return !sharding(opt.stage).optimizer_states; }

  void init_weights();
  // A blockwise rule's layout and buffers (engine_blockwise.cc).
  void allocate_blockwise();
  // The 16-bit params from the fp32 master, rounded (after a load; update() rounds as it
  // goes). Unsharded params are all-gathered in place; overlap_gathers leaves those gathers in
  // flight in param_gathers, for each unit to wait on before it computes.
  void rebuild_params16(bool overlap_gathers);
  // Where the rounding of the master elements of `bucket` this rank updates goes in params16.
  std::uint16_t* own_params16(const Bucket& bucket);
  // Stages 1 and 2: all-gathers the bucket's 16-bit params in place, from every rank's chunk.
  void publish_params16(const Bucket& bucket, bool overlap_gathers);
  void wait_param_gathers(int unit);
  // The 16-bit params of a unit, ready for compute (stage 3: gathered beforehand).
  const std::uint16_t* params16_of(int unit) const;
  // fp32 views of a unit's params (and of the units it reads), and in backward of the
  // gradients they accumulate into; and of their frozen params, when the model has them.
  model::UnitViews views(int unit, bool with_grads);
  // The frozen params: allocated (whole, or this rank's chunks at stage 3) and initialised from
  // the model (engine_frozen.cc).
  void allocate_frozen();
  void init_frozen();
  // The 16-bit frozen params of a unit, ready for compute (stage 3: gathered beforehand).
  const std::uint16_t* frozen16_of(int unit) const;
  bool has_frozen() const { return frozen_part.total > 0; }
  // With unit_seconds, adds each unit's compute seconds (ComputeClock) into it.
  void forward_pass(std::vector<double>* unit_seconds = nullptr);
  void backward_pass(bool first_micro, bool last_micro, std::vector<double>* unit_seconds);
  // Returns {sum of squares, non-finite count} of this rank's own reduced gradient chunk.
  std::pair<double, double> local_grad_stats() const;
  void update(float lr, float grad_mul);
  // update() for a rule with 8-bit block-wise slots (engine_blockwise.cc): the edges' maxima
  // first, exchanged when a block straddles ranks, then every piece of layout8.
  void update_blockwise(float lr, float grad_mul);
  // Slot k's values at master elements [at, at + out.size()), dequantized.
  void read_blockwise(std::size_t k, std::size_t at, std::span<float> out);
  // A factored rule's layout and buffers, and its step (engine_factored.cc): the matrices'
  // rows' and columns' sums, exchanged when a tensor is split, the states and factors, every
  // tensor's Σ u², exchanged likewise, then every piece's update.
  void allocate_factored();
  void update_factored(float lr, float grad_mul);
  // The split tensors' sums made whole: every holder's part of the exchange (`slab` ExactSums a
  // rank) gathered into `all`, and added into `own` (the sums, or with squares_of the Σ u²).
  void exchange_sums(optim::ExactSum* own, Buffer<optim::ExactSum>& all, std::size_t slab,
                     bool squares_of);
  // A piece's u from element `done` on, for grad.size() elements (a vector's v updated first
  // with update_v), its Σ u² added to sq when given.
  void direction(const FactoredPiece& p, std::size_t done, std::span<const float> grad,
                 float grad_mul, float* u, bool update_v, optim::AdafactorDecay decay,
                 optim::ExactSum* sq);
  // The slot's values at master elements [at, at + out.size()), as a checkpoint keeps them.
  void read_factored(std::size_t at, std::span<float> out);
  // import_state's loading of the master and the slots: fp32 slots, 8-bit ones or factored.
  void import_master(const RangeReader& read);
  void import_slots(const RangeReader& read);
  void import_blockwise(const RangeReader& read);
  void import_factored(const RangeReader& read);
  // The first master element this rank updates of a bucket, and the 16-bit grads beside it.
  std::size_t update_first(const Bucket& bucket) const;
  const std::uint16_t* update_grads(const Bucket& bucket) const;
  // All-reduces the scalars (loss, squared norm, and the flags in the third) and returns
  // whether any rank overflowed and whether any rank asked to stop.
  Flags agree_on_flags(float (&scalars)[3], bool overflow, bool stop);

  model::Model& model;
  comm::Communicator& comm;
  const data::SampleSource& samples;
  data::Batch batch;  // the current micro-batch's samples
  EngineOptions opt;
  const std::vector<model::UnitInfo>& units;
  int ranks, rank;
  Partition part;
  Ledger ledger;
  // Gives `ledger` the rank's budget, and counts the model's activations and the
  // communicator's staging in it while the engine lives (every buffer below is counted there
  // too, so they go before it).
  struct CountIn {
    CountIn(Ledger& ledger, const EngineOptions& o, model::Model& model, comm::Communicator& comm);
    ~CountIn();
    model::Model& model;
    comm::Communicator& comm;
  } count_in;

  Buffer<std::uint16_t> params16, grads16;
  Buffer<float> master;
  // The optimizer's slots, in its row's order (slots[k] empty beyond its count), each the
  // master's size and place; counted as optim_m or optim_v (holds_squares()).
  std::array<Buffer<float>, 2> slots;
  const optim::Rule& rule;
  // A blockwise rule's states instead (zerodp/common/blockwise_layout.h), m's then v's, each
  // counted as its slot: the codes, the blocks' absmax and the fp32 states of small tensors; and
  // the edge pieces' maxima, this rank's and (when blocks straddle ranks) every rank's.
  std::optional<Layout8> layout8;
  std::array<Buffer<std::uint8_t>, 2> codes8;
  std::array<Buffer<float>, 2> absmax8, states8;
  Buffer<float> edge_max, all_edge_max;
  // A factored rule's (zerodp/common/factored_layout.h): the states (counted as its slot), and in
  // scratch the factors, the sums and squares with every rank's parts of them, and each tensor's
  // divisor.
  std::optional<FactoredLayout> layoutf;
  Buffer<float> factored_states, factors, divisors;
  Buffer<optim::ExactSum> sums, squares, all_sums, all_squares;
  const optim::Hyper hyper;
  Buffer<float> param32, grad32;
  std::vector<Buffer<float>> read_grad32;  // persistent grads of units that others read
  std::vector<bool> is_read;
  // Frozen params (model.h): the units as their frozen layout sees them (param_offset and
  // param_count are the frozen ones), cut into buckets as the trained layout is; held in 16
  // bits like params16 (and counted as params16): whole at stages 0-2, this rank's chunk of
  // every bucket at stage 3. frozen32: the fp32 views of the largest unit with those it reads.
  std::vector<model::UnitInfo> frozen_units;
  Partition frozen_part;
  Buffer<std::uint16_t> frozen16;
  Buffer<float> frozen32;
  // How a unit's frozen tensors lie in its fp32 view and in its stored 16-bit words. With
  // EngineOptions::frozen_nf4 a linear weight is stored as its NF4 codes, four to a word (two
  // to a byte, as bitsandbytes packs them), and its quantization state is held whole on every
  // rank (counted as params16): with double quantization one absmax code a block in nf4_codes8
  // and, in nf4_scales, each 256 blocks' nested absmax then the offset; without, each block's
  // fp32 absmax. Otherwise a tensor is stored as its 16-bit words, as many as its elements.
  struct FrozenTensor {
    std::size_t view_offset = 0, count = 0;  // in the unit's fp32 view
    std::size_t stored_offset = 0;           // in the unit's stored words
    bool nf4 = false;
    std::size_t codes8_at = 0, scales_at = 0;  // its quantization state's first entries
  };
  std::vector<std::vector<FrozenTensor>> frozen_tensors;  // per unit
  Buffer<std::uint8_t> nf4_codes8;
  Buffer<float> nf4_scales;
  // Quantizes (or rounds to 16 bits) the unit's frozen values in frozen32's first
  // frozen_count elements, and keeps what this rank holds of them (engine_frozen.cc).
  void store_frozen_unit(std::size_t unit);
  // Calls fn(first, to, count) for each run of the unit's stored words [begin, end) this rank
  // holds: `first` unit-relative, `to` where in frozen16 it lies.
  void for_held_frozen(std::size_t unit, std::size_t begin, std::size_t end,
                       const std::function<void(std::size_t, std::uint16_t*, std::size_t)>& fn);
  // The unit's frozen fp32 values (dequantized, as they compute) from its stored words.
  void frozen_view(int unit, const std::uint16_t* from, float* to);

  // ZeRO++'s host and peers (declared before the gatherer and the reducer, which issue on them).
  HostGroups hosts;
  std::optional<ParamGatherer> gatherer;         // stage 3
  std::optional<ParamGatherer> frozen_gatherer;  // stage 3 with frozen params
  comm::Stats stats() const { return hosts.stats_with(comm); }
  std::optional<GradReducer> reducer;
  std::vector<std::vector<comm::Handle>> param_gathers;  // stages 1, 2: per unit, in flight

  optim::LossScaler scaler;
  // set_threads: fn(begin, end) over parts of [0, n), one per thread, in split().
  std::unique_ptr<LanePool> pool;
  // Parts of fewer than `worth` items run on the rank's thread alone; parts start on multiples
  // of `align` (16 floats: no two threads write one cache line).
  void split(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn,
             std::size_t worth = std::size_t{1} << 15, std::size_t align = 16);
  std::int64_t t = 0;
  std::int64_t run_step = 0;  // EngineState::run_step: t and the skipped steps
  std::uint64_t samples_done = 0;
};

}  // namespace zerodp::zero

// Model: what the ZeRO engine trains, seen as an ordered list of units over one flat layout.
//
// A unit is a layer or a block: a contiguous slice of the flat parameter layout with a
// forward and a backward. The engine never looks inside a unit; the model never knows it is
// sharded. Contract between them:
//  - Layout: units()[u] covers params [param_offset, param_offset + param_count) of the flat
//    layout; units are in forward order and tile the layout without gaps. Tensor names and
//    shapes inside a unit are for export and tests only.
//  - Parameters arrive as fp32 views (the engine converts from the 16-bit stored params and,
//    at stage 3, gathers them first). A unit may also read the parameters of EARLIER units it
//    lists in `reads` (tied weights, e.g. a GPT's LM head reading the token embedding).
//  - Steps: begin_micro_batch() takes the samples; forward(u) is called for u = 0..U-1, then
//    backward(u) for u = U-1..0. backward(u) ADDS the gradients of the loss into the fp32
//    views it is given (its own, and those of the units it reads), scaled by grad_scale, so
//    the engine can fold loss scaling and the 1/(ranks*micro-steps) mean into one factor.
//    A unit's gradients are complete after its own backward (every reader comes later in
//    forward order, hence earlier in backward order).
//  - Data: the caller hands each micro-batch's samples to begin_micro_batch() (the engine
//    draws them from a data::SampleSource, zerodp/data/samples.h); a model never knows where they
//    come from, which split they are, or which rank it runs on.
//  - Determinism: the same parameters and samples give the same bits, every call.
//  - Activations are the model's own memory, allocated through the ledger given to
//    set_ledger() (the engine's) as Category::activations, so a rank's budget covers them;
//    activation_bytes() reports what it holds.
//  - Frozen parameters (a LoRA model's base): a unit may also have frozen_count elements in a
//    second flat layout, the frozen one, which units tile in the same order. The engine holds
//    them in 16 bits (sharded and gathered like the others at stage 3) and hands them as fp32
//    views in UnitViews::frozen, laid out as `params` is (the unit, then the units it reads);
//    they have no gradients and no optimizer state, and no step changes them. A model without
//    them leaves frozen_count 0 and never reads UnitViews::frozen.
//  - Thread-safety: one Model object per rank; methods are called from that rank's thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zerodp/common/ledger.h"

namespace zerodp::model {

struct TensorInfo {
  std::string name;                // e.g. "h.0.attn.c_attn.weight"
  std::vector<std::size_t> shape;  // row-major
  std::size_t offset = 0;          // first element, relative to the unit's param_offset
  // A linear layer's weight inside the network (not an embedding, a norm, a bias or the
  // output layer): what QLoRA holds in NF4 when it is frozen (EngineOptions::frozen_nf4).
  bool linear = false;
};

struct UnitInfo {
  std::string name;
  std::size_t param_offset = 0;
  std::size_t param_count = 0;
  std::vector<TensorInfo> tensors;
  std::vector<int> reads;  // earlier units whose params this unit also reads
  // Frozen parameters: [frozen_offset, frozen_offset + frozen_count) of the frozen layout.
  std::size_t frozen_offset = 0;
  std::size_t frozen_count = 0;
  std::vector<TensorInfo> frozen_tensors;  // offsets relative to frozen_offset
};

// The elements of each unit, in layout order (what a Partition cuts).
inline std::vector<std::size_t> param_counts(const std::vector<UnitInfo>& units) {
  std::vector<std::size_t> counts;
  for (const UnitInfo& u : units) counts.push_back(u.param_count);
  return counts;
}

// The frozen elements of each unit, in layout order.
inline std::vector<std::size_t> frozen_counts(const std::vector<UnitInfo>& units) {
  std::vector<std::size_t> counts;
  for (const UnitInfo& u : units) counts.push_back(u.frozen_count);
  return counts;
}

// fp32 views handed to a unit: index 0 is the unit itself, index i is UnitInfo::reads[i-1].
struct UnitViews {
  std::vector<std::span<const float>> params;
  std::vector<std::span<float>> grads;         // only in backward; gradients are added into these
  std::vector<std::span<const float>> frozen;  // as params; empty for a model without them
};

// One micro-batch of B samples, as views the model reads during begin_micro_batch() only.
// Which views a model reads is its own contract: a token model reads `tokens` (B windows of
// seq_len + 1 tokens), a regression reads `inputs` and `targets`; the others stay empty.
struct MicroBatch {
  std::size_t samples = 0;  // B
  std::span<const std::uint8_t> tokens{};
  std::span<const float> inputs{}, targets{};
  float grad_scale = 1.0f;  // d(objective)/d(mean loss of this micro-batch)
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const std::vector<UnitInfo>& units() const = 0;
  std::size_t param_count() const {
    const auto& u = units();
    return u.empty() ? 0 : u.back().param_offset + u.back().param_count;
  }
  std::size_t frozen_count() const {
    const auto& u = units();
    return u.empty() ? 0 : u.back().frozen_offset + u.back().frozen_count;
  }

  // Fills one unit's parameters deterministically from seed, independent of ranks and stage.
  virtual void init_unit(int unit, std::span<float> params, std::uint64_t seed) const = 0;
  // The same for a unit's frozen parameters (a base as it would start training from scratch,
  // until one is loaded); a model without them is never asked.
  virtual void init_frozen_unit(int unit, std::span<float> frozen, std::uint64_t seed) const;

  virtual void begin_micro_batch(const MicroBatch& batch) = 0;
  virtual void forward(int unit, const UnitViews& views) = 0;
  // Mean loss of the current micro-batch; valid after the last unit's forward.
  virtual float loss() const = 0;
  virtual void backward(int unit, const UnitViews& views) = 0;

  // Bytes of activations and workspace the model holds for forward and backward.
  virtual std::size_t activation_bytes() const = 0;
  // Counts what the model holds and will allocate in `ledger` from now on (null: nowhere).
  // Throws BudgetExceeded, leaving the model usable, when that ledger's budget refuses what it
  // already holds. The ledger must outlive its use: the engine sets null when it goes.
  virtual void set_ledger(Ledger* ledger) = 0;
  virtual std::string describe() const = 0;
};

// Helpers that run a Model over one consolidated fp32 flat buffer of all its parameters, as a
// one-rank engine would (eval, sampling, export checks, tests).
// The frozen parameters, when the model has them, are a second consolidated buffer of
// frozen_count() elements (empty otherwise).
// flat_unit_views: the views unit u is handed over that buffer (grads empty in a forward).
UnitViews flat_unit_views(const Model& model, std::size_t u, std::span<const float> params,
                          std::span<float> grads, std::span<const float> frozen = {});
// init_all: every unit's init_unit into its slice of params (and init_frozen_unit into frozen's).
void init_all(const Model& model, std::span<float> params, std::uint64_t seed,
              std::span<float> frozen = {});
// forward_all: forward of every unit in order; returns loss(). The micro-batch must have begun.
float forward_all(Model& model, std::span<const float> params, std::span<const float> frozen = {});
// forward_all, then backward of every unit in reverse order, ADDING gradients into grads
// (same layout as params).
float forward_backward_all(Model& model, std::span<const float> params, std::span<float> grads,
                           std::span<const float> frozen = {});

}  // namespace zerodp::model

// The optimizers the engine runs: a row of the table of state slots (zerodp/common/optimizers.h)
// and one elementwise step function. The engine sizes one fp32 buffer per slot of the row,
// shards it as it shards the master, hands the step its spans, and checkpoints every slot: an
// elementwise optimizer is added as a row and a step, and nothing else in the engine changes.
//
// Contract:
//  - A step sees spans of floats and nothing else: not the rank, the stage or the span's place
//    in the model. Each element's new values depend on that element's param, gradient and
//    slots alone, computed in fp32 in a fixed order of correctly rounded operations (no FMA:
//    the build compiles with -ffp-contract=off), so a shard updated on one rank equals the same
//    elements updated by a rank that holds everything: the same bits at every stage and rank
//    count.
//  - Every slot starts at zero, as the published algorithms start theirs (torch's SGD copies
//    the first gradient into its momentum buffer: momentum × 0 + g is that copy, exactly).
//  - engine_rule() returns data made once and never changed: safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "zerodp/common/optimizers.h"

namespace zerodp::optim {

// The hyper-parameters a step reads; each rule says which (and its defaults).
struct Hyper {
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.1f;  // decoupled: applied to the parameter, not the gradient
};

// One step's views: the params, their gradients (before grad_mul) and the row's slots in the
// row's order (slot[i] empty beyond the row's slot count). All non-empty spans have one length.
struct StepSpans {
  std::span<float> param;
  std::span<const float> grad;
  std::span<float> slot[2] = {};
};
// t = 1, 2, ... counts the updates (bias corrections); grad_mul folds loss-scale removal and
// clipping into one factor applied to every gradient first.
using StepFn = void (*)(const StepSpans& spans, float grad_mul, float lr, std::int64_t t,
                        const Hyper& hyper);

// A row whose slots are 8-bit block-wise (SlotFormat::int8_blockwise) keeps them as codes and
// blocks' absmax (zerodp/optim/blockwise8.h); the engine hands its step the dequantized values of
// a piece of a block, in fp32, and quantizes what the step leaves with the whole block's maxima.
// The step itself is elementwise as any other: 8-bit Lion is Lion's step.
struct Rule {
  const OptimizerRow* row;  // what the slots hold, in what format, and the optimizer's word
  StepFn step;
  Hyper defaults;
  float default_lr;  // `zerodp train`'s --lr when none is given, for the default GPT

  // Whether the row keeps its slots 8-bit block-wise.
  bool blockwise() const {
    return !row->slots.empty() && row->slots[0].format == SlotFormat::int8_blockwise;
  }
  // Whether the row factors a slot (Adafactor's second moment): the engine then steps it by
  // tensor through zerodp/optim/adafactor.h, and `step` is unused (null).
  bool factored() const {
    for (const StateSlot& s : row->slots) {
      if (s.factored) return true;
    }
    return false;
  }
};

// The rule of an optimizer the engine runs (an fp32 master, fp32 or int8 block-wise slots and an
// elementwise step): adam, adam_8bit, lion, lion_8bit, sgd-momentum and sgd; nullptr for any
// other row.
const Rule* engine_rule(Optimizer id);
// The word a run records and prints: "adamw" for the Adam row (the engine decays decoupled),
// the row's word otherwise.
std::string_view engine_word(const OptimizerRow& row);
// "adamw, adamw-8bit, lion, lion-8bit, sgd-momentum, sgd": what `zerodp train --optimizer`
// takes.
std::string engine_optimizer_words();

// The steps, for the rules above and for tests.
//   AdamW (Loshchilov and Hutter; torch.optim.AdamW's order of operations, decay decoupled):
//     m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g²
//     p -= lr (m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps) + wd p)
//   Lion (Chen et al. 2023, Algorithm 2; lion-pytorch's order):
//     p = p (1 - lr wd);  p -= lr sign(b1 m + (1-b1) g);  m = b2 m + (1-b2) g
//   SGD with momentum (torch.optim.SGD, dampening 0, not Nesterov, no weight decay):
//     buf = momentum buf + g;  p -= lr buf      (momentum is Hyper::beta1)
//   SGD: p -= lr g
void adamw_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& h);
void lion_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& h);
void sgd_momentum_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t,
                       const Hyper& h);
void sgd_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& h);
// 8-bit AdamW's arithmetic on dequantized states, in the order of bitsandbytes' CPU kernel
// (backends/cpu/ops.py), which differs from adamw_step's:
//   g = grad * grad_mul;  m = m b1 + (1 - b1) g;  v = v b2 + ((1 - b2) g) g
//   p = p (1 - lr wd);    p = p + ((-lr / (1 - b1^t)) m) / (sqrt(v) / sqrt(1 - b2^t) + eps)
// the per-step scalars in double, rounded to fp32 once. (8-bit Lion's kernel is lion_step's.)
void adamw8_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& h);

}  // namespace zerodp::optim

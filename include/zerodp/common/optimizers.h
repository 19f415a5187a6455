// The optimizers zerodp counts, as one table of state slots, in the lowest part as the stage
// is: the planner's bytes per parameter and every name a user types (--optimizer, the Hugging
// Face Trainer's `optim`, a DeepSpeed config's optimizer.type) read the row, so an optimizer is
// added as a row, never as a branch in each part that counts bytes.
//
// A row says, for each slot of state the optimizer keeps per parameter element, what it holds
// and in which format:
//   fp32 (4 bytes), bf16 (2), or int8 block-wise: one byte an element and one fp32 absmax for
//   each run of `block` elements (bitsandbytes' dynamic block-wise quantization, 256 elements
//   a block), a tensor smaller than `min_quantized` elements keeping that slot in fp32;
// and whether the optimizer keeps an fp32 master copy of the params under mixed precision
// (every row but pure-bf16 AdamW, whose params are its only copy).
//
// How a row is counted (plan/memory.h): over one flat fp32 partition per rank, which is what
// DeepSpeed hands its optimizer at every stage (bf16 and fp16 stage 0 flatten too), what
// FSDP's flat parameters hand it, and what zerodp's engine holds. On a flat tensor Adafactor's
// second moment cannot be factored (the factors need a matrix's rows and columns): it is one
// fp32 per element, as transformers' Adafactor keeps it for a 1-D tensor.
//
// Contract: constexpr data and pure lookups, safe from any thread. Every row has a unique word;
// every name maps to one row; names are matched case-insensitively, '-' and '_' alike.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace zerodp {

enum class Optimizer : std::uint8_t {
  adam,                  // Adam and AdamW: fp32 m and v
  adam_8bit,             // bitsandbytes' 8-bit AdamW: int8 block-wise m and v
  paged_adam_8bit,       // the same, its states in CUDA unified memory (paged)
  adam_bf16,             // pure-bf16 AdamW: bf16 params are the master, bf16 m and v
  adam_8bit_bf16,        // 8-bit AdamW on bf16 params: no fp32 master, int8 block-wise m and v
  paged_adam_8bit_bf16,  // the same, paged (torchtune's single-device full fine-tunes)
  adafactor,             // Adafactor without a first moment (the Trainer's): v
  adafactor_beta1,       // Adafactor with a first moment (beta1 set): m and v
  lion,                  // Lion: fp32 m
  lion_8bit,             // bitsandbytes' 8-bit Lion: int8 block-wise m
  lamb,                  // LAMB: fp32 m and v
  adagrad,               // Adagrad: fp32 sum of squares
  rmsprop,               // RMSprop without momentum: fp32 square average
  sgd_momentum,          // SGD with momentum: fp32 momentum
  sgd,                   // SGD: no state
};

enum class SlotFormat : std::uint8_t { fp32, bf16, int8_blockwise };

struct StateSlot {
  std::string_view holds;  // "m (first moment)", "v (second moment)"
  SlotFormat format;
  // Adafactor's second moment: on a matrix the published algorithm keeps its rows' and
  // columns' means instead (R + C values for R x C), and zerodp's engine does
  // (zerodp/common/factored_layout.h); on a flat partition, as counted here, it is one value an
  // element.
  bool factored = false;
};

struct OptimizerRow {
  Optimizer id;
  std::string_view word;       // what --optimizer takes first and JSON prints: "adamw-8bit"
                               // ("adam" for Adam and AdamW, whose bytes are the same)
  std::string_view described;  // "8-bit AdamW (bitsandbytes, block-wise)"
  bool fp32_master;            // an fp32 master copy under mixed precision
  bool pure_bf16;              // needs bf16 params and grads (no master at all)
  std::span<const StateSlot> slots;
  std::uint32_t block = 0;          // int8 slots: elements per absmax
  std::uint64_t min_quantized = 0;  // int8 slots: smaller tensors keep them in fp32
  // Temporaries of the step, in fp32 copies of the tensor it steps (transformers' Adafactor
  // makes two; bitsandbytes' kernels and SGD none). Adam's rows leave them to the
  // implementation (DeepSpeed's FusedAdam, torch's foreach or single: deepspeed/runtime.h).
  std::uint32_t step_copies = 0;
  std::string_view source;  // where the state's layout is published
};

// Every row, in the order of Optimizer.
std::span<const OptimizerRow> optimizer_rows();
const OptimizerRow& optimizer_row(Optimizer id);

// Whether a slot holds squares of gradients (Adam's v, Adagrad's sum, RMSprop's average): the
// ledger counts such a slot as optim_v, every other as optim_m.
bool holds_squares(const StateSlot& slot);

// Bytes per element of a slot's format, and the bytes of its block constants per block.
std::uint32_t slot_element_bytes(SlotFormat format);

// How a name a user typed reads: the row, and, for an AdamW name that chooses one, how its step
// is computed (the Trainer's adamw_torch_fused is fused, adamw_torch foreach, adamw_hf single).
enum class StepImpl : std::uint8_t { unstated, fused, foreach, single };
struct OptimizerName {
  std::string_view name;  // as the source spells it
  Optimizer id;
  StepImpl impl = StepImpl::unstated;
};

// The name's row, from zerodp's words, the Trainer's `optim` names and DeepSpeed's
// optimizer.type values; nullopt for any other.
std::optional<OptimizerName> optimizer_from_name(std::string_view name);

// Why a known optimizer cannot be counted, for the names of optimizers zerodp knows of but
// does not count (GaLore, 1-bit Adam, ...): "its state depends on a projection rank ...";
// empty for a name it counts or does not know.
std::string uncounted_optimizer(std::string_view name);

// The words --optimizer lists in its help and errors: "adamw, adamw-8bit, ...".
std::string optimizer_words();

}  // namespace zerodp

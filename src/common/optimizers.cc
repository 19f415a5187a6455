#include "zerodp/common/optimizers.h"

#include <array>
#include <cctype>

namespace zerodp {
namespace {

constexpr StateSlot kMV[] = {{"m (first moment)", SlotFormat::fp32},
                             {"v (second moment)", SlotFormat::fp32}};
constexpr StateSlot kMV8[] = {{"m (first moment)", SlotFormat::int8_blockwise},
                              {"v (second moment)", SlotFormat::int8_blockwise}};
constexpr StateSlot kMVbf16[] = {{"m (first moment)", SlotFormat::bf16},
                                 {"v (second moment)", SlotFormat::bf16}};
constexpr StateSlot kV[] = {
    {"v (second moment, unfactored on a flat tensor)", SlotFormat::fp32, true}};
constexpr StateSlot kMVfactor[] = {
    {"m (first moment)", SlotFormat::fp32},
    {"v (second moment, unfactored on a flat tensor)", SlotFormat::fp32, true}};
constexpr StateSlot kM[] = {{"m (momentum)", SlotFormat::fp32}};
constexpr StateSlot kM8[] = {{"m (momentum)", SlotFormat::int8_blockwise}};
constexpr StateSlot kSum[] = {{"sum of squared gradients", SlotFormat::fp32}};
constexpr StateSlot kSquareAvg[] = {{"square average", SlotFormat::fp32}};
constexpr StateSlot kMomentum[] = {{"momentum buffer", SlotFormat::fp32}};

// bitsandbytes' block-wise optimizers: 256 elements an absmax, and tensors under 4096 elements
// in 32 bits (bitsandbytes/optim/optimizer.py: Optimizer2State/Optimizer1State.init_state,
// min_8bit_size=4096).
constexpr std::uint32_t kBnbBlock = 256;
constexpr std::uint64_t kBnbMin8bit = 4096;
constexpr std::string_view kBnb = "bitsandbytes/optim/optimizer.py (init_state)";

constexpr std::array<OptimizerRow, 15> kRows = {{
    {Optimizer::adam, "adam", "Adam", true, false, kMV, 0, 0, 0, "torch/optim/adamw.py"},
    {Optimizer::adam_8bit, "adamw-8bit", "8-bit AdamW (bitsandbytes, block-wise)", true, false,
     kMV8, kBnbBlock, kBnbMin8bit, 0, kBnb},
    {Optimizer::paged_adam_8bit, "paged-adamw-8bit",
     "paged 8-bit AdamW (bitsandbytes; states in unified memory, counted on the GPU)", true, false,
     kMV8, kBnbBlock, kBnbMin8bit, 0, kBnb},
    {Optimizer::adam_bf16, "adamw-bf16", "pure-bf16 AdamW (no fp32 master; bf16 m and v)", false,
     true, kMVbf16, 0, 0, 0, "torchtune full fine-tunes (dtype bf16, torch.optim.AdamW)"},
    {Optimizer::adam_8bit_bf16, "adamw-8bit-bf16",
     "8-bit AdamW on bf16 params (bitsandbytes, block-wise; no fp32 master)", false, true, kMV8,
     kBnbBlock, kBnbMin8bit, 0,
     "torchtune full fine-tunes (dtype bf16, bitsandbytes.optim.AdamW8bit)"},
    {Optimizer::paged_adam_8bit_bf16, "paged-adamw-8bit-bf16",
     "paged 8-bit AdamW on bf16 params (bitsandbytes; no fp32 master, states in unified memory, "
     "counted on the GPU)",
     false, true, kMV8, kBnbBlock, kBnbMin8bit, 0,
     "torchtune's single-device full fine-tunes (dtype bf16, bitsandbytes.optim.PagedAdamW8bit)"},
    {Optimizer::adafactor, "adafactor", "Adafactor (no first moment)", true, false, kV, 0, 0, 2,
     "transformers/optimization.py (Adafactor, beta1=None)"},
    {Optimizer::adafactor_beta1, "adafactor-beta1", "Adafactor with a first moment", true, false,
     kMVfactor, 0, 0, 2, "transformers/optimization.py (Adafactor, beta1 set)"},
    {Optimizer::lion, "lion", "Lion", true, false, kM, 0, 0, 0,
     "bitsandbytes Lion (optim_bits=32), lion-pytorch"},
    {Optimizer::lion_8bit, "lion-8bit", "8-bit Lion (bitsandbytes, block-wise)", true, false, kM8,
     kBnbBlock, kBnbMin8bit, 0, kBnb},
    {Optimizer::lamb, "lamb", "LAMB", true, false, kMV, 0, 0, 0,
     "deepspeed/ops/lamb/fused_lamb.py"},
    {Optimizer::adagrad, "adagrad", "Adagrad", true, false, kSum, 0, 0, 0,
     "torch/optim/adagrad.py"},
    {Optimizer::rmsprop, "rmsprop", "RMSprop", true, false, kSquareAvg, 0, 0, 0,
     "torch/optim/rmsprop.py"},
    {Optimizer::sgd_momentum, "sgd-momentum", "SGD with momentum", true, false, kMomentum, 0, 0, 0,
     "torch/optim/sgd.py"},
    {Optimizer::sgd, "sgd", "SGD", true, false, {}, 0, 0, 0, "torch/optim/sgd.py"},
}};

// Every name, zerodp's words first (the first of a row is its word), then the Trainer's
// `optim` values (transformers/training_args.py, OptimizerNames) and DeepSpeed's
// optimizer.type values (deepspeed/runtime/config.py), lower case.
constexpr OptimizerName kNames[] = {
    {"adam", Optimizer::adam},
    {"adamw", Optimizer::adam},
    {"adamw-8bit", Optimizer::adam_8bit},
    {"paged-adamw-8bit", Optimizer::paged_adam_8bit},
    {"adamw-bf16", Optimizer::adam_bf16},
    {"adamw-8bit-bf16", Optimizer::adam_8bit_bf16},
    {"paged-adamw-8bit-bf16", Optimizer::paged_adam_8bit_bf16},
    {"adafactor", Optimizer::adafactor},
    {"adafactor-beta1", Optimizer::adafactor_beta1},
    {"lion", Optimizer::lion},
    {"lion-8bit", Optimizer::lion_8bit},
    {"lamb", Optimizer::lamb},
    {"adagrad", Optimizer::adagrad},
    {"rmsprop", Optimizer::rmsprop},
    {"sgd-momentum", Optimizer::sgd_momentum},
    {"sgd", Optimizer::sgd},
    // The Trainer's.
    {"adamw_torch", Optimizer::adam, StepImpl::foreach},
    {"adamw_torch_fused", Optimizer::adam, StepImpl::fused},
    {"adamw_hf", Optimizer::adam, StepImpl::single},
    {"adamw_apex_fused", Optimizer::adam, StepImpl::fused},
    {"adamw_torch_xla", Optimizer::adam, StepImpl::foreach},
    {"adamw_bnb_8bit", Optimizer::adam_8bit},
    {"adamw_8bit", Optimizer::adam_8bit},
    {"paged_adamw_8bit", Optimizer::paged_adam_8bit},
    {"paged_adamw_32bit", Optimizer::adam, StepImpl::fused},
    {"lion_8bit", Optimizer::lion_8bit},
    {"paged_lion_8bit", Optimizer::lion_8bit},
    {"lion_32bit", Optimizer::lion},
    {"paged_lion_32bit", Optimizer::lion},
    {"rmsprop_bnb_32bit", Optimizer::rmsprop},
    // DeepSpeed's.
    {"fusedadam", Optimizer::adam, StepImpl::fused},
    {"cpuadam", Optimizer::adam, StepImpl::fused},
    {"fusedlamb", Optimizer::lamb},
    {"muadam", Optimizer::adam},
    {"muadamw", Optimizer::adam},
};

// Names of optimizers zerodp knows of and does not count, with why.
struct Uncounted {
  std::string_view name;
  std::string_view why;
};
constexpr Uncounted kUncounted[] = {
    {"onebitadam",
     "1-bit Adam keeps error-feedback buffers whose size depends on the compression stage"},
    {"zerooneadam", "0/1 Adam keeps error-feedback buffers zerodp does not count"},
    {"onebitlamb", "1-bit LAMB keeps error-feedback buffers zerodp does not count"},
    {"galore_adamw", "GaLore's state depends on its projection rank and target modules"},
    {"galore_adamw_8bit", "GaLore's state depends on its projection rank and target modules"},
    {"galore_adafactor", "GaLore's state depends on its projection rank and target modules"},
    {"adamw_anyprecision", "AnyPrecisionAdamW's state formats are set by its own arguments"},
    {"adamw_torch_4bit", "torchao's 4-bit AdamW is not counted yet"},
    {"adamw_torch_8bit", "torchao's 8-bit AdamW (its own block size) is not counted yet"},
    {"ademamix", "AdEMAMix keeps a third moment zerodp does not count yet"},
    {"ademamix_8bit", "AdEMAMix keeps a third moment zerodp does not count yet"},
    {"paged_ademamix_8bit", "AdEMAMix keeps a third moment zerodp does not count yet"},
    {"paged_ademamix_32bit", "AdEMAMix keeps a third moment zerodp does not count yet"},
    {"rmsprop_bnb", "bitsandbytes' RMSprop's bits are set by its own arguments"},
    {"rmsprop_bnb_8bit", "8-bit RMSprop is not counted yet"},
    {"lomo", "LOMO fuses the step into the backward: no optimizer state to count"},
    {"adalomo", "AdaLomo fuses the step into the backward: no optimizer state to count"},
    {"sgd_momentum_bnb", "bitsandbytes' SGD is not counted yet"},
};

// Lower case, '_' as '-': "AdamW_8bit" and "adamw-8bit" read alike.
std::string normalized(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (const char c : name) {
    out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

std::span<const OptimizerRow> optimizer_rows() {
  return kRows;
}

const OptimizerRow& optimizer_row(Optimizer id) {
  return kRows[static_cast<std::size_t>(id)];
}

bool holds_squares(const StateSlot& slot) {
  return slot.holds.starts_with("v (") || slot.holds.starts_with("sum of squared") ||
         slot.holds.starts_with("square average");
}

std::uint32_t slot_element_bytes(SlotFormat format) {
  switch (format) {
    case SlotFormat::fp32:
      return 4;
    case SlotFormat::bf16:
      return 2;
    case SlotFormat::int8_blockwise:
      return 1;
  }
  return 4;
}

std::optional<OptimizerName> optimizer_from_name(std::string_view name) {
  const std::string wanted = normalized(name);
  for (const OptimizerName& n : kNames) {
    if (normalized(n.name) == wanted) return n;
  }
  return std::nullopt;
}

std::string uncounted_optimizer(std::string_view name) {
  const std::string wanted = normalized(name);
  for (const Uncounted& u : kUncounted) {
    if (normalized(u.name) == wanted) return std::string(u.why);
  }
  return {};
}

std::string optimizer_words() {
  std::string words;
  for (const OptimizerRow& row : kRows) {
    if (!words.empty()) words += ", ";
    words += row.word;
  }
  return words;
}

}  // namespace zerodp

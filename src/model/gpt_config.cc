// The GPT's configuration, its flat layout (units and tensors) and its initialisation.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "model/gpt_tensors.h"
#include "zerodp/common/error.h"
#include "zerodp/common/rng.h"
#include "zerodp/model/gpt.h"

namespace zerodp::model {

namespace {

constexpr int kMaxLayers = 1024;
constexpr int kMaxHidden = 1 << 16;
constexpr int kMaxSeqLen = 1 << 16;

void check_range(const char* field, int value, int lo, int hi) {
  if (value < lo || value > hi) {
    throw InvalidArgument(field, field_ref(field) + " must be an integer from " +
                                     std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
                                     std::to_string(value));
  }
}

}  // namespace

void GptConfig::validate() const {
  check_range("layers", layers, 1, kMaxLayers);
  check_range("heads", heads, 1, kMaxHidden);
  check_range("hidden", hidden, 1, kMaxHidden);
  check_range("seq_len", seq_len, 1, kMaxSeqLen);
  if (hidden % heads != 0) {
    throw InvalidArgument("hidden", field_ref("hidden") + " must be divisible by " +
                                        field_ref("heads") +
                                        " (each head gets hidden/heads channels), got " +
                                        field_ref("hidden") + " " + std::to_string(hidden) + " " +
                                        field_ref("heads") + " " + std::to_string(heads));
  }
  if (vocab != 256) {
    throw InvalidArgument(
        "vocab", "vocab must be 256 (the model reads bytes), got " + std::to_string(vocab));
  }
  if (lora_rank == 0) return;
  // A rank above the narrowest side of a projection (C) adds nothing a full update lacks.
  check_range("lora_rank", lora_rank, 0, hidden);
  if (!(lora_alpha > 0.0f) || !std::isfinite(lora_alpha)) {
    throw InvalidArgument("lora_alpha", field_ref("lora_alpha") +
                                            " must be a finite number above 0, got " +
                                            std::to_string(lora_alpha));
  }
  if (lora_targets == 0 || (lora_targets & ~unsigned{kLoraAllTargets}) != 0) {
    throw InvalidArgument("lora_targets",
                          field_ref("lora_targets") +
                              " must name at least one of attn.c_attn, attn.c_proj, mlp.c_fc and "
                              "mlp.c_proj");
  }
}

const char* lora_target_name(int i) {
  static constexpr const char* kNames[kLoraTargets] = {"attn.c_attn", "attn.c_proj", "mlp.c_fc",
                                                       "mlp.c_proj"};
  ZERODP_CHECK(i >= 0 && i < kLoraTargets);
  return kNames[i];
}

namespace {

// Inputs and outputs of the projection LoRA target i adapts.
struct LoraShape {
  std::size_t in, out;
};
LoraShape lora_shape(int i, std::size_t C) {
  switch (i) {
    case 0:
      return {C, 3 * C};
    case 1:
      return {C, C};
    case 2:
      return {C, 4 * C};
    default:
      return {4 * C, C};
  }
}

std::size_t lora_target_count(unsigned targets) {
  std::size_t n = 0;
  for (int i = 0; i < kLoraTargets; ++i) n += (targets >> i) & 1u;
  return n;
}

}  // namespace

std::size_t GptConfig::lora_param_count() const {
  if (lora_rank == 0) return 0;
  std::size_t per_layer = 0;
  for (int i = 0; i < kLoraTargets; ++i) {
    if ((lora_targets >> i) & 1u) {
      const LoraShape shape = lora_shape(i, std::size_t(hidden));
      per_layer += std::size_t(lora_rank) * (shape.in + shape.out);
    }
  }
  return std::size_t(layers) * per_layer;
}

std::size_t GptConfig::param_count() const {
  const std::size_t L = layers, C = hidden, T = seq_len, V = vocab;
  return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C;
}

std::size_t GptConfig::activation_bytes(std::size_t micro_batch) const {
  const std::size_t L = layers, C = hidden, T = seq_len, V = vocab, NH = heads;
  const std::size_t BT = micro_batch * T;
  const std::size_t sets = checkpoint_activations ? 1 : L;
  const std::size_t floats = BT * ((L + 1) * C                     // block inputs, final's input
                                   + sets * (15 * C + 4 + NH * T)  // block internals
                                   + (C + 2 * V + 3)               // ln_f, logits, probs, losses
                                   + (10 * C + V)) +               // backward scratch
                             T * T;                                // attention backward scratch
  const std::size_t lora =
      lora_rank == 0 ? 0
                     : BT * std::size_t(lora_rank) * (sets * lora_target_count(lora_targets) + 1);
  return 4 * (floats + lora) + 2 * BT;  // + tokens and targets
}

std::size_t GptConfig::gemm_scratch_floats(std::size_t rows) const {
  if (compute == Compute::fp32) return 0;
  const std::size_t C = hidden, T = seq_len, V = vocab, R = rows;
  // Left operands: a matmul's input [R, C] or [R, 4C], an output gradient [R, OC] with OC up to
  // max(4C, V); attention's probabilities or their gradient, at most T x T. Right operands: a
  // weight [OC, C] or [C, 4C]; in the weight gradient the input [R, C] or [R, 4C]; attention's
  // q, k, v or output gradient of one head, T x HS, at most T C <= 4 R C.
  return std::max(R * std::max(4 * C, V), T * T) + std::max({4 * C * C, V * C, 4 * R * C});
}

std::string GptConfig::describe() const {
  std::string s = "GPT-2 (byte-level): " + std::to_string(layers) + " layers, " +
                  std::to_string(heads) + " heads, hidden " + std::to_string(hidden) +
                  ", context " + std::to_string(seq_len) + ", vocab " + std::to_string(vocab);
  if (lora_rank == 0) return s;
  char alpha[32];
  std::snprintf(alpha, sizeof alpha, "%g", double(lora_alpha));
  s += ", LoRA rank " + std::to_string(lora_rank) + " alpha " + alpha + " on";
  const char* sep = " ";
  for (int i = 0; i < kLoraTargets; ++i) {
    if ((lora_targets >> i) & 1u) {
      s += sep;
      s += lora_target_name(i);
      sep = ", ";
    }
  }
  return s;
}

namespace {

UnitInfo make_unit(std::string name, std::vector<int> reads = {}) {
  UnitInfo unit;
  unit.name = std::move(name);
  unit.reads = std::move(reads);
  return unit;
}

void add_tensor(UnitInfo& unit, std::string name, std::vector<std::size_t> shape,
                bool linear = false) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  unit.tensors.push_back({std::move(name), std::move(shape), unit.param_count, linear});
  unit.param_count += n;
}

}  // namespace

std::vector<UnitInfo> gpt_units(const GptConfig& config) {
  std::vector<UnitInfo> units = gpt_base_units(config);
  if (config.lora_rank == 0) return units;
  const std::size_t R = std::size_t(config.lora_rank), C = std::size_t(config.hidden);
  std::size_t offset = 0, frozen_offset = 0;
  for (std::size_t u = 0; u < units.size(); ++u) {
    UnitInfo& unit = units[u];
    unit.frozen_tensors = std::move(unit.tensors);
    unit.frozen_count = unit.param_count;
    unit.frozen_offset = frozen_offset;
    frozen_offset += unit.frozen_count;
    unit.tensors.clear();
    unit.param_count = 0;
    const bool block = u >= 1 && u + 1 < units.size();
    for (int i = 0; block && i < kLoraTargets; ++i) {
      if (((config.lora_targets >> i) & 1u) == 0) continue;
      const LoraShape shape = lora_shape(i, C);
      const std::string name = unit.name + "." + lora_target_name(i);
      add_tensor(unit, name + ".lora_A.weight", {R, shape.in});
      add_tensor(unit, name + ".lora_B.weight", {shape.out, R});
    }
    unit.param_offset = offset;
    offset += unit.param_count;
  }
  return units;
}

std::vector<UnitInfo> gpt_base_units(const GptConfig& config) {
  const std::size_t L = config.layers, C = config.hidden, T = config.seq_len, V = config.vocab;
  std::vector<UnitInfo> units;

  UnitInfo embeddings = make_unit("embeddings");
  add_tensor(embeddings, "wte.weight", {V, C});  // kWte
  add_tensor(embeddings, "wpe.weight", {T, C});  // kWpe
  units.push_back(std::move(embeddings));

  for (std::size_t l = 0; l < L; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    UnitInfo block = make_unit("h." + std::to_string(l));
    add_tensor(block, h + "ln_1.weight", {C});
    add_tensor(block, h + "ln_1.bias", {C});
    add_tensor(block, h + "attn.c_attn.weight", {3 * C, C}, true);
    add_tensor(block, h + "attn.c_attn.bias", {3 * C});
    add_tensor(block, h + "attn.c_proj.weight", {C, C}, true);
    add_tensor(block, h + "attn.c_proj.bias", {C});
    add_tensor(block, h + "ln_2.weight", {C});
    add_tensor(block, h + "ln_2.bias", {C});
    add_tensor(block, h + "mlp.c_fc.weight", {4 * C, C}, true);
    add_tensor(block, h + "mlp.c_fc.bias", {4 * C});
    add_tensor(block, h + "mlp.c_proj.weight", {C, 4 * C}, true);
    add_tensor(block, h + "mlp.c_proj.bias", {C});
    units.push_back(std::move(block));
  }

  UnitInfo final_unit = make_unit("final", {0});
  add_tensor(final_unit, "ln_f.weight", {C});
  add_tensor(final_unit, "ln_f.bias", {C});
  units.push_back(std::move(final_unit));

  std::size_t offset = 0;
  for (auto& unit : units) {
    unit.param_offset = offset;
    offset += unit.param_count;
  }
  return units;
}

// GPT-2's initialisation: weights N(0, 0.02), the two projections into the residual stream
// N(0, 0.02 / sqrt(2 L)), biases 0, LayerNorm weights 1. Element j of unit u is
// counter_normal(seed, u, j) (common/rng.h) times its standard deviation: no element depends
// on another's draw, on the rank or on the stage.
namespace {

void init_base_unit(const GptConfig& config, const UnitInfo& info, int unit,
                    std::span<float> params, std::uint64_t seed) {
  ZERODP_CHECK(params.size() == info.param_count);
  const auto stream = static_cast<std::uint64_t>(unit);
  const double std_weight = 0.02;
  const double std_residual = 0.02 / std::sqrt(2.0 * config.layers);
  const bool block = unit >= 1 && unit <= config.layers;
  for (std::size_t t = 0; t < info.tensors.size(); ++t) {
    const auto& tensor = info.tensors[t];
    const std::size_t end =
        t + 1 < info.tensors.size() ? info.tensors[t + 1].offset : info.param_count;
    double std_dev = std_weight;
    float constant = 0.0f;           // used when std_dev is 0
    if (tensor.shape.size() == 1) {  // LayerNorm weight 1, every bias 0
      std_dev = 0.0;
      const bool ln_weight = block ? (t == kLn1Weight || t == kLn2Weight) : t == kLnfWeight;
      constant = ln_weight ? 1.0f : 0.0f;
    } else if (block && (t == kAttnProjWeight || t == kFcProjWeight)) {
      std_dev = std_residual;
    }
    for (std::size_t j = tensor.offset; j < end; ++j) {
      params[j] =
          std_dev == 0.0 ? constant : static_cast<float>(std_dev * counter_normal(seed, stream, j));
    }
  }
}

// Streams of the adapters' draws, apart from the base's (a unit's number).
constexpr std::uint64_t kLoraStreams = std::uint64_t{1} << 32;

}  // namespace

void GptModel::init_unit(int unit, std::span<float> params, std::uint64_t seed) const {
  const auto& info = units().at(static_cast<std::size_t>(unit));
  if (config().lora_rank == 0) {
    init_base_unit(config(), info, unit, params, seed);
    return;
  }
  // A: uniform in +-1/sqrt(in), in = its shape's columns; B: zero.
  ZERODP_CHECK(params.size() == info.param_count);
  const auto stream = kLoraStreams + static_cast<std::uint64_t>(unit);
  for (std::size_t t = 0; t < info.tensors.size(); ++t) {
    const auto& tensor = info.tensors[t];
    const std::size_t n = tensor.shape[0] * tensor.shape[1];
    float* at = params.data() + tensor.offset;
    if (t % 2 == 1) {
      std::fill_n(at, n, 0.0f);
      continue;
    }
    const double bound = 1.0 / std::sqrt(double(tensor.shape[1]));
    for (std::size_t j = 0; j < n; ++j) {
      const double u = counter_uniform(seed, stream, tensor.offset + j);
      at[j] = static_cast<float>(bound * (2.0 * u - 1.0));
    }
  }
}

void GptModel::init_frozen_unit(int unit, std::span<float> frozen, std::uint64_t seed) const {
  const auto u = static_cast<std::size_t>(unit);
  ZERODP_CHECK_MSG(config().lora_rank > 0, "a GPT without LoRA has no frozen parameters");
  ZERODP_CHECK(u < units().size());
  // The base as GptModel without LoRA would initialise it: the same unit numbers and draws.
  UnitInfo base;
  base.param_count = units()[u].frozen_count;
  base.tensors = units()[u].frozen_tensors;
  init_base_unit(config(), base, unit, frozen, seed);
}

}  // namespace zerodp::model

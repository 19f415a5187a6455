// The GPT's configuration, its flat layout (units and tensors) and its initialisation.
#include <algorithm>
#include <cmath>
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
  return 4 * floats + 2 * BT;                                      // + tokens and targets
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
  return "GPT-2 (byte-level): " + std::to_string(layers) + " layers, " + std::to_string(heads) +
         " heads, hidden " + std::to_string(hidden) + ", context " + std::to_string(seq_len) +
         ", vocab " + std::to_string(vocab);
}

namespace {

UnitInfo make_unit(std::string name, std::vector<int> reads = {}) {
  UnitInfo unit;
  unit.name = std::move(name);
  unit.reads = std::move(reads);
  return unit;
}

void add_tensor(UnitInfo& unit, std::string name, std::vector<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  unit.tensors.push_back({std::move(name), std::move(shape), unit.param_count});
  unit.param_count += n;
}

}  // namespace

std::vector<UnitInfo> gpt_units(const GptConfig& config) {
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
    add_tensor(block, h + "attn.c_attn.weight", {3 * C, C});
    add_tensor(block, h + "attn.c_attn.bias", {3 * C});
    add_tensor(block, h + "attn.c_proj.weight", {C, C});
    add_tensor(block, h + "attn.c_proj.bias", {C});
    add_tensor(block, h + "ln_2.weight", {C});
    add_tensor(block, h + "ln_2.bias", {C});
    add_tensor(block, h + "mlp.c_fc.weight", {4 * C, C});
    add_tensor(block, h + "mlp.c_fc.bias", {4 * C});
    add_tensor(block, h + "mlp.c_proj.weight", {C, 4 * C});
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
void GptModel::init_unit(int unit, std::span<float> params, std::uint64_t seed) const {
  const auto& info = units().at(static_cast<std::size_t>(unit));
  ZERODP_CHECK(params.size() == info.param_count);
  const auto stream = static_cast<std::uint64_t>(unit);
  const double std_weight = 0.02;
  const double std_residual = 0.02 / std::sqrt(2.0 * config().layers);
  const bool block = unit >= 1 && unit <= config().layers;
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

}  // namespace zerodp::model

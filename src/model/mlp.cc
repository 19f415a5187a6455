#include "zerodp/model/mlp.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "zerodp/common/error.h"
#include "zerodp/common/rng.h"
#include "zerodp/model/gemm.h"

namespace zerodp::model {
namespace {

// GELU, tanh approximation, as GPT-2.
constexpr float kSqrt2OverPi = 0.7978845608028654f;  // sqrt(2 / pi)
inline float gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}
inline float gelu_grad(float x) {
  const float inner = kSqrt2OverPi * (x + 0.044715f * x * x * x);
  const float th = std::tanh(inner);
  const float sech2 = 1.0f - th * th;
  return 0.5f * (1.0f + th) + 0.5f * x * sech2 * kSqrt2OverPi * (1.0f + 3.0f * 0.044715f * x * x);
}

}  // namespace

MlpConfig MlpConfig::for_params(std::uint64_t params) {
  MlpConfig c;
  c.width = 1;
  for (std::size_t w = 4096; w >= 1; w /= 2) {
    if (4 * (w * w + w) <= params) {
      c.width = w;
      break;
    }
  }
  const std::uint64_t per_layer = c.width * c.width + c.width;
  c.depth = static_cast<int>(std::max<std::uint64_t>(1, (params + per_layer / 2) / per_layer));
  return c;
}

Mlp::Mlp(const MlpConfig& config) : config_(config) {
  if (config_.width < 1) {
    throw InvalidArgument("width", field_ref("width") + ": expected a whole number >= 1");
  }
  if (config_.depth < 1) {
    throw InvalidArgument("depth", field_ref("depth") + ": expected a whole number >= 1");
  }
  const std::size_t W = config_.width;
  for (int l = 0; l < config_.depth; ++l) {
    UnitInfo u;
    u.name = "layer" + std::to_string(l);
    u.param_offset = std::size_t(l) * (W * W + W);
    u.param_count = W * W + W;
    u.tensors = {{u.name + ".weight", {W, W}, 0}, {u.name + ".bias", {W}, W * W}};
    units_.push_back(std::move(u));
  }
}

void Mlp::init_unit(int unit, std::span<float> params, std::uint64_t seed) const {
  const std::size_t W = config_.width;
  const float std_dev = std::sqrt(2.0f / float(W));  // He: keeps GELU activations in range
  for (std::size_t i = 0; i < W * W; ++i) params[i] = std_dev * counter_normal(seed, unit, i);
  std::fill(params.begin() + W * W, params.end(), 0.0f);
}

void Mlp::ensure_batch_capacity(std::size_t samples) {
  if (samples <= capacity_) return;
  const std::size_t n = samples * config_.width, depth = std::size_t(config_.depth);
  arena_ = {};  // a larger batch never holds both
  capacity_ = 0;
  arena_ = Buffer<float>(ledger_, Category::activations, n * (2 * depth + 4));
  float* next = arena_.data();
  acts_.resize(depth + 1);
  pre_.resize(depth);
  for (float*& a : acts_) a = std::exchange(next, next + n);
  for (float*& p : pre_) p = std::exchange(next, next + n);
  target_ = std::exchange(next, next + n);
  dact_ = std::exchange(next, next + n);
  dpre_ = std::exchange(next, next + n);
  capacity_ = samples;
}

void Mlp::begin_micro_batch(const MicroBatch& batch) {
  const std::size_t n = batch.samples * config_.width;
  if (batch.inputs.size() != n || batch.targets.size() != n) {
    throw Error("Mlp: a micro-batch of " + std::to_string(batch.samples) + " samples needs " +
                std::to_string(n) + " inputs and targets, got " +
                std::to_string(batch.inputs.size()) + " and " +
                std::to_string(batch.targets.size()));
  }
  ensure_batch_capacity(batch.samples);
  batch_ = {.samples = batch.samples, .grad_scale = batch.grad_scale};  // no views kept
  std::copy(batch.inputs.begin(), batch.inputs.end(), acts_[0]);
  std::copy(batch.targets.begin(), batch.targets.end(), target_);
}

void Mlp::forward(int unit, const UnitViews& views) {
  const std::size_t W = config_.width, B = batch_.samples;
  const float* weight = views.params[0].data();  // [W out, W in]
  const float* bias = weight + W * W;            // [W]
  float* pre = pre_[unit];                       // [B, W]
  for (std::size_t b = 0; b < B; ++b) std::copy(bias, bias + W, pre + b * W);
  gemm(Trans::no, Trans::yes, B, W, W, 1.0f, acts_[unit], weight, 1.0f, pre);
  float* out = acts_[unit + 1];
  for (std::size_t i = 0; i < B * W; ++i) out[i] = gelu(pre[i]);
  if (unit + 1 == config_.depth) {
    double sum = 0.0;
    for (std::size_t i = 0; i < B * W; ++i) {
      const double d = double(out[i]) - double(target_[i]);
      sum += d * d;
    }
    loss_ = float(sum / double(B * W));
  }
}

void Mlp::backward(int unit, const UnitViews& views) {
  const std::size_t W = config_.width, B = batch_.samples, n = B * W;
  if (unit + 1 == config_.depth) {
    // d(mean squared error)/d(out), times the engine's scale.
    const float k = 2.0f * batch_.grad_scale / float(n);
    const float* out = acts_[unit + 1];
    for (std::size_t i = 0; i < n; ++i) dact_[i] = k * (out[i] - target_[i]);
  }
  const float* pre = pre_[unit];
  for (std::size_t i = 0; i < n; ++i) dpre_[i] = dact_[i] * gelu_grad(pre[i]);
  float* dweight = views.grads[0].data();
  float* dbias = dweight + W * W;
  // dW [W out, W in] += dpre^T [W out, B] x [B, W in]
  gemm(Trans::yes, Trans::no, W, W, B, 1.0f, dpre_, acts_[unit], 1.0f, dweight);
  for (std::size_t b = 0; b < B; ++b) {
    const float* row = dpre_ + b * W;
    for (std::size_t j = 0; j < W; ++j) dbias[j] += row[j];
  }
  if (unit > 0) {
    // dx [B, W in] = dpre [B, W out] W [W out, W in]
    gemm(Trans::no, Trans::no, B, W, W, 1.0f, dpre_, views.params[0].data(), 0.0f, dact_);
  }
}

void Mlp::set_ledger(Ledger* ledger) {
  arena_.recount(ledger);
  ledger_ = ledger;
}

std::size_t Mlp::activation_bytes() const {
  const std::size_t n = capacity_ * config_.width;
  return sizeof(float) * n * (std::size_t(config_.depth) * 2 + 1 + 3);
}

std::string Mlp::describe() const {
  return "MLP " + std::to_string(config_.depth) + " x (" + std::to_string(config_.width) + "x" +
         std::to_string(config_.width) + " Linear + GELU), " +
         std::to_string(config_.param_count()) + " parameters";
}

}  // namespace zerodp::model

// A multi-layer perceptron on synthetic data: the engine's smallest real model.
//
// Units are layers: y = GELU(x W^T + b) with W [width x width], so every unit has
// width^2 + width parameters. The loss is the mean squared error of the last layer's output
// against the targets. Its samples are MicroBatch::inputs and ::targets, width floats each a
// sample (data::SyntheticRegression draws learnable ones, so the loss falls).
#pragma once

#include <cstdint>
#include <vector>

#include "zerodp/model/model.h"

namespace zerodp::model {

struct MlpConfig {
  std::size_t width = 64;
  int depth = 4;

  // The config whose parameter count is closest to `params`: the widest power of two that
  // still gives at least 4 layers, then the depth that comes closest. Any params >= 1 works.
  static MlpConfig for_params(std::uint64_t params);
  std::uint64_t param_count() const { return std::uint64_t(depth) * (width * width + width); }
};

class Mlp : public Model {
 public:
  explicit Mlp(const MlpConfig& config);

  const std::vector<UnitInfo>& units() const override { return units_; }
  void init_unit(int unit, std::span<float> params, std::uint64_t seed) const override;
  void begin_micro_batch(const MicroBatch& batch) override;
  void forward(int unit, const UnitViews& views) override;
  float loss() const override { return loss_; }
  void backward(int unit, const UnitViews& views) override;
  std::size_t activation_bytes() const override;
  void set_ledger(Ledger* ledger) override;
  std::string describe() const override;

 private:
  void ensure_batch_capacity(std::size_t samples);

  MlpConfig config_;
  std::vector<UnitInfo> units_;
  MicroBatch batch_;
  std::size_t capacity_ = 0;
  // Per micro-batch, one arena allocated for the largest batch seen (Category::activations):
  // unit inputs (depth + 1 buffers, the last being the output), pre-activations, targets, and
  // two gradient buffers: (2 depth + 4) B width floats.
  Ledger* ledger_ = nullptr;
  Buffer<float> arena_;
  std::vector<float*> acts_;                                     // [depth + 1][B * width]
  std::vector<float*> pre_;                                      // [depth][B * width]
  float *target_ = nullptr, *dact_ = nullptr, *dpre_ = nullptr;  // [B * width] each
  float loss_ = 0.0f;
};

}  // namespace zerodp::model

// The GPT under LoRA: the adapters' layout and initialisation, a first forward that is the
// base's to the bit, the adapters' gradients against finite differences, a frozen base that
// takes no gradient, and the activations' formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "model/finite_difference.h"
#include "model/gpt_testing.h"
#include "testing/tolerance.h"
#include "zerodp/common/error.h"
#include "zerodp/model/gpt.h"

namespace zerodp::model {
namespace {

using gpt_testing::begin_windows;
using gpt_testing::config;
using gpt_testing::random_windows;
using gpt_testing::usage_error_of;
using testing::fd_check;
using testing::random_vector;

GptConfig lora_config(int rank, unsigned targets = kLoraAllTargets) {
  GptConfig c = config(2, 2, 8, 4);
  c.lora_rank = rank;
  c.lora_alpha = 6.0f;
  c.lora_targets = targets;
  return c;
}

TEST(GptLora, ValidateNamesTheField) {
  GptConfig c = lora_config(9);  // above hidden 8
  EXPECT_NE(usage_error_of(c).find("lora_rank"), std::string::npos);
  c = lora_config(2);
  c.lora_alpha = 0.0f;
  EXPECT_NE(usage_error_of(c).find("lora_alpha"), std::string::npos);
  c = lora_config(2, 0u);
  EXPECT_NE(usage_error_of(c).find("lora_targets"), std::string::npos);
  c = lora_config(2, 16u);
  EXPECT_NE(usage_error_of(c).find("lora_targets"), std::string::npos);
  EXPECT_EQ(usage_error_of(lora_config(8)), "");
}

TEST(GptLora, AdaptersAreTheTrainedLayoutAndTheBaseIsFrozenInItsOwn) {
  const GptConfig c = lora_config(3, kLoraAttn | kLoraFcProj);
  GptModel model(c);
  const auto& units = model.units();
  const auto base = gpt_base_units(c);
  ASSERT_EQ(units.size(), base.size());
  // Per layer: c_attn A [3, 8] and B [24, 3], mlp.c_proj A [3, 32] and B [8, 3].
  const std::size_t per_layer = 3 * 8 + 24 * 3 + 3 * 32 + 8 * 3;
  EXPECT_EQ(model.param_count(), 2 * per_layer);
  EXPECT_EQ(c.lora_param_count(), 2 * per_layer);
  EXPECT_EQ(model.frozen_count(), c.param_count());
  EXPECT_EQ(units[0].param_count, 0u);
  EXPECT_EQ(units.back().param_count, 0u);
  ASSERT_EQ(units[1].tensors.size(), 4u);
  EXPECT_EQ(units[1].tensors[0].name, "h.0.attn.c_attn.lora_A.weight");
  EXPECT_EQ(units[1].tensors[0].shape, (std::vector<std::size_t>{3, 8}));
  EXPECT_EQ(units[1].tensors[1].name, "h.0.attn.c_attn.lora_B.weight");
  EXPECT_EQ(units[1].tensors[1].shape, (std::vector<std::size_t>{24, 3}));
  EXPECT_EQ(units[2].tensors[3].name, "h.1.mlp.c_proj.lora_B.weight");
  EXPECT_EQ(units[2].param_offset, per_layer);
  for (std::size_t u = 0; u < units.size(); ++u) {
    EXPECT_EQ(units[u].frozen_offset, base[u].param_offset);
    EXPECT_EQ(units[u].frozen_count, base[u].param_count);
    ASSERT_EQ(units[u].frozen_tensors.size(), base[u].tensors.size());
    for (std::size_t t = 0; t < base[u].tensors.size(); ++t) {
      EXPECT_EQ(units[u].frozen_tensors[t].name, base[u].tensors[t].name);
      EXPECT_EQ(units[u].frozen_tensors[t].offset, base[u].tensors[t].offset);
    }
  }
  EXPECT_NE(model.describe().find("LoRA rank 3 alpha 6 on attn.c_attn, mlp.c_proj"),
            std::string::npos);
}

TEST(GptLora, AStartsUniformInItsBoundBStartsAtZeroAndTheBaseIsTheFullModelsInit) {
  const GptConfig c = lora_config(4);
  GptModel lora(c);
  GptModel full(config(2, 2, 8, 4));
  std::vector<float> adapters(lora.param_count()), frozen(lora.frozen_count());
  init_all(lora, adapters, 11, frozen);
  std::vector<float> base(full.param_count());
  init_all(full, base, 11);
  EXPECT_EQ(std::memcmp(frozen.data(), base.data(), base.size() * sizeof(float)), 0);
  for (const auto& u : lora.units()) {
    for (std::size_t t = 0; t < u.tensors.size(); ++t) {
      const auto [begin, end] = gpt_testing::tensor_range(u, t);
      const double bound = 1.0 / std::sqrt(double(u.tensors[t].shape[1]));
      double largest = 0.0;
      for (std::size_t i = begin; i < end; ++i)
        largest = std::max(largest, double(std::fabs(adapters[i])));
      if (t % 2 == 1) {
        EXPECT_EQ(largest, 0.0) << u.tensors[t].name;
      } else {
        EXPECT_LE(largest, bound) << u.tensors[t].name;
        EXPECT_GT(largest, 0.5 * bound)
            << u.tensors[t].name;  // 32+ draws, none near the edge: p < 2^-32
      }
    }
  }
}

TEST(GptLora, WithBAtZeroTheLossIsTheBasesToTheBit) {
  for (bool checkpoint : {false, true}) {
    GptConfig c = lora_config(2);
    c.checkpoint_activations = checkpoint;
    GptModel lora(c);
    GptConfig plain = config(2, 2, 8, 4);
    GptModel full(plain);
    std::vector<float> adapters(lora.param_count()), frozen(lora.frozen_count());
    init_all(lora, adapters, 3, frozen);
    const auto noise = random_vector(frozen.size(), 4, 0.3);
    for (std::size_t i = 0; i < frozen.size(); ++i) frozen[i] += noise[i];
    const auto windows = random_windows(3, c.seq_len, 5);
    begin_windows(lora, windows, 3);
    begin_windows(full, windows, 3);
    const float with_adapters = forward_all(lora, adapters, frozen);
    const float base = forward_all(full, frozen);
    EXPECT_EQ(std::memcmp(&with_adapters, &base, sizeof base), 0) << checkpoint;
    // Adding 0 to each output leaves it as it was: the logits too.
    EXPECT_EQ(std::memcmp(lora.logits().data(), full.logits().data(),
                          full.logits().size() * sizeof(float)),
              0);
  }
}

// The adapters' gradient against central differences of the loss, with every adapter away
// from its initial zero so every term of the backward counts; the bound is GptModel's test's.
TEST(GptLora, AdapterGradientsMatchFiniteDifferences) {
  for (bool checkpoint : {false, true}) {
    GptConfig c = lora_config(3);
    c.checkpoint_activations = checkpoint;
    GptModel model(c);
    std::vector<float> adapters(model.param_count()), frozen(model.frozen_count());
    init_all(model, adapters, 5, frozen);
    const auto noise = random_vector(adapters.size(), 6, 0.3);
    for (std::size_t i = 0; i < adapters.size(); ++i) adapters[i] += noise[i];
    const auto base_noise = random_vector(frozen.size(), 7, 0.3);
    for (std::size_t i = 0; i < frozen.size(); ++i) frozen[i] += base_noise[i];
    begin_windows(model, random_windows(2, c.seq_len, 9), 2);
    std::vector<float> grads(adapters.size(), 0.0f);
    forward_backward_all(model, adapters, grads, frozen);
    auto objective = [&] {
      forward_all(model, adapters, frozen);
      double sum = 0;
      for (float l : model.losses()) sum += l;
      return sum / static_cast<double>(model.losses().size());
    };
    const double objective_error = tolerance::kFp32Epsilon * objective();
    double worst = 0;
    for (const auto& u : model.units()) {
      for (std::size_t t = 0; t < u.tensors.size(); ++t) {
        const auto [begin, end] = gpt_testing::tensor_range(u, t);
        std::vector<std::size_t> which;
        std::size_t largest = 0;
        for (std::size_t i = 0; i < end - begin; ++i) {
          if (std::fabs(grads[begin + i]) > std::fabs(grads[begin + largest])) largest = i;
        }
        which.push_back(largest);
        for (std::size_t k = 0; k < 5; ++k) which.push_back((k * 7919 + t) % (end - begin));
        const auto r =
            fd_check(u.tensors[t].name, std::span(adapters).subspan(begin, end - begin),
                     std::span<const float>(grads).subspan(begin, end - begin), objective,
                     {.h = 2e-2f, .objective_error = objective_error, .which = which});
        worst = std::max(worst, r.worst);
        // Every adapter takes part: none of its gradients is all zero.
        double norm = 0;
        for (std::size_t i = begin; i < end; ++i) norm += std::fabs(grads[i]);
        EXPECT_GT(norm, 0.0) << u.tensors[t].name;
      }
    }
    EXPECT_LT(worst, 1.0) << "checkpointing " << checkpoint;
  }
}

TEST(GptLora, CheckpointingGivesTheSameAdapterGradientsToTheBit) {
  std::vector<float> reference;
  for (bool checkpoint : {false, true}) {
    GptConfig c = lora_config(2, kLoraAttnProj | kLoraFc);
    c.checkpoint_activations = checkpoint;
    GptModel model(c);
    std::vector<float> adapters(model.param_count()), frozen(model.frozen_count());
    init_all(model, adapters, 21, frozen);
    const auto noise = random_vector(adapters.size(), 22, 0.1);
    for (std::size_t i = 0; i < adapters.size(); ++i) adapters[i] += noise[i];
    begin_windows(model, random_windows(2, c.seq_len, 23), 2);
    std::vector<float> grads(adapters.size(), 0.0f);
    forward_backward_all(model, adapters, grads, frozen);
    if (!checkpoint) {
      reference = grads;
      continue;
    }
    EXPECT_EQ(std::memcmp(grads.data(), reference.data(), grads.size() * sizeof(float)), 0);
  }
}

// The bytes GptModel holds are the formula's, and LoRA's part of them is 4 BT R (S k + 1).
TEST(GptLora, ActivationBytesAddTheInputsTimesAAndOneBackwardBuffer) {
  for (bool checkpoint : {false, true}) {
    GptConfig plain = config(2, 2, 8, 4);
    plain.checkpoint_activations = checkpoint;
    GptConfig c = plain;
    c.lora_rank = 3;
    c.lora_targets = kLoraAttn | kLoraFc | kLoraFcProj;  // k = 3
    GptModel model(c);
    std::vector<float> adapters(model.param_count()), frozen(model.frozen_count());
    init_all(model, adapters, 1, frozen);
    begin_windows(model, random_windows(5, c.seq_len, 2), 5);
    EXPECT_EQ(model.activation_bytes(), c.activation_bytes(5));
    const std::size_t BT = 5 * 4, S = checkpoint ? 1 : 2;
    EXPECT_EQ(c.activation_bytes(5) - plain.activation_bytes(5), 4 * BT * 3 * (S * 3 + 1));
  }
}

}  // namespace
}  // namespace zerodp::model

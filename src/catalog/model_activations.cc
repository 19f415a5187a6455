// The tensors one micro-batch keeps for backward (models.h), module by module as the Hugging
// Face implementations run them in eager mode with 16-bit parameters, and what the loss works
// in beyond them. Every term is a tensor autograd saves; tests/plan/torch_reference holds the
// same modules written in PyTorch and checks these sums against the bytes PyTorch saves.
#include "activation_counter.h"
#include "zerodp/catalog/models.h"

namespace zerodp::catalog {

namespace saved {

// The activations of saved tensors under a checkpointing choice: every layer's saved bytes, or
// without the s² terms (selective, recomputed), or each layer's input and the largest layer
// while it is recomputed (full); the rotary tables; outside the layers, and the loss's
// gradients in backward.
std::optional<ModelActivations> activations_of(const SavedTensors& saved, const Counter& n,
                                               const ModelConfig& c,
                                               plan::Checkpointing checkpointing) {
  const Dims& x = n.dims();
  const u128 per_layer = std::max({saved.dense_layer, saved.moe_layer, saved.first_layer});
  const u128 all = u128(saved.total) - saved.outside - saved.rope_tables;  // every layer
  u128 layers = 0;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      layers = all;
      break;
    case plan::Checkpointing::selective:  // the s² terms recomputed
      layers = all - n.scores() * c.layers;
      break;
    case plan::Checkpointing::full:  // each layer's input, and one layer while recomputed
      layers = 2 * x.T * x.h * c.layers + per_layer;
      break;
  }
  layers += saved.rope_tables;
  const u128 loss = u128(saved.outside) + n.loss_working();
  if (layers + loss > UINT64_MAX) return std::nullopt;
  return ModelActivations{std::uint64_t(per_layer), std::uint64_t(layers), std::uint64_t(loss),
                          std::uint64_t(layers + loss)};
}

}  // namespace saved

using saved::activations_of;
using saved::Counter;
using saved::too_large;
using saved::u128;

std::string_view attention_name(Attention attention) {
  switch (attention) {
    case Attention::flash:
      return "flash";
    case Attention::sdpa:
      return "sdpa";
    case Attention::eager:
      break;
  }
  return "eager";
}

std::optional<SavedTensors> saved_tensor_bytes(const ModelConfig& c, std::uint64_t s,
                                               std::uint64_t b, Attention attention,
                                               const plan::TorchRuntime& runtime) {
  if (too_large(c, s, b)) return std::nullopt;
  const Counter n(c, s, b, attention, runtime);
  const u128 moe_layers = c.moe_layers(), dense_layers = c.layers - moe_layers;
  const u128 dense = dense_layers > 0 ? n.layer(false) : 0;
  const u128 moe = moe_layers > 0 ? n.layer(true) : 0;
  const u128 outside = n.outside(), rope = n.rope_tables();
  const u128 total = dense * dense_layers + moe * moe_layers + outside + rope;
  if (total > UINT64_MAX) return std::nullopt;
  return SavedTensors{std::uint64_t(dense),   std::uint64_t(moe),
                      std::uint64_t(outside), std::uint64_t(rope),
                      std::uint64_t(total),   std::uint64_t(dense_layers > 0 ? dense : moe)};
}

std::optional<ModelActivations> model_activation_bytes(const ModelConfig& c, std::uint64_t s,
                                                       std::uint64_t b,
                                                       plan::Checkpointing checkpointing,
                                                       Attention attention,
                                                       const plan::TorchRuntime& runtime) {
  const auto saved = saved_tensor_bytes(c, s, b, attention, runtime);
  if (!saved) return std::nullopt;
  return activations_of(*saved, Counter(c, s, b, attention, runtime), c, checkpointing);
}

}  // namespace zerodp::catalog

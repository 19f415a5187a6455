// The activations one micro-batch keeps for backward (models.h), term by term as the Hugging
// Face implementations keep them.
#include "zerodp/catalog/models.h"

namespace zerodp::catalog {

std::string_view attention_name(Attention attention) {
  return attention == Attention::flash ? "flash" : "eager";
}

std::optional<ModelActivations> model_activation_bytes(const ModelConfig& c, std::uint64_t s,
                                                       std::uint64_t b,
                                                       plan::Checkpointing checkpointing,
                                                       Attention attention) {
  using u128 = unsigned __int128;
  // A rough size first (an overestimate), so that the exact sums below cannot wrap 128 bits.
  const long double widest_mlp =
      static_cast<long double>(c.intermediate) +
      static_cast<long double>(c.expert_intermediate) * (c.experts_per_token + 1) +
      static_cast<long double>(c.shared_intermediate);
  const long double rough = static_cast<long double>(s) * b *
                            (16.0L * c.hidden * (c.norms_per_layer + 4) + 8.0L * c.heads * s +
                             8.0L * widest_mlp + 6.0L * c.experts + 16.0L * c.heads * c.head_dim +
                             16.0L * c.kv_heads * c.head_dim + 10.0L * c.vocab) *
                            (c.layers + 1.0L);
  if (!(rough < 1e36L)) return std::nullopt;  // far beyond 64 bits either way
  const u128 sb = u128(s) * b, h = c.hidden, a = c.heads;
  const u128 q = u128(c.heads) * c.head_dim, k = u128(c.kv_heads) * c.head_dim;
  const u128 norms = u128(c.norms_per_layer) * 2 * sb * h;
  // The projections' input, Q, K and V at their widths and the output projection's input.
  // DeepSeek's latent attention: K as wide as Q (a heads of nope + rope), V and the output of
  // a x v_dim, and the latent (kv_rank + rope) with its norm's output (and q's, with a q rank).
  u128 attention_bytes = 2 * sb * h;
  if (c.latent) {
    const LatentAttention& l = *c.latent;
    const u128 v = a * l.v_dim;
    attention_bytes +=
        2 * sb * (2 * q + v) + 2 * sb * v + 2 * sb * (2 * u128(l.kv_rank) + l.rope_dim);
    if (l.q_rank > 0) attention_bytes += 2 * sb * 2 * l.q_rank;
  } else {
    attention_bytes += 2 * sb * (q + 2 * k) + 2 * sb * q;
  }
  // The norms of q and k keep their inputs.
  if (c.qk_norm != QkNorm::none) attention_bytes += 2 * sb * (q + k);
  u128 scores = 0;  // the s² terms
  if (attention == Attention::eager) {
    scores = 2 * a * s * sb + (c.attention_dropout ? 3 * a * s * sb : 0);
  } else {
    attention_bytes += 4 * a * sb;
  }
  auto mlp_of = [&](u128 width) {
    return c.gated_mlp ? 2 * sb * h + 8 * sb * width : 2 * sb * h + 4 * sb * width;
  };
  const u128 dense_mlp = mlp_of(c.intermediate);
  u128 moe_mlp = 0;
  if (c.experts > 0) {
    moe_mlp = u128(c.experts_per_token) * mlp_of(c.expert_intermediate) + 6 * sb * c.experts;
    // A shared expert every token passes, and its gate's input and sigmoid output.
    if (c.shared_intermediate > 0) moe_mlp += mlp_of(c.shared_intermediate);
    if (c.shared_expert_gate) moe_mlp += 2 * sb * h + 2 * sb;
  }
  const u128 masks = c.hidden_dropout ? 2 * sb * h : 0;
  const u128 moe_layers = c.moe_layers(), dense_layers = c.layers - moe_layers;
  const u128 layer_base = norms + attention_bytes + masks;
  // A mixture's layer when it has any (the largest), else the dense one.
  const u128 per_layer_no_scores = layer_base + (moe_layers > 0 ? moe_mlp : dense_mlp);
  const u128 per_layer = per_layer_no_scores + scores;
  const u128 all_no_scores =
      layer_base * c.layers + dense_mlp * dense_layers + moe_mlp * moe_layers;
  u128 layers = 0;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      layers = all_no_scores + scores * c.layers;
      break;
    case plan::Checkpointing::selective:
      layers = all_no_scores;
      break;
    case plan::Checkpointing::full:
      layers = 2 * sb * h * c.layers + per_layer;
      break;
  }
  const u128 outside = 2 * sb * h + 10 * sb * c.vocab;
  const u128 total = layers + outside;
  if (total > UINT64_MAX) return std::nullopt;
  return ModelActivations{std::uint64_t(per_layer), std::uint64_t(layers), std::uint64_t(outside),
                          std::uint64_t(total)};
}

}  // namespace zerodp::catalog

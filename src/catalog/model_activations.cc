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
  const long double rough =
      static_cast<long double>(s) * b *
      (64.0L * c.hidden + 8.0L * c.heads * s + 8.0L * c.intermediate * (c.experts_per_token + 1) +
       6.0L * c.experts + 8.0L * c.heads * c.head_dim + 16.0L * c.kv_heads * c.head_dim +
       10.0L * c.vocab) *
      (c.layers + 1.0L);
  if (!(rough < 1e36L)) return std::nullopt;  // far beyond 64 bits either way
  const u128 sb = u128(s) * b, h = c.hidden, a = c.heads,
             I = c.experts > 0 ? c.expert_intermediate : c.intermediate;
  const u128 q = u128(c.heads) * c.head_dim, k = u128(c.kv_heads) * c.head_dim;
  const u128 norms = 2 * 2 * sb * h;
  u128 attention_bytes = 2 * sb * h + 2 * sb * (q + 2 * k) + 2 * sb * q;
  u128 scores = 0;  // the s² terms
  if (attention == Attention::eager) {
    scores = 2 * a * s * sb + (c.attention_dropout ? 3 * a * s * sb : 0);
  } else {
    attention_bytes += 4 * a * sb;
  }
  const u128 expert = c.gated_mlp ? 2 * sb * h + 8 * sb * I : 2 * sb * h + 4 * sb * I;
  const u128 mlp = c.experts > 0 ? u128(c.experts_per_token) * expert + 6 * sb * c.experts : expert;
  const u128 masks = c.hidden_dropout ? 2 * sb * h : 0;
  const u128 per_layer_no_scores = norms + attention_bytes + mlp + masks;
  const u128 per_layer = per_layer_no_scores + scores;
  u128 layers = 0;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      layers = per_layer * c.layers;
      break;
    case plan::Checkpointing::selective:
      layers = per_layer_no_scores * c.layers;
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

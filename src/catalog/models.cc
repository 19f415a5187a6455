// The parameters a config's modules hold, family by family: their count, the linears by the
// names their implementation gives them, the small tensors and those kept by reuse distance.
// config.json's fields are read in model_config.cc, the activations counted in
// model_activations.cc; the catalogue's table is catalogue.cc.
#include <algorithm>
#include <vector>

#include "zerodp/catalog/models.h"
#include "zerodp/common/saturating.h"

namespace zerodp::catalog {
namespace {

// One module: its weight's and its bias's elements, and how many of it there are.
// A module's own parameters; a linear (nn.Linear, or gpt2's Conv1D) also has its name in the
// layer, as the family's implementation calls it, and its shape.
struct Module {
  std::uint64_t weight = 0, bias = 0, copies = 1;
  std::string_view name = {};  // empty for norms, embeddings and DeepSeek's router
  std::uint64_t in = 0, out = 0;
  std::uint64_t params() const { return saturating_mul(saturating_add(weight, bias), copies); }
};

// A linear of in x out, with or without its bias.
Module linear(std::string_view name, std::uint64_t in, std::uint64_t out, bool bias,
              std::uint64_t copies = 1) {
  return {saturating_mul(in, out), bias ? out : 0, copies, name, in, out};
}

// The names a family gives its attention's and MLP's linears.
struct LinearNames {
  std::string_view q, k, v, qkv, out, gate, up, gate_up, down;
};
LinearNames linear_names(const ModelConfig& c) {
  if (c.model_type == "gpt2") {
    return {.qkv = "attn.c_attn", .out = "attn.c_proj", .up = "mlp.c_fc", .down = "mlp.c_proj"};
  }
  if (c.model_type == "gpt_neox") {
    return {.qkv = "attention.query_key_value",
            .out = "attention.dense",
            .up = "mlp.dense_h_to_4h",
            .down = "mlp.dense_4h_to_h"};
  }
  return {.q = "self_attn.q_proj",
          .k = "self_attn.k_proj",
          .v = "self_attn.v_proj",
          .qkv = "self_attn.qkv_proj",
          .out = "self_attn.o_proj",
          .gate = "mlp.gate_proj",
          .up = "mlp.up_proj",
          .gate_up = "mlp.gate_up_proj",
          .down = "mlp.down_proj"};
}

// Where a layer's MLPs sit: the dense one, a mixture's experts, its shared expert.
enum class MlpPlace { dense, experts, shared };

// A mixture's linears are named under their module: Mixtral's experts w1 (gate), w3 (up) and
// w2 (down), Qwen's and DeepSeek's gate_proj, up_proj and down_proj; "*" is the expert's index.
LinearNames mlp_names(const ModelConfig& c, MlpPlace place) {
  LinearNames n = linear_names(c);
  if (place == MlpPlace::dense) return n;
  if (c.model_type == "mixtral") {
    return {.gate = "block_sparse_moe.experts.*.w1",
            .up = "block_sparse_moe.experts.*.w3",
            .down = "block_sparse_moe.experts.*.w2"};
  }
  if (place == MlpPlace::experts) {
    return {.gate = "mlp.experts.*.gate_proj",
            .up = "mlp.experts.*.up_proj",
            .down = "mlp.experts.*.down_proj"};
  }
  if (c.model_type == "deepseek_v2") {
    return {.gate = "mlp.shared_experts.gate_proj",
            .up = "mlp.shared_experts.up_proj",
            .down = "mlp.shared_experts.down_proj"};
  }
  return {.gate = "mlp.shared_expert.gate_proj",
          .up = "mlp.shared_expert.up_proj",
          .down = "mlp.shared_expert.down_proj"};
}

// The modules of one MLP of width `width`: gate (or a fused gate-up), up, down.
void add_mlp(const ModelConfig& c, std::uint64_t width, std::uint64_t copies, MlpPlace place,
             std::vector<Module>& out) {
  const std::uint64_t h = c.hidden;
  const LinearNames n = mlp_names(c, place);
  if (c.fused_gate_up) {
    out.push_back(linear(n.gate_up, h, saturating_mul(2, width), c.mlp_bias, copies));
  } else {
    if (c.gated_mlp) out.push_back(linear(n.gate, h, width, c.mlp_bias, copies));
    out.push_back(linear(n.up, h, width, c.mlp_bias, copies));
  }
  out.push_back(linear(n.down, width, h, c.mlp_bias, copies));
}

// The modules of one layer, as the family's implementation builds them; `experts` of a
// mixture's layer counted (all of them, or the ones a token passes).
std::vector<Module> layer_modules(const ModelConfig& c, bool moe_layer, std::uint64_t experts) {
  const std::uint64_t h = c.hidden, q = saturating_mul(c.heads, c.head_dim),
                      k = saturating_mul(c.kv_heads, c.head_dim);
  const LinearNames n = linear_names(c);
  std::vector<Module> m;
  m.push_back({h, c.norm_bias ? h : 0, c.norms_per_layer});
  if (c.latent) {
    const LatentAttention& l = *c.latent;
    const std::uint64_t q_out = saturating_mul(c.heads, l.nope_dim + l.rope_dim);
    if (l.q_rank > 0) {
      m.push_back(linear("self_attn.q_a_proj", h, l.q_rank, c.qkv_bias));
      m.push_back({l.q_rank, 0, 1});  // q_a_layernorm
      m.push_back(linear("self_attn.q_b_proj", l.q_rank, q_out, false));
    } else {
      m.push_back(linear(n.q, h, q_out, false));
    }
    m.push_back(linear("self_attn.kv_a_proj_with_mqa", h, l.kv_rank + l.rope_dim, c.qkv_bias));
    m.push_back({l.kv_rank, 0, 1});  // kv_a_layernorm
    m.push_back(linear("self_attn.kv_b_proj", l.kv_rank,
                       saturating_mul(c.heads, l.nope_dim + l.v_dim), false));
    m.push_back(linear(n.out, saturating_mul(c.heads, l.v_dim), h, c.out_bias));
  } else {
    if (c.fused_qkv) {
      m.push_back(linear(n.qkv, h, saturating_add(q, saturating_mul(2, k)), c.qkv_bias));
    } else {
      m.push_back(linear(n.q, h, q, c.qkv_bias));
      m.push_back(linear(n.k, h, k, c.qkv_bias));
      m.push_back(linear(n.v, h, k, c.qkv_bias));
    }
    m.push_back(linear(n.out, q, h, c.out_bias));
  }
  if (c.qk_norm == QkNorm::per_head) m.push_back({c.head_dim, 0, 2});
  if (c.qk_norm == QkNorm::whole) {
    m.push_back({q, 0, 1});
    m.push_back({k, 0, 1});
  }
  if (!moe_layer) {
    add_mlp(c, c.intermediate, 1, MlpPlace::dense, m);
    return m;
  }
  add_mlp(c, c.expert_intermediate, experts, MlpPlace::experts, m);
  // The router: an nn.Linear but in DeepSeek-V2 (MoEGate, a module holding a weight).
  if (c.model_type == "deepseek_v2") {
    m.push_back({saturating_mul(h, c.experts), 0, 1});
  } else {
    m.push_back(linear(c.model_type == "mixtral" ? "block_sparse_moe.gate" : "mlp.gate", h,
                       c.experts, false));
  }
  if (c.shared_intermediate > 0) add_mlp(c, c.shared_intermediate, 1, MlpPlace::shared, m);
  if (c.shared_expert_gate) m.push_back(linear("mlp.shared_expert_gate", h, 1, false));
  return m;
}

std::string_view head_name(const ModelConfig& c) {
  return c.model_type == "gpt_neox" ? "embed_out" : "lm_head";
}

// Outside the layers: token (and position) embeddings, the final norm, an untied head.
std::vector<Module> outside_modules(const ModelConfig& c) {
  const std::uint64_t h = c.hidden;
  std::vector<Module> m = {{saturating_mul(c.vocab, h), 0, 1}, {h, c.norm_bias ? h : 0, 1}};
  if (c.positions > 0) m.push_back({saturating_mul(c.positions, h), 0, 1});
  if (!c.tied_embeddings) m.push_back(linear(head_name(c), h, c.vocab, false));
  return m;
}

std::uint64_t sum(const std::vector<Module>& modules) {
  std::uint64_t n = 0;
  for (const Module& m : modules) n = saturating_add(n, m.params());
  return n;
}

}  // namespace

ModelParams model_params(const ModelConfig& c) {
  const std::uint64_t moe_layers = c.moe_layers(), dense_layers = c.layers - moe_layers;
  const std::vector<Module> dense = layer_modules(c, false, 0);
  const std::vector<Module> mixture = layer_modules(c, true, c.experts);
  const std::vector<Module> outside = outside_modules(c);
  const std::uint64_t outside_params = sum(outside);
  ModelParams p;
  p.embedding_params =
      saturating_add(saturating_mul(c.vocab, c.hidden), saturating_mul(c.positions, c.hidden));
  p.per_layer_params = moe_layers > 0 ? sum(mixture) : sum(dense);
  p.outside_params = outside_params;
  p.params = saturating_add(saturating_add(saturating_mul(dense_layers, sum(dense)),
                                           saturating_mul(moe_layers, sum(mixture))),
                            outside_params);
  const std::uint64_t active_mixture =
      moe_layers > 0 ? sum(layer_modules(c, true, c.experts_per_token)) : 0;
  p.active_params = saturating_add(saturating_add(saturating_mul(dense_layers, sum(dense)),
                                                  saturating_mul(moe_layers, active_mixture)),
                                   outside_params);
  std::uint64_t largest = 0;
  for (const auto* modules : {&dense, &mixture, &outside}) {
    for (const Module& m : *modules) largest = std::max(largest, saturating_add(m.weight, m.bias));
  }
  p.largest_layer_params = largest;
  return p;
}

std::vector<LinearLayer> linear_layers(const ModelConfig& c) {
  std::vector<LinearLayer> out;
  auto take = [&](const std::vector<Module>& modules, std::uint64_t layers) {
    for (const Module& m : modules) {
      if (m.name.empty() || layers == 0) continue;
      out.push_back({m.name, m.in, m.out, saturating_mul(m.copies, layers), m.bias > 0, false});
    }
  };
  take(layer_modules(c, false, 0), c.layers - c.moe_layers());
  take(layer_modules(c, true, c.experts), c.moe_layers());
  // The head is a linear also when tied: transformers builds it and points its weight at the
  // embeddings'.
  out.push_back({head_name(c), c.hidden, c.vocab, 1, false, true});
  return out;
}

TrainingFlops training_flops(const ModelConfig& c, std::uint64_t seq_len,
                             plan::Checkpointing checkpointing) {
  const ModelParams p = model_params(c);
  TrainingFlops f;
  f.params = double(p.active_params - p.embedding_params) +
             (c.tied_embeddings ? double(c.vocab) * double(c.hidden) : 0.0);
  double qk = double(c.heads) * double(c.head_dim), v = qk;
  if (c.latent) {
    qk = double(c.heads) * double(c.latent->nope_dim + c.latent->rope_dim);
    v = double(c.heads) * double(c.latent->v_dim);
  }
  const double s = double(seq_len), layers = double(c.layers);
  f.attention = 2 * s * qk + 2 * s * v;
  f.forward = 2 * f.params + layers * f.attention;
  f.model = 6 * f.params + 3 * layers * f.attention;
  switch (checkpointing) {
    case plan::Checkpointing::none:
      f.hardware = f.model;
      break;
    case plan::Checkpointing::selective:
      f.hardware = f.model + layers * f.attention;
      break;
    case plan::Checkpointing::full:
      f.hardware = f.model + 2 * f.params + layers * f.attention;
      break;
  }
  return f;
}

std::uint64_t small_tensor_params(const ModelConfig& c, std::uint64_t max_numel) {
  // Weights and biases are tensors of their own: a bias can be small where its weight is not.
  auto small = [max_numel](const std::vector<Module>& modules) {
    std::uint64_t n = 0;
    for (const Module& m : modules) {
      if (m.weight <= max_numel) n = saturating_add(n, saturating_mul(m.weight, m.copies));
      if (m.bias > 0 && m.bias <= max_numel)
        n = saturating_add(n, saturating_mul(m.bias, m.copies));
    }
    return n;
  };
  const std::uint64_t moe_layers = c.moe_layers();
  return saturating_add(
      saturating_add(saturating_mul(c.layers - moe_layers, small(layer_modules(c, false, 0))),
                     saturating_mul(moe_layers, small(layer_modules(c, true, c.experts)))),
      small(outside_modules(c)));
}

std::uint64_t reuse_kept_params(const ModelConfig& c, std::uint64_t distance) {
  if (distance == 0) return 0;
  // A module is kept when the elements after it, `after`, satisfy 2·after < distance.
  const std::uint64_t most_after = (distance - 1) / 2;
  std::uint64_t after = 0, kept = 0;
  bool done = false;
  // `copies` modules of `numel` each, one after the other.
  auto visit = [&](std::uint64_t numel, std::uint64_t copies = 1) {
    if (done || copies == 0) return;
    if (after > most_after) {
      done = true;
      return;
    }
    const std::uint64_t taken =
        numel == 0 ? copies : std::min(copies, (most_after - after) / numel + 1);
    kept = saturating_add(kept, saturating_mul(taken, numel));
    after = saturating_add(after, saturating_mul(taken, numel));
    if (taken < copies) done = true;
  };
  visit(saturating_mul(c.vocab, c.hidden));      // the head (the embedding itself when tied)
  visit(c.norm_bias ? 2 * c.hidden : c.hidden);  // the final norm
  // The layers from the last: whole layers in one step while every module of them is kept,
  // then module by module.
  auto walk = [&](std::uint64_t count, const std::vector<Module>& modules) {
    const std::uint64_t total = sum(modules);
    if (done || count == 0 || total == 0) return;
    if (after <= most_after) {
      const std::uint64_t whole = std::min(count, (most_after - after) / total);
      kept = saturating_add(kept, saturating_mul(whole, total));
      after = saturating_add(after, saturating_mul(whole, total));
      count -= whole;
    }
    for (std::uint64_t i = 0; i < count && !done; ++i) {
      for (auto m = modules.rbegin(); m != modules.rend(); ++m) {
        visit(saturating_add(m->weight, m->bias), m->copies);
      }
    }
  };
  walk(c.moe_layers(), layer_modules(c, true, c.experts));
  walk(c.layers - c.moe_layers(), layer_modules(c, false, 0));
  visit(saturating_mul(c.positions, c.hidden));
  if (!c.tied_embeddings)
    visit(saturating_mul(c.vocab, c.hidden));  // the embedding, unless the head
  return std::min(kept, model_params(c).params);
}

}  // namespace zerodp::catalog

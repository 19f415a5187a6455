// LoRA's adapter counts (catalog::lora_count) against what PEFT prints for the same model,
// rank and targets (print_trainable_parameters(): "trainable params: N || all params: M"),
// and the linears each family names.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "zerodp/catalog/lora.h"
#include "zerodp/common/error.h"

namespace zerodp::catalog {
namespace {

ModelConfig catalogued(std::string_view name) {
  const CatalogueModel* m = find_model(name);
  EXPECT_NE(m, nullptr) << name;
  return parse_model_config(m->config_json, std::string(name));
}

std::uint64_t adapters(const ModelConfig& c, std::uint64_t rank, std::vector<std::string> targets) {
  return lora_count(c, rank, targets, "--lora-targets").adapter_params;
}

TEST(LoraCount, EqualsWhatPeftPrints) {
  // Llama-2-7B, r = 8 on q_proj and v_proj: "trainable params: 4,194,304 || all params:
  // 6,742,609,920" (32 layers x 2 x 8 x (4096 + 4096)).
  const ModelConfig llama2 = catalogued("meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(adapters(llama2, 8, {"q_proj", "v_proj"}), 4'194'304u);
  EXPECT_EQ(model_params(llama2).params + 4'194'304u, 6'742'609'920u);
  // Llama-3-8B, r = 16 on the seven projections: "trainable params: 41,943,040 || all params:
  // 8,072,204,288"; all-linear names the same seven (the head left out).
  const ModelConfig llama3 = catalogued("meta-llama/Meta-Llama-3-8B");
  const std::vector<std::string> seven = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                          "gate_proj", "up_proj", "down_proj"};
  EXPECT_EQ(adapters(llama3, 16, seven), 41'943'040u);
  EXPECT_EQ(adapters(llama3, 16, {"all-linear"}), 41'943'040u);
  EXPECT_EQ(model_params(llama3).params + 41'943'040u, 8'072'204'288u);
  // GPT-2, r = 8 on c_attn (Conv1D 768 -> 2304): "trainable params: 294,912 || all params:
  // 124,734,720".
  const ModelConfig gpt2 = catalogued("openai-community/gpt2");
  EXPECT_EQ(adapters(gpt2, 8, {"c_attn"}), 294'912u);
  EXPECT_EQ(model_params(gpt2).params + 294'912u, 124'734'720u);
}

TEST(LoraCount, MatchesTargetsAsPeftDoes) {
  const ModelConfig gpt2 = catalogued("openai-community/gpt2");
  // "c_proj" ends both attn.c_proj (768 x 768) and mlp.c_proj (3072 -> 768); "mlp.c_proj" one.
  EXPECT_EQ(adapters(gpt2, 8, {"c_proj"}), 12u * 8 * ((768 + 768) + (3072 + 768)));
  EXPECT_EQ(adapters(gpt2, 8, {"mlp.c_proj"}), 12u * 8 * (3072 + 768));
  // all-linear: c_attn, both c_proj and c_fc; the head (tied to wte) left out.
  EXPECT_EQ(adapters(gpt2, 1, {"all-linear"}),
            12u * ((768 + 2304) + (768 + 768) + (768 + 3072) + (3072 + 768)));
  // The head is a linear to name even tied: r (768 + 50257).
  EXPECT_EQ(adapters(gpt2, 2, {"lm_head"}), 2u * (768 + 50257));
  // Mixtral: w1 is every expert's gate (8 a layer), "gate" the router alone (4096 -> 8).
  const ModelConfig mixtral = catalogued("mistralai/Mixtral-8x7B-v0.1");
  EXPECT_EQ(adapters(mixtral, 8, {"w1"}), 32u * 8 * 8 * (4096 + 14336));
  EXPECT_EQ(adapters(mixtral, 8, {"gate"}), 32u * 8 * (4096 + 8));
  // A target given twice, or named two ways, adapts its linears once.
  EXPECT_EQ(adapters(gpt2, 8, {"c_attn", "attn.c_attn", "c_attn"}), 294'912u);
  const LoraCount count = lora_count(gpt2, 8, std::vector<std::string>{"c_attn"}, "--lora-targets");
  ASSERT_EQ(count.targets.size(), 1u);
  EXPECT_EQ(count.targets[0].name, "attn.c_attn");
  EXPECT_EQ(count.targets[0].count, 12u);
  EXPECT_EQ(count.adapted_params, 12u * 768 * 2304);
}

TEST(LinearLayers, ASmallLlamaByHand) {
  // vocab 10, hidden 8, 2 layers, 4 heads of 2, 2 kv heads, MLP 16 (models_test.cc's).
  const ModelConfig c = parse_model_config(
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16})",
      "test");
  const std::vector<LinearLayer> l = linear_layers(c);
  ASSERT_EQ(l.size(), 8u);
  const std::vector<std::tuple<std::string_view, std::uint64_t, std::uint64_t>> want = {
      {"self_attn.q_proj", 8, 8}, {"self_attn.k_proj", 8, 4}, {"self_attn.v_proj", 8, 4},
      {"self_attn.o_proj", 8, 8}, {"mlp.gate_proj", 8, 16},   {"mlp.up_proj", 8, 16},
      {"mlp.down_proj", 16, 8},   {"lm_head", 8, 10}};
  std::uint64_t weights = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(l[i].name, std::get<0>(want[i]));
    EXPECT_EQ(l[i].in, std::get<1>(want[i]));
    EXPECT_EQ(l[i].out, std::get<2>(want[i]));
    EXPECT_EQ(l[i].count, i + 1 < want.size() ? 2u : 1u);
    EXPECT_EQ(l[i].head, i + 1 == want.size());
    weights += l[i].in * l[i].out * l[i].count;
  }
  // The linears and what is not one (embedding 80, norms 2 x 2 x 8 + 8) are every parameter.
  EXPECT_EQ(weights + 80 + 40, model_params(c).params);
}

TEST(LoraCount, RefusesWhatItCannotCount) {
  const ModelConfig llama2 = catalogued("meta-llama/Llama-2-7b-hf");
  auto refusal = [&](std::uint64_t rank, std::vector<std::string> targets) {
    try {
      lora_count(llama2, rank, targets, "--lora-targets");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(0, {"q_proj"}), "--lora-targets: a LoRA rank must be 1 or more");
  EXPECT_NE(refusal(8, {"qproj"})
                .find("'qproj' names no linear of llama; its linears: "
                      "self_attn.q_proj, self_attn.k_proj"),
            std::string::npos);
  EXPECT_NE(refusal(8, {"all-linear", "q_proj"}).find("give it alone"), std::string::npos);
  EXPECT_NE(refusal(8, {"layers.0.self_attn.q_proj"}).find("by its index"), std::string::npos);
  EXPECT_NE(refusal(8, {""}).find("an empty name"), std::string::npos);
  EXPECT_NE(refusal(8, {"q\x1b[2J"}).find("q\\x1b[2J"), std::string::npos);
  // DeepSeek-V2's router is a module holding a weight, not a linear: PEFT cannot adapt it.
  const ModelConfig deepseek = catalogued("deepseek-ai/DeepSeek-V2-Lite");
  EXPECT_THROW(lora_count(deepseek, 8, std::vector<std::string>{"gate"}, "--lora-targets"),
               UsageError);
  // Rank and shapes past 2^64 saturate.
  EXPECT_EQ(adapters(llama2, UINT64_MAX, {"q_proj"}), UINT64_MAX);
}

}  // namespace
}  // namespace zerodp::catalog

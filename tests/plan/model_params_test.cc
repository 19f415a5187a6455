// Parameter counts from config.json (plan::model_params) against the counts each family's
// publishers give, and the parsing's one-line errors.
#include <gtest/gtest.h>

#include "zerodp/error.h"
#include "zerodp/plan_model.h"

namespace zerodp::plan {
namespace {

TEST(ModelParams, EveryCatalogueModelHasItsPublishedCount) {
  // GPT-2 (HF), Pythia (its README's "total params"), Llama 2 and 3, TinyLlama, Mistral,
  // Mixtral, Qwen2.5 (their safetensors totals): one family's shape each, every count exact.
  ASSERT_GE(model_catalogue().size(), 20u);
  for (const CatalogueModel& m : model_catalogue()) {
    const ModelConfig c = parse_model_config(m.config_json, std::string(m.name));
    EXPECT_EQ(model_params(c).params, m.published_params) << m.name;
  }
}

TEST(ModelParams, ASmallLlamaCountedByHand) {
  // vocab 10, hidden 8, 2 layers, 4 heads of 2, 2 kv heads, MLP 16, untied:
  // q 8x8, k and v 8x4, o 8x8 = 192; gate, up, down 3 x 8 x 16 = 384; two RMSNorms 16;
  // per layer 592; embedding and head 2 x 80; final norm 8: 2 x 592 + 160 + 8 = 1352.
  const ModelConfig c = parse_model_config(
      R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 16})",
      "test");
  const ModelParams p = model_params(c);
  EXPECT_EQ(p.per_layer_params, 592u);
  EXPECT_EQ(p.params, 1352u);
  EXPECT_EQ(p.active_params, 1352u);
  EXPECT_EQ(p.largest_layer_params, 128u);  // gate or up: 8 x 16
  // Tied, the head is the embedding: 80 fewer. qwen2 adds the q, k, v biases: 8 + 4 + 4.
  EXPECT_EQ(model_params(parse_model_config(
                             R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8,
                                 "num_hidden_layers": 2, "num_attention_heads": 4,
                                 "num_key_value_heads": 2, "intermediate_size": 16,
                                 "tie_word_embeddings": true})",
                             "test"))
                .params,
            1352u - 80 + 2 * 16);
}

TEST(ModelParams, MixtralActivatesTwoOfEightExperts) {
  // Mixtral 8x7B: 46.7B in all, 12.9B through which a token passes (its model card's figures:
  // "46.7B total", "12.9B active"); the largest module is the 32000 x 4096 embedding.
  const ModelParams p =
      model_params(parse_model_config(find_model("mixtral-8x7b")->config_json, "mixtral"));
  EXPECT_EQ(p.params, 46'702'792'704u);
  EXPECT_EQ(p.active_params, 12'879'925'248u);
  EXPECT_EQ(p.largest_layer_params, 32000u * 4096);
  // Dense models pass every parameter.
  const ModelParams dense =
      model_params(parse_model_config(find_model("llama-3-8b")->config_json, "llama"));
  EXPECT_EQ(dense.active_params, dense.params);
  EXPECT_EQ(dense.largest_layer_params, 128256u * 4096);
}

TEST(ModelParams, NamesAreFoundByShortNameOrHubId) {
  EXPECT_EQ(find_model("Llama-3-8B"), find_model("meta-llama/Meta-Llama-3-8B"));
  EXPECT_NE(find_model("gpt2"), nullptr);
  EXPECT_EQ(find_model("gpt5"), nullptr);
  EXPECT_NE(catalogue_names().find("mixtral-8x7b"), std::string::npos);
}

TEST(ModelParams, BadConfigsAreOneLineErrorsNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model_type": "falcon"})", "model_type \"falcon\" is not supported; supported: gpt2"},
      {R"({"vocab_size": 10})", "\"model_type\" is missing"},
      {R"({"model_type": "llama", "vocab_size": 10})", "\"hidden_size\" is missing"},
      {R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
           "num_attention_heads": 4, "num_key_value_heads": 3, "intermediate_size": 16})",
       "\"num_key_value_heads\" must divide num_attention_heads (4)"},
      {R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": -8})", "\"n_embd\" must be a whole"},
      {R"({"model_type": "mixtral", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
           "num_attention_heads": 4, "intermediate_size": 16, "num_local_experts": 2,
           "num_experts_per_tok": 3})",
       "\"num_experts_per_tok\" must be at most num_local_experts (2)"},
      {R"([1, 2])", "expected a JSON object"},
      {R"({"model_type": )", "not JSON"},
  };
  for (const auto& [text, message] : cases) {
    try {
      parse_model_config(text, "--model-config c.json");
      ADD_FAILURE() << text << ": accepted";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("--model-config c.json: ", 0), 0u) << what;
      EXPECT_NE(what.find(message), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace zerodp::plan

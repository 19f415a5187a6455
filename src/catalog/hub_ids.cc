// Hugging Face Hub ids that resolve to catalogue entries (zerodp/catalog/models.h: HubAlias):
// each publishes a config.json whose size-setting fields are its entry's, so the plan of the
// entry is the plan of the id. What was checked is said above each group; a count quoted there
// is the id's own (the Hub's safetensors.total, a safetensors index's total_size over 2 bytes a
// bf16 parameter, or a port's count of the same weights) and equals the entry's.
//
// Not here, for want of a public config or count of their own to check: the Qwen3 -Base
// releases but the 0.6B's and 8B's, Qwen3-30B-A3B-Base, Llama-Guard-3-8B, OLMo 2's -RLVR
// checkpoints. Not here because their sizes differ from every entry's: Qwen2 (Qwen2-72B-Instruct
// counts 72,710,410,240 against Qwen2.5-72B's 72,706,203,648), CodeLlama (32016 tokens), the
// Llama 3.2 vision models (mllama). Mistral 7B v0.3, whose vocabulary grew to 32768, is an
// entry of its own.
#include <span>

#include "zerodp/catalog/models.h"

namespace zerodp::catalog {
namespace {

constexpr HubAlias kHubAliases[] = {
    // Pythia trains every size twice, on the Pile and on the deduplicated Pile: each model
    // card's table gives the -deduped model its sibling's layers, width, heads and count
    // (70,426,624, 162,322,944, 405,334,016, 1,011,781,632 ... 11,846,072,320).
    {"EleutherAI/pythia-70m-deduped", "pythia-70m"},
    {"EleutherAI/pythia-160m-deduped", "pythia-160m"},
    {"EleutherAI/pythia-410m-deduped", "pythia-410m"},
    {"EleutherAI/pythia-1b-deduped", "pythia-1b"},
    {"EleutherAI/pythia-1.4b-deduped", "pythia-1.4b"},
    {"EleutherAI/pythia-2.8b-deduped", "pythia-2.8b"},
    {"EleutherAI/pythia-6.9b-deduped", "pythia-6.9b"},
    {"EleutherAI/pythia-12b-deduped", "pythia-12b"},

    // Chat-v1.0's config (as mlc-llm's presets copy it): vocab 32000, width 2048, 22 layers,
    // 32 heads (4 kv), MLP 5632, untied; counted at 1,100,048,384. TinyLlama_v1.1 retrains
    // the same architecture: its float32 safetensors hold 4.1 GiB, 1.1B parameters.
    {"TinyLlama/TinyLlama-1.1B-Chat-v1.0", "tinyllama-1.1b"},
    {"TinyLlama/TinyLlama_v1.1", "tinyllama-1.1b"},

    // Llama 2 chat: counted at 6,738,415,616 and 13,015,864,320 (the 7B's and 13B's), and
    // 68,976,648,192 as together.ai republished the 70B chat: the bases' counts.
    {"meta-llama/Llama-2-7b-chat-hf", "llama-2-7b"},
    {"meta-llama/Llama-2-13b-chat-hf", "llama-2-13b"},
    {"meta-llama/Llama-2-70b-chat-hf", "llama-2-70b"},
    // Llama 3: the 8B Instruct counted at 8,030,261,248 (KerasHub); the 70B Instruct's config:
    // vocab 128256, width 8192, 80 layers, 64 heads (8 kv), MLP 28672, untied, as the base's.
    {"meta-llama/Meta-Llama-3-8B-Instruct", "llama-3-8b"},
    {"meta-llama/Meta-Llama-3-70B-Instruct", "llama-3-70b"},
    // Llama 3.1: the Instruct configs (mlc-llm's presets copy them, with the instruct
    // eos_token_id list) set the bases' sizes; the Hub counts Llama-3.1-8B-Instruct
    // 8,030,261,248. Meta-Llama-3.1-* are the names the repositories were published under,
    // which the Hub still resolves. Meta's model card gives the pretrained and the
    // instruction-tuned 405B one architecture: vocab 128256, width 16384, 126 layers, 128 heads
    // (8 kv), MLP 53248, untied, as the fine-tuning recipes of oumi list it.
    {"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"},
    {"meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b"},
    {"meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"},
    {"meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b"},
    {"meta-llama/Meta-Llama-3.1-70B", "llama-3.1-70b"},
    {"meta-llama/Meta-Llama-3.1-70B-Instruct", "llama-3.1-70b"},
    {"meta-llama/Llama-3.1-405B-Instruct", "llama-3.1-405b"},
    {"meta-llama/Meta-Llama-3.1-405B", "llama-3.1-405b"},
    {"meta-llama/Meta-Llama-3.1-405B-Instruct", "llama-3.1-405b"},
    // Llama 3.2 text models: the Hub counts 1,235,814,400 and 3,212,749,824, tied as the bases.
    {"meta-llama/Llama-3.2-1B-Instruct", "llama-3.2-1b"},
    {"meta-llama/Llama-3.2-3B-Instruct", "llama-3.2-3b"},

    // Mistral 7B Instruct v0.1 and v0.2: 7,241,732,096 (KerasHub), vocab 32000 as v0.1;
    // v0.3: 7,248,023,552 on the Hub, vocab 32768 as Mistral-7B-v0.3. Nemo Instruct:
    // 12,247,782,400. Mixtral Instruct: 46,702,792,704 on the Hub, vocab 32000.
    {"mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b"},
    {"mistralai/Mistral-7B-Instruct-v0.2", "mistral-7b"},
    {"mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"},
    {"mistralai/Mistral-Nemo-Instruct-2407", "mistral-nemo-12b"},
    {"mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"},

    // Qwen2.5 Instruct: the Hub counts 494,032,768, 1,543,714,304, 3,085,938,688 and
    // 7,615,616,512; the 14B's GGUF 14,770,033,664 (vocab 152064); the 32B's and 72B's index
    // total_size 65,527,752,704 and 145,412,407,296 bytes. The configs tie the embeddings up to
    // 3B and give the bases' layers and heads. The 1M releases: 7,615,616,512 for the 7B; the
    // 14B's card gives 14.7B (13.1B without embeddings), 48 layers, 40 q and 8 kv heads.
    {"Qwen/Qwen2.5-0.5B-Instruct", "qwen2.5-0.5b"},
    {"Qwen/Qwen2.5-1.5B-Instruct", "qwen2.5-1.5b"},
    {"Qwen/Qwen2.5-3B-Instruct", "qwen2.5-3b"},
    {"Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"},
    {"Qwen/Qwen2.5-7B-Instruct-1M", "qwen2.5-7b"},
    {"Qwen/Qwen2.5-14B-Instruct", "qwen2.5-14b"},
    {"Qwen/Qwen2.5-14B-Instruct-1M", "qwen2.5-14b"},
    {"Qwen/Qwen2.5-32B-Instruct", "qwen2.5-32b"},
    {"Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"},
    // Qwen2.5-Coder: every card gives its Qwen2.5 size's shape: 0.49B (0.36B without
    // embeddings), 24 layers, 14/2 heads, tied, its safetensors the 0.5B's 942.3 MiB; 1.54B,
    // 28 layers, 12/2, tied; 3.09B, 36 layers, 16/2, tied; 7.61B, 28 layers, 28/4; 14.7B,
    // 48 layers, 40/8 (the 14B Instruct's GGUF: 14,770,033,664, vocab 152064); 32.5B,
    // 64 layers, 40/8.
    {"Qwen/Qwen2.5-Coder-0.5B", "qwen2.5-0.5b"},
    {"Qwen/Qwen2.5-Coder-0.5B-Instruct", "qwen2.5-0.5b"},
    {"Qwen/Qwen2.5-Coder-1.5B", "qwen2.5-1.5b"},
    {"Qwen/Qwen2.5-Coder-1.5B-Instruct", "qwen2.5-1.5b"},
    {"Qwen/Qwen2.5-Coder-3B", "qwen2.5-3b"},
    {"Qwen/Qwen2.5-Coder-3B-Instruct", "qwen2.5-3b"},
    {"Qwen/Qwen2.5-Coder-7B", "qwen2.5-7b"},
    {"Qwen/Qwen2.5-Coder-7B-Instruct", "qwen2.5-7b"},
    {"Qwen/Qwen2.5-Coder-14B", "qwen2.5-14b"},
    {"Qwen/Qwen2.5-Coder-14B-Instruct", "qwen2.5-14b"},
    {"Qwen/Qwen2.5-Coder-32B", "qwen2.5-32b"},
    {"Qwen/Qwen2.5-Coder-32B-Instruct", "qwen2.5-32b"},
    // Qwen2.5-Math: 1,543,714,304 and 7,615,616,512 (KerasHub) for the 1.5B and 7B pairs; the
    // 72B pair's 37 safetensors shards weigh as the 72B's, shard for shard.
    {"Qwen/Qwen2.5-Math-1.5B", "qwen2.5-1.5b"},
    {"Qwen/Qwen2.5-Math-1.5B-Instruct", "qwen2.5-1.5b"},
    {"Qwen/Qwen2.5-Math-7B", "qwen2.5-7b"},
    {"Qwen/Qwen2.5-Math-7B-Instruct", "qwen2.5-7b"},
    {"Qwen/Qwen2.5-Math-72B", "qwen2.5-72b"},
    {"Qwen/Qwen2.5-Math-72B-Instruct", "qwen2.5-72b"},
    // QwQ: both cards give 32.5B (31.0B without embeddings), 64 layers, 40 q and 8 kv heads.
    {"Qwen/QwQ-32B", "qwen2.5-32b"},
    {"Qwen/QwQ-32B-Preview", "qwen2.5-32b"},
    // Qwen3: the 8B Base's config differs from the 8B's only in eos_token_id and positions;
    // the 0.6B Base's card gives the 0.6B's 0.6B (0.44B without embeddings, so tied),
    // 28 layers, 16 q and 8 kv heads. The 2507 4B releases: the Hub counts 4,022,468,096,
    // their configs the 4B's fields but rope_theta and positions. The 30B-A3B 2507 releases
    // and Qwen3-Coder-30B-A3B-Instruct: 30,532,122,624 each, with the 30B-A3B's 48 layers of
    // 128 experts of 768, 32 q and 4 kv heads, width 2048.
    {"Qwen/Qwen3-0.6B-Base", "qwen3-0.6b"},
    {"Qwen/Qwen3-8B-Base", "qwen3-8b"},
    {"Qwen/Qwen3-4B-Instruct-2507", "qwen3-4b"},
    {"Qwen/Qwen3-4B-Thinking-2507", "qwen3-4b"},
    {"Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"},
    {"Qwen/Qwen3-30B-A3B-Thinking-2507", "qwen3-30b-a3b"},
    {"Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-30b-a3b"},
    // 14,315,784,192, the base's, with its architecture.
    {"Qwen/Qwen1.5-MoE-A2.7B-Chat", "qwen1.5-moe-a2.7b"},

    // Gemma 2 -it: 2,614,341,888, 9,241,705,984 and 27,227,128,320 (KerasHub, and the Hub for
    // the 2B), the pretrained models' counts; so ShieldGemma's, Gemma 2 tuned to answer
    // safety questions through its LM head. The Japanese 2B's config differs from the 2B's only
    // in query_pre_attn_scalar. gemma-3-1b-it: 999,885,952 on the Hub, the pt's config.
    {"google/gemma-2-2b-it", "gemma-2-2b"},
    {"google/gemma-2-2b-jpn-it", "gemma-2-2b"},
    {"google/shieldgemma-2b", "gemma-2-2b"},
    {"google/gemma-2-9b-it", "gemma-2-9b"},
    {"google/shieldgemma-9b", "gemma-2-9b"},
    {"google/gemma-2-27b-it", "gemma-2-27b"},
    {"google/shieldgemma-27b", "gemma-2-27b"},
    {"google/gemma-3-1b-it", "gemma-3-1b"},

    // Phi-3-mini-128k and Phi-3.5-mini: 3,821,079,552 (KerasHub; the Hub for 3.5), the 4k's
    // sizes with longer rotary scaling; the medium's card names its 4k and 128k releases one
    // model at two context lengths. Phi-4-mini-reasoning: 3,836,021,760 on the Hub, the
    // mini-instruct's. Phi-4-reasoning(-plus): phi-4 fine-tuned (their cards), 14.7B.
    {"microsoft/Phi-3-mini-128k-instruct", "phi-3-mini"},
    {"microsoft/Phi-3.5-mini-instruct", "phi-3-mini"},
    {"microsoft/Phi-3-medium-128k-instruct", "phi-3-medium"},
    {"microsoft/Phi-4-mini-reasoning", "phi-4-mini"},
    {"microsoft/Phi-4-reasoning", "phi-4"},
    {"microsoft/Phi-4-reasoning-plus", "phi-4"},

    // OLMo 2 post-training (Tulu 3: SFT, then DPO, then RLVR for -Instruct) tunes every weight
    // of the base and adds none; the Hub counts the 7B and 1B Instruct 7,298,617,344 and
    // 1,484,916,736, the bases' counts.
    {"allenai/OLMo-2-0425-1B-SFT", "olmo-2-1b"},
    {"allenai/OLMo-2-0425-1B-DPO", "olmo-2-1b"},
    {"allenai/OLMo-2-0425-1B-Instruct", "olmo-2-1b"},
    {"allenai/OLMo-2-1124-7B-SFT", "olmo-2-7b"},
    {"allenai/OLMo-2-1124-7B-DPO", "olmo-2-7b"},
    {"allenai/OLMo-2-1124-7B-Instruct", "olmo-2-7b"},
    {"allenai/OLMo-2-1124-13B-SFT", "olmo-2-13b"},
    {"allenai/OLMo-2-1124-13B-DPO", "olmo-2-13b"},
    {"allenai/OLMo-2-1124-13B-Instruct", "olmo-2-13b"},
    {"allenai/OLMo-2-0325-32B-SFT", "olmo-2-32b"},
    {"allenai/OLMo-2-0325-32B-DPO", "olmo-2-32b"},
    {"allenai/OLMo-2-0325-32B-Instruct", "olmo-2-32b"},

    // Grouped with V2-Lite by identical config in a published survey of Hub models:
    // 15,706,484,224 each.
    {"deepseek-ai/DeepSeek-V2-Lite-Chat", "deepseek-v2-lite"},
    {"deepseek-ai/DeepSeek-Coder-V2-Lite-Base", "deepseek-v2-lite"},
    {"deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "deepseek-v2-lite"},

    // The Hub counts the SmolLM2 Instruct models 134,515,008, 361,821,120 and 1,711,376,384.
    {"HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2-135m"},
    {"HuggingFaceTB/SmolLM2-360M-Instruct", "smollm2-360m"},
    {"HuggingFaceTB/SmolLM2-1.7B-Instruct", "smollm2-1.7b"},
};

}  // namespace

std::span<const HubAlias> hub_aliases() {
  return kHubAliases;
}

}  // namespace zerodp::catalog

#include "model_flags.h"

namespace zerodp::cli {

void add_model_flags(CLI::App* app, run::ModelChoice& f, const std::string& default_mlp_params) {
  app->add_option("--model", f.model,
                  "gpt (byte-level GPT-2 on --data) or mlp (synthetic) [" + f.model + "]");
  app->add_option(
      "--data", f.data,
      "gpt: a text (or any bytes) file [the license texts in /usr/share/common-licenses]");
  app->add_option("--layers", f.layers, "gpt: transformer blocks [4]");
  app->add_option("--heads", f.heads, "gpt: attention heads [4]");
  app->add_option("--hidden", f.hidden, "gpt: channels [256]");
  app->add_option("--seq-len", f.seq_len, "gpt: context length [128]");
  app->add_flag("--checkpoint-activations", f.checkpoint_activations,
                "gpt: keep each block's input only and recompute the block in backward");
  app->add_option("--compute", f.compute,
                  "gpt: the type matrix products multiply in: auto, fp32 or bf16 (bf16 inputs, "
                  "fp32 sums) [auto: bf16 where the CPU has fast bf16 products, else fp32]");
  app->add_option("--params", f.params,
                  "mlp: size in parameters, e.g. 10M [" + default_mlp_params + "]");
  app->add_option("--data-seed", f.data_seed, "which windows the sample stream draws [1234]");
}

void add_lora_flags(CLI::App* app, run::ModelChoice& f) {
  app->add_option("--lora-rank", f.lora_rank,
                  "gpt: train LoRA adapters of this rank beside the frozen model of --base");
  app->add_option("--lora-alpha", f.lora_alpha,
                  "LoRA: the adapters' output is scaled by alpha / rank [8, PEFT's default]");
  app->add_option("--lora-targets", f.lora_targets,
                  "LoRA: the projections adapted: c_attn, c_proj, c_fc, attn.c_proj, mlp.c_proj "
                  "or all-linear, comma-separated [c_attn, PEFT's default for GPT-2]");
  app->add_option("--base", f.base,
                  "LoRA: the trained GPT the adapters train beside, frozen: a checkpoint folder "
                  "or a --save-dir of zerodp train (its newest); the run keeps its shape");
  app->add_option("--quantize", f.quantize,
                  "LoRA: nf4 holds the base's block weights in 4-bit NormalFloat (QLoRA), "
                  "dequantized as each layer computes [16 bits]");
  app->add_option("--double-quant", f.double_quant,
                  "with --quantize nf4: on (the QLoRA paper's) or off: each block's absmax in 8 "
                  "bits or in fp32 [on]");
}

void add_checkpoint_flag(CLI::App* app, CheckpointFlags& flags) {
  app->add_option("--checkpoint", flags.checkpoint,
                  "a checkpoint folder, or a --save-dir (its newest checkpoint)");
}

}  // namespace zerodp::cli

// zerodp export: a checkpoint's model as a Hugging Face GPT-2 folder (model.safetensors,
// config.json, generation_config.json and a byte-level tokenizer), or as a .safetensors file
// with its config.json beside it; the weights streamed from the shards one tensor at a time.
// A LoRA checkpoint's adapters as PEFT's folder, or with --merge merged into their base.
#include <cstdio>
#include <memory>

#include "command.h"
#include "help.h"
#include "model_flags.h"
#include "output.h"
#include "zerodp/common/error.h"
#include "zerodp/run/export_model.h"

namespace zerodp::cli {
namespace {

struct ExportFlags {
  CheckpointFlags checkpoint;
  std::string out = "model";
  bool merge = false;
};

void run_export(const ExportFlags& f) {
  const run::Exported done = run::export_checkpoint(f.checkpoint.checkpoint, f.out, f.merge);
  if (done.adapter) {
    std::fprintf(out(),
                 "wrote %s: adapter_model.safetensors, adapter_config.json, PEFT's LoRA folder "
                 "(%s, step %lld)\n",
                 printable(f.out).c_str(), done.described.c_str(), (long long)done.step);
    return;
  }
  if (done.folder) {
    std::fprintf(out(),
                 "wrote %s: model.safetensors, config.json, generation_config.json, "
                 "tokenizer.json, tokenizer_config.json (%s, step %lld)\n",
                 printable(f.out).c_str(), done.described.c_str(), (long long)done.step);
    return;
  }
  std::fprintf(out(), "wrote %s and %s (%s, step %lld)\n", printable(f.out).c_str(),
               printable(done.config).c_str(), done.described.c_str(), (long long)done.step);
}

void add_export_command(CLI::App& root) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* app = root.add_subcommand("export");
  describe_command(*app);
  add_checkpoint_flag(app, flags->checkpoint);
  app->add_option("--out", flags->out,
                  "the folder to write (made if new, with the folders it is in) [model]; a name "
                  "ending in .safetensors writes the weights alone, with config.json beside them");
  app->add_flag("--merge", flags->merge,
                "a LoRA checkpoint: its base with the adapters merged in, as a GPT (without it, "
                "the adapters alone as PEFT's folder)");
  app->callback([flags] { run_export(*flags); });
}

const bool export_registered = register_command(60, add_export_command);

}  // namespace
}  // namespace zerodp::cli

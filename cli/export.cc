// zerodp export: a checkpoint's weights as a Hugging Face GPT-2 model.safetensors and
// config.json, streamed from the shards one tensor at a time.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

#include "command.h"
#include "model_flags.h"
#include "zerodp/common/error.h"
#include "zerodp/hf/gpt_export.h"
#include "zerodp/run/checkpoint_model.h"

namespace zerodp::cli {
namespace {

struct ExportFlags {
  CheckpointFlags checkpoint;
  std::string out = "model.safetensors";
};

// --out and the config.json beside it must be new files of their own: never a folder, never
// a file of a checkpoint (a manifest or a shard replaced is a run lost).
void check_out(const std::string& out) {
  namespace fs = std::filesystem;
  if (out.empty() || fs::path(out).filename().empty()) {
    throw UsageError("--out: expected a file name such as model.safetensors, got " + quote(out));
  }
  std::error_code ec;
  if (fs::is_directory(out, ec)) {
    throw UsageError("--out: " + quote(out) + " is a folder; give a file name such as " +
                     quote((fs::path(out) / "model.safetensors").string()));
  }
  const fs::path parent =
      fs::path(out).parent_path().empty() ? fs::path(".") : fs::path(out).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw UsageError("--out: the folder " + quote(parent.string()) + " does not exist");
  }
  if (const auto folder = checkpoint::checkpoint_containing(out)) {
    throw UsageError("--out: " + quote(out) + " is inside the checkpoint " + quote(*folder) +
                     "; write the export elsewhere, checkpoints hold only their own files");
  }
  const std::string config = hf::config_path_beside(out);
  if (fs::path(out).filename() == "config.json") {
    throw UsageError("--out: " + quote(out) + " is where the config.json goes; name the weights " +
                     "file otherwise, such as model.safetensors");
  }
  if (fs::is_directory(config, ec)) {
    throw UsageError("--out: " + quote(config) + ", the config.json beside it, is a folder");
  }
  check_output_file(out, "--out", "a file such as model.safetensors");
  check_output_file(config, "--out", "weights whose config.json beside them can be written");
}

void run_export(const ExportFlags& f) {
  check_out(f.out);
  // Only the manifest and one tensor at a time are held: the reader pulls each tensor's range
  // out of whichever shards hold it.
  run::LoadedModel loaded =
      run::load_gpt(f.checkpoint.checkpoint, f.checkpoint.data, /*read_params=*/false);
  const checkpoint::Checkpoint& ck = loaded.checkpoint;
  hf::export_gpt2_safetensors(
      loaded.spec.gpt(),
      [&ck](std::size_t offset, std::span<float> out) {
        ck.read({offset, out.size()}, out.data(), nullptr, nullptr);
      },
      f.out);
  const std::string config = hf::config_path_beside(f.out);
  hf::write_gpt2_config(loaded.spec.gpt(), config);
  std::printf("wrote %s and %s (%s, step %lld)\n", printable(f.out).c_str(),
              printable(config).c_str(), loaded.spec.describe().c_str(),
              (long long)ck.state().step);
}

void add_export_command(CLI::App& root) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* app = root.add_subcommand(
      "export", "Write a checkpoint as Hugging Face GPT-2 safetensors + config.json");
  add_checkpoint_flag(app, flags->checkpoint);
  app->add_option("--out", flags->out, "the .safetensors file [model.safetensors]");
  app->callback([flags] { run_export(*flags); });
}

const bool registered = register_command(60, add_export_command);

}  // namespace
}  // namespace zerodp::cli

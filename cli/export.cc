// zerodp export: a checkpoint's model as a Hugging Face GPT-2 folder (model.safetensors,
// config.json, generation_config.json and a byte-level tokenizer), or as a .safetensors file
// with its config.json beside it; the weights streamed from the shards one tensor at a time.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <system_error>

#include "command.h"
#include "model_flags.h"
#include "output.h"
#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/hf/gpt_export.h"
#include "zerodp/run/checkpoint_model.h"

namespace zerodp::cli {
namespace {

struct ExportFlags {
  CheckpointFlags checkpoint;
  std::string out = "model";
};

bool is_weights_file(const std::string& out) {
  return std::filesystem::path(out).extension() == ".safetensors";
}

// What both forms of --out refuse: a path inside a checkpoint (a manifest or a shard replaced
// is a run lost), and a path in no folder that exists.
void refuse_inside_checkpoint(const std::string& out) {
  if (const auto folder = checkpoint::checkpoint_containing(out)) {
    throw UsageError("--out: " + quote(out) + " is inside the checkpoint " + quote(*folder) +
                     "; write the export elsewhere, checkpoints hold only their own files");
  }
}

void require_parent_folder(const std::string& out) {
  namespace fs = std::filesystem;
  const fs::path parent =
      fs::path(out).parent_path().empty() ? fs::path(".") : fs::path(out).parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) {
    throw UsageError("--out: the folder " + quote(parent.string()) + " does not exist");
  }
}

// --out DIR: a new folder, or one that holds nothing but an earlier export's files (each is
// replaced whole), never a link, a file, or a folder inside a checkpoint.
void check_out_folder(const std::string& out) {
  namespace fs = std::filesystem;
  refuse_inside_checkpoint(out);
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(out, ec);
  if (fs::is_symlink(status)) {
    throw UsageError("--out: " + quote(out) +
                     " is a symbolic link; give a folder of the export's own");
  }
  if (fs::exists(status) && !fs::is_directory(status)) {
    const std::string why = unreplaceable_because(out);
    throw UsageError("--out: " + quote(out) + " " + (why.empty() ? "is a file" : why) +
                     "; give a folder for the Hugging Face files, or a name ending in "
                     ".safetensors for the weights and config.json alone");
  }
  if (!fs::exists(status)) {
    require_parent_folder(out);
    return;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (std::find_if(std::begin(hf::kFolderFiles), std::end(hf::kFolderFiles),
                     [&](const char* f) { return name == f; }) == std::end(hf::kFolderFiles)) {
      throw UsageError("--out: " + quote(out) + " holds " + quote(name) +
                       ", which is not an export's file; give a new or empty folder");
    }
  }
  if (ec) throw UsageError("--out: cannot read the folder " + quote(out) + ": " + ec.message());
  for (const char* file : hf::kFolderFiles) {
    check_output_file((fs::path(out) / file).string(), "--out",
                      "a folder whose export files can be replaced");
  }
}

// --out NAME.safetensors and the config.json beside it must be files of their own: never a
// folder, never a file of a checkpoint.
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
  require_parent_folder(out);
  refuse_inside_checkpoint(out);
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
  const bool folder = !is_weights_file(f.out);
  if (folder) {
    check_out_folder(f.out);
  } else {
    check_out(f.out);
  }
  // Only the manifest and one tensor at a time are held: the reader pulls each tensor's range
  // out of whichever shards hold it.
  run::LoadedModel loaded =
      run::load_gpt(f.checkpoint.checkpoint, f.checkpoint.data, /*read_params=*/false);
  const checkpoint::Checkpoint& ck = loaded.checkpoint;
  const hf::ParamReader read = [&ck](std::size_t offset, std::span<float> out) {
    ck.read({offset, out.size()}, out.data(), nullptr, nullptr);
  };
  if (folder) {
    std::error_code ec;
    std::filesystem::create_directory(f.out, ec);
    if (ec) throw Error("--out: cannot make the folder " + quote(f.out) + ": " + ec.message());
    hf::export_gpt2_folder(loaded.spec.gpt(), read, f.out);
    std::fprintf(out(),
                 "wrote %s: model.safetensors, config.json, generation_config.json, "
                 "tokenizer.json, tokenizer_config.json (%s, step %lld)\n",
                 printable(f.out).c_str(), loaded.spec.describe().c_str(),
                 (long long)ck.state().step);
    return;
  }
  hf::export_gpt2_safetensors(loaded.spec.gpt(), read, f.out);
  const std::string config = hf::config_path_beside(f.out);
  hf::write_gpt2_config(loaded.spec.gpt(), config);
  std::fprintf(out(), "wrote %s and %s (%s, step %lld)\n", printable(f.out).c_str(),
               printable(config).c_str(), loaded.spec.describe().c_str(),
               (long long)ck.state().step);
}

void add_export_command(CLI::App& root) {
  auto flags = std::make_shared<ExportFlags>();
  CLI::App* app = root.add_subcommand(
      "export",
      "Write a checkpoint as a Hugging Face GPT-2 folder that transformers loads "
      "(from_pretrained), with a byte-level tokenizer");
  add_checkpoint_flag(app, flags->checkpoint);
  app->add_option("--out", flags->out,
                  "the folder to write (made if new) [model]; a name ending in .safetensors "
                  "writes the weights alone, with config.json beside them");
  app->callback([flags] { run_export(*flags); });
}

const bool export_registered = register_command(60, add_export_command);

}  // namespace
}  // namespace zerodp::cli

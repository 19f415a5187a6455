#include "zerodp/run/export_model.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/hf/gpt_export.h"
#include "zerodp/hf/peft_export.h"
#include "zerodp/run/checkpoint_model.h"

namespace zerodp::run {
namespace {

namespace fs = std::filesystem;

// A file the export will write: nothing or a regular file there, in a folder it can write in
// (common/file.h), checked before the checkpoint is read.
void check_output_file(const std::string& path, const std::string& expected) {
  if (const std::string why = unreplaceable_because(path); !why.empty()) {
    throw InvalidArgument("out", field_ref("out") + ": " + shown(path, 160) + " " + why +
                                     "; give the path of " + expected);
  }
}

bool is_weights_file(const std::string& out) {
  return fs::path(out).extension() == ".safetensors";
}

// What both forms of out refuse: a path inside a checkpoint (a manifest or a shard replaced
// is a run lost), and a path in no folder that exists.
void refuse_inside_checkpoint(const std::string& out) {
  if (const auto folder = checkpoint::checkpoint_containing(out)) {
    throw InvalidArgument("out", field_ref("out") + ": " + shown(out, 160) +
                                     " is inside the checkpoint " + shown(*folder, 160) +
                                     "; write the export elsewhere, checkpoints hold only their "
                                     "own files");
  }
}

fs::path parent_of(const fs::path& out) {
  return out.parent_path().empty() ? fs::path(".") : out.parent_path();
}

// The folder an export folder `out` names: "model/" is "model".
fs::path folder_target(const std::string& out) {
  fs::path target(out);
  if (target.filename().empty()) target = target.parent_path();
  return target;
}

// The folder `out` goes in exists, or can be made as save_pretrained makes it (common/file.h:
// never through a link); checked before the checkpoint is read, made once it has been. Returns
// whether it exists already.
bool require_parent_folder(const std::string& out) {
  const fs::path parent = parent_of(fs::path(out));
  if (const std::string why = folders_unmakeable_because(parent.string()); !why.empty()) {
    throw InvalidArgument("out", field_ref("out") + ": the folder " + shown(parent.string(), 160) +
                                     " cannot be made or written: " + why);
  }
  std::error_code ec;
  return fs::is_directory(parent, ec);
}

// A file an export writes into a folder: a Hugging Face folder's or a PEFT adapter folder's.
bool is_export_file(const std::string& name) {
  auto named = [&](const char* f) { return name == f; };
  return std::any_of(std::begin(hf::kFolderFiles), std::end(hf::kFolderFiles), named) ||
         std::any_of(std::begin(hf::kAdapterFiles), std::end(hf::kAdapterFiles), named);
}

// A folder out: a new one, or one that holds nothing but an earlier export's files (replaced
// as a whole), never a link, a file, or a folder inside a checkpoint.
void check_out_folder(const std::string& out) {
  refuse_inside_checkpoint(out);
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(out, ec);
  if (fs::is_symlink(status)) {
    throw InvalidArgument("out", field_ref("out") + ": " + shown(out, 160) +
                                     " is a symbolic link; give a folder of the export's own");
  }
  if (fs::exists(status) && !fs::is_directory(status)) {
    const std::string why = unreplaceable_because(out);
    throw InvalidArgument("out", field_ref("out") + ": " + shown(out, 160) + " " +
                                     (why.empty() ? "is a file" : why) +
                                     "; give a folder for the Hugging Face files, or a name "
                                     "ending in .safetensors for the weights and config.json "
                                     "alone");
  }
  if (!fs::exists(status)) {
    require_parent_folder(folder_target(out).string());
    return;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_export_file(name) || entry.is_symlink(ec) || !entry.is_regular_file(ec)) {
      throw InvalidArgument("out", field_ref("out") + ": " + shown(out, 160) + " holds " +
                                       shown(name) +
                                       ", which is not an export's file; give a new or empty "
                                       "folder");
    }
  }
  if (ec) {
    throw InvalidArgument("out", field_ref("out") + ": cannot read the folder " + shown(out, 160) +
                                     ": " + ec.message());
  }
}

// A .safetensors out and the config.json beside it must be files of their own: never a
// folder, never a file of a checkpoint.
void check_out_file(const std::string& out) {
  if (out.empty() || fs::path(out).filename().empty()) {
    throw InvalidArgument::expected("out", "a file name such as model.safetensors", out);
  }
  std::error_code ec;
  if (fs::is_directory(out, ec)) {
    throw InvalidArgument("out", field_ref("out") + ": " + shown(out, 160) +
                                     " is a folder; give a file name such as " +
                                     shown((fs::path(out) / "model.safetensors").string(), 160));
  }
  const bool parent_exists = require_parent_folder(out);
  refuse_inside_checkpoint(out);
  const std::string config = hf::config_path_beside(out);
  if (fs::path(out).filename() == "config.json") {
    throw InvalidArgument("out", field_ref("out") + ": " + shown(out, 160) +
                                     " is where the config.json goes; name the weights file "
                                     "otherwise, such as model.safetensors");
  }
  if (fs::is_directory(config, ec)) {
    throw InvalidArgument("out", field_ref("out") + ": " + shown(config, 160) +
                                     ", the config.json beside it, is a folder");
  }
  if (!parent_exists) return;  // nothing is there yet to refuse
  check_output_file(out, "a file such as model.safetensors");
  check_output_file(config, "weights whose config.json beside them can be written");
}

// The folder a new export of `name` is written in before it takes its place.
std::string staging_prefix(const std::string& name) {
  return "." + name + ".export-";
}

// Staging folders of `name` left by exports killed midway: their process is gone.
void remove_stale_staging(const fs::path& parent, const std::string& name) {
  const std::string prefix = staging_prefix(name);
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    const std::string n = entry.path().filename().string();
    if (n.rfind(prefix, 0) != 0 || entry.is_symlink(ec) || !entry.is_directory(ec)) continue;
    const std::string pid_text = n.substr(prefix.size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos ||
        pid_text.size() > 9) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(entry, ec);
  }
}

// Removes an old export folder, now at `old`: its export files, then the folder; anything
// else put there since the check stays. `old` is whatever the exchange swapped out, which a
// race may have made a link between the check and the rename: it is opened without following
// a link and its files removed relative to that descriptor, so no file a link points at is
// touched; a link itself is removed as a name.
void remove_old_export(const fs::path& old) {
  const int dir = ::open(old.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) {
    struct stat st {};
    if (::lstat(old.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) ::unlink(old.c_str());
    return;
  }
  for (const char* file : hf::kFolderFiles) ::unlinkat(dir, file, 0);
  for (const char* file : hf::kAdapterFiles) ::unlinkat(dir, file, 0);
  ::close(dir);
  ::rmdir(old.c_str());  // only when empty: nothing else put there is removed
}

// write(dir) writes the export's files into the new folder `dir`.
void export_folder(const std::function<void(const std::string&)>& write, const std::string& out) {
  const fs::path target = folder_target(out);
  const fs::path parent = parent_of(target);
  const std::string name = target.filename().string();
  remove_stale_staging(parent, name);
  const fs::path staging = parent / (staging_prefix(name) + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(staging, ec);  // this process's own, from an export before in this process
  if (::mkdir(staging.c_str(), 0755) != 0) {
    throw Error(field_ref("out") + ": cannot make the folder " + shown(staging.string(), 160) +
                ": " + errno_text());
  }
  try {
    write(staging.string());
    fsync_dir(staging.string());
    const bool replacing = fs::exists(fs::symlink_status(target, ec));
    // One rename puts the whole new folder in place: beside nothing (NOREPLACE: a folder made
    // there meanwhile is not overwritten), or in exchange for the old export.
    if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(),
                    replacing ? RENAME_EXCHANGE : RENAME_NOREPLACE) != 0) {
      throw Error(field_ref("out") + ": cannot put the export in place at " +
                  shown(target.string(), 160) + ": " + errno_text());
    }
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  fsync_dir(parent.string());
  remove_old_export(staging);  // after an exchange, the old export; else nothing is there
}

}  // namespace

Exported export_checkpoint(const std::string& checkpoint, const std::string& out, bool merge) {
  const bool folder = !is_weights_file(out);
  if (folder) {
    check_out_folder(out);
  } else {
    check_out_file(out);
  }
  // Only the manifest and one tensor at a time are held: the reader pulls each tensor's range
  // out of whichever shards hold it.
  const LoadedModel loaded = load_gpt(checkpoint, CheckpointData::none, "", /*read_params=*/false);
  const bool lora = loaded.spec.lora();
  if (merge && !lora) {
    throw InvalidArgument(
        "merge", field_ref("merge") + ": " + printable(loaded.checkpoint.folder(), 160) +
                     " holds no LoRA adapters to merge; export it without " + field_ref("merge"));
  }
  if (lora && !merge && !folder) {
    throw InvalidArgument("out", field_ref("out") + ": " +
                                     printable(loaded.checkpoint.folder(), 160) +
                                     " holds LoRA adapters, which export as a PEFT folder: give "
                                     "a folder, or " +
                                     field_ref("merge") + " for the merged weights");
  }
  const checkpoint::Checkpoint& ck = loaded.checkpoint;
  hf::ParamReader read = [&ck](std::size_t offset, std::span<float> values) {
    ck.read({offset, values.size()}, values.data(), nullptr, nullptr);
  };
  // What is written: the checkpoint's GPT; a LoRA checkpoint's adapters as PEFT's folder; or,
  // merged, its base with the adapters added in, as a GPT without LoRA.
  model::GptConfig config = loaded.spec.gpt();
  if (merge) {
    std::vector<float> adapters(ck.params());
    read(0, adapters);
    const checkpoint::Checkpoint* base = loaded.spec.base();
    hf::ParamReader read_base = [base](std::size_t offset, std::span<float> values) {
      base->read({offset, values.size()}, values.data(), nullptr, nullptr);
    };
    if (loaded.spec.nf4()) {
      // QLoRA's adapters were trained beside the dequantized base: merged into it, as PEFT's
      // merge_and_unload does on a 4-bit base (each weight dequantized, then added to).
      auto dequantized = std::make_shared<std::vector<float>>(base->params());
      read_base(0, *dequantized);
      dequantize_nf4_base(config, loaded.spec.double_quant(), *dequantized);
      read_base = [dequantized](std::size_t offset, std::span<float> values) {
        std::copy_n(dequantized->begin() + std::ptrdiff_t(offset), values.size(), values.begin());
      };
    }
    read = hf::merged_reader(config, std::move(read_base), std::move(adapters));
    config.lora_rank = 0;
  }
  Exported done{loaded.spec.describe(), ck.state().run_step, folder, {}};
  done.adapter = lora && !merge;
  done.merged = merge;
  if (merge) done.described = "merged into its base: " + done.described;
  // The folders out needs, made only now that the checkpoint has been read, and removed again
  // (when still empty) if the export fails.
  const std::vector<std::string> made =
      make_folders(parent_of(folder ? folder_target(out) : fs::path(out)).string());
  try {
    if (done.adapter) {
      const std::string base = loaded.spec.base()->folder();
      export_folder(
          [&](const std::string& dir) { hf::export_peft_adapter(config, read, base, dir); }, out);
      return done;
    }
    if (folder) {
      export_folder([&](const std::string& dir) { hf::export_gpt2_folder(config, read, dir); },
                    out);
      return done;
    }
    hf::export_gpt2_safetensors(config, read, out);
    done.config = hf::config_path_beside(out);
    hf::write_gpt2_config(config, done.config);
  } catch (...) {
    for (auto it = made.rbegin(); it != made.rend(); ++it) ::rmdir(it->c_str());
    throw;
  }
  return done;
}

}  // namespace zerodp::run

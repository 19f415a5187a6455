// A checkpoint's GPT written for Hugging Face transformers (`zerodp export`): a folder of
// model.safetensors, config.json, generation_config.json and a byte-level tokenizer, or a
// .safetensors file with its config.json beside it; the weights streamed from the shards one
// tensor at a time.
//
// Contract:
//  - Where it writes is checked before anything is read (UsageError naming the field "out"):
//    never inside a checkpoint, never through a symbolic link, and a folder replaced only when
//    it holds nothing but an earlier export's files.
//  - A folder is replaced as a whole or not at all: every file is written into a new folder
//    beside it, which then takes its place in one rename (an exchange, RENAME_EXCHANGE, when
//    an export is there). A failure leaves the old folder as it was and removes the new one;
//    a process killed midway leaves the old folder as it was and, beside it, a folder
//    `.<name>.export-<pid>` that the next export of that name removes.
//  - A .safetensors file and its config.json are each written atomically (AtomicFile), the
//    weights first.
#pragma once

#include <string>

#include "zerodp/run/checkpoint_model.h"

namespace zerodp::run {

// What an export wrote, for the line that says so.
struct Exported {
  std::string described;  // the model (ModelSpec::describe())
  std::int64_t step = 0;  // the checkpoint's step
  bool folder = true;     // a folder, or a .safetensors file and its config.json
  std::string config;     // the config.json beside a .safetensors file
  bool adapter = false;   // a LoRA checkpoint's adapters, as PEFT's folder
  bool merged = false;    // a LoRA checkpoint's base with its adapters merged in
};

// Exports the GPT of `checkpoint` (a checkpoint folder or a save dir) to `out`: a name ending
// in .safetensors writes that file and config.json beside it, anything else a folder.
// A LoRA checkpoint exports its adapters as PEFT's folder (adapter_model.safetensors and
// adapter_config.json, hf/peft_export.h); with `merge`, its base with the adapters merged in,
// as any GPT (the base read from its checkpoint one tensor at a time, the adapters whole).
// Only the checkpoints are read, never a corpus. Throws UsageError for an `out` it will not
// write, for `merge` without adapters and for adapters to a .safetensors name; Error when a
// checkpoint cannot be read or a write fails.
Exported export_checkpoint(const std::string& checkpoint, const std::string& out,
                           bool merge = false);

}  // namespace zerodp::run

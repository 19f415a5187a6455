// Fuzz target: the readers of the files a user hands the planner, a DeepSpeed config
// (deepspeed::parse_deepspeed_config), a Hugging Face config.json
// (catalog::parse_model_config) and a PEFT adapter_config.json (catalog::parse_adapter_config),
// on any bytes; the first byte chooses the reader (2: the adapter's; else odd: the model's).
//
// Properties, for every input:
//  - each reader returns a config or throws UsageError; nothing else escapes, nothing
//    crashes, no undefined behaviour (ASan + UBSan), whatever the nesting or the numbers;
//  - the error is one line that names the source, holds no control character and is short
//    (values from the file are shown cut), so a file can neither forge terminal lines nor
//    print a megabyte;
//  - a config read is one a plan can use: a DeepSpeed config's summary is one printable line
//    and it applies to the planner's inputs without failing; a model config's parameter count
//    is exact (no saturation) and its activations for one sequence either fit in 64 bits or
//    say they do not; an adapter's rank and targets count adapters on Llama-2-7B, or are
//    refused in one short line, and so do its saved tensors.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "zerodp/catalog/lora.h"
#include "zerodp/catalog/models.h"
#include "zerodp/common/error.h"
#include "zerodp/deepspeed/config.h"
#include "zerodp/report/settings.h"

namespace {

using namespace zerodp;

constexpr std::string_view kSource = "fuzzed.json";

[[noreturn]] void fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "configs fuzzer: %s: %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

bool has_control(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

// A message a user may be shown: one line, no control characters (the command line escapes
// them anyway; a library message must not need it for its own text), short, naming the file.
void check_message(std::string_view message) {
  if (message.rfind(kSource, 0) != 0) fail("an error that does not name the file", message);
  if (message.size() > 600) fail("an error longer than 600 bytes", message.substr(0, 600));
  if (message.find('\n') != std::string_view::npos) fail("an error of several lines", message);
}

void read_deepspeed(std::string_view text) {
  deepspeed::DeepSpeedConfig config;
  try {
    config = deepspeed::parse_deepspeed_config(text, std::string(kSource));
  } catch (const UsageError& e) {
    check_message(escape_controls(e.what()));
    return;
  }
  const std::string summary = deepspeed::deepspeed_config_summary(config);
  if (has_control(summary)) fail("a summary with control characters", summary);
  for (const std::string& key : config.unknown) {
    if (has_control(key) || key.size() > 200) fail("an unknown key shown raw or long", key);
  }
  report::PlanInputs in;
  report::SharedSettings given;
  given.seq_len_given = true;
  (void)report::apply_deepspeed_config(config, std::string(kSource), given, 4096, in);
}

void read_model(std::string_view text) {
  catalog::ModelConfig config;
  try {
    config = catalog::parse_model_config(text, std::string(kSource));
  } catch (const UsageError& e) {
    check_message(escape_controls(e.what()));
    return;
  }
  const catalog::ModelParams p = catalog::model_params(config);
  if (p.params == 0 || p.params > (std::uint64_t{1} << 56)) {
    fail("a model accepted with a parameter count out of range", std::to_string(p.params));
  }
  if (p.active_params > p.params || p.largest_layer_params > p.params) {
    fail("active or largest-layer parameters above the total", std::to_string(p.params));
  }
  (void)catalog::model_activation_bytes(config, 1, 1, plan::Checkpointing::none,
                                        catalog::Attention::eager);
}

// A refusal of what the file asks of a model: one short line naming the flag.
void check_flag_message(std::string_view message, std::string_view flag) {
  if (message.rfind(flag, 0) != 0) fail("an error that does not name the flag", message);
  if (message.size() > 1200) fail("an error longer than 1200 bytes", message.substr(0, 1200));
  if (has_control(message)) fail("an error with control characters", message);
}

void read_adapter(std::string_view text) {
  catalog::LoraSettings lora;
  try {
    lora = catalog::parse_adapter_config(text, std::string(kSource));
  } catch (const UsageError& e) {
    check_message(escape_controls(e.what()));
    return;
  }
  if (lora.rank == 0 || lora.targets.empty()) fail("an adapter read without rank or targets", "");
  static const catalog::ModelConfig llama =
      catalog::parse_model_config(catalog::find_model("llama-2-7b")->config_json, "llama-2-7b");
  try {
    const catalog::LoraCount count =
        catalog::lora_count(llama, lora.rank, lora.targets, "target_modules");
    (void)catalog::saved_module_params(llama, lora.modules_to_save, "modules_to_save");
    catalog::LoraShape shape{lora.rank, lora.dropout, {}, false};
    for (const catalog::LoraTarget& t : count.targets) shape.adapted.push_back(t.name);
    (void)catalog::lora_activation_bytes(llama, 16, 1, plan::Checkpointing::none,
                                         catalog::Attention::eager, shape, "--adapter-config");
  } catch (const UsageError& e) {
    const std::string message = e.what();
    check_flag_message(message, message.rfind("modules_to_save", 0) == 0  ? "modules_to_save"
                                : message.rfind("target_modules", 0) == 0 ? "target_modules"
                                                                          : "--adapter-config");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 2) {
    read_adapter(text);
  } else if (data[0] & 1) {
    read_model(text);
  } else {
    read_deepspeed(text);
  }
  return 0;
}

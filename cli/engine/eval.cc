// zerodp eval: the mean loss of a trained GPT over a file (or its corpus's validation split),
// so any other implementation can be compared on the same tokens.
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "engine_flags.h"
#include "help.h"
#include "model_flags.h"
#include "output.h"
#include "zerodp/common/json_utf8.h"
#include "zerodp/common/units.h"
#include "zerodp/run/checkpoint_model.h"

namespace zerodp::cli {
namespace {

struct EvalFlags {
  CheckpointFlags checkpoint;
  std::string batch = "8";
  bool json = false;
};

constexpr std::uint64_t kMaxEvalBatch = 1 << 16;

// The weights (fp32) and one pass's activations must fit in this machine's memory.
void check_eval_memory(const run::ModelSpec& spec, std::size_t batch) {
  run::check_fits_in_memory(4 * (spec.param_count() + spec.frozen_param_count()),
                            spec.activation_bytes(batch), 1, "--checkpoint", "--batch");
}

void run_eval(const EvalFlags& f) {
  // More windows per pass than this only costs memory: the loss is a sum over windows.
  const auto batch =
      static_cast<std::size_t>(units::parse_whole_in(f.batch, "--batch", 1, kMaxEvalBatch));
  run::LoadedModel loaded =
      run::load_gpt(f.checkpoint.checkpoint, run::CheckpointData::corpus, f.checkpoint.data);
  const model::GptConfig& cfg = loaded.spec.gpt();
  const auto T = static_cast<std::size_t>(cfg.seq_len);
  // A file given: all of it is evaluated (the spec reads it as a 100 % validation split).
  // None: the validation split of the training corpus.
  const data::TextData& data = *loaded.spec.data();
  check_eval_memory(loaded.spec, batch);
  model::GptModel gpt(cfg);
  const std::uint64_t windows = data.validation_windows();
  std::vector<std::uint8_t> bytes(batch * (T + 1));
  double sum = 0;
  std::uint64_t tokens = 0;
  for (std::uint64_t first = 0; first < windows; first += batch) {
    const std::size_t n = std::min<std::uint64_t>(batch, windows - first);
    for (std::size_t b = 0; b < n; ++b) {
      data.window(data::Split::validation, 0, first + b, {bytes.data() + b * (T + 1), T + 1});
    }
    gpt.begin_micro_batch({.samples = n, .tokens = {bytes.data(), n * (T + 1)}});
    model::forward_all(gpt, loaded.params, loaded.frozen);
    for (float l : gpt.losses()) sum += l;
    tokens += n * T;
  }
  const double loss = sum / double(tokens);
  if (!std::isfinite(loss)) {
    char what[32];
    std::snprintf(what, sizeof what, "%g", loss);
    throw Error(quote(f.checkpoint.checkpoint) + ": its weights give a loss of " + what + " on " +
                std::to_string(tokens) +
                " tokens; they are not a trained model (the run that saved them diverged)");
  }
  if (f.json) {
    const nlohmann::json j = {{"loss", loss},
                              {"tokens", tokens},
                              {"windows", windows},
                              {"checkpoint", loaded.checkpoint.folder()},
                              {"data", data.describe()}};
    std::fprintf(out(), "%s\n", utf8_dump(j, 2).c_str());
  } else {
    std::fprintf(out(), "%s\nloss %.6f nats per byte over %llu tokens (%llu windows of %zu)\n",
                 data.describe().c_str(), loss, (unsigned long long)tokens,
                 (unsigned long long)windows, T);
  }
}

void add_eval_command(CLI::App& root) {
  auto flags = std::make_shared<EvalFlags>();
  CLI::App* app = root.add_subcommand("eval");
  describe_command(*app);
  add_checkpoint_flag(app, flags->checkpoint);
  app->add_option("--data", flags->checkpoint.data,
                  "the file to evaluate, all of it [the training corpus's validation split]");
  app->add_option("--batch", flags->batch, "windows per forward pass [8]");
  app->add_flag("--json", flags->json, "print {\"loss\": ...} as JSON");
  app->callback([flags] { run_eval(*flags); });
}

const bool eval_registered = register_command(40, add_eval_command);

}  // namespace
}  // namespace zerodp::cli

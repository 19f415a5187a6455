#include "zerodp/run/resume_rules.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <vector>

#include "run/shown_json.h"
#include "zerodp/common/error.h"
#include "zerodp/run/model_spec.h"

namespace zerodp::run {
namespace {

using nlohmann::json;

// A recorded value as a note or a refusal shows it: a string (a path of up to 4096 bytes) as
// printed, escaped and cut to a line's length.
constexpr std::size_t kShownChars = 160;
std::string shown_value(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return s.empty() ? "(the default)" : printable(s, kShownChars);
  }
  if (v.is_number_float()) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v.get<double>());
    return text;
  }
  return shown_json(v);
}

// The data a run reads, as a person tells it apart: its path and its bytes' fingerprint.
std::string data_of(const json& run) {
  const std::string path = run.value("data", std::string());
  return (path.empty() ? std::string("the default corpus") : printable(path, kShownChars)) + " (" +
         printable(run.value("data_fingerprint", std::string("?")), kShownChars) + ")";
}

// Each refusal below returns its message, or "" when the run keeps the checkpoint's value, so
// that one message can name every difference at once.
std::string refuse_data(const std::string& folder, const json& saved, const json& run) {
  if (!saved.contains("data_fingerprint")) return {};
  if (saved.at("data_fingerprint") == run.at("data_fingerprint")) return {};
  return field_ref("data") + ": the checkpoint " + folder + " was trained on " + data_of(saved) +
         ", this run reads " + data_of(run) +
         "; its data position counts windows of those bytes (resume with them, or start a new "
         "run)";
}

std::string refuse_data_seed(const std::string& folder, const json& saved_model, const json& run) {
  if (!saved_model.contains("data_seed") || saved_model.at("data_seed") == run.at("data_seed"))
    return {};
  return field_ref("data_seed") + ": the checkpoint " + folder + " drew its samples with " +
         field_ref("data_seed") + " " + shown_value(saved_model.at("data_seed")) +
         ", this run asks " + shown_value(run.at("data_seed")) +
         "; another order of windows mid-run would repeat some and skip others (resume with " +
         field_ref("data_seed") + " " + shown_value(saved_model.at("data_seed")) +
         ", or start a new run)";
}

std::string refuse_precision(const std::string& folder, const json& saved, const json& run) {
  if (!saved.contains("precision") || saved.at("precision") == run.at("precision")) return {};
  return field_ref("precision") + ": the checkpoint " + folder + " trained in " +
         shown_value(saved.at("precision")) + ", this run asks " +
         shown_value(run.at("precision")) +
         "; the loss-scale state and the 16-bit rounding belong to its precision (resume with " +
         field_ref("precision") + " " + shown_value(saved.at("precision")) + ")";
}

std::string refuse_optimizer(const std::string& folder, const json& saved, const json& run) {
  if (!saved.contains("optimizer") || saved.at("optimizer") == run.at("optimizer")) return {};
  return field_ref("optimizer") + ": the checkpoint " + folder + " was trained with " +
         shown_value(saved.at("optimizer")) + ", this run asks " +
         shown_value(run.at("optimizer")) + "; its state slots are " +
         shown_value(saved.at("optimizer")) + "'s (resume with " + field_ref("optimizer") + " " +
         shown_value(saved.at("optimizer")) + ", or start a new run)";
}

std::string rank_choices(std::uint64_t global) {
  std::string out;
  int listed = 0;
  for (std::uint64_t n = 1; n <= global && n <= 1024 && listed < 12; ++n) {
    if (global % n) continue;
    out += (listed++ ? ", " : "") + std::to_string(n);
  }
  return out;
}

// The largest divisor of `share` not above `asked` (1 divides everything).
std::uint64_t micro_batch_for(std::uint64_t share, std::uint64_t asked) {
  for (std::uint64_t b = std::min(share, asked); b > 1; --b) {
    if (share % b == 0) return b;
  }
  return 1;
}

// A whole-number field of a checkpoint's run record, or Error naming it: a manifest edited by
// hand must not turn into a wrapped count or a library's exception.
std::uint64_t saved_count(const std::string& folder, const json& saved, const char* key) {
  const json& v = saved.at(key);
  if (!v.is_number_unsigned()) {
    throw Error(folder + "/manifest.json: run." + key + " is " + quote(shown_json(v)) +
                ", expected a whole number");
  }
  return v.get<std::uint64_t>();
}

// The global batch kept on `ranks`; fills the plan's split and its line.
void plan_batch(const std::string& folder, const json& saved, int saved_ranks, const json& run,
                int ranks, ResumePlan& plan) {
  const std::uint64_t old_b = saved_count(folder, saved, "micro_batch");
  const std::uint64_t old_k = saved_count(folder, saved, "grad_accum");
  std::uint64_t global = 0;
  if (old_b == 0 || old_k == 0 || old_k > std::uint64_t(std::numeric_limits<int>::max()) ||
      __builtin_mul_overflow(std::uint64_t(saved_ranks) * old_b, old_k, &global) ||
      global / old_k / old_b != std::uint64_t(saved_ranks)) {
    throw Error(folder + "/manifest.json: run.micro_batch and run.grad_accum are not a batch " +
                "that can be true");
  }
  const std::string split = std::to_string(saved_ranks) + " ranks x micro-batch " +
                            std::to_string(old_b) + " x grad-accum " + std::to_string(old_k);
  if (global % std::uint64_t(ranks) != 0) {
    throw InvalidArgument(
        field_ref("ranks") + ": the checkpoint " + folder + " trained with a global batch of " +
        std::to_string(global) + " samples per step (" + split + "); " + std::to_string(ranks) +
        " ranks cannot split it evenly; resume on " + rank_choices(global) + " ranks");
  }
  const std::uint64_t share = global / std::uint64_t(ranks);
  const auto asked_b = run.at("micro_batch").get<std::uint64_t>();
  const auto asked_k = run.at("grad_accum").get<std::uint64_t>();
  std::uint64_t b = asked_b, k = asked_k;
  if (b * k != share) {
    b = micro_batch_for(share, asked_b);
    k = share / b;
  }
  if (k > std::uint64_t(std::numeric_limits<int>::max())) {
    throw InvalidArgument(field_ref("micro_batch") + ": " + std::to_string(asked_b) + " leaves " +
                          std::to_string(k) + " micro-steps per step to keep the global batch of " +
                          std::to_string(global) + "; ask for a larger micro-batch");
  }
  plan.micro_batch = static_cast<std::size_t>(b);
  plan.grad_accum = static_cast<int>(k);
  if (b == asked_b && k == asked_k && b == old_b && k == old_k) return;
  plan.notes.push_back(
      "resume: global batch of " + std::to_string(global) + " samples per step kept on " +
      std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") + ": micro-batch " +
      std::to_string(b) + " x grad-accum " + std::to_string(k) + " (the checkpoint ran " + split +
      "; this run asked " + std::to_string(asked_b) + " x " + std::to_string(asked_k) + ")");
}

// Settings a resume may change: said, with what the change does.
void note_changes(const json& saved, const json& run, ResumePlan& plan) {
  // Each by its key in the run record, which is also the input's field.
  static const struct {
    const char *field, *effect;
  } kAllowed[] = {
      {"steps", "the cosine schedule now ends there"},
      {"lr", "the learning-rate schedule changes from the next step"},
      {"warmup", "the learning-rate schedule changes from the next step"},
      {"clip", "gradient clipping changes from the next step"},
      {"seed", "no effect: the weights come from the checkpoint"},
      {"eval_every", "validation only"},
      {"eval_batches", "validation only"},
      {"data", "the same bytes at another path"},
  };
  std::vector<std::string> unknown;
  for (const auto& a : kAllowed) {
    if (!saved.contains(a.field)) {
      unknown.push_back(field_ref(a.field));
    } else if (saved.at(a.field) != run.at(a.field)) {
      plan.notes.push_back("resume: " + field_ref(a.field) + " " + shown_value(run.at(a.field)) +
                           " (the checkpoint's run: " + shown_value(saved.at(a.field)) +
                           "): " + a.effect);
    }
  }
  // The GPT's threads order its gradients' sums (a checkpoint without them computed on one).
  const json saved_threads = saved.value("threads", json(1));
  if (run.contains("threads") && saved_threads != run.at("threads")) {
    plan.notes.push_back("resume: " + field_ref("threads") + " " + shown_value(run.at("threads")) +
                         " (the checkpoint's run: " + shown_value(saved_threads) +
                         "): the gradients sum in another order from the next step");
  }
  for (const char* f : {"precision", "data_fingerprint"}) {
    if (!saved.contains(f))
      unknown.push_back(f == std::string("precision") ? field_ref("precision")
                                                      : "the data's bytes");
  }
  if (unknown.empty()) return;
  std::string line = "resume: the checkpoint does not record";
  for (std::size_t i = 0; i < unknown.size(); ++i) line += (i ? ", " : " ") + unknown[i];
  plan.notes.push_back(line + "; not compared");
}

// The model's shape: the weights have it. One message per field that differs, each naming its
// input, as the other refusals do.
std::vector<std::string> refuse_model_shape(const std::string& folder, const json& saved_model,
                                            const json& model) {
  std::vector<std::string> refusals;
  for (const ConfigField& field : kConfigFields) {
    if (!field.shape) continue;
    const json saved = saved_model.value(field.key, json()), asked = model.value(field.key, json());
    if (saved == asked) continue;
    // --params sets both of the MLP's width and depth: one message for the input.
    const std::string name = field.name();
    if (std::any_of(refusals.begin(), refusals.end(),
                    [&](const std::string& r) { return r.rfind(name + ":", 0) == 0; })) {
      continue;
    }
    refusals.push_back(name + ": the checkpoint " + folder + " holds a model with " + field.key +
                       " " + (saved.is_null() ? "absent" : shown_json(saved)) + ", this run asks " +
                       (asked.is_null() ? "absent" : shown_json(asked)) +
                       "; the weights have that shape (resume with the checkpoint's " + name + ")");
  }
  return refusals;
}

}  // namespace

void refuse_resume_changes(const std::string& folder, const json& saved_run,
                           const json& saved_model, const json& model, const json& run) {
  std::vector<std::string> refusals = refuse_model_shape(folder, saved_model, model);
  for (std::string refusal :
       {refuse_data_seed(folder, saved_model, run), refuse_data(folder, saved_run, run),
        refuse_precision(folder, saved_run, run), refuse_optimizer(folder, saved_run, run)}) {
    if (!refusal.empty()) refusals.push_back(std::move(refusal));
  }
  if (refusals.empty()) return;
  std::string line = refusals[0];
  for (std::size_t i = 1; i < refusals.size(); ++i) line += "; and " + refusals[i];
  throw InvalidArgument(line);
}

ResumePlan plan_resume(const std::string& folder, const json& saved_run, int saved_ranks,
                       const json& run, int ranks) {
  ResumePlan plan;
  plan.micro_batch = run.at("micro_batch").get<std::size_t>();
  plan.grad_accum = run.at("grad_accum").get<int>();
  if (saved_run.contains("micro_batch") && saved_run.contains("grad_accum")) {
    plan_batch(folder, saved_run, saved_ranks, run, ranks, plan);
  } else {
    plan.notes.push_back("resume: the checkpoint does not record its batch; not compared");
  }
  note_changes(saved_run, run, plan);
  return plan;
}

}  // namespace zerodp::run

#include "zerodp/run/run_record.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "run/shown_json.h"
#include "zerodp/common/error.h"
#include "zerodp/common/quantize.h"
#include "zerodp/run/launch.h"
#include "zerodp/run/train_choice.h"

namespace zerodp::run {
namespace {

using nlohmann::json;

// One object of the manifest ("model" or "run") and how its fields are named in messages.
class Fields {
 public:
  Fields(const json& object, std::string prefix) : o_(object), prefix_(std::move(prefix)) {}

  bool has(const char* key) const { return o_.contains(key); }
  const json& at(const char* key) const {
    if (!o_.contains(key)) throw UsageError(name(key) + " is missing");
    return o_.at(key);
  }

  // A whole number from lo to hi written as one: no quotes, no fraction, no sign.
  std::uint64_t whole(const char* key, std::uint64_t lo, std::uint64_t hi) const {
    const json& v = at(key);
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < lo || v.get<std::uint64_t>() > hi) {
      throw UsageError(name(key) + " is " + shown_json(v) + ", expected a whole number from " +
                       std::to_string(lo) + " to " + std::to_string(hi));
    }
    return v.get<std::uint64_t>();
  }
  template <class T>
  std::optional<T> whole_if(const char* key, std::uint64_t lo, std::uint64_t hi) const {
    if (!has(key)) return std::nullopt;
    return static_cast<T>(whole(key, lo, hi));
  }

  // A real number an fp32 holds finitely, > 0 (or >= 0 when zero is allowed).
  std::optional<double> real_if(const char* key, bool zero_allowed) const {
    if (!has(key)) return std::nullopt;
    const json& v = at(key);
    const double d = v.is_number() ? v.get<double>() : NAN;
    if (!v.is_number() || !std::isfinite(static_cast<float>(d)) || d < 0 ||
        (d == 0 && !zero_allowed)) {
      throw UsageError(name(key) + " is " + shown_json(v) + ", expected a number " +
                       (zero_allowed ? ">= 0" : "> 0"));
    }
    return d;
  }

  bool boolean(const char* key, bool absent) const {
    if (!has(key)) return absent;
    const json& v = at(key);
    if (!v.is_boolean())
      throw UsageError(name(key) + " is " + shown_json(v) + ", expected true or false");
    return v.get<bool>();
  }

  // A string of at most max_bytes, without NUL (no path or name holds one).
  std::string text(const char* key, std::size_t max_bytes, const char* what) const {
    const json& v = at(key);
    if (!v.is_string()) throw UsageError(name(key) + " is " + shown_json(v) + ", expected " + what);
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > max_bytes || s.find('\0') != std::string::npos) {
      throw UsageError(name(key) + " is " + zerodp::shown(s) + ", expected " + what +
                       " of at most " + std::to_string(max_bytes) + " bytes");
    }
    return s;
  }
  std::optional<std::string> text_if(const char* key, std::size_t max_bytes,
                                     const char* what) const {
    if (!has(key)) return std::nullopt;
    return text(key, max_bytes, what);
  }

  // One of the words listed.
  std::string word(const char* key, std::initializer_list<const char*> words,
                   const char* expected) const {
    const json& v = at(key);
    if (v.is_string()) {
      for (const char* w : words)
        if (v.get_ref<const std::string&>() == w) return w;
    }
    throw UsageError(name(key) + " is " + shown_json(v) + ", expected " + expected);
  }

  std::string name(const char* key) const { return prefix_ + key; }

 private:
  const json& o_;
  std::string prefix_;
};

// A LoRA run's adapters and base: lora_rank, lora_alpha, lora_targets [...], lora_base (the
// base checkpoint's folder) and lora_base_manifest_sha256, every field in its type and range.
void read_lora(const Fields& l, RecordedModel& r) {
  r.lora_rank = static_cast<int>(l.whole("lora_rank", 1, std::uint64_t(r.hidden)));
  r.lora_alpha = *l.real_if("lora_alpha", false);
  const json& targets = l.at("lora_targets");
  if (!targets.is_array() || targets.empty() || targets.size() > model::kLoraTargets) {
    throw UsageError(l.name("lora_targets") + " is " + shown_json(targets) +
                     ", expected a list of the adapted projections");
  }
  for (const json& t : targets) {
    bool known = false;
    for (int i = 0; i < model::kLoraTargets; ++i) {
      known =
          known || (t.is_string() && t.get_ref<const std::string&>() == model::lora_target_name(i));
    }
    if (!known) {
      throw UsageError(l.name("lora_targets") + " holds " + shown_json(t) +
                       ", expected attn.c_attn, attn.c_proj, mlp.c_fc or mlp.c_proj");
    }
    r.lora_targets += (r.lora_targets.empty() ? "" : ",") + t.get<std::string>();
  }
  r.base = l.text("lora_base", kMaxRecordedPath, "a checkpoint folder");
  const std::string sha = l.text("lora_base_manifest_sha256", 64, "64 hexadecimal digits");
  if (sha.size() != 64 || sha.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw UsageError(l.name("lora_base_manifest_sha256") + " is " + zerodp::shown(sha) +
                     ", expected 64 hexadecimal digits");
  }
  if (l.has("quantize")) {
    r.quantize = l.word("quantize", {"nf4"}, "\"nf4\"");
    r.double_quant = l.boolean("double_quant", true) ? "on" : "off";
  } else if (l.has("double_quant")) {
    throw UsageError(l.name("double_quant") + " is set without " + l.name("quantize"));
  }
}

RecordedModel read_model(const Fields& m) {
  RecordedModel r;
  r.gpt = m.word("type", {"gpt", "mlp"}, "gpt or mlp") == "gpt";
  r.data_seed = m.whole("data_seed", 0, std::numeric_limits<std::uint64_t>::max());
  if (!r.gpt) {
    r.width = m.whole("width", 1, kMaxMlpWidth);
    r.depth = static_cast<int>(m.whole("depth", 1, kMaxMlpDepth));
    return r;
  }
  r.layers = static_cast<int>(m.whole("n_layer", 1, kMaxGptLayers));
  r.heads = static_cast<int>(m.whole("n_head", 1, kMaxGptWidth));
  r.hidden = static_cast<int>(m.whole("n_embd", 1, kMaxGptWidth));
  r.seq_len = static_cast<int>(m.whole("n_positions", 1, kMaxGptWidth));
  if (r.hidden % r.heads != 0) {
    throw UsageError(m.name("n_head") + " " + std::to_string(r.heads) + " does not divide " +
                     m.name("n_embd") + " " + std::to_string(r.hidden));
  }
  if (m.whole("vocab_size", 0, std::numeric_limits<std::uint64_t>::max()) != 256) {
    throw UsageError(m.name("vocab_size") + " is " + shown_json(m.at("vocab_size")) +
                     ", the byte-level GPT has 256");
  }
  r.checkpoint_activations = m.boolean("checkpoint_activations", false);
  if (m.has("compute")) r.compute = m.word("compute", {"fp32", "bf16"}, "fp32 or bf16");
  if (m.has("data")) r.data = m.text("data", kMaxRecordedPath, "a file name");
  if (m.has("lora_rank")) read_lora(m, r);
  return r;
}

RecordedRun read_run(const Fields& r, DType saved_precision) {
  RecordedRun out;
  out.steps = r.whole_if<std::int64_t>("steps", 1, kMaxSteps);
  out.warmup = r.whole_if<std::int64_t>("warmup", 0, kMaxSteps);
  out.eval_every = r.whole_if<std::int64_t>("eval_every", 0, kMaxSteps);
  out.eval_batches = r.whole_if<std::uint64_t>("eval_batches", 0, kMaxEvalBatches);
  out.micro_batch =
      r.whole_if<std::uint64_t>("micro_batch", 1, std::numeric_limits<std::uint32_t>::max());
  out.grad_accum = r.whole_if<int>("grad_accum", 1, kMaxGradAccum);
  out.seed = r.whole_if<std::uint64_t>("seed", 0, std::numeric_limits<std::uint64_t>::max());
  out.threads = r.whole_if<int>("threads", 1, kMaxRankThreads);
  out.lr = r.real_if("lr", false);
  out.clip = r.real_if("clip", true);
  if (r.has("precision")) {
    const DType p =
        r.word("precision", {"bf16", "fp16"}, "bf16 or fp16") == "bf16" ? DType::bf16 : DType::f16;
    // The weights' 16-bit rounding and the loss-scale state are the manifest's precision's.
    if (p != saved_precision) {
      throw UsageError(r.name("precision") + " is " + shown_json(r.at("precision")) +
                       ", but the checkpoint's \"precision\" is " +
                       std::string(dtype_name(saved_precision)) + " (they must agree)");
    }
    out.precision = p;
  }
  if (r.has("zeropp")) {
    out.zeropp =
        parse_zeropp(r.text("zeropp", 64, "none or a list of qwz, hpz, qgz"), r.name("zeropp"));
  }
  // 0: the backend's hosts.
  out.ranks_per_host = r.whole_if<int>("ranks_per_host", 0, kMaxMpiRanks);
  out.qwz_block = r.whole_if<std::size_t>("qwz_block", 1, kMaxQuantBlock);
  out.data = r.text_if("data", kMaxRecordedPath, "a file name");
  out.data_fingerprint = r.text_if("data_fingerprint", 128, "a fingerprint");
  out.out = r.text_if("out", kMaxRecordedPath, "a folder name");
  return out;
}

}  // namespace

RunRecord read_run_record(const checkpoint::Checkpoint& ck) {
  RunRecord record;
  record.manifest = (std::filesystem::path(ck.folder()) / "manifest.json").string();
  // Open() checked both are the text of JSON objects.
  record.model_json = json::parse(ck.manifest().model);
  record.run_json = json::parse(ck.manifest().run);
  try {
    record.model = read_model(Fields(record.model_json, "model."));
    record.run = read_run(Fields(record.run_json, "run."), ck.manifest().precision);
  } catch (const UsageError& e) {
    throw UsageError(printable(record.manifest, 200) + ": " + e.text());
  }
  return record;
}

}  // namespace zerodp::run

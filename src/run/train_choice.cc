#include "zerodp/run/train_choice.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "zerodp/common/error.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/quantize.h"
#include "zerodp/common/units.h"
#include "zerodp/common/zeropp.h"
#include "zerodp/optim/rule.h"

namespace zerodp::run {

zero::EngineOptions engine_options(const EngineChoice& f, std::size_t default_micro_batch) {
  zero::EngineOptions o;
  o.stage = parse_stage(f.stage);
  if (f.precision == "bf16") {
    o.precision = DType::bf16;
  } else if (f.precision == "fp16") {
    o.precision = DType::f16;
  } else {
    throw InvalidArgument::expected("precision", "bf16 or fp16", f.precision);
  }
  o.bucket_bytes = units::parse_bytes(f.bucket_bytes, field_ref("bucket_bytes"));
  if (o.bucket_bytes < 2) {
    throw InvalidArgument::expected("bucket_bytes", "a size of at least 2B (one 16-bit element)",
                                    f.bucket_bytes);
  }
  o.grad_accum = static_cast<int>(
      units::parse_whole_in(f.grad_accum, field_ref("grad_accum"), 1, kMaxGradAccum));
  // No count limit: what bounds a micro-batch is memory (check_memory()).
  o.micro_batch = f.micro_batch.empty()
                      ? default_micro_batch
                      : units::parse_whole(f.micro_batch, field_ref("micro_batch"));
  o.clip_norm = static_cast<float>(units::parse_real(f.clip, field_ref("clip"),
                                                     "a norm >= 0 such as 1.0 (0 disables "
                                                     "clipping)",
                                                     units::Zero::allowed));
  const std::optional<OptimizerName> optimizer = optimizer_from_name(f.optimizer);
  if (!optimizer) {
    throw InvalidArgument::expected("optimizer", optim::engine_optimizer_words(), f.optimizer);
  }
  o.optimizer = optimizer->id;
  o.seed = units::parse_whole(f.seed, field_ref("seed"), units::Zero::allowed);
  o.prefetch = !f.no_prefetch;
  o.overlap = !f.no_overlap;
  o.rank_memory =
      f.rank_memory.empty() ? 0 : units::parse_bytes(f.rank_memory, field_ref("rank_memory"));
  const ZeroPlusPlus zeropp = parse_zeropp(f.zeropp, field_ref("zeropp"));
  o.zeropp = zeropp;
  // A setting of a part not asked for would be silently ignored: refused, as a person who
  // typed it meant it to change something.
  if (!f.qwz_block.empty()) {
    if (!zeropp.quantizes()) {
      throw InvalidArgument("qwz_block", field_ref("qwz_block") +
                                             ": it sets ZeRO++'s int8 blocks; give " +
                                             field_ref("zeropp") + " qwz or qgz too");
    }
    o.qwz_block = units::parse_whole_in(f.qwz_block, field_ref("qwz_block"), 1, kMaxQuantBlock);
  }
  if (!f.ranks_per_host.empty()) {
    if (!zeropp.uses_hosts()) {
      throw InvalidArgument("ranks_per_host", field_ref("ranks_per_host") +
                                                  ": it sets ZeRO++'s hosts; give " +
                                                  field_ref("zeropp") + " hpz or qgz too");
    }
    o.ranks_per_host = static_cast<int>(
        units::parse_whole_in(f.ranks_per_host, field_ref("ranks_per_host"), 1, kMaxMpiRanks));
  }
  o.validate();
  return o;
}

Launch launch_options(const EngineChoice& f) {
  Launch l;
  l.backend = f.backend;
  if (f.backend != "threads" && f.backend != "mpi") {
    throw InvalidArgument::expected("backend", "threads or mpi", f.backend);
  }
#if !defined(ZERODP_HAVE_MPI)
  if (f.backend == "mpi") {
    throw InvalidArgument("backend", field_ref("backend") +
                                         ": this build of zerodp has no MPI "
                                         "backend");
  }
#endif
  const bool threads = f.backend == "threads";
  const std::uint64_t max_ranks = threads ? kMaxThreadRanks : kMaxMpiRanks;
  l.ranks =
      f.ranks.empty()
          ? (threads ? 4 : 0)
          : static_cast<int>(units::parse_whole_in(f.ranks, field_ref("ranks"), 1, max_ranks));
  l.threads = f.threads == "auto" ? 0
                                  : static_cast<int>(units::parse_whole_in(
                                        f.threads, field_ref("threads"), 1, kMaxRankThreads));
  const double timeout = units::parse_seconds_in(f.timeout, field_ref("timeout"),
                                                 kMinTimeoutSeconds, kMaxTimeoutSeconds);
  l.options.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(timeout * 1e3)));
  l.agree = {
      {field_ref("ranks"), f.ranks.empty() ? "the world size" : f.ranks},
      {field_ref("stage"), f.stage},
      {field_ref("precision"), f.precision},
      {field_ref("bucket_bytes"), f.bucket_bytes},
      {field_ref("grad_accum"), f.grad_accum},
      {field_ref("micro_batch"), f.micro_batch},
      {field_ref("clip"), f.clip},
      {field_ref("optimizer"), f.optimizer},
      {field_ref("seed"), f.seed},
      {field_ref("timeout"), f.timeout},
      {field_ref("rank_memory"), f.rank_memory.empty() ? "none" : f.rank_memory},
      {field_ref("zeropp"), f.zeropp},
      {field_ref("qwz_block"), f.qwz_block.empty() ? "the default" : f.qwz_block},
      {field_ref("ranks_per_host"), f.ranks_per_host.empty() ? "the backend's" : f.ranks_per_host},
      {field_ref("no_prefetch"), f.no_prefetch ? "on" : "off"},
      {field_ref("no_overlap"), f.no_overlap ? "on" : "off"}};
  return l;
}

TrainSettings train_settings(const TrainChoice& f) {
  TrainSettings s(ModelSpec(f.model), engine_options(f.engine, 8), launch_options(f.engine));
  s.options.frozen_nf4 = s.spec.nf4();
  s.options.frozen_double_quant = s.spec.double_quant();
  s.compute_line = s.spec.resolve_compute(s.options.precision);
  s.threads_source = f.threads_from_checkpoint ? "the checkpoint's"
                     : s.launch.threads > 0
                         ? "--threads"
                         : "auto: the rank's share of the cores, at most the micro-batch";
  s.threads();  // refuses threads the model cannot use
  auto whole = [](const std::string& text, const char* field, std::uint64_t lo, std::uint64_t hi) {
    return units::parse_whole_in(text, field_ref(field), lo, hi);
  };
  s.steps = static_cast<std::int64_t>(whole(f.steps, "steps", 1, kMaxSteps));
  s.warmup = static_cast<std::int64_t>(f.warmup.empty() ? std::min<std::int64_t>(50, s.steps / 10)
                                                        : whole(f.warmup, "warmup", 0, kMaxSteps));
  s.eval_every = static_cast<std::int64_t>(f.eval_every.empty()
                                               ? std::max<std::int64_t>(1, s.steps / 10)
                                               : whole(f.eval_every, "eval_every", 0, kMaxSteps));
  s.eval_batches = whole(f.eval_batches, "eval_batches", 0, kMaxEvalBatches);
  s.log_every = static_cast<std::int64_t>(whole(f.log_every, "log_every", 1, kMaxSteps));
  s.lr = f.lr.empty()
             ? s.options.rule().default_lr
             : static_cast<float>(units::parse_real(
                   f.lr, field_ref("lr"), "a positive number such as 3e-4", units::Zero::rejected));
  s.save_every = static_cast<std::int64_t>(
      f.save_every.empty() ? 0 : whole(f.save_every, "save_every", 1, kMaxSteps));
  s.keep = static_cast<int>(whole(f.keep, "keep", 1, kMaxKeep));
  if (s.save_every > 0 && f.save_dir.empty()) {
    throw InvalidArgument("save_every", field_ref("save_every") + ": needs " +
                                            field_ref("save_dir") +
                                            " DIR, the folder to save checkpoints in");
  }
  s.out = f.out;
  s.save_dir = f.save_dir;
  s.resume = f.resume;
  s.launch.agree = s.agreement();
  return s;
}

namespace {

// A recorded number as a setting's text: what the setting's parser reads back to the same
// value (a real number in full, as JSON writes it).
std::string as_text(std::uint64_t v) {
  return std::to_string(v);
}
std::string as_text(std::int64_t v) {
  return std::to_string(v);
}
std::string as_text(int v) {
  return std::to_string(v);
}
std::string as_text(double v) {
  return nlohmann::json(v).dump();
}

}  // namespace

void take_from_record(const RunRecord& record, const checkpoint::Checkpoint& ck,
                      const GivenField& given, TrainChoice& f) {
  const RecordedModel& m = record.model;
  const RecordedRun& r = record.run;
  auto take = [&](const char* field, std::string& setting, const auto& value) {
    if (!given(field) && value) setting = as_text(*value);
  };
  auto take_text = [&](const char* field, std::string& setting,
                       const std::optional<std::string>& value) {
    if (!given(field) && value) setting = *value;
  };
  if (!given("model")) f.model.model = m.gpt ? "gpt" : "mlp";
  if (!m.gpt) {
    if (!given("params")) f.model.mlp_shape = model::MlpConfig{m.width, m.depth};
  } else {
    take("layers", f.model.layers, std::optional<int>(m.layers));
    take("heads", f.model.heads, std::optional<int>(m.heads));
    take("hidden", f.model.hidden, std::optional<int>(m.hidden));
    take("seq_len", f.model.seq_len, std::optional<int>(m.seq_len));
    if (!given("checkpoint_activations")) f.model.checkpoint_activations = m.checkpoint_activations;
    // A checkpoint from before the compute was recorded computed in fp32 (RecordedModel).
    if (!given("compute")) f.model.compute = m.compute;
    take_text("data", f.model.data, r.data);
    if (m.lora_rank > 0) {
      take("lora_rank", f.model.lora_rank, std::optional<int>(m.lora_rank));
      take("lora_alpha", f.model.lora_alpha, std::optional<double>(m.lora_alpha));
      take_text("lora_targets", f.model.lora_targets, std::optional<std::string>(m.lora_targets));
      take_text("base", f.model.base, std::optional<std::string>(m.base));
      if (!m.quantize.empty()) {
        take_text("quantize", f.model.quantize, std::optional<std::string>(m.quantize));
        take_text("double_quant", f.model.double_quant, std::optional<std::string>(m.double_quant));
      }
    }
  }
  take("data_seed", f.model.data_seed, std::optional<std::uint64_t>(m.data_seed));
  take("steps", f.steps, r.steps);
  take("lr", f.lr, r.lr);
  take("warmup", f.warmup, r.warmup);
  take("eval_every", f.eval_every, r.eval_every);
  take("eval_batches", f.eval_batches, r.eval_batches);
  take("clip", f.engine.clip, r.clip);
  take("seed", f.engine.seed, r.seed);
  take("micro_batch", f.engine.micro_batch, r.micro_batch);
  take("grad_accum", f.engine.grad_accum, r.grad_accum);
  if (!given("precision")) f.engine.precision = std::string(dtype_name(ck.manifest().precision));
  if (!given("optimizer")) {
    f.engine.optimizer = std::string(optim::engine_word(optimizer_row(ck.manifest().optimizer)));
  }
  if (!given("zeropp") && r.zeropp) f.engine.zeropp = r.zeropp->words();
  // The ZeRO++ settings a run records whether it used them or not (the default block, hosts
  // 0): taken only where they apply, so that a resume without ZeRO++ is not refused for them.
  const ZeroPlusPlus zeropp = parse_zeropp(f.engine.zeropp, field_ref("zeropp"));
  if (zeropp.quantizes()) take("qwz_block", f.engine.qwz_block, r.qwz_block);
  if (zeropp.uses_hosts() && r.ranks_per_host.value_or(0) > 0) {
    take("ranks_per_host", f.engine.ranks_per_host, r.ranks_per_host);
  }
  take_text("out", f.out, r.out);
  const checkpoint::Manifest& saved = ck.manifest();
  if (!given("stage")) f.engine.stage = std::to_string(saved.stage);
  if (!given("bucket_bytes")) f.engine.bucket_bytes = std::to_string(saved.bucket_bytes) + "B";
  // Under MPI the world size is the number of ranks.
  if (!given("ranks") && f.engine.backend == "threads")
    f.engine.ranks = std::to_string(saved.ranks);
  // The checkpoint's threads where the resume can be bitwise, on its ranks (a checkpoint from
  // before threads were recorded computed on one); on other ranks, auto fits the cores to them.
  // (The ranks as the run reads them, so that ranks 01 is 1; under MPI the world size.)
  const Launch launch = launch_options(f.engine);
  const bool ranks_known = launch.ranks > 0 || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  if (!given("threads") && (!ranks_known || planned_ranks(launch) == saved.ranks)) {
    f.engine.threads = as_text(r.threads.value_or(1));
    f.threads_from_checkpoint = true;
  }
  if (!given("save_dir") && ck.folder() != f.resume) f.save_dir = f.resume;
}

}  // namespace zerodp::run

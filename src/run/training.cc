#include "zerodp/run/training.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "zerodp/common/error.h"
#include "zerodp/common/json_text.h"
#include "zerodp/common/optimizers.h"
#include "zerodp/common/units.h"
#include "zerodp/optim/rule.h"
#include "zerodp/optim/schedule.h"
#include "zerodp/plan/memory.h"
#include "zerodp/run/engine_run.h"
#include "zerodp/run/resume_rules.h"
#include "zerodp/run/stop_signal.h"

namespace zerodp::run {
namespace {

// The run record of `resume` as the resume rules compare it. The weights' precision is the
// manifest's, recorded in the run too since run records existed (run_record.h holds the two
// equal): an older record without it is still held to it, and compared, not said unknown.
nlohmann::json saved_run_of(const checkpoint::Checkpoint& resume) {
  nlohmann::json saved_run = nlohmann::json::parse(resume.manifest().run);
  if (!saved_run.contains("precision")) {
    saved_run["precision"] = std::string(dtype_name(resume.manifest().precision));
  }
  // The optimizer is the manifest's too: before it was recorded, every run was AdamW's.
  saved_run["optimizer"] =
      std::string(optim::engine_word(optimizer_row(resume.manifest().optimizer)));
  return saved_run;
}

}  // namespace

nlohmann::json TrainSettings::run_record() const {
  return {{"lr", lr},
          {"warmup", warmup},
          {"steps", steps},
          {"seed", options.seed},
          {"clip", options.clip_norm},
          {"optimizer", std::string(optim::engine_word(*options.rule().row))},
          {"grad_accum", options.grad_accum},
          {"micro_batch", options.micro_batch},
          {"precision", std::string(dtype_name(options.precision))},
          {"zeropp", zeropp_value(options)},
          {"ranks_per_host", options.ranks_per_host},
          {"qwz_block", options.qwz_block},
          {"data", utf8_text(spec.data_path())},
          {"data_fingerprint", spec.data_fingerprint()},
          {"data_seed", spec.data_seed()},
          {"eval_every", eval_every},
          {"eval_batches", eval_batches},
          {"threads", threads()},
          // The curve's folder as an absolute path, so that a resume from another folder still
          // continues the curve where the run left it.
          {"out", out.empty() ? std::string()
                              : std::filesystem::absolute(out).lexically_normal().string()}};
}

RunSettings TrainSettings::agreement() const {
  RunSettings out;
  const nlohmann::json config = spec.config_json();
  // Every field on every rank, "(none)" where this model has no such field, so that ranks
  // training different models still compare the same list (and name --model).
  for (const ConfigField& field : kConfigFields) {
    out.push_back(
        {field.name(), config.contains(field.key) ? config.at(field.key).dump() : "(none)"});
  }
  out.push_back({field_ref("data"), spec.data_path() + " (" + spec.data_fingerprint() + ")",
                 spec.data_fingerprint()});
  const zero::EngineOptions& o = options;
  auto text = [](const nlohmann::json& v) { return v.dump(); };
  // A real number is shown short (2e-3, not 0.0020000000949949026) and compared in full.
  auto real = [](const std::string& name, float v) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", double(v));
    return RunSetting(name, shown, nlohmann::json(v).dump());
  };
  for (RunSetting setting : std::initializer_list<RunSetting>{
           {field_ref("stage"), text(stage_number(o.stage))},
           {field_ref("precision"), std::string(dtype_name(o.precision))},
           {field_ref("bucket_bytes"), text(o.bucket_bytes)},
           {field_ref("micro_batch"), text(o.micro_batch)},
           {field_ref("threads"), text(threads())},
           {field_ref("grad_accum"), text(o.grad_accum)},
           real(field_ref("clip"), o.clip_norm),
           {field_ref("optimizer"), std::string(optim::engine_word(*o.rule().row))},
           {field_ref("seed"), text(o.seed)},
           {field_ref("no_prefetch"), o.prefetch ? "off" : "on"},
           {field_ref("zeropp"), zeropp_value(o)},
           {field_ref("ranks_per_host"), text(o.ranks_per_host)},
           {field_ref("qwz_block"), text(o.qwz_block)},
           {field_ref("no_overlap"), o.overlap ? "off" : "on"},
           {field_ref("rank_memory"), text(o.rank_memory)},
           {field_ref("timeout"), text(launch.options.timeout.count()) + " ms"},
           {field_ref("steps"), text(steps)},
           real(field_ref("lr"), lr),
           {field_ref("warmup"), text(warmup)},
           {field_ref("eval_every"), text(eval_every)},
           {field_ref("eval_batches"), text(eval_batches)},
           {field_ref("save_dir"), save_dir},
           {field_ref("save_every"), text(save_every)},
           {field_ref("keep"), text(keep)},
           {field_ref("resume"), resume}}) {
    out.push_back(std::move(setting));
  }
  return out;
}

TrainSettings TrainSettings::on_ranks(comm::Communicator& comm,
                                      const checkpoint::Checkpoint* resume_from) const {
  TrainSettings mine = *this;
  if (resume_from == nullptr) return mine;
  if (launch.backend == "mpi") {
    check_ranks_agree(
        comm, {{"the checkpoint to resume", resume_from->folder() + " at step " +
                                                std::to_string(resume_from->state().run_step)}});
  }
  ResumePlan plan;
  try {  // the same checkpoint and settings on every rank: the same answer
    plan = plan_resume(resume_from->folder(), saved_run_of(*resume_from),
                       resume_from->manifest().ranks, run_record(), comm.size());
  } catch (const UsageError& e) {
    throw UsageErrorOnEveryRank(e.text());
  }
  mine.options.micro_batch = plan.micro_batch;
  mine.options.grad_accum = plan.grad_accum;
  mine.resume_notes = plan.notes;
  // The products' compute may change on resume (the state is the same in either), and is said:
  // the steps from here on have the other compute's bits. A checkpoint without it was fp32.
  if (spec.is_gpt()) {
    const nlohmann::json saved = nlohmann::json::parse(resume_from->manifest().model);
    const auto it = saved.find("compute");
    const std::string was = it == saved.end() ? "fp32"
                            : it->is_string() ? it->get<std::string>()
                                              : it->dump();
    const std::string now(model::compute_name(spec.gpt().compute));
    if (was != now) {
      mine.resume_notes.push_back("resume: " + field_ref("compute") + " " + now +
                                  " (the checkpoint's run: " + printable(was, 16) +
                                  "): the products multiply in " + now + " from the next step");
    }
  }
  // The samples the rest of the run draws must keep the data position within what a manifest
  // records, or the run would write a checkpoint its own reader refuses.
  const zero::EngineState& state = resume_from->state();
  const unsigned __int128 per_step =
      (unsigned __int128)plan.micro_batch * plan.grad_accum * std::uint64_t(comm.size());
  const unsigned __int128 end =
      state.samples_done + per_step * std::uint64_t(mine.steps - state.run_step);
  if (end > checkpoint::kMaxSamplesDone) {
    throw UsageErrorOnEveryRank(
        field_ref("steps") + ": " + quote(resume_from->folder()) + " has drawn " +
        std::to_string(state.samples_done) + " samples already; " +
        std::to_string(mine.steps - state.run_step) + " more steps would pass the " +
        std::to_string(checkpoint::kMaxSamplesDone) + " (2^62) a checkpoint records");
  }
  return mine;
}

void check_resume(const TrainSettings& s, const checkpoint::Checkpoint& resume) {
  refuse_resume_changes(resume.folder(), saved_run_of(resume),
                        nlohmann::json::parse(resume.manifest().model), s.spec.config_json(),
                        s.run_record());
  resume.check_model(s.spec.config_json().dump());
  if (resume.state().run_step >= s.steps) {
    const std::string done = std::to_string(resume.state().run_step);
    throw InvalidArgument(field_ref("steps") + ": " + quote(resume.folder()) + " has done " + done +
                          " steps already and " + field_ref("steps") + " " +
                          std::to_string(s.steps) + " asks for no more; give " +
                          field_ref("steps") + " above " + done + " to continue");
  }
}

float validation_loss(zero::Engine& engine, const data::SampleSource& samples, int rank, int ranks,
                      std::size_t micro_batch, std::uint64_t batches) {
  data::Batch batch;
  double sum = 0;
  for (std::uint64_t j = 0; j < batches; ++j) {
    const std::uint64_t first = (j * std::uint64_t(ranks) + std::uint64_t(rank)) * micro_batch;
    samples.draw(data::Split::validation, first, micro_batch, batch);
    sum += engine.evaluate(zero::micro_batch_of(batch));
  }
  return float(sum / double(batches));
}

Training::Training(const TrainSettings& s, comm::Communicator& comm, TrainObserver* observer)
    : s_(s),
      comm_(comm),
      observer_(observer),
      leader_(comm.rank() == 0),
      model_(s.spec.make(s.threads())),
      engine_(*model_, comm, s.spec.samples(), s.options),
      tokens_per_step_(std::uint64_t(comm.size()) * s.options.micro_batch *
                       std::uint64_t(s.options.grad_accum) * s.spec.tokens_per_sample()) {
  engine_.set_threads(rank_cores(s.launch));
  // LoRA: the base's weights, each rank what it holds of them (all, or its chunks at stage 3).
  if (const checkpoint::Checkpoint* base = s.spec.base()) engine_.import_frozen(base->reader());
}

void Training::resume_from(const checkpoint::Checkpoint& ck) {
  engine_.import_state(ck.reader(), ck.state());
  // The run's step, fp16's skipped steps included: the schedule and the steps left go on from
  // there, while the optimizer's t (state().step) counts the updates only.
  first_step_ = ck.state().run_step + 1;
  if (observer_) observer_->resumed(ck);
}

void Training::train() {
  curve_.title = "zerodp: " + std::string(s_.spec.is_gpt() ? "byte-level GPT" : "MLP") + ", " +
                 units::format_count(s_.spec.param_count()) + " parameters, ZeRO-" +
                 std::to_string(stage_number(s_.options.stage)) + " on " +
                 std::to_string(comm_.size()) + " ranks";
  // A resumed run continues the curve of the run it resumes, as far as its checkpoint.
  if (leader_ && first_step_ > 1 && !s_.out.empty()) {
    curve_.load_csv_before(s_.out + "/loss.csv", first_step_);
  }
  const auto stop_requested = [] { return stop_signal::received() != 0; };
  for (std::int64_t t = first_step_; t <= s_.steps; ++t) {
    last_ = engine_.step(optim::lr_at(t, s_.steps, s_.warmup, s_.lr), stop_requested);
    if (t == first_step_) first_loss_ = last_.loss;
    seconds_ += last_.seconds;
    exposed_ += last_.exposed_comm_seconds;
    check_finite(t);
    curve_.train.emplace_back(t, last_.loss);
    last_step_ = t;
    after_step(t);
    if (last_.stop_requested && t < s_.steps) {  // at the last step, the run is complete
      stop(t);
      break;
    }
  }
  if (observer_) observer_->stepping_ended();
}

std::string divergence(const zero::StepResult& step, DType precision, float min_scale,
                       int& skips_at_min_scale) {
  // The forward runs in fp32 whatever the precision: a loss that is not finite is weights
  // that are not, and no loss scale brings them back.
  const bool loss_finite = std::isfinite(step.loss);
  const bool scaled = precision == DType::f16;
  if (scaled && loss_finite) {
    // fp16 lowers its scale on each gradient overflow; at the smallest scale an overflow is
    // the gradients' own, and a few in a row is a run that will not recover.
    const bool at_floor = step.skipped && step.loss_scale <= min_scale;
    skips_at_min_scale = at_floor ? skips_at_min_scale + 1 : 0;
    if (skips_at_min_scale < Training::kMaxSkipsAtMinScale) return {};
  } else if (loss_finite && std::isfinite(step.grad_norm) && !step.skipped) {
    return {};
  }
  char what[96];
  std::snprintf(what, sizeof what, "loss %g, gradient norm %g", double(step.loss),
                double(step.grad_norm));
  if (!loss_finite) return what;
  if (scaled) {
    return std::to_string(Training::kMaxSkipsAtMinScale) +
           " steps in a row overflowed at the smallest loss scale (" + what + ")";
  }
  return std::string(what) + ", and " + std::string(dtype_name(precision)) +
         " has no loss scale to lower";
}

// Before anything of step t is kept: a run whose loss or gradients are no longer finite has
// diverged, and training on (skipping every step, or updating from a loss of NaN) only saves
// weights that are no better, as if the run had succeeded.
void Training::check_finite(std::int64_t t) {
  const std::string why =
      divergence(last_, s_.options.precision, s_.options.loss_scale.min_scale, skips_at_min_scale_);
  if (!why.empty()) diverged("at step " + std::to_string(t) + ": " + why);
}

void Training::diverged(const std::string& where) const {
  const std::string kept = saved_step_ > 0
                               ? "; the last checkpoint is step " + std::to_string(saved_step_) +
                                     "'s, " + quote(saved_folder_)
                               : "; nothing of it is saved";
  throw ErrorOnEveryRank("training diverged " + where + kept + "; lower " + field_ref("lr") +
                         " or clip the gradients (" + field_ref("clip") + ")");
}

void Training::after_step(std::int64_t t) {
  const double done = double(t - first_step_ + 1);
  const double rate = double(tokens_per_step_) * done / seconds_;
  if (observer_) observer_->stepped(t, last_, rate, seconds_ / done * double(s_.steps - t));
  if (s_.eval_batches > 0 && s_.eval_every > 0 && (t % s_.eval_every == 0 || t == s_.steps)) {
    validate(t);
  }
  // A save folder alone saves at the end; save_every K also every K steps.
  if (t == s_.steps || (s_.save_every > 0 && t % s_.save_every == 0)) save(t);
}

// A checkpoint of step t in the save folder (collective), unless there is none or step t is
// saved already.
void Training::save(std::int64_t t) {
  if (s_.save_dir.empty() || saved_step_ == t) return;
  // Only finite weights are saved: an update from a huge step can leave them non-finite while
  // the step's own loss (computed before it) was finite. One float all-reduced, at saves only.
  float non_finite = 0.0f;
  for (const zero::Engine::OwnedChunk& chunk : engine_.owned_chunks()) {
    for (const float w : chunk.master) non_finite += std::isfinite(w) ? 0.0f : 1.0f;
    if (non_finite > 0.0f) break;
  }
  comm_.all_reduce(&non_finite, 1, DType::f32);
  if (non_finite > 0.0f) {
    diverged("by step " + std::to_string(t) + ": its weights hold values that are not finite");
  }
  saved_folder_ = checkpoint::save(s_.save_dir, engine_, comm_, s_.spec.config_json().dump(),
                                   s_.run_record().dump(), s_.keep);
  saved_step_ = t;
  if (observer_) observer_->saved(saved_folder_);
}

// Every rank agreed to stop after step t (a signal reached one of them): save where the run
// can resume, unless this step was just saved. finish() writes the curve and says where.
void Training::stop(std::int64_t t) {
  // Every rank ends with one status: SIGTERM if any rank received it (the scheduler's), else
  // SIGINT if any did, else SIGPIPE (a reader gone); a rank the signal did not reach takes the
  // others'. One small all-reduce, on a stop only.
  const int mine = stop_signal::received();
  float which[3] = {mine == SIGTERM ? 1.0f : 0.0f, mine == SIGINT ? 1.0f : 0.0f,
                    mine == SIGPIPE ? 1.0f : 0.0f};
  comm_.all_reduce(which, 3, DType::f32);
  stopped_by_ = which[0] > 0.0f   ? SIGTERM
                : which[1] > 0.0f ? SIGINT
                : which[2] > 0.0f ? SIGPIPE
                                  : SIGTERM;
  save(t);
}

void Training::validate(std::int64_t t) {
  last_val_ = validation_loss(engine_, s_.spec.samples(), comm_.rank(), comm_.size(),
                              s_.options.micro_batch, s_.eval_batches);
  curve_.validation.emplace_back(t, last_val_);
  if (observer_) observer_->validated(t, last_val_);
  // The same on every rank: validation_loss() all-reduces it.
  if (!std::isfinite(last_val_)) {
    char what[64];
    std::snprintf(what, sizeof what, "validation loss %g", double(last_val_));
    diverged("by step " + std::to_string(t) + ": " + what);
  }
}

nlohmann::json Training::finish() {
  const std::string weights_sha256 = engine_.weights_sha256();  // collective: every rank
  const std::vector<std::uint64_t> peaks = gather_words(comm_, {engine_.ledger().peak_total()});
  if (!leader_) return nullptr;
  const ModelSpec& spec = s_.spec;
  const int ranks = comm_.size();
  const Ledger& ledger = engine_.ledger();
  const predict::EngineRun planned =
      engine_run(spec, s_.options, s_.launch, ranks, comm_.ranks_per_host());
  const std::uint64_t predicted =
      engine_model_state_bytes(planned, s_.options, spec.param_count(), 0);
  nlohmann::json per_rank = nlohmann::json::array();
  for (int r = 0; r < ranks; ++r) {
    per_rank.push_back(
        {{"rank", r},
         {"peak_bytes", peaks[r]},
         {"predicted_peak_bytes", predict::predict_rank_peak(planned, r).peak_bytes}});
  }
  nlohmann::json j = {
      {"model", spec.config_json()},
      {"params", spec.param_count()},
      {"frozen_params", spec.frozen_param_count()},
      {"stage", stage_number(s_.options.stage)},
      {"ranks", ranks},
      {"optimizer", optim::engine_word(*s_.options.rule().row)},
      {"lr", s_.lr},
      {"backend", comm_.backend_name()},
      {"threads", s_.threads()},
      {"steps", s_.steps},
      {"first_loss", first_loss_},
      {"final_loss", last_.loss},
      {"val_loss", std::isfinite(last_val_) ? nlohmann::json(last_val_) : nlohmann::json()},
      {"tokens_per_second",
       double(tokens_per_step_) * double(last_step_ - first_step_ + 1) / seconds_},
      {"seconds", seconds_},
      {"exposed_comm_seconds", exposed_},
      {"predicted_model_state_bytes", predicted},
      {"model_state_bytes", ledger.model_state_bytes()},
      {"peak_bytes", ledger.peak_total()},
      {"predicted_peak_bytes", per_rank[0]["predicted_peak_bytes"]},
      {"per_rank", per_rank},
      {"activation_bytes", ledger.peak(Category::activations)},
      {"weights_sha256", weights_sha256}};
  if (!s_.out.empty()) {
    curve_.write_csv(s_.out + "/loss.csv");
    curve_.write_svg(s_.out + "/loss.svg");
    j["curve_csv"] = s_.out + "/loss.csv";
    j["curve_svg"] = s_.out + "/loss.svg";
  }
  if (stopped_by_ != 0) {
    j["stopped"] = {
        {"signal", stop_signal::name(stopped_by_)},
        {"step", last_step_},
        {"checkpoint", saved_step_ == last_step_ ? nlohmann::json(saved_folder_) : nullptr},
        {"exit_status", stop_signal::exit_status(stopped_by_)}};
  }
  return j;
}

}  // namespace zerodp::run

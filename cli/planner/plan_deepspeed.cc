// `zerodp plan`'s DeepSpeed flags: a DeepSpeed config read once and applied to the settings the
// flags gave (--deepspeed-config), and what DeepSpeed's own estimate is asked for (--estimator).
#include <climits>
#include <cstdio>

#include "output.h"
#include "plan_flags.h"
#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/deepspeed/estimator.h"

namespace zerodp::cli {

void read_optimizer_impl(const PlanFlags& f, const deepspeed::DeepSpeedConfig* config,
                         std::optional<plan::Optimizer> optimizer, report::PlanInputs& in) {
  std::optional<deepspeed::OptimizerImpl> given;
  if (!f.optimizer_impl.empty()) {
    given = deepspeed::optimizer_impl_from_name(f.optimizer_impl);
    if (!given) {
      throw UsageError("--optimizer-impl: expected fused, foreach or single, got " +
                       shown(f.optimizer_impl));
    }
    if (optimizer && *optimizer != plan::Optimizer::adam) {
      throw UsageError(
          "--optimizer-impl: applies to Adam and AdamW, whose temporaries it counts, not to " +
          std::string(plan::optimizer_name(*optimizer)));
    }
  }
  if (config && config->optimizer_impl) {
    const deepspeed::OptimizerImpl stated = *config->optimizer_impl;
    if (given && *given != stated) {
      throw UsageError("--optimizer-impl: '" + std::string(deepspeed::optimizer_impl_name(*given)) +
                       "' contradicts " + printable(f.deepspeed_config) + "'s optimizer block (" +
                       std::string(deepspeed::optimizer_impl_name(stated)) + "); give one");
    }
    in.optimizer_impl = stated;
    in.optimizer_impl_source =
        printable(f.deepspeed_config) + "'s optimizer block: " +
        (stated == deepspeed::OptimizerImpl::fused ? "DeepSpeed's FusedAdam"
                                                   : "torch.optim.AdamW (torch_adam)");
    return;
  }
  // A Trainer name that says how AdamW steps (adamw_torch_fused, adamw_torch, adamw_hf).
  const std::optional<OptimizerName> named = optimizer_from_name(f.model_bytes.optimizer);
  std::optional<deepspeed::OptimizerImpl> by_name;
  if (named && named->impl != StepImpl::unstated) {
    by_name = named->impl == StepImpl::fused     ? deepspeed::OptimizerImpl::fused
              : named->impl == StepImpl::foreach ? deepspeed::OptimizerImpl::foreach
                                                 : deepspeed::OptimizerImpl::single;
  }
  if (given && by_name && *given != *by_name) {
    throw UsageError("--optimizer-impl: '" + std::string(deepspeed::optimizer_impl_name(*given)) +
                     "' contradicts --optimizer " + printable(f.model_bytes.optimizer) + " (" +
                     std::string(deepspeed::optimizer_impl_name(*by_name)) + "); give one");
  }
  if (given) {
    in.optimizer_impl = *given;
    in.optimizer_impl_source = "--optimizer-impl";
    return;
  }
  if (by_name) {
    in.optimizer_impl = *by_name;
    in.optimizer_impl_source = "--optimizer " + printable(f.model_bytes.optimizer);
    return;
  }
  if (config && !config->optimizer_block) {
    // Without an optimizer block the Hugging Face Trainer passes DeepSpeed its own optimizer:
    // torch.optim.AdamW, foreach on CUDA.
    in.optimizer_impl = deepspeed::OptimizerImpl::foreach;
    in.optimizer_impl_source =
        printable(f.deepspeed_config) +
        " has no optimizer block: the Hugging Face Trainer's torch.optim.AdamW";
  }
}

std::optional<report::DeepSpeedEstimate> read_estimator(const PlanFlags& f,
                                                        report::PlanInputs& in) {
  if (f.estimator.empty()) return std::nullopt;
  if (f.estimator != "deepspeed") {
    throw UsageError("--estimator: expected deepspeed, got " + shown(f.estimator));
  }
  if (!in.params) {
    throw UsageError("--params: required with --estimator deepspeed (or --model, --model-config)");
  }
  if (in.lora) {
    throw UsageError(
        "--estimator: DeepSpeed's estimators count every parameter as trained; not with a LoRA "
        "or QLoRA run (--lora-rank, --adapter-config)");
  }
  report::DeepSpeedEstimate run;
  run.params = *in.params;
  // --gpus alone is one node of that many GPUs, as DeepSpeed's estimators take
  // num_gpus_per_node=N, num_nodes=1 by default; --gpus-per-node and --nodes say otherwise.
  run.gpus_per_node = in.gpus_per_node.value_or(in.gpus.value_or(1));
  if (in.topology && !f.nodes.empty()) run.nodes = in.topology->nodes;
  if (!in.largest_layer) {
    throw UsageError(
        "--largest-layer: required with --estimator deepspeed and --params (ZeRO-3's estimate "
        "counts the largest layer), a count such as 65M");
  }
  run.largest_layer = *in.largest_layer;
  const std::uint64_t gpus = std::uint64_t(run.gpus_per_node) * run.nodes;
  if (in.gpus && std::uint64_t(*in.gpus) != gpus) {
    throw UsageError("--gpus: " + std::to_string(*in.gpus) + " is not --gpus-per-node x --nodes (" +
                     std::to_string(gpus) + "); give one or the other");
  }
  if (gpus > INT_MAX)
    throw UsageError("--nodes: expected at most " + std::to_string(INT_MAX) + " GPUs in all");
  // DeepSpeed's estimate is asked of these GPUs; zerodp's own answer stays the one the other
  // flags ask for: taking the estimator's node size into the plan would change its host check
  // (all N on one node becoming a node of --gpus), and its N the fewest-GPUs answer.
  return run;
}

namespace {

// The flag of a shared setting (report/settings.h) and the text it was given.
std::pair<const char*, const std::string*> flag_of(const std::string& field, const PlanFlags& f) {
  if (field == "precision") return {"--precision", &f.model_bytes.precision};
  if (field == "optimizer") return {"--optimizer", &f.model_bytes.optimizer};
  if (field == "bytes_per_param") return {"--bytes-per-param", &f.model_bytes.bytes_per_param};
  if (field == "offload_optimizer") return {"--offload-optimizer", &f.offload_optimizer};
  if (field == "offload_params") return {"--offload-params", &f.offload_params};
  if (field == "micro_batch") return {"--micro-batch", &f.micro_batch};
  if (field == "grad_accum") return {"--grad-accum", &f.grad_accum};
  if (field == "stage") return {"--stage", &f.stage};
  ZERODP_CHECK_MSG(field == "zeropp", field);
  return {"--zeropp", &f.zeropp};
}

}  // namespace

deepspeed::DeepSpeedConfig read_deepspeed_config(const PlanFlags& f) {
  deepspeed::DeepSpeedConfig c = deepspeed::parse_deepspeed_config(
      read_file(f.deepspeed_config, "--deepspeed-config", "a DeepSpeed config, ds.json"),
      "--deepspeed-config " + f.deepspeed_config);
  // Every line that names the config, a warning here or the plan's, shows it as printable()
  // does: a name holding a newline or an escape code quoted and escaped.
  const std::string path = printable(f.deepspeed_config);
  if (!c.unknown.empty()) {
    std::fprintf(err(), "zerodp: warning: %s: keys this reader does not know, ignored: %s\n",
                 path.c_str(), units::format_list(c.unknown, deepspeed::kListedKeys).c_str());
  }
  // DeepSpeed hands the ZeRO++ switches only to its stage-3 optimizer (runtime/engine.py,
  // _configure_zero_optimizer): at stages 1 and 2 a config may hold them, and they change
  // nothing.
  if (c.stage && !zeropp_stage_refusal(c.zeropp, *c.stage).empty()) {
    std::fprintf(err(),
                 "zerodp: warning: %s: ZeRO++ keys (%s) are read by DeepSpeed at stage 3 only; "
                 "ignored at stage %d\n",
                 path.c_str(), deepspeed::zeropp_summary(c.zeropp).c_str(), stage_number(*c.stage));
    c.zeropp = {};
  }
  return c;
}

report::SharedSettings apply_deepspeed_config(const PlanFlags& f,
                                              const deepspeed::DeepSpeedConfig& config,
                                              const report::SharedSettings& given,
                                              std::uint64_t hidden, report::PlanInputs& in) {
  // The plan's lines and its JSON show the name as read_deepspeed_config()'s warnings do.
  const std::string path = printable(f.deepspeed_config);
  report::AppliedConfig applied = report::apply_deepspeed_config(config, path, given, hidden, in);
  if (!applied.conflicts.empty()) {
    const report::ConfigConflict& c = applied.conflicts.front();
    const auto [flag, typed] = flag_of(c.field, f);
    if (c.excluded) {
      throw UsageError(std::string(flag) + ": not with " + path + ", whose " + c.key +
                       " sections set the precision");
    }
    throw UsageError(std::string(flag) + ": " + quote(*typed) + " contradicts " + path + "'s " +
                     c.key + " (" + c.value + "); give one");
  }
  return applied.settings;
}

}  // namespace zerodp::cli

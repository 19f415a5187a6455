// The plan: every cell (A-H) of the seed's scenario matrix that the given inputs determine,
// for the four stages, as one value; table.h prints it for people, json.h for tools, notes.h
// says its conclusions in sentences, deepspeed.h sets DeepSpeed's own estimate beside it.
//
// Contract:
//  - make_plan() answers what the inputs ask and leaves the rest undetermined (nullopt,
//    null in JSON); it never guesses a missing input. It throws InvalidArgument, one line
//    naming the offending input by its field (PlanInputs' member: "gpu_memory") and the
//    accepted form, when a question is asked without the inputs it needs, or when the inputs
//    contradict each other or overflow 64-bit bytes. Otherwise it does not fail.
//  - Byte figures are exact integers (see plan/memory.h and plan/comm.h for the conventions);
//    seconds and fractions are doubles.
//  - Pure: no I/O; the caller prints.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zerodp/catalog/gpus.h"
#include "zerodp/catalog/models.h"
#include "zerodp/common/error.h"
#include "zerodp/deepspeed/offload.h"
#include "zerodp/deepspeed/runtime.h"
#include "zerodp/deepspeed/topology.h"
#include "zerodp/plan/activations.h"
#include "zerodp/plan/comm.h"
#include "zerodp/plan/efficiency.h"
#include "zerodp/plan/frozen.h"
#include "zerodp/plan/memory.h"
#include "zerodp/plan/step_model.h"

namespace zerodp::report {

// Which communication column the step time is computed from (unless comm_bytes is given).
enum class CommConvention { seed, ring };

// Whether a stage fits its GPU, as sure as the planner can be. Where the GPU peak is predicted
// (a model's or a DeepSpeed config's terms), the prediction carries the errors measured against
// published runs (docs/validation.md), one on each side: `tight` is a peak that a run may or may
// not fit, given how far the planner has erred each way. Where the inputs are the seed's
// figures (--params, --activations), the arithmetic is exact and only fits / does_not_fit occur.
enum class Verdict { fits, tight, does_not_fit };
std::string_view verdict_name(Verdict verdict);  // "fits", "tight", "does_not_fit"

// The planner's measured errors, each side its own, among the published runs of
// docs/validation.md whose peak was measured, rounded up to a whole percent
// (tests/plan/validation/check.py recomputes both from the cases and fails when these differ):
// `under`, how much more a run has used than predicted (measured / predicted - 1, at most);
// `over`, how much less (predicted / measured - 1, at most).
struct TightBand {
  double under = 0;
  double over = 0;
};
inline constexpr TightBand kTightBand{0.11, 0.11};
inline constexpr const char* kTightBandBasis =
    "the largest errors of the predicted peak against the measured runs of docs/validation.md, "
    "each side rounded up: under-predicted by up to 10.5 % (answerai-fsdp-qlora-llama2-7b-bs4, "
    "predicted / measured 0.905), over-predicted by up to 10.9 % "
    "(fms-acceleration-mistral-7b-lora-mb8, 1.109)";

// The verdict of `peak` against `memory`. With a band: fits when even the largest
// under-prediction keeps the run within the card (peak*(1+under) <= memory), does not fit when
// even the largest over-prediction leaves it beyond it (peak > memory*(1+over)), tight between.
// Without one (nullopt): fits exactly when peak <= memory. Integer-exact at the boundaries the
// seed uses (2800/47 fits 60).
Verdict verdict_of(std::uint64_t peak, std::uint64_t memory, std::optional<TightBand> band);

// One default the plan assumed because its flag was not given, for the plan's one-line list.
struct Assumption {
  std::string field;  // the input, as a field reference (error.h): field_ref("seq_len")
  std::string value;  // "1024"
  std::string why;    // "TRL's and run_clm's default"
};

// The answers asked for are those whose inputs are present. The comments name each input's
// command-line flag; make_plan()'s errors name it by the flag's words with underscores
// (--gpu-memory: gpu_memory), which a front end renders back (zerodp/common/error.h).
// A published model the parameter count came from (--model, --model-config).
struct ModelInput {
  std::string name;    // the catalogue's name, or the config file's path
  std::string source;  // where its config is published, or "--model-config PATH"
  std::string model_type;
  catalog::ModelParams params;
};

// A LoRA or QLoRA run of a published model (--lora-rank and its flags, or --adapter-config;
// --quantize nf4): what it trains and what it keeps frozen, for people and JSON. The plan's
// Φ (PlanInputs::params) is then the trained parameters, and PlanInputs::frozen the base.
struct LoraInput {
  std::uint64_t rank = 0;
  double alpha = 0, dropout = 0;
  std::vector<std::string> targets;          // as given, or the one "all-linear"
  std::vector<std::string> modules_to_save;  // trained whole, beside the adapters
  std::uint64_t adapter_params = 0;          // every lora_A and lora_B
  std::uint64_t saved_params = 0;            // modules_to_save's trainable copies
  std::uint64_t adapted_params = 0;          // the weights of the linears adapted (frozen)
  std::uint64_t frozen_params = 0;           // every parameter of the base
  bool nf4 = false;                          // QLoRA: the base's linears in NF4
  bool double_quant = false;                 // with nf4: absmax quantized again (8 bits)
  std::uint64_t quantized_params = 0;        // with nf4: the weights quantized
  std::string source;  // "--lora-rank 8 --lora-targets q_proj,v_proj" or the config's path
};

struct PlanInputs {
  std::optional<std::uint64_t> params;  // --params: Φ (or the model's count; LoRA: trained)
  std::optional<ModelInput> model;      // --model, --model-config
  std::optional<LoraInput> lora;        // --lora-rank, --adapter-config, --quantize
  // The frozen base beside Φ (plan/frozen.h): model state held like P, never trained.
  std::vector<plan::FrozenPart> frozen;
  // A quantized base's largest weight, dequantized to 16 bits for its product (runtime.h).
  std::uint64_t dequantized_params = 0;
  // The largest trained tensor (LoRA: an adapter, or a module saved whole); nullopt: the
  // largest layer.
  std::optional<std::uint64_t> largest_trained;
  // What FSDP gathers of the frozen base, unit by unit (runtime.h).
  plan::FrozenUnits frozen_units;
  std::optional<int> gpus;                  // --gpus: N
  std::optional<std::uint64_t> gpu_memory;  // --gpu-memory: bytes per GPU (or --gpu's)
  const catalog::GpuSpec* gpu = nullptr;    // --gpu: the card whose reported bytes those are

  plan::BytesPerParam bpp;  // from --precision/--optimizer or --bytes-per-param
  std::string bpp_source = "mixed fp16, Adam";

  // Activations per GPU: given (--activations) or derived from a transformer shape.
  std::uint64_t activation_bytes = 0;
  bool activations_given = false;
  // The inputs they came from, as field references (error.h): an error about them names these.
  std::string activations_from = field_ref("activations");
  std::string activations_source;  // how they were obtained, for people

  deepspeed::Offload offload;  // --offload-optimizer, --offload-params
  // --deepspeed-config: the file, what it set, and its stage (a note says whether it fits).
  std::string deepspeed_config;   // the path; empty without one
  std::string deepspeed_summary;  // "ZeRO-2, optimizer to cpu, bf16, ..."
  std::optional<Stage> configured_stage;
  std::optional<int> gpus_per_node;  // --gpus-per-node: host memory per node
  // --host-memory: the host's memory per node, checked against the offload's host bytes (the
  // node holds --gpus-per-node GPUs, or all N when that is not given).
  std::optional<std::uint64_t> host_memory;
  // Two levels (--gpus-per-node, --nodes): bytes per level; with --intra-bandwidth and
  // --inter-bandwidth (bytes/s per GPU) their seconds, which then set the step time.
  std::optional<deepspeed::Topology> topology;
  std::optional<double> intra_bandwidth, inter_bandwidth;
  ZeroPlusPlus zeropp;        // --zeropp or the DeepSpeed config: ZeRO-3's levels, hpZ memory
  std::string zeropp_source;  // "--zeropp" or the config's path

  // The GPU peak's terms beyond model state and activations (deepspeed/runtime.h): DeepSpeed's
  // buffers (--buffers) and the CUDA allowance (--cuda-overhead). When any applies, "total"
  // is the peak and "fits" and "least N" compare it with the GPU memory.
  bool buffers = false;
  std::string buffers_source;  // "DeepSpeed's defaults" or the config's path
  deepspeed::BufferSettings buffer_settings;
  std::optional<std::uint64_t> largest_layer;      // --largest-layer or the model's
  std::optional<std::uint64_t> persistent_params;  // the model's small tensors
  std::optional<std::uint64_t> reuse_kept_params;  // kept gathered by the reuse distance
  std::uint64_t cuda_overhead = 0;
  std::string cuda_overhead_source;  // "--cuda-overhead 3GB" or the default's source
  // How the optimizer step is computed (its temporaries, deepspeed/runtime.h), and why.
  deepspeed::OptimizerImpl optimizer_impl = deepspeed::OptimizerImpl::fused;
  // The optimizer and precision the bytes per parameter were counted from (the table's row,
  // zerodp/common/optimizers.h); nullopt with --bytes-per-param, which gives the bytes alone.
  std::optional<plan::Optimizer> optimizer;
  plan::Precision precision = plan::Precision::bf16;
  bool fp16_optimizer = false;  // mixed fp16 (not --bytes-per-param): stage 0's fp32 gradients
  // --framework: whose mechanics make ZeRO-3's peak; FSDP's shards' bytes (4 with mixed
  // precision: its shards stay fp32).
  deepspeed::Framework framework = deepspeed::Framework::deepspeed;
  std::uint32_t fsdp_shard_bytes = 4;
  deepspeed::OptimizerImpl fsdp_optimizer_impl = deepspeed::OptimizerImpl::foreach;
  bool fsdp_limit_all_gathers = true;  // --limit-all-gathers
  std::string optimizer_impl_source = "DeepSpeed's FusedAdam, the default";
  std::optional<std::uint64_t> round_to;                     // --round-to: node size for min N
  plan::Directions seed_directions = plan::Directions::one;  // --count-both-directions

  std::optional<double> compute_seconds;  // --compute-time
  // The step predicted (plan/step_model.h; docs/planner.md, "Step time"): its compute from the
  // model's FLOPs (catalog/models.h) at the card's dense rate (catalog/gpus.h) times an
  // efficiency, its collectives (deepspeed/step_schedule.h) over the links' rates at each
  // level. --compute-time, when given, is the compute instead; --overlap, when given, hides
  // that fraction of the communication instead of the schedule's overlap.
  struct StepCompute {
    double forward_flops = 0, backward_flops = 0;  // hardware FLOPs a step per GPU (recompute
                                                   // counted in the backward's)
    double model_flops = 0;                        // the model's FLOPs a step per GPU (MFU's)
    std::uint64_t tokens = 0;                      // a step's tokens per GPU: b·s
    std::uint64_t layers = 1;                      // the units ZeRO-3 gathers one by one
    plan::Checkpointing checkpointing = plan::Checkpointing::none;
    std::uint64_t grad_accum = 1;  // micro-steps a step: the FLOPs and tokens above are one's
  };
  std::optional<StepCompute> step_compute;  // --model with its --seq-len and --micro-batch
  std::optional<double> dense_flops;        // the card's dense rate (--gpu)
  std::optional<double> hfu;                // --efficiency, or the published runs'
  std::string hfu_origin;                   // where hfu comes from, for people
  // The nodes the step is timed on (the topology given, else the card's usual server's) and
  // the bus rates of a ring inside a node and across nodes (--intra-node, --inter-node, the
  // levels' bandwidths, or the usual server's links; catalog/links.h). Without both no step
  // is predicted. The links' names, for people.
  std::optional<deepspeed::Topology> step_topology;
  std::optional<plan::LinkRates> step_links;
  std::string intra_link, inter_link;  // "nvlink4: NVLink 4 (...), 367 GB/s measured"
  // Why a model's step is not predicted, for people ("no published runs give l4's
  // efficiency: give --efficiency ..."), with field references; empty when it is, or when
  // nothing asks for one.
  std::string step_not_predicted;
  std::optional<double> tokens;                   // --tokens: tokens to train on
  std::optional<double> price_per_gpu_hour;       // --price-per-gpu-hour
  std::optional<double> bandwidth;                // --bandwidth, bytes/s per GPU
  std::optional<double> overlap;                  // --overlap, in [0, 1]
  std::optional<std::uint64_t> comm_bytes;        // --comm-bytes: volume of every stage
  std::optional<CommConvention> time_convention;  // --comm-convention; default ring

  // Other activations the same run could have, which the front end computed from the model
  // (full checkpointing, flash attention, a smaller micro-batch): when the stage wanted does
  // not fit, the notes say which of them would, each planned again, not guessed.
  struct ActivationChoice {
    std::string change;  // "--checkpointing full", as a field reference (error.h)
    std::uint64_t bytes = 0;
  };
  std::vector<ActivationChoice> activation_choices;

  // The same model trained the other ways (a full fine-tune, LoRA, QLoRA), which the front end
  // counted: the plan sets each one's peak by stage beside the run asked, each planned again
  // with its own Φ, frozen base and activations (PlanReport::fine_tunes).
  struct FineTuneChoice {
    std::string method;  // "full", "lora", "qlora"
    std::string change;  // "--lora-rank 16 --lora-targets all-linear", as field references
    std::uint64_t params = 0;
    std::vector<plan::FrozenPart> frozen;
    std::optional<std::uint64_t> largest_trained;
    std::uint64_t dequantized_params = 0;
    std::optional<LoraInput> lora;
    std::uint64_t activation_bytes = 0;
    plan::FrozenUnits frozen_units;
  };
  std::vector<FineTuneChoice> fine_tune_choices;
  std::string fine_tune_asked;  // the method of the run asked: "full", "lora", "qlora"

  // The defaults taken for flags not given, in the order the plan lists them.
  std::vector<Assumption> assumptions;
  // Whether the plan looks for the fewest GPUs without N; off in the plans made to answer that,
  // which ask no further.
  bool seek_fewest_gpus = true;
  // Whether the plan looks for other offloads at N; off in the plans made to answer that.
  bool seek_offload_changes = true;
  // Whether the plan looks for a memory-efficient optimizer that fits (the seed's remedy for
  // cell H); off in the plans made to answer that.
  bool seek_optimizer_changes = true;
};

struct StageReport {
  Stage stage = Stage::dp;
  std::optional<std::uint64_t> model_state_bytes;  // at N
  std::optional<std::uint64_t> total_bytes;        // model state + activations, at N
  std::optional<std::uint64_t> floor_bytes;        // as N → ∞
  std::optional<double> savings_vs_dp;             // (total_DP − total) / total_DP, at N
  std::optional<bool> fits;                        // total <= GPU memory, at N (and host)
  // fits, tight or not, at N (with the host's): the one verdict the rest of the answer reads
  std::optional<Verdict> verdict;
  std::optional<std::uint64_t> host_bytes_per_node;  // the offload's, at N, with --host-memory
  std::optional<bool> host_fits;                     // those within --host-memory
  // The least N whose verdict is `fits` (clear of the band where there is one; the host holding
  // its offload), rounded up to a node.
  std::optional<std::uint64_t> min_gpus;
  bool min_gpus_asked = false;                   // a budget and Φ were given
  std::optional<std::uint64_t> max_params;       // largest Φ at N (inverse mode)
  std::optional<std::uint64_t> comm_seed;        // seed column, bytes per GPU per step
  std::optional<std::uint64_t> comm_ring;        // ring column, busiest rank
  std::optional<plan::StepTime> time;            // given compute inputs
  std::optional<std::uint64_t> time_comm_bytes;  // the volume the time was computed from
  // With offload that applies at this stage (deepspeed/offload.h): model_state_bytes, floor_bytes,
  // fits and min_gpus are then what stays on the GPU, and this is the rest, at N.
  bool offloaded = false;
  std::optional<deepspeed::OffloadBytes> offload;
  // The peak's other terms at N, when buffers, a CUDA allowance or hpZ are counted.
  std::optional<deepspeed::RuntimeTerms> runtime;
  // With a topology: bytes per GPU at each level (ZeRO++ at ZeRO-3).
  std::optional<deepspeed::LevelBytes> levels;
  // The step predicted (PlanInputs::step_compute): each collective's seconds and what is
  // hidden; `time` then holds the same totals. Tokens a second per GPU and MFU need the step's
  // tokens and FLOPs; the wall clock and GPU-hours need --tokens; the cost the price too.
  std::optional<plan::StepModel> step;
  std::optional<double> tokens_per_second_per_gpu, mfu;
  std::optional<double> wall_clock_seconds, gpu_hours, cost;
};

struct PlanReport {
  PlanInputs inputs;
  std::optional<std::uint64_t> budget;  // GPU memory − activations: room for model state
  std::array<StageReport, 4> stages;
  // At N, the first stage whose verdict is `fits`; nullopt when none does or undetermined.
  std::optional<int> cheapest_fitting_stage;
  // At N, the stage whose verdict is `fits` with the shortest predicted step (the lower on a
  // tie); nullopt without a step predicted or when none fits.
  std::optional<int> fastest_fitting_stage;
  // At N, the first stage whose verdict is `tight`, when it comes before any that fits: a run
  // that may or may not fit, named beside the stage that does (or alone, when none does).
  std::optional<int> tight_stage;
  // The stage the fewest GPUs are counted for: the stage wanted (--stage, the config's) when it
  // has a least N, else, without one, the stage with the least N (the lower on a tie); nullopt
  // when no N fits it.
  std::optional<int> least_n_stage;
  std::optional<double> comm_ratio_seed;  // ZeRO-3 / DP, at N > 1
  std::optional<double> comm_ratio_ring;
  std::optional<bool> activations_dominate;  // activations > DP's model state
  bool runtime_counted = false;              // the stages carry `runtime` terms
  std::optional<TightBand> tight_band;       // kTightBand where the peak is predicted
  // The activations and the CUDA allowance alone reach the GPU memory: no stage fits at any
  // N, and the budget is 0. A verdict, not an error: the notes say what would fit.
  bool activations_fill_gpu = false;
  // When the stage wanted (--stage, the config's, else any) does not fit at N: each of the
  // inputs' activation choices that makes a stage fit, with the cheapest way it fits: the stage
  // wanted at N, else another stage at N, else more GPUs (report.cc, find_fitting_changes).
  struct FittingChange {
    std::string change;
    std::uint64_t activation_bytes = 0;
    int stage = 0;
    std::uint64_t total_bytes = 0;      // that stage's total (the peak, with runtime terms)
    std::optional<std::uint64_t> gpus;  // the N it fits on, when more than the plan's N
  };
  std::vector<FittingChange> fitting_changes;
  bool changes_tried = false;  // the stage wanted did not fit and the choices were planned
  // With N fixed, a predicted peak and the stage wanted not fitting (DeepSpeed's rows): other
  // offloads, each planned again at N with its host check (report.cc, find_offload_changes):
  // the optimizer to the CPU, optimizer and params to the CPU, the optimizer to NVMe (ZeRO-3,
  // as DeepSpeed runs NVMe), with params on the GPU, the CPU or NVMe; each with the cheapest
  // activation choice it needs, if any. `offload_changes` holds those whose verdict is `fits`,
  // three at most, cheapest first; `offload_tried` the optimizer to the CPU as planned, the
  // first a reader would try, whatever its verdict.
  struct OffloadChange {
    deepspeed::Offload offload;
    std::string activation_change;  // "" as planned, else the choice it needs
    int stage = 0;
    Verdict verdict = Verdict::does_not_fit;
    std::uint64_t total_bytes = 0;  // the stage's peak with that offload
    std::uint64_t host_bytes_per_gpu = 0, nvme_bytes_per_gpu = 0;
    std::optional<std::uint64_t> host_bytes_per_node;  // with --host-memory
  };
  std::vector<OffloadChange> offload_changes;
  std::optional<OffloadChange> offload_tried;
  // When the stage wanted does not fit (or, without N, to need fewer GPUs): the
  // memory-efficient optimizers of the table (8-bit AdamW, Adafactor, pure-bf16 AdamW), each
  // planned again with the same precision and activations: at N when it fits there, else on
  // the fewest GPUs it fits on when fewer than as planned. `change` is "--optimizer NAME";
  // `gpus` the N it needs (nullopt: the plan's N). Three at most, those at N first, each
  // group closest to AdamW's training first (that order).
  std::vector<FittingChange> optimizer_changes;
  // Without N (no --gpus): the fewest GPUs as planned (the stage wanted, else the one with the
  // least N) and, for the activation choices that need fewer, up to three, fewest first; each N
  // the least whose verdict is `fits` (clear of the band, where there is one).
  std::optional<FittingChange> fewest_gpus;
  std::vector<FittingChange> fewer_gpus_with;
  // At N, when the host cannot hold the offload of the stage wanted (or, none fitting, of
  // ZeRO-3): what the offload needs of each node, and the fewest GPUs with nothing offloaded,
  // as planned and with the changes that need fewer (the plan without offload and without N).
  struct WithoutOffload {
    std::uint64_t host_bytes_per_node = 0;
    std::optional<FittingChange> fewest_gpus;
    std::vector<FittingChange> fewer_gpus_with;
  };
  std::optional<WithoutOffload> without_offload;
  // The run asked and PlanInputs::fine_tune_choices side by side at N: each one's peak, verdict
  // and least N by stage, the one asked first (its change empty). Empty without choices or N.
  struct FineTune {
    std::string method, change;
    std::uint64_t trained_params = 0;
    std::array<std::optional<std::uint64_t>, 4> peak_bytes;
    std::array<std::optional<Verdict>, 4> verdict;
    std::array<std::optional<std::uint64_t>, 4> min_gpus;
    std::optional<int> cheapest_fitting_stage;
  };
  std::vector<FineTune> fine_tunes;
  // Activations dominate and a stage without ZeRO (DP) fits at N once they are cut to the least
  // of the choices (or, given as bytes, to none): only then is ZeRO not worth it (cell D).
  // Without a GPU memory (the seed's own cell D): whether DP's model state is less than the
  // smallest card of the catalogue holds (`smallest_gpu`), with activations_cut_by "on any
  // listed GPU".
  std::optional<bool> dp_fits_with_activations_cut;
  std::string activations_cut_by;  // "as planned", "with " + the change, ...
  const catalog::GpuSpec* smallest_gpu = nullptr;
};

PlanReport make_plan(const PlanInputs& inputs);

}  // namespace zerodp::report

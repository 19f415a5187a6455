// find_what_would_fit(): the plan asked again with one thing changed (what_would_fit.h).
#include "what_would_fit.h"

#include <algorithm>
#include <limits>

namespace zerodp::report {
namespace {

// The stage wanted fits with the margin (or, without one asked for, some stage does).
bool wanted_clear(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.configured_stage) {
    return report.stages[stage_number(*in.configured_stage)].verdict == Verdict::fits;
  }
  return std::any_of(report.stages.begin(), report.stages.end(),
                     [](const StageReport& s) { return s.verdict == Verdict::fits; });
}

// Each activation choice planned again (make_plan() of the changed inputs) and kept with the
// cheapest way it fits, so that a plan that does not fit always says what would: the stage
// wanted at N; else, when a stage was asked for, the cheapest other stage that fits at N; else
// the stage wanted (or the one with the least N) on more GPUs, planned again at that N. More
// GPUs are not tried on a topology (--gpus-per-node), whose N is set by its nodes.
void find_fitting_changes(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!report.budget || !in.params || !in.gpus || wanted_clear(report)) return;
  // A host that cannot hold the offload is not helped by fewer activations: the notes say what
  // fits with nothing offloaded instead.
  const std::optional<Stage> asked = in.configured_stage;
  if (asked && !report.stages[stage_number(*asked)].host_fits.value_or(true)) return;
  report.changes_tried = !in.activation_choices.empty();
  for (const PlanInputs::ActivationChoice& choice : in.activation_choices) {
    // Planned again on the same GPUs: a change offered has the verdict `fits`, as the stages'
    // least N and the cheapest stage have (with the margin, where there is a band).
    PlanInputs with = in;
    with.activation_bytes = choice.bytes;
    with.activation_choices.clear();
    const PlanReport other = make_plan(with);
    std::optional<int> stage;
    if (wanted_clear(other)) {
      stage =
          in.configured_stage ? stage_number(*in.configured_stage) : *other.cheapest_fitting_stage;
    } else {
      stage = other.cheapest_fitting_stage;  // another stage than the one asked for
    }
    if (stage) {
      report.fitting_changes.push_back({choice.change,
                                        choice.bytes,
                                        *stage,
                                        *other.stages[std::size_t(*stage)].total_bytes,
                                        {}});
      continue;
    }
    if (in.topology) continue;
    const std::optional<int> on_more = other.least_n_stage;
    if (!on_more) continue;
    with.gpus = *other.stages[std::size_t(*on_more)].min_gpus;
    const PlanReport there = make_plan(with);
    report.fitting_changes.push_back({choice.change, choice.bytes, *on_more,
                                      *there.stages[std::size_t(*on_more)].total_bytes, with.gpus});
  }
  // More GPUs cost more than any change that fits on the GPUs there are: listed only alone,
  // the fewest first. Three at most, the cheaper changes (the choices' order) first.
  auto& changes = report.fitting_changes;
  if (std::any_of(changes.begin(), changes.end(), [](const auto& c) { return !c.gpus; })) {
    std::erase_if(changes, [](const PlanReport::FittingChange& c) { return c.gpus.has_value(); });
  } else {
    std::stable_sort(changes.begin(), changes.end(),
                     [](const auto& a, const auto& b) { return *a.gpus < *b.gpus; });
  }
  if (changes.size() > 3) changes.resize(3);
}

// The stage wanted (--stage, the config's), else, when no stage fits, ZeRO-3: the one a change
// of offload is planned for. nullopt when the plan fits as asked or DP is wanted (nothing to
// offload at stage 0).
std::optional<Stage> offload_target(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.configured_stage) {
    if (*in.configured_stage == Stage::dp ||
        report.stages[stage_number(*in.configured_stage)].verdict == Verdict::fits) {
      return std::nullopt;
    }
    return in.configured_stage;
  }
  if (report.cheapest_fitting_stage) return std::nullopt;
  return Stage::zero3;
}

// With N fixed: the offloads a DeepSpeed user can switch to, each planned again at N (its host
// checked), as planned or with the cheapest activation choice that makes it fit. NVMe and the
// params' offload are ZeRO-3's (ZeRO-Infinity), so they are kept only where ZeRO-3 fits.
void find_offload_changes(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!report.runtime_counted || !report.budget || !in.params || !in.gpus || *in.gpus < 2 ||
      in.framework == deepspeed::Framework::fsdp || !in.seek_offload_changes) {
    return;
  }
  const std::optional<Stage> target = offload_target(report);
  if (!target) return;
  using D = deepspeed::OffloadDevice;
  const deepspeed::Offload candidates[] = {{D::cpu, D::none},
                                           {D::cpu, D::cpu},
                                           {D::nvme, D::none},
                                           {D::nvme, D::cpu},
                                           {D::nvme, D::nvme}};
  auto planned = [&](const deepspeed::Offload& offload, std::uint64_t activations) {
    PlanInputs with = in;
    with.offload = offload;
    with.activation_bytes = activations;
    with.activation_choices.clear();
    with.seek_fewest_gpus = false;
    with.seek_offload_changes = false;
    return make_plan(with);
  };
  auto change_of = [&](const PlanReport& other, const deepspeed::Offload& offload, int stage,
                       const std::string& activations) {
    const StageReport& s = other.stages[std::size_t(stage)];
    PlanReport::OffloadChange c;
    c.offload = offload;
    c.activation_change = activations;
    c.stage = stage;
    c.verdict = *s.verdict;
    c.total_bytes = *s.total_bytes;
    if (s.offload) {
      c.host_bytes_per_gpu = s.offload->host_bytes;
      c.nvme_bytes_per_gpu = s.offload->nvme_bytes;
    }
    c.host_bytes_per_node = s.host_bytes_per_node;
    return c;
  };
  const int wanted = stage_number(*target);
  const bool activations_fit_at_n =
      std::any_of(report.fitting_changes.begin(), report.fitting_changes.end(),
                  [](const PlanReport::FittingChange& c) { return !c.gpus; });
  if (!in.offload.any()) {
    report.offload_tried =
        change_of(planned(candidates[0], in.activation_bytes), candidates[0], wanted, "");
  }
  for (const deepspeed::Offload& offload : candidates) {
    if (offload.optimizer == in.offload.optimizer && offload.params == in.offload.params) continue;
    // A frozen base's offload is not counted yet (report.cc refuses it): not offered.
    if (!in.frozen.empty() && offload.params != D::none) continue;
    const bool infinity = offload.optimizer == D::nvme || offload.params != D::none;
    if (infinity && in.configured_stage && wanted != 3) continue;
    // An offload with a change of the activations is offered only where that change alone
    // does not fit on these GPUs.
    std::vector<PlanInputs::ActivationChoice> tries = {{"", in.activation_bytes}};
    if (!activations_fit_at_n) {
      tries.insert(tries.end(), in.activation_choices.begin(), in.activation_choices.end());
    }
    for (const PlanInputs::ActivationChoice& a : tries) {
      const PlanReport other = planned(offload, a.bytes);
      std::optional<int> stage;
      if (infinity) {
        if (other.stages[3].verdict == Verdict::fits) stage = 3;
      } else if (in.configured_stage) {
        if (other.stages[std::size_t(wanted)].verdict == Verdict::fits) stage = wanted;
      } else {
        stage = other.cheapest_fitting_stage;
      }
      if (!stage) continue;
      report.offload_changes.push_back(change_of(other, offload, *stage, a.change));
      break;
    }
    if (report.offload_changes.size() == 3) break;
  }
}

// The seed's remedy for cell H, "use memory-efficient optimizers to shrink the 12Φ block":
// each row of the table that holds less optimizer state than the one planned, asked again.
void find_optimizer_changes(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!report.budget || !in.params || !in.optimizer || !in.seek_optimizer_changes) return;
  if (in.gpus && wanted_clear(report)) return;
  const bool fsdp = in.framework == deepspeed::Framework::fsdp;
  // The fewest GPUs as planned, which a change must beat to be offered beside more GPUs.
  std::optional<std::uint64_t> planned_n;
  if (const std::optional<int> stage = report.least_n_stage) {
    planned_n = report.stages[std::size_t(*stage)].min_gpus;
  }
  // The closest to AdamW's training first: 8-bit AdamW keeps its algorithm and master copy,
  // Adafactor its master copy, pure-bf16 AdamW neither (updates under a bf16 ulp are lost).
  for (const plan::Optimizer candidate :
       {plan::Optimizer::adam_8bit, plan::Optimizer::adafactor, plan::Optimizer::adam_bf16}) {
    const OptimizerRow& row = optimizer_row(candidate);
    if (candidate == *in.optimizer) continue;
    if (row.pure_bf16 && in.precision != plan::Precision::bf16) continue;
    if (fsdp && (row.block > 0 || row.pure_bf16)) continue;  // not planned under FSDP
    const plan::BytesPerParam bpp = plan::bytes_per_param(in.precision, candidate);
    if (bpp.total() >= in.bpp.total()) continue;  // holds no less: no remedy
    PlanInputs with = in;
    with.optimizer = candidate;
    with.bpp = bpp;
    with.bpp_source = std::string(plan::precision_name(in.precision, candidate)) + ", " +
                      std::string(row.described);
    with.seek_optimizer_changes = false;
    with.seek_offload_changes = false;
    with.seek_fewest_gpus = false;
    with.activation_choices.clear();
    const std::string change = "--optimizer " + std::string(row.word);
    if (in.gpus) {
      const PlanReport other = make_plan(with);
      std::optional<int> stage;
      if (in.configured_stage) {
        const int wanted = stage_number(*in.configured_stage);
        if (other.stages[std::size_t(wanted)].verdict == Verdict::fits) stage = wanted;
      } else {
        stage = other.cheapest_fitting_stage;
      }
      if (stage) {
        report.optimizer_changes.push_back({change,
                                            in.activation_bytes,
                                            *stage,
                                            *other.stages[std::size_t(*stage)].total_bytes,
                                            {}});
        continue;
      }
      if (in.topology) continue;
    }
    // On fewer GPUs than as planned: the plan without N, then asked again at its least N.
    PlanInputs anywhere = with;
    anywhere.gpus.reset();
    const PlanReport other = make_plan(anywhere);
    const std::optional<int> stage = other.least_n_stage;
    if (!stage) continue;
    const std::uint64_t n = *other.stages[std::size_t(*stage)].min_gpus;
    if (planned_n && n >= *planned_n) continue;
    with.gpus = int(std::min<std::uint64_t>(n, std::uint64_t(std::numeric_limits<int>::max())));
    const PlanReport there = make_plan(with);
    report.optimizer_changes.push_back(
        {change, in.activation_bytes, *stage, *there.stages[std::size_t(*stage)].total_bytes, n});
  }
  // Those at N before those on more GPUs; each group in the order above.
  std::stable_partition(report.optimizer_changes.begin(), report.optimizer_changes.end(),
                        [](const PlanReport::FittingChange& c) { return !c.gpus; });
}

// Cell D's question with a GPU: activations outweigh DP's model state; does DP fit at N once
// they are cut to the least the choices give (or, given as bytes, to none)?
void check_activations_cut(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!report.activations_dominate.value_or(false) || !in.gpus) return;
  if (!in.gpu_memory) {
    // The seed's cell D asks it without a card: DP's whole model state fits beside room for
    // activations on the smallest GPU the catalogue lists, so no card needs ZeRO for it.
    const catalog::GpuSpec* smallest = nullptr;
    for (const catalog::GpuSpec& g : catalog::gpu_catalogue()) {
      if (!smallest || g.reported_bytes < smallest->reported_bytes) smallest = &g;
    }
    report.smallest_gpu = smallest;
    report.dp_fits_with_activations_cut =
        smallest && *report.stages[0].floor_bytes < smallest->reported_bytes;
    report.activations_cut_by = "on any listed GPU";
    return;
  }
  if (report.stages[0].verdict == Verdict::fits) {
    report.dp_fits_with_activations_cut = true;
    report.activations_cut_by = "as planned";
    return;
  }
  PlanInputs with = in;
  with.activation_bytes = 0;
  with.activation_choices.clear();
  const PlanInputs::ActivationChoice* least = nullptr;
  for (const PlanInputs::ActivationChoice& c : in.activation_choices) {
    if (!least || c.bytes < least->bytes) least = &c;
  }
  if (least) {
    with.activation_bytes = least->bytes;
    report.activations_cut_by = "with " + least->change;
  } else if (in.model) {
    // Already at the least the model's choices give.
    report.dp_fits_with_activations_cut = false;
    report.activations_cut_by = "as planned, the least activations the model's choices give";
    return;
  } else {
    report.activations_cut_by = "with its model state alone";  // given as bytes: cut to none
  }
  report.dp_fits_with_activations_cut = make_plan(with).stages[0].verdict == Verdict::fits;
}

// Without N: the fewest GPUs the plan fits on (the stage wanted, else the stage with the least
// N), and each activation choice that fits on fewer, planned again at its N.
void find_fewest_gpus(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.gpus || !report.budget || !in.params || in.topology || !in.seek_fewest_gpus) return;
  // Each plan's least N is already the least whose verdict is `fits` (plan_fit).
  PlanInputs asked = in;
  asked.seek_fewest_gpus = false;
  auto at_n = [&](std::uint64_t activation_bytes, int stage, std::uint64_t n,
                  const std::string& change) {
    PlanInputs with = in;
    with.activation_bytes = activation_bytes;
    with.activation_choices.clear();
    with.gpus = int(std::min<std::uint64_t>(n, std::uint64_t(std::numeric_limits<int>::max())));
    const PlanReport there = make_plan(with);
    return PlanReport::FittingChange{change, activation_bytes, stage,
                                     *there.stages[std::size_t(stage)].total_bytes, n};
  };
  auto planned = [&](std::uint64_t activation_bytes) {
    PlanInputs with = asked;
    with.activation_bytes = activation_bytes;
    with.activation_choices.clear();
    return make_plan(with);
  };
  std::optional<std::uint64_t> best;
  const PlanReport as_planned = planned(in.activation_bytes);
  if (const std::optional<int> stage = as_planned.least_n_stage) {
    const std::uint64_t n = *as_planned.stages[std::size_t(*stage)].min_gpus;
    report.fewest_gpus = at_n(in.activation_bytes, *stage, n, "");
    best = n;
  }
  for (const PlanInputs::ActivationChoice& choice : in.activation_choices) {
    const PlanReport other = planned(choice.bytes);
    const std::optional<int> stage = other.least_n_stage;
    if (!stage) continue;
    const std::uint64_t n = *other.stages[std::size_t(*stage)].min_gpus;
    if (best && n >= *best) continue;
    report.fewer_gpus_with.push_back(at_n(choice.bytes, *stage, n, choice.change));
  }
  // Fewest GPUs first; among equals, the order of the choices (the cheaper change first); the
  // first three, which a reader compares.
  std::stable_sort(report.fewer_gpus_with.begin(), report.fewer_gpus_with.end(),
                   [](const auto& a, const auto& b) { return *a.gpus < *b.gpus; });
  if (report.fewer_gpus_with.size() > 3) report.fewer_gpus_with.resize(3);
}

// At N, when the host cannot hold the offload of the stage wanted: the fewest GPUs with nothing
// offloaded (the same question without offload and without N).
void find_without_offload(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (!in.gpus || !report.budget || !in.params || in.topology) return;
  const std::optional<Stage> wanted = in.configured_stage             ? in.configured_stage
                                      : report.cheapest_fitting_stage ? std::nullopt
                                                                      : std::optional(Stage::zero3);
  if (!wanted) return;
  const StageReport& s = report.stages[stage_number(*wanted)];
  if (!s.host_fits || *s.host_fits) return;
  PlanInputs with = in;
  with.offload = {};
  with.gpus.reset();
  with.configured_stage.reset();
  const PlanReport other = make_plan(with);
  report.without_offload =
      PlanReport::WithoutOffload{*s.host_bytes_per_node, other.fewest_gpus, other.fewer_gpus_with};
}

}  // namespace

// The run asked beside the same model trained the other ways (PlanInputs::fine_tune_choices),
// each planned again at N with its own Φ, frozen base and activations.
void compare_fine_tunes(PlanReport& report) {
  const PlanInputs& in = report.inputs;
  if (in.fine_tune_choices.empty() || !in.gpus || !in.params) return;
  const auto row = [](const PlanReport& r, std::string method, std::string change) {
    PlanReport::FineTune t;
    t.method = std::move(method);
    t.change = std::move(change);
    t.trained_params = r.inputs.params.value_or(0);
    for (const StageReport& s : r.stages) {
      const std::size_t i = std::size_t(stage_number(s.stage));
      t.peak_bytes[i] = s.total_bytes;
      t.verdict[i] = s.verdict;
      t.min_gpus[i] = s.min_gpus;
    }
    t.cheapest_fitting_stage = r.cheapest_fitting_stage;
    return t;
  };
  report.fine_tunes.push_back(row(report, in.fine_tune_asked, ""));
  for (const PlanInputs::FineTuneChoice& c : in.fine_tune_choices) {
    PlanInputs with = in;
    with.fine_tune_choices.clear();
    with.seek_optimizer_changes = false;
    with.seek_offload_changes = false;
    with.seek_fewest_gpus = false;
    with.activation_choices.clear();
    with.params = c.params;
    with.frozen = c.frozen;
    with.largest_trained = c.largest_trained;
    with.dequantized_params = c.dequantized_params;
    with.frozen_units = c.frozen_units;
    with.lora = c.lora;
    with.activation_bytes = c.activation_bytes;
    // Memory side by side: the step of each is its own question.
    with.step_compute.reset();
    with.step_not_predicted.clear();
    // A way these inputs do not allow (a LoRA run under FSDP, over nodes) is not compared.
    try {
      report.fine_tunes.push_back(row(make_plan(with), c.method, c.change));
    } catch (const InvalidArgument&) {
    }
  }
}

void find_what_would_fit(PlanReport& report) {
  find_fitting_changes(report);
  find_offload_changes(report);
  find_optimizer_changes(report);
  check_activations_cut(report);
  find_fewest_gpus(report);
  find_without_offload(report);
  compare_fine_tunes(report);
}

}  // namespace zerodp::report

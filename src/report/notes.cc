// plan_notes(): the sentences under the table, each the plain answer to one cell.
#include <algorithm>
#include <cstdio>
#include <string>

#include "zerodp/common/units.h"
#include "zerodp/report/breakdown.h"
#include "zerodp/report/notes.h"

namespace zerodp::report {
namespace {

std::string ratio(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string least_n_list(const PlanReport& report) {
  std::string list;
  for (const StageReport& s : report.stages) {
    if (!list.empty()) list += ", ";
    list += std::string(stage_name(s.stage)) + " " +
            (s.min_gpus ? std::to_string(*s.min_gpus) : std::string("none"));
  }
  return list;
}

std::string bytes(std::uint64_t b, bool binary) {
  return units::format_bytes(b, binary);
}

// Cell B: one GPU.
std::string one_gpu_note(const PlanReport& report, bool binary) {
  return "At N = 1 every stage holds the same " +
         bytes(*report.stages[0].model_state_bytes, binary) + " (" +
         std::to_string(report.inputs.bpp.total()) +
         " bytes x params): ZeRO only partitions the model state, so it saves nothing without "
         "N > 1.";
}

// Cell D: activations dominate. ZeRO is "not worth it" only when a stage without it fits once
// the activations are cut; without a GPU memory to fit, the seed's lesson, not a verdict.
std::string activations_note(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const StageReport& dp = report.stages[0];
  const StageReport& z3 = report.stages[3];
  std::string note = "Activations (" + bytes(in.activation_bytes, binary) +
                     ") dominate the model state (" + bytes(*dp.floor_bytes, binary) + " under DP)";
  if (z3.savings_vs_dp && report.comm_ratio_ring) {
    note += ": at N = " + std::to_string(*in.gpus) + " ZeRO-3 saves only " +
            units::format_percent(*z3.savings_vs_dp) + " of the memory while sending " +
            ratio(*report.comm_ratio_ring) + "x DP's bytes on a ring (" +
            ratio(*report.comm_ratio_seed) + "x by the seed's count)";
  }
  const std::string& cut = report.activations_cut_by;
  if (!report.dp_fits_with_activations_cut) {
    return note +
           ". ZeRO pays off when the model state dominates: cut the activations first with "
           "activation checkpointing or gradient accumulation, then see what still needs sharding.";
  }
  if (report.smallest_gpu && *report.dp_fits_with_activations_cut) {
    const catalog::GpuSpec& g = *report.smallest_gpu;
    return note +
           ". ZeRO is not worth it here: DP's model state fits even the smallest GPU listed (" +
           std::string(g.name) + ", " + bytes(g.reported_bytes, binary) +
           "); reach for activation checkpointing or gradient accumulation instead.";
  }
  if (*report.dp_fits_with_activations_cut && cut == "as planned") {
    return note +
           ". ZeRO is not worth it here: DP already fits at N = " + std::to_string(*in.gpus) + ".";
  }
  if (*report.dp_fits_with_activations_cut) {
    return note + ". ZeRO is not worth it here: DP fits at N = " + std::to_string(*in.gpus) + " " +
           cut + "; reach for activation checkpointing or gradient accumulation instead.";
  }
  return note + ". Cutting them is not enough: DP does not fit at N = " + std::to_string(*in.gpus) +
         " even " + cut + ", so the model state must be sharded too.";
}

// "peak 43.1 GB > 40 GB" or "model state 12 GB <= budget 20 GB": what the fit compared.
std::string fit_reason(const PlanReport& report, const StageReport& s, bool binary) {
  const PlanInputs& in = report.inputs;
  // The host's verdict beside the GPU's when the offload does not fit in it.
  const std::string host = s.host_fits && !*s.host_fits
                               ? "; the offload's host memory " +
                                     bytes(*s.host_bytes_per_node, binary) + " per node > " +
                                     bytes(*in.host_memory, binary)
                               : std::string();
  const bool within = *s.total_bytes <= *in.gpu_memory;
  const char* relation = within ? " <= " : " > ";
  if (report.runtime_counted) {
    std::string out =
        "peak " + bytes(*s.total_bytes, binary) + relation + bytes(*in.gpu_memory, binary);
    // The GPU's own verdict (a full host makes the stage's "does not fit" whatever it is).
    if (verdict_of(*s.total_bytes, *in.gpu_memory, report.tight_band) == Verdict::tight) {
      out += ", within the planner's error";
    }
    return out + host;
  }
  return "model state " + bytes(*s.model_state_bytes, binary) + relation + "budget " +
         bytes(*report.budget, binary) + host;
}

// " (model state 30.1 GB + activations 7.05 GB + ...)": the terms of the phase that sets the
// peak, those that are not zero; empty without runtime terms.
std::string peak_terms(const PlanReport& report, const StageReport& s, bool binary) {
  if (!s.runtime) return "";
  std::string out;
  for (const PeakTerm& t : peak_terms_of(report, s).terms) {
    out += (out.empty() ? " (" : " + ") + t.name + " " + bytes(t.bytes, binary);
  }
  return out.empty() ? out : out + ")";
}

// Cells E and H: what fits the budget. Every count and stage here is the verdict's: `fits`,
// clear of the band where there is one; a tight stage is named as tight, never as fitting.
std::string fit_note(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const std::string rounded = in.round_to && *in.round_to > 1
                                  ? ", rounded up to a multiple of " + std::to_string(*in.round_to)
                                  : std::string();
  const std::string basis =
      report.runtime_counted ? "the peak within " + bytes(*in.gpu_memory, binary) + " per GPU" +
                                   margin_words(report) + rounded + "; none: no N brings it there"
                             : "model-state budget " + bytes(*report.budget, binary) + " per GPU" +
                                   rounded + "; none: the floor exceeds it";
  const std::string least = "Least N per stage (" + basis + "): " + least_n_list(report) + ".";
  if (!in.gpus) return least;
  const std::string at = " at N = " + std::to_string(*in.gpus);
  const auto tight = [&](const StageReport& t) {
    return std::string(stage_name(t.stage)) + " is tight (" + fit_reason(report, t, binary) + ")";
  };
  if (!report.cheapest_fitting_stage) {
    if (report.tight_stage) {
      return "No stage fits" + margin_words(report) + at + "; " +
             tight(report.stages[std::size_t(*report.tight_stage)]) + ". " + least;
    }
    return "No stage fits" + at + ". " + least;
  }
  const StageReport& s = report.stages[std::size_t(*report.cheapest_fitting_stage)];
  std::string out = "Cheapest stage that fits" + margin_words(report) + at + ": " +
                    std::string(stage_name(s.stage)) + " (" + fit_reason(report, s, binary) + ")";
  // A cheaper stage within the planner's error is a coin toss: named, as tight.
  if (report.tight_stage) out += "; " + tight(report.stages[std::size_t(*report.tight_stage)]);
  return out + ".";
}

// "peak 41.0 GB <= 42.3 GB, within the planner's error": an offload's peak against the
// GPU, and its host against --host-memory where that does not hold it.
std::string offload_reason(const PlanReport& report, const PlanReport::OffloadChange& c,
                           bool binary) {
  const PlanInputs& in = report.inputs;
  std::string out = "peak " + bytes(c.total_bytes, binary) +
                    (c.total_bytes <= *in.gpu_memory ? " <= " : " > ") +
                    bytes(*in.gpu_memory, binary);
  if (c.host_bytes_per_node && *c.host_bytes_per_node > *in.host_memory) {
    return out + "; the offload's host memory " + bytes(*c.host_bytes_per_node, binary) +
           " per node > " + bytes(*in.host_memory, binary);
  }
  if (report.tight_band &&
      verdict_of(c.total_bytes, *in.gpu_memory, report.tight_band) == Verdict::tight) {
    out += ", within the planner's error";
  }
  return out;
}

// What the host and NVMe hold per GPU for an offload that fits.
std::string offload_holding(const PlanReport::OffloadChange& c, bool binary) {
  std::string out = ", the host holding " + bytes(c.host_bytes_per_gpu, binary);
  if (c.nvme_bytes_per_gpu > 0) out += " and NVMe " + bytes(c.nvme_bytes_per_gpu, binary);
  return out + " per GPU";
}

// When the stage wanted does not fit at N: the optimizer to the CPU, the first offload a reader
// would try (when nothing is offloaded), and the other offloads that fit, as report.cc planned
// them (find_offload_changes).
std::vector<std::string> offload_notes(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const std::string at = " at N = " + std::to_string(*in.gpus);
  std::vector<std::string> out;
  const auto& changes = report.offload_changes;
  std::size_t first_other = 0;
  if (report.offload_tried) {
    const PlanReport::OffloadChange& t = *report.offload_tried;
    std::string note = "With " + offload_words(report, t.offload) + ", " +
                       std::string(stage_name(kStages[std::size_t(t.stage)])) +
                       (t.verdict == Verdict::tight  ? " is tight"
                        : t.verdict == Verdict::fits ? " fits"
                                                     : " still does not fit") +
                       at + " (" + offload_reason(report, t, binary) + ")";
    if (t.verdict != Verdict::does_not_fit) note += offload_holding(t, binary);
    out.push_back(note + ".");
    // The same offload as planned is not offered twice.
    if (!changes.empty() && changes[0].activation_change.empty() &&
        changes[0].offload.optimizer == t.offload.optimizer &&
        changes[0].offload.params == t.offload.params && changes[0].stage == t.stage) {
      first_other = 1;
    }
  }
  if (changes.size() <= first_other) return out;
  std::string note = std::string(report.offload_tried ? "Other offloads" : "Offloads") +
                     " that fit" + margin_words(report) + at + ":";
  for (std::size_t i = first_other; i < changes.size(); ++i) {
    const PlanReport::OffloadChange& c = changes[i];
    note += std::string(i == first_other ? " " : "; ") + offload_words(report, c.offload) +
            (c.activation_change.empty() ? "" : " with " + c.activation_change) + " (" +
            std::string(stage_name(kStages[std::size_t(c.stage)])) + ", peak " +
            bytes(c.total_bytes, binary) + offload_holding(c, binary) + ")";
  }
  out.push_back(note + ".");
  return out;
}

// When the stage wanted does not fit: which of the activation choices would make it fit, each
// planned again (report.cc), with the other stage or the more GPUs it needs, or that none does.
std::string changes_note(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const std::string at = " at N = " + std::to_string(*in.gpus);
  // Changes are planned to fit clear of the band (report.cc): said where there is one.
  const std::string margin = margin_words(report);
  if (report.fitting_changes.empty()) {
    std::string tried;
    for (const PlanInputs::ActivationChoice& c : in.activation_choices) {
      tried += (tried.empty() ? "" : ", ") + c.change;
    }
    return "No change of the activations (" + tried + ") makes it fit" + margin + at +
           (in.topology ? ", on any stage." : ", on any stage, or on more GPUs.");
  }
  std::string out = "What would fit" + margin + at + ":";
  for (std::size_t i = 0; i < report.fitting_changes.size(); ++i) {
    const PlanReport::FittingChange& c = report.fitting_changes[i];
    const std::string stage(stage_name(report.stages[std::size_t(c.stage)].stage));
    // A change that needs another stage or more GPUs says so where the change is named.
    std::string also;
    if (in.configured_stage && stage_number(*in.configured_stage) != c.stage) {
      also = " with " + stage + " instead of " + std::string(stage_name(*in.configured_stage));
    }
    if (c.gpus) also += " on N = " + std::to_string(*c.gpus);
    out += std::string(i == 0 ? " " : "; ") + c.change + also + " (activations " +
           bytes(c.activation_bytes, binary) + "; " + stage + ", " +
           (report.runtime_counted ? "peak " : "total ") + bytes(c.total_bytes, binary) + ")";
  }
  return out + ".";
}

// The memory-efficient optimizers that fit (what_would_fit.cc, find_optimizer_changes): at N,
// or on fewer GPUs than as planned.
std::string optimizer_note(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const std::string total = report.runtime_counted ? "peak " : "total ";
  std::optional<std::uint64_t> planned_n;
  if (report.least_n_stage) planned_n = report.stages[std::size_t(*report.least_n_stage)].min_gpus;
  std::string out = "With a memory-efficient optimizer (the same precision and activations)" +
                    margin_words(report) + ":";
  for (std::size_t i = 0; i < report.optimizer_changes.size(); ++i) {
    const PlanReport::FittingChange& c = report.optimizer_changes[i];
    const std::string stage(stage_name(report.stages[std::size_t(c.stage)].stage));
    std::string where =
        c.gpus ? " on N = " + std::to_string(*c.gpus) +
                     (planned_n ? " instead of " + std::to_string(*planned_n) : std::string())
               : " at N = " + std::to_string(*in.gpus);
    out += std::string(i == 0 ? " " : "; ") + c.change + ", " + stage + where + " (" + total +
           bytes(c.total_bytes, binary) + ")";
  }
  return out + ".";
}

// The run asked beside a full fine-tune, LoRA and QLoRA of the same model (what_would_fit.cc,
// compare_fine_tunes): each one's peak by stage at N, and where it fits.
std::string fine_tune_note(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  const auto named = [](const std::string& method) {
    return method == "full"   ? std::string("a full fine-tune")
           : method == "lora" ? std::string("LoRA")
                              : std::string("QLoRA");
  };
  std::string out = "The same model trained other ways, " +
                    std::string(report.runtime_counted ? "peak" : "total") +
                    " at N = " + std::to_string(*in.gpus) + " for DP / ZeRO-1 / ZeRO-2 / ZeRO-3" +
                    margin_words(report) + ":";
  for (std::size_t i = 0; i < report.fine_tunes.size(); ++i) {
    const PlanReport::FineTune& t = report.fine_tunes[i];
    out += std::string(i == 0 ? " " : "; ") +
           (t.change.empty() ? "as asked (" + named(t.method) + ")"
                             : named(t.method) + " (" + t.change + ")") +
           " ";
    for (std::size_t s = 0; s < 4; ++s) {
      out += (s == 0 ? "" : " / ") +
             (t.peak_bytes[s] ? bytes(*t.peak_bytes[s], binary) : std::string("-"));
    }
    if (t.cheapest_fitting_stage) {
      out += ", " +
             std::string(stage_name(report.stages[std::size_t(*t.cheapest_fitting_stage)].stage)) +
             " fits";
      continue;
    }
    // Where none fits at N: the stage with the fewest GPUs.
    std::optional<std::size_t> least;
    for (std::size_t s = 0; s < 4; ++s) {
      if (t.min_gpus[s] && (!least || *t.min_gpus[s] < *t.min_gpus[*least])) least = s;
    }
    out += least ? ", none fits; " + std::string(stage_name(report.stages[*least].stage)) +
                       " on N = " + std::to_string(*t.min_gpus[*least])
                 : ", none fits on any N";
  }
  return out + ".";
}

// Without N: the fewest GPUs as planned, and each change that needs fewer.
std::string fewest_note(const PlanReport& report,
                        const std::optional<PlanReport::FittingChange>& fewest,
                        const std::vector<PlanReport::FittingChange>& fewer, bool binary,
                        const std::string& opening = "What would fit: ") {
  const std::string total = report.runtime_counted ? "peak " : "total ";
  auto fitting = [&](const PlanReport::FittingChange& c) {
    const std::string stage(stage_name(report.stages[std::size_t(c.stage)].stage));
    return stage + " on N = " + std::to_string(*c.gpus) + " (" + total +
           bytes(c.total_bytes, binary) + " <= " + bytes(*report.inputs.gpu_memory, binary) + ")";
  };
  std::string out = opening;
  if (fewest) {
    out += "as planned, " + fitting(*fewest);
  } else {
    out += "as planned, no number of GPUs";
  }
  for (std::size_t i = 0; i < fewer.size(); ++i) {
    const PlanReport::FittingChange& c = fewer[i];
    out += std::string(i == 0 ? "; fewer GPUs with " : "; with ") + c.change + " (activations " +
           bytes(c.activation_bytes, binary) + "): " + fitting(c);
  }
  return out + ".";
}

}  // namespace

std::string offload_words(const PlanReport& report, const deepspeed::Offload& offload) {
  std::string out = field_ref("offload_optimizer") + " " +
                    std::string(deepspeed::offload_device_name(offload.optimizer));
  if (offload.params != report.inputs.offload.params) {
    out += " " + field_ref("offload_params") + " " +
           std::string(deepspeed::offload_device_name(offload.params));
  }
  return out;
}

std::string margin_words(const PlanReport& report) {
  return report.tight_band
             ? " with the " + units::format_percent(report.tight_band->under, 0) + " margin"
             : std::string();
}

std::vector<std::string> plan_notes(const PlanReport& report, bool binary, const FieldNamer& name) {
  const PlanInputs& in = report.inputs;
  std::vector<std::string> notes;
  if (in.params && in.gpus && *in.gpus == 1) notes.push_back(one_gpu_note(report, binary));
  if (report.activations_dominate.value_or(false)) {
    notes.push_back(activations_note(report, binary));
  }
  if (report.activations_fill_gpu) {
    notes.push_back(
        "No stage fits at any N: the activations (" + bytes(in.activation_bytes, binary) + ")" +
        (in.cuda_overhead > 0 ? " and the CUDA allowance (" + bytes(in.cuda_overhead, binary) + ")"
                              : std::string()) +
        " alone reach the GPU memory (" + bytes(*in.gpu_memory, binary) + ").");
  }
  if (report.budget && in.params) notes.push_back(fit_note(report, binary));
  // The stage the user will run (--stage, or the DeepSpeed config's), at N, and why.
  if (in.configured_stage && report.budget && in.params && in.gpus) {
    const StageReport& s = report.stages[stage_number(*in.configured_stage)];
    const std::string stage(stage_name(s.stage));
    notes.push_back(
        (in.deepspeed_config.empty()
             ? field_ref("stage") + " " + std::to_string(stage_number(s.stage)) + ": " + stage
             : "The DeepSpeed config's stage, " + stage + ",") +
        (s.verdict == Verdict::tight  ? " is tight"
         : s.verdict == Verdict::fits ? " fits"
                                      : " does not fit") +
        " at N = " + std::to_string(*in.gpus) + ": " + fit_reason(report, s, binary) +
        (s.host_fits.value_or(true) ? peak_terms(report, s, binary) : std::string()) + ".");
  }
  // Would another offload rescue the stage asked for (or, without one, ZeRO-3)? (Not under
  // FSDP, whose CPU offload is not planned; report.cc leaves these empty then.)
  if (in.gpus && report.budget) {
    for (std::string& note : offload_notes(report, binary)) notes.push_back(std::move(note));
  }
  if (report.changes_tried) notes.push_back(changes_note(report, binary));
  if (!in.gpus && report.budget && in.params && !in.topology) {
    notes.push_back(fewest_note(report, report.fewest_gpus, report.fewer_gpus_with, binary));
  }
  if (!report.optimizer_changes.empty()) notes.push_back(optimizer_note(report, binary));
  if (report.fine_tunes.size() > 1 && in.gpu_memory) {
    notes.push_back(fine_tune_note(report, binary));
  }
  // The host cannot hold the offload of the stage wanted: what fits with nothing offloaded.
  if (const auto& w = report.without_offload) {
    notes.push_back(fewest_note(report, w->fewest_gpus, w->fewer_gpus_with, binary,
                                "The host cannot hold the offload (it needs " +
                                    bytes(w->host_bytes_per_node, binary) +
                                    " per node); with nothing offloaded, what would fit: "));
  }
  // Cell F: the price of ZeRO-3 in communication (already said when activations dominate).
  if (report.comm_ratio_seed && !report.activations_dominate.value_or(false)) {
    notes.push_back("ZeRO-3 sends " + ratio(*report.comm_ratio_seed) +
                    "x DP's bytes by the seed's count and " + ratio(*report.comm_ratio_ring) +
                    "x on a ring.");
  }
  for (std::string& note : notes) note = name_fields(note, name);
  return notes;
}

}  // namespace zerodp::report

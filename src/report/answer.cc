// answer_of(): the plan's verdicts in the dozen lines a user reads first.
#include "zerodp/report/answer.h"

#include <cmath>
#include <string>

#include "zerodp/common/text_wrap.h"
#include "zerodp/common/units.h"
#include "zerodp/report/notes.h"
#include "zerodp/report/table.h"

namespace zerodp::report {
namespace {

// Names the user gave (a config's path, a model's) cut so that the title keeps to one line.
constexpr std::size_t kNameColumns = 32;

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string stage_words(int stage) {
  return std::string(stage_name(kStages[std::size_t(stage)]));
}

// "llama-3-8b on 8 x a100-40gb (42.3 GB)": what was asked about, on what.
std::string title(const PlanReport& report, bool binary) {
  const PlanInputs& in = report.inputs;
  std::string what = in.model ? printable(in.model->name, kNameColumns)
                              : units::format_count(*in.params) + " params";
  std::string card =
      in.gpu ? std::string(in.gpu->name) + " (" + units::format_bytes(*in.gpu_memory, binary) + ")"
             : units::format_bytes(*in.gpu_memory, binary);
  std::string where = in.gpus ? std::to_string(*in.gpus) + " x " + card : card + " GPUs";
  std::string out = "Answer: " + what + " on " + where;
  if (in.configured_stage) out += ", " + std::string(stage_name(*in.configured_stage)) + " asked";
  return out;
}

std::string fewest_words(const PlanReport& report) {
  const std::optional<int> stage = report.least_n_stage;
  if (!stage) return "none, as planned";
  return stage_words(*stage) +
         " on N = " + std::to_string(*report.stages[std::size_t(*stage)].min_gpus);
}

// "Cheapest stage that fits with the 11 % margin at N = 8: ZeRO-3. ZeRO-2 is tight."
std::string cheapest_sentence(const PlanReport& report) {
  const std::string at = " at N = " + std::to_string(*report.inputs.gpus);
  std::string out = report.cheapest_fitting_stage
                        ? "Cheapest stage that fits" + margin_words(report) + at + ": " +
                              stage_words(*report.cheapest_fitting_stage) + "."
                        : "No stage fits" + margin_words(report) + at + ".";
  if (report.tight_stage) out += " " + stage_words(*report.tight_stage) + " is tight.";
  return out;
}

std::string whole(double x) {
  return units::format_with_commas(std::uint64_t(std::llround(x)));
}

// "Fastest that fits, predicted: ZeRO-3 (step 532.04 ms, 7,699 tokens/s/GPU, MFU 40.0 %; 1B
// tokens in 2.3 h, 36 GPU-hours, cost 90.20)."
std::string fastest_sentence(const PlanReport& report) {
  const PlanInputs& in = report.inputs;
  const StageReport& s = report.stages[std::size_t(*report.fastest_fitting_stage)];
  std::string out = "Fastest stage that fits" + margin_words(report) +
                    ", predicted: " + stage_words(*report.fastest_fitting_stage) + " (step " +
                    units::format_seconds(s.step->step_seconds);
  if (s.tokens_per_second_per_gpu)
    out += ", " + whole(*s.tokens_per_second_per_gpu) + " tokens/s/GPU";
  if (s.mfu) out += ", MFU " + units::format_percent(*s.mfu, 1);
  if (s.wall_clock_seconds) {
    out += "; " + units::format_count(std::uint64_t(*in.tokens)) + " tokens in " +
           units::format_duration(*s.wall_clock_seconds) + ", " + whole(*s.gpu_hours) +
           " GPU-hours";
    if (s.cost) out += ", cost " + units::format_money(*s.cost);
  }
  return out + ").";
}

// The lines at N: each stage's verdict, peak and least N; the cheapest stage; the fewest
// GPUs; the first change that fits.
void lines_at_n(const PlanReport& report, bool binary, std::vector<std::string>& lines) {
  const PlanInputs& in = report.inputs;
  const std::string total = report.runtime_counted ? "peak " : "total ";
  for (const StageReport& s : report.stages) {
    std::string line =
        "  " + padded(std::string(stage_name(s.stage)), 8) + padded(fits_word(s), 11) +
        padded(total + units::format_bytes(*s.total_bytes, binary), 18) + "least N " +
        (s.min_gpus ? std::to_string(*s.min_gpus) : std::string("none"));
    // The predicted step beside the memory: its tokens a second, else its seconds.
    if (s.step) {
      line = padded(line, 53) + (s.tokens_per_second_per_gpu
                                     ? whole(*s.tokens_per_second_per_gpu) + " tok/s/GPU"
                                     : "step " + units::format_seconds(s.step->step_seconds));
    }
    lines.push_back(line);
  }
  const std::string at = " at N = " + std::to_string(*in.gpus);
  lines.push_back(cheapest_sentence(report));
  if (report.fastest_fitting_stage) lines.push_back(fastest_sentence(report));
  lines.push_back("Fewest GPUs" + margin_words(report) + ": " + fewest_words(report) + ".");
  if (!report.fitting_changes.empty()) {
    const PlanReport::FittingChange& c = report.fitting_changes.front();
    lines.push_back("First change that fits: " + c.change + " (" + stage_words(c.stage) +
                    (c.gpus ? " on N = " + std::to_string(*c.gpus) : at) + ", " + total +
                    units::format_bytes(c.total_bytes, binary) + ").");
  } else if (!report.offload_changes.empty()) {
    const PlanReport::OffloadChange& c = report.offload_changes.front();
    std::string change = offload_words(report, c.offload);
    if (!c.activation_change.empty()) change += " " + c.activation_change;
    lines.push_back("First change that fits: " + change + " (" + stage_words(c.stage) + at + ", " +
                    total + units::format_bytes(c.total_bytes, binary) + ").");
  } else if (!report.optimizer_changes.empty()) {
    const PlanReport::FittingChange& c = report.optimizer_changes.front();
    lines.push_back("First change that fits: " + c.change + " (" + stage_words(c.stage) +
                    (c.gpus ? " on N = " + std::to_string(*c.gpus) : at) + ", " + total +
                    units::format_bytes(c.total_bytes, binary) + ").");
  } else if (report.changes_tried) {
    lines.push_back("No change of the activations makes it fit" + margin_words(report) + ".");
  }
  // Nothing fits as asked: the first other way of training the model that does (LoRA before
  // QLoRA, which quantizes its base; what_would_fit.cc's compare_fine_tunes).
  if (report.cheapest_fitting_stage) return;
  for (const PlanReport::FineTune& t : report.fine_tunes) {
    if (t.change.empty() || !t.cheapest_fitting_stage) continue;
    const std::size_t stage = std::size_t(*t.cheapest_fitting_stage);
    const std::string way = t.method == "lora"    ? "LoRA"
                            : t.method == "qlora" ? "QLoRA"
                                                  : "a full fine-tune";
    lines.push_back("As " + way + " it fits: " + t.change + " (" + stage_words(int(stage)) + at +
                    ", " + total + units::format_bytes(*t.peak_bytes[stage], binary) + ").");
    break;
  }
}

// The lines without N: each stage's least N; the fewest GPUs as planned; fewer with a change.
void lines_without_n(const PlanReport& report, std::vector<std::string>& lines) {
  for (const StageReport& s : report.stages) {
    lines.push_back("  " + padded(std::string(stage_name(s.stage)), 8) + "least N " +
                    (s.min_gpus ? std::to_string(*s.min_gpus) : std::string("none")));
  }
  lines.push_back("Fewest GPUs" + margin_words(report) + ": " +
                  (report.fewest_gpus ? stage_words(report.fewest_gpus->stage) +
                                            " on N = " + std::to_string(*report.fewest_gpus->gpus)
                                      : std::string("none, as planned")) +
                  ".");
  const PlanReport::FittingChange* fewer =
      !report.fewer_gpus_with.empty()     ? &report.fewer_gpus_with.front()
      : !report.optimizer_changes.empty() ? &report.optimizer_changes.front()
                                          : nullptr;
  if (fewer) {
    lines.push_back("Fewer with " + fewer->change + ": " + stage_words(fewer->stage) +
                    " on N = " + std::to_string(*fewer->gpus) + ".");
  }
}

// The sentence a page or a notebook titles the plan with, and the verdict it speaks of.
void headline_of(const PlanReport& report, bool binary, Answer& answer) {
  const PlanInputs& in = report.inputs;
  const std::string margin = margin_words(report);
  if (!in.gpus) {
    if (report.fewest_gpus) {
      answer.headline = "The fewest GPUs that fit" + margin + ": " +
                        stage_words(report.fewest_gpus->stage) +
                        " on N = " + std::to_string(*report.fewest_gpus->gpus) + ".";
      answer.verdict = Verdict::fits;
    } else {
      answer.headline = "No number of GPUs fits as planned" + margin + ".";
      answer.verdict = Verdict::does_not_fit;
    }
    return;
  }
  const std::string at = " at N = " + std::to_string(*in.gpus);
  const std::string memory = units::format_bytes(*in.gpu_memory, binary) + " a GPU";
  const std::string total = report.runtime_counted ? "peak " : "total ";
  auto said = [&](const StageReport& s) {
    return " (" + total + units::format_bytes(*s.total_bytes, binary) + ", " + memory + ")";
  };
  if (in.configured_stage) {
    const StageReport& s = report.stages[std::size_t(stage_number(*in.configured_stage))];
    answer.verdict = *s.verdict;
    const std::string how = *s.verdict == Verdict::fits    ? " fits" + margin
                            : *s.verdict == Verdict::tight ? " is tight"
                                                           : " does not fit";
    answer.headline = std::string(stage_name(s.stage)) + how + at + said(s) + ".";
    if (*s.verdict != Verdict::fits) {
      answer.headline += " Fewest GPUs" + margin + ": " + fewest_words(report) + ".";
    }
    return;
  }
  if (report.cheapest_fitting_stage) {
    const StageReport& s = report.stages[std::size_t(*report.cheapest_fitting_stage)];
    answer.verdict = Verdict::fits;
    answer.headline = "Cheapest stage that fits" + margin + at + ": " +
                      std::string(stage_name(s.stage)) + said(s) + ".";
    return;
  }
  answer.verdict = Verdict::does_not_fit;
  answer.headline =
      "No stage fits" + margin + at + ". Fewest GPUs" + margin + ": " + fewest_words(report) + ".";
}

}  // namespace

Answer answer_of(const PlanReport& report, bool binary, const FieldNamer& name) {
  const PlanInputs& in = report.inputs;
  Answer answer;
  if (!in.gpu_memory) {
    answer.headline =
        "Give the GPU memory (" + name("gpu_memory") + " or " + name("gpu") + ") to see what fits.";
    return answer;
  }
  if (!in.params || !report.budget) {
    answer.headline =
        "Give the model (" + name("params") + " or " + name("model") + ") to see what fits.";
    return answer;
  }
  headline_of(report, binary, answer);
  answer.headline = name_fields(answer.headline, name);
  if (in.gpus) answer.cheapest = cheapest_sentence(report);
  std::vector<std::string> lines = {title(report, binary)};
  if (in.gpus) {
    lines_at_n(report, binary, lines);
  } else {
    lines_without_n(report, lines);
  }
  for (const std::string& line : lines) {
    // The stage rows are aligned and short; a sentence longer than the columns is filled.
    const std::string named = name_fields(line, name);
    if (named.size() <= kAnswerColumns) {
      answer.lines.push_back(named);
      continue;
    }
    const std::string filled = fill_words(named, kAnswerColumns, 2);
    for (std::size_t at = 0; at < filled.size();) {
      std::size_t end = filled.find('\n', at);
      if (end == std::string::npos) end = filled.size();
      answer.lines.push_back(filled.substr(at, end - at));
      at = end + 1;
    }
  }
  // By construction a title, four stages and three sentences, each of a line or two.
  ZERODP_CHECK(answer.lines.size() <= kAnswerLines);
  return answer;
}

}  // namespace zerodp::report

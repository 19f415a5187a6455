#include "help.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "zerodp/common/text_wrap.h"

namespace zerodp::cli {
namespace {

// The first column of an option line: "  --name VALUE" padded to it; the description starts
// at this column, or on the next line when the name reaches it.
constexpr std::size_t kNameColumn = 28;

constexpr CommandHelp kCommands[] = {
    {"plan", "memory and traffic per GPU of DP and ZeRO-1/2/3",
     "The memory each GPU holds and the bytes each sends under plain data parallelism and "
     "ZeRO stages 1, 2 and 3, from a parameter count (--params), a published model (--model) or "
     "a Hugging Face config.json (--model-config), with a DeepSpeed config if you have one: "
     "totals, the floors as N grows without bound, the least N that fits a GPU, the step's "
     "efficiency with overlap, and the cheapest stage that fits.\n\n"
     "With a model or a DeepSpeed config, the total is the GPU's peak, term by term, and "
     "\"fits\" carries the error measured against published runs. Lines are at most 100 "
     "columns; --wide prints the tables whole. --json prints the same plan for tools "
     "(docs/planner.md).",
     "zerodp plan --params 7.5B --gpus 64 --gpu-memory 80GB\n"
     "zerodp plan --model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096\n"
     "zerodp plan --model-config config.json --deepspeed-config ds.json --gpus 16"},
    {"plot", "draw memory per GPU against N, or the peak term by term",
     "The model-state memory per GPU of DP and ZeRO-1/2/3 against the number of GPUs N, each "
     "stage's floor dashed, as SVG; with --breakdown, a stacked bar per stage of its memory at "
     "N term by term against the GPU's memory. It takes every flag of plan.",
     "zerodp plot --params 1e9 --max-gpus 64 --out memory.svg\n"
     "zerodp plot --breakdown --model gpt2-xl --gpus 8 --gpu rtx-4090 --out bars.svg"},
    {"measure", "run a few steps and show what each rank holds and sends",
     "Trains a few steps on this machine with the engine and prints, per stage, the bytes each "
     "rank held and sent as measured, beside what the planner predicts for the same run.",
     "zerodp measure --all-stages --ranks 4 --params 1M\n"
     "zerodp measure --stage 3 --ranks 2 --params 1M --per-rank"},
    {"train", "train a byte-level GPT with ZeRO stage 0-3 on N ranks",
     "Trains a byte-level GPT (or an MLP) with the stage's sharding of optimizer states, "
     "gradients and parameters, over threads (one process) or MPI (under mpirun, --backend "
     "mpi). --dry-run plans the run's peak per rank and exits; --save-dir keeps checkpoints "
     "that --resume continues bit for bit on the same number of ranks.",
     "zerodp train --stage 3 --ranks 4 --rank-memory 40MB --dry-run\n"
     "zerodp train --data input.txt --stage 3 --ranks 2 --steps 20 --save-dir ckpt\n"
     "zerodp train --data input.txt --stage 2 --ranks 2 --layers 2 --steps 20 --json"},
    {"eval", "the mean loss of a trained GPT over a file", "",
     "zerodp eval --checkpoint ckpt --data input.txt\n"
     "zerodp eval --checkpoint ckpt/step-00000020 --data input.txt --json"},
    {"sample", "generate text with a trained GPT", "",
     "zerodp sample --checkpoint ckpt --prompt 'The ' --length 40\n"
     "zerodp sample --checkpoint ckpt --temperature 0 --length 40"},
    {"export", "write a checkpoint as a Hugging Face GPT-2 folder",
     "A folder that transformers loads with from_pretrained: config.json, the weights as "
     "safetensors and a byte-level tokenizer. An earlier export at --out is replaced whole.",
     "zerodp export --checkpoint ckpt --out model\n"
     "zerodp export --checkpoint ckpt --out gpt.safetensors"},
};

// Each example line, indented by two, with "   # why" kept after it.
std::string examples_text(std::string_view examples) {
  std::string out = "Examples:\n";
  std::istringstream lines{std::string(examples)};
  for (std::string line; std::getline(lines, line);) out += "  " + line + "\n";
  return out;
}

}  // namespace

std::span<const CommandHelp> all_command_help() {
  return kCommands;
}

const CommandHelp& command_help(std::string_view name) {
  for (const CommandHelp& c : kCommands) {
    if (c.name == name) return c;
  }
  throw std::out_of_range("no help for the command " + std::string(name));
}

bool is_engine_command(std::string_view name) {
  return std::find(std::begin(kEngineCommands), std::end(kEngineCommands), name) !=
         std::end(kEngineCommands);
}

std::string wrap_paragraphs(std::string_view text, std::size_t width, std::size_t indent) {
  std::string out;
  std::size_t start = 0;
  bool first = true;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (!first) out += '\n';
    if (!line.empty() && line[0] == ' ') {
      out += line;
    } else if (!line.empty()) {
      if (!first) out.append(indent, ' ');
      out += fill_words(line, width, indent, first ? 0 : indent);
    }
    first = false;
    start = end + 1;
  }
  return out;
}

void describe_command(CLI::App& cmd) {
  const CommandHelp& help = command_help(cmd.get_name());
  cmd.description(std::string(help.summary));
  cmd.group(is_engine_command(help.name) ? "Engine commands" : "Planner commands");
  std::string footer;
  if (!help.about.empty()) footer = std::string(help.about) + "\n\n";
  cmd.footer(footer + examples_text(help.examples) + "\nSee 'man zerodp' for every command.");
}

std::string short_usage() {
  std::string out = "usage: zerodp COMMAND [OPTIONS]\n\n";
  for (const CommandHelp& c : kCommands) {
    std::string name = "  " + std::string(c.name);
    name.resize(12, ' ');
    out += name + std::string(c.summary) + "\n";
  }
  const std::string_view plan_examples = command_help("plan").examples;
  out += "\nTry:  " + std::string(plan_examples.substr(0, plan_examples.find('\n'))) +
         "\nHelp: zerodp COMMAND --help, zerodp --help, man zerodp\n";
  return out;
}

std::string version_line() {
  return "zerodp " ZERODP_VERSION;
}

HelpFormatter::HelpFormatter() {
  column_width(kNameColumn);
  label("Usage", "Usage");
}

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  std::string name = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
  // A name that reaches the description's column stands on a line of its own.
  if (name.size() + 1 >= kNameColumn) {
    name.append("\n").append(kNameColumn, ' ');
  } else {
    name.resize(kNameColumn, ' ');
  }
  return name + fill_words(make_option_desc(opt), kHelpColumns, kNameColumn, kNameColumn) + "\n";
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  std::string name = "  " + sub->get_name();
  name.resize(12, ' ');
  return name + fill_words(sub->get_description(), kHelpColumns, 12, 12) + "\n";
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  if (app->get_parent() == nullptr) {
    return wrap_paragraphs(app->get_description(), kHelpColumns) + "\n\n";
  }
  return "zerodp " + app->get_name() + ": " + app->get_description() + "\n";
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  const std::string footer = app->get_footer();
  return footer.empty() ? std::string() : wrap_paragraphs(footer, kHelpColumns) + "\n";
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string) const {
  if (app->get_parent() == nullptr) return "Usage: zerodp COMMAND [OPTIONS]\n";
  return "Usage: zerodp " + app->get_name() + " [OPTIONS]\n";
}

}  // namespace zerodp::cli

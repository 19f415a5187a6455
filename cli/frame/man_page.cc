#include "man_page.h"

#include <algorithm>
#include <sstream>
#include <string_view>

#include "help.h"

namespace zerodp::cli {
namespace {

// Text as roff reads it: a backslash is \e, a line may not start with a control character, and
// a hyphen is \- so that a flag copied from the page is the flag.
std::string roff(std::string_view text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

// An example as lines of at most kExampleColumns, cut at spaces with a shell continuation: man
// indents examples, and the page must fit 80 columns.
constexpr std::size_t kExampleColumns = 64;
std::string example_lines(std::string_view example) {
  std::string out;
  std::string line;
  std::istringstream words{std::string(example)};
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > kExampleColumns) {
      out += line + " \\\n";
      line = "    ";
    } else if (!line.empty()) {
      line += ' ';
    }
    line += word;
  }
  return out + line + "\n";
}

const char* kDescription =
    "zerodp answers, before you rent a cluster, how much memory each GPU will hold and how many "
    "bytes each will send under plain data parallelism (DP) and under ZeRO stages 1, 2 and 3, "
    "and trains with those stages to show the same figures measured.\n"
    ".PP\n"
    "The planner (\\fBplan\\fR, \\fBplot\\fR) takes a parameter count, a published model or a "
    "Hugging Face config.json, with a DeepSpeed config if you have one, and gives the memory "
    "per GPU term by term, the floors as the number of GPUs grows, the least number of GPUs "
    "that fits, the bytes each GPU sends, the step's efficiency with overlap, and the cheapest "
    "stage that fits, with how sure it is. It needs nothing but the program.\n"
    ".PP\n"
    "The engine (\\fBtrain\\fR, \\fBmeasure\\fR, \\fBeval\\fR, \\fBsample\\fR, \\fBexport\\fR) "
    "trains a byte-level GPT on a text file with ZeRO stages 0 to 3 over threads (one process) "
    "or MPI (under mpirun), with a mixed-precision sharded AdamW, and counts what every rank "
    "holds and sends. The program zerodp runs these commands in zerodp-engine, of the package "
    "of that name.\n"
    ".PP\n"
    "Sizes are decimal unless they say otherwise: 1 GB is 10^9 bytes, 1 GiB is 2^30 bytes. "
    "Plan prints at most 100 columns (\\fB\\-\\-wide\\fR for whole tables) and \\fB\\-\\-json\\fR "
    "for tools.";

const char* kExitStatus =
    ".TP\n.B 0\nThe command did what it was asked.\n"
    ".TP\n.B 1\nThe run failed: a file could not be read or written, a collective timed out, "
    "the engine is not installed. One line on standard error says why.\n"
    ".TP\n.B 2\nBad input: one line on standard error names the flag (or the file and its "
    "field) and the form it accepts. Nothing is run.\n";

const char* kFiles =
    ".TP\n.I /usr/lib/zerodp/zerodp\\-engine\n"
    "The engine's commands; zerodp runs it in its place (package zerodp\\-engine).\n"
    ".TP\n.IR DIR /step\\- NNNNNNNN /\n"
    "A checkpoint of \\fBtrain \\-\\-save\\-dir\\fR \\fIDIR\\fR: manifest.json (the run's "
    "record, the model and each shard's size and SHA\\-256) and one shard per rank. "
    "\\fB\\-\\-resume\\fR, \\fBeval\\fR, \\fBsample\\fR and \\fBexport\\fR read it.\n"
    ".TP\n.I /usr/share/doc/zerodp/\n"
    "The documentation (docs/*.md: the planner, the engine, checkpoints, clusters) and "
    "examples/ (DeepSpeed configs).\n"
    ".TP\n.I /usr/share/bash\\-completion/completions/zerodp\n"
    "Completion of commands, flags and \\fB\\-\\-gpu\\fR and \\fB\\-\\-model\\fR names.\n";

const char* kSeeAlso =
    ".BR mpirun (1),\n"
    ".BR python3 (1)\n"
    "(\\fBimport zerodp\\fR, package python3\\-zerodp),\n"
    "/usr/share/doc/zerodp/docs/planner.md, /usr/share/doc/zerodp/docs/engine.md.\n";

// The options of `cmd` as .TP entries, the help flag left out (every command has it).
std::string options_of(const CLI::App& cmd) {
  std::string out;
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt == cmd.get_help_ptr()) continue;
    // The value's name as the help shows it (help.cc's formatter): the option's own text, or
    // the name of its type; a flag has none.
    std::string value = opt->get_option_text();
    if (value.empty() && opt->get_type_size() != 0) value = opt->get_type_name();
    const std::string flag = roff(opt->get_name(false, true));
    // .BI alternates bold and italic: the flag bold, its value italic, on the entry's line.
    out += value.empty() ? ".TP\n.B " + flag + "\n"
                         : ".TP\n.BI \"" + flag + " \" " + roff(value) + "\n";
    out += roff(opt->get_description()) + "\n";
  }
  return out;
}

}  // namespace

std::string man_page(const CLI::App& root) {
  std::string page;
  page += ".TH ZERODP 1 \"\" \"" + roff(version_line()) +
          "\" \"User Commands\"\n";  // Names and flags are not hyphenated, and lines are not
                                     // stretched to the margin.
  page += ".nh\n.ad l\n";
  page +=
      ".SH NAME\nzerodp \\- plan the memory and traffic of ZeRO data parallelism, and train "
      "with it\n";
  page +=
      ".SH SYNOPSIS\n.B zerodp\n.I COMMAND\n.RI [ OPTIONS ]\n.br\n.B zerodp\n"
      ".RB [ \\-h | \\-\\-help | \\-V | \\-\\-version ]\n";
  page += ".SH DESCRIPTION\n" + std::string(kDescription) + "\n";
  page += ".SH COMMANDS\n";
  for (const CommandHelp& c : all_command_help()) {
    page += ".TP\n.B " + std::string(c.name) + "\n" + roff(c.summary) + ".";
    // Each paragraph of what it does as an indented paragraph under the command.
    for (std::string_view about = c.about; !about.empty();) {
      const std::size_t end = std::min(about.find("\n\n"), about.size());
      page += "\n.IP\n" + roff(about.substr(0, end));
      about.remove_prefix(std::min(end + 2, about.size()));
    }
    page += "\n";
  }
  page +=
      ".SH OPTIONS\nEach command takes its own options; \\fB\\-h\\fR, \\fB\\-\\-help\\fR "
      "prints them with the command's examples. A value in brackets is the default.\n";
  for (const CommandHelp& c : all_command_help()) {
    const CLI::App* cmd = root.get_subcommand(std::string(c.name));
    page += ".SS \"zerodp " + std::string(c.name) + "\"\n" + options_of(*cmd);
  }
  page += ".SH EXAMPLES\n";
  for (const CommandHelp& c : all_command_help()) {
    std::istringstream lines{std::string(c.examples)};
    for (std::string line; std::getline(lines, line);) {
      page += ".PP\n.RS 4\n.nf\n" + roff(example_lines(line)) + ".fi\n.RE\n";
    }
  }
  page += ".SH \"EXIT STATUS\"\n" + std::string(kExitStatus);
  page += ".SH FILES\n" + std::string(kFiles);
  page += ".SH \"SEE ALSO\"\n" + std::string(kSeeAlso);
  return page;
}

}  // namespace zerodp::cli

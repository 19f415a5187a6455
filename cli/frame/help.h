// What `zerodp --help`, `zerodp COMMAND --help` and `zerodp` alone print, for an 80-column
// terminal, and the commands the planner's executable hands to the engine's.
//
// Contract:
//  - Every line help prints is at most kHelpColumns wide (tests/cli/help_width_test.cc, for
//    every command): HelpFormatter wraps descriptions under their option; a word longer than
//    the line is the only thing it cannot wrap, and the help holds none.
//  - command_help() is the one text of each command: its one-line summary (the root help's
//    list, `zerodp` alone, the man page's command list), what it does, and two or three
//    examples, each a command line that runs as printed (the test runs them).
//  - kEngineCommands are the commands the executable `zerodp` (the planner: no MPI, no BLAS)
//    does not hold and hands to `zerodp-engine` (engine_exec.h); every other front end holds
//    them all or none of them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace zerodp::cli {

inline constexpr std::size_t kHelpColumns = 80;

struct CommandHelp {
  std::string_view name;
  std::string_view summary;   // one line, lower case, no full stop: "train a byte-level GPT ..."
  std::string_view about;     // paragraphs separated by "\n\n": wrapped when printed
  std::string_view examples;  // lines, each "zerodp ..." with an optional "   # why" after it
};

// The help of `name`, one of the commands; throws std::out_of_range for another name.
const CommandHelp& command_help(std::string_view name);
std::span<const CommandHelp> all_command_help();

// The engine's commands, in the order the root help lists them.
inline constexpr std::string_view kEngineCommands[] = {"measure", "train", "eval", "sample",
                                                       "export"};
bool is_engine_command(std::string_view name);

// Sets a command's description and footer from command_help(cmd->get_name()).
void describe_command(CLI::App& cmd);

// What `zerodp` alone prints: the commands in a line each, an example and where help is.
std::string short_usage();

// The version line `zerodp -V` and `--version` print.
std::string version_line();

// Wraps `text` (paragraphs separated by blank lines) to `width` columns, every line after the
// first indented by `indent`; a line that starts with a space is kept as it is.
std::string wrap_paragraphs(std::string_view text, std::size_t width, std::size_t indent = 0);

// CLI11's help in 80 columns: options in two columns, each description wrapped under itself,
// an option whose name fills the first column has its description on the lines below; the
// usage names the program `zerodp`, whatever path ran it.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter();
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;
  std::string make_usage(const CLI::App* app, std::string name) const override;
};

}  // namespace zerodp::cli

// The command registry: each cli/<command>.cc registers a function that adds its subcommand
// to the root CLI11 app, so main.cc never lists the commands.
//
// A subcommand's callback reports bad input by throwing zerodp::UsageError (exit 2) and a
// failed run by throwing zerodp::Error (exit 1); main.cc turns both into one line on stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace zerodp::cli {

struct CommandRegistration {
  int order;  // position in `zerodp --help`
  std::function<void(CLI::App& root)> add;
};

std::vector<CommandRegistration>& command_registry();

// Usage, at namespace scope in a command's file:
//   const bool plan_registered = zerodp::cli::register_command(10, add_plan_command);
bool register_command(int order, std::function<void(CLI::App& root)> add);

// Every option of every command given an empty value ("--data ''", "--resume ''") is refused
// naming it, instead of falling back to its default: an empty path is a mistake in a script,
// not a choice. Exceptions: --prompt (the empty prompt) and train --out (no loss curve).
void refuse_empty_values(CLI::App& root);

// Every option of every command still shown as TEXT gets the name of what it takes (COUNT,
// SIZE, PATH, ...), one table for all the commands so that a flag reads the same in each; an
// option that names its value itself keeps that name.
void name_values(CLI::App& root);

// The command named by argv[1], when it names none of root's: a UsageError saying so, with the
// nearest command when one is near, and listing them ("unknown command 'pln'; did you mean
// 'plan'? the commands are plan, ..."). Nothing for a flag.
void check_command_name(const CLI::App& root, int argc, char** argv);

// Every long flag of argv (up to a "--") that the command named by argv[1] does not have: a
// UsageError naming it, the nearest flag the command has when one is near, and the command's
// own help ("unknown flag '--parms' for plan; did you mean --params? (see 'zerodp plan
// --help')"). Call after check_command_name().
void check_flag_names(const CLI::App& root, int argc, char** argv);

// The command's own help for a message: "see 'zerodp plan --help'" when argv[1] names a command
// of root, else "see 'zerodp --help'".
std::string help_hint(const CLI::App& root, int argc, char** argv);

// A file a command will write, checked before any work is done: nothing or a regular file is
// there, in a folder that exists and can be written (common/file.h). Otherwise a UsageError
// naming `flag`: "--out: 'x' is a FIFO (named pipe), not a file; give the path of <expected>".
void check_output_file(const std::string& path, const std::string& flag,
                       const std::string& expected);

}  // namespace zerodp::cli

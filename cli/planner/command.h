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
//   const bool registered = zerodp::cli::register_command(10, add_plan_command);
bool register_command(int order, std::function<void(CLI::App& root)> add);

// Every option of every command given an empty value ("--data ''", "--resume ''") is refused
// naming it, instead of falling back to its default: an empty path is a mistake in a script,
// not a choice. Exceptions: --prompt (the empty prompt) and train --out (no loss curve).
void refuse_empty_values(CLI::App& root);

// The command named by argv[1], when it names none of root's: a UsageError saying so and
// listing them ("unknown command 'foo'; the commands are plan, ..."). Nothing for a flag.
void check_command_name(const CLI::App& root, int argc, char** argv);

// A file a command will write, checked before any work is done: nothing or a regular file is
// there, in a folder that exists and can be written (common/file.h). Otherwise a UsageError
// naming `flag`: "--out: 'x' is a FIFO (named pipe), not a file; give the path of <expected>".
void check_output_file(const std::string& path, const std::string& flag,
                       const std::string& expected);

}  // namespace zerodp::cli

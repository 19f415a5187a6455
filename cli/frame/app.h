// The whole command line as one call: build the root CLI11 app from the registered commands,
// parse argv, run the chosen command, and turn any failure into one line on stderr.
//
// Contract: run_command_line() returns the process exit status (0 success, 2 bad input or a
// parse error, 1 a failed run) and never throws. Every program that offers zerodp's commands
// calls it, so they print the same words for the same input: the native executable
// (main.cc) and the WebAssembly build of the planner (web/entry.cc).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <string_view>

#include "output.h"
#include "zerodp/common/error.h"

namespace zerodp::cli {

// The root app with every registered command added, as `zerodp --help` shows it.
void build_app(CLI::App& app);

int run_command_line(int argc, char** argv);
// The same, its words written to `out` and `err` (output.h): the streams of this call alone,
// so that calls from several threads never mix their words.
int run_command_line(int argc, char** argv, std::FILE* out, std::FILE* err);

// The flag that sets a library's field (zerodp/common/error.h): "--" and the field with dashes
// ("micro_batch" is --micro-batch), but for the fields whose flag says it otherwise
// ("clip_norm" is --clip). Every message of a library reaches the user in these words.
std::string flag_of_field(std::string_view field);

// A library's message in the command line's words.
std::string flag_message(const Failure& failure);

}  // namespace zerodp::cli

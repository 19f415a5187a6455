// zerodp's man page, written from the command line it documents: the commands, their summaries,
// what they do and their examples from help.h's table, and every option of every command with
// its value's name and its description from the options themselves, so the page never lists a
// flag the program lacks nor misses one it has. Laid out as a man page (NAME, SYNOPSIS,
// DESCRIPTION, COMMANDS, OPTIONS, EXAMPLES, EXIT STATUS, FILES, SEE ALSO) for man to fill to the
// reader's terminal: no line of it is set wider than man's width (tests/cli/man_page_test.cc
// reads it at 80 columns).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace zerodp::cli {

// The page in roff (man(7) macros) for `root`, an app build_app() made with every command.
std::string man_page(const CLI::App& root);

}  // namespace zerodp::cli

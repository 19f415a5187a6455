// The flags every engine command shares (train, measure, eval): how many ranks on which
// backend, which stage, precision and buckets. Read as text into run::EngineChoice, which run/
// parses, so a bad value gets its one-line message naming the flag and the accepted form.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "zerodp/run/train_choice.h"

namespace zerodp::cli {

// The choice as written lives in run/ (zerodp/run/train_choice.h), with its parsing.
using EngineFlags = run::EngineChoice;

// Adds the flags to a subcommand; stage_flag = false leaves --stage to the command.
void add_engine_flags(CLI::App* app, EngineFlags& flags, bool stage_flag = true);
}  // namespace zerodp::cli

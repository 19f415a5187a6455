// Command-line options shared by `zerodp plan` and `zerodp plot`. CLI11 reads every value as
// a string; the functions here parse them with zerodp/units.h so that every bad value gets
// zerodp's one-line message (flag, accepted form, text received) and exit status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "zerodp/plan_memory.h"

namespace zerodp::cli {

// --precision, --optimizer, --bytes-per-param as typed.
struct ModelFlags {
  std::string precision, optimizer, bytes_per_param;
};
void add_model_flags(CLI::App& command, ModelFlags& flags);

struct ModelBytes {
  plan::BytesPerParam bpp;
  std::string source;  // "mixed fp16, Adam" or "--bytes-per-param 4,4,8"
};
// Throws UsageError for unknown names, malformed P,G,K, or P,G,K mixed with the names.
ModelBytes parse_model_flags(const ModelFlags& flags);

// A GPU count: a whole number from `min` to `max` (fractions such as "4.5" are rejected).
int parse_gpu_count(const std::string& text, const std::string& flag, std::uint64_t min,
                    std::uint64_t max);

}  // namespace zerodp::cli

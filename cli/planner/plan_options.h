// Command-line options shared by `zerodp plan` and `zerodp plot`. CLI11 reads every value as
// a string; the functions here parse them with zerodp/common/units.h so that every bad value gets
// zerodp's one-line message (flag, accepted form, text received) and exit status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zerodp/plan/memory.h"
#include "zerodp/report/settings.h"

namespace zerodp::cli {

// --precision, --optimizer, --bytes-per-param as typed. (Not named ModelFlags: train_model.h
// has one, and two classes of one name in one namespace break the one-definition rule.)
struct PrecisionFlags {
  std::string precision, optimizer, bytes_per_param;
};
void add_precision_flags(CLI::App& command, PrecisionFlags& flags);

struct ModelBytes {
  plan::BytesPerParam bpp;
  std::string source;  // "mixed fp16, Adam" or "--bytes-per-param 4,4,8"
};
// The flags typed: --precision and --optimizer into `settings`, --bytes-per-param returned
// (and marked in `settings`). Throws UsageError for unknown names, malformed P,G,K, or P,G,K
// mixed with the names.
std::optional<plan::BytesPerParam> read_precision_flags(const PrecisionFlags& flags,
                                                        report::SharedSettings& settings);
// The bytes per parameter the settings name (fp16 and Adam where unset), or the P,G,K given.
ModelBytes model_bytes(const PrecisionFlags& flags, const report::SharedSettings& settings,
                       const std::optional<plan::BytesPerParam>& given);
// Both at once, for a command without a config (plot).
ModelBytes parse_precision_flags(const PrecisionFlags& flags);

// What a --precision or --optimizer word names (report/settings.h), or UsageError naming the
// flag.
plan::Precision precision_of(const std::string& word);
plan::Optimizer optimizer_of(const std::string& word);

// A GPU count: a whole number from `min` to `max` (fractions such as "4.5" are rejected).
int parse_gpu_count(const std::string& text, const std::string& flag, std::uint64_t min,
                    std::uint64_t max);

}  // namespace zerodp::cli

#include "plan_options.h"

#include <climits>

#include "zerodp/common/error.h"
#include "zerodp/common/units.h"

namespace zerodp::cli {

void add_precision_flags(CLI::App& command, PrecisionFlags& flags) {
  command
      .add_option("--precision", flags.precision,
                  "bf16 or fp16 (mixed precision with an fp32 master copy), or fp32; "
                  "default bf16")
      ->type_name("NAME");
  command
      .add_option("--optimizer", flags.optimizer,
                  "adam (or adamw), adamw-8bit, paged-adamw-8bit, adamw-bf16 (pure bf16), "
                  "adamw-8bit-bf16, paged-adamw-8bit-bf16 (8-bit, no fp32 master), "
                  "adafactor, adafactor-beta1, lion, lion-8bit, lamb, adagrad, rmsprop, "
                  "sgd-momentum or sgd; or the Hugging Face Trainer's optim name "
                  "(adamw_torch_fused, adamw_bnb_8bit, paged_adamw_8bit, lion_8bit ...); "
                  "default adam")
      ->type_name("NAME");
  command
      .add_option("--bytes-per-param", flags.bytes_per_param,
                  "P,G,K: bytes per parameter of params, grads and optimizer state, e.g. "
                  "2,2,12 (replaces --precision and --optimizer)")
      ->type_name("P,G,K");
}

std::optional<plan::BytesPerParam> read_precision_flags(const PrecisionFlags& flags,
                                                        report::SharedSettings& settings) {
  if (flags.bytes_per_param.empty()) {
    if (!flags.precision.empty()) settings.precision = precision_of(flags.precision);
    if (!flags.optimizer.empty()) settings.optimizer = optimizer_of(flags.optimizer);
    return std::nullopt;
  }
  if (!flags.precision.empty() || !flags.optimizer.empty()) {
    throw UsageError(
        "--bytes-per-param: not with --precision or --optimizer, whose bytes it replaces");
  }
  const std::string& text = flags.bytes_per_param;
  const std::string expected =
      "--bytes-per-param: expected P,G,K bytes such as 2,2,12 (P, G from 1 to 64, K from 0 "
      "to 64), got " +
      shown(text);
  std::uint64_t part[3];
  std::size_t start = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = text.find(',', start);
    if ((i < 2) != (comma != std::string::npos)) throw UsageError(expected);
    const std::string piece =
        text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (piece.empty() || piece.find_first_not_of("0123456789") != std::string::npos ||
        piece.size() > 3) {
      throw UsageError(expected);
    }
    part[i] = std::stoull(piece);
    if (part[i] > 64 || (i < 2 && part[i] == 0)) throw UsageError(expected);
    start = comma + 1;
  }
  settings.bytes_per_param = true;
  return plan::BytesPerParam{static_cast<std::uint32_t>(part[0]),
                             static_cast<std::uint32_t>(part[1]),
                             static_cast<std::uint32_t>(part[2])};
}

ModelBytes model_bytes(const PrecisionFlags& flags, const report::SharedSettings& settings,
                       const std::optional<plan::BytesPerParam>& given) {
  if (given) return {*given, "--bytes-per-param " + flags.bytes_per_param};
  // bf16 where unset: what train runs, and what Hugging Face users run on GPUs since Ampere.
  const plan::Precision precision = settings.precision.value_or(plan::Precision::bf16);
  const plan::Optimizer optimizer = settings.optimizer.value_or(plan::Optimizer::adam);
  return {plan::bytes_per_param(precision, optimizer),
          std::string(plan::precision_name(precision, optimizer)) + ", " +
              std::string(plan::optimizer_name(optimizer))};
}

ModelBytes parse_precision_flags(const PrecisionFlags& flags) {
  report::SharedSettings settings;
  const std::optional<plan::BytesPerParam> given = read_precision_flags(flags, settings);
  return model_bytes(flags, settings, given);
}

plan::Precision precision_of(const std::string& word) {
  if (const auto precision = report::precision_from_word(word)) return *precision;
  throw UsageError("--precision: expected fp16, bf16 or fp32, got " + shown(word));
}

plan::Optimizer optimizer_of(const std::string& word) {
  if (const auto optimizer = report::optimizer_from_word(word)) return *optimizer;
  if (const std::string why = uncounted_optimizer(word); !why.empty()) {
    throw UsageError("--optimizer: " + shown(word) + " is not counted: " + why +
                     "; give --bytes-per-param P,G,K if you know its bytes");
  }
  throw UsageError("--optimizer: expected " + optimizer_words() +
                   ", or a Hugging Face Trainer optim name such as adamw_bnb_8bit; got " +
                   shown(word));
}

int parse_gpu_count(const std::string& text, const std::string& flag, std::uint64_t min,
                    std::uint64_t max) {
  const std::string range =
      "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  std::uint64_t n = 0;
  try {
    n = units::parse_whole(text, flag);
  } catch (const UsageError&) {
    throw UsageError(flag + ": expected " + range + ", got " + shown(text));
  }
  if (n < min || n > max) throw UsageError(flag + ": expected " + range + ", got " + shown(text));
  return static_cast<int>(n);
}

}  // namespace zerodp::cli

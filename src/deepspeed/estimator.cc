#include "zerodp/deepspeed/estimator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "zerodp/common/error.h"

namespace zerodp::deepspeed {
namespace {

using u128 = unsigned __int128;

constexpr const char* kTooLarge =
    "DeepSpeed's estimate reaches 2^64 bytes, more than a byte count holds";

// Python's `a / b` for ints: the double nearest the exact quotient (ties to even). When both
// are exact doubles one IEEE division gives it; otherwise a quotient of at least 55
// significant bits, with its lowest bit set if anything was discarded, rounds to the same
// double as the exact quotient, because that bit lies below the rounding position.
double true_divide(u128 a, std::uint64_t b) {
  constexpr u128 kExact = u128(1) << 53;
  if (a < kExact && b < kExact) return static_cast<double>(a) / static_cast<double>(b);
  if (a == 0) return 0.0;
  int shift = 0;
  while ((a << shift) / b < (u128(1) << 55)) ++shift;
  const u128 scaled = a << shift;
  u128 quotient = scaled / b;
  if (scaled % b != 0) quotient |= 1;
  return std::ldexp(static_cast<double>(quotient), -shift);
}

// Python's int() of a non-negative float, as the bytes a row reports.
std::uint64_t truncate(double bytes) {
  if (!(bytes < 0x1p64)) {
    throw UsageError(kTooLarge);
  }
  return static_cast<std::uint64_t>(bytes);
}

// An int expression of DeepSpeed's that is a byte count (2Φ, 4L + int(...)).
std::uint64_t checked(u128 bytes) {
  if (bytes >> 64) {
    throw UsageError(kTooLarge);
  }
  return static_cast<std::uint64_t>(bytes);
}

// `int * float` in Python: the int converted to the nearest double, then one rounded product.
double times(u128 exact, double factor) {
  return static_cast<double>(exact) * factor;
}

void check_setup(int gpus_per_node, int nodes, const DeepSpeedOptions& options) {
  if (gpus_per_node < 1) {
    throw UsageError("GPUs per node must be at least 1, not " + std::to_string(gpus_per_node));
  }
  if (nodes < 1) throw UsageError("nodes must be at least 1, not " + std::to_string(nodes));
  const double b = options.additional_buffer_factor;
  if (!std::isfinite(b) || b < 0) {
    throw UsageError("the additional buffer factor must be finite and at least 0");
  }
}

std::string device_text(std::string_view device, OffloadDeviceSpelling spelling) {
  if (device == "none") return "none";  // a string literal in DeepSpeed, never the enum
  return spelling == OffloadDeviceSpelling::padded_value ? "cpu " : "OffloadDeviceEnum.cpu";
}

std::string options_text(const DeepSpeedRow& row, OffloadDeviceSpelling spelling) {
  if (!row.zero_init) return "offload_optimizer=" + device_text(row.offload_optimizer, spelling);
  return "offload_param=" + device_text(row.offload_param, spelling) +
         ", offload_optimizer=" + device_text(row.offload_optimizer, spelling) +
         ", zero_init=" + (*row.zero_init ? "1" : "0");
}

// f"{int(count/1e6)}M": the int converted to a double first, as `int / float` does.
std::string millions(std::uint64_t count) {
  return std::to_string(static_cast<std::uint64_t>(static_cast<double>(count) / 1e6)) + "M";
}

std::string table_text(const std::string& model, const std::vector<DeepSpeedRow>& rows,
                       int gpus_per_node, int nodes, OffloadDeviceSpelling spelling) {
  std::string text =
      "Estimated memory needed for params, optim states and gradients for a:\n"
      "HW: Setup with " +
      std::to_string(nodes) + (nodes > 1 ? " nodes, " : " node, ") + std::to_string(gpus_per_node) +
      (gpus_per_node > 1 ? " GPUs" : " GPU") +
      " per node.\n"
      "SW: Model with " +
      model + "\n  per CPU  |  per GPU |   Options\n";
  for (const DeepSpeedRow& row : rows) {
    // f" {cpu_mem/2**30:7.2f}GB | {gpu_mem/2**30:6.2f}GB | {options_str}": the division by
    // a power of two is exact after the conversion, and %.2f, like Python's format, rounds
    // the exact binary value.
    char figures[96];
    std::snprintf(figures, sizeof figures, " %7.2fGB | %6.2fGB | ",
                  std::ldexp(static_cast<double>(row.cpu_bytes), -30),
                  std::ldexp(static_cast<double>(row.gpu_bytes), -30));
    text += figures + options_text(row, spelling) + "\n";
  }
  return text;
}

}  // namespace

std::vector<DeepSpeedRow> deepspeed_zero2_cold(std::uint64_t total_params, int gpus_per_node,
                                               int nodes, const DeepSpeedOptions& options) {
  check_setup(gpus_per_node, nodes, options);
  const u128 phi = total_params;
  const std::uint64_t total_gpus = std::uint64_t(gpus_per_node) * std::uint64_t(nodes);
  const double b = options.additional_buffer_factor;

  const u128 cpu_offloaded = phi * std::max<u128>(4 * u128(total_gpus), 16);
  const u128 gpu_nothing_offloaded = 2 * phi + truncate(true_divide(18 * phi, total_gpus));
  return {{.offload_param = "",
           .offload_optimizer = "cpu",
           .zero_init = std::nullopt,
           .cpu_bytes = truncate(times(cpu_offloaded, b)),
           .gpu_bytes = checked(2 * phi)},
          {.offload_param = "",
           .offload_optimizer = "none",
           .zero_init = std::nullopt,
           .cpu_bytes = truncate(times(phi * 4 * u128(gpus_per_node), b)),
           .gpu_bytes = checked(gpu_nothing_offloaded)}};
}

std::vector<DeepSpeedRow> deepspeed_zero3_cold(std::uint64_t total_params,
                                               std::uint64_t largest_layer_params,
                                               int gpus_per_node, int nodes,
                                               const DeepSpeedOptions& options) {
  check_setup(gpus_per_node, nodes, options);
  const u128 phi = total_params;
  const u128 per_node = u128(gpus_per_node);
  const std::uint64_t total_gpus = std::uint64_t(gpus_per_node) * std::uint64_t(nodes);
  const double b = options.additional_buffer_factor;
  const double gpus_factor = 1.0 / nodes;  // 1 / num_nodes, named as DeepSpeed names it
  const u128 largest_layer_memory = 4 * u128(largest_layer_params);

  // Φ·max(4n, k·f)·b without zero.Init. Python's max() keeps its first argument unless the
  // second is larger, and the int and the float then multiply Φ differently.
  const auto without_zero_init = [&](double k) {
    const double per_param = k * gpus_factor;
    if (per_param > static_cast<double>(4 * per_node)) return truncate(times(phi, per_param) * b);
    return truncate(times(phi * 4 * per_node, b));
  };

  std::vector<DeepSpeedRow> rows;
  const auto add = [&](std::string param, std::string optimizer, bool zero_init, std::uint64_t cpu,
                       u128 gpu) {
    rows.push_back({.offload_param = std::move(param),
                    .offload_optimizer = std::move(optimizer),
                    .zero_init = zero_init,
                    .cpu_bytes = cpu,
                    .gpu_bytes = checked(gpu)});
  };
  // Φ·18·f·b is (int Φ·18 · float f) · b, in that order.
  add("cpu", "cpu", true, truncate(times(phi * 18, gpus_factor) * b), largest_layer_memory);
  add("cpu", "cpu", false, without_zero_init(18), largest_layer_memory);

  const u128 gpu_optimizer_offloaded =
      largest_layer_memory + truncate(true_divide(2 * phi, total_gpus));
  add("none", "cpu", true, truncate(times(phi * 16, gpus_factor) * b), gpu_optimizer_offloaded);
  add("none", "cpu", false, without_zero_init(16), gpu_optimizer_offloaded);

  const u128 gpu_nothing_offloaded =
      largest_layer_memory + truncate(true_divide(18 * phi, total_gpus));
  add("none", "none", true, truncate(times(u128(largest_layer_params) * 4 * per_node, b)),
      gpu_nothing_offloaded);
  add("none", "none", false, truncate(times(phi * 4 * per_node, b)), gpu_nothing_offloaded);
  return rows;
}

std::string deepspeed_zero2_text(std::uint64_t total_params, int gpus_per_node, int nodes,
                                 const DeepSpeedOptions& options) {
  return table_text(millions(total_params) + " total params.",
                    deepspeed_zero2_cold(total_params, gpus_per_node, nodes, options),
                    gpus_per_node, nodes, options.device_spelling);
}

std::string deepspeed_zero3_text(std::uint64_t total_params, std::uint64_t largest_layer_params,
                                 int gpus_per_node, int nodes, const DeepSpeedOptions& options) {
  return table_text(
      millions(total_params) + " total params, " + millions(largest_layer_params) +
          " largest layer params.",
      deepspeed_zero3_cold(total_params, largest_layer_params, gpus_per_node, nodes, options),
      gpus_per_node, nodes, options.device_spelling);
}

}  // namespace zerodp::deepspeed

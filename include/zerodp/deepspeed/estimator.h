// DeepSpeed's own memory estimate for ZeRO-2 and ZeRO-3, reproduced so that the planner can
// set its figures beside the ones a DeepSpeed user already knows.
//
// Contract:
//  - Reproduces, byte for byte and character for character, what DeepSpeed prints from
//      estimate_zero2_model_states_mem_needs_all_cold  (deepspeed/runtime/zero/stage_1_and_2.py)
//      estimate_zero3_model_states_mem_needs_all_cold  (deepspeed/runtime/zero/stage3.py)
//    and the bytes of the functions they call (estimate_zero{2,3}_model_states_mem_needs), as
//    of DeepSpeed v0.16.4 (github.com/microsoft/DeepSpeed, commit 38327e07f6cd). The ZeRO-2
//    GPU formula without offload is the one of v0.14.3 and later (PR #5099); earlier
//    releases, and the examples of docs/code-docs/source/memory.rst, print 4Φ + 16Φ/N.
//  - The total_params of the Python call is an int. Python's arithmetic is followed exactly:
//    integer products stay exact, `a / b` of two ints is the correctly rounded double, a float
//    factor rounds each product once, int() truncates. Up to 2^53 params (2^53 / 18 for the
//    GPU figures), passing the count as a float (2851e6, as memory.rst does) gives the same.
//  - The figures are DeepSpeed's, quirks included: the ZeRO-3 CPU figures with offload divide
//    by the number of nodes (its gpus_factor = 1/num_nodes), not of GPUs; "zero_init" without
//    offload charges the largest layer, not the model; the per-GPU figures ignore how the GPUs
//    split into nodes.
//  - Pure functions of their arguments: safe from any thread. A GPU count or node count below
//    1, a buffer factor that is negative or not finite, or a figure of 2^64 bytes or more is a
//    UsageError (DeepSpeed would divide by zero, print a negative size, or a figure that no
//    64-bit count holds).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zerodp::deepspeed {

// How DeepSpeed's text spells the CPU device. DeepSpeed formats the enum member with
// f'{OffloadDeviceEnum.cpu:4}', whose result changed with Python 3.11's Enum.__format__.
enum class OffloadDeviceSpelling {
  padded_value,  // "cpu " — Python 3.10 and older; the spelling of memory.rst
  enum_name,     // "OffloadDeviceEnum.cpu" — Python 3.11 and newer
};

struct DeepSpeedOptions {
  double additional_buffer_factor = 1.5;  // DeepSpeed's default, on every CPU figure
  OffloadDeviceSpelling device_spelling = OffloadDeviceSpelling::padded_value;  // text only
};

// One row of DeepSpeed's table: a configuration and the bytes it estimates for it.
struct DeepSpeedRow {
  std::string offload_param;      // "cpu" or "none"; "" in ZeRO-2 rows, which have no such option
  std::string offload_optimizer;  // "cpu" or "none"
  std::optional<bool> zero_init;  // ZeRO-3 rows only
  std::uint64_t cpu_bytes = 0;    // per node (DeepSpeed's "per CPU")
  std::uint64_t gpu_bytes = 0;    // per GPU
  bool operator==(const DeepSpeedRow&) const = default;
};

// ZeRO-2 rows in DeepSpeed's order: offload_optimizer=cpu, then none. With Φ params, n GPUs
// per node, N GPUs in all and buffer factor b:
//   cpu:  CPU Φ·max(4N, 16)·b     GPU 2Φ
//   none: CPU Φ·4n·b              GPU 2Φ + int(18Φ/N)
std::vector<DeepSpeedRow> deepspeed_zero2_cold(std::uint64_t total_params, int gpus_per_node,
                                               int nodes, const DeepSpeedOptions& options = {});

// ZeRO-3 rows in DeepSpeed's order: (param, optimizer) = (cpu, cpu), (none, cpu),
// (none, none), each with zero_init=1 then 0. With L the largest layer's params, M nodes and
// f = 1/M (a float):
//   param cpu,  optimizer cpu:  GPU 4L                 CPU Φ·18·f·b   | Φ·max(4n, 18f)·b
//   param none, optimizer cpu:  GPU 4L + int(2Φ/N)     CPU Φ·16·f·b   | Φ·max(4n, 16f)·b
//   param none, optimizer none: GPU 4L + int(18Φ/N)    CPU L·4n·b     | Φ·4n·b
// (CPU: zero_init=1 | zero_init=0; every CPU figure is truncated to whole bytes.)
std::vector<DeepSpeedRow> deepspeed_zero3_cold(std::uint64_t total_params,
                                               std::uint64_t largest_layer_params,
                                               int gpus_per_node, int nodes,
                                               const DeepSpeedOptions& options = {});

// The text the estimators print, every line ending in '\n'; e.g. for 2851e6 params on one
// node of 8 GPUs:
//   Estimated memory needed for params, optim states and gradients for a:
//   HW: Setup with 1 node, 8 GPUs per node.
//   SW: Model with 2851M total params.
//     per CPU  |  per GPU |   Options
//     127.45GB |   5.31GB | offload_optimizer=cpu
//     127.45GB |  11.28GB | offload_optimizer=none
// GB is 2^30 bytes, with two decimals; the params are int(Φ / 1e6) millions. The padded
// "cpu " keeps its space at the end of a line too (memory.rst's copy of the text lost it).
std::string deepspeed_zero2_text(std::uint64_t total_params, int gpus_per_node, int nodes,
                                 const DeepSpeedOptions& options = {});
// As deepspeed_zero2_text, with ", {int(L / 1e6)}M largest layer params." on the SW line and
// options "offload_param=…, offload_optimizer=…, zero_init=1|0".
std::string deepspeed_zero3_text(std::uint64_t total_params, std::uint64_t largest_layer_params,
                                 int gpus_per_node, int nodes,
                                 const DeepSpeedOptions& options = {});

}  // namespace zerodp::deepspeed

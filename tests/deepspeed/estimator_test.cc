// DeepSpeed's memory estimators, against what DeepSpeed prints.
//
// Source: https://github.com/microsoft/DeepSpeed at commit 38327e07f6cd (v0.16.4-6),
//   deepspeed/runtime/zero/stage_1_and_2.py: estimate_zero2_model_states_mem_needs,
//                                             estimate_zero2_model_states_mem_needs_all_cold
//   deepspeed/runtime/zero/stage3.py:         estimate_zero3_model_states_mem_needs,
//                                             estimate_zero3_model_states_mem_needs_all_cold
//   docs/code-docs/source/memory.rst:         the printed examples below, copied verbatim
// Texts compare whole, byte for byte; byte counts compare exactly. The one figure of memory.rst
// that the code no longer prints (ZeRO-2 without offload, per GPU) is shown to be the older
// formula's.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "zerodp/common/error.h"
#include "zerodp/deepspeed/estimator.h"

namespace zerodp::deepspeed {
namespace {

// memory.rst shows its text with the line-final space of "offload_optimizer=cpu " trimmed;
// DeepSpeed prints it.
std::string trim_line_ends(const std::string& text) {
  std::istringstream lines(text);
  std::string out, line;
  while (std::getline(lines, line)) {
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string two_decimals_gb(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", static_cast<double>(bytes) / (1u << 30));
  return text;
}

// The parameters of t5-3b and t5-large as AutoModel loads them (T5Model: no LM head, one
// embedding shared by encoder and decoder, counted once), which the "live" examples count:
//   encoder block: attention 4·d·inner + layer norm d + FF 2·d·d_ff + layer norm d
//   decoder block: two attentions, three layer norms, FF
//   plus, per stack, the relative attention bias (32 buckets × heads) and a final layer norm,
//   and the shared embedding, 32128 × d, which is also the largest layer.
constexpr std::uint64_t t5_params(std::uint64_t d, std::uint64_t inner, std::uint64_t d_ff,
                                  std::uint64_t heads, std::uint64_t blocks) {
  const std::uint64_t attention = 4 * d * inner, ff = 2 * d * d_ff, stack_extra = 32 * heads + d;
  const std::uint64_t encoder = blocks * (attention + ff + 2 * d) + stack_extra;
  const std::uint64_t decoder = blocks * (2 * attention + ff + 3 * d) + stack_extra;
  return encoder + decoder + 32128 * d;
}
constexpr std::uint64_t kT5_3bParams = t5_params(1024, 32 * 128, 16384, 32, 24);
constexpr std::uint64_t kT5LargeParams = t5_params(1024, 16 * 64, 4096, 16, 24);
constexpr std::uint64_t kT5LargestLayer = 32128 * 1024;  // the shared embedding, both models
static_assert(kT5_3bParams == 2'851'598'336);
static_assert(kT5LargeParams == 737'668'096);

// memory.rst, "estimate_zero2_model_states_mem_needs_all_cold(total_params=2851e6,
// num_gpus_per_node=8, num_nodes=1)".
constexpr const char* kDocZero2Cold =
    "Estimated memory needed for params, optim states and gradients for a:\n"
    "HW: Setup with 1 node, 8 GPUs per node.\n"
    "SW: Model with 2851M total params.\n"
    "  per CPU  |  per GPU |   Options\n"
    "  127.45GB |   5.31GB | offload_optimizer=cpu\n"
    "  127.45GB |  15.93GB | offload_optimizer=none\n";

// memory.rst, "estimate_zero2_model_states_mem_needs_all_live(model, num_gpus_per_node=8,
// num_nodes=1)" for t5-3b.
constexpr const char* kDocZero2Live =
    "Estimated memory needed for params, optim states and gradients for a:\n"
    "HW: Setup with 1 node, 8 GPUs per node.\n"
    "SW: Model with 2851M total params.\n"
    "  per CPU  |  per GPU |   Options\n"
    "  127.48GB |   5.31GB | offload_optimizer=cpu\n"
    "  127.48GB |  15.93GB | offload_optimizer=none\n";

// memory.rst, "estimate_zero3_model_states_mem_needs_all_cold(total_params=2851e6,
// largest_layer_params=32e6, num_gpus_per_node=8, num_nodes=1)".
constexpr const char* kDocZero3Cold =
    "Estimated memory needed for params, optim states and gradients for a:\n"
    "HW: Setup with 1 node, 8 GPUs per node.\n"
    "SW: Model with 2851M total params, 32M largest layer params.\n"
    "  per CPU  |  per GPU |   Options\n"
    "   71.69GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1\n"
    "  127.45GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0\n"
    "   63.72GB |   0.78GB | offload_param=none, offload_optimizer=cpu , zero_init=1\n"
    "  127.45GB |   0.78GB | offload_param=none, offload_optimizer=cpu , zero_init=0\n"
    "    1.43GB |   6.09GB | offload_param=none, offload_optimizer=none, zero_init=1\n"
    "  127.45GB |   6.09GB | offload_param=none, offload_optimizer=none, zero_init=0\n";

// memory.rst, "estimate_zero3_model_states_mem_needs_all_live(model, num_gpus_per_node=8,
// num_nodes=1)" for t5-3b.
constexpr const char* kDocZero3Live =
    "Estimated memory needed for params, optim states and gradients for a:\n"
    "HW: Setup with 1 node, 8 GPUs per node.\n"
    "SW: Model with 2851M total params, 32M largest layer params.\n"
    "  per CPU  |  per GPU |   Options\n"
    "   71.71GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1\n"
    "  127.48GB |   0.12GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0\n"
    "   63.74GB |   0.79GB | offload_param=none, offload_optimizer=cpu , zero_init=1\n"
    "  127.48GB |   0.79GB | offload_param=none, offload_optimizer=cpu , zero_init=0\n"
    "    1.47GB |   6.10GB | offload_param=none, offload_optimizer=none, zero_init=1\n"
    "  127.48GB |   6.10GB | offload_param=none, offload_optimizer=none, zero_init=0\n";

TEST(DeepSpeedMemoryRst, Zero3ColdExampleDigitForDigit) {
  EXPECT_EQ(deepspeed_zero3_text(2'851'000'000, 32'000'000, 8, 1), kDocZero3Cold);
}

TEST(DeepSpeedMemoryRst, Zero3LiveT5_3bExampleDigitForDigit) {
  EXPECT_EQ(deepspeed_zero3_text(kT5_3bParams, kT5LargestLayer, 8, 1), kDocZero3Live);
}

// DeepSpeed PR #5099 (v0.14.3) changed the ZeRO-2 GPU figure without offload from
// 4Φ + int(16Φ/N) to 2Φ + int(18Φ/N); memory.rst kept the old figure. Every other character
// of the examples is still what DeepSpeed prints.
TEST(DeepSpeedMemoryRst, Zero2ColdExampleDigitForDigitButTheFigurePr5099Changed) {
  const std::string printed = deepspeed_zero2_text(2'851'000'000, 8, 1);
  EXPECT_EQ(trim_line_ends(printed), replaced(kDocZero2Cold, " 15.93GB", " 11.28GB"));
  EXPECT_EQ(printed.substr(printed.find("offload_optimizer=cpu")),
            "offload_optimizer=cpu \n"
            "  127.45GB |  11.28GB | "
            "offload_optimizer=none\n");
}

TEST(DeepSpeedMemoryRst, Zero2LiveT5_3bExampleDigitForDigitButTheFigurePr5099Changed) {
  EXPECT_EQ(trim_line_ends(deepspeed_zero2_text(kT5_3bParams, 8, 1)),
            replaced(kDocZero2Live, " 15.93GB", " 11.29GB"));
}

TEST(DeepSpeedMemoryRst, TheZero2GpuFigureOfTheDocsIsThePrePr5099Formula) {
  for (const std::uint64_t phi : {std::uint64_t{2'851'000'000}, kT5_3bParams}) {
    EXPECT_EQ(two_decimals_gb(4 * phi + 16 * phi / 8), "15.93") << phi;
    EXPECT_EQ(deepspeed_zero2_cold(phi, 8, 1)[1].gpu_bytes, 2 * phi + 18 * phi / 8) << phi;
  }
}

// memory.rst, "GPU RAM", ZeRO-3 for t5-large on 4 GPUs:
//   total params:         737.67M      case1 gpu memory:   3291MB   (none/none)
//   largest layer params:  32.90M      case2 gpu memory:    125MB   (cpu/cpu)
//   largest layer memory:    125MB     case3 gpu memory:    477MB   (none/cpu)
// The GPU figures depend on the GPU count alone, however the 4 GPUs split into nodes.
TEST(DeepSpeedMemoryRst, Zero3GpuRamExampleForT5Large) {
  char text[32];
  std::snprintf(text, sizeof text, "%6.2fM|%6.2fM", kT5LargeParams / 1e6, kT5LargestLayer / 1e6);
  EXPECT_STREQ(text, "737.67M| 32.90M");
  EXPECT_EQ((4 * kT5LargestLayer) >> 20, 125u);
  for (const auto& [per_node, nodes] : {std::pair{4, 1}, {2, 2}, {1, 4}}) {
    const auto rows = deepspeed_zero3_cold(kT5LargeParams, kT5LargestLayer, per_node, nodes);
    ASSERT_EQ(rows.size(), 6u);
    EXPECT_EQ(rows[0].gpu_bytes, 4 * kT5LargestLayer);
    EXPECT_EQ(rows[0].gpu_bytes >> 20, 125u);  // case 2
    EXPECT_EQ(rows[2].gpu_bytes, 500'430'336u);
    EXPECT_EQ(rows[2].gpu_bytes >> 20, 477u);  // case 3
    EXPECT_EQ(rows[4].gpu_bytes, 3'451'102'720u);
    EXPECT_EQ(rows[4].gpu_bytes >> 20, 3291u);  // case 1
  }
}

TEST(DeepSpeedRows, LabelsInDeepSpeedsOrder) {
  const auto z2 = deepspeed_zero2_cold(1'000'000, 1, 1);
  ASSERT_EQ(z2.size(), 2u);
  EXPECT_EQ(z2[0].offload_optimizer, "cpu");
  EXPECT_EQ(z2[1].offload_optimizer, "none");
  for (const auto& row : z2) {
    EXPECT_EQ(row.offload_param, "");
    EXPECT_FALSE(row.zero_init.has_value());
  }
  const auto z3 = deepspeed_zero3_cold(1'000'000, 1'000, 1, 1);
  ASSERT_EQ(z3.size(), 6u);
  const char* param[] = {"cpu", "cpu", "none", "none", "none", "none"};
  const char* optimizer[] = {"cpu", "cpu", "cpu", "cpu", "none", "none"};
  for (std::size_t i = 0; i < z3.size(); ++i) {
    EXPECT_EQ(z3[i].offload_param, param[i]) << i;
    EXPECT_EQ(z3[i].offload_optimizer, optimizer[i]) << i;
    EXPECT_EQ(z3[i].zero_init, std::optional<bool>(i % 2 == 0)) << i;
  }
}

// Bytes that DeepSpeed's estimate_zero{2,3}_model_states_mem_needs return (source as above,
// run under Python 3.10 and 3.13, which agree), for setups that reach every branch: a
// node count whose 1/M is inexact (the 53'599'999'999 below), GPUs per node of 1 to 4 where
// max(4n, 18/M) takes the float, and a count whose 18Φ/N rounds up to the next integer
// before int() truncates it (Φ = 10^15 + 6 on 7 GPUs: 2571428571428587, not ...586).
struct Case {
  std::uint64_t params, largest_layer;
  int per_node, nodes;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> zero2, zero3;  // (cpu, gpu) by row
};
// clang-format off
const std::vector<Case> kDeepSpeedBytes = {
    {1u, 0u, 1, 1, {{24u, 2u}, {6u, 20u}}, {{27u, 0u}, {27u, 0u}, {24u, 2u}, {24u, 2u}, {0u, 18u}, {6u, 18u}}},
    {125000000u, 3000001u, 1, 1, {{3000000000u, 250000000u}, {750000000u, 2500000000u}}, {{3375000000u, 12000004u}, {3375000000u, 12000004u}, {3000000000u, 262000004u}, {3000000000u, 262000004u}, {18000006u, 2262000004u}, {750000000u, 2262000004u}}},
    {6700000000u, 262144000u, 2, 3, {{241200000000u, 13400000000u}, {80400000000u, 33500000000u}}, {{60300000000u, 1048576000u}, {80400000000u, 1048576000u}, {53599999999u, 3281909333u}, {80400000000u, 3281909333u}, {3145728000u, 21148576000u}, {80400000000u, 21148576000u}}},
    {6738415616u, 131072000u, 4, 3, {{485165924352u, 13476831232u}, {161721974784u, 23584454656u}}, {{60645740544u, 524288000u}, {161721974784u, 524288000u}, {53907324928u, 1647357269u}, {161721974784u, 1647357269u}, {3145728000u, 10631911424u}, {161721974784u, 10631911424u}}},
    {70553706496u, 1052770304u, 8, 16, {{54185246588928u, 141107412992u}, {3386577911808u, 151029027968u}}, {{119059379712u, 4211081216u}, {3386577911808u, 4211081216u}, {105830559744u, 5313482880u}, {3386577911808u, 5313482880u}, {50532974592u, 14132696192u}, {3386577911808u, 14132696192u}}},
    {175000000001u, 617000003u, 3, 7, {{22050000000126u, 350000000002u}, {3150000000018u, 500000000002u}}, {{675000000003u, 2468000012u}, {3150000000018u, 2468000012u}, {600000000003u, 19134666678u}, {3150000000018u, 19134666678u}, {11106000054u, 152468000012u}, {3150000000018u, 152468000012u}}},
    {123456789u, 9876543u, 5, 2, {{7407407340u, 246913578u}, {3703703670u, 469135798u}}, {{1666666651u, 39506172u}, {3703703670u, 39506172u}, {1481481468u, 64197529u}, {3703703670u, 64197529u}, {296296290u, 261728392u}, {3703703670u, 261728392u}}},
    {1000000000000006u, 1000000000003u, 7, 1, {{42000000000000256u, 2000000000000012u}, {42000000000000256u, 4571428571428599u}}, {{27000000000000160u, 4000000000012u}, {42000000000000256u, 4000000000012u}, {24000000000000144u, 289714285714299u}, {42000000000000256u, 289714285714299u}, {42000000000126u, 2575428571428599u}, {42000000000000256u, 2575428571428599u}}},
};
// clang-format on

TEST(DeepSpeedRows, BytesEqualDeepSpeedsOwnFunctions) {
  for (const Case& c : kDeepSpeedBytes) {
    SCOPED_TRACE(std::to_string(c.params) + " params, " + std::to_string(c.per_node) + "x" +
                 std::to_string(c.nodes));
    const auto z2 = deepspeed_zero2_cold(c.params, c.per_node, c.nodes);
    ASSERT_EQ(z2.size(), c.zero2.size());
    for (std::size_t i = 0; i < z2.size(); ++i) {
      EXPECT_EQ(z2[i].cpu_bytes, c.zero2[i].first) << "zero2 row " << i;
      EXPECT_EQ(z2[i].gpu_bytes, c.zero2[i].second) << "zero2 row " << i;
    }
    const auto z3 = deepspeed_zero3_cold(c.params, c.largest_layer, c.per_node, c.nodes);
    ASSERT_EQ(z3.size(), c.zero3.size());
    for (std::size_t i = 0; i < z3.size(); ++i) {
      EXPECT_EQ(z3[i].cpu_bytes, c.zero3[i].first) << "zero3 row " << i;
      EXPECT_EQ(z3[i].gpu_bytes, c.zero3[i].second) << "zero3 row " << i;
    }
  }
}

// Printed by the source above for (6700000000, 262144000, 2, 3) and (1300000000, 50000000, 1,
// 1): plurals, and the device as Python 3.11 and newer spell it.
TEST(DeepSpeedText, SeveralNodesAsPython311AndNewerPrintIt) {
  const DeepSpeedOptions python311{.device_spelling = OffloadDeviceSpelling::enum_name};
  EXPECT_EQ(deepspeed_zero3_text(6'700'000'000, 262'144'000, 2, 3, python311),
            "Estimated memory needed for params, optim states and gradients for a:\n"
            "HW: Setup with 3 nodes, 2 GPUs per node.\n"
            "SW: Model with 6700M total params, 262M largest layer params.\n"
            "  per CPU  |  per GPU |   Options\n"
            "   56.16GB |   0.98GB | offload_param=OffloadDeviceEnum.cpu, "
            "offload_optimizer=OffloadDeviceEnum.cpu, zero_init=1\n"
            "   74.88GB |   0.98GB | offload_param=OffloadDeviceEnum.cpu, "
            "offload_optimizer=OffloadDeviceEnum.cpu, zero_init=0\n"
            "   49.92GB |   3.06GB | offload_param=none, offload_optimizer=OffloadDeviceEnum.cpu, "
            "zero_init=1\n"
            "   74.88GB |   3.06GB | offload_param=none, offload_optimizer=OffloadDeviceEnum.cpu, "
            "zero_init=0\n"
            "    2.93GB |  19.70GB | offload_param=none, offload_optimizer=none, zero_init=1\n"
            "   74.88GB |  19.70GB | offload_param=none, offload_optimizer=none, zero_init=0\n");
  EXPECT_EQ(deepspeed_zero2_text(6'700'000'000, 2, 3, python311),
            "Estimated memory needed for params, optim states and gradients for a:\n"
            "HW: Setup with 3 nodes, 2 GPUs per node.\n"
            "SW: Model with 6700M total params.\n"
            "  per CPU  |  per GPU |   Options\n"
            "  224.64GB |  12.48GB | offload_optimizer=OffloadDeviceEnum.cpu\n"
            "   74.88GB |  31.20GB | offload_optimizer=none\n");
}

TEST(DeepSpeedText, OneNodeOneGpuAsPython310PrintsIt) {
  EXPECT_EQ(deepspeed_zero3_text(1'300'000'000, 50'000'000, 1, 1),
            "Estimated memory needed for params, optim states and gradients for a:\n"
            "HW: Setup with 1 node, 1 GPU per node.\n"
            "SW: Model with 1300M total params, 50M largest layer params.\n"
            "  per CPU  |  per GPU |   Options\n"
            "   32.69GB |   0.19GB | offload_param=cpu , offload_optimizer=cpu , zero_init=1\n"
            "   32.69GB |   0.19GB | offload_param=cpu , offload_optimizer=cpu , zero_init=0\n"
            "   29.06GB |   2.61GB | offload_param=none, offload_optimizer=cpu , zero_init=1\n"
            "   29.06GB |   2.61GB | offload_param=none, offload_optimizer=cpu , zero_init=0\n"
            "    0.28GB |  21.98GB | offload_param=none, offload_optimizer=none, zero_init=1\n"
            "    7.26GB |  21.98GB | offload_param=none, offload_optimizer=none, zero_init=0\n");
  EXPECT_EQ(deepspeed_zero2_text(1'300'000'000, 1, 1),
            "Estimated memory needed for params, optim states and gradients for a:\n"
            "HW: Setup with 1 node, 1 GPU per node.\n"
            "SW: Model with 1300M total params.\n"
            "  per CPU  |  per GPU |   Options\n"
            "   29.06GB |   2.42GB | offload_optimizer=cpu \n"
            "    7.26GB |  24.21GB | offload_optimizer=none\n");
}

// More GPUs, whether per node or as more nodes, never raise a per-GPU figure.
TEST(DeepSpeedProperties, MoreGpusNeverRaiseTheBytesPerGpu) {
  for (const std::uint64_t phi :
       {std::uint64_t{1}, std::uint64_t{999'999'937}, std::uint64_t{70'553'706'496}}) {
    const std::uint64_t layer = phi / 37;
    for (int per_node = 1; per_node <= 16; ++per_node) {
      for (int nodes = 1; nodes <= 16; ++nodes) {
        const auto z3 = deepspeed_zero3_cold(phi, layer, per_node, nodes);
        const auto z3_more_per_node = deepspeed_zero3_cold(phi, layer, per_node + 1, nodes);
        const auto z3_more_nodes = deepspeed_zero3_cold(phi, layer, per_node, nodes + 1);
        const auto z2 = deepspeed_zero2_cold(phi, per_node, nodes);
        const auto z2_more_per_node = deepspeed_zero2_cold(phi, per_node + 1, nodes);
        const auto z2_more_nodes = deepspeed_zero2_cold(phi, per_node, nodes + 1);
        for (std::size_t i = 0; i < z3.size(); ++i) {
          EXPECT_LE(z3_more_per_node[i].gpu_bytes, z3[i].gpu_bytes) << phi << " row " << i;
          EXPECT_LE(z3_more_nodes[i].gpu_bytes, z3[i].gpu_bytes) << phi << " row " << i;
        }
        for (std::size_t i = 0; i < z2.size(); ++i) {
          EXPECT_LE(z2_more_per_node[i].gpu_bytes, z2[i].gpu_bytes) << phi << " row " << i;
          EXPECT_LE(z2_more_nodes[i].gpu_bytes, z2[i].gpu_bytes) << phi << " row " << i;
        }
      }
    }
  }
}

// DeepSpeed's per-GPU figures see only the total GPU count; its per-node CPU figures do see
// the split (ZeRO-3 divides by the nodes).
TEST(DeepSpeedProperties, GpuFiguresSeeOnlyTheGpuCount) {
  const auto eight_by_one = deepspeed_zero3_cold(6'738'415'616, 131'072'000, 8, 1);
  const auto two_by_four = deepspeed_zero3_cold(6'738'415'616, 131'072'000, 2, 4);
  for (std::size_t i = 0; i < eight_by_one.size(); ++i) {
    EXPECT_EQ(eight_by_one[i].gpu_bytes, two_by_four[i].gpu_bytes) << i;
  }
  EXPECT_NE(eight_by_one[0].cpu_bytes, two_by_four[0].cpu_bytes);
}

TEST(DeepSpeedProperties, TheBufferFactorScalesOnlyTheCpuFigures) {
  const auto base = deepspeed_zero3_cold(1'000'000'000, 10'000'000, 4, 2);
  const auto none =
      deepspeed_zero3_cold(1'000'000'000, 10'000'000, 4, 2, {.additional_buffer_factor = 0});
  const auto one =
      deepspeed_zero3_cold(1'000'000'000, 10'000'000, 4, 2, {.additional_buffer_factor = 1});
  for (std::size_t i = 0; i < base.size(); ++i) {
    EXPECT_EQ(none[i].cpu_bytes, 0u) << i;
    EXPECT_EQ(none[i].gpu_bytes, base[i].gpu_bytes) << i;
    EXPECT_EQ(one[i].cpu_bytes * 3 / 2, base[i].cpu_bytes) << i;  // int(x · 1.5)
  }
}

TEST(DeepSpeedProperties, RefusesWhatDeepSpeedCannotEstimate) {
  EXPECT_THROW(deepspeed_zero2_cold(1'000, 0, 1), UsageError);
  EXPECT_THROW(deepspeed_zero2_cold(1'000, 1, 0), UsageError);
  EXPECT_THROW(deepspeed_zero3_cold(1'000, 10, -1, 1), UsageError);
  EXPECT_THROW(deepspeed_zero3_cold(1'000, 10, 1, 1, {.additional_buffer_factor = -1}), UsageError);
  EXPECT_THROW(
      deepspeed_zero3_text(1'000, 10, 1, 1,
                           {.additional_buffer_factor = std::numeric_limits<double>::quiet_NaN()}),
      UsageError);
  // 2^63 params: 2Φ bytes per GPU with the optimizer offloaded is already 2^64.
  EXPECT_THROW(deepspeed_zero2_cold(std::uint64_t{1} << 63, 1, 1), UsageError);
  EXPECT_NO_THROW(deepspeed_zero2_cold(std::uint64_t{1} << 50, 8, 1));
}

}  // namespace
}  // namespace zerodp::deepspeed

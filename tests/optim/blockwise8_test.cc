// 8-bit block-wise states (optim/blockwise8.h) against bitsandbytes' algorithm, bit for bit:
// the dynamic maps as its create_dynamic_map builds them, the nearest-code rule of its
// quantize_blockwise, and one 8-bit AdamW step of its CPU kernel written in NumPy
// (scripts/optim_reference.py), from the same codes, absmax, params and gradients. Both sides
// take the same fp32 operations in the same order, each correctly rounded, so nothing is left
// to a tolerance: a code, an absmax or a parameter that differs by a bit is a different step.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/optim_reference.h"
#include "testing/temp_dir.h"
#include "zerodp/common/rng.h"
#include "zerodp/optim/blockwise8.h"

namespace zerodp::optim {
namespace {

std::uint32_t bits_of(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

template <typename T>
std::vector<T> read_file_of(const std::string& path, std::size_t n) {
  std::vector<T> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(n * sizeof(T)));
  EXPECT_EQ(in.gcount(), std::streamsize(n * sizeof(T))) << path;
  return values;
}

template <typename T>
void write_file_of(const std::string& path, const std::vector<T>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            std::streamsize(values.size() * sizeof(T)));
}

TEST(Blockwise8, TheMapsAreBitsandbytesDynamicMapsBitForBit) {
  const std::string dir = testing::fresh_folder("blockwise8_maps");
  ASSERT_EQ(testing::run_optim_reference("maps", dir), "done\n");
  const auto signed_map = read_file_of<float>(dir + "/map_signed.f32", 256);
  const auto unsigned_map = read_file_of<float>(dir + "/map_unsigned.f32", 256);
  for (std::size_t i = 0; i < 256; ++i) {
    EXPECT_EQ(bits_of(dynamic_map_signed()[i]), bits_of(signed_map[i])) << "signed " << i;
    EXPECT_EQ(bits_of(dynamic_map_unsigned()[i]), bits_of(unsigned_map[i])) << "unsigned " << i;
  }
  // What the step relies on: sorted, 0 and 1 in both, no -1 in the signed one.
  EXPECT_EQ(dynamic_map_signed()[127], 0.0f);
  EXPECT_EQ(dynamic_map_signed()[255], 1.0f);
  EXPECT_GT(dynamic_map_signed()[0], -1.0f);
  EXPECT_EQ(dynamic_map_unsigned()[0], 0.0f);
  EXPECT_EQ(dynamic_map_unsigned()[255], 1.0f);
}

// torch.argmin(|scaled - map|) over all 256 values: the first index of the least fp32 distance.
std::uint8_t nearest_by_scan(float scaled, const DynamicMap& map) {
  if (std::isnan(scaled)) return 0;
  scaled = std::fmin(1.0f, std::fmax(-1.0f, scaled));
  std::size_t best = 0;
  for (std::size_t i = 1; i < 256; ++i) {
    if (std::fabs(scaled - map[i]) < std::fabs(scaled - map[best])) best = i;
  }
  return std::uint8_t(best);
}

TEST(Blockwise8, TheNearestCodeIsTheFirstOfTheLeastDistance) {
  for (const DynamicMap* map : {&dynamic_map_signed(), &dynamic_map_unsigned()}) {
    std::vector<float> probes = {0.0f,
                                 -0.0f,
                                 1.0f,
                                 -1.0f,
                                 2.0f,
                                 -2.0f,
                                 1e-30f,
                                 -1e-30f,
                                 std::numeric_limits<float>::quiet_NaN(),
                                 std::numeric_limits<float>::denorm_min()};
    for (std::size_t i = 0; i < 256; ++i) {
      const float v = (*map)[i];
      probes.push_back(v);
      probes.push_back(std::nextafter(v, 2.0f));
      probes.push_back(std::nextafter(v, -2.0f));
      if (i + 1 < 256) {
        // The midpoint and its neighbours: where a tie or a rounding would pick the other side.
        const float mid = (v + (*map)[i + 1]) / 2;
        probes.push_back(mid);
        probes.push_back(std::nextafter(mid, 2.0f));
        probes.push_back(std::nextafter(mid, -2.0f));
      }
    }
    for (std::uint64_t i = 0; i < 20000; ++i)
      probes.push_back(2.2f * counter_uniform(7, 0, i) - 1.1f);
    // Every float interval of one sign, exponent and top 7 mantissa bits in [-1, 1] (the
    // quantizer's table works by them): its two ends and a point inside.
    for (std::uint32_t sign = 0; sign < 2; ++sign) {
      for (std::uint32_t key = 0; key <= 0x3F80; ++key) {
        const std::uint32_t first = sign << 31 | key << 16;
        for (std::uint32_t low : {0u, 0x5A5Au, 0xFFFFu})
          probes.push_back(std::bit_cast<float>(first | low));
      }
    }
    for (float x : probes) {
      EXPECT_EQ(int(quantize_scaled(x, *map)), int(nearest_by_scan(x, *map))) << x;
    }
    // And many at once, as a block is quantized (eight lanes at a time where the CPU gathers).
    std::vector<std::uint8_t> codes(probes.size());
    quantize_with(probes.data(), probes.size(), 1.0f, *map, codes.data());
    for (std::size_t i = 0; i < probes.size(); ++i) {
      ASSERT_EQ(int(codes[i]), int(nearest_by_scan(probes[i], *map))) << probes[i];
    }
  }
}

// A block and its codes as a step leaves them, then read back from the dequantized values alone.
TEST(Blockwise8, ABlocksCodesAndAbsmaxComeBackFromItsDequantizedValues) {
  std::size_t recovered = 0;
  for (const DynamicMap* map : {&dynamic_map_signed(), &dynamic_map_unsigned()}) {
    const bool is_signed = map == &dynamic_map_signed();
    for (std::uint64_t trial = 0; trial < 400; ++trial) {
      const std::size_t n = 1 + trial % 256;
      // Magnitudes from 1e-30 (subnormal products) to 1e3; the largest element negative in
      // half the signed blocks, all zero in some.
      const float scale = std::pow(10.0f, float(int(trial % 34) - 30));
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) {
        const float r = counter_normal(trial, 1, i) * scale;
        x[i] = trial % 37 == 0 ? 0.0f : is_signed ? r : r * r / scale;
      }
      if (is_signed && trial % 2 == 0 && trial % 37 != 0) x[n / 2] = -4.0f * scale;
      const float absmax = block_absmax(x.data(), n);
      std::vector<std::uint8_t> codes(n), back_codes(n);
      quantize_with(x.data(), n, absmax, *map, codes.data());
      std::vector<float> values(n), again(n);
      dequantize(codes.data(), n, absmax, *map, values.data());
      float back_absmax = -1.0f;
      ASSERT_TRUE(recover_block(values.data(), n, *map, &back_absmax, back_codes.data()))
          << "trial " << trial;
      dequantize(back_codes.data(), n, back_absmax, *map, again.data());
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(bits_of(again[i]), bits_of(values[i])) << "trial " << trial << " element " << i;
      }
      recovered += back_absmax == absmax;
    }
  }
  // The values decide the next step; the absmax itself comes back too, in all but rare blocks
  // whose values another absmax reproduces as well.
  EXPECT_GT(recovered, 790u);
  // Values no quantization gives are refused.
  std::vector<float> odd = {0.3f, 0.123456f, -0.7f};
  std::vector<std::uint8_t> codes(3);
  float absmax = 0;
  EXPECT_FALSE(recover_block(odd.data(), 3, dynamic_map_signed(), &absmax, codes.data()));
}

struct StepCase {
  std::string name, optimizer;
  std::int64_t t;
  std::vector<float> param, grad;
  std::vector<std::uint8_t> codes[2];
  std::vector<float> absmax[2];
};

constexpr std::size_t kStepElements = 1000;  // three blocks of 256 and one of 232
constexpr std::size_t kStepBlocks = 4;

StepCase make_step_case(const std::string& optimizer, std::size_t slots, std::int64_t t,
                        std::uint64_t seed) {
  StepCase c{optimizer + "_t" + std::to_string(t), optimizer, t, {}, {}, {}, {}};
  c.param.resize(kStepElements);
  c.grad.resize(kStepElements);
  for (std::size_t k = 0; k < slots; ++k) {
    c.codes[k].resize(kStepElements);
    c.absmax[k].resize(kStepBlocks);
  }
  for (std::size_t i = 0; i < kStepElements; ++i) {
    c.param[i] = counter_normal(seed, 0, i);
    c.grad[i] = i % 17 == 0 ? 0.0f : 1e-2f * counter_normal(seed, 1, i);
    for (std::size_t k = 0; k < slots; ++k) {
      c.codes[k][i] = t == 1 ? 0 : std::uint8_t(counter_uniform(seed, 2 + k, i) * 256);
    }
  }
  for (std::size_t b = 0; b < kStepBlocks; ++b) {
    // Block 2 all zero (a fresh state: code 0 and absmax 0), the others mid-run.
    const bool zero = t == 1 || b == 2;
    for (std::size_t k = 0; k < slots; ++k) {
      c.absmax[k][b] =
          zero ? 0.0f : (k == 0 ? 1e-2f : 1e-4f) * (1 + counter_uniform(seed, 4 + k, b));
      if (zero) {
        std::fill_n(c.codes[k].begin() + b * 256,
                    std::min<std::size_t>(256, kStepElements - b * 256), 0);
      }
    }
  }
  return c;
}

// Our step, block by block, as the engine takes a block held whole by one rank.
void step_blocks(const Rule& rule, StepCase& c, float lr) {
  const std::size_t slots = rule.row->slots.size();
  for (std::size_t b = 0; b < kStepBlocks; ++b) {
    const std::size_t at = b * 256, n = std::min<std::size_t>(256, kStepElements - at);
    std::uint8_t* codes[2] = {};
    float old_max[2] = {}, new_max[2] = {};
    for (std::size_t k = 0; k < slots; ++k)
      codes[k] = c.codes[k].data() + at, old_max[k] = c.absmax[k][b];
    step_block8(rule, c.param.data() + at, c.grad.data() + at, n, codes, old_max, nullptr, new_max,
                1.0f, lr, c.t, rule.defaults);
    for (std::size_t k = 0; k < slots; ++k) c.absmax[k][b] = new_max[k];
  }
}

// 8-bit AdamW (both slots) and 8-bit Lion (m alone; its default decay of 1 makes lr x wd exact in
// fp32, where Lion's step and bitsandbytes' round the decay factor alike).
TEST(Blockwise8, EachEightBitStepIsBitsandbytesCpuKernelBitForBit) {
  const std::string dir = testing::fresh_folder("blockwise8_step");
  std::vector<StepCase> cases;
  for (std::int64_t t : {1, 10, 1000}) {
    cases.push_back(make_step_case("adamw-8bit", 2, t, 31 + t));
    cases.push_back(make_step_case("lion-8bit", 1, t, 41 + t));
  }
  nlohmann::json list = nlohmann::json::array();
  for (const StepCase& c : cases) {
    const Rule& rule =
        *engine_rule(c.optimizer == "adamw-8bit" ? Optimizer::adam_8bit : Optimizer::lion_8bit);
    const Hyper& h = rule.defaults;
    const std::string base = dir + "/" + c.name;
    write_file_of(base + ".param", c.param);
    write_file_of(base + ".grad", c.grad);
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
      write_file_of(base + ".code" + char('0' + k), c.codes[k]);
      write_file_of(base + ".absmax" + char('0' + k), c.absmax[k]);
    }
    list.push_back({{"name", c.name},
                    {"optimizer", c.optimizer},
                    {"n", kStepElements},
                    {"t", c.t},
                    {"lr", rule.default_lr},
                    {"beta1", h.beta1},
                    {"beta2", h.beta2},
                    {"eps", h.eps},
                    {"weight_decay", h.weight_decay}});
  }
  std::ofstream(dir + "/cases.json") << list.dump();
  const std::string said = testing::run_optim_reference(dir + "/cases.json", dir);
  ASSERT_EQ(said, "done\n") << "scripts/optim_reference.py: " << said;

  for (StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Rule& rule =
        *engine_rule(c.optimizer == "adamw-8bit" ? Optimizer::adam_8bit : Optimizer::lion_8bit);
    const std::vector<float> before = c.param;
    step_blocks(rule, c, rule.default_lr);
    const std::string base = dir + "/" + c.name;
    const auto ref_p = read_file_of<float>(base + ".param.out", kStepElements);
    std::size_t moved = 0;
    for (std::size_t i = 0; i < kStepElements; ++i) {
      ASSERT_EQ(bits_of(c.param[i]), bits_of(ref_p[i])) << "param " << i;
      moved += c.param[i] != before[i];
    }
    EXPECT_GT(moved, kStepElements * 9 / 10);  // the step did something
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
      const auto ref_codes =
          read_file_of<std::uint8_t>(base + ".code" + char('0' + k) + ".out", kStepElements);
      const auto ref_absmax =
          read_file_of<float>(base + ".absmax" + char('0' + k) + ".out", kStepBlocks);
      for (std::size_t b = 0; b < kStepBlocks; ++b) {
        EXPECT_EQ(bits_of(c.absmax[k][b]), bits_of(ref_absmax[b]))
            << "slot " << k << " block " << b;
      }
      for (std::size_t i = 0; i < kStepElements; ++i) {
        ASSERT_EQ(int(c.codes[k][i]), int(ref_codes[i])) << "slot " << k << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace zerodp::optim

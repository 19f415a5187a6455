// Each step of optim/rule.h against the published implementation of its algorithm, one step
// from the same state: torch.optim.AdamW and torch.optim.SGD on this machine's PyTorch,
// lion-pytorch's update in NumPy (scripts/optim_reference.py).
//
// Tolerances, from the arithmetic: the two sides compute the same real-number formula with
// different fp32 roundings (torch folds 1 - beta in double before rounding it to fp32, fuses
// multiply-adds in its vector kernels and orders AdamW's division differently). Each side
// rounds each operation once, to within eps/2 (eps = 2^-23) of its result, and no result is
// larger than the sum of the magnitudes of the terms that make it; the constants 1 - beta differ
// by at most 2 eps relative. So an updated value differs by at most k eps times the sum of its
// terms' magnitudes, k counting both sides' roundings and the constant: a moment
// (beta m + (1 - beta) g) within 4 eps of |beta m| + |(1 - beta) g|, the parameter within 8 eps
// of |p| + |update|. A wrong formula (no bias correction, decay on the gradient, another beta)
// moves a value by a large multiple of those: the update alone is about lr, 1e3 times 8 eps |p|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/optim_reference.h"
#include "testing/temp_dir.h"
#include "zerodp/common/rng.h"
#include "zerodp/optim/rule.h"

namespace zerodp::optim {
namespace {

constexpr float kEps = 1.1920929e-7f;    // 2^-23
constexpr std::size_t kElements = 1001;  // vectorised bodies of 8 and 16 and a scalar tail

struct Case {
  std::string name, optimizer;
  std::int64_t t;
  float lr;
  Hyper hyper;
  std::vector<float> param, grad, slot[2];
};

void write_floats(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()), std::streamsize(values.size() * 4));
}

std::vector<float> read_floats(const std::string& path, std::size_t n) {
  std::vector<float> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(n * 4));
  EXPECT_EQ(in.gcount(), std::streamsize(n * 4)) << path;
  return values;
}

// A state mid-run: weights of order 1, gradients of 1e-2 with exact zeros, a first moment of
// the gradients' order and a second moment of their squares'.
Case make_case(const std::string& optimizer, std::int64_t t, float lr, const Hyper& hyper,
               std::uint64_t seed) {
  Case c{optimizer + "_t" + std::to_string(t), optimizer, t, lr, hyper, {}, {}, {}};
  const std::size_t slots = optimizer == "adamw" ? 2 : optimizer == "sgd" ? 0 : 1;
  c.param.resize(kElements);
  c.grad.resize(kElements);
  for (std::size_t k = 0; k < slots; ++k) c.slot[k].resize(kElements);
  for (std::size_t i = 0; i < kElements; ++i) {
    c.param[i] = counter_normal(seed, 0, i);
    c.grad[i] = i % 17 == 0 ? 0.0f : 1e-2f * counter_normal(seed, 1, i);
    if (slots > 0) c.slot[0][i] = t == 1 ? 0.0f : 1e-2f * counter_normal(seed, 2, i);
    if (slots > 1) {
      const float r = 1e-2f * counter_normal(seed, 3, i);
      c.slot[1][i] = t == 1 ? 0.0f : r * r;
    }
  }
  return c;
}

// The case's line of cases.json, and its inputs beside it.
nlohmann::json write_case(const std::string& dir, const Case& c) {
  write_floats(dir + "/" + c.name + ".param", c.param);
  write_floats(dir + "/" + c.name + ".grad", c.grad);
  for (int k = 0; k < 2; ++k) {
    if (!c.slot[k].empty()) write_floats(dir + "/" + c.name + ".slot" + char('0' + k), c.slot[k]);
  }
  return {{"name", c.name},
          {"optimizer", c.optimizer},
          {"n", kElements},
          {"t", c.t},
          {"lr", c.lr},
          {"beta1", c.hyper.beta1},
          {"beta2", c.hyper.beta2},
          {"eps", c.hyper.eps},
          {"weight_decay", c.hyper.weight_decay}};
}

// |a - b| <= k eps (sum of magnitudes), for every element; the worst ratio is reported.
void expect_within(const std::vector<float>& ours, const std::vector<float>& reference,
                   const std::vector<double>& magnitude, double k, const std::string& what) {
  ASSERT_EQ(ours.size(), reference.size());
  double worst = 0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const double bound = k * kEps * magnitude[i];
    const double diff = std::fabs(double(ours[i]) - double(reference[i]));
    const double ratio = bound > 0 ? diff / bound : (diff > 0 ? 1e30 : 0);
    if (ratio > worst) worst = ratio, worst_at = i;
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << worst_at << " is " << ours[worst_at]
                        << ", the reference " << reference[worst_at] << ", beyond " << k
                        << " eps of its terms' magnitude " << magnitude[worst_at];
}

TEST(OptimReference, EachStepIsThePublishedImplementationsWithinItsRoundings) {
  const std::string dir = testing::fresh_folder("optim_reference");
  std::vector<Case> cases;
  const Rule& adamw = *engine_rule(Optimizer::adam);
  const Rule& lion = *engine_rule(Optimizer::lion);
  const Rule& sgdm = *engine_rule(Optimizer::sgd_momentum);
  const Rule& sgd = *engine_rule(Optimizer::sgd);
  for (std::int64_t t : {1, 10, 1000}) {
    cases.push_back(make_case("adamw", t, 2e-3f, adamw.defaults, 11));
    cases.push_back(make_case("lion", t, 6e-4f, lion.defaults, 12));
    cases.push_back(make_case("sgd-momentum", t, 0.1f, sgdm.defaults, 13));
    cases.push_back(make_case("sgd", t, 1.0f, sgd.defaults, 14));
  }
  nlohmann::json list = nlohmann::json::array();
  for (const Case& c : cases) list.push_back(write_case(dir, c));
  std::ofstream(dir + "/cases.json") << list.dump();
  const std::string said = testing::run_optim_reference(dir + "/cases.json", dir);
  ASSERT_EQ(said, "done\n") << testing::kReferencePython
                            << " with torch and numpy (make setup-test installs "
                            << "python3-torch) ran scripts/optim_reference.py: " << said;

  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Case before = c;
    const Rule& rule = c.optimizer == "adamw"          ? adamw
                       : c.optimizer == "lion"         ? lion
                       : c.optimizer == "sgd-momentum" ? sgdm
                                                       : sgd;
    rule.step({.param = c.param, .grad = c.grad, .slot = {c.slot[0], c.slot[1]}}, 1.0f, c.lr, c.t,
              c.hyper);
    const std::string base = dir + "/" + c.name;
    const std::vector<float> ref_p = read_floats(base + ".param.out", kElements);
    std::vector<float> ref_slot[2];
    for (int k = 0; k < 2; ++k) {
      if (!c.slot[k].empty())
        ref_slot[k] = read_floats(base + ".slot" + char('0' + k) + ".out", kElements);
    }
    const Hyper& h = c.hyper;
    std::vector<double> mag_p(kElements), mag_m(kElements), mag_v(kElements);
    for (std::size_t i = 0; i < kElements; ++i) {
      const double p = std::fabs(before.param[i]), g = std::fabs(before.grad[i]);
      double update = 0;
      if (c.optimizer == "adamw") {
        mag_m[i] = h.beta1 * std::fabs(before.slot[0][i]) + (1 - h.beta1) * g;
        mag_v[i] = h.beta2 * before.slot[1][i] + (1 - h.beta2) * g * g;
        const double bc1 = 1 - std::pow(double(h.beta1), double(c.t));
        const double bc2 = 1 - std::pow(double(h.beta2), double(c.t));
        update =
            c.lr * (std::fabs(ref_slot[0][i]) / bc1 / (std::sqrt(ref_slot[1][i] / bc2) + h.eps) +
                    h.weight_decay * p);
      } else if (c.optimizer == "lion") {
        mag_m[i] = h.beta2 * std::fabs(before.slot[0][i]) + (1 - h.beta2) * g;
        update = c.lr * (1 + h.weight_decay * p);
      } else if (c.optimizer == "sgd-momentum") {
        mag_m[i] = h.beta1 * std::fabs(before.slot[0][i]) + g;
        update = c.lr * std::fabs(ref_slot[0][i]);
      } else {
        update = c.lr * g;
      }
      mag_p[i] = p + update;
    }
    expect_within(c.param, ref_p, mag_p, 8, "param");
    if (!c.slot[0].empty()) expect_within(c.slot[0], ref_slot[0], mag_m, 4, "slot 0");
    if (!c.slot[1].empty()) expect_within(c.slot[1], ref_slot[1], mag_v, 4, "slot 1");
  }
}

// The tolerance is tight enough to see a wrong formula: AdamW without its bias correction is
// far outside it, against the same reference, on nine elements in ten.
TEST(OptimReference, AWrongFormulaIsFarOutsideTheTolerance) {
  const std::string dir = testing::fresh_folder("optim_reference_wrong");
  const Rule& adamw = *engine_rule(Optimizer::adam);
  // At t = 2 the corrections scale the update by sqrt(1 - 0.95^2) / (1 - 0.9^2) = 1.64 (at
  // t = 10 they nearly cancel: 0.97).
  Case c = make_case("adamw", 2, 2e-3f, adamw.defaults, 21);
  const nlohmann::json list = nlohmann::json::array({write_case(dir, c)});
  std::ofstream(dir + "/cases.json") << list.dump();
  ASSERT_EQ(testing::run_optim_reference(dir + "/cases.json", dir), "done\n");
  const std::vector<float> ref_p = read_floats(dir + "/" + c.name + ".param.out", kElements);
  // The step without bias correction: t so large that 1 - beta^t is 1.
  adamw.step({.param = c.param, .grad = c.grad, .slot = {c.slot[0], c.slot[1]}}, 1.0f, c.lr,
             1'000'000, c.hyper);
  std::size_t outside = 0;
  for (std::size_t i = 0; i < kElements; ++i) {
    const double bound = 8 * kEps * (std::fabs(ref_p[i]) + c.lr);
    outside += std::fabs(double(c.param[i]) - double(ref_p[i])) > 10 * bound;
  }
  // Every element with a non-zero moment moves by a visible fraction of lr.
  EXPECT_GT(outside, kElements * 9 / 10);
}

}  // namespace
}  // namespace zerodp::optim

// Adafactor (optim/adafactor.h) against transformers' algorithm with the Trainer's settings: the
// exact sums it is built on, and one step of a matrix and of a vector equal to a NumPy
// transcription of transformers' Adafactor.step whose means and norms are the same exact sums
// (scripts/optim_reference.py), bit for bit; and within the rounding of torch's fp32 sums of the
// same step written with torch's own operations, as the Trainer runs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/optim_reference.h"
#include "testing/temp_dir.h"
#include "zerodp/common/rng.h"
#include "zerodp/optim/adafactor.h"

namespace zerodp::optim {
namespace {

std::uint32_t float_word(float x) {
  return std::bit_cast<std::uint32_t>(x);
}

float sum_of(std::initializer_list<float> values) {
  ExactSum s;
  for (float x : values) s.add(x);
  return s.value();
}

TEST(ExactSum, RoundsTheExactSumOnceToNearestEven) {
  const float one = 1.0f, half_ulp = std::ldexp(1.0f, -24), tiny = std::ldexp(1.0f, -60);
  EXPECT_EQ(sum_of({}), 0.0f);
  EXPECT_EQ(sum_of({0.0f, -0.0f}), 0.0f);
  EXPECT_EQ(sum_of({one, half_ulp}), one);                              // a tie: to the even 1
  EXPECT_EQ(sum_of({one, half_ulp, tiny}), std::nextafter(one, 2.0f));  // past the tie
  EXPECT_EQ(sum_of({std::nextafter(one, 2.0f), half_ulp}),
            std::nextafter(std::nextafter(one, 2.0f), 2.0f));  // a tie: to the even above
  // fp32 would lose every 2^-24 added one at a time to 1; the exact sum keeps them.
  ExactSum many;
  many.add(one);
  for (int i = 0; i < 1 << 20; ++i) many.add(half_ulp);
  EXPECT_EQ(many.value(), one + std::ldexp(1.0f, -4));
  // Subnormals are exact; the smallest times three is exactly representable.
  const float least = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(sum_of({least, least, least}), 3 * least);
  EXPECT_EQ(sum_of({std::numeric_limits<float>::min(), least}),
            std::numeric_limits<float>::min() + least);
  // Beyond fp32: +inf, whatever the order; NaN wins.
  const float big = std::numeric_limits<float>::max();
  EXPECT_EQ(sum_of({big, big}), std::numeric_limits<float>::infinity());
  EXPECT_EQ(sum_of({big, std::numeric_limits<float>::infinity(), 1.0f}),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(sum_of({1.0f, std::numeric_limits<float>::quiet_NaN(), big, big})));
  // Overflow as IEEE rounds it: max plus a quarter of its ulp is max; plus half (a tie, max's
  // last bit odd) is infinite.
  EXPECT_EQ(sum_of({big, std::ldexp(1.0f, 102)}), big);
  EXPECT_EQ(sum_of({big, std::ldexp(1.0f, 103)}), std::numeric_limits<float>::infinity());
}

// The same values summed in parts, merged in any order, are the same sum, and that sum is the
// double-precision sum rounded when double holds it exactly (values of one narrow binade).
TEST(ExactSum, AnySplitAndOrderGivesTheSameBits) {
  std::vector<float> values;
  for (std::uint64_t i = 0; i < 5000; ++i) {
    const float g = float(counter_normal(7, 1, i));
    values.push_back(g * g * std::ldexp(1.0f, int(i % 40) - 20) + 1e-30f);
  }
  ExactSum whole;
  for (float x : values) whole.add(x);
  for (std::size_t parts : {2u, 3u, 7u, 64u}) {
    std::vector<ExactSum> part(parts);
    for (std::size_t i = 0; i < values.size(); ++i) part[(i * 2654435761u) % parts].add(values[i]);
    ExactSum forward, backward;
    for (std::size_t k = 0; k < parts; ++k) forward.merge(part[k]);
    for (std::size_t k = parts; k-- > 0;) backward.merge(part[k]);
    EXPECT_EQ(forward, whole) << parts;
    EXPECT_EQ(backward, whole) << parts;
  }
  ExactSum narrow;
  double exact = 0.0;
  for (int i = 0; i < 1000; ++i) {
    const float x = 1.0f + float(i) * std::ldexp(1.0f, -23);
    narrow.add(x);
    exact += double(x);  // multiples of 2^-23 under 2^10: exact in double
  }
  EXPECT_EQ(narrow.value(), float(exact));
}

std::vector<float> load_floats(const std::string& path, std::size_t n) {
  std::vector<float> values(n);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(values.data()), std::streamsize(n * sizeof(float)));
  EXPECT_EQ(in.gcount(), std::streamsize(n * sizeof(float))) << path;
  return values;
}

void save_floats(const std::string& path, const std::vector<float>& values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             std::streamsize(values.size() * sizeof(float)));
}

struct FactorCase {
  std::string name;
  std::size_t rows = 0, cols = 0;  // cols 0: a vector of `rows` elements
  std::int64_t t = 1;
  float lr = 2e-3f, grad_mul = 1.0f, weight_decay = 0.0f, scale = 1.0f;
  std::vector<float> param, grad, row, col, v;
  float divisor = 0.0f;  // the step's: above 1 when the update was clipped
  std::size_t n() const { return cols ? rows * cols : rows; }
};

// scale: the gradients'; the states are those of gradients of state_scale (smaller ones make the
// update's RMS above 1, so it is clipped).
FactorCase make_factor_case(std::string name, std::size_t rows, std::size_t cols, std::int64_t t,
                            float grad_mul, float weight_decay, float scale, std::uint64_t seed,
                            float state_scale = 0.0f) {
  if (state_scale == 0.0f) state_scale = scale;
  FactorCase c{.name = std::move(name),
               .rows = rows,
               .cols = cols,
               .t = t,
               .grad_mul = grad_mul,
               .weight_decay = weight_decay,
               .scale = scale};
  for (std::size_t i = 0; i < c.n(); ++i) {
    c.param.push_back(float(0.02 * counter_normal(seed, 0, i)));
    // Gradients of a few magnitudes, some zero (their g2 is eps1 alone).
    const float g = float(counter_normal(seed, 1, i)) * scale * std::ldexp(1.0f, -int(i % 5));
    c.grad.push_back(i % 11 == 3 ? 0.0f : g);
  }
  // The states a step before left: positive, of the squares' magnitude (none at t = 1).
  auto state = [&](std::size_t n, std::uint64_t stream) {
    std::vector<float> s;
    for (std::size_t i = 0; i < n; ++i) {
      const float x = float(counter_normal(seed, stream, i)) * state_scale;
      s.push_back(t == 1 ? 0.0f : x * x + 1e-12f);
    }
    return s;
  };
  if (cols) {
    c.row = state(rows, 2);
    c.col = state(cols, 3);
  } else {
    c.v = state(rows, 4);
  }
  return c;
}

// Our step, as the engine takes a tensor it holds whole, its sums made in two parts and merged
// (as two ranks' parts would be).
void step_tensor(FactorCase& c) {
  const std::size_t n = c.n();
  const AdafactorDecay d = adafactor_decay(c.t);
  std::vector<float> u(n);
  ExactSum sq;
  if (c.cols) {
    std::vector<ExactSum> rows(c.rows), cols(c.cols), rows2(c.rows), cols2(c.cols);
    const std::size_t cut = n / 3 + 1;  // inside a row
    adafactor_accumulate(c.grad.data(), cut, c.grad_mul, 0, c.cols, rows.data(), cols.data());
    adafactor_accumulate(c.grad.data() + cut, n - cut, c.grad_mul, cut, c.cols, rows2.data(),
                         cols2.data());
    for (std::size_t i = 0; i < c.rows; ++i) rows[i].merge(rows2[i]);
    for (std::size_t j = 0; j < c.cols; ++j) cols[j].merge(cols2[j]);
    std::vector<float> r(c.rows), f(c.cols);
    adafactor_factors(rows.data(), cols.data(), c.rows, c.cols, d, c.row.data(), c.col.data(),
                      r.data(), f.data());
    adafactor_direction_matrix(c.grad.data(), n, c.grad_mul, 0, c.cols, r.data(), f.data(),
                               u.data(), &sq);
  } else {
    adafactor_direction_vector(c.grad.data(), n, c.grad_mul, c.v.data(), true, d, u.data(), &sq);
    // The engine's second pass: u again from the updated v, which it leaves as it is.
    std::vector<float> again(n);
    adafactor_direction_vector(c.grad.data(), n, c.grad_mul, c.v.data(), false, d, again.data(),
                               nullptr);
    EXPECT_EQ(std::memcmp(again.data(), u.data(), n * sizeof(float)), 0);
  }
  c.divisor = adafactor_divisor(sq, n);
  adafactor_apply(c.param.data(), u.data(), n, c.divisor, c.lr, c.weight_decay);
}

TEST(Adafactor, EachStepIsTransformersAdafactorWithExactSumsBitForBit) {
  const std::string dir = testing::fresh_folder("adafactor_step");
  std::vector<FactorCase> cases;
  for (std::int64_t t : {1, 10, 1000}) {
    cases.push_back(
        make_factor_case("matrix_t" + std::to_string(t), 24, 40, t, 1.0f, 0.0f, 1.0f, 51 + t));
    cases.push_back(
        make_factor_case("vector_t" + std::to_string(t), 301, 0, t, 1.0f, 0.0f, 1.0f, 61 + t));
  }
  // Large gradients, so the update is clipped (its RMS above 1 divides it); a gradient
  // multiplier (loss scale and clipping); weight decay; a wide matrix of one element a column.
  cases.push_back(make_factor_case("clipped", 16, 48, 3, 1.0f, 0.0f, 1e3f, 71, 1.0f));
  cases.push_back(make_factor_case("clipped_vector", 200, 0, 3, 1.0f, 0.0f, 1e3f, 75, 1.0f));
  cases.push_back(make_factor_case("scaled", 8, 9, 5, 0.37f, 0.1f, 1.0f, 72));
  cases.push_back(make_factor_case("tall", 128, 2, 2, 1.0f, 0.0f, 1e-3f, 73));
  cases.push_back(make_factor_case("decay_vector", 64, 0, 4, 0.5f, 0.1f, 1.0f, 74));
  nlohmann::json list = nlohmann::json::array();
  for (const FactorCase& c : cases) {
    const std::string base = dir + "/" + c.name;
    save_floats(base + ".param", c.param);
    save_floats(base + ".grad", c.grad);
    if (c.cols) {
      save_floats(base + ".row", c.row);
      save_floats(base + ".col", c.col);
    } else {
      save_floats(base + ".slot0", c.v);
    }
    list.push_back({{"name", c.name},
                    {"optimizer", "adafactor"},
                    {"n", c.n()},
                    {"cols", c.cols},
                    {"t", c.t},
                    {"lr", c.lr},
                    {"grad_mul", c.grad_mul},
                    {"weight_decay", c.weight_decay}});
  }
  std::ofstream(dir + "/cases.json") << list.dump();
  const std::string said = testing::run_optim_reference(dir + "/cases.json", dir);
  ASSERT_EQ(said, "done\n") << "scripts/optim_reference.py: " << said;

  for (FactorCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<float> before = c.param;
    step_tensor(c);
    const std::string base = dir + "/" + c.name;
    const std::size_t n = c.n();
    const auto ref_p = load_floats(base + ".param.out", n);
    const auto torch_p = load_floats(base + ".param.torch.out", n);
    std::size_t moved = 0;
    // torch sums means and norms in fp32 in its own order: each sum of k terms within k units
    // of fp32 rounding (2^-24) of the exact one, which moves the factors, the divisor and so
    // each update by at most (rows + cols + n) of them relatively, and adds a few roundings of
    // the parameter's own.
    const double relative = double(c.rows + c.cols + n + 16) * std::ldexp(1.0, -24);
    for (std::size_t i = 0; i < n; ++i) {
      ASSERT_EQ(float_word(c.param[i]), float_word(ref_p[i])) << "param " << i;
      moved += c.param[i] != before[i];
      const double step = std::fabs(double(ref_p[i]) - double(before[i]));
      const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(ref_p[i]), 1e-30f)) - 23);
      EXPECT_LE(std::fabs(double(torch_p[i]) - double(c.param[i])), step * relative + 2 * ulp)
          << "param " << i;
    }
    EXPECT_GT(moved, n * 8 / 10);  // the step did something
    if (c.name.starts_with("clipped")) EXPECT_GT(c.divisor, 1.0f);
    if (c.cols) {
      const auto ref_row = load_floats(base + ".row.out", c.rows);
      const auto ref_col = load_floats(base + ".col.out", c.cols);
      for (std::size_t i = 0; i < c.rows; ++i)
        ASSERT_EQ(float_word(c.row[i]), float_word(ref_row[i])) << "row " << i;
      for (std::size_t j = 0; j < c.cols; ++j)
        ASSERT_EQ(float_word(c.col[j]), float_word(ref_col[j])) << "col " << j;
    } else {
      const auto ref_v = load_floats(base + ".slot0.out", n);
      for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(float_word(c.v[i]), float_word(ref_v[i])) << "v " << i;
    }
  }
}

}  // namespace
}  // namespace zerodp::optim

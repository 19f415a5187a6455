// gemm() in bf16 compute: both operands rounded to bf16, products summed in fp32, for every
// transpose and leading dimension the models use, exactly where the arithmetic is exact and
// within bf16's bound where it is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "model/finite_difference.h"
#include "testing/tolerance.h"
#include "zerodp/common/rng.h"
#include "zerodp/model/gemm.h"

namespace zerodp::model {
namespace {

// One product's stored operands, with row strides wider than the rows (sub-matrices, as the
// attention's heads are), and C with two columns of padding the product must not touch.
struct StridedProduct {
  bool ta = false, tb = false;
  std::size_t m = 0, n = 0, k = 0;
  std::size_t a_rows = 0, a_cols = 0, lda = 0, b_rows = 0, b_cols = 0, ldb = 0, ldc = 0;
  std::vector<float> a, b, c;

  StridedProduct(bool ta_, bool tb_, std::size_t m_, std::size_t n_, std::size_t k_)
      : ta(ta_), tb(tb_), m(m_), n(n_), k(k_) {
    a_rows = ta ? k : m, a_cols = ta ? m : k, lda = a_cols + 3;
    b_rows = tb ? n : k, b_cols = tb ? k : n, ldb = b_cols + 5;
    ldc = n + 2;
    a.assign(a_rows * lda, std::numeric_limits<float>::quiet_NaN());  // padding: never read
    b.assign(b_rows * ldb, std::numeric_limits<float>::quiet_NaN());
    c.assign(m * ldc, -7.0f);
  }
  // op(A)[i, p] and op(B)[p, j] as stored.
  float& op_a(std::size_t i, std::size_t p) { return ta ? a[p * lda + i] : a[i * lda + p]; }
  float& op_b(std::size_t p, std::size_t j) { return tb ? b[j * ldb + p] : b[p * ldb + j]; }
  void run(const GemmCompute& how, float beta) {
    gemm(how, ta ? Trans::yes : Trans::no, tb ? Trans::yes : Trans::no, m, n, k, 1.0f, a.data(),
         lda, b.data(), ldb, beta, c.data(), ldc);
  }
  std::size_t scratch_floats() const { return m * k + k * n; }
};

// Small integers, signed, from a counter hash: exact in bf16.
int small_int(std::uint64_t seed, std::uint64_t i) {
  return static_cast<int>(counter_hash(seed, 3, i) % 31) - 15;
}

TEST(GemmBf16, RoundsEveryOperandToBf16ThenSumsInFp32) {
  // Every operand is an integer x in [-15, 15] times (1 + 2^-10): bf16 (8 significant bits)
  // rounds it back to x, since x 2^-10 is less than half of x's spacing. The products of the
  // integers and every partial sum are integers below 2^24, exact in fp32 in any order. So
  // bf16 compute must give the integer result exactly, and fp32 compute (which multiplies the
  // unrounded operands) must not.
  const float nudge = 1.0f + 0x1p-10f;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const float beta : {0.0f, 1.0f}) {
        SCOPED_TRACE(std::string("trans ") + (ta ? "A" : "-") + (tb ? "B" : "-") + " beta " +
                     std::to_string(beta));
        StridedProduct bf(ta, tb, 5, 7, 300);
        std::vector<double> exact(bf.m * bf.n, 0.0);
        std::vector<int> ai(bf.m * bf.k), bi(bf.k * bf.n);
        for (std::size_t i = 0; i < bf.m; ++i) {
          for (std::size_t p = 0; p < bf.k; ++p) {
            ai[i * bf.k + p] = small_int(1, i * bf.k + p);
            bf.op_a(i, p) = static_cast<float>(ai[i * bf.k + p]) * nudge;
          }
        }
        for (std::size_t p = 0; p < bf.k; ++p) {
          for (std::size_t j = 0; j < bf.n; ++j) {
            bi[p * bf.n + j] = small_int(2, p * bf.n + j);
            bf.op_b(p, j) = static_cast<float>(bi[p * bf.n + j]) * nudge;
          }
        }
        for (std::size_t i = 0; i < bf.m; ++i) {
          for (std::size_t j = 0; j < bf.n; ++j) {
            const int start = small_int(3, i * bf.n + j);
            bf.c[i * bf.ldc + j] = static_cast<float>(start);
            double s = beta * start;
            for (std::size_t p = 0; p < bf.k; ++p) s += ai[i * bf.k + p] * bi[p * bf.n + j];
            exact[i * bf.n + j] = s;
          }
        }
        StridedProduct fp = bf;
        std::vector<float> scratch(bf.scratch_floats());
        bf.run({Compute::bf16, scratch}, beta);
        fp.run({}, beta);
        int fp32_differs = 0;
        for (std::size_t i = 0; i < bf.m; ++i) {
          for (std::size_t j = 0; j < bf.n; ++j) {
            EXPECT_EQ(bf.c[i * bf.ldc + j], exact[i * bf.n + j]) << i << ", " << j;
            fp32_differs += fp.c[i * bf.ldc + j] != exact[i * bf.n + j];
          }
          for (std::size_t j = bf.n; j < bf.ldc; ++j) EXPECT_EQ(bf.c[i * bf.ldc + j], -7.0f);
        }
        EXPECT_GT(fp32_differs, 0);  // the test tells bf16 from fp32
      }
    }
  }
}

TEST(GemmBf16, StaysWithinBf16sBoundOfTheExactProduct) {
  // Operands of every magnitude bf16 meets in the models, each element off by at most
  // tolerance::bf16_dot_error of its k + 1 terms (the products and beta C).
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans ") + (ta ? "A" : "-") + (tb ? "B" : "-"));
      StridedProduct p(ta, tb, 9, 13, 257);
      const auto av = testing::random_vector(p.m * p.k, 21, 3.0);
      const auto bv = testing::random_vector(p.k * p.n, 22, 0.02);
      const auto cv = testing::random_vector(p.m * p.n, 23, 1.0);
      for (std::size_t i = 0; i < p.m; ++i)
        for (std::size_t q = 0; q < p.k; ++q) p.op_a(i, q) = av[i * p.k + q];
      for (std::size_t q = 0; q < p.k; ++q)
        for (std::size_t j = 0; j < p.n; ++j) p.op_b(q, j) = bv[q * p.n + j];
      for (std::size_t i = 0; i < p.m; ++i)
        for (std::size_t j = 0; j < p.n; ++j) p.c[i * p.ldc + j] = cv[i * p.n + j];
      std::vector<float> scratch(p.scratch_floats());
      p.run({Compute::bf16, scratch}, 1.0f);
      double worst = 0;  // |error| / bound
      for (std::size_t i = 0; i < p.m; ++i) {
        for (std::size_t j = 0; j < p.n; ++j) {
          double exact = cv[i * p.n + j], terms = std::fabs(cv[i * p.n + j]);
          for (std::size_t q = 0; q < p.k; ++q) {
            exact += double{av[i * p.k + q]} * bv[q * p.n + j];
            terms += std::fabs(double{av[i * p.k + q]} * bv[q * p.n + j]);
          }
          const double bound = tolerance::bf16_dot_error(double(p.k + 1), terms);
          const double error = std::fabs(p.c[i * p.ldc + j] - exact);
          EXPECT_LE(error, bound) << i << ", " << j;
          worst = std::max(worst, error / bound);
        }
      }
      std::printf("  worst |error| / bound %.3f\n", worst);
    }
  }
}

}  // namespace
}  // namespace zerodp::model

// gemm() on each kernel (OpenBLAS, oneDNN) in each compute, for every transpose and leading
// dimension the models use: in bf16, both operands rounded to bf16 and the products summed in
// fp32, exactly where the arithmetic is exact and within bf16's bound where it is not; in fp32,
// within the sum's bound; the scratch no larger than the kernel says; the same bits every call
// and from every thread.
//
// OpenBLAS and oneDNN in fp32 run everywhere zerodp builds (scripts/setup.sh installs oneDNN).
// oneDNN in bf16 needs a CPU with AVX-512; elsewhere those cases skip, saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string>
#include <thread>
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
  std::size_t scratch_floats(GemmKernel kernel, Compute compute, float beta,
                             float alpha = 1.0f) const {
    return gemm_scratch_floats(kernel, compute, ta ? Trans::yes : Trans::no,
                               tb ? Trans::yes : Trans::no, m, n, k, alpha, lda, ldb, beta, ldc);
  }
};

// The kernel under test, in `compute`: fails where oneDNN should be built in and is not, skips
// (returns false) where the CPU has no such kernel.
bool kernel_runs(GemmKernel kernel, Compute compute) {
  if (gemm_kernel_available(kernel, compute)) return true;
  if (compute == Compute::fp32) {
    ADD_FAILURE() << "zerodp was built without oneDNN: scripts/setup.sh run installs libdnnl-dev";
  }
  return false;
}

class GemmKernels : public ::testing::TestWithParam<GemmKernel> {};

}  // namespace

// gtest's name for a kernel in the test's messages.
void PrintTo(GemmKernel kernel, std::ostream* out) {
  *out << gemm_kernel_name(kernel);
}

namespace {

std::string kernel_name(const ::testing::TestParamInfo<GemmKernel>& info) {
  return std::string(gemm_kernel_name(info.param));
}

#define ZERODP_SKIP_UNLESS_RUNS(kernel, compute)                                      \
  do {                                                                                \
    if (!kernel_runs(kernel, compute)) {                                              \
      GTEST_SKIP() << gemm_kernel_name(kernel) << " has no " << compute_name(compute) \
                   << " matmul on this CPU (oneDNN 2.6 needs AVX-512 for bf16)";      \
    }                                                                                 \
  } while (0)

// Small integers, signed, from a counter hash: exact in bf16.
int small_int(std::uint64_t seed, std::uint64_t i) {
  return static_cast<int>(counter_hash(seed, 3, i) % 31) - 15;
}

TEST_P(GemmKernels, Bf16RoundsEveryOperandToBf16ThenSumsInFp32) {
  const GemmKernel kernel = GetParam();
  ZERODP_SKIP_UNLESS_RUNS(kernel, Compute::bf16);
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
        std::vector<float> scratch(bf.scratch_floats(kernel, Compute::bf16, beta));
        bf.run({Compute::bf16, scratch, kernel}, beta);
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

TEST_P(GemmKernels, Bf16StaysWithinBf16sBoundOfTheExactProduct) {
  // Operands of every magnitude bf16 meets in the models, each element off by at most
  // tolerance::bf16_dot_error of its k + 1 terms (the products and beta C).
  const GemmKernel kernel = GetParam();
  ZERODP_SKIP_UNLESS_RUNS(kernel, Compute::bf16);
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
      std::vector<float> scratch(p.scratch_floats(kernel, Compute::bf16, 1.0f));
      p.run({Compute::bf16, scratch, kernel}, 1.0f);
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

// op(A) [m x k], op(B) [k x n] and C [m x n] from seeds; the values, row-major, are returned for
// the exact product.
struct ProductValues {
  std::vector<float> a, b, c;
};
ProductValues fill_product(StridedProduct& p, std::uint64_t seed) {
  ProductValues v{testing::random_vector(p.m * p.k, seed, 1.5),
                  testing::random_vector(p.k * p.n, seed + 1, 0.05),
                  testing::random_vector(p.m * p.n, seed + 2, 1.0)};
  for (std::size_t i = 0; i < p.m; ++i)
    for (std::size_t q = 0; q < p.k; ++q) p.op_a(i, q) = v.a[i * p.k + q];
  for (std::size_t q = 0; q < p.k; ++q)
    for (std::size_t j = 0; j < p.n; ++j) p.op_b(q, j) = v.b[q * p.n + j];
  for (std::size_t i = 0; i < p.m; ++i)
    for (std::size_t j = 0; j < p.n; ++j) p.c[i * p.ldc + j] = v.c[i * p.n + j];
  return v;
}

TEST_P(GemmKernels, Fp32StaysWithinTheSumsBound) {
  // Each element is alpha times k products plus beta C: k + 2 terms, each product scaled by
  // alpha (one rounding more) or the sum scaled once, in any order, within
  // gamma(k + 2) (|alpha| sum |a b| + |beta c|) of the exact value. alpha 0.3 is not a power of
  // two, so its scaling rounds.
  const GemmKernel kernel = GetParam();
  ZERODP_SKIP_UNLESS_RUNS(kernel, Compute::fp32);
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const float alpha : {1.0f, 0.3f}) {
        for (const float beta : {0.0f, 1.0f}) {
          SCOPED_TRACE(std::string("trans ") + (ta ? "A" : "-") + (tb ? "B" : "-") + " alpha " +
                       std::to_string(alpha) + " beta " + std::to_string(beta));
          StridedProduct p(ta, tb, 17, 11, 129);
          const ProductValues v = fill_product(p, 31);
          std::vector<float> scratch(p.scratch_floats(kernel, Compute::fp32, beta, alpha));
          gemm({Compute::fp32, scratch, kernel}, ta ? Trans::yes : Trans::no,
               tb ? Trans::yes : Trans::no, p.m, p.n, p.k, alpha, p.a.data(), p.lda, p.b.data(),
               p.ldb, beta, p.c.data(), p.ldc);
          for (std::size_t i = 0; i < p.m; ++i) {
            for (std::size_t j = 0; j < p.n; ++j) {
              double dot = 0, terms = 0;
              for (std::size_t q = 0; q < p.k; ++q) {
                dot += double{v.a[i * p.k + q]} * v.b[q * p.n + j];
                terms += std::fabs(double{v.a[i * p.k + q]} * v.b[q * p.n + j]);
              }
              const double c0 = v.c[i * p.n + j];
              const double exact = alpha * dot + beta * c0;
              const double bound = tolerance::gamma(double(p.k + 2)) *
                                   (std::fabs(alpha) * terms + std::fabs(beta * c0));
              EXPECT_LE(std::fabs(p.c[i * p.ldc + j] - exact), bound) << i << ", " << j;
            }
            for (std::size_t j = p.n; j < p.ldc; ++j) EXPECT_EQ(p.c[i * p.ldc + j], -7.0f);
          }
        }
      }
    }
  }
}

TEST_P(GemmKernels, NoProductsLeaveBetaC) {
  // k = 0: C = beta C, and beta = 0 overwrites C, NaN included, as sgemm does.
  const GemmKernel kernel = GetParam();
  for (const Compute compute : {Compute::fp32, Compute::bf16}) {
    if (!gemm_kernel_available(kernel, compute)) continue;
    for (const float beta : {0.0f, 0.5f}) {
      std::vector<float> c{1.0f, std::numeric_limits<float>::quiet_NaN(), -4.0f, 8.0f};
      if (beta != 0.0f) c[1] = 2.0f;
      const float a = 1.0f, b = 1.0f;
      gemm({compute, {}, kernel}, Trans::no, Trans::no, 2, 2, 0, 1.0f, &a, 1, &b, 2, beta, c.data(),
           2);
      const std::vector<float> want = beta == 0.0f ? std::vector<float>{0, 0, 0, 0}
                                                   : std::vector<float>{0.5f, 1.0f, -2.0f, 4.0f};
      EXPECT_EQ(c, want) << compute_name(compute) << " beta " << beta;
    }
  }
}

TEST_P(GemmKernels, WritesNoScratchBeyondWhatItAsksFor) {
  // The scratch the kernel asks for is all it writes: the floats past it keep their sentinel,
  // for the models' shapes (a linear layer's three products, an attention block's two).
  const GemmKernel kernel = GetParam();
  struct ProductShape {
    bool ta, tb;
    std::size_t m, n, k;
    float alpha, beta;
  };
  const ProductShape shapes[] = {{false, true, 256, 96, 32, 1.0f, 1.0f},   // out = inp W^T + bias
                                 {false, false, 256, 32, 96, 1.0f, 0.0f},  // dinp = dout W
                                 {true, false, 96, 32, 256, 1.0f, 1.0f},   // dW += dout^T inp
                                 {false, true, 64, 128, 16, 0.25f, 0.0f},  // scores = scale q k^T
                                 {true, false, 64, 16, 128, 1.0f, 0.0f}};  // dv = att^T dout
  for (const Compute compute : {Compute::fp32, Compute::bf16}) {
    if (!gemm_kernel_available(kernel, compute)) {
      if (compute == Compute::fp32) ADD_FAILURE() << "no fp32 " << gemm_kernel_name(kernel);
      continue;
    }
    for (const ProductShape& s : shapes) {
      StridedProduct p(s.ta, s.tb, s.m, s.n, s.k);
      fill_product(p, 41);
      const std::size_t need = p.scratch_floats(kernel, compute, s.beta, s.alpha);
      if (kernel == GemmKernel::openblas) {
        EXPECT_EQ(need, compute == Compute::bf16 ? s.m * s.k + s.k * s.n : 0);
      }
      if (kernel == GemmKernel::onednn) {
        std::printf("  %s %zux%zux%zu: %zu floats of scratch\n", compute_name(compute).data(), s.m,
                    s.n, s.k, need);
      }
      std::vector<float> scratch(need + 64, 12345.0f);
      gemm({compute, std::span<float>(scratch).first(need), kernel}, s.ta ? Trans::yes : Trans::no,
           s.tb ? Trans::yes : Trans::no, s.m, s.n, s.k, s.alpha, p.a.data(), p.lda, p.b.data(),
           p.ldb, s.beta, p.c.data(), p.ldc);
      for (std::size_t i = need; i < scratch.size(); ++i) {
        ASSERT_EQ(scratch[i], 12345.0f) << compute_name(compute) << " " << s.m << "x" << s.n << "x"
                                        << s.k << ": wrote float " << i << " of " << need;
      }
    }
  }
}

TEST_P(GemmKernels, SameBitsEveryCallFromEveryThread) {
  // One product, computed once, then 10 times in each of 3 threads at once: every result has
  // the first's bits (the models' bitwise guarantees rest on it).
  const GemmKernel kernel = GetParam();
  for (const Compute compute : {Compute::fp32, Compute::bf16}) {
    if (!gemm_kernel_available(kernel, compute)) continue;
    StridedProduct first(false, true, 200, 72, 150);
    fill_product(first, 51);
    const std::size_t need = first.scratch_floats(kernel, compute, 1.0f);
    const StridedProduct start = first;
    std::vector<float> scratch(need);
    first.run({compute, scratch, kernel}, 1.0f);
    std::vector<int> mismatches(3, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        std::vector<float> own(need);
        for (int r = 0; r < 10; ++r) {
          StridedProduct again = start;
          again.run({compute, own, kernel}, 1.0f);
          mismatches[t] += again.c != first.c;
        }
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(mismatches, std::vector<int>(3, 0)) << compute_name(compute);
  }
}

TEST_P(GemmKernels, ReusingTheLeftOperandsRoundingGivesTheBitsOfRoundingItAgain) {
  // A layer's backward: dinp = dout W, then dW += dout^T X with Reuse::a, which takes dout's
  // rounding from the front of the scratch. It must give the bits of rounding dout again, and
  // must round it again when the front holds something else: here another product on the same
  // scratch, of a matrix of dout's shape, ran in between.
  const GemmKernel kernel = GetParam();
  const std::size_t R = 37, O = 21, C = 19, ld_dout = O + 3;  // dout [R, O] with a wider row
  const std::vector<float> dout = testing::random_vector(R * ld_dout, 71, 1.0);
  const std::vector<float> other = testing::random_vector(R * ld_dout, 72, 1.0);
  const std::vector<float> w = testing::random_vector(O * C, 73, 0.5);
  const std::vector<float> x = testing::random_vector(R * C, 74, 2.0);
  for (const Compute compute : {Compute::fp32, Compute::bf16}) {
    if (!gemm_kernel_available(kernel, compute)) continue;
    SCOPED_TRACE(std::string(compute_name(compute)));
    const std::size_t need = std::max(gemm_scratch_floats(kernel, compute, Trans::no, Trans::no, R,
                                                          C, O, 1.0f, ld_dout, C, 0.0f, C),
                                      gemm_scratch_floats(kernel, compute, Trans::yes, Trans::no, O,
                                                          C, R, 1.0f, ld_dout, C, 1.0f, C));
    std::vector<float> scratch(need);
    const GemmCompute how{compute, scratch, kernel};
    auto dinp = [&](const std::vector<float>& a) {
      std::vector<float> out(R * C, 0.0f);
      gemm(how, Trans::no, Trans::no, R, C, O, 1.0f, a.data(), ld_dout, w.data(), C, 0.0f,
           out.data(), C);
      return out;
    };
    auto dweight = [&](Reuse reuse) {
      std::vector<float> out(O * C, 0.25f);
      gemm(how, Trans::yes, Trans::no, O, C, R, 1.0f, dout.data(), ld_dout, x.data(), C, 1.0f,
           out.data(), C, reuse);
      return out;
    };
    dinp(dout);
    const std::vector<float> rounded_again = dweight(Reuse::none);
    dinp(dout);
    EXPECT_EQ(dweight(Reuse::a), rounded_again) << "reused after dout W";
    dinp(dout);
    dinp(other);  // the front now holds `other`, at dout's shape and stride
    EXPECT_EQ(dweight(Reuse::a), rounded_again) << "reused after a product of another matrix";
  }
}

TEST(GemmOneDnn, AProductShortOfScratchRunsTheEmulation) {
  // oneDNN's bf16 operands sit at 64-byte boundaries: a 2 x 4 by 4 x 3 product needs 128 bytes
  // of it, more than the emulation's 20 floats (80 bytes). Given those 20 floats, gemm() runs
  // the emulation, so its bits are the emulation's.
  ZERODP_SKIP_UNLESS_RUNS(GemmKernel::onednn, Compute::bf16);
  StridedProduct native(false, true, 2, 3, 4);
  fill_product(native, 61);
  StridedProduct emulated = native;
  std::vector<float> scratch(native.scratch_floats(GemmKernel::openblas, Compute::bf16, 1.0f));
  ASSERT_EQ(scratch.size(), 20u);
  ASSERT_GT(native.scratch_floats(GemmKernel::onednn, Compute::bf16, 1.0f), scratch.size());
  native.run({Compute::bf16, scratch, GemmKernel::onednn}, 1.0f);
  emulated.run({Compute::bf16, scratch, GemmKernel::openblas}, 1.0f);
  EXPECT_EQ(native.c, emulated.c);
}

INSTANTIATE_TEST_SUITE_P(, GemmKernels, ::testing::Values(GemmKernel::openblas, GemmKernel::onednn),
                         kernel_name);

}  // namespace
}  // namespace zerodp::model

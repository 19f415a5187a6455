// The matrix-product kernels a CPU offers zerodp, side by side: OpenBLAS's sgemm (what zerodp
// multiplies with), oneDNN's fp32 matmul, and oneDNN's bf16 matmul (bf16 inputs, fp32
// accumulation and output; PyTorch's kernels under bf16 autocast) where the CPU has it. The
// sizes are 1024^3, the linear layers of the benchmark GPT (micro-batch 8 x context 128 =
// 1024 rows, hidden 256), forward and backward, in the layouts the model stores them, and two
// of one attention head's small products. Measures
// and prints; not a pass/fail test. The choice of kernel library is made from its output
// (docs/dependencies.md).
//
//   build/bench/bench_gemm [--threads K] [--rounds R] [--seconds S] [--json]
//
// Each round times every kernel on every size once, one after the other, so that the rounds
// are side by side; a timing repeats the product for at least S seconds (default 0.2). Printed:
// the median GFLOP/s over R rounds (default 5) and their range. "bf16 + convert" also rounds
// both fp32 operands to bf16 (oneDNN reorders) on every call: the cost of multiplying in bf16
// operands that are kept in fp32. "zerodp gemm() oneDNN fp32" is the same primitive through
// zerodp's kernel layer: what it adds to a call. "zerodp bf16 gemm()" is the GPT's own bf16
// product: gemm() on
// bf16_kernel(), oneDNN's where the CPU multiplies bf16, the emulation elsewhere. --json: one
// line per product and kernel instead of the table.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <string>
#include <vector>

#include "zerodp/common/rng.h"
#include "zerodp/model/gemm.h"

using zerodp::model::Trans;

namespace {

using dt = dnnl::memory::data_type;

struct Case {
  const char* name;
  Trans ta, tb;
  dnnl::memory::dim m, n, k;
  float beta;  // 1: accumulates into C, as a weight gradient does
};

// The model's products (src/model/layers.cc): out = inp W^T, dinp = dout W, dW += dout^T inp.
const Case kCases[] = {
    {"1024^3", Trans::no, Trans::no, 1024, 1024, 1024, 0.0f},
    {"qkv forward", Trans::no, Trans::yes, 1024, 768, 256, 0.0f},
    {"fc forward", Trans::no, Trans::yes, 1024, 1024, 256, 0.0f},
    {"proj forward", Trans::no, Trans::yes, 1024, 256, 1024, 0.0f},
    {"fc dinp", Trans::no, Trans::no, 1024, 256, 1024, 0.0f},
    {"fc dweight", Trans::yes, Trans::no, 1024, 256, 1024, 1.0f},
    // One head's attention (src/model/attention.cc), 64 queries against 128 keys, head size
    // 64: small products, where a call's fixed cost shows.
    {"attn scores", Trans::no, Trans::yes, 64, 128, 64, 0.0f},
    {"attn mixing", Trans::no, Trans::no, 64, 64, 128, 0.0f},
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

bool cpu_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
}

// The stored, row-major operand op(X) = [rows x cols] reads: X itself, or its transpose.
dnnl::memory::desc operand(dnnl::memory::dim rows, dnnl::memory::dim cols, Trans t, dt type) {
  return t == Trans::no ? dnnl::memory::desc({rows, cols}, type, {cols, 1})
                        : dnnl::memory::desc({rows, cols}, type, {1, rows});
}

// One oneDNN matmul, its primitive created once (as a kernel layer would cache it).
struct OneDnnProduct {
  OneDnnProduct(const dnnl::engine& engine, const Case& c, dt input) {
    const dnnl::memory::desc a = operand(c.m, c.k, c.ta, input);
    const dnnl::memory::desc b = operand(c.k, c.n, c.tb, input);
    const dnnl::memory::desc out({c.m, c.n}, dt::f32, {c.n, 1});
    dnnl::primitive_attr attr;
    if (c.beta != 0.0f) {
      dnnl::post_ops sum;
      sum.append_sum(c.beta);
      attr.set_post_ops(sum);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, out), attr, engine);
    kernel = pd.impl_info_str();
    product = dnnl::matmul(pd);
    a_md = a;
    b_md = b;
    out_md = out;
  }
  dnnl::matmul product;
  dnnl::memory::desc a_md, b_md, out_md;
  std::string kernel;
};

double seconds_per_call(const std::function<void()>& call, double at_least) {
  call();  // warm-up: page faults, the library's buffers
  int calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0.0;
  do {
    call();
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < at_least);
  return elapsed / calls;
}

struct Series {
  std::string kernel;
  std::vector<double> gflops;  // one per round
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int parse_int(const char* flag, const char* text, int low) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < low || v > 1024) {
    std::fprintf(stderr, "bench_gemm: %s: expected a whole number from %d to 1024, got '%s'\n",
                 flag, low, text);
    std::exit(2);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, rounds = 5;
  double at_least = 0.2;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
      continue;
    }
    const bool takes_value = a == "--threads" || a == "--rounds" || a == "--seconds";
    if (takes_value && i + 1 >= argc) {
      std::fprintf(stderr, "bench_gemm: %s: expected a value after it\n", a.c_str());
      return 2;
    }
    if (a == "--threads") {
      threads = parse_int("--threads", argv[++i], 1);
    } else if (a == "--rounds") {
      rounds = parse_int("--rounds", argv[++i], 1);
    } else if (a == "--seconds") {
      at_least = parse_int("--seconds (tenths)", argv[++i], 1) / 10.0;
    } else {
      std::fprintf(stderr,
                   "bench_gemm: unknown argument %s (--threads, --rounds, --seconds, --json)\n",
                   a.c_str());
      return 2;
    }
  }
  zerodp::model::set_blas_threads(threads);
  omp_set_num_threads(threads);
  const dnnl_version_t* v = dnnl_version();
  if (!json)
    std::printf("CPU: %s; avx512_bf16: %s, amx_bf16: %s\n", cpu_model().c_str(),
                cpu_flag("avx512_bf16") ? "yes" : "no", cpu_flag("amx_bf16") ? "yes" : "no");
  if (!json)
    std::printf(
        "OpenBLAS core %s, oneDNN %d.%d.%d; %d threads each; %d rounds of >= %.1f s a "
        "kernel\n\n",
        zerodp::model::blas_core_name(), v->major, v->minor, v->patch, threads, rounds, at_least);

  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  for (const Case& c : kCases) {
    const std::size_t m = c.m, n = c.n, k = c.k;
    std::vector<float> a(m * k), b(k * n), out(m * n, 0.0f);
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = zerodp::counter_normal(1, 0, i);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = zerodp::counter_normal(2, 0, i);
    const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * k;

    std::vector<std::pair<std::string, std::function<void()>>> kernels;
    std::vector<std::string> names;
    const std::size_t lda = c.ta == Trans::no ? k : m, ldb = c.tb == Trans::no ? n : k;
    kernels.emplace_back("OpenBLAS sgemm", [&, lda, ldb] {
      zerodp::model::gemm(c.ta, c.tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, c.beta,
                          out.data(), n);
    });
    names.push_back(std::string("sgemm ") + zerodp::model::blas_core_name());

    const OneDnnProduct f32(engine, c, dt::f32);
    dnnl::memory a32(f32.a_md, engine, a.data()), b32(f32.b_md, engine, b.data()),
        out32(f32.out_md, engine, out.data());
    kernels.emplace_back("oneDNN fp32", [&] {
      f32.product.execute(stream,
                          {{DNNL_ARG_SRC, a32}, {DNNL_ARG_WEIGHTS, b32}, {DNNL_ARG_DST, out32}});
      stream.wait();
    });
    names.push_back(f32.kernel);
    // The same through zerodp's gemm(): the primitive from its cache, with the scratch it asks
    // for (oneDNN's scratchpad: without it gemm() would run the product on OpenBLAS). Beside
    // "oneDNN fp32", what the kernel layer adds to each call.
    std::vector<float> scratch32(zerodp::model::gemm_scratch_floats(
        zerodp::model::GemmKernel::onednn, zerodp::model::Compute::fp32, c.ta, c.tb, m, n, k,
        1.0f, lda, ldb, c.beta, n));
    kernels.emplace_back("zerodp gemm() oneDNN fp32", [&, lda, ldb] {
      zerodp::model::gemm(
          {zerodp::model::Compute::fp32, scratch32, zerodp::model::GemmKernel::onednn}, c.ta,
          c.tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, c.beta, out.data(), n);
    });
    names.push_back("cached " + f32.kernel);

    // bf16: the primitive exists only where oneDNN has bf16 kernels for this CPU.
    std::optional<OneDnnProduct> bf16;
    std::string bf16_missing;
    try {
      bf16.emplace(engine, c, dt::bf16);
    } catch (const dnnl::error& e) {
      bf16_missing = e.what();
    }
    dnnl::memory a16, b16;
    std::optional<dnnl::reorder> round_a, round_b;
    if (bf16) {
      a16 = dnnl::memory(bf16->a_md, engine);
      b16 = dnnl::memory(bf16->b_md, engine);
      round_a.emplace(a32, a16);
      round_b.emplace(b32, b16);
      round_a->execute(stream, a32, a16);
      round_b->execute(stream, b32, b16);
      stream.wait();
      kernels.emplace_back("oneDNN bf16", [&] {
        bf16->product.execute(
            stream, {{DNNL_ARG_SRC, a16}, {DNNL_ARG_WEIGHTS, b16}, {DNNL_ARG_DST, out32}});
        stream.wait();
      });
      names.push_back(bf16->kernel);
      kernels.emplace_back("oneDNN bf16 + convert", [&] {
        round_a->execute(stream, a32, a16);
        round_b->execute(stream, b32, b16);
        bf16->product.execute(
            stream, {{DNNL_ARG_SRC, a16}, {DNNL_ARG_WEIGHTS, b16}, {DNNL_ARG_DST, out32}});
        stream.wait();
      });
      names.push_back("reorders + " + bf16->kernel);
    }

    // zerodp's own bf16 products, as the GPT makes them (gemm() on bf16_kernel(): oneDNN's
    // where the CPU multiplies bf16, the emulation elsewhere), the rounding of the fp32
    // operands into the scratch included.
    const zerodp::model::GemmKernel kernel16 = zerodp::model::bf16_kernel();
    std::vector<float> scratch(zerodp::model::gemm_scratch_floats(
        kernel16, zerodp::model::Compute::bf16, c.ta, c.tb, m, n, k, 1.0f, lda, ldb, c.beta, n));
    kernels.emplace_back("zerodp bf16 gemm()", [&, lda, ldb] {
      zerodp::model::gemm({zerodp::model::Compute::bf16, scratch, kernel16}, c.ta, c.tb, m, n, k,
                          1.0f, a.data(), lda, b.data(), ldb, c.beta, out.data(), n);
    });
    names.push_back(kernel16 == zerodp::model::GemmKernel::onednn ? "oneDNN bf16, rounds operands"
                                                                  : "emulated: rounds, then sgemm");

    std::vector<Series> series(kernels.size());
    for (int r = 0; r < rounds; ++r) {
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        series[i].gflops.push_back(flops / seconds_per_call(kernels[i].second, at_least) * 1e-9);
      }
    }
    if (json) {
      for (std::size_t i = 0; i < kernels.size(); ++i) {
        const auto [lo, hi] = std::minmax_element(series[i].gflops.begin(), series[i].gflops.end());
        std::printf(
            "{\"case\": \"%s\", \"m\": %zu, \"n\": %zu, \"k\": %zu, \"kernel\": \"%s\", "
            "\"implementation\": \"%s\", \"gflops\": %.2f, \"min\": %.2f, \"max\": %.2f, "
            "\"threads\": %d}\n",
            c.name, m, n, k, kernels[i].first.c_str(), names[i].c_str(), median(series[i].gflops),
            *lo, *hi, threads);
      }
      continue;
    }
    std::printf("%s: m %zu, n %zu, k %zu, op(A) %s, op(B) %s%s\n", c.name, m, n, k,
                c.ta == Trans::no ? "A" : "A^T", c.tb == Trans::no ? "B" : "B^T",
                c.beta != 0.0f ? ", C +=" : "");
    const double base = median(series[0].gflops);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const auto [lo, hi] = std::minmax_element(series[i].gflops.begin(), series[i].gflops.end());
      const double med = median(series[i].gflops);
      std::printf("  %-22s %7.1f GFLOP/s (%.1f-%.1f)  %.2fx sgemm   [%s]\n",
                  kernels[i].first.c_str(), med, *lo, *hi, med / base, names[i].c_str());
    }
    if (!bf16)
      std::printf("  %-22s unavailable on this CPU (%s)\n", "oneDNN bf16", bf16_missing.c_str());
    std::printf("\n");
  }
  return 0;
}

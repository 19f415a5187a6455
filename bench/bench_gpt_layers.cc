// Time of the GPT's forward + backward on one rank, whole and layer by layer, on the issue's
// benchmark configuration (4 layers, 4 heads, hidden 256, context 128, micro-batch 8).
// Measures and prints; not a pass/fail test.
//
//   build/bench/bench_gpt_layers [--layers L --heads H --hidden C --seq-len T
//                                 --micro-batch B --steps N --threads K --checkpoint --cpu
//                                 --compute fp32|bf16]
//
// OpenBLAS threads default to OpenBLAS's own choice; --threads sets them (oneDNN's bf16
// products run on as many). --compute: the products' type, as GptConfig::compute (fp32 by
// default); bf16 runs on bf16_kernel(), each product's rounding of its operands included.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "zerodp/common/rng.h"
#include "zerodp/model/gemm.h"
#include "zerodp/model/gpt.h"
#include "zerodp/model/layers.h"

using namespace zerodp::model;

namespace {

double cpu_now() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// --cpu: process CPU time instead of wall time. On a machine shared with other work, CPU time
// with one BLAS thread is a steadier estimate of what the code costs.
bool g_cpu_time = false;

double seconds_of(const std::function<void()>& f, int repeat) {
  f();  // warm-up: page faults, BLAS buffers
  const auto t0 = std::chrono::steady_clock::now();
  const double c0 = cpu_now();
  for (int i = 0; i < repeat; ++i) f();
  if (g_cpu_time) return (cpu_now() - c0) / repeat;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeat;
}

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = zerodp::counter_normal(seed, 0, i) * 0.5f;
  return v;
}

struct Args {
  GptConfig c;
  std::size_t B = 8;
  int steps = 20, threads = 0;
};

// Returns false (after saying why) on an argument it does not know.
bool parse_args(int argc, char** argv, Args& args) {
  GptConfig& c = args.c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (a == "--layers") {
      c.layers = next();
    } else if (a == "--heads") {
      c.heads = next();
    } else if (a == "--hidden") {
      c.hidden = next();
    } else if (a == "--seq-len") {
      c.seq_len = next();
    } else if (a == "--micro-batch") {
      args.B = static_cast<std::size_t>(next());
    } else if (a == "--steps") {
      args.steps = next();
    } else if (a == "--threads") {
      args.threads = next();
    } else if (a == "--checkpoint") {
      c.checkpoint_activations = true;
    } else if (a == "--cpu") {
      g_cpu_time = true;
    } else if (a == "--compute" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v != "fp32" && v != "bf16") {
        std::fprintf(stderr, "--compute: expected fp32 or bf16, got '%s'\n", v.c_str());
        return false;
      }
      c.compute = v == "bf16" ? Compute::bf16 : Compute::fp32;
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return false;
    }
  }
  return true;
}

// Seconds of one forward + backward of the whole model; prints the line that says so.
double time_whole_model(const Args& args) {
  const GptConfig& c = args.c;
  const std::size_t B = args.B;
  GptModel model(c);
  std::vector<float> params(model.param_count()), grads(params.size());
  init_all(model, params, 1);
  std::vector<std::uint8_t> windows(B * (c.seq_len + 1));
  for (std::size_t i = 0; i < windows.size(); ++i) windows[i] = static_cast<std::uint8_t>(i * 31);
  const double step = seconds_of(
      [&] {
        model.begin_micro_batch({.samples = B, .tokens = windows});
        forward_backward_all(model, params, grads);
      },
      args.steps);
  const double tokens = static_cast<double>(B) * c.seq_len;
  const double flops = 6.0 * static_cast<double>(c.param_count()) * tokens +
                       12.0 * c.layers * tokens * c.seq_len * c.hidden;  // attention, full T^2
  std::printf(
      "forward+backward: %.2f ms/micro-batch, %.0f tokens/s, %.1f GFLOP/s "
      "(6 N tokens + attention), activations %.1f MB\n",
      step * 1e3, tokens / step, flops / step * 1e-9, model.activation_bytes() * 1e-6);
  return step;
}

// The layers one at a time, at one block's shapes, on random inputs; times are per
// micro-batch, all L blocks.
class LayerBench {
 public:
  explicit LayerBench(const Args& args)
      : BT(args.B * args.c.seq_len),
        C(args.c.hidden),
        T(args.c.seq_len),
        NH(args.c.heads),
        L(args.c.layers),
        B(args.B),
        x(random_floats(BT * 4 * C, 1)),
        y(random_floats(BT * 4 * C, 2)),
        w(random_floats(4 * C * C, 3)),
        dw(random_floats(4 * C * C, 4)),
        bias(random_floats(4 * C, 5)),
        dbias(random_floats(4 * C, 6)),
        dx(random_floats(BT * 4 * C, 7)),
        qkv(random_floats(BT * 3 * C, 8)),
        slope(random_floats(BT * 4 * C, 9)),
        residual(random_floats(BT * C, 10)),
        att(B * NH * T * T),
        scratch(T * T),
        stats(2 * BT),
        targets(BT, 7),
        gemm_scratch(args.c.gemm_scratch_floats(BT)),
        how{args.c.compute, gemm_scratch,
            args.c.compute == Compute::bf16 ? bf16_kernel() : GemmKernel::openblas} {}

  void run_all() {
    matmul("matmul c_attn (C -> 3C)", C, 3 * C, false);
    matmul("matmul attn c_proj + residual (C -> C)", C, C, true);
    matmul("matmul c_fc (C -> 4C)", C, 4 * C, false);
    matmul("matmul mlp c_proj + residual (4C -> C)", 4 * C, C, true);
    attention();
    layernorm();
    gelu();
    head();
  }

  // The table, and the sum of the layers against the whole step.
  void print(double step) const {
    double total = 0, gemm = 0;
    std::printf("\n%-40s %10s %10s\n", "layer (all blocks)", "fwd ms", "bwd ms");
    for (const auto& row : rows_) {
      std::printf("%-40s %10.3f %10.3f\n", row.name, row.fwd * 1e3, row.bwd * 1e3);
      total += row.fwd + row.bwd;
      if (row.gemm) gemm += row.fwd + row.bwd;
    }
    std::printf("%-40s %10.3f ms (whole step measured: %.3f ms); GEMM-based layers %.0f %%\n",
                "sum of layers", total * 1e3, step * 1e3, 100 * gemm / total);
  }

 private:
  struct Row {
    const char* name;
    double fwd, bwd;
    bool gemm;
  };
  static constexpr int kRepeat = 5;
  static constexpr std::size_t V = 256;

  // Times fwd and bwd, `times` calls each per micro-batch.
  void add(const char* name, double times, bool gemm, const std::function<void()>& fwd,
           const std::function<void()>& bwd) {
    rows_.push_back(
        {name, times * seconds_of(fwd, kRepeat), times * seconds_of(bwd, kRepeat), gemm});
  }

  // The projections into the residual stream add it inside their GEMM, as the GPT does.
  void matmul(const char* name, std::size_t in, std::size_t out, bool adds_residual) {
    add(
        name, double(L), true,
        [&] {
          if (adds_residual) {
            matmul_residual_forward(y.data(), residual.data(), x.data(), w.data(), bias.data(), BT,
                                    in, out, how);
          } else {
            matmul_forward(y.data(), x.data(), w.data(), bias.data(), BT, in, out, how);
          }
        },
        [&] {
          matmul_backward(dx.data(), dw.data(), dbias.data(), y.data(), x.data(), w.data(), BT, in,
                          out, how);
        });
  }

  void attention() {
    add(
        "attention", double(L), true,
        [&] { attention_forward(y.data(), att.data(), qkv.data(), B, T, C, NH, how); },
        [&] {
          attention_backward(dx.data(), scratch.data(), y.data(), qkv.data(), att.data(), B, T, C,
                             NH, how);
        });
  }

  void layernorm() {
    add(
        "layernorm x2", 2.0 * double(L), false,
        [&] {
          layernorm_forward(y.data(), stats.data(), stats.data() + BT, x.data(), w.data(),
                            bias.data(), BT, C);
        },
        [&] {
          layernorm_backward(dx.data(), dw.data(), dbias.data(), y.data(), x.data(), w.data(),
                             stats.data(), stats.data() + BT, BT, C);
        });
  }

  // The GELU pair the GPT uses: the slope kept by the forward, the c_fc bias gradient summed
  // by the backward.
  void gelu() {
    add(
        "gelu (+ c_fc bias grad)", double(L), false,
        [&] { gelu_forward_keep_slope(y.data(), slope.data(), x.data(), BT * 4 * C); },
        [&] {
          gelu_backward_from_slope(dx.data(), dbias.data(), slope.data(), y.data(), BT, 4 * C);
        });
  }

  void head() {
    add(
        "lm head matmul (C -> 256)", 1.0, true,
        [&] { matmul_forward(y.data(), x.data(), w.data(), nullptr, BT, C, V, how); },
        [&] {
          matmul_backward(dx.data(), dw.data(), nullptr, y.data(), x.data(), w.data(), BT, C, V,
                          how);
        });
    add(
        "softmax + cross-entropy", 1.0, false,
        [&] { crossentropy_softmax_forward(y.data(), dx.data(), x.data(), targets.data(), BT, V); },
        [&] { crossentropy_softmax_backward(dx.data(), y.data(), targets.data(), 1.0f, BT, V); });
  }

  const std::size_t BT, C, T, NH, L, B;
  std::vector<float> x, y, w, dw, bias, dbias, dx, qkv, slope, residual, att, scratch, stats;
  std::vector<std::uint8_t> targets;
  std::vector<float> gemm_scratch;  // bf16: what each product rounds its operands into
  GemmCompute how;
  std::vector<Row> rows_;
};

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) return 2;
  args.c.validate();
  if (args.threads > 0) set_blas_threads(args.threads);
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf(
      "%s, micro-batch %zu; BLAS threads %d, OPENBLAS_CORETYPE=%s; %s products on %s; %s time\n",
      GptModel(args.c).describe().c_str(), args.B, blas_threads(), coretype ? coretype : "(unset)",
      std::string(compute_name(args.c.compute)).c_str(),
      std::string(
          gemm_kernel_name(args.c.compute == Compute::bf16 ? bf16_kernel() : GemmKernel::openblas))
          .c_str(),
      g_cpu_time ? "CPU" : "wall");
  const double step = time_whole_model(args);
  LayerBench layers(args);
  layers.run_all();
  layers.print(step);
  return 0;
}

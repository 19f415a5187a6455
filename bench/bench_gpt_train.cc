// Training speed of the byte-level GPT under the ZeRO engine: tokens/s for stages 0-3 at
// N = 1, 2, 4 thread ranks, on the fixed configuration (vocab 256, context 128,
// 4 layers, 4 heads, hidden 256, micro-batch 8 per rank: 3,257,856 parameters), bf16 params,
// AdamW, clipping at 1.0, as `zerodp train` runs it. Measures and prints; not a pass/fail test.
//
//   build/bench/bench_gpt_train [--stages 0,1,2,3] [--ranks 1,2,4] [--configs S:N,...]
//                               [--warmup 3] [--steps 5] [--repeats 5] [--model-threads P]
//                               [--blas-threads K] [--micro-batch 8] [--compute fp32|bf16]
//                               [--cpu] [--json]
//
// For each (stage, N): --warmup steps are run and dropped, then --repeats blocks of --steps
// steps are timed between barriers; the median block gives tokens/s (global tokens: N x
// micro-batch x context per step), min and max beside it.
// Threads: when N > 1, one per rank, in the GEMMs as elsewhere (cores / N OpenBLAS threads, at
// least 1; `zerodp train --threads auto` gives each rank cores / N model threads with one
// OpenBLAS thread each instead, the same where N >= the cores: run::model_threads). At N = 1
// the rank's GptModel computes on --model-threads threads (default: the cores; see
// GptModel::set_threads) with one OpenBLAS thread each; with --model-threads 1 it computes on
// one thread and its GEMMs use OpenBLAS's default (OPENBLAS_NUM_THREADS, else the cores) or
// --blas-threads.
//
// --compute: what the products multiply in (GptConfig::compute; fp32 by default, the bits of
// `zerodp train --compute fp32`). bf16 runs on the GPT's bf16 kernel (zerodp/model/gemm.h):
// oneDNN's where the CPU multiplies bf16, the emulation elsewhere; its time inside gemm()
// includes the rounding of both operands.
//
// Time. Wall clock by default. --cpu, for a machine shared with other work: a block's time is
// the larger of two lower bounds of the wall time it would take on an idle machine, both from
// CPU time, which other processes barely move: the process's CPU time over the cores the run
// uses (min(N x BLAS threads, cores)), and the CPU time of the busiest rank thread.
//
// Columns: GEMM share is the compute threads' time inside gemm() over their time in the block:
// wall, over wall x threads; with --cpu, their CPU time inside gemm() (times the BLAS threads
// per call) over the process's CPU time. In bf16 it includes the rounding of the operands,
// which JSON's convert_share gives alone (on the calling thread, not times the threads). GFLOP/s
// counts the model's work, 6 Φ per token (forward 2 Φ, backward 4 Φ) + causal attention 6 L T C per
// token (the T x T scores and the mixing, each over the T (T+1) / 2 visible pairs, forward and
// backward): the same count whatever the implementation does. "GEMM/core" divides the flops sgemm
// actually ran by the time spent inside it, per core. Exposed comm is the engine's time blocked on
// collectives, over the block's time, averaged over ranks. Optimizer is the step's optimizer
// phase (StepResult::optimizer_seconds: the gradient norm, AdamW, the rounding to 16-bit
// params), over the block's wall time, averaged over ranks; it runs on the rank's own thread,
// so at N = 1 the model's other threads wait through it.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/data/samples.h"
#include "zerodp/model/gemm.h"
#include "zerodp/model/gpt.h"
#include "zerodp/zero/engine.h"

namespace {

using namespace zerodp;

double process_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Args {
  std::vector<std::pair<int, int>> configs;  // (stage, ranks)
  int warmup = 3, steps = 5, repeats = 5, blas_threads = 0, model_threads = 0;
  std::size_t micro_batch = 8;
  model::Compute compute = model::Compute::fp32;
  bool cpu = false, json = false;
};

// One timed block, as every rank saw it.
struct RankBlock {
  double wall = 0, thread_cpu = 0, exposed = 0, optimizer = 0;
};
// And as the process saw it (rank 0 measures, between barriers).
struct ProcessBlock {
  double cpu = 0, gemm_seconds = 0, gemm_flops = 0, convert_seconds = 0;
};

struct Result {
  int stage = 0, ranks = 1, model_threads = 1, blas_threads = 1, cores_used = 1;
  std::vector<double> tokens_per_second;  // per block
  double step_seconds = 0, gemm_share = 0, convert_share = 0, gflops = 0, gemm_gflops = 0,
         exposed_share = 0, optimizer_share = 0;
};

std::vector<int> parse_list(const char* flag, const std::string& text) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    char* stop = nullptr;
    const long v = std::strtol(item.c_str(), &stop, 10);
    if (item.empty() || *stop != '\0' || v < 0) {
      std::fprintf(stderr, "%s: expected a list such as 0,1,2, got '%s'\n", flag, text.c_str());
      std::exit(2);
    }
    out.push_back(static_cast<int>(v));
    at = end + 1;
  }
  return out;
}

// "0:1,3:2": the (stage, ranks) pairs to run.
std::vector<std::pair<int, int>> parse_configs(const std::string& v) {
  std::vector<std::pair<int, int>> configs;
  std::size_t at = 0;
  while (at <= v.size()) {
    const std::size_t end = std::min(v.find(',', at), v.size());
    int stage = -1, n = 0;
    char tail = 0;
    if (std::sscanf(v.substr(at, end - at).c_str(), "%d:%d%c", &stage, &n, &tail) != 2) {
      std::fprintf(stderr, "--configs: expected STAGE:RANKS,... such as 0:1,3:2, got '%s'\n",
                   v.c_str());
      std::exit(2);
    }
    configs.emplace_back(stage, n);
    at = end + 1;
  }
  return configs;
}

int parse_whole(const std::string& flag, const std::string& v, int min) {
  char* stop = nullptr;
  const long n = std::strtol(v.c_str(), &stop, 10);
  if (v.empty() || *stop != '\0' || n < min) {
    std::fprintf(stderr, "%s: expected a whole number >= %d, got '%s'\n", flag.c_str(), min,
                 v.c_str());
    std::exit(2);
  }
  return static_cast<int>(n);
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<int> stages = {0, 1, 2, 3}, ranks = {1, 2, 4};
  bool explicit_configs = false;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s: expected a value\n", s.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    auto whole = [&](int min) { return parse_whole(s, value(), min); };
    if (s == "--stages") {
      stages = parse_list("--stages", value());
    } else if (s == "--ranks") {
      ranks = parse_list("--ranks", value());
    } else if (s == "--configs") {
      for (auto config : parse_configs(value())) a.configs.push_back(config);
      explicit_configs = true;
    } else if (s == "--warmup") {
      a.warmup = whole(0);
    } else if (s == "--steps") {
      a.steps = whole(1);
    } else if (s == "--repeats") {
      a.repeats = whole(1);
    } else if (s == "--model-threads") {
      a.model_threads = whole(1);
    } else if (s == "--blas-threads") {
      a.blas_threads = whole(1);
    } else if (s == "--micro-batch") {
      a.micro_batch = static_cast<std::size_t>(whole(1));
    } else if (s == "--compute") {
      const std::string v = value();
      if (v != "fp32" && v != "bf16") {
        std::fprintf(stderr, "--compute: expected fp32 or bf16, got '%s'\n", v.c_str());
        std::exit(2);
      }
      a.compute = v == "bf16" ? model::Compute::bf16 : model::Compute::fp32;
    } else if (s == "--cpu") {
      a.cpu = true;
    } else if (s == "--json") {
      a.json = true;
    } else {
      std::fprintf(stderr,
                   "unknown argument %s (see the comment at the top of bench_gpt_train.cc)\n",
                   s.c_str());
      std::exit(2);
    }
  }
  if (!explicit_configs) {
    for (int st : stages)
      for (int n : ranks) a.configs.emplace_back(st, n);
  }
  for (auto [st, n] : a.configs) {
    if (st < 0 || st > 3 || n < 1 || n > 64) {
      std::fprintf(stderr, "stage %d on %d ranks: stages are 0-3, ranks 1-64\n", st, n);
      std::exit(2);
    }
  }
  return a;
}

// Threads for one configuration: one rank alone splits its micro-batch over model threads
// (one OpenBLAS thread each) unless told otherwise; several ranks share the cores.
void assign_threads(const Args& args, int default_threads, int cores, Result& r) {
  r.model_threads = r.ranks == 1 ? (args.model_threads > 0 ? args.model_threads : cores) : 1;
  if (r.ranks > 1) {
    r.blas_threads = std::max(1, cores / r.ranks);
  } else if (r.model_threads > 1) {
    r.blas_threads = 1;
  } else {
    r.blas_threads = args.blas_threads > 0 ? args.blas_threads : default_threads;
  }
  r.cores_used = std::min(r.ranks * r.model_threads * r.blas_threads, cores);
  model::set_blas_threads(r.blas_threads);
}

// Times args.repeats blocks of args.steps steps on every rank, after the warm-up steps.
void time_blocks(const Args& args, const model::GptConfig& cfg, const data::SampleSource& samples,
                 const Result& r, std::vector<std::vector<RankBlock>>& blocks,
                 std::vector<ProcessBlock>& process) {
  zero::EngineOptions opt;
  opt.stage = stage_from_number(r.stage);
  opt.micro_batch = args.micro_batch;
  opt.clip_norm = 1.0f;
  comm::run_thread_ranks(r.ranks, comm::Options{}, [&](comm::Communicator& comm) {
    model::GptModel model(cfg);
    model.set_threads(r.model_threads);
    zero::Engine engine(model, comm, samples, opt);
    engine.set_threads(std::max(1, r.cores_used / r.ranks));  // a rank's cores, as `zerodp train`
    const int rank = comm.rank();
    for (int i = 0; i < args.warmup; ++i) engine.step(1e-3f);
    for (int b = 0; b < args.repeats; ++b) {
      RankBlock& rb = blocks[rank][b];
      comm.barrier();
      const double c0 = process_cpu_seconds(), t0 = thread_cpu_seconds(), w0 = wall_seconds();
      const model::GemmStats g0 = model::gemm_stats();  // read by rank 0 only
      for (int s = 0; s < args.steps; ++s) {
        const zero::StepResult step = engine.step(1e-3f);
        rb.exposed += step.exposed_comm_seconds;
        rb.optimizer += step.optimizer_seconds;
      }
      engine.flush();  // stages 1-2: the param all-gathers of the last update
      comm.barrier();
      const model::GemmStats g1 = model::gemm_stats();
      rb.wall = wall_seconds() - w0;
      rb.thread_cpu = thread_cpu_seconds() - t0;
      if (rank == 0) {
        process[b] = {process_cpu_seconds() - c0, g1.seconds - g0.seconds, g1.flops - g0.flops,
                      g1.convert_seconds - g0.convert_seconds};
      }
    }
  });
}

// Rates and shares of the timed blocks: medians and means over the blocks.
void summarise(const Args& args, const model::GptConfig& cfg,
               const std::vector<std::vector<RankBlock>>& blocks,
               const std::vector<ProcessBlock>& process, Result& r) {
  const int ranks = r.ranks;
  const double tokens = double(ranks) * double(args.micro_batch) * cfg.seq_len * args.steps;
  const double flops_per_token =
      6.0 * double(cfg.param_count()) + 6.0 * cfg.layers * double(cfg.seq_len) * double(cfg.hidden);
  std::vector<double> block_seconds(args.repeats);
  double gemm_share = 0, convert_share = 0, gemm_rate = 0, exposed = 0, optimizer = 0;
  for (int b = 0; b < args.repeats; ++b) {
    const ProcessBlock& pb = process[b];
    double t = blocks[0][b].wall;
    if (args.cpu) {
      t = pb.cpu / r.cores_used;
      for (int k = 0; k < ranks; ++k) t = std::max(t, blocks[k][b].thread_cpu);
    }
    block_seconds[b] = t;
    r.tokens_per_second.push_back(tokens / t);
    const double threads = double(ranks) * r.model_threads;
    gemm_share += args.cpu ? pb.gemm_seconds * r.blas_threads / pb.cpu
                           : pb.gemm_seconds / (blocks[0][b].wall * threads);
    // The rounding runs on the calling thread alone, whatever the BLAS threads.
    convert_share +=
        args.cpu ? pb.convert_seconds / pb.cpu : pb.convert_seconds / (blocks[0][b].wall * threads);
    gemm_rate += pb.gemm_flops / (pb.gemm_seconds * r.blas_threads);
    for (int k = 0; k < ranks; ++k) {
      exposed += blocks[k][b].exposed / blocks[k][b].wall;
      optimizer += blocks[k][b].optimizer / blocks[k][b].wall;
    }
  }
  const double n = double(args.repeats);
  r.step_seconds = median(block_seconds) / args.steps;
  r.gemm_share = gemm_share / n;
  r.convert_share = convert_share / n;
  r.gemm_gflops = gemm_rate / n * 1e-9;
  r.exposed_share = exposed / (n * ranks);
  r.optimizer_share = optimizer / (n * ranks);
  r.gflops = median(r.tokens_per_second) * flops_per_token * 1e-9;
}

Result run_config(const Args& args, const model::GptConfig& cfg, const data::SampleSource& samples,
                  int stage, int ranks, int default_threads, int cores) {
  Result r;
  r.stage = stage;
  r.ranks = ranks;
  assign_threads(args, default_threads, cores, r);
  std::vector<std::vector<RankBlock>> blocks(ranks, std::vector<RankBlock>(args.repeats));
  std::vector<ProcessBlock> process(args.repeats);
  time_blocks(args, cfg, samples, r, blocks, process);
  summarise(args, cfg, blocks, process, r);
  return r;
}

// OpenBLAS's sgemm on 1024^3 (best of 5) with `threads` threads, in GFLOP/s: the ceiling the
// GEMMs of the model run against. With --cpu, time is the process's CPU time over threads.
double sgemm_gflops(int threads, bool cpu) {
  const std::size_t n = 1024;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n, 0.0f);
  model::set_blas_threads(threads);
  double best = 1e30;
  for (int r = 0; r < 6; ++r) {
    const double w0 = wall_seconds(), c0 = process_cpu_seconds();
    model::gemm(model::Trans::no, model::Trans::no, n, n, n, 1.0f, a.data(), b.data(), 0.0f,
                c.data());
    const double t = cpu ? (process_cpu_seconds() - c0) / threads : wall_seconds() - w0;
    if (r > 0) best = std::min(best, t);  // the first call is a warm-up
  }
  return 2.0 * double(n) * double(n) * double(n) / best * 1e-9;
}

// The kernel the model's products run on: OpenBLAS in fp32; in bf16 the GPT's bf16_kernel().
const char* kernel_name(model::Compute compute) {
  if (compute == model::Compute::fp32) return "OpenBLAS";
  return model::bf16_kernel() == model::GemmKernel::onednn ? "oneDNN bf16" : "OpenBLAS, emulated";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return std::string(v ? v : "(unset)");
}

// What the figures depend on: the BLAS, its kernels, the cores, the sgemm ceiling.
void print_environment(const Args& args, const model::GptConfig& cfg, int cores,
                       int default_threads) {
  const double sgemm_one = sgemm_gflops(1, args.cpu), sgemm_all = sgemm_gflops(cores, args.cpu);
  if (args.json) {
    std::printf(
        "{\"environment\": {\"OPENBLAS_CORETYPE\": \"%s\", \"OPENBLAS_L2_SIZE\": \"%s\", "
        "\"OPENBLAS_NUM_THREADS\": \"%s\", \"openblas_core\": \"%s\", \"cores\": %d, "
        "\"blas_threads_default\": %d, \"sgemm_gflops_1_thread\": %.1f, "
        "\"sgemm_gflops_all_threads\": %.1f, \"compute\": \"%s\", \"kernel\": \"%s\", "
        "\"time\": \"%s\"}}\n",
        env("OPENBLAS_CORETYPE").c_str(), env("OPENBLAS_L2_SIZE").c_str(),
        env("OPENBLAS_NUM_THREADS").c_str(), model::blas_core_name(), cores, default_threads,
        sgemm_one, sgemm_all, std::string(model::compute_name(args.compute)).c_str(),
        kernel_name(args.compute), args.cpu ? "cpu" : "wall");
    return;
  }
  std::printf(
      "zerodp bench_gpt_train: %s: %zu parameters, micro-batch %zu per rank, bf16 params, %s "
      "products on %s\n",
      cfg.describe().c_str(), cfg.param_count(), args.micro_batch,
      std::string(model::compute_name(args.compute)).c_str(), kernel_name(args.compute));
  std::printf(
      "environment: OPENBLAS_CORETYPE=%s, OPENBLAS_L2_SIZE=%s, OPENBLAS_NUM_THREADS=%s; "
      "OpenBLAS core %s, %d BLAS threads by default; %d cores\n",
      env("OPENBLAS_CORETYPE").c_str(), env("OPENBLAS_L2_SIZE").c_str(),
      env("OPENBLAS_NUM_THREADS").c_str(), model::blas_core_name(), default_threads, cores);
  std::printf("OpenBLAS sgemm 1024^3: %.1f GFLOP/s on 1 thread, %.1f on %d\n", sgemm_one, sgemm_all,
              cores);
  std::printf(
      "%s: median of %d blocks of %d steps after %d warm-up steps\n",
      args.cpu ? "CPU time (larger of process CPU / cores used, busiest rank thread)" : "wall time",
      args.repeats, args.steps, args.warmup);
  std::printf(
      "threads: per rank, model threads x OpenBLAS threads; GFLOP/s: 6 x params + 6 L T C "
      "(causal attention) per token\n\n");
  std::printf("%5s %3s %7s %9s %17s %8s %6s %8s %10s %7s %9s\n", "stage", "N", "threads",
              "tokens/s", "(min - max)", "ms/step", "GEMM", "GFLOP/s", "GEMM/core", "exposed",
              "optimizer");
}

void print_result(const Args& args, const Result& r) {
  const double tps = median(r.tokens_per_second);
  const auto [lo, hi] = std::minmax_element(r.tokens_per_second.begin(), r.tokens_per_second.end());
  if (args.json) {
    std::printf(
        "{\"stage\": %d, \"ranks\": %d, \"model_threads\": %d, \"blas_threads\": %d, "
        "\"tokens_per_second\": %.1f, "
        "\"min\": %.1f, \"max\": %.1f, \"step_ms\": %.3f, \"gemm_share\": %.4f, "
        "\"convert_share\": %.4f, "
        "\"gflops\": %.2f, \"gemm_gflops_per_core\": %.2f, \"exposed_comm_share\": %.4f, "
        "\"optimizer_share\": %.4f, \"compute\": \"%s\", \"kernel\": \"%s\", \"time\": \"%s\"}\n",
        r.stage, r.ranks, r.model_threads, r.blas_threads, tps, *lo, *hi, r.step_seconds * 1e3,
        r.gemm_share, r.convert_share, r.gflops, r.gemm_gflops, r.exposed_share, r.optimizer_share,
        std::string(model::compute_name(args.compute)).c_str(), kernel_name(args.compute),
        args.cpu ? "cpu" : "wall");
  } else {
    const std::string threads =
        std::to_string(r.model_threads) + "x" + std::to_string(r.blas_threads);
    std::printf("%5d %3d %7s %9.0f %8.0f - %6.0f %8.1f %5.0f%% %8.1f %10.1f %6.1f%% %8.1f%%\n",
                r.stage, r.ranks, threads.c_str(), tps, *lo, *hi, r.step_seconds * 1e3,
                100 * r.gemm_share, r.gflops, r.gemm_gflops, 100 * r.exposed_share,
                100 * r.optimizer_share);
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  model::GptConfig cfg;  // the configuration: the defaults
  cfg.compute = args.compute;
  const data::TextWindows samples(
      std::make_shared<const data::TextData>(
          data::TextData::default_corpus(static_cast<std::size_t>(cfg.seq_len))),
      1234);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int default_threads = model::blas_threads();
  model::set_gemm_clock(args.cpu ? model::GemmClock::thread_cpu : model::GemmClock::wall);
  print_environment(args, cfg, cores, default_threads);
  for (auto [stage, ranks] : args.configs) {
    print_result(args, run_config(args, cfg, samples, stage, ranks, default_threads, cores));
  }
  return 0;
}

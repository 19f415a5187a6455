#include "engine_flags.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "zerodp/error.h"
#include "zerodp/gemm.h"
#include "zerodp/units.h"

namespace zerodp::cli {

void add_engine_flags(CLI::App* app, EngineFlags& f, bool stage_flag) {
  if (stage_flag) app->add_option("--stage", f.stage, "ZeRO stage: 0 (DP), 1, 2 or 3 [3]");
  app->add_option("--ranks", f.ranks,
                  "ranks: threads of this process [4]; with --backend mpi, the MPI world size");
  app->add_option("--backend", f.backend, "threads (one process) or mpi (under mpirun) [threads]");
  app->add_option("--precision", f.precision, "16-bit format: bf16 or fp16 [bf16]");
  app->add_option("--bucket-bytes", f.bucket_bytes,
                  "bytes of 16-bit gradients or params one collective moves [8MiB]");
  app->add_option("--grad-accum", f.grad_accum, "micro-steps per optimizer step [1]");
  app->add_option("--micro-batch", f.micro_batch, "samples per rank per micro-step");
  app->add_option("--clip", f.clip, "clip the global gradient norm to this; 0 disables [1.0]");
  app->add_option("--seed", f.seed, "initialisation seed [1]");
  app->add_option("--timeout", f.timeout, "a collective not done by then fails [300s]");
  app->add_flag("--no-prefetch", f.no_prefetch, "stage 3: gather each unit only when needed");
  app->add_flag("--no-overlap", f.no_overlap, "wait for every collective as soon as issued");
}

double parse_real(const std::string& text, const std::string& flag, const std::string& expected,
                  bool zero_allowed) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const bool plain = !text.empty() && *end == '\0' &&
                     text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  if (!plain || !std::isfinite(v) || v < 0 || (v == 0 && !zero_allowed)) {
    throw UsageError(flag + ": expected " + expected + ", got '" + text + "'");
  }
  return v;
}

EngineOptions engine_options(const EngineFlags& f, std::size_t default_micro_batch) {
  EngineOptions o;
  o.stage = parse_stage(f.stage);
  if (f.precision == "bf16") {
    o.precision = DType::bf16;
  } else if (f.precision == "fp16") {
    o.precision = DType::f16;
  } else {
    throw UsageError("--precision: expected bf16 or fp16, got '" + f.precision + "'");
  }
  o.bucket_bytes = units::parse_bytes(f.bucket_bytes, "--bucket-bytes");
  if (o.bucket_bytes < 2) {
    throw UsageError("--bucket-bytes: expected a size of at least 2B (one 16-bit element), got '" +
                     f.bucket_bytes + "'");
  }
  o.grad_accum = static_cast<int>(units::parse_whole(f.grad_accum, "--grad-accum"));
  o.micro_batch = f.micro_batch.empty() ? default_micro_batch
                                        : units::parse_whole(f.micro_batch, "--micro-batch");
  o.clip_norm = static_cast<float>(
      parse_real(f.clip, "--clip", "a norm >= 0 such as 1.0 (0 disables clipping)", true));
  o.seed = units::parse_whole(f.seed, "--seed", units::Zero::allowed);
  o.prefetch = !f.no_prefetch;
  o.overlap = !f.no_overlap;
  o.validate();
  return o;
}

Launch launch_options(const EngineFlags& f) {
  Launch l;
  l.backend = f.backend;
  if (f.backend != "threads" && f.backend != "mpi") {
    throw UsageError("--backend: expected threads or mpi, got '" + f.backend + "'");
  }
#if !defined(ZERODP_HAVE_MPI)
  if (f.backend == "mpi") throw UsageError("--backend: this build of zerodp has no MPI backend");
#endif
  if (f.backend == "threads") {
    l.ranks = f.ranks.empty() ? 4 : static_cast<int>(units::parse_whole(f.ranks, "--ranks"));
    if (l.ranks > 1024) throw UsageError("--ranks: expected at most 1024 thread ranks");
  } else {
    l.ranks = f.ranks.empty() ? 0 : static_cast<int>(units::parse_whole(f.ranks, "--ranks"));
  }
  const double timeout = units::parse_seconds(f.timeout, "--timeout");
  l.options.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(timeout * 1e3)));
  l.agree = {{"--stage", f.stage},
             {"--precision", f.precision},
             {"--bucket-bytes", f.bucket_bytes},
             {"--grad-accum", f.grad_accum},
             {"--micro-batch", f.micro_batch},
             {"--clip", f.clip},
             {"--seed", f.seed},
             {"--timeout", f.timeout},
             {"--no-prefetch", f.no_prefetch ? "on" : "off"},
             {"--no-overlap", f.no_overlap ? "on" : "off"}};
  return l;
}

void configure_blas_threads(const Launch& launch) {
  int ranks_here = launch.ranks;
  if (launch.backend == "mpi") {
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    ranks_here = local ? std::atoi(local) : 1;
  }
  if (ranks_here <= 1) return;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  model::set_blas_threads(std::max(1, cores / ranks_here));
}

void run_ranks(const Launch& launch, const std::function<void(comm::Communicator&)>& fn) {
  if (launch.backend == "threads") {
    comm::run_thread_ranks(launch.ranks, launch.options, fn);
    return;
  }
#if defined(ZERODP_HAVE_MPI)
  std::unique_ptr<comm::Communicator> comm = comm::make_mpi_communicator(launch.options);
  if (launch.ranks != 0 && launch.ranks != comm->size()) {
    throw UsageError("--ranks: " + std::to_string(launch.ranks) +
                     " does not match the MPI world size " + std::to_string(comm->size()) +
                     " (set the ranks with mpirun -np)");
  }
  try {
    check_ranks_agree(*comm, launch.agree);
    fn(*comm);
  } catch (const UsageErrorOnEveryRank&) {
    throw;  // every rank throws it at the same point: nothing to abort
  } catch (const std::exception& e) {
    comm->abort(e.what());
    throw;
  }
#endif
}

}  // namespace zerodp::cli

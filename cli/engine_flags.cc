#include "engine_flags.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <thread>

#include <unistd.h>

#include "zerodp/error.h"
#include "zerodp/gemm.h"
#include "zerodp/plan_memory.h"
#include "zerodp/units.h"

namespace zerodp::cli {

void add_engine_flags(CLI::App* app, EngineFlags& f, bool stage_flag) {
  if (stage_flag) app->add_option("--stage", f.stage, "ZeRO stage: 0 (DP), 1, 2 or 3 [3]");
  app->add_option(
      "--ranks", f.ranks,
      "ranks: threads of this process, 1 to 1024 [4]; with --backend mpi, the MPI world size");
  app->add_option("--backend", f.backend, "threads (one process) or mpi (under mpirun) [threads]");
  app->add_option("--precision", f.precision, "16-bit format: bf16 or fp16 [bf16]");
  app->add_option("--bucket-bytes", f.bucket_bytes,
                  "bytes of 16-bit gradients or params one collective moves [8MiB]");
  app->add_option("--grad-accum", f.grad_accum, "micro-steps per optimizer step, 1 to 1000000 [1]");
  app->add_option("--micro-batch", f.micro_batch,
                  "samples per rank per micro-step (refused when memory cannot hold it)");
  app->add_option("--clip", f.clip, "clip the global gradient norm to this; 0 disables [1.0]");
  app->add_option("--seed", f.seed, "initialisation seed [1]");
  app->add_option("--timeout", f.timeout,
                  "a collective not done by then fails, 1ms to 7 days [300s]");
  app->add_option("--rank-memory", f.rank_memory,
                  "each rank's memory budget, e.g. 2GiB: an allocation above it ends the run "
                  "with the least N or stage that fits [none]");
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
  o.grad_accum =
      static_cast<int>(units::parse_whole_in(f.grad_accum, "--grad-accum", 1, kMaxGradAccum));
  // No count limit: what bounds a micro-batch is memory (check_memory()).
  o.micro_batch = f.micro_batch.empty() ? default_micro_batch
                                        : units::parse_whole(f.micro_batch, "--micro-batch");
  o.clip_norm = static_cast<float>(
      parse_real(f.clip, "--clip", "a norm >= 0 such as 1.0 (0 disables clipping)", true));
  o.seed = units::parse_whole(f.seed, "--seed", units::Zero::allowed);
  o.prefetch = !f.no_prefetch;
  o.overlap = !f.no_overlap;
  o.rank_memory = f.rank_memory.empty() ? 0 : units::parse_bytes(f.rank_memory, "--rank-memory");
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
  const bool threads = f.backend == "threads";
  const std::uint64_t max_ranks = threads ? kMaxThreadRanks : kMaxMpiRanks;
  l.ranks = f.ranks.empty()
                ? (threads ? 4 : 0)
                : static_cast<int>(units::parse_whole_in(f.ranks, "--ranks", 1, max_ranks));
  const double timeout =
      units::parse_seconds_in(f.timeout, "--timeout", kMinTimeoutSeconds, kMaxTimeoutSeconds);
  l.options.timeout = std::chrono::milliseconds(static_cast<long long>(std::ceil(timeout * 1e3)));
  l.agree = {{"--ranks", f.ranks.empty() ? "the world size" : f.ranks},
             {"--stage", f.stage},
             {"--precision", f.precision},
             {"--bucket-bytes", f.bucket_bytes},
             {"--grad-accum", f.grad_accum},
             {"--micro-batch", f.micro_batch},
             {"--clip", f.clip},
             {"--seed", f.seed},
             {"--timeout", f.timeout},
             {"--rank-memory", f.rank_memory.empty() ? "none" : f.rank_memory},
             {"--no-prefetch", f.no_prefetch ? "on" : "off"},
             {"--no-overlap", f.no_overlap ? "on" : "off"}};
  return l;
}

namespace {

using u128 = unsigned __int128;

// Ranks of this run on this machine, and in the whole run (for the stage's sharding).
std::pair<u128, u128> ranks_here_and_total(const Launch& launch) {
  if (launch.backend == "threads") return {u128(launch.ranks), u128(launch.ranks)};
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    const long n = v ? std::atol(v) : 0;
    return n > 0 ? u128(n) : u128(0);
  };
  const u128 here = env("OMPI_COMM_WORLD_LOCAL_SIZE") ? env("OMPI_COMM_WORLD_LOCAL_SIZE") : 1;
  u128 total = launch.ranks > 0 ? u128(launch.ranks) : env("OMPI_COMM_WORLD_SIZE");
  return {here, std::max(total, here)};
}

// The model state one rank of n holds: the planner's figure for the engine's 2, 2 and 12
// bytes per parameter. Past 2^64 / 16 parameters no machine holds it: the largest figure.
std::uint64_t model_state_per_rank(std::uint64_t params, u128 n, Stage stage) {
  if (params > std::numeric_limits<std::uint64_t>::max() / 16) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  const int ranks = static_cast<int>(std::min<u128>(n, std::numeric_limits<int>::max()));
  return plan::model_state_bytes(params, ranks, stage, plan::BytesPerParam{2, 2, 12});
}

std::uint64_t clamp64(u128 v) {
  return v > std::numeric_limits<std::uint64_t>::max() ? std::numeric_limits<std::uint64_t>::max()
                                                       : std::uint64_t(v);
}

}  // namespace

void check_fits_in_memory(std::uint64_t state_bytes, std::uint64_t activation_bytes,
                          std::uint64_t ranks_here, const std::string& state_flag,
                          const std::string& activation_flag) {
  const u128 per_rank = u128(state_bytes) + activation_bytes;
  const u128 physical =
      u128(std::max(0L, sysconf(_SC_PHYS_PAGES))) * u128(std::max(0L, sysconf(_SC_PAGE_SIZE)));
  if (physical == 0 || per_rank * std::max<u128>(1, ranks_here) <= physical) return;
  const std::string& flag = activation_bytes >= state_bytes ? activation_flag : state_flag;
  std::string message = flag + ": the run needs " + units::format_bytes(clamp64(per_rank)) +
                        " per rank (model state " + units::format_bytes(state_bytes) +
                        ", activations " + units::format_bytes(activation_bytes) + ")";
  message += ", this machine has " + units::format_bytes(clamp64(physical));
  if (ranks_here > 1) message += " for " + std::to_string(ranks_here) + " ranks";
  throw UsageError(message);
}

void check_memory(const MemoryNeed& need, const EngineOptions& options, const Launch& launch) {
  const auto [here, total] = ranks_here_and_total(launch);
  const std::uint64_t state =
      model_state_per_rank(need.params, std::max<u128>(1, total), options.stage);
  check_fits_in_memory(state, need.activation_bytes, clamp64(here), need.size_flag,
                       "--micro-batch");
}

void configure_blas_threads(const Launch& launch) {
  const int ranks_here = static_cast<int>(ranks_here_and_total(launch).first);
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
  try {
    // First every rank meets the others (a rank that left early would leave them waiting),
    // then, all agreeing on --ranks, all reach the same verdict on the world size.
    check_ranks_agree(*comm, launch.agree);
    if (launch.ranks != 0 && launch.ranks != comm->size()) {
      throw UsageErrorOnEveryRank(
          "--ranks: " + std::to_string(launch.ranks) + " does not match the MPI world size " +
          std::to_string(comm->size()) + " (set the ranks with mpirun -np)");
    }
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

// The flags every engine command shares (train, measure, eval): how many ranks on which
// backend, which stage, precision and buckets. Read as text and parsed with zerodp/units.h,
// so a bad value gets our one-line message naming the flag and the accepted form.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>

#include "run_agreement.h"
#include "zerodp/comm.h"
#include "zerodp/engine.h"

namespace zerodp::cli {

// The ranges of the integer flags, so that nothing is narrowed into a wrapped value. Thread
// ranks are threads of one process (each with its own engine and buffers): beyond 1024 a
// machine runs out of cores long before memory. MPI ranks are bounded by the world size,
// checked once the communicator exists. --micro-batch has no count limit: memory bounds it.
inline constexpr std::uint64_t kMaxThreadRanks = 1024;
inline constexpr std::uint64_t kMaxMpiRanks = 1 << 20;
inline constexpr std::uint64_t kMaxGradAccum = 1'000'000;
// --timeout: at least a millisecond (the unit collectives wait in), at most a week.
inline constexpr double kMinTimeoutSeconds = 1e-3;
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;

struct EngineFlags {
  std::string stage = "3";
  std::string ranks;  // default: 4 on threads, the MPI world size on mpi
  std::string backend = "threads";
  std::string precision = "bf16";
  std::string bucket_bytes = "8MiB";
  std::string grad_accum = "1";
  std::string micro_batch;  // the command sets its own default
  std::string clip = "1.0";
  std::string seed = "1";
  std::string timeout = "300s";
  std::string rank_memory;  // empty: no budget
  bool no_prefetch = false;
  bool no_overlap = false;
};

// Adds the flags to a subcommand; stage_flag = false leaves --stage to the command.
void add_engine_flags(CLI::App* app, EngineFlags& flags, bool stage_flag = true);

// Parses the flags into engine options (throws UsageError).
EngineOptions engine_options(const EngineFlags& flags, std::size_t default_micro_batch);
// A plain decimal number (digits, point, exponent; no NaN, inf or units) that is > 0, or >= 0
// with zero allowed. `expected` describes the accepted form for the error.
double parse_real(const std::string& text, const std::string& flag, const std::string& expected,
                  bool zero_allowed);

// Runs fn(communicator) on every rank: as threads of this process (--backend threads) or,
// under mpirun, once in this process for its MPI rank (--backend mpi).
struct Launch {
  std::string backend;
  int ranks = 1;
  comm::Options options;
  // The settings every rank must share; run_ranks() checks them on the MPI backend before fn
  // (threads share one process, so they trivially agree). launch_options() puts in the engine
  // flags as written; a command replaces them with all of its own.
  RunSettings agree;
};
Launch launch_options(const EngineFlags& flags);
// One OpenBLAS thread per rank when ranks share the cores: as threads of this process, or as
// MPI processes on one host (OMPI_COMM_WORLD_LOCAL_SIZE). Two thread pools per core spin
// against each other.
void configure_blas_threads(const Launch& launch);

// What a run needs per rank at least: its share of the model state (16-bit params and grads,
// fp32 master and Adam moments, sharded by the stage) and the activations of one micro-batch.
// `size_flag` names the flag that sets the model's size ("--params").
struct MemoryNeed {
  std::uint64_t params = 0;
  std::uint64_t activation_bytes = 0;  // UINT64_MAX: beyond 64 bits
  std::string size_flag;
};
// Refuses, before anything is allocated, a run whose ranks on this machine need more than its
// physical memory: UsageError naming --micro-batch or size_flag (whichever needs more) with
// the figures, e.g. "--micro-batch: the run needs 8.80 PB per rank (model state 51.2 MB,
// activations 8.80 PB), this machine has 16.8 GB for 4 ranks".
void check_memory(const MemoryNeed& need, const EngineOptions& options, const Launch& launch);
// The same for any process: `ranks_here` ranks each holding state_bytes and activation_bytes;
// the error names state_flag or activation_flag, whichever needs more.
void check_fits_in_memory(std::uint64_t state_bytes, std::uint64_t activation_bytes,
                          std::uint64_t ranks_here, const std::string& state_flag,
                          const std::string& activation_flag);

// Under MPI, throws UsageError on every rank when the ranks disagree on launch.agree.
void run_ranks(const Launch& launch, const std::function<void(comm::Communicator&)>& fn);

}  // namespace zerodp::cli

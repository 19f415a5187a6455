// The flags every engine command shares (train, measure, eval): how many ranks on which
// backend, which stage, precision and buckets. Read as text and parsed with zerodp/units.h,
// so a bad value gets our one-line message naming the flag and the accepted form.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "run_agreement.h"
#include "zerodp/comm.h"
#include "zerodp/engine.h"

namespace zerodp::cli {

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
// Under MPI, throws UsageError on every rank when the ranks disagree on launch.agree.
void run_ranks(const Launch& launch, const std::function<void(comm::Communicator&)>& fn);

}  // namespace zerodp::cli

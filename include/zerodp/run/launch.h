// Launching a run's ranks: how many on which backend, whether they fit in this machine's
// memory, how many BLAS threads each gets, and the call that runs every rank.
//
// Contract: run_ranks() calls fn once per rank, as threads of this process (backend "threads")
// or, under mpirun, once in this process for its MPI rank (backend "mpi"); under MPI it first
// checks that every rank runs launch.agree (run/agreement.h) and that ranks matches the world
// size, and aborts the group when fn throws on one rank.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "zerodp/comm/communicator.h"
#include "zerodp/run/agreement.h"
#include "zerodp/zero/engine.h"

namespace zerodp::run {

// Thread ranks are threads of one process (each with its own engine and buffers): beyond 1024
// a machine runs out of cores long before memory. MPI ranks are bounded by the world size,
// checked once the communicator exists.
inline constexpr std::uint64_t kMaxThreadRanks = 1024;
inline constexpr std::uint64_t kMaxMpiRanks = 1 << 20;
// A rank's threads (Launch::threads): more than a machine has cores only costs.
inline constexpr std::uint64_t kMaxRankThreads = 256;

// Where and how many ranks run (ranks 0: the MPI world size, once known).
struct Launch {
  std::string backend;
  int ranks = 1;
  // The threads each rank computes on; 0: auto, the rank's share of this machine's cores
  // (rank_cores), at most the micro-batch. The GPT splits its micro-batch over them
  // (GptModel::set_threads), which orders its gradients' sums: the bits depend on the count
  // (model_threads()).
  int threads = 0;
  comm::Options options;
  // The settings every rank must share; run_ranks() checks them on the MPI backend before fn
  // (threads share one process, so they trivially agree). launch_options() puts in the engine
  // flags as written; a command replaces them with all of its own.
  RunSettings agree;
};
// OpenBLAS's threads per product: the cores of a rank over the threads it computes on
// (model_threads), at least 1, when ranks share the cores (as threads of this process, or as
// MPI processes on one host, OMPI_COMM_WORLD_LOCAL_SIZE) or a rank computes on several;
// OpenBLAS's own default (every core) for a rank alone computing on one. Two thread pools per
// core spin against each other.
void configure_blas_threads(const Launch& launch, int model_threads);
// The cores of this machine each of its ranks may use (at least 1): all of them for a rank
// alone, else an equal share; with --backend mpi outside mpirun (a --dry-run), the share of
// `ranks` ranks all on this machine. What a rank's engine splits its elementwise passes over
// (zero::Engine::set_threads).
int rank_cores(const Launch& launch);
// The threads a rank's model computes on: Launch::threads, or when auto its cores, at most the
// micro-batch (a thread without a sample would only hold scratch), for the GPT; 1 for the MLP,
// which computes on one thread (its products on OpenBLAS's): Launch::threads above 1 with it
// is an InvalidArgument.
int model_threads(const Launch& launch, bool gpt, std::size_t micro_batch);

// What a run needs per rank at least: its share of the model state (16-bit params and grads,
// fp32 master and the optimizer's slots, sharded by the stage) and the activations of one
// micro-batch.
// `size_field` names the input that sets the model's size (field_ref("params")).
struct MemoryNeed {
  std::uint64_t params = 0;
  std::uint64_t activation_bytes = 0;  // UINT64_MAX: beyond 64 bits
  std::string size_field;
  std::uint64_t frozen_params = 0;  // a LoRA base: 2 bytes each, sharded at stage 3
};
// Refuses, before anything is allocated, a run whose ranks on this machine need more than its
// physical memory: UsageError naming the micro-batch or size_field (whichever needs more) with
// the figures, e.g. "--micro-batch: the run needs 8.80 PB per rank (model state 51.2 MB,
// activations 8.80 PB), this machine has 16.8 GB for 4 ranks".
void check_memory(const MemoryNeed& need, const zero::EngineOptions& options, const Launch& launch);
// The same for any process: `ranks_here` ranks each holding state_bytes and activation_bytes;
// the error names state_input or activation_input, whichever needs more.
void check_fits_in_memory(std::uint64_t state_bytes, std::uint64_t activation_bytes,
                          std::uint64_t ranks_here, const std::string& state_input,
                          const std::string& activation_input);

// Under MPI, throws UsageError on every rank when the ranks disagree on launch.agree, and
// InvalidArgument naming --backend in a process no MPI launcher started (which would otherwise
// train alone, a world of one rank).
void run_ranks(const Launch& launch, const std::function<void(comm::Communicator&)>& fn);

// Whether an MPI launcher (Open MPI's mpirun, MPICH's or PMIx's) started this process: the
// variables each sets in its ranks' environment.
bool started_by_mpi_launcher();

// The ranks a run will have, before any communicator exists: launch.ranks, or under mpirun the
// world size. Throws InvalidArgument naming ranks when neither says (--backend mpi outside
// mpirun).
int planned_ranks(const Launch& launch);

// The most ranks a search for the least N looks at on this backend.
int max_ranks_searched(const Launch& launch);

}  // namespace zerodp::run

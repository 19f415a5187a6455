#include "zerodp/run/launch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <thread>

#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/model/gemm.h"
#include "zerodp/plan/memory.h"
#include "zerodp/run/engine_run.h"

namespace zerodp::run {

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

// The model state one rank of n holds: the planner's figure for the engine's bytes per
// parameter. Past 2^64 / 16 parameters no machine holds it: the largest figure.
std::uint64_t model_state_per_rank(std::uint64_t params, u128 n, Stage stage,
                                   const plan::BytesPerParam& bpp) {
  if (params > std::numeric_limits<std::uint64_t>::max() / bpp.total()) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  const int ranks = static_cast<int>(std::min<u128>(n, std::numeric_limits<int>::max()));
  return plan::model_state_bytes(params, ranks, stage, bpp);
}

std::uint64_t clamp64(u128 v) {
  return v > std::numeric_limits<std::uint64_t>::max() ? std::numeric_limits<std::uint64_t>::max()
                                                       : std::uint64_t(v);
}

}  // namespace

void check_fits_in_memory(std::uint64_t state_bytes, std::uint64_t activation_bytes,
                          std::uint64_t ranks_here, const std::string& state_input,
                          const std::string& activation_input) {
  const u128 per_rank = u128(state_bytes) + activation_bytes;
  const u128 physical =
      u128(std::max(0L, sysconf(_SC_PHYS_PAGES))) * u128(std::max(0L, sysconf(_SC_PAGE_SIZE)));
  if (physical == 0 || per_rank * std::max<u128>(1, ranks_here) <= physical) return;
  const std::string& flag = activation_bytes >= state_bytes ? activation_input : state_input;
  std::string message = flag + ": the run needs " + units::format_bytes(clamp64(per_rank)) +
                        " per rank (model state " + units::format_bytes(state_bytes) +
                        ", activations " + units::format_bytes(activation_bytes) + ")";
  message += ", this machine has " + units::format_bytes(clamp64(physical));
  if (ranks_here > 1) message += " for " + std::to_string(ranks_here) + " ranks";
  throw UsageError(message);
}

void check_memory(const MemoryNeed& need, const zero::EngineOptions& options,
                  const Launch& launch) {
  const auto [here, total] = ranks_here_and_total(launch);
  std::uint64_t state = model_state_per_rank(need.params, std::max<u128>(1, total), options.stage,
                                             engine_bytes_per_param(options));
  const u128 frozen = 2 * u128(need.frozen_params) /
                      (sharding(options.stage).parameters ? std::max<u128>(1, total) : 1);
  state = clamp64(u128(state) + frozen);
  check_fits_in_memory(state, need.activation_bytes, clamp64(here), need.size_field,
                       field_ref("micro_batch"));
}

void configure_blas_threads(const Launch& launch, int model_threads) {
  const int ranks_here = static_cast<int>(ranks_here_and_total(launch).first);
  if (ranks_here <= 1 && model_threads <= 1) return;
  model::set_blas_threads(std::max(1, rank_cores(launch) / std::max(1, model_threads)));
}

int rank_cores(const Launch& launch) {
  u128 ranks_here = std::max<u128>(1, ranks_here_and_total(launch).first);
  // Outside mpirun (a --dry-run), as `mpirun -np N` on this machine would run them.
  if (launch.backend == "mpi" && std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE") == nullptr) {
    ranks_here = std::max<u128>(1, u128(std::max(launch.ranks, 1)));
  }
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::max<u128>(1, u128(cores) / ranks_here));
}

int model_threads(const Launch& launch, bool gpt, std::size_t micro_batch) {
  if (!gpt) {
    // Refused rather than ignored: the MLP's one thread would not be the count asked for.
    if (launch.threads > 1) {
      throw InvalidArgument("threads", field_ref("threads") + ": above 1 applies to " +
                                           field_ref("model") +
                                           " gpt; the MLP computes on one thread (its "
                                           "products on OpenBLAS's)");
    }
    return 1;
  }
  if (launch.threads > 0) return launch.threads;
  return static_cast<int>(std::min<std::size_t>(std::size_t(rank_cores(launch)),
                                                std::max<std::size_t>(1, micro_batch)));
}

void run_ranks(const Launch& launch, const std::function<void(comm::Communicator&)>& fn) {
  if (launch.backend == "threads") {
    comm::run_thread_ranks(launch.ranks, launch.options, fn);
    return;
  }
#if defined(ZERODP_HAVE_MPI)
  // Started by hand, MPI would make a world of this one process and train on one rank.
  if (!started_by_mpi_launcher()) {
    throw InvalidArgument(field_ref("backend") +
                          ": mpi needs its ranks started by mpirun, and this process was not "
                          "(run `mpirun -np N zerodp ...`, or " +
                          field_ref("backend") + " threads for ranks in this process)");
  }
  std::unique_ptr<comm::Communicator> comm = comm::make_mpi_communicator(launch.options);
  try {
    // First every rank meets the others (a rank that left early would leave them waiting),
    // then, all agreeing on --ranks, all reach the same verdict on the world size.
    check_ranks_agree(*comm, launch.agree);
    if (launch.ranks != 0 && launch.ranks != comm->size()) {
      throw UsageErrorOnEveryRank(field_ref("ranks") + ": " + std::to_string(launch.ranks) +
                                  " does not match the MPI world size " +
                                  std::to_string(comm->size()) +
                                  " (set the ranks with mpirun -np)");
    }
    fn(*comm);
  } catch (const UsageErrorOnEveryRank&) {
    throw;  // every rank throws it at the same point: nothing to abort
  } catch (const ErrorOnEveryRank&) {
    throw;
  } catch (const std::exception& e) {
    comm->abort(failure_text(e));
    throw;
  }
#endif
}

bool started_by_mpi_launcher() {
  for (const char* launcher : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
    if (std::getenv(launcher) != nullptr) return true;
  }
  return false;
}

int planned_ranks(const Launch& launch) {
  if (launch.ranks > 0) return launch.ranks;
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  const long n = world ? std::atol(world) : 0;
  if (n < 1 || std::uint64_t(n) > kMaxMpiRanks) {
    throw InvalidArgument(field_ref("ranks") +
                          ": expected the number of MPI ranks to plan for (outside mpirun, " +
                          field_ref("backend") +
                          " mpi "
                          "has no world size to take it from)");
  }
  return int(n);
}

int max_ranks_searched(const Launch& launch) {
  // MPI: a search, not a launch; past 65536 ranks of a model this small nothing changes.
  return launch.backend == "threads" ? int(kMaxThreadRanks) : 65536;
}

}  // namespace zerodp::run

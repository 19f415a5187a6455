// The flags every engine command shares (train, measure, eval): how many ranks on which
// backend, which stage, precision and buckets. Read as text and parsed with zerodp/common/units.h,
// so a bad value gets our one-line message naming the flag and the accepted form.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "zerodp/run/launch.h"
#include "zerodp/zero/engine.h"

namespace zerodp::cli {

// The ranges of the integer flags, so that nothing is narrowed into a wrapped value (the ranks'
// are run::kMaxThreadRanks and run::kMaxMpiRanks). --micro-batch has no count limit: memory
// bounds it.
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
  std::string rank_memory;      // empty: no budget
  std::string zeropp = "none";  // ZeRO++ at stage 3: none, or a list of qwz, hpz, qgz
  std::string qwz_block = "256";
  std::string ranks_per_host;    // hpZ's hosts; empty: the backend's
  std::string threads = "auto";  // each rank's threads (run::Launch::threads)
  bool no_prefetch = false;
  bool no_overlap = false;
};

// Adds the flags to a subcommand; stage_flag = false leaves --stage to the command.
void add_engine_flags(CLI::App* app, EngineFlags& flags, bool stage_flag = true);

// Parses the flags into engine options (throws UsageError).
zero::EngineOptions engine_options(const EngineFlags& flags, std::size_t default_micro_batch);

// How the ranks are launched; agree holds the engine flags as written.
run::Launch launch_options(const EngineFlags& flags);
}  // namespace zerodp::cli

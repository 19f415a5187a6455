#include "engine_flags.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "zerodp/common/error.h"
#include "zerodp/common/units.h"

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
  app->add_option("--zeropp", f.zeropp,
                  "stage 3: ZeRO++'s communication, none or a list of qwz (int8 parameter "
                  "gathers), hpz (backward gathers inside each host) and qgz (int8 gradient "
                  "all-to-alls, inside each host then across) [none]");
  app->add_option("--ranks-per-host", f.ranks_per_host,
                  "with --zeropp hpz or qgz: consecutive ranks per host [threads: all ranks, one "
                  "host; mpi: from the host names]");
  app->add_option("--qwz-block", f.qwz_block,
                  "with --zeropp qwz or qgz: elements per quantization block, each with its own "
                  "scale, 1 to 16777216 [256]");
  app->add_option("--threads", f.threads,
                  "threads each rank computes on, 1 to 256, or auto: the rank's share of this "
                  "machine's cores; the GPT splits its micro-batch over them, and its bits "
                  "depend on the count (a resume takes the checkpoint's) [auto]");
  app->add_flag("--no-prefetch", f.no_prefetch, "stage 3: gather each unit only when needed");
  app->add_flag("--no-overlap", f.no_overlap, "wait for every collective as soon as issued");
}

namespace {

// --zeropp: none, or a comma-separated list of the planner's words (plan --zeropp). The engine
// runs all three.
void read_zeropp(const std::string& text, zero::EngineOptions& o) {
  if (text == "none") return;
  std::string item;
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    item = text.substr(at, comma - at);
    at = comma + 1;
    if (item == "qwz") {
      o.qwz = true;
    } else if (item == "hpz") {
      o.hpz = true;
    } else if (item == "qgz") {
      o.qgz = true;
    } else {
      throw UsageError(
          "--zeropp: expected none or a list of qwz, hpz, qgz such as qwz,hpz,qgz, got " +
          quote(text));
    }
  }
}

}  // namespace

zero::EngineOptions engine_options(const EngineFlags& f, std::size_t default_micro_batch) {
  zero::EngineOptions o;
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
  o.clip_norm = static_cast<float>(units::parse_real(
      f.clip, "--clip", "a norm >= 0 such as 1.0 (0 disables clipping)", units::Zero::allowed));
  o.seed = units::parse_whole(f.seed, "--seed", units::Zero::allowed);
  o.prefetch = !f.no_prefetch;
  o.overlap = !f.no_overlap;
  o.rank_memory = f.rank_memory.empty() ? 0 : units::parse_bytes(f.rank_memory, "--rank-memory");
  read_zeropp(f.zeropp, o);
  o.qwz_block = units::parse_whole_in(f.qwz_block, "--qwz-block", 1, kMaxQuantBlock);
  if (!f.ranks_per_host.empty()) {
    if (!o.hpz && !o.qgz) {
      throw UsageError("--ranks-per-host: it sets ZeRO++'s hosts; give --zeropp hpz or qgz too");
    }
    o.ranks_per_host = static_cast<int>(
        units::parse_whole_in(f.ranks_per_host, "--ranks-per-host", 1, run::kMaxMpiRanks));
  }
  o.validate();
  return o;
}

run::Launch launch_options(const EngineFlags& f) {
  run::Launch l;
  l.backend = f.backend;
  if (f.backend != "threads" && f.backend != "mpi") {
    throw UsageError("--backend: expected threads or mpi, got '" + f.backend + "'");
  }
#if !defined(ZERODP_HAVE_MPI)
  if (f.backend == "mpi") throw UsageError("--backend: this build of zerodp has no MPI backend");
#endif
  const bool threads = f.backend == "threads";
  const std::uint64_t max_ranks = threads ? run::kMaxThreadRanks : run::kMaxMpiRanks;
  l.ranks = f.ranks.empty()
                ? (threads ? 4 : 0)
                : static_cast<int>(units::parse_whole_in(f.ranks, "--ranks", 1, max_ranks));
  l.threads = f.threads == "auto" ? 0
                                  : static_cast<int>(units::parse_whole_in(
                                        f.threads, "--threads", 1, run::kMaxRankThreads));
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
             {"--zeropp", f.zeropp},
             {"--qwz-block", f.qwz_block},
             {"--ranks-per-host", f.ranks_per_host.empty() ? "the backend's" : f.ranks_per_host},
             {"--no-prefetch", f.no_prefetch ? "on" : "off"},
             {"--no-overlap", f.no_overlap ? "on" : "off"}};
  return l;
}

}  // namespace zerodp::cli

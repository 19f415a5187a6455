#include "engine_flags.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "zerodp/common/error.h"
#include "zerodp/common/units.h"
#include "zerodp/optim/rule.h"

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
  app->add_option(
         "--optimizer", f.optimizer,
         "the optimizer step: " + optim::engine_optimizer_words() +
             " (beside an fp32 master; the -8bit ones keep bitsandbytes' 8-bit block-wise "
             "states, adafactor a matrix's row and column means (the Hugging Face Trainer's "
             "settings); "
             "a resume takes the checkpoint's) [adamw]")
      ->type_name("NAME");
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

}  // namespace zerodp::cli

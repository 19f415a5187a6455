// One rank's measurement of a few training steps: what the engine's ledger says it holds,
// what the backend counted it send, what the kernel says the process and the host's interface
// used, and the step's times, beside the planner's predictions for the same rank (peak,
// model state, ring bytes and, with a link known, the replay of its schedule). What
// `zerodp measure` reports.
//
// Contract: measure_rank() and gather_ranks() are collective; every figure named measured or
// counted comes from what happened (ledger, backend counters, /proc, /sys, clocks), every
// predicted_* one from the planner.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "zerodp/comm/communicator.h"
#include "zerodp/common/ledger.h"
#include "zerodp/common/stage.h"
#include "zerodp/plan/memory.h"
#include "zerodp/predict/schedule.h"
#include "zerodp/run/launch.h"
#include "zerodp/run/model_spec.h"
#include "zerodp/run/train_choice.h"
#include "zerodp/zero/engine.h"

namespace zerodp::run {

// One rank's figures for one stage. Kept as plain integers and doubles so MPI ranks can send
// them to rank 0 as words.
struct RankMeasure {
  std::array<std::uint64_t, kCategoryCount> live{};
  std::array<std::uint64_t, kCategoryCount> peak{};
  std::array<std::uint64_t, kCategoryCount> at_peak{};  // held when the total peaked
  std::uint64_t model_state = 0;
  std::uint64_t peak_total = 0;
  // ZeRO collectives per step: counted by the backend as the bytes moved, sent and received,
  // and what the ring algorithms would send for the same calls (comm/communicator.h; a formula).
  std::uint64_t sent_per_step = 0, received_per_step = 0, ring_per_step = 0;
  std::uint64_t scalar_per_step = 0;  // loss, norm and overflow scalars, counted sent
  // On cluster hosts (ZERODP_WIRE_IF): the bytes this host's interface sent per step in the
  // overlapped steps (the kernel's counter), reported by the host's first rank.
  std::uint64_t wire_tx_per_step = 0;
  std::uint64_t wire_first_on_host = 0;
  std::uint64_t wire_predicted_per_step = 0;     // predict::predict_host_send_bytes for this host
  std::uint64_t rss_baseline = 0;                // this process before the engine, bytes
  std::uint64_t rss_peak = 0;                    // this process's peak while measuring
  double step_seconds = 0, exposed_seconds = 0;  // medians, overlap and prefetch on
  double step_seconds_sync = 0, exposed_seconds_sync = 0;  // medians, every wait at once
  // With a link known (--link-rate, or the cluster's): the planner's replay of the engine's
  // schedule (predict/schedule.h) from this rank's measured compute, with overlap and prefetch
  // and without; 0 without a link.
  double link_bits_per_second = 0, link_delay_seconds = 0;
  double predicted_step_seconds = 0, predicted_link_seconds = 0, predicted_step_seconds_sync = 0;
  // This rank's kernel rates on this CPU, measured on one rank without communication
  // (predict::KernelRates), and the step predicted from them before the run: each unit's FLOPs
  // at those rates through the replay of the schedule (with overlap and prefetch, and
  // without), its compute and the link's busy time; 0 when ranks span hosts and no link is
  // known. On one host collectives through shared memory are taken as free.
  double rate_forward = 0, rate_backward = 0, rate_optimizer = 0, rate_other = 0;
  double rate_beside_link = 1;
  // The link's pace beside compute: the seconds the calibration's all-gathers of 1 MiB a rank
  // would take at the link's rate (predict::collective_seconds), over the seconds they took
  // while every rank computed (the slowest rank's median). 1 on one host. The step predicted
  // from the rates moves its collectives' bytes at the link's rate times this pace.
  double link_beside_compute = 1;
  double rated_step_seconds = 0, rated_step_seconds_sync = 0;
  double rated_compute_seconds = 0, rated_link_seconds = 0;
  // Predictions for this rank.
  std::uint64_t predicted_state = 0;
  std::uint64_t predicted_comm = 0;
  std::array<std::uint64_t, kCategoryCount> predicted_at_peak{};  // predict/peak.h
  std::uint64_t predicted_peak = 0;

  std::vector<std::uint64_t> to_words() const;
  static RankMeasure from_words(const std::uint64_t* words);
  static std::size_t word_count();
};

struct StageMeasure {
  Stage stage = Stage::dp;
  std::vector<RankMeasure> ranks;
};

// One stage on one rank: its kernel rates measured on one rank alone (a warm-up step and
// `steps` steps), then one warm-up step and `steps` measured with overlap and prefetch
// (options' own) and `steps` without, with the planner's prediction for this rank. A link
// with a rate (> 0) adds the replay of every measured step on it; it needs ranks on more than
// one host (UsageErrorOnEveryRank otherwise).
RankMeasure measure_rank(comm::Communicator& comm, const ModelSpec& spec, const Launch& launch,
                         zero::EngineOptions options, int steps, const predict::Link& link);

// Every rank's figures, on every rank.
std::vector<RankMeasure> gather_ranks(comm::Communicator& comm, const RankMeasure& mine);

// What was measured, as `zerodp measure` names it in its report.
struct MeasureSetup {
  std::string model;
  std::uint64_t params = 0;
  int ranks = 1;
  std::string backend;
  bool rss_per_process = false;  // true under MPI: one process per rank
  int steps = 0;
  std::size_t micro_batch = 0;
  std::string precision;
  // gpt: the products' compute ("fp32", "bf16") and the line saying why (ModelSpec::
  // resolve_compute()); empty for the MLP.
  std::string compute, compute_line;
  int threads = 1;  // the threads each rank computes on (run::model_threads)
  // What the optimizer state is made of, from its row: "fp32 master and AdamW's m (first
  // moment) and v (second moment)"; and the bytes per parameter, engine_bytes_per_param()'s.
  std::string state_words;
  plan::BytesPerParam bpp;
  bool blockwise = false;  // 8-bit block-wise slots (8-bit AdamW)
  bool factored = false;   // a factored slot (Adafactor)
};

// One stage's measurement as `zerodp measure --json` prints it (keys in docs/engine.md):
// rank 0's prediction and timing (the seed's cell G, measured), each host's interface, and
// every rank's figures.
nlohmann::json measure_json(const MeasureSetup& setup, const StageMeasure& stage);

// Gives freed memory back to the OS and resets the process's peak resident size (VmHWM), so
// that the next measurement's baseline and peak are its own.
void reset_process_peak();

// A measurement as written (`zerodp measure`'s flags): the MLP of 10M parameters unless told
// otherwise, one stage or all four, and the link between hosts for the replay.
struct MeasureChoice {
  MeasureChoice() { model.model = "mlp"; }
  ModelChoice model;
  EngineChoice engine;
  std::string steps = "3";
  bool all_stages = false;
  bool stage_given = false;           // the stage was chosen (it excludes all_stages)
  std::string link_rate, link_delay;  // empty: no link (no replay)
};

// Measured steps: a measurement takes the median of a few; more is only waiting.
inline constexpr std::uint64_t kMaxMeasuredSteps = 10'000;

// A measurement of one or all stages, its settings parsed and checked once (UsageError naming
// the field: steps, link_rate, ...), before any rank starts: memory for every stage measured,
// and the threads the model can use.
class Measurement {
 public:
  explicit Measurement(const MeasureChoice& choice);
  // Every stage asked for, each with its own baseline and peak. Collective over the launch's
  // ranks; returns every rank's figures in the process of rank 0, nothing in the others (MPI).
  // The setup's ranks and backend are the run's once it has run.
  std::vector<StageMeasure> run();
  const MeasureSetup& setup() const { return setup_; }
  // Whether every stage is measured (the report shows them side by side).
  bool all_stages() const { return stages_.size() > 1; }

 private:
  // Every setting that shapes the measurement, for the ranks of an MPI job to agree on: the
  // engine's, the model and its data (by its bytes), the steps, the threads as auto settled
  // them, the stages and the link.
  void agree(const MeasureChoice& choice);
  // The engine's options for `stage`: ZeRO++ is stage 3's only.
  zero::EngineOptions at_stage(Stage stage) const;

  ModelSpec spec_;
  Launch launch_;
  zero::EngineOptions base_;
  int threads_ = 1;
  int steps_ = 0;
  predict::Link link_;
  std::vector<Stage> stages_;
  MeasureSetup setup_;
};

}  // namespace zerodp::run

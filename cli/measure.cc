// zerodp measure: runs a few steps of each stage and prints what every rank holds and sends,
// beside the planner's prediction for the same Φ and N.
#include <malloc.h>
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "command.h"
#include "engine_flags.h"
#include "measure_report.h"
#include "peak_report.h"
#include "run_agreement.h"
#include "train_model.h"
#include "zerodp/error.h"
#include "zerodp/mlp.h"
#include "zerodp/plan_comm.h"
#include "zerodp/plan_memory.h"
#include "zerodp/plan_schedule.h"
#include "zerodp/units.h"

namespace zerodp::cli {
namespace {

// Measured steps: a measurement takes the median of a few; more is only waiting.
constexpr std::uint64_t kMaxSteps = 10'000;

struct LinkFlags {
  std::string rate, delay;
};

struct MeasureFlags {
  EngineFlags engine;
  ModelFlags model;  // --model mlp (with --params 10M) unless told otherwise
  std::string steps = "3";
  bool all_stages = false;
  bool per_rank = false;
  bool json = false;
  LinkFlags link;
};

// The kernel's figures for this process: resident now and its peak (VmHWM). Writing 5 to
// clear_refs resets the peak, so each stage measured in one process gets its own.
std::uint64_t proc_status_kib(const char* key) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::string(key).size())) * 1024;
  }
  return 0;
}
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// The wire: with ZERODP_WIRE_IF set (scripts/cluster.sh sets it on every rank), the bytes this
// host's interface has sent, from the kernel's counter; 0 without it.
std::uint64_t wire_tx_bytes() {
  const char* iface = std::getenv("ZERODP_WIRE_IF");
  if (iface == nullptr || *iface == '\0') return 0;
  std::ifstream counter(std::string("/sys/class/net/") + iface + "/statistics/tx_bytes");
  std::uint64_t bytes = 0;
  counter >> bytes;
  return bytes;
}
// The first rank of its host reports the host's wire (mpirun sets the local rank).
bool first_on_host() {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  return local != nullptr && std::string(local) == "0";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0.0
         : v.size() % 2 ? v[v.size() / 2]
                        : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Timing {
  double step = 0, exposed = 0;
  std::vector<plan::StepCompute> compute;  // each measured step's, waits excluded
};

// A few steps of one configuration: one warm-up step (first touches, buffer growth), then
// `steps` measured ones. Returns the medians; fills the ledger and byte figures when asked.
Timing run_steps(comm::Communicator& comm, const ModelSpec& spec, const EngineOptions& options,
                 int steps, RankMeasure* out) {
  const std::unique_ptr<model::Model> model = spec.make();
  Engine engine(*model, comm, spec.samples(), options);
  engine.step(1e-4f);
  engine.flush();  // the warm-up's gathers must not land in the measured window
  comm.barrier();  // every rank of a host inside the window before its interface is read
  const std::uint64_t wire_before = wire_tx_bytes();
  const comm::Stats before = comm.stats();
  std::uint64_t scalar = 0, scalar_sent = 0, scalar_received = 0;
  std::vector<double> step_s, exposed_s;
  std::vector<plan::StepCompute> compute;
  for (int s = 0; s < steps; ++s) {
    StepResult r = engine.step(1e-4f);
    step_s.push_back(r.seconds);
    exposed_s.push_back(r.exposed_comm_seconds);
    plan::StepCompute c{r.unit_forward_seconds, r.unit_backward_seconds, r.optimizer_seconds, 0};
    c.other = std::max(0.0, r.compute_seconds - c.total());
    compute.push_back(std::move(c));
    scalar += r.scalar_bytes;
    scalar_sent += r.scalar_sent_bytes;
    scalar_received += r.scalar_received_bytes;
  }
  engine.flush();
  comm.barrier();
  const std::uint64_t wire_after = wire_tx_bytes();
  if (out) {
    out->wire_first_on_host = first_on_host() && std::getenv("ZERODP_WIRE_IF") != nullptr;
    out->wire_tx_per_step = (wire_after - wire_before) / std::uint64_t(steps);
    const Ledger& ledger = engine.ledger();
    for (int c = 0; c < kCategoryCount; ++c) {
      out->live[c] = ledger.live(static_cast<Category>(c));
      out->peak[c] = ledger.peak(static_cast<Category>(c));
      out->at_peak[c] = ledger.at_peak(static_cast<Category>(c));
    }
    out->model_state = ledger.model_state_bytes();
    out->peak_total = ledger.peak_total();
    // Over the window, the last step's overlapped gathers included (the flush): per step.
    const comm::Stats after = comm.stats();
    out->ring_per_step = (after.ring_bytes() - before.ring_bytes() - scalar) / steps;
    out->sent_per_step = (after.sent_bytes() - before.sent_bytes() - scalar_sent) / steps;
    out->received_per_step =
        (after.received_bytes() - before.received_bytes() - scalar_received) / steps;
    out->scalar_per_step = scalar_sent / steps;
  }
  return {median(step_s), median(exposed_s), std::move(compute)};
}

// The link between hosts, for the planner's replay of the step: --link-rate/--link-delay, or
// what scripts/cluster.sh shaped (ZERODP_LINK_RATE, ZERODP_LINK_DELAY); rate 0 when unknown.
plan::Link link_of(const LinkFlags& f) {
  plan::Link link;
  std::string rate = f.rate, delay = f.delay;
  if (rate.empty()) {
    if (const char* env = std::getenv("ZERODP_LINK_RATE")) rate = env;
    if (const char* env = std::getenv("ZERODP_LINK_DELAY"); env && delay.empty()) delay = env;
  }
  if (!delay.empty() && rate.empty()) {
    throw UsageError("--link-delay needs --link-rate: the replay of a step needs the link's rate");
  }
  if (!rate.empty()) link.bits_per_second = 8.0 * units::parse_bandwidth(rate, "--link-rate");
  if (!delay.empty()) link.delay_seconds = units::parse_seconds_in(delay, "--link-delay", 0, 60);
  return link;
}

// Every rank's compute of each measured step: [step][rank].
std::vector<std::vector<plan::StepCompute>> every_rank(comm::Communicator& comm,
                                                       const std::vector<plan::StepCompute>& mine) {
  std::vector<std::uint64_t> words;
  auto put = [&](double d) { words.push_back(std::bit_cast<std::uint64_t>(d)); };
  for (const plan::StepCompute& c : mine) {
    put(c.optimizer);
    put(c.other);
    for (double d : c.forward) put(d);
    for (double d : c.backward) put(d);
  }
  const std::vector<std::uint64_t> all = gather_words(comm, words);
  auto get = [&](std::size_t i) { return std::bit_cast<double>(all[i]); };
  std::vector<std::vector<plan::StepCompute>> steps(mine.size());
  std::size_t at = 0;
  for (int r = 0; r < comm.size(); ++r) {
    for (std::size_t s = 0; s < mine.size(); ++s) {
      const std::size_t units = mine[s].forward.size();
      plan::StepCompute c;
      c.optimizer = get(at), c.other = get(at + 1);
      for (std::size_t u = 0; u < units; ++u) c.forward.push_back(get(at + 2 + u));
      for (std::size_t u = 0; u < units; ++u) c.backward.push_back(get(at + 2 + units + u));
      at += 2 + 2 * units;
      steps[s].push_back(std::move(c));
    }
  }
  return steps;
}

// The planner's replay of each measured step, with every rank's compute of that step
// (plan_schedule.h): the median step, and the link's busy time (the same in every step).
struct Replayed {
  double step_seconds = 0, link_seconds = 0;
};
Replayed replay_steps(const plan::EngineRun& run, int ranks_per_host, const plan::Link& link,
                      const std::vector<std::vector<plan::StepCompute>>& steps, bool overlap) {
  std::vector<double> seconds;
  double link_seconds = 0;
  for (const auto& ranks : steps) {
    const plan::ScheduledStep s = plan::predict_step(run, ranks_per_host, link, ranks, overlap);
    seconds.push_back(s.step_seconds);
    link_seconds = s.comm_seconds;
  }
  return {median(seconds), link_seconds};
}

// Ranks per host under mpirun (it fills hosts in rank order); every rank on one host else.
int ranks_per_host(const comm::Communicator& comm) {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int per_host = local ? std::atoi(local) : 0;
  return per_host >= 1 && comm.size() % per_host == 0 ? per_host : comm.size();
}

// Every rank's figures, on every rank.
std::vector<RankMeasure> gather_ranks(comm::Communicator& comm, const RankMeasure& mine) {
  const std::vector<std::uint64_t> words = mine.to_words();
  const std::vector<std::uint64_t> all = gather_words(comm, words);
  std::vector<RankMeasure> ranks;
  for (int r = 0; r < comm.size(); ++r) {
    ranks.push_back(RankMeasure::from_words(all.data() + r * words.size()));
  }
  return ranks;
}

// One stage on one rank: its figures with overlap and prefetch, its timings without, and the
// planner's prediction for this rank.
RankMeasure measure_rank(comm::Communicator& comm, const ModelSpec& spec, const Launch& launch,
                         EngineOptions options, int steps, const plan::Link& link) {
  const int per_host = ranks_per_host(comm);
  if (link.bits_per_second > 0 && per_host == comm.size()) {  // alike on every rank
    throw UsageErrorOnEveryRank("--link-rate: all " + std::to_string(comm.size()) +
                                " ranks are on one host, so no collective crosses a link; give "
                                "it for ranks on more than one host");
  }
  RankMeasure m;
  const plan::EngineRun planned = engine_run(spec, options, launch, comm.size());
  const plan::RankPeak peak = plan::predict_rank_peak(planned, comm.rank());
  m.predicted_at_peak = peak.bytes;
  m.predicted_peak = peak.peak_bytes;
  if (first_on_host()) {  // this host's ranks are a block (mpirun fills hosts in rank order)
    m.wire_predicted_per_step =
        plan::predict_host_send_bytes(planned, per_host)[comm.rank() / per_host];
  }
  m.rss_baseline = proc_status_kib("VmRSS:");
  const Timing overlapped = run_steps(comm, spec, options, steps, &m);
  m.rss_peak = proc_status_kib("VmHWM:");
  const bool overlap = options.overlap;
  options.overlap = false;
  options.prefetch = false;
  const Timing sync = run_steps(comm, spec, options, steps, nullptr);
  m.step_seconds = overlapped.step;
  m.exposed_seconds = overlapped.exposed;
  m.step_seconds_sync = sync.step;
  m.exposed_seconds_sync = sync.exposed;
  if (link.bits_per_second > 0) {
    plan::EngineRun sync_run = planned;
    sync_run.prefetch = false;
    m.link_bits_per_second = link.bits_per_second;
    m.link_delay_seconds = link.delay_seconds;
    const Replayed with =
        replay_steps(planned, per_host, link, every_rank(comm, overlapped.compute), overlap);
    m.predicted_step_seconds = with.step_seconds;
    m.predicted_link_seconds = with.link_seconds;
    m.predicted_step_seconds_sync =
        replay_steps(sync_run, per_host, link, every_rank(comm, sync.compute), false).step_seconds;
  }
  const plan::BytesPerParam bpp{2, 2, 12};
  const std::uint64_t params = spec.param_count();
  m.predicted_state = plan::model_state_bytes(params, comm.size(), options.stage, bpp);
  m.predicted_comm = plan::ring_step_bytes(options.stage, params, bpp, comm.size(), comm.rank());
  return m;
}

void print_results(const MeasureFlags& f, const MeasureSetup& setup,
                   const std::vector<StageMeasure>& results) {
  if (!f.json) {
    print_measure_table(setup, results, f.per_rank || !f.all_stages);
    return;
  }
  if (results.size() == 1) {
    std::printf("%s\n", measure_json(setup, results[0]).dump(2).c_str());
    return;
  }
  nlohmann::json all = {{"stages", nlohmann::json::array()}};
  for (const StageMeasure& s : results) all["stages"].push_back(measure_json(setup, s));
  std::printf("%s\n", all.dump(2).c_str());
}

void run_measure(MeasureFlags f, bool stage_given) {
  if (f.all_stages && stage_given) {
    throw UsageError("--stage and --all-stages exclude each other: give one");
  }
  if (f.model.model == "mlp" && f.model.params.empty()) f.model.params = "10M";
  const ModelSpec spec(f.model);
  Launch launch = launch_options(f.engine);
  EngineOptions base = engine_options(f.engine, 8);
  // Under MPI, measure's own settings are the run's too: every rank must measure the same.
  for (const ConfigField& field : kConfigFields) {
    const nlohmann::json config = spec.config_json();
    launch.agree.emplace_back(field.flag,
                              config.contains(field.key) ? config.at(field.key).dump() : "(none)");
  }
  launch.agree.emplace_back("--data", spec.data_path() + " (" + spec.data_fingerprint() + ")",
                            spec.data_fingerprint());
  launch.agree.emplace_back("--steps", f.steps);
  launch.agree.emplace_back("--all-stages", f.all_stages ? "given" : "not given");
  const int steps = static_cast<int>(units::parse_whole_in(f.steps, "--steps", 1, kMaxSteps));
  const plan::Link link = link_of(f.link);
  if (link.bits_per_second > 0 && launch.backend == "threads") {
    throw UsageError(
        "--link-rate: the threads backend's ranks share one process and no link; measure across "
        "hosts with --backend mpi (under mpirun, or scripts/cluster.sh)");
  }
  launch.agree.emplace_back("--link-rate", f.link.rate.empty() ? "(none)" : f.link.rate);
  launch.agree.emplace_back("--link-delay", f.link.delay.empty() ? "(none)" : f.link.delay);
  std::vector<Stage> stages = {base.stage};
  if (f.all_stages) stages.assign(kStages.begin(), kStages.end());
  for (Stage stage : stages) {
    EngineOptions o = base;
    o.stage = stage;
    check_memory({spec.param_count(), spec.activation_bytes(base.micro_batch), spec.size_flag()}, o,
                 launch);
  }
  configure_blas_threads(launch);

  MeasureSetup setup;
  setup.params = spec.param_count();
  setup.model = spec.describe();
  setup.steps = steps;
  setup.micro_batch = base.micro_batch;
  setup.precision = std::string(dtype_name(base.precision));
  setup.backend = launch.backend;
  setup.rss_per_process = launch.backend == "mpi";

  std::vector<StageMeasure> results;
  std::mutex mu;
  for (Stage stage : stages) {
    StageMeasure measured{stage, {}};
    // Give the previous stage's freed memory back to the OS, so this stage's baseline and
    // peak are its own.
    malloc_trim(0);
    reset_peak_rss();
    run_ranks(launch, [&](comm::Communicator& comm) {
      EngineOptions o = base;
      o.stage = stage;
      RankMeasure mine;
      try {  // a budget refuses in the engine's setup or in the first step
        mine = measure_rank(comm, spec, launch, o, steps, link);
      } catch (const BudgetExceeded& e) {
        throw Error(std::string(e.what()) + "; --rank-memory: " +
                    fit_advice(engine_run(spec, o, launch, comm.size()), o.rank_memory,
                               max_ranks_searched(launch)));
      }
      std::vector<RankMeasure> all = gather_ranks(comm, mine);
      if (comm.rank() != 0) return;
      std::lock_guard<std::mutex> lock(mu);
      setup.ranks = comm.size();
      setup.backend = std::string(comm.backend_name());
      measured.ranks = std::move(all);
    });
    if (!measured.ranks.empty()) results.push_back(std::move(measured));
  }
  if (results.empty()) return;  // an MPI rank other than 0
  print_results(f, setup, results);
}

void add_measure_command(CLI::App& root) {
  auto flags = std::make_shared<MeasureFlags>();
  CLI::App* app = root.add_subcommand(
      "measure", "Run a few steps and print what each rank holds and sends, beside the plan");
  flags->model.model = "mlp";
  add_model_flags(app, flags->model, "10M");
  app->add_option("--steps", flags->steps, "measured steps after one warm-up [3]");
  app->add_flag("--all-stages", flags->all_stages, "measure stages 0-3 side by side");
  app->add_flag("--per-rank", flags->per_rank, "print every rank, not only rank 0");
  app->add_flag("--json", flags->json, "print JSON instead of tables");
  app->add_option("--link-rate", flags->link.rate,
                  "the link between hosts (200Mbit/s, 1gbit, 12.5GB/s): adds the planner's "
                  "replay of the step on it [scripts/cluster.sh's --rate]");
  app->add_option("--link-delay", flags->link.delay,
                  "the link's one-way delay (250us, 2ms) [scripts/cluster.sh's --delay, else 0]");
  add_engine_flags(app, flags->engine);
  app->callback([flags, app] { run_measure(*flags, app->count("--stage") > 0); });
}

const bool registered = register_command(20, add_measure_command);

}  // namespace
}  // namespace zerodp::cli

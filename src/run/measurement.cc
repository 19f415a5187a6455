#include "zerodp/run/measurement.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <numeric>
#include <string>
#include <thread>

#include "zerodp/common/error.h"
#include "zerodp/plan/comm.h"
#include "zerodp/plan/memory.h"
#include "zerodp/run/engine_run.h"

namespace zerodp::run {
namespace {

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
  std::vector<predict::StepCompute> compute;  // each measured step's, waits excluded
};

// A few steps of one configuration: one warm-up step (first touches, buffer growth), then
// `steps` measured ones. Returns the medians; fills the ledger and byte figures when asked.
Timing run_steps(comm::Communicator& comm, const ModelSpec& spec, const Launch& launch,
                 const zero::EngineOptions& options, int steps, RankMeasure* out) {
  const std::unique_ptr<model::Model> model =
      spec.make(model_threads(launch, spec.is_gpt(), options.micro_batch));
  zero::Engine engine(*model, comm, spec.samples(), options);
  engine.set_threads(rank_cores(launch));
  if (const checkpoint::Checkpoint* base = spec.base()) engine.import_frozen(base->reader());
  engine.step(1e-4f);
  engine.flush();  // the warm-up's gathers must not land in the measured window
  comm.barrier();  // every rank of a host inside the window before its interface is read
  const std::uint64_t wire_before = wire_tx_bytes();
  const comm::Stats before = engine.comm_stats();
  std::uint64_t scalar = 0, scalar_sent = 0, scalar_received = 0;
  std::vector<double> step_s, exposed_s;
  std::vector<predict::StepCompute> compute;
  for (int s = 0; s < steps; ++s) {
    zero::StepResult r = engine.step(1e-4f);
    step_s.push_back(r.seconds);
    exposed_s.push_back(r.exposed_comm_seconds);
    predict::StepCompute c{r.unit_forward_seconds, r.unit_backward_seconds, r.optimizer_seconds, 0};
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
    const comm::Stats after = engine.comm_stats();
    out->ring_per_step = (after.ring_bytes() - before.ring_bytes() - scalar) / steps;
    out->sent_per_step = (after.sent_bytes() - before.sent_bytes() - scalar_sent) / steps;
    out->received_per_step =
        (after.received_bytes() - before.received_bytes() - scalar_received) / steps;
    out->scalar_per_step = scalar_sent / steps;
  }
  return {median(step_s), median(exposed_s), std::move(compute)};
}

// Every rank's compute of each measured step: [step][rank].
std::vector<std::vector<predict::StepCompute>> every_rank(
    comm::Communicator& comm, const std::vector<predict::StepCompute>& mine) {
  std::vector<std::uint64_t> words;
  auto put = [&](double d) { words.push_back(std::bit_cast<std::uint64_t>(d)); };
  for (const predict::StepCompute& c : mine) {
    put(c.optimizer);
    put(c.other);
    put(c.beside_link);
    for (double d : c.forward) put(d);
    for (double d : c.backward) put(d);
  }
  const std::vector<std::uint64_t> all = gather_words(comm, words);
  auto get = [&](std::size_t i) { return std::bit_cast<double>(all[i]); };
  std::vector<std::vector<predict::StepCompute>> steps(mine.size());
  std::size_t at = 0;
  for (int r = 0; r < comm.size(); ++r) {
    for (std::size_t s = 0; s < mine.size(); ++s) {
      const std::size_t units = mine[s].forward.size();
      predict::StepCompute c;
      c.optimizer = get(at), c.other = get(at + 1), c.beside_link = get(at + 2);
      for (std::size_t u = 0; u < units; ++u) c.forward.push_back(get(at + 3 + u));
      for (std::size_t u = 0; u < units; ++u) c.backward.push_back(get(at + 3 + units + u));
      at += 3 + 2 * units;
      steps[s].push_back(std::move(c));
    }
  }
  return steps;
}

// The planner's replay of each measured step, with every rank's compute of that step
// (predict/schedule.h): the median step, and the link's busy time (the same in every step).
struct Replayed {
  double step_seconds = 0, link_seconds = 0;
};
Replayed replay_steps(const predict::EngineRun& run, int ranks_per_host, const predict::Link& link,
                      const std::vector<std::vector<predict::StepCompute>>& steps, bool overlap) {
  std::vector<double> seconds;
  double link_seconds = 0;
  for (const auto& ranks : steps) {
    const predict::ScheduledStep s =
        predict::predict_step(run, ranks_per_host, link, ranks, overlap);
    seconds.push_back(s.step_seconds);
    link_seconds = s.comm_seconds;
  }
  return {median(seconds), link_seconds};
}

// The model the kernel rates are measured on: the run's, cut to a few layers (the GPT's
// embeddings, two blocks and its final unit; the MLP's first, a middle and its last layer),
// so every kind of unit is timed in a fraction of the run's memory.
ModelSpec calibration_model(const ModelSpec& spec) {
  return spec.shallower(spec.is_gpt() ? 2 : 3);
}

// This rank's compute alone on this CPU: a one-rank engine of calibration_model() with the
// run's options, on a threads communicator of its own so that no collective moves a byte,
// `steps` steps after a warm-up (run_steps). The stage and ZeRO++ are the run's, so each
// unit's compute does the run's 16-bit conversions, gathers' bookkeeping and quantization (on
// one rank, of whole units rather than shards); no memory budget applies (it is the run's).
// Every rank measures at once, sharing the machine as the run will.
zero::EngineOptions alone_options(zero::EngineOptions options) {
  options.ranks_per_host = 0;
  options.rank_memory = 0;
  return options;
}
std::vector<predict::StepCompute> compute_alone(const ModelSpec& run_spec, const Launch& launch,
                                                const zero::EngineOptions& run_options, int steps) {
  const ModelSpec spec = calibration_model(run_spec);
  const zero::EngineOptions options = alone_options(run_options);
  std::vector<predict::StepCompute> compute;
  comm::run_thread_ranks(1, launch.options, [&](comm::Communicator& alone) {
    compute = run_steps(alone, spec, launch, options, steps, nullptr).compute;
  });
  return compute;
}

// compute_alone() beside a stream of collectives on the link: a thread of this rank all-gathers
// kLinkProbeBytes from every rank again and again, each rank's first byte saying whether it
// still computes, until no rank does. An all-gather, as no reduction's staging grows by it.
// Adds to `gathers` the seconds of each all-gather every rank issued while computing.
constexpr std::size_t kLinkProbeBytes = std::size_t{1} << 20;
std::vector<predict::StepCompute> compute_beside_link(comm::Communicator& comm,
                                                      const ModelSpec& spec, const Launch& launch,
                                                      const zero::EngineOptions& options, int steps,
                                                      std::vector<double>& gathers) {
  constexpr std::size_t kBytes = kLinkProbeBytes;
  std::atomic<bool> computing{true};
  std::exception_ptr failed;
  std::thread traffic([&] {
    try {
      std::vector<std::uint8_t> mine(kBytes, 0), all(kBytes * std::size_t(comm.size()));
      for (bool any = true; any;) {
        mine[0] = computing.load() ? 1 : 0;
        const auto start = std::chrono::steady_clock::now();
        comm.all_gather_async(mine.data(), all.data(), all.size(), DType::u8).wait();
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        any = false;
        bool every = true;
        for (int r = 0; r < comm.size(); ++r) {
          any = any || all[std::size_t(r) * kBytes] != 0;
          every = every && all[std::size_t(r) * kBytes] != 0;
        }
        if (every) gathers.push_back(took.count());
      }
    } catch (...) {
      failed = std::current_exception();
    }
  });
  std::vector<predict::StepCompute> compute;
  try {
    compute = compute_alone(spec, launch, options, steps);
  } catch (...) {
    computing = false;
    traffic.join();
    throw;
  }
  computing = false;
  traffic.join();
  if (failed) std::rethrow_exception(failed);
  return compute;
}

double units_seconds(const predict::StepCompute& c) {
  return std::accumulate(c.forward.begin(), c.forward.end(), 0.0) +
         std::accumulate(c.backward.begin(), c.backward.end(), 0.0);
}

// The kernel rates of steps computed alone: the units' FLOPs over the median seconds of their
// forwards and of their backwards, the optimizer's parameters over its median, the rest's median.
predict::KernelRates kernel_rates(const predict::EngineRun& one,
                                  const std::vector<predict::StepCompute>& compute,
                                  const std::vector<predict::StepCompute>& beside_link) {
  double forward_flops = 0, backward_flops = 0;
  for (const predict::UnitFlops& f : predict::unit_flops(one.model, one.micro_batch)) {
    forward_flops += static_cast<double>(one.grad_accum) * f.forward;
    backward_flops += static_cast<double>(one.grad_accum) * f.backward;
  }
  std::vector<double> forward, backward, optimizer, other;
  for (const predict::StepCompute& c : compute) {
    forward.push_back(std::accumulate(c.forward.begin(), c.forward.end(), 0.0));
    backward.push_back(std::accumulate(c.backward.begin(), c.backward.end(), 0.0));
    optimizer.push_back(c.optimizer);
    other.push_back(c.other);
  }
  // A clock too coarse to see a part would give an infinite rate: one tick instead.
  constexpr double kTick = 1e-9;
  predict::KernelRates rates;
  rates.forward_flops_per_second = forward_flops / std::max(median(forward), kTick);
  rates.backward_flops_per_second = backward_flops / std::max(median(backward), kTick);
  rates.optimizer_params_per_second =
      static_cast<double>(predict::optimizer_params(one, 0)) / std::max(median(optimizer), kTick);
  rates.other_seconds = median(other);
  if (!beside_link.empty()) {
    std::vector<double> alone, beside;
    for (const predict::StepCompute& c : compute) alone.push_back(units_seconds(c));
    for (const predict::StepCompute& c : beside_link) beside.push_back(units_seconds(c));
    rates.beside_link = std::max(median(alone), kTick) / std::max(median(beside), kTick);
  }
  return rates;
}

// Ranks per host under mpirun (it fills hosts in rank order); every rank on one host else.
int ranks_per_host(const comm::Communicator& comm) {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int per_host = local ? std::atoi(local) : 0;
  return per_host >= 1 && comm.size() % per_host == 0 ? per_host : comm.size();
}

}  // namespace

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
                         zero::EngineOptions options, int steps, const predict::Link& link) {
  const int per_host = ranks_per_host(comm);
  if (link.bits_per_second > 0 && per_host == comm.size()) {  // alike on every rank
    throw UsageErrorOnEveryRank(field_ref("link_rate") + ": all " + std::to_string(comm.size()) +
                                " ranks are on one host, so no collective crosses a link; give "
                                "it for ranks on more than one host");
  }
  RankMeasure m;
  const predict::EngineRun planned =
      engine_run(spec, options, launch, comm.size(), comm.ranks_per_host());
  const predict::RankPeak peak = predict::predict_rank_peak(planned, comm.rank());
  m.predicted_at_peak = peak.bytes;
  m.predicted_peak = peak.peak_bytes;
  if (first_on_host()) {  // this host's ranks are a block (mpirun fills hosts in rank order)
    m.wire_predicted_per_step =
        predict::predict_host_send_bytes(planned, per_host)[comm.rank() / per_host];
  }
  // The kernel rates, alone and beside the link (when ranks span hosts and the link is known):
  // half of their steps before the measured ones and half after, so that a machine speeding
  // up or slowing down over the measurement moves both alike.
  const bool beside = per_host < comm.size() && link.bits_per_second > 0;
  std::vector<predict::StepCompute> alone, busy;
  std::vector<double> probe_gathers;
  auto calibrate = [&](int n, bool alone_first) {
    for (int pass = 0; pass < 2; ++pass) {
      comm.barrier();
      if ((pass == 0) == alone_first) {
        for (auto& c : compute_alone(spec, launch, options, n)) alone.push_back(std::move(c));
      } else if (beside) {
        for (auto& c : compute_beside_link(comm, spec, launch, options, n, probe_gathers))
          busy.push_back(std::move(c));
      }
    }
    comm.barrier();
  };
  calibrate(std::max(1, (steps + 1) / 2), true);
  // The stage's peak resident size is its own engine's, not the calibration's (one process
  // holds every rank of the threads backend: its rank 0 resets it once all are done).
  if (launch.backend == "mpi" || comm.rank() == 0) reset_process_peak();
  comm.barrier();
  m.rss_baseline = proc_status_kib("VmRSS:");
  const Timing overlapped = run_steps(comm, spec, launch, options, steps, &m);
  m.rss_peak = proc_status_kib("VmHWM:");
  const zero::EngineOptions given = options;
  const bool overlap = options.overlap;
  options.overlap = false;
  options.prefetch = false;
  const Timing sync = run_steps(comm, spec, launch, options, steps, nullptr);
  options = given;
  calibrate(std::max(1, steps / 2), false);
  m.step_seconds = overlapped.step;
  m.exposed_seconds = overlapped.exposed;
  m.step_seconds_sync = sync.step;
  m.exposed_seconds_sync = sync.exposed;
  if (link.bits_per_second > 0) {
    predict::EngineRun sync_run = planned;
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
  // The step predicted from the kernel rates: each unit's FLOPs at every rank's own rates,
  // through the engine's schedule on the link (on one host, shared memory taken as free).
  const predict::KernelRates rates = kernel_rates(
      engine_run(calibration_model(spec), alone_options(given), launch, 1), alone, busy);
  m.rate_forward = rates.forward_flops_per_second;
  m.rate_backward = rates.backward_flops_per_second;
  m.rate_optimizer = rates.optimizer_params_per_second;
  m.rate_other = rates.other_seconds;
  m.rate_beside_link = rates.beside_link;
  // The link's pace beside compute, from the slowest rank's median probe (every rank calls
  // gather_words, probes or not).
  const double probe = probe_gathers.empty() ? 0.0 : median(probe_gathers);
  double slowest = 0;
  for (std::uint64_t w : gather_words(comm, {std::bit_cast<std::uint64_t>(probe)})) {
    slowest = std::max(slowest, std::bit_cast<double>(w));
  }
  predict::Link paced = link;
  if (beside && slowest > 0) {
    const double at_rate =
        predict::collective_seconds(planned, per_host, link, predict::LinkCollective::all_gather,
                                    std::uint64_t(comm.size()) * kLinkProbeBytes, 1);
    m.link_beside_compute = at_rate / slowest;
    paced.bits_per_second = link.bits_per_second * m.link_beside_compute;
  }
  if (per_host == comm.size() || link.bits_per_second > 0) {
    const std::vector<predict::StepCompute> at_rates =
        every_rank(comm, {predict::compute_at_rates(planned, comm.rank(), rates)}).front();
    predict::EngineRun sync_run = planned;
    sync_run.prefetch = false;
    const predict::ScheduledStep with =
        predict::predict_step(planned, per_host, paced, at_rates, overlap);
    m.rated_step_seconds = with.step_seconds;
    m.rated_compute_seconds = with.compute_seconds;
    m.rated_link_seconds = with.comm_seconds;
    m.rated_step_seconds_sync =
        predict::predict_step(sync_run, per_host, paced, at_rates, false).step_seconds;
  }
  const plan::BytesPerParam bpp = engine_bytes_per_param(options);
  const std::uint64_t params = spec.param_count();
  m.predicted_state = engine_model_state_bytes(planned, options, params, comm.rank());
  // ZeRO++'s gathers (qwZ's int8 payloads, hpZ's host rings) are not in the planner's ring
  // column: the engine's own bucket-by-bucket ring then predicts them.
  // 8-bit slots add the exchange of their blocks' edge maxima, and Adafactor that of its split
  // tensors' sums, which no formula has; nor has it a LoRA base's gathers at stage 3.
  m.predicted_comm =
      options.zeropp.any() || spec.lora()
          ? predict::predict_rank_ring_bytes(planned, comm.rank())
          : plan::ring_step_bytes(options.stage, params, bpp, comm.size(), comm.rank()) +
                std::uint64_t(comm.size() - 1) * predict::optimizer_exchange_bytes(planned);
  return m;
}

void reset_process_peak() {
  malloc_trim(0);
  reset_peak_rss();
}

std::size_t RankMeasure::word_count() {
  return 4 * kCategoryCount + 33;
}

std::vector<std::uint64_t> RankMeasure::to_words() const {
  std::vector<std::uint64_t> w(live.begin(), live.end());
  w.insert(w.end(), peak.begin(), peak.end());
  w.insert(w.end(), at_peak.begin(), at_peak.end());
  w.insert(w.end(), predicted_at_peak.begin(), predicted_at_peak.end());
  for (std::uint64_t v :
       {model_state, peak_total, sent_per_step, scalar_per_step, rss_baseline, rss_peak,
        predicted_state, predicted_comm, predicted_peak, received_per_step, ring_per_step,
        wire_tx_per_step, wire_first_on_host, wire_predicted_per_step}) {
    w.push_back(v);
  }
  for (double d :
       {step_seconds, exposed_seconds, step_seconds_sync, exposed_seconds_sync,
        link_bits_per_second, link_delay_seconds, predicted_step_seconds, predicted_link_seconds,
        predicted_step_seconds_sync, rate_forward, rate_backward, rate_optimizer, rate_other,
        rated_step_seconds, rated_step_seconds_sync, rated_compute_seconds, rated_link_seconds,
        rate_beside_link, link_beside_compute}) {
    w.push_back(std::bit_cast<std::uint64_t>(d));
  }
  ZERODP_CHECK(w.size() == word_count());
  return w;
}

RankMeasure RankMeasure::from_words(const std::uint64_t* w) {
  RankMeasure m;
  std::copy(w, w + kCategoryCount, m.live.begin());
  std::copy(w + kCategoryCount, w + 2 * kCategoryCount, m.peak.begin());
  std::copy(w + 2 * kCategoryCount, w + 3 * kCategoryCount, m.at_peak.begin());
  std::copy(w + 3 * kCategoryCount, w + 4 * kCategoryCount, m.predicted_at_peak.begin());
  const std::uint64_t* p = w + 4 * kCategoryCount;
  m.model_state = p[0], m.peak_total = p[1], m.sent_per_step = p[2], m.scalar_per_step = p[3];
  m.rss_baseline = p[4], m.rss_peak = p[5], m.predicted_state = p[6], m.predicted_comm = p[7];
  m.predicted_peak = p[8], m.received_per_step = p[9], m.ring_per_step = p[10];
  m.wire_tx_per_step = p[11], m.wire_first_on_host = p[12], m.wire_predicted_per_step = p[13];
  m.step_seconds = std::bit_cast<double>(p[14]);
  m.exposed_seconds = std::bit_cast<double>(p[15]);
  m.step_seconds_sync = std::bit_cast<double>(p[16]);
  m.exposed_seconds_sync = std::bit_cast<double>(p[17]);
  m.link_bits_per_second = std::bit_cast<double>(p[18]);
  m.link_delay_seconds = std::bit_cast<double>(p[19]);
  m.predicted_step_seconds = std::bit_cast<double>(p[20]);
  m.predicted_link_seconds = std::bit_cast<double>(p[21]);
  m.predicted_step_seconds_sync = std::bit_cast<double>(p[22]);
  m.rate_forward = std::bit_cast<double>(p[23]);
  m.rate_backward = std::bit_cast<double>(p[24]);
  m.rate_optimizer = std::bit_cast<double>(p[25]);
  m.rate_other = std::bit_cast<double>(p[26]);
  m.rated_step_seconds = std::bit_cast<double>(p[27]);
  m.rated_step_seconds_sync = std::bit_cast<double>(p[28]);
  m.rated_compute_seconds = std::bit_cast<double>(p[29]);
  m.rated_link_seconds = std::bit_cast<double>(p[30]);
  m.rate_beside_link = std::bit_cast<double>(p[31]);
  m.link_beside_compute = std::bit_cast<double>(p[32]);
  return m;
}

namespace {

// Each category's figure of one rank, keyed by the ledger's category names.
nlohmann::json by_category(const std::array<std::uint64_t, kCategoryCount>& figures) {
  nlohmann::json j;
  for (int c = 0; c < kCategoryCount; ++c) {
    j[std::string(category_name(static_cast<Category>(c)))] = figures[c];
  }
  return j;
}

// The seed's cell G, measured (rank 0's medians per training step): compute is the overlapped
// step less its exposed wait; the communication time is what the same steps waited with
// overlap and prefetch off (every collective waited at once).
nlohmann::json timing_json(const RankMeasure& m) {
  const double compute = m.step_seconds - m.exposed_seconds;
  const double comm = m.exposed_seconds_sync;
  nlohmann::json t = {
      {"step_seconds", m.step_seconds},
      {"step_seconds_no_overlap", m.step_seconds_sync},
      {"compute_seconds", compute},
      {"comm_seconds", comm},
      {"exposed_seconds", m.exposed_seconds},
      {"hidden_fraction", comm > 0 ? 1.0 - m.exposed_seconds / comm : 0.0},
      {"efficiency", compute / (compute + m.exposed_seconds)},
      {"efficiency_no_overlap", (m.step_seconds_sync - comm) / m.step_seconds_sync}};
  // The planner's replay of the engine's schedule on the link (the slowest rank's compute,
  // part by part): a predicted step. Its efficiency is the compute measured here over that
  // step, so predicted and measured efficiency differ exactly as the steps do.
  if (m.link_bits_per_second > 0) {
    const double compute_sync = m.step_seconds_sync - comm;
    t["link"] = {{"rate_bits_per_second", m.link_bits_per_second},
                 {"delay_seconds", m.link_delay_seconds}};
    t["predicted_step_seconds"] = m.predicted_step_seconds;
    t["predicted_comm_seconds"] = m.predicted_link_seconds;
    t["predicted_exposed_seconds"] = std::max(0.0, m.predicted_step_seconds - compute);
    t["predicted_efficiency"] = std::min(1.0, compute / m.predicted_step_seconds);
    t["predicted_step_seconds_no_overlap"] = m.predicted_step_seconds_sync;
    t["predicted_efficiency_no_overlap"] =
        std::min(1.0, compute_sync / m.predicted_step_seconds_sync);
  }
  // The step predicted before it ran: each unit's FLOPs at the rates this rank's kernels
  // reached alone, through the same replay (0 when ranks span hosts and no link was given).
  t["kernel_rates"] = {{"forward_flops_per_second", m.rate_forward},
                       {"backward_flops_per_second", m.rate_backward},
                       {"optimizer_params_per_second", m.rate_optimizer},
                       {"other_seconds", m.rate_other},
                       {"beside_link", m.rate_beside_link},
                       {"link_beside_compute", m.link_beside_compute}};
  if (m.rated_step_seconds > 0) {
    t["predicted_from_rates"] = {
        {"step_seconds", m.rated_step_seconds},
        {"step_seconds_no_overlap", m.rated_step_seconds_sync},
        {"compute_seconds", m.rated_compute_seconds},
        {"comm_seconds", m.rated_link_seconds},
        {"efficiency", std::min(1.0, m.rated_compute_seconds / m.rated_step_seconds)},
        {"step_error", m.rated_step_seconds / m.step_seconds - 1.0},
        {"step_error_no_overlap", m.rated_step_seconds_sync / m.step_seconds_sync - 1.0}};
  } else {
    t["predicted_from_rates"] = nullptr;
  }
  return t;
}

// Each host's interface, in host order (mpirun fills hosts in rank order); null off cluster
// hosts. With one rank per host everything a rank sends crosses its host's link, so the ring
// column is the prediction beside it; with more, ranks of one host talk through shared memory.
nlohmann::json wire_json(const StageMeasure& st) {
  nlohmann::json tx = nlohmann::json::array(), ring = nlohmann::json::array(),
                 predicted = nlohmann::json::array();
  for (const RankMeasure& m : st.ranks) {
    if (!m.wire_first_on_host) continue;
    tx.push_back(m.wire_tx_per_step);
    ring.push_back(m.predicted_comm);
    predicted.push_back(m.wire_predicted_per_step);
  }
  if (tx.empty()) return nullptr;
  // predicted_bytes_per_step: what the backend's algorithm sends off each host (any number of
  // ranks per host); the ring column only with one rank per host.
  nlohmann::json j = {{"tx_bytes_per_step", tx}, {"predicted_bytes_per_step", predicted}};
  if (tx.size() == st.ranks.size()) j["predicted_ring_bytes_per_step"] = ring;
  return j;
}

nlohmann::json rank_json(std::size_t rank, const RankMeasure& m) {
  return {{"rank", rank},
          {"model_state_bytes", m.model_state},
          {"predicted_model_state_bytes", m.predicted_state},
          {"peak_bytes", m.peak_total},
          {"predicted_peak_bytes", m.predicted_peak},
          {"at_peak_bytes", by_category(m.at_peak)},
          {"predicted_at_peak_bytes", by_category(m.predicted_at_peak)},
          {"comm_sent_bytes", m.sent_per_step},
          {"comm_received_bytes", m.received_per_step},
          {"comm_ring_bytes", m.ring_per_step},
          {"predicted_comm_bytes", m.predicted_comm},
          {"scalar_comm_bytes", m.scalar_per_step},
          {"bytes", by_category(m.live)},
          {"peak_bytes_by_category", by_category(m.peak)},
          {"rss_peak_bytes", m.rss_peak},
          {"rss_baseline_bytes", m.rss_baseline},
          {"step_seconds", m.step_seconds},
          {"exposed_comm_seconds", m.exposed_seconds},
          {"step_seconds_no_overlap", m.step_seconds_sync},
          {"exposed_comm_seconds_no_overlap", m.exposed_seconds_sync}};
}

}  // namespace

nlohmann::json measure_json(const MeasureSetup& s, const StageMeasure& st) {
  nlohmann::json j;
  j["stage"] = stage_number(st.stage);
  j["ranks"] = s.ranks;
  j["params"] = s.params;
  j["backend"] = s.backend;
  j["model"] = s.model;
  if (!s.compute.empty()) j["compute"] = s.compute;
  j["threads"] = s.threads;
  j["steps"] = s.steps;
  const RankMeasure& r0 = st.ranks[0];
  j["predicted"] = {{"model_state_bytes", r0.predicted_state},
                    {"peak_bytes", r0.predicted_peak},
                    {"peak_bytes_by_category", by_category(r0.predicted_at_peak)},
                    {"comm_bytes_per_gpu", r0.predicted_comm},
                    {"comm_convention", "ring"}};
  j["timing"] = timing_json(r0);
  nlohmann::json wire = wire_json(st);
  if (!wire.is_null()) j["wire"] = std::move(wire);
  j["per_rank"] = nlohmann::json::array();
  for (std::size_t i = 0; i < st.ranks.size(); ++i)
    j["per_rank"].push_back(rank_json(i, st.ranks[i]));
  return j;
}

}  // namespace zerodp::run

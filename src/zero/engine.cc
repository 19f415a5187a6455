#include "zerodp/zero/engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "zero/engine_impl.h"
#include "zerodp/common/dtype.h"
#include "zerodp/common/error.h"
#include "zerodp/common/lane_pool.h"
#include "zerodp/common/partition.h"

namespace zerodp::zero {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Compute seconds between laps: wall time less the time this thread spent blocked on
// collectives (the communicator counts it), so a region's figure is its own work.
class ComputeClock {
 public:
  // waited: the seconds blocked in all the engine's communicators so far (Impl::stats).
  explicit ComputeClock(std::function<double()> waited)
      : waited_now_(std::move(waited)), at_(Clock::now()), waited_(waited_now_()) {}
  double lap() {
    const auto now = Clock::now();
    const double waited = waited_now_();
    const double seconds = std::chrono::duration<double>(now - at_).count() - (waited - waited_);
    at_ = now;
    waited_ = waited;
    return std::max(seconds, 0.0);
  }

 private:
  std::function<double()> waited_now_;
  Clock::time_point at_;
  double waited_;
};

// Options are checked before anything is sized from them (the partition's buckets first).
const EngineOptions& validated(const EngineOptions& o) {
  o.validate();
  return o;
}

}  // namespace

Engine::Impl::Impl(model::Model& m, comm::Communicator& c, const data::SampleSource& s,
                   const EngineOptions& o)
    : model(m),
      comm(c),
      samples(s),
      opt(validated(o)),
      units(m.units()),
      ranks(c.size()),
      rank(c.rank()),
      part(
          make_partition(model::param_counts(units), bucket_elements(o.bucket_bytes), ranks, rank)),
      count_in(ledger, o, m, c),
      rule(opt.rule()),
      hyper(opt.step_hyper()),
      scaler(o.loss_scale, o.precision == DType::f16) {
  params16 = Buffer<std::uint16_t>(ledger, Category::params16,
                                   full_params() ? part.total : part.local_total);
  grads16 = Buffer<std::uint16_t>(ledger, Category::grads16,
                                  full_grads() ? part.total : part.local_total);
  const std::size_t optimizer_elems = full_optimizer() ? part.total : part.local_total;
  master = Buffer<float>(ledger, Category::master32, optimizer_elems);
  if (rule.blockwise()) {
    allocate_blockwise();
  } else if (rule.factored()) {
    allocate_factored();
  } else {
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
      slots[k] = Buffer<float>(
          ledger, holds_squares(rule.row->slots[k]) ? Category::optim_v : Category::optim_m,
          optimizer_elems);
    }
  }

  is_read.assign(units.size(), false);
  std::size_t max_view = 0;
  std::size_t next_offset = 0;
  for (const auto& u : units) {
    ZERODP_CHECK_MSG(u.param_offset == next_offset, "units must tile the flat layout in order");
    next_offset += u.param_count;
    std::size_t view = u.param_count;
    for (int r : u.reads) {
      ZERODP_CHECK_MSG(r >= 0 && static_cast<std::size_t>(r) < units.size() &&
                           units[r].param_offset < u.param_offset,
                       "a unit may read only earlier units");
      is_read[r] = true;
      view += units[r].param_count;
    }
    max_view = std::max(max_view, view);
  }
  param32 = Buffer<float>(ledger, Category::scratch32, max_view);
  allocate_frozen();
  grad32 = Buffer<float>(ledger, Category::scratch32, part.max_unit);
  read_grad32.resize(units.size());
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (is_read[u])
      read_grad32[u] = Buffer<float>(ledger, Category::scratch32, units[u].param_count);
  }

  hosts = HostGroups::open(comm, opt);
  if (!full_params()) {
    gatherer.emplace(units, part, comm, ledger, opt.precision, opt.prefetch,
                     opt.zeropp.qwz ? opt.qwz_block : 0,
                     opt.zeropp.hpz ? hosts.host.get() : nullptr);
    if (has_frozen()) {
      frozen_gatherer.emplace(frozen_units, frozen_part, comm, ledger, opt.precision, opt.prefetch);
    }
  }
  reducer.emplace(sharding(opt.stage), units, part, comm, ledger, opt.precision, opt.overlap,
                  grads16.data(), hosts.host.get(), hosts.peers.get(),
                  opt.zeropp.qgz ? opt.qwz_block : 0);
  // The largest reductions a step issues: a bucket of 16-bit grads, and the scalars.
  comm.reserve(part.max_bucket, opt.precision);
  comm.reserve(3, DType::f32);
  param_gathers.resize(units.size());
  init_weights();
  init_frozen();
}

Engine::Impl::CountIn::CountIn(Ledger& ledger, const EngineOptions& o, model::Model& m,
                               comm::Communicator& c)
    : model(m), comm(c) {
  ledger.set_rank(comm.rank());
  ledger.set_budget(o.rank_memory);
  model.set_ledger(&ledger);
  try {
    comm.set_ledger(&ledger);
  } catch (...) {
    model.set_ledger(nullptr);
    throw;
  }
}

Engine::Impl::CountIn::~CountIn() {
  model.set_ledger(nullptr);  // moving counts to no ledger never throws
  comm.set_ledger(nullptr);
}

void Engine::Impl::init_weights() {
  // Every rank initialises every unit in full from the seed, then keeps what it owns: the
  // weights are the same whatever N and the stage. The unit is built in grad32 (the largest
  // unit's fp32 scratch, free until the first backward), so setup needs nothing more.
  for (std::size_t u = 0; u < units.size(); ++u) {
    const std::size_t base = units[u].param_offset;
    std::span<float> w(grad32.data(), units[u].param_count);
    model.init_unit(static_cast<int>(u), w, opt.seed);
    if (full_optimizer()) std::copy(w.begin(), w.end(), master.data() + base);
    if (full_params()) float_to_half(opt.precision, w.data(), params16.data() + base, w.size());
    for (int b : part.unit_buckets[u]) {
      const Bucket& bucket = part.buckets[b];
      const float* own = w.data() + (bucket.offset - base) + bucket.shard.offset;
      if (!full_optimizer()) std::copy(own, own + bucket.shard.size, master.data() + bucket.local);
      if (!full_params()) {
        float_to_half(opt.precision, own, params16.data() + bucket.local, bucket.shard.size);
      }
    }
  }
}

void Engine::Impl::split(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn,
                         std::size_t worth, std::size_t align) {
  // Below `worth` elements waking the pool costs more than the pass (tens of microseconds).
  const std::size_t kAlign = align;
  if (!pool || n < worth) {
    fn(0, n);
    return;
  }
  const std::size_t parts = std::size_t(pool->lanes());
  pool->run([&](int lane) {
    const std::size_t p = std::size_t(lane);
    const std::size_t begin = std::min(n, n * p / parts / kAlign * kAlign);
    const std::size_t end = p + 1 == parts ? n : std::min(n, n * (p + 1) / parts / kAlign * kAlign);
    if (begin < end) fn(begin, end);
  });
}

const std::uint16_t* Engine::Impl::params16_of(int unit) const {
  if (gatherer) return gatherer->data(unit);
  return params16.data() + units[unit].param_offset;
}

void Engine::Impl::wait_param_gathers(int unit) {
  for (comm::Handle& h : param_gathers[unit]) h.wait();
  param_gathers[unit].clear();
}

model::UnitViews Engine::Impl::views(int unit, bool with_grads) {
  model::UnitViews v;
  std::vector<int> list = {unit};
  list.insert(list.end(), units[unit].reads.begin(), units[unit].reads.end());
  std::size_t at = 0;
  for (int u : list) {
    const std::size_t n = units[u].param_count;
    wait_param_gathers(u);
    const std::uint16_t* from = params16_of(u);
    float* to = param32.data() + at;
    split(n, [&](std::size_t b, std::size_t e) {
      half_to_float(opt.precision, from + b, to + b, e - b);
    });
    v.params.emplace_back(param32.data() + at, n);
    at += n;
    if (with_grads) {
      float* g = is_read[u] ? read_grad32[u].data() : grad32.data();
      v.grads.emplace_back(g, n);
    }
  }
  if (!has_frozen()) return v;
  at = 0;
  for (int u : list) {
    const std::size_t n = units[u].frozen_count;
    float* to = frozen32.data() + at;
    frozen_view(u, frozen16_of(u), to);
    v.frozen.emplace_back(to, n);
    at += n;
  }
  return v;
}

void Engine::Impl::forward_pass(std::vector<double>* unit_seconds) {
  std::vector<int> order(units.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  if (gatherer) gatherer->begin_pass(order, params16.data(), ParamGatherer::Pass::forward);
  if (frozen_gatherer) {
    frozen_gatherer->begin_pass(order, frozen16.data(), ParamGatherer::Pass::forward);
  }
  ComputeClock clock([this] { return stats().wait_seconds(); });
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (gatherer) gatherer->acquire(i);
    if (frozen_gatherer) frozen_gatherer->acquire(i);
    model.forward(order[i], views(order[i], false));
    if (gatherer) gatherer->release(i);
    if (frozen_gatherer) frozen_gatherer->release(i);
    if (unit_seconds) (*unit_seconds)[order[i]] += clock.lap();
  }
}

void Engine::Impl::backward_pass(bool first_micro, bool last_micro,
                                 std::vector<double>* unit_seconds) {
  std::vector<int> order(units.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(units.size() - 1 - i);
  for (std::size_t u = 0; u < units.size(); ++u) {
    if (is_read[u]) std::fill_n(read_grad32.data()[u].data(), units[u].param_count, 0.0f);
  }
  if (gatherer) gatherer->begin_pass(order, params16.data(), ParamGatherer::Pass::backward);
  if (frozen_gatherer) {
    frozen_gatherer->begin_pass(order, frozen16.data(), ParamGatherer::Pass::backward);
  }
  ComputeClock clock([this] { return stats().wait_seconds(); });
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int unit = order[i];
    if (gatherer) gatherer->acquire(i);
    if (frozen_gatherer) frozen_gatherer->acquire(i);
    if (!is_read[unit]) std::fill_n(grad32.data(), units[unit].param_count, 0.0f);
    model.backward(unit, views(unit, true));
    if (gatherer) gatherer->release(i);
    if (frozen_gatherer) frozen_gatherer->release(i);
    const float* g = is_read[unit] ? read_grad32[unit].data() : grad32.data();
    reducer->unit_done(unit, {g, units[unit].param_count}, first_micro, last_micro);
    if (unit_seconds) (*unit_seconds)[unit] += clock.lap();
  }
}

std::pair<double, double> Engine::Impl::local_grad_stats() const {
  // Over this rank's own chunk of every bucket, in bucket order, whatever the stage: the
  // partial sums, hence the global norm, are then the same bits at every stage.
  double sum_sq = 0.0, non_finite = 0.0;
  float block[1024];
  for (const Bucket& bucket : part.buckets) {
    const std::uint16_t* g = full_grads() ? grads16.data() + bucket.offset + bucket.shard.offset
                                          : grads16.data() + bucket.local;
    for (std::size_t done = 0; done < bucket.shard.size; done += 1024) {
      const std::size_t len = std::min<std::size_t>(1024, bucket.shard.size - done);
      half_to_float(opt.precision, g + done, block, len);
      for (std::size_t i = 0; i < len; ++i) {
        if (!std::isfinite(block[i])) {
          non_finite += 1.0;
        } else {
          sum_sq += double(block[i]) * double(block[i]);
        }
      }
    }
  }
  return {sum_sq, non_finite};
}

std::size_t Engine::Impl::update_first(const Bucket& bucket) const {
  return full_optimizer() ? bucket.offset : bucket.local;
}

const std::uint16_t* Engine::Impl::update_grads(const Bucket& bucket) const {
  if (!full_grads()) return grads16.data() + bucket.local;
  return grads16.data() + (full_optimizer() ? bucket.offset : bucket.offset + bucket.shard.offset);
}

void Engine::Impl::update(float lr, float grad_mul) {
  ++t;
  if (rule.blockwise()) {
    update_blockwise(lr, grad_mul);
    return;
  }
  if (rule.factored()) {
    update_factored(lr, grad_mul);
    return;
  }
  // Unsharded optimizer states: every element on every rank; sharded: this rank's chunks. Each
  // block of the master is rounded to its 16-bit params as soon as it is updated, while it is
  // in cache, and each bucket's params go to the other ranks as soon as the bucket is done.
  for (const Bucket& bucket : part.buckets) {
    const std::size_t first = update_first(bucket);
    const std::size_t count = full_optimizer() ? bucket.count : bucket.shard.size;
    const std::uint16_t* g = update_grads(bucket);
    std::uint16_t* p16 = own_params16(bucket);
    split(count, [&](std::size_t begin, std::size_t end) {
      float block[1024];
      for (std::size_t done = begin; done < end; done += 1024) {
        const std::size_t len = std::min<std::size_t>(1024, end - done);
        float* w = master.data() + first + done;
        half_to_float(opt.precision, g + done, block, len);
        optim::StepSpans spans{.param = {w, len}, .grad = {block, len}};
        for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
          spans.slot[k] = {slots[k].data() + first + done, len};
        }
        rule.step(spans, grad_mul, lr, t, hyper);
        float_to_half(opt.precision, w, p16 + done, len);
      }
    });
    publish_params16(bucket, opt.overlap);
  }
}

Flags Engine::Impl::agree_on_flags(float (&scalars)[3], bool overflow, bool stop) {
  // One float carries both flags: each rank adds 1 if it overflowed and N + 1 if it asks to
  // stop, so the sum is A + (N + 1) S with A, S <= N, a whole number below 2^24 while
  // N <= 4095: exact in fp32 in any summation order. Beyond that the stop flag needs a float
  // of its own.
  const bool packed = ranks <= 4095;
  const float stop_weight = float(ranks + 1);
  scalars[2] = (overflow ? 1.0f : 0.0f) + (packed && stop ? stop_weight : 0.0f);
  comm.all_reduce(scalars, 3, DType::f32);
  if (packed) {
    return {.overflow = std::fmod(scalars[2], stop_weight) > 0.0f,
            .stop = scalars[2] >= stop_weight};
  }
  float stops = stop ? 1.0f : 0.0f;
  comm.all_reduce(&stops, 1, DType::f32);
  return {.overflow = scalars[2] > 0.0f, .stop = stops > 0.0f};
}

std::uint16_t* Engine::Impl::own_params16(const Bucket& bucket) {
  if (full_optimizer()) return params16.data() + bucket.offset;
  if (!full_params()) return params16.data() + bucket.local;
  return params16.data() + bucket.offset + bucket.shard.offset;
}

void Engine::Impl::publish_params16(const Bucket& bucket, bool overlap_gathers) {
  if (full_optimizer() || !full_params()) return;
  std::uint16_t* full = params16.data() + bucket.offset;
  comm::Handle h =
      comm.all_gather_async(full + bucket.shard.offset, full, bucket.count, opt.precision);
  if (overlap_gathers) {
    param_gathers[bucket.unit].push_back(std::move(h));
  } else {
    h.wait();
  }
}

void Engine::Impl::rebuild_params16(bool overlap_gathers) {
  for (const Bucket& bucket : part.buckets) {
    const float* from = master.data() + (full_optimizer() ? bucket.offset : bucket.local);
    std::uint16_t* to = own_params16(bucket);
    split(full_optimizer() ? bucket.count : bucket.shard.size, [&](std::size_t b, std::size_t e) {
      float_to_half(opt.precision, from + b, to + b, e - b);
    });
    publish_params16(bucket, overlap_gathers);
  }
}

Engine::Engine(model::Model& model, comm::Communicator& comm, const data::SampleSource& samples,
               const EngineOptions& options)
    : impl_(std::make_unique<Impl>(model, comm, samples, options)) {}

Engine::~Engine() {
  // Collectives still in flight (param gathers overlapped into the next step, and, when a step
  // threw — a budget refused an allocation on this rank alone — gathers and reductions of
  // that step) read and write this engine's buffers, and peers' transfers read them too: they
  // must land before the buffers go. Every rank issued them, in the same order, so they
  // complete; a failed group fails them at once.
  for (auto& handles : impl_->param_gathers) {
    for (comm::Handle& h : handles) h.settle();
  }
  if (impl_->gatherer) impl_->gatherer->drain();
  if (impl_->frozen_gatherer) impl_->frozen_gatherer->drain();
  if (impl_->reducer) impl_->reducer->drain();
}

StepResult Engine::step(float lr, const std::function<bool()>& stop_requested) {
  Impl& e = *impl_;
  const auto t0 = Clock::now();
  const comm::Stats before = e.stats();
  StepResult result;
  result.loss_scale = e.scaler.scale();

  double loss_sum = 0.0;
  const int K = e.opt.grad_accum;
  result.unit_forward_seconds.assign(e.units.size(), 0.0);
  result.unit_backward_seconds.assign(e.units.size(), 0.0);
  for (int k = 0; k < K; ++k) {
    // The sample stream is consumed N*B samples a micro-step, rank r taking the r-th B: any
    // N continues a stream where another N left it.
    const std::size_t B = e.opt.micro_batch;
    const std::uint64_t first = e.samples_done + std::uint64_t(e.rank) * B;
    e.samples_done += std::uint64_t(e.ranks) * B;
    e.samples.draw(data::Split::train, first, B, e.batch);
    e.ledger.set_phase(Phase::forward);
    e.model.begin_micro_batch(micro_batch_of(e.batch, e.scaler.scale() / float(e.ranks * K)));
    e.forward_pass(&result.unit_forward_seconds);
    loss_sum += e.model.loss();
    e.ledger.set_phase(Phase::backward);
    e.backward_pass(k == 0, k == K - 1, &result.unit_backward_seconds);
  }
  e.reducer->finish();
  ComputeClock optimizer_clock([&e] { return e.stats().wait_seconds(); });

  // One small all-reduce carries the loss, the squared norm and the overflow and stop flags.
  // It runs when no ZeRO collective is in flight, so its bytes can be told apart exactly.
  e.ledger.set_phase(Phase::optimizer);
  auto [sum_sq, non_finite] = e.local_grad_stats();
  const bool stop = stop_requested && stop_requested();
  const std::vector<std::int64_t>& forced = e.opt.overflow_at_for_tests;
  const bool forced_overflow =
      std::find(forced.begin(), forced.end(), e.run_step + 1) != forced.end();
  float scalars[3] = {float(loss_sum / K), float(sum_sq), 0.0f};
  const comm::Stats before_scalars = e.stats();
  const Flags flags = e.agree_on_flags(scalars, non_finite > 0.0 || forced_overflow, stop);
  const comm::Stats after_scalars = e.stats();
  result.scalar_bytes = after_scalars.ring_bytes() - before_scalars.ring_bytes();
  result.scalar_sent_bytes = after_scalars.sent_bytes() - before_scalars.sent_bytes();
  result.scalar_received_bytes = after_scalars.received_bytes() - before_scalars.received_bytes();
  result.stop_requested = flags.stop;

  result.loss = scalars[0] / float(e.ranks);
  const float inv_scale = 1.0f / e.scaler.scale();
  result.grad_norm = std::sqrt(scalars[1]) * inv_scale;
  const bool overflow = flags.overflow || !std::isfinite(result.grad_norm);
  result.skipped = e.scaler.update(overflow);
  ++e.run_step;  // taken or skipped, a step of the run
  if (!result.skipped) {
    float clip = 1.0f;
    if (e.opt.clip_norm > 0.0f && result.grad_norm > e.opt.clip_norm) {
      clip = e.opt.clip_norm / (result.grad_norm + 1e-6f);
    }
    e.update(lr, inv_scale * clip);
  }
  result.optimizer_seconds = optimizer_clock.lap();
  result.step = e.t;

  const comm::Stats after = e.stats();
  // Everything but the scalar all-reduce (no ZeRO collective is in flight around it).
  result.ring_bytes = after.ring_bytes() - before.ring_bytes() - result.scalar_bytes;
  result.sent_bytes = after.sent_bytes() - before.sent_bytes() - result.scalar_sent_bytes;
  result.received_bytes =
      after.received_bytes() - before.received_bytes() - result.scalar_received_bytes;
  result.seconds = seconds_since(t0);
  result.exposed_comm_seconds = after.wait_seconds() - before.wait_seconds();
  result.compute_seconds = result.seconds - result.exposed_comm_seconds;
  return result;
}

float Engine::evaluate(const model::MicroBatch& batch) {
  Impl& e = *impl_;
  e.model.begin_micro_batch(batch);
  e.forward_pass();
  float loss = e.model.loss();
  e.comm.all_reduce(&loss, 1, DType::f32);
  return loss / float(e.ranks);
}

void Engine::set_threads(int threads) {
  ZERODP_CHECK_MSG(threads >= 1, "Engine::set_threads: expected at least 1 thread");
  impl_->pool = threads > 1 ? std::make_unique<LanePool>(threads) : nullptr;
}

void Engine::flush() {
  for (std::size_t u = 0; u < impl_->units.size(); ++u) impl_->wait_param_gathers(int(u));
}

std::int64_t Engine::steps_done() const {
  return impl_->t;
}
comm::Stats Engine::comm_stats() const {
  return impl_->stats();
}

const Ledger& Engine::ledger() const {
  return impl_->ledger;
}
const EngineOptions& Engine::options() const {
  return impl_->opt;
}

}  // namespace zerodp::zero

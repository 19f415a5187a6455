#include <algorithm>
#include <cmath>
#include <numeric>

#include "zerodp/common/error.h"
#include "zerodp/common/partition.h"
#include "zerodp/common/quantize.h"
#include "zerodp/common/shard.h"
#include "zerodp/plan/step_model.h"
#include "zerodp/predict/schedule.h"

namespace zerodp::predict {
namespace {

// Each rank's compute thread and one link: every rank runs the same program (the engine's
// order does not depend on timing), so the ranks advance together instruction by instruction.
// A collective starts when its last rank issued it and the link is free, and holds the link
// for its time; a wait moves each rank's clock to its end.
class Replay {
 public:
  explicit Replay(std::size_t ranks) : cpu_(ranks, 0.0), spent_(ranks, 0.0) {}
  int issue(double seconds) {
    const double start = std::max(*std::max_element(cpu_.begin(), cpu_.end()), link_free_);
    link_free_ = start + seconds;
    busy_ += seconds;
    starts_.push_back(start);
    ends_.push_back(link_free_);
    return static_cast<int>(ends_.size()) - 1;
  }
  void wait(int id) {
    if (id < 0) return;
    for (double& t : cpu_) t = std::max(t, ends_[id]);
  }
  // Each rank computes its part from where it stands, at its full pace while the link is idle
  // and at ranks[r].beside_link of it while the link carries a collective. Every collective
  // this compute runs beside is issued already: ranks issue them, in program order.
  template <class Part>
  void compute(const std::vector<StepCompute>& ranks, Part part) {
    for (std::size_t r = 0; r < cpu_.size(); ++r) {
      const double done = finish(cpu_[r], part(ranks[r]), ranks[r].beside_link);
      spent_[r] += done - cpu_[r];
      cpu_[r] = done;
    }
  }
  // Each rank's seconds of compute so far, slowed beside the link included.
  const std::vector<double>& spent() const { return spent_; }
  // The step ends on the rank that finishes last.
  double now() const { return *std::max_element(cpu_.begin(), cpu_.end()); }
  double busy() const { return busy_; }
  int issued() const { return static_cast<int>(ends_.size()); }

 private:
  double finish(double t, double work, double pace) const {
    if (pace == 1.0) return t + work;
    // The first collective still on the link at t; collectives hold the link one after another.
    std::size_t i = std::upper_bound(ends_.begin(), ends_.end(), t) - ends_.begin();
    for (; i < ends_.size() && work > 0; ++i) {
      if (t < starts_[i]) {  // idle until this collective starts
        const double idle = starts_[i] - t;
        if (work <= idle) return t + work;
        t = starts_[i];
        work -= idle;
      }
      const double room = (ends_[i] - t) * pace;  // work done before it ends
      if (work <= room) return t + work / pace;
      t = ends_[i];
      work -= room;
    }
    return t + work;
  }

  std::vector<double> cpu_, spent_;
  double link_free_ = 0, busy_ = 0;
  std::vector<double> starts_, ends_;  // each collective's time on the link, in issue order
};

// A param gather of a bucket; qwZ's (stage 3) moves every rank's int8 payload, as bytes
// (common/quantize.h).
double gather_seconds(const EngineRun& run, int ranks_per_host, const Link& link,
                      std::uint64_t count) {
  if (run.zeropp.qwz && sharding(run.stage).parameters) {
    return collective_seconds(run, ranks_per_host, link, LinkCollective::all_gather,
                              run.ranks * quantized_payload(count, run.ranks, run.qwz_block), 1);
  }
  return collective_seconds(run, ranks_per_host, link, LinkCollective::all_gather, count, 2);
}

// Stage 3's backward gather of a bucket: the forward's, or with hpZ a 16-bit all-gather over
// the hpZ host, which crosses the link only where an hpZ host spans hosts of the link.
double backward_gather_seconds(const EngineRun& run, int ranks_per_host, const Link& link,
                               std::uint64_t count) {
  const int h = run.hpz_ranks();
  if (h <= 0 || !sharding(run.stage).parameters) {
    return gather_seconds(run, ranks_per_host, link, count);
  }
  if (ranks_per_host % h == 0) return 0.0;  // inside one host of the link: shared memory
  EngineRun host = run;
  if (h % ranks_per_host == 0) host.ranks = h;  // a few whole hosts
  host.zeropp.qwz = false;
  return collective_seconds(host, ranks_per_host, link, LinkCollective::all_gather, count, 2);
}

// One of qgZ's two all-to-alls of a bucket (peak.h's qgz_bytes_to), the host's (`inside`) or
// the hosts': the handshake and a round trip when it crosses the link, and the most any host
// sends over it.
double qgz_seconds(const EngineRun& run, int ranks_per_host, const Link& link, std::uint64_t count,
                   bool inside) {
  const int n = run.ranks;
  if (n / ranks_per_host <= 1) return 0.0;
  const double bytes_per_second = link.bits_per_second / 8.0 / link.framing;
  double seconds = 0.0;
  {
    std::vector<double> sent(n / ranks_per_host, 0.0);
    for (int r = 0; r < n; ++r) {
      for (int j = 0; j < n; ++j) {
        const bool same_qgz_host = j / run.qgz_ranks() == r / run.qgz_ranks();
        if (same_qgz_host != inside || j / ranks_per_host == r / ranks_per_host) continue;
        sent[r / ranks_per_host] += double(qgz_bytes_to(run, count, r, j));
      }
    }
    const double most = *std::max_element(sent.begin(), sent.end());
    if (most > 0)
      seconds += link.delay_seconds + 2.0 * link.delay_seconds + most / bytes_per_second;
  }
  return seconds;
}

class EngineSchedule {
 public:
  EngineSchedule(const EngineRun& run, int ranks_per_host, const Link& link,
                 const std::vector<StepCompute>& compute, bool overlap)
      : run_(run),
        compute_(compute),
        overlap_(overlap),
        layout_(unit_layout(run.model)),
        replay_(compute.size()) {
    const std::vector<std::size_t> counts(layout_.counts.begin(), layout_.counts.end());
    part_ = make_partition(counts, bucket_elements(run.bucket_bytes), run.ranks, 0);
    const Sharding sharding = zerodp::sharding(run.stage);
    grads_sharded_ = sharding.gradients;
    params_sharded_ = sharding.parameters;
    gathers_after_update_ = sharding.optimizer_states && !sharding.parameters;
    const LinkCollective reduce =
        sharding.optimizer_states ? LinkCollective::reduce_scatter : LinkCollective::all_reduce;
    for (const Bucket& b : part_.buckets) {
      if (run.qgz_ranks() > 0 && params_sharded_) {
        // qgZ: the host's all-to-all travels from its issue; the hosts' one starts only when
        // the slot lands (zero/grad_reducer.h), and is waited at once.
        reduce_.push_back(qgz_seconds(run, ranks_per_host, link, b.count, true));
        reduce_second_.push_back(qgz_seconds(run, ranks_per_host, link, b.count, false));
      } else {
        reduce_.push_back(collective_seconds(run, ranks_per_host, link, reduce, b.count, 2));
        reduce_second_.push_back(-1.0);
      }
      gather_back_.push_back(backward_gather_seconds(run, ranks_per_host, link, b.count));
      gather_.push_back(gather_seconds(run, ranks_per_host, link, b.count));
    }
    // A frozen base (LoRA) has a gatherer of its own at stage 3, over its own buckets.
    const std::vector<std::size_t> frozen(layout_.frozen_words.begin(), layout_.frozen_words.end());
    frozen_part_ = make_partition(frozen, bucket_elements(run.bucket_bytes), run.ranks, 0);
    for (const Bucket& b : frozen_part_.buckets) {
      frozen_gather_.push_back(gather_seconds(run, ranks_per_host, link, b.count));
    }
    scalars_ = collective_seconds(run, ranks_per_host, link, LinkCollective::all_reduce, 3, 4);
    gathered_.assign(layout_.counts.size(), {});
    frozen_gathered_.assign(layout_.counts.size(), {});
    carried_.assign(layout_.counts.size(), {});
  }

  void step() {
    replay_.compute(compute_, [](const StepCompute& c) { return c.other; });
    for (std::uint64_t k = 0; k < run_.grad_accum; ++k) {
      forward();
      backward(k + 1 == run_.grad_accum);
    }
    if (grads_sharded_) {  // the reducer's finish(): slot 0, then slot 1
      land(0);
      land(1);
    }
    for (int id : reductions_) replay_.wait(id);
    reductions_.clear();
    in_slot_[0] = in_slot_[1] = -1;
    replay_.wait(replay_.issue(scalars_));  // the scalars: always waited at once
    replay_.compute(compute_, [](const StepCompute& c) { return c.optimizer; });
    if (gathers_after_update_) {
      for (std::size_t b = 0; b < part_.buckets.size(); ++b) {
        carried_[part_.buckets[b].unit].push_back(replay_.issue(gather_[b]));
        if (!overlap_) replay_.wait(carried_[part_.buckets[b].unit].back());
      }
    }
  }
  const Replay& replay() const { return replay_; }

 private:
  std::vector<int> needs(int unit) const {
    std::vector<int> units = {unit};
    for (int r : layout_.reads[unit]) units.push_back(r);
    return units;
  }
  // Stage 3's gatherer: issue the gathers of a unit not yet gathered in this pass (every unit
  // has at least one bucket, so a gathered unit has ids).
  void gather(int unit, bool backward) {
    if (!gathered_[unit].empty()) return;
    for (int b : part_.unit_buckets[unit]) {
      gathered_[unit].push_back(replay_.issue(backward ? gather_back_[b] : gather_[b]));
    }
  }
  void gather_frozen(int unit) {
    if (!frozen_gathered_[unit].empty()) return;
    for (int b : frozen_part_.unit_buckets[unit]) {
      frozen_gathered_[unit].push_back(replay_.issue(frozen_gather_[b]));
    }
  }
  void pass(const std::vector<int>& order, bool backward, bool last_micro) {
    for (auto& ids : gathered_) ids.clear();
    for (auto& ids : frozen_gathered_) ids.clear();
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int unit = order[i];
      if (params_sharded_) {
        for (int u : needs(unit)) gather(u, backward);
        if (run_.prefetch && i + 1 < order.size()) {
          for (int u : needs(order[i + 1])) gather(u, backward);
        }
        for (int u : needs(unit)) {
          for (int id : gathered_[u]) replay_.wait(id);
        }
        // Then the frozen gatherer's turn, as the engine acquires it after the other.
        for (int u : needs(unit)) gather_frozen(u);
        if (run_.prefetch && i + 1 < order.size()) {
          for (int u : needs(order[i + 1])) gather_frozen(u);
        }
        for (int u : needs(unit)) {
          for (int id : frozen_gathered_[u]) replay_.wait(id);
        }
      }
      for (int u : needs(unit)) {
        for (int id : carried_[u]) replay_.wait(id);
        carried_[u].clear();
      }
      replay_.compute(compute_, [&](const StepCompute& c) {
        return backward ? c.backward[unit] : c.forward[unit];
      });
      if (backward) reduce(unit, last_micro);
    }
  }
  void forward() {
    std::vector<int> order(layout_.counts.size());
    std::iota(order.begin(), order.end(), 0);
    pass(order, false, false);
  }
  void backward(bool last_micro) {
    std::vector<int> order(layout_.counts.size());
    std::iota(order.rbegin(), order.rend(), 0);
    pass(order, true, last_micro);
  }
  void reduce(int unit, bool last_micro) {
    for (int b : part_.unit_buckets[unit]) {
      if (grads_sharded_) {
        // Two staging buffers: a bucket waits until the one issued two buckets ago landed.
        land(next_slot_);
        in_slot_[next_slot_] = replay_.issue(reduce_[b]);
        slot_bucket_[next_slot_] = b;
        reductions_.push_back(in_slot_[next_slot_]);
        if (!overlap_) land(next_slot_);
        next_slot_ ^= 1;
      } else if (last_micro) {
        reductions_.push_back(replay_.issue(reduce_[b]));
        if (!overlap_) replay_.wait(reductions_.back());
      }
    }
  }

  // A staging slot's reduction lands: waited, and with qgZ followed by the hosts' all-to-all.
  void land(int slot) {
    replay_.wait(in_slot_[slot]);
    const int b = slot_bucket_[slot];
    if (b >= 0 && reduce_second_[b] >= 0) replay_.wait(replay_.issue(reduce_second_[b]));
    in_slot_[slot] = slot_bucket_[slot] = -1;
  }

  const EngineRun& run_;
  const std::vector<StepCompute>& compute_;
  bool overlap_;
  UnitLayout layout_;
  Partition part_;
  bool grads_sharded_ = false, params_sharded_ = false, gathers_after_update_ = false;
  std::vector<double> reduce_, gather_;  // per bucket
  std::vector<double> reduce_second_;    // per bucket: qgZ's hosts' all-to-all; -1 without
  std::vector<double> gather_back_;      // per bucket: stage 3's backward gather (hpZ: the host's)
  Partition frozen_part_;                // a frozen base's buckets (none without)
  std::vector<double> frozen_gather_;    // per frozen bucket: stage 3's gather, either pass
  double scalars_ = 0;
  Replay replay_;
  std::vector<std::vector<int>> gathered_;         // stage 3: per unit, this pass's gathers
  std::vector<std::vector<int>> frozen_gathered_;  // and of its frozen params
  std::vector<std::vector<int>> carried_;          // stages 1, 2: per unit, gathers from the update
  std::vector<int> reductions_;
  int in_slot_[2] = {-1, -1};
  int slot_bucket_[2] = {-1, -1};
  int next_slot_ = 0;
};

// Causal attention's products for one sample and head (model/attention.cc): queries in blocks
// of 64, each block against the keys [0, end of block) for the scores and the values; in
// backward also the blocks' keys over the queries [block start, T) that see them.
constexpr std::uint64_t kAttentionBlock = 64;
struct AttentionArea {
  double seen = 0;    // sum over blocks of m (i0 + m): (query, key) pairs computed
  double seeing = 0;  // sum over blocks of m (T - i0)
};
AttentionArea attention_area(std::uint64_t T) {
  AttentionArea a;
  for (std::uint64_t i0 = 0; i0 < T; i0 += kAttentionBlock) {
    const double m = static_cast<double>(std::min(kAttentionBlock, T - i0));
    a.seen += m * static_cast<double>(i0 + m);
    a.seeing += m * static_cast<double>(T - i0);
  }
  return a;
}

}  // namespace

std::vector<UnitFlops> unit_flops(const EngineModel& model, std::uint64_t micro_batch) {
  const double B = static_cast<double>(micro_batch);
  std::vector<UnitFlops> out;
  if (const auto* g = std::get_if<GptShape>(&model)) {
    const double T = static_cast<double>(g->seq_len), C = static_cast<double>(g->hidden);
    const double V = static_cast<double>(g->vocab), BT = B * T;
    const AttentionArea a = attention_area(g->seq_len);
    // Per head 2 HS a product's (query, key) pairs; the heads' HS add up to C.
    const double attention_forward = B * 4.0 * C * a.seen;
    const double attention_backward = B * 4.0 * C * (a.seen + a.seeing);
    UnitFlops block{24.0 * BT * C * C + attention_forward, 48.0 * BT * C * C + attention_backward};
    // LoRA: the frozen weights take no gradient (the inputs' alone, half the products), and
    // each adapter adds 2 B T R (in + out) forward and twice that backward (dB, du, dA, dx).
    const bool lora = g->lora_rank > 0;
    if (lora) {
      block.backward -= 24.0 * BT * C * C;
      const double R = static_cast<double>(g->lora_rank);
      const double sides[4] = {4 * C, 2 * C, 5 * C, 5 * C};  // in + out of each target
      for (int i = 0; i < 4; ++i) {
        if (((g->lora_targets >> i) & 1u) == 0) continue;
        block.forward += 2.0 * BT * R * sides[i];
        block.backward += 4.0 * BT * R * sides[i];
      }
    }
    out.push_back({0, 0});  // embeddings: looked up and scattered, no product
    for (std::uint64_t l = 0; l < g->layers; ++l) {
      out.push_back(
          {block.forward, block.backward + (g->checkpoint_activations ? block.forward : 0.0)});
    }
    out.push_back({2.0 * BT * C * V, (lora ? 2.0 : 4.0) * BT * C * V});  // the LM head
  } else {
    const auto& m = std::get<MlpShape>(model);
    const double W = static_cast<double>(m.width);
    for (std::uint64_t d = 0; d < m.depth; ++d) {
      out.push_back({2.0 * B * W * W, (d == 0 ? 2.0 : 4.0) * B * W * W});
    }
  }
  return out;
}

std::uint64_t optimizer_params(const EngineRun& run, int rank) {
  ZERODP_CHECK(rank >= 0 && rank < run.ranks);
  const UnitLayout layout = unit_layout(run.model);
  if (!sharding(run.stage).optimizer_states) {
    return std::accumulate(layout.counts.begin(), layout.counts.end(), std::uint64_t{0});
  }
  const std::vector<std::size_t> counts(layout.counts.begin(), layout.counts.end());
  const Partition part = make_partition(counts, bucket_elements(run.bucket_bytes), run.ranks, 0);
  std::uint64_t mine = 0;
  for (const Bucket& b : part.buckets) mine += shard_of(b.count, run.ranks, rank).size;
  return mine;
}

StepCompute compute_at_rates(const EngineRun& run, int rank, const KernelRates& rates) {
  ZERODP_CHECK(std::isfinite(rates.other_seconds) && rates.other_seconds >= 0);
  const double k = static_cast<double>(run.grad_accum);
  StepCompute c;
  for (const UnitFlops& f : unit_flops(run.model, run.micro_batch)) {
    c.forward.push_back(plan::compute_seconds(k * f.forward, rates.forward_flops_per_second));
    c.backward.push_back(plan::compute_seconds(k * f.backward, rates.backward_flops_per_second));
  }
  c.optimizer = plan::compute_seconds(static_cast<double>(optimizer_params(run, rank)),
                                      rates.optimizer_params_per_second);
  c.other = rates.other_seconds;
  c.beside_link = rates.beside_link;
  return c;
}

double StepCompute::total() const {
  return std::accumulate(forward.begin(), forward.end(), 0.0) +
         std::accumulate(backward.begin(), backward.end(), 0.0) + optimizer + other;
}

double collective_seconds(const EngineRun& run, int ranks_per_host, const Link& link,
                          LinkCollective kind, std::uint64_t count, std::uint64_t elem_bytes) {
  ZERODP_CHECK(ranks_per_host >= 1 && run.ranks % ranks_per_host == 0);
  const int n = run.ranks;
  if (n / ranks_per_host <= 1) return 0.0;  // one host: no link
  ZERODP_CHECK(link.bits_per_second > 0 && link.delay_seconds >= 0 && link.framing >= 1);
  // What each host sends in one phase: a reduce-scatter sends every off-host peer its chunk of
  // the input, an all-gather sends every off-host peer this rank's chunk.
  std::vector<double> scatter(n / ranks_per_host, 0.0), gather(n / ranks_per_host, 0.0);
  std::uint64_t capacity = 0;
  for (int r = 0; r < n; ++r) {
    const std::uint64_t mine = shard_of(count, n, r).size;
    capacity = std::max<std::uint64_t>(capacity, shard_of(count, n, r).capacity);
    for (int j = 0; j < n; ++j) {
      if (j / ranks_per_host == r / ranks_per_host) continue;
      scatter[r / ranks_per_host] += double(shard_of(count, n, j).size * elem_bytes);
      gather[r / ranks_per_host] += double(mine * elem_bytes);
    }
  }
  const double bytes_per_second = link.bits_per_second / 8.0 / link.framing;
  const double rtt = 2.0 * link.delay_seconds;
  const std::uint64_t seg =
      std::min<std::uint64_t>(std::max<std::uint64_t>(run.mpi_segment_bytes / elem_bytes, 1),
                              std::max<std::uint64_t>(capacity, 1));
  const double segments = std::ceil(double(capacity) / double(seg));
  const double scatter_s =
      segments * rtt + *std::max_element(scatter.begin(), scatter.end()) / bytes_per_second;
  const double gather_s = rtt + *std::max_element(gather.begin(), gather.end()) / bytes_per_second;
  double seconds = link.delay_seconds;  // the handshake
  if (kind != LinkCollective::all_gather) seconds += scatter_s;
  if (kind != LinkCollective::reduce_scatter) seconds += gather_s;
  return seconds;
}

ScheduledStep predict_step(const EngineRun& run, int ranks_per_host, const Link& link,
                           const std::vector<StepCompute>& ranks, bool overlap) {
  const std::size_t units = unit_layout(run.model).counts.size();
  ZERODP_CHECK(!ranks.empty());
  for (const StepCompute& c : ranks) {
    ZERODP_CHECK(c.forward.size() == units && c.backward.size() == units);
    ZERODP_CHECK(std::isfinite(c.beside_link) && c.beside_link > 0);
  }
  EngineSchedule schedule(run, ranks_per_host, link, ranks, overlap);
  // The third step: the first has no gathers carried into it; the second may still be settling.
  double start = 0, busy = 0;
  int issued = 0;
  std::vector<double> spent;
  for (int s = 0; s < 3; ++s) {
    start = schedule.replay().now();
    issued = schedule.replay().issued();
    busy = schedule.replay().busy();
    spent = schedule.replay().spent();
    schedule.step();
  }
  ScheduledStep out;
  out.step_seconds = schedule.replay().now() - start;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    out.compute_seconds = std::max(out.compute_seconds, schedule.replay().spent()[r] - spent[r]);
  }
  out.comm_seconds = schedule.replay().busy() - busy;
  out.exposed_seconds = std::max(0.0, out.step_seconds - out.compute_seconds);
  out.efficiency = out.step_seconds > 0 ? out.compute_seconds / out.step_seconds : 1.0;
  out.collectives = schedule.replay().issued() - issued;
  return out;
}

ScheduledStep predict_step(const EngineRun& run, int ranks_per_host, const Link& link,
                           const StepCompute& compute, bool overlap) {
  return predict_step(run, ranks_per_host, link, std::vector<StepCompute>{compute}, overlap);
}

}  // namespace zerodp::predict

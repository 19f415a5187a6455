#include "zerodp/predict/peak.h"

#include <algorithm>

#include "zerodp/common/blockwise_layout.h"
#include "zerodp/common/error.h"
#include "zerodp/common/factored_layout.h"
#include "zerodp/common/partition.h"
#include "zerodp/common/quantize.h"
#include "zerodp/common/saturating.h"

namespace zerodp::predict {
namespace {

using u128 = unsigned __int128;
std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  return saturating_add(a, b);
}

// The most units stage 3's gatherer holds at once over a forward and a backward pass, and the
// pass that first needs that many (ParamGatherer's order: a step issues its unit and the
// units it reads, then, with prefetch, the next step's; it releases a unit after its last use
// in the pass). Slots are kept across passes, so this is how many it allocates.
struct Slots {
  std::uint64_t count = 0;
  Phase grown_in = Phase::setup;
};
Slots gather_slots(const UnitLayout& layout, bool prefetch) {
  const std::size_t U = layout.counts.size();
  std::vector<int> forward(U), backward(U);
  for (std::size_t i = 0; i < U; ++i) {
    forward[i] = static_cast<int>(i);
    backward[i] = static_cast<int>(U - 1 - i);
  }
  Slots slots;
  std::uint64_t free = 0;
  std::vector<bool> held(U, false);
  const std::pair<const std::vector<int>*, Phase> passes[] = {{&forward, Phase::forward},
                                                              {&backward, Phase::backward}};
  for (const auto& pass : passes) {
    const std::vector<int>& order = *pass.first;
    const Phase phase = pass.second;
    auto needs = [&](std::size_t step) {
      std::vector<int> units = {order[step]};
      for (int r : layout.reads[order[step]]) units.push_back(r);
      return units;
    };
    std::vector<std::size_t> last_use(U, 0);
    for (std::size_t i = 0; i < U; ++i) {
      for (int u : needs(i)) last_use[u] = i;
    }
    auto issue = [&](int u) {
      if (held[u]) return;
      held[u] = true;
      if (free > 0) {
        --free;
      } else {
        ++slots.count;
        slots.grown_in = phase;
      }
    };
    for (std::size_t i = 0; i < U; ++i) {
      for (int u : needs(i)) issue(u);
      if (prefetch && i + 1 < U) {
        for (int u : needs(i + 1)) issue(u);
      }
      for (int u : needs(i)) {
        if (last_use[u] == i && held[u]) held[u] = false, ++free;
      }
    }
  }
  return slots;
}

// The MPI backend's staging for a reduction of count elements of elem bytes (comm/communicator.h).
std::uint64_t mpi_staging(const EngineRun& run, std::uint64_t count, std::uint64_t elem) {
  if (!run.mpi || run.ranks == 1) return 0;
  const std::uint64_t capacity = shard_of(count, run.ranks, 0).capacity;
  const std::uint64_t seg =
      std::min(std::max<std::uint64_t>(run.mpi_segment_bytes / elem, 1), capacity);
  return saturated(u128(2) * std::uint64_t(run.ranks - 1) * seg * elem);
}

}  // namespace

std::uint64_t RankPeak::model_state_bytes() const {
  std::uint64_t total = 0;
  for (int c = 0; c < kCategoryCount; ++c) {
    if (is_model_state(static_cast<Category>(c))) total = add(total, bytes[c]);
  }
  return total;
}

UnitLayout unit_layout(const EngineModel& model) {
  UnitLayout layout;
  if (const auto* g = std::get_if<GptShape>(&model)) {
    const std::uint64_t C = g->hidden;
    layout.counts.push_back(g->vocab * C + g->seq_len * C);  // wte, wpe
    layout.tensors = {g->vocab * C, g->seq_len * C};
    layout.tensor_cols = {C, C};
    for (std::uint64_t l = 0; l < g->layers; ++l) {
      layout.counts.push_back(12 * C * C + 13 * C);
      // model/gpt_tensors.h's order: ln_1, attn (3C x C), attn proj, ln_2, fc (4C x C), fc proj
      // (C x 4C), each weight followed by its bias.
      for (std::uint64_t n :
           {C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C, 4 * C * C, C})
        layout.tensors.push_back(n);
      for (std::uint64_t cols :
           {0 * C, 0 * C, C, 0 * C, C, 0 * C, 0 * C, 0 * C, C, 0 * C, 4 * C, 0 * C})
        layout.tensor_cols.push_back(cols);
    }
    layout.counts.push_back(2 * C);  // ln_f; the LM head reads wte
    layout.tensors.insert(layout.tensors.end(), {C, C});
    layout.tensor_cols.insert(layout.tensor_cols.end(), {0, 0});
    layout.reads.assign(layout.counts.size(), {});
    layout.reads.back() = {0};
    if (g->lora_rank > 0) {
      // The base is frozen; each block trains A [R, in] and B [out, R] of every adapted
      // projection, in model/gpt.h's target order (c_attn, attn c_proj, c_fc, mlp c_proj).
      const std::uint64_t R = g->lora_rank;
      const std::uint64_t shapes[4][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
      layout.frozen = layout.counts;
      layout.tensors.clear();
      layout.tensor_cols.clear();
      for (std::size_t u = 0; u < layout.counts.size(); ++u) {
        layout.counts[u] = 0;
        if (u == 0 || u + 1 == layout.counts.size()) continue;
        for (int i = 0; i < 4; ++i) {
          if (((g->lora_targets >> i) & 1u) == 0) continue;
          const std::uint64_t in = shapes[i][0], out = shapes[i][1];
          layout.tensors.insert(layout.tensors.end(), {R * in, out * R});
          layout.tensor_cols.insert(layout.tensor_cols.end(), {in, R});
          layout.counts[u] += R * (in + out);
        }
      }
    }
  } else {
    const auto& m = std::get<MlpShape>(model);
    layout.counts.assign(m.depth, m.width * m.width + m.width);
    layout.reads.assign(layout.counts.size(), {});
    for (std::uint64_t d = 0; d < m.depth; ++d) {
      layout.tensors.insert(layout.tensors.end(), {m.width * m.width, m.width});
      layout.tensor_cols.insert(layout.tensor_cols.end(), {m.width, 0});
    }
  }
  layout.frozen.resize(layout.counts.size(), 0);
  layout.frozen_words = layout.frozen;
  const auto* g = std::get_if<GptShape>(&model);
  if (g && g->lora_rank > 0 && g->nf4) {
    // Each block's four weights (3C², C², 4C², 4C²) are NF4: 4 codes a word.
    const std::uint64_t C = g->hidden;
    auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); };
    std::uint64_t state = 0, spare = 0, words = 13 * C;  // the norms and biases stay 16-bit
    for (std::uint64_t n : {3 * C * C, C * C, 4 * C * C, 4 * C * C}) {
      const std::uint64_t blocks = ceil_div(n, 64);
      words += ceil_div(n, 4);
      state += g->double_quant ? blocks + 4 * (ceil_div(blocks, 256) + 1) : 4 * blocks;
      spare = std::max(spare, ceil_div(n, 8) + blocks);
    }
    for (std::size_t u = 1; u + 1 < layout.frozen_words.size(); ++u) layout.frozen_words[u] = words;
    layout.nf4_state_bytes = saturated(u128(state) * g->layers);
    layout.nf4_spare = spare;
  }
  return layout;
}

std::uint64_t param_count(const EngineModel& model) {
  std::uint64_t total = 0;
  for (std::uint64_t c : unit_layout(model).counts) total = add(total, c);
  return total;
}

std::uint64_t gpt_activation_bytes(const GptShape& s, std::uint64_t micro_batch,
                                   int model_threads) {
  const u128 L = s.layers, C = s.hidden, T = s.seq_len, V = s.vocab, NH = s.heads;
  const u128 BT = u128(micro_batch) * T;
  const u128 sets = s.checkpoint_activations ? 1 : L;
  const u128 floats = BT * ((L + 1) * C                     // block inputs, the final's input
                            + sets * (15 * C + 4 + NH * T)  // block internals
                            + (C + 2 * V + 3)               // ln_f, logits, probs, losses
                            + (10 * C + V))                 // backward scratch
                      + T * T;                              // attention backward scratch
  u128 bytes = 4 * floats + 2 * BT;                         // + tokens and targets (bytes)
  if (s.lora_rank > 0) {
    // Each adapted input times A^T, per block set, and one [BT, R] for the backward.
    u128 k = 0;
    for (int i = 0; i < 4; ++i) k += (s.lora_targets >> i) & 1u;
    bytes += 4 * BT * u128(s.lora_rank) * (sets * k + 1);
  }
  if (model_threads > 1) {
    const UnitLayout layout = unit_layout(s);
    u128 max_view = 0;
    for (std::size_t u = 0; u < layout.counts.size(); ++u) {
      u128 view = layout.counts[u];
      for (int r : layout.reads[u]) view += layout.counts[r];
      max_view = std::max(max_view, view);
    }
    bytes += 4 * u128(model_threads - 1) * (max_view + T * T);
  }
  if (s.bf16_compute) {
    // Every thread rounds the operands of its products into a scratch sized for the rows of
    // the largest thread's share of the micro-batch.
    const u128 P = std::max(model_threads, 1);
    const u128 R = (u128(micro_batch) + P - 1) / P * T;
    const u128 left = std::max(R * std::max(4 * C, V), T * T);
    const u128 right = std::max({4 * C * C, V * C, 4 * R * C});
    bytes += 4 * P * (left + right);
  }
  return saturated(bytes);
}

std::uint64_t mlp_activation_bytes(const MlpShape& s, std::uint64_t micro_batch) {
  return saturated(u128(4) * (2 * u128(s.depth) + 4) * micro_batch * s.width);
}

namespace {

// An ExactSum (optim/adafactor.h: five 64-bit limbs), as the engine holds and exchanges it.
struct ExactSumBytes {
  std::uint64_t limbs[5];
};

// Rank `rank`'s Adafactor layout, as the engine builds it from its partition.
FactoredLayout factored_layout_of(const EngineRun& run, const UnitLayout& layout, int rank) {
  const Partition part =
      make_partition(std::vector<std::size_t>(layout.counts.begin(), layout.counts.end()),
                     bucket_elements(run.bucket_bytes), run.ranks, rank);
  std::vector<TensorDims> dims;
  for (std::size_t t = 0; t < layout.tensors.size(); ++t)
    dims.push_back({layout.tensors[t], layout.tensor_cols[t]});
  return make_factored_layout(dims, part, !sharding(run.stage).optimizer_states, run.ranks, rank);
}

// What a peak needs of the model and the gather order, whatever N: computed once for a search
// over N and stages.
struct Fixed {
  UnitLayout layout;
  u128 total = 0, max_unit = 0, max_view = 0, read_units = 0;
  // The frozen layout's (a LoRA base): elements, largest unit, largest unit with its reads.
  // Its stored words: in all, and the largest unit's (NF4 packs four codes a word).
  u128 frozen_total = 0, frozen_max_unit = 0, frozen_max_view = 0, frozen_max_elements = 0;
  Slots slots;
  Fixed(const EngineModel& model, bool prefetch)
      : layout(unit_layout(model)), slots(gather_slots(layout, prefetch)) {
    std::vector<bool> is_read(layout.counts.size(), false);
    for (std::size_t u = 0; u < layout.counts.size(); ++u) {
      u128 view = layout.counts[u], frozen_view = layout.frozen[u];
      for (int r : layout.reads[u]) {
        view += layout.counts[r], is_read[r] = true;
        frozen_view += layout.frozen[r];
      }
      max_view = std::max(max_view, view);
      max_unit = std::max<u128>(max_unit, layout.counts[u]);
      total += layout.counts[u];
      frozen_max_view = std::max(frozen_max_view, frozen_view);
      frozen_max_unit = std::max<u128>(frozen_max_unit, layout.frozen_words[u]);
      frozen_max_elements = std::max<u128>(frozen_max_elements, layout.frozen[u]);
      frozen_total += layout.frozen_words[u];
    }
    for (std::size_t u = 0; u < layout.counts.size(); ++u) {
      read_units += is_read[u] ? layout.counts[u] : 0;
    }
  }
};

// Rank r's peak, in O(units): a unit of c elements is cut into c / E buckets of E elements and
// one of c % E (partition.h), and the rank holds shard_of() of each; the largest bucket is
// min(E, largest unit), the largest chunk its capacity.
RankPeak peak_of(const EngineRun& run, const Fixed& f, int rank) {
  ZERODP_CHECK(run.ranks >= 1 && rank >= 0 && rank < run.ranks && run.bucket_bytes >= 2);
  const std::uint64_t E = bucket_elements(run.bucket_bytes);
  const std::uint64_t full_chunk = shard_of(E, run.ranks, rank).size;
  u128 local = 0;
  for (std::uint64_t c : f.layout.counts) {
    local += u128(c / E) * full_chunk + shard_of(c % E, run.ranks, rank).size;
  }
  const u128 max_bucket = std::min<u128>(E, f.max_unit);
  const u128 max_chunk = shard_of(std::uint64_t(max_bucket), run.ranks, 0).capacity;
  const Sharding shards = sharding(run.stage);
  u128 frozen_local = 0;  // this rank's chunks of the frozen base's buckets
  for (std::uint64_t c : f.layout.frozen_words) {
    frozen_local += u128(c / E) * full_chunk + shard_of(c % E, run.ranks, rank).size;
  }
  const u128 frozen_held = shards.parameters ? frozen_local : f.frozen_total;

  RankPeak p;
  auto set = [&p](Category c, u128 bytes) { p.bytes[static_cast<int>(c)] = saturated(bytes); };
  set(Category::params16,
      2 * ((shards.parameters ? local : f.total) + frozen_held) + f.layout.nf4_state_bytes);
  set(Category::grads16, 2 * (shards.gradients ? local : f.total));
  const u128 optimizer = 4 * (shards.optimizer_states ? local : f.total);
  set(Category::master32, optimizer);
  u128 optimizer_scratch = 0;
  if (run.blockwise) {
    const Partition part =
        make_partition(std::vector<std::size_t>(f.layout.counts.begin(), f.layout.counts.end()), E,
                       run.ranks, rank);
    const Layout8 l = make_layout8(f.layout.tensors, part, !shards.optimizer_states, run.ranks,
                                   rank, run.blockwise->block, run.blockwise->min_quantized);
    const u128 slot = u128(l.codes) + 4 * u128(l.blocks) + 4 * u128(l.fp32);
    u128 m = 0, v = 0;
    for (const StateSlot& s : run.blockwise->slots) (holds_squares(s) ? v : m) += slot;
    set(Category::optim_m, m);
    set(Category::optim_v, v);
    optimizer_scratch = 4 * 2 * u128(l.edges) * (l.exchange ? 1 + u128(run.ranks) : 1);
  } else if (run.factored) {
    const FactoredLayout l = factored_layout_of(run, f.layout, rank);
    set(Category::optim_m, 0);
    set(Category::optim_v, 4 * u128(l.states));
    // The factors and each tensor's divisor (fp32), the sums and squares (ExactSums) with, when
    // tensors are split, every rank's part of them.
    const u128 sums =
        u128(l.sums) + l.squares + (l.exchange ? u128(run.ranks) * (l.slab_sums + l.slab_sq) : 0);
    optimizer_scratch = 4 * (u128(l.factors) + l.tensors.size()) + sizeof(ExactSumBytes) * sums;
  } else {
    set(Category::optim_m, u128(run.m_slots) * optimizer);
    set(Category::optim_v, u128(run.v_slots) * optimizer);
  }

  // The engine's fp32 views: the largest unit with what it reads, one unit's grads, and the
  // grads of units that others read (kept across the backward pass).
  u128 scratch =
      4 * (f.max_view + f.max_unit + f.read_units +
           std::max(f.frozen_max_view,
                    f.layout.nf4_spare > 0 ? f.frozen_max_elements + f.layout.nf4_spare : 0)) +
      optimizer_scratch;
  if (shards.gradients) {
    scratch += 4 * max_chunk;  // the reducer's fp32 of a landed chunk
    u128 buckets = 2 * (2 * max_bucket + 2 * max_chunk);
    if (run.qgz_ranks() > 0 && shards.parameters) {
      const u128 hosts = u128(run.ranks / run.qgz_ranks());
      const u128 payload = quantized_payload(std::uint64_t(max_bucket), run.ranks, run.qwz_block);
      buckets += 2 * (2 * u128(run.ranks) * payload + 2 * hosts * payload + 4 * hosts * max_chunk) +
                 2 * max_chunk;
    }
    set(Category::buckets, buckets);
  }
  set(Category::scratch32, scratch);
  set(Category::comm_buffers,
      std::max(mpi_staging(run, std::uint64_t(max_bucket), 2), mpi_staging(run, 3, 4)));

  // The first step: activations at the forward's start, then the gathers.
  p.moment = Phase::forward;
  if (const auto* g = std::get_if<GptShape>(&run.model)) {
    set(Category::activations, gpt_activation_bytes(*g, run.micro_batch, run.model_threads));
  } else {
    set(Category::activations,
        mlp_activation_bytes(std::get<MlpShape>(run.model), run.micro_batch));
  }
  if (shards.parameters) {
    u128 staging = 0;  // qwZ: one slot's payloads, for the unit whose buckets need the most
    if (run.zeropp.qwz) {
      const auto payloads = [&](std::uint64_t elements) {
        return u128(run.ranks) * quantized_payload(elements, run.ranks, run.qwz_block);
      };
      for (std::uint64_t c : f.layout.counts) {
        staging = std::max(staging, u128(c / E) * payloads(E) + payloads(c % E));
      }
    }
    u128 secondary = 0;  // hpZ: this rank's host chunk of every bucket
    if (run.hpz_ranks() > 0) {
      const int host_rank = rank % run.hpz_ranks();
      for (std::uint64_t c : f.layout.counts) {
        secondary += u128(c / E) * shard_of(E, run.hpz_ranks(), host_rank).size +
                     shard_of(c % E, run.hpz_ranks(), host_rank).size;
      }
    }
    // A frozen base has a gatherer of its own, with as many slots (the same order and reads).
    const u128 frozen_slots = f.frozen_total > 0 ? u128(f.slots.count) * 2 * f.frozen_max_unit : 0;
    set(Category::gathered_params,
        u128(f.slots.count) * (2 * f.max_unit + staging) + 2 * secondary + frozen_slots);
    p.moment = std::max(p.moment, f.slots.grown_in);
  }
  for (std::uint64_t b : p.bytes) p.peak_bytes = add(p.peak_bytes, b);
  return p;
}

}  // namespace

RankPeak predict_rank_peak(const EngineRun& run, int rank) {
  return peak_of(run, Fixed(run.model, run.prefetch), rank);
}

std::vector<RankPeak> predict_peak(const EngineRun& run) {
  const Fixed fixed(run.model, run.prefetch);
  std::vector<RankPeak> peaks;
  for (int r = 0; r < run.ranks; ++r) peaks.push_back(peak_of(run, fixed, r));
  return peaks;
}

std::uint64_t qgz_bytes_to(const EngineRun& run, std::uint64_t count, int rank, int peer) {
  const int h = run.qgz_ranks();
  if (peer == rank || h <= 0) return 0;
  const std::uint64_t payload = quantized_payload(count, run.ranks, run.qwz_block);
  if (peer / h == rank / h) return std::uint64_t(run.ranks / h) * payload;  // inside the host
  return peer % h == rank % h ? payload : 0;  // across hosts, to the same place
}

std::uint64_t optimizer_exchange_bytes(const EngineRun& run) {
  if (run.factored) {
    const FactoredLayout l = factored_layout_of(run, unit_layout(run.model), 0);
    return l.exchange ? sizeof(ExactSumBytes) * std::uint64_t(l.slab_sums + l.slab_sq) : 0;
  }
  if (!run.blockwise) return 0;
  const UnitLayout layout = unit_layout(run.model);
  const std::vector<std::size_t> counts(layout.counts.begin(), layout.counts.end());
  const Partition part = make_partition(counts, bucket_elements(run.bucket_bytes), run.ranks, 0);
  const Layout8 l = make_layout8(layout.tensors, part, !sharding(run.stage).optimizer_states,
                                 run.ranks, 0, run.blockwise->block, run.blockwise->min_quantized);
  return l.exchange ? 8 * std::uint64_t(l.edges) : 0;
}

std::vector<std::uint64_t> predict_host_send_bytes(const EngineRun& run, int ranks_per_host) {
  ZERODP_CHECK(ranks_per_host >= 1 && run.ranks % ranks_per_host == 0 && run.bucket_bytes >= 2);
  const UnitLayout layout = unit_layout(run.model);
  const std::vector<std::size_t> counts(layout.counts.begin(), layout.counts.end());
  const Partition part = make_partition(counts, bucket_elements(run.bucket_bytes), run.ranks, 0);
  const int hosts = run.ranks / ranks_per_host;
  // Passes of each collective per step: {reduce-scatters, all-gathers} (an all-reduce is one
  // of each).
  // Sharded parameters are gathered again for backward.
  const std::uint64_t scatters = 1;
  const std::uint64_t gathers = sharding(run.stage).parameters ? 2 : 1;
  std::vector<std::uint64_t> sent(hosts, 0);
  for (const Bucket& bucket : part.buckets) {
    for (int r = 0; r < run.ranks; ++r) {
      const int host = r / ranks_per_host;
      const std::uint64_t mine = shard_of(bucket.count, run.ranks, r).size;
      for (int j = 0; j < run.ranks; ++j) {
        if (j / ranks_per_host == host) continue;  // shared memory, not the wire
        const std::uint64_t theirs = shard_of(bucket.count, run.ranks, j).size;
        const std::uint64_t gathered =
            run.zeropp.qwz && gathers == 2
                ? quantized_payload(bucket.count, run.ranks, run.qwz_block)
                : 2 * mine;
        // hpZ: the backward's gather stays in the hpZ host (counted below).
        const std::uint64_t world_gathers = gathers == 2 && run.hpz_ranks() > 0 ? 1 : gathers;
        const std::uint64_t scattered = gathers == 2 && run.qgz_ranks() > 0
                                            ? qgz_bytes_to(run, bucket.count, r, j)
                                            : 2 * scatters * theirs;
        sent[host] += scattered + world_gathers * gathered;
        if (gathers == 2 && run.hpz_ranks() > 0 && j / run.hpz_ranks() == r / run.hpz_ranks()) {
          sent[host] += 2 * shard_of(bucket.count, run.hpz_ranks(), r % run.hpz_ranks()).size;
        }
      }
    }
  }
  // A frozen base at stage 3: each bucket gathered in 16 bits for forward and for backward.
  if (gathers == 2) {
    const std::vector<std::size_t> frozen(layout.frozen_words.begin(), layout.frozen_words.end());
    const Partition fpart = make_partition(frozen, bucket_elements(run.bucket_bytes), run.ranks, 0);
    for (const Bucket& bucket : fpart.buckets) {
      for (int r = 0; r < run.ranks; ++r) {
        const std::uint64_t mine = shard_of(bucket.count, run.ranks, r).size;
        for (int j = 0; j < run.ranks; ++j) {
          if (j / ranks_per_host != r / ranks_per_host) sent[r / ranks_per_host] += 2 * 2 * mine;
        }
      }
    }
  }
  const std::uint64_t exchange = optimizer_exchange_bytes(run);
  for (int h = 0; h < hosts; ++h) {
    sent[h] += exchange * std::uint64_t(ranks_per_host) * std::uint64_t(run.ranks - ranks_per_host);
  }
  return sent;
}

std::uint64_t predict_rank_ring_bytes(const EngineRun& run, int rank) {
  ZERODP_CHECK(rank >= 0 && rank < run.ranks && run.bucket_bytes >= 2);
  const UnitLayout layout = unit_layout(run.model);
  const std::vector<std::size_t> counts(layout.counts.begin(), layout.counts.end());
  const Partition part = make_partition(counts, bucket_elements(run.bucket_bytes), run.ranks, 0);
  const int n = run.ranks;
  const bool params_sharded = sharding(run.stage).parameters;
  std::uint64_t bytes = 0;
  for (const Bucket& bucket : part.buckets) {
    std::uint64_t scatter = 2 * (bucket.count - shard_of(bucket.count, n, rank).size);
    if (params_sharded && run.qgz_ranks() > 0) {
      scatter = 0;
      for (int peer = 0; peer < n; ++peer) scatter += qgz_bytes_to(run, bucket.count, rank, peer);
    }
    std::uint64_t gather = 2 * (bucket.count - shard_of(bucket.count, n, (rank + 1) % n).size);
    if (params_sharded && run.zeropp.qwz) {
      gather = std::uint64_t(n - 1) * quantized_payload(bucket.count, n, run.qwz_block);
    }
    if (params_sharded && run.hpz_ranks() > 0) {
      const int h = run.hpz_ranks();  // the backward's gather: a ring over the hpZ host
      const std::uint64_t host_gather =
          2 * (bucket.count - shard_of(bucket.count, h, (rank % h + 1) % h).size);
      bytes += scatter + gather + host_gather;
      continue;
    }
    bytes += scatter + (params_sharded ? 2 : 1) * gather;
  }
  if (params_sharded) {  // a frozen base: each bucket gathered for forward and for backward
    const std::vector<std::size_t> frozen(layout.frozen_words.begin(), layout.frozen_words.end());
    for (const Bucket& bucket :
         make_partition(frozen, bucket_elements(run.bucket_bytes), n, 0).buckets) {
      bytes += 2 * 2 * (bucket.count - shard_of(bucket.count, n, (rank + 1) % n).size);
    }
  }
  return bytes + std::uint64_t(n - 1) * optimizer_exchange_bytes(run);
}

std::optional<int> least_ranks_that_fit(EngineRun run, std::uint64_t budget, int max_ranks) {
  const Fixed fixed(run.model, run.prefetch);
  for (int n = 1; n <= max_ranks; ++n) {
    run.ranks = n;
    if (peak_of(run, fixed, 0).peak_bytes <= budget) return n;
  }
  return std::nullopt;
}

std::optional<Stage> cheapest_stage_that_fits(EngineRun run, std::uint64_t budget) {
  const Fixed fixed(run.model, run.prefetch);
  for (Stage stage : kStages) {
    run.stage = stage;
    if (peak_of(run, fixed, 0).peak_bytes <= budget) return stage;
  }
  return std::nullopt;
}

}  // namespace zerodp::predict

#include "zerodp/run/measurement_table.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>

#include "zerodp/common/units.h"

namespace zerodp::run {
namespace {

// Display width of a UTF-8 string (Φ is two bytes, one column).
std::size_t columns(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xc0) != 0x80; });
}

// printf's format into a string.
[[gnu::format(printf, 2, 3)]] void append(std::string& out, const char* format, ...) {
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  out += line;
}

// A table of text cells: first column left-aligned, the others right-aligned.
struct Table {
  std::vector<std::vector<std::string>> rows;
  void row(std::vector<std::string> cells) { rows.push_back(std::move(cells)); }
  void print(std::string& out) const {
    std::vector<std::size_t> width;
    for (const auto& r : rows) {
      if (r.size() > width.size()) width.resize(r.size(), 0);
      for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], columns(r[i]));
    }
    for (const auto& r : rows) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i) {
        const std::string pad(width[i] - columns(r[i]), ' ');
        line += i == 0 ? "  " + r[i] + pad : "   " + pad + r[i];
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
  }
};

// "2 + 2 + 12"
std::string bpp_sum(const plan::BytesPerParam& bpp) {
  return std::to_string(bpp.params) + " + " + std::to_string(bpp.grads) + " + " +
         std::to_string(bpp.optimizer);
}

std::string bytes(std::uint64_t b) {
  return units::format_bytes(b);
}
std::string signed_bytes(std::int64_t d) {
  if (d == 0) return "0";
  std::string text(1, d > 0 ? '+' : '-');  // built in steps: GCC 12 warns falsely otherwise
  text += std::to_string(d > 0 ? d : -d);
  return text + " B";
}
std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  return buf;
}
std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
std::string percent(double v) {
  return units::format_percent(v, 1);
}

// The measure table names stage 0 with its number, as --stage takes it.
std::string table_stage_label(Stage stage) {
  return stage == Stage::dp ? "DP (0)" : std::string(stage_name(stage));
}

// measured - predicted on the rank where it is largest in size.
std::string worst_difference(const StageMeasure& st, std::uint64_t RankMeasure::*measured,
                             std::uint64_t RankMeasure::*predicted) {
  std::int64_t worst = 0;
  for (const auto& r : st.ranks) {
    const std::int64_t d = std::int64_t(r.*measured) - std::int64_t(r.*predicted);
    if (std::llabs(d) > std::llabs(worst)) worst = d;
  }
  return signed_bytes(worst);
}

// A table with one column per measured stage: each row is a label and one cell per stage.
struct StageTable {
  const std::vector<StageMeasure>& stages;
  Table table;
  void row(std::vector<std::string> cells) { table.row(std::move(cells)); }
  template <typename Cell>
  void add(const std::string& label, Cell cell) {
    std::vector<std::string> r = {label};
    for (const auto& st : stages) r.push_back(cell(st));
    table.row(r);
  }
};

void print_setup(std::string& out, const MeasureSetup& s) {
  out += "zerodp measure: " + s.model + "\n";
  append(out, "Φ = %s parameters, N = %d ranks (%s); %s params and grads, %s: %s bytes/param\n",
         units::format_count(s.params).c_str(), s.ranks, s.backend.c_str(), s.precision.c_str(),
         s.state_words.c_str(), bpp_sum(s.bpp).c_str());
  append(out,
         "%d measured steps after one warm-up, micro-batch %zu per rank. Figures are rank "
         "0's unless said.\n\n",
         s.steps, s.micro_batch);
  if (!s.compute_line.empty()) out.insert(out.size() - 1, s.compute_line + "\n");
}

// The planner's formula, its prediction and the ledger's model-state categories.
void add_model_state_rows(StageTable& t, const MeasureSetup& s) {
  t.add("formula", [&](const StageMeasure& st) { return plan::stage_formula(st.stage, s.bpp); });
  t.add("predicted (planner)",
        [](const StageMeasure& st) { return bytes(st.ranks[0].predicted_state); });
  t.add("measured (ledger)", [](const StageMeasure& st) { return bytes(st.ranks[0].model_state); });
  for (int c = 0; c < kCategoryCount; ++c) {
    if (!is_model_state(static_cast<Category>(c))) continue;
    t.add("  " + std::string(category_name(static_cast<Category>(c))),
          [c](const StageMeasure& st) { return bytes(st.ranks[0].live[c]); });
  }
  t.add("measured - predicted, worst rank", [](const StageMeasure& st) {
    return worst_difference(st, &RankMeasure::model_state, &RankMeasure::predicted_state);
  });
  t.add("bytes per parameter", [&](const StageMeasure& st) {
    return fixed(double(st.ranks[0].model_state) / double(s.params), 3);
  });
}

// The peak: every category held when the ledger's total peaked, beside the planner's
// prediction of it (predict/peak.h), then the OS's view of the process.
void add_peak_rows(StageTable& t, const MeasureSetup& s) {
  for (int c = 0; c < kCategoryCount; ++c) {
    t.add("  " + std::string(category_name(static_cast<Category>(c))), [c](const StageMeasure& st) {
      return bytes(st.ranks[0].at_peak[c]) + " / " + bytes(st.ranks[0].predicted_at_peak[c]);
    });
  }
  t.add("peak total", [](const StageMeasure& st) {
    return bytes(st.ranks[0].peak_total) + " / " + bytes(st.ranks[0].predicted_peak);
  });
  t.add("measured - predicted, worst rank", [](const StageMeasure& st) {
    return worst_difference(st, &RankMeasure::peak_total, &RankMeasure::predicted_peak);
  });
  t.add(s.rss_per_process ? "process peak RSS (OS)" : "process peak RSS, all ranks (OS)",
        [](const StageMeasure& st) { return bytes(st.ranks[0].rss_peak); });
  t.add("  runtime before the engine",
        [](const StageMeasure& st) { return bytes(st.ranks[0].rss_baseline); });
}

void add_comm_rows(StageTable& t) {
  t.add("predicted (planner, ring)",
        [](const StageMeasure& st) { return bytes(st.ranks[0].predicted_comm); });
  t.add("counted, sent (backend)",
        [](const StageMeasure& st) { return bytes(st.ranks[0].sent_per_step); });
  t.add("counted, received (backend)",
        [](const StageMeasure& st) { return bytes(st.ranks[0].received_per_step); });
  if (!t.stages.empty() && t.stages[0].ranks[0].wire_first_on_host) {
    t.add("on the wire, rank 0's host (kernel)",
          [](const StageMeasure& st) { return bytes(st.ranks[0].wire_tx_per_step); });
  }
  t.add("counted sent - predicted, worst rank", [](const StageMeasure& st) {
    return worst_difference(st, &RankMeasure::sent_per_step, &RankMeasure::predicted_comm);
  });
  t.add("sent, all ranks - predicted, all ranks", [](const StageMeasure& st) {
    std::int64_t d = 0;
    for (const RankMeasure& r : st.ranks) {
      d += std::int64_t(r.sent_per_step) - std::int64_t(r.predicted_comm);
    }
    return signed_bytes(d);
  });
  const StageMeasure* dp = nullptr;
  for (const auto& st : t.stages) {
    if (st.stage == Stage::dp) dp = &st;
  }
  if (dp) {
    t.add("counted sent / DP", [dp](const StageMeasure& st) {
      return fixed(double(st.ranks[0].sent_per_step) / double(dp->ranks[0].sent_per_step), 3);
    });
  }
  t.add("loss/norm scalars (apart)",
        [](const StageMeasure& st) { return bytes(st.ranks[0].scalar_per_step); });
}

void add_time_rows(StageTable& t) {
  t.add("step, overlap + prefetch",
        [](const StageMeasure& st) { return ms(st.ranks[0].step_seconds); });
  t.add("  exposed comm", [](const StageMeasure& st) { return ms(st.ranks[0].exposed_seconds); });
  t.add("  compute", [](const StageMeasure& st) {
    return ms(st.ranks[0].step_seconds - st.ranks[0].exposed_seconds);
  });
  t.add("  efficiency", [](const StageMeasure& st) {
    const auto& r = st.ranks[0];
    return percent((r.step_seconds - r.exposed_seconds) / r.step_seconds);
  });
  const bool link = t.stages[0].ranks[0].link_bits_per_second > 0;
  const bool rated = t.stages[0].ranks[0].rated_step_seconds > 0;
  if (rated) {
    t.add("  predicted step (kernel rates)",
          [](const StageMeasure& st) { return ms(st.ranks[0].rated_step_seconds); });
  }
  if (link) {
    t.add("  predicted step (replay)",
          [](const StageMeasure& st) { return ms(st.ranks[0].predicted_step_seconds); });
    t.add("  predicted efficiency", [](const StageMeasure& st) {
      const auto& r = st.ranks[0];
      return percent(
          std::min(1.0, (r.step_seconds - r.exposed_seconds) / r.predicted_step_seconds));
    });
  }
  t.add("step, no overlap",
        [](const StageMeasure& st) { return ms(st.ranks[0].step_seconds_sync); });
  t.add("  exposed comm (= comm time)",
        [](const StageMeasure& st) { return ms(st.ranks[0].exposed_seconds_sync); });
  t.add("  efficiency", [](const StageMeasure& st) {
    const auto& r = st.ranks[0];
    return percent((r.step_seconds_sync - r.exposed_seconds_sync) / r.step_seconds_sync);
  });
  if (rated) {
    t.add("  predicted step (kernel rates)",
          [](const StageMeasure& st) { return ms(st.ranks[0].rated_step_seconds_sync); });
  }
  if (link) {
    t.add("  predicted step (replay)",
          [](const StageMeasure& st) { return ms(st.ranks[0].predicted_step_seconds_sync); });
    t.add("  predicted efficiency", [](const StageMeasure& st) {
      const auto& r = st.ranks[0];
      return percent(std::min(
          1.0, (r.step_seconds_sync - r.exposed_seconds_sync) / r.predicted_step_seconds_sync));
    });
  }
}

void print_every_rank(std::string& out, const StageMeasure& st) {
  out += "\n" + table_stage_label(st.stage) + ", every rank\n";
  Table r;
  r.row({"rank", "model state", "predicted", "diff", "peak (ledger)", "predicted", "diff",
         "sent/step", "predicted", "diff"});
  for (std::size_t i = 0; i < st.ranks.size(); ++i) {
    const RankMeasure& m = st.ranks[i];
    r.row({std::to_string(i), bytes(m.model_state), bytes(m.predicted_state),
           signed_bytes(std::int64_t(m.model_state) - std::int64_t(m.predicted_state)),
           bytes(m.peak_total), bytes(m.predicted_peak),
           signed_bytes(std::int64_t(m.peak_total) - std::int64_t(m.predicted_peak)),
           bytes(m.sent_per_step), bytes(m.predicted_comm),
           signed_bytes(std::int64_t(m.sent_per_step) - std::int64_t(m.predicted_comm))});
  }
  r.print(out);
}

}  // namespace

std::string measurement_table(const MeasureSetup& s, const std::vector<StageMeasure>& stages,
                              bool per_rank, const FieldNamer& name) {
  std::string out;
  print_setup(out, s);
  StageTable t{stages, {}};
  std::vector<std::string> header = {"Model state per rank"};
  for (const auto& st : stages) header.push_back(table_stage_label(st.stage));
  t.row(header);
  add_model_state_rows(t, s);
  t.row({""});
  t.row({"Peak per rank: measured (ledger) / predicted"});
  add_peak_rows(t, s);
  t.row({""});
  t.row({"Communication per rank per training step"});
  add_comm_rows(t);
  t.row({""});
  t.row({"Time per step (median)"});
  add_time_rows(t);
  t.table.print(out);

  if (per_rank) {
    for (const auto& st : stages) print_every_rank(out, st);
  }
  out +=
      "\nA model-state difference from the prediction is chunk rounding: the engine cuts each "
      "unit into buckets of " +
      field_ref("bucket_bytes") +
      " and gives every rank ceil(count/N) elements of each "
      "(trailing ranks fewer); the planner's formula rounds once over all Φ. The peak's "
      "prediction follows the buckets, so it matches to the byte. Bytes: 'predicted' is the "
      "planner's ring formula; 'counted' is what the backend moved for this rank, counted as "
      "it moved it, in the overlapped steps (the no-overlap timing passes are not counted). "
      "Neither backend runs a ring: threads, each rank copies its own chunk from and to its "
      "peers' buffers; MPI, each rank sends each peer that peer's chunk (reduce-scatter) and "
      "its own chunk to every peer (all-gather). Per rank they differ from a ring's when "
      "chunks are unequal; over all ranks they are the same bytes. Exposed comm is time "
      "blocked waiting for a collective; with no overlap it is the whole communication "
      "time.\n";
  if (s.blockwise) {
    out +=
        "With 8-bit optimizer states the model-state prediction lays out the engine's blocks "
        "(tensors under 4,096 elements keep fp32 states), so it too matches to the byte, and "
        "the predicted bytes add each step's exchange of the maxima of blocks cut between "
        "ranks (8 bytes a bucket edge, to every peer) to the ring formula.\n";
  }
  if (s.factored) {
    out +=
        "With Adafactor the model-state prediction lays out the engine's factored states (a "
        "matrix's rows and columns on every rank holding part of it, a vector's elements where "
        "they are), so it too matches to the byte, and the predicted bytes add each step's two "
        "exchanges of the exact sums of tensors cut between ranks (40 bytes a row, column and "
        "tensor, to every peer) to the ring formula.\n";
  }
  return name_fields(out, name);
}

}  // namespace zerodp::run

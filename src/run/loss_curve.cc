#include "zerodp/run/loss_curve.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"
#include "zerodp/common/svg.h"

namespace zerodp::run {
namespace {

std::string number(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target` ticks.
double tick_step(double span, int target) {
  const double raw = span / target;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

// A loss field of a CSV row: empty (no value at that step) or a number.
bool parse_loss(const std::string& field, std::optional<double>& value) {
  value.reset();
  if (field.empty()) return true;
  char* end = nullptr;
  value = std::strtod(field.c_str(), &end);
  return *end == '\0';
}

}  // namespace

void LossCurve::load_csv_before(const std::string& path, std::int64_t first_step) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return;
  // Bounded: rows are a few dozen bytes, so this is tens of millions of steps; a larger file
  // is not a curve of this run's and is not read into memory.
  constexpr std::uint64_t kMaxCurveBytes = 256 << 20;
  std::string why;
  const std::optional<std::string> text = read_bounded(path, kMaxCurveBytes, why);
  if (!text) {
    throw Error(printable(path) + ": " + why + "; a resumed run reads the loss curve it " +
                "continues (choose another " + field_ref("out") + ")");
  }
  std::istringstream in(*text);
  std::string line;
  std::getline(in, line);
  if (line != "step,train_loss,val_loss") {
    throw Error(printable(path) +
                ": line 1 is not 'step,train_loss,val_loss'; it is not a zerodp loss "
                "curve, so a resumed run will not replace it (choose another " +
                field_ref("out") + ")");
  }
  for (int number = 2; std::getline(in, line); ++number) {
    std::stringstream row(line);
    std::string step_text, train_text, val_text;
    std::getline(row, step_text, ',');
    std::getline(row, train_text, ',');
    std::getline(row, val_text);
    char* end = nullptr;
    const long long step = std::strtoll(step_text.c_str(), &end, 10);
    std::optional<double> train_loss, val_loss;
    if (step_text.empty() || *end != '\0' || step < 1 || !parse_loss(train_text, train_loss) ||
        !parse_loss(val_text, val_loss)) {
      throw Error(printable(path) + ": line " + std::to_string(number) +
                  " is not 'step,train_loss,val_loss'; choose another " + field_ref("out") +
                  " or remove the file");
    }
    if (step >= first_step) continue;
    if (train_loss) train.emplace_back(step, *train_loss);
    if (val_loss) validation.emplace_back(step, *val_loss);
  }
}

void LossCurve::write_csv(const std::string& path) const {
  std::map<std::int64_t, std::pair<std::string, std::string>> rows;
  for (auto [s, v] : train) rows[s].first = number(v, 6);
  for (auto [s, v] : validation) rows[s].second = number(v, 6);
  std::string text = "step,train_loss,val_loss\n";
  for (const auto& [s, r] : rows) text += std::to_string(s) + "," + r.first + "," + r.second + "\n";
  write_file_atomically(path, text);
}

void LossCurve::write_svg(const std::string& path) const {
  const double W = 820, H = 500, left = 80, right = 30, top = 60, bottom = 70;
  const double pw = W - left - right, ph = H - top - bottom;
  std::int64_t max_step = 1;
  double lo = 1e300, hi = -1e300;
  for (const auto* series : {&train, &validation}) {
    for (auto [s, v] : *series) {
      max_step = std::max(max_step, s);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  if (lo > hi) lo = 0, hi = 1;
  const double ystep = tick_step(std::max(hi - lo, 1e-6), 6);
  lo = std::floor(lo / ystep) * ystep;
  hi = std::ceil(hi / ystep) * ystep;
  if (hi <= lo) hi = lo + ystep;
  auto X = [&](double s) { return left + pw * s / double(max_step); };
  auto Y = [&](double v) { return top + ph * (1.0 - (v - lo) / (hi - lo)); };

  svg::Document doc(W, H);
  doc.rect(0, 0, W, H, "#fff", nullptr);
  doc.text(W / 2, 32, title, 18, svg::Anchor::middle, "#222", true);
  const svg::Stroke grid{"#e4e4e4", 1, ""}, axis{"#444", 1.2, ""};
  for (double v = lo; v <= hi + ystep / 2; v += ystep) {
    doc.line(left, Y(v), left + pw, Y(v), grid);
    doc.text(left - 8, Y(v) + 4, number(v, ystep < 0.1 ? 2 : 1), 12, svg::Anchor::end);
  }
  const double xstep = std::max(1.0, tick_step(double(max_step), 8));
  for (double s = 0; s <= max_step + xstep / 2; s += xstep) {
    doc.line(X(s), top, X(s), top + ph, grid);
    doc.text(X(s), top + ph + 20, number(s, 0), 12, svg::Anchor::middle);
  }
  doc.line(left, top + ph, left + pw, top + ph, axis);
  doc.line(left, top, left, top + ph, axis);
  doc.text(left + pw / 2, H - 22, "optimizer step", 14, svg::Anchor::middle);
  doc.text(24, top + ph / 2, "loss (nats per byte)", 14, svg::Anchor::middle, "#222", false, -90);

  const svg::Stroke train_line{"#1f77b4", 1.6, ""}, val_line{"#d62728", 2.2, "7 4"};
  auto points = [&](const auto& series) {
    std::vector<std::pair<double, double>> p;
    for (auto [s, v] : series) {
      if (std::isfinite(v)) p.emplace_back(X(double(s)), Y(v));
    }
    return p;
  };
  if (!train.empty()) doc.polyline(points(train), train_line);
  if (!validation.empty()) {
    doc.polyline(points(validation), val_line);
    for (auto [x, y] : points(validation)) doc.circle(x, y, 3, "#d62728", val_line);
  }
  const double lx = left + pw - 190, ly = top + 14;
  doc.rect(lx - 10, ly - 16, 190, validation.empty() ? 30 : 52, "#fff", &grid);
  doc.line(lx, ly, lx + 30, ly, train_line);
  doc.text(lx + 38, ly + 4, "train loss", 13, svg::Anchor::start);
  if (!validation.empty()) {
    doc.line(lx, ly + 22, lx + 30, ly + 22, val_line);
    doc.text(lx + 38, ly + 26, "validation loss", 13, svg::Anchor::start);
  }
  write_file_atomically(path, doc.str());
}

void check_curve_folder(const std::string& out) {
  if (out.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (!std::filesystem::is_directory(out, ec)) {
    throw InvalidArgument("out", field_ref("out") + ": cannot make the folder " + shown(out, 160) +
                                     " (" +
                                     (ec ? ec.message() : std::string("a file is in the way")) +
                                     "); give a folder for loss.csv and loss.svg");
  }
  for (const char* name : {"loss.csv", "loss.svg"}) {
    const std::string path = (std::filesystem::path(out) / name).string();
    if (const std::string why = unreplaceable_because(path); !why.empty()) {
      throw InvalidArgument("out", field_ref("out") + ": " + shown(path, 160) + " " + why +
                                       "; give the path of a folder for loss.csv and loss.svg");
    }
  }
}

}  // namespace zerodp::run

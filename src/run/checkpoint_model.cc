#include "zerodp/run/checkpoint_model.h"

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "run/shown_json.h"
#include "zerodp/common/error.h"
#include "zerodp/model/gpt.h"
#include "zerodp/optim/nf4.h"
#include "zerodp/run/run_record.h"

namespace zerodp::run {
namespace {

using nlohmann::json;

}  // namespace

LoadedModel load_gpt(const std::string& folder, CheckpointData use, const std::string& data,
                     bool read_params) {
  ZERODP_CHECK_MSG(use == CheckpointData::corpus || data.empty(),
                   "load_gpt: data without a corpus");
  if (folder.empty()) {
    throw InvalidArgument(field_ref("checkpoint") + ": expected a checkpoint folder or a " +
                          field_ref("save_dir") + " of zerodp train");
  }
  checkpoint::Checkpoint ck = checkpoint::Checkpoint::open(folder);
  const nlohmann::json model =
      nlohmann::json::parse(ck.manifest().model);  // open() checked: an object
  const json type = model.contains("type") ? model.at("type") : json("?");
  if (type != "gpt") {
    throw InvalidArgument(
        field_ref("checkpoint") + ": " + ck.folder() + " holds a " +
        (type.is_string() ? printable(type.get<std::string>(), 64) : shown_json(type)) +
        ", not a GPT");
  }
  // Every field of its type and range (UsageError naming the manifest and the field), so that
  // ModelSpec reads the config without rounding or wrapping.
  read_run_record(ck);
  std::optional<ModelSpec> parsed;
  try {
    if (use == CheckpointData::corpus) {
      parsed.emplace(model, data);
    } else {
      parsed.emplace(ModelSpec::without_data(model));
    }
  } catch (const InvalidArgument& e) {
    if (e.field() == "data") {
      if (!data.empty()) throw;
      throw InvalidArgument(
          "data", field_ref("data") + ": the corpus this checkpoint was trained on, " +
                      shown(model.value("data", std::string()), 160) +
                      ", is not readable here: give it with " + field_ref("data") + " FILE");
    }
    throw Error(ck.folder() + "/manifest.json: model config: " + e.text());
  } catch (const UsageError& e) {
    throw Error(ck.folder() + "/manifest.json: model config: " + e.text());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ck.folder() + "/manifest.json: model config malformed (" + e.what() + ")");
  }
  ModelSpec spec = std::move(*parsed);
  // The weights must be this model's: a hand-edited config must not read past them.
  if (spec.param_count() != ck.params() ||
      (model.contains("params") && model.at("params") != ck.params())) {
    throw Error(ck.folder() + "/manifest.json: the model config makes " +
                std::to_string(spec.param_count()) + " parameters (model.params says " +
                (model.contains("params") ? shown_json(model.at("params")) : "nothing") +
                "), the shards hold " + std::to_string(ck.params()));
  }
  std::vector<float> params, frozen;
  if (read_params) {
    params.resize(ck.params());
    ck.read({0, ck.params()}, params.data(), nullptr, nullptr);
    if (const checkpoint::Checkpoint* base = spec.base()) {
      frozen.resize(base->params());
      base->read({0, base->params()}, frozen.data(), nullptr, nullptr);
      if (spec.nf4()) dequantize_nf4_base(spec.gpt(), spec.double_quant(), frozen);
    }
  }
  return {std::move(ck), std::move(spec), std::move(params), std::move(frozen)};
}

void dequantize_nf4_base(const model::GptConfig& config, bool double_quant,
                         std::span<float> frozen) {
  for (const model::UnitInfo& unit : model::gpt_units(config)) {
    for (const model::TensorInfo& t : unit.frozen_tensors) {
      if (!t.linear) continue;
      std::size_t n = 1;
      for (std::size_t d : t.shape) n *= d;
      const std::span<float> w = frozen.subspan(unit.frozen_offset + t.offset, n);
      optim::dequantize_nf4(optim::quantize_nf4(w, double_quant), w);
    }
  }
}

namespace {

// Under mpirun every process runs train; only the one of world rank 0 writes manifests.
bool mpi_world_rank_zero() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* rank = std::getenv(name)) return std::string_view(rank) == "0";
  }
  return true;  // a singleton MPI process
}

}  // namespace

std::optional<checkpoint::SaveDir> claim_save_dir(const std::string& save_dir, bool mpi,
                                                  const checkpoint::Checkpoint* resumed) {
  if (save_dir.empty() || (mpi && !mpi_world_rank_zero())) return std::nullopt;
  return checkpoint::SaveDir::claim(save_dir, resumed);
}

}  // namespace zerodp::run

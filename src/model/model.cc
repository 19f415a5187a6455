// A one-rank engine in a few lines: every unit over one consolidated flat buffer.
#include "zerodp/model/model.h"

#include "zerodp/common/error.h"

namespace zerodp::model {

void Model::init_frozen_unit(int /*unit*/, std::span<float> frozen, std::uint64_t /*seed*/) const {
  ZERODP_CHECK_MSG(frozen.empty(), "a model without frozen parameters was asked for some");
}

UnitViews flat_unit_views(const Model& model, std::size_t u, std::span<const float> params,
                          std::span<float> grads, std::span<const float> frozen) {
  const auto& units = model.units();
  ZERODP_CHECK(frozen.size() == model.frozen_count());
  auto slice = [&](auto span, std::size_t unit) {
    return span.subspan(units[unit].param_offset, units[unit].param_count);
  };
  UnitViews views;
  views.params.push_back(slice(params, u));
  for (int r : units[u].reads) views.params.push_back(slice(params, static_cast<std::size_t>(r)));
  if (!grads.empty()) {
    views.grads.push_back(slice(grads, u));
    for (int r : units[u].reads) views.grads.push_back(slice(grads, static_cast<std::size_t>(r)));
  }
  if (model.frozen_count() > 0) {
    auto frozen_slice = [&](std::size_t unit) {
      return frozen.subspan(units[unit].frozen_offset, units[unit].frozen_count);
    };
    views.frozen.push_back(frozen_slice(u));
    for (int r : units[u].reads) views.frozen.push_back(frozen_slice(static_cast<std::size_t>(r)));
  }
  return views;
}

void init_all(const Model& model, std::span<float> params, std::uint64_t seed,
              std::span<float> frozen) {
  ZERODP_CHECK(params.size() == model.param_count());
  ZERODP_CHECK(frozen.size() == model.frozen_count());
  const auto& units = model.units();
  for (std::size_t u = 0; u < units.size(); ++u) {
    model.init_unit(static_cast<int>(u),
                    params.subspan(units[u].param_offset, units[u].param_count), seed);
    if (units[u].frozen_count > 0) {
      model.init_frozen_unit(static_cast<int>(u),
                             frozen.subspan(units[u].frozen_offset, units[u].frozen_count), seed);
    }
  }
}

float forward_all(Model& model, std::span<const float> params, std::span<const float> frozen) {
  ZERODP_CHECK(params.size() == model.param_count());
  for (std::size_t u = 0; u < model.units().size(); ++u) {
    model.forward(static_cast<int>(u), flat_unit_views(model, u, params, {}, frozen));
  }
  return model.loss();
}

float forward_backward_all(Model& model, std::span<const float> params, std::span<float> grads,
                           std::span<const float> frozen) {
  ZERODP_CHECK(grads.size() == model.param_count());
  const float loss = forward_all(model, params, frozen);
  for (std::size_t u = model.units().size(); u-- > 0;) {
    model.backward(static_cast<int>(u), flat_unit_views(model, u, params, grads, frozen));
  }
  return loss;
}

}  // namespace zerodp::model

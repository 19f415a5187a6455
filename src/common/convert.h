// Bulk conversions between fp32 and the 16-bit formats, with the rounding of zerodp/dtype.h
// (to nearest, ties to even) and the same bits as the scalar functions there, but vectorised.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zerodp/dtype.h"

namespace zerodp {

void half_to_float(DType dtype, const std::uint16_t* in, float* out, std::size_t n);
void float_to_half(DType dtype, const float* in, std::uint16_t* out, std::size_t n);
// out[i] = half(float(out[i]) + add[i]): accumulating fp32 gradients into 16-bit storage.
void accumulate_half(DType dtype, std::uint16_t* out, const float* add, std::size_t n);

}  // namespace zerodp

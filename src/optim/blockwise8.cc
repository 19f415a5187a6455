#include "zerodp/optim/blockwise8.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "zerodp/common/error.h"

namespace zerodp::optim {
namespace {

// bitsandbytes' create_dynamic_map(signed=True) and (signed=False), 8 bits, 7 exponent bits, as
// PyTorch 1.13's torch.linspace computes them in float32 (scripts/optim_reference.py builds them
// again; tests/optim/blockwise8_test.cc compares the two bit for bit).
constexpr DynamicMap kSigned = {
    -0x1.fc66660000000p-1f,  -0x1.f533320000000p-1f,
    -0x1.ee00000000000p-1f,  -0x1.e6cccc0000000p-1f,
    -0x1.df99980000000p-1f,  -0x1.d866660000000p-1f,
    -0x1.d133340000000p-1f,  -0x1.ca00000000000p-1f,
    -0x1.c2cccc0000000p-1f,  -0x1.bb99980000000p-1f,
    -0x1.b466660000000p-1f,  -0x1.ad33320000000p-1f,
    -0x1.a600000000000p-1f,  -0x1.9ecccc0000000p-1f,
    -0x1.9799980000000p-1f,  -0x1.9066660000000p-1f,
    -0x1.8933340000000p-1f,  -0x1.8200000000000p-1f,
    -0x1.7accce0000000p-1f,  -0x1.73999a0000000p-1f,
    -0x1.6c66680000000p-1f,  -0x1.6533340000000p-1f,
    -0x1.5e00000000000p-1f,  -0x1.56ccce0000000p-1f,
    -0x1.4f999a0000000p-1f,  -0x1.4866660000000p-1f,
    -0x1.4133340000000p-1f,  -0x1.3a00000000000p-1f,
    -0x1.32cccc0000000p-1f,  -0x1.2b999a0000000p-1f,
    -0x1.2466680000000p-1f,  -0x1.1d33340000000p-1f,
    -0x1.1600000000000p-1f,  -0x1.0ecccc0000000p-1f,
    -0x1.07999a0000000p-1f,  -0x1.0066660000000p-1f,
    -0x1.f266680000000p-2f,  -0x1.e400000000000p-2f,
    -0x1.d599980000000p-2f,  -0x1.c733340000000p-2f,
    -0x1.b8cccc0000000p-2f,  -0x1.aa66640000000p-2f,
    -0x1.9c00000000000p-2f,  -0x1.8d99980000000p-2f,
    -0x1.7f33340000000p-2f,  -0x1.70cccc0000000p-2f,
    -0x1.6266640000000p-2f,  -0x1.5400000000000p-2f,
    -0x1.4599980000000p-2f,  -0x1.3733340000000p-2f,
    -0x1.28cccc0000000p-2f,  -0x1.1a66680000000p-2f,
    -0x1.0c00000000000p-2f,  -0x1.fb33340000000p-3f,
    -0x1.de66680000000p-3f,  -0x1.c1999a0000000p-3f,
    -0x1.a4cccc0000000p-3f,  -0x1.8800000000000p-3f,
    -0x1.6b33320000000p-3f,  -0x1.4e66660000000p-3f,
    -0x1.31999a0000000p-3f,  -0x1.14cccc0000000p-3f,
    -0x1.f000000000000p-4f,  -0x1.b666680000000p-4f,
    -0x1.93d70a0000000p-4f,  -0x1.8851ea0000000p-4f,
    -0x1.7cccce0000000p-4f,  -0x1.7147ae0000000p-4f,
    -0x1.65c2900000000p-4f,  -0x1.5a3d700000000p-4f,
    -0x1.4eb8500000000p-4f,  -0x1.4333340000000p-4f,
    -0x1.37ae140000000p-4f,  -0x1.2c28f60000000p-4f,
    -0x1.20a3d60000000p-4f,  -0x1.151eba0000000p-4f,
    -0x1.09999a0000000p-4f,  -0x1.fc28f40000000p-5f,
    -0x1.e51eba0000000p-5f,  -0x1.ce147a0000000p-5f,
    -0x1.b70a3e0000000p-5f,  -0x1.a000000000000p-5f,
    -0x1.88f5c20000000p-5f,  -0x1.71eb860000000p-5f,
    -0x1.5ae1460000000p-5f,  -0x1.43d70a0000000p-5f,
    -0x1.2cccce0000000p-5f,  -0x1.15c28e0000000p-5f,
    -0x1.fd70a40000000p-6f,  -0x1.cf5c260000000p-6f,
    -0x1.a147ae0000000p-6f,  -0x1.7333340000000p-6f,
    -0x1.451eb80000000p-6f,  -0x1.170a3e0000000p-6f,
    -0x1.d1eb860000000p-7f,  -0x1.75c2900000000p-7f,
    -0x1.3e76c80000000p-7f,  -0x1.2c08300000000p-7f,
    -0x1.19999a0000000p-7f,  -0x1.072b020000000p-7f,
    -0x1.e978d40000000p-8f,  -0x1.c49ba60000000p-8f,
    -0x1.9fbe760000000p-8f,  -0x1.7ae1480000000p-8f,
    -0x1.56041a0000000p-8f,  -0x1.3126e80000000p-8f,
    -0x1.0c49ba0000000p-8f,  -0x1.ced9140000000p-9f,
    -0x1.851eb80000000p-9f,  -0x1.3b645a0000000p-9f,
    -0x1.e353f80000000p-10f, -0x1.4fdf3a0000000p-10f,
    -0x1.eecbfe0000000p-11f, -0x1.b3d07c0000000p-11f,
    -0x1.78d5000000000p-11f, -0x1.3dd9820000000p-11f,
    -0x1.02de020000000p-11f, -0x1.8fc5060000000p-12f,
    -0x1.19ce0a0000000p-12f, -0x1.47ae160000000p-13f,
    -0x1.743e960000000p-14f, -0x1.15df660000000p-14f,
    -0x1.6f00680000000p-15f, -0x1.64840c0000000p-16f,
    -0x1.040bfe0000000p-17f, -0x1.b435280000000p-19f,
    -0x1.27476e0000000p-21f, 0x0p+0f,
    0x1.27476e0000000p-21f,  0x1.b435280000000p-19f,
    0x1.040bfe0000000p-17f,  0x1.64840c0000000p-16f,
    0x1.6f00680000000p-15f,  0x1.15df660000000p-14f,
    0x1.743e960000000p-14f,  0x1.47ae160000000p-13f,
    0x1.19ce0a0000000p-12f,  0x1.8fc5060000000p-12f,
    0x1.02de020000000p-11f,  0x1.3dd9820000000p-11f,
    0x1.78d5000000000p-11f,  0x1.b3d07c0000000p-11f,
    0x1.eecbfe0000000p-11f,  0x1.4fdf3a0000000p-10f,
    0x1.e353f80000000p-10f,  0x1.3b645a0000000p-9f,
    0x1.851eb80000000p-9f,   0x1.ced9140000000p-9f,
    0x1.0c49ba0000000p-8f,   0x1.3126e80000000p-8f,
    0x1.56041a0000000p-8f,   0x1.7ae1480000000p-8f,
    0x1.9fbe760000000p-8f,   0x1.c49ba60000000p-8f,
    0x1.e978d40000000p-8f,   0x1.072b020000000p-7f,
    0x1.19999a0000000p-7f,   0x1.2c08300000000p-7f,
    0x1.3e76c80000000p-7f,   0x1.75c2900000000p-7f,
    0x1.d1eb860000000p-7f,   0x1.170a3e0000000p-6f,
    0x1.451eb80000000p-6f,   0x1.7333340000000p-6f,
    0x1.a147ae0000000p-6f,   0x1.cf5c260000000p-6f,
    0x1.fd70a40000000p-6f,   0x1.15c28e0000000p-5f,
    0x1.2cccce0000000p-5f,   0x1.43d70a0000000p-5f,
    0x1.5ae1460000000p-5f,   0x1.71eb860000000p-5f,
    0x1.88f5c20000000p-5f,   0x1.a000000000000p-5f,
    0x1.b70a3e0000000p-5f,   0x1.ce147a0000000p-5f,
    0x1.e51eba0000000p-5f,   0x1.fc28f40000000p-5f,
    0x1.09999a0000000p-4f,   0x1.151eba0000000p-4f,
    0x1.20a3d60000000p-4f,   0x1.2c28f60000000p-4f,
    0x1.37ae140000000p-4f,   0x1.4333340000000p-4f,
    0x1.4eb8500000000p-4f,   0x1.5a3d700000000p-4f,
    0x1.65c2900000000p-4f,   0x1.7147ae0000000p-4f,
    0x1.7cccce0000000p-4f,   0x1.8851ea0000000p-4f,
    0x1.93d70a0000000p-4f,   0x1.b666680000000p-4f,
    0x1.f000000000000p-4f,   0x1.14cccc0000000p-3f,
    0x1.31999a0000000p-3f,   0x1.4e66660000000p-3f,
    0x1.6b33320000000p-3f,   0x1.8800000000000p-3f,
    0x1.a4cccc0000000p-3f,   0x1.c1999a0000000p-3f,
    0x1.de66680000000p-3f,   0x1.fb33340000000p-3f,
    0x1.0c00000000000p-2f,   0x1.1a66680000000p-2f,
    0x1.28cccc0000000p-2f,   0x1.3733340000000p-2f,
    0x1.4599980000000p-2f,   0x1.5400000000000p-2f,
    0x1.6266640000000p-2f,   0x1.70cccc0000000p-2f,
    0x1.7f33340000000p-2f,   0x1.8d99980000000p-2f,
    0x1.9c00000000000p-2f,   0x1.aa66640000000p-2f,
    0x1.b8cccc0000000p-2f,   0x1.c733340000000p-2f,
    0x1.d599980000000p-2f,   0x1.e400000000000p-2f,
    0x1.f266680000000p-2f,   0x1.0066660000000p-1f,
    0x1.07999a0000000p-1f,   0x1.0ecccc0000000p-1f,
    0x1.1600000000000p-1f,   0x1.1d33340000000p-1f,
    0x1.2466680000000p-1f,   0x1.2b999a0000000p-1f,
    0x1.32cccc0000000p-1f,   0x1.3a00000000000p-1f,
    0x1.4133340000000p-1f,   0x1.4866660000000p-1f,
    0x1.4f999a0000000p-1f,   0x1.56ccce0000000p-1f,
    0x1.5e00000000000p-1f,   0x1.6533340000000p-1f,
    0x1.6c66680000000p-1f,   0x1.73999a0000000p-1f,
    0x1.7accce0000000p-1f,   0x1.8200000000000p-1f,
    0x1.8933340000000p-1f,   0x1.9066660000000p-1f,
    0x1.9799980000000p-1f,   0x1.9ecccc0000000p-1f,
    0x1.a600000000000p-1f,   0x1.ad33320000000p-1f,
    0x1.b466660000000p-1f,   0x1.bb99980000000p-1f,
    0x1.c2cccc0000000p-1f,   0x1.ca00000000000p-1f,
    0x1.d133340000000p-1f,   0x1.d866660000000p-1f,
    0x1.df99980000000p-1f,   0x1.e6cccc0000000p-1f,
    0x1.ee00000000000p-1f,   0x1.f533320000000p-1f,
    0x1.fc66660000000p-1f,   0x1.0000000000000p+0f,
};
constexpr DynamicMap kUnsigned = {
    0x0p+0f,
    0x1.5cf7540000000p-22f,
    0x1.a013300000000p-21f,
    0x1.1d36700000000p-19f,
    0x1.2599ec0000000p-18f,
    0x1.bc98a20000000p-18f,
    0x1.29cbaa0000000p-17f,
    0x1.0624dc0000000p-16f,
    0x1.c2e3400000000p-16f,
    0x1.3fd0d00000000p-15f,
    0x1.9e30000000000p-15f,
    0x1.fc8f340000000p-15f,
    0x1.2d77320000000p-14f,
    0x1.5ca6c80000000p-14f,
    0x1.8bd6620000000p-14f,
    0x1.0cb2960000000p-13f,
    0x1.82a9940000000p-13f,
    0x1.f8a0900000000p-13f,
    0x1.374bc80000000p-12f,
    0x1.7247440000000p-12f,
    0x1.ad42c40000000p-12f,
    0x1.e83e440000000p-12f,
    0x1.119ce20000000p-11f,
    0x1.2f1aa00000000p-11f,
    0x1.4c98600000000p-11f,
    0x1.6a16200000000p-11f,
    0x1.8793de0000000p-11f,
    0x1.a511a00000000p-11f,
    0x1.c28f5e0000000p-11f,
    0x1.e00d1c0000000p-11f,
    0x1.fd8adc0000000p-11f,
    0x1.2b020c0000000p-10f,
    0x1.74bc6a0000000p-10f,
    0x1.be76c80000000p-10f,
    0x1.0418920000000p-9f,
    0x1.28f5c20000000p-9f,
    0x1.4dd2f00000000p-9f,
    0x1.72b01e0000000p-9f,
    0x1.978d4e0000000p-9f,
    0x1.bc6a7c0000000p-9f,
    0x1.e147ae0000000p-9f,
    0x1.03126e0000000p-8f,
    0x1.1581040000000p-8f,
    0x1.27ef9e0000000p-8f,
    0x1.3a5e340000000p-8f,
    0x1.4ccccc0000000p-8f,
    0x1.5f3b640000000p-8f,
    0x1.71a9fa0000000p-8f,
    0x1.8418940000000p-8f,
    0x1.9687280000000p-8f,
    0x1.a8f5c20000000p-8f,
    0x1.bb645c0000000p-8f,
    0x1.cdd2f00000000p-8f,
    0x1.e0418a0000000p-8f,
    0x1.f2b01e0000000p-8f,
    0x1.028f5c0000000p-7f,
    0x1.0bc6a60000000p-7f,
    0x1.14fdf20000000p-7f,
    0x1.1e35400000000p-7f,
    0x1.276c8a0000000p-7f,
    0x1.30a3d60000000p-7f,
    0x1.39db200000000p-7f,
    0x1.43126e0000000p-7f,
    0x1.5eb8540000000p-7f,
    0x1.8cccce0000000p-7f,
    0x1.bae1460000000p-7f,
    0x1.e8f5c40000000p-7f,
    0x1.0b851e0000000p-6f,
    0x1.228f5c0000000p-6f,
    0x1.39999a0000000p-6f,
    0x1.50a3d60000000p-6f,
    0x1.67ae160000000p-6f,
    0x1.7eb8540000000p-6f,
    0x1.95c2900000000p-6f,
    0x1.acccce0000000p-6f,
    0x1.c3d70e0000000p-6f,
    0x1.dae1460000000p-6f,
    0x1.f1eb860000000p-6f,
    0x1.047ae00000000p-5f,
    0x1.1000000000000p-5f,
    0x1.1b851e0000000p-5f,
    0x1.270a3e0000000p-5f,
    0x1.328f5e0000000p-5f,
    0x1.3e147a0000000p-5f,
    0x1.49999a0000000p-5f,
    0x1.551eb60000000p-5f,
    0x1.60a3d60000000p-5f,
    0x1.6c28f60000000p-5f,
    0x1.77ae140000000p-5f,
    0x1.8333340000000p-5f,
    0x1.8eb8540000000p-5f,
    0x1.9a3d700000000p-5f,
    0x1.a5c2900000000p-5f,
    0x1.b147ae0000000p-5f,
    0x1.bcccce0000000p-5f,
    0x1.c851ee0000000p-5f,
    0x1.d3d70e0000000p-5f,
    0x1.df5c2a0000000p-5f,
    0x1.eae1460000000p-5f,
    0x1.f666660000000p-5f,
    0x1.00f5c40000000p-4f,
    0x1.06b8520000000p-4f,
    0x1.0c7ae20000000p-4f,
    0x1.123d720000000p-4f,
    0x1.1800000000000p-4f,
    0x1.1dc2900000000p-4f,
    0x1.2385200000000p-4f,
    0x1.2947ae0000000p-4f,
    0x1.2f0a3e0000000p-4f,
    0x1.34ccce0000000p-4f,
    0x1.3a8f5e0000000p-4f,
    0x1.4051ec0000000p-4f,
    0x1.46147a0000000p-4f,
    0x1.4bd70a0000000p-4f,
    0x1.51999a0000000p-4f,
    0x1.575c280000000p-4f,
    0x1.5d1eb80000000p-4f,
    0x1.62e1460000000p-4f,
    0x1.68a3d60000000p-4f,
    0x1.6e66660000000p-4f,
    0x1.7428f60000000p-4f,
    0x1.79eb860000000p-4f,
    0x1.7fae140000000p-4f,
    0x1.8570a40000000p-4f,
    0x1.8b33340000000p-4f,
    0x1.90f5c20000000p-4f,
    0x1.96b8520000000p-4f,
    0x1.a800000000000p-4f,
    0x1.c4cccc0000000p-4f,
    0x1.e1999a0000000p-4f,
    0x1.fe66660000000p-4f,
    0x1.0d99980000000p-3f,
    0x1.1c00000000000p-3f,
    0x1.2a66680000000p-3f,
    0x1.38cccc0000000p-3f,
    0x1.4733340000000p-3f,
    0x1.5599980000000p-3f,
    0x1.6400000000000p-3f,
    0x1.7266680000000p-3f,
    0x1.80cccc0000000p-3f,
    0x1.8f33340000000p-3f,
    0x1.9d99980000000p-3f,
    0x1.ac00000000000p-3f,
    0x1.ba66680000000p-3f,
    0x1.c8cccc0000000p-3f,
    0x1.d733340000000p-3f,
    0x1.e5999c0000000p-3f,
    0x1.f400000000000p-3f,
    0x1.0133340000000p-2f,
    0x1.0866660000000p-2f,
    0x1.0f999a0000000p-2f,
    0x1.16ccce0000000p-2f,
    0x1.1e00000000000p-2f,
    0x1.2533340000000p-2f,
    0x1.2c66680000000p-2f,
    0x1.33999a0000000p-2f,
    0x1.3accce0000000p-2f,
    0x1.4200000000000p-2f,
    0x1.4933340000000p-2f,
    0x1.5066660000000p-2f,
    0x1.5799980000000p-2f,
    0x1.5ecccc0000000p-2f,
    0x1.6600000000000p-2f,
    0x1.6d33320000000p-2f,
    0x1.7466660000000p-2f,
    0x1.7b99980000000p-2f,
    0x1.82cccc0000000p-2f,
    0x1.8a00000000000p-2f,
    0x1.9133340000000p-2f,
    0x1.9866660000000p-2f,
    0x1.9f99980000000p-2f,
    0x1.a6cccc0000000p-2f,
    0x1.ae00000000000p-2f,
    0x1.b533320000000p-2f,
    0x1.bc66660000000p-2f,
    0x1.c3999a0000000p-2f,
    0x1.cacccc0000000p-2f,
    0x1.d200000000000p-2f,
    0x1.d933340000000p-2f,
    0x1.e066660000000p-2f,
    0x1.e7999a0000000p-2f,
    0x1.eecccc0000000p-2f,
    0x1.f600000000000p-2f,
    0x1.fd33320000000p-2f,
    0x1.0233340000000p-1f,
    0x1.05cccc0000000p-1f,
    0x1.0966640000000p-1f,
    0x1.0d00000000000p-1f,
    0x1.1099980000000p-1f,
    0x1.1433340000000p-1f,
    0x1.17cccc0000000p-1f,
    0x1.1b66680000000p-1f,
    0x1.1f00000000000p-1f,
    0x1.22999a0000000p-1f,
    0x1.2633340000000p-1f,
    0x1.29cccc0000000p-1f,
    0x1.2d66680000000p-1f,
    0x1.3100000000000p-1f,
    0x1.34999a0000000p-1f,
    0x1.3833340000000p-1f,
    0x1.3bcccc0000000p-1f,
    0x1.3f66660000000p-1f,
    0x1.4300000000000p-1f,
    0x1.4699980000000p-1f,
    0x1.4a33340000000p-1f,
    0x1.4dcccc0000000p-1f,
    0x1.5166680000000p-1f,
    0x1.5500000000000p-1f,
    0x1.58999c0000000p-1f,
    0x1.5c33340000000p-1f,
    0x1.5fcccc0000000p-1f,
    0x1.6366680000000p-1f,
    0x1.6700000000000p-1f,
    0x1.6a999c0000000p-1f,
    0x1.6e33340000000p-1f,
    0x1.71cccc0000000p-1f,
    0x1.7566680000000p-1f,
    0x1.7900000000000p-1f,
    0x1.7c99980000000p-1f,
    0x1.8033340000000p-1f,
    0x1.83cccc0000000p-1f,
    0x1.8766680000000p-1f,
    0x1.8b00000000000p-1f,
    0x1.8e99980000000p-1f,
    0x1.9233340000000p-1f,
    0x1.95cccc0000000p-1f,
    0x1.9966640000000p-1f,
    0x1.9d00000000000p-1f,
    0x1.a099980000000p-1f,
    0x1.a433340000000p-1f,
    0x1.a7cccc0000000p-1f,
    0x1.ab66680000000p-1f,
    0x1.af00000000000p-1f,
    0x1.b2999a0000000p-1f,
    0x1.b633340000000p-1f,
    0x1.b9cccc0000000p-1f,
    0x1.bd66680000000p-1f,
    0x1.c100000000000p-1f,
    0x1.c4999a0000000p-1f,
    0x1.c833340000000p-1f,
    0x1.cbcccc0000000p-1f,
    0x1.cf66660000000p-1f,
    0x1.d300000000000p-1f,
    0x1.d699980000000p-1f,
    0x1.da33340000000p-1f,
    0x1.ddcccc0000000p-1f,
    0x1.e166680000000p-1f,
    0x1.e500000000000p-1f,
    0x1.e8999c0000000p-1f,
    0x1.ec33340000000p-1f,
    0x1.efcccc0000000p-1f,
    0x1.f366680000000p-1f,
    0x1.f700000000000p-1f,
    0x1.fa999c0000000p-1f,
    0x1.fe33340000000p-1f,
    0x1.0000000000000p+0f,
};

// fl(|a - b|) in fp32, as torch.abs(scaled - code) computes it.
float distance(float a, float b) {
  return std::fabs(a - b);
}

bool identical_bits(float a, float b) {
  return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

}  // namespace

const DynamicMap& dynamic_map_signed() {
  return kSigned;
}

const DynamicMap& dynamic_map_unsigned() {
  return kUnsigned;
}

namespace {

// The first index of the least fp32 distance to `x` among map[lo, hi).
std::uint8_t nearest_in(float x, const DynamicMap& map, std::size_t lo, std::size_t hi) {
  std::size_t best = lo;
  float best_d = distance(x, map[lo]);
  for (std::size_t i = lo + 1; i < hi; ++i) {
    const float d = distance(x, map[i]);
    if (d < best_d) best = i, best_d = d;
  }
  return std::uint8_t(best);
}

// By binary search, for a clamped value that is not NaN: the map is sorted and the distance is
// monotone on each side of x, so the nearest value is a neighbour of where x would sit; the
// window of four around it keeps argmin's first-index rule where two distances round alike.
std::uint8_t nearest_by_search(float x, const DynamicMap& map) {
  const std::size_t k = std::size_t(std::upper_bound(map.begin(), map.end(), x) - map.begin());
  return nearest_in(x, map, k >= 2 ? k - 2 : 0, std::min<std::size_t>(k + 2, map.size()));
}

// The codes the floats of each interval may take: floats that share their sign, exponent and
// top 7 mantissa bits (an interval 2^-7 wide, relative) have their nearest codes between those
// of the interval's two ends, since the nearest code never falls as the value grows; widened by
// one each side against distances that round alike. Most intervals hold one or two codes, so a
// value is quantized with two or three distances instead of a branchy binary search.
class CodeRanges {
 public:
  static constexpr std::uint32_t kKeys = 0x3F80 + 1;  // |x| <= 1: keys up to 1.0's

  explicit CodeRanges(const DynamicMap& map) {
    for (std::uint32_t sign = 0; sign < 2; ++sign) {
      for (std::uint32_t key = 0; key < kKeys; ++key) {
        const std::uint32_t first = sign << 31 | key << 16;
        const std::uint32_t last = std::min(first | 0xFFFF, sign << 31 | 0x3F800000u);
        const std::size_t a = nearest_by_search(std::bit_cast<float>(first), map);
        const std::size_t b = nearest_by_search(std::bit_cast<float>(last), map);
        lo_[sign][key] = std::uint8_t(std::min(a, b) > 0 ? std::min(a, b) - 1 : 0);
        hi_[sign][key] = std::uint8_t(std::min<std::size_t>(std::max(a, b) + 1, 255));
        packed_[sign * kKeys + key] = lo_[sign][key] | (hi_[sign][key] - lo_[sign][key]) << 8;
      }
    }
  }

  // codes[i] for x[i] * inverse, i < n: nearest() on each value, eight at a time where the CPU
  // gathers (the same distances and the same first-index choice; NaN and the rare intervals of
  // more than three candidates go one by one).
  void quantize(const float* x, std::size_t n, float inverse, const DynamicMap& map,
                std::uint8_t* codes) const {
    std::size_t i = 0;
#if defined(__AVX2__)
    const __m256 vinv = _mm256_set1_ps(inverse);
    const __m256 one = _mm256_set1_ps(1.0f), minus_one = _mm256_set1_ps(-1.0f);
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    const __m256 inf = _mm256_set1_ps(INFINITY);
    const __m256i keys = _mm256_set1_epi32(kKeys), low_byte = _mm256_set1_epi32(0xFF);
    const __m256i i1 = _mm256_set1_epi32(1), i2 = _mm256_set1_epi32(2);
    const __m256i last = _mm256_set1_epi32(255);
    for (; i + 8 <= n; i += 8) {
      const __m256 raw = _mm256_mul_ps(_mm256_loadu_ps(x + i), vinv);
      const int nan = _mm256_movemask_ps(_mm256_cmp_ps(raw, raw, _CMP_UNORD_Q));
      const __m256 v = _mm256_min_ps(_mm256_max_ps(raw, minus_one), one);  // clamp, NaN aside
      const __m256i bits = _mm256_castps_si256(v);
      const __m256i index = _mm256_add_epi32(
          _mm256_srli_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF)), 16),
          _mm256_mullo_epi32(_mm256_srli_epi32(bits, 31), keys));
      const __m256i entry = _mm256_i32gather_epi32(packed_.data(), index, 4);
      const __m256i lo = _mm256_and_si256(entry, low_byte);
      const __m256i width = _mm256_srli_epi32(entry, 8);
      const int wide = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(width, i2)));
      const __m256 d0 =
          _mm256_and_ps(magnitude, _mm256_sub_ps(v, _mm256_i32gather_ps(map.data(), lo, 4)));
      const __m256 d1 = _mm256_and_ps(
          magnitude,
          _mm256_sub_ps(v, _mm256_i32gather_ps(map.data(), _mm256_add_epi32(lo, i1), 4)));
      const __m256i lo2 = _mm256_min_epi32(_mm256_add_epi32(lo, i2), last);
      const __m256 d2 = _mm256_blendv_ps(
          inf, _mm256_and_ps(magnitude, _mm256_sub_ps(v, _mm256_i32gather_ps(map.data(), lo2, 4))),
          _mm256_castsi256_ps(_mm256_cmpeq_epi32(width, i2)));
      const __m256 first = _mm256_cmp_ps(d1, d0, _CMP_LT_OQ);
      const __m256 best = _mm256_blendv_ps(d0, d1, first);
      __m256i code = _mm256_sub_epi32(lo, _mm256_castps_si256(first));  // a true mask is -1
      code =
          _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(code), _mm256_castsi256_ps(lo2),
                                               _mm256_cmp_ps(d2, best, _CMP_LT_OQ)));
      alignas(32) std::int32_t lanes[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), code);
      for (int k = 0; k < 8; ++k) {
        if ((nan | wide) >> k & 1) {
          codes[i + k] = quantize_scaled(x[i + k] * inverse, map);
        } else {
          codes[i + k] = std::uint8_t(lanes[k]);
        }
      }
    }
#endif
    for (; i < n; ++i) {
      const float scaled = x[i] * inverse;
      codes[i] = std::isnan(scaled) ? 0 : nearest(std::clamp(scaled, -1.0f, 1.0f), map);
    }
  }

  std::uint8_t nearest(float x, const DynamicMap& map) const {
    const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
    const std::uint32_t sign = bits >> 31, key = (bits & 0x7FFFFFFFu) >> 16;
    const std::size_t lo = lo_[sign][key], hi = hi_[sign][key];
    if (hi - lo > 2 || hi > 254) return nearest_in(x, map, lo, hi + 1);
    // Three candidates (nearly every interval), chosen without branches: a later one wins only
    // when strictly nearer, argmin's first-index rule.
    const float d0 = distance(x, map[lo]), d1 = distance(x, map[lo + 1]);
    const float d2 = hi - lo == 2 ? distance(x, map[lo + 2]) : INFINITY;
    const bool one = d1 < d0;
    const float best = one ? d1 : d0;
    return std::uint8_t(d2 < best ? lo + 2 : lo + std::size_t(one));
  }

 private:
  std::uint8_t lo_[2][kKeys], hi_[2][kKeys];
  std::array<std::int32_t, 2 * kKeys> packed_;  // lo | (hi - lo) << 8, at sign * kKeys + key
};

// The ranges of the two maps, made on first use (function-local statics: thread-safe).
const CodeRanges* ranges_of(const DynamicMap& map) {
  if (&map == &kSigned) {
    static const CodeRanges ranges(kSigned);
    return &ranges;
  }
  if (&map == &kUnsigned) {
    static const CodeRanges ranges(kUnsigned);
    return &ranges;
  }
  return nullptr;
}

}  // namespace

std::uint8_t quantize_scaled(float scaled, const DynamicMap& map) {
  if (std::isnan(scaled)) return 0;  // torch.argmin over NaN distances: the first index
  scaled = std::clamp(scaled, -1.0f, 1.0f);
  const CodeRanges* ranges = ranges_of(map);
  return ranges ? ranges->nearest(scaled, map) : nearest_by_search(scaled, map);
}

float block_absmax(const float* x, std::size_t n) {
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (!(a <= m)) m = a;  // NaN wins, as torch.max propagates it
  }
  return m;
}

void quantize_with(const float* x, std::size_t n, float absmax, const DynamicMap& map,
                   std::uint8_t* codes) {
  const float inverse = 1.0f / absmax;
  if (const CodeRanges* ranges = ranges_of(map)) {
    ranges->quantize(x, n, inverse, map, codes);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) codes[i] = quantize_scaled(x[i] * inverse, map);
}

void dequantize(const std::uint8_t* codes, std::size_t n, float absmax, const DynamicMap& map,
                float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = map[codes[i]] * absmax;
}

bool recover_block(const float* values, std::size_t n, const DynamicMap& map, float* absmax,
                   std::uint8_t* codes) {
  const float top = block_absmax(values, n);
  if (!std::isfinite(top)) return false;
  // Each candidate's codes: the value's code under it, kept only if every element dequantizes
  // back to its own bits.
  auto fits = [&](float a) {
    for (std::size_t i = 0; i < n; ++i) {
      const float scaled = values[i] * (1.0f / a);
      const std::uint8_t c = quantize_scaled(scaled, map);
      if (!identical_bits(map[c] * a, values[i])) return false;
      codes[i] = c;
    }
    *absmax = a;
    return true;
  };
  if (top == 0.0f) {
    // An all-zero block: quantize_block gives every element code 0 (NaN scaled), whose
    // dequantized value is map[0] * 0, a signed zero.
    for (std::size_t i = 0; i < n; ++i) {
      if (!identical_bits(values[i], map[0] * 0.0f)) return false;
      codes[i] = 0;
    }
    *absmax = 0.0f;
    return true;
  }
  if (fits(top)) return true;
  // The largest element was negative and took the map's most negative value, |map[0]| < 1: the
  // absmax is within an ulp or two of top / |map[0]|.
  float a = top / std::fabs(map[0]);
  for (int k = 0; k < 3; ++k) a = std::nextafter(a, 0.0f);
  for (int k = 0; k < 7; ++k, a = std::nextafter(a, INFINITY)) {
    if (fits(a)) return true;
  }
  return false;
}

void adamw8_step(const StepSpans& s, float grad_mul, float lr, std::int64_t t, const Hyper& h) {
  ZERODP_CHECK(t >= 1 && s.grad.size() == s.param.size() && s.slot[0].size() == s.param.size() &&
               s.slot[1].size() == s.param.size());
  const std::size_t n = s.param.size();
  float* __restrict p = s.param.data();
  const float* __restrict grad = s.grad.data();
  float* __restrict m = s.slot[0].data();
  float* __restrict v = s.slot[1].data();
  const float a1 = float(1.0 - double(h.beta1)), a2 = float(1.0 - double(h.beta2));
  for (std::size_t i = 0; i < n; ++i) {
    const float g = grad[i] * grad_mul;
    m[i] = m[i] * h.beta1 + a1 * g;
    v[i] = v[i] * h.beta2 + (a2 * g) * g;
  }
  const double c1 = 1.0 - std::pow(double(h.beta1), double(t));
  const float c2 = float(std::sqrt(1.0 - std::pow(double(h.beta2), double(t))));
  const float step = float(-double(lr) / c1);
  const float decay = float(1.0 - double(lr) * double(h.weight_decay));
  const bool decays = h.weight_decay > 0.0f;
  std::size_t i = 0;
#if defined(__AVX__)
  // The scalar loop below, eight elements at a time: the same correctly rounded operations in
  // the same order (GCC leaves it scalar: std::sqrt may set errno).
  const __m256 vc2 = _mm256_set1_ps(c2), veps = _mm256_set1_ps(h.eps);
  const __m256 vstep = _mm256_set1_ps(step), vdecay = _mm256_set1_ps(decay);
  for (; i + 8 <= n; i += 8) {
    const __m256 denom =
        _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(_mm256_loadu_ps(v + i)), vc2), veps);
    __m256 q = _mm256_loadu_ps(p + i);
    if (decays) q = _mm256_mul_ps(q, vdecay);
    _mm256_storeu_ps(
        p + i,
        _mm256_add_ps(q, _mm256_div_ps(_mm256_mul_ps(vstep, _mm256_loadu_ps(m + i)), denom)));
  }
#endif
  for (; i < n; ++i) {
    const float denom = std::sqrt(v[i]) / c2 + h.eps;
    const float q = decays ? p[i] * decay : p[i];
    p[i] = q + (step * m[i]) / denom;
  }
}

const DynamicMap& slot_map(const Rule& rule, std::size_t k) {
  return holds_squares(rule.row->slots[k]) ? dynamic_map_unsigned() : dynamic_map_signed();
}

namespace {

constexpr std::size_t kBlockCapacity = 256;

// The slots of a piece, dequantized, and the spans a step takes of them.
struct Dequantized {
  float slot[2][kBlockCapacity];
  Dequantized(const Rule& rule, std::size_t n, const std::uint8_t* const codes[2],
              const float old_absmax[2]) {
    ZERODP_CHECK(n <= kBlockCapacity && rule.row->slots.size() <= 2);
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
      dequantize(codes[k], n, old_absmax[k], slot_map(rule, k), slot[k]);
    }
  }
  StepSpans spans(const Rule& rule, float* param, const float* grad, std::size_t n) {
    StepSpans s{.param = {param, n}, .grad = {grad, n}};
    for (std::size_t k = 0; k < rule.row->slots.size(); ++k) s.slot[k] = {slot[k], n};
    return s;
  }
};

}  // namespace

void piece_maxima8(const Rule& rule, const float* param, const float* grad, std::size_t n,
                   const std::uint8_t* const codes[2], const float old_absmax[2], float grad_mul,
                   float lr, std::int64_t t, const Hyper& h, float maxima[2]) {
  Dequantized d(rule, n, codes, old_absmax);
  float p[kBlockCapacity];
  std::copy_n(param, n, p);
  rule.step(d.spans(rule, p, grad, n), grad_mul, lr, t, h);
  maxima[0] = maxima[1] = 0.0f;
  for (std::size_t k = 0; k < rule.row->slots.size(); ++k) maxima[k] = block_absmax(d.slot[k], n);
}

void step_block8(const Rule& rule, float* param, const float* grad, std::size_t n,
                 std::uint8_t* const codes[2], const float old_absmax[2],
                 const float* agreed_absmax, float new_absmax[2], float grad_mul, float lr,
                 std::int64_t t, const Hyper& h) {
  Dequantized d(rule, n, codes, old_absmax);
  rule.step(d.spans(rule, param, grad, n), grad_mul, lr, t, h);
  for (std::size_t k = 0; k < rule.row->slots.size(); ++k) {
    new_absmax[k] = agreed_absmax ? agreed_absmax[k] : block_absmax(d.slot[k], n);
    quantize_with(d.slot[k], n, new_absmax[k], slot_map(rule, k), codes[k]);
  }
}

}  // namespace zerodp::optim

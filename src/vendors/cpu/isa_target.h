#pragma once
// What a cpu kernel file needs to hold code for ISAs the build flags do not enable: the x86 intrinsics
// (OPCHAIN_CPU_X86 says whether there are any) and a region macro pair that compiles the functions
// between them for one ISA (GCC: target pragma; clang: attribute push). Only functions in such a region
// may use that ISA's intrinsics; which region runs is chosen at run time (cpu_kernels.h).
#if defined(__x86_64__) || defined(__i386__)
#define OPCHAIN_CPU_X86 1
// GCC 12 flags the intrinsics' own `__Y = __Y` undefined-vector idiom (GCC PR105593); not our code.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#else
#define OPCHAIN_CPU_X86 0
#endif

#define OPCHAIN_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define OPCHAIN_TARGET_BEGIN(isa) \
  OPCHAIN_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define OPCHAIN_TARGET_END() OPCHAIN_PRAGMA(clang attribute pop)
#else
#define OPCHAIN_TARGET_BEGIN(isa) OPCHAIN_PRAGMA(GCC push_options) OPCHAIN_PRAGMA(GCC target(isa))
#define OPCHAIN_TARGET_END() OPCHAIN_PRAGMA(GCC pop_options)
#endif

#pragma once
// The cpu vendor's code paths a test walks over: every SIMD tier the CPU supports and, on the Avx512
// tier of a CPU with avx512_bf16, each bf16 dot form (Note [bf16 dot forms]): each is its own
// summation order, so each must match reference and be batch invariant on its own.
#include <string>
#include <thread>
#include <vector>

#include "core/thread_pool.h"
#include "vendors/cpu/cpu_kernels.h"

namespace opchain::harness {

struct CpuPath {
  cpu::Isa isa;
  cpu::Bf16DotForm form;
  std::string name;
};

inline std::vector<CpuPath> cpu_paths() {
  std::vector<CpuPath> out;
  for (cpu::Isa isa : cpu::kAllIsas) {
    if (!cpu::isa_supported(isa)) continue;
    if (isa == cpu::Isa::Avx512Bf16) {
      for (cpu::Bf16DotForm f : {cpu::Bf16DotForm::Vdpbf16ps, cpu::Bf16DotForm::FmaPairs})
        out.push_back({isa, f, std::string(cpu::isa_name(isa)) + "/" + cpu::bf16_dot_form_name(f)});
    } else {
      out.push_back({isa, cpu::bf16_dot_form(), cpu::isa_name(isa)});
    }
  }
  return out;
}

inline bool select_path(const CpuPath& p) {
  cpu::set_bf16_dot_form(p.form);
  return cpu::set_active_isa(p.isa);
}

// Restores the SIMD path, the bf16 dot form, the narrow tiers' packed-GEMM threshold and the pool size a
// test changed.
struct CpuPathGuard {
  cpu::Isa isa = cpu::active_isa();
  cpu::Bf16DotForm form = cpu::bf16_dot_form();
  int64_t narrow_packed_min_rows = cpu::narrow_packed_min_rows();
  ~CpuPathGuard() {
    cpu::set_active_isa(isa);
    cpu::set_bf16_dot_form(form);
    cpu::set_narrow_packed_min_rows(narrow_packed_min_rows);
    ThreadPool::set_global_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
};

}  // namespace opchain::harness

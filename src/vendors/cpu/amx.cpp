#include "vendors/cpu/amx.h"

#include <cstring>

#include "vendors/cpu/isa_target.h"

#if OPCHAIN_CPU_X86 && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace opchain::cpu {

namespace {

#if OPCHAIN_CPU_X86 && defined(__linux__)
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr unsigned long kXfeatureXtiledata = 18;

bool cpu_has_amx() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const unsigned amx_bf16 = 1u << 22, amx_tile = 1u << 24, amx_int8 = 1u << 25;
  return (d & amx_bf16) && (d & amx_tile) && (d & amx_int8);
}

bool os_grants_tile_data() {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long mask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) != 0) return false;
  return (mask >> kXfeatureXtiledata) & 1;
}
#endif

}  // namespace

const AmxTileConfig& amx_full_tiles() {
  static const AmxTileConfig cfg = [] {
    AmxTileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.rows[t] = 16;
      c.colsb[t] = 64;
    }
    return c;
  }();
  return cfg;
}

bool amx_supported() {
#if OPCHAIN_CPU_X86 && defined(__linux__)
  static const bool ok = cpu_has_amx() && os_grants_tile_data();
  return ok;
#else
  return false;
#endif
}

#if OPCHAIN_CPU_X86
OPCHAIN_TARGET_BEGIN("amx-tile")
void amx_configure(const AmxTileConfig& cfg) {
  thread_local AmxTileConfig held{};
  thread_local bool loaded = false;
  if (loaded && std::memcmp(&held, &cfg, sizeof cfg) == 0) return;
  _tile_loadconfig(&cfg);
  held = cfg;
  loaded = true;
}
OPCHAIN_TARGET_END()
#else
void amx_configure(const AmxTileConfig&) {}
#endif

}  // namespace opchain::cpu

#include "dmrt/runtime/machine.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "dmrt/runtime/error.h"

namespace dmrt {

uint64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return uint64_t{1} << 40;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

std::string human_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  unsigned u = 0;
  while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

void require_memory(uint64_t bytes, const std::string& what, double share) {
  const uint64_t phys = physical_memory_bytes();
  const auto limit = static_cast<uint64_t>(static_cast<double>(phys) * share);
  if (bytes > limit)
    throw ConfigError(what + " need " + human_bytes(bytes) + ", more than " +
                      std::to_string(static_cast<int>(share * 100)) + "% of this machine's " +
                      human_bytes(phys) + " of memory");
}

std::string read_capped_file(const std::string& path, uint64_t cap, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > cap)
      throw ConfigError(what + " '" + path + "' is larger than " + human_bytes(cap) +
                        ", the most dmrt reads");
  }
  if (in.bad()) throw ConfigError("cannot read " + what + " '" + path + "'");
  return out;
}

}  // namespace dmrt

// What this machine can hold: physical memory, and the checks that refuse a request beyond it.
#pragma once

#include <cstdint>
#include <string>

namespace dmrt {

// Bytes of physical memory (sysconf); a large stand-in when the system will not say.
uint64_t physical_memory_bytes();

// "23.5 GiB": a byte count for error messages.
std::string human_bytes(uint64_t bytes);

// Throws ConfigError when `bytes` (what `what` needs, e.g. "fiber stacks of 8 x 4096 clients")
// exceeds `share` of physical memory; the message names both numbers.
void require_memory(uint64_t bytes, const std::string& what, double share = 0.5);

// Reads a whole text file of at most `cap` bytes; throws ConfigError naming the file and the cap
// when it is larger (or endless: /dev/zero), and when it cannot be opened.
std::string read_capped_file(const std::string& path, uint64_t cap, const std::string& what);

}  // namespace dmrt

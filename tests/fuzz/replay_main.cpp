// Drives LLVMFuzzerTestOneInput without libFuzzer: seeded random inputs (argv: [count] [files...]),
// so the fuzz target runs as a regression test under any compiler.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  long count = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 3000;
  for (int i = 2; i < argc; ++i) {  // corpus files, e.g. crashes found by the libFuzzer build
    std::ifstream f(argv[i], std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::mt19937_64 rng(20261123);
  std::vector<uint8_t> buf;
  for (long n = 0; n < count; ++n) {
    buf.resize(1 + 4 * (1 + rng() % 64));
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
  }
  // The target traps on a disagreement, so reaching here means every input passed.
  std::printf("%s: %ld random inputs passed\n", argv[0], count);
  return 0;
}

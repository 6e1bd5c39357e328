// Drives LLVMFuzzerTestOneInput without libFuzzer: seeded random inputs (argv: [count] [files...]),
// so the fuzz target runs as a regression test under any compiler.
//
// With GTEST_OUTPUT=json:PATH (tests/fuzz/meson.build sets it for the hostile suite) it leaves
// its cases there in GoogleTest's JSON shape, for the suite's count: one case per class of input
// the target names (DmrtFuzzInputClass, where it defines one), with how many inputs of the class
// ran; a target that names none has one case, "every input". Only inputs that ran are counted: a
// failing input aborts with no report written and an earlier one removed (the suite then counts
// a failed case).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional (weak): the class of an input, a constant string.
extern "C" __attribute__((weak)) const char* DmrtFuzzInputClass(const uint8_t* data, size_t size);

namespace {

// Inputs run, by class.
std::map<std::string, long> g_ran;

void run(const uint8_t* data, size_t size) {
  LLVMFuzzerTestOneInput(data, size);
  const char* what = DmrtFuzzInputClass ? DmrtFuzzInputClass(data, size) : nullptr;
  ++g_ran[what ? what : "every input"];
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + '"';
}

// Where the report for the hostile suite's count (tests/hostile/count_cases.py) goes; empty when
// not asked for.
std::filesystem::path report_path() {
  const char* spec = std::getenv("GTEST_OUTPUT");
  if (!spec || std::string_view(spec).substr(0, 5) != "json:") return {};
  return spec + 5;
}

bool write_report(const char* program) {
  const std::filesystem::path path = report_path();
  if (path.empty()) return true;
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream f(path, std::ios::trunc);
  f << "{\"testsuites\": [{\"name\": "
    << json_string(std::filesystem::path(program).filename().string()) << ", \"testsuite\": [";
  const char* sep = "";
  for (const auto& [what, n] : g_ran) {
    f << sep << "{\"name\": " << json_string(what + " (" + std::to_string(n) + " inputs)") << "}";
    sep = ", ";
  }
  f << "]}]}\n";
  f.close();
  if (!f) std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) {
  // A report left by an earlier run must not stand for this one if it crashes.
  if (std::error_code ec; !report_path().empty()) std::filesystem::remove(report_path(), ec);
  long count = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 3000;
  for (int i = 2; i < argc; ++i) {  // corpus files, e.g. crashes found by the libFuzzer build
    std::ifstream f(argv[i], std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), {});
    run(bytes.data(), bytes.size());
  }
  std::mt19937_64 rng(20261123);
  std::vector<uint8_t> buf;
  for (long n = 0; n < count; ++n) {
    buf.resize(1 + 4 * (1 + rng() % 64));
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    run(buf.data(), buf.size());
  }
  // The target traps on a disagreement, so reaching here means every input passed.
  std::printf("%s: %ld random inputs passed\n", argv[0], count);
  if (DmrtFuzzInputClass)
    for (const auto& [what, n] : g_ran) std::printf("  %s: %ld\n", what.c_str(), n);
  return write_report(argv[0]) ? 0 : 1;
}

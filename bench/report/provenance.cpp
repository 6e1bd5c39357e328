#include "bench/report/provenance.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

#include "bench/cli/option_json.h"
#include "bench/transports/registry.h"
#include "dmrt/runtime/machine.h"
#include "tools/common/build_info.h"

namespace dmrt::bench {
namespace {

// The first "model name" of /proc/cpuinfo (x86; other architectures name it differently, and
// then the field is empty rather than guessed).
std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    for (const char* key : {"model name", "Model", "cpu model"}) {
      if (line.rfind(key, 0) != 0) continue;
      size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      size_t b = line.find_first_not_of(" \t", colon + 1);
      return b == std::string::npos ? "" : line.substr(b);
    }
  }
  return "";
}

// NUMA nodes as the kernel lists them (no libnuma needed); 1 when sysfs has no node directory.
unsigned numa_nodes() {
  std::error_code ec;
  unsigned n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.rfind("node", 0) == 0 &&
        name.find_first_not_of("0123456789", 4) == std::string::npos)
      ++n;
  }
  return n ? n : 1;
}

bool shell_safe(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) ||
          std::string_view("-_./=:,+@%").find(c) != std::string_view::npos))
      return false;
  return true;
}

}  // namespace

nlohmann::json build_json() {
  return {{"version", build_info::kVersion},
          {"git_commit", build_info::kGitCommit},
          {"build_type", build_info::kBuildType},
          {"optimization", build_info::kOptimization},
          {"assertions", build_info::kAssertions},
          {"sanitize", build_info::kSanitize},
          {"compiler", build_info::kCompiler},
          {"transports", build_info::kTransports},
          {"numa", build_info::kNuma},
          {"fault_injection", build_info::kFaultInjection}};
}

nlohmann::json host_json() {
  nlohmann::json j;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) == 0) j["hostname"] = name;
  j["cpu_model"] = cpu_model();
  j["cores"] = std::thread::hardware_concurrency();
  j["numa_nodes"] = numa_nodes();
  struct utsname u {};
  if (uname(&u) == 0)
    j["kernel"] = {{"sysname", u.sysname},
                   {"release", u.release},
                   {"version", u.version},
                   {"machine", u.machine}};
  return j;
}

nlohmann::json transport_json(const Options& opt, const ClusterConfig& config) {
  nlohmann::json j;
  j["name"] = opt.transport;
  if (const TransportEntry* t = find_transport(opt.transport); t && t->provenance)
    t->provenance(j, opt, config);
  j["cluster_file"] = opt.cluster;
  return j;
}

std::string utc_iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += ' ';
    if (shell_safe(a)) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

nlohmann::json provenance_json(const std::vector<std::string>& argv,
                               std::chrono::system_clock::time_point start, const Options& opt,
                               const ClusterConfig& config, const std::string& config_file) {
  nlohmann::json j;
  j["dmrt_version"] = build_info::kVersion;
  j["git_commit"] = build_info::kGitCommit;
  j["build"] = build_json();
  j["host"] = host_json();
  j["transport"] = transport_json(opt, config);
  // Every option as the run resolved it (bench/cli/options.h), given or not.
  j["options"] = option_fields_json(opt);
  j["start_utc"] = utc_iso8601(start);
  j["argv"] = argv;
  j["command"] = shell_command(argv);
  if (!config_file.empty()) {
    // Read again for the record: capped as the parse was (tools/common/cli_config.h), in case
    // the file changed meanwhile.
    constexpr uint64_t kConfigCap = uint64_t{4} << 20;
    j["config_file"] = {{"path", config_file},
                        {"text", read_capped_file(config_file, kConfigCap, "--config")}};
  }
  return j;
}

}  // namespace dmrt::bench

#include "bench/cli/run_limits.h"
#include "bench/transports/registry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <utility>

#include "dmrt/runtime/error.h"
#include "dmrt/runtime/machine.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::bench {

namespace {

// What one recorded operation costs in memory at most: the record (client, kind, key, times,
// flags, three containers), the value written or read, and for a scan its rows.
uint64_t history_bytes_per_op(const Options& opt, const Mix& mix) {
  const uint64_t value = opt.value_size + 32;  // a std::string's heap block
  uint64_t per_op = 160 + 2 * value;
  if (mix.scan > 0) per_op += uint64_t{mix.max_scan} * (value + 16);
  return per_op;
}

std::string write_error(const std::string& flag, const std::string& path) {
  auto error = [&](int err) {
    return flag + " " + path + ": cannot write there (" + std::strerror(err) + ")";
  };
  if (::access(path.c_str(), F_OK) == 0) {
    // An existing file is opened as the run will, but neither truncated nor, if it is a FIFO
    // with no reader, waited on.
    int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return error(errno);
    ::close(fd);
    return "";
  }
  // A new one must be creatable in its directory.
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  struct stat st {};
  if (::stat(d.c_str(), &st) != 0) return error(errno);
  if (!S_ISDIR(st.st_mode)) return error(ENOTDIR);
  if (::access(d.c_str(), W_OK | X_OK) != 0) return error(errno);
  return "";
}

std::string with_node(const std::string& tmpl, const std::string& node) {
  std::string out = tmpl;
  for (size_t at = out.find("{node}"); at != std::string::npos;
       at = out.find("{node}", at + node.size()))
    out.replace(at, 6, node);
  return out;
}

// The node for which output paths `a` and `b` (either may hold {node}) name one file: "" when
// they always do, nullopt when never.
std::optional<std::string> same_file_for(const std::string& a, const std::string& b) {
  auto norm = [](const std::string& p) {
    return std::filesystem::absolute(p).lexically_normal().string();
  };
  const bool ta = a.find("{node}") != std::string::npos;
  const bool tb = b.find("{node}") != std::string::npos;
  if (!ta && !tb) return norm(a) == norm(b) ? std::optional<std::string>("") : std::nullopt;
  if (ta && tb) {
    for (const char* n : {"0", "1", "12"})
      if (norm(with_node(a, n)) == norm(with_node(b, n))) return std::string("");
    return std::nullopt;
  }
  // A template against a plain path: try each run of digits where the first {node} stands.
  const std::string tmpl = norm(ta ? a : b), path = norm(ta ? b : a);
  const size_t at = tmpl.find("{node}");
  if (path.compare(0, at, tmpl, 0, at) != 0) return std::nullopt;
  for (size_t len = 1;
       at + len <= path.size() && std::isdigit(static_cast<unsigned char>(path[at + len - 1]));
       ++len)
    if (with_node(tmpl, path.substr(at, len)) == path) return path.substr(at, len);
  return std::nullopt;
}

}  // namespace

void check_limits(Options& opt, const Mix& mix, bool max_ops_given) {
  // Fiber stacks: every client fiber gets one, all allocated when the phase starts.
  uint64_t clients = uint64_t{opt.threads} * opt.fibers;
  uint64_t stack = Scheduler::fiber_stack_bytes();
  if (const TransportEntry* t = find_transport(opt.transport); t && t->fiber_stack_bytes)
    stack = t->fiber_stack_bytes(opt);
  require_memory(clients * stack, "the fiber stacks of " + std::to_string(clients) + " clients (" +
                                      human_bytes(stack) + " each)");

  // The compute-side cache budget: per compute node, each of which lives in this process.
  const double cache_bytes = opt.cache_mb * 1024.0 * 1024.0;
  if (cache_bytes > static_cast<double>(physical_memory_bytes()))
    throw ConfigError("--cache-mb " + std::to_string(static_cast<uint64_t>(opt.cache_mb)) +
                      " is more than this machine's " + human_bytes(physical_memory_bytes()) +
                      " of memory");

  // A --verify history lives in memory until the check: the load phase, then the run phase.
  if (opt.verify) {
    const uint64_t per_op = history_bytes_per_op(opt, mix);
    const uint64_t budget = physical_memory_bytes() / 4;
    const uint64_t run_ops = mix.load_only ? 0 : opt.seconds > 0 ? 0 : opt.ops;
    const double total = (static_cast<double>(opt.keys) + static_cast<double>(run_ops)) *
                         static_cast<double>(per_op);
    if (total > static_cast<double>(budget))
      throw ConfigError("--verify would record " + std::to_string(opt.keys + run_ops) +
                        " operations (" + human_bytes(static_cast<uint64_t>(total)) +
                        "), more than the quarter of this machine's memory a history may use (" +
                        human_bytes(budget) + "); use fewer --keys or --ops");
    const uint64_t fits = (budget - opt.keys * per_op) / per_op;
    if (opt.seconds > 0 && (!max_ops_given || opt.verify_max_ops > fits)) opt.verify_max_ops = fits;
  }
}

std::string check_writable(const Options& opt) {
  if (!opt.json.empty() && opt.json != "-") {
    if (std::string e = write_error("--json", opt.json); !e.empty()) return e;
  }
  if (!opt.history.empty()) {
    if (std::string e = write_error("--history", opt.history); !e.empty()) return e;
  }
  return "";
}

std::string check_distinct_outputs(const Options& opt) {
  const std::pair<const char*, const std::string*> outputs[] = {
      {"--json", &opt.json}, {"--history", &opt.history}, {"--merged-json", &opt.merged_json}};
  for (size_t i = 0; i < std::size(outputs); ++i)
    for (size_t j = i + 1; j < std::size(outputs); ++j) {
      const std::string &a = *outputs[i].second, &b = *outputs[j].second;
      if (a.empty() || b.empty() || a == "-" || b == "-") continue;
      if (auto node = same_file_for(a, b))
        return std::string(outputs[i].first) + " " + a + " and " + outputs[j].first + " " + b +
               " name the same file" + (node->empty() ? "" : " for node " + *node) +
               ": one would overwrite the other";
    }
  return "";
}

}  // namespace dmrt::bench

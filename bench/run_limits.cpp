#include "bench/run_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "runtime/error.h"
#include "runtime/machine.h"
#include "runtime/scheduler.h"

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

std::string open_error(const std::string& flag, const std::string& path, int flags) {
  int fd = ::open(path.c_str(), flags | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return flag + " " + path + ": cannot write there (" + std::strerror(errno) + ")";
  ::close(fd);
  return "";
}

}  // namespace

void check_limits(Options& opt, const Mix& mix, bool max_ops_given) {
  // Fiber stacks: every client fiber gets one, all allocated when the phase starts.
  uint64_t clients = uint64_t{opt.threads} * opt.fibers;
  uint64_t stack = Scheduler::fiber_stack_bytes();
#if DMRT_TRANSPORT_SIM
  if (opt.transport == "sim") {
    clients = uint64_t{opt.sim.compute_nodes} * opt.sim.clients_per_node;
    stack = opt.sim.fiber_stack_bytes;
  }
#endif
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
    if (std::string e = open_error("--json", opt.json, O_CREAT | O_APPEND); !e.empty()) return e;
  }
  if (!opt.history.empty()) {
    if (std::string e = open_error("--history", opt.history, O_CREAT | O_TRUNC); !e.empty())
      return e;
  }
  return "";
}

}  // namespace dmrt::bench

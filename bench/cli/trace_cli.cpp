// dmrt-bench's trace flags (trace_cli.h).
#include "bench/cli/trace_cli.h"

#include <cstdio>

#include "bench/workload/trace_workload.h"

namespace dmrt::bench {

std::string check_trace_flags(const CLI::App& app, Options& opt, Mix& mix) {
  if (opt.trace_load.empty()) return "";
  for (const char* f : {"--workload", "--keys", "--ops", "--seconds", "--distribution",
                        "--zipf-theta", "--keyset", "--key-order", "--key-format"})
    if (app.get_option(f)->count() > 0)
      return std::string(f) +
             " has no meaning with --trace-load: the trace files give the keys "
             "and the operations";
  if (opt.verify && opt.byte_keys())
    return "--verify with a trace needs integer keys (--key-size 8): a history records integer "
           "keys, and a byte-string key from a file has none";
  mix = *mix_of(opt.trace_run.empty() ? "load" : "c");  // its name and shares are not used
  opt.workload = opt.distribution = "trace";
  return "";
}

int write_trace(const Options& opt, const Mix& mix) {
  try {
    const trace::Written w = trace::write_workload(opt, mix, opt.write_trace);
    std::printf("trace: %llu load operations to %s\n", static_cast<unsigned long long>(w.load_ops),
                w.load_path.c_str());
    if (!w.run_path.empty()) {
      std::printf("trace: %llu run operations to %s (", static_cast<unsigned long long>(w.run_ops),
                  w.run_path.c_str());
      const char* sep = "";
      for (size_t k = 0; k < kOpKinds; ++k)
        if (w.kinds[k] > 0) {
          std::printf("%s%s %llu", sep, std::string(op_name(static_cast<OpKind>(k))).c_str(),
                      static_cast<unsigned long long>(w.kinds[k]));
          sep = ", ";
        }
      std::printf(")\n");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dmrt-bench: --write-trace: %s\n", e.what());
    return 2;
  }
}

}  // namespace dmrt::bench

// The templated body of dmrt-bench's per-transport entry points (run_shm.cpp, run_sim.cpp).
#pragma once

#include "bench/run_on.h"
#include "bench/runner.h"

namespace dmrt::bench {

template <Transport T>
int run_on(const Options& opt, const ClusterConfig& config, const Mix& mix,
           const IndexFlags& flags) {
  int rc = -1;
  bool found = with_index<T>(
      opt.index, flags,
      [&]<class A>(const FlagsOf<A>& f) {
        // A local peer runs no verbs, so a virtual-time transport has nothing to charge: its
        // clock never moves, every phase lasts 0 s, and --verify would see every operation as
        // concurrent with every other.
        if (A::kLocal && T::kName == "sim") {
          rc = usage_error(
              "index " + opt.index +
              " is a local peer (no verbs): the simulator has nothing to time; run it on "
              "--transport shm");
          return;
        }
        if (mix.scan > 0 && !kSupportsScan<A>) {
          rc = usage_error("index " + opt.index + " does not support scans (workload " +
                           opt.workload + "); use a range index");
          return;
        }
        Bench<T, A> bench(opt, config, mix, f);
        rc = bench.run();
      },
      IndexList<T>{});
  if (!found) return usage_error("unknown index " + opt.index);
  return rc;
}

}  // namespace dmrt::bench

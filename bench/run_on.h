// dmrt-bench's transport switch: one entry point per compiled-in transport, one file each.
#pragma once

#include "bench/indexes.h"
#include "bench/options.h"
#include "bench/workload.h"
#include "runtime/cluster.h"

namespace dmrt::bench {

// Exit codes: 0 success, 1 a run-time failure (index error, pool exhausted...), 2 bad usage or a
// request this build / index cannot serve.
inline constexpr int kUsage = 2;

int usage_error(const std::string& msg);

// Runs `opt` on shm / sim / verbs. Each instantiates the whole driver for every index of IndexList;
// they live in run_shm.cpp and run_sim.cpp so that the two compile in parallel.
int run_shm(const Options& opt, const ClusterConfig& config, const Mix& mix,
            const IndexFlags& flags);
#if DMRT_TRANSPORT_SIM
int run_sim(const Options& opt, const ClusterConfig& config, const Mix& mix,
            const IndexFlags& flags);
#endif
#if DMRT_TRANSPORT_VERBS
int run_verbs(const Options& opt, const ClusterConfig& config, const Mix& mix,
              const IndexFlags& flags);
#endif

// The body of run_shm/run_sim/run_verbs (included by those files only).
template <Transport T>
int run_on(const Options& opt, const ClusterConfig& config, const Mix& mix,
           const IndexFlags& flags);

}  // namespace dmrt::bench

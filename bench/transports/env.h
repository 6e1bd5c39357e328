// The driver's environment on a transport, Env<T>: how to build the cluster, hand out endpoints,
// thread hooks for the Scheduler, and the pool figures. Each transport specializes it in its own
// header (bench/transports/NAME_env.h), which its driver unit includes (bench/meson.build
// generates one per transport of the build, bench/transports/run.cpp.in).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include <vector>

#include <sys/resource.h>

#include "bench/cli/options.h"
#include "bench/driver/group.h"
#include "bench/report/report.h"
#include "dmrt/policies/shm/processes.h"
#include "dmrt/runtime/clock_offset.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/error.h"
#include "dmrt/runtime/scheduler.h"

namespace dmrt::bench {

// Every Env<T> offers: a constructor from (Options, ClusterConfig); endpoint(home, id); hooks()
// for the Scheduler; clock_offset(client); between_ops(client); config(); pool_bytes_used();
// begin_phase() and end_phase(PhaseResult&) around each measured phase.
template <class T>
struct Env;  // specialized per transport

// CPU seconds of the whole process so far (user + system). On a shared machine, work per CPU
// second compares runs better than work per wall-clock second does.
inline double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// Why a process run with `opt` may not replace a dead one mid-run (GroupSpec::no_replacement): a
// replacement joins the one run phase under way, with its rank's whole share.
inline std::string replacement_refusal(const Options& opt) {
  if (!opt.then.empty()) return "cannot join a run of several phases (--then)";
  if (opt.warmup_ops > 0) return "cannot join a run with --warmup-ops";
  return "";
}

// One compute process of a multi-process experiment (shm --attach, or verbs with a cluster file):
// its node and the group it runs in (bench/driver/group.h). The first compute node creates and
// loads the index; every process takes its client ids from the group, and all of them start each
// phase together.
struct AttachedRun {
  std::unique_ptr<shm::NodeClaim> claim;  // shm: this process's claim on its node
  std::unique_ptr<RunGroup> group;
  NodeId node() const { return group->spec().node(); }
  unsigned rank() const { return group->spec().rank; }
  unsigned incarnation() const { return group->incarnation(); }  // > 0: a replacement
  unsigned members() const { return group->spec().members(); }
  bool creator() const { return group->creator(); }
  void say(const std::string& what) const { group->say(what); }
};

// The AttachedRun of an environment, or null (sim, shm without --attach, verbs in one process).
template <class E>
AttachedRun* attached_run(E& env) {
  if constexpr (requires { env.attached.get(); })
    return env.attached.get();
  else
    return nullptr;
}

}  // namespace dmrt::bench

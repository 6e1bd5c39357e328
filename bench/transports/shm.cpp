// dmrt-bench on the shm transport: its flags (--help-transport shm), and its settings in the
// provenance. The driver's side is Env<ShmTransport> (bench/transports/shm_env.h).
#include <string>

#include "bench/cli/command_line.h"
#include "bench/cli/options.h"
#include "bench/transports/registry.h"
#include "dmrt/policies/shm/cli.h"
#include "dmrt/runtime/cluster.h"
#include "dmrt/runtime/far_memory.h"

namespace dmrt::bench {
namespace {

constexpr std::string_view kTitle = "shm (--transport shm)";

void add_flags(CLI::App& app, CommandLine& c) {
  Options& opt = c.opt;
  const std::string g(kTitle);
  app.add_flag("--shm-interleave", opt.shm_interleave,
               "shm: every client fiber yields after each round trip, as while a NIC serves it, so "
               "the fibers of a thread interleave inside operations (for --verify)")
      ->group(g);
  auto* attach =
      app.add_option("--attach", opt.attach,
                     "shm: run as compute node --node of the pool that a memory node process "
                     "created (dmrt-node --transport shm --create --pool NAME or PATH); one "
                     "process per compute node of the pool, the first creates and loads the "
                     "index, all start the run phase together")
          ->group(g);
  shm::add_cli_flags(app, opt.shm_pool, g);
  app.get_option("--shm-pool")->excludes(attach);
  c.shm_only.push_back(app.get_option("--shm-pool"));
  c.shm_only.push_back(
      app.add_option("--shm-mode", opt.shm_mode,
                     "shm: how a round trip executes: inline (perform the verbs at once, stalling "
                     "on each cache miss), prefetch (prefetch the lines it touches, yield to the "
                     "next fiber, then perform them: misses of several fibers overlap), or auto "
                     "(prefetch with a far-memory model, inline without; as measured in "
                     "docs/bench.md)")
          ->check(CLI::IsMember({"auto", "inline", "prefetch"}))
          ->capture_default_str()
          ->group(g));
  c.shm_only.push_back(
      app.add_option("--shm-coherence", opt.shm_coherence,
                     "shm: none, or flush: around every verb to another node, the cache-line "
                     "flushes and fences a port to non-coherent shared CXL memory must issue "
                     "(invalidate before reads, write back and fence after writes; "
                     "docs/cxl-porting.md)")
          ->check(CLI::IsMember({"none", "flush"}))
          ->capture_default_str()
          ->group(g));
  c.shm_only.push_back(
      app.add_option("--shm-preset", opt.shm_preset,
                     "shm: far-memory figures for every memory node: cxl (300 ns, 256 Gbit/s, "
                     "the figures of sim's cxl preset) or none; --shm-latency-ns and --shm-gbps "
                     "override it")
          ->check(CLI::IsMember(FarMemoryCost::preset_names()))
          ->group(g));
  c.shm_only.push_back(
      app.add_option("--shm-latency-ns", opt.shm_latency_ns,
                     "shm: a round trip to a memory node completes no earlier than this many ns "
                     "after it was posted (plus its link time with --shm-gbps); the fiber yields "
                     "meanwhile. Over the cluster file's shm_latency_ns")
          ->check(CLI::Range(int64_t{0}, static_cast<int64_t>(FarMemoryCost::kMaxLatencyNs)))
          ->group(g));
  c.shm_only.push_back(
      app.add_option("--shm-gbps", opt.shm_gbps,
                     "shm: link bandwidth of each memory node in Gbit/s, shared by all clients "
                     "(round trips queue for it; 0 = unlimited). Over the cluster file's shm_gbps")
          ->check(CLI::Range(0.0, FarMemoryCost::kMaxGbps))
          ->group(g));
}

void provenance(nlohmann::json& j, const Options& opt, const ClusterConfig& config) {
  j["interleave"] = opt.shm_interleave;
  j["mode"] = opt.shm_mode;
  j["coherence"] = opt.shm_coherence;
  nlohmann::json far = nlohmann::json::array();
  for (NodeId n : config.memory_nodes())
    far.push_back({{"node", n},
                   {"latency_ns", config.nodes[n].far.latency_ns},
                   {"gbps", config.nodes[n].far.gbps}});
  j["far_memory"] = far;
}

const RegisterTransport kShm{
    {.name = "shm", .title = kTitle, .add_flags = add_flags, .provenance = provenance}};

}  // namespace
}  // namespace dmrt::bench

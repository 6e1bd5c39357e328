// dmrt-bench's driver on the shm transport: the pool it creates or attaches (--attach), its
// execution mode, far-memory model and coherence, and what each phase reports of them.
#pragma once

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <boost/fiber/operations.hpp>

#include "bench/transports/env.h"
#include "dmrt/policies/shm/pool.h"
#include "dmrt/policies/shm/provenance_json.h"
#include "dmrt/policies/shm/transport.h"
#include "dmrt/runtime/clock_messages.h"
#include "dmrt/runtime/placement.h"

namespace dmrt::bench {

// The group's words on a pool this process maps: the CPU's atomics.
class ShmGroupWords final : public GroupWords {
 public:
  ShmGroupWords(std::shared_ptr<shm::Pool> pool, NodeId home)
      : pool_(std::move(pool)), g_(pool_->region(home).base + layout::kGroupOffset) {}
  uint64_t load(unsigned i) override { return local::load_word(w(i)); }
  void store(unsigned i, uint64_t v) override { local::store_word(w(i), v); }
  uint64_t cas(unsigned i, uint64_t e, uint64_t d) override { return local::cas(w(i), e, d); }
  uint64_t faa(unsigned i, uint64_t a) override { return local::faa(w(i), a); }
  void load_range(unsigned first, unsigned n, uint64_t* out) override {
    for (unsigned i = 0; i < n; ++i) out[i] = local::load_word(w(first + i));
  }
  uint64_t node_heartbeat(NodeId m) override {
    return local::load_word(pool_->region(m).base + layout::kHeartbeatOffset);
  }
  // The process in node n's claim word (shm::NodeClaim), killed with SIGKILL if it still runs
  // and still maps this pool (a pid reused since by another program is left alone), and waited
  // for until it is gone or a zombie (1 s at most). A pool on a device or file may be shared
  // with other hosts, whose processes no signal from here reaches: no fence there.
  bool fence(NodeId n) override {
    if (pool_->polling_waits()) return false;
    const uint64_t claim = local::load_word(pool_->region(n).base + layout::kClaimOffset);
    const auto pid = static_cast<pid_t>(claim & 0xffffffff);
    if (claim >> 32 != 0) return false;                 // a claim made on a host-spanning pool
    if (pid == 0 || !maps_this_pool(pid)) return true;  // no process runs the node any more
    ::kill(pid, SIGKILL);
    for (int i = 0; i < 1000; ++i) {
      if (!maps_this_pool(pid)) return true;  // exited (a zombie maps nothing)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }

 private:
  bool maps_this_pool(pid_t pid) const {
    std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
    const std::string object = "/dev/shm" + shm::shm_object_name(pool_->name(), 0);
    for (std::string line; std::getline(maps, line);) {
      const size_t at = line.find(object);
      if (at == std::string::npos) continue;
      const std::string_view rest = std::string_view(line).substr(at + object.size());
      if (rest.empty() || rest == " (deleted)") return true;
    }
    return false;
  }

  std::byte* w(unsigned i) const { return g_ + 8ull * i; }
  std::shared_ptr<shm::Pool> pool_;
  std::byte* g_;
};

template <>
struct Env<ShmTransport> {
  Env(const Options& opt, const ClusterConfig& config)
      : pool(opt.attach.empty() ? shm::Pool::create(config, opt.shm_pool)
                                : attach_waiting(opt, config)) {
    if (!opt.attach.empty()) attach(opt);
    stop_nodes = opt.stop_nodes;
    pool->set_yield_per_round_trip(opt.shm.interleave);
    // auto: prefetching paid off only where a round trip waits anyway (docs/bench.md, "shm as
    // far memory"): with the far-memory model the misses then overlap the modelled wait.
    pool->set_execution(opt.shm.mode == "auto" ? (pool->far_memory() ? shm::Execution::kPrefetch
                                                                     : shm::Execution::kInline)
                                               : shm::parse_execution(opt.shm.mode));
    pool->set_coherence(shm::parse_coherence(opt.shm.coherence));
    // A pool on a device or file: which one, its NUMA node and kernel path, sampled once.
    if (pool->polling_waits()) pool_source = pool->provenance();
  }

  // A launcher starts the memory node's process and the compute processes at once: a pool that
  // is not there yet (or still being formatted) is waited for, up to --attach-wait-seconds.
  // A pool on a device or file (a path) is attached by its layout; a --cluster file then names
  // the geometry it must have.
  static std::shared_ptr<shm::Pool> attach_waiting(const Options& opt,
                                                   const ClusterConfig& config) {
    const auto start = std::chrono::steady_clock::now();
    for (int tries = 0;; ++tries) {
      try {
        if (shm::PoolSource::is_path(opt.attach))
          return shm::Pool::attach(shm::PoolSource{opt.attach, -1},
                                   opt.cluster.empty() ? nullptr : &config);
        return shm::Pool::attach(opt.attach);
      } catch (const ConfigError& e) {
        const std::string what = e.what();
        const bool not_yet = what.find("no pool named") != std::string::npos ||
                             what.find("still being created") != std::string::npos ||
                             what.find("is not initialised") != std::string::npos;
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!not_yet || waited > opt.attach_wait_seconds) throw;
        if (tries % 100 == 99)
          std::fprintf(stderr, "dmrt-bench node %d: waiting for pool '%s' to be created\n",
                       opt.node, opt.attach.c_str());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // --attach: checks that --node is a compute node of the pool and takes it; the far-memory
  // flags are modelled by this process (an attached pool models none of its own).
  void attach(const Options& opt) {
    auto a = std::make_unique<AttachedRun>();
    const std::vector<NodeId> compute = pool->config().compute_nodes();
    auto it = std::find(compute.begin(), compute.end(), static_cast<NodeId>(opt.node));
    if (it == compute.end()) {
      std::string list;
      for (NodeId n : compute) list += (list.empty() ? "" : ", ") + std::to_string(n);
      throw ConfigError("--node " + std::to_string(opt.node) + " is not a compute node of pool '" +
                        opt.attach + "' (" + std::to_string(pool->node_count()) +
                        " nodes; compute nodes: " + (list.empty() ? "none" : list) + ")");
    }
    a->claim = std::make_unique<shm::NodeClaim>(*pool, static_cast<NodeId>(opt.node));
    GroupSpec g;
    g.compute = compute;
    g.rank = static_cast<unsigned>(it - compute.begin());
    g.memory = pool->config().memory_nodes();
    g.wait_seconds = opt.attach_wait_seconds;
    g.peer_timeout = opt.peer_timeout_seconds;
    g.no_replacement = replacement_refusal(opt);
    g.label = "pool '" + opt.attach + "'";
    a->group = std::make_unique<RunGroup>(
        std::make_unique<ShmGroupWords>(pool, pool->config().memory_nodes().front()), std::move(g),
        [node = opt.node](const std::string& s) {
          std::fprintf(stderr, "dmrt-bench node %d: %s\n", node, s.c_str());
        });
    ClusterConfig costs = pool->config();
    opt.shm.apply_far_flags(costs);
    pool->model_far_memory(costs);
    attached = std::move(a);
  }

  // --stop-nodes: the creator asks each memory node's process to stop, once every compute
  // process is done with the pool.
  ~Env() {
    if (!stop_nodes || !attached || !attached->creator()) return;
    attached->group->await_all_done();
    attached.reset();
    for (NodeId m : pool->config().memory_nodes())
      local::store_word(pool->region(m).base + layout::kStopRequestOffset, 1);
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

  shm::Endpoint endpoint(NodeId home, uint32_t client_id) {
    return shm::Endpoint(pool, home, client_id);
  }
  ThreadHooks hooks() { return {}; }
  // The histories' reference clock (docs/correctness.md, "Histories across hosts"). Processes of
  // a pool in /dev/shm or a memfd share this host's steady clock. A pool on a device or file may
  // be mapped by several hosts (qemu guests sharing an ivshmem BAR, hosts sharing a CXL device):
  // there the first memory node's process, which answers clock requests on its echo mailbox
  // (layout::kServicesClock), is the reference, measured through the pool as verbs measures it.
  // Without such a process the compute processes must all be on this host (their claims say so).
  ClockOffset clock_offset(Client<ShmTransport>& c) const {
    if (!attached || !pool->polling_waits()) return {};
    const NodeId ref = pool->config().memory_nodes().front();
    if (local::load_word(pool->region(ref).base + layout::kServicesOffset) & layout::kServicesClock)
      return measure_clock_offset(c, ref);
    for (NodeId n : pool->config().compute_nodes()) {
      const uint64_t claim = local::load_word(pool->region(n).base + layout::kClaimOffset);
      const auto tag = static_cast<uint32_t>(claim >> 32);
      if (tag != 0 && tag != shm::host_tag())
        throw ConfigError("compute node " + std::to_string(n) + " of pool '" + pool->name() +
                          "' runs on another host, and no process of memory node " +
                          std::to_string(ref) +
                          " answers clock requests: histories across hosts need a common clock "
                          "(serve the memory node with dmrt-node)");
    }
    return {};
  }
  // Called after every operation. Inline shm verbs complete at once and never suspend, so without
  // a yield one fiber would run its whole share before the next fiber of its thread starts;
  // yielding interleaves a thread's clients operation by operation, as concurrent clients would
  // be. An operation that yielded already (prefetch execution, the far-memory model, a pause)
  // has let the others run: one more yield would only cost time.
  template <class C>
  void between_ops(C& c) {
    if (!c.endpoint().take_yielded()) boost::this_fiber::yield();
  }
  const ClusterConfig& config() const { return pool->config(); }
  void begin_phase() {
    far_before = far_stats();
    invalidated_before = pool->coherence_stats().invalidated();
    written_back_before = pool->coherence_stats().written_back();
    cpu_before = process_cpu_seconds();
  }
  // The execution mode and, with the far-memory model, what each modelled link did this phase.
  void end_phase(PhaseResult& r) {
    // CPU seconds of the whole process in the phase: on a shared machine, operations per CPU
    // second compare runs better than wall-clock throughput does.
    const double cpu = process_cpu_seconds() - cpu_before;
    const double per_cpu = cpu > 0 ? static_cast<double>(r.all.count) / cpu / 1e6 : 0.0;
    r.transport_report["mode"] = std::string(shm::execution_name(pool->execution()));
    r.transport_report["cpu_seconds"] = cpu;
    r.transport_report["mops_per_cpu_second"] = per_cpu;
    // The regions' pages (shm::Pool::pages) and how much of them the kernel made huge.
    r.transport_report["pages"] = pool->pages();
    r.transport_report["huge_page_bytes"] = pool->huge_page_bytes();
    r.transport_summary = fmt::format("shm: {}, {:.3f} CPU s, {:.3f} Mops per CPU s",
                                      shm::execution_name(pool->execution()), cpu, per_cpu);
    if (pool->coherence() == shm::Coherence::kFlush) {
      // Lines per operation: deterministic for a given history of verbs.
      const double ops = r.all.count ? static_cast<double>(r.all.count) : 1.0;
      const double inval =
          static_cast<double>(pool->coherence_stats().invalidated() - invalidated_before) / ops;
      const double wb =
          static_cast<double>(pool->coherence_stats().written_back() - written_back_before) / ops;
      r.transport_report["coherence"] = {{"mode", "flush"},
                                         {"instructions", pool->flush_instructions().describe()},
                                         {"lines_invalidated_per_op", inval},
                                         {"lines_written_back_per_op", wb}};
      r.transport_summary += fmt::format(
          "; coherence flush: {:.2f} lines invalidated, {:.2f} "
          "written back per op",
          inval, wb);
    }
    if (!pool_source.is_null()) r.transport_report["pool_source"] = pool_source;
    if (attached) {
      // Where the memory nodes' pages are (move_pages), for a pool another process placed.
      nlohmann::json pages = nlohmann::json::object();
      for (NodeId m : pool->config().memory_nodes()) {
        const shm::Region& reg = pool->region(m);
        placement::PageNodes where = placement::page_nodes(reg.base, reg.bytes, kPageSample);
        if (!where.available) continue;
        nlohmann::json by_node = nlohmann::json::object();
        for (auto [numa, n] : where.pages) by_node[std::to_string(numa)] = n;
        pages[std::to_string(m)] = {
            {"sampled", where.sampled}, {"absent", where.absent}, {"by_numa_node", by_node}};
      }
      r.transport_report["pool"] = pool->name();
      r.transport_report["pool_pages"] = pages;
    }
    const shm::FarMemory* far = pool->far_memory();
    if (!far) return;
    nlohmann::json links = nlohmann::json::array();
    std::vector<shm::FarMemory::LinkStats> now = far_stats();
    for (NodeId n = 0; n < now.size(); ++n) {
      if (!far->models(n)) continue;
      const FarMemoryCost& c = far->cost(n);
      const shm::FarMemory::LinkStats& a = far_before[n];
      const shm::FarMemory::LinkStats& b = now[n];
      const uint64_t rts = b.round_trips - a.round_trips;
      const double util =
          r.seconds > 0 ? static_cast<double>(b.busy_ps - a.busy_ps) / (r.seconds * 1e12) : 0.0;
      const double queue_ns =
          rts ? static_cast<double>(b.queued_ps - a.queued_ps) / 1e3 / static_cast<double>(rts)
              : 0.0;
      links.push_back({{"node", n},
                       {"latency_ns", c.latency_ns},
                       {"gbps", c.gbps},
                       {"round_trips", rts},
                       {"link_bytes", b.bytes - a.bytes},
                       {"link_util", util},
                       {"mean_queue_ns", queue_ns}});
      r.transport_summary +=
          fmt::format("; node {}: {} ns, {} Gbit/s", n, c.latency_ns,
                      c.gbps > 0 ? fmt::format("{:g}", c.gbps) : std::string("unlimited"));
      if (c.gbps > 0)
        r.transport_summary +=
            fmt::format(" (link {:.1f}% busy, mean queue {:.1f} ns)", util * 100, queue_ns);
    }
    r.transport_report["far_memory"] = links;
  }
  // Bytes the allocator has handed out, summed over memory nodes.
  uint64_t pool_bytes_used() const {
    uint64_t n = 0;
    for (NodeId m : pool->config().memory_nodes()) n += pool->heap_used(m);
    return n;
  }

  std::vector<shm::FarMemory::LinkStats> far_stats() const {
    std::vector<shm::FarMemory::LinkStats> out;
    if (const shm::FarMemory* far = pool->far_memory())
      for (NodeId n = 0; n < pool->node_count(); ++n) out.push_back(far->stats(n));
    return out;
  }

  static constexpr uint64_t kPageSample = 65536;  // pages asked about per memory node (256 MiB)

  std::shared_ptr<shm::Pool> pool;
  std::unique_ptr<AttachedRun> attached;  // --attach
  bool stop_nodes = false;                // --stop-nodes
  nlohmann::json pool_source;             // a pool on a device or file: Pool::provenance()
  std::vector<shm::FarMemory::LinkStats> far_before;
  uint64_t invalidated_before = 0, written_back_before = 0;  // coherence flush counts
  double cpu_before = 0;
};

}  // namespace dmrt::bench

#include "dmrt/policies/sim/cluster.h"

#include <algorithm>
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/fixedsize_stack.hpp>
#include <cstdio>
#include <sstream>

#include "dmrt/runtime/error.h"

namespace dmrt::sim {

namespace {

ClusterConfig make_config(const Options& o) {
  o.validate();
  ClusterConfig c =
      ClusterConfig::embedded(o.memory_nodes, o.compute_nodes, o.memory_bytes, o.compute_bytes);
  c.mailbox.mailboxes = std::max<uint32_t>(c.mailbox.mailboxes, o.clients() + 2);
  return c;
}

Options with_topology(Options o, const ClusterConfig& c) {
  o.compute_nodes = static_cast<unsigned>(c.compute_nodes().size());
  o.memory_nodes = static_cast<unsigned>(c.memory_nodes().size());
  return o;
}

}  // namespace

Cluster::Cluster(Options opts) : Cluster(opts, make_config(opts)) {}

Cluster::Cluster(Options opts, const ClusterConfig& config) {
  config.validate();
  if (config.compute_nodes().empty())
    throw ConfigError("sim: the cluster needs at least one compute node for its clients");
  pool_ = shm::Pool::create(config);
  core_ = std::make_shared<Core>(with_topology(std::move(opts), config), pool_);
  counters_.by_node.resize(pool_->node_count());
}

ThreadHooks Cluster::hooks() const {
  std::shared_ptr<Core> core = core_;
  return ThreadHooks{
      [core](unsigned thread) {
        if (thread != 0)
          throw ConfigError("sim runs every client on one OS thread: use 1 scheduler thread");
        core->attach(core);
      },
      [core](unsigned) { core->detach(); }};
}

void Cluster::run_fibers(unsigned n, const FiberBody& body, const RunOptions& ro) {
  const Options& o = core_->options();
  std::vector<NodeId> compute = compute_nodes();
  std::exception_ptr first;
  unsigned first_index = 0, failed = 0;
  auto record = [&](unsigned index, std::exception_ptr e) {
    if (!first) {
      first = std::move(e);
      first_index = index;
    }
    ++failed;
  };

  if (core_->active_here())
    throw ConfigError("sim: Cluster::run called from inside a run of the same simulation");
  // On the caller's thread, not a fresh one: memory-node service fibers (service.h) outlive a run,
  // frozen in virtual time, and Boost fibers cannot move to another thread.
  [&] {
    try {
      core_->attach(core_);
    } catch (...) {
      record(0, std::current_exception());
      return;
    }
    {
      const uint64_t start = core_->now_ns();
      std::vector<boost::fibers::fiber> fibers;
      fibers.reserve(n);
      for (unsigned i = 0; i < n; ++i) {
        WorkerInfo w;
        w.index = i;
        w.total = n;
        unsigned node =
            std::min<unsigned>(i / o.clients_per_node, static_cast<unsigned>(compute.size()) - 1);
        w.home = compute[node];
        w.local = i - node * o.clients_per_node;
        w.client_id = i;
        w.start_ns = start;
        w.deadline_ns = ro.duration_ns ? start + ro.duration_ns : 0;
        w.core = core_.get();
        fibers.emplace_back(std::allocator_arg, boost::fibers::fixedsize_stack(o.fiber_stack_bytes),
                            [&body, &record, w] {
                              try {
                                body(w);
                              } catch (...) {
                                record(w.index, std::current_exception());
                              }
                            });
      }
      for (auto& f : fibers) f.join();
    }
    core_->detach();
  }();

  if (first)
    throw WorkerFailure("simulated client " + std::to_string(first_index) +
                            " failed: " + describe(first) +
                            (failed > 1 ? " (" + std::to_string(failed - 1) + " more failed)" : ""),
                        first, failed);
}

void Cluster::run(const Body& body, const RunOptions& ro) {
  unsigned n = ro.clients ? ro.clients : options().clients();
  counters_ = Counters{};
  counters_.by_node.resize(pool_->node_count());
  run_fibers(
      n,
      [&](const WorkerInfo& w) {
        SimClient c(endpoint(w.home, w.client_id), ro.client);
        struct Merge {  // sums the counters even when the body throws
          Counters& into;
          SimClient& c;
          ~Merge() { into += c.counters(); }
        } merge{counters_, c};
        body(c, w);
      },
      ro);
}

Report Cluster::report() const {
  const Options& o = core_->options();
  Report r;
  r.start_ns = core_->window_start_ps() / 1000;
  r.end_ns = core_->now_ns();
  r.elapsed_ns = r.end_ns - r.start_ns;
  r.verbs = core_->verbs_completed();
  r.messages = core_->messages_sent();
  r.events = core_->events_processed();
  const double window_ps = static_cast<double>(core_->now_ps() - core_->window_start_ps());
  const char* resource_names[3] = {"message rate", "tx bandwidth", "rx bandwidth"};
  const char* short_names[3] = {"iops", "tx", "rx"};
  uint64_t first_at = NicCounters::kNever;
  for (size_t n = 0; n < core_->nics().size(); ++n) {
    const NicCounters& s = core_->nics()[n];
    NicReport nr;
    nr.node = static_cast<NodeId>(n);
    nr.role = role_name(pool_->region(nr.node).role);
    nr.ops = s.ops;
    nr.tx_bytes = s.tx_bytes;
    nr.rx_bytes = s.rx_bytes;
    if (window_ps > 0) {
      double secs = window_ps * 1e-12;
      nr.mops = s.ops / secs / 1e6;
      nr.tx_gbps = s.tx_bytes * 8.0 / secs / 1e9;
      nr.rx_gbps = s.rx_bytes * 8.0 / secs / 1e9;
      nr.iops_util = static_cast<double>(s.ops) * core_->op_ps() / window_ps;
      nr.tx_util = static_cast<double>(core_->wire_ps(nr.node, s.tx_bytes)) / window_ps;
      nr.rx_util = static_cast<double>(core_->wire_ps(nr.node, s.rx_bytes)) / window_ps;
      nr.bw_util = std::max(nr.tx_util, nr.rx_util);
    }
    if (s.ops) nr.avg_wait_ns = (s.wait_ps[0] + s.wait_ps[1] + s.wait_ps[2]) / 1000.0 / s.ops;
    // A queue alone does not make a resource saturated: the clients' first posts arrive as one
    // burst and queue at every NIC. It must also have been busy for most of the window.
    const double utils[3] = {nr.iops_util, nr.tx_util, nr.rx_util};
    uint64_t at = NicCounters::kNever;
    int which = -1;
    for (int k = 0; k < 3; ++k)
      if (s.saturated_at_ps[k] < at && utils[k] >= kSaturatedUtil)
        at = s.saturated_at_ps[k], which = k;
    if (which >= 0) {
      nr.saturated = short_names[which];
      nr.saturated_at_ns = at / 1000;
      if (at < first_at) {
        first_at = at;
        r.saturated_first =
            "node " + std::to_string(n) + " (" + nr.role + ") NIC " + resource_names[which];
        r.saturated_first_at_ns = at / 1000;
      }
    }
    for (int k = 0; k < 3; ++k)
      if (utils[k] > r.bottleneck_util) {  // strict: ties go to the lowest node, op before bytes
        r.bottleneck_util = utils[k];
        r.bottleneck = "node " + std::to_string(n) + " (" + nr.role + ") NIC " + resource_names[k];
      }
    r.nics.push_back(std::move(nr));
  }
  for (size_t n = 0; n < core_->services().size(); ++n) {
    const ServiceCounters& s = core_->services()[n];
    if (!s.local_verbs && !s.messages && !s.cpu_ps && !s.wakeups) continue;
    ServiceReport sr;
    sr.node = static_cast<NodeId>(n);
    sr.role = role_name(pool_->region(sr.node).role);
    sr.local_verbs = s.local_verbs;
    sr.local_bytes = s.local_bytes;
    sr.messages = s.messages;
    sr.wakeups = s.wakeups;
    sr.cpu_ns = s.cpu_ps / 1000;
    if (window_ps > 0) sr.cpu_util = static_cast<double>(s.cpu_ps) / window_ps;
    r.services.push_back(std::move(sr));
  }
  if (r.bottleneck.empty()) r.bottleneck = "none";
  r.saturated = r.bottleneck_util >= kSaturatedUtil;
  r.coherence = o.coherence;
  r.coherence_counts = core_->coherence();
  return r;
}

std::string Report::describe() const {
  std::ostringstream s;
  char buf[256];
  std::snprintf(buf, sizeof buf, "sim window %.3f ms virtual, %llu verbs, %llu messages\n",
                elapsed_ns / 1e6, static_cast<unsigned long long>(verbs),
                static_cast<unsigned long long>(messages));
  s << buf;
  for (const NicReport& n : nics) {
    if (!n.ops && !n.tx_bytes && !n.rx_bytes) continue;
    std::snprintf(buf, sizeof buf,
                  "  node %u (%s): %.2f Mops (%.0f%%), tx %.2f Gb/s (%.0f%%), rx %.2f Gb/s "
                  "(%.0f%%), avg wait %.0f ns%s%s\n",
                  static_cast<unsigned>(n.node), n.role.c_str(), n.mops, n.iops_util * 100,
                  n.tx_gbps, n.tx_util * 100, n.rx_gbps, n.rx_util * 100, n.avg_wait_ns,
                  n.saturated.empty() ? "" : ", saturated: ", n.saturated.c_str());
    s << buf;
  }
  for (const ServiceReport& sv : services) {
    std::snprintf(buf, sizeof buf,
                  "  services on node %u (%s): cpu %.3f ms (%.0f%% of one core), %llu local verbs, "
                  "%llu messages\n",
                  static_cast<unsigned>(sv.node), sv.role.c_str(), sv.cpu_ns / 1e6,
                  sv.cpu_util * 100, static_cast<unsigned long long>(sv.local_verbs),
                  static_cast<unsigned long long>(sv.messages));
    s << buf;
  }
  if (coherence != Coherence::kCoherent) {
    const CoherenceCounters& c = coherence_counts;
    std::snprintf(buf, sizeof buf,
                  "  coherence %s: %llu lines invalidated, %llu written back (%.3f ms of CPU), "
                  "%llu stale lines read, %llu dirty evictions\n",
                  std::string(coherence_name(coherence)).c_str(),
                  static_cast<unsigned long long>(c.lines_invalidated),
                  static_cast<unsigned long long>(c.lines_written_back), c.flush_ps / 1e9,
                  static_cast<unsigned long long>(c.stale_lines),
                  static_cast<unsigned long long>(c.evicted_dirty));
    s << buf;
  }
  std::snprintf(buf, sizeof buf, "  bottleneck: %s at %.0f%%%s; first saturated: %s\n",
                bottleneck.c_str(), bottleneck_util * 100,
                saturated ? "" : " (not saturated: latency/CPU bound)", saturated_first.c_str());
  s << buf;
  return s.str();
}

}  // namespace dmrt::sim

#include "dmrt/policies/sim/options.h"

#include <sstream>

#include "dmrt/runtime/error.h"

namespace dmrt::sim {

namespace {

// rdma-cx6: a 100 Gb/s ConnectX-6 RoCE v2 cluster behind one switch, as in the CHIME and DMTree
// evaluations. Each figure and its source is in docs/sim.md ("Presets and where the numbers come
// from"); no figure is fitted to the papers' throughput ratios.
//  - nic_gbps 100: the line rate of the 100 Gb/s parts (12.5 GB/s per direction, L1 included).
//  - nic_mops 55: a memory node's ceiling for small one-sided READs as the papers measured it on
//    this hardware (6 CNs + 1 MN, CX-6 100 Gb/s): DMTree and SMART, one READ per search, reach
//    48.3-53.2 Mops and are "close to Expected Search"; Sherman's 9.81 and ROLEX's 10.17-11.33
//    Mops are "16.3-18.8%" of it, i.e. 52-70 M. Vendor briefs quote ~200 M msg/s, a best case
//    of the 200 Gb/s parts with many senders, which no DM paper reaches with one-sided READs.
//  - header_bytes 86: a RoCE v2 READ response on the wire (preamble+SFD and inter-frame gap 20,
//    Ethernet 14 + FCS 4, IPv4 20, UDP 8, BTH 12, AETH 4, ICRC 4); requests carry about as much
//    (a READ request: RETH 16 instead of AETH 4, 98 B). One packet per verb (MTU 4096).
//  - latency_ns 700 one way and cpu_ns 200: together ~1.6-1.7 us for an unloaded small READ,
//    within the ~1-2 us round trip that disaggregated-memory papers report for one-sided READs.
//  - masked CAS is native (mlx5 extended atomics on ConnectX-5 and later).
//  - pcie_rtt_ns 400: a NIC's DMA read of host memory over PCIe 3/4 takes a few hundred ns; verbs
//    on the NIC's on-chip memory skip it (the Sherman paper's on-chip lock table, docs/sim.md).
//    serialize_atomics is not part of the preset (off unless asked).
void rdma_cx6(Options& o) {
  o.preset_name = "rdma-cx6";
  o.nic_mops = 55.0;
  o.nic_gbps = 100.0;
  o.header_bytes = 86;
  o.latency_ns = 700;
  o.cpu_ns = 200;
  o.cpu_per_verb_ns = 0;
  o.poll_ns = 100;
  o.pcie_rtt_ns = 400;
  o.native_masked_cas = true;
}

// cxl: a CXL.mem memory expander; the "NIC" of a memory node is the device's link, the "NIC" of
// a compute node is the host's CXL root port. Approximate figures from Pond (Li et al., ASPLOS'23)
// and Sun et al., "Demystifying CXL Memory with Genuine CXL-Ready Systems and Devices" (MICRO'23):
//  - load latency about 170-250 ns above local DRAM (~100 ns), i.e. ~250-350 ns in all: here
//    2 x latency_ns (140) + cpu_ns (20) + service ~ 300 ns for a 64 B access.
//  - bandwidth per x8/x16 device about 20-60 GB/s depending on device and read/write mix:
//    here 256 Gb/s (32 GB/s) per direction.
//  - 64 B cache-line transfers; flit overhead ~16 B per line; request rate set above the
//    bandwidth limit (600 M/s) so small accesses are bandwidth bound, as on memory devices.
//  - no masked CAS on CPU memory: reported as a CAS loop, like shm.
void cxl(Options& o) {
  o.preset_name = "cxl";
  o.nic_mops = 600.0;
  o.nic_gbps = 256.0;
  o.header_bytes = 16;
  o.latency_ns = 140;
  o.cpu_ns = 20;
  o.cpu_per_verb_ns = 0;
  o.poll_ns = 50;
  o.pcie_rtt_ns = 0;  // no NIC: "device memory" on an expander is the same memory
  o.native_masked_cas = false;
}

// cxl-pool: a memory pool behind a CXL switch that several hosts share, as measured on real
// hardware: a 4-host pool at 600-800 ns per load and about 10 GB/s per host (Duhu, OSDI'26).
// docs/sim.md gives the figures and what is assumed where the source is silent.
//  - latency: 2 x 340 + 20 = 700 ns for a 64 B access, the middle of the measured range.
//  - nic_gbps 80: each host's link, 10 GB/s. memory_nic_gbps 320: the pool serves four hosts at
//    their measured rate at once; the source gives no aggregate, so the pool is assumed not to
//    bind before the hosts' links do.
//  - the rest as `cxl`: flits, loads and stores, no masked CAS.
void cxl_pool(Options& o) {
  cxl(o);
  o.preset_name = "cxl-pool";
  o.latency_ns = 340;
  o.nic_gbps = 80.0;
  o.memory_nic_gbps = 320.0;
}

struct Preset {
  const char* name;
  void (*apply)(Options&);
};
// The one list of presets: names, the --preset choices and the error message come from it.
constexpr Preset kPresets[] = {{"rdma-cx6", rdma_cx6}, {"cxl", cxl}, {"cxl-pool", cxl_pool}};

}  // namespace

std::vector<std::string> Options::preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

void Options::apply_preset(std::string_view name) {
  // A preset sets every cost field it uses; the role-specific rate goes back to "same as
  // nic_gbps" unless the preset sets it.
  for (const Preset& p : kPresets) {
    if (name == p.name) {
      memory_nic_gbps = 0;
      p.apply(*this);
      return;
    }
  }
  std::string choices;
  for (const Preset& p : kPresets) choices += (choices.empty() ? "" : ", ") + std::string(p.name);
  throw ConfigError("unknown sim preset '" + std::string(name) + "' (choices: " + choices + ")");
}

Options Options::preset(std::string_view name) {
  Options o;
  o.apply_preset(name);
  return o;
}

void Options::validate() const {
  auto bad = [](const std::string& what) { throw ConfigError("sim: " + what); };
  if (compute_nodes == 0) bad("compute_nodes must be at least 1");
  if (memory_nodes == 0) bad("memory_nodes must be at least 1");
  if (clients_per_node == 0) bad("clients_per_node must be at least 1");
  if (compute_nodes + memory_nodes > 65535) bad("too many nodes (at most 65535)");
  if (!(nic_mops > 0) || nic_mops > 1e6) bad("nic_mops must be in (0, 1e6] million verbs/s");
  if (!(nic_gbps > 0) || nic_gbps > 1e6) bad("nic_gbps must be in (0, 1e6] Gbit/s");
  if (!(memory_nic_gbps >= 0) || memory_nic_gbps > 1e6)
    bad("memory_nic_gbps must be in [0, 1e6] Gbit/s (0: nic_gbps)");
  if (latency_ns > 1'000'000'000ull) bad("latency_ns must be at most one second");
  if (!(service_gbps > 0) || service_gbps > 1e6) bad("service_gbps must be in (0, 1e6] Gbit/s");
  if (fiber_stack_bytes < 16 * 1024) bad("fiber_stack_bytes must be at least 16 KiB");
  if (coherence != Coherence::kCoherent && cache_bytes < 64 * 8)
    bad("cache_bytes must hold at least one set of 8 lines (512 bytes)");
  if (coherence != Coherence::kPartial && coherent_bytes != 0)
    bad("coherent_bytes applies to coherence = partial only");
}

std::string Options::describe() const {
  std::ostringstream s;
  s << "sim preset=" << preset_name << " compute_nodes=" << compute_nodes
    << " clients_per_node=" << clients_per_node << " memory_nodes=" << memory_nodes
    << " nic_mops=" << nic_mops << " nic_gbps=" << nic_gbps
    << " memory_nic_gbps=" << memory_nic_gbps << " header_bytes=" << header_bytes
    << " latency_ns=" << latency_ns << " cpu_ns=" << cpu_ns
    << " cpu_per_verb_ns=" << cpu_per_verb_ns << " poll_ns=" << poll_ns
    << " pcie_rtt_ns=" << pcie_rtt_ns
    << " serialize_atomics=" << (serialize_atomics ? "true" : "false")
    << " native_masked_cas=" << (native_masked_cas ? "true" : "false")
    << " service_access_ns=" << service_access_ns << " service_gbps=" << service_gbps
    << " service_msg_ns=" << service_msg_ns << " service_idle_ns=" << service_idle_ns;
  // Only off the default, so that a coherent run's line is what it always was.
  if (coherence != Coherence::kCoherent) {
    s << " coherence=" << coherence_name(coherence) << " cache_bytes=" << cache_bytes
      << " flush_line_ns=" << flush_line_ns;
    if (coherence == Coherence::kPartial) s << " coherent_bytes=" << coherent_bytes;
  }
  return s.str();
}

}  // namespace dmrt::sim

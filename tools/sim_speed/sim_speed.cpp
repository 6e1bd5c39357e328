// sim_speed: how fast the sim transport simulates, in simulated verbs per wall-clock second on one
// core. Runs compute_nodes x clients_per_node clients doing a READ-heavy mix (with some WRITE, CAS
// and two-node batches) for a fixed virtual duration; prints one JSON line.
//   sim_speed [--preset rdma-cx6] [--compute-nodes 10] [--clients-per-node 32] [--duration-us 2000]
//             [--size 64] [--working-set-mib 4]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <vector>

#include "dmrt/policies/sim/cli.h"
#include "dmrt/policies/sim/cluster.h"
#include "dmrt/policies/sim/report_json.h"

int main(int argc, char** argv) {
  using namespace dmrt;
  sim::Options opts;
  opts.compute_nodes = 10;
  opts.clients_per_node = 32;
  opts.memory_nodes = 2;
  opts.memory_bytes = uint64_t{256} << 20;
  uint64_t duration_us = 2000;
  uint32_t size = 64;
  uint64_t working_set_mib = 4;
  CLI::App app("dmrt sim speed: simulated verbs per wall-clock second");
  sim::add_cli_flags(app, opts);
  app.add_option("--duration-us", duration_us, "virtual duration of the run, microseconds");
  app.add_option("--size", size, "READ/WRITE size, bytes");
  app.add_option(
      "--working-set-mib", working_set_mib,
      "bytes each memory node's verbs spread over, MiB (larger: more host cache misses)");
  CLI11_PARSE(app, argc, argv);

  sim::Cluster cluster(opts);
  std::vector<uint64_t> ops(opts.clients());
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
  };
  const double cpu0 = cpu_now();
  auto wall0 = std::chrono::steady_clock::now();
  cluster.run(
      [&](sim::SimClient& c, const sim::WorkerInfo& w) {
        std::vector<std::byte> buf(size * 2);
        uint64_t x = 0x9E3779B97F4A7C15ull * (w.index + 1);
        const uint64_t span = std::max<uint64_t>(1, (working_set_mib << 20) / size);
        while (!w.expired()) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: deterministic per client
          NodeId n = static_cast<NodeId>(x % opts.memory_nodes);
          GlobalAddress a(n, (uint64_t{16} << 20) + ((x >> 8) % span) * size);
          switch ((x >> 40) % 16) {
            case 0:
              c.write(a, buf.data(), size);
              break;
            case 1:
              c.cas(GlobalAddress(n, a.offset() & ~uint64_t{7}), 0, 1);
              break;
            case 2: {
              dmrt::Batch b[2];
              b[0].read(a, buf.data(), size);
              b[1].read(GlobalAddress((n + 1) % opts.memory_nodes, a.offset()), buf.data() + size,
                        size);
              c.run(std::span<dmrt::Batch>(b, opts.memory_nodes > 1 ? 2 : 1));
              break;
            }
            default:
              c.read(a, buf.data(), size);
          }
          ++ops[w.index];
        }
      },
      sim::RunOptions{duration_us * 1000, {}, 0});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  double cpu = cpu_now() - cpu0;
  sim::Report r = cluster.report();
  uint64_t total_ops = 0;
  for (uint64_t o : ops) total_ops += o;
  nlohmann::json j;
  j["bench"] = "sim_speed";
  j["options"] = opts;
  j["wall_s"] = wall;
  j["virtual_s"] = r.elapsed_ns * 1e-9;
  j["simulated_verbs"] = r.verbs;
  j["simulated_ops"] = total_ops;
  j["events"] = r.events;
  j["cpu_s"] = cpu;
  j["verbs_per_wall_s"] = r.verbs / wall;
  // The simulator is single-threaded: on a shared machine, CPU time is the fairer divisor.
  j["verbs_per_cpu_s"] = r.verbs / cpu;
  j["simulated_mops"] = total_ops / (r.elapsed_ns * 1e-9) / 1e6;
  j["bottleneck"] = r.bottleneck;
  j["bottleneck_util"] = r.bottleneck_util;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

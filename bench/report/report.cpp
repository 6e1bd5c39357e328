#include "bench/report/report.h"

#include "bench/cli/option_json.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "dmrt/runtime/error.h"

namespace dmrt::bench {
namespace {

// Static initialisation runs before main: close enough to the process's start for "elapsed".
const std::chrono::steady_clock::time_point kProcessStart = std::chrono::steady_clock::now();

double per(uint64_t v, uint64_t n) {
  return n ? static_cast<double>(v) / static_cast<double>(n) : 0.0;
}
double us(uint64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

// Averages per operation of one KindResult.
nlohmann::json per_op_json(const KindResult& k) {
  const uint64_t n = k.count;
  nlohmann::json verbs;
  for (size_t v = 0; v < kVerbKinds; ++v)
    verbs[std::string(verb_name(static_cast<VerbKind>(v)))] = per(k.total.verbs[v], n);
  return {{"round_trips", per(k.total.round_trips, n)},
          {"verbs", verbs},
          {"bytes_read", per(k.total.bytes_read, n)},
          {"bytes_written", per(k.total.bytes_written, n)},
          {"memory_node_verbs", per(k.by_role[0].total_verbs(), n)},
          {"compute_node_verbs", per(k.by_role[1].total_verbs(), n)},
          {"memory_node_round_trips", per(k.by_role[0].round_trips, n)},
          {"compute_node_round_trips", per(k.by_role[1].round_trips, n)},
          {"local_accesses", per(k.total.local_accesses, n)},
          {"emulated_masked_cas", per(k.total.emulated_masked_cas, n)},
          {"masked_cas_retries", per(k.total.emulation_retries, n)},
          {"atomic_releases", per(k.total.atomic_releases, n)},
          {"messages", per(k.total.messages, n)}};
}

nlohmann::json& provenance() {
  static nlohmann::json p;
  return p;
}

// An index statistic for the table: byte counts with a binary unit, whole numbers as integers
// (never 3.14573e+07), fractions to four significant digits.
std::string stat_text(const std::string& name, double v) {
  const bool whole = v == std::floor(v) && std::fabs(v) < 1e15;
  const bool bytes = name == "bytes" || (name.size() > 6 && name.ends_with("_bytes"));
  if (bytes && whole && std::fabs(v) >= 1024) {
    static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    double x = v;
    size_t u = 0;
    for (x /= 1024; std::fabs(x) >= 1024 && u + 1 < std::size(kUnits); ++u) x /= 1024;
    std::string t = fmt::format("{:.1f}", x);
    if (t.ends_with(".0")) t.resize(t.size() - 2);
    return t + kUnits[u];
  }
  if (whole) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

// A scalar option as the table shows it: switches as on/off, numbers as the index stats.
std::string option_text(const std::string& name, const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return stat_text(name, v.get<double>());
  return v.dump();
}

}  // namespace

void set_provenance(nlohmann::json p) {
  provenance() = std::move(p);
}

nlohmann::json latency_json(const Histogram& h) {
  return {{"p50", us(h.percentile(0.5))},
          {"p99", us(h.percentile(0.99))},
          {"p999", us(h.percentile(0.999))},
          {"mean", h.mean() / 1000.0},
          {"max", us(h.max())}};
}

nlohmann::json histogram_json(const Histogram& h) {
  nlohmann::json buckets = nlohmann::json::array();
  for (auto [b, n] : h.nonzero_buckets()) buckets.push_back({b, n});
  return {{"unit", "ns"},   {"count", h.count()}, {"sum", h.sum()},
          {"min", h.min()}, {"max", h.max()},     {"buckets", buckets}};
}

Histogram histogram_from_json(const nlohmann::json& j) {
  std::vector<std::pair<uint32_t, uint64_t>> buckets;
  for (const auto& b : j.at("buckets"))
    buckets.emplace_back(b.at(0).get<uint32_t>(), b.at(1).get<uint64_t>());
  try {
    return Histogram::from_buckets(buckets, j.at("sum").get<uint64_t>(),
                                   j.at("min").get<uint64_t>(), j.at("max").get<uint64_t>());
  } catch (const std::out_of_range&) {
    throw ConfigError("a latency histogram names a bucket past " +
                      std::to_string(Histogram::kBuckets));
  }
}

nlohmann::json resources_json() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - kProcessStart;
  return {{"peak_rss_mib", static_cast<double>(u.ru_maxrss) / 1024.0},  // Linux: KiB
          {"cpu_s", secs(u.ru_utime) + secs(u.ru_stime)},
          {"elapsed_s", elapsed.count()}};
}

nlohmann::json run_parameters_json(const Options& opt) {
  nlohmann::json j = option_fields_json(opt, true);
  if (!opt.byte_keys()) j.erase("key_format");  // integer keys have no form
  return j;
}

nlohmann::json phase_json(const Options& opt, const RunInfo& info, const PhaseResult& r) {
  nlohmann::json j = run_parameters_json(opt);
  j["phase"] = r.phase;
  if (r.phase == "load" || r.phase == "grow") j["distribution"] = "sequential";
  j["ops"] = r.all.count;
  if (!r.interrupted.empty()) {
    j["interrupted"] = true;
    j["signal"] = r.interrupted;
  }
  j["clients"] = opt.threads * opt.fibers;
  j["memory_nodes"] = info.memory_nodes;
  j["compute_nodes"] = info.compute_nodes;
  j["seconds"] = r.seconds;
  j["throughput_mops"] = r.seconds > 0 ? static_cast<double>(r.all.count) / r.seconds / 1e6 : 0.0;
  j["latency_us"] = latency_json(r.all.latency);
  j["per_op"] = per_op_json(r.all);
  nlohmann::json kinds = nlohmann::json::object();
  for (size_t k = 0; k < kOpKinds; ++k) {
    const KindResult& kr = r.kinds[k];
    if (!kr.count) continue;
    nlohmann::json o = per_op_json(kr);
    o["count"] = kr.count;
    o["failed"] = kr.failed;
    o["latency_us"] = latency_json(kr.latency);
    o["latency_histogram"] = histogram_json(kr.latency);
    kinds[std::string(op_name(static_cast<OpKind>(k)))] = o;
  }
  j["per_kind"] = kinds;
  j["failed_ops"] = r.all.failed;
  j["cache_bytes"] = r.cache_bytes;
  j["pool_bytes_used"] = r.pool_bytes_used;
  j["emulated_masked_cas"] = r.all.total.emulated_masked_cas;
  j["atomic_releases"] = r.all.total.atomic_releases;
  nlohmann::json stats = nlohmann::json::object();
  for (const auto& [k, v] : r.index_stats) stats[k] = v;
  j["index_stats"] = stats;
  j["index_options"] = info.index_options;
  if (!r.transport_report.is_null()) j[opt.transport] = r.transport_report;
  if (!info.placement.is_null()) j["placement"] = info.placement;
  j["latency_histogram"] = histogram_json(r.all.latency);
  if (!r.process.is_null()) j["process"] = r.process;
  j["resources"] = resources_json();
  if (!provenance().is_null()) j["provenance"] = provenance();
  return j;
}

void print_phase(const Options& opt, const RunInfo& info, const PhaseResult& r) {
  const double mops = r.seconds > 0 ? static_cast<double>(r.all.count) / r.seconds / 1e6 : 0.0;
  std::string out;
  out += fmt::format(
      "== {} | {} | workload {} | {} phase | {} ==\n", opt.index, opt.transport, opt.workload,
      r.phase, r.phase == "load" || r.phase == "grow" ? "sequential records" : opt.distribution);
  if (!r.interrupted.empty())
    out += fmt::format("interrupted by {}: the counts are those done before it\n", r.interrupted);
  out += fmt::format(
      "keys {}  clients {}x{}  value {} B  ops {}  {:.3f} s  {:.3f} Mops/s  failed {}\n", opt.keys,
      opt.threads, opt.fibers, opt.value_size, r.all.count, r.seconds, mops, r.all.failed);
  if (opt.byte_keys()) out += fmt::format("keys of {} B, {} form\n", opt.key_size, opt.key_format);
  if (opt.keyset != "ycsb") out += fmt::format("keyset {} ({} order)\n", opt.keyset, opt.key_order);
  if (!info.index_options.empty()) {
    out += "options:";
    for (const auto& it : info.index_options.items())
      out += " " + it.key() + "=" + option_text(it.key(), it.value());
    out += "\n";
  }
  out += fmt::format(
      "{:<7} {:>10} {:>9} {:>9} {:>9} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>8}\n", "kind",
      "count", "p50 us", "p99 us", "p999 us", "RT/op", "read", "write", "cas", "mcas", "faa",
      "B rd", "B wr");
  auto row = [&](std::string_view name, const KindResult& k) {
    const uint64_t n = k.count;
    auto v = [&](VerbKind vk) { return per(k.total.count(vk), n); };
    out += fmt::format(
        "{:<7} {:>10} {:>9.2f} {:>9.2f} {:>9.2f} {:>7.2f} {:>6.2f} {:>6.2f} {:>6.2f} {:>6.2f} "
        "{:>6.2f} {:>8.1f} {:>8.1f}\n",
        name, n, us(k.latency.percentile(0.5)), us(k.latency.percentile(0.99)),
        us(k.latency.percentile(0.999)), per(k.total.round_trips, n), v(VerbKind::kRead),
        v(VerbKind::kWrite), v(VerbKind::kCas), v(VerbKind::kMaskedCas), v(VerbKind::kFaa),
        per(k.total.bytes_read, n), per(k.total.bytes_written, n));
  };
  for (size_t k = 0; k < kOpKinds; ++k)
    if (r.kinds[k].count) row(op_name(static_cast<OpKind>(k)), r.kinds[k]);
  row("all", r.all);
  out += fmt::format("pool used {:.1f} MiB  cache {:.1f} KiB  emulated masked CAS {}",
                     static_cast<double>(r.pool_bytes_used) / (1 << 20),
                     static_cast<double>(r.cache_bytes) / 1024, r.all.total.emulated_masked_cas);
  if (r.all.total.atomic_releases)  // verbs on a software device (Batch::release)
    out += fmt::format("  atomic lock releases {}", r.all.total.atomic_releases);
  if (!r.index_stats.empty()) {
    out += "\nindex:";
    for (const auto& [k, v] : r.index_stats) out += " " + k + "=" + stat_text(k, v);
  }
  if (!r.transport_summary.empty()) out += "\n" + r.transport_summary;
  out += "\n\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

void write_json_line(const std::string& path, const nlohmann::json& j) {
  std::string line = j.dump() + "\n";
  if (path == "-") {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::ofstream f(path, std::ios::app);
  if (!f) throw ConfigError("cannot open --json file " + path + ": " + std::strerror(errno));
  f << line;
  f.flush();
  if (!f) throw ConfigError("cannot write --json file " + path + ": " + std::strerror(errno));
}

}  // namespace dmrt::bench

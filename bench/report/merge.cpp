// dmrt-bench --merge. Operation counts and failures add up; the phase's seconds are the union of
// the processes' windows (first start to last end, on the clock every process on the host shares)
// and its throughput all operations over that; latency percentiles come from the sum of the
// processes' latency histograms (exact to the histogram's buckets: 32 per power of two, within
// about 3% of the value), never from averaging percentiles; per-operation averages are weighted
// by each process's operations. Caches add up; the pool's bytes and the index's figures are
// those of the process that ended last (it saw the shared index last). A part that is empty,
// oversized, or missing from a phase (the lines say how many processes ran) is refused.
#include "bench/report/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/driver/usage.h"
#include "bench/report/report.h"
#include "dmrt/runtime/error.h"

namespace dmrt::bench {
namespace {

using json = nlohmann::json;

// `sum` += `part` x `weight`, field by field (numbers, and objects of numbers such as "verbs").
void add_weighted(json& sum, const json& part, double weight) {
  for (const auto& [k, v] : part.items()) {
    if (v.is_number()) {
      double prev = sum.contains(k) ? sum[k].get<double>() : 0.0;
      sum[k] = prev + v.get<double>() * weight;
    } else if (v.is_object()) {
      json& sub = sum[k];
      if (!sub.is_object()) sub = json::object();
      add_weighted(sub, v, weight);
    }
  }
}
void divide(json& sum, double by) {
  for (auto& [k, v] : sum.items()) {
    if (v.is_number())
      v = by > 0 ? v.get<double>() / by : 0.0;
    else if (v.is_object())
      divide(v, by);
  }
}

// The merged figures of one operation kind (or of all), from the lines' `pick(line)` objects
// with their counts: count and failed add up, per_op averages are weighted, latency from the
// histograms.
struct KindSum {
  uint64_t count = 0, failed = 0;
  json per_op = json::object();
  Histogram latency;
  void add(const json& per_op_part, uint64_t n, uint64_t fails, const json& hist) {
    count += n;
    failed += fails;
    add_weighted(per_op, per_op_part, static_cast<double>(n));
    latency.merge(histogram_from_json(hist));
  }
  json finish() {
    divide(per_op, static_cast<double>(count));
    return per_op;
  }
};

json merge_phase(const std::vector<json>& lines, const std::vector<std::string>& from) {
  json out = lines.front();
  uint64_t start = ~0ull, end = 0, ops = 0, failed = 0, cache = 0, clients = 0, emulated = 0,
           releases = 0;
  size_t last = 0;
  KindSum all;
  std::map<std::string, KindSum> kinds;
  json processes = json::array();
  for (size_t i = 0; i < lines.size(); ++i) {
    const json& l = lines[i];
    const json& p = l.at("process");
    const uint64_t s = p.at("window_ns").at(0).get<uint64_t>();
    const uint64_t e = p.at("window_ns").at(1).get<uint64_t>();
    start = std::min(start, s);
    if (e >= end) {
      end = e;
      last = i;
    }
    const uint64_t n = l.at("ops").get<uint64_t>();
    ops += n;
    failed += l.at("failed_ops").get<uint64_t>();
    cache += l.at("cache_bytes").get<uint64_t>();
    clients += l.at("clients").get<uint64_t>();
    emulated += l.at("emulated_masked_cas").get<uint64_t>();
    releases += l.value("atomic_releases", uint64_t{0});
    all.add(l.at("per_op"), n, l.at("failed_ops").get<uint64_t>(), l.at("latency_histogram"));
    for (const auto& [k, v] : l.at("per_kind").items()) {
      json per_op = v;
      for (const char* drop : {"count", "failed", "latency_us", "latency_histogram"})
        per_op.erase(drop);
      kinds[k].add(per_op, v.at("count").get<uint64_t>(), v.at("failed").get<uint64_t>(),
                   v.at("latency_histogram"));
    }
    json summary = p;
    summary["file"] = from[i];
    summary["ops"] = n;
    summary["seconds"] = l.at("seconds");
    summary["throughput_mops"] = l.at("throughput_mops");
    summary["latency_us"] = l.at("latency_us");
    if (l.contains("placement")) summary["placement"] = l["placement"];
    if (l.contains("resources")) summary["resources"] = l["resources"];  // per process
    const std::string transport = l.at("transport").get<std::string>();
    if (l.contains(transport)) summary[transport] = l[transport];
    processes.push_back(summary);
  }
  const double seconds = end > start ? static_cast<double>(end - start) / 1e9 : 0.0;
  out.erase("process");
  out.erase("placement");
  out.erase("resources");
  out.erase(out.at("transport").get<std::string>());
  out["ops"] = ops;
  out["failed_ops"] = failed;
  out["clients"] = clients;
  out["cache_bytes"] = cache;
  out["emulated_masked_cas"] = emulated;
  out["atomic_releases"] = releases;
  out["pool_bytes_used"] = lines[last].at("pool_bytes_used");
  out["index_stats"] = lines[last].at("index_stats");
  out["seconds"] = seconds;
  out["throughput_mops"] = seconds > 0 ? static_cast<double>(ops) / seconds / 1e6 : 0.0;
  out["latency_us"] = latency_json(all.latency);
  out["latency_histogram"] = histogram_json(all.latency);
  out["per_op"] = all.finish();
  json per_kind = json::object();
  for (auto& [k, sum] : kinds) {
    json o = sum.finish();
    o["count"] = sum.count;
    o["failed"] = sum.failed;
    o["latency_us"] = latency_json(sum.latency);
    o["latency_histogram"] = histogram_json(sum.latency);
    per_kind[k] = o;
  }
  out["per_kind"] = per_kind;
  out["processes"] = processes;
  out["merged"] = {
      {"processes", lines.size()},
      {"window_ns", {start, end}},
      {"seconds",
       "first start to last end of the processes' windows (one clock: the first memory node's "
       "steady_clock, each window moved onto it by its measured offset across hosts)"},
      {"throughput", "all processes' operations over those seconds"},
      {"latency",
       "percentiles of the sum of the processes' latency histograms (buckets of 1/32 "
       "of a power of two: within about 3%), not averaged percentiles"},
      {"per_op", "averages weighted by each process's operations"},
      {"index_stats", "the process that ended last"}};
  return out;
}

// The file's bytes, at most kMaxMergeFileBytes (a part is a few lines; /dev/zero or a runaway
// file is refused, not read until memory runs out).
std::string read_part(const std::string& f, std::string& error) {
  std::ifstream in(f, std::ios::binary);
  if (!in) {
    error = "--merge: cannot read " + f;
    return {};
  }
  std::string text;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxMergeFileBytes) {
      error = "--merge: " + f + " is larger than " + std::to_string(kMaxMergeFileBytes >> 20) +
              " MiB: not a dmrt-bench report";
      return {};
    }
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    error = "--merge: " + f +
            " is empty (a process that failed before its first phase leaves an empty part: see "
            "its output)";
  return text;
}

// A phase's parts against the run's compute processes (the `members` each line names): all
// there, or a sentence naming what is missing.
// The wording is dmrt-check's for history parts (dmrt/check/history_io.cpp).
std::string missing_parts(const std::string& phase, const std::vector<json>& lines) {
  std::map<unsigned, bool> nodes;
  std::vector<unsigned> all;  // the run's compute nodes, where the lines list them
  unsigned members = 0;
  for (const json& l : lines) {
    const json& p = l.at("process");
    nodes[p.at("node").get<unsigned>()] = true;
    if (p.contains("members")) members = std::max(members, p.at("members").get<unsigned>());
    if (p.contains("compute_nodes")) all = p.at("compute_nodes").get<std::vector<unsigned>>();
  }
  if (members == 0 || nodes.size() >= members) return "";
  std::string have, missing;
  for (auto& [n, _] : nodes) have += (have.empty() ? "" : ", ") + std::to_string(n);
  for (unsigned n : all)
    if (!nodes.count(n)) missing += (missing.empty() ? "" : ", ") + std::to_string(n);
  if (!missing.empty())
    have += std::string("; missing: node") + (missing.find(',') != std::string::npos ? "s " : " ") +
            missing;
  return "--merge: the " + phase + " phase has the parts of " + std::to_string(nodes.size()) +
         " of the run's " + std::to_string(members) + " compute processes (nodes " + have +
         "): give every part, or --merge-partial to merge these alone";
}

}  // namespace

int merge_reports(const std::vector<std::string>& files, const std::string& json_out,
                  bool partial) {
  std::vector<std::string> order;  // phases in the order first seen
  std::map<std::string, std::vector<json>> phases;
  std::map<std::string, std::vector<std::string>> origin;
  std::map<std::string, std::string> index_of;
  try {
    for (const std::string& f : files) {
      std::string error;
      std::istringstream in(read_part(f, error));
      if (!error.empty()) return usage_error(error);
      std::string line;
      for (size_t no = 1; std::getline(in, line); ++no) {
        if (line.empty()) continue;
        const std::string where = f + " line " + std::to_string(no);
        json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object())
          return usage_error("--merge: " + where + " is not JSON");
        if (!j.contains("process") || !j.contains("latency_histogram"))
          return usage_error("--merge: " + where +
                             " is not from a process of a multi-process run (dmrt-bench "
                             "--attach writes a \"process\" block and latency histograms)");
        const std::string phase = j.at("phase").get<std::string>();
        const std::string index = j.at("index").get<std::string>();
        if (!phases.count(phase)) order.push_back(phase);
        auto [it, fresh] = index_of.try_emplace(phase, index);
        if (!fresh && it->second != index)
          return usage_error("--merge: " + where + " is a run of " + index + ", the others of " +
                             it->second);
        phases[phase].push_back(std::move(j));
        origin[phase].push_back(f);
      }
    }
    if (order.empty()) return usage_error("--merge: the files hold no phase");
    // One line per process and phase: a --json file that two runs appended to would otherwise
    // count a process twice.
    for (const std::string& phase : order) {
      std::map<std::pair<long, unsigned>, std::string> seen;
      for (size_t i = 0; i < phases[phase].size(); ++i) {
        const json& p = phases[phase][i].at("process");
        auto [it, fresh] = seen.try_emplace({p.at("pid").get<long>(), p.at("node").get<unsigned>()},
                                            origin[phase][i]);
        if (!fresh)
          return usage_error("--merge: the " + phase + " phase of node " +
                             std::to_string(p.at("node").get<unsigned>()) + " (pid " +
                             std::to_string(p.at("pid").get<long>()) + ") is in " + it->second +
                             " and in " + origin[phase][i] +
                             " (one file given twice, or appended to by two runs?)");
      }
    }
    if (!partial)
      for (const std::string& phase : order)
        if (phase != "load")  // the creator alone loads
          if (std::string m = missing_parts(phase, phases[phase]); !m.empty())
            return usage_error(m);
    for (const std::string& phase : order) {
      json m = merge_phase(phases[phase], origin[phase]);
      if (!json_out.empty()) {
        write_json_line(json_out, m);
        continue;
      }
      std::string t = fmt::format(
          "== merged: {} | {} | workload {} | {} phase | {} processes ==\n"
          "ops {}  {:.3f} s  {:.3f} Mops/s  failed {}  latency us p50 {:.2f} p99 {:.2f} p999 "
          "{:.2f} mean {:.2f}\n",
          m["index"].get<std::string>(), m["transport"].get<std::string>(),
          m["workload"].get<std::string>(), phase, phases[phase].size(), m["ops"].get<uint64_t>(),
          m["seconds"].get<double>(), m["throughput_mops"].get<double>(),
          m["failed_ops"].get<uint64_t>(), m["latency_us"]["p50"].get<double>(),
          m["latency_us"]["p99"].get<double>(), m["latency_us"]["p999"].get<double>(),
          m["latency_us"]["mean"].get<double>());
      for (const json& p : m["processes"])
        t += fmt::format("  node {} (pid {}): {} ops  {:.3f} s  {:.3f} Mops/s  {}\n",
                         p["node"].get<unsigned>(), p["pid"].get<long>(), p["ops"].get<uint64_t>(),
                         p["seconds"].get<double>(), p["throughput_mops"].get<double>(),
                         p["file"].get<std::string>());
      std::fputs((t + "\n").c_str(), stdout);
    }
  } catch (const json::exception& e) {
    return usage_error(std::string("--merge: a report lacks a field: ") + e.what());
  }
  return 0;
}

}  // namespace dmrt::bench

// --then's run phases (bench/driver/phases.h).
#include "bench/driver/phases.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace dmrt::bench {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (;;) {
    const size_t at = s.find(sep);
    parts.push_back(trim(s.substr(0, at)));
    if (at == std::string_view::npos) return parts;
    s.remove_prefix(at + 1);
  }
}

// A whole number or a decimal one; false on trailing bytes, a sign where none belongs, NaN.
bool parse_number(std::string_view text, double& d) {
  const std::string s(text);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  d = std::strtod(s.c_str(), &end);
  return errno == 0 && end == s.c_str() + s.size() && std::isfinite(d);
}
bool parse_count(std::string_view text, uint64_t& v) {
  const std::string s(text);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  char* end = nullptr;
  errno = 0;
  v = std::strtoull(s.c_str(), &end, 10);
  return errno == 0 && end == s.c_str() + s.size();
}

// One KEY=VALUE of a step onto `o`; "" or what is wrong with it.
std::string apply(std::string_view item, Options& o, bool& dist_set, bool& cache_set) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) return "'" + std::string(item) + "' is not KEY=VALUE";
  const std::string_view key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
  const std::string bad = "'" + std::string(value) + "' is not a value of " + std::string(key);
  double d = 0;
  if (key == "workload") {
    o.workload = std::string(value);
  } else if (key == "distribution") {
    o.distribution = std::string(value);
    dist_set = true;
  } else if (key == "zipf-theta") {
    if (!parse_number(value, d)) return bad;
    o.zipf_theta = d;
  } else if (key == "ops") {
    if (!parse_count(value, o.ops)) return bad;
    o.seconds = 0;
  } else if (key == "seconds") {
    if (!parse_number(value, d)) return bad;
    o.seconds = d;
  } else if (key == "keys") {
    if (!parse_count(value, o.keys)) return bad;
  } else if (key == "warmup-ops") {
    if (!parse_count(value, o.warmup_ops)) return bad;
  } else if (key == "cache-mb") {
    if (!parse_number(value, d)) return bad;
    o.cache_mb = d;
    cache_set = true;
  } else {
    return "a step sets only " + std::string(kThenKeys) + ", not '" + std::string(key) +
           "': the others shape the index or its load";
  }
  return "";
}

// The range check of the option fields a step set (the others were checked on the command line;
// some of them hold a "not given" value outside their range, as --seconds does).
std::string check_fields(const Options& o, const std::vector<std::string>& keys) {
  std::string err;
  for_each_field<Options>([&](const auto& f) {
    if (err.empty() && std::find(keys.begin(), keys.end(), f.key) != keys.end())
      err = field_range_error(f, o.*(f.member));
  });
  return err;
}

}  // namespace

std::string plan_run_phases(const Options& first, const Mix& mix, bool dist_given,
                            std::vector<RunPhase>& out) {
  out.clear();
  if (mix.load_only && !first.then.empty())
    return "--then runs more phases after a run phase: --workload load has none";
  if (!mix.load_only) out.push_back({first, mix, false});
  if (first.then.empty()) return "";
  const auto steps = split(first.then, ';');
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string where =
        "--then step " + std::to_string(i + 2) + " ('" + std::string(steps[i]) + "'): ";
    if (steps[i].empty()) return where + "empty (give KEY=VALUE[,KEY=VALUE...])";
    RunPhase p = out.back();
    bool dist_set = false, cache_set = false;
    std::vector<std::string> keys;  // the fields the step set, by their option keys
    for (std::string_view item : split(steps[i], ',')) {
      if (std::string err = apply(item, p.opt, dist_set, cache_set); !err.empty())
        return where + err;
      std::string key(trim(item.substr(0, item.find('='))));
      for (char& ch : key)
        if (ch == '-') ch = '_';
      keys.push_back(std::move(key));
    }
    const auto m = mix_of(p.opt.workload);
    if (!m) return where + "unknown workload " + p.opt.workload;
    if (m->load_only) return where + "workload load is the load phase: it runs once, first";
    // A new workload without a distribution of its own takes its default (D: latest), unless
    // the command line chose one for every phase.
    if (!dist_set && !dist_given && p.opt.workload != out.back().opt.workload)
      p.opt.distribution = m->forces_latest ? "latest" : "zipfian";
    if (std::string err = check_fields(p.opt, keys); !err.empty()) return where + err;
    p.mix = *m;
    p.new_cache = cache_set && p.opt.cache_mb != out.back().opt.cache_mb;
    if (p.opt.keys < out.back().opt.keys)
      return where + "keys=" + std::to_string(p.opt.keys) + " is fewer than the " +
             std::to_string(out.back().opt.keys) + " loaded: a step may only grow the index";
    p.grow = p.opt.keys - out.back().opt.keys;
    p.opt.then.clear();
    out.push_back(std::move(p));
  }
  out.front().opt.then.clear();
  return "";
}

std::string scanning_workload(const Options& first, const Mix& mix) {
  std::vector<RunPhase> phases;
  if (!plan_run_phases(first, mix, first.distribution_given, phases).empty()) return "";
  for (const RunPhase& p : phases)
    if (p.mix.scan > 0) return p.opt.workload;
  return "";
}

uint64_t expected_inserts(const std::vector<RunPhase>& phases) {
  uint64_t n = 0;
  for (const RunPhase& p : phases) {
    n += p.grow;
    const double ops = static_cast<double>(p.opt.seconds > 0 ? p.opt.keys : p.opt.ops) +
                       static_cast<double>(p.opt.warmup_ops);
    n += static_cast<uint64_t>(ops * p.mix.insert * 2.0);
  }
  return n;
}

}  // namespace dmrt::bench

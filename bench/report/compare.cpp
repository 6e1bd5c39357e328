// dmrt-bench --compare. Each run is a child process of this binary, so that every index starts
// from the same fresh process (no heap, pool or cache left by the index before it) and a
// failure names its index and round; the rounds interleave the indexes, so that the machine's
// changing load falls on all of them alike, and the best round of each is compared.
#include "bench/report/compare.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "bench/driver/usage.h"
#include "bench/report/report.h"
#include "dmrt/runtime/error.h"

namespace dmrt::bench {
namespace {

using json = nlohmann::json;

// Flags the parent owns: never passed to a run.
const std::set<std::string> kParentFlags = {"--compare", "--compare-rounds", "--index",
                                            "--json",    "--quiet",          "--progress"};
// The far-memory model: dropped (and zeroed) in a run without it.
const std::set<std::string> kFarFlags = {"--shm-latency-ns", "--shm-gbps", "--shm-preset"};

double load_average() {
  double l = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = 0;
    std::fclose(f);
  }
  return l;
}

// The median of `v` (the mean of the middle two when even); 0 when empty.
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string round_list(const json& a) {
  std::string s;
  for (const auto& v : a) s += fmt::format("{}{:.3f}", s.empty() ? "" : " ", v.get<double>());
  return s;
}

}  // namespace

std::string compare_kind(const IndexInfo& i) {
  // HStore scans through its skiplist but serves points from its hash table: a hash index.
  return !i.scan || i.name == "hstore" ? "hash" : "ordered";
}

std::vector<IndexInfo> compare_indexes(const std::string& list, const std::vector<IndexInfo>& all) {
  if (list == "all") return all;
  std::vector<IndexInfo> out;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    auto it =
        std::find_if(all.begin(), all.end(), [&](const IndexInfo& i) { return i.name == name; });
    if (it == all.end()) {
      std::string names;
      for (const IndexInfo& i : all) names += (names.empty() ? "" : ", ") + i.name;
      throw ConfigError("--compare: unknown index '" + name + "' (this build has " + names + ")");
    }
    for (const IndexInfo& o : out)
      if (o.name == name) throw ConfigError("--compare: " + name + " is listed twice");
    out.push_back(*it);
  }
  if (out.size() < 2) throw ConfigError("--compare needs at least two indexes (or all)");
  return out;
}

json compare_summary(const Options& opt, const std::vector<IndexInfo>& indexes,
                     const std::vector<CompareRun>& runs, unsigned rounds, bool far_model) {
  json rows = json::array();
  std::map<std::string, double> best;  // without the far-memory model
  for (const IndexInfo& i : indexes) {
    json row = {{"index", i.name},
                {"kind", compare_kind(i)},
                {"local", i.local},
                {"mops", json::array()},
                {"load_avg", json::array()}};
    const bool has_far = far_model && !i.local;
    if (has_far) {
      row["far_mops"] = json::array();
      row["far_load_avg"] = json::array();
    }
    double b = 0, bf = 0;
    unsigned at = 0;
    for (const CompareRun& r : runs) {
      if (r.index != i.name) continue;
      if (r.far && has_far) {
        row["far_mops"].push_back(r.mops);
        row["far_load_avg"].push_back(r.load_avg);
        bf = std::max(bf, r.mops);
      } else if (!r.far) {
        row["mops"].push_back(r.mops);
        row["load_avg"].push_back(r.load_avg);
        if (r.mops > b) {
          b = r.mops;
          at = r.round;
        }
      }
    }
    const std::vector<double> mops = row["mops"].get<std::vector<double>>();
    row["best_mops"] = b;
    row["best_round"] = at;
    row["median_mops"] = median(mops);
    row["worst_mops"] = mops.empty() ? 0.0 : *std::min_element(mops.begin(), mops.end());
    if (has_far) {
      row["best_far_mops"] = bf;
      row["retention"] = b > 0 ? json(bf / b) : json(nullptr);
    }
    best[i.name] = b;
    rows.push_back(row);
  }
  // The best local peer of each kind.
  std::map<std::string, std::pair<std::string, double>> peer;
  for (const IndexInfo& i : indexes)
    if (i.local) {
      auto& p = peer[compare_kind(i)];
      if (best[i.name] > p.second) p = {i.name, best[i.name]};
    }
  for (size_t k = 0; k < indexes.size(); ++k) {
    json& row = rows[k];
    auto p = peer.find(compare_kind(indexes[k]));
    if (p == peer.end() || p->second.second <= 0) {
      row["peer"] = nullptr;
      row["peer_mops"] = nullptr;
      row["ratio"] = nullptr;
    } else {
      row["peer"] = p->second.first;
      row["peer_mops"] = p->second.second;
      row["ratio"] = row["best_mops"].get<double>() / p->second.second;
    }
  }
  json far = nullptr;
  if (far_model)
    far = {{"latency_ns", opt.shm.latency_ns >= 0 ? json(opt.shm.latency_ns) : json(nullptr)},
           {"gbps", opt.shm.gbps >= 0 ? json(opt.shm.gbps) : json(nullptr)},
           {"preset", opt.shm.preset.empty() ? json(nullptr) : json(opt.shm.preset)}};
  // The run parameters every result carries (bench/cli/options.h), less the index: each row has
  // its own.
  json j = run_parameters_json(opt);
  j.erase("index");
  j.update({{"phase", "compare"},
            {"measured_phase", opt.workload == "load" ? "load" : "run"},
            {"ops", opt.seconds > 0 ? json(nullptr) : json(opt.ops)},
            {"seconds", opt.seconds > 0 ? json(opt.seconds) : json(nullptr)},
            {"rounds", rounds},
            {"far_memory", far},
            {"indexes", rows}});
  return j;
}

namespace {

// One word of the command line with its value, tagged with its owner index ("" for a common
// flag) and whether it is a far-memory flag.
struct Token {
  std::vector<std::string> words;
  std::string owner;
  bool far = false;
};

// The command line as tokens, without the flags the parent owns; `far_model` says whether it
// gives a far-memory model. A flag of an index that --compare does not list is an error.
std::vector<Token> compare_tokens(const CLI::App& app,
                                  const std::vector<std::pair<std::string, CLI::App*>>& groups,
                                  const std::vector<IndexInfo>& indexes, int argc, char** argv,
                                  bool& far_model) {
  std::map<const CLI::Option*, std::string> owner;  // which index each index flag belongs to
  for (const auto& [name, group] : groups)
    for (const CLI::Option* o : group->get_options()) owner[o] = name;
  for (const auto& [o, name] : owner)
    if (o->count() > 0 && std::none_of(indexes.begin(), indexes.end(),
                                       [&](const IndexInfo& i) { return i.name == name; }))
      throw ConfigError(o->get_name() + " is a flag of --index " + name +
                        ", which --compare does not list");
  std::vector<Token> tokens;
  far_model = false;
  for (int k = 1; k < argc; ++k) {
    const std::string t = argv[k];
    Token tok{{t}, "", false};
    if (t.rfind("--", 0) == 0) {
      const size_t eq = t.find('=');
      const std::string name = t.substr(0, eq);
      const CLI::Option* o = app.get_option_no_throw(name);
      const bool takes_value = o && o->get_items_expected_min() > 0 && eq == std::string::npos;
      if (takes_value && k + 1 < argc) tok.words.push_back(argv[++k]);
      if (kParentFlags.count(name)) continue;
      if (o && owner.count(o)) tok.owner = owner[o];
      tok.far = kFarFlags.count(name) > 0;
      if (tok.far) {
        const std::string v = eq == std::string::npos ? tok.words.back() : t.substr(eq + 1);
        far_model = far_model || (name == "--shm-preset" ? v != "none" : std::atof(v.c_str()) > 0);
      }
    }
    tokens.push_back(std::move(tok));
  }
  return tokens;
}

// Runs this binary with `args` as a child process; its exit code (128 + signal when killed).
int run_child(std::vector<std::string> args) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw Error("--compare: fork failed");
  if (pid == 0) {
    std::vector<char*> cargs;
    for (std::string& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    execv("/proc/self/exe", cargs.data());
    std::perror("dmrt-bench --compare: exec");
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The table on stdout: each index's best round, its peer and ratio, far-memory retention.
void print_compare(const Options& opt, const json& summary, const std::vector<CompareRun>& runs,
                   unsigned rounds) {
  std::printf(
      "== compare | %s | workload %s | %llu keys%s | %ux%u clients | %u interleaved rounds, "
      "best of each ==\n",
      opt.transport.c_str(), opt.workload.c_str(), static_cast<unsigned long long>(opt.keys),
      opt.byte_keys()
          ? (" of " + std::to_string(opt.key_size) + " B (" + opt.key_format + ")").c_str()
          : "",
      opt.threads, opt.fibers, rounds);
  std::printf("%-12s %-13s %9s  %-26s %-12s %6s\n", "index", "kind", "Mops best", "rounds",
              "peer", "ratio");
  // Ratios to three decimals: at two, 0.996 and 1.004 both print as "1.00".
  for (const json& row : summary["indexes"]) {
    std::printf(
        "%-12s %-13s %9.3f  %-26s %-12s %6s\n", row["index"].get<std::string>().c_str(),
        (row["local"].get<bool>() ? "local " + row["kind"].get<std::string>()
                                  : row["kind"].get<std::string>())
            .c_str(),
        row["best_mops"].get<double>(), round_list(row["mops"]).c_str(),
        row["peer"].is_null() ? "-" : row["peer"].get<std::string>().c_str(),
        row["ratio"].is_null() ? "-" : fmt::format("{:.3f}", row["ratio"].get<double>()).c_str());
    if (row.contains("retention"))
      std::printf("%-12s %-13s %9.3f  %-26s retains %s\n", "", "far memory",
                  row["best_far_mops"].get<double>(), round_list(row["far_mops"]).c_str(),
                  row["retention"].is_null()
                      ? "-"
                      : fmt::format("{:.3f}", row["retention"].get<double>()).c_str());
  }
  std::string la;
  for (const CompareRun& r : runs) la += fmt::format(" {:.1f}", r.load_avg);
  std::printf("load average at each run's start:%s\n", la.c_str());
}

}  // namespace

int run_compare(const CLI::App& app, const std::vector<std::pair<std::string, CLI::App*>>& groups,
                int argc, char** argv, const Options& opt, const std::string& list,
                unsigned rounds) {
  const std::vector<IndexInfo> indexes = compare_indexes(list, index_infos());
  bool far_model = false;
  const std::vector<Token> tokens = compare_tokens(app, groups, indexes, argc, argv, far_model);

  char tmpl[] = "/tmp/dmrt-compare.XXXXXX";
  if (!mkdtemp(tmpl)) throw Error("--compare: cannot create a temporary directory");
  const std::filesystem::path dir = tmpl;
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};

  const std::string measured = opt.workload == "load" ? "load" : "run";
  std::vector<CompareRun> runs;
  std::vector<json> lines;
  int rc = 0;
  for (unsigned round = 1; round <= rounds; ++round)
    for (const IndexInfo& i : indexes)
      for (bool far : {false, true}) {
        if (far && (!far_model || i.local)) continue;
        // Without the model: the run as given when no model was given, else the model zeroed.
        const bool strip_far = far_model && !far && !i.local;
        const std::string out = (dir / fmt::format("{}-{}-{}.jsonl", round, i.name, far)).string();
        std::vector<std::string> args = {argv[0], "--index", i.name, "--json", out, "--quiet"};
        for (const Token& t : tokens) {
          if (!t.owner.empty() && t.owner != i.name) continue;
          if (t.far && strip_far) continue;
          args.insert(args.end(), t.words.begin(), t.words.end());
        }
        if (strip_far)
          for (const char* a : {"--shm-latency-ns", "0", "--shm-gbps", "0"}) args.push_back(a);
        CompareRun r{i.name, round, far, 0, load_average()};
        const int code = run_child(std::move(args));
        bool found = false;
        std::ifstream in(out);
        for (std::string line; std::getline(in, line);) {
          json j = json::parse(line, nullptr, false);
          if (j.is_discarded()) continue;
          j["compare"] = {{"round", round}, {"far_memory", far || (far_model && i.local)}};
          if (j.value("phase", "") == measured) {
            r.mops = j.value("throughput_mops", 0.0);
            found = true;
          }
          lines.push_back(std::move(j));
        }
        if (code != 0 || !found) {
          std::fprintf(stderr, "dmrt-bench --compare: %s, round %u%s: exit code %d%s\n",
                       i.name.c_str(), round, far ? " (far memory)" : "", code,
                       found ? "" : ", no result");
          rc = 1;
          continue;
        }
        runs.push_back(r);
        if (!opt.quiet)
          std::fprintf(stderr, "compare: round %u/%u %-12s%s %.3f Mops (load average %.2f)\n",
                       round, rounds, i.name.c_str(), far ? " far" : "    ", r.mops, r.load_avg);
      }

  const json summary = compare_summary(opt, indexes, runs, rounds, far_model);
  if (!opt.json.empty()) {
    for (const json& j : lines) write_json_line(opt.json, j);
    write_json_line(opt.json, summary);
  }
  if (!opt.quiet) print_compare(opt, summary, runs, rounds);
  return rc;
}

}  // namespace dmrt::bench

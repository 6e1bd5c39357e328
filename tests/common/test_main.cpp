// The main of dmrt's test programs: GoogleTest's, plus `--only=FILE[,FILE...]`, which runs only the
// tests defined in those source files. The test files of a folder share one program, compiled as
// few translation units (tests/meson.build); each meson test of a suite runs its own files.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t end = s.find(sep);
    out.emplace_back(s.substr(0, end));
    if (end == std::string_view::npos) break;
    s.remove_prefix(end + 1);
  }
  return out;
}

// GoogleTest's filter grammar: ':'-separated globs ('*', '?'), negative ones after a '-'.
bool glob(std::string_view pattern, std::string_view name) {
  if (pattern.empty()) return name.empty();
  if (pattern[0] == '*')
    return glob(pattern.substr(1), name) || (!name.empty() && glob(pattern, name.substr(1)));
  if (name.empty() || (pattern[0] != '?' && pattern[0] != name[0])) return false;
  return glob(pattern.substr(1), name.substr(1));
}

bool filter_matches(std::string_view filter, const std::string& full_name) {
  size_t dash = filter.find('-');
  std::string_view positive = filter.substr(0, dash);
  auto any = [&](std::string_view list) {
    for (const std::string& p : split(list, ':'))
      if (glob(p, full_name)) return true;
    return false;
  };
  if (!positive.empty() && !any(positive)) return false;
  return dash == std::string_view::npos || !any(filter.substr(dash + 1));
}

bool ends_with_file(std::string_view path, std::string_view file) {
  return path.size() >= file.size() && path.substr(path.size() - file.size()) == file &&
         (path.size() == file.size() || path[path.size() - file.size() - 1] == '/');
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> only;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--only=", 7) == 0)
      for (std::string& f : split(argv[i] + 7, ',')) only.push_back(std::move(f));
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  testing::InitGoogleTest(&argc, argv);
  if (only.empty()) return RUN_ALL_TESTS();

  // The tests of the named files that also pass any --gtest_filter given, as one exact filter.
  const std::string user_filter = GTEST_FLAG_GET(filter);
  const testing::UnitTest& all = *testing::UnitTest::GetInstance();
  std::string filter;
  std::vector<bool> file_seen(only.size(), false);
  for (int s = 0; s < all.total_test_suite_count(); ++s) {
    const testing::TestSuite& suite = *all.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const testing::TestInfo& info = *suite.GetTestInfo(t);
      for (size_t f = 0; f < only.size(); ++f) {
        if (!ends_with_file(info.file(), only[f])) continue;
        file_seen[f] = true;
        std::string name = std::string(suite.name()) + "." + info.name();
        if (filter_matches(user_filter, name)) filter += (filter.empty() ? "" : ":") + name;
        break;
      }
    }
  }
  for (size_t f = 0; f < only.size(); ++f)
    if (!file_seen[f]) {
      // A misspelt or dropped file would otherwise pass by running nothing.
      std::fprintf(stderr, "--only: no test of this program is defined in %s\n", only[f].c_str());
      return 2;
    }
  // An empty filter would run everything; this one matches nothing.
  GTEST_FLAG_SET(filter, filter.empty() ? std::string("-*") : filter);
  return RUN_ALL_TESTS();
}

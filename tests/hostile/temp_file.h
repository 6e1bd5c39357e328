// A path in GoogleTest's temporary folder for the hostile tests, removed when the program ends.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace dmrt::testing {

inline std::string temp_file(const std::string& name) {
  static struct Made {
    std::vector<std::string> paths;
    ~Made() {
      for (const std::string& p : paths) std::remove(p.c_str());
    }
  } made;
  made.paths.push_back(::testing::TempDir() + "dmrt_" + name);
  return made.paths.back();
}

}  // namespace dmrt::testing

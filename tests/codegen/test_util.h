// Helpers shared by the codegen tests: reading spec files from tests/codegen/specs.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>

#include "spec/chain_spec.h"

namespace fxfuse::codegen::test {

inline std::string testDir() { return FXFUSE_CODEGEN_TEST_DIR; }

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Names (without .spec) of every spec under tests/codegen/specs, sorted.
inline std::vector<std::string> specNames() {
  std::vector<std::string> names;
  if (DIR* d = ::opendir((testDir() + "/specs").c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".spec") names.push_back(n.substr(0, n.size() - 5));
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline spec::ChainSpec loadSpec(const std::string& name) {
  return spec::parseSpec(readFile(testDir() + "/specs/" + name + ".spec"));
}

}  // namespace fxfuse::codegen::test

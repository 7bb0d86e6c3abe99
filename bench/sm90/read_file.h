// The whole of a file as a string, for the offline tools of bench/sm90 (spill_report, overlap_offline).
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// fxfuse-opt: reads graph IR text (a file, or stdin for "-" or no file), runs the fusion
// pass and prints the rewritten graph and the report.
//   fxfuse-opt model.ir --print-spec
//   fxfuse-opt --report-json --options '{"extra_outputs": false}' < model.ir
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "tools/opt_driver.h"

namespace {

const char* kUsage =
    "usage: fxfuse-opt [FILE|-] [--print-spec] [--print-cuda] [--report-json] [--no-ir]\n"
    "                  [--options JSON]\n";

}  // namespace

int main(int argc, char** argv) {
  fxfuse::tools::OptFlags flags;
  std::string path = "-";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--print-spec") flags.printSpec = true;
    else if (a == "--print-cuda") flags.printCuda = true;
    else if (a == "--report-json") flags.reportJson = true;
    else if (a == "--no-ir") flags.printIr = false;
    else if (a == "--options" && i + 1 < argc) flags.optionsJson = argv[++i];
    else if (a == "-h" || a == "--help") return std::cout << kUsage, 0;
    else if (!a.empty() && a[0] == '-' && a != "-") return std::cerr << "unknown flag " << a << "\n" << kUsage, 2;
    else path = a;
  }
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::cerr << "fxfuse-opt: cannot read " << path << "\n", 2;
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  bool ok = false;
  std::string out = fxfuse::tools::runOpt(text, flags, &ok);
  (ok ? std::cout : std::cerr) << out;
  return ok ? 0 : 1;
}

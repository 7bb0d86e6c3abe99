// Text-file tests for the pass: `filecheck_runner FILE.ir` runs every case of FILE through
// fxfuse-opt's driver (--print-spec on) and checks its output.
//
// A file holds cases split by a line `# -----`. A case is IR text (docs/ir.md; `#` lines are
// comments to the parser) with directives in comments:
//   # CHECK: text        the output contains text, after the previous match
//   # CHECK-NEXT: text   … on the line right after the previous match
//   # CHECK-NOT: text    text does not occur between the previous and the next match
//   # CHECK-LABEL: text  like CHECK (names the case in failures)
//   # OPTIONS: {json}    pass options for this case
//   # FLAGS: --report-json / --no-ir
// Matching is by substring, in order. Exit status 1 and a message per failing case.
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/opt_driver.h"

namespace {

struct Directive {
  std::string kind;  // CHECK, CHECK-NEXT, CHECK-NOT, CHECK-LABEL
  std::string text;
  int line = 0;      // in the file
};

struct Case {
  int firstLine = 0;
  std::string ir;
  std::vector<Directive> checks;
  fxfuse::tools::OptFlags flags;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::vector<Case> splitCases(const std::string& text) {
  std::vector<Case> cases(1);
  cases[0].flags.printSpec = true;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::string t = trim(line);
    if (t.rfind("# -----", 0) == 0) {
      cases.emplace_back();
      cases.back().firstLine = n + 1;
      cases.back().flags.printSpec = true;
      continue;
    }
    Case& c = cases.back();
    if (c.firstLine == 0) c.firstLine = n;
    c.ir += line + "\n";
    bool known = false;
    for (const char* kind : {"CHECK-LABEL", "CHECK-NEXT", "CHECK-NOT", "CHECK", "OPTIONS", "FLAGS"}) {
      std::string prefix = std::string("# ") + kind + ":";
      if (t.rfind(prefix, 0) != 0) continue;
      known = true;
      std::string arg = trim(t.substr(prefix.size()));
      if (std::string(kind) == "OPTIONS") {
        c.flags.optionsJson = arg;
      } else if (std::string(kind) == "FLAGS") {
        if (arg.find("--report-json") != std::string::npos) c.flags.reportJson = true;
        if (arg.find("--no-ir") != std::string::npos) c.flags.printIr = false;
      } else {
        c.checks.push_back(Directive{kind, arg, n});
      }
      break;
    }
    // a misspelt or unsupported directive (CHECK-SAME, CHECK-DAG...) would otherwise check nothing
    if (!known && t.rfind("# CHECK", 0) == 0)
      throw std::runtime_error("line " + std::to_string(n) + ": unknown directive: " + t);
  }
  return cases;
}

// Returns an empty string on success, else the failure message.
std::string check(const Case& c, const std::string& output) {
  size_t pos = 0;
  std::vector<const Directive*> pendingNot;
  for (const Directive& d : c.checks) {
    if (d.kind == "CHECK-NOT") {
      pendingNot.push_back(&d);
      continue;
    }
    size_t found = output.find(d.text, pos);
    if (d.kind == "CHECK-NEXT") {
      size_t lineEnd = output.find('\n', pos == 0 ? 0 : pos);
      size_t nextEnd = lineEnd == std::string::npos ? std::string::npos : output.find('\n', lineEnd + 1);
      if (found == std::string::npos || lineEnd == std::string::npos || found <= lineEnd || found > nextEnd)
        return "line " + std::to_string(d.line) + ": CHECK-NEXT: '" + d.text + "' not on the next line";
    }
    if (found == std::string::npos)
      return "line " + std::to_string(d.line) + ": " + d.kind + ": '" + d.text + "' not found";
    for (const Directive* n : pendingNot) {
      size_t bad = output.find(n->text, pos);
      if (bad != std::string::npos && bad < found)
        return "line " + std::to_string(n->line) + ": CHECK-NOT: '" + n->text + "' found";
    }
    pendingNot.clear();
    pos = found + d.text.size();
  }
  for (const Directive* n : pendingNot)
    if (output.find(n->text, pos) != std::string::npos)
      return "line " + std::to_string(n->line) + ": CHECK-NOT: '" + n->text + "' found";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: filecheck_runner FILE.ir\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<Case> cases;
  try {
    cases = splitCases(text);
  } catch (const std::runtime_error& e) {
    std::cerr << argv[1] << ": " << e.what() << "\n";
    return 1;
  }
  int failures = 0, run = 0;
  for (const Case& c : cases) {
    if (c.checks.empty()) continue;  // a file header or a trailing separator
    ++run;
    bool ok = false;
    std::string output = fxfuse::tools::runOpt(c.ir, c.flags, &ok);
    std::string failure = check(c, output);
    if (failure.empty()) continue;
    ++failures;
    std::cerr << argv[1] << ": case at line " << c.firstLine << ": " << failure << "\n--- output ---\n"
              << output << "--------------\n";
  }
  std::cout << argv[1] << ": " << run - failures << "/" << run << " cases passed\n";
  return failures == 0 && run > 0 ? 0 : 1;
}

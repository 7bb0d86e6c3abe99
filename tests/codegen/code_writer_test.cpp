#include "codegen/code_writer.h"

#include <gtest/gtest.h>

namespace fxfuse::codegen {
namespace {

TEST(CodeWriter, IndentsBlocksAndChains) {
  CodeWriter w;
  w.line("// {}", "header");
  {
    auto fn = w.block("void f(int {})", "x");
    w.line("int y = {} + 1;", "x");
    auto branch = w.block("if (y > {})", 2);
    w.line("y = 0;");
    branch.chain("else");
    w.line("y = 1;");
  }
  {
    auto s = w.blockSemi("struct S");
    w.line("int a;");
  }
  w.blank();
  w.verbatim("raw\ntext");
  EXPECT_EQ(w.str(),
            "// header\n"
            "void f(int x) {\n"
            "  int y = x + 1;\n"
            "  if (y > 2) {\n"
            "    y = 0;\n"
            "  } else {\n"
            "    y = 1;\n"
            "  }\n"
            "}\n"
            "struct S {\n"
            "  int a;\n"
            "};\n"
            "\n"
            "raw\ntext\n");
}

TEST(CodeWriter, ExplicitCloseIsIdempotent) {
  CodeWriter w;
  auto b = w.block("if (a)");
  w.line("b();");
  b.close();
  b.close();
  w.line("c();");
  EXPECT_EQ(w.str(), "if (a) {\n  b();\n}\nc();\n");
}

}  // namespace
}  // namespace fxfuse::codegen

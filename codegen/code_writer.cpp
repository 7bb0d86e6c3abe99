#include "codegen/code_writer.h"

namespace fxfuse::codegen {

void CodeWriter::raw(const std::string& text) {
  if (!text.empty()) out_.append(static_cast<size_t>(indent_) * 2, ' ');
  out_ += text;
  out_ += '\n';
}

void CodeWriter::blank() { out_ += '\n'; }

void CodeWriter::verbatim(const std::string& text) {
  out_ += text;
  if (!text.empty() && text.back() != '\n') out_ += '\n';
}

void CodeWriter::Block::close() {
  if (!open_) return;
  open_ = false;
  --w_.indent_;
  w_.raw(tail_);
}

}  // namespace fxfuse::codegen

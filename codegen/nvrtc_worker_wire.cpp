// The worker's wire format (nvrtc_worker.h): a 4-byte tag naming the message and its version, then
// every field as a little-endian 64-bit length and its bytes. Decoding checks every length against
// what is left, so a truncated message (a worker that died mid-write) is refused, never half-read.
#include <cstdint>

#include "codegen/nvrtc_worker.h"

namespace fxfuse::codegen {
namespace {

constexpr char kRequestTag[] = "FXQ1";
constexpr char kAnswerTag[] = "FXA1";

void put(std::string* out, const std::string& field) {
  uint64_t n = field.size();
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out->append(field);
}

class Reader {
 public:
  Reader(const std::string& bytes, const char* tag) : bytes_(bytes), ok_(bytes.compare(0, 4, tag) == 0) {}
  bool get(std::string* field) {
    if (!ok_ || bytes_.size() - pos_ < 8) return ok_ = false;
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    pos_ += 8;
    if (bytes_.size() - pos_ < n) return ok_ = false;
    field->assign(bytes_, pos_, n);
    pos_ += n;
    return true;
  }
  bool getInt(long long* v) {
    std::string s;
    if (!get(&s)) return false;
    try {
      size_t used = 0;
      *v = std::stoll(s, &used);
      return ok_ = used == s.size();
    } catch (const std::exception&) {
      return ok_ = false;
    }
  }
  bool atEnd() const { return ok_ && pos_ == bytes_.size(); }
  // At most how many more fields can follow (each takes at least its 8-byte length).
  size_t fieldsLeft() const { return ok_ ? (bytes_.size() - pos_) / 8 : 0; }

 private:
  const std::string& bytes_;
  size_t pos_ = 4;
  bool ok_;
};

}  // namespace

std::string encodeRequest(const WorkerRequest& r) {
  std::string out = kRequestTag;
  put(&out, r.library);
  put(&out, r.name);
  put(&out, r.code);
  put(&out, r.want_ptx ? "1" : "0");
  put(&out, std::to_string(r.options.size()));
  for (const std::string& o : r.options) put(&out, o);
  return out;
}

bool decodeRequest(const std::string& bytes, WorkerRequest* r) {
  Reader in(bytes, kRequestTag);
  std::string want_ptx;
  long long n = 0;
  if (!(in.get(&r->library) && in.get(&r->name) && in.get(&r->code) && in.get(&want_ptx) && in.getInt(&n)) || n < 0 ||
      static_cast<unsigned long long>(n) > in.fieldsLeft())
    return false;  // a count no message of this size can hold is refused before anything is allocated
  r->want_ptx = want_ptx == "1";
  r->options.assign(static_cast<size_t>(n), "");
  for (std::string& o : r->options)
    if (!in.get(&o)) return false;
  return in.atEnd();
}

std::string encodeAnswer(const WorkerAnswer& a) {
  std::string out = kAnswerTag;
  put(&out, std::to_string(a.result));
  for (const std::string* f : {&a.result_name, &a.log, &a.cubin, &a.ptx, &a.failure}) put(&out, *f);
  return out;
}

bool decodeAnswer(const std::string& bytes, WorkerAnswer* a) {
  Reader in(bytes, kAnswerTag);
  long long result = 0;
  if (!in.getInt(&result)) return false;
  a->result = static_cast<int>(result);
  for (std::string* f : {&a->result_name, &a->log, &a->cubin, &a->ptx, &a->failure})
    if (!in.get(f)) return false;
  return in.atEnd();
}

}  // namespace fxfuse::codegen

// addmmCallAt: the values that stand for one eager addmm / baddbmm call (docs/spec.md `addmm`). The validator holds
// a marked value to this form, so that the CPU reference can make the call from them (runtime/reference_eval.cpp)
// and compute the same numbers the ops as written do, up to the call's own summation order and scaling.
#include <algorithm>
#include <string>

#include "spec/chain_spec.h"

namespace fxfuse::spec {
namespace {

bool isConstF32(const ChainSpec& spec, int id) {
  const Value& v = spec.values[id];
  return v.kind == ValueKind::Const && v.dtype == DType::F32;
}

// `mul %of %const : f32`: a scalar of the call (alpha, beta) as the pass writes it; the const's id, else -1.
int scaleConst(const ChainSpec& spec, int id, int of) {
  const Value& v = spec.values[id];
  const bool scales = v.kind == ValueKind::Op && v.op == "mul" && v.dtype == DType::F32 && v.operands.size() == 2 &&
                      v.operands[0] == of && isConstF32(spec, v.operands[1]);
  return scales ? v.operands[1] : -1;
}

// How many times `id` is read: as an operand (each occurrence) and as an output.
int readCount(const ChainSpec& spec, int id) {
  int reads = static_cast<int>(std::count(spec.outputs.begin(), spec.outputs.end(), id));
  for (const Value& v : spec.values) reads += static_cast<int>(std::count(v.operands.begin(), v.operands.end(), id));
  return reads;
}

}  // namespace

AddmmCall addmmCallAt(const ChainSpec& spec, int value, std::string* why) {
  auto broken = [&](const std::string& rule) {
    if (why) *why = "a value marked addmm is one eager addmm's result: " + rule;
    return AddmmCall{};
  };
  const Value& r = spec.values[value];
  if (r.kind != ValueKind::Op || (r.op != "add" && r.op != "mul") || r.operands.size() != 2)
    return broken("an add of the product and its bias, or a mul of the product and alpha");
  AddmmCall call;
  call.result = value;
  call.product = spec.mmIndex();
  const Value& product = spec.values[call.product];
  if (product.dtype != DType::F32) return broken("its product (the mm) is f32, unrounded");
  const DType type = spec.values[product.operands[0]].dtype;  // both operands' (the validator's mm rule)
  if (r.dtype != type)
    return broken(std::string("of its operands' type ") + dtypeName(type) + ", not " + dtypeName(r.dtype));
  // (alpha and beta 0: eager's call reads no product, no bias, where the ops as written would read a NaN in them)
  auto nonZero = [&](int constant) { return spec.values[constant].constant != 0.0; };
  if (r.op == "mul") {  // beta 0: the product times alpha, no bias operand
    if (r.operands[0] != call.product || !isConstF32(spec, r.operands[1]) || !nonZero(r.operands[1]))
      return broken("a mul is `mul <product> <alpha> : <type>`, alpha a nonzero f32 const");
    call.alphaMul = value;
    call.alpha = r.operands[1];
  } else {
    int productSide = r.operands[0], biasSide = r.operands[1];
    if (productSide != call.product) {
      call.alpha = scaleConst(spec, productSide, call.product);
      if (call.alpha < 0 || !nonZero(call.alpha))
        return broken("an add's first operand is the product or `mul <product> <alpha> : f32`, alpha a nonzero const");
      call.alphaMul = productSide;
    }
    const Value& scaled = spec.values[biasSide];
    if (scaled.kind == ValueKind::Op && !scaled.operands.empty()) {
      call.beta = scaleConst(spec, biasSide, scaled.operands[0]);
      if (call.beta < 0 || !nonZero(call.beta))
        return broken("an add's second operand is the bias or `mul <bias> <beta> : f32`, beta a nonzero const");
      call.betaMul = biasSide;
      biasSide = scaled.operands[0];
    }
    const Value& bias = spec.values[biasSide];
    if (bias.kind != ValueKind::Input && bias.kind != ValueKind::Const)
      return broken("its bias is an input or a const");
    if (bias.dtype != type)
      return broken(std::string("its bias is of its operands' type ") + dtypeName(type) + ", not " +
                    dtypeName(bias.dtype));
    call.bias = biasSide;
  }
  // what the call computes inside is read nowhere else: the reference does not compute it
  for (int inside : {call.product, call.alphaMul, call.betaMul})
    if (inside >= 0 && inside != value && readCount(spec, inside) != 1)
      return broken("%" + std::to_string(inside) + ", a part of the call, is read by the call alone");
  return call;
}

int markedAddmmResult(const ChainSpec& spec) {
  for (size_t i = 0; i < spec.values.size(); ++i)
    if (spec.values[i].addmmResult) return static_cast<int>(i);
  return -1;
}

}  // namespace fxfuse::spec

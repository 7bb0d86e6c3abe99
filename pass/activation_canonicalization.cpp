#include "pass/activation_canonicalization.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

namespace fxfuse::pass {
namespace {

using spec::ChainSpec;
using spec::DType;
using spec::Value;
using spec::ValueKind;

// The constants of torch's decompositions (torch/_refs/nn/functional.py and torch/_decomp:
// gelu), as the doubles Python hands to the graph: kKappa = 0.044715, kBeta = M_SQRT2 *
// M_2_SQRTPI * 0.5 (= sqrt(2/pi)), kAlpha = M_SQRT1_2. Eager's composite kernels compute with
// the same values in f32 opmath, so an f32 const of exactly these doubles is what eager uses;
// anything else (a hand-rounded 0.7978845608, a 0.4 for 0.5) is some other function.
constexpr double kHalf = 0.5;
constexpr double kOne = 1.0;
constexpr double kGeluKappa = 0.044715;
constexpr double kGeluBeta = 0.7978845608028654;
constexpr double kGeluAlpha = 0.7071067811865476;

// What a pattern matched: the activation's input x, and the values it would replace.
struct Match {
  int x = -1;
  std::vector<int> ops;     // the pattern's ops, the top one included
  std::vector<int> consts;  // its constant operands
};

// Structural matching on a spec, one value at a time. Each method either matches, recording
// into `m`, or returns false; `commutative` restores `m` before it tries the other order and
// when neither order matches, so a failed alternative leaves nothing behind.
class Matcher {
 public:
  explicit Matcher(const ChainSpec& spec) : spec_(spec) {}

  // `id` is an f32 op `name`: its operands (and `id` is recorded), else null. Requiring f32
  // here is what makes every intermediate of a pattern an unrounded opmath value.
  const std::vector<int>* op(int id, const char* name, Match& m) const {
    const Value& v = spec_.values[id];
    if (v.kind != ValueKind::Op || v.op != name || v.dtype != DType::F32) return nullptr;
    m.ops.push_back(id);
    return &v.operands;
  }

  // `id` is the f32 const `c`, exactly.
  bool constant(int id, double c, Match& m) const {
    const Value& v = spec_.values[id];
    if (v.kind != ValueKind::Const || v.dtype != DType::F32 || v.constant != c) return false;
    m.consts.push_back(id);
    return true;
  }

  // `id` is the activation's input: the first call binds it, every later one must name the
  // same value (exp(-y) with y != x is not SiLU). It is an f32 value that is not a const; a
  // 16-bit x reaches the pattern through its `convert … : f32`.
  bool input(int id, Match& m) const {
    if (m.x >= 0) return m.x == id;
    const Value& v = spec_.values[id];
    if (v.kind == ValueKind::Const || v.dtype != DType::F32) return false;
    m.x = id;
    return true;
  }

  // A unary f32 op `name` whose operand satisfies `f`.
  template <class F>
  bool unary(int id, const char* name, Match& m, F f) const {
    const Match saved = m;
    const std::vector<int>* ops = op(id, name, m);
    if (ops && ops->size() == 1 && f((*ops)[0])) return true;
    m = saved;
    return false;
  }

  // A commutative binary f32 op (mul, add) whose operands satisfy `f(a, b)` in either order.
  template <class F>
  bool commutative(int id, const char* name, Match& m, F f) const {
    const Match saved = m;
    const std::vector<int>* ops = op(id, name, m);
    if (!ops || ops->size() != 2) {
      m = saved;
      return false;
    }
    const Match base = m;
    if (f((*ops)[0], (*ops)[1])) return true;
    m = base;
    if (f((*ops)[1], (*ops)[0])) return true;
    m = saved;
    return false;
  }

 private:
  const ChainSpec& spec_;
};

// SiLU as Inductor's decomposition writes it: x / (exp(-x) + 1).
bool siluDiv(const Matcher& p, int top, Match& m) {
  const std::vector<int>* ops = p.op(top, "div", m);
  if (!ops || ops->size() != 2 || !p.input((*ops)[0], m)) return false;
  return p.commutative((*ops)[1], "add", m, [&](int e, int one) {
    return p.constant(one, kOne, m) &&
           p.unary(e, "exp", m, [&](int n) { return p.unary(n, "neg", m, [&](int x) { return p.input(x, m); }); });
  });
}

// SiLU as torch._decomp writes it: x * sigmoid(x).
bool siluSigmoid(const Matcher& p, int top, Match& m) {
  return p.commutative(top, "mul", m, [&](int x, int s) {
    return p.input(x, m) && p.unary(s, "sigmoid", m, [&](int y) { return p.input(y, m); });
  });
}

// 0.5 * x, the left factor of both GELU forms.
bool halfX(const Matcher& p, int v, Match& m) {
  return p.commutative(v, "mul", m, [&](int x, int c) { return p.input(x, m) && p.constant(c, kHalf, m); });
}

// GELU(tanh) as torch decomposes it: (0.5 * x) * (1 + tanh(kBeta * (x + kKappa * (x * x * x)))).
bool geluTanh(const Matcher& p, int top, Match& m) {
  auto cube = [&](int v) {
    return p.commutative(v, "mul", m, [&](int sq, int x) {
      return p.commutative(sq, "mul", m, [&](int a, int b) { return p.input(a, m) && p.input(b, m); }) &&
             p.input(x, m);
    });
  };
  auto inner = [&](int v) {
    return p.commutative(v, "add", m, [&](int x, int k) {
      return p.input(x, m) &&
             p.commutative(k, "mul", m, [&](int c, int kappa) { return p.constant(kappa, kGeluKappa, m) && cube(c); });
    });
  };
  auto onePlusTanh = [&](int v) {
    return p.commutative(v, "add", m, [&](int t, int one) {
      return p.constant(one, kOne, m) && p.unary(t, "tanh", m, [&](int s) {
               return p.commutative(s, "mul", m, [&](int i, int beta) { return p.constant(beta, kGeluBeta, m) && inner(i); });
             });
    });
  };
  return p.commutative(top, "mul", m, [&](int h, int t) { return halfX(p, h, m) && onePlusTanh(t); });
}

// GELU (erf, approximate="none") as torch decomposes it: (x * 0.5) * (1 + erf(x * kAlpha)).
bool geluErf(const Matcher& p, int top, Match& m) {
  auto onePlusErf = [&](int v) {
    return p.commutative(v, "add", m, [&](int e, int one) {
      return p.constant(one, kOne, m) && p.unary(e, "erf", m, [&](int s) {
               return p.commutative(s, "mul", m, [&](int x, int a) { return p.input(x, m) && p.constant(a, kGeluAlpha, m); });
             });
    });
  };
  return p.commutative(top, "mul", m, [&](int h, int e) { return halfX(p, h, m) && onePlusErf(e); });
}

struct Pattern {
  const char* op;  // the composite spec op it becomes
  bool (*match)(const Matcher&, int, Match&);
};

constexpr Pattern kPatterns[] = {
    {"silu", siluDiv}, {"silu", siluSigmoid}, {"gelu_tanh", geluTanh}, {"gelu", geluErf}};

// users[v]: the values reading v, once per operand occurrence.
std::vector<std::vector<int>> usersOf(const ChainSpec& spec) {
  std::vector<std::vector<int>> users(spec.values.size());
  for (size_t i = 0; i < spec.values.size(); ++i)
    for (int o : spec.values[i].operands) users[o].push_back(static_cast<int>(i));
  return users;
}

bool isOutput(const ChainSpec& spec, int v) {
  return std::find(spec.outputs.begin(), spec.outputs.end(), v) != spec.outputs.end();
}

// Removes the candidates nothing reads any more (repeatedly: removing one may free its operands)
// and renumbers what is left. Returns old id -> new id, -1 for a removed value.
std::vector<int> removeDead(ChainSpec& spec, const std::set<int>& candidates) {
  const int n = static_cast<int>(spec.values.size());
  std::vector<int> uses(n, 0);
  for (const Value& v : spec.values)
    for (int o : v.operands) ++uses[o];
  for (int o : spec.outputs) ++uses[o];
  std::vector<bool> removed(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (int c : candidates) {
      if (removed[c] || uses[c] != 0) continue;
      removed[c] = true;
      for (int o : spec.values[c].operands) --uses[o];
      changed = true;
    }
  }
  std::vector<int> renumber(n, -1);
  std::vector<Value> kept;
  for (int i = 0; i < n; ++i) {
    if (removed[i]) continue;
    renumber[i] = static_cast<int>(kept.size());
    kept.push_back(std::move(spec.values[i]));
  }
  for (Value& v : kept)
    for (int& o : v.operands) o = renumber[o];
  for (int& o : spec.outputs) o = renumber[o];
  spec.values = std::move(kept);
  return renumber;
}

// One rewrite with `top` as the pattern's last f32 op, if some pattern matches there and the
// result is exactly eager's composite op. `users`: usersOf(spec) as it is. Returns the
// renumbering it made.
std::optional<std::vector<int>> rewriteAt(ChainSpec& spec, int top, const std::vector<std::vector<int>>& users) {
  const Matcher matcher(spec);
  for (const Pattern& pattern : kPatterns) {
    if (spec::opArity(pattern.op) != 1) continue;  // not (or no longer) a spec op
    Match m;
    if (!pattern.match(matcher, top, m)) continue;

    // Every intermediate is read only by the pattern and is not returned: the rewrite drops
    // it, and a value seen outside would expose an f32 intermediate the composite op lacks.
    const std::set<int> members(m.ops.begin(), m.ops.end());
    bool contained = true;
    for (int v : members) {
      if (v == top) continue;
      if (isOutput(spec, v)) contained = false;
      for (int u : users[v])
        if (!members.count(u)) contained = false;
    }
    if (!contained) continue;

    std::set<int> candidates(members.begin(), members.end());
    candidates.insert(m.consts.begin(), m.consts.end());
    Value composite;
    composite.kind = ValueKind::Op;
    composite.op = pattern.op;

    // 16-bit x: `convert %s : f32`, the pattern, and the top read only by one `convert … :
    // <s's dtype>` -- eager's op on the 16-bit tensor (f32 opmath, rounded once). The final
    // convert becomes `<op> %s : <s's dtype>`; x's convert goes too unless something else reads it.
    const Value& xv = spec.values[m.x];
    int rounded = -1;
    if (xv.kind == ValueKind::Op && xv.op == "convert" && xv.operands.size() == 1 &&
        spec::isHalfFloat(spec.values[xv.operands[0]].dtype) && !isOutput(spec, top) && users[top].size() == 1) {
      const Value& u = spec.values[users[top][0]];
      if (u.kind == ValueKind::Op && u.op == "convert" && u.dtype == spec.values[xv.operands[0]].dtype)
        rounded = users[top][0];
    }
    if (rounded >= 0) {
      composite.operands = {xv.operands[0]};
      composite.dtype = spec.values[rounded].dtype;
      candidates.insert(m.x);
      spec.values[rounded] = composite;
    } else {
      // f32 x (or a rounding the composite op does not do): the op on the f32 value, in f32.
      composite.operands = {m.x};
      composite.dtype = DType::F32;
      candidates.erase(top);
      spec.values[top] = composite;
    }
    return removeDead(spec, candidates);
  }
  return std::nullopt;
}

}  // namespace

std::vector<int> canonicalizeActivations(ChainSpec& spec) {
  std::vector<int> remap(spec.values.size());
  std::iota(remap.begin(), remap.end(), 0);
  // Each rewrite removes at least one value, so this ends; after one, scan again from the start
  // (a rewritten activation may complete the input of another).
  for (bool changed = true; changed;) {
    changed = false;
    const std::vector<std::vector<int>> users = usersOf(spec);  // until the next rewrite
    for (int top = 0; top < static_cast<int>(spec.values.size()); ++top) {
      std::optional<std::vector<int>> renumber = rewriteAt(spec, top, users);
      if (!renumber) continue;
      for (int& r : remap)
        if (r >= 0) r = (*renumber)[r];
      changed = true;
      break;
    }
  }
  return remap;
}

}  // namespace fxfuse::pass

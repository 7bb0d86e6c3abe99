// The thin pass driver: every GEMM anchor, in graph order, is planned (chain_planner.cpp);
// accepted plans claim their nodes so later chains do not take them; then one rewrite.
#include "pass/run_pass.h"

#include <algorithm>
#include <set>

#include "pass/chain_planner.h"
#include "pass/gemm_anchor.h"
#include "pass/ir_text.h"
#include "pass/json_writer.h"
#include "pass/rewriter.h"

namespace fxfuse {
namespace pass {
namespace {

// Every node the given nodes are computed from, themselves included.
std::set<int> ancestors(const GraphIndex& index, const std::vector<std::string>& names) {
  std::set<int> seen;
  std::vector<int> stack;
  for (const std::string& n : names) stack.push_back(index.find(n));
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (id < 0 || !seen.insert(id).second) continue;
    for (int p : index.operands(id)) stack.push_back(p);
  }
  return seen;
}

bool readsFrom(const GraphIndex& index, const FusionPlan& reader, const FusionPlan& writer) {
  std::set<int> up = ancestors(index, reader.inputs);
  return std::any_of(writer.replaced.begin(), writer.replaced.end(), [&](int n) { return up.count(n) > 0; });
}

// Two chains that each read what the other computes cannot both become ops:
//   a = relu(mm1); b = a + x  |  x = relu(mm2); z = x * a   (each op needs the other first)
// `readsFrom` follows the original graph transitively, so a loop through several chains
// shows up as such a pair too.
int cycleWith(const GraphIndex& index, const FusionPlan& plan, const std::vector<GemmOutcome>& earlier) {
  for (size_t j = 0; j < earlier.size(); ++j) {
    if (!earlier[j].plan) continue;
    if (readsFrom(index, plan, *earlier[j].plan) && readsFrom(index, *earlier[j].plan, plan)) return static_cast<int>(j);
  }
  return -1;
}

}  // namespace

PassResult runPass(const ir::Graph& graph, const PassOptions& options) {
  PassResult result;
  GraphIndex index(graph);
  std::vector<bool> claimed(graph.nodes.size(), false);
  std::vector<GemmOutcome> outcomes;
  result.counters["gemms_seen"] = 0;
  result.counters["chains_fused"] = 0;
  for (int id = 0; id < index.size(); ++id) {
    if (std::string other = otherGemmOp(index.node(id)); !other.empty()) {
      // a GEMM the pass has no chain form for: reported, so that every GEMM has a reason
      ++result.counters["gemms_seen"];
      ++result.counters["reject.unsupported_gemm_op"];
      ReportEntry entry;
      entry.gemm = index.node(id).name;
      entry.reason = "unsupported_gemm_op";
      entry.detail = other + " (" + index.node(id).target + "): not a form the fused kernels take";
      result.report.push_back(std::move(entry));
      continue;
    }
    if (!isGemmAnchor(index.node(id)) || claimed[id]) continue;
    ++result.counters["gemms_seen"];
    GemmOutcome o = planChain(index, id, claimed, options);
    int other = o.plan ? cycleWith(index, *o.plan, outcomes) : -1;
    if (other >= 0) {
      o.rejection = Rejection{"cycle", "this chain and the chain of %" + outcomes[other].gemm + " each read the other's result"};
      o.plan.reset();
    }
    ReportEntry entry;
    entry.gemm = o.gemm;
    entry.notes = o.notes;
    entry.prologueStops = o.prologueStops;
    if (o.plan) {
      for (int n : o.plan->replaced) claimed[n] = true;
      entry.fused = true;
      entry.rewrite = static_cast<int>(result.rewrites.size());
      entry.chain = o.plan->chain;
      ++result.counters["chains_fused"];
      if (o.plan->unfusedPath) ++result.counters["chains_for_unfused_path"];
      if (o.plan->outputs.size() > 1) result.counters["extra_outputs"] += o.plan->outputs.size() - 1;
      RewriteRecord r;
      r.id = entry.rewrite;
      for (int n : o.plan->replaced) r.replaced.push_back(index.node(n).name);
      r.inputs = o.plan->inputs;
      for (int n : o.plan->outputs) r.outputs.push_back(index.node(n).name);
      r.spec = o.plan->specText;
      result.rewrites.push_back(std::move(r));
    } else {
      entry.reason = o.rejection.reason;
      entry.detail = o.rejection.detail;
      ++result.counters["reject." + o.rejection.reason];
    }
    result.report.push_back(std::move(entry));
    outcomes.push_back(std::move(o));
  }
  std::vector<const FusionPlan*> plans;
  for (const GemmOutcome& o : outcomes)
    if (o.plan) plans.push_back(&*o.plan);
  std::vector<std::string> names;
  result.rewritten = applyPlans(index, plans, &names);
  for (size_t i = 0; i < names.size(); ++i) result.rewrites[i].opNode = names[i];
  return result;
}

std::string resultToJson(const PassResult& r, const std::vector<std::string>& warnings) {
  JsonWriter w;
  w.beginObject();
  w.key("rewrites").beginArray();
  for (const RewriteRecord& rw : r.rewrites) {
    w.beginObject();
    w.key("id").value(rw.id);
    w.key("op_node").value(rw.opNode);
    w.key("replaced").stringArray(rw.replaced);
    w.key("inputs").stringArray(rw.inputs);
    w.key("outputs").stringArray(rw.outputs);
    w.key("spec").value(rw.spec);
    w.endObject();
  }
  w.endArray();
  w.key("report").beginArray();
  for (const ReportEntry& e : r.report) {
    w.beginObject();
    w.key("gemm").value(e.gemm);
    w.key("status").value(e.fused ? "fused" : "not_fused");
    if (e.fused) {
      w.key("rewrite").value(e.rewrite);
      w.key("chain").value(e.chain);
    } else {
      w.key("reason").value(e.reason);
      w.key("detail").value(e.detail);
    }
    w.key("notes").stringArray(e.notes);
    w.key("prologue_stops").stringArray(e.prologueStops);
    w.endObject();
  }
  w.endArray();
  w.key("counters").beginObject();
  for (const auto& [name, count] : r.counters) w.key(name).value(count);
  w.endObject();
  w.key("rewritten_ir").value(ir::printGraph(r.rewritten));
  w.key("warnings").stringArray(warnings);
  w.endObject();
  return w.str();
}

}  // namespace pass

namespace {
// kind: "options" (the caller's options are invalid: the caller raises), "graph" (the IR text does
// not parse) or "internal" (a broken invariant): for the last two the caller leaves the graph as it is.
std::string errorJson(const std::string& kind, const std::string& message) {
  pass::JsonWriter w;
  w.beginObject();
  w.key("error").value(message);
  w.key("error_kind").value(kind);
  w.key("rewrites").beginArray().endArray();
  w.key("report").beginArray().endArray();
  w.key("counters").beginObject().endObject();
  w.key("rewritten_ir").value("");
  w.key("warnings").beginArray().endArray();
  w.endObject();
  return w.str();
}
}  // namespace

std::string runPassJson(const std::string& irText, const std::string& optionsJson) {
  pass::PassOptions options;
  std::vector<std::string> warnings;
  std::string error;
  if (!pass::parsePassOptions(optionsJson, &options, &warnings, &error)) return errorJson("options", error);
  ir::ParseError perr;
  std::optional<ir::Graph> graph = ir::parseGraph(irText, &perr);
  if (!graph) return errorJson("graph", perr.str());
  try {
    return pass::resultToJson(pass::runPass(*graph, options), warnings);
  } catch (const std::exception& e) {
    // Internal invariant broken: report it (with the input kept by the caller) instead of
    // taking the Python process down.
    return errorJson("internal", std::string("internal error in fxfuse pass (please report a bug): ") + e.what());
  }
}

}  // namespace fxfuse

// Shared by the parser and validateSpec: the validator reports where a rule failed and
// the caller turns that into its own message ("line L: …" or "%i: …").
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>

#include "spec/chain_spec.h"

namespace fxfuse::spec {

struct Loc {
  int value = -1;   // index of the offending value, or -1
  int output = -1;  // index into ChainSpec::outputs, or -1
  int expect = -1;  // index into ChainSpec::expects, or -1
};

// Must throw; the validator never continues after a failure.
using ErrorSink = std::function<void(Loc, const std::string&)>;

void validateWith(ChainSpec& spec, const ErrorSink& fail);

}  // namespace fxfuse::spec

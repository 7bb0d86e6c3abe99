// FXFUSE_* on/off switches read from the environment, one spelling for all of them (the Python
// side's fxfuse/env_flags.py reads the same): "1", "true", "yes", "on" in any case turn a switch
// on; unset, empty, "0", "false", "no", "off" and anything else leave it off. (Before, "false" turned
// FXFUSE_BACKGROUND_COMPILE on, since anything but "" and "0" did.)
#pragma once

#include <cctype>
#include <cstdlib>
#include <string>

namespace fxfuse {

inline bool envFlag(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s;
  for (const char* c = v; *c; ++c) s += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

}  // namespace fxfuse

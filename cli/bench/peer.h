// Running a peer (a PyTorch script in bench/peers/) from a benchmark, in the same run.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "shoal/core/error.h"

namespace shoal::cli {

// Runs `cmd`, echoing its output prefixed "  peer| ", and returns its last line that parses as
// a JSON object; throws when it fails or prints none.
inline nlohmann::json run_peer_json(const std::string& cmd) {
  std::FILE* p = popen(cmd.c_str(), "r");
  SHOAL_CHECK(p != nullptr, "cannot run the peer: {}", cmd);
  nlohmann::json last;
  char line[8192];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    std::fputs(("  peer| " + std::string(line)).c_str(), stdout);
    if (line[0] == '{') {
      auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_object()) last = std::move(j);
    }
  }
  const int rc = pclose(p);
  SHOAL_CHECK(rc == 0 && last.is_object(), "the peer failed (exit status {}): {}", rc, cmd);
  return last;
}

}  // namespace shoal::cli

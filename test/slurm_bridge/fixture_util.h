#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "nlohmann/json.hpp"

namespace onequeue::slurm::testing {

inline std::string ReadFixtureText(const std::string& relative) {
  std::ifstream in(std::string(SLURM_FIXTURES_DIR) + "/" + relative);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json ReadFixture(const std::string& relative) {
  return nlohmann::json::parse(ReadFixtureText(relative));
}

}  // namespace onequeue::slurm::testing

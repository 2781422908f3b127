#include "scheduler/oq_simulate.h"

#include <cstdio>

namespace onequeue::cli {

int RunSimulate(const std::vector<std::string>& args) {
  std::fprintf(stderr, "oq simulate: not built yet\n");
  return 1;
}

}  // namespace onequeue::cli

// Slurm hostlist expressions: "n[1-3,5],gpu[01-02],login" <-> a list of names.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace onequeue::slurm {

// Expands a hostlist expression. Zero padding is kept ("n[01-03]" -> n01 n02 n03). Only one
// bracket group per name is supported (Slurm's own node names rarely use more); a malformed
// expression or one that would expand to more than `max_names` names is an InvalidArgument error.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expr,
                                                        size_t max_names = 1 << 20);

// The inverse, for messages and for "nodelist" in requests: consecutive numeric suffixes with
// the same prefix and width are folded into ranges. Order of first appearance is kept per prefix.
std::string CompressHostlist(const std::vector<std::string>& names);

}  // namespace onequeue::slurm

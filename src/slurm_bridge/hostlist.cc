#include "slurm_bridge/hostlist.h"

#include <cctype>
#include <map>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace onequeue::slurm {
namespace {

// Splits at commas that are not inside brackets.
absl::StatusOr<std::vector<std::string>> SplitTopLevel(const std::string& expr) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : expr) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0 || depth > 1)
      return absl::InvalidArgumentError(absl::StrCat("unbalanced brackets in hostlist \"", expr, "\""));
    if (c == ',' && depth == 0) {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      current.push_back(c);
    }
  }
  if (depth != 0)
    return absl::InvalidArgumentError(absl::StrCat("unbalanced brackets in hostlist \"", expr, "\""));
  if (!current.empty()) parts.push_back(current);
  return parts;
}

absl::Status ExpandOne(const std::string& part, size_t max_names, std::vector<std::string>& out) {
  const size_t open = part.find('[');
  if (open == std::string::npos) {
    out.push_back(part);
    return absl::OkStatus();
  }
  const size_t close = part.find(']', open);
  if (close == std::string::npos || part.find('[', close) != std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("unsupported hostlist element \"", part, "\""));
  const std::string prefix = part.substr(0, open);
  const std::string suffix = part.substr(close + 1);
  const std::string inner = part.substr(open + 1, close - open - 1);
  for (absl::string_view range : absl::StrSplit(inner, ',')) {
    if (range.empty()) return absl::InvalidArgumentError(absl::StrCat("empty range in \"", part, "\""));
    std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    if (ends.size() > 2 || ends[0].empty() || (ends.size() == 2 && ends[1].empty()))
      return absl::InvalidArgumentError(absl::StrCat("bad range \"", range, "\" in \"", part, "\""));
    uint64_t lo = 0, hi = 0;
    if (ends[0].size() > 9 || !absl::SimpleAtoi(ends[0], &lo) ||
        (ends.size() == 2 && (ends[1].size() > 9 || !absl::SimpleAtoi(ends[1], &hi))))
      return absl::InvalidArgumentError(absl::StrCat("bad number in range \"", range, "\""));
    if (ends.size() == 1) hi = lo;
    if (hi < lo) return absl::InvalidArgumentError(absl::StrCat("descending range \"", range, "\""));
    if (out.size() + (hi - lo + 1) > max_names)
      return absl::InvalidArgumentError(absl::StrCat("hostlist \"", part, "\" expands to too many names"));
    const size_t width = ends[0].size();  // "01" keeps its zero padding
    for (uint64_t i = lo; i <= hi; ++i) {
      std::string num = std::to_string(i);
      if (num.size() < width) num.insert(0, width - num.size(), '0');
      out.push_back(absl::StrCat(prefix, num, suffix));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostlist(const std::string& expr, size_t max_names) {
  std::vector<std::string> out;
  absl::StatusOr<std::vector<std::string>> parts = SplitTopLevel(expr);
  if (!parts.ok()) return parts.status();
  for (const std::string& part : *parts) {
    absl::Status s = ExpandOne(part, max_names, out);
    if (!s.ok()) return s;
  }
  return out;
}

std::string CompressHostlist(const std::vector<std::string>& names) {
  struct Group {
    std::string prefix;
    size_t width;
    std::vector<uint64_t> numbers;
  };
  std::vector<Group> groups;
  std::vector<std::string> plain;
  std::vector<std::string> order;  // "g<i>" or "p<i>" so output keeps first appearance
  std::map<std::pair<std::string, size_t>, size_t> index;
  for (const std::string& n : names) {
    size_t digits = 0;
    while (digits < n.size() && std::isdigit(static_cast<unsigned char>(n[n.size() - 1 - digits]))) ++digits;
    uint64_t value = 0;
    if (digits == 0 || digits > 9 || !absl::SimpleAtoi(n.substr(n.size() - digits), &value)) {
      order.push_back(absl::StrCat("p", plain.size()));
      plain.push_back(n);
      continue;
    }
    const std::string prefix = n.substr(0, n.size() - digits);
    const size_t width = n[n.size() - digits] == '0' ? digits : 0;  // 0 = no padding
    auto key = std::make_pair(prefix, width);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      order.push_back(absl::StrCat("g", groups.size()));
      groups.push_back({prefix, width, {}});
    }
    groups[it->second].numbers.push_back(value);
  }
  std::vector<std::string> out;
  for (const std::string& o : order) {
    const size_t i = std::stoul(o.substr(1));
    if (o[0] == 'p') {
      out.push_back(plain[i]);
      continue;
    }
    const Group& g = groups[i];
    auto fmt = [&](uint64_t v) {
      std::string s = std::to_string(v);
      if (s.size() < g.width) s.insert(0, g.width - s.size(), '0');
      return s;
    };
    if (g.numbers.size() == 1) {
      out.push_back(g.prefix + fmt(g.numbers[0]));
      continue;
    }
    std::string ranges;
    for (size_t k = 0; k < g.numbers.size();) {
      size_t j = k;
      while (j + 1 < g.numbers.size() && g.numbers[j + 1] == g.numbers[j] + 1) ++j;
      if (!ranges.empty()) ranges += ",";
      ranges += fmt(g.numbers[k]);
      if (j > k) ranges += "-" + fmt(g.numbers[j]);
      k = j + 1;
    }
    out.push_back(absl::StrCat(g.prefix, "[", ranges, "]"));
  }
  return absl::StrJoin(out, ",");
}

}  // namespace onequeue::slurm

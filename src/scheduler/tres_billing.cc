#include "scheduler/tres_billing.h"

#include <cctype>
#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace onequeue::scheduler {
namespace {

constexpr const char* kAllowed = "cpu, mem or gres/NAME (e.g. gres/gpu)";

// "0.25G" -> 0.25 per GB, as a weight per MB; a suffix only on mem.
absl::StatusOr<double> ParseWeight(const std::string& name, const std::string& text, bool memory) {
  std::string number = std::string(absl::StripAsciiWhitespace(text));
  double per_mb = 1;
  // A trailing letter is a unit only after a number ("0.25G"); "lots" or ".nan" are not numbers.
  const bool has_unit = number.size() > 1 && std::isalpha(static_cast<unsigned char>(number.back())) &&
                        std::isdigit(static_cast<unsigned char>(number[number.size() - 2]));
  if (has_unit) {
    if (!memory) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", name, "=", text, "\": a unit suffix (K, M, G, T) is allowed on mem only"));
    }
    switch (std::toupper(static_cast<unsigned char>(number.back()))) {
      case 'K': per_mb = 1024; break;  // a weight per KB is 1024 times that per MB
      case 'M': per_mb = 1; break;
      case 'G': per_mb = 1.0 / 1024; break;
      case 'T': per_mb = 1.0 / (1024 * 1024); break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("\"", name, "=", text, "\": the unit must be K, M, G or T (per KB, MB, GB, TB)"));
    }
    number.pop_back();
  }
  double w = 0;
  if (!absl::SimpleAtod(number, &w) || !std::isfinite(w)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", name, "=", text, "\": the weight must be a number"));
  }
  if (w < 0) return absl::InvalidArgumentError(absl::StrCat("\"", name, "=", text, "\": the weight must not be negative"));
  if (w > 1e9) return absl::InvalidArgumentError(absl::StrCat("\"", name, "=", text, "\": the weight must be at most 1e9"));
  return w * per_mb;
}

}  // namespace

absl::StatusOr<TresBillingWeights> ParseTresBillingWeights(const std::map<std::string, std::string>& entries) {
  TresBillingWeights w;
  w.cpu = 0;  // as Slurm: a TRES not listed is not billed
  if (entries.empty()) return absl::InvalidArgumentError(absl::StrCat("no weights given; name ", kAllowed));
  std::map<std::string, std::string> seen;  // lower-case name -> as written
  for (const auto& [raw_name, value] : entries) {
    const std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(raw_name));
    if (auto [it, fresh] = seen.emplace(name, raw_name); !fresh) {
      return absl::InvalidArgumentError(absl::StrCat("\"", it->second, "\" and \"", raw_name, "\" name the same TRES"));
    }
    if (name == "cpu") {
      absl::StatusOr<double> v = ParseWeight(raw_name, value, false);
      if (!v.ok()) return v.status();
      w.cpu = *v;
    } else if (name == "mem") {
      absl::StatusOr<double> v = ParseWeight(raw_name, value, true);
      if (!v.ok()) return v.status();
      w.mem_per_mb = *v;
    } else if (absl::StartsWith(name, "gres/") && name.size() > 5) {
      absl::StatusOr<double> v = ParseWeight(raw_name, value, false);
      if (!v.ok()) return v.status();
      // GRES names keep their case (Slurm's gres.conf names are case-sensitive).
      const std::string gres(absl::StripAsciiWhitespace(raw_name).substr(5));
      w.gres[gres] = *v;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown TRES \"", raw_name, "\": onequeue bills ", kAllowed,
                       " (Slurm's node, energy, license, bb and fs TRES are not tracked for pods)"));
    }
  }
  return w;
}

absl::StatusOr<TresBillingWeights> ParseTresBillingWeights(const std::string& slurm_syntax) {
  std::map<std::string, std::string> entries;
  for (absl::string_view item : absl::StrSplit(slurm_syntax, ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || absl::StripAsciiWhitespace(kv[0]).empty()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", item, "\": expected NAME=WEIGHT (e.g. CPU=1.0,Mem=0.25G,GRES/gpu=2.0)"));
    }
    if (!entries.emplace(kv[0], kv[1]).second) {
      return absl::InvalidArgumentError(absl::StrCat("\"", kv[0], "\" is given twice"));
    }
  }
  return ParseTresBillingWeights(entries);
}

std::string FormatTresBillingWeights(const TresBillingWeights& w) {
  std::vector<std::string> parts;
  if (w.cpu != 0) parts.push_back(absl::StrFormat("cpu=%g", w.cpu));
  if (w.mem_per_mb != 0) parts.push_back(absl::StrFormat("mem=%gG", w.mem_per_mb * 1024));
  for (const auto& [name, v] : w.gres) parts.push_back(absl::StrFormat("gres/%s=%g", name, v));
  return parts.empty() ? "nothing" : absl::StrJoin(parts, ",");
}

double PodBillingRate(const queue::Resources& used, const queue::ResourceNames& names,
                      const TresBillingWeights& w, const std::map<std::string, std::string>& gres_resources) {
  double rate = w.cpu * static_cast<double>(used[queue::kCpu]) / 1000.0;
  rate += w.mem_per_mb * static_cast<double>(used[queue::kMemory]) / (1024.0 * 1024.0);
  for (const auto& [gres, weight] : w.gres) {
    auto resource = gres_resources.find(gres);
    if (resource == gres_resources.end() || weight == 0) continue;
    const int slot = names.IndexOf(resource->second);
    if (slot >= 0 && slot < queue::kMaxResourceKinds) rate += weight * static_cast<double>(used[slot]);
  }
  return rate;
}

double JobBillingRate(const slurm::SlurmJob& job, const TresBillingWeights& w) {
  const auto& tres = job.tres_allocated;
  auto amount = [&tres](const std::string& name, double fallback) {
    auto it = tres.find(name);
    return it == tres.end() ? fallback : static_cast<double>(it->second);
  };
  const double nodes = job.node_count > 0 ? job.node_count : 1;
  double memory_mb = static_cast<double>(job.memory_per_node_mb) * nodes;
  if (memory_mb == 0) memory_mb = static_cast<double>(job.memory_per_cpu_mb) * job.cpus;
  double rate = w.cpu * amount("cpu", job.cpus) + w.mem_per_mb * amount("mem", memory_mb);
  for (const auto& [gres, weight] : w.gres) {
    auto per_node = job.gres_per_node.find(gres);
    const double fallback = per_node == job.gres_per_node.end() ? 0 : static_cast<double>(per_node->second) * nodes;
    rate += weight * amount(absl::StrCat("gres/", gres), fallback);
  }
  return rate;
}

}  // namespace onequeue::scheduler

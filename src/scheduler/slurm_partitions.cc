#include "scheduler/slurm_partitions.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace onequeue::scheduler {
namespace {

std::string Minutes(absl::Duration d) { return absl::StrCat(absl::ToInt64Minutes(d), " min"); }

}  // namespace

const char* SlurmReasonOf(PartitionVerdict verdict) {
  switch (verdict) {
    case PartitionVerdict::kAllowed:
      return "";
    case PartitionVerdict::kDown:
      return "PartitionDown";
    case PartitionVerdict::kInactive:
      return "PartitionInactive";
    case PartitionVerdict::kOverMaxTime:
      return "PartitionTimeLimit";
    case PartitionVerdict::kOverMaxNodes:
    case PartitionVerdict::kUnderMinNodes:
      return "PartitionNodeLimit";
  }
  return "";
}

PartitionCheck CheckPartition(const slurm::SlurmPartition& p, uint32_t node_count,
                              const std::optional<absl::Duration>& time_limit) {
  PartitionCheck c;
  c.partition = p.name;
  auto refuse = [&](PartitionVerdict v, const std::string& what) {
    c.verdict = v;
    c.why = absl::StrCat("partition ", p.name, ": ", what, " (", SlurmReasonOf(v), ")");
    return c;
  };
  // DRAIN: no new submissions, queued jobs still run (slurm.conf(5)); UP and unknown: allowed.
  if (p.state == "DOWN") return refuse(PartitionVerdict::kDown, "state DOWN, its queued jobs are not started");
  if (p.state == "INACTIVE")
    return refuse(PartitionVerdict::kInactive, "state INACTIVE, its queued jobs are not started");
  if (p.max_time && time_limit && *time_limit > *p.max_time)
    return refuse(PartitionVerdict::kOverMaxTime,
                  absl::StrCat("time limit ", Minutes(*time_limit), " over its MaxTime ", Minutes(*p.max_time)));
  if (p.max_nodes && node_count > *p.max_nodes)
    return refuse(PartitionVerdict::kOverMaxNodes,
                  absl::StrCat(node_count, " nodes over its MaxNodes ", *p.max_nodes));
  if (p.min_nodes > 1 && node_count < p.min_nodes)
    return refuse(PartitionVerdict::kUnderMinNodes,
                  absl::StrCat(node_count, " nodes under its MinNodes ", p.min_nodes));
  return c;
}

std::vector<std::string> JobPartitions::Allowed() const {
  std::vector<std::string> out;
  for (const PartitionCheck& c : checks)
    if (c.verdict == PartitionVerdict::kAllowed) out.push_back(c.partition);
  return out;
}

std::string JobPartitions::Reason(uint32_t job_id) const {
  std::vector<std::string> whys;
  for (const PartitionCheck& c : checks)
    if (c.verdict != PartitionVerdict::kAllowed) whys.push_back(c.why);
  return absl::StrCat("Slurm job ", job_id, ": no partition of its list lets it run (", absl::StrJoin(whys, "; "),
                      "); onequeue does not start it, Slurm keeps it pending too");
}

JobPartitions CheckJobPartitions(const slurm::SlurmJob& job, uint32_t node_count,
                                 const slurm::SlurmView::Partitions* partitions,
                                 const std::vector<std::string>& shared) {
  JobPartitions out;
  for (absl::string_view name : absl::StrSplit(job.partition, ',', absl::SkipEmpty())) {
    if (std::find(shared.begin(), shared.end(), name) == shared.end()) continue;
    const slurm::SlurmPartition* p = nullptr;
    if (partitions != nullptr) {
      if (auto it = partitions->find(std::string(name)); it != partitions->end()) p = &it->second;
    }
    if (p == nullptr) {
      out.checks.push_back({std::string(name), PartitionVerdict::kAllowed, ""});
      continue;
    }
    out.checks.push_back(CheckPartition(*p, node_count, job.time_limit));
  }
  return out;
}

bool NeverPreemptedIn(const std::string& partition, const slurm::SlurmView::Partitions* partitions) {
  if (partitions == nullptr) return false;
  auto p = partitions->find(partition);
  return p != partitions->end() && p->second.preempt_off();
}

}  // namespace onequeue::scheduler

#include "scheduler/slurm_reservations.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"

namespace onequeue::scheduler {
namespace {

queue::Time QueueTime(absl::Time t) {
  if (t == absl::InfinitePast()) return 0;
  if (t == absl::InfiniteFuture()) return queue::kForever;
  return absl::ToUnixSeconds(t);
}

std::string TimeText(absl::Time t) {
  if (t == absl::InfinitePast()) return "ever";
  if (t == absl::InfiniteFuture()) return "no end";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

}  // namespace

std::string DescribeReservation(const slurm::SlurmReservation& r) {
  return absl::StrCat("Slurm reservation ", r.name, r.flags.empty() ? "" : " (", absl::StrJoin(r.flags, ","),
                      r.flags.empty() ? "" : ")", " from ", TimeText(r.start), " to ", TimeText(r.end));
}

void ApplyReservations(const slurm::SlurmView& view, const SlurmRecords& records, queue::Snapshot* snapshot,
                       queue::Time now) {
  if (view.reservations == nullptr || view.reservations->empty()) return;
  std::map<std::string, queue::Node*> by_name;
  for (queue::Node& n : snapshot->nodes) by_name[n.name] = &n;
  for (const auto& [name, r] : *view.reservations) {
    const queue::Time start = QueueTime(r.start), end = QueueTime(r.end);
    if (end <= now || end <= start) continue;
    for (const std::string& slurm_node : r.nodes) {
      auto k8s = records.k8s_of_slurm.find(slurm_node);
      if (k8s == records.k8s_of_slurm.end()) continue;  // not a pool node
      auto node = by_name.find(k8s->second);
      if (node == by_name.end()) continue;
      queue::Node& n = *node->second;
      n.unavailable.push_back({start, end, DescribeReservation(r)});
      if (start <= now) {
        n.schedulable = false;
        n.labels.erase(kLendableLabel);
      }
    }
  }
}

std::string LeftToSlurmMessage(const slurm::SlurmJob& job, const slurm::SlurmView& view) {
  std::string where = absl::StrCat("reservation ", job.reservation);
  if (view.reservations != nullptr) {
    if (auto r = view.reservations->find(job.reservation); r != view.reservations->end())
      where = absl::StrCat(DescribeReservation(r->second), " on ", absl::StrJoin(r->second.nodes, ","));
  }
  return absl::StrCat("left to Slurm: job ", job.job_id, " asks for ", where,
                      "; onequeue does not plan jobs of a reservation: Slurm starts it there when the "
                      "reservation's nodes are Slurm's");
}

}  // namespace onequeue::scheduler

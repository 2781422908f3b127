#include "scheduler/cycle_log.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {

std::optional<std::string> DescribeCycle(const CycleStats& s, absl::Duration took, const CyclePhaseTimes& phases) {
  if (!(s.bound || s.reported || s.preemptions_started || s.bind_errors || s.slurm_started || s.lent || s.reclaimed ||
        s.returned || s.slurm_held)) {
    return std::nullopt;
  }
  const std::string times =
      absl::StrJoin(phases, ", ", [](std::string* out, const std::pair<const char*, absl::Duration>& p) {
        absl::StrAppend(out, p.first, " ", absl::ToInt64Milliseconds(p.second));
      });
  return absl::StrCat("cycle: ", s.pending, " pending (", s.slurm_pending, " Slurm), ", s.bound, " bound, ",
                      s.slurm_started, " Slurm jobs started, ", s.waiting, " waiting (", s.reported, " reported, ",
                      s.slurm_held, " Slurm held), ", s.preemptions_started, " preemptions, ", s.evictions,
                      " evictions, ", s.requeued, " requeued, ", s.lent, " lent, ", s.reclaimed, " reclaimed, ",
                      s.returned, " returned, ", s.bind_errors, " bind errors; ", absl::ToInt64Milliseconds(took),
                      " ms (", times, ")");
}

}  // namespace onequeue::scheduler

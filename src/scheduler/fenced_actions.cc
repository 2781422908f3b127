#include "scheduler/fenced_actions.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "slurm_bridge/model.h"

namespace onequeue::scheduler {
namespace {

absl::Status Check(const WritePermit* permit, const RefusedWrite& refused, const std::string& what) {
  absl::Status s = permit->MayWrite();
  if (s.ok()) return s;
  s = absl::FailedPreconditionError(absl::StrCat(what, " refused: ", s.message()));
  if (refused) refused(what, s);
  return s;
}

}  // namespace

void RefusedWriteLog::Refused(const std::string& what, const absl::Status& why) {
  std::string line;
  {
    absl::MutexLock lock(&mu_);
    const auto now = clock_();
    if (last_line_ && now - *last_line_ < interval_) {
      ++unlogged_;
      return;
    }
    // The first refusal, or the first after a quiet interval: in full. Otherwise how many were
    // counted since the last line, this one included.
    line = unlogged_ == 0 ? std::string(why.message())
                          : absl::StrCat(unlogged_ + 1, " more writes refused (latest: ", why.message(), ")");
    unlogged_ = 0;
    last_line_ = now;
  }
  sink_(line);
}

absl::Status FencedClusterActions::Admit(const std::string& what) const { return Check(permit_, refused_, what); }

absl::Status FencedClusterActions::Bind(const std::string& pod_key, const std::string& node,
                                        const std::string& message) {
  if (absl::Status s = Admit(absl::StrCat("bind ", pod_key, " to ", node)); !s.ok()) return s;
  return inner_->Bind(pod_key, node, message);
}

void FencedClusterActions::StartBind(const std::string& pod_key, const std::string& node,
                                     const std::string& message, std::function<void(absl::Status)> done) {
  if (absl::Status s = Admit(absl::StrCat("bind ", pod_key, " to ", node)); !s.ok()) {
    done(std::move(s));
    return;
  }
  inner_->StartBind(pod_key, node, message, std::move(done));
}

void FencedClusterActions::BindSucceeded(const std::string& pod_key, const std::string& node,
                                         const std::string& message) {
  if (!Admit(absl::StrCat("Scheduled event and wait annotations of ", pod_key)).ok()) return;
  inner_->BindSucceeded(pod_key, node, message);
}

absl::Status FencedClusterActions::ReportWaiting(const std::string& pod_key, const WaitReport& report) {
  if (absl::Status s = Admit(absl::StrCat("waiting report of ", pod_key)); !s.ok()) return s;
  return inner_->ReportWaiting(pod_key, report);
}

absl::StatusOr<std::string> FencedClusterActions::SetNodeOwner(const std::string& node, const std::string& value,
                                                               const std::string& resource_version) {
  if (absl::Status s = Admit(absl::StrCat("owner of node ", node, " := '", value, "'")); !s.ok()) return s;
  return inner_->SetNodeOwner(node, value, resource_version);
}

void FencedClusterActions::StartSetNodeOwner(const std::string& node, const std::string& value,
                                             const std::string& resource_version,
                                             std::function<void(absl::StatusOr<std::string>)> done) {
  if (absl::Status s = Admit(absl::StrCat("owner of node ", node, " := '", value, "'")); !s.ok()) {
    done(std::move(s));
    return;
  }
  inner_->StartSetNodeOwner(node, value, resource_version, std::move(done));
}

void FencedClusterActions::NodeEvent(const std::string& node, const std::string& reason, const std::string& note) {
  if (!Admit(absl::StrCat(reason, " event of node ", node)).ok()) return;
  inner_->NodeEvent(node, reason, note);
}

absl::Status FencedClusterActions::PodEvent(const std::string& pod_key, const std::string& reason,
                                           const std::string& note) {
  if (absl::Status s = Admit(absl::StrCat(reason, " event of pod ", pod_key)); !s.ok()) return s;
  return inner_->PodEvent(pod_key, reason, note);
}

absl::Status FencedClusterActions::AnnotateNode(const std::string& node, const std::string& key,
                                               const std::string& value) {
  if (absl::Status s = Admit(absl::StrCat("annotation ", key, " of node ", node)); !s.ok()) return s;
  return inner_->AnnotateNode(node, key, value);
}

absl::Status FencedClusterActions::SelectVolumeNode(const std::string& claim_key, const std::string& node) {
  if (absl::Status s = Admit(absl::StrCat("selected node of claim ", claim_key)); !s.ok()) return s;
  return inner_->SelectVolumeNode(claim_key, node);
}

absl::Status FencedClusterActions::AllocateClaim(const std::string& claim_key,
                                                const std::vector<k8s::DeviceAllocationResult>& results,
                                                const std::string& node, const k8s::ClaimConsumer& pod) {
  if (absl::Status s = Admit(absl::StrCat("allocation of ResourceClaim ", claim_key)); !s.ok()) return s;
  return inner_->AllocateClaim(claim_key, results, node, pod);
}

absl::Status FencedClusterActions::ClearClaim(const std::string& claim_key, const std::string& pod_uid) {
  if (absl::Status s = Admit(absl::StrCat("clearing of ResourceClaim ", claim_key)); !s.ok()) return s;
  return inner_->ClearClaim(claim_key, pod_uid);
}

absl::Status FencedClusterActions::Nominate(const std::string& pod_key, const std::string& node) {
  if (absl::Status s = Admit(absl::StrCat("nomination of ", pod_key, " to '", node, "'")); !s.ok()) return s;
  return inner_->Nominate(pod_key, node);
}

void FencedClusterActions::StartNominate(const std::string& pod_key, const std::string& node,
                                         std::function<void(absl::Status)> done) {
  if (absl::Status s = Admit(absl::StrCat("nomination of ", pod_key, " to '", node, "'")); !s.ok()) {
    done(std::move(s));
    return;
  }
  inner_->StartNominate(pod_key, node, std::move(done));
}

void FencedClusterActions::StartNominateWithReport(const std::string& pod_key, const std::string& node,
                                                   const WaitReport& report, std::function<void(absl::Status)> done) {
  if (absl::Status s = Admit(absl::StrCat("nomination and waiting report of ", pod_key, " to '", node, "'")); !s.ok()) {
    done(std::move(s));
    return;
  }
  inner_->StartNominateWithReport(pod_key, node, report, std::move(done));
}

absl::Status FencedClusterActions::Evict(const std::string& pod_key, const std::string& preemptor,
                                         const std::string& message) {
  if (absl::Status s = Admit(absl::StrCat("eviction of ", pod_key, " for ", preemptor)); !s.ok()) return s;
  return inner_->Evict(pod_key, preemptor, message);
}

void FencedClusterActions::StartEvict(const std::string& pod_key, const std::string& preemptor,
                                      const std::string& message, std::function<void(absl::Status)> done) {
  if (absl::Status s = Admit(absl::StrCat("eviction of ", pod_key, " for ", preemptor)); !s.ok()) {
    done(std::move(s));
    return;
  }
  inner_->StartEvict(pod_key, preemptor, message, std::move(done));
}

void FencedClusterActions::EvictSucceeded(const std::string& pod_key, const std::string& preemptor,
                                          const std::string& message) {
  if (!Admit(absl::StrCat("Preempted event of ", pod_key)).ok()) return;
  inner_->EvictSucceeded(pod_key, preemptor, message);
}

void FencedClusterActions::StartDeleteVictim(const std::string& pod_key, const std::string& preemptor,
                                             const std::string& condition_message,
                                             std::function<void(absl::Status)> done) {
  if (absl::Status s = Admit(absl::StrCat("deletion of victim ", pod_key, " for ", preemptor)); !s.ok()) {
    done(std::move(s));
    return;
  }
  inner_->StartDeleteVictim(pod_key, preemptor, condition_message, std::move(done));
}

absl::Status FencedClusterActions::EvictForTimeLimit(const std::string& pod_key, const std::string& message) {
  if (absl::Status s = Admit(absl::StrCat("time-limit eviction of ", pod_key)); !s.ok()) return s;
  return inner_->EvictForTimeLimit(pod_key, message);
}

absl::Status FencedSlurmActions::Admit(const std::string& what) const { return Check(permit_, refused_, what); }

absl::Status FencedSlurmActions::Abandoned(const std::string& what, absl::Status s) const {
  if (absl::IsDeadlineExceeded(s) && refused_ && !permit_->MayWrite().ok()) {
    refused_(what, absl::DeadlineExceededError(absl::StrCat(what, " abandoned at the lease's end: ", s.message())));
  }
  return s;
}

absl::Status FencedSlurmActions::Fence(const std::string& slurm_node, const std::string& owner) {
  const std::string what = absl::StrCat("Slurm fence of ", slurm_node, " for ", owner);
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->Fence(slurm_node, owner));
}

absl::Status FencedSlurmActions::Unfence(const std::string& slurm_node) {
  const std::string what = absl::StrCat("Slurm unfence of ", slurm_node);
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->Unfence(slurm_node));
}

absl::Status FencedSlurmActions::Hold(uint32_t job, const std::string& comment) {
  const std::string what = absl::StrCat("Slurm hold of job ", job);
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->Hold(job, comment));
}

absl::Status FencedSlurmActions::StartOn(uint32_t job, const std::vector<std::string>& slurm_nodes,
                                         const std::string& comment) {
  const std::string what = absl::StrCat("Slurm start of job ", job, " on ", absl::StrJoin(slurm_nodes, ","));
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->StartOn(job, slurm_nodes, comment));
}

// Issue 29's array writes: before these were forwarded, a leader (leader election on) started
// no array task at all (the base class answers kUnimplemented).
absl::StatusOr<uint32_t> FencedSlurmActions::SplitArrayTask(uint32_t array_job, uint32_t task, const std::string& comment) {
  const std::string what = absl::StrCat("Slurm split of array task ", slurm::ArrayTaskId(array_job, task));
  if (absl::Status s = Admit(what); !s.ok()) return s;
  absl::StatusOr<uint32_t> id = inner_->SplitArrayTask(array_job, task, comment);
  if (!id.ok()) return Abandoned(what, id.status());
  return id;
}

absl::Status FencedSlurmActions::StartArrayTask(uint32_t array_job, uint32_t task,
                                                const std::vector<std::string>& slurm_nodes, const std::string& comment) {
  const std::string what = absl::StrCat("Slurm start of array task ", slurm::ArrayTaskId(array_job, task), " on ",
                                        absl::StrJoin(slurm_nodes, ","));
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->StartArrayTask(array_job, task, slurm_nodes, comment));
}

absl::Status FencedSlurmActions::HoldArrayTasks(uint32_t array_job, const std::string& tasks, const std::string& comment) {
  const std::string what = absl::StrCat("Slurm hold of array tasks ", array_job, "_", tasks);
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->HoldArrayTasks(array_job, tasks, comment));
}

absl::Status FencedSlurmActions::Requeue(uint32_t job) {
  const std::string what = absl::StrCat("Slurm requeue of job ", job);
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->Requeue(job));
}

absl::Status FencedSlurmActions::RequeueArrayTask(uint32_t array_job, uint32_t task) {
  const std::string what = absl::StrCat("Slurm requeue of array task ", slurm::ArrayTaskId(array_job, task));
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->RequeueArrayTask(array_job, task));
}

absl::Status FencedSlurmActions::Cancel(uint32_t job) {
  const std::string what = absl::StrCat("Slurm cancel of job ", job);
  if (absl::Status s = Admit(what); !s.ok()) return s;
  return Abandoned(what, inner_->Cancel(job));
}

absl::StatusOr<uint32_t> FencedSlurmActions::SubmitPodPlaceholder(const slurm::JobSubmission& job) {
  const std::string what = absl::StrCat("Slurm submit of pod placeholder ", job.name);
  if (absl::Status s = Admit(what); !s.ok()) return s;
  absl::StatusOr<uint32_t> id = inner_->SubmitPodPlaceholder(job);
  if (!id.ok()) return Abandoned(what, id.status());
  return id;
}

}  // namespace onequeue::scheduler

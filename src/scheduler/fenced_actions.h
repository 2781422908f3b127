#pragma once
// The write gate: every write of the scheduling loop, to Kubernetes and to Slurm, first asks
// whether this replica may still write (it leads and its Lease is valid on the monotonic clock,
// see leader_elector.h). When not, the write is refused with FailedPrecondition and no request
// is sent. A cycle that was running when leadership ended (the process was paused, the apiserver
// did not answer the renewals) therefore stops writing before any other replica can take the
// Lease, even though it does not notice it has been deposed.
//
// The gate decides when a write starts; a write already sent cannot be called back. Slurm writes
// are also bounded in time (issue 24 M1): the loop's slurmrestd client and scontrol runner give
// each write, and each retry, only the time left before the renew deadline
// (WritePermit::WriteTimeLeft; slurm::RestClient::BoundWrites), so a write slurmrestd does not
// answer is abandoned (kDeadlineExceeded) instead of landing after the lease; FencedSlurmActions
// reports such a write like a refused one. What is left is the margin between the renew deadline
// and the lease duration (leader_elector.h): a request on the wire when its time runs out.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/leader_elector.h"
#include "scheduler/scheduling_loop.h"

namespace onequeue::scheduler {

// Called with each refused write ("bind ns/p to n1", the reason); the daemon logs it.
using RefusedWrite = std::function<void(const std::string& what, const absl::Status& why)>;

// What the daemon logs of refused writes: a deposed leader's cycle may refuse thousands of writes
// (every binding, report, event of a big backlog), so after a refusal is logged in full the
// next ones are counted, and one line per `interval` at most says how many ("N more writes
// refused", with the latest). A refusal after a quiet interval is logged in full again.
// Thread-safe (the transport's gate may refuse on its own thread).
class RefusedWriteLog {
 public:
  using Sink = std::function<void(const std::string& line)>;
  RefusedWriteLog(MonotonicClock clock, Sink sink, absl::Duration interval = absl::Seconds(1))
      : clock_(std::move(clock)), sink_(std::move(sink)), interval_(absl::ToChronoNanoseconds(interval)) {}
  void Refused(const std::string& what, const absl::Status& why);
  // A RefusedWrite that logs through `log` (which must outlive it).
  static RefusedWrite To(RefusedWriteLog* log) {
    return [log](const std::string& what, const absl::Status& why) { log->Refused(what, why); };
  }

 private:
  const MonotonicClock clock_;
  const Sink sink_;
  const std::chrono::nanoseconds interval_;
  absl::Mutex mu_;
  std::optional<std::chrono::steady_clock::time_point> last_line_ ABSL_GUARDED_BY(mu_);
  int64_t unlogged_ ABSL_GUARDED_BY(mu_) = 0;  // refusals since the last line
};

class FencedClusterActions final : public ClusterActions {
 public:
  FencedClusterActions(ClusterActions* inner, const WritePermit* permit, RefusedWrite refused = nullptr)
      : inner_(inner), permit_(permit), refused_(std::move(refused)) {}

  absl::Status Bind(const std::string& pod_key, const std::string& node, const std::string& message) override;
  void StartBind(const std::string& pod_key, const std::string& node, const std::string& message,
                 std::function<void(absl::Status)> done) override;
  void BindSucceeded(const std::string& pod_key, const std::string& node, const std::string& message) override;
  absl::Status ReportWaiting(const std::string& pod_key, const WaitReport& report) override;
  // A read of what already happened: not gated.
  std::vector<std::string> TakeFailedReports() override { return inner_->TakeFailedReports(); }
  // Forgets, writes nothing: not gated.
  void ForgetWaiting(const std::string& pod_key) override { inner_->ForgetWaiting(pod_key); }
  absl::StatusOr<std::string> SetNodeOwner(const std::string& node, const std::string& value,
                                           const std::string& resource_version) override;
  void StartSetNodeOwner(const std::string& node, const std::string& value, const std::string& resource_version,
                         std::function<void(absl::StatusOr<std::string>)> done) override;
  void NodeEvent(const std::string& node, const std::string& reason, const std::string& note) override;
  absl::Status PodEvent(const std::string& pod_key, const std::string& reason, const std::string& note) override;
  absl::Status AnnotateNode(const std::string& node, const std::string& key, const std::string& value) override;
  absl::Status SelectVolumeNode(const std::string& claim_key, const std::string& node) override;
  absl::Status AllocateClaim(const std::string& claim_key, const std::vector<k8s::DeviceAllocationResult>& results,
                             const std::string& node, const k8s::ClaimConsumer& pod) override;
  absl::Status ClearClaim(const std::string& claim_key, const std::string& pod_uid) override;
  absl::Status Nominate(const std::string& pod_key, const std::string& node) override;
  void StartNominate(const std::string& pod_key, const std::string& node, std::function<void(absl::Status)> done) override;
  void StartNominateWithReport(const std::string& pod_key, const std::string& node, const WaitReport& report,
                               std::function<void(absl::Status)> done) override;
  absl::Status Evict(const std::string& pod_key, const std::string& preemptor, const std::string& message) override;
  void StartEvict(const std::string& pod_key, const std::string& preemptor, const std::string& message,
                  std::function<void(absl::Status)> done) override;
  void EvictSucceeded(const std::string& pod_key, const std::string& preemptor, const std::string& message) override;
  void StartDeleteVictim(const std::string& pod_key, const std::string& preemptor, const std::string& condition_message,
                         std::function<void(absl::Status)> done) override;
  absl::Status EvictForTimeLimit(const std::string& pod_key, const std::string& message) override;

 private:
  absl::Status Admit(const std::string& what) const;

  ClusterActions* inner_;
  const WritePermit* permit_;
  RefusedWrite refused_;
};

class FencedSlurmActions final : public SlurmActions {
 public:
  FencedSlurmActions(SlurmActions* inner, const WritePermit* permit, RefusedWrite refused = nullptr)
      : inner_(inner), permit_(permit), refused_(std::move(refused)) {}

  absl::Status Fence(const std::string& slurm_node, const std::string& owner) override;
  absl::Status Unfence(const std::string& slurm_node) override;
  absl::Status Hold(uint32_t job, const std::string& comment) override;
  absl::Status StartOn(uint32_t job, const std::vector<std::string>& slurm_nodes, const std::string& comment) override;
  absl::StatusOr<uint32_t> SplitArrayTask(uint32_t array_job, uint32_t task, const std::string& comment) override;
  absl::Status StartArrayTask(uint32_t array_job, uint32_t task, const std::vector<std::string>& slurm_nodes,
                              const std::string& comment) override;
  absl::Status HoldArrayTasks(uint32_t array_job, const std::string& tasks, const std::string& comment) override;
  absl::Status Requeue(uint32_t job) override;
  absl::Status RequeueArrayTask(uint32_t array_job, uint32_t task) override;
  absl::Status Cancel(uint32_t job) override;
  absl::StatusOr<uint32_t> SubmitPodPlaceholder(const slurm::JobSubmission& job) override;
  // Reads: not gated.
  bool FenceRequeues() const override { return inner_->FenceRequeues(); }
  absl::StatusOr<bool> Ready(const std::string& slurm_node) override { return inner_->Ready(slurm_node); }

 private:
  absl::Status Admit(const std::string& what) const;
  // A write admitted that ended in kDeadlineExceeded once the permit has lapsed was abandoned at
  // the lease's end (the client's bound): reported like a refusal.
  absl::Status Abandoned(const std::string& what, absl::Status s) const;

  SlurmActions* inner_;
  const WritePermit* permit_;
  RefusedWrite refused_;
};

}  // namespace onequeue::scheduler

// Issue 25 DRA, docs/sharing.md section 5: the claim step of the pod mirror (pod_mirror.h) on a
// gpus: dra node. Once the pod's placeholder runs, each of the pod's ResourceClaims is allocated
// to the devices whose index is one of the GPU indices Slurm gave the placeholder (gres_detail IDX,
// NodeAllocation::gres_indices), with the pod in reservedFor; the record moves to kClaimWritten
// and only then is the pod bound (BindMirrored). Every decision comes from the claims as read now
// (NextClaimStep), so a successor after a crash, or this process after a failed call, finishes or
// undoes a half-done step from them alone:
//   write: not allocated, the placeholder runs: written (behind the lease's gate: FencedClusterActions);
//   bind:  written as expected: nothing to do;
//   clear: reserved for the pod but not as expected (the record undone, the placeholder gone or on
//          other indices): onequeue's write undone, and the record too;
//   wait:  allocated by someone else: never touched; the record undone, the pod waits (the snapshot
//          says why: DraGpuCount refuses an allocated claim).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/dra_gpus.h"
#include "scheduler/dra_pods.h"
#include "scheduler/scheduling_loop.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {
namespace {

using Allocation = std::map<std::string, std::vector<k8s::DeviceAllocationResult>>;

// The GPU indices Slurm gave the running placeholder on its node, ascending.
absl::StatusOr<std::vector<int64_t>> PlaceholderIndices(const PodMirrorRecord& r, const SlurmRecords& records) {
  const slurm::SlurmJob* job = nullptr;
  if (records.view != nullptr && records.view->jobs != nullptr && r.job) {
    auto it = records.view->jobs->find(*r.job);
    if (it != records.view->jobs->end()) job = &it->second;
  }
  const slurm::NodeAllocation* on = job == nullptr ? nullptr : job->allocation.On(r.node.slurm_node);
  if (on == nullptr) return absl::FailedPreconditionError(absl::StrCat("placeholder job ", r.job.value_or(0),
                                                                       "'s allocation on ", r.node.slurm_node, " is not known"));
  auto gpus = on->gres_indices.find("gpu");
  const auto count = on->gres.find("gpu");
  const size_t asked = count == on->gres.end() ? 0 : static_cast<size_t>(count->second);
  if (asked > 0 && (gpus == on->gres_indices.end() || gpus->second.size() != asked))
    return absl::FailedPreconditionError(absl::StrCat(
        "Slurm gives no GPU indices for placeholder job ", *r.job, " (gres_detail without IDX: gres.conf without File=?)"));
  std::vector<int64_t> out;
  if (gpus != on->gres_indices.end()) out.assign(gpus->second.begin(), gpus->second.end());
  std::sort(out.begin(), out.end());
  return out;
}

// Every claim's allocation for the placeholder's indices (AllocateByIndex), devices of other
// claims in use.
absl::StatusOr<Allocation> ExpectedAllocation(const PodRecord& pod, const PodMirrorRecord& r, const KubeState& state,
                                              const SlurmRecords& records, const SlurmConfig::DraGpus& gpus) {
  absl::StatusOr<std::vector<int64_t>> indices = PlaceholderIndices(r, records);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<std::vector<k8s::ResourceClaim>> claims = PodClaimObjects(pod, state, true);
  if (!claims.ok()) return claims.status();
  std::vector<k8s::ResourceSlice> slices;
  for (const auto& s : state.resource_slices)
    if (s->node_name == r.node.node) slices.push_back(*s);
  std::vector<k8s::ResourceClaim> others;
  for (const auto& c : state.resource_claims) {
    if (std::find(pod.resource_claims.begin(), pod.resource_claims.end(), c->metadata.Key()) == pod.resource_claims.end())
      others.push_back(*c);
  }
  return AllocateByIndex(*claims, slices, r.node.node, *indices, gpus, AllocatedDevices(others));
}

}  // namespace

std::set<std::string> SchedulingLoop::StepClaims(const KubeState& state, queue::Time now) {
  // Every pending pod with claims is bound only after its claim step, even while no node is known
  // as a gpus: dra node (no join with Slurm yet).
  std::set<std::string> claiming;
  const DraNodes dra = DraNodesOf(config_.slurm, slurm_records_);
  for (const auto& p : state.pods) {
    if (p->resource_claims.empty() || !p->node_name.empty() || p->terminal ||
        p->scheduler_name != config_.scheduler_name)
      continue;
    claiming.insert(std::string(PodIdentity(*p)));
    if (dra.of_node.empty()) continue;
    const PodMirrorRecord* r = mirrors_.Find(std::string(PodIdentity(*p)));
    auto on = r == nullptr ? dra.of_node.end() : dra.of_node.find(r->node.node);
    StepPodClaims(*p, state, on == dra.of_node.end() ? nullptr : &on->second, now);
  }
  return claiming;
}

void SchedulingLoop::StepPodClaims(const PodRecord& pod, const KubeState& state, const SlurmConfig::DraGpus* gpus,
                                   queue::Time now) {
  const std::string uid(PodIdentity(pod));
  const PodMirrorRecord* r = mirrors_.Find(uid);
  const bool running = r != nullptr && gpus != nullptr &&
                       (r->state == MirrorState::kPlaceholderRunning || r->state == MirrorState::kClaimWritten);
  const std::string node = running ? r->node.node : "";
  absl::StatusOr<std::vector<k8s::ResourceClaim>> claims = PodClaimObjects(pod, state, false);
  if (!claims.ok()) return;  // a claim not made yet: nothing of ours to write or clear
  std::optional<Allocation> expected;
  std::string undo;  // why the record is undone ("": it is not)
  if (running) {
    absl::StatusOr<Allocation> e = ExpectedAllocation(pod, *r, state, slurm_records_, *gpus);
    if (e.ok()) expected = std::move(*e);
    else undo = absl::StrCat("GPUs by index: ", e.status().message());
  }
  bool written = expected.has_value();
  for (const k8s::ResourceClaim& c : *claims) {
    const std::string key = c.metadata.Key();
    std::optional<std::vector<k8s::DeviceAllocationResult>> mine;
    if (expected) mine = (*expected)[key];
    switch (NextClaimStep(c, uid, node, mine)) {
      case ClaimStep::kBind: break;
      case ClaimStep::kWrite:
        if (!mine) break;  // not ours to write yet: the placeholder does not run
        if (absl::Status s = actions_->AllocateClaim(key, *mine, node, {"", "pods", pod.name, uid}); !s.ok()) {
          spdlog::warn("pod {}: ResourceClaim {} not allocated yet: {}", pod.key, key, std::string(s.message()));
          written = false;
        }
        break;
      case ClaimStep::kClear:
        if (absl::Status s = actions_->ClearClaim(key, uid); !s.ok())
          spdlog::warn("pod {}: ResourceClaim {} not cleared yet: {}", pod.key, key, std::string(s.message()));
        if (running && undo.empty()) undo = absl::StrCat("ResourceClaim ", key, " is not allocated as its placeholder's GPU indices ask");
        written = false;
        break;
      case ClaimStep::kWait:
        if (r != nullptr && undo.empty()) undo = absl::StrCat("ResourceClaim ", key, " is allocated by someone else");
        written = false;
        break;
    }
  }
  if (!undo.empty() && r != nullptr) {
    spdlog::warn("pod {}: {}; its placeholder is undone", pod.key, undo);
    (void)mirrors_.Undo(uid, undo, now);  // one path: the placeholder cancelled; the pod waits
    return;
  }
  if (written && r->state == MirrorState::kPlaceholderRunning) (void)mirrors_.ClaimWritten(uid, now);
}

}  // namespace onequeue::scheduler

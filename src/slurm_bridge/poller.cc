#include "slurm_bridge/poller.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace onequeue::slurm {
namespace {

// The fields whose change matters to the queue (a new estimate alone does not wake it up).
auto JobKey(const SlurmJob& j) {
  return std::tie(j.state, j.state_flags, j.state_reason, j.priority, j.nodes, j.restart_count, j.partition,
                  j.time_limit, j.node_count, j.cpus, j.comment, j.allocation, j.reservation, j.array_tasks);
}
auto NodeKey(const SlurmNode& n) {
  return std::tie(n.state, n.state_flags, n.alloc_cpus, n.alloc_memory_mb, n.gres_used, n.reason, n.partitions,
                  n.features, n.gres_used_indices);
}

// Whether `items` lacks any entry of `view`.
template <typename Map, typename Item, typename KeyOf>
bool LacksAny(const Map& view, const std::vector<Item>& items, KeyOf key) {
  if (view.empty()) return false;
  std::set<typename Map::key_type> seen;
  for (const Item& i : items) seen.insert(key(i));
  for (const auto& [k, v] : view)
    if (seen.count(k) == 0) return true;
  return false;
}

// One list call of the poll. The safety net of the poller: an answer to a request that carried
// update_time is only trusted to add and change entries; when it lacks one the view has (an
// "unchanged" answer in a form not recognised, a server that sends a delta), the full listing
// is asked for at once and that one is the answer.
template <typename Map, typename ListFn, typename KeyOf>
auto ListConfirmed(ListFn list, std::optional<int64_t> since, const Map& view, KeyOf key, uint64_t& confirmations)
    -> decltype(list(since)) {
  auto answer = list(since);
  if (!since || !answer.ok() || answer->unchanged || !LacksAny(view, answer->items, key)) return answer;
  ++confirmations;
  return list(std::nullopt);
}


// The jobs table of a full (or changed) listing, its items moved in; counts the jobs added,
// changed (JobKey) and removed since `old`.
std::shared_ptr<const SlurmView::Jobs> FreshJobs(std::vector<SlurmJob>& items,
                                                 const SlurmView::Jobs& old,
                                                 PollChanges& changes) {
  auto fresh = std::make_shared<SlurmView::Jobs>();
  for (SlurmJob& j : items) {
    auto it = old.find(j.job_id);
    if (it == old.end()) ++changes.jobs_added;
    else if (JobKey(it->second) != JobKey(j)) ++changes.jobs_changed;
    // Once per job: when its unreadable allocation is first seen (issue 25).
    if (!j.allocation.error.empty() && (it == old.end() || it->second.allocation.error.empty()))
      spdlog::warn("slurm poller: {}", j.allocation.error);
    const uint32_t id = j.job_id;
    fresh->emplace(id, std::move(j));
  }
  for (const auto& [id, j] : old)
    if (fresh->count(id) == 0) ++changes.jobs_removed;
  return fresh;
}

// The same for nodes: a node added, changed (NodeKey) or gone counts as changed.
std::shared_ptr<const SlurmView::Nodes> FreshNodes(std::vector<SlurmNode>& items,
                                                   const SlurmView::Nodes& old,
                                                   PollChanges& changes) {
  auto fresh = std::make_shared<SlurmView::Nodes>();
  for (SlurmNode& n : items) {
    auto it = old.find(n.name);
    if (it == old.end() || NodeKey(it->second) != NodeKey(n)) ++changes.nodes_changed;
    const std::string name = n.name;
    fresh->emplace(name, std::move(n));
  }
  for (const auto& [name, n] : old)
    if (fresh->count(name) == 0) ++changes.nodes_changed;
  return fresh;
}

// The same for partitions (always listed in full): changed when their number, or one's nodes,
// state, priority tier, or (issue 29) limits or PreemptMode changed.
std::shared_ptr<const SlurmView::Partitions> FreshPartitions(std::vector<SlurmPartition>& items,
                                                             const SlurmView::Partitions& old,
                                                             PollChanges& changes) {
  auto fresh = std::make_shared<SlurmView::Partitions>();
  for (SlurmPartition& p : items) {
    const std::string name = p.name;
    fresh->emplace(name, std::move(p));
  }
  changes.partitions_changed = fresh->size() != old.size();
  for (const auto& [name, p] : *fresh) {
    auto it = old.find(name);
    if (it == old.end() || it->second.nodes != p.nodes || it->second.state != p.state ||
        it->second.priority_tier != p.priority_tier || it->second.max_time != p.max_time ||
        it->second.max_nodes != p.max_nodes || it->second.min_nodes != p.min_nodes ||
        it->second.preempt_mode != p.preempt_mode)
      changes.partitions_changed = true;
  }
  return fresh;
}

// Issue 29: the reservations table, or nullptr when it is the same as `old` (name, nodes, window,
// flags). kUnimplemented (an api that lists none) reads as no reservation.
absl::StatusOr<std::shared_ptr<const SlurmView::Reservations>> FreshReservations(
    SlurmApi& api, const SlurmView::Reservations& old) {
  absl::StatusOr<ReservationListing> listing = api.ListReservations();
  if (!listing.ok() && !absl::IsUnimplemented(listing.status())) return listing.status();
  auto fresh = std::make_shared<SlurmView::Reservations>();
  if (listing.ok())
    for (SlurmReservation& r : listing->items) {
      const std::string name = r.name;
      fresh->emplace(name, std::move(r));
    }
  auto key = [](const SlurmReservation& r) { return std::tie(r.name, r.nodes, r.start, r.end, r.flags, r.partition); };
  const bool same = fresh->size() == old.size() &&
                    std::equal(fresh->begin(), fresh->end(), old.begin(),
                               [&](const auto& a, const auto& b) { return key(a.second) == key(b.second); });
  if (same) return std::shared_ptr<const SlurmView::Reservations>();
  return std::shared_ptr<const SlurmView::Reservations>(std::move(fresh));
}

}  // namespace

SlurmPoller::SlurmPoller(SlurmApi& api, PollerOptions options)
    : api_(api), options_(options), view_(std::make_shared<SlurmView>()) {}

absl::StatusOr<PollChanges> SlurmPoller::PollOnce(absl::Time now) {
  std::shared_ptr<const SlurmView> old = View();
  auto next = std::make_shared<SlurmView>(*old);  // shares the tables; replaced below if changed
  PollChanges changes;
  const bool full = !options_.incremental || now - last_full_ >= options_.full_refresh_interval;
  const std::optional<int64_t> node_since = full ? std::nullopt : node_update_time_;
  const int64_t local_mark = absl::ToUnixSeconds(now - options_.clock_margin);

  auto fail = [&](const absl::Status& st) -> absl::Status {
    // The next poll is a full one: whatever happened meanwhile (a slurmctld restart, jobs that
    // came and went) is picked up from scratch.
    job_update_time_.reset();
    node_update_time_.reset();
    last_full_ = absl::InfinitePast();
    absl::MutexLock lock(&mu_);
    ++stats_.polls;
    ++stats_.failures;
    stats_.last_error = std::string(st.message());
    return st;
  };

  absl::StatusOr<JobStep> jobs = PollJobs(*old->jobs, full, now, changes);
  if (!jobs.ok()) return fail(jobs.status());
  uint64_t confirmations = jobs->confirmations;
  absl::StatusOr<NodeListing> nodes = ListConfirmed(
      [&](std::optional<int64_t> since) { return api_.ListNodes(since); }, node_since, *old->nodes,
      [](const SlurmNode& n) { return n.name; }, confirmations);
  if (!nodes.ok()) return fail(nodes.status());
  const bool want_partitions = now - last_partitions_ >= options_.partition_interval;
  absl::StatusOr<PartitionListing> partitions;
  if (want_partitions) {
    partitions = api_.ListPartitions();
    if (!partitions.ok()) return fail(partitions.status());
  }
  // Last, and not fatal: jobs and nodes are fresh; the reservations table is kept as it was
  // (it changes seldom) and the failure logged, so one refused call does not stale the view.
  absl::StatusOr<std::shared_ptr<const SlurmView::Reservations>> reservations =
      FreshReservations(api_, *old->reservations);
  if (!reservations.ok()) {
    spdlog::warn("slurm poller: listing reservations: {}; the last list is kept", reservations.status().ToString());
  } else if (*reservations != nullptr) {
    next->reservations = *std::move(reservations);
    changes.reservations_changed = true;
  }

  if (jobs->table != nullptr) next->jobs = jobs->table;
  if (!nodes->unchanged) next->nodes = FreshNodes(nodes->items, *old->nodes, changes);
  if (want_partitions) {
    next->partitions = FreshPartitions(partitions->items, *old->partitions, changes);
    last_partitions_ = now;
  }
  // The server's own clock when it gave one, else ours minus a margin.
  if (jobs->update_time) job_update_time_ = jobs->update_time;
  if (jobs->states) last_states_ = *std::move(jobs->states);
  if (!nodes->unchanged) node_update_time_ = nodes->last_update.value_or(local_mark);
  if (full) last_full_ = now;
  next->refreshed_at = now;

  absl::MutexLock lock(&mu_);
  view_ = std::move(next);
  ++stats_.polls;
  stats_.confirming_fetches += confirmations;
  if (jobs->unchanged) ++stats_.unchanged_job_answers;
  if (jobs->full_listing) ++stats_.full_job_fetches;
  if (jobs->states) ++stats_.job_state_listings;
  stats_.single_job_fetches += jobs->single_fetches;
  stats_.last_error.clear();
  return changes;
}

absl::StatusOr<SlurmPoller::JobStep> SlurmPoller::PollJobs(const SlurmView::Jobs& old, bool full, absl::Time now,
                                                           PollChanges& changes) {
  std::set<uint32_t> asked;  // Refetch's ids; update_time mode sees their changes anyway
  {
    absl::MutexLock lock(&mu_);
    asked.swap(refetch_);
  }
  if (options_.incremental && options_.job_states && !states_unavailable_) {
    absl::StatusOr<JobStep> step = PollJobsByStates(old, full, asked, changes);
    if (!absl::IsUnimplemented(step.status())) return step;
    spdlog::info("slurm poller: {}; jobs are polled by update_time", std::string(step.status().message()));
    states_unavailable_ = true;
  }
  return PollJobsByUpdateTime(old, full, now, changes);
}

absl::StatusOr<SlurmPoller::JobStep> SlurmPoller::PollJobsByUpdateTime(const SlurmView::Jobs& old, bool full,
                                                                       absl::Time now, PollChanges& changes) {
  JobStep step;
  absl::StatusOr<JobListing> jobs = ListConfirmed(
      [&](std::optional<int64_t> since) { return api_.ListJobs(since); }, full ? std::nullopt : job_update_time_,
      old, [](const SlurmJob& j) { return j.job_id; }, step.confirmations);
  if (!jobs.ok()) return jobs.status();
  step.unchanged = jobs->unchanged;
  if (jobs->unchanged) return step;
  step.full_listing = true;
  step.table = FreshJobs(jobs->items, old, changes);
  step.update_time = jobs->last_update.value_or(absl::ToUnixSeconds(now - options_.clock_margin));
  return step;
}

absl::StatusOr<SlurmPoller::JobStep> SlurmPoller::PollJobsByStates(const SlurmView::Jobs& old, bool full,
                                                                   const std::set<uint32_t>& asked,
                                                                   PollChanges& changes) {
  // States first: a change made after this listing and before a full listing below is in both
  // the view and (differing from this baseline) the next poll's fetches, never in neither.
  absl::StatusOr<JobStateListing> listing = api_.ListJobStates();
  if (absl::IsInternal(listing.status())) {
    // A listing this build cannot read (an id of a form not known here, as a het job's "7+1" was
    // before it was seen live) is no reason to stop polling: this poll lists jobs in full.
    spdlog::warn("slurm poller: {}; jobs listed in full this poll", std::string(listing.status().message()));
    listing = JobStateListing{};
    full = true;
  }
  if (!listing.ok()) return listing.status();
  JobStep step;
  step.states.emplace();
  for (SlurmJobState& s : listing->items) {
    const uint32_t id = s.job_id;
    (*step.states)[id] = std::move(s);
  }
  std::vector<uint32_t> fetch;  // new, changed or asked for
  for (const auto& [id, s] : *step.states) {
    auto last = last_states_.find(id);
    if (old.count(id) == 0 || last == last_states_.end() || !(last->second == s) || asked.count(id)) fetch.push_back(id);
  }
  // An empty listing while the view has jobs (the lesson of issue 16's empty "unchanged" answer)
  // is checked with a full listing before any job is dropped.
  const bool confirm = step.states->empty() && !old.empty();
  step.confirmations = confirm ? 1 : 0;
  if (full || confirm || fetch.size() > static_cast<size_t>(std::max(0, options_.max_job_fetches))) {
    absl::StatusOr<JobListing> jobs = api_.ListJobs(std::nullopt);
    if (!jobs.ok()) return jobs.status();
    step.full_listing = true;
    step.table = FreshJobs(jobs->items, old, changes);
    return step;
  }
  if (absl::Status st = FetchChangedJobs(old, fetch, step, changes); !st.ok()) return st;
  return step;
}

absl::Status SlurmPoller::FetchChangedJobs(const SlurmView::Jobs& old, const std::vector<uint32_t>& fetch,
                                           JobStep& step, PollChanges& changes) {
  std::vector<uint32_t> gone;
  for (const auto& [id, j] : old)
    if (step.states->count(id) == 0) gone.push_back(id);
  if (fetch.empty() && gone.empty()) return absl::OkStatus();  // the view's table stays
  auto table = std::make_shared<SlurmView::Jobs>(old);
  for (uint32_t id : gone) table->erase(id);
  changes.jobs_removed += static_cast<int>(gone.size());
  std::set<uint32_t> put;  // records taken from this poll's fetches
  for (uint32_t id : fetch) {
    absl::StatusOr<JobListing> records = api_.GetJobRecords(id);
    ++step.single_fetches;
    const bool has_own = records.ok() && std::any_of(records->items.begin(), records->items.end(),
                                                     [&](const SlurmJob& j) { return j.job_id == id; });
    if (absl::IsNotFound(records.status()) || (records.ok() && !has_own)) {
      // Gone between the listing and now. Out of the baseline too: fetched again should the
      // next listing still have it.
      if (table->erase(id) > 0) ++changes.jobs_removed;
      step.states->erase(id);
      continue;
    }
    if (!records.ok()) return records.status();
    // Every record answered goes in, not only `id`'s: an array's id answers the tasks split off
    // it as well, and one split after the listing is in the array's record no longer, so without
    // its own record here the view would lack the task for a poll (seen live on 22.05: the daemon
    // took tasks it had started for gone and started more on their nodes). A record the listing
    // lacked is fetched again on the next poll (it is not in the baseline): one GET, no harm.
    for (SlurmJob& job : records->items) {
      if (put.insert(job.job_id).second) PutFetchedJob(old, std::move(job), *table, changes);
      else (*table)[job.job_id] = std::move(job);  // answered twice (an array and its task): counted once
    }
  }
  step.table = std::move(table);
  return absl::OkStatus();
}

void SlurmPoller::PutFetchedJob(const SlurmView::Jobs& old, SlurmJob job, SlurmView::Jobs& table,
                                PollChanges& changes) {
  auto it = old.find(job.job_id);
  if (it == old.end()) ++changes.jobs_added;
  else if (JobKey(it->second) != JobKey(job)) ++changes.jobs_changed;
  if (!job.allocation.error.empty() && (it == old.end() || it->second.allocation.error.empty()))
    spdlog::warn("slurm poller: {}", job.allocation.error);
  const uint32_t id = job.job_id;
  table[id] = std::move(job);
}

std::shared_ptr<const SlurmView> SlurmPoller::View() const {
  absl::MutexLock lock(&mu_);
  return view_;
}

absl::Duration SlurmPoller::Staleness(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  if (view_->refreshed_at == absl::InfinitePast()) return absl::InfiniteDuration();
  return now - view_->refreshed_at;
}

void SlurmPoller::Refetch(uint32_t job_id) {
  absl::MutexLock lock(&mu_);
  refetch_.insert(job_id);
}

PollerStats SlurmPoller::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace onequeue::slurm

#include "scheduler/usage_accounting.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "scheduler/slurm_world.h"
#include "spdlog/spdlog.h"

namespace onequeue::scheduler {
namespace {

constexpr const char* kApiVersion = "onequeue.io/v1";
constexpr const char* kKind = "FairShareUsage";

double Decay(queue::Duration age, queue::Duration half_life) {
  if (half_life <= 0 || age <= 0) return 1.0;
  return std::exp2(-static_cast<double>(age) / static_cast<double>(half_life));
}

queue::Time Unix(absl::Time t) { return absl::ToUnixSeconds(t); }

}  // namespace

void UsageAccounting::Charge(const BuiltSnapshot& built, const slurm::SlurmView* slurm_view, queue::Time now) {
  if (store_ != nullptr && !loaded_) LoadFromStore();
  const bool all = last_charge_ == 0 || now - last_charge_ >= options_.charge_interval;
  ChargePods(built, all, now);
  if (slurm_view != nullptr) ChargeJobs(*slurm_view, all, now);
  if (all) last_charge_ = now;
  Rebuild(now);
  if (all && store_ != nullptr && loaded_) SaveToStore(now);
}

void UsageAccounting::Add(const std::string& account, double amount, queue::Time now) {
  if (!(amount > 0) || !std::isfinite(amount)) return;
  Total& t = totals_[account];
  t.amount = t.amount * Decay(now - t.at, options_.half_life) + amount;
  t.at = std::max(t.at, now);
}

void UsageAccounting::ChargeUpTo(Charged& c, queue::Time to, queue::Time now) {
  if (to <= c.until) return;
  Add(c.account, c.rate * static_cast<double>(to - c.until), now);
  c.until = to;
}

void UsageAccounting::Seen(const std::string& key, const std::string& account, double rate, queue::Time start,
                           bool all, queue::Time now) {
  auto [it, fresh] = charged_.try_emplace(key);
  Charged& c = it->second;
  // A new workload is charged from its start; one of the same name that started after the last
  // charge of the former (a recreated pod, a requeued job run again) from its own start.
  if (fresh || c.done) c.until = start;
  c.until = std::max(c.until, start);
  c.account = account;
  c.rate = rate;
  c.done = false;
  c.restored = false;
  if (all) ChargeUpTo(c, now, now);
}

void UsageAccounting::ChargePods(const BuiltSnapshot& built, bool all, queue::Time now) {
  std::set<std::string> seen;
  for (const auto& r : built.snapshot->running) {
    if (r.kind != queue::WorkloadKind::kPodGroup) continue;
    queue::Resources used;
    for (const auto& a : r.allocations) used += a.used;
    const std::string key = absl::StrCat("pod/", r.id);
    Seen(key, r.account,
         PodBillingRate(used, built.snapshot->resource_names, options_.weights, options_.gres_resources),
         r.start_time, all, now);
    seen.insert(key);
  }
  for (auto it = charged_.lower_bound("pod/"); it != charged_.end() && it->first.starts_with("pod/");) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    // Stopped: charged up to now, when this daemon saw it run; one restored from the store that
    // is gone stopped while no leader ran, at an unknown time: what ran after the save is lost.
    if (!it->second.restored) ChargeUpTo(it->second, now, now);
    it = charged_.erase(it);
  }
}

void UsageAccounting::ChargeJobs(const slurm::SlurmView& view, bool all, queue::Time now) {
  std::set<std::string> listed;
  for (const auto& [id, job] : *view.jobs) {
    if (IsPlaceholderJob(job, options_.reclaim_partition, options_.identity)) continue;
    const std::string key = absl::StrCat("slurm/", id);
    const std::string account = job.account.empty() ? "slurm" : job.account;
    const bool started = job.start_time != absl::InfinitePast();
    if (job.state == slurm::JobState::kRunning && started) {
      Seen(key, account, JobBillingRate(job, options_.weights), Unix(job.start_time), all, now);
      listed.insert(key);
      continue;
    }
    auto it = charged_.find(key);
    if (slurm::IsFinished(job.state) && started && job.end_time != absl::InfinitePast()) {
      // Up to its end, once: a finished job stays in the table (done) while Slurm lists it.
      listed.insert(key);
      if (it == charged_.end()) it = charged_.emplace(key, Charged{.until = Unix(job.start_time)}).first;
      Charged& c = it->second;
      if (c.done) continue;
      c.account = account;
      c.rate = JobBillingRate(job, options_.weights);
      c.until = std::max(c.until, Unix(job.start_time));
      ChargeUpTo(c, Unix(job.end_time), now);
      c.done = true;
      c.restored = false;
      continue;
    }
    if (it == charged_.end() || it->second.done) continue;
    if (job.state == slurm::JobState::kSuspended) {
      // Suspended time is not usage (as in Slurm): the clock moves without a charge.
      listed.insert(key);
      it->second.until = std::max(it->second.until, now);
      continue;
    }
    // Requeued (pending again) or otherwise stopped: charged up to now; a later run is new.
    if (!it->second.restored) ChargeUpTo(it->second, now, now);
    charged_.erase(it);
  }
  // Slurm forgets finished jobs after MinJobAge: so does the table.
  for (auto it = charged_.lower_bound("slurm/"); it != charged_.end() && it->first.starts_with("slurm/");) {
    it = listed.count(it->first) ? std::next(it) : charged_.erase(it);
  }
}

void UsageAccounting::Rebuild(queue::Time now) {
  const queue::Time horizon = now - 10 * options_.half_life;
  std::erase_if(totals_, [&](const auto& entry) { return entry.second.at < horizon; });
  usage_.records.clear();
  for (const auto& [account, t] : totals_) usage_.records.push_back({account, t.at, t.amount});
}

std::map<std::string, double> UsageAccounting::UsageAt(queue::Time now) const {
  std::map<std::string, double> out;
  for (const auto& [account, t] : totals_) out[account] = t.amount * Decay(now - t.at, options_.half_life);
  return out;
}

std::string UsageAccounting::Save(queue::Time now) const {
  nlohmann::json j = {{"apiVersion", kApiVersion},
                      {"kind", kKind},
                      {"scheduler", options_.scheduler_name},
                      {"savedAt", now},
                      {"halfLifeSeconds", options_.half_life},
                      {"tresBillingWeights", FormatTresBillingWeights(options_.weights)},
                      {"accounts", nlohmann::json::object()},
                      {"charged", nlohmann::json::object()}};
  for (const auto& [account, t] : totals_) j["accounts"][account] = {{"usage", t.amount}, {"at", t.at}};
  for (const auto& [key, c] : charged_) {
    nlohmann::json e = {{"until", c.until}};
    if (c.done) e["done"] = true;
    j["charged"][key] = std::move(e);
  }
  return j.dump();
}

absl::Status UsageAccounting::Restore(const std::string& text) {
  std::map<std::string, Total> totals;
  std::map<std::string, Charged> charged;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.is_object() || j.value("apiVersion", "") != kApiVersion || j.value("kind", "") != kKind) {
      return absl::InvalidArgumentError(absl::StrCat("not onequeue's usage (expected apiVersion ", kApiVersion,
                                                     ", kind ", kKind, ")"));
    }
    if (j.value("scheduler", "") != options_.scheduler_name) {
      return absl::InvalidArgumentError(absl::StrCat("the usage of scheduler \"", j.value("scheduler", ""),
                                                     "\", not \"", options_.scheduler_name, "\""));
    }
    for (const auto& [account, e] : j.at("accounts").items()) {
      const double amount = e.at("usage").get<double>();
      if (account.empty() || !std::isfinite(amount) || amount < 0) {
        return absl::InvalidArgumentError(absl::StrCat("account \"", account, "\": usage must be a number >= 0"));
      }
      totals[account] = {amount, e.at("at").get<queue::Time>()};
    }
    for (const auto& [key, e] : j.at("charged").items()) {
      if (!key.starts_with("pod/") && !key.starts_with("slurm/")) {
        return absl::InvalidArgumentError(absl::StrCat("charged workload \"", key, "\" is neither pod/... nor slurm/..."));
      }
      charged[key] = Charged{.until = e.at("until").get<queue::Time>(), .done = e.value("done", false), .restored = true};
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not valid: ", e.what()));
  }
  totals_ = std::move(totals);
  charged_ = std::move(charged);
  last_charge_ = 0;  // the next charge brings every running workload up to date
  return absl::OkStatus();
}

void UsageAccounting::LoadFromStore() {
  absl::StatusOr<std::string> text = store_->Load();
  if (text.ok()) {
    loaded_ = true;
    if (absl::Status s = Restore(*text); !s.ok()) {
      spdlog::error("usage: {} holds no usable fair-share usage ({}); starting from empty usage (it is replaced "
                    "at the next save)", store_->Describe(), std::string(s.message()));
      return;
    }
    spdlog::info("usage: restored {} accounts and {} charged workloads from {}", totals_.size(), charged_.size(),
                 store_->Describe());
  } else if (absl::IsDataLoss(text.status())) {
    loaded_ = true;
    spdlog::error("usage: {} holds no usable fair-share usage ({}); starting from empty usage (saved beside its "
                  "other keys at the next save)", store_->Describe(), std::string(text.status().message()));
  } else if (absl::IsNotFound(text.status())) {
    loaded_ = true;
    spdlog::info("usage: nothing saved in {} yet; starting from empty usage", store_->Describe());
  } else if (load_error_ != text.status().message()) {
    load_error_ = std::string(text.status().message());
    spdlog::warn("usage: cannot read {} ({}); charging in memory and reading it again next cycle",
                 store_->Describe(), load_error_);
  }
}

void UsageAccounting::SaveToStore(queue::Time now) {
  const absl::Status s = store_->Save(Save(now));
  if (s.ok()) return;
  if (absl::IsAborted(s)) {
    spdlog::warn("usage: {} was changed by another writer; reading it again", store_->Describe());
    loaded_ = false;
    return;
  }
  spdlog::warn("usage: cannot save to {}: {}", store_->Describe(), std::string(s.message()));
}

bool UsageAccounting::Learn(const queue::Snapshot& snapshot) {
  bool grew = false;
  auto learn = [&](const std::string& account) {
    if (!account.empty() && learned_.insert(account).second) grew = true;
  };
  for (const auto& w : snapshot.pending) learn(w.account);
  for (const auto& r : snapshot.running) learn(r.account);
  for (const auto& u : usage_.records) learn(u.account);
  return grew;
}

std::vector<queue::Account> UsageAccounting::LearnedAccounts() const {
  std::vector<queue::Account> out;
  for (const std::string& a : learned_) out.push_back({a, "", 1});
  return out;
}

}  // namespace onequeue::scheduler

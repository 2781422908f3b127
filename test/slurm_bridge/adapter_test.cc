// One typed suite, the same assertions over every version's fixture (v0.0.38 .. v0.0.44): the
// adapters must map each version's shape into the same internal model.
#include "slurm_bridge/adapter.h"

#include <algorithm>
#include <map>
#include <set>

#include "fixture_util.h"
#include "scripted_transport.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "slurm_bridge/adapter_internal.h"
#include "slurm_bridge/json_fields.h"
#include "absl/strings/match.h"

namespace onequeue::slurm {
namespace {
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using testing::ReadFixture;

template <int N>
struct V {
  static constexpr ApiVersion kVersion = static_cast<ApiVersion>(N);
};

template <typename T>
class AdapterTest : public ::testing::Test {
 protected:
  static constexpr ApiVersion kVersion = T::kVersion;
  AdapterTest() : adapter_(MakeAdapter(kVersion)) {}
  nlohmann::json Fixture(const std::string& kind) {
    return ReadFixture(VersionString(kVersion) + "/" + kind + ".json");
  }
  std::unique_ptr<VersionAdapter> adapter_;
};

using Versions = ::testing::Types<V<38>, V<39>, V<40>, V<41>, V<42>, V<43>, V<44>, V<45>>;
TYPED_TEST_SUITE(AdapterTest, Versions);

const SlurmJob& Job(const JobListing& l, uint32_t id) {
  auto it = std::find_if(l.items.begin(), l.items.end(), [&](const SlurmJob& j) { return j.job_id == id; });
  EXPECT_NE(it, l.items.end()) << "job " << id;
  return *it;
}
const SlurmNode& Node(const NodeListing& l, const std::string& name) {
  auto it = std::find_if(l.items.begin(), l.items.end(), [&](const SlurmNode& n) { return n.name == name; });
  EXPECT_NE(it, l.items.end()) << name;
  return *it;
}

// Issue 29: a heterogeneous job's component carries its leader's id and its offset, in each
// version's number shape (a plain number on v0.0.38, a no-val struct from v0.0.40).
TYPED_TEST(AdapterTest, AHeterogeneousJobsComponentsCarryTheirLeaderAndOffset) {
  nlohmann::json listing = this->Fixture("jobs");
  ASSERT_FALSE(listing["jobs"].empty());
  nlohmann::json& j = listing["jobs"][0];
  const uint32_t id = j["job_id"].is_object() ? j["job_id"]["number"].get<uint32_t>() : j["job_id"].get<uint32_t>();
  for (auto [key, value] : {std::pair{"het_job_id", 41}, {"het_job_offset", 1}}) {
    if (j.contains(key) && j[key].is_object()) {
      j[key]["number"] = value;
      j[key]["set"] = true;
    } else {
      j[key] = value;
    }
  }
  absl::StatusOr<JobListing> l = this->adapter_->ParseJobs(listing);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(Job(*l, id).het_job_id, 41u);
  EXPECT_EQ(Job(*l, id).het_job_offset, 1u);
  absl::StatusOr<JobListing> plain = this->adapter_->ParseJobs(this->Fixture("jobs"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const SlurmJob& other : plain->items) EXPECT_EQ(other.het_job_id, 0u) << other.job_id;
}

// Issue 29: the job's `dependency` is a plain string on every REST version (v0.0.38 to v0.0.45),
// as Slurm reports it; read as is (scheduler/slurm_dependencies.h parses it).
TYPED_TEST(AdapterTest, AJobsDependencyIsReadAsSlurmReportsIt) {
  nlohmann::json listing = this->Fixture("jobs");
  ASSERT_FALSE(listing["jobs"].empty());
  nlohmann::json& j = listing["jobs"][0];
  const uint32_t id = j["job_id"].is_object() ? j["job_id"]["number"].get<uint32_t>() : j["job_id"].get<uint32_t>();
  j["dependency"] = "afterok:12(unfulfilled),afterany:13(fulfilled)";
  absl::StatusOr<JobListing> l = this->adapter_->ParseJobs(listing);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(Job(*l, id).dependency, "afterok:12(unfulfilled),afterany:13(fulfilled)");
  absl::StatusOr<JobListing> plain = this->adapter_->ParseJobs(this->Fixture("jobs"));
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (const SlurmJob& other : plain->items) EXPECT_EQ(other.dependency, "") << other.job_id;
}

TYPED_TEST(AdapterTest, Jobs) {
  absl::StatusOr<JobListing> l = this->adapter_->ParseJobs(this->Fixture("jobs"));
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->items.size(), 3u);
  EXPECT_EQ(l->last_update.has_value(), this->kVersion >= ApiVersion::kV0039);

  const SlurmJob& running = Job(*l, 1);
  EXPECT_EQ(running.name, "cli1");
  EXPECT_EQ(running.user, "root");
  EXPECT_EQ(running.partition, "batch");
  EXPECT_EQ(running.state, JobState::kRunning);
  EXPECT_THAT(running.state_flags, IsEmpty());
  EXPECT_EQ(running.state_reason, "None");
  EXPECT_EQ(running.priority, 4294901759);
  EXPECT_EQ(running.submit_time, absl::FromUnixSeconds(1795301662));
  EXPECT_EQ(running.start_time, absl::FromUnixSeconds(1795301663));
  EXPECT_EQ(running.end_time, absl::FromUnixSeconds(1795302263));
  EXPECT_FALSE(running.estimated_start.has_value());
  EXPECT_EQ(running.time_limit, absl::Minutes(10));
  EXPECT_EQ(running.node_count, 2u);
  EXPECT_EQ(running.cpus, 4u);
  EXPECT_EQ(running.memory_per_node_mb, 1000);
  EXPECT_EQ(running.memory_per_cpu_mb, 0);
  EXPECT_THAT(running.gres_per_node, ElementsAre(Pair("gpu", 1)));
  EXPECT_EQ(running.tres_requested.at("cpu"), 4);
  EXPECT_EQ(running.tres_requested.at("mem"), 2000);
  EXPECT_EQ(running.tres_requested.at("node"), 2);
  EXPECT_EQ(running.tres_allocated.at("cpu"), 4);
  EXPECT_THAT(running.nodes, ElementsAre("n1", "n2"));
  EXPECT_TRUE(running.requeue);
  EXPECT_EQ(running.restart_count, 0);
  EXPECT_EQ(running.array_job_id, 0u);
  EXPECT_FALSE(running.array_task_id.has_value());
  EXPECT_FALSE(running.held());

  const SlurmJob& big = Job(*l, 2);
  EXPECT_EQ(big.user, "nobody");
  EXPECT_EQ(big.state, JobState::kPending);
  EXPECT_EQ(big.state_reason, "Resources");
  EXPECT_EQ(big.node_count, 8u);
  EXPECT_EQ(big.tres_requested.at("mem"), 125 * 1024);
  EXPECT_THAT(big.nodes, IsEmpty());
  EXPECT_EQ(big.time_limit, absl::Minutes(5));
  EXPECT_EQ(big.memory_per_node_mb, 0);
  EXPECT_FALSE(big.estimated_start.has_value());  // start_time 0: backfill has not looked yet

  const SlurmJob& gpu = Job(*l, 3);
  EXPECT_EQ(gpu.partition, "gpu");
  EXPECT_THAT(gpu.gres_per_node, ElementsAre(Pair("gpu", 2)));
  EXPECT_EQ(gpu.restart_count, 1);
  EXPECT_EQ(gpu.comment, "onequeue:placeholder");
  EXPECT_EQ(gpu.time_limit, absl::Minutes(30));
}

TYPED_TEST(AdapterTest, Nodes) {
  absl::StatusOr<NodeListing> l = this->adapter_->ParseNodes(this->Fixture("nodes"));
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->items.size(), 8u);
  const SlurmNode& n1 = Node(*l, "n1");
  EXPECT_EQ(n1.state, NodeState::kMixed);
  EXPECT_THAT(n1.state_flags, IsEmpty());
  EXPECT_EQ(n1.cpus, 8u);
  EXPECT_EQ(n1.alloc_cpus, 3u);
  EXPECT_EQ(n1.memory_mb, 16000);
  EXPECT_EQ(n1.alloc_memory_mb, 1000);
  EXPECT_THAT(n1.gres, ElementsAre(Pair("gpu", 2)));
  EXPECT_THAT(n1.gres_used, ElementsAre(Pair("gpu", 1)));
  EXPECT_THAT(n1.features, ElementsAre("fast", "ib"));
  EXPECT_THAT(n1.partitions, ElementsAre("batch"));
  EXPECT_FALSE(n1.drain());

  const SlurmNode& n4 = Node(*l, "n4");
  EXPECT_EQ(n4.state, NodeState::kIdle);
  EXPECT_THAT(n4.state_flags, ElementsAre("DRAIN"));
  EXPECT_TRUE(n4.drained());
  EXPECT_EQ(n4.reason, "onequeue:pod-a");

  const SlurmNode& n6 = Node(*l, "n6");
  EXPECT_TRUE(n6.drain());
  EXPECT_EQ(n6.reason, "disk replacement");
  EXPECT_EQ(n6.reason_set_by_user, "root");
  EXPECT_THAT(n6.partitions, ElementsAre("batch", "gpu"));
  EXPECT_THAT(Node(*l, "n3").gres_used, ElementsAre(Pair("gpu", 0)));
}

TYPED_TEST(AdapterTest, Partitions) {
  absl::StatusOr<PartitionListing> l = this->adapter_->ParsePartitions(this->Fixture("partitions"));
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->items.size(), 2u);
  const SlurmPartition& batch = l->items[0];
  EXPECT_EQ(batch.name, "batch");
  EXPECT_THAT(batch.nodes, ElementsAre("n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"));
  EXPECT_EQ(batch.total_nodes, 8u);
  EXPECT_EQ(batch.total_cpus, 64u);
  EXPECT_EQ(batch.priority_tier, 1);
  EXPECT_EQ(batch.state, "UP");
  EXPECT_FALSE(batch.max_time.has_value());
  EXPECT_FALSE(batch.default_time.has_value());
  const SlurmPartition& gpu = l->items[1];
  EXPECT_EQ(gpu.name, "gpu");
  EXPECT_THAT(gpu.nodes, ElementsAre("n5", "n6", "n7", "n8"));
  EXPECT_EQ(gpu.max_time, absl::Minutes(1440));
}

// Hold and priority together only to see both keys; UpdateJob never sends them in one body.
JobUpdate EveryJobUpdateField() {
  JobUpdate u;
  u.comment = "onequeue: waiting for pod-a";
  u.hold = true;
  u.priority = 1000000;
  u.required_nodes = std::vector<std::string>{"n1", "n2"};
  u.begin_now = true;
  return u;
}

// The bodies the adapter writes use only keys the version's spec allows (request_keys.json is
// generated from the specs by fixtures/make_fixtures.py).
TYPED_TEST(AdapterTest, RequestBodiesUseKeysOfTheSpec) {
  const nlohmann::json keys = this->Fixture("request_keys");
  auto allowed = [&](const char* kind) {
    std::set<std::string> s;
    for (const auto& k : keys[kind]) s.insert(k.get<std::string>());
    return s;
  };
  JobSubmission job;
  job.name = "onequeue-placeholder-n3";
  job.partition = "reclaim";
  job.nodelist = "n3";
  job.exclusive = true;
  job.comment = "onequeue:pod-a";
  job.time_limit_minutes = 60;
  job.node_count = 1;
  job.cpus = 2;
  job.memory_per_node_mb = 100;
  job.gres_per_node = {{"gpu", 2}};
  job.hold = true;
  const nlohmann::json body = this->adapter_->SubmitBody(job);
  // Issue 25's pod placeholders: GRES per node in the version's own key and syntax.
  if (this->adapter_->version() == ApiVersion::kV0038) {
    EXPECT_EQ(body["job"]["gres"], "gpu:2");
  } else {
    EXPECT_EQ(body["job"]["tres_per_node"], "gres/gpu:2");
  }
  const std::set<std::string> submit = allowed("submit"), desc = allowed("job_desc");
  for (auto it = body.begin(); it != body.end(); ++it) EXPECT_TRUE(submit.count(it.key())) << it.key();
  for (auto it = body["job"].begin(); it != body["job"].end(); ++it) EXPECT_TRUE(desc.count(it.key())) << it.key();
  for (const nlohmann::json& b : {this->adapter_->HoldBody(true), this->adapter_->BeginAtBody(absl::Now(), absl::Now()),
                                  this->adapter_->JobUpdateBody(EveryJobUpdateField(), absl::Now())})
    for (auto it = b.begin(); it != b.end(); ++it) EXPECT_TRUE(desc.count(it.key())) << it.key();
  if (this->adapter_->SupportsNodeUpdate()) {
    const std::set<std::string> node = allowed("update_node");
    const nlohmann::json drain = this->adapter_->NodeUpdateBody({NodeUpdate::Kind::kDrain, "onequeue:x"});
    for (auto it = drain.begin(); it != drain.end(); ++it) EXPECT_TRUE(node.count(it.key())) << it.key();
  } else {
    EXPECT_EQ(this->kVersion, ApiVersion::kV0038);
  }
}

// Issue 24 M6 (b): the placeholder's UNLIMITED time limit as each version writes it (Slurm's
// INFINITE: the uint32 0xFFFFFFFF in v0.0.38, the "infinite" flag of the number object after).
TYPED_TEST(AdapterTest, AnUnlimitedTimeLimitIsWrittenAsSlurmsInfinite) {
  JobSubmission job;
  job.name = "onequeue-placeholder-n3";
  job.time_limit_minutes = kTimeLimitUnlimited;
  const nlohmann::json body = this->adapter_->SubmitBody(job);
  const nlohmann::json& t = body["job"]["time_limit"];
  if (this->kVersion == ApiVersion::kV0038) {
    EXPECT_EQ(t, nlohmann::json(4294967295u)) << t;
  } else {
    EXPECT_EQ(t, (nlohmann::json{{"set", true}, {"infinite", true}, {"number", 0}})) << t;
  }
  job.time_limit_minutes = 60;
  EXPECT_EQ(json_fields::Number(this->adapter_->SubmitBody(job)["job"], "time_limit").value_or(-1), 60);
}

// Job updates: names and number shapes per version, read back by the same tolerant readers.
// Issue 25 tenancy: a pod placeholder's Slurm account is sent as `account` (a key of every
// version's job_desc); with none, the body has no account key and Slurm's default applies.
TYPED_TEST(AdapterTest, APlaceholdersAccountIsSentOnlyWhenSet) {
  JobSubmission job;
  job.name = "onequeue-placeholder-n3";
  job.account = "tenant-a";
  EXPECT_EQ(this->adapter_->SubmitBody(job)["job"]["account"], "tenant-a");
  job.account.clear();
  const nlohmann::json body = this->adapter_->SubmitBody(job);
  EXPECT_FALSE(body["job"].contains("account")) << body["job"].dump();
}

TYPED_TEST(AdapterTest, JobUpdateBodyFollowsTheVersionsShapes) {
  const bool v38 = this->kVersion == ApiVersion::kV0038;
  const absl::Time now = absl::FromUnixSeconds(1795301662);
  const nlohmann::json b = this->adapter_->JobUpdateBody(EveryJobUpdateField(), now);
  EXPECT_EQ(b.size(), 5u) << b;
  EXPECT_EQ(b["comment"], "onequeue: waiting for pod-a");
  EXPECT_EQ(b["hold"], true);
  EXPECT_EQ(json_fields::Number(b, "priority").value_or(-1), 1000000);
  if (v38) {
    EXPECT_EQ(b["priority"], 1000000);  // a plain number (the spec says string; both work live)
    EXPECT_EQ(b["nodelist"], "n1,n2");  // "required_nodes" is a "Disabled key" on 22.05
    EXPECT_EQ(b["begin_time"], "now");  // epochs are refused
  } else {
    EXPECT_EQ(b["priority"], (nlohmann::json{{"set", true}, {"infinite", false}, {"number", 1000000}}));
    EXPECT_EQ(b["begin_time"], (nlohmann::json{{"set", true}, {"infinite", false}, {"number", 1795301662}}));
    if (this->kVersion >= ApiVersion::kV0040) {
      EXPECT_EQ(b["required_nodes"], nlohmann::json::array({"n1", "n2"}));  // csv_string is an array
    } else {
      EXPECT_EQ(b["required_nodes"], "n1,n2");
    }
  }
  EXPECT_TRUE(this->adapter_->JobUpdateBody(JobUpdate{}, now).empty());  // unset = left as it is
  JobUpdate release;
  release.hold = false;
  EXPECT_EQ(this->adapter_->JobUpdateBody(release, now), this->adapter_->HoldBody(false));
  JobUpdate clear;
  clear.required_nodes = std::vector<std::string>{};
  const nlohmann::json cleared = this->adapter_->JobUpdateBody(clear, now);
  if (v38) {
    EXPECT_EQ(cleared, (nlohmann::json{{"nodelist", ""}}));  // clears ReqNodeList (live)
  } else {
    EXPECT_EQ(cleared.size(), 1u);
  }
}

// Issue 29: what the user asked of placement (--constraint, --nodelist, --exclude) and the
// AdminComment are read in every version (the same keys, strings, in every fixture's shape).
TYPED_TEST(AdapterTest, ConstraintNodeListExcludeAndAdminCommentAreRead) {
  nlohmann::json body = this->Fixture("jobs");
  nlohmann::json& j = body["jobs"][1];
  j["features"] = "[rack1*2&fast]";
  j["required_nodes"] = "n[1-2]";
  j["excluded_nodes"] = "n[3-4,7]";
  j["admin_comment"] = "onequeue: Priority: waiting";
  j["comment"] = "the user's own";
  absl::StatusOr<JobListing> l = this->adapter_->ParseJobs(body);
  ASSERT_TRUE(l.ok()) << l.status();
  const SlurmJob& big = Job(*l, 2);
  EXPECT_EQ(big.features, "[rack1*2&fast]");
  EXPECT_THAT(big.required_nodes, ElementsAre("n1", "n2"));
  EXPECT_THAT(big.excluded_nodes, ElementsAre("n3", "n4", "n7"));
  EXPECT_EQ(big.admin_comment, "onequeue: Priority: waiting");
  EXPECT_EQ(big.comment, "the user's own");
  EXPECT_TRUE(Job(*l, 1).features.empty());
  EXPECT_THAT(Job(*l, 1).excluded_nodes, IsEmpty());
}

// Issue 29: the AdminComment is written over REST from v0.0.39 ("admin_comment"); v0.0.38's parser
// has no such key, so the bridge sets it with scontrol there (RestSlurmApi::UpdateJob).
TYPED_TEST(AdapterTest, AdminCommentIsWrittenOverRestFromV0039) {
  JobUpdate u;
  u.admin_comment = "onequeue: started";
  const nlohmann::json b = this->adapter_->JobUpdateBody(u, absl::Now());
  if (this->kVersion == ApiVersion::kV0038) {
    EXPECT_FALSE(this->adapter_->SupportsAdminComment());
    EXPECT_TRUE(b.empty()) << b;
  } else {
    EXPECT_TRUE(this->adapter_->SupportsAdminComment());
    EXPECT_EQ(b, (nlohmann::json{{"admin_comment", "onequeue: started"}}));
  }
}

TEST(AdminCommentTest, V0038SetsTheAdminCommentWithScontrolAndTheRestOverRest) {
  using testing::Recorded;
  testing::ScriptedTransport* t = nullptr;
  std::vector<std::string> calls;
  std::unique_ptr<SlurmApi> api =
      testing::ScriptedSlurmApi(ApiVersion::kV0038, t, std::make_unique<testing::RecordingScontrol>(&calls));
  t->answers = {Recorded(200, "slurm-25.11/job-update-comment.json")};
  JobUpdate u;
  u.hold = true;
  u.admin_comment = "onequeue: Priority: waiting";
  ASSERT_TRUE(api->UpdateJob(7, u).ok());
  EXPECT_THAT(calls, ElementsAre("admin_comment 7 onequeue: Priority: waiting"));
  ASSERT_EQ(t->seen.size(), 1u);
  EXPECT_FALSE(absl::StrContains(t->seen[0].body, "comment")) << t->seen[0].body;
  api = testing::ScriptedSlurmApi(ApiVersion::kV0038, t);
  EXPECT_TRUE(absl::IsUnimplemented(api->UpdateJob(7, u)));
}

TYPED_TEST(AdapterTest, PathsCarryTheVersion) {
  const std::string v = VersionString(this->kVersion);
  EXPECT_EQ(this->adapter_->JobsPath(std::nullopt), "/slurm/" + v + "/jobs/");
  EXPECT_EQ(this->adapter_->JobsPath(17), "/slurm/" + v + "/jobs/?update_time=17");
  EXPECT_EQ(this->adapter_->NodePath("n3"), "/slurm/" + v + "/node/n3");
}

// "Nothing changed since update_time", in each form a server gives it: HTTP 304 (22.05's jobs,
// 25.11's nodes), error 1900, and 25.11's HTTP 200 with an empty list, last_update 0 and a warning
// (recorded, fixtures/slurm-25.11/jobs-unchanged.json). Never a listing that merely is empty, nor
// an error answer that happens to have an empty list (a rejected token on 25.11).
TYPED_TEST(AdapterTest, UnchangedAnswersInEveryForm) {
  const VersionAdapter& a = *this->adapter_;
  const bool data_parser = this->kVersion >= ApiVersion::kV0039;
  for (const char* key : {"jobs", "nodes"}) {
    EXPECT_TRUE(a.IsUnchangedAnswer(304, nullptr, key, true)) << key;
    EXPECT_TRUE(a.IsUnchangedAnswer(304, nullptr, key, false)) << key;
  }
  const nlohmann::json no_change = {{"jobs", nlohmann::json::array()},
                                    {"errors", {{{"error", "Data has not changed since time specified"},
                                                 {"error_number", kSlurmErrorNoChangeInData}}}}};
  EXPECT_TRUE(a.IsUnchangedAnswer(200, no_change, "jobs", true));
  EXPECT_TRUE(a.IsUnchangedAnswer(500, no_change, "jobs", true));

  const nlohmann::json unchanged2511 = ReadFixture("slurm-25.11/jobs-unchanged.json");
  EXPECT_EQ(a.IsUnchangedAnswer(200, unchanged2511, "jobs", true), data_parser);
  EXPECT_FALSE(a.IsUnchangedAnswer(200, unchanged2511, "jobs", false));  // a full listing asked for
  nlohmann::json without_warning = unchanged2511;
  without_warning["warnings"] = nlohmann::json::array();
  EXPECT_EQ(a.IsUnchangedAnswer(200, without_warning, "jobs", true), data_parser);  // last_update 0
  nlohmann::json really_empty = without_warning;
  really_empty["last_update"]["number"] = 1795368399;
  EXPECT_FALSE(a.IsUnchangedAnswer(200, really_empty, "jobs", true));

  EXPECT_FALSE(a.IsUnchangedAnswer(511, ReadFixture("slurm-25.11/bad-token.json"), "jobs", true));
  EXPECT_FALSE(a.IsUnchangedAnswer(200, this->Fixture("jobs"), "jobs", true));
  EXPECT_FALSE(a.IsUnchangedAnswer(200, this->Fixture("nodes"), "nodes", true));
}

// The error contract on answers real servers gave, through RestSlurmApi, in every version: v0.0.38
// with 22.05.8's (raw-22.05, v0.0.38/error_invalid_job.json, and the bad-token answer
// docs/slurm_bridge.md records), the data-parser versions with 25.11.7's (slurm-25.11/): the error
// and status shapes are the same from v0.0.40 to v0.0.44 in the specs (v0.0.39 has no `status` in
// its cancel answer, which only matters if 23.02 puts one there).
TYPED_TEST(AdapterTest, RecordedErrorAnswersKeepTheContract) {
  using testing::Recorded;
  const bool v38 = this->kVersion == ApiVersion::kV0038;
  testing::ScriptedTransport* t = nullptr;
  std::unique_ptr<SlurmApi> api = testing::ScriptedSlurmApi(this->kVersion, t);
  const HttpResponse unknown_get =
      v38 ? Recorded(500, "v0.0.38/error_invalid_job.json") : Recorded(404, "slurm-25.11/job-unknown.json");
  // 22.05: 500 + 2017 for every call on an unknown job; 25.11: a cancel answers 200 with 2017 in
  // `status`.
  const HttpResponse unknown_delete =
      v38 ? Recorded(500, "v0.0.38/error_invalid_job.json") : Recorded(200, "slurm-25.11/job-delete-unknown.json");
  const HttpResponse done = v38 ? HttpResponse{200, R"({"meta":{},"errors":[]})"} : Recorded(200, "slurm-25.11/job-delete.json");
  const nlohmann::json unspecified = {
      {"errors", {{{"error", "Unspecified error"}, {"error_number", -1}, {"source", "slurm_load_jobs"}}}}};
  const HttpResponse bad_token =
      v38 ? HttpResponse{500, unspecified.dump()} : Recorded(511, "slurm-25.11/bad-token.json");
  t->answers = {unknown_get, unknown_delete, unknown_delete, done, bad_token, bad_token, {401, "Authentication failure"}};

  absl::Status st = api->GetJob(999999).status();
  EXPECT_TRUE(absl::IsNotFound(st)) << st;
  EXPECT_EQ(SlurmErrorNumber(st), kSlurmErrorInvalidJobId);
  EXPECT_TRUE(api->CancelJob(999999).ok());  // idempotent: gone is done
  st = api->SignalJob(999999, "SIGUSR1");
  EXPECT_TRUE(absl::IsNotFound(st)) << st;
  EXPECT_THAT(st.message(), HasSubstr("Invalid job id specified"));
  EXPECT_TRUE(api->CancelJob(3).ok());
  // A rejected token: 25.11 says so (511, 1007), 22.05 cannot be told from a stopped slurmctld.
  for (std::optional<int64_t> since : {std::optional<int64_t>(), std::optional<int64_t>(1795368320)}) {
    st = api->ListJobs(since).status();
    if (v38) {
      EXPECT_TRUE(absl::IsUnavailable(st)) << st;
      EXPECT_THAT(st.message(), HasSubstr("rejected the token"));
    } else {
      EXPECT_TRUE(absl::IsUnauthenticated(st)) << st;  // an error, never "unchanged"
      EXPECT_THAT(st.message(), HasSubstr("token was rejected by slurmrestd"));
      EXPECT_EQ(SlurmErrorNumber(st), kSlurmErrorProtocolAuth);
    }
  }
  st = api->ListPartitions().status();  // no credentials: 401 in every version
  EXPECT_TRUE(absl::IsUnauthenticated(st)) << st;
  EXPECT_THAT(st.message(), HasSubstr("token was rejected by slurmrestd"));
}

// 25.11's successful answers to the calls onequeue makes (recorded): updates, a drain and a held
// submit whose warnings do not make it an error.
TEST(RecordedAnswers2511Test, SuccessfulCallsAreOk) {
  using testing::Recorded;
  testing::ScriptedTransport* t = nullptr;
  std::unique_ptr<SlurmApi> api = testing::ScriptedSlurmApi(ApiVersion::kV0044, t);
  t->answers = {Recorded(200, "slurm-25.11/job-update-hold.json"), Recorded(200, "slurm-25.11/job-update-comment.json"),
                Recorded(200, "slurm-25.11/node-update-drain.json"), Recorded(200, "slurm-25.11/job-submit.json"),
                Recorded(200, "slurm-25.11/job-1.json")};
  EXPECT_TRUE(api->HoldJob(3).ok());
  JobUpdate comment;
  comment.comment = "onequeue: waiting";
  EXPECT_TRUE(api->UpdateJob(3, comment).ok());
  EXPECT_TRUE(api->UpdateNode("n4", {NodeUpdate::Kind::kDrain, "onequeue:pod-p"}).ok());
  JobSubmission held;
  held.hold = true;
  absl::StatusOr<SubmitResult> r = api->Submit(held);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job_id, 10u);
  absl::StatusOr<SlurmJob> job = api->GetJob(1);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->held());
}

TEST(AdapterV2511Test, RealListingsFrom2511) {
  auto a = MakeAdapter(ApiVersion::kV0044);
  absl::StatusOr<JobListing> jobs = a->ParseJobs(ReadFixture("slurm-25.11/jobs.json"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->items.size(), 9u);
  EXPECT_EQ(jobs->last_update, 1795368320);
  EXPECT_EQ(Job(*jobs, 5).state, JobState::kRunning);
  EXPECT_THAT(Job(*jobs, 5).nodes, ElementsAre("n1", "n2"));
  EXPECT_TRUE(Job(*jobs, 1).held());
  EXPECT_EQ(Job(*jobs, 8).state_reason, "PartitionNodeLimit");
  EXPECT_EQ(Job(*jobs, 7).array_tasks, "1-3");
  absl::StatusOr<NodeListing> nodes = a->ParseNodes(ReadFixture("slurm-25.11/nodes.json"));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_EQ(nodes->items.size(), 4u);
  EXPECT_EQ(Node(*nodes, "n1").state, NodeState::kMixed);
  absl::StatusOr<PartitionListing> parts = a->ParsePartitions(ReadFixture("slurm-25.11/partitions.json"));
  ASSERT_TRUE(parts.ok()) << parts.status();
  ASSERT_EQ(parts->items.size(), 2u);
}

// Slurm 24.11.5 (v0.0.42, recorded live, fixtures/slurm-24.11/): an incremental node listing after
// a node changed and no partition did fails with HTTP 500 "Unable to query partitions"; the bridge
// then lists the nodes in full in the same call (as for 22.05's plain "Unspecified error").
TEST(RecordedAnswers2411Test, IncrementalNodeListingFallsBackToAFullOne) {
  using testing::Recorded;
  testing::ScriptedTransport* t = nullptr;
  std::unique_ptr<SlurmApi> api = testing::ScriptedSlurmApi(ApiVersion::kV0042, t);
  t->answers = {Recorded(500, "slurm-24.11/nodes-since-node-change.json"), Recorded(200, "v0.0.42/nodes.json")};
  absl::StatusOr<NodeListing> nodes = api->ListNodes(1795739990);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  EXPECT_FALSE(nodes->unchanged);
  EXPECT_FALSE(nodes->items.empty());
  ASSERT_EQ(t->seen.size(), 2u);
  EXPECT_EQ(t->seen[0].path, "/slurm/v0.0.42/nodes/?update_time=1795739990");
  EXPECT_EQ(t->seen[1].path, "/slurm/v0.0.42/nodes/");
  // Any other failure of an incremental listing stays a failure (no second request).
  t->seen.clear();
  t->answers = {Recorded(500, "slurm-25.11/bad-token.json")};
  EXPECT_FALSE(api->ListNodes(1795739990).ok());
  EXPECT_EQ(t->seen.size(), 1u);
}

// Slurm 26.05.5 (v0.0.45, recorded live, fixtures/slurm-26.05/): a requeued batch job and a
// running salloc allocation; the allocation (batch_flag false) counts as not requeueable, as Slurm
// refuses its requeue (2039). The unchanged-jobs answer has 25.11's form.
TEST(AdapterV2605Test, RealListingsFrom2605) {
  auto a = MakeAdapter(ApiVersion::kV0045);
  absl::StatusOr<JobListing> jobs = a->ParseJobs(ReadFixture("slurm-26.05/jobs.json"));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->items.size(), 2u);
  EXPECT_EQ(Job(*jobs, 1).state, JobState::kPending);
  EXPECT_EQ(Job(*jobs, 1).restart_count, 1);
  EXPECT_TRUE(Job(*jobs, 1).requeue);
  EXPECT_EQ(Job(*jobs, 2).state, JobState::kRunning);
  EXPECT_EQ(Job(*jobs, 2).name, "alloc");
  EXPECT_FALSE(Job(*jobs, 2).requeue);
  EXPECT_TRUE(a->IsUnchangedAnswer(200, ReadFixture("slurm-26.05/jobs-unchanged.json"), "jobs", true));
  EXPECT_FALSE(a->IsUnchangedAnswer(200, ReadFixture("slurm-26.05/jobs.json"), "jobs", true));
}

// Requeue: v0.0.45 over REST (GET job/{id}/requeue, no scontrol needed), with 26.05's recorded
// answers; every older version through scontrol, and kUnimplemented without it.
TEST(RequeueTest, V0045RequeuesOverRestOlderVersionsNeedScontrol) {
  using testing::Recorded;
  testing::ScriptedTransport* t = nullptr;
  std::unique_ptr<SlurmApi> api = testing::ScriptedSlurmApi(ApiVersion::kV0045, t);
  t->answers = {Recorded(200, "slurm-26.05/job-requeue-ok.json"), Recorded(422, "slurm-26.05/job-requeue-refused.json"),
                Recorded(404, "slurm-26.05/job-requeue-unknown.json")};
  EXPECT_TRUE(api->RequeueJob(1).ok());
  ASSERT_EQ(t->seen.size(), 1u);
  EXPECT_EQ(t->seen[0].method, "GET");
  EXPECT_EQ(t->seen[0].path, "/slurm/v0.0.45/job/1/requeue");
  absl::Status refused = api->RequeueJob(2);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_EQ(SlurmErrorNumber(refused), kSlurmErrorBatchOnly);
  EXPECT_TRUE(IsBatchOnlyRefusal(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("Only batch jobs"));
  EXPECT_TRUE(absl::IsNotFound(api->RequeueJob(99999)));

  for (ApiVersion v : {ApiVersion::kV0038, ApiVersion::kV0042, ApiVersion::kV0044}) {
    SCOPED_TRACE(VersionString(v));
    std::vector<std::string> calls;
    api = testing::ScriptedSlurmApi(v, t, std::make_unique<testing::RecordingScontrol>(&calls));
    EXPECT_TRUE(api->RequeueJob(7).ok());
    EXPECT_THAT(calls, ElementsAre("requeue 7"));
    EXPECT_TRUE(t->seen.empty());
    api = testing::ScriptedSlurmApi(v, t);
    EXPECT_TRUE(absl::IsUnimplemented(api->RequeueJob(7)));
  }
}

TEST(AdapterV0038Test, RealResponsesFrom2205) {
  auto a = MakeAdapter(ApiVersion::kV0038);
  absl::StatusOr<JobListing> jobs = a->ParseJobs(ReadFixture("raw-22.05/jobs38.json"));
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->items.size(), 3u);
  absl::StatusOr<NodeListing> nodes = a->ParseNodes(ReadFixture("raw-22.05/nodes38.json"));
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ(nodes->items.size(), 8u);
  absl::StatusOr<PartitionListing> parts = a->ParsePartitions(ReadFixture("raw-22.05/parts38.json"));
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->items.size(), 2u);
}

// Issue 29: partition limits as each version spells them (fixtures partitions-limits.json: batch
// DRAIN, MaxTime 60, MaxNodes 2, MinNodes 2, PreemptMode OFF; gpu INACTIVE, MaxNodes UNLIMITED).
TEST(PartitionLimitsTest, V0045ReadsNodeLimitsStateAndPreemptMode) {
  auto a = MakeAdapter(ApiVersion::kV0045);
  absl::StatusOr<PartitionListing> l = a->ParsePartitions(ReadFixture("v0.0.45/partitions-limits.json"));
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->items.size(), 2u);
  const SlurmPartition& batch = l->items[0];
  EXPECT_EQ(batch.state, "DRAIN");
  EXPECT_EQ(batch.max_time, absl::Minutes(60));
  EXPECT_EQ(batch.max_nodes, 2u);
  EXPECT_EQ(batch.min_nodes, 2u);
  EXPECT_THAT(batch.preempt_mode, ElementsAre("OFF"));  // Slurm's DISABLED
  EXPECT_TRUE(batch.preempt_off());
  const SlurmPartition& gpu = l->items[1];
  EXPECT_EQ(gpu.state, "INACTIVE");
  EXPECT_FALSE(gpu.max_nodes.has_value());
  EXPECT_EQ(gpu.min_nodes, 0u);
  EXPECT_THAT(gpu.preempt_mode, ElementsAre("CANCEL"));
  EXPECT_FALSE(gpu.preempt_off());
}

TEST(PartitionLimitsTest, V0038ReadsNodeLimitsButNotItsPreemptionMode) {
  auto a = MakeAdapter(ApiVersion::kV0038);
  absl::StatusOr<PartitionListing> l = a->ParsePartitions(ReadFixture("v0.0.38/partitions-limits.json"));
  ASSERT_TRUE(l.ok()) << l.status();
  ASSERT_EQ(l->items.size(), 2u);
  const SlurmPartition& batch = l->items[0];
  EXPECT_EQ(batch.state, "DRAIN");
  EXPECT_EQ(batch.max_time, absl::Minutes(60));
  EXPECT_EQ(batch.max_nodes, 2u);
  EXPECT_EQ(batch.min_nodes, 2u);
  EXPECT_THAT(batch.preempt_mode, IsEmpty());  // 22.05's preemption_mode is not the partition's
  EXPECT_EQ(l->items[1].state, "INACTIVE");
  EXPECT_FALSE(l->items[1].max_nodes.has_value());  // 0xFFFFFFFF: UNLIMITED
}

TYPED_TEST(AdapterTest, PartitionsWithoutLimitsHaveNone) {
  absl::StatusOr<PartitionListing> l = this->adapter_->ParsePartitions(this->Fixture("partitions"));
  ASSERT_TRUE(l.ok()) << l.status();
  for (const SlurmPartition& p : l->items) {
    EXPECT_FALSE(p.max_nodes.has_value()) << p.name;
    EXPECT_LE(p.min_nodes, 1u) << p.name;
    EXPECT_FALSE(p.preempt_off()) << p.name;
  }
}

TEST(AdapterV0038Test, PlaceholderBodyUsesTheKeysThatWorkOn2205) {
  auto a = MakeAdapter(ApiVersion::kV0038);
  JobSubmission job;
  job.nodelist = "n3";
  job.exclusive = true;
  const nlohmann::json body = a->SubmitBody(job);
  EXPECT_EQ(body["job"]["nodelist"], "n3");
  EXPECT_FALSE(body["job"].contains("required_nodes"));  // "Disabled key" on 22.05
  EXPECT_EQ(body["job"]["exclusive"], "exclusive");       // "true" is refused
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(a->BeginAtBody(now, now)["begin_time"], "now");  // epochs are refused
  EXPECT_EQ(a->BeginAtBody(now + absl::Milliseconds(1500), now)["begin_time"], "now+2");
}

TEST(ResponseStatusTest, MapsTheErrorsArray) {
  const nlohmann::json invalid_job = ReadFixture("v0.0.38/error_invalid_job.json");
  absl::Status st = ResponseStatus(500, invalid_job, "GET /slurm/v0.0.38/job/999");
  EXPECT_TRUE(absl::IsNotFound(st)) << st;
  EXPECT_THAT(st.message(), HasSubstr("Invalid job id specified"));
  EXPECT_EQ(SlurmErrorNumber(st), kSlurmErrorInvalidJobId);
  EXPECT_TRUE(absl::IsNotFound(ResponseStatus(500, ReadFixture("v0.0.44/error_invalid_job.json"), "x")));

  EXPECT_TRUE(ResponseStatus(200, ReadFixture("v0.0.41/jobs.json"), "x").ok());
  EXPECT_TRUE(absl::IsUnauthenticated(ResponseStatus(401, nullptr, "x")));
  EXPECT_TRUE(absl::IsUnimplemented(ResponseStatus(405, nullptr, "x")));
  EXPECT_TRUE(absl::IsUnavailable(ResponseStatus(503, nullptr, "x")));
  // 22.05: slurmctld down and a rejected token look the same; the message names both.
  const nlohmann::json unspecified = {{"errors", {{{"error", "Unspecified error"}, {"error_number", -1},
                                                   {"source", "slurm_load_jobs"}}}}};
  st = ResponseStatus(500, unspecified, "GET jobs");
  EXPECT_TRUE(absl::IsUnavailable(st));
  EXPECT_THAT(st.message(), HasSubstr("token"));
  const nlohmann::json denied = {{"errors", {{{"error", "Invalid user id"}, {"error_number", 2010}}}}};
  EXPECT_TRUE(absl::IsPermissionDenied(ResponseStatus(500, denied, "x")));
  // Errors in a 200 answer are still errors (22.05 returns parser failures that way).
  const nlohmann::json parse = {{"errors", {{{"error", "Failure during parsing"}, {"error_number", 9001}}}}};
  EXPECT_TRUE(absl::IsInvalidArgument(ResponseStatus(200, parse, "x")));
  const nlohmann::json comms = {{"errors", {{{"error", "Unable to contact slurm controller"}, {"error_number", 1001}}}}};
  EXPECT_TRUE(absl::IsUnavailable(ResponseStatus(500, comms, "x")));
}

TEST(ParseHelpersTest, TresAndGres) {
  auto tres = internal::ParseTres("cpu=8,mem=62.50G,node=4,billing=32,gres/gpu=2");
  EXPECT_EQ(tres["mem"], 64000);
  EXPECT_EQ(tres["gres/gpu"], 2);
  EXPECT_THAT(internal::ParseGres("gpu:a100:2(S:0-1),shard:4"),
              UnorderedElementsAre(Pair("gpu", 2), Pair("gpu:a100", 2), Pair("shard", 4)));
  EXPECT_THAT(internal::ParseGres("gpu:0(IDX:N/A)"), ElementsAre(Pair("gpu", 0)));
  EXPECT_THAT(internal::ParseGres("(null)"), IsEmpty());
  EXPECT_THAT(internal::ParseGres("gres/gpu=1,gres/gpu:tesla=1"),
              UnorderedElementsAre(Pair("gpu", 2), Pair("gpu:tesla", 1)));
}

TEST(JsonFieldsTest, NumbersInEveryShape) {
  namespace jf = json_fields;
  const nlohmann::json j = {{"plain", 5},
                            {"struct", {{"set", true}, {"infinite", false}, {"number", 7}}},
                            {"unset", {{"set", false}, {"number", 9}}},
                            {"inf", {{"set", false}, {"infinite", true}}},
                            {"nullv", nullptr},
                            {"text", "12"},
                            {"big", 4294967295u},
                            {"huge", 18446744073709551615u},
                            {"float", 2.5}};
  EXPECT_EQ(jf::Number(j, "plain").value, 5);
  EXPECT_EQ(jf::Number(j, "struct").value, 7);
  EXPECT_FALSE(jf::Number(j, "unset").has_value());
  EXPECT_EQ(jf::Number(j, "inf").kind, jf::SlurmNumber::Kind::kInfinite);
  EXPECT_FALSE(jf::Number(j, "nullv").has_value());
  EXPECT_FALSE(jf::Number(j, "missing").has_value());
  EXPECT_EQ(jf::Number(j, "text").value, 12);
  EXPECT_EQ(jf::Number(j, "big", true).kind, jf::SlurmNumber::Kind::kInfinite);
  EXPECT_EQ(jf::Number(j, "big", false).value, 4294967295);
  EXPECT_EQ(jf::Number(j, "huge").kind, jf::SlurmNumber::Kind::kInfinite);
  EXPECT_EQ(jf::Number(j, "float").value, 2);
  EXPECT_FALSE(jf::Number(nlohmann::json::array(), "plain").has_value());
}

TEST(VersionTest, ParseAndOrder) {
  EXPECT_EQ(*ParseApiVersion("v0.0.41"), ApiVersion::kV0041);
  EXPECT_EQ(*ParseApiVersion("0.0.38"), ApiVersion::kV0038);
  EXPECT_FALSE(ParseApiVersion("v0.0.37").ok());
  EXPECT_EQ(*ParseApiVersion("v0.0.45"), ApiVersion::kV0045);
  EXPECT_FALSE(ParseApiVersion("v0.0.46").ok());
  EXPECT_EQ(SupportedVersions().front(), ApiVersion::kV0045);
  EXPECT_EQ(SupportedVersions().back(), ApiVersion::kV0038);
}

}  // namespace
}  // namespace onequeue::slurm

namespace onequeue::slurm {
namespace {
// Issue 24 H2: a requeue Slurm refuses because the job is not a batch job (the job still runs) is
// told apart from the other kFailedPrecondition answers of a requeue (the job has left), whether
// the refusal came over REST (error 2039) or from scontrol (its message).
TEST(RequeueTest, ABatchOnlyRefusalIsToldApartFromAJobThatHasLeft) {
  EXPECT_TRUE(IsBatchOnlyRefusal(absl::FailedPreconditionError(
      "scontrol requeue 7: Requeue of JobId=7 returned an error: Only batch jobs are accepted or processed")));
  EXPECT_FALSE(IsBatchOnlyRefusal(absl::FailedPreconditionError("scontrol requeue 7: Job is pending execution")));
  EXPECT_FALSE(IsBatchOnlyRefusal(absl::FailedPreconditionError("job already completing or completed")));
  EXPECT_FALSE(IsBatchOnlyRefusal(absl::UnavailableError("Only batch jobs are accepted or processed")));
}
// Issue 29: reservations as three real slurmrestd answered them (recorded by the integration test
// with ONEQUEUE_RECORD_DIR): a MAINT reservation active from now, UNLIMITED (Slurm says 365 days),
// on n7, and one starting an hour later for 30 minutes on n8. 22.05 gives plain epoch numbers,
// 24.11 and 26.05 {"set","infinite","number"} objects.
TEST(ReservationsTest, RecordedAnswersOfEverySlurmReadTheSame) {
  const std::vector<std::pair<ApiVersion, std::string>> answers = {
      {ApiVersion::kV0038, "slurm-22.05/reservations.json"},
      {ApiVersion::kV0042, "slurm-24.11/reservations.json"},
      {ApiVersion::kV0045, "slurm-26.05/reservations.json"}};
  for (const auto& [version, file] : answers) {
    SCOPED_TRACE(file);
    absl::StatusOr<ReservationListing> l = MakeAdapter(version)->ParseReservations(testing::ReadFixture(file));
    ASSERT_TRUE(l.ok()) << l.status();
    ASSERT_EQ(l->items.size(), 2u);
    std::map<std::string, SlurmReservation> by_name;
    for (const SlurmReservation& r : l->items) by_name[r.name] = r;
    const SlurmReservation& maint = by_name.at("oq_maint");
    EXPECT_EQ(maint.nodes, std::vector<std::string>{"n7"});
    EXPECT_TRUE(maint.maint());
    EXPECT_EQ(maint.end - maint.start, absl::Hours(24 * 365));
    const SlurmReservation& later = by_name.at("oq_later");
    EXPECT_EQ(later.nodes, std::vector<std::string>{"n8"});
    EXPECT_FALSE(later.maint());
    EXPECT_EQ(later.end - later.start, absl::Minutes(30));
    EXPECT_GE(later.start - maint.start, absl::Hours(1));  // "now+3600", asked a moment later
    EXPECT_LE(later.start - maint.start, absl::Hours(1) + absl::Seconds(2));
  }
  EXPECT_EQ(MakeAdapter(ApiVersion::kV0045)->ReservationsPath(), "/slurm/v0.0.45/reservations/");
}

}  // namespace
}  // namespace onequeue::slurm


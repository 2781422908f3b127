// Issue 26: the job-state listings the poller's state mode reads, over real answers of 22.05
// (squeue), 24.11 and 26.05 (GET jobs/state/ and squeue), and which source each version uses.
#include <map>

#include "absl/strings/str_cat.h"
#include "fake_slurm_api.h"
#include "scripted_transport.h"
#include "slurm_bridge/adapter.h"
#include "slurm_bridge/scontrol.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace onequeue::slurm {
namespace {
using testing::ReadFixture;
using testing::ReadFixtureText;
using testing::Recorded;
using ::testing::ElementsAre;

// The records of a listing by id: "STATE tasks".
std::map<uint32_t, std::string> ByRecord(const JobStateListing& l) {
  std::map<uint32_t, std::string> out;
  for (const SlurmJobState& s : l.items) {
    std::string text = s.state == JobState::kUnknown ? "?" : JobStateName(s.state);
    for (const std::string& f : s.state_flags) text += "+" + f;
    out[s.job_id] = s.tasks.empty() ? text : text + " " + s.tasks;
  }
  return out;
}

// The fixtures' jobs: 1 held, 2 running, array 3 (0-9%2) held, array 4 (0-5%2) with tasks 0 and
// 1 running in records 6 and 7 and 2-5 pending in record 4, 5 completed.
TEST(JobStatesTest, RestListsEveryTaskOfAPendingArrayRecordAndTheyAreMergedIntoTheRecord) {
  for (const auto& [v, fixture] : {std::pair{ApiVersion::kV0042, "slurm-24.11/jobs-state.json"},
                                   std::pair{ApiVersion::kV0045, "slurm-26.05/jobs-state.json"}}) {
    SCOPED_TRACE(fixture);
    absl::StatusOr<JobStateListing> l = MakeAdapter(v)->ParseJobStates(ReadFixture(fixture));
    ASSERT_TRUE(l.ok()) << l.status();
    const std::map<uint32_t, std::string> expected = {
        {1, JobStateName(JobState::kPending)},
        {2, JobStateName(JobState::kRunning)},
        {3, std::string(JobStateName(JobState::kPending)) + " 0,1,2,3,4,5,6,7,8,9"},
        {4, std::string(JobStateName(JobState::kPending)) + " 2,3,4,5"},
        {5, JobStateName(JobState::kCompleted)},
        {6, std::string(JobStateName(JobState::kRunning)) + " 0"},
        {7, std::string(JobStateName(JobState::kRunning)) + " 1"}};
    EXPECT_EQ(ByRecord(*l), expected);
  }
}

// squeue --array on every version (recorded live, docs in the fixtures' README): 1 held, 2
// running, array 3 (0-9%2, held) with task 0 split off into record 6 (held, as a task onequeue is
// starting is until it runs), array 4 (0-5%2) with tasks 0 and 1 running in records 7 and 8 and
// 2-5 pending in record 4, 5 completed. A record of several lines (a pending array record) is one
// record with its tasks in order; the split task is a record of its own (without --array squeue
// merged it into record 3's line, and the poller took it for gone).
TEST(JobStatesTest, SqueueListsEachRecordOnceOnEveryVersion) {
  for (const char* fixture :
       {"slurm-22.05/squeue-states.txt", "slurm-24.11/squeue-states.txt", "slurm-26.05/squeue-states.txt"}) {
    SCOPED_TRACE(fixture);
    absl::StatusOr<JobStateListing> l = ParseSqueueStates(ReadFixtureText(fixture));
    ASSERT_TRUE(l.ok()) << l.status();
    const std::string pending = JobStateName(JobState::kPending);
    const std::string running = JobStateName(JobState::kRunning);
    const std::map<uint32_t, std::string> expected = {{1, pending},
                                                      {2, running},
                                                      {3, pending + " 1,2,3,4,5,6,7,8,9"},
                                                      {4, pending + " 2,3,4,5"},
                                                      {5, JobStateName(JobState::kCompleted)},
                                                      {6, pending + " 0"},
                                                      {7, running + " 0"},
                                                      {8, running + " 1"}};
    EXPECT_EQ(ByRecord(*l), expected);
  }
}

// A record's lines in another order (squeue sorts by priority) give the same record.
TEST(JobStatesTest, SqueueLinesOfOneRecordMergeInTaskOrder) {
  absl::StatusOr<JobStateListing> a = ParseSqueueStates("3|10|PENDING|\n3|2|PENDING|\n6|0|PENDING|\n");
  absl::StatusOr<JobStateListing> b = ParseSqueueStates("6|0|PENDING|\n3|2|PENDING|\n3|10|PENDING|\n");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->items, b->items);
  EXPECT_EQ(ByRecord(*a), (std::map<uint32_t, std::string>{{3, "PENDING 2,10"}, {6, "PENDING 0"}}));
}

// The listing must be complete (a record it lacks is taken as gone): what cannot be read fails it.
TEST(JobStatesTest, AnEntryThatCannotBeReadFailsTheListing) {
  EXPECT_FALSE(ParseSqueueStates("7|N/A|RUNNING|\nsqueue: error: something\n").ok());
  EXPECT_FALSE(ParseSqueueStates("x|N/A|RUNNING|\n").ok());
  EXPECT_TRUE(ParseSqueueStates("").ok());  // no job at all
  auto a = MakeAdapter(ApiVersion::kV0044);
  EXPECT_FALSE(a->ParseJobStates(nlohmann::json::parse(R"({"jobs":[{"job_id":"7","state":["RUNNING"]},{"state":["PENDING"]}]})")).ok());
  EXPECT_FALSE(a->ParseJobStates(nlohmann::json::parse(R"({"errors":[]})")).ok());
  absl::StatusOr<JobStateListing> l =
      a->ParseJobStates(nlohmann::json::parse(R"({"jobs":[{"job_id":7,"state":["RUNNING","COMPLETING"]}]})"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(ByRecord(*l), (std::map<uint32_t, std::string>{{7, "RUNNING+COMPLETING"}}));
}

// Ids as both sources may spell them; a het job's component "7+1" is record 7 (live: het job 6
// listed as "6+0" and "7+1").
TEST(JobStatesTest, RecordIdsOfArrayTasksAndHetComponents) {
  auto parse = [](const std::string& text) {
    uint32_t id = 0;
    std::string tasks;
    return ParseStateRecordId(text, id, tasks) ? absl::StrCat(id, "|", tasks) : std::string("error");
  };
  EXPECT_EQ(parse("7"), "7|");
  EXPECT_EQ(parse("7_3"), "7|3");
  EXPECT_EQ(parse("7_[0-3%2]"), "7|0-3%2");
  EXPECT_EQ(parse("4_*"), "4|*");  // a cancelled pending array record (live, 24.11)
  EXPECT_EQ(parse("6+0"), "6|");
  EXPECT_EQ(parse("7+1"), "7|");
  for (const char* bad : {"", "x", "0", "7_", "7_[0-3", "7_a", "7+", "7-1", "7+a"}) EXPECT_EQ(parse(bad), "error") << bad;
  absl::StatusOr<JobStateListing> l =
      MakeAdapter(ApiVersion::kV0042)->ParseJobStates(nlohmann::json::parse(
          R"({"jobs":[{"job_id":"6+0","state":["PENDING"]},{"job_id":"7+1","state":["PENDING"]},{"job_id":"8_0","state":["RUNNING"]}]})"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(ByRecord(*l), (std::map<uint32_t, std::string>{{6, "PENDING"}, {7, "PENDING"}, {8, "RUNNING 0"}}));
}

// A CommandRunner that answers with a fixed text and keeps the command lines.
class CannedRunner : public CommandRunner {
 public:
  CannedRunner(std::vector<std::vector<std::string>>* seen, std::string out) : seen_(seen), out_(std::move(out)) {}
  absl::StatusOr<std::string> Run(const std::vector<std::string>& argv) override {
    seen_->push_back(argv);
    return out_;
  }

 private:
  std::vector<std::vector<std::string>>* seen_;
  std::string out_;
};

// Which source: jobs/state/ from v0.0.41 (24.11's v0.0.40 answers 404), the squeue beside
// scontrol before, and kUnimplemented without scontrol (the poller keeps update_time).
TEST(JobStatesTest, V0041AndLaterAskRestOlderVersionsTheSqueueBesideScontrol) {
  testing::ScriptedTransport* t = nullptr;
  for (ApiVersion v : {ApiVersion::kV0041, ApiVersion::kV0042, ApiVersion::kV0045}) {
    std::unique_ptr<SlurmApi> api = testing::ScriptedSlurmApi(v, t);
    t->answers = {Recorded(200, "slurm-24.11/jobs-state.json")};
    absl::StatusOr<JobStateListing> l = api->ListJobStates();
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->items.size(), 7u);
    ASSERT_EQ(t->seen.size(), 1u);
    EXPECT_EQ(t->seen[0].path, "/slurm/" + VersionString(v) + "/jobs/state/");
  }
  for (ApiVersion v : {ApiVersion::kV0038, ApiVersion::kV0040}) {
    SCOPED_TRACE(VersionString(v));
    std::vector<std::vector<std::string>> seen;
    std::unique_ptr<SlurmApi> api = testing::ScriptedSlurmApi(
        v, t,
        MakeScontrol("/opt/slurm/bin/scontrol",
                     std::make_unique<CannedRunner>(&seen, ReadFixtureText("slurm-22.05/squeue-states.txt"))));
    absl::StatusOr<JobStateListing> l = api->ListJobStates();
    ASSERT_TRUE(l.ok()) << l.status();
    EXPECT_EQ(l->items.size(), 8u);
    EXPECT_TRUE(t->seen.empty());
    EXPECT_THAT(seen, ElementsAre(ElementsAre("/opt/slurm/bin/squeue", "--noheader", "--all", "--array", "--states=all", "-O",
                                              "JobID:|,ArrayTaskID:|,State:|")));
    EXPECT_TRUE(absl::IsUnimplemented(testing::ScriptedSlurmApi(v, t)->ListJobStates().status()));
  }
}

}  // namespace
}  // namespace onequeue::slurm

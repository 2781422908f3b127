// Issue 25 (shared nodes): what Slurm allocated to each running job on each node (CPUs, memory,
// GRES with indices), read by every adapter from real answers: 22.05.8 (v0.0.38), 24.11.5
// (v0.0.40, v0.0.41, v0.0.42), 25.11.7 (v0.0.44) and 26.05.5 (v0.0.45). An answer that cannot be
// read is a clear error on the job (it then counts as taking its whole nodes), never a lost job.
#include <algorithm>
#include <functional>

#include "fixture_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "slurm_bridge/adapter.h"
#include "slurm_bridge/model.h"

namespace onequeue::slurm {
namespace {
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;
using testing::ReadFixture;

const SlurmJob& JobOf(const JobListing& l, uint32_t id) {
  auto it = std::find_if(l.items.begin(), l.items.end(), [&](const SlurmJob& j) { return j.job_id == id; });
  EXPECT_NE(it, l.items.end()) << "job " << id;
  return *it;
}

JobListing Parse(ApiVersion v, const nlohmann::json& body) {
  absl::StatusOr<JobListing> l = MakeAdapter(v)->ParseJobs(body);
  EXPECT_TRUE(l.ok()) << l.status();
  return l.value_or(JobListing{});
}

TEST(GresWithIndicesTest, CountsAndIndices) {
  struct Case {
    std::string in;
    GresMap counts;
    GresIndices indices;
  };
  const Case cases[] = {
      {"gpu:2(IDX:0-1)", {{"gpu", 2}}, {{"gpu", {0, 1}}}},
      {"gpu:a100:2(IDX:0,2)", {{"gpu", 2}, {"gpu:a100", 2}}, {{"gpu", {0, 2}}, {"gpu:a100", {0, 2}}}},
      {"gpu:1(IDX:3),gres/shard:2", {{"gpu", 1}, {"shard", 2}}, {{"gpu", {3}}}},
      {"gpu:4(IDX:0-1,3)", {{"gpu", 4}}, {{"gpu", {0, 1, 3}}}},
      {"gpu:0(IDX:N/A)", {{"gpu", 0}}, {}},
      {"gpu:1", {{"gpu", 1}}, {}},  // no File= in gres.conf: counts only (25.11's gres_used)
      {"", {}, {}},
      {"(null)", {}, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    GresMap counts;
    GresIndices indices;
    ASSERT_TRUE(ParseGresWithIndices(c.in, &counts, &indices).ok());
    EXPECT_EQ(counts, c.counts);
    EXPECT_EQ(indices, c.indices);
  }
  for (const char* bad : {"gpu:1(IDX:x)", "gpu:1(IDX:3-1)", "gpu:1(IDX:0", "gpu:1(IDX:0-)"}) {
    GresMap counts;
    GresIndices indices;
    absl::Status st = ParseGresWithIndices(bad, &counts, &indices);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_THAT(st.message(), HasSubstr("GRES")) << bad;
  }
}

// 22.05.8 (v0.0.38), recorded: allocated_nodes[] with nodename, memory_allocated and allocated
// cores (no CPU count: "cpus_used" is usage), and one gres_detail entry per node.
TEST(JobAllocationTest, V0038From2205) {
  const JobListing l = Parse(ApiVersion::kV0038, ReadFixture("raw-22.05/jobs38.json"));
  const SlurmJob& j = JobOf(l, 1);
  ASSERT_TRUE(j.allocation.readable()) << j.allocation.error;
  ASSERT_EQ(j.allocation.nodes.size(), 2u);
  const NodeAllocation& n1 = j.allocation.nodes[0];
  EXPECT_EQ(n1.node, "n1");
  EXPECT_EQ(n1.cpus, 3u);  // three cores allocated, one CPU per core (job cpus 4 = 4 cores)
  EXPECT_EQ(n1.memory_mb, 1000);
  EXPECT_THAT(n1.gres, ElementsAre(Pair("gpu", 1)));
  EXPECT_THAT(n1.gres_indices.at("gpu"), ElementsAre(0));
  const NodeAllocation& n2 = j.allocation.nodes[1];
  EXPECT_EQ(n2.node, "n2");
  EXPECT_EQ(n2.cpus, 1u);
  EXPECT_EQ(n2.memory_mb, 1000);
  EXPECT_THAT(n2.gres_indices.at("gpu"), ElementsAre(0));
  EXPECT_EQ(j.allocation.On("n2"), &n2);
  EXPECT_EQ(j.allocation.On("n3"), nullptr);
  // Pending jobs have no allocation and no error.
  EXPECT_THAT(JobOf(l, 2).allocation.nodes, IsEmpty());
  EXPECT_THAT(JobOf(l, 2).allocation.error, IsEmpty());
}

// 25.11.7 (v0.0.44), recorded: job_resources.nodes.allocation[] with cpus.count, memory.allocated.
TEST(JobAllocationTest, V0044From2511) {
  const JobListing l = Parse(ApiVersion::kV0044, ReadFixture("slurm-25.11/jobs.json"));
  const SlurmJob& two = JobOf(l, 5);  // n[1-2], 3 CPUs, 1000 + 500 MB
  ASSERT_TRUE(two.allocation.readable()) << two.allocation.error;
  ASSERT_EQ(two.allocation.nodes.size(), 2u);
  EXPECT_EQ(two.allocation.nodes[0].node, "n1");
  EXPECT_EQ(two.allocation.nodes[0].cpus, 2u);
  EXPECT_EQ(two.allocation.nodes[0].memory_mb, 1000);
  EXPECT_THAT(two.allocation.nodes[0].gres, IsEmpty());
  EXPECT_EQ(two.allocation.nodes[1].node, "n2");
  EXPECT_EQ(two.allocation.nodes[1].cpus, 1u);
  EXPECT_EQ(two.allocation.nodes[1].memory_mb, 500);
  const SlurmJob& gpu = JobOf(l, 9);  // gres_detail ["gpu:1(IDX:0)"]
  ASSERT_TRUE(gpu.allocation.readable()) << gpu.allocation.error;
  ASSERT_EQ(gpu.allocation.nodes.size(), 1u);
  EXPECT_EQ(gpu.allocation.nodes[0].cpus, 1u);
  EXPECT_THAT(gpu.allocation.nodes[0].gres, ElementsAre(Pair("gpu", 1)));
  EXPECT_THAT(gpu.allocation.nodes[0].gres_indices.at("gpu"), ElementsAre(0));
  for (const SlurmJob& j : l.items)
    if (j.state == JobState::kRunning) EXPECT_TRUE(j.allocation.readable()) << j.job_id << ": " << j.allocation.error;
}

// 26.05.5 (v0.0.45), recorded: the same layout; an salloc allocation of one CPU and 1000 MB.
TEST(JobAllocationTest, V0045From2605) {
  const JobListing l = Parse(ApiVersion::kV0045, ReadFixture("slurm-26.05/jobs.json"));
  const SlurmJob& j = JobOf(l, 2);
  ASSERT_TRUE(j.allocation.readable()) << j.allocation.error;
  ASSERT_EQ(j.allocation.nodes.size(), 1u);
  EXPECT_EQ(j.allocation.nodes[0].node, "n1");
  EXPECT_EQ(j.allocation.nodes[0].cpus, 1u);
  EXPECT_EQ(j.allocation.nodes[0].memory_mb, 1000);
}

// What cannot be read is an error on the job, which is kept (nothing is lost).
TEST(JobAllocationTest, UnreadableAllocationsAreAClearErrorOnAKeptJob) {
  const nlohmann::json recorded = ReadFixture("slurm-25.11/jobs.json");
  auto with = [&](const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json body = recorded;
    for (nlohmann::json& j : body["jobs"])
      if (j["job_id"] == 9) change(j);
    const JobListing l = Parse(ApiVersion::kV0044, body);
    EXPECT_EQ(l.items.size(), recorded["jobs"].size());
    return JobOf(l, 9).allocation;
  };
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> change;
    const char* message;
  };
  const Case cases[] = {
      {"no job_resources", [](nlohmann::json& j) { j.erase("job_resources"); }, "no job_resources"},
      {"empty allocation", [](nlohmann::json& j) { j["job_resources"]["nodes"]["allocation"] = nlohmann::json::array(); },
       "no nodes.allocation"},
      {"bad index", [](nlohmann::json& j) { j["gres_detail"] = {"gpu:1(IDX:zero)"}; }, "gres_detail[0]"},
      {"detail per node", [](nlohmann::json& j) { j["gres_detail"] = {"gpu:1(IDX:0)", "gpu:1(IDX:1)"}; },
       "2 entries for 1 nodes"},
      {"no cpus", [](nlohmann::json& j) { j["job_resources"]["nodes"]["allocation"][0].erase("cpus");
                                          j["job_resources"]["nodes"]["allocation"][0].erase("sockets"); },
       "no CPU count for node n1"},
      {"no memory", [](nlohmann::json& j) { j["job_resources"]["nodes"]["allocation"][0].erase("memory"); },
       "no memory for node n1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const JobAllocation a = with(c.change);
    EXPECT_FALSE(a.readable());
    EXPECT_THAT(a.nodes, IsEmpty());
    EXPECT_THAT(a.error, HasSubstr("job 9: cannot read its allocation per node"));
    EXPECT_THAT(a.error, HasSubstr(c.message));
    EXPECT_THAT(a.error, HasSubstr("counted as taking its whole nodes"));
  }
}

// The node's GPUs in use with indices, where the version gives them.
TEST(NodeGresUsedTest, IndicesWhereGiven) {
  for (ApiVersion v : SupportedVersions()) {
    SCOPED_TRACE(VersionString(v));
    nlohmann::json body = {{"nodes", {{{"name", "n1"}, {"gres", "gpu:4"}, {"gres_used", "gpu:3(IDX:0-1,3)"}},
                                      {{"name", "n2"}, {"gres", "gpu:2"}, {"gres_used", "gpu:0(IDX:N/A)"}},
                                      {{"name", "n3"}, {"gres", "gpu:2"}, {"gres_used", "gpu:1"}}}}};
    absl::StatusOr<NodeListing> l = MakeAdapter(v)->ParseNodes(body);
    ASSERT_TRUE(l.ok()) << l.status();
    ASSERT_EQ(l->items.size(), 3u);
    EXPECT_THAT(l->items[0].gres_used, ElementsAre(Pair("gpu", 3)));
    EXPECT_THAT(l->items[0].gres_used_indices, ElementsAre(Pair("gpu", ElementsAre(0, 1, 3))));
    EXPECT_THAT(l->items[1].gres_used_indices, IsEmpty());
    EXPECT_THAT(l->items[2].gres_used_indices, IsEmpty());
  }
}

}  // namespace
}  // namespace onequeue::slurm

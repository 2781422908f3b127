// Issue 29: a Slurm job's --constraint over node features, as Slurm reads it (table-driven).
#include <gtest/gtest.h>

#include "queue/eligibility.h"

namespace onequeue::queue {
namespace {

struct MatchCase {
  const char* expression;
  std::vector<std::string> node;
  bool matches;
};

TEST(FeatureConstraintTest, AndOrAndGroupsMatchOneNodeAsSlurmDoes) {
  const MatchCase cases[] = {
      {"fast", {"fast", "ib"}, true},
      {"fast", {"ib"}, false},
      {"fast&ib", {"fast", "ib"}, true},
      {"fast&ib", {"fast"}, false},
      {"fast,ib", {"fast"}, false},  // comma is AND
      {"fast|gpu", {"gpu"}, true},
      {"fast|gpu", {"ib"}, false},
      // Left to right, no precedence: (a|b)&c.
      {"a|b&c", {"a"}, false},
      {"a|b&c", {"a", "c"}, true},
      {"a|(b&c)", {"a"}, true},
      {"(rack1|rack2)&fast", {"rack2", "fast"}, true},
      {"(rack1|rack2)&fast", {"rack3", "fast"}, false},
      {"[rack1|rack2]", {"rack2"}, true},  // matching OR, read per node
      {"gpu*2", {"gpu"}, true},
  };
  for (const MatchCase& c : cases) {
    absl::StatusOr<FeatureConstraint> f = FeatureConstraint::Parse(c.expression);
    ASSERT_TRUE(f.ok()) << c.expression << ": " << f.status();
    EXPECT_EQ(f->Matches(c.node), c.matches) << c.expression;
  }
}

TEST(FeatureConstraintTest, MalformedExpressionsAreRefusedWithWhereAndWhy) {
  for (const char* bad : {"", "a&", "&a", "a||b", "(a|b", "a)", "!a", "a*0", "a*x", "[a|[b]]"}) {
    absl::StatusOr<FeatureConstraint> f = FeatureConstraint::Parse(bad);
    EXPECT_FALSE(f.ok()) << "\"" << bad << "\" was accepted";
    if (!f.ok()) {
      EXPECT_NE(f.status().message().find("position"), std::string::npos) << f.status();
    }
  }
}

TEST(FeatureConstraintTest, CountsAndBracketsArePlannedOnlyWhenEveryNodeMustMeetAll) {
  auto rule = [](const char* e, int nodes) { return FeatureConstraint::Parse(e)->PerNodeRuleFor(nodes); };
  EXPECT_EQ(rule("fast&ib", 4), "");
  EXPECT_FALSE(FeatureConstraint::Parse("fast&ib")->MixesNodes());
  EXPECT_EQ(rule("[rack1|rack2]", 1), "");    // one node: matching OR is OR
  EXPECT_EQ(rule("gpu*2", 2), "");            // both nodes have gpu
  EXPECT_NE(rule("gpu*2", 4), "");            // 2 of 4: a mix
  EXPECT_NE(rule("[rack1*2&rack2*4]", 6), "");
  EXPECT_NE(rule("[rack1|rack2]", 2), "");    // all nodes on the same one: not a per-node rule
  EXPECT_NE(rule("gpu*2", 1), "");            // more nodes than the job has
  EXPECT_NE(rule("[rack1|rack2]", 2).find("brackets"), std::string::npos);
}

}  // namespace
}  // namespace onequeue::queue

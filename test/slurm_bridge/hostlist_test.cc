#include "slurm_bridge/hostlist.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace onequeue::slurm {
namespace {
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(HostlistTest, ExpandsRangesListsAndPadding) {
  struct Case {
    std::string expr;
    std::vector<std::string> want;
  } cases[] = {
      {"n1", {"n1"}},
      {"n[1-3,5]", {"n1", "n2", "n3", "n5"}},
      {"n[01-03]", {"n01", "n02", "n03"}},
      {"a[1-2],b,c[7]", {"a1", "a2", "b", "c7"}},
      {"gpu[9-10]-ib", {"gpu9-ib", "gpu10-ib"}},
      {"", {}},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<std::string>> got = ExpandHostlist(c.expr);
    ASSERT_TRUE(got.ok()) << c.expr << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.expr;
  }
}

TEST(HostlistTest, RefusesMalformedAndHugeExpressions) {
  for (const char* bad : {"n[1-", "n[3-1]", "n[a-b]", "n]", "n[1-2][3]", "n[,]", "n[1--2]"})
    EXPECT_FALSE(ExpandHostlist(bad).ok()) << bad;
  EXPECT_FALSE(ExpandHostlist("n[1-999999999]", 1000).ok());
}

TEST(HostlistTest, CompressIsTheInverse) {
  EXPECT_EQ(CompressHostlist({"n1", "n2", "n3", "n5"}), "n[1-3,5]");
  EXPECT_EQ(CompressHostlist({"n3"}), "n3");
  EXPECT_EQ(CompressHostlist({"n01", "n02", "login"}), "n[01-02],login");
  EXPECT_THAT(CompressHostlist({}), IsEmpty());
  for (const char* expr : {"n[1-3,5]", "a[1-2],b", "x[08-11]"}) {
    absl::StatusOr<std::vector<std::string>> names = ExpandHostlist(expr);
    ASSERT_TRUE(names.ok());
    absl::StatusOr<std::vector<std::string>> again = ExpandHostlist(CompressHostlist(*names));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *names) << expr;
  }
}

}  // namespace
}  // namespace onequeue::slurm

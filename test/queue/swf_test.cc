// The SWF parser: the 18 fields, the header, -1 for unknown, and every malformed line reported
// with its line number (all of them, not just the first).
#include "queue/swf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace onequeue::queue {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

std::string ReadSourceFile(const std::string& relative) {
  const char* root = std::getenv("ONEQUEUE_SOURCE_DIR");
  const std::string path = std::string(root ? root : ".") + "/" + relative;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SwfParser, ReadsAllEighteenFieldsAndTheHeader) {
  const std::string text =
      "; Version: 2.2\n"
      "; Computer: test machine: with a colon in the value\n"
      "; This line is prose, not a field\n"
      "; MaxNodes: 64\n"
      ";MaxProcs:128\n"
      "\n"
      "  1   0  5 100 8 95.5 1024 8 120 2048 1 3 4 5 6 7 -1 -1\n"
      "\t2\t10\t-1\t-1\t-1\t-1\t-1\t16\t-1\t-1\t0\t3\t4\t-1\t1\t1\t1\t30\r\n";
  SwfParseResult r = ParseSwf(text);
  ASSERT_THAT(r.errors, SizeIs(0));
  EXPECT_EQ(r.trace.header.max_nodes, 64);
  EXPECT_EQ(r.trace.header.max_procs, 128);
  EXPECT_THAT(r.trace.header.fields,
              ElementsAre(std::pair<std::string, std::string>("Version", "2.2"),
                          std::pair<std::string, std::string>("Computer", "test machine: with a colon in the value"),
                          std::pair<std::string, std::string>("MaxNodes", "64"),
                          std::pair<std::string, std::string>("MaxProcs", "128")));
  ASSERT_THAT(r.trace.jobs, SizeIs(2));
  const SwfJob& a = r.trace.jobs[0];
  EXPECT_EQ(a.job_number, 1);
  EXPECT_EQ(a.submit_time, 0);
  EXPECT_EQ(a.wait_time, 5);
  EXPECT_EQ(a.run_time, 100);
  EXPECT_EQ(a.allocated_procs, 8);
  EXPECT_DOUBLE_EQ(a.avg_cpu_time, 95.5);
  EXPECT_DOUBLE_EQ(a.used_memory, 1024);
  EXPECT_EQ(a.requested_procs, 8);
  EXPECT_EQ(a.requested_time, 120);
  EXPECT_DOUBLE_EQ(a.requested_memory, 2048);
  EXPECT_EQ(a.status, 1);
  EXPECT_EQ(a.user_id, 3);
  EXPECT_EQ(a.group_id, 4);
  EXPECT_EQ(a.executable, 5);
  EXPECT_EQ(a.queue, 6);
  EXPECT_EQ(a.partition, 7);
  EXPECT_EQ(a.preceding_job, -1);
  EXPECT_EQ(a.think_time, -1);
  EXPECT_EQ(a.line, 7);
  const SwfJob& b = r.trace.jobs[1];
  EXPECT_EQ(b.run_time, -1);
  EXPECT_EQ(b.requested_time, -1);
  EXPECT_EQ(b.preceding_job, 1);
  EXPECT_EQ(b.think_time, 30);
  EXPECT_EQ(b.line, 8);
}

TEST(SwfParser, ProcessorsPreferTheRequestThenTheAllocation) {
  SwfJob j;
  j.requested_procs = 4;
  j.allocated_procs = 8;
  EXPECT_EQ(j.Processors(), 4);
  j.requested_procs = -1;
  EXPECT_EQ(j.Processors(), 8);
  j.allocated_procs = -1;
  EXPECT_EQ(j.Processors(), -1);
}

TEST(SwfParser, CollectsEveryMalformedLineWithItsNumber) {
  const std::string text =
      "; MaxProcs: lots\n"                                      // 1: bad header value
      "1 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n"          // 2: fine
      "2 0 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1\n"             // 3: 17 fields
      "3 0 -1 ten 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n"         // 4: not a number
      "4 0 -1 10 1 -1 -1 1 -7 -1 1 1 1 -1 1 1 -1 -1\n"          // 5: below -1
      "1 5 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n"          // 6: duplicate job number
      "0 5 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n"          // 7: job number 0
      "5 5 -1 10 1 nan -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n"         // 8: nan in a fractional field
      "6 99999999999999999999 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n"  // 9: overflow
      "7 5 -1 1.5 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n"         // 10: fraction in an integer field
      "8 5 -1 10 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n";         // 11: fine
  SwfParseResult r = ParseSwf(text);
  EXPECT_THAT(r.trace.jobs, ElementsAre(Field(&SwfJob::job_number, 1), Field(&SwfJob::job_number, 8)));
  ASSERT_THAT(r.errors, SizeIs(9));
  std::vector<int> lines;
  for (const auto& e : r.errors) lines.push_back(e.line);
  EXPECT_THAT(lines, ElementsAre(1, 3, 4, 5, 6, 7, 8, 9, 10));
  EXPECT_THAT(r.errors[0].message, HasSubstr("header MaxProcs must be a positive integer"));
  EXPECT_THAT(r.errors[1].message, HasSubstr("expected 18 whitespace-separated fields, found 17"));
  EXPECT_THAT(r.errors[2].message, HasSubstr("field 4 (run time) is not an integer: 'ten'"));
  EXPECT_THAT(r.errors[3].message, HasSubstr("field 9 (requested time) must be >= 0, or -1 for unknown; got -7"));
  EXPECT_THAT(r.errors[4].message, HasSubstr("job number 1 is already used on line 2"));
  EXPECT_THAT(r.errors[5].message, HasSubstr("field 1 (job number) must be positive"));
  EXPECT_THAT(r.errors[6].message, HasSubstr("field 6 (average CPU time) is not a number"));
  EXPECT_THAT(r.errors[7].message, HasSubstr("field 2 (submit time) is out of range"));
  EXPECT_THAT(r.errors[8].message, HasSubstr("field 4 (run time) is not an integer: '1.5'"));
  EXPECT_EQ(r.errors[2].ToString(), "line 4: field 4 (run time) is not an integer: 'ten'");
}

TEST(SwfParser, StrictParseListsErrorsThenCountsTheRest) {
  std::string text;
  for (int i = 0; i < 5; ++i) text += "x\n";
  auto strict = ParseSwfStrict(text, /*max_listed=*/2);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(strict.status().message()), HasSubstr("(5 errors)"));
  EXPECT_THAT(std::string(strict.status().message()), HasSubstr("line 1: expected 18"));
  EXPECT_THAT(std::string(strict.status().message()), HasSubstr("line 2: expected 18"));
  EXPECT_THAT(std::string(strict.status().message()), HasSubstr("... and 3 more"));
  EXPECT_THAT(std::string(strict.status().message()), Not(HasSubstr("line 3:")));
}

TEST(SwfParser, QuotesBinaryGarbageSafely) {
  std::string text = "1 0 -1 \x01\xff 1 -1 -1 1 10 -1 1 1 1 -1 1 1 -1 -1\n";
  SwfParseResult r = ParseSwf(text);
  ASSERT_THAT(r.errors, SizeIs(1));
  EXPECT_THAT(r.errors[0].message, HasSubstr("'\\x01\\xff'"));
}

TEST(SwfParser, EmptyTextIsAnEmptyTrace) {
  SwfParseResult r = ParseSwf("");
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.trace.jobs.empty());
  EXPECT_FALSE(r.trace.header.max_procs.has_value());
}

TEST(SwfParser, FormatRoundTrips) {
  const std::string text =
      "; MaxProcs: 16\n"
      "1 0 5 100 8 95.25 1024 8 120 2048.5 1 3 4 5 6 7 -1 -1\n"
      "2 10 -1 -1 -1 -1 -1 16 -1 -1 0 3 4 -1 1 1 1 30\n";
  SwfParseResult first = ParseSwf(text);
  ASSERT_TRUE(first.errors.empty());
  SwfParseResult second = ParseSwf(FormatSwf(first.trace));
  ASSERT_TRUE(second.errors.empty());
  EXPECT_EQ(FormatSwf(second.trace), FormatSwf(first.trace));
  EXPECT_EQ(second.trace.header.max_procs, 16);
  ASSERT_THAT(second.trace.jobs, SizeIs(2));
  EXPECT_DOUBLE_EQ(second.trace.jobs[0].avg_cpu_time, 95.25);
  EXPECT_DOUBLE_EQ(second.trace.jobs[0].requested_memory, 2048.5);
}

TEST(SwfParser, TheTestTraceIsClean) {
  const std::string text = ReadSourceFile("test/queue/traces/backfill32.swf");
  ASSERT_FALSE(text.empty()) << "set ONEQUEUE_SOURCE_DIR to the repository root";
  auto trace = ParseSwfStrict(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->header.max_procs, 32);
  EXPECT_GE(trace->jobs.size(), 40u);
  for (const SwfJob& j : trace->jobs) {
    EXPECT_GT(j.Processors(), 0) << "job " << j.job_number;
    EXPECT_LE(j.Processors(), 32) << "job " << j.job_number;
    EXPECT_LE(j.run_time, j.requested_time) << "job " << j.job_number;
  }
}

}  // namespace
}  // namespace onequeue::queue

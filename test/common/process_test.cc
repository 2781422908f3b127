// The process helper every test uses to start children (test/common/process.h).
#include "common/process.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace onequeue::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

ProcessOptions Shell(const std::string& script) { return {.argv = {"/bin/sh", "-c", script}}; }

std::string TempDir() {
  char templ[] = "/tmp/onequeue-process-test-XXXXXX";
  EXPECT_NE(mkdtemp(templ), nullptr) << std::strerror(errno);
  return templ;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(RunProcess, CapturesStdoutAndStderrApartOrMergedAndTheExitCode) {
  auto r = RunProcess(Shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");

  ProcessOptions merged = Shell("echo out; echo err >&2");
  merged.merge_stderr = true;
  r = RunProcess(merged);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, "out\nerr\n");
  EXPECT_EQ(r->err, "");
}

TEST(RunProcess, FeedsStdinAndOtherwiseGivesDevNull) {
  std::string big(1 << 20, 'x');  // more than a pipe holds
  ProcessOptions o{.argv = {"/usr/bin/wc", "-c"}, .stdin_text = big};
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(r->out), std::to_string(big.size()));

  // A child that never reads its stdin neither blocks us nor kills us with SIGPIPE.
  o = Shell("exit 0");
  o.stdin_text = big;
  r = RunProcess(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);

  r = RunProcess(Shell("cat; echo end"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "end\n");
}

TEST(RunProcess, ExtraEnvironmentComesFirstAndWinsCleanEnvironmentHasOnlyIt) {
  setenv("ONEQUEUE_PROCESS_TEST", "inherited", 1);
  ProcessOptions o{.argv = {"/usr/bin/env"}, .env = {"ONEQUEUE_PROCESS_TEST=extra", "ONEQUEUE_OTHER=1"}};
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(absl::StartsWith(r->out, "ONEQUEUE_PROCESS_TEST=extra\nONEQUEUE_OTHER=1\n")) << r->out;
  EXPECT_FALSE(absl::StrContains(r->out, "inherited")) << r->out;
  EXPECT_TRUE(absl::StrContains(r->out, "\nPATH=")) << r->out;

  o.inherit_env = false;
  r = RunProcess(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "ONEQUEUE_PROCESS_TEST=extra\nONEQUEUE_OTHER=1\n");
  unsetenv("ONEQUEUE_PROCESS_TEST");
}

TEST(RunProcess, RunsInTheWorkingDirectoryAndWritesTheOutputFile) {
  const std::string dir = TempDir();
  ProcessOptions o{.argv = {"/bin/pwd"}, .cwd = dir, .output_file = dir + "/out.log"};
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok()) << r.status();
  r = RunProcess(o);  // appends
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "");
  EXPECT_EQ(ReadAll(dir + "/out.log"), dir + "\n" + dir + "\n");
  std::filesystem::remove_all(dir);
}

TEST(RunProcess, TimeoutKillsTheWholeProcessGroup) {
  const std::string dir = TempDir();
  ProcessOptions o = Shell(absl::StrCat("sleep 300 & echo $! > ", dir, "/grandchild; echo started; wait"));
  o.timeout = milliseconds(1500);
  const auto started = std::chrono::steady_clock::now();
  auto r = RunProcess(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(std::chrono::steady_clock::now() - started, seconds(30));
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->exit_code, -1);
  EXPECT_EQ(r->out, "started\n");
  int grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadAll(dir + "/grandchild")), &grandchild));
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i, usleep(50000)) gone = ProcessGone(grandchild);
  EXPECT_TRUE(gone) << "pid " << grandchild << " survived the timeout";
  std::filesystem::remove_all(dir);
}

TEST(RunProcess, ADaemonHoldingThePipeDoesNotKeepUsWaiting) {
  const std::string dir = TempDir();
  // The background sleep keeps stdout open after the shell exits, in its own session.
  auto r = RunProcess(Shell(absl::StrCat("setsid sleep 30 & echo $! > ", dir, "/daemon; echo done")));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->out, "done\n");
  int daemon = 0;
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadAll(dir + "/daemon")), &daemon) && daemon > 0) {
    kill(daemon, SIGKILL);
  }
  std::filesystem::remove_all(dir);
}

TEST(RunProcess, AProgramThatCannotStartIsAnError) {
  auto r = RunProcess({.argv = {"/nonexistent/program"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "/nonexistent/program")) << r.status();

  r = RunProcess({.argv = {"/bin/true"}, .cwd = "/nonexistent/dir"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::StrContains(r.status().message(), "chdir /nonexistent/dir")) << r.status();

  r = RunProcess({.argv = {"/bin/true"}, .user = "no-such-user-onequeue"});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();

  EXPECT_EQ(RunProcess({}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RunProcess, RunsAsAnotherUser) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "no user nobody";
  const uid_t uid = nobody->pw_uid;
  auto r = RunProcess({.argv = {"/usr/bin/id", "-u"}, .cwd = "/", .user = "nobody"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(absl::StripAsciiWhitespace(r->out), std::to_string(uid)) << r->err;
}

TEST(SpawnProcess, KeepsThePidWaitsAndStops) {
  const std::string dir = TempDir();
  ProcessOptions o = Shell("echo up; echo warn >&2; exec sleep 300");
  o.output_file = dir + "/daemon.log";
  o.merge_stderr = true;
  o.new_process_group = false;
  auto pid = SpawnProcess(o);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(getpgid(*pid), getpgrp()) << "stays in our process group";
  EXPECT_FALSE(WaitPid(*pid, milliseconds(300)).has_value());
  const auto status = StopProcess(*pid);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM);
  EXPECT_EQ(ExitCode(status), -1);
  EXPECT_EQ(ReadAll(dir + "/daemon.log"), "up\nwarn\n");

  pid = SpawnProcess(Shell("exit 7"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_TRUE(getpgid(*pid) == *pid || getpgid(*pid) < 0) << "leads its own group";
  EXPECT_EQ(ExitCode(WaitPid(*pid, seconds(10))), 7);

  // SIGTERM ignored: SIGKILL after the grace period.
  pid = SpawnProcess(Shell("trap '' TERM; echo ready; while true; do sleep 1; done"));
  ASSERT_TRUE(pid.ok()) << pid.status();
  usleep(300000);
  const auto killed = StopProcess(*pid, SIGTERM, milliseconds(500));
  ASSERT_TRUE(killed.has_value());
  EXPECT_TRUE(WIFSIGNALED(*killed) && WTERMSIG(*killed) == SIGKILL);

  EXPECT_FALSE(SpawnProcess({.argv = {"/nonexistent/daemon"}}).ok());
  std::filesystem::remove_all(dir);
}

TEST(RunFromSignalHandler, RunsTheCommandToItsEnd) {
  const std::string dir = TempDir();
  std::string sh = "/bin/sh", c = "-c", script = absl::StrCat("echo ran > ", dir, "/mark");
  char* argv[] = {sh.data(), c.data(), script.data(), nullptr};
  RunFromSignalHandler(argv);
  EXPECT_EQ(ReadAll(dir + "/mark"), "ran\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace onequeue::testing

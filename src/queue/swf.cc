#include "queue/swf.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace onequeue::queue {
namespace {

constexpr int kFieldCount = 18;

constexpr std::array<const char*, kFieldCount> kFieldNames = {
    "job number",         "submit time",     "wait time",        "run time",
    "allocated processors", "average CPU time", "used memory",    "requested processors",
    "requested time",     "requested memory", "status",          "user id",
    "group id",           "executable number", "queue number",   "partition number",
    "preceding job number", "think time"};

// Fields 6, 7 and 10 (0-based 5, 6, 9) may be fractional in archive traces.
constexpr bool IsFractionalField(int index) { return index == 5 || index == 6 || index == 9; }

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// (absl::string_view is not std::string_view in this abseil build, so no absl::Strip* here.)
std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Quotes at most 40 characters of user text so that one absurd line cannot flood a report.
std::string Quote(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f) {
      out += absl::StrCat("\\x", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > kMax) out += "...";
  out += "'";
  return out;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

// Parses one field; on failure returns the message that names the field and what is wrong.
std::optional<std::string> ParseInteger(std::string_view text, int index, int64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  const std::string field = absl::StrCat("field ", index + 1, " (", kFieldNames[index], ")");
  if (ec == std::errc::result_out_of_range) return absl::StrCat(field, " is out of range: ", Quote(text));
  if (ec != std::errc() || ptr != end) return absl::StrCat(field, " is not an integer: ", Quote(text));
  if (*out < -1) {
    return absl::StrCat(field, " must be >= 0, or -1 for unknown; got ", *out);
  }
  return std::nullopt;
}

std::optional<std::string> ParseFraction(std::string_view text, int index, double* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  const std::string field = absl::StrCat("field ", index + 1, " (", kFieldNames[index], ")");
  if (ec != std::errc() || ptr != end || !std::isfinite(*out)) {
    return absl::StrCat(field, " is not a number: ", Quote(text));
  }
  if (*out < -1) return absl::StrCat(field, " must be >= 0, or -1 for unknown; got ", Quote(text));
  return std::nullopt;
}

// Fills `job` from the 18 fields; returns the first problem of the line, if any. One message per
// line is enough to fix it; every line still gets checked.
std::optional<std::string> ParseJobFields(const std::vector<std::string_view>& fields, SwfJob* job) {
  std::array<int64_t*, kFieldCount> ints = {
      &job->job_number,    &job->submit_time, &job->wait_time,  &job->run_time,
      &job->allocated_procs, nullptr,         nullptr,          &job->requested_procs,
      &job->requested_time, nullptr,          &job->status,     &job->user_id,
      &job->group_id,      &job->executable,  &job->queue,      &job->partition,
      &job->preceding_job, &job->think_time};
  std::array<double*, kFieldCount> fractions{};
  fractions[5] = &job->avg_cpu_time;
  fractions[6] = &job->used_memory;
  fractions[9] = &job->requested_memory;
  for (int i = 0; i < kFieldCount; ++i) {
    auto problem = IsFractionalField(i) ? ParseFraction(fields[i], i, fractions[i])
                                        : ParseInteger(fields[i], i, ints[i]);
    if (problem) return problem;
  }
  if (job->job_number <= 0) return absl::StrCat("field 1 (job number) must be positive; got ", job->job_number);
  return std::nullopt;
}

// "; MaxProcs: 128" -> header field. Lines of free text (no ':') are plain comments.
void ParseHeaderLine(std::string_view line, int line_number, SwfHeader* header,
                     std::vector<SwfError>* errors) {
  std::string_view body = Trim(line.substr(1));
  const size_t colon = body.find(':');
  if (colon == std::string_view::npos) return;
  std::string key(Trim(body.substr(0, colon)));
  std::string value(Trim(body.substr(colon + 1)));
  if (key.empty() || key.find(' ') != std::string::npos) return;  // prose that contains a colon
  header->fields.emplace_back(key, value);
  if (key != "MaxNodes" && key != "MaxProcs") return;
  int64_t n = 0;
  if (!absl::SimpleAtoi(value, &n) || (n <= 0 && n != -1)) {
    errors->push_back({line_number, absl::StrCat("header ", key,
                                                 " must be a positive integer (or -1 for unknown); got ",
                                                 Quote(value))});
    return;
  }
  if (n == -1) return;
  (key == "MaxNodes" ? header->max_nodes : header->max_procs) = n;
}

}  // namespace

int64_t SwfJob::Processors() const { return requested_procs > 0 ? requested_procs : allocated_procs; }

std::string SwfError::ToString() const { return absl::StrCat("line ", line, ": ", message); }

SwfParseResult ParseSwf(std::string_view text) {
  SwfParseResult result;
  absl::flat_hash_map<int64_t, int> line_of_job;
  int line_number = 0;
  size_t next = 0;
  while (next < text.size()) {
    const size_t newline = std::min(text.find('\n', next), text.size());
    const std::string_view line = text.substr(next, newline - next);
    next = newline + 1;
    ++line_number;
    size_t first = 0;
    while (first < line.size() && IsSpace(line[first])) ++first;
    if (first == line.size()) continue;  // blank
    if (line[first] == ';') {
      ParseHeaderLine(line.substr(first), line_number, &result.trace.header, &result.errors);
      continue;
    }
    const std::vector<std::string_view> fields = SplitFields(line);
    if (fields.size() != kFieldCount) {
      result.errors.push_back({line_number, absl::StrCat("expected ", kFieldCount,
                                                         " whitespace-separated fields, found ",
                                                         fields.size())});
      continue;
    }
    SwfJob job;
    job.line = line_number;
    if (auto problem = ParseJobFields(fields, &job)) {
      result.errors.push_back({line_number, *std::move(problem)});
      continue;
    }
    auto [it, inserted] = line_of_job.try_emplace(job.job_number, line_number);
    if (!inserted) {
      result.errors.push_back({line_number, absl::StrCat("job number ", job.job_number,
                                                         " is already used on line ", it->second)});
      continue;
    }
    result.trace.jobs.push_back(job);
  }
  return result;
}

absl::StatusOr<SwfTrace> ParseSwfStrict(std::string_view text, int max_listed) {
  SwfParseResult parsed = ParseSwf(text);
  if (parsed.errors.empty()) return std::move(parsed.trace);
  std::vector<std::string> lines;
  for (size_t i = 0; i < parsed.errors.size() && static_cast<int>(i) < max_listed; ++i) {
    lines.push_back(parsed.errors[i].ToString());
  }
  std::string message = absl::StrCat("malformed SWF trace (", parsed.errors.size(), " error",
                                     parsed.errors.size() == 1 ? "" : "s", "):\n  ",
                                     absl::StrJoin(lines, "\n  "));
  if (static_cast<int>(parsed.errors.size()) > max_listed) {
    absl::StrAppend(&message, "\n  ... and ", parsed.errors.size() - max_listed, " more");
  }
  return absl::InvalidArgumentError(message);
}

namespace {
std::string FormatFraction(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // shortest text that round-trips
  return std::string(buf, ptr);
}
}  // namespace

std::string FormatSwf(const SwfTrace& trace) {
  std::string out;
  for (const auto& [key, value] : trace.header.fields) absl::StrAppend(&out, "; ", key, ": ", value, "\n");
  // Header values that were set programmatically but are not among the fields.
  auto has_field = [&](std::string_view key) {
    for (const auto& f : trace.header.fields) {
      if (f.first == key) return true;
    }
    return false;
  };
  if (trace.header.max_nodes && !has_field("MaxNodes")) absl::StrAppend(&out, "; MaxNodes: ", *trace.header.max_nodes, "\n");
  if (trace.header.max_procs && !has_field("MaxProcs")) absl::StrAppend(&out, "; MaxProcs: ", *trace.header.max_procs, "\n");
  for (const SwfJob& j : trace.jobs) {
    absl::StrAppend(&out, j.job_number, " ", j.submit_time, " ", j.wait_time, " ", j.run_time, " ",
                    j.allocated_procs, " ", FormatFraction(j.avg_cpu_time), " ",
                    FormatFraction(j.used_memory), " ", j.requested_procs, " ", j.requested_time, " ",
                    FormatFraction(j.requested_memory), " ");
    absl::StrAppend(&out, j.status, " ", j.user_id, " ", j.group_id, " ", j.executable, " ", j.queue,
                    " ", j.partition, " ", j.preceding_job, " ", j.think_time, "\n");
  }
  return out;
}

}  // namespace onequeue::queue

// Fuzz target: a pod's onequeue.io/* annotations (and activeDeadlineSeconds) on arbitrary bytes,
// through the same path the daemon uses (PodRecord::From, BuildSnapshot) for a pending pod and a
// running one: an admission error or a workload, never a crash. Input: lines, one annotation
// value each, in the order qos, account, time-limit, group, group-size, hold, activeDeadlineSeconds.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "k8s_client/models.h"
#include "nlohmann/json.hpp"
#include "scheduler/snapshot_builder.h"

namespace {
using nlohmann::json;
namespace sch = onequeue::scheduler;

onequeue::k8s::Pod MakePod(const std::string& name, const json& annotations, const std::string& node,
                           const std::string& deadline) {
  json j = {{"metadata", {{"name", name}, {"namespace", "ns"}, {"uid", name + "-uid"}, {"annotations", annotations},
                          {"creationTimestamp", "2026-11-21T10:00:00Z"}}},
            {"spec", {{"schedulerName", "onequeue"},
                      {"containers", json::array({{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}})}}},
            {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) j["spec"]["nodeName"] = node;
  int64_t seconds = 0;
  if (absl::SimpleAtoi(deadline, &seconds)) j["spec"]["activeDeadlineSeconds"] = seconds;
  auto pod = onequeue::k8s::Pod::FromJson(j);
  return pod.ok() ? *pod : onequeue::k8s::Pod{};
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> v = absl::StrSplit(text, '\n');
  v.resize(7);
  // json::dump throws on invalid UTF-8; the apiserver never hands us such a string either.
  for (std::string& s : v) {
    for (char& c : s) c = static_cast<unsigned char>(c) < 0x80 ? c : '?';
  }
  (void)sch::ParseTimeLimit(v[2]);
  const char* keys[] = {sch::kQosAnnotation, sch::kAccountAnnotation, sch::kTimeLimitAnnotation,
                        sch::kGroupAnnotation, sch::kGroupSizeAnnotation, "onequeue.io/hold"};
  json annotations = json::object();
  for (int i = 0; i < 6; ++i) {
    if (!v[i].empty()) annotations[keys[i]] = v[i];
  }
  json node = {{"metadata", {{"name", "n1"}, {"labels", {{"onequeue.io/pool", "a"}}}}},
               {"status", {{"allocatable", {{"cpu", "8"}, {"memory", "8Gi"}, {"pods", "110"}}},
                           {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  auto n = onequeue::k8s::Node::FromJson(node);
  sch::SnapshotOptions options;
  options.known_qos = {"interactive", "batch"};
  std::vector<onequeue::k8s::Node> nodes;
  if (n.ok()) nodes.push_back(*n);
  (void)sch::BuildSnapshot(nodes, {MakePod("pending", annotations, "", v[6]), MakePod("running", annotations, "n1", v[6])},
                           options, 1'800'000'000);
  return 0;
}

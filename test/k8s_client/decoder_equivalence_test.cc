// One suite over both decoders of Pod and Node (issue 26): for every fixture, the simdjson path the
// informer takes and the nlohmann path every other caller takes give equal models, or the same
// error (decoder_equivalence.h). Fixtures: the real apiserver's watch events of
// test/bench/k8s/pod_watch_events.jsonl, the fuzz corpora of k8s_pod_json_fuzz and
// k8s_watch_event_fuzz, the documents of models_test.cc, and the places where the two parsers
// differ (repeated keys, keys out of order, numbers, what simdjson refuses).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "decoder_equivalence.h"

namespace onequeue::k8s {
namespace {

using equivalence::PodAndNodeDecodersDisagree;
using equivalence::WatchDecodersDisagree;

std::string SourceDir() {
  const char* dir = std::getenv("ONEQUEUE_SOURCE_DIR");
  return dir ? dir : ".";
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<std::filesystem::path> Files(const std::string& dir) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(SourceDir() + "/" + dir)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Splits of a stream into two chunks: at byte 0, the end, and about 200 places between (every 7th
// byte of a short stream).
void ExpectWatchDecodersAgree(const std::string& stream) {
  const size_t n = stream.size();
  const size_t step = std::max<size_t>(7, n / 200);
  for (size_t split = 0; split <= n; split = split == n ? n + 1 : std::min(split + step, n)) {
    ASSERT_EQ(WatchDecodersDisagree(stream, split), "") << "split at " << split;
  }
}

TEST(DecoderEquivalenceTest, TheApiserversWatchEventsDecodeToEqualPods) {
  const std::string stream = ReadFile(SourceDir() + "/test/bench/k8s/pod_watch_events.jsonl");
  ASSERT_GT(stream.size(), 6000u);
  ExpectWatchDecodersAgree(stream);
  // Each event's object alone, as a list page's item.
  std::istringstream lines(stream);
  int events = 0;
  for (std::string line; std::getline(lines, line); ++events) {
    EXPECT_EQ(PodAndNodeDecodersDisagree(nlohmann::json::parse(line)["object"].dump()), "");
  }
  EXPECT_EQ(events, 3);
  // And that it really is a pod with the fields a scheduler reads, read alike.
  SimdjsonDocument document;
  const simdjson::dom::element* root = document.Parse(stream.substr(0, stream.find('\n')));
  ASSERT_NE(root, nullptr);
  absl::StatusOr<Pod> pod = Pod::FromSimdjson((*root)["object"].value_unsafe());
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->metadata.name, "pod-7");
  EXPECT_FALSE(pod->requests.empty());
}

TEST(DecoderEquivalenceTest, TheFuzzCorporaDecodeAlike) {
  int objects = 0, streams = 0;
  for (const auto& p : Files("test/k8s_client/fuzz_corpus/pod_json")) {
    EXPECT_EQ(PodAndNodeDecodersDisagree(ReadFile(p)), "") << p;
    ++objects;
  }
  for (const auto& p : Files("test/k8s_client/fuzz_corpus/watch_event")) {
    ExpectWatchDecodersAgree(ReadFile(p));
    ++streams;
  }
  EXPECT_GE(objects, 4);
  EXPECT_GE(streams, 3);
}

// The corpus's pod with every field the decoder reads: the equality above is over a full model,
// not over two errors.
TEST(DecoderEquivalenceTest, APodWithEveryFieldDecodesInFull) {
  const std::string text = ReadFile(SourceDir() + "/test/k8s_client/fuzz_corpus/pod_json/pod_every_field.json");
  SimdjsonDocument document;
  const simdjson::dom::element* root = document.Parse(text);
  ASSERT_NE(root, nullptr);
  absl::StatusOr<Pod> p = Pod::FromSimdjson(*root);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->metadata.Key(), "team-a/every-field");
  EXPECT_EQ(p->metadata.owner_references.size(), 2u);
  EXPECT_EQ(p->required_node_affinity.size(), 2u);
  EXPECT_EQ(p->preferred_node_affinity.size(), 1u);
  EXPECT_EQ(p->required_pod_affinity.size(), 1u);
  EXPECT_EQ(p->preferred_pod_anti_affinity.size(), 1u);
  EXPECT_EQ(p->topology_spread_constraints.size(), 2u);
  EXPECT_EQ(p->tolerations[1].toleration_seconds, 300);
  ASSERT_EQ(p->containers.size(), 2u);
  EXPECT_EQ(p->containers[0].host_ports.size(), 2u);
  EXPECT_EQ(p->containers[1].requests.at("cpu").ToString(), "100m");
  EXPECT_EQ(p->volume_claims, (std::vector<std::string>{"data-pvc", "every-field-scratch"}));
  EXPECT_EQ(p->inline_disks.size(), 5u);
  EXPECT_EQ(p->resource_claim_objects, (std::vector<std::string>{"gpu-claim", "every-field-tmpl-x"}));
  EXPECT_EQ(p->requests.at("memory").ToString(), "2064Mi");  // pod-level 2Gi + overhead 16Mi
  EXPECT_EQ(p->conditions[0].last_transition_time, "2026-11-30T10:16:15Z");
  EXPECT_EQ(PodAndNodeDecodersDisagree(text), "");
}

// models_test.cc's documents, and every place the two parsers could part: each must decode alike
// (an equal Pod and Node, or the same error).
const char* const kDocuments[] = {
    // models_test.cc
    R"({"apiVersion": "v1", "kind": "Pod", "futureField": {"x": 1},
    "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "42",
                 "labels": {"app": "a"}, "annotations": {"onequeue.io/qos": "high"},
                 "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u0", "controller": true}],
                 "deletionTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"schedulerName": "onequeue", "priority": 1000, "priorityClassName": "high",
             "nodeSelector": {"disk": "ssd"},
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
             "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}],
             "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": 0.5, "memory": "1Gi"}}}]},
    "status": {"phase": "Pending", "nominatedNodeName": "n1",
               "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})",
    R"({"metadata": {"name": 5}})",
    R"({"spec": {"containers": {}}})",
    R"({"spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}})",
    R"({"spec": {"priority": "high"}})",
    R"([1,2])",
    R"({"spec": {"priority": 99999999999}})",
    R"({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
      "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
      "status": {"allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                 "conditions": [{"type": "Ready", "status": "True"}]}})",
    R"({"metadata": {"name": "n2"},
      "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-21T10:00:00Z"}]}})",
    // A key given twice: the last value counts (nlohmann's std::map).
    R"({"metadata": {"name": "first", "name": "last"}, "spec": {"nodeName": "a", "nodeName": "b"}})",
    R"({"metadata": {"name": "p", "metadata": 1}, "metadata": {"name": "q"}})",
    // Map keys out of order, repeated, or the same once unescaped; the first bad value in key order.
    R"({"metadata": {"labels": {"b": "1", "a": "2", "b": "3"}}})",
    R"({"metadata": {"labels": {"a": 1, "a": "x"}}})",
    R"({"metadata": {"labels": {"a": "x", "a": 1}}})",
    R"({"metadata": {"labels": {"z": 1, "a": 2}}})",
    R"({"metadata": {"labels": {"a\u0062": "c", "ab": "d"}, "annotations": {"\u00e9": "x", "e": "y", "": "z"}}})",
    R"({"status": {"capacity": {"memory": "1Gi", "cpu": "lots", "cpu": "2", "pods": []}}})",
    R"({"status": {"capacity": {"memory": "1Gi", "cpu": "2", "cpu": "lots"}}})",
    // Numbers: quantities as numbers (printed back as nlohmann prints them), integers at their bounds.
    R"({"spec": {"overhead": {"a": 1.5, "b": 1e3, "c": 100, "d": -0, "e": 18446744073709551615, "f": 0.1,
                              "g": 1E-3, "h": -0.0, "i": 123456789012345678, "j": 2.5e-7, "k": " 5 "}}})",
    R"({"spec": {"priority": -2147483648, "activeDeadlineSeconds": 9223372036854775807}})",
    R"({"spec": {"priority": 2147483648}})",
    R"({"spec": {"priority": -2147483649}})",
    R"({"spec": {"priority": 1.0}})",
    R"({"spec": {"activeDeadlineSeconds": 9223372036854775808}})",
    R"({"spec": {"activeDeadlineSeconds": -9223372036854775808}})",
    R"({"spec": {"priority": true}})",
    R"({"spec": {"unschedulable": 1}})",
    // Texts simdjson refuses and nlohmann reads (its path runs): a byte order mark, a 65-bit integer.
    "\xEF\xBB\xBF{\"metadata\": {\"name\": \"bom\"}}",
    R"({"metadata": {"name": "big"}, "x": 18446744073709551616})",
    R"({"metadata": {"name": "small"}, "x": -9223372036854775809})",
    // Strings: escapes, a NUL, non-ASCII; not objects; nulls for absent fields.
    R"({"metadata": {"name": "a\u0000b", "namespace": "\u00e9\ud83d\ude00", "uid": "\"\\\/\b\f\n\r\t"}})",
    R"("pod")", R"(1)", R"(null)", R"({})", R"([])",
    R"({"metadata": null, "spec": null, "status": null})",
    R"({"metadata": {"name": null, "labels": null, "ownerReferences": null}, "spec": {"containers": null, "priority": null}})",
    R"({"spec": {"containers": [null, 1, {"name": "c"}]}})",
    R"({"spec": {"containers": [{"name": "c", "resources": {"requests": null, "limits": {"cpu": null}}}]}})",
    R"({"spec": {"volumes": [{"name": "v", "rbd": {"monitors": ["m1", 2, null, "m2"], "image": "i"}}]}})",
    R"({"spec": {"tolerations": [{"key": "k", "tolerationSeconds": "30"}]}})",
    R"({"spec": {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"namespaces": [1]}]}}}})",
    R"({"spec": {"topologySpreadConstraints": [{"matchLabelKeys": ["a", {}]}]}})",
    R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"values": [null]}]}]}}}}})",
};

TEST(DecoderEquivalenceTest, EveryPlaceTheParsersCouldPartDecodesAlike) {
  for (const char* d : kDocuments) EXPECT_EQ(PodAndNodeDecodersDisagree(d), "") << d;
}

// simdjson refuses these and the nlohmann path decodes them: the informer gets nlohmann's model.
TEST(DecoderEquivalenceTest, WhatSimdjsonRefusesIsReadByNlohmann) {
  SimdjsonDocument document;
  for (const std::string& text : {std::string("\xEF\xBB\xBF{\"metadata\": {\"name\": \"bom\"}}"),
                                 std::string(R"({"metadata": {"name": "big"}, "x": 18446744073709551616})"),
                                 std::string(R"({"metadata": {"name": "deep"}, "x": )") + std::string(2000, '[') +
                                     std::string(2000, ']') + "}"}) {
    EXPECT_EQ(document.Parse(text), nullptr) << text.substr(0, 60);
    EXPECT_TRUE(Pod::FromJson(nlohmann::json::parse(text)).ok());
    EXPECT_EQ(PodAndNodeDecodersDisagree(text), "");
  }
  // In a watch stream: the event goes to the nlohmann handler, with the same Pod.
  const std::string stream = "\xEF\xBB\xBF" R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}})" "\n"
                             R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"6"},"x":1e999}})" "\n";
  ExpectWatchDecodersAgree(stream);
}

// The framing through both handlers: repeated keys, a BOOKMARK without metadata, ERROR events,
// unknown types, objects without metadata, lines that are not JSON (errors, same messages).
TEST(DecoderEquivalenceTest, WatchFramingIsTheSameThroughBothHandlers) {
  for (const char* stream : {
           R"({"type":"ADDED","type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})" "\n",
           R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1","resourceVersion":"2"}},"object":{"metadata":{"name":"b"}}})" "\n",
           R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":7}}})" "\n",
           R"({"type":"BOOKMARK","object":{}})" "\n",
           R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})" "\n",
           R"({"type":"ERROR","object":{"code":"x"}})" "\n",
           R"({"type":"WHAT","object":{"metadata":{}}})" "\n",
           R"({"type":"ADDED","object":{}})" "\n",
           R"({"type":"ADDED","object":{"metadata":[]}})" "\n",
           R"({"type":1,"object":{}})" "\n",
           "{not json}\n", "[1]\n", "\n\r\n  \n",
           R"({"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{"priority":"x"}}})" "\n"
           R"({"type":"DELETED","object":{"metadata":{"name":"a"}}})" "\n",
       }) {
    ExpectWatchDecodersAgree(stream);
  }
}

}  // namespace
}  // namespace onequeue::k8s

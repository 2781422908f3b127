#include "k8s_client/dra.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace onequeue::k8s {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A slice as a GPU driver publishes it (resource.k8s.io/v1), the index as an int attribute.
json Slice() {
  return json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice",
    "metadata":{"name":"node-a-gpu.example.com-x1","resourceVersion":"7"},
    "spec":{"driver":"gpu.example.com","nodeName":"node-a",
      "pool":{"name":"node-a","generation":3,"resourceSliceCount":1},
      "devices":[{"name":"gpu-0","attributes":{"index":{"int":0},"uuid":{"string":"GPU-aa"},
                   "driverVersion":{"version":"1.2.3"},"mig":{"bool":false}}},
                 {"name":"gpu-1","attributes":{"index":{"int":1}},"capacity":{"memory":{"value":"80Gi"}}}]}})");
}

TEST(DraModelsTest, AResourceSliceIsReadWithItsPoolNodeAndDeviceAttributesOfEachKind) {
  absl::StatusOr<ResourceSlice> s = ResourceSlice::FromJson(Slice());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->driver, "gpu.example.com");
  EXPECT_EQ(s->node_name, "node-a");
  EXPECT_EQ(s->pool_name, "node-a");
  EXPECT_EQ(s->pool_generation, 3);
  EXPECT_EQ(s->pool_slice_count, 1);
  ASSERT_EQ(s->devices.size(), 2u);
  const Device& d = s->devices[0];
  EXPECT_EQ(d.name, "gpu-0");
  EXPECT_EQ(d.attributes.at("index"), (DeviceAttribute{DeviceAttribute::Kind::kInt, 0, "", false}));
  EXPECT_EQ(d.attributes.at("uuid").kind, DeviceAttribute::Kind::kString);
  EXPECT_EQ(d.attributes.at("uuid").string_value, "GPU-aa");
  EXPECT_EQ(d.attributes.at("driverVersion").kind, DeviceAttribute::Kind::kVersion);
  EXPECT_EQ(d.attributes.at("mig").kind, DeviceAttribute::Kind::kBool);
  EXPECT_EQ(s->devices[1].attributes.at("index").int_value, 1);
}

TEST(DraModelsTest, ABadSliceIsAnInvalidArgumentNamingTheField) {
  json wrong_type = Slice();
  wrong_type["spec"]["devices"][0]["attributes"]["index"] = {{"int", "zero"}};
  absl::StatusOr<ResourceSlice> a = ResourceSlice::FromJson(wrong_type);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(a.status().message(), HasSubstr("device gpu-0: field int is not an integer"));
  json two_kinds = Slice();
  two_kinds["spec"]["devices"][1]["attributes"]["index"] = {{"int", 1}, {"string", "1"}};
  absl::StatusOr<ResourceSlice> b = ResourceSlice::FromJson(two_kinds);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("attribute index must have exactly one of int, string, bool, version"));
  json devices_not_array = Slice();
  devices_not_array["spec"]["devices"] = "gpu-0";
  EXPECT_THAT(ResourceSlice::FromJson(devices_not_array).status().message(), HasSubstr("field devices is not an array"));
  json spec_not_object = Slice();
  spec_not_object["spec"] = 3;
  EXPECT_FALSE(ResourceSlice::FromJson(spec_not_object).ok());
}

json Claim() {
  return json::parse(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
    "metadata":{"name":"two-gpus","namespace":"ml","uid":"c-1","resourceVersion":"41"},
    "spec":{"devices":{"requests":[{"name":"gpus","exactly":{"deviceClassName":"gpu.example.com","count":2}},
                                   {"name":"any","exactly":{"deviceClassName":"nic","allocationMode":"All"}},
                                   {"name":"pick","firstAvailable":[{"name":"a","deviceClassName":"gpu.example.com"}]}]}}})");
}

TEST(DraModelsTest, AClaimIsReadWithItsRequestsDefaultsAndNoAllocation) {
  absl::StatusOr<ResourceClaim> c = ResourceClaim::FromJson(Claim());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->metadata.Key(), "ml/two-gpus");
  ASSERT_EQ(c->requests.size(), 3u);
  EXPECT_EQ(c->requests[0].device_class_name, "gpu.example.com");
  EXPECT_EQ(c->requests[0].allocation_mode, "ExactCount");
  EXPECT_EQ(c->requests[0].count, 2);
  EXPECT_EQ(c->requests[1].allocation_mode, "All");
  EXPECT_TRUE(c->requests[2].first_available);
  EXPECT_EQ(c->requests[2].device_class_name, "");
  EXPECT_FALSE(c->allocated);
  EXPECT_TRUE(c->reserved_for.empty());
}

TEST(DraModelsTest, TheAllocationWrittenIsReadBackAsWrittenAndRemovedOnlyForThatPod) {
  const std::vector<DeviceAllocationResult> results = {{"gpus", "gpu.example.com", "node-a", "gpu-2"},
                                                       {"gpus", "gpu.example.com", "node-a", "gpu-3"}};
  json written = WithAllocation(Claim(), results, "node-a", {"", "pods", "nb", "p-1"});
  EXPECT_EQ(written["metadata"]["resourceVersion"], "41");  // the PUT compares it
  absl::StatusOr<ResourceClaim> c = ResourceClaim::FromJson(written);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->allocated);
  EXPECT_EQ(c->results, results);
  EXPECT_EQ(c->allocation_node, "node-a");
  ASSERT_EQ(c->reserved_for.size(), 1u);
  EXPECT_EQ(c->reserved_for[0], (ClaimConsumer{"", "pods", "nb", "p-1"}));
  // Written twice for the same pod: reservedFor names it once.
  EXPECT_EQ(WithAllocation(written, results, "node-a", {"", "pods", "nb", "p-1"})["status"]["reservedFor"].size(), 1u);
  // Another pod's removal leaves this one; this pod's removal with the allocation clears both.
  json other = WithoutConsumer(written, "p-2", false);
  EXPECT_EQ(other["status"]["reservedFor"].size(), 1u);
  json cleared = WithoutConsumer(written, "p-1", true);
  absl::StatusOr<ResourceClaim> after = ResourceClaim::FromJson(cleared);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_FALSE(after->allocated);
  EXPECT_TRUE(after->reserved_for.empty());
}

// kube-scheduler adds this finalizer before it allocates; the resourceclaim controller then clears
// the allocation at the pod's end. Added once; the rest of the object is kept.
TEST(DraModelsTest, TheDeleteProtectionFinalizerIsAddedOnce) {
  json c = Claim();
  c["metadata"]["finalizers"] = json::array({"other"});
  json once = WithFinalizer(c);
  EXPECT_EQ(once["metadata"]["finalizers"], json::array({"other", kClaimFinalizer}));
  EXPECT_EQ(WithFinalizer(once)["metadata"]["finalizers"].size(), 2u);
  EXPECT_EQ(WithFinalizer(Claim())["metadata"]["finalizers"], json::array({kClaimFinalizer}));
  EXPECT_EQ(once["metadata"]["resourceVersion"], "41");
}

TEST(DraModelsTest, APodsClaimEntriesNameTheirObjectDirectlyOrThroughItsStatus) {
  json pod = json::parse(R"({"metadata":{"name":"nb","namespace":"ml"},
    "spec":{"resourceClaims":[{"name":"gpu","resourceClaimName":"two-gpus"},
                              {"name":"tmp","resourceClaimTemplateName":"one-gpu"},
                              {"name":"later","resourceClaimTemplateName":"one-gpu"}]},
    "status":{"resourceClaimStatuses":[{"name":"tmp","resourceClaimName":"nb-tmp-x7k"}]}})");
  absl::StatusOr<PodClaims> c = PodClaims::FromJson(pod);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ClaimObjectName(*c, "gpu"), "two-gpus");
  EXPECT_EQ(ClaimObjectName(*c, "tmp"), "nb-tmp-x7k");
  EXPECT_EQ(ClaimObjectName(*c, "later"), std::nullopt);  // the controller has not made it yet
  EXPECT_EQ(ClaimObjectName(*c, "none"), std::nullopt);
  pod["spec"]["resourceClaims"][0]["resourceClaimName"] = 5;
  EXPECT_THAT(PodClaims::FromJson(pod).status().message(), HasSubstr("field resourceClaimName is not a string"));
}

}  // namespace
}  // namespace onequeue::k8s

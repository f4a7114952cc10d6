package simulate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestSimulateFromClusterClaims: with the cluster's DeviceClasses, ResourceClaimTemplates and the device models of
// the dovetail-dra-device-models ConfigMap, a pod claiming a GPU m5.2xlarge carries gets a m5.2xlarge, and a pod
// claiming a product no type carries is unschedulable with the claim, the request and the types it removed.
func TestSimulateFromClusterClaims(t *testing.T) {
	env := test.StartCLIEnv(t)
	claimPod := func(name, template string) *corev1.Pod {
		p := test.Pod(name).Namespace("ml").Requests("500m", "1Gi").Obj()
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}}
		return p
	}
	env.Create(t,
		test.NodePool("general").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj(),
		test.EC2NodeClass("default", "test").Obj(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ml"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: DRANamespace, Name: devices.OverridesConfigMap}, Data: map[string]string{
			devices.OverridesKey: `
models:
- instanceTypes: [m5.2xlarge]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 1, attributes: {productName: {string: A}}}]
`}},
		test.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`),
		test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].productName == "A"`).Template("ml", "one-a"),
		test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1, `device.attributes["gpu.nvidia.com"].productName == "B"`).Template("ml", "one-b"),
		claimPod("trainer", "one-a"),
		claimPod("other", "one-b"),
	)
	out, err := run(t, &Options{FromCluster: true, Kubeconfig: env.Kubeconfig, InstanceTypesFile: "testdata/types.json", Output: "table"})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(out)
	for _, want := range []string{
		"general   m5.2xlarge",
		"ml/other: no instance type of the NodePools has devices for resource claims gpu (ResourceClaimTemplate one-b)",
		`NodePool general: 0 of `,
		`claim gpu (ResourceClaimTemplate one-b), request gpu (deviceClass gpu.nvidia.com, selector device.attributes["gpu.nvidia.com"].productName == "B"): no matching device on 1 type (e.g. m5.2xlarge)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ml/trainer:") {
		t.Errorf("the pod claiming an A GPU is unschedulable:\n%s", out)
	}
}

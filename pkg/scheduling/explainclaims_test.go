package scheduling_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestExplainNamesTheClaims: explain's ResourceClaims stage says which claim and request removed which instance
// types, and blocks when no type has the devices.
func TestExplainNamesTheClaims(t *testing.T) {
	type want struct {
		fits     bool
		cheapest string
		reason   string
		// stage is the ResourceClaims stage as "in/out", with substrings of its detail.
		stage  string
		detail []string
	}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want want
	}{
		{name: "a product selector: the types without devices and the one with the other product are removed",
			pod: test.SchedPod("p").Requests("500m", "1Gi").ClaimTemplate("gpu", "one-a").Obj(),
			want: want{fits: true, cheapest: "gpu1.a", stage: "8/2", detail: []string{
				"the pod's claims: gpu (ResourceClaimTemplate one-a)",
				`claim gpu (ResourceClaimTemplate one-a), request gpu (deviceClass gpu.nvidia.com, selector device.attributes["gpu.nvidia.com"].productName == "A"): no devices on 5 types (e.g. `,
				`claim gpu (ResourceClaimTemplate one-a), request gpu (deviceClass gpu.nvidia.com, selector device.attributes["gpu.nvidia.com"].productName == "A"): no matching device on 1 type (e.g. gpu1.b)`}}},
		{name: "two GPUs and an EFA interface on one PCIe root: the one-GPU types cannot hold the requests together",
			pod: test.SchedPod("p").Requests("500m", "1Gi").ClaimTemplate("gpu", "two-plus-efa").Obj(),
			want: want{fits: true, cheapest: "gpu4.a", stage: "8/1", detail: []string{
				"request gpu (deviceClass gpu.nvidia.com, count 2): fewer than 2 matching devices on 2 types (e.g. gpu1.a, gpu1.b)"}}},
		{name: "the requests fit alone on gpu4.a but not together on one PCIe root",
			pod: test.SchedPod("p").Requests("500m", "1Gi").ClaimTemplate("gpu", "three-plus-efa").Obj(),
			want: want{reason: "no instance type allowed by NodePool default has devices for resource claims gpu (ResourceClaimTemplate three-plus-efa)",
				stage: "8/0", detail: []string{
					"fewer than 3 matching devices on 2 types (e.g. gpu1.a, gpu1.b)",
					"claim gpu (ResourceClaimTemplate three-plus-efa): its requests do not fit together (counts or constraints) on 1 type (e.g. gpu4.a)"}}},
		{name: "no type has the device: the stage blocks",
			pod: test.SchedPod("p").Requests("500m", "1Gi").ClaimTemplate("gpu", "huge").Obj(),
			want: want{reason: "no instance type allowed by NodePool default has devices for resource claims gpu (ResourceClaimTemplate huge)",
				stage: "8/0", detail: []string{"selector device.capacity"}}},
		{name: "a missing template blocks with its name",
			pod:  test.SchedPod("p").Requests("500m", "1Gi").ClaimTemplate("gpu", "nope").Obj(),
			want: want{reason: "resource claim template nope (pod claim gpu) does not exist", stage: "8/0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := &scheduling.Snapshot{Pods: []*corev1.Pod{tc.pod}, NodePools: []*scheduling.NodePool{test.SchedNodePool("default").Obj()},
				InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": draTypes()},
				DRA:           &scheduling.DRA{ClaimTemplates: append(draTemplates, threePlusEFA), DeviceClasses: draClasses, Models: draModels(t)}}
			e, err := scheduling.Explain(context.Background(), snap, types.NamespacedName{Namespace: tc.pod.Namespace, Name: tc.pod.Name}, scheduling.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := e.NodePools[0]
			got := want{fits: p.Fits, reason: p.Reason}
			if p.Cheapest != nil {
				got.cheapest = p.Cheapest.Name
			}
			var detail string
			for _, st := range p.Stages {
				if st.Name == scheduling.StageResourceClaims {
					got.stage = strings.Join([]string{itoa(st.Before), itoa(st.After)}, "/")
					detail = st.Detail
				}
				if strings.Contains(st.Detail+st.Fix, "dra.dovetail.sh") {
					t.Errorf("stage %s shows the pseudo-resource: %s", st.Name, st.Detail)
				}
			}
			for _, sub := range tc.want.detail {
				if !strings.Contains(detail, sub) {
					t.Errorf("ResourceClaims detail %q does not contain %q", detail, sub)
				}
			}
			tc.want.detail = nil
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("explanation (-want +got):\n%s\nstages: %+v", d, p.Stages)
			}
		})
	}
}

// threePlusEFA asks for three GPUs and an EFA interface on one PCIe root: gpu4.a has four GPUs and two interfaces,
// but two GPUs a root, so no type holds it.
var threePlusEFA = test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 3).Exactly("nic", "efa", 1).SameAttribute(string(devices.PCIeRootAttribute)).Template("default", "three-plus-efa")

func itoa(n int) string { return strconv.Itoa(n) }

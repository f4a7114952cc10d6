package provisioning

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPodsWithDRAClaimsArePlanned: with IGNORE_DRA_REQUESTS=false, a pod claiming a GPU from a template gets a
// NodeClaim whose instance types all carry the device (the model comes from the overrides ConfigMap); overrides
// that do not validate leave the pod unschedulable with an event naming the bad field, and the other pods planned.
func TestPodsWithDRAClaimsArePlanned(t *testing.T) {
	const models = `
models:
- instanceTypes: [fake-gpu]
  driver: gpu.nvidia.com
  devices: [{name: gpu, count: 2, attributes: {type: {string: gpu}}}]
`
	cases := []struct {
		name      string
		overrides string
		wantTypes []string
		wantEvent string
	}{
		{name: "planned on the type with the device", overrides: models, wantTypes: []string{"fake-gpu"}},
		{name: "bad overrides", overrides: "models: [{instanceTypes: [fake-gpu], driver: gpu.nvidia.com, devices: [{name: GPU}]}]",
			wantEvent: `models[0].devices[0].name: "GPU"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			scheme, err := test.NewScheme(karpv1.AddToScheme)
			if err != nil {
				t.Fatal(err)
			}
			pod := test.Pod("trainer").Requests("1", "1Gi").Unschedulable().Obj()
			tmpl := "one-gpu"
			pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: devices.OverridesConfigMap},
				Data: map[string]string{devices.OverridesKey: tc.overrides}}
			objs := []client.Object{test.NodePool("default").Obj(), pod, cm,
				test.DeviceClass("gpu.nvidia.com", `device.driver == "gpu.nvidia.com"`),
				test.ClaimSpec().Exactly("gpu", "gpu.nvidia.com", 1).Template("default", tmpl)}
			api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
			c, _ := newTestController(api)
			c.deps.Namespace = "kube-system"
			c.deps.DeviceModels = devices.NewSource(nil, true, true)
			if err := c.Schedule(ctx); err != nil {
				t.Fatal(err)
			}
			list := &karpv1.NodeClaimList{}
			if err := api.List(ctx, list); err != nil {
				t.Fatal(err)
			}
			if tc.wantTypes == nil {
				if len(list.Items) != 0 {
					t.Errorf("%d nodeclaims, want none", len(list.Items))
				}
			} else {
				if len(list.Items) != 1 {
					t.Fatalf("%d nodeclaims, want 1", len(list.Items))
				}
				var got []string
				for _, r := range list.Items[0].Spec.Requirements {
					if r.Key == corev1.LabelInstanceTypeStable {
						got = r.Values
					}
				}
				if strings.Join(got, ",") != strings.Join(tc.wantTypes, ",") {
					t.Errorf("instance types %v, want %v", got, tc.wantTypes)
				}
				for name := range list.Items[0].Spec.Resources.Requests {
					if strings.Contains(string(name), "dra.dovetail.sh") {
						t.Errorf("the NodeClaim requests the pseudo-resource %s", name)
					}
				}
			}
			if tc.wantEvent != "" {
				found := false
				events := drain(c.deps.Recorder.(*record.FakeRecorder))
				for _, e := range events {
					if strings.Contains(e, "FailedScheduling") && strings.Contains(e, tc.wantEvent) {
						found = true
					}
				}
				if !found {
					t.Errorf("no FailedScheduling event with %q among %q", tc.wantEvent, events)
				}
			}
		})
	}
}

package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/cli/simulate"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestExplainPodIgnoredClaims: with --ignore-dra-requests (the controller's IGNORE_DRA_REQUESTS=true), a pod with
// resource claims is reported left out with the controller's reason; with false it is explained as any pod, and a
// pod without claims is explained in both cases.
func TestExplainPodIgnoredClaims(t *testing.T) {
	claimPod := test.Pod("trainer").Requests("1", "1Gi").Obj()
	claimPod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("one-gpu")}}
	plain := test.Pod("web").Requests("1", "1Gi").Obj()
	c := fakeClient(t, test.NodePool("general").Obj(), claimPod, plain)
	for _, tc := range []struct {
		name        string
		pod         string
		ignore      bool
		wantIgnored bool
	}{
		{"claims, ignored", "trainer", true, true},
		{"claims, planned", "trainer", false, false},
		{"no claims", "web", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{Output: "json", Region: "us-west-2", DRA: simulate.DRASettings{IgnoreDRARequests: tc.ignore}}
			var out bytes.Buffer
			if err := RunPod(context.Background(), c, o, types.NamespacedName{Namespace: "default", Name: tc.pod}, &out); err != nil {
				t.Fatalf("RunPod: %v", err)
			}
			var r PodReport
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out.String())
			}
			if got := r.Ignored != ""; got != tc.wantIgnored {
				t.Fatalf("ignored = %q, want it set: %v", r.Ignored, tc.wantIgnored)
			}
			if tc.wantIgnored {
				if !strings.Contains(r.Ignored, "IGNORE_DRA_REQUESTS=true") || r.Explanation != nil {
					t.Errorf("ignored %q (explanation %v), want the reason naming IGNORE_DRA_REQUESTS and no explanation", r.Ignored, r.Explanation != nil)
				}
				out.Reset()
				o.Output = "table"
				if err := RunPod(context.Background(), c, o, types.NamespacedName{Namespace: "default", Name: tc.pod}, &out); err != nil {
					t.Fatal(err)
				}
				for _, want := range []string{"Pod default/trainer is left out of provisioning: the pod has dynamic resource allocation claims",
					"--ignore-dra-requests=false"} {
					if !strings.Contains(out.String(), want) {
						t.Errorf("table lacks %q:\n%s", want, out.String())
					}
				}
			} else if r.Explanation == nil {
				t.Errorf("no explanation:\n%s", out.String())
			}
		})
	}
}

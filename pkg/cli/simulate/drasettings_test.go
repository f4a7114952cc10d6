package simulate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// TestSimulateClaimPods: pods with resource claims are held out with the controller's reason while
// --ignore-dra-requests is true (the default), and planned on instance types with their devices when it is false,
// with device models only for the AWS gates that are on.
func TestSimulateClaimPods(t *testing.T) {
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		dra           DRASettings
		unschedulable []string // reasons of the two trainer pods
		onGPUTypes    bool     // the trainer pods are planned, on types with GPUs
	}{
		{name: "ignored (the default)", dra: DRASettings{IgnoreDRARequests: true, AWSFeatureGates: "DRANVIDIAGPU=true"},
			unschedulable: []string{"the pod has dynamic resource allocation claims", "(IGNORE_DRA_REQUESTS=true)"}},
		{name: "planned", dra: DRASettings{AWSFeatureGates: "DRANVIDIAGPU=true"}, onGPUTypes: true},
		{name: "planned, NVIDIA GPU model off", dra: DRASettings{AWSFeatureGates: "DRAEFA=true"},
			unschedulable: []string{"no instance type of the NodePools has devices for resource claims gpu (ResourceClaimTemplate one-gpu)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, &Options{PodsFile: "testdata/dra-pods.yaml", NodePoolsFile: "testdata/nodepools.yaml", Region: "us-west-2",
				Output: "json", DRA: tc.dra})
			if err != nil {
				t.Fatal(err)
			}
			var r report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			trainers := 0
			for _, u := range r.Unschedulable {
				if !strings.HasPrefix(u.Pod, "default/trainer-") {
					t.Errorf("%s unschedulable: %s", u.Pod, u.Reason)
					continue
				}
				trainers++
				for _, want := range tc.unschedulable {
					if !strings.Contains(u.Reason, want) {
						t.Errorf("%s: reason %q lacks %q", u.Pod, u.Reason, want)
					}
				}
			}
			if want := map[bool]int{true: 2, false: 0}[len(tc.unschedulable) > 0]; trainers != want {
				t.Errorf("%d trainer pods unschedulable, want %d:\n%s", trainers, want, out)
			}
			planned := 0
			for _, nc := range r.NodeClaims {
				for _, p := range nc.Pods {
					if !strings.HasPrefix(p, "default/trainer-") {
						continue
					}
					planned++
					if it, ok := cat.Type(nc.InstanceType); !ok || len(it.GPUs) == 0 {
						t.Errorf("%s planned on %s, which has no GPU", p, nc.InstanceType)
					}
				}
			}
			if want := map[bool]int{true: 2, false: 0}[tc.onGPUTypes]; planned != want {
				t.Errorf("%d trainer pods planned on new nodes, want %d:\n%s", planned, want, out)
			}
		})
	}
}

// TestDRAFlags: --ignore-dra-requests defaults to IGNORE_DRA_REQUESTS, else to Karpenter's true; a value that is
// not a boolean, or an unknown AWS feature gate, is an error naming it.
func TestDRAFlags(t *testing.T) {
	for _, tc := range []struct {
		env, gates string
		want       bool
		wantErr    string
	}{
		{env: "", want: true},
		{env: "false", want: false},
		{env: "true", want: true},
		{env: "maybe", want: true, wantErr: `IGNORE_DRA_REQUESTS: "maybe" is not a boolean`},
		{env: "false", gates: "DRAGPU=true", wantErr: "--aws-feature-gates"},
	} {
		t.Run(tc.env+tc.gates, func(t *testing.T) {
			t.Setenv("IGNORE_DRA_REQUESTS", tc.env)
			t.Setenv("AWS_FEATURE_GATES", tc.gates)
			cmd := NewCommand()
			if err := cmd.Flags().Parse(nil); err != nil {
				t.Fatal(err)
			}
			if got := cmd.Flags().Lookup("ignore-dra-requests").Value.String(); got != map[bool]string{true: "true", false: "false"}[tc.want] {
				t.Errorf("--ignore-dra-requests = %s, want %v", got, tc.want)
			}
			cmd.SetArgs([]string{"--pods", "testdata/dra-pods.yaml", "--nodepools", "testdata/nodepools.yaml", "-o", "json"})
			cmd.SetOut(&strings.Builder{})
			err := cmd.Execute()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

package instancetype

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/kubeletcel"
)

// TestComputeWithCEL: with the NodeClassCEL gate on, maxPods and reserved expressions are evaluated per instance
// type (max_pods is the ENI pod count for maxPods, the resulting count for reservations); gate off, they are left
// out and the AMI defaults apply.
func TestComputeWithCEL(t *testing.T) {
	env, err := kubeletcel.New()
	if err != nil {
		t.Fatal(err)
	}
	var kc awsv1.KubeletConfiguration
	doc := `{"maxPods":"min(max_pods, 20)","kubeReserved":{"memory":"max_pods * 11 + 255","cpu":"100m"},"systemReserved":{"cpu":"vcpus * 25"}}`
	if err := json.Unmarshal([]byte(doc), &kc); err != nil {
		t.Fatal(err)
	}
	s := Settings{VMMemoryOverheadPercent: 0.075}
	on, err := Compute(m5large(), KubeletOf(kc, env), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := on.Capacity.Pods().Value(); got != 20 {
		t.Errorf("pods = %d, want 20 (min(29, 20))", got)
	}
	got := map[string]string{"kube-memory": on.Overhead.KubeReserved.Memory().String(), "kube-cpu": on.Overhead.KubeReserved.Cpu().String(),
		"system-cpu": on.Overhead.SystemReserved.Cpu().String()}
	want := map[string]string{"kube-memory": "480Mi", "kube-cpu": "100m", "system-cpu": "50m"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reserved (-want +got):\n%s", d)
	}
	off, err := Compute(m5large(), KubeletOf(kc, nil), s)
	if err != nil {
		t.Fatal(err)
	}
	if got := off.Capacity.Pods().Value(); got != 29 {
		t.Errorf("gate off: pods = %d, want the ENI count 29", got)
	}
	var bad awsv1.KubeletConfiguration
	if err := json.Unmarshal([]byte(`{"maxPods":"vcpus - 100"}`), &bad); err != nil {
		t.Fatal(err)
	}
	if err := ResolveKubelet(m5large(), KubeletOf(bad, env), 0); err == nil || !strings.Contains(err.Error(), "outside [0, 2147483647]") {
		t.Errorf("negative maxPods: %v", err)
	}
}

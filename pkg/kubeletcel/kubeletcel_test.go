package kubeletcel_test

import (
	"strings"
	"testing"

	"github.com/dovetail/dovetail/pkg/kubeletcel"
)

func TestEval(t *testing.T) {
	env, err := kubeletcel.New()
	if err != nil {
		t.Fatal(err)
	}
	m5 := kubeletcel.Vars{VCPUs: 2, MemoryMiB: 8192, DefaultENIs: 3, IPsPerENI: 10, MaxPods: 29, InstanceType: "m5.large"}
	for _, tc := range []struct {
		expr string
		want int64
		err  string
	}{
		{"min(max_pods, 110)", 29, ""},
		{"max(vcpus * 30, 60)", 60, ""},
		{"memory_mib / 100", 81, ""},
		{"double(memory_mib) * 0.02", 163, ""},
		{"memory_mib * 0.02", 0, "no matching overload"},
		{"min(1.5, vcpus)", 1, ""},
		{"default_enis * (ips_per_eni - 1) + 2", 29, ""},
		{"instance_type == 'm5.large' ? 50 : 20", 50, ""},
		{"double(vcpus) / 0.0", 0, "gives +Inf"},
		{"instance_type", 0, "not an int or a double"},
		{"pods * 2", 0, "undeclared reference to 'pods'"},
		{"vcpus / 0", 0, "division by zero"},
	} {
		got, err := env.Eval(tc.expr, m5)
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Eval(%q) = %d, %v; want %d", tc.expr, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Eval(%q) = %d, %v; want an error containing %q", tc.expr, got, err, tc.err)
		}
	}
	if err := env.Compile("vcpus +"); err == nil {
		t.Errorf("Compile(vcpus +) succeeded")
	}
}

func TestReserved(t *testing.T) {
	for _, tc := range []struct {
		key  string
		n    int64
		want string
	}{
		{"cpu", 60, "60m"}, {"cpu", 61, "70m"}, {"memory", 630, "640Mi"}, {"memory", 640, "640Mi"},
		{"ephemeral-storage", 3, "3Gi"}, {"pid", 1001, "1001"}, {"cpu", 0, "0m"},
	} {
		if got := kubeletcel.Reserved(tc.key, tc.n); got != tc.want {
			t.Errorf("Reserved(%s, %d) = %s, want %s", tc.key, tc.n, got, tc.want)
		}
	}
}

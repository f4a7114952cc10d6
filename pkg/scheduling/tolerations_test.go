package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestToleratesTaint(t *testing.T) {
	taint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{"equal", corev1.Toleration{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, true},
		{"default operator is Equal", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu"}, true},
		{"other value", corev1.Toleration{Key: "dedicated", Value: "cpu"}, false},
		{"exists", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}, true},
		{"exists, every key", corev1.Toleration{Operator: corev1.TolerationOpExists}, true},
		{"other effect", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, false},
		{"other key", corev1.Toleration{Key: "team", Operator: corev1.TolerationOpExists}, false},
		{"empty key with Equal: value compared, as the kube-scheduler does", corev1.Toleration{Value: "gpu"}, true},
		{"numeric operator", corev1.Toleration{Key: "dedicated", Operator: "Gt", Value: "1"}, false},
	} {
		if got := ToleratesTaint(&tc.tol, &taint); got != tc.want {
			t.Errorf("%s: ToleratesTaint(%+v) = %v, want %v", tc.name, tc.tol, got, tc.want)
		}
	}
}

package solver

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestSubtractPodRequests: taking a pod's requests from a list in place gives what Subtract(a, PodRequests(p))
// gives (containers summed, the largest init container when larger, overhead, one pod), and leaves the pod's
// own quantities as they were.
func TestSubtractPodRequests(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	containers := func(lists ...corev1.ResourceList) []corev1.Container {
		var out []corev1.Container
		for _, l := range lists {
			out = append(out, corev1.Container{Resources: corev1.ResourceRequirements{Requests: l}})
		}
		return out
	}
	tests := []struct {
		name string
		room corev1.ResourceList
		pod  corev1.PodSpec
	}{
		{name: "containers summed", room: rl("cpu", "4", "memory", "16Gi", "pods", "110"),
			pod: corev1.PodSpec{Containers: containers(rl("cpu", "370m", "memory", "1Gi"), rl("cpu", "100m"))}},
		{name: "overhead", room: rl("cpu", "4", "memory", "16Gi", "pods", "110"),
			pod: corev1.PodSpec{Containers: containers(rl("cpu", "1")), Overhead: rl("cpu", "250m", "memory", "120Mi")}},
		{name: "larger init container", room: rl("cpu", "4", "memory", "16Gi", "pods", "110"),
			pod: corev1.PodSpec{Containers: containers(rl("cpu", "500m")), InitContainers: containers(rl("cpu", "2", "memory", "3Gi"))}},
		{name: "resource the room lacks goes negative", room: rl("cpu", "1", "pods", "2"),
			pod: corev1.PodSpec{Containers: containers(rl("cpu", "2", "nvidia.com/gpu", "1"))}},
		{name: "no requests", room: rl("cpu", "1", "pods", "1"), pod: corev1.PodSpec{Containers: containers(nil)}},
		{name: "decimal exponents", room: rl("cpu", "1e3", "memory", "1.5e12", "pods", "110"),
			pod: corev1.PodSpec{Containers: containers(rl("cpu", "0.001", "memory", "123456789012345678901234567890"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: tt.pod}
			before := p.DeepCopy()
			want := Subtract(tt.room, PodRequests(p))
			got := Sum(tt.room)
			SubtractPodRequests(got, p)
			if len(got) != len(want) {
				t.Fatalf("got %v, want %v", got, want)
			}
			for name, w := range want {
				if g := got[name]; g.Cmp(w) != 0 {
					t.Errorf("%s: got %s, want %s", name, g.String(), w.String())
				}
			}
			for i, c := range p.Spec.Containers {
				for name, q := range c.Resources.Requests {
					if b := before.Spec.Containers[i].Resources.Requests[name]; q.Cmp(b) != 0 {
						t.Errorf("container %d's %s request changed from %s to %s", i, name, b.String(), q.String())
					}
				}
			}
		})
	}
}

package solver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourceNodes is the pseudo-resource "nodes" in NodePool limits and usage.
const ResourceNodes corev1.ResourceName = "nodes"

// PodRequests returns the pod's effective requests: the larger of the sum of its containers and the largest
// init container, plus its overhead, plus one "pods".
func PodRequests(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		Add(out, c.Resources.Requests)
	}
	for _, c := range p.Spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	Add(out, p.Spec.Overhead)
	out[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return out
}

// Add adds b into a.
func Add(a, b corev1.ResourceList) {
	for name, q := range b {
		sum := a[name]
		sum.Add(q)
		a[name] = sum
	}
}

// Sum returns the sum of the lists.
func Sum(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		Add(out, l)
	}
	return out
}

// Subtract returns a - b (may be negative).
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range a {
		out[name] = q.DeepCopy()
	}
	for name, q := range b {
		d := out[name]
		d.Sub(q)
		out[name] = d
	}
	return out
}

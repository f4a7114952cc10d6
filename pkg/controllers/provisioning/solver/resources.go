package solver

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

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

// Fits reports whether every request is covered by available. A zero request for a missing resource fits.
func Fits(requests, available corev1.ResourceList) bool {
	for name, q := range requests {
		a, ok := available[name]
		if !ok {
			if q.IsZero() {
				continue
			}
			return false
		}
		if a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// Exceeds returns the first resource name for which usage is above limits, or "".
func Exceeds(usage, limits corev1.ResourceList) corev1.ResourceName {
	for name, l := range limits {
		if u, ok := usage[name]; ok && u.Cmp(l) > 0 {
			return name
		}
	}
	return ""
}

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

// SubtractPodRequests takes the pod's requests, as PodRequests counts them, from a in place. a must own its
// quantities (as Sum's result does): at 5,000 nodes a provisioning pass takes every bound pod from the room of its
// NodeClaim, and a new list for each pod's requests and for each difference was most of that snapshot's garbage.
func SubtractPodRequests(a corev1.ResourceList, p *corev1.Pod) {
	if len(p.Spec.InitContainers) > 0 {
		subtractFrom(a, PodRequests(p))
		return
	}
	for i := range p.Spec.Containers {
		subtractFrom(a, p.Spec.Containers[i].Resources.Requests)
	}
	subtractFrom(a, p.Spec.Overhead)
	pods := a[corev1.ResourcePods]
	pods.Sub(*resource.NewQuantity(1, resource.DecimalSI))
	a[corev1.ResourcePods] = pods
}

// subtractFrom takes b from a in place.
func subtractFrom(a, b corev1.ResourceList) {
	for name, q := range b {
		d := a[name]
		d.Sub(q)
		a[name] = d
	}
}

package capacitybuffer

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
)

// Source is what a buffer's reference resolved to: the pod template of one buffer pod and, for a scalableRef,
// the workload's replica count.
type Source struct {
	// Template is the shape of one buffer pod.
	Template corev1.PodTemplateSpec
	// PodTemplateName and PodTemplateGeneration are set when the shape came from a PodTemplate.
	PodTemplateName       string
	PodTemplateGeneration int64
	// WorkloadReplicas is the scalableRef workload's spec.replicas (1 when unset, as for the workloads
	// themselves); nil for a PodTemplate.
	WorkloadReplicas *int32
}

// Replicas is the number of buffer pods a buffer keeps room for, as upstream computes it: the larger of
// spec.replicas and spec.percentage of the workload's replicas (rounded up, at least 1 when both are positive),
// capped by what fits in spec.limits; with neither replicas nor a usable percentage, as many as fit in the
// limits; 0 when nothing sizes the buffer.
func Replicas(spec autoscalingv1beta1.CapacityBufferSpec, src Source) int32 {
	var desired int32
	sized := false
	if spec.Replicas != nil {
		desired, sized = *spec.Replicas, true
	}
	if spec.Percentage != nil && src.WorkloadReplicas != nil && *src.WorkloadReplicas > 0 {
		p := percentOf(*src.WorkloadReplicas, *spec.Percentage)
		if !sized || p > desired {
			desired = p
		}
		sized = true
	}
	if fit, ok := fitInLimits(corev1.ResourceList(spec.Limits), src.Template.Spec); ok {
		if !sized || fit < desired {
			return fit
		}
	}
	return desired
}

// percentOf is ceil(n*pct/100), at least 1 when both are positive.
func percentOf(n, pct int32) int32 {
	v := (int64(n)*int64(pct) + 99) / 100
	if v < 1 && n > 0 && pct > 0 {
		v = 1
	}
	return clamp32(v)
}

// fitInLimits is how many pods of the spec fit in the limits: the minimum over the resources both name of
// floor(limit/request). ok is false when no limited resource is requested (the limits constrain nothing).
func fitInLimits(limits corev1.ResourceList, spec corev1.PodSpec) (int32, bool) {
	if len(limits) == 0 {
		return 0, false
	}
	req := PodRequests(spec)
	best, ok := int64(math.MaxInt32), false
	for name, limit := range limits {
		r, found := req[name]
		if !found || r.IsZero() {
			continue
		}
		ok = true
		n := limit.MilliValue() / r.MilliValue()
		if limit.Sign() < 0 {
			n = 0
		}
		best = min(best, n)
	}
	return clamp32(best), ok
}

// PodRequests is what one pod of the spec requests: the larger of its containers' sum and its largest init
// container, per resource, plus overhead (no "pods" entry).
func PodRequests(spec corev1.PodSpec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	for _, c := range spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range spec.Overhead {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}

func clamp32(v int64) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < 0:
		return 0
	}
	return int32(v)
}

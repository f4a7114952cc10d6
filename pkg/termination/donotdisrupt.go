package termination

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// DoNotDisrupt is what a pod's karpenter.sh/do-not-disrupt annotation means at one time. The value "true"
// protects the pod for ever; a positive Go duration ("30m", "1h") protects it for that long from the pod's start
// (status.startTime), as in Karpenter; a pod not started yet is protected. Any other value is invalid and ignored.
type DoNotDisrupt struct {
	// Set is true when the pod carries the annotation.
	Set bool
	// Value is the annotation's value.
	Value string
	// Active is true while the annotation protects the pod.
	Active bool
	// For is the duration of a duration value (zero for "true" or an invalid value).
	For time.Duration
	// Until is when a duration's protection ends (zero for "true", an invalid value, or a pod not started yet).
	Until time.Time
	// Invalid is why the value is neither "true" nor a positive duration ("" when valid).
	Invalid string
}

// PodDoNotDisrupt reads the pod's karpenter.sh/do-not-disrupt annotation at now.
func PodDoNotDisrupt(pod *corev1.Pod, now time.Time) DoNotDisrupt {
	v, ok := pod.Annotations[karpv1.DoNotDisruptAnnotationKey]
	if !ok {
		return DoNotDisrupt{}
	}
	d := DoNotDisrupt{Set: true, Value: v}
	if v == karpv1.DoNotDisruptValue {
		d.Active = true
		return d
	}
	dur, err := time.ParseDuration(v)
	switch {
	case err != nil:
		d.Invalid = fmt.Sprintf("%q is neither \"true\" nor a duration such as 30m", v)
		return d
	case dur <= 0:
		d.Invalid = fmt.Sprintf("duration %q is not positive", v)
		return d
	}
	d.For = dur
	if pod.Status.StartTime == nil {
		d.Active = true
		return d
	}
	d.Until = pod.Status.StartTime.Add(dur)
	d.Active = now.Before(d.Until)
	return d
}

// Describe says what the annotation does, for messages: "karpenter.sh/do-not-disrupt=true",
// "karpenter.sh/do-not-disrupt=10m until 2026-11-29T07:10:00Z".
func (d DoNotDisrupt) Describe() string {
	s := karpv1.DoNotDisruptAnnotationKey + "=" + d.Value
	switch {
	case !d.Until.IsZero():
		s += " until " + d.Until.UTC().Format(time.RFC3339)
	case d.For > 0:
		s += " (the pod has not started yet)"
	}
	return s
}

package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Event reasons on pods about a karpenter.sh/do-not-disrupt value other than "true" (Karpenter's).
const (
	ReasonDoNotDisruptUntil             = "DoNotDisruptUntil"
	ReasonDoNotDisruptElapsed           = "DoNotDisruptGracePeriodElapsed"
	ReasonInvalidDoNotDisruptAnnotation = "InvalidDoNotDisruptAnnotation"
)

// announceDoNotDisrupt records, on the candidates' pods whose karpenter.sh/do-not-disrupt is a duration or
// invalid, when their protection ends (DoNotDisruptUntil), that it has ended (DoNotDisruptGracePeriodElapsed), or
// that the value is ignored (InvalidDoNotDisruptAnnotation): once per pod and message while the pod is a candidate.
func (c *Controller) announceDoNotDisrupt(cands []*core.Candidate, now time.Time) {
	if c.deps.Recorder == nil {
		return
	}
	seen := map[string]bool{}
	for _, cand := range cands {
		for _, p := range cand.Pods {
			d := termination.PodDoNotDisrupt(p, now)
			if !d.Set || d.Value == karpv1.DoNotDisruptValue {
				continue
			}
			eventType, reason, msg := corev1.EventTypeNormal, "", ""
			switch {
			case d.Invalid != "":
				eventType, reason = corev1.EventTypeWarning, ReasonInvalidDoNotDisruptAnnotation
				msg = fmt.Sprintf("Ignoring the annotation %s: %s", karpv1.DoNotDisruptAnnotationKey, d.Invalid)
			case d.Active && !d.Until.IsZero():
				reason = ReasonDoNotDisruptUntil
				msg = fmt.Sprintf("The pod is protected from voluntary disruption until %s (%s=%s from its start)",
					d.Until.UTC().Format(time.RFC3339), karpv1.DoNotDisruptAnnotationKey, d.Value)
			case !d.Active:
				reason = ReasonDoNotDisruptElapsed
				msg = fmt.Sprintf("The %s=%s protection ended at %s: the pod may be disrupted", karpv1.DoNotDisruptAnnotationKey,
					d.Value, d.Until.UTC().Format(time.RFC3339))
			default:
				continue // a duration on a pod not started yet: nothing to say until it starts
			}
			key := string(p.UID) + "/" + p.Namespace + "/" + p.Name
			seen[key] = true
			if c.podNotices[key] == reason+msg {
				continue
			}
			c.podNotices[key] = reason + msg
			c.deps.Recorder.Event(p, eventType, reason, msg)
		}
	}
	for k := range c.podNotices {
		if !seen[k] {
			delete(c.podNotices, k)
		}
	}
}

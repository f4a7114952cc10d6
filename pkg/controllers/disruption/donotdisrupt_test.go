package disruption

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	core "github.com/dovetail/dovetail/pkg/disruption"
)

// TestAnnounceDoNotDisrupt: a duration value gets DoNotDisruptUntil while it protects and
// DoNotDisruptGracePeriodElapsed once it has ended, an invalid value InvalidDoNotDisruptAnnotation, each once;
// "true" and pods without the annotation get nothing.
func TestAnnounceDoNotDisrupt(t *testing.T) {
	rec := record.NewFakeRecorder(20)
	c := NewController(deps.Deps{Recorder: rec})
	start := metav1.NewTime(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))
	pod := func(name, value string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}, Status: corev1.PodStatus{StartTime: &start}}
		if value != "" {
			p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: value}
		}
		return p
	}
	cands := []*core.Candidate{{Pods: []*corev1.Pod{pod("timed", "90s"), pod("bad", "soon"), pod("forever", "true"), pod("plain", "")}}}
	drain := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}
	c.announceDoNotDisrupt(cands, start.Add(time.Minute))
	c.announceDoNotDisrupt(cands, start.Add(time.Minute+time.Second))
	want := []string{
		"Normal DoNotDisruptUntil The pod is protected from voluntary disruption until 2026-11-29T07:01:30Z (karpenter.sh/do-not-disrupt=90s from its start)",
		`Warning InvalidDoNotDisruptAnnotation Ignoring the annotation karpenter.sh/do-not-disrupt: "soon" is neither "true" nor a duration such as 30m`,
	}
	if d := cmp.Diff(want, drain()); d != "" {
		t.Errorf("events while protected (-want +got):\n%s", d)
	}
	c.announceDoNotDisrupt(cands, start.Add(2*time.Minute))
	got := drain()
	if len(got) != 1 || !strings.HasPrefix(got[0], "Normal DoNotDisruptGracePeriodElapsed The karpenter.sh/do-not-disrupt=90s protection ended at 2026-11-29T07:01:30Z") {
		t.Errorf("events after the protection ended: %q", got)
	}
}

package hashversion_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/hashversion"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestNodePool(t *testing.T) {
	base := test.NodePool("a").Label("team", "x").Taint("k", "v", corev1.TaintEffectNoSchedule).Taint("j", "", corev1.TaintEffectNoExecute).Obj()
	tests := []struct {
		name   string
		mutate func(np *karpv1.NodePool)
		same   bool
	}{
		{"identical", func(*karpv1.NodePool) {}, true},
		{"taint order", func(np *karpv1.NodePool) {
			ts := np.Spec.Template.Spec.Taints
			ts[0], ts[1] = ts[1], ts[0]
		}, true},
		{"requirements are not hashed", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
				karpv1.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"))
		}, true},
		{"limits are not hashed", func(np *karpv1.NodePool) { np.Spec.Limits = karpv1.Limits{} }, true},
		{"label value", func(np *karpv1.NodePool) { np.Spec.Template.Labels["team"] = "y" }, false},
		{"taint value", func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints[0].Value = "w" }, false},
		{"node class", func(np *karpv1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }, false},
		{"expireAfter", func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("24h") }, false},
		{"terminationGracePeriod", func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}, false},
	}
	want := hashversion.NodePool(base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np := base.DeepCopy()
			tt.mutate(np)
			got := hashversion.NodePool(np)
			if (got == want) != tt.same {
				t.Errorf("hash %s vs base %s: same=%v, want same=%v", got, want, got == want, tt.same)
			}
		})
	}
}

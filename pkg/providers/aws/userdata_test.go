package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/providers/aws/launchtemplate"
)

// TestUserDataMemo: the memo returns what Render returns, for equal bootstraps from memory and for a bootstrap
// that differs in any part (here a label, a taint, the kubelet's max pods) rendered anew; a failed render is
// not remembered.
func TestUserDataMemo(t *testing.T) {
	base := func() launchtemplate.Bootstrap {
		return launchtemplate.Bootstrap{
			Family: launchtemplate.FamilyAL2023, ClusterName: "c", Endpoint: "https://example.com", CABundle: "Y2E=",
			ServiceCIDR: "10.100.0.0/16", Kubelet: launchtemplate.KubeletConfig{MaxPods: 29, ClusterDNS: []string{"10.100.0.10"}},
			Labels: map[string]string{"karpenter.sh/nodepool": "default"},
			Taints: []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}},
		}
	}
	u := newUserDataMemo()
	variants := map[string]func(*launchtemplate.Bootstrap){
		"same":  func(*launchtemplate.Bootstrap) {},
		"label": func(b *launchtemplate.Bootstrap) { b.Labels["team"] = "a" },
		"taint": func(b *launchtemplate.Bootstrap) {
			b.Taints = append(b.Taints, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule})
		},
		"max pods": func(b *launchtemplate.Bootstrap) { b.Kubelet.MaxPods = 58 },
	}
	for round := range 2 {
		for name, change := range variants {
			b := base()
			change(&b)
			want, err := b.Render()
			if err != nil {
				t.Fatal(err)
			}
			got, err := u.render(b)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("round %d, %s: memo returned other user data than Render:\n%s\nwant:\n%s", round, name, got, want)
			}
		}
	}
	if len(u.m) != 4 {
		t.Errorf("memo holds %d renders, want 4 (one per distinct bootstrap)", len(u.m))
	}
	bad := base()
	bad.Family = "Plan9"
	if _, err := u.render(bad); err == nil {
		t.Fatal("an unsupported family rendered without error")
	}
	if len(u.m) != 4 {
		t.Errorf("a failed render was remembered: %d entries", len(u.m))
	}
}

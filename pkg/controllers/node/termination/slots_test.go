package termination

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func slotPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, Labels: labels}}
}

func slotPDB(name string, selector *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: selector}}
}

// Pods under one PodDisruptionBudget get at most maxConcurrentEvictionsPerBudget slots; pods no budget selects
// and pods of other budgets are not held back by them; every eviction counts against maxConcurrentEvictions.
func TestEvictionSlotsPerBudget(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		slotPDB("web", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}),
		slotPDB("db", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}),
		slotPDB("none", nil),
	).Build()
	c := &Controller{kube: kube, evictions: make(chan struct{}, maxConcurrentEvictions), underBudget: map[string]int{}}

	var releases []func()
	take := func(p *corev1.Pod) bool {
		release, ok := c.evictionSlot(ctx, p)
		if ok {
			releases = append(releases, release)
		}
		return ok
	}
	web := slotPod("web", map[string]string{"app": "web"})
	for i := 0; i < maxConcurrentEvictionsPerBudget; i++ {
		if !take(web) {
			t.Fatalf("eviction %d of a pod under budget web refused, want %d allowed at once", i+1, maxConcurrentEvictionsPerBudget)
		}
	}
	if take(web) {
		t.Errorf("eviction %d under budget web allowed, want at most %d in flight", maxConcurrentEvictionsPerBudget+1, maxConcurrentEvictionsPerBudget)
	}
	if !take(slotPod("db", map[string]string{"app": "db"})) {
		t.Errorf("a pod under another budget was held back by budget web's evictions")
	}
	for i := 0; i < 10; i++ {
		if !take(slotPod("batch", map[string]string{"app": "batch"})) {
			t.Fatalf("eviction %d of a pod no budget selects refused", i+1)
		}
	}
	if got, want := len(c.evictions), maxConcurrentEvictionsPerBudget+11; got != want {
		t.Errorf("%d eviction slots taken, want %d (a refused request takes none)", got, want)
	}
	releases[0]()
	if !take(web) {
		t.Errorf("eviction under budget web refused after one of its slots was released")
	}
	for len(c.evictions) < maxConcurrentEvictions {
		if !take(slotPod("batch", nil)) {
			t.Fatalf("slot refused with %d of %d taken", len(c.evictions), maxConcurrentEvictions)
		}
	}
	if take(slotPod("batch", nil)) {
		t.Errorf("eviction allowed with all %d slots taken", maxConcurrentEvictions)
	}
	for _, r := range releases[1:] {
		r()
	}
	if len(c.evictions) != 0 || len(c.underBudget) != 0 {
		t.Errorf("after every release: %d slots taken, budgets %v, want none", len(c.evictions), c.underBudget)
	}
}

package deps_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

func podNames(t *testing.T, d deps.Deps) []string {
	t.Helper()
	var names []string
	if err := d.EachCachedPod(context.Background(), func(p *corev1.Pod) { names = append(names, p.Namespace+"/"+p.Name) }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return names
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
}

// TestEachCachedPodWalksTheCache: with the manager's cache, every cached Pod is visited (from the informer's
// store); a pod deleted from the API server disappears once the cache hears of it.
func TestEachCachedPodWalksTheCache(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, scheme)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cache.New(env.Config, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	cl, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if err := cl.Create(ctx, pod(name)); err != nil {
			t.Fatal(err)
		}
	}
	d := deps.Deps{Cache: c, Client: clientfake.NewClientBuilder().WithScheme(scheme).Build()} // the fake client is empty: pods seen come from the cache
	wait := func(want []string) {
		t.Helper()
		var got []string
		for ctx.Err() == nil {
			if got = podNames(t, d); cmp.Equal(got, want) {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		t.Fatalf("pods walked: %v, want %v", got, want)
	}
	wait([]string{"default/a", "default/b", "default/c"})
	if err := cl.Delete(ctx, pod("b")); err != nil {
		t.Fatal(err)
	}
	wait([]string{"default/a", "default/c"})
}

// TestEachCachedPodListsWithoutACache: without a cache the pods come from the client.
func TestEachCachedPodListsWithoutACache(t *testing.T) {
	d := deps.Deps{Client: clientfake.NewClientBuilder().WithObjects(pod("x"), pod("y")).Build()}
	if diff := cmp.Diff([]string{"default/x", "default/y"}, podNames(t, d)); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
}

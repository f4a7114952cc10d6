package deps

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBuffers: pods are returned in buffer then pod order as copies, changes call the hook, Room is by name, and
// a nil store is empty.
func TestBuffers(t *testing.T) {
	var nilStore *Buffers
	if nilStore.Any() || nilStore.Pods() != nil || nilStore.Room("x") != nil {
		t.Error("nil store not empty")
	}
	nilStore.Set("a/b", nil) // no panic
	b := NewBuffers()
	calls := 0
	b.OnChange(func() { calls++ })
	pod := func(name string) *corev1.Pod { return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	b.Set("ns/z", []*corev1.Pod{pod("z1")})
	b.Set("ns/a", []*corev1.Pod{pod("a1"), pod("a2")})
	var names []string
	for _, p := range b.Pods() {
		names = append(names, p.Name)
	}
	if got := len(names); got != 3 || names[0] != "a1" || names[2] != "z1" || !b.Any() {
		t.Errorf("pods %v, any %v", names, b.Any())
	}
	b.Pods()[0].Name = "changed"
	if b.Pods()[0].Name != "a1" {
		t.Error("Pods returned the stored pod, not a copy")
	}
	b.Delete("ns/a")
	b.Delete("ns/a") // no change: no call
	b.Delete("ns/z")
	if calls != 4 || b.Any() {
		t.Errorf("hook called %d times (want 4), any %v", calls, b.Any())
	}
	b.SetRoom(map[string][]*corev1.Pod{"node-1": {pod("a1")}})
	if len(b.Room("node-1")) != 1 || len(b.Room("node-2")) != 0 {
		t.Errorf("room %v %v", b.Room("node-1"), b.Room("node-2"))
	}
}

func TestBuffersVersion(t *testing.T) {
	b := NewBuffers()
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	v0 := b.Version()
	b.SetRoom(nil)
	if b.Version() != v0 {
		t.Error("setting the same empty room changed the version")
	}
	b.SetRoom(map[string][]*corev1.Pod{"n1": {pod("a")}})
	v1 := b.Version()
	if v1 == v0 {
		t.Error("new room did not change the version")
	}
	b.SetRoom(map[string][]*corev1.Pod{"n1": {pod("a")}})
	if b.Version() != v1 {
		t.Error("the same room again changed the version")
	}
	b.SetRoom(map[string][]*corev1.Pod{"n2": {pod("a")}})
	v2 := b.Version()
	if v2 == v1 {
		t.Error("room moved to another node without a version change")
	}
	b.Set("ns/buf", []*corev1.Pod{pod("a")})
	if b.Version() == v2 {
		t.Error("a buffer's pods changed without a version change")
	}
	var none *Buffers
	if none.Version() != 0 {
		t.Error("a nil store is not at version 0")
	}
}

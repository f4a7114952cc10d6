package awssim

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// fakeSink records Nodes in memory.
type fakeSink struct {
	mu    sync.Mutex
	nodes map[string]*corev1.Node
	fail  error
	calls []string
}

func newFakeSink() *fakeSink { return &fakeSink{nodes: map[string]*corev1.Node{}} }

func (f *fakeSink) CreateNode(_ context.Context, spec NodeSpec) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "create "+spec.Name)
	if f.fail != nil {
		return f.fail
	}
	if _, ok := f.nodes[spec.Name]; ok {
		return fmt.Errorf("node %s already exists", spec.Name)
	}
	f.nodes[spec.Name] = spec.Node()
	return nil
}

func (f *fakeSink) DeleteNode(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "delete "+name)
	delete(f.nodes, name)
	return nil
}

func (f *fakeSink) RemoveTaint(_ context.Context, name, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "untaint "+name)
	n, ok := f.nodes[name]
	if !ok {
		return fmt.Errorf("node %s not found", name)
	}
	var kept []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Key != key {
			kept = append(kept, t)
		}
	}
	n.Spec.Taints = kept
	return nil
}

func (f *fakeSink) node(name string) *corev1.Node {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.nodes[name]; ok {
		return n.DeepCopy()
	}
	return nil
}

func (f *fakeSink) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.nodes)
}

func (f *fakeSink) BeginReboot(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "reboot "+name)
	n, ok := f.nodes[name]
	if !ok {
		return nil
	}
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	return nil
}

func (f *fakeSink) EndReboot(_ context.Context, name, bootID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "back "+name)
	n, ok := f.nodes[name]
	if !ok {
		return nil
	}
	n.Status.NodeInfo.BootID = bootID
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionTrue
		}
	}
	return nil
}

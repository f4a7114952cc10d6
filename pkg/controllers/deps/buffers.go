package deps

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Buffers is the CapacityBuffer state controllers share: the virtual pods of each resolved buffer (written by
// the capacitybuffer controller, read by the provisioner) and where the provisioner's last pass placed them
// (read by the disruption controller, so that consolidation keeps the room). Safe for concurrent use; a nil
// *Buffers is empty (the feature gate is off).
type Buffers struct {
	mu sync.Mutex
	// pods are the virtual pods by buffer (namespace/name).
	pods map[string][]*corev1.Pod
	// room are the virtual pods placed on existing capacity by the provisioner's last pass, by Node name (or
	// NodeClaim name while it has no Node).
	room map[string][]*corev1.Pod
	// changed is called after the virtual pods of a buffer change.
	changed func()
	// version counts the changes of pods and room.
	version uint64
}

// NewBuffers returns an empty store.
func NewBuffers() *Buffers {
	return &Buffers{pods: map[string][]*corev1.Pod{}, room: map[string][]*corev1.Pod{}}
}

// OnChange sets the function called after Set or Delete changes a buffer's pods (the provisioner's trigger).
func (b *Buffers) OnChange(f func()) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.changed = f
}

// Set replaces the virtual pods of a buffer.
func (b *Buffers) Set(key string, pods []*corev1.Pod) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.pods[key] = pods
	b.version++
	f := b.changed
	b.mu.Unlock()
	if f != nil {
		f()
	}
}

// Delete forgets a buffer.
func (b *Buffers) Delete(key string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	_, had := b.pods[key]
	delete(b.pods, key)
	b.version++
	f := b.changed
	b.mu.Unlock()
	if had && f != nil {
		f()
	}
}

// Any reports whether some buffer has virtual pods.
func (b *Buffers) Any() bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, pods := range b.pods {
		if len(pods) > 0 {
			return true
		}
	}
	return false
}

// Pods returns deep copies of every buffer's virtual pods, ordered by buffer then pod name.
func (b *Buffers) Pods() []*corev1.Pod {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	keys := make([]string, 0, len(b.pods))
	for k := range b.pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []*corev1.Pod
	for _, k := range keys {
		for _, p := range b.pods[k] {
			out = append(out, p.DeepCopy())
		}
	}
	return out
}

// SetRoom replaces where the virtual pods sit (by Node or NodeClaim name).
func (b *Buffers) SetRoom(byNode map[string][]*corev1.Pod) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !sameRoom(b.room, byNode) {
		b.version++
	}
	b.room = byNode
}

// sameRoom reports whether a and b place the same virtual pods (by namespace and name) on the same nodes.
func sameRoom(a, b map[string][]*corev1.Pod) bool {
	if len(a) != len(b) {
		return false
	}
	for node, pods := range a {
		other, ok := b[node]
		if !ok || len(other) != len(pods) {
			return false
		}
		for i := range pods {
			if pods[i].Namespace != other[i].Namespace || pods[i].Name != other[i].Name {
				return false
			}
		}
	}
	return true
}

// Version changes whenever the virtual pods or their room may have: equal versions mean the same buffers and
// room. A nil *Buffers is at version 0.
func (b *Buffers) Version() uint64 {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.version
}

// Room returns deep copies of the virtual pods placed on the Node or NodeClaim of that name.
func (b *Buffers) Room(name string) []*corev1.Pod {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range b.room[name] {
		out = append(out, p.DeepCopy())
	}
	return out
}

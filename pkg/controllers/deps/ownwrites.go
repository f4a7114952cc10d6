package deps

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnWrites remembers, by name, the object as the API server returned it after this controller's last write, so
// that a pass reading the object from a cache still behind that write works on the written object instead: a
// write computed from the older copy would be refused (a failed JSON patch test, a duplicate condition, an
// optimistic-lock conflict) and retried after a backoff. Under load the cache is seconds behind, and a Node
// heartbeat or another controller's write often brings a NodeClaim back to the lifecycle before the update its
// own last write made: in a 100-node scale-out 192 NodeClaim status writes of the lifecycle were refused for it.
//
// Resource versions are compared as the API server orders them (see newer);
// an entry is dropped once the cache has caught up with it, when its object is recreated (another UID), and after
// maxAge, past which the cache is trusted again. It is safe for concurrent use.
type OwnWrites[T client.Object] struct {
	clock  clock.PassiveClock
	maxAge time.Duration

	mu        sync.Mutex
	m         map[string]ownWrite[T]
	lastSweep time.Time
}

type ownWrite[T client.Object] struct {
	obj T
	uid types.UID
	rv  string
	at  time.Time
}

// NewOwnWrites returns an empty memo whose entries expire after maxAge; a nil clock is the real one.
func NewOwnWrites[T client.Object](clk clock.PassiveClock, maxAge time.Duration) *OwnWrites[T] {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &OwnWrites[T]{clock: clk, maxAge: maxAge, m: map[string]ownWrite[T]{}}
}

// Wrote records obj as this controller just wrote it (the API server's answer, with its new resource version).
// obj is copied.
func (w *OwnWrites[T]) Wrote(obj T) {
	if obj.GetResourceVersion() == "" {
		return
	}
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.m[obj.GetName()]; ok && prev.uid == obj.GetUID() && newer(prev.rv, obj.GetResourceVersion()) {
		// A concurrent pass wrote later and recorded first.
		return
	}
	w.m[obj.GetName()] = ownWrite[T]{obj: obj.DeepCopyObject().(T), uid: obj.GetUID(), rv: obj.GetResourceVersion(), at: now}
	if now.Sub(w.lastSweep) >= w.maxAge {
		w.lastSweep = now
		for name, e := range w.m {
			if now.Sub(e.at) >= w.maxAge {
				delete(w.m, name)
			}
		}
	}
}

// Latest returns cached, or a copy of the object this controller last wrote when cached (the same object, read
// from the cache) is older than that write. behind reports which.
func (w *OwnWrites[T]) Latest(cached T) (latest T, behind bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.m[cached.GetName()]
	if !ok {
		return cached, false
	}
	if e.uid != cached.GetUID() || w.clock.Since(e.at) >= w.maxAge || !newer(e.rv, cached.GetResourceVersion()) {
		delete(w.m, cached.GetName())
		return cached, false
	}
	return e.obj.DeepCopyObject().(T), true
}

// Forget drops what is kept of the named object (deleted, or being deleted).
func (w *OwnWrites[T]) Forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, name)
}

// Len is how many objects are remembered.
func (w *OwnWrites[T]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

// CacheBehind reports whether a cached object of resource version cached is older than this process's write that
// the API server answered with resource version written, or whether that cannot be told (a version of another
// form than the API server's, as some fake clients write): callers then bound their trust in the write by time.
func CacheBehind(written, cached string) bool {
	if !wellFormedVersion(written) || !wellFormedVersion(cached) {
		return true
	}
	return newer(written, cached)
}

// newer reports whether resource version a is later than b. The API server's resource versions are positive
// decimal integers without leading zeros, ordered as numbers (Kubernetes 1.34 made that a guarantee, with
// k8s.io/apimachinery's CompareResourceVersion, which the scheduling oracle's pinned v0.34 libraries lack).
// Versions of another form (as some fake clients write) count as not newer: the cache is then believed.
func newer(a, b string) bool {
	if !wellFormedVersion(a) || !wellFormedVersion(b) {
		return false
	}
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

func wellFormedVersion(v string) bool {
	if v == "" || v[0] == '0' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

package test

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Event is an event a Recorder received: the kind and name of the object it is on, its type, reason and
// message.
type Event struct {
	Kind, Name, Type, Reason, Message string
}

// Recorder is a record.EventRecorder that keeps every event with the object it is on, for tests that check
// where an event goes as well as what it says. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// Event records an event.
func (r *Recorder) Event(obj runtime.Object, eventType, reason, message string) {
	e := Event{Kind: fmt.Sprintf("%T", obj), Type: eventType, Reason: reason, Message: message}
	if o, ok := obj.(client.Object); ok {
		e.Name = o.GetName()
	}
	switch e.Kind {
	case "*v1.Node":
		e.Kind = "Node"
	case "*v1.Pod":
		e.Kind = "Pod"
	case "*v1.NodeClaim":
		e.Kind = "NodeClaim"
	case "*v1.NodePool":
		e.Kind = "NodePool"
	case "*v1.EC2NodeClass":
		e.Kind = "EC2NodeClass"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// Eventf records an event with a formatted message.
func (r *Recorder) Eventf(obj runtime.Object, eventType, reason, messageFmt string, args ...any) {
	r.Event(obj, eventType, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf records an event; the annotations are dropped.
func (r *Recorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, messageFmt string, args ...any) {
	r.Eventf(obj, eventType, reason, messageFmt, args...)
}

// Events returns the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// WithReason returns the events recorded so far with that reason.
func (r *Recorder) WithReason(reason string) []Event {
	var out []Event
	for _, e := range r.Events() {
		if e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// Reset forgets the events recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}

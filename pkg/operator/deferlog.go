package operator

import (
	"sync"

	"github.com/go-logr/logr"
)

// DeferValues returns logger with its WithValues and WithName recorded rather than applied: they reach the
// underlying sink, in the order they were made, when the derived logger first writes a line, once for all its
// lines. controller-runtime gives every reconcile a logger with the controller, the object and a reconcile ID,
// and the zap sink encodes those values as soon as they are added (a buffer and a copy of the encoder each
// time), while most reconciles log nothing: at 5,000 nodes, 48 MB of zap buffers in 8 minutes at rest. Whether a
// level is enabled is the underlying sink's answer, whatever the names and values.
func DeferValues(logger logr.Logger) logr.Logger {
	sink := logger.GetSink()
	if sink == nil {
		return logger
	}
	if _, ok := sink.(*deferredSink); ok {
		return logger
	}
	// The deferred sink's methods are one more frame between the caller and the underlying sink.
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1)
	}
	return logr.New(&deferredSink{root: sink})
}

// deferredOp is one recorded WithName (isName) or WithValues.
type deferredOp struct {
	isName bool
	name   string
	values []any
}

// deferredSink is a logr.LogSink applying ops to root on its first line. Safe for concurrent use.
type deferredSink struct {
	root logr.LogSink
	ops  []deferredOp // never changed once the sink exists

	once sync.Once
	sink logr.LogSink // root with ops applied, after once
}

var (
	_ logr.LogSink          = (*deferredSink)(nil)
	_ logr.CallDepthLogSink = (*deferredSink)(nil)
)

// Init does nothing: the underlying sink was initialized by the logger it came from.
func (*deferredSink) Init(logr.RuntimeInfo) {}

func (d *deferredSink) Enabled(level int) bool { return d.root.Enabled(level) }

func (d *deferredSink) Info(level int, msg string, keysAndValues ...any) {
	d.applied().Info(level, msg, keysAndValues...)
}

func (d *deferredSink) Error(err error, msg string, keysAndValues ...any) {
	d.applied().Error(err, msg, keysAndValues...)
}

func (d *deferredSink) WithValues(keysAndValues ...any) logr.LogSink {
	return d.with(deferredOp{values: keysAndValues})
}

func (d *deferredSink) WithName(name string) logr.LogSink {
	return d.with(deferredOp{isName: true, name: name})
}

func (d *deferredSink) WithCallDepth(depth int) logr.LogSink {
	root := d.root
	if cd, ok := root.(logr.CallDepthLogSink); ok {
		root = cd.WithCallDepth(depth)
	}
	return &deferredSink{root: root, ops: d.ops}
}

func (d *deferredSink) with(op deferredOp) *deferredSink {
	ops := make([]deferredOp, len(d.ops)+1)
	copy(ops, d.ops)
	ops[len(d.ops)] = op
	return &deferredSink{root: d.root, ops: ops}
}

// applied returns root with the recorded ops applied, applying them the first time.
func (d *deferredSink) applied() logr.LogSink {
	d.once.Do(func() {
		s := d.root
		for _, op := range d.ops {
			if op.isName {
				s = s.WithName(op.name)
			} else {
				s = s.WithValues(op.values...)
			}
		}
		d.sink = s
	})
	return d.sink
}

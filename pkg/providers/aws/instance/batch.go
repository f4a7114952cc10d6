package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
)

// BatchWindow says how long identical launch requests are collected before they go out as one CreateFleet call.
type BatchWindow struct {
	// Idle closes the window when no request joined it for this long.
	Idle time.Duration
	// Max closes the window this long after its first request, however busy it is.
	Max time.Duration
	// Size closes the window once it holds this many requests.
	Size int
	// Clock times the window (default: the real clock).
	Clock clock.Clock
	// Waiting, when set, returns how many launches are known to be on their way (NodeClaims created and not
	// yet launched): while it is above zero the window stays open past Idle, until Max.
	Waiting func() int
	// Observed, when set, is called as each window closes with the requests it collected and how long it was
	// open.
	Observed func(size int, open time.Duration)
}

// DefaultBatchWindow is the window the provider uses unless told otherwise: identical launches arriving less
// than 100 ms apart share a call, and while launches are known to be on their way (Waiting) the window waits
// for them, four seconds at most, which keeps the first NodeClaim of a batch from waiting long.
var DefaultBatchWindow = BatchWindow{Idle: 100 * time.Millisecond, Max: 4 * time.Second, Size: 500}

// launchRequest is one NodeClaim's wait for an instance of a merged fleet.
type launchRequest struct {
	r    FleetRequest
	full *ec2.CreateFleetInput
	done chan launchResult
}

// launchResult is one request's share of a fleet: its instance (nil if the fleet ran short), the whole
// fleet's answer and the call's error.
type launchResult struct {
	instance *ec2types.CreateFleetInstance
	id       string
	out      *ec2.CreateFleetOutput
	// merged says the request went out with others, so its own tags were left off the launch.
	merged bool
	err    error
}

// fleetBatch is an open window of identical requests.
type fleetBatch struct {
	shared  *ec2.CreateFleetInput
	reqs    []*launchRequest
	last    time.Time
	sealed  bool
	arrived chan struct{}
}

// batcher merges identical CreateFleet requests arriving within a window into one call.
type batcher struct {
	window BatchWindow
	call   func(ctx context.Context, in *ec2.CreateFleetInput, reqs []*launchRequest) (*ec2.CreateFleetOutput, error)

	mu   sync.Mutex
	open map[string]*fleetBatch
}

func newBatcher(w BatchWindow, call func(context.Context, *ec2.CreateFleetInput, []*launchRequest) (*ec2.CreateFleetOutput, error)) *batcher {
	return &batcher{window: w.withDefaults(), call: call, open: map[string]*fleetBatch{}}
}

// batchKey identifies requests that may share a fleet: everything of the CreateFleet input but the
// per-NodeClaim tags, which the shared input leaves out.
func batchKey(shared *ec2.CreateFleetInput) (string, error) {
	b, err := json.Marshal(shared)
	if err != nil {
		return "", fmt.Errorf("hashing fleet request: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// launch waits for the request's share of a fleet. It always waits for the fleet's answer, so an instance
// launched for the request is never left without its NodeClaim learning of it; the call itself runs without
// the caller's cancellation for the same reason.
func (b *batcher) launch(ctx context.Context, shared, full *ec2.CreateFleetInput, r FleetRequest) launchResult {
	key, err := batchKey(shared)
	if err != nil {
		return launchResult{err: err}
	}
	req := &launchRequest{r: r, full: full, done: make(chan launchResult, 1)}
	b.mu.Lock()
	fb := b.open[key]
	if fb == nil {
		fb = &fleetBatch{shared: shared, arrived: make(chan struct{}, 1)}
		b.open[key] = fb
		go b.collect(context.WithoutCancel(ctx), key, fb)
	}
	fb.reqs = append(fb.reqs, req)
	fb.last = b.window.Clock.Now()
	if r.Queued != nil {
		r.Queued()
	}
	if len(fb.reqs) >= b.window.Size {
		b.sealLocked(key, fb)
	}
	b.mu.Unlock()
	select {
	case fb.arrived <- struct{}{}:
	default:
	}
	return <-req.done
}

func (b *batcher) sealLocked(key string, fb *fleetBatch) {
	fb.sealed = true
	if b.open[key] == fb {
		delete(b.open, key)
	}
}

// collect waits until the window closes, then makes the call and hands every request its share.
func (b *batcher) collect(ctx context.Context, key string, fb *fleetBatch) {
	clk := b.window.Clock
	start := clk.Now()
	b.window.waitClosed(start, func() (bool, time.Time) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return fb.sealed, fb.last
	}, fb.arrived)
	b.mu.Lock()
	b.sealLocked(key, fb)
	reqs := fb.reqs
	b.mu.Unlock()
	if b.window.Observed != nil {
		b.window.Observed(len(reqs), clk.Since(start))
	}

	in := reqs[0].full
	merged := len(reqs) > 1
	if merged {
		in = cloneInput(fb.shared)
		in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(int32(len(reqs)))
	}
	out, err := b.call(ctx, in, reqs)
	if err != nil {
		for _, r := range reqs {
			r.done <- launchResult{err: err, merged: merged}
		}
		return
	}
	// Instances go to requests in the order the requests arrived.
	n := 0
	for i := range out.Instances {
		fi := &out.Instances[i]
		for _, id := range fi.InstanceIds {
			if n < len(reqs) {
				reqs[n].done <- launchResult{instance: fi, id: id, out: out, merged: merged}
				n++
			}
		}
	}
	for ; n < len(reqs); n++ {
		reqs[n].done <- launchResult{out: out, merged: merged}
	}
}

// cloneInput copies the parts of a CreateFleet input a merged call changes.
func cloneInput(in *ec2.CreateFleetInput) *ec2.CreateFleetInput {
	c := *in
	tc := *in.TargetCapacitySpecification
	c.TargetCapacitySpecification = &tc
	return &c
}

// pending reports how many requests wait in open windows (for tests).
func (b *batcher) pending() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, fb := range b.open {
		n += len(fb.reqs)
	}
	return n
}

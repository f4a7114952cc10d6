package instance

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// DefaultDescribeWindow is how long look-ups of single instances (Get) are collected before they go out as one
// DescribeInstances call: look-ups less than 50 ms apart share a call, none waits more than 500 ms, and a call
// asks for 200 instances at most (EC2's limit of values in one filter). While nodes launch, registration, drift checks, garbage collection and
// termination each look up the instances they handle; one call each made about 3.4 calls per node launched.
var DefaultDescribeWindow = BatchWindow{Idle: 50 * time.Millisecond, Max: 500 * time.Millisecond, Size: 200}

// describeResult is one look-up's answer: the reservations holding its instance, or the error of its call.
type describeResult struct {
	out *ec2.DescribeInstancesOutput
	err error
}

// describeBatch is an open window of look-ups.
type describeBatch struct {
	ids     []string
	waiters map[string][]chan describeResult
	last    time.Time
	sealed  bool
	arrived chan struct{}
}

// describeBatcher merges DescribeInstances calls for single instances arriving within a window into one call
// that filters on their IDs (a filter, unlike InstanceIds, does not fail the whole call for one instance EC2
// does not know). An instance the merged call does not return, and every instance of a merged call that
// fails, is described again on its own, so each look-up gets the answer (or the error, such as
// InvalidInstanceID.NotFound) it would have got alone.
type describeBatcher struct {
	window BatchWindow
	call   func(ctx context.Context, in *ec2.DescribeInstancesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)

	mu   sync.Mutex
	open *describeBatch
}

func newDescribeBatcher(w BatchWindow, call func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)) *describeBatcher {
	return &describeBatcher{window: w.withDefaults(), call: call}
}

// describe returns DescribeInstances' answer for the one instance id. The merged call runs without the
// caller's cancellation (other look-ups wait for it); the caller stops waiting when ctx ends.
func (b *describeBatcher) describe(ctx context.Context, id string) (*ec2.DescribeInstancesOutput, error) {
	if b.window.Size <= 1 {
		return b.call(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	}
	done := make(chan describeResult, 1)
	b.mu.Lock()
	db := b.open
	if db == nil {
		db = &describeBatch{waiters: map[string][]chan describeResult{}, arrived: make(chan struct{}, 1)}
		b.open = db
		go b.collect(context.WithoutCancel(ctx), db)
	}
	if _, ok := db.waiters[id]; !ok {
		db.ids = append(db.ids, id)
	}
	db.waiters[id] = append(db.waiters[id], done)
	db.last = b.window.Clock.Now()
	if len(db.ids) >= b.window.Size {
		b.sealLocked(db)
	}
	b.mu.Unlock()
	select {
	case db.arrived <- struct{}{}:
	default:
	}
	select {
	case r := <-done:
		return r.out, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *describeBatcher) sealLocked(db *describeBatch) {
	db.sealed = true
	if b.open == db {
		b.open = nil
	}
}

// collect waits until the window closes (idle, full or at its end), makes the call and answers every look-up.
func (b *describeBatcher) collect(ctx context.Context, db *describeBatch) {
	clk := b.window.Clock
	start := clk.Now()
	b.window.waitClosed(start, func() (bool, time.Time) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return db.sealed, db.last
	}, db.arrived)
	b.mu.Lock()
	b.sealLocked(db)
	ids, waiters := db.ids, db.waiters
	b.mu.Unlock()
	if b.window.Observed != nil {
		b.window.Observed(len(ids), clk.Since(start))
	}
	answer := func(id string, r describeResult) {
		for _, w := range waiters[id] {
			w <- r
		}
	}
	if len(ids) == 1 {
		out, err := b.call(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		answer(ids[0], describeResult{out: out, err: err})
		return
	}
	found := map[string]ec2types.Reservation{}
	in := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids}}}
	for {
		out, err := b.call(ctx, in)
		if err != nil {
			break
		}
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				id := aws.ToString(i.InstanceId)
				if _, ok := waiters[id]; ok {
					one := r
					one.Instances = []ec2types.Instance{i}
					found[id] = one
				}
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	for _, id := range ids {
		if r, ok := found[id]; ok {
			answer(id, describeResult{out: &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{r}}})
			continue
		}
		// Not in the merged answer (not visible yet, gone, or the whole call failed): alone, for its own answer.
		out, err := b.call(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		answer(id, describeResult{out: out, err: err})
	}
}

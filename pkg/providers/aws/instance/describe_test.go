package instance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
)

// describingEC2 answers DescribeInstances from known, as EC2 does: InstanceIds naming an unknown instance fail the
// call with InvalidInstanceID.NotFound, an instance-id filter returns the known ones. It records every call's IDs.
type describingEC2 struct {
	sdk.EC2API
	known map[string]bool
	mu    sync.Mutex
	calls [][]string
	tags  int
}

func (f *describingEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	ids := in.InstanceIds
	for _, flt := range in.Filters {
		if aws.ToString(flt.Name) == "instance-id" {
			ids = flt.Values
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(ids))
	f.mu.Unlock()
	out := &ec2.DescribeInstancesOutput{}
	for _, id := range ids {
		if !f.known[id] {
			if len(in.InstanceIds) > 0 {
				return nil, &smithy.GenericAPIError{Code: "InvalidInstanceID.NotFound", Message: "The instance ID '" + id + "' does not exist"}
			}
			continue
		}
		out.Reservations = append(out.Reservations, ec2types.Reservation{Instances: []ec2types.Instance{{
			InstanceId: aws.String(id), State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
			Tags: []ec2types.Tag{{Key: aws.String(tags.ClusterUID), Value: aws.String("u")}, {Key: aws.String("kubernetes.io/cluster/c"), Value: aws.String("owned")}},
		}}})
	}
	return out, nil
}

func (f *describingEC2) CreateTags(context.Context, *ec2.CreateTagsInput, ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tags++
	return &ec2.CreateTagsOutput{}, nil
}

// waiting is how many look-ups wait in the open window.
func (b *describeBatcher) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == nil {
		return 0
	}
	n := 0
	for _, w := range b.open.waiters {
		n += len(w)
	}
	return n
}

// TestDescribeBatcherMergesLookUps: look-ups made within the window share one call; an instance EC2 does not know
// is described again on its own and gets EC2's NotFound answer, the others their own instance.
func TestDescribeBatcherMergesLookUps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ids       []string
		unknown   []string
		wantCalls [][]string
	}{
		{"one", []string{"i-1"}, nil, [][]string{{"i-1"}}},
		{"five", []string{"i-1", "i-2", "i-3", "i-4", "i-5"}, nil, [][]string{{"i-1", "i-2", "i-3", "i-4", "i-5"}}},
		{"same instance twice", []string{"i-1", "i-1", "i-2"}, nil, [][]string{{"i-1", "i-2"}}},
		{"one unknown", []string{"i-1", "i-2", "i-3"}, []string{"i-2"}, [][]string{{"i-1", "i-2", "i-3"}, {"i-2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := &describingEC2{known: map[string]bool{}}
			for _, id := range tc.ids {
				api.known[id] = !slices.Contains(tc.unknown, id)
			}
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
			b := newDescribeBatcher(BatchWindow{Idle: 50 * time.Millisecond, Max: time.Second, Size: 100, Clock: clk}, api.DescribeInstances)
			type answer struct {
				id  string
				got string
				err error
			}
			answers := make(chan answer, len(tc.ids))
			// One at a time into the window (a fake clock's timers need the look-ups in before it steps).
			for i, id := range tc.ids {
				go func() {
					out, err := b.describe(context.Background(), id)
					a := answer{id: id, err: err}
					if err == nil && len(out.Reservations) == 1 && len(out.Reservations[0].Instances) == 1 {
						a.got = aws.ToString(out.Reservations[0].Instances[0].InstanceId)
					}
					answers <- a
				}()
				waitFor(t, func() bool { return b.waiting() == i+1 })
			}
			waitFor(t, clk.HasWaiters)
			clk.Step(50 * time.Millisecond)
			for range tc.ids {
				a := <-answers
				if slices.Contains(tc.unknown, a.id) {
					if !sdk.IsNotFound(a.err) {
						t.Errorf("%s: got %v, want EC2's NotFound error", a.id, a.err)
					}
					continue
				}
				if a.err != nil || a.got != a.id {
					t.Errorf("%s: got instance %q, error %v", a.id, a.got, a.err)
				}
			}
			if diff := cmp.Diff(tc.wantCalls, api.calls); diff != "" {
				t.Errorf("DescribeInstances calls (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDescribeBatcherFailedCall: when the merged call fails, each look-up is answered by a call of its own.
func TestDescribeBatcherFailedCall(t *testing.T) {
	calls := 0
	var mu sync.Mutex
	fail := func(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if len(in.Filters) > 0 {
			return nil, errors.New("RequestLimitExceeded")
		}
		return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: []ec2types.Instance{{InstanceId: aws.String(in.InstanceIds[0])}}}}}, nil
	}
	b := newDescribeBatcher(BatchWindow{Idle: 50 * time.Millisecond, Max: time.Second, Size: 2}, fail)
	var wg sync.WaitGroup
	for _, id := range []string{"i-1", "i-2"} {
		wg.Go(func() {
			out, err := b.describe(context.Background(), id)
			if err != nil || aws.ToString(out.Reservations[0].Instances[0].InstanceId) != id {
				t.Errorf("%s: %v", id, err)
			}
		})
	}
	wg.Wait()
	if calls != 3 {
		t.Errorf("%d calls, want 3 (the merged one, then one each)", calls)
	}
}

// TestTagKnownInstanceWithoutLookUp: an instance this provider launched or saw is tagged without a
// DescribeInstances call; an unknown one is looked up first.
func TestTagKnownInstanceWithoutLookUp(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	api := &describingEC2{known: map[string]bool{"i-1": true, "i-2": true}}
	p := NewProvider(api, tags.Cluster{Name: "c", UID: "u"}, unavailable.New(clk, unavailable.DefaultTTL), clk, BatchWindow{})
	p.rememberLaunch("i-1")
	if err := p.Tag(context.Background(), "i-1", map[string]string{"Name": "n1"}); err != nil {
		t.Fatal(err)
	}
	if len(api.calls) != 0 || api.tags != 1 {
		t.Fatalf("known instance: %d DescribeInstances calls, %d CreateTags, want 0 and 1", len(api.calls), api.tags)
	}
	if err := p.Tag(context.Background(), "i-2", map[string]string{"Name": "n2"}); err != nil {
		t.Fatal(err)
	}
	if len(api.calls) != 1 || api.tags != 2 {
		t.Errorf("unknown instance: %d DescribeInstances calls, %d CreateTags, want 1 and 2", len(api.calls), api.tags)
	}
}

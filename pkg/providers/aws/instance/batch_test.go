package instance

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeFleet answers CreateFleet with up to limit instances per call and records the capacity asked for.
type fakeFleet struct {
	mu     sync.Mutex
	limit  int
	asked  []int32
	nextID int
}

func (f *fakeFleet) call(_ context.Context, in *ec2.CreateFleetInput, _ []*launchRequest) (*ec2.CreateFleetOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity)
	f.asked = append(f.asked, n)
	out := &ec2.CreateFleetOutput{}
	var ids []string
	for i := 0; i < int(n) && i < f.limit; i++ {
		f.nextID++
		ids = append(ids, fmt.Sprintf("i-%d", f.nextID))
	}
	if len(ids) > 0 {
		out.Instances = []ec2types.CreateFleetInstance{{InstanceIds: ids}}
	}
	if len(ids) < int(n) {
		out.Errors = []ec2types.CreateFleetError{{ErrorCode: aws.String("InsufficientInstanceCapacity")}}
	}
	return out, nil
}

func fleetInput(lt string, capacity int32) *ec2.CreateFleetInput {
	return &ec2.CreateFleetInput{
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt)},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(capacity)},
	}
}

func TestBatcherMergesIdenticalRequestsWithinTheWindow(t *testing.T) {
	cases := []struct {
		name     string
		requests []string // launch template of each request
		limit    int
		// want is, per request, whether it got an instance; asked is the capacity of each call, by template.
		wantLaunched int
		wantAsked    map[int32]int
	}{
		{name: "identical requests share one fleet", requests: []string{"a", "a", "a", "a"}, limit: 10,
			wantLaunched: 4, wantAsked: map[int32]int{4: 1}},
		{name: "different requests do not", requests: []string{"a", "a", "b"}, limit: 10,
			wantLaunched: 3, wantAsked: map[int32]int{2: 1, 1: 1}},
		{name: "a short fleet fails only the requests it had no instance for", requests: []string{"a", "a", "a", "a", "a"}, limit: 3,
			wantLaunched: 3, wantAsked: map[int32]int{5: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
			f := &fakeFleet{limit: tc.limit}
			b := newBatcher(BatchWindow{Idle: 100 * time.Millisecond, Max: time.Second, Size: 100, Clock: clk}, f.call)
			results := make([]launchResult, len(tc.requests))
			var wg sync.WaitGroup
			for i, lt := range tc.requests {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = b.launch(context.Background(), fleetInput(lt, 1), fleetInput(lt, 1), FleetRequest{})
				}()
			}
			waitFor(t, func() bool { return b.pending() == len(tc.requests) })
			clk.Step(100 * time.Millisecond)
			wg.Wait()

			launched := 0
			ids := map[string]bool{}
			for i, r := range results {
				if r.err != nil {
					t.Fatalf("request %d: %v", i, r.err)
				}
				if r.instance == nil {
					if r.out == nil || len(r.out.Errors) == 0 {
						t.Errorf("request %d got neither an instance nor the fleet's errors", i)
					}
					continue
				}
				if ids[r.id] {
					t.Errorf("instance %s handed to two requests", r.id)
				}
				ids[r.id] = true
				launched++
			}
			if launched != tc.wantLaunched {
				t.Errorf("%d requests got an instance, want %d", launched, tc.wantLaunched)
			}
			asked := map[int32]int{}
			for _, n := range f.asked {
				asked[n]++
			}
			if d := cmp.Diff(tc.wantAsked, asked); d != "" {
				t.Errorf("CreateFleet calls by capacity (-want +got):\n%s", d)
			}
		})
	}
}

func TestBatcherClosesAtMaxWhileRequestsKeepArriving(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
	f := &fakeFleet{limit: 100}
	var observed []string
	var mu sync.Mutex
	b := newBatcher(BatchWindow{Idle: 100 * time.Millisecond, Max: 300 * time.Millisecond, Size: 100, Clock: clk,
		Observed: func(size int, open time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			observed = append(observed, fmt.Sprintf("%d %v", size, open))
		}}, f.call)
	var wg sync.WaitGroup
	launch := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := b.launch(context.Background(), fleetInput("a", 1), fleetInput("a", 1), FleetRequest{}); r.instance == nil {
				t.Errorf("no instance: %+v", r)
			}
		}()
	}
	// One request every 50 ms keeps the idle timer from firing; the window still closes 300 ms after it opened.
	for i := 1; i <= 6; i++ {
		launch()
		waitFor(t, func() bool { return b.pending() == i })
		clk.Step(50 * time.Millisecond)
	}
	waitFor(t, func() bool { return len(f.calledSnapshot()) == 1 })
	wg.Wait()
	if d := cmp.Diff([]int32{6}, f.calledSnapshot()); d != "" {
		t.Errorf("CreateFleet capacities (-want +got):\n%s", d)
	}
	// The window is observed once: six requests, open for its 300 ms.
	mu.Lock()
	defer mu.Unlock()
	if d := cmp.Diff([]string{"6 300ms"}, observed); d != "" {
		t.Errorf("observed windows (-want +got):\n%s", d)
	}
}

// While launches are known to be on their way the window outlives its idle period: it closes once they have
// arrived and it is idle, or at Max when they never come.
func TestBatcherWaitsForLaunchesOnTheirWay(t *testing.T) {
	for _, arrives := range []bool{true, false} {
		t.Run(fmt.Sprintf("arrives=%v", arrives), func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC))
			f := &fakeFleet{limit: 100}
			var mu sync.Mutex
			waiting := 1
			b := newBatcher(BatchWindow{Idle: 100 * time.Millisecond, Max: time.Second, Size: 100, Clock: clk,
				Waiting: func() int { mu.Lock(); defer mu.Unlock(); return waiting }}, f.call)
			var wg sync.WaitGroup
			launch := func() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if r := b.launch(context.Background(), fleetInput("a", 1), fleetInput("a", 1), FleetRequest{}); r.instance == nil {
						t.Errorf("no instance: %+v", r)
					}
				}()
			}
			launch()
			waitFor(t, func() bool { return b.pending() == 1 && clk.HasWaiters() })
			// Idle, but one launch is still on its way: no call yet.
			clk.Step(150 * time.Millisecond)
			waitFor(t, clk.HasWaiters)
			if got := f.calledSnapshot(); len(got) != 0 {
				t.Fatalf("the window closed on idle while a launch was on its way: calls %v", got)
			}
			if arrives {
				mu.Lock()
				waiting = 0
				mu.Unlock()
				launch()
				waitFor(t, func() bool { return b.pending() == 2 })
				clk.Step(150 * time.Millisecond)
				waitFor(t, func() bool { return len(f.calledSnapshot()) == 1 })
				wg.Wait()
				if d := cmp.Diff([]int32{2}, f.calledSnapshot()); d != "" {
					t.Errorf("CreateFleet capacities (-want +got):\n%s", d)
				}
				return
			}
			// It never comes: the window closes at Max (1 s after it opened), not before.
			elapsed := 150 * time.Millisecond
			for len(f.calledSnapshot()) == 0 {
				waitFor(t, func() bool { return clk.HasWaiters() || len(f.calledSnapshot()) > 0 })
				if len(f.calledSnapshot()) > 0 {
					break
				}
				clk.Step(100 * time.Millisecond)
				elapsed += 100 * time.Millisecond
				waitFor(t, func() bool { return clk.HasWaiters() || len(f.calledSnapshot()) > 0 })
			}
			wg.Wait()
			if elapsed < time.Second {
				t.Errorf("the window closed %v after it opened, before Max (1s)", elapsed)
			}
			if d := cmp.Diff([]int32{1}, f.calledSnapshot()); d != "" {
				t.Errorf("CreateFleet capacities (-want +got):\n%s", d)
			}
		})
	}
}

func TestBatcherSendsALoneRequestWithItsOwnInput(t *testing.T) {
	var got *ec2.CreateFleetInput
	b := newBatcher(BatchWindow{Size: 1}, func(_ context.Context, in *ec2.CreateFleetInput, _ []*launchRequest) (*ec2.CreateFleetOutput, error) {
		got = in
		return &ec2.CreateFleetOutput{Instances: []ec2types.CreateFleetInstance{{InstanceIds: []string{"i-1"}}}}, nil
	})
	full := fleetInput("a", 1)
	full.TagSpecifications = []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance,
		Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("x")}}}}
	r := b.launch(context.Background(), fleetInput("a", 1), full, FleetRequest{})
	if r.merged || r.id != "i-1" {
		t.Errorf("result %+v, want i-1 unmerged", r)
	}
	if got != full {
		t.Errorf("a request alone in its window went out without its own tags")
	}
}

func (f *fakeFleet) calledSnapshot() []int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int32(nil), f.asked...)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Queued runs once the request waits in an open window, under the batcher's lock: a caller that announced the
// launch marks it arrived there, so no window closes on idle between the announcement's end and the request
// joining it (marked before, a request still building its fleet input went out alone under load).
func TestBatcherQueuedInTheWindow(t *testing.T) {
	f := &fakeFleet{limit: 100}
	// The window closes only once sealed by its second request.
	b := newBatcher(BatchWindow{Idle: time.Hour, Max: time.Hour, Size: 2}, f.call)
	var inWindow []int
	queued := func() {
		// The launch calling Queued holds b.mu: the windows can be read.
		n := 0
		for _, fb := range b.open {
			n += len(fb.reqs)
		}
		inWindow = append(inWindow, n)
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := b.launch(context.Background(), fleetInput("a", 1), fleetInput("a", 1), FleetRequest{Queued: queued}); r.instance == nil {
				t.Errorf("no instance: %+v", r)
			}
		}()
		waitFor(t, func() bool { return b.pending() == 1 || len(f.calledSnapshot()) == 1 })
	}
	wg.Wait()
	if d := cmp.Diff([]int{1, 2}, inWindow); d != "" {
		t.Errorf("requests in the window when each request's Queued ran (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]int32{2}, f.calledSnapshot()); d != "" {
		t.Errorf("CreateFleet capacities (-want +got):\n%s", d)
	}
}

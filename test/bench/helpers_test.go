//go:build bench

package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// setupPool applies a NodePool and EC2NodeClass named name (the example pool adjusted by opts) without limits and
// with consolidation off, so neither caps nor reshapes what a benchmark measures, and a namespace of the same name.
// The cleanup deletes the namespace's Deployments first (so nodes drain empty) and then the NodePool, and waits
// until its NodeClaims are gone.
func setupPool(t *testing.T, name string, opts framework.PoolOptions) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, env.Client, name); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "NodePool" {
			continue
		}
		unstructured.RemoveNestedField(o.Object, "spec", "limits")
		disruption := map[string]any{
			"consolidationPolicy": "WhenEmptyOrUnderutilized",
			"consolidateAfter":    "Never",
			"budgets":             []any{map[string]any{"nodes": "10%"}},
		}
		if err := unstructured.SetNestedMap(o.Object, disruption, "spec", "disruption"); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Client.DeleteAllOf(ctx, &appsv1.Deployment{}, client.InNamespace(name)); err != nil {
			t.Errorf("cleanup: deleting deployments in %s: %v", name, err)
		}
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, pool); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting nodepool %s: %v", name, err)
			return
		}
		start := time.Now()
		err := framework.Poll(ctx, 15*time.Minute, 2*time.Second, func(ctx context.Context) (bool, string, error) {
			claims, err := env.NodeClaims(ctx, name)
			return len(claims) == 0, fmt.Sprintf("%d nodeclaims left", len(claims)), err
		})
		if err != nil {
			t.Errorf("cleanup of nodepool %s: %v", name, err)
			return
		}
		t.Logf("cleanup: nodepool %s and its nodes removed in %.1fs", name, time.Since(start).Seconds())
	})
	// Without a Ready EC2NodeClass nothing launches; say so at once rather than after the workload's timeout.
	err = framework.Poll(ctx, 2*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, "", err
		}
		ready := meta.FindStatusCondition(nc.Status.Conditions, "Ready")
		if ready == nil {
			return false, "EC2NodeClass " + name + " has no Ready condition", nil
		}
		return ready.Status == metav1.ConditionTrue, fmt.Sprintf("EC2NodeClass %s Ready=%s %s: %s", name, ready.Status, ready.Reason, ready.Message), nil
	})
	if err != nil {
		t.Fatalf("waiting for the EC2NodeClass: %v", err)
	}
}

// deployment returns a Deployment of replicas pods with the given requests on the pool's nodes; its pods carry
// the label bench=<group> besides app=<name>.
func deployment(namespace, name, group, pool string, replicas int32, cpu, memory string) *appsv1.Deployment {
	d := framework.Deployment(namespace, name, pool, replicas, cpu, memory)
	d.Spec.Template.Labels["bench"] = group
	return d
}

// utilisation returns the requested share of the allocatable cpu and memory of the pool's nodes: the sum of the
// requests of the pods bound to them over the sum of their allocatable.
func utilisation(ctx context.Context, pool, namespace string) (cpu, mem float64, err error) {
	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		return 0, 0, err
	}
	byName := map[string]bool{}
	var allocCPU, allocMem int64
	for i := range nodes {
		byName[nodes[i].Name] = true
		allocCPU += nodes[i].Status.Allocatable.Cpu().MilliValue()
		allocMem += nodes[i].Status.Allocatable.Memory().Value()
	}
	pods, err := env.Pods(ctx, namespace, nil)
	if err != nil {
		return 0, 0, err
	}
	var reqCPU, reqMem int64
	for i := range pods {
		p := &pods[i]
		if !byName[p.Spec.NodeName] || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Spec.Containers {
			reqCPU += c.Resources.Requests.Cpu().MilliValue()
			reqMem += c.Resources.Requests.Memory().Value()
		}
	}
	if allocCPU == 0 || allocMem == 0 {
		return 0, 0, fmt.Errorf("nodepool %s: no allocatable capacity on %d nodes", pool, len(nodes))
	}
	return float64(reqCPU) / float64(allocCPU), float64(reqMem) / float64(allocMem), nil
}

// firstNodeClaimCreated returns the earliest creationTimestamp of the pool's NodeClaims (second precision).
func firstNodeClaimCreated(claims []karpv1.NodeClaim) time.Time {
	var first time.Time
	for i := range claims {
		if c := claims[i].CreationTimestamp.Time; first.IsZero() || c.Before(first) {
			first = c
		}
	}
	return first
}

// lastNodeClaimTimes returns the latest creationTimestamp of the NodeClaims and the latest time one became
// Initialized (both second precision).
func lastNodeClaimTimes(claims []karpv1.NodeClaim) (created, initialized time.Time) {
	for i := range claims {
		if c := claims[i].CreationTimestamp.Time; c.After(created) {
			created = c
		}
		if c := meta.FindStatusCondition(claims[i].Status.Conditions, karpv1.ConditionTypeInitialized); c != nil &&
			c.Status == metav1.ConditionTrue && c.LastTransitionTime.After(initialized) {
			initialized = c.LastTransitionTime.Time
		}
	}
	return created, initialized
}

// controllerMemory starts following the controller's memory: it resets the peak and samples RSS every 250 ms.
// The returned function stops sampling and reports current RSS, VmHWM (peak since the reset) and the sampled peak,
// and the CPU each process of the stack used meanwhile (cores on average: is the control plane or the
// controller the limit on a 2-core machine?) beside the whole machine's.
func controllerMemory(t *testing.T) func() map[string]any {
	t.Helper()
	pid, err := controllerPID()
	if err != nil {
		t.Fatal(err)
	}
	reset := resetPeak(pid)
	if !reset {
		t.Logf("could not reset the controller's VmHWM (clear_refs); the peak includes earlier benchmarks")
	}
	sampler := sampleMemory(context.Background(), pid, 250*time.Millisecond)
	cpu0, started := stackCPU(), time.Now()
	busy0, busyErr := machineBusySeconds()
	return func() map[string]any {
		shares := map[string]float64{}
		elapsed := time.Since(started).Seconds()
		for name, after := range stackCPU() {
			if before, ok := cpu0[name]; ok && elapsed > 0 {
				shares[name] = round3((after - before) / elapsed)
			}
		}
		figures := map[string]any{"stackCPUCores": shares}
		if busy1, err := machineBusySeconds(); err == nil && busyErr == nil && elapsed > 0 {
			figures["machineBusyCores"] = round3((busy1 - busy0) / elapsed)
		}
		peak, err := sampler.Stop()
		if err != nil {
			t.Errorf("sampling the controller's memory: %v", err)
		}
		m, err := readMemory(pid)
		if err != nil {
			t.Errorf("reading the controller's memory: %v", err)
		}
		figures["controllerRSSMiB"] = mib(m.RSS)
		figures["controllerPeakRSSMiB"] = mib(m.HWM)
		figures["controllerRSSAnonMiB"], figures["controllerRSSFileMiB"] = mib(m.Anon), mib(m.File)
		figures["controllerSampledRSSMiB"] = mib(peak)
		figures["controllerPeakWasReset"] = reset
		t.Logf("CPU over the phase, cores: %v; the whole machine %v", shares, figures["machineBusyCores"])
		return figures
	}
}

// trackedPool sets up the NodePool and namespace pool (setupPool) and follows the namespace's pods, expecting n;
// the tracker stops when the test ends.
func trackedPool(t *testing.T, pool string, opts framework.PoolOptions, n int) *podTracker {
	t.Helper()
	setupPool(t, pool, opts)
	tracker, err := trackPods(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tracker.Stop)
	tracker.expect(n)
	return tracker
}

// benchCount is the positive integer in the environment variable name, or def when it is unset; a value below
// least fails the test with one line naming the variable.
func benchCount(t *testing.T, name string, def, least int) int {
	t.Helper()
	n, err := envInt(name, def)
	if err == nil && n < least {
		err = fmt.Errorf("%s must be at least %d, got %d", name, least, n)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// measuredPhase starts measuring the controller over a phase: the memory it samples (stop returns the figures)
// and the CPU seconds it has used (cpu returns those used since).
func measuredPhase(t *testing.T) (stop func() map[string]any, cpu func() float64) {
	t.Helper()
	pid, err := controllerPID()
	if err != nil {
		t.Fatal(err)
	}
	stop = controllerMemory(t)
	cpu0, err := controllerCPUSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	return stop, func() float64 {
		cpu1, err := controllerCPUSeconds(pid)
		if err != nil {
			t.Fatal(err)
		}
		return cpu1 - cpu0
	}
}

// followScaleOut waits until the tracker has seen n pods Running (failing the test after timeout), logging the
// pool's progress every 15 s, and returns the longest time without a new pod Running before all were (from the
// pods' start times: a progress listing that takes long on a loaded API server must not look like a plateau).
func followScaleOut(t *testing.T, pool string, tracker *podTracker, n int, applied time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	lastLog := time.Now()
	err := framework.Poll(context.Background(), timeout, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		at, running := tracker.allRunning()
		now := time.Now()
		if now.Sub(lastLog) > 15*time.Second {
			lastLog = now
			if p, err := framework.GetProgress(ctx, env.Client, pool, nil); err == nil {
				t.Logf("+%3.0fs %s", now.Sub(applied).Seconds(), p)
			}
		}
		return !at.IsZero(), fmt.Sprintf("%d/%d pods Running", running, n), nil
	})
	if err != nil {
		t.Fatalf("%d pods never all Running: %v", n, err)
	}
	return tracker.longestPlateau()
}

// claimsAndFleets returns the pool's NodeClaims and the CreateFleet calls the simulator answered since
// fleetsBefore.
func claimsAndFleets(t *testing.T, pool string, fleetsBefore int) ([]karpv1.NodeClaim, int) {
	t.Helper()
	ctx := context.Background()
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	fleets, err := createFleetCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return claims, fleets - fleetsBefore
}

//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// reasonEvicted is the reason of the DisruptionTarget condition the API server puts on a pod it evicts through
// the Eviction API (the only voluntary way the controller removes pods).
const reasonEvicted = "EvictionByEvictionAPI"

// pdbMin is a PodDisruptionBudget's minAvailable per app label; the test creates these budgets.
var pdbMin = map[string]int{"large": 2}

// podWatch follows the test namespace's pods through one watch and checks, at each eviction, in the order the
// API server wrote them: an evicted do-not-disrupt pod is a violation; an evicted healthy pod that leaves its
// app with fewer healthy (Ready, not terminating) pods than the budget's minAvailable is a PDB violation.
// minAvailable is an absolute count, so the budget does not depend on the Deployment's replica count and the
// check does not race with the test's own scaling. It keeps its own view of the pods, updated by the watch
// events in order, rather than reading the informer's store (which may already hold later events).
type podWatch struct {
	mu   sync.Mutex
	pods map[string]podView
	// evictions counts voluntary evictions per app; pdbViolations and dndEvictions the offending ones.
	evictions     map[string]int
	pdbViolations int
	dndEvictions  int
	details       []string
}

type podView struct {
	app     string
	healthy bool
	dnd     bool
	evicted bool
}

func view(p *corev1.Pod) podView {
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	evicted := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == reasonEvicted {
			evicted = true
		}
	}
	return podView{app: p.Labels["app"], healthy: ready && p.DeletionTimestamp == nil && !evicted,
		dnd: p.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true", evicted: evicted}
}

func (w *podWatch) update(p *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	before, known := w.pods[p.Name]
	now := view(p)
	w.pods[p.Name] = now
	if !now.evicted || (known && before.evicted) {
		return
	}
	w.evictions[now.app]++
	if now.dnd {
		w.dndEvictions++
		w.details = append(w.details, fmt.Sprintf("do-not-disrupt pod %s evicted", p.Name))
	}
	min, guarded := pdbMin[now.app]
	if !guarded || !known || !before.healthy {
		return
	}
	healthy := 0
	for _, v := range w.pods {
		if v.app == now.app && v.healthy {
			healthy++
		}
	}
	if healthy < min {
		w.pdbViolations++
		w.details = append(w.details, fmt.Sprintf("evicting %s left %d healthy %s pods, minAvailable %d", p.Name, healthy, now.app, min))
	}
}

func (w *podWatch) remove(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pods, p.Name)
}

// counts returns the violations so far, and the evictions per app.
func (w *podWatch) counts() (pdb, dnd int, evictions map[string]int, details []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := map[string]int{}
	for k, v := range w.evictions {
		ev[k] = v
	}
	return w.pdbViolations, w.dndEvictions, ev, append([]string(nil), w.details...)
}

// watchPods starts the pod watch of the namespace; it stops with ctx.
func watchPods(t *testing.T, ctx context.Context, namespace string) *podWatch {
	t.Helper()
	w := &podWatch{pods: map[string]podView{}, evictions: map[string]int{}}
	factory := informers.NewSharedInformerFactoryWithOptions(env.Kube, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.update(obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { w.update(obj.(*corev1.Pod)) },
		DeleteFunc: w.remove,
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	return w
}

// launches returns the simulator's record of every launch since it started.
func launches(ctx context.Context) ([]awssim.LaunchRecord, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.AWSEndpoint+"/_awssim/launches", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET launches: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET launches: %s", resp.Status)
	}
	var out []awssim.LaunchRecord
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding launches: %w", err)
	}
	return out, nil
}

// duplicateLaunches counts launches beyond the first for one NodeClaim, and launches of this cluster that name
// no NodeClaim, from the simulator's records (which outlive terminated instances).
func duplicateLaunches(recs []awssim.LaunchRecord) (dups, claims int) {
	per := map[string]int{}
	for _, r := range recs {
		if _, ours := r.Tags["kubernetes.io/cluster/"+env.ClusterName]; !ours {
			continue
		}
		name := r.Tags[awsv1.TagNodeClaim]
		if name == "" {
			dups++
			continue
		}
		per[name]++
	}
	for _, n := range per {
		dups += n - 1
	}
	return dups, len(per)
}

// flight is what a kill interrupts.
type flight struct {
	// launch: a NodeClaim's instance was launched (the simulator answered CreateFleet) but no Node registered.
	launch bool
	// disruption: a candidate is tainted karpenter.sh/disrupted but its NodeClaim not deleted yet (the command
	// waits for replacements), or a deleted NodeClaim's Node still exists (draining).
	disruption bool
	// replacement: a tainted candidate waits while a replacement NodeClaim is launched but not initialized.
	replacement bool
}

func (f flight) String() string {
	return fmt.Sprintf("launch=%v disruption=%v replacement=%v", f.launch, f.disruption, f.replacement)
}

// inFlight reads the cluster and the simulator's launch records.
func inFlight(ctx context.Context) (flight, error) {
	var f flight
	claims := &karpv1.NodeClaimList{}
	if err := env.Client.List(ctx, claims); err != nil {
		return f, err
	}
	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes); err != nil {
		return f, err
	}
	recs, err := launches(ctx)
	if err != nil {
		return f, err
	}
	launched := map[string]bool{}
	for _, r := range recs {
		launched[r.Tags[awsv1.TagNodeClaim]] = true
	}
	nodeOf := map[string]*corev1.Node{}
	for i := range nodes.Items {
		nodeOf[nodes.Items[i].Spec.ProviderID] = &nodes.Items[i]
	}
	claimOf := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		if id := claims.Items[i].Status.ProviderID; id != "" {
			claimOf[id] = &claims.Items[i]
		}
	}
	tainted := false
	for _, n := range nodes.Items {
		for _, taint := range n.Spec.Taints {
			if taint.Key == karpv1.DisruptedTaintKey {
				if c := claimOf[n.Spec.ProviderID]; c != nil && c.DeletionTimestamp.IsZero() {
					tainted = true
				}
			}
		}
	}
	uninitialized := false
	for _, c := range claims.Items {
		hasNode := c.Status.ProviderID != "" && nodeOf[c.Status.ProviderID] != nil
		switch {
		case !c.DeletionTimestamp.IsZero():
			if hasNode {
				f.disruption = true
			}
		case launched[c.Name]:
			if !hasNode {
				f.launch = true
			}
			if !meta.IsStatusConditionTrue(c.Status.Conditions, karpv1.ConditionTypeInitialized) {
				uninitialized = true
			}
		}
	}
	f.disruption = f.disruption || tainted
	f.replacement = tainted && uninitialized
	return f, nil
}

// aim waits (polling every 100 ms, up to window) for the moment the action's kill should land in: a launch in
// flight after a scale-out; a replacement in flight after a scale-in or drift (any disruption or launch in
// flight after acceptAfter); a disruption or launch after an interruption. It then waits the given jitter and
// looks again: it returns what is in flight at that point, just before the kill, if that is still such a moment
// (a launch seen in flight may have completed meanwhile: a kill aimed at it would land after it, as
// TestLeaderElection's did once in a clean-clone CI run), and otherwise keeps waiting. When the moment never comes
// it returns at the window's end.
func aim(ctx context.Context, action string, jitter, acceptAfter time.Duration) (flight, time.Duration) {
	window := 45 * time.Second
	if action == "scale-out" {
		window = 20 * time.Second
	}
	start := time.Now()
	want := func(f flight) bool {
		switch action {
		case "scale-out":
			return f.launch
		case "scale-in", "drift":
			return f.replacement || (time.Since(start) > acceptAfter && (f.disruption || f.launch))
		default:
			return f.disruption || f.launch
		}
	}
	for time.Since(start) < window {
		f, err := inFlight(ctx)
		if err == nil && want(f) {
			time.Sleep(jitter)
			if f, err = inFlight(ctx); err == nil && want(f) {
				return f, time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	f, _ := inFlight(ctx)
	return f, time.Since(start)
}

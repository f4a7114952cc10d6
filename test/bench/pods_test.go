//go:build bench

package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// podState is what the tracker keeps of a pod.
type podState struct {
	node      string
	running   bool // phase Running and not being deleted
	available bool // Ready and not being deleted (framework.PodAvailable)
	// live: bound to node, not being deleted and not finished, i.e. it still has to leave the node.
	live bool
	// current: not being deleted; bound: current and bound to a node.
	current, bound bool
	// unschedulable: current, not bound, and the kube-scheduler found no node for it (PodScheduled False,
	// reason Unschedulable): a pod waiting for room rather than one just created.
	unschedulable bool
	// rv is the resource version of the object the state was read from (0 when it did not parse).
	rv uint64
}

// podTracker follows the pods of a namespace through a watch, so the benchmarks see every transition (rather
// than samples) without listing a thousand pods every few hundred milliseconds.
type podTracker struct {
	stop      chan struct{}
	namespace string
	kube      kubernetes.Interface

	// lastEventAt is when the watch last delivered an event.
	lastEventAt time.Time
	// gone holds, for pods a list found deleted before the watch did, the list's resource version: a late watch
	// event older than it does not bring the pod back.
	gone map[string]uint64

	mu        sync.Mutex
	pods      map[string]podState
	running   int
	available int
	current   int // pods not being deleted
	bound     int // pods with a node, not being deleted
	// target and the first times the pods (not being deleted) reached it: created, bound to a node, Running.
	target       int
	allCreatedAt time.Time
	allBoundAt   time.Time
	allRunningAt time.Time
	// minAvailable is the lowest availability since armMin (-1 before).
	minAvailable   int
	minAvailableAt time.Time
	// unschedulable counts the pods marked unschedulable now; since armMin, maxUnschedulable is the most at once
	// and everUnschedulable the pods marked at some point, each with when and why it was first (nil before armMin).
	unschedulable     int
	maxUnschedulable  int
	everUnschedulable map[string]string
	armedAt           time.Time
	// markedAt holds, since armMin, when each pod not bound yet was first seen marked unschedulable; once it is
	// bound, longestWait is the longest such pod waited for room, and longestWaiter says which and how long.
	markedAt      map[string]time.Time
	longestWait   time.Duration
	longestWaiter string
	// watched nodes: lastLeftAt is the last time a live pod stopped being live on one of them.
	watched    map[string]bool
	lastLeftAt time.Time
	// startedAt holds, for each pod seen Running since expect, when its first container started as the pod's
	// status says (kwok sets it as it plays the pod): the times the plateaus are measured between, which neither
	// the watch's delays nor a slow poll of the benchmark shift.
	startedAt map[string]time.Time
	// firstMarked holds, for each pod, when the watch first saw it marked unschedulable: the kube-scheduler's
	// first attempt at it, which the provisioner waits for.
	firstMarked map[string]time.Time
}

// trackPods starts watching the pods of namespace; Stop ends it. The watch runs on a connection of its own
// (HTTP/1.1, not a stream of the HTTP/2 connection the benchmark's lists and writes share): at 5,000 nodes a list
// once hung on that connection for 20 minutes, and a pod watch sharing it stopped delivering events while 376 of
// 50,000 pods were still to start.
func trackPods(ctx context.Context, namespace string) (*podTracker, error) {
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.NextProtos = []string{"http/1.1"}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("pod watch client: %w", err)
	}
	tr := &podTracker{stop: make(chan struct{}), namespace: namespace, kube: kube, pods: map[string]podState{},
		minAvailable: -1, gone: map[string]uint64{}, firstMarked: map[string]time.Time{}}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(namespace))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { tr.observe(obj, false, true) },
		UpdateFunc: func(_, obj any) { tr.observe(obj, false, true) },
		DeleteFunc: func(obj any) { tr.observe(obj, true, true) },
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	factory.Start(tr.stop)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		close(tr.stop)
		return nil, fmt.Errorf("pods of %s: cache did not sync", namespace)
	}
	return tr, nil
}

// Stop ends the watch.
func (tr *podTracker) Stop() { close(tr.stop) }

// observe applies one pod's state, from the watch (fromWatch) or from a list (resync). A state older than the
// one held (by resource version) is ignored, so a late watch event does not undo what a list found.
func (tr *podTracker) observe(obj any, deleted, fromWatch bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = tomb.Obj, true
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	rv, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
	var now podState
	gone := deleted || pod.DeletionTimestamp != nil
	if !deleted {
		now = podState{
			node:      pod.Spec.NodeName,
			running:   pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning,
			available: framework.PodAvailable(pod),
			live: pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil &&
				pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed,
			current: !gone,
			bound:   !gone && pod.Spec.NodeName != "",
		}
		now.unschedulable = now.current && !now.bound && markedUnschedulable(pod)
		now.rv = rv
	}
	at := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if fromWatch {
		tr.lastEventAt = at
	}
	before, known := tr.pods[pod.Name]
	if rv != 0 && ((known && rv < before.rv) || (!deleted && rv <= tr.gone[pod.Name])) {
		return
	}
	if deleted {
		delete(tr.pods, pod.Name)
		if !fromWatch {
			tr.gone[pod.Name] = rv
		}
	} else {
		tr.pods[pod.Name] = now
		delete(tr.gone, pod.Name)
	}
	tr.running += b2i(now.running) - b2i(before.running)
	tr.available += b2i(now.available) - b2i(before.available)
	tr.current += b2i(now.current) - b2i(before.current)
	tr.bound += b2i(now.bound) - b2i(before.bound)
	tr.unschedulable += b2i(now.unschedulable) - b2i(before.unschedulable)
	if _, seen := tr.firstMarked[pod.Name]; now.unschedulable && !seen {
		tr.firstMarked[pod.Name] = at
	}
	if tr.everUnschedulable != nil {
		if _, seen := tr.markedAt[pod.Name]; now.unschedulable && !seen {
			tr.markedAt[pod.Name] = at
		}
		if marked, ok := tr.markedAt[pod.Name]; ok && (now.bound || !now.current) {
			if waited := at.Sub(marked); now.bound && waited > tr.longestWait {
				tr.longestWait = waited
				tr.longestWaiter = fmt.Sprintf("%s (requests %s) bound to %s after %.1fs", pod.Name, requests(pod), pod.Spec.NodeName, waited.Seconds())
			}
			delete(tr.markedAt, pod.Name)
		}
		tr.maxUnschedulable = max(tr.maxUnschedulable, tr.unschedulable)
		if _, seen := tr.everUnschedulable[pod.Name]; now.unschedulable && !seen {
			tr.everUnschedulable[pod.Name] = fmt.Sprintf("+%.1fs %s (requests %s): %s", at.Sub(tr.armedAt).Seconds(),
				pod.Name, requests(pod), unschedulableMessage(pod))
		}
	}
	if now.running && !before.running && tr.startedAt != nil && tr.allRunningAt.IsZero() {
		started := at
		for _, cs := range pod.Status.ContainerStatuses {
			if r := cs.State.Running; r != nil && !r.StartedAt.IsZero() {
				started = r.StartedAt.Time
				break
			}
		}
		tr.startedAt[pod.Name] = started
	}
	tr.reached(at)
	if tr.minAvailable >= 0 && tr.available < tr.minAvailable {
		tr.minAvailable, tr.minAvailableAt = tr.available, at
	}
	if before.live && tr.watched[before.node] && !(now.live && now.node == before.node) {
		tr.lastLeftAt = at
	}
}

// reached records when the counts first reach the target; callers hold mu.
func (tr *podTracker) reached(at time.Time) {
	if tr.target == 0 {
		return
	}
	for _, r := range []struct {
		n  int
		at *time.Time
	}{{tr.current, &tr.allCreatedAt}, {tr.bound, &tr.allBoundAt}, {tr.running, &tr.allRunningAt}} {
		if r.n >= tr.target && r.at.IsZero() {
			*r.at = at
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// expect sets how many Running pods count as "all Running" and clears the time that was reached.
func (tr *podTracker) expect(n int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.target, tr.allCreatedAt, tr.allBoundAt, tr.allRunningAt = n, time.Time{}, time.Time{}, time.Time{}
	tr.startedAt = map[string]time.Time{}
	tr.reached(time.Now())
}

// milestones returns when the target was reached by pods created, bound and Running (zero when not yet).
func (tr *podTracker) milestones() (created, bound, running time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.allCreatedAt, tr.allBoundAt, tr.allRunningAt
}

// allRunning returns when the target was reached (zero if not yet) and the current count.
func (tr *podTracker) allRunning() (time.Time, int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.allRunningAt, tr.running
}

// longestPlateau returns the longest time between two pods starting to run, among the pods seen Running since
// expect until all were (by their containers' start times, whole seconds).
func (tr *podTracker) longestPlateau() time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	times := slices.SortedFunc(maps.Values(tr.startedAt), func(a, b time.Time) int { return a.Compare(b) })
	var out time.Duration
	for i := 1; i < len(times); i++ {
		out = max(out, times[i].Sub(times[i-1]))
	}
	return out
}

// armMin starts tracking the lowest availability, and the pods waiting for room, from now on.
func (tr *podTracker) armMin() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.minAvailable, tr.minAvailableAt = tr.available, time.Now()
	tr.maxUnschedulable, tr.everUnschedulable, tr.armedAt = tr.unschedulable, map[string]string{}, time.Now()
	tr.markedAt, tr.longestWait, tr.longestWaiter = map[string]time.Time{}, 0, ""
	for name, s := range tr.pods {
		if s.unschedulable {
			tr.everUnschedulable[name] = "+0s " + name + " (already when armed)"
			tr.markedAt[name] = tr.armedAt
		}
	}
}

// longestWaitForRoom returns, since armMin, the longest a pod marked unschedulable waited until it was bound, and
// the pod; a pod still waiting counts with its wait so far (still is then set).
func (tr *podTracker) longestWaitForRoom() (wait time.Duration, who string, still bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	wait, who = tr.longestWait, tr.longestWaiter
	now := time.Now()
	for name, marked := range tr.markedAt {
		if d := now.Sub(marked); d > wait {
			wait, who, still = d, fmt.Sprintf("%s still waiting after %.1fs", name, d.Seconds()), true
		}
	}
	return wait, who, still
}

// waitedForRoom returns, since armMin, the most pods marked unschedulable at once and those marked at some point,
// each described by when (since armMin), its requests and the kube-scheduler's message, sorted.
func (tr *podTracker) waitedForRoom() (most int, pods []string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.maxUnschedulable, slices.Sorted(maps.Values(tr.everUnschedulable))
}

// requests is a pod's summed container requests of cpu and memory.
func requests(pod *corev1.Pod) string {
	var cpu, mem resource.Quantity
	for _, c := range pod.Spec.Containers {
		cpu.Add(c.Resources.Requests[corev1.ResourceCPU])
		mem.Add(c.Resources.Requests[corev1.ResourceMemory])
	}
	return "cpu=" + cpu.String() + " memory=" + mem.String()
}

// unschedulableMessage is the message of the pod's PodScheduled condition.
func unschedulableMessage(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Message
		}
	}
	return ""
}

// markedUnschedulable says the kube-scheduler tried the pod and found no node for it.
func markedUnschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// lowest returns the lowest availability since armMin and when it was first reached.
func (tr *podTracker) lowest() (int, time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.minAvailable, tr.minAvailableAt
}

// watchNodes makes the tracker record when pods leave these nodes.
func (tr *podTracker) watchNodes(nodes map[string]bool) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.watched, tr.lastLeftAt = nodes, time.Time{}
}

// liveOnWatched counts the pods still live on the watched nodes and returns the last time one left.
func (tr *podTracker) liveOnWatched() (int, time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, s := range tr.pods {
		if s.live && tr.watched[s.node] {
			n++
		}
	}
	return n, tr.lastLeftAt
}

// boundRunning returns the pods bound to a node (not being deleted) and those Running.
func (tr *podTracker) boundRunning() (bound, running int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.bound, tr.running
}

// counts returns the pods known, Running and available.
func (tr *podTracker) counts() (pods, running, available int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.pods), tr.running, tr.available
}

// sinceLastEvent returns how long ago the watch last delivered an event (zero before the first).
func (tr *podTracker) sinceLastEvent() time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.lastEventAt.IsZero() {
		return 0
	}
	return time.Since(tr.lastEventAt)
}

// resync lists the namespace's pods and applies what the watch has not delivered: every pod whose listed state
// differs from the tracker's, and every pod the list no longer has. It returns how many pods differed and how many
// of those the list shows Running where the watch did not, so a caller can tell a watch that lags (nothing differs)
// from one that lost events.
func (tr *podTracker) resync(ctx context.Context) (differed, running int, err error) {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return tr.kube.CoreV1().Pods(tr.namespace).List(ctx, opts)
	})
	p.PageSize = 5000
	listed := map[string]bool{}
	var listRV uint64
	var pods []*corev1.Pod
	if err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("listing pods of %s: got %T", tr.namespace, obj)
		}
		pods = append(pods, pod)
		listed[pod.Name] = true
		rv, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
		listRV = max(listRV, rv)
		return nil
	}); err != nil {
		return 0, 0, fmt.Errorf("listing pods of %s: %w", tr.namespace, err)
	}
	tr.mu.Lock()
	var stale []string
	for name, st := range tr.pods {
		if !listed[name] && st.rv <= listRV {
			stale = append(stale, name)
		}
	}
	before := maps.Clone(tr.pods)
	tr.mu.Unlock()
	for _, pod := range pods {
		was, known := before[pod.Name]
		rv, _ := strconv.ParseUint(pod.ResourceVersion, 10, 64)
		if known && rv <= was.rv {
			continue
		}
		differed++
		if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning && !was.running {
			running++
		}
		tr.observe(pod, false, false)
	}
	for _, name := range stale {
		differed++
		tr.observe(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tr.namespace, Name: name,
			ResourceVersion: strconv.FormatUint(listRV, 10)}}, true, false)
	}
	return differed, running, nil
}

// marked returns how many pods the kube-scheduler has marked unschedulable at least once, and when the watch saw
// the last of them first marked.
func (tr *podTracker) marked() (int, time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var last time.Time
	for _, at := range tr.firstMarked {
		if at.After(last) {
			last = at
		}
	}
	return len(tr.firstMarked), last
}

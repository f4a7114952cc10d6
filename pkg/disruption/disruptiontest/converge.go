package disruptiontest

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Timings of the convergence simulation.
type Timings struct {
	// Pass is the time between decision passes.
	Pass time.Duration
	// Launch is how long a replacement takes to register and initialize.
	Launch time.Duration
	// DrainBase and EvictPerPod give a candidate's drain time: DrainBase plus EvictPerPod per pod it evicts.
	DrainBase   time.Duration
	EvictPerPod time.Duration
	// Limit stops the simulation (a loop that never settles).
	Limit time.Duration
	// Log, when set, receives one line per pass that starts commands.
	Log func(string)
}

// DefaultTimings are a pass every 10 s, 75 s to launch and initialize a replacement, drains of 5 s plus 2 s per pod,
// at most 3 simulated hours.
func DefaultTimings() Timings {
	return Timings{Pass: 10 * time.Second, Launch: 75 * time.Second, DrainBase: 5 * time.Second, EvictPerPod: 2 * time.Second,
		Limit: 3 * time.Hour}
}

// Convergence is the outcome of a simulated consolidation.
type Convergence struct {
	// Duration is the simulated time until a pass found no command and none was in flight.
	Duration time.Duration
	// ToWithin5Pct is the simulated time until the cluster cost first came within 5% of its final cost.
	ToWithin5Pct time.Duration
	// StartCost and FinalCost are the cluster's hourly price at the start and the end; LowerBound is the
	// scheduler's pattern lower bound for the remaining pods on new nodes.
	StartCost, FinalCost, LowerBound float64
	// StartNodes and FinalNodes count the nodes.
	StartNodes, FinalNodes int
	// Evictions counts evicted pods; Passes the decision passes; Commands the commands started.
	Evictions, Passes, Commands int
	// Rescheduled counts evicted pods the commands had not placed (placed again when their node drained), and
	// Provisioned the nodes launched for those that fit nowhere.
	Rescheduled, Provisioned int
	// MaxPending is the most pods that waited for a node at once after an eviction (0 when every move was safe).
	MaxPending int
	// DecideCPU is the wall time spent in Decide (the simulation's own bookkeeping excluded).
	DecideTime time.Duration
	// Settled is false when Limit was reached first.
	Settled bool
}

// simNode is one node of the simulated cluster.
type simNode struct {
	node *scheduling.StateNode
	cand *disruption.Candidate
	// readyAt is when a launching replacement registers and initializes.
	readyAt time.Time
	// changedAt is the last time a pod was bound to it or removed from it (consolidateAfter counts from it).
	changedAt time.Time
	// cmd is the in-flight command it is a candidate of, or nil.
	cmd *flight
}

// flight is a command in progress.
type flight struct {
	cmd *disruption.Command
	// reserved are the pods already placed where the command's simulation put them.
	reserved     map[types.NamespacedName]bool
	replacements []string
	// drainingAt is when its candidates started draining (zero while waiting for replacements); doneAt when the
	// last one is gone.
	drainingAt, doneAt time.Time
}

// Converge runs the disruption controller's loop on snap with an injected clock: every Pass it calls Decide on the
// cluster as it is, starts every command found (replacements launch and initialize after Launch, then the
// candidates drain, their pods rescheduled by the provisioning scheduler standing in for the kube-scheduler), and it
// stops when a pass finds no command and none is in flight. consolidateAfter is the NodePool's: a node that gained
// or lost pods is not consolidatable for that long.
func Converge(ctx context.Context, snap *disruption.Snapshot, opts disruption.Options, tm Timings) (*Convergence, error) {
	pool := snap.NodePools[PoolName]
	after := 30 * time.Second
	if d := pool.Spec.Disruption.ConsolidateAfter.Duration; d != nil {
		after = *d
	}
	now := snap.Now
	byName := map[string]*scheduling.StateNode{}
	for _, n := range snap.Cluster.Nodes {
		byName[n.Name] = n
	}
	nodes := map[string]*simNode{}
	for _, c := range snap.Candidates {
		if byName[c.Node] == nil {
			return nil, fmt.Errorf("candidate %s has no node in the cluster", c.Node)
		}
		cand := *c
		nodes[c.Node] = &simNode{node: byName[c.Node], cand: &cand, readyAt: now.Add(-time.Hour), changedAt: now.Add(-time.Hour)}
	}
	out := &Convergence{StartNodes: len(nodes), StartCost: cost(nodes)}
	type sample struct {
		at   time.Duration
		cost float64
	}
	var samples []sample
	var flights []*flight
	var examined map[string]time.Time
	seq := 0
	for {
		elapsed := now.Sub(snap.Now)
		samples = append(samples, sample{elapsed, cost(nodes)})
		if elapsed > tm.Limit {
			break
		}
		// progress in-flight commands
		var still []*flight
		for _, f := range flights {
			ready := true
			for _, r := range f.replacements {
				if nodes[r].readyAt.After(now) {
					ready = false
				}
			}
			if !ready {
				still = append(still, f)
				continue
			}
			if f.drainingAt.IsZero() {
				f.drainingAt = now
				longest := time.Duration(0)
				for _, c := range f.cmd.Candidates {
					longest = max(longest, tm.DrainBase+time.Duration(len(reschedulable(c.Pods)))*tm.EvictPerPod)
				}
				f.doneAt = now.Add(longest)
			}
			if f.doneAt.After(now) {
				still = append(still, f)
				continue
			}
			before := len(nodes)
			pending, resched, err := finish(ctx, snap.Cluster, nodes, f, now)
			if err != nil {
				return nil, err
			}
			out.Evictions += evicted(f)
			out.Rescheduled += resched
			out.Provisioned += len(nodes) - before + len(f.cmd.Candidates)
			out.MaxPending = max(out.MaxPending, pending)
		}
		flights = still
		// a decision pass
		pass := view(snap, nodes, now, after)
		pass.Examined = examined
		start := time.Now()
		res, err := disruption.Decide(ctx, pass, opts)
		if err != nil {
			return nil, fmt.Errorf("pass at %s: %w", elapsed, err)
		}
		examined = res.Examined
		out.DecideTime += time.Since(start)
		out.Passes++
		cmds := Commands(res)
		if len(cmds) == 0 && len(flights) == 0 {
			out.Settled = true
			break
		}
		if tm.Log != nil && len(cmds) > 0 {
			n := 0
			for _, cmd := range cmds {
				n += len(cmd.Candidates)
			}
			wc := ""
			if p := res.WholeCluster; p != nil {
				wc = fmt.Sprintf(", whole-cluster: %d candidates, target %.2f$/h, %d simulations, failed %v", p.Candidates, p.TargetCost, p.Simulations, p.Failed)
			}
			tm.Log(fmt.Sprintf("t=%5.1fmin nodes=%d cost=%.2f$/h in-flight=%d rescheduled=%d provisioned=%d: %d command(s) %s on %d node(s), pass %.2fs%s",
				elapsed.Minutes(), len(nodes), cost(nodes), len(flights), out.Rescheduled, out.Provisioned, len(cmds), cmds[0].ConsolidationType, n, time.Since(start).Seconds(), wc))
		}
		for _, cmd := range cmds {
			f := &flight{cmd: cmd, reserved: map[types.NamespacedName]bool{}}
			byKey := map[types.NamespacedName]*corev1.Pod{}
			for _, c := range cmd.Candidates {
				nodes[c.Node].cmd = f
				nodes[c.Node].node = marked(nodes[c.Node].node)
				for _, p := range reschedulable(nodes[c.Node].node.Pods) {
					byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
				}
			}
			// the room the command's pods take is held from now on where its simulation put them, as a controller
			// that counts its in-flight commands does; later passes plan around it
			for _, pl := range cmd.Placements {
				n, p := nodes[pl.Node], byKey[pl.Pod]
				if n == nil || p == nil {
					continue
				}
				c := *n.node
				q := p.DeepCopy()
				q.Spec.NodeName = c.Name
				c.Pods = append(append([]*corev1.Pod(nil), c.Pods...), q)
				n.node, n.changedAt = &c, now
				f.reserved[pl.Pod] = true
			}
			for _, r := range cmd.Replacements {
				seq++
				name := fmt.Sprintf("repl-%05d", seq)
				var pods []*corev1.Pod
				for _, key := range r.Pods {
					if p := byKey[key]; p != nil {
						pods = append(pods, p)
						f.reserved[key] = true
					}
				}
				sn, cand := Launch(snap.Cluster, r, name, now, pods)
				sn.InFlight = true
				nodes[name] = &simNode{node: sn, cand: cand, readyAt: now.Add(tm.Launch), changedAt: now.Add(tm.Launch)}
				f.replacements = append(f.replacements, name)
			}
			flights = append(flights, f)
			out.Commands++
		}
		now = now.Add(tm.Pass)
	}
	out.Duration = now.Sub(snap.Now)
	out.FinalCost = cost(nodes)
	out.FinalNodes = len(nodes)
	for _, s := range samples {
		if s.cost <= out.FinalCost*1.05 {
			out.ToWithin5Pct = s.at
			break
		}
	}
	bound, err := lowerBound(ctx, snap.Cluster, nodes)
	if err != nil {
		return nil, err
	}
	out.LowerBound = bound
	return out, nil
}

// Commands returns a result's commands.
func Commands(res *disruption.Result) []*disruption.Command { return commands(res) }

func cost(nodes map[string]*simNode) float64 {
	var sum float64
	for _, n := range nodes {
		sum += n.cand.Price
	}
	return sum
}

func reschedulable(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if disruption.Reschedulable(p) {
			out = append(out, p)
		}
	}
	return out
}

func evicted(f *flight) int {
	n := 0
	for _, c := range f.cmd.Candidates {
		n += len(reschedulable(c.Pods))
	}
	return n
}

func marked(n *scheduling.StateNode) *scheduling.StateNode {
	c := *n
	c.MarkedForDeletion = true
	return &c
}

// view is the decision snapshot of the simulated cluster at now.
func view(snap *disruption.Snapshot, nodes map[string]*simNode, now time.Time, after time.Duration) *disruption.Snapshot {
	cluster := *snap.Cluster
	cluster.Nodes = nil
	out := &disruption.Snapshot{Now: now, Cluster: &cluster, NodePools: snap.NodePools, PodDisruptionBudgets: snap.PodDisruptionBudgets,
		Disrupting: map[string]int{}, NodeCounts: map[string]int{}}
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := nodes[name]
		sn := n.node
		launching := n.readyAt.After(now)
		if !launching && sn.InFlight {
			c := *sn
			c.InFlight = false
			n.node = &c
			sn = n.node
		}
		cluster.Nodes = append(cluster.Nodes, sn)
		out.NodeCounts[n.cand.NodePool]++
		if n.cmd != nil {
			out.Disrupting[n.cand.NodePool]++
		}
		if launching {
			continue // an in-flight NodeClaim: room for simulations, not a candidate
		}
		c := *n.cand
		c.Pods = sn.Pods
		c.Deleting = n.cmd != nil
		c.Consolidatable = !now.Before(n.changedAt.Add(after))
		out.Candidates = append(out.Candidates, &c)
	}
	return out
}

// finish ends a command whose candidates have drained: its candidates go, their pods are placed on the cluster as
// it is now by the provisioning scheduler (new nodes for pods that fit nowhere, which then wait for them). It
// returns how many pods had to wait.
func finish(ctx context.Context, base *scheduling.Snapshot, nodes map[string]*simNode, f *flight, now time.Time) (int, int, error) {
	var pods []*corev1.Pod
	for _, c := range f.cmd.Candidates {
		for _, p := range reschedulable(nodes[c.Node].node.Pods) {
			if f.reserved[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] {
				continue
			}
			moved := p.DeepCopy()
			moved.Spec.NodeName = ""
			pods = append(pods, moved)
		}
		delete(nodes, c.Node)
	}
	for _, r := range f.replacements {
		if n := nodes[r]; n != nil && n.node.InFlight {
			c := *n.node
			c.InFlight = false
			n.node = &c
		}
	}
	if len(pods) == 0 {
		return 0, 0, nil
	}
	cluster := *base
	cluster.Nodes = nil
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cluster.Nodes = append(cluster.Nodes, nodes[name].node)
	}
	cluster.Pods = pods
	plan, err := scheduling.Solve(ctx, &cluster, scheduling.Options{Bound: scheduling.BoundNone})
	if err != nil {
		return 0, 0, fmt.Errorf("rescheduling evicted pods: %w", err)
	}
	byKey := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range pods {
		byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	for _, pl := range plan.Placements {
		n := nodes[pl.Node]
		c := *n.node
		p := byKey[pl.Pod].DeepCopy()
		p.Spec.NodeName = c.Name
		p.Status.Phase = corev1.PodRunning
		c.Pods = append(append([]*corev1.Pod(nil), c.Pods...), p)
		n.node = &c
		n.changedAt = now
	}
	waiting := 0
	for i, nc := range plan.NodeClaims {
		var bound []*corev1.Pod
		for _, key := range nc.Pods {
			bound = append(bound, byKey[key])
		}
		waiting += len(bound)
		name := fmt.Sprintf("prov-%s-%d", f.cmd.Candidates[0].Node, i)
		sn, cand := Launch(base, nc, name, now, bound)
		nodes[name] = &simNode{node: sn, cand: cand, readyAt: now, changedAt: now}
	}
	return waiting + len(plan.Unschedulable), len(pods), nil
}

// lowerBound is the scheduler's pattern bound for every pod of the cluster on new nodes.
func lowerBound(ctx context.Context, base *scheduling.Snapshot, nodes map[string]*simNode) (float64, error) {
	cluster := *base
	cluster.Nodes = nil
	for _, n := range nodes {
		for _, p := range reschedulable(n.node.Pods) {
			q := p.DeepCopy()
			q.Spec.NodeName = ""
			cluster.Pods = append(cluster.Pods, q)
		}
	}
	sort.Slice(cluster.Pods, func(i, j int) bool { return cluster.Pods[i].Name < cluster.Pods[j].Name })
	plan, err := scheduling.Solve(ctx, &cluster, scheduling.Options{Bound: scheduling.BoundPattern})
	if err != nil {
		return 0, fmt.Errorf("lower bound of the remaining pods: %w", err)
	}
	return plan.LowerBound, nil
}

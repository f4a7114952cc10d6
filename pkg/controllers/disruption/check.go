package disruption

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// drainChecker answers, within one pass, whether a command's candidates may drain now (core.ValidateDrain):
// their pods must fit on the registered, initialized nodes as the kube-scheduler filled them, beside the pods of
// the nodes other commands are draining, of the commands cleared earlier in the same pass and of the later waves
// of commands waiting for an earlier wave to drain (hold).
type drainChecker struct {
	opts scheduling.Options
	// cluster is the pass's cluster with the replacements of commands in progress usable again (a command's
	// pods may go there) and registered nodes whose NodeClaim is not initialized left out.
	cluster *scheduling.Snapshot
	// bound are the pods bound to each node.
	bound map[string][]*corev1.Pod
	// drain are the nodes whose pods are leaving, moving their pods, pending the pods waiting for a node.
	drain   map[string]bool
	moving  []*corev1.Pod
	pending []*corev1.Pod
	// unboundCopies are the moving pods as pods waiting for a node (see question), by the bound pod.
	unboundCopies map[*corev1.Pod]*corev1.Pod
	// held are the moving pods that keep their room without moving yet (hold): they are not on their way.
	held map[*corev1.Pod]bool
	// coming are the extra nodes on their way: launched by earlier passes and not initialized yet (empty), and
	// planned by the commands before in the pass (extra), with the pods planned on them.
	coming []*scheduling.StateNode
	// lifted are the commands cleared to drain in the pass: the pass lifts their replacements' holds
	// (ReplacementHoldTaintKey) before it deletes their candidates.
	lifted map[string]bool
	// contest is cluster with the lifted commands' holds taken off (heldFor), built on first use and kept up
	// to date by lift; heldAt indexes its held nodes by command.
	contest *scheduling.Snapshot
	heldAt  map[string][]int
	// unheld are the pass's copies of held replacement nodes without their hold, one per node so that the
	// checks' memo keeps serving them.
	unheld map[*scheduling.StateNode]*scheduling.StateNode
}

// newDrainChecker returns the pass's checker. The pass's checks solve on the same nodes and pods, each with other
// nodes draining: opts.Memo (a new one when nil) serves them all.
func newDrainChecker(st *state, snap *core.Snapshot, opts scheduling.Options) *drainChecker {
	if opts.Memo == nil {
		opts.Memo = scheduling.NewMemo()
	}
	k := &drainChecker{opts: opts, bound: map[string][]*corev1.Pod{}, drain: map[string]bool{}, unboundCopies: map[*corev1.Pod]*corev1.Pod{},
		held: map[*corev1.Pod]bool{}}
	for _, p := range st.Pods {
		switch {
		case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !p.DeletionTimestamp.IsZero():
		case p.Spec.NodeName != "":
			k.bound[p.Spec.NodeName] = append(k.bound[p.Spec.NodeName], p)
		default:
			k.pending = append(k.pending, p)
		}
	}
	if snap.Cluster == nil {
		return k
	}
	podsByKey := map[string]*corev1.Pod{}
	for _, p := range st.Pods {
		podsByKey[p.Namespace+"/"+p.Name] = p
	}
	usable, unusable := map[string]bool{}, map[string]bool{}
	for _, cmd := range st.inProgress {
		extra := map[string]*Launch{}
		for i, l := range cmd.Record.Launch {
			if l.Extra {
				extra[l.Name] = &cmd.Record.Launch[i]
			}
		}
		for _, nc := range cmd.Replacements {
			if nc.Status.NodeName != "" && nc.IsTrue(karpv1.ConditionTypeInitialized) && nc.DeletionTimestamp.IsZero() {
				usable[nc.Status.NodeName] = true
				continue
			}
			// Extra capacity launched in an earlier pass and still on its way is coming: no other command
			// launches again for the pods it was launched for.
			if l := extra[nc.Name]; l != nil && nc.DeletionTimestamp.IsZero() && len(nc.Status.Allocatable) > 0 {
				k.coming = append(k.coming, comingNode(nc, l, podsByKey, cmd))
			}
		}
	}
	for i := range st.Claims {
		nc := &st.Claims[i]
		if nc.Status.NodeName == "" {
			continue
		}
		if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
			unusable[nc.Status.NodeName] = true
		}
		// Nodes another command is draining: their pods are on their way.
		if _, ok, err := RecordOf(nc); ok && err == nil && !nc.DeletionTimestamp.IsZero() && st.Nodes[nc.Status.NodeName] != nil {
			k.drain[nc.Status.NodeName] = true
			k.moving = append(k.moving, k.bound[nc.Status.NodeName]...)
		}
	}
	cluster := *snap.Cluster
	cluster.Nodes = make([]*scheduling.StateNode, 0, len(snap.Cluster.Nodes))
	for _, n := range snap.Cluster.Nodes {
		if usable[n.Name] || unusable[n.Name] {
			cp := *n
			cp.MarkedForDeletion = unusable[n.Name]
			n = &cp
		}
		cluster.Nodes = append(cluster.Nodes, n)
	}
	k.cluster = &cluster
	return k
}

// comingNode is an extra replacement still launching as a node of the cluster, holding the pods it was launched
// for that are still waiting or still on a node being drained.
func comingNode(nc *karpv1.NodeClaim, l *Launch, pods map[string]*corev1.Pod, cmd *InProgress) *scheduling.StateNode {
	n := &scheduling.StateNode{Name: nc.Name, Labels: nc.Labels, Allocatable: nc.Status.Allocatable,
		NodePool: nc.Labels[karpv1.NodePoolLabelKey], Taints: nc.Spec.Taints}
	own := map[string]bool{}
	for _, c := range append(slices.Clone(cmd.Candidates), cmd.Draining...) {
		own[c.Status.NodeName] = true
	}
	for _, key := range l.For {
		p := pods[key]
		if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.Spec.NodeName != "" && !own[p.Spec.NodeName] {
			continue // it found a node meanwhile
		}
		cp := p.DeepCopy()
		cp.Spec.NodeName = nc.Name
		n.Pods = append(n.Pods, cp)
	}
	return n
}

// check says why the command's candidates may not drain now, or "" when they may; then their pods count as
// moving for the commands checked after it in the pass. contended is set when the pods fit as planned but the
// kube-scheduler could put them otherwise (core.ValidateDrainContended) because other pods are on their way too:
// the pods of the other nodes draining, or pending pods. The command then waits for those to land rather than
// launch more or count towards its ValidationTimeout; when its own pods alone could be misplaced that way, the
// contention is its own and it goes on (its waves place the largest pods first).
func (k *drainChecker) check(ctx context.Context, cmd *InProgress) (why string, contended bool, err error) {
	if k.cluster == nil {
		// No cluster was gathered: nothing of Dovetail's can take pods, so only pods that need no room pass.
		k.cluster = &scheduling.Snapshot{}
	}
	q, drain, moving := k.question(cmd)
	why, err = core.ValidateDrain(ctx, q, k.opts)
	if err != nil || why != "" {
		return why, false, err
	}
	if onTheWay := k.onTheWay(q.Pending); len(onTheWay) > 0 {
		contest := q
		var restore func()
		contest.Cluster, restore = k.heldFor(cmd)
		defer restore()
		contest.Pending = onTheWay
		why, err = core.ValidateDrainContended(ctx, contest, k.opts)
		if err != nil {
			return "", false, err
		}
		if why != "" {
			alone := contest
			alone.Pending = nil
			own, err := core.ValidateDrainContended(ctx, alone, k.opts)
			if err != nil {
				return "", false, err
			}
			if own == "" {
				return why, true, nil
			}
		}
	}
	k.drain, k.moving = drain, moving
	k.lift(cmd)
	return "", false, nil
}

// heldFor returns the pass's cluster as the kube-scheduler will see it once the command drains: the replacements
// of the commands waiting keep their hold, a PreferNoSchedule taint the contended check (ValidateDrainContended)
// puts after every other node, while the command's own and those of the commands cleared before it in the pass
// lose it. The pods of other drains then go to a held replacement only when nothing else has room, as they do.
// restore puts the command's holds back unless it was cleared meanwhile: the pass's checks share the cluster, so
// that none copies the node list.
func (k *drainChecker) heldFor(cmd *InProgress) (cluster *scheduling.Snapshot, restore func()) {
	if k.contest == nil {
		k.contest = k.cluster
		for i, n := range k.cluster.Nodes {
			if id, held := holdOf(n); held {
				if k.heldAt == nil {
					k.heldAt = map[string][]int{}
				}
				k.heldAt[id] = append(k.heldAt[id], i)
			}
		}
		if len(k.heldAt) > 0 {
			cp := *k.cluster
			cp.Nodes = slices.Clone(k.cluster.Nodes)
			k.contest = &cp
			for id := range k.lifted {
				k.unhold(id)
			}
		}
	}
	id := cmd.Record.ID
	if k.lifted[id] || len(k.heldAt[id]) == 0 {
		return k.contest, func() {}
	}
	k.unhold(id)
	return k.contest, func() {
		if k.lifted[id] {
			return
		}
		for _, i := range k.heldAt[id] {
			k.contest.Nodes[i] = k.cluster.Nodes[i]
		}
	}
}

// unhold takes the command's holds off its replacements in contest.
func (k *drainChecker) unhold(id string) {
	for _, i := range k.heldAt[id] {
		n := k.cluster.Nodes[i]
		u := k.unheld[n]
		if u == nil {
			if k.unheld == nil {
				k.unheld = map[*scheduling.StateNode]*scheduling.StateNode{}
			}
			cp := *n
			cp.Taints = slices.DeleteFunc(slices.Clone(n.Taints), func(t corev1.Taint) bool { return t.Key == ReplacementHoldTaintKey })
			u = &cp
			k.unheld[n] = u
		}
		k.contest.Nodes[i] = u
	}
}

// lift counts the command as cleared to drain in the pass (lifted).
func (k *drainChecker) lift(cmd *InProgress) {
	if k.lifted == nil {
		k.lifted = map[string]bool{}
	}
	k.lifted[cmd.Record.ID] = true
	if k.contest != nil {
		k.unhold(cmd.Record.ID)
	}
}

// holdOf returns the command whose hold a node carries.
func holdOf(n *scheduling.StateNode) (string, bool) {
	for _, t := range n.Taints {
		if t.Key == ReplacementHoldTaintKey {
			return t.Value, true
		}
	}
	return "", false
}

// extra plans the new capacity that would let the command's candidates drain now (core.ExtraCapacity), beside
// the pods of the commands checked before it in the pass; why says which pod new capacity would not take either.
func (k *drainChecker) extra(ctx context.Context, cmd *InProgress) ([]*scheduling.NodeClaimPlan, string, error) {
	if k.cluster == nil {
		return nil, "", nil
	}
	q, _, _ := k.question(cmd)
	q.Coming = k.coming
	plans, why, err := core.ExtraCapacity(ctx, q, k.opts)
	if err != nil || len(plans) == 0 {
		return plans, why, err
	}
	// The commands checked after it in the pass count this capacity as coming, with the pods it was planned for.
	byKey := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range append(append([]*corev1.Pod(nil), q.Pending...), q.Moving...) {
		byKey[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	for _, plan := range plans {
		var pods []*corev1.Pod
		for _, key := range plan.Pods {
			if p := byKey[key]; p != nil {
				pods = append(pods, p)
			}
		}
		k.coming = append(k.coming, core.PlannedNode(k.cluster, plan, fmt.Sprintf("coming-%d", len(k.coming)), pods))
	}
	return plans, why, nil
}

// fitRounds bounds the checks fitting makes.
const fitRounds = 4

// fitting returns the command's candidates whose pods fit on the nodes there are now when the others stay: the
// candidates holding a pod that would not fit are left out (dropped) and the check made again on the rest, at
// most fitRounds times. Once some fit, their pods count as moving for the commands checked after it in the pass,
// as with check. keep is empty when none fit, or when what does not fit is not the command's (pending pods, or
// pods of the commands checked before it); why is the first check's answer.
func (k *drainChecker) fitting(ctx context.Context, cmd *InProgress) (keep, dropped []*karpv1.NodeClaim, why string, err error) {
	if k.cluster == nil {
		k.cluster = &scheduling.Snapshot{}
	}
	keep = cmd.Candidates
	for round := 0; round < fitRounds && len(keep) > 0; round++ {
		sub := &InProgress{Record: cmd.Record, Candidates: keep}
		q, drain, moving := k.question(sub)
		w, stuck, err := core.ValidateDrainStuck(ctx, q, k.opts)
		if err != nil {
			return nil, nil, "", err
		}
		if round == 0 {
			why = w
		}
		if w == "" {
			k.drain, k.moving = drain, moving
			k.lift(cmd)
			return keep, dropped, why, nil
		}
		holding := map[string]bool{}
		for _, key := range stuck {
			for _, nc := range keep {
				if slices.ContainsFunc(k.bound[nc.Status.NodeName], func(p *corev1.Pod) bool { return p.Namespace == key.Namespace && p.Name == key.Name }) {
					holding[nc.Name] = true
				}
			}
		}
		if len(holding) == 0 {
			break
		}
		var rest []*karpv1.NodeClaim
		for _, nc := range keep {
			if holding[nc.Name] {
				dropped = append(dropped, nc)
			} else {
				rest = append(rest, nc)
			}
		}
		keep = rest
	}
	return nil, cmd.Candidates, why, nil
}

// hold counts the pods of the command's candidates as moving for the commands checked after it in the pass,
// without a check: a command whose later waves wait for an earlier one to drain keeps the room they will need.
func (k *drainChecker) hold(cmd *InProgress) {
	drain, moving := k.with(cmd)
	for _, p := range moving[len(k.moving):] {
		k.held[p] = true
	}
	k.drain, k.moving = drain, moving
}

// await counts the pods of the command's candidates as moving and on their way for the commands checked after it
// in the pass, without a check: a command that has waited long for other moving pods to land (ContentionFirst)
// keeps its room, and a command checked after it whose pods would leave its pods without room, the way the
// kube-scheduler places them, waits in turn (its contended check counts them as on their way, not held).
func (k *drainChecker) await(cmd *InProgress) {
	k.drain, k.moving = k.with(cmd)
}

// admit counts the pods of the command's candidates as moving for the commands checked after it in the pass, as
// a passed check does: for a command cleared without one (it waited ContentionWait).
func (k *drainChecker) admit(cmd *InProgress) {
	k.drain, k.moving = k.with(cmd)
	k.lift(cmd)
}

// onTheWay returns the pods of a check's Pending that are on their way to a node: all but those held (their
// room is kept by the normal check, and they do not move before their command does).
func (k *drainChecker) onTheWay(pending []*corev1.Pod) []*corev1.Pod {
	if len(k.held) == 0 {
		return pending
	}
	heldCopies := make(map[*corev1.Pod]bool, len(k.held))
	for p := range k.held {
		if u := k.unboundCopies[p]; u != nil {
			heldCopies[u] = true
		}
	}
	out := make([]*corev1.Pod, 0, len(pending))
	for _, p := range pending {
		if !heldCopies[p] {
			out = append(out, p)
		}
	}
	return out
}

// question is the drain check for the command's candidates, with what the pass holds: the nodes draining (the
// command's and those cleared before it) and the command's pods to move. The pods of the other nodes draining are
// on their way, so they compete for the room like pending pods: the check fails when a pod of the command would
// not fit, or when the command's pods would leave more of the others without room than are without it already;
// not merely because some of the others have no room. (Checked as the command's own, another drift command's
// big pods left without room when the kube-scheduler filled their replacements failed every command's check
// until it was abandoned.) drain and moving are what the pass holds once the command is cleared.
func (k *drainChecker) question(cmd *InProgress) (q core.DrainCheck, drain map[string]bool, moving []*corev1.Pod) {
	drain, moving = k.with(cmd)
	own := moving[len(k.moving):]
	pending := make([]*corev1.Pod, 0, len(k.pending)+len(k.moving))
	pending = append(pending, k.pending...)
	for _, p := range k.moving {
		if u := k.unbound(p); u != nil {
			pending = append(pending, u)
		}
	}
	return core.DrainCheck{Cluster: k.cluster, Drain: drain, Moving: own, Pending: pending}, drain, moving
}

// unbound returns a reschedulable pod of a node being drained as the pod waiting for a node it is about to be
// (one copy a pod for the pass), or nil for a pod that does not move.
func (k *drainChecker) unbound(p *corev1.Pod) *corev1.Pod {
	if !core.Reschedulable(p) {
		return nil
	}
	if u, ok := k.unboundCopies[p]; ok {
		return u
	}
	u := scheduling.Rescheduled(p)
	k.unboundCopies[p] = u
	return u
}

// with returns the nodes draining and the pods moving with the command's candidates added (after those of the
// commands before it).
func (k *drainChecker) with(cmd *InProgress) (map[string]bool, []*corev1.Pod) {
	drain := make(map[string]bool, len(k.drain)+len(cmd.Candidates))
	for n := range k.drain {
		drain[n] = true
	}
	moving := append([]*corev1.Pod(nil), k.moving...)
	for _, nc := range cmd.Candidates {
		if n := nc.Status.NodeName; n != "" && !drain[n] {
			drain[n] = true
			moving = append(moving, k.bound[n]...)
		}
	}
	return drain, moving
}

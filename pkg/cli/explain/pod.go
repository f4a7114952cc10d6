package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cli/simulate"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// PodReport is the output of `explain pod`: the analysis, or where the pod already runs.
type PodReport struct {
	Pod string `json:"pod"`
	// BoundTo is the node a pod that is no longer pending is bound to.
	BoundTo string `json:"boundTo,omitempty"`
	// Ignored is the reason the controller leaves the pod out of provisioning: it has resource claims and
	// IGNORE_DRA_REQUESTS is true (--ignore-dra-requests).
	Ignored string `json:"ignored,omitempty"`
	// Warnings are problems reading the cluster or AWS that may make the analysis incomplete.
	Warnings []string `json:"warnings,omitempty"`
	// NotLeading says, per leader Lease another autoscaler (Karpenter) holds, that the controller waits and
	// launches nothing meanwhile, whatever the analysis finds.
	NotLeading  []string                `json:"notLeading,omitempty"`
	Explanation *scheduling.Explanation `json:"explanation,omitempty"`
	// Overlays says, per NodePool, which NodeOverlays changed the price or capacity of its cheapest option.
	Overlays map[string][]string `json:"nodeOverlays,omitempty"`
}

// RunPod explains one pod of the cluster c reads, writing the report to w.
func RunPod(ctx context.Context, c client.Reader, o *Options, key types.NamespacedName, w io.Writer) error {
	ctx = ctxOr(ctx)
	if err := o.validate(); err != nil {
		return err
	}
	var pod corev1.Pod
	if err := c.Get(ctx, key, &pod); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s not found", key)
		}
		return fmt.Errorf("reading pod %s: %w", key, err)
	}
	r := &PodReport{Pod: key.String()}
	if pod.Spec.NodeName != "" {
		r.BoundTo = pod.Spec.NodeName
		return r.write(o.Output, w)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return fmt.Errorf("pod %s has finished (%s): nothing to schedule", key, pod.Status.Phase)
	}
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s is being deleted: Dovetail does not provision for it", key)
	}
	if isDaemonOrMirror(&pod) {
		return fmt.Errorf("pod %s belongs to a DaemonSet: the kube-scheduler places it on its node and Dovetail counts it only as overhead on new nodes", key)
	}
	if why := o.DRA.IgnoredReason(&pod); why != "" {
		r.Ignored = why
		return r.write(o.Output, w)
	}
	cl, err := simulate.ReadCluster(ctx, c, o.Region, o.InstanceTypesFile, o.DRA)
	if err != nil {
		return err
	}
	if o.FromAWS {
		its, warnings, err := awsInstanceTypes(ctx, c, o.ClusterName, cl.NodePools)
		if err != nil {
			return err
		}
		simulate.ApplyOverlays(cl.Overlays, cl.NodePools, its)
		cl.Snapshot.InstanceTypes, r.Warnings = its, warnings
	}
	for _, na := range cl.NotApplied {
		r.Warnings = append(r.Warnings, fmt.Sprintf("NodeOverlay %s is not applied (%s): %s", na.NodeOverlay, na.Reason, na.Message))
	}
	for _, s := range cl.Skipped {
		r.Warnings = append(r.Warnings, fmt.Sprintf("NodePool %s is left out: %s", s.NodePool, s.Reason))
	}
	var pools karpv1.NodePoolList
	if err := c.List(ctx, &pools); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	all := make([]*karpv1.NodePool, 0, len(pools.Items))
	for i := range pools.Items {
		all = append(all, &pools.Items[i])
	}
	r.Warnings = append(r.Warnings, nodeClassNotes(all, cl.NodeClasses)...)
	if r.Warnings, err = o.applyUnavailable(ctx, c, instanceTypes(cl.Snapshot.InstanceTypes), r.Warnings); err != nil {
		return err
	}
	notes, warning := o.notLeading(ctx, c)
	r.NotLeading = notes
	if warning != "" {
		r.Warnings = append(r.Warnings, warning)
	}
	e, err := scheduling.Explain(ctx, cl.Snapshot, key, scheduling.Options{})
	if err != nil {
		return err
	}
	r.Explanation = e
	for _, p := range e.NodePools {
		if c := p.Cheapest; c != nil {
			if notes := overlayNotes(cl.Snapshot.InstanceTypes[p.NodePool], c.Name, c.Zone, c.CapacityType); len(notes) > 0 {
				if r.Overlays == nil {
					r.Overlays = map[string][]string{}
				}
				r.Overlays[p.NodePool] = notes
			}
		}
	}
	return r.write(o.Output, w)
}

func (r *PodReport) write(format string, w io.Writer) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	l := &lineWriter{w: w}
	if r.BoundTo != "" {
		l.printf("Pod %s is bound to node %s: it is not pending. Try \"dovetailctl explain node %s\".\n", r.Pod, r.BoundTo, r.BoundTo)
		return l.err
	}
	if r.Ignored != "" {
		l.printf("Pod %s is left out of provisioning: %s.\n", r.Pod, r.Ignored)
		l.printf("If the controller runs with IGNORE_DRA_REQUESTS=false, pass --ignore-dra-requests=false to see how its claims are planned.\n")
		return l.err
	}
	e := r.Explanation
	for _, w := range r.Warnings {
		l.printf("warning: %s\n", w)
	}
	for _, n := range r.NotLeading {
		l.printf("%s\n", n)
	}
	l.printf("Pod %s requests %s\n", e.Pod, formatList(e.Requests))
	switch o := e.Outcome; o.Kind {
	case scheduling.OutcomeExistingNode:
		l.printf("Outcome: fits on existing node %s\n", o.Node)
	case scheduling.OutcomeNewNode:
		l.printf("Outcome: a new node from NodePool %s (%s, %s, %s)\n", o.NodePool, o.InstanceType, o.Zone, o.CapacityType)
	default:
		l.printf("Outcome: unschedulable [%s]: %s\n", o.Code, o.Reason)
	}
	x := e.Existing
	l.printf("\nExisting nodes: %d considered, %d would accept the pod, %d reject it\n", x.Nodes, x.Nodes-x.Rejected, x.Rejected)
	if len(x.Accepting) > 0 {
		l.printf("  accepting: %s\n", strings.Join(x.Accepting, ", "))
	}
	for _, rc := range x.Reasons {
		l.printf("  %d × [%s] %s (e.g. %s)\n", rc.Count, rc.Code, rc.Reason, rc.Example)
	}
	if len(e.NodePools) == 0 {
		l.printf("\nNo NodePool: create one whose requirements fit the pod.\n")
	}
	for _, p := range e.NodePools {
		verdict := "cannot launch a node for the pod"
		if p.Fits {
			verdict = "can launch a node for the pod"
			if c := p.Cheapest; c != nil {
				verdict += fmt.Sprintf(" (cheapest %s in %s, %s, $%.4f/h)", c.Name, c.Zone, c.CapacityType, c.Price)
			}
		}
		l.printf("\nNodePool %s (weight %d, %d instance types): %s\n", p.NodePool, p.Weight, p.InstanceTypes, verdict)
		for _, n := range r.Overlays[p.NodePool] {
			l.printf("  %s\n", n)
		}
		if !p.Fits {
			l.printf("  reason: [%s] %s\n", p.Code, p.Reason)
			if p.Fix != "" {
				l.printf("  fix:    %s\n", p.Fix)
			}
		}
		if l.err != nil {
			return l.err
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  STAGE\tIN\tOUT\tREMOVED\tDETAIL")
		for _, s := range p.Stages {
			shown := s.Removed
			if len(shown) > tableExamples {
				shown = shown[:tableExamples]
			}
			removed := strings.Join(shown, ", ")
			if extra := s.RemovedCount - len(shown); extra > 0 {
				removed += fmt.Sprintf(" (+%d)", extra)
			}
			if removed == "" {
				removed = "-"
			}
			detail := s.Detail
			if len(s.Offerings) > 0 {
				detail = strings.TrimPrefix(detail+"; offerings excluded: "+summarizeOfferings(s.Offerings), "; ")
			}
			mark := ""
			if s.Blocking {
				mark = " ✗"
			}
			fmt.Fprintf(tw, "  %s%s\t%d\t%d\t%s\t%s\n", s.Name, mark, s.Before, s.After, removed, detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return l.err
}

// tableExamples is how many removed instance types a table row names (JSON has up to 10).
const tableExamples = 4

func summarizeOfferings(offs []string) string {
	const max = 6
	if len(offs) <= max {
		return strings.Join(offs, ", ")
	}
	return strings.Join(offs[:max], ", ") + fmt.Sprintf(" (+%d)", len(offs)-max)
}

func formatList(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		parts = append(parts, n+"="+q.String())
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, " ")
}

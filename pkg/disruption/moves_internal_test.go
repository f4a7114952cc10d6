package disruption

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/scheduling"
)

func TestPruneNoSaving(t *testing.T) {
	cand := func(name string, price float64, pods ...string) *Candidate {
		c := &Candidate{NodeClaim: name, Node: name, Price: price}
		for _, p := range pods {
			c.Pods = append(c.Pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: p}, Spec: corev1.PodSpec{NodeName: name}})
		}
		return c
	}
	repl := func(it string, price float64, pods ...string) *scheduling.NodeClaimPlan {
		r := &scheduling.NodeClaimPlan{InstanceType: it, Price: price}
		for _, p := range pods {
			r.Pods = append(r.Pods, types.NamespacedName{Namespace: "default", Name: p})
		}
		return r
	}
	type outcome struct {
		Pruned, Kept, Replacements []string
		Decision                   string
		Savings                    float64
	}
	cases := []struct {
		name string
		cmd  *Command
		want outcome
	}{{
		name: "a busy node replaced by an identical one leaves the command; the merge stays",
		cmd: &Command{Decision: DecisionReplace,
			Candidates:   []*Candidate{cand("a", 0.1, "a1"), cand("b", 0.1, "b1"), cand("big", 0.096, "x1", "x2")},
			Replacements: []*scheduling.NodeClaimPlan{repl("m5.large", 0.1, "a1", "b1"), repl("m5.large", 0.096, "x1", "x2")}},
		want: outcome{Pruned: []string{"big"}, Kept: []string{"a", "b"}, Replacements: []string{"m5.large"}, Decision: DecisionReplace, Savings: 0.1},
	}, {
		name: "a replacement dearer than its one node goes too; what is left is a delete",
		cmd: &Command{Decision: DecisionReplace,
			Candidates:   []*Candidate{cand("a", 0.1), cand("b", 0.1, "b1")},
			Replacements: []*scheduling.NodeClaimPlan{repl("m5.xlarge", 0.2, "b1")}},
		want: outcome{Pruned: []string{"b"}, Kept: []string{"a"}, Decision: DecisionDelete, Savings: 0.1},
	}, {
		name: "a cheaper replacement of one node saves money and stays",
		cmd: &Command{Decision: DecisionReplace,
			Candidates:   []*Candidate{cand("a", 0.2, "a1")},
			Replacements: []*scheduling.NodeClaimPlan{repl("small", 0.1, "a1")}},
		want: outcome{Kept: []string{"a"}, Replacements: []string{"small"}, Decision: DecisionReplace, Savings: 0.1},
	}, {
		name: "a node whose pods also go elsewhere is not a like-for-like swap",
		cmd: &Command{Decision: DecisionReplace,
			Candidates:   []*Candidate{cand("a", 0.1, "a1", "a2")},
			Replacements: []*scheduling.NodeClaimPlan{repl("m5.large", 0.1, "a1")}},
		want: outcome{Kept: []string{"a"}, Replacements: []string{"m5.large"}, Decision: DecisionReplace, Savings: 0},
	}, {
		name: "every node swapped like for like: nothing is left",
		cmd: &Command{Decision: DecisionReplace,
			Candidates:   []*Candidate{cand("a", 0.1, "a1")},
			Replacements: []*scheduling.NodeClaimPlan{repl("m5.large", 0.1, "a1")}},
		want: outcome{Pruned: []string{"a"}, Decision: DecisionDelete},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cmd.Savings == 0 {
				tc.cmd.Savings = totalPrice(tc.cmd.Candidates) - replacementPrice(tc.cmd.Replacements)
			}
			pruned := pruneNoSaving(tc.cmd)
			got := outcome{Decision: tc.cmd.Decision, Savings: float64(int(tc.cmd.Savings*10000+0.5)) / 10000}
			for _, c := range pruned {
				got.Pruned = append(got.Pruned, c.NodeClaim)
			}
			for _, c := range tc.cmd.Candidates {
				got.Kept = append(got.Kept, c.NodeClaim)
			}
			for _, r := range tc.cmd.Replacements {
				got.Replacements = append(got.Replacements, r.InstanceType)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

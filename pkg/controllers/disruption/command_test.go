package disruption_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestCommandsInProgress: candidates are grouped by the command's ID with the replacements pointing at it;
// NodeClaims being deleted and records that cannot be read are left out, and RecordOf says why.
func TestCommandsInProgress(t *testing.T) {
	rec := func(id string) string {
		return `{"id":"` + id + `","reason":"Underutilized","decision":"replace","replacements":1,"started":"2026-11-24T10:00:00Z"}`
	}
	// A pass that launched more replacements for command c-3 recorded it on i only: the newest record is the
	// command's, whichever candidate comes first.
	extra := `{"id":"c-3","reason":"Drifted","decision":"replace","replacements":2,"started":"2026-11-24T10:00:00Z","extra":1}`
	claim := func(name string) *test.NodeClaimBuilder { return test.NodeClaim(name, "general") }
	deleting := claim("d").Annotation(disruption.CommandAnnotationKey, rec("c-1")).Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	v := &disruption.View{Claims: []karpv1.NodeClaim{
		*claim("a").Annotation(disruption.CommandAnnotationKey, rec("c-2")).Obj(),
		*claim("b").Annotation(disruption.CommandAnnotationKey, rec("c-1")).Obj(),
		*claim("c").Annotation(disruption.CommandAnnotationKey, rec("c-2")).Obj(),
		*deleting,
		*claim("e").Annotation(disruption.CommandAnnotationKey, `{"reason":"Empty"}`).Obj(),
		*claim("f").Annotation(disruption.ReplacementForAnnotationKey, "c-2").Obj(),
		*claim("g").Obj(),
		*claim("h").Annotation(disruption.CommandAnnotationKey, rec("c-3")).Obj(),
		*claim("i").Annotation(disruption.CommandAnnotationKey, extra).Obj(),
	}}
	type group struct {
		ID, Reason, Candidates, Replacements string
		Extra, Launch                        int
	}
	var got []group
	for _, cmd := range disruption.CommandsInProgress(v) {
		g := group{ID: cmd.Record.ID, Reason: string(cmd.Record.Reason), Extra: cmd.Record.Extra, Launch: cmd.Record.Replacements}
		for _, nc := range cmd.Candidates {
			g.Candidates += nc.Name
		}
		for _, nc := range cmd.Replacements {
			g.Replacements += nc.Name
		}
		got = append(got, g)
	}
	want := []group{{ID: "c-1", Reason: "Underutilized", Candidates: "b", Launch: 1}, {ID: "c-2", Reason: "Underutilized", Candidates: "ac", Replacements: "f", Launch: 1},
		{ID: "c-3", Reason: "Drifted", Candidates: "hi", Extra: 1, Launch: 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("commands in progress (-want +got):\n%s", diff)
	}

	if _, ok, err := disruption.RecordOf(&v.Claims[4]); !ok || err == nil || !strings.Contains(err.Error(), "NodeClaim e: annotation "+disruption.CommandAnnotationKey+" has no id") {
		t.Errorf("RecordOf(e) = ok %v, error %v; want an error saying the record has no id", ok, err)
	}
	if _, ok, err := disruption.RecordOf(&v.Claims[6]); ok || err != nil {
		t.Errorf("RecordOf(g) = ok %v, error %v; want no record", ok, err)
	}
}

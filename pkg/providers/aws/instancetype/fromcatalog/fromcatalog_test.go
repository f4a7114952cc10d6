package fromcatalog

import (
	"testing"

	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
)

func TestEveryCatalogTypeComputes(t *testing.T) {
	c, err := catalog.Load()
	if err != nil {
		t.Fatalf("loading catalog: %v", err)
	}
	m5, ok := c.Type("m5.large")
	if !ok {
		t.Fatalf("catalog has no m5.large")
	}
	shape, err := instancetype.Compute(Info(m5), instancetype.Kubelet{}, instancetype.Settings{VMMemoryOverheadPercent: 0.075})
	if err != nil {
		t.Fatalf("Compute(m5.large): %v", err)
	}
	if pods := shape.Capacity.Pods().Value(); pods != 29 {
		t.Errorf("m5.large pods = %d, want 29", pods)
	}
	failed := 0
	for i := range c.Types {
		if _, err := instancetype.Compute(Info(&c.Types[i]), instancetype.Kubelet{}, instancetype.Settings{VMMemoryOverheadPercent: 0.075}); err != nil {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d catalog types fail Compute", failed, len(c.Types))
	}
}

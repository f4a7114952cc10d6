//go:build bench

package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"
)

// controllerWrites logs the controller's API writes so far (dovetail_api_writes_total) and those refused
// (dovetail_api_write_conflicts_total and dovetail_api_write_invalid_total), one line per controller, verb and
// kind, after stage.
func controllerWrites(t *testing.T, stage string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", env.PortBase+88), nil)
	if err != nil {
		t.Logf("controller API writes after %s: %v", stage, err)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Logf("controller API writes after %s: %v", stage, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Logf("controller API writes after %s: %v", stage, err)
		return
	}
	var lines, sent []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "dovetail_api_write_conflicts_total{") || strings.HasPrefix(l, "dovetail_api_write_invalid_total{") {
			lines = append(lines, strings.TrimPrefix(l, "dovetail_api_write_"))
		}
		if strings.HasPrefix(l, "dovetail_api_writes_total{") {
			sent = append(sent, strings.TrimPrefix(l, "dovetail_api_"))
		}
	}
	sort.Strings(lines)
	sort.Strings(sent)
	t.Logf("controller API writes after %s (totals since start): %d series", stage, len(sent))
	for _, l := range sent {
		t.Logf("sent %s", l)
	}
	t.Logf("controller API writes refused after %s (totals since start): %d series", stage, len(lines))
	for _, l := range lines {
		t.Logf("refused %s", l)
	}
}

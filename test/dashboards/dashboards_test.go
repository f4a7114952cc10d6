package dashboards

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/teststorage"
)

// scrapesEnv names a scrapes file to evaluate instead of the committed one: hack/test.sh passes the file the
// end-to-end test just wrote.
const scrapesEnv = "DOVETAIL_METRICS_SCRAPES"

// committedScrapes is a scrapes file written by TestKarpenterMetricsScraped (refresh it by running that test with
// DOVETAIL_METRICS_SCRAPES_OUT pointing here; it is gzipped for its name).
var committedScrapes = filepath.Join("testdata", "scrapes.prom.gz")

// load stores every sample of the scrapes at its scrape's time and returns the storage and the last scrape's time.
func load(t *testing.T, path string) (storage.Storage, time.Time) {
	t.Helper()
	scrapes, err := ReadScrapes(path)
	if err != nil {
		t.Fatal(err)
	}
	st := teststorage.New(t)
	app := st.Appender(context.Background())
	for _, s := range scrapes {
		for _, smp := range s.Samples() {
			if _, err := app.Append(0, smp.Labels, s.At.UnixMilli(), smp.Value); err != nil {
				t.Fatalf("storing %s at %s: %v", smp.Labels, s.At, err)
			}
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	last := scrapes[len(scrapes)-1].At
	t.Logf("%s: %d scrapes from %s to %s", path, len(scrapes), scrapes[0].At.Format(time.RFC3339), last.Format(time.RFC3339))
	return st, last
}

func scrapesPath() string {
	if p := os.Getenv(scrapesEnv); p != "" {
		return p
	}
	return committedScrapes
}

// TestQueriesParse: every query is valid PromQL, whatever the scrape.
func TestQueriesParse(t *testing.T) {
	seen := map[string]bool{}
	for _, q := range Queries {
		if seen[q.Name] {
			t.Errorf("two queries named %q", q.Name)
		}
		seen[q.Name] = true
		if _, err := parser.NewParser(parser.Options{}).ParseExpr(q.Expr); err != nil {
			t.Errorf("%s: %v", q.Name, err)
		}
	}
}

// TestDashboardQueriesFindData evaluates every query at the last scrape's time and requires a non-empty result.
func TestDashboardQueriesFindData(t *testing.T) {
	st, at := load(t, scrapesPath())
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 5e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	t.Cleanup(func() { _ = engine.Close() })
	var empty, arrived []string
	for _, q := range Queries {
		qry, err := engine.NewInstantQuery(context.Background(), st, nil, q.Expr, at)
		if err != nil {
			t.Errorf("%s: %v", q.Name, err)
			continue
		}
		res := qry.Exec(context.Background())
		if res.Err != nil {
			t.Errorf("%s: %v", q.Name, res.Err)
			qry.Close()
			continue
		}
		n := 0
		switch v := res.Value.(type) {
		case promql.Vector:
			n = len(v)
		case promql.Matrix:
			n = len(v)
		case promql.Scalar:
			n = 1
		}
		qry.Close()
		if metric, ok := NotYet[q.Name]; ok {
			if n > 0 {
				arrived = append(arrived, q.Name+"\t"+metric)
			} else {
				t.Logf("%s: no data, as expected: Dovetail does not serve %s yet", q.Name, metric)
			}
			continue
		}
		if n == 0 {
			empty = append(empty, q.Name+"\t"+q.Expr)
			continue
		}
		t.Logf("%s: %d series", q.Name, n)
	}
	for name := range NotYet {
		if !slices.ContainsFunc(Queries, func(q Query) bool { return q.Name == name }) {
			t.Errorf("NotYet names %q, which is not a query", name)
		}
	}
	if len(arrived) > 0 {
		t.Errorf("queries marked NotYet find data now; remove them from NotYet (queries.go):\n%s", strings.Join(arrived, "\n"))
	}
	if len(empty) > 0 {
		t.Errorf("%d of %d dashboard queries return no data on %s:\n%s", len(empty), len(Queries), scrapesPath(),
			strings.Join(empty, "\n"))
	}
}
